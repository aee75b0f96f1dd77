/* Unit tests for the stream (stream/stream.h) over loopback sockets: a
 * client stream (eb__stream_init_client, eb__stream_connect) and a server
 * stream on an accepted socket carry bytes both ways, plain and over TLS
 * (the client's handshake_cb, its name verified); a server name the
 * certificate does not carry is refused with EB_ETLS; the write backlog
 * is empty once the kernel took everything. Certificates come from the
 * "certs" fixture in EB_CERTS_DIR. */
#include <stdlib.h>
#include <string.h>

#include <ebnode/err.h>

#include "common/buf.h"
#include "stream/stream.h"
#include "tests/harness/th.h"
#include "tls/tls.h"

typedef struct side {
	eb__stream s;
	eb__buf    in;  /* plaintext received */
	int        err; /* the error_cb status, 0 none */
	int        handshake;
	int        closed;
	int        started;
} side;

typedef struct pair {
	th_loop     *t;
	uv_tcp_t     listener;
	int          listener_closed;
	eb__tls_ctx *sctx; /* NULL: plain */
	side         srv;
	side         cli;
} pair;

static void
side_read_cb(eb__stream *s, const char *data, size_t n)
{
	side *d = s->data;

	eb__buf_append(&d->in, data, n);
}

static void
side_error_cb(eb__stream *s, int status)
{
	side *d = s->data;

	d->err = status;
	s->ops->close(s);
}

static void
side_closed_cb(eb__stream *s)
{
	side *d = s->data;

	d->closed = 1;
}

static void
side_handshake_cb(eb__stream *s)
{
	side *d = s->data;

	d->handshake = 1;
}

static const eb__stream_cbs side_cbs = {
	.read_cb = side_read_cb,
	.error_cb = side_error_cb,
	.closed_cb = side_closed_cb,
	.handshake_cb = side_handshake_cb,
};

static void
listener_cb(uv_stream_t *l, int status)
{
	pair *p = l->data;

	assert_int_equal(status, 0);
	assert_int_equal(uv_tcp_init(l->loop, &p->srv.s.tcp), 0);
	assert_int_equal(
	    eb__stream_init(&p->srv.s, p->sctx, &side_cbs, &p->srv), 0);
	assert_int_equal(uv_accept(l, (uv_stream_t *) &p->srv.s.tcp), 0);
	assert_int_equal(p->srv.s.ops->start(&p->srv.s), 0);
	p->srv.started = 1;
}

static void
client_connect_cb(eb__stream *s, int status)
{
	side *d = s->data;

	assert_int_equal(status, 0);
	assert_int_equal(s->ops->start(s), 0);
	d->started = 1;
}

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
	return ctx;
}

/* Listens on 127.0.0.1 and connects a client stream to it. */
static void
pair_open(pair *p, th_loop *t, eb__tls_ctx *cctx, const char *name)
{
	struct sockaddr_in sa;
	int                len = sizeof(sa);

	memset(p, 0, sizeof(*p));
	p->t = t;
	eb__buf_init(&p->srv.in);
	eb__buf_init(&p->cli.in);
	if (cctx != NULL) {
		p->sctx = ctx_new(
		    "server.pem", "server.key", NULL, EB__TLS_VERIFY_NONE);
	}
	assert_int_equal(uv_tcp_init(&t->loop, &p->listener), 0);
	p->listener.data = p;
	assert_int_equal(uv_ip4_addr("127.0.0.1", 0, &sa), 0);
	assert_int_equal(
	    uv_tcp_bind(&p->listener, (const struct sockaddr *) &sa, 0), 0);
	assert_int_equal(
	    uv_listen((uv_stream_t *) &p->listener, 8, listener_cb), 0);
	assert_int_equal(
	    uv_tcp_getsockname(&p->listener, (struct sockaddr *) &sa, &len), 0);
	assert_int_equal(uv_tcp_init(&t->loop, &p->cli.s.tcp), 0);
	assert_int_equal(eb__stream_init_client(&p->cli.s, cctx, name,
	                     name != NULL, &side_cbs, &p->cli),
	    0);
	assert_int_equal(eb__stream_connect(&p->cli.s,
	                     (const struct sockaddr *) &sa, client_connect_cb),
	    0);
}

static void
listener_closed_cb(uv_handle_t *h)
{
	pair *p = h->data;

	p->listener_closed = 1;
}

static int
both_closed(void *arg)
{
	pair *p = arg;

	return p->srv.closed && p->cli.closed && p->listener_closed;
}

/* Closes what is still open and waits for every handle. */
static void
pair_close(pair *p, eb__tls_ctx *cctx)
{
	if (!p->srv.s.closing && p->srv.started) {
		p->srv.s.ops->close(&p->srv.s);
	}
	if (!p->srv.started) {
		p->srv.closed = 1;
	}
	if (!p->cli.s.closing) {
		p->cli.s.ops->close(&p->cli.s);
	}
	uv_close((uv_handle_t *) &p->listener, listener_closed_cb);
	assert_int_equal(th_run_until(p->t, both_closed, p, 5000), 0);
	eb__buf_free(&p->srv.in);
	eb__buf_free(&p->cli.in);
	eb__tls_ctx_free(p->sctx);
	eb__tls_ctx_free(cctx);
}

static void
send_str(side *d, const char *text)
{
	eb__buf b;

	eb__buf_init(&b);
	eb__buf_append(&b, text, strlen(text));
	assert_int_equal(d->s.ops->write(&d->s, &b), 0);
	assert_int_equal(eb__buf_avail(&b), 0); /* left empty */
	eb__buf_free(&b);
}

static int
srv_has_ping(void *arg)
{
	pair *p = arg;

	return eb__buf_avail(&p->srv.in) == 4;
}

static int
cli_has_pong(void *arg)
{
	pair *p = arg;

	return eb__buf_avail(&p->cli.in) == 4;
}

static int
cli_ready(void *arg)
{
	pair *p = arg;

	return p->cli.handshake && p->srv.started;
}

static int
cli_failed(void *arg)
{
	pair *p = arg;

	return p->cli.err != 0 && p->srv.err != 0;
}

static int
cli_started(void *arg)
{
	pair *p = arg;

	return p->cli.started && p->srv.started;
}

/* Both directions, then the backlog is empty. */
static void
ping_pong(pair *p)
{
	send_str(&p->cli, "ping");
	assert_int_equal(th_run_until(p->t, srv_has_ping, p, 5000), 0);
	assert_memory_equal(eb__buf_head(&p->srv.in), "ping", 4);
	send_str(&p->srv, "pong");
	assert_int_equal(th_run_until(p->t, cli_has_pong, p, 5000), 0);
	assert_memory_equal(eb__buf_head(&p->cli.in), "pong", 4);
	assert_int_equal(eb__stream_backlog(&p->cli.s), 0);
	assert_int_equal(eb__stream_backlog(&p->srv.s), 0);
}

static void
test_plain(void **state)
{
	th_loop *t = *state;
	pair     p;

	pair_open(&p, t, NULL, NULL);
	assert_string_equal(p.cli.s.ops->name, "tcp");
	assert_int_equal(th_run_until(t, cli_started, &p, 5000), 0);
	ping_pong(&p);
	assert_int_equal(p.cli.handshake, 0); /* plain: never called */
	pair_close(&p, NULL);
}

static void
test_tls_client(void **state)
{
	th_loop     *t = *state;
	eb__tls_ctx *cctx =
	    ctx_new(NULL, NULL, "ca.pem", EB__TLS_VERIFY_REQUEST);
	pair p;

	pair_open(&p, t, cctx, "localhost");
	assert_string_equal(p.cli.s.ops->name, "tls");
	assert_int_equal(th_run_until(t, cli_ready, &p, 5000), 0);
	assert_true(p.cli.s.handshake_done);
	ping_pong(&p);
	assert_int_equal(p.cli.err, 0);
	assert_int_equal(p.srv.err, 0);
	pair_close(&p, cctx);
}

static void
test_tls_client_ip_name(void **state)
{
	th_loop     *t = *state;
	eb__tls_ctx *cctx =
	    ctx_new(NULL, NULL, "ca.pem", EB__TLS_VERIFY_REQUEST);
	pair p;

	pair_open(&p, t, cctx, "127.0.0.1"); /* an IP SAN, no SNI */
	assert_int_equal(th_run_until(t, cli_ready, &p, 5000), 0);
	ping_pong(&p);
	pair_close(&p, cctx);
}

static void
test_tls_wrong_name_refused(void **state)
{
	th_loop     *t = *state;
	eb__tls_ctx *cctx =
	    ctx_new(NULL, NULL, "ca.pem", EB__TLS_VERIFY_REQUEST);
	pair p;

	pair_open(&p, t, cctx, "other.example");
	assert_int_equal(th_run_until(t, cli_failed, &p, 5000), 0);
	assert_int_equal(p.cli.err, EB_ETLS);
	assert_int_equal(p.cli.handshake, 0);
	assert_non_null(strstr(p.cli.s.tls_err, "certificate verify failed"));
	pair_close(&p, cctx);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_plain, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_tls_client, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_tls_client_ip_name, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_tls_wrong_name_refused, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
