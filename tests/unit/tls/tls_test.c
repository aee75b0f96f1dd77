/* Unit tests for the TLS engine (tls/tls.c) without sockets: a client and
 * a server engine hand each other their ciphertext in memory. They finish a
 * mutual handshake and carry data both ways up to close_notify; a
 * certificate of another CA, a missing client certificate and a server the
 * client does not trust are refused; bad context options are reported.
 * Certificates come from the "certs" fixture in EB_CERTS_DIR. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/err.h>

#include "tests/harness/th.h"
#include "tls/tls.h"

static eb__tls_ctx *
ctx_new(const char *crt, const char *key, const char *ca, eb__tls_verify v)
{
	eb__tls_ctx_opts o;
	eb__tls_ctx     *ctx = NULL;
	eb_errbuf        e;

	memset(&o, 0, sizeof(o));
	o.cert_file = crt != NULL ? th_cert(crt) : NULL;
	o.key_file = key != NULL ? th_cert(key) : NULL;
	o.ca_file = ca != NULL ? th_cert(ca) : NULL;
	o.verify = v;
	assert_int_equal(eb__tls_ctx_new(&o, &ctx, &e), 0);
	assert_non_null(ctx);
	return ctx;
}

/* Moves a's pending ciphertext into b. Returns the bytes moved. */
static size_t
carry(eb__tls *a, eb__tls *b)
{
	size_t n;
	char  *p = eb__tls_take(a, &n);

	if (p == NULL) {
		return 0;
	}
	assert_int_equal(eb__tls_feed(b, p, n), 0);
	free(p);
	return n;
}

/* Drives both handshakes until both finish or one fails; returns the
 * server's and client's last results in *sr, *cr. */
static void
handshake(eb__tls *s, eb__tls *c, int *sr, int *cr)
{
	int i;

	*cr = eb__tls_handshake(c); /* the ClientHello */
	*sr = 0;
	for (i = 0; i < 20; i++) {
		size_t moved = carry(c, s);

		*sr = eb__tls_handshake(s);
		moved += carry(s, c);
		*cr = eb__tls_handshake(c);
		if (*sr < 0 || *cr < 0 ||
		    (*sr == 1 && *cr == 1 && moved == 0)) {
			return;
		}
	}
	fail_msg("handshake did not settle");
}

/* Reads everything pending on t into out (NUL-terminated); returns the last
 * eb__tls_read result (0 or an error). */
static int
drain(eb__tls *t, char *out, size_t cap, size_t *got)
{
	int r;

	*got = 0;
	while ((r = eb__tls_read(t, out + *got, cap - 1 - *got)) > 0) {
		*got += (size_t) r;
	}
	out[*got] = '\0';
	return r;
}

static void
test_mutual_handshake_and_data(void **state)
{
	eb__tls_ctx *sctx = ctx_new(
	    "server.pem", "server.key", "ca.pem", EB__TLS_VERIFY_REQUIRE);
	eb__tls_ctx *cctx = ctx_new(
	    "client.pem", "client.key", "ca.pem", EB__TLS_VERIFY_REQUEST);
	eb__tls    *s = eb__tls_new(sctx, 1, NULL);
	eb__tls    *c = eb__tls_new(cctx, 0, NULL);
	static char big[200000];
	static char out[sizeof(big) + 1];
	size_t      got;
	int         sr;
	int         cr;

	(void) state;
	assert_non_null(s);
	assert_non_null(c);
	handshake(s, c, &sr, &cr);
	assert_int_equal(sr, 1);
	assert_int_equal(cr, 1);
	assert_true(eb__tls_handshake_done(s));
	assert_true(eb__tls_handshake_done(c));

	/* Client to server. */
	assert_int_equal(eb__tls_write(c, "hello", 5), 0);
	assert_true(eb__tls_pending(c) > 5);
	(void) carry(c, s);
	assert_int_equal(drain(s, out, sizeof(out), &got), 0);
	assert_string_equal(out, "hello");

	/* Server to client, many records, pulled in small pieces. */
	memset(big, 'x', sizeof(big));
	assert_int_equal(eb__tls_write(s, big, sizeof(big)), 0);
	while (eb__tls_pending(s) > 0) {
		char   piece[1000];
		size_t n = eb__tls_pull(s, piece, sizeof(piece));

		assert_true(n > 0);
		assert_int_equal(eb__tls_feed(c, piece, n), 0);
	}
	assert_int_equal(drain(c, out, sizeof(out), &got), 0);
	assert_int_equal(got, sizeof(big));
	assert_memory_equal(out, big, sizeof(big));

	/* close_notify: the server sees the end of the stream. */
	eb__tls_close_notify(c);
	assert_true(carry(c, s) > 0);
	assert_int_equal(drain(s, out, sizeof(out), &got), EB_ECLOSED);
	assert_int_equal(got, 0);

	eb__tls_free(s);
	eb__tls_free(c);
	eb__tls_ctx_free(sctx);
	eb__tls_ctx_free(cctx);
}

/* The server requires a client certificate of ca.pem. */
static void
check_client_refused(const char *crt, const char *key)
{
	eb__tls_ctx *sctx = ctx_new(
	    "server.pem", "server.key", "ca.pem", EB__TLS_VERIFY_REQUIRE);
	eb__tls_ctx *cctx = ctx_new(crt, key, "ca.pem", EB__TLS_VERIFY_REQUEST);
	eb__tls     *s = eb__tls_new(sctx, 1, NULL);
	eb__tls     *c = eb__tls_new(cctx, 0, NULL);
	char         out[64];
	size_t       got;
	int          sr;
	int          cr;

	handshake(s, c, &sr, &cr);
	assert_int_equal(sr, EB_ETLS);
	assert_true(strlen(eb__tls_error(s)) > 0);
	/* The alert reaches the client: it fails too (TLS 1.3 clients
	 * finish first and see it on their next read). */
	(void) carry(s, c);
	if (cr == 1) {
		assert_int_equal(drain(c, out, sizeof(out), &got), EB_ETLS);
	} else {
		assert_int_equal(eb__tls_handshake(c), EB_ETLS);
	}
	eb__tls_free(s);
	eb__tls_free(c);
	eb__tls_ctx_free(sctx);
	eb__tls_ctx_free(cctx);
}

static void
test_client_of_wrong_ca_refused(void **state)
{
	(void) state;
	check_client_refused("wrong.pem", "wrong.key");
}

static void
test_client_without_certificate_refused(void **state)
{
	(void) state;
	check_client_refused(NULL, NULL);
}

static void
test_untrusted_server_refused(void **state)
{
	eb__tls_ctx *sctx =
	    ctx_new("server.pem", "server.key", NULL, EB__TLS_VERIFY_NONE);
	eb__tls_ctx *cctx =
	    ctx_new(NULL, NULL, "wrongca.pem", EB__TLS_VERIFY_REQUEST);
	eb__tls *s = eb__tls_new(sctx, 1, NULL);
	eb__tls *c = eb__tls_new(cctx, 0, NULL);
	int      sr;
	int      cr;

	(void) state;
	handshake(s, c, &sr, &cr);
	assert_int_equal(cr, EB_ETLS);
	assert_non_null(strstr(eb__tls_error(c), "certificate verify failed"));
	eb__tls_free(s);
	eb__tls_free(c);
	eb__tls_ctx_free(sctx);
	eb__tls_ctx_free(cctx);
}

static void
test_context_errors(void **state)
{
	eb__tls_ctx_opts o;
	eb__tls_ctx     *ctx = NULL;
	eb_errbuf        e;

	(void) state;
	memset(&o, 0, sizeof(o));
	o.cert_file = "/nonexistent/cert.pem";
	o.key_file = "/nonexistent/key.pem";
	assert_int_equal(eb__tls_ctx_new(&o, &ctx, &e), EB_ETLS);
	assert_non_null(strstr(e.msg, "certificate /nonexistent/cert.pem"));
	assert_null(ctx);

	o.cert_file = th_cert("server.pem");
	o.key_file = th_cert("client.key"); /* not the certificate's key */
	assert_int_equal(eb__tls_ctx_new(&o, &ctx, &e), EB_ETLS);
	assert_non_null(strstr(e.msg, "key "));

	o.key_file = NULL;
	assert_int_equal(eb__tls_ctx_new(&o, &ctx, &e), EB_ECONF);

	o.key_file = th_cert("server.key");
	o.verify = EB__TLS_VERIFY_REQUIRE;
	assert_int_equal(eb__tls_ctx_new(&o, &ctx, &e), EB_ECONF);
	assert_null(ctx);
}

/* close_notify twice aborts (EB_ASSERT). */
static void
close_twice(const void *arg)
{
	eb__tls_ctx *ctx = ctx_new(NULL, NULL, NULL, EB__TLS_VERIFY_NONE);
	eb__tls     *t = eb__tls_new(ctx, 0, NULL);

	(void) arg;
	eb__tls_close_notify(t);
	eb__tls_close_notify(t);
}

static void
test_close_notify_twice_asserts(void **state)
{
	(void) state;
	assert_true(th_expect_abort(close_twice, NULL));
}

int
main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mutual_handshake_and_data),
		cmocka_unit_test(test_client_of_wrong_ca_refused),
		cmocka_unit_test(test_client_without_certificate_refused),
		cmocka_unit_test(test_untrusted_server_refused),
		cmocka_unit_test(test_context_errors),
		cmocka_unit_test(test_close_notify_twice_asserts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
