/* ebbench TLS over memory BIOs; see bench_tls.h. */
#include "bench/bench_tls.h"

#include <stdio.h>
#include <stdlib.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "common/alloc.h"

static SSL_CTX *g_ctx;

static void
tls_log(const char *what)
{
	char buf[256];

	ERR_error_string_n(ERR_get_error(), buf, sizeof(buf));
	(void) fprintf(stderr, "ebbench: tls: %s: %s\n", what, buf);
	ERR_clear_error();
}

int
bench_tls_init(const bench_opts *o)
{
	if (!o->tls) {
		return 0;
	}
	g_ctx = SSL_CTX_new(TLS_client_method());
	if (g_ctx == NULL) {
		tls_log("context");
		return -1;
	}
	(void) SSL_CTX_set_min_proto_version(g_ctx, TLS1_2_VERSION);
	if (o->ca != NULL) {
		SSL_CTX_set_verify(g_ctx, SSL_VERIFY_PEER, NULL);
		if (SSL_CTX_load_verify_locations(g_ctx, o->ca, NULL) != 1) {
			tls_log("loading --ca");
			return -1;
		}
	} else {
		SSL_CTX_set_verify(g_ctx, SSL_VERIFY_NONE, NULL);
	}
	if (o->cert != NULL &&
	    (SSL_CTX_use_certificate_chain_file(g_ctx, o->cert) != 1 ||
	        SSL_CTX_use_PrivateKey_file(g_ctx, o->key, SSL_FILETYPE_PEM) !=
	            1)) {
		tls_log("loading --cert/--key");
		return -1;
	}
	return 0;
}

void
bench_tls_free(void)
{
	SSL_CTX_free(g_ctx);
	g_ctx = NULL;
}

int
bench_tls_conn_start(bench_conn *c)
{
	SSL *ssl = SSL_new(g_ctx);
	BIO *rbio = BIO_new(BIO_s_mem());
	BIO *wbio = BIO_new(BIO_s_mem());

	if (ssl == NULL || rbio == NULL || wbio == NULL) {
		SSL_free(ssl);
		BIO_free(rbio);
		BIO_free(wbio);
		tls_log("new connection");
		return -1;
	}
	SSL_set_bio(ssl, rbio, wbio); /* ssl owns both BIOs now */
	SSL_set_connect_state(ssl);
	c->ssl = ssl;
	c->rawin = eb__malloc(BENCH_TLS_READ);
	(void) SSL_do_handshake(ssl); /* WANT_READ: the ClientHello is out */
	return 0;
}

void
bench_tls_conn_free(bench_conn *c)
{
	SSL_free(c->ssl);
	c->ssl = NULL;
	free(c->rawin);
	c->rawin = NULL;
}

int
bench_tls_input(bench_conn *c, const char *data, size_t n)
{
	SSL  *ssl = c->ssl;
	char *dst;
	int   r;
	int   e;

	if (BIO_write(SSL_get_rbio(ssl), data, (int) n) != (int) n) {
		tls_log("input");
		return -1;
	}
	if (!c->tls_ready) {
		r = SSL_do_handshake(ssl);
		if (r != 1) {
			e = SSL_get_error(ssl, r);
			if (e == SSL_ERROR_WANT_READ ||
			    e == SSL_ERROR_WANT_WRITE) {
				return 0;
			}
			tls_log("handshake");
			return -1;
		}
		c->tls_ready = 1;
	}
	for (;;) {
		dst = eb__buf_reserve(&c->dec.in, 16384);
		r = SSL_read(ssl, dst, 16384);
		if (r > 0) {
			c->dec.in.len += (size_t) r;
			continue;
		}
		e = SSL_get_error(ssl, r);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			return 0;
		}
		tls_log("read");
		return -1;
	}
}

char *
bench_tls_pending(bench_conn *c, size_t *outlen)
{
	BIO   *w = SSL_get_wbio(c->ssl);
	size_t n = BIO_ctrl_pending(w);
	char  *out;

	if (n == 0) {
		return NULL;
	}
	out = eb__malloc(n);
	*outlen = (size_t) BIO_read(w, out, (int) n);
	return out;
}

int
bench_tls_encrypt(
    bench_conn *c, const char *p, size_t n, char **out, size_t *outlen)
{
	size_t done = 0;
	int    r;

	/* A memory BIO never blocks: SSL_write takes everything. */
	while (done < n) {
		r = SSL_write(c->ssl, p + done,
		    n - done > 1u << 20 ? 1 << 20 : (int) (n - done));
		if (r <= 0) {
			tls_log("write");
			return -1;
		}
		done += (size_t) r;
	}
	*outlen = 0;
	*out = bench_tls_pending(c, outlen);
	return 0;
}
