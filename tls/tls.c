/* The TLS engine over memory BIOs; see tls.h. */
#include "tls/tls.h"

#include <arpa/inet.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "common/alloc.h"
#include "common/assert.h"

struct eb__tls_ctx {
	SSL_CTX *ssl;
};

struct eb__tls {
	SSL *ssl;  /* owned */
	BIO *rbio; /* borrowed from ssl: ciphertext in */
	BIO *wbio; /* borrowed from ssl: ciphertext out */
	int  handshake_done;
	int  shutdown_sent; /* close_notify queued: no more writes */
	char err[256];      /* the reason of the last failure */
};

/* Records the first queued OpenSSL error (or ssl_err) and clears the
 * queue. */
static void
note_error(char *buf, size_t cap, int ssl_err)
{
	unsigned long e = ERR_get_error();

	if (e != 0) {
		ERR_error_string_n(e, buf, cap);
	} else {
		(void) snprintf(buf, cap, "ssl_error=%d", ssl_err);
	}
	ERR_clear_error();
}

static int
ctx_fail(eb_errbuf *err, const char *what, const char *path)
{
	char reason[256];

	note_error(reason, sizeof(reason), 0);
	return eb_errf(
	    err, EB_ETLS, "%s %s: %s", what, path != NULL ? path : "", reason);
}

int
eb__tls_ctx_new(const eb__tls_ctx_opts *o, eb__tls_ctx **out, eb_errbuf *err)
{
	SSL_CTX *ctx;
	int      mode = SSL_VERIFY_NONE;
	int      rv;

	if ((o->cert_file == NULL) != (o->key_file == NULL)) {
		return eb_errf(
		    err, EB_ECONF, "certificate and key go together");
	}
	if (o->verify != EB__TLS_VERIFY_NONE && o->ca_file == NULL &&
	    !o->system_ca) {
		return eb_errf(
		    err, EB_ECONF, "peer verification needs a CA file");
	}
	ctx = SSL_CTX_new(TLS_method());
	if (ctx == NULL) {
		return ctx_fail(err, "context", NULL);
	}
	(void) SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	(void) SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION);
	if (o->idle_server) {
		/* Idle connections keep no 34 KiB record buffers (1000s of
		 * them); no client-initiated renegotiation (a CPU lever for
		 * one peer). */
		(void) SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
		(void) SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
	}
	if (o->ca_file != NULL) {
		STACK_OF(X509_NAME) * names;

		if (SSL_CTX_load_verify_locations(ctx, o->ca_file, NULL) != 1) {
			rv = ctx_fail(err, "ca", o->ca_file);
			goto fail;
		}
		names = SSL_load_client_CA_file(o->ca_file);
		if (names != NULL) {
			SSL_CTX_set_client_CA_list(ctx, names); /* takes it */
		}
	} else if (o->system_ca && SSL_CTX_set_default_verify_paths(ctx) != 1) {
		rv = ctx_fail(err, "ca", "(system default)");
		goto fail;
	}
	if (o->cert_file != NULL) {
		if (SSL_CTX_use_certificate_chain_file(ctx, o->cert_file) !=
		    1) {
			rv = ctx_fail(err, "certificate", o->cert_file);
			goto fail;
		}
		if (SSL_CTX_use_PrivateKey_file(
		        ctx, o->key_file, SSL_FILETYPE_PEM) != 1 ||
		    SSL_CTX_check_private_key(ctx) != 1) {
			rv = ctx_fail(err, "key", o->key_file);
			goto fail;
		}
	}
	if (o->verify == EB__TLS_VERIFY_REQUEST) {
		mode = SSL_VERIFY_PEER;
	} else if (o->verify == EB__TLS_VERIFY_REQUIRE) {
		mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
	}
	SSL_CTX_set_verify(ctx, mode, NULL);
	ERR_clear_error();
	*out = eb__malloc(sizeof(**out));
	(*out)->ssl = ctx;
	return 0;
fail:
	SSL_CTX_free(ctx);
	return rv;
}

void
eb__tls_ctx_free(eb__tls_ctx *ctx)
{
	if (ctx != NULL) {
		SSL_CTX_free(ctx->ssl);
		free(ctx);
	}
}

eb__tls *
eb__tls_new(eb__tls_ctx *ctx, int server, eb_errbuf *err)
{
	eb__tls *t;
	SSL     *ssl = SSL_new(ctx->ssl);
	BIO     *rb = BIO_new(BIO_s_mem());
	BIO     *wb = BIO_new(BIO_s_mem());
	char     reason[256];

	if (ssl == NULL || rb == NULL || wb == NULL) {
		SSL_free(ssl);
		BIO_free(rb);
		BIO_free(wb);
		note_error(reason, sizeof(reason), 0);
		(void) eb_errf(err, EB_ETLS, "new connection: %s", reason);
		return NULL;
	}
	SSL_set_bio(ssl, rb, wb); /* ssl owns both now */
	if (server) {
		SSL_set_accept_state(ssl);
	} else {
		SSL_set_connect_state(ssl);
	}
	t = eb__calloc(1, sizeof(*t));
	t->ssl = ssl;
	t->rbio = rb;
	t->wbio = wb;
	return t;
}

static int
is_ip_literal(const char *h)
{
	unsigned char buf[16];

	return inet_pton(AF_INET, h, buf) == 1 ||
	       inet_pton(AF_INET6, h, buf) == 1;
}

int
eb__tls_set_peer_name(eb__tls *t, const char *name, int verify)
{
	int ip = is_ip_literal(name);
	int ok = 1;

	/* The macro casts its argument to void *: pass a copy. */
	if (!ip) {
		char *sni = eb__strdup(name);

		ok = SSL_set_tlsext_host_name(t->ssl, sni) == 1;
		free(sni);
	}
	if (ok && verify) {
		ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(
		              SSL_get0_param(t->ssl), name) == 1
		        : SSL_set1_host(t->ssl, name) == 1;
	}
	if (!ok) {
		note_error(t->err, sizeof(t->err), 0);
		return EB_ETLS;
	}
	return 0;
}

void
eb__tls_free(eb__tls *t)
{
	if (t != NULL) {
		SSL_free(t->ssl); /* frees both memory BIOs */
		free(t);
	}
}

int
eb__tls_feed(eb__tls *t, const char *p, size_t n)
{
	/* A memory BIO grows as needed; the caller's read chunk and frame
	 * cap bound what accumulates here. */
	if (n > INT_MAX || BIO_write(t->rbio, p, (int) n) != (int) n) {
		note_error(t->err, sizeof(t->err), SSL_ERROR_SYSCALL);
		return EB_ETLS;
	}
	return 0;
}

int
eb__tls_handshake(eb__tls *t)
{
	int r;
	int e;

	if (t->handshake_done) {
		return 1;
	}
	r = SSL_do_handshake(t->ssl);
	if (r == 1) {
		t->handshake_done = 1;
		return 1;
	}
	e = SSL_get_error(t->ssl, r);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		return 0;
	}
	note_error(t->err, sizeof(t->err), e);
	return EB_ETLS;
}

int
eb__tls_handshake_done(const eb__tls *t)
{
	return t->handshake_done;
}

int
eb__tls_read(eb__tls *t, char *buf, size_t cap)
{
	int r;
	int e;

	EB_ASSERT(t->handshake_done);
	r = SSL_read(t->ssl, buf, cap > INT_MAX ? INT_MAX : (int) cap);
	if (r > 0) {
		return r;
	}
	e = SSL_get_error(t->ssl, r);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		return 0;
	}
	if (e == SSL_ERROR_ZERO_RETURN) {
		(void) snprintf(t->err, sizeof(t->err), "close_notify");
		ERR_clear_error();
		return EB_ECLOSED;
	}
	note_error(t->err, sizeof(t->err), e);
	return EB_ETLS;
}

int
eb__tls_write(eb__tls *t, const char *p, size_t n)
{
	EB_ASSERT(t->handshake_done);
	EB_ASSERT(!t->shutdown_sent);
	while (n > 0) {
		int chunk = n > (1u << 30) ? (1 << 30) : (int) n;
		int r = SSL_write(t->ssl, p, chunk);

		if (r <= 0) {
			note_error(
			    t->err, sizeof(t->err), SSL_get_error(t->ssl, r));
			return EB_ETLS;
		}
		p += r;
		n -= (size_t) r;
	}
	return 0;
}

void
eb__tls_close_notify(eb__tls *t)
{
	EB_ASSERT(!t->shutdown_sent);
	t->shutdown_sent = 1;
	if (t->handshake_done) {
		(void) SSL_shutdown(t->ssl);
	}
	ERR_clear_error();
}

size_t
eb__tls_pending(const eb__tls *t)
{
	return BIO_ctrl_pending(t->wbio);
}

size_t
eb__tls_pull(eb__tls *t, char *buf, size_t cap)
{
	int n = BIO_read(t->wbio, buf, cap > INT_MAX ? INT_MAX : (int) cap);

	return n > 0 ? (size_t) n : 0;
}

char *
eb__tls_take(eb__tls *t, size_t *n)
{
	size_t want = eb__tls_pending(t);
	char  *out;

	*n = 0;
	if (want == 0) {
		return NULL;
	}
	out = eb__malloc(want);
	*n = eb__tls_pull(t, out, want);
	if (*n == 0) {
		free(out);
		return NULL;
	}
	return out;
}

const char *
eb__tls_error(const eb__tls *t)
{
	return t->err;
}

const char *
eb__tls_verify_error(const eb__tls *t)
{
	long vr = SSL_get_verify_result(t->ssl);

	return vr == X509_V_OK ? NULL : X509_verify_cert_error_string(vr);
}
