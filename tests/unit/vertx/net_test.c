/*
 * vertx/net.c, the Vert.x cluster transport, on loopback sockets: a ping
 * answered with exactly one 0x01; a frame delivered decoded; a peer that
 * sends a malformed frame or announces an oversized one disconnected and
 * counted; two nets talking (frames and pings with pongs); a peer that
 * stops reading closed at the output bound (EB_EFULL, reported); a peer
 * that never answers pings closed at the pong deadline; a refused connect
 * reported.
 */
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "tests/harness/th.h"
#include "vertx/net.h"
#include "vertx/wire.h"

typedef struct side {
	eb__vx_net *net;
	int         frames;
	int         eproto;
	char        last_addr[64];
	int         downs;
	int         down_err;
	int         closed;
} side;

static void
frame_cb(eb__vx_net *n, int status, const eb__vx_frame *f, const char *why,
    void *arg)
{
	side *s = arg;

	(void) n;
	(void) why;
	if (status == EB_EPROTO) {
		s->eproto++;
		return;
	}
	s->frames++;
	(void) snprintf(s->last_addr, sizeof(s->last_addr), "%.*s",
	    (int) f->address.n, f->address.p);
}

static void
down_cb(eb__vx_net *n, const char *node_id, int err, void *arg)
{
	side *s = arg;

	(void) n;
	(void) node_id;
	s->downs++;
	s->down_err = err;
}

static void
net_open(th_loop *t, side *s, uint32_t ping_ms, size_t max_out)
{
	eb__vx_net_cfg cfg = { "127.0.0.1", 0, 1024, max_out, 2000, ping_ms,
		200, frame_cb, down_cb, s, NULL };

	(void) t;
	memset(s, 0, sizeof(*s));
	assert_int_equal(eb__vx_net_new(&t->loop, &cfg, &s->net), 0);
	assert_int_equal(eb__vx_net_start(s->net, NULL), 0);
	assert_true(eb__vx_net_port(s->net) > 0);
}

static void
net_closed_cb(eb__vx_net *n, void *arg)
{
	(void) n;
	((side *) arg)->closed++;
}

static void
net_close(th_loop *t, side *s)
{
	eb__vx_net_close(s->net, net_closed_cb, s);
	assert_int_equal(s->closed, 0);
	assert_int_equal(th_run_until(t, th_flag_set, &s->closed, 2000), 0);
}

/* ---- a raw peer: a client socket that writes bytes and records what
 * comes back ---- */

typedef struct raw {
	uv_tcp_t     tcp;
	uv_connect_t creq;
	int          connected;
	int          eof;
	eb__buf      got;
	int          closed;
} raw;

static void
raw_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	raw *r = h->data;

	(void) hint;
	b->base = eb__buf_reserve(&r->got, 4096);
	b->len = 4096;
}

static void
raw_read_cb(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
	raw *r = st->data;

	(void) b;
	if (n > 0) {
		r->got.len += (size_t) n;
	} else if (n < 0) {
		r->eof = 1;
	}
}

static void
raw_connect_cb(uv_connect_t *req, int status)
{
	raw *r = req->data;

	assert_int_equal(status, 0);
	r->connected = 1;
	assert_int_equal(
	    uv_read_start((uv_stream_t *) &r->tcp, raw_alloc_cb, raw_read_cb),
	    0);
}

static void
raw_open(th_loop *t, raw *r, int port)
{
	struct sockaddr_in sa;

	memset(r, 0, sizeof(*r));
	eb__buf_init(&r->got);
	assert_int_equal(uv_ip4_addr("127.0.0.1", port, &sa), 0);
	assert_int_equal(uv_tcp_init(&t->loop, &r->tcp), 0);
	r->tcp.data = r;
	r->creq.data = r;
	assert_int_equal(uv_tcp_connect(&r->creq, &r->tcp,
	                     (const struct sockaddr *) &sa, raw_connect_cb),
	    0);
	assert_int_equal(th_run_until(t, th_flag_set, &r->connected, 2000), 0);
}

static void
raw_write(raw *r, const void *p, size_t n)
{
	char    *copy = malloc(n);
	uv_buf_t b;

	memcpy(copy, p, n); /* uv_buf_t wants a mutable base */
	b = uv_buf_init(copy, (unsigned) n);
	assert_int_equal(uv_try_write((uv_stream_t *) &r->tcp, &b, 1), (int) n);
	free(copy);
}

static void
raw_closed_cb(uv_handle_t *h)
{
	raw *r = h->data;

	r->closed = 1;
}

static void
raw_close(th_loop *t, raw *r)
{
	uv_close((uv_handle_t *) &r->tcp, raw_closed_cb);
	assert_int_equal(th_run_until(t, th_flag_set, &r->closed, 2000), 0);
	eb__buf_free(&r->got);
}

static int
got_pred(void *arg)
{
	return eb__buf_avail(&((raw *) arg)->got) > 0;
}

static void
test_ping_pong_and_frames(void **state)
{
	th_loop   *t = *state;
	side       a;
	raw        r;
	eb__buf    b;
	eb__vx_out m = { "echo", "__vertx.reply.1", "n-1", 0, NULL, "{\"x\":1}",
		7 };
	eb__vx_net_stats st;

	net_open(t, &a, 0, 65536);
	raw_open(t, &r, eb__vx_net_port(a.net));
	eb__buf_init(&b);
	assert_int_equal(eb__vx_encode_ping(&b, "n-a"), 0);
	raw_write(&r, eb__buf_head(&b), eb__buf_avail(&b));
	assert_int_equal(th_run_until(t, got_pred, &r, 2000), 0);
	/* exactly one byte, 0x01 */
	assert_int_equal(eb__buf_avail(&r.got), 1);
	assert_int_equal(eb__buf_head(&r.got)[0], 1);
	/* a frame split across two writes arrives once, decoded */
	b.off = b.len = 0;
	assert_int_equal(eb__vx_encode(&b, &m), 0);
	raw_write(&r, eb__buf_head(&b), 5);
	raw_write(&r, eb__buf_head(&b) + 5, eb__buf_avail(&b) - 5);
	assert_int_equal(th_run_until(t, th_flag_set, &a.frames, 2000), 0);
	assert_string_equal(a.last_addr, "echo");
	eb__vx_net_get_stats(a.net, &st);
	assert_int_equal(st.pings_in, 1);
	assert_int_equal(st.frames_in, 1);
	assert_int_equal(st.inbound, 1);
	eb__buf_free(&b);
	raw_close(t, &r);
	net_close(t, &a);
}

static void
test_garbage_disconnected(void **state)
{
	th_loop         *t = *state;
	side             a;
	raw              r;
	eb__vx_net_stats st;
	/* length 5: version 2, codec 0, send, then a truncated address */
	static const unsigned char bad[] = { 0, 0, 0, 5, 2, 0, 0, 0, 0 };
	/* announces 1 MiB with a max of 1024 */
	static const unsigned char big[] = { 0, 0x10, 0, 0, 2 };

	net_open(t, &a, 0, 65536);
	raw_open(t, &r, eb__vx_net_port(a.net));
	raw_write(&r, bad, sizeof(bad));
	assert_int_equal(th_run_until(t, th_flag_set, &r.eof, 2000), 0);
	raw_close(t, &r);
	raw_open(t, &r, eb__vx_net_port(a.net));
	raw_write(&r, big, sizeof(big));
	assert_int_equal(th_run_until(t, th_flag_set, &r.eof, 2000), 0);
	raw_close(t, &r);
	eb__vx_net_get_stats(a.net, &st);
	assert_int_equal(st.bad_frames, 2);
	assert_int_equal(a.frames, 0);
	/* the net still serves */
	raw_open(t, &r, eb__vx_net_port(a.net));
	{
		eb__buf b;

		eb__buf_init(&b);
		(void) eb__vx_encode_ping(&b, "x");
		raw_write(&r, eb__buf_head(&b), eb__buf_avail(&b));
		eb__buf_free(&b);
	}
	assert_int_equal(th_run_until(t, got_pred, &r, 2000), 0);
	raw_close(t, &r);
	net_close(t, &a);
}

typedef struct stat_q {
	side    *s;
	uint64_t pings;
} stat_q;

static int
pings_pred(void *arg)
{
	stat_q          *q = arg;
	eb__vx_net_stats st;

	eb__vx_net_get_stats(q->s->net, &st);
	return st.pings_out >= q->pings;
}

static void
test_two_nets(void **state)
{
	th_loop   *t = *state;
	side       a;
	side       b;
	eb__buf    f;
	eb__vx_out m = { "to.b", NULL, "n-a", 1, NULL, "\"hi\"", 4 };
	stat_q     q = { &a, 3 };

	net_open(t, &a, 30, 65536);
	net_open(t, &b, 0, 65536);
	eb__buf_init(&f);
	assert_int_equal(eb__vx_encode(&f, &m), 0);
	/* sent before the connect completed: held, then written */
	assert_int_equal(eb__vx_net_send(a.net, "n-b", "127.0.0.1",
	                     eb__vx_net_port(b.net), &f),
	    0);
	assert_int_equal(eb__buf_avail(&f), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &b.frames, 2000), 0);
	assert_string_equal(b.last_addr, "to.b");
	/* a third ping needs two pongs (one ping in flight at a time) */
	assert_int_equal(th_run_until(t, pings_pred, &q, 3000), 0);
	assert_int_equal(a.downs, 0);
	eb__buf_free(&f);
	net_close(t, &a);
	net_close(t, &b);
}

/* A server that accepts and then neither reads nor writes. */
typedef struct mute {
	uv_tcp_t listener;
	uv_tcp_t conn;
	int      accepted;
	int      closed;
	int      port;
} mute;

static void
mute_conn_cb(uv_stream_t *l, int status)
{
	mute *s = l->data;

	assert_int_equal(status, 0);
	assert_int_equal(uv_tcp_init(l->loop, &s->conn), 0);
	s->conn.data = s;
	assert_int_equal(uv_accept(l, (uv_stream_t *) &s->conn), 0);
	s->accepted = 1;
}

static void
mute_open(th_loop *t, mute *s)
{
	struct sockaddr_in sa;
	struct sockaddr_in got;
	int                len = sizeof(got);

	memset(s, 0, sizeof(*s));
	assert_int_equal(uv_ip4_addr("127.0.0.1", 0, &sa), 0);
	assert_int_equal(uv_tcp_init(&t->loop, &s->listener), 0);
	s->listener.data = s;
	assert_int_equal(
	    uv_tcp_bind(&s->listener, (const struct sockaddr *) &sa, 0), 0);
	assert_int_equal(
	    uv_listen((uv_stream_t *) &s->listener, 8, mute_conn_cb), 0);
	assert_int_equal(
	    uv_tcp_getsockname(&s->listener, (struct sockaddr *) &got, &len),
	    0);
	s->port = ntohs(got.sin_port);
}

static void
mute_closed_cb(uv_handle_t *h)
{
	((mute *) h->data)->closed++;
}

static int
mute_closed_pred(void *arg)
{
	mute *s = arg;

	return s->closed == (s->accepted ? 2 : 1);
}

static void
mute_close(th_loop *t, mute *s)
{
	uv_close((uv_handle_t *) &s->listener, mute_closed_cb);
	if (s->accepted) {
		uv_close((uv_handle_t *) &s->conn, mute_closed_cb);
	}
	assert_int_equal(th_run_until(t, mute_closed_pred, s, 2000), 0);
}

static void
test_slow_peer_bounded(void **state)
{
	th_loop         *t = *state;
	side             a;
	mute             p;
	eb__buf          f;
	char            *body = malloc(16002);
	eb__vx_out       m = { "slow", NULL, "n-a", 0, NULL, body, 16002 };
	int              rv = 0;
	int              i;
	eb__vx_net_stats st;

	memset(body, 'x', 16002);
	body[0] = '"';
	body[16001] = '"';
	net_open(t, &a, 0, (size_t) 256 * 1024);
	mute_open(t, &p);
	eb__buf_init(&f);
	for (i = 0; i < 100000 && rv == 0; i++) {
		assert_int_equal(eb__vx_encode(&f, &m), 0);
		rv = eb__vx_net_send(a.net, "n-slow", "127.0.0.1", p.port, &f);
		(void) uv_run(&t->loop, UV_RUN_NOWAIT);
		eb__vx_net_get_stats(a.net, &st);
	}
	/* the bound hit: closed, explicit, reported */
	assert_int_equal(rv, EB_EFULL);
	assert_true(p.accepted);
	assert_int_equal(th_run_until(t, th_flag_set, &a.downs, 2000), 0);
	assert_int_equal(a.down_err, EB_EFULL);
	eb__vx_net_get_stats(a.net, &st);
	assert_int_equal(st.slow_closed, 1);
	eb__buf_free(&f);
	free(body);
	mute_close(t, &p);
	net_close(t, &a);
}

static void
test_no_pong(void **state)
{
	th_loop         *t = *state;
	side             a;
	mute             p;
	eb__buf          f;
	eb__vx_out       m = { "x", NULL, "n-a", 0, NULL, NULL, 0 };
	eb__vx_net_stats st;

	net_open(t, &a, 30, 65536);
	mute_open(t, &p);
	eb__buf_init(&f);
	assert_int_equal(eb__vx_encode(&f, &m), 0);
	assert_int_equal(
	    eb__vx_net_send(a.net, "n-mute", "127.0.0.1", p.port, &f), 0);
	/* ping after 30 ms, no pong within 200 ms: closed, reported */
	assert_int_equal(th_run_until(t, th_flag_set, &a.downs, 3000), 0);
	assert_int_equal(a.down_err, EB_ETIMEOUT);
	eb__vx_net_get_stats(a.net, &st);
	assert_int_equal(st.pong_timeouts, 1);
	eb__buf_free(&f);
	mute_close(t, &p);
	net_close(t, &a);
}

static void
test_connect_refused(void **state)
{
	th_loop   *t = *state;
	side       a;
	mute       p;
	int        port;
	eb__buf    f;
	eb__vx_out m = { "x", NULL, "n-a", 0, NULL, NULL, 0 };

	net_open(t, &a, 0, 65536);
	mute_open(t, &p); /* a port that was free, then closed */
	port = p.port;
	mute_close(t, &p);
	eb__buf_init(&f);
	assert_int_equal(eb__vx_encode(&f, &m), 0);
	assert_int_equal(
	    eb__vx_net_send(a.net, "n-gone", "127.0.0.1", port, &f), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &a.downs, 2000), 0);
	assert_int_equal(a.down_err, UV_ECONNREFUSED);
	/* not a numeric host: refused at once, nothing opened */
	assert_int_equal(eb__vx_encode(&f, &m), 0);
	assert_int_equal(
	    eb__vx_net_send(a.net, "n-x", "localhost", 1, &f), UV_EINVAL);
	eb__buf_free(&f);
	net_close(t, &a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_ping_pong_and_frames, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_garbage_disconnected, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_two_nets, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_slow_peer_bounded, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_no_pong, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_connect_refused, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
