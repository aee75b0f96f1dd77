/*
 * Mutual TLS for node links: OpenSSL over memory BIOs (libuv owns the
 * socket). Ciphertext read from the socket goes into the read BIO;
 * plaintext comes out of SSL_read into the frame decoder. Plaintext frames
 * go through SSL_write; the write BIO is drained into uv_write. Both sides
 * present a certificate signed by the cluster's private CA and verify the
 * other's; TLS 1.2 is the minimum. Errors are logged with
 * ERR_error_string_n and the queue is cleared.
 *
 * Threads: loop thread only.
 */
#include <limits.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <ebnode/log.h>

#include "cluster/link_int.h"
#include "common/alloc.h"

static void
tls_log_one(const link_conn *c, const char *what, const char *detail)
{
	if (eb__link_conn_log_level(c) == EB_LOG_LEVEL_WARN) {
		EB_LOG_WARN("link", "tls-error: op=%s peer=%s detail=%s", what,
		    c->peer_addr, detail);
	} else {
		EB_LOG_DEBUG("link", "tls-error: op=%s peer=%s detail=%s", what,
		    c->peer_addr, detail);
	}
}

static void
tls_log_errors(const link_conn *c, const char *what)
{
	unsigned long e;
	char          buf[256];

	while ((e = ERR_get_error()) != 0) {
		ERR_error_string_n(e, buf, sizeof(buf));
		tls_log_one(c, what, buf);
	}
	ERR_clear_error();
}

int
eb__link_tls_ctx_new(const eb_link_opts *o, void **ctxp, eb_errbuf *err)
{
	SSL_CTX      *ctx = SSL_CTX_new(TLS_method());
	unsigned long e;
	char          buf[256] = "";

	if (ctx == NULL) {
		goto fail;
	}
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_load_verify_locations(ctx, o->tls_ca_file, NULL) != 1 ||
	    SSL_CTX_use_certificate_chain_file(ctx, o->tls_cert_file) != 1 ||
	    SSL_CTX_use_PrivateKey_file(
	        ctx, o->tls_key_file, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1) {
		goto fail;
	}
	SSL_CTX_set_verify(
	    ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	*ctxp = ctx;
	return 0;
fail:
	if ((e = ERR_peek_last_error()) != 0) {
		ERR_error_string_n(e, buf, sizeof(buf));
	}
	ERR_clear_error();
	SSL_CTX_free(ctx);
	return eb_errf(err, EB_ETLS,
	    "link TLS setup (ca=%s cert=%s key=%s): %s", o->tls_ca_file,
	    o->tls_cert_file, o->tls_key_file, buf);
}

void
eb__link_tls_ctx_free(void *ctx)
{
	SSL_CTX_free(ctx); /* accepts NULL */
}

int
eb__link_tls_conn_new(link_conn *c, int server)
{
	SSL *ssl = SSL_new(c->mgr->tls_ctx);
	BIO *rb;
	BIO *wb;

	if (ssl == NULL) {
		tls_log_errors(c, "new");
		return EB_ETLS;
	}
	rb = BIO_new(BIO_s_mem());
	wb = BIO_new(BIO_s_mem());
	if (rb == NULL || wb == NULL) {
		BIO_free(rb);
		BIO_free(wb);
		SSL_free(ssl);
		tls_log_errors(c, "bio");
		return EB_ETLS;
	}
	SSL_set_bio(ssl, rb, wb); /* ssl owns both now */
	if (server) {
		SSL_set_accept_state(ssl);
	} else {
		SSL_set_connect_state(ssl);
	}
	c->tls = ssl;
	return 0;
}

void
eb__link_tls_conn_free(link_conn *c)
{
	SSL_free(c->tls); /* accepts NULL */
	c->tls = NULL;
}

static void
tls_pump(link_conn *c)
{
	BIO   *wb = SSL_get_wbio(c->tls);
	size_t n;

	while ((n = BIO_ctrl_pending(wb)) > 0) {
		char *data = eb__malloc(n);
		int   got = BIO_read(wb, data, n > INT_MAX ? INT_MAX : (int) n);

		if (got <= 0) {
			free(data);
			return;
		}
		eb__link_conn_write_raw(c, data, (size_t) got);
	}
}

int
eb__link_tls_handshake(link_conn *c)
{
	int rv = SSL_do_handshake(c->tls);

	if (rv == 1) {
		c->tls_done = 1;
		tls_pump(c);
		eb__link_conn_mark_dirty(c); /* frames queued meanwhile */
		return 0;
	}
	switch (SSL_get_error(c->tls, rv)) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		tls_pump(c);
		return 0;
	default:
		tls_log_errors(c, "handshake");
		tls_pump(c); /* let the peer see our alert */
		return EB_ETLS;
	}
}

int
eb__link_tls_input(link_conn *c, const char *p, size_t n)
{
	char plain[16384];
	int  rv;

	if (BIO_write(SSL_get_rbio(c->tls), p, (int) n) != (int) n) {
		return EB_ETLS;
	}
	if (!c->tls_done) {
		if ((rv = eb__link_tls_handshake(c)) != 0 || !c->tls_done) {
			return rv;
		}
	}
	for (;;) {
		rv = SSL_read(c->tls, plain, (int) sizeof(plain));
		if (rv > 0) {
			int in = eb__link_conn_input(c, plain, (size_t) rv);

			if (in != 0 || c->state == LINK_CLOSING) {
				return in;
			}
			continue;
		}
		switch (SSL_get_error(c->tls, rv)) {
		case SSL_ERROR_WANT_READ:
		case SSL_ERROR_WANT_WRITE:
			tls_pump(c);
			return 0;
		case SSL_ERROR_ZERO_RETURN:
			return EB_ECLOSED;
		default:
			tls_log_errors(c, "read");
			return EB_ETLS;
		}
	}
}

int
eb__link_tls_output(link_conn *c, const char *p, size_t n)
{
	while (n > 0) {
		int chunk = n > (1u << 30) ? (1 << 30) : (int) n;
		int rv = SSL_write(c->tls, p, chunk);

		if (rv <= 0) {
			tls_log_errors(c, "write");
			return EB_ETLS;
		}
		p += rv;
		n -= (size_t) rv;
	}
	tls_pump(c);
	return 0;
}
