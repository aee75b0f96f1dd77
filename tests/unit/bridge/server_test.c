/*
 * Unit tests for the bridge server on a private loop with a real local bus:
 * lifecycle, option errors, and a libuv client speaking raw frames
 * (ping/pong, register/publish, request to nobody, connection limit,
 * oversize length, consumers removed on close, stats and the iterator).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ebnode/bridge.h>
#include <ebnode/bus.h>
#include <ebnode/err.h>

#include "bridge/bridge_int.h"
#include "common/frame.h"
#include "tests/harness/th.h"

#define MAX_FRAMES 16

typedef struct tclient {
	uv_tcp_t      tcp;
	uv_connect_t  conn;
	eb__frame_dec dec;
	char         *frames[MAX_FRAMES];
	int           nframes;
	int           connected;
	int           eof;
	int           closed;
} tclient;

typedef struct fixture {
	th_loop   *t;
	eb_bus    *bus;
	eb_bridge *b;
	int        bridge_closed;
	int        bus_closed;
} fixture;

static void
alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	static char rbuf[65536];

	(void) h;
	(void) hint;
	buf->base = rbuf;
	buf->len = sizeof(rbuf);
}

static void
read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	tclient    *c = s->data;
	const char *p;
	uint32_t    len;

	if (n < 0) {
		c->eof = 1;
		(void) uv_read_stop(s);
		return;
	}
	eb__frame_dec_feed(&c->dec, buf->base, (size_t) n);
	while (eb__frame_dec_next(&c->dec, &p, &len) == 0) {
		if (c->nframes < MAX_FRAMES) {
			c->frames[c->nframes] = calloc(1, len + 1);
			memcpy(c->frames[c->nframes], p, len);
		}
		c->nframes++;
	}
}

static void
connect_cb(uv_connect_t *req, int status)
{
	tclient *c = req->data;

	assert_int_equal(status, 0);
	c->connected = 1;
	assert_int_equal(
	    uv_read_start((uv_stream_t *) &c->tcp, alloc_cb, read_cb), 0);
}

static void
tclient_connect(fixture *f, tclient *c)
{
	struct sockaddr_in a;

	memset(c, 0, sizeof(*c));
	eb__frame_dec_init(&c->dec, 1u << 20);
	assert_int_equal(uv_tcp_init(&f->t->loop, &c->tcp), 0);
	c->tcp.data = c;
	c->conn.data = c;
	assert_int_equal(uv_ip4_addr("127.0.0.1", eb_bridge_port(f->b), &a), 0);
	assert_int_equal(uv_tcp_connect(&c->conn, &c->tcp,
	                     (const struct sockaddr *) &a, connect_cb),
	    0);
	assert_int_equal(
	    th_run_until(f->t, th_flag_set, &c->connected, 2000), 0);
}

typedef struct twrite {
	uv_write_t req;
	char       data[]; /* the bytes, freed with the request */
} twrite;

static void
write_cb(uv_write_t *w, int status)
{
	(void) status;
	free(w); /* req is the first member of twrite */
}

/* Writes a copy of p (freed when the write completes). */
static void
tclient_raw(tclient *c, const void *p, size_t n)
{
	twrite  *w = malloc(sizeof(*w) + n);
	uv_buf_t b;

	memcpy(w->data, p, n);
	b = uv_buf_init(w->data, (unsigned) n);
	assert_int_equal(
	    uv_write(&w->req, (uv_stream_t *) &c->tcp, &b, 1, write_cb), 0);
}

static void
tclient_frame(tclient *c, const char *json)
{
	size_t n = strlen(json);
	char  *buf = malloc(n + 4);

	eb__frame_put_len((unsigned char *) buf, (uint32_t) n);
	/* A frame, not a C string: no terminator wanted. */
	/* NOLINTNEXTLINE(bugprone-not-null-terminated-result) */
	memcpy(buf + 4, json, n);
	tclient_raw(c, buf, n + 4);
	free(buf);
}

typedef struct want {
	tclient *c;
	int      n;
} want;

static int
have_frames(void *arg)
{
	want *w = arg;

	return w->c->nframes >= w->n || w->c->eof;
}

static void
expect_frame(fixture *f, tclient *c, int idx, const char *json)
{
	want w = { c, idx + 1 };

	assert_int_equal(th_run_until(f->t, have_frames, &w, 2000), 0);
	assert_true(c->nframes > idx);
	assert_string_equal(c->frames[idx], json);
}

static void
tclient_closed_cb(uv_handle_t *h)
{
	tclient *c = h->data;

	c->closed = 1;
}

static void
tclient_close(fixture *f, tclient *c)
{
	int i;

	uv_close((uv_handle_t *) &c->tcp, tclient_closed_cb);
	assert_int_equal(th_run_until(f->t, th_flag_set, &c->closed, 2000), 0);
	for (i = 0; i < c->nframes && i < MAX_FRAMES; i++) {
		free(c->frames[i]);
	}
	eb__frame_dec_free(&c->dec);
}

static void
bridge_closed_cb(eb_bridge *b, void *arg)
{
	fixture *f = arg;

	(void) b;
	f->bridge_closed++;
}

static void
bus_closed_cb(eb_bus *bus, void *arg)
{
	fixture *f = arg;

	(void) bus;
	f->bus_closed++;
}

static fixture *
fixture_new(th_loop *t, eb_bridge_opts *o)
{
	fixture    *f = calloc(1, sizeof(*f));
	eb_bus_opts bo;

	f->t = t;
	eb_bus_opts_init(&bo);
	assert_int_equal(eb_bus_new(&t->loop, &bo, &f->bus), 0);
	assert_int_equal(eb_bridge_new(&t->loop, f->bus, o, NULL, &f->b), 0);
	assert_int_equal(eb_bridge_start(f->b, NULL), 0);
	assert_true(eb_bridge_port(f->b) > 0);
	return f;
}

/* A fixture whose bridge permits every address both ways. */
static fixture *
fixture_open_all(th_loop *t)
{
	const eb_bridge_permitted all[] = { { NULL, NULL } };
	eb_bridge_opts            o;

	eb_bridge_opts_init(&o);
	o.inbound = all;
	o.inbound_count = 1;
	o.outbound = all;
	o.outbound_count = 1;
	return fixture_new(t, &o);
}

static void
fixture_free(fixture *f)
{
	eb_bridge_close(f->b, bridge_closed_cb, f);
	assert_int_equal(f->bridge_closed, 0);
	assert_int_equal(
	    th_run_until(f->t, th_flag_set, &f->bridge_closed, 2000), 0);
	assert_int_equal(f->bridge_closed, 1);
	eb_bus_close(f->bus, bus_closed_cb, f);
	assert_int_equal(th_loop_run(f->t), 0);
	assert_int_equal(f->bus_closed, 1);
	free(f);
}

static void
test_close_without_start(void **state)
{
	th_loop       *t = *state;
	eb_bridge_opts o;
	eb_bridge     *b;
	fixture        f;

	memset(&f, 0, sizeof(f));
	eb_bridge_opts_init(&o);
	assert_int_equal(eb_bridge_new(&t->loop, NULL, &o, NULL, &b), 0);
	assert_int_equal(eb_bridge_port(b), 0);
	eb_bridge_close(b, bridge_closed_cb, &f);
	assert_int_equal(f.bridge_closed, 0); /* never synchronous */
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(f.bridge_closed, 1);
}

static void
test_bad_options(void **state)
{
	th_loop                  *t = *state;
	eb_bridge_opts            o;
	eb_bridge                *b = NULL;
	eb_errbuf                 err;
	const eb_bridge_permitted bad[] = { { NULL, "(" } };

	eb_bridge_opts_init(&o);
	o.inbound = bad;
	o.inbound_count = 1;
	assert_int_equal(eb_bridge_new(&t->loop, NULL, &o, &err, &b), EB_ECONF);
	assert_non_null(strstr(err.msg, "inbound[0]"));
	eb_bridge_opts_init(&o);
	o.tls_cert = "/nonexistent/cert.pem";
	o.tls_key = "/nonexistent/key.pem";
	assert_int_equal(eb_bridge_new(&t->loop, NULL, &o, &err, &b), EB_ETLS);
	o.tls_client_auth = EB_BRIDGE_CLIENT_AUTH_REQUIRED;
	assert_int_equal(eb_bridge_new(&t->loop, NULL, &o, &err, &b), EB_ECONF);
	eb_bridge_opts_init(&o);
	o.auth_mode = EB_BRIDGE_AUTH_EVERY;
	assert_int_equal(eb_bridge_new(&t->loop, NULL, &o, &err, &b), EB_ECONF);
	assert_null(b);
}

static void
test_port_in_use(void **state)
{
	th_loop       *t = *state;
	eb_bridge_opts o;
	fixture       *f;
	eb_bridge     *b2;
	eb_errbuf      err;
	fixture        g;

	memset(&g, 0, sizeof(g));
	eb_bridge_opts_init(&o);
	f = fixture_new(t, &o);
	o.port = eb_bridge_port(f->b);
	assert_int_equal(eb_bridge_new(&t->loop, f->bus, &o, NULL, &b2), 0);
	assert_int_equal(eb_bridge_start(b2, &err), UV_EADDRINUSE);
	assert_non_null(strstr(err.msg, "listen"));
	assert_int_equal(eb_bridge_port(b2), 0);
	eb_bridge_close(
	    b2, bridge_closed_cb, &g); /* also after a failed start */
	assert_int_equal(
	    th_run_until(t, th_flag_set, &g.bridge_closed, 2000), 0);
	fixture_free(f);
}

static void
count_conn(const eb_bridge_conn_info *info, void *arg)
{
	int *n = arg;

	assert_non_null(strstr(info->peer, "127.0.0.1:"));
	assert_int_equal(info->tls, 0);
	(*n)++;
}

static void
test_protocol(void **state)
{
	th_loop        *t = *state;
	eb_bridge_stats st;
	fixture        *f;
	tclient         c;
	int             n = 0;

	f = fixture_open_all(t);
	tclient_connect(f, &c);
	tclient_frame(&c, "{\"type\":\"ping\"}");
	expect_frame(f, &c, 0, "{\"type\":\"pong\"}");
	tclient_frame(&c, "{\"type\":\"register\",\"address\":\"a\"}");
	tclient_frame(&c, "{\"type\":\"register\",\"address\":\"a\"}");
	tclient_frame(&c, "{\"type\":\"publish\",\"address\":\"a\","
	                  "\"body\":{\"v\":1},\"headers\":{\"h\":5}}");
	expect_frame(f, &c, 1,
	    "{\"type\":\"message\",\"address\":\"a\",\"headers\":{\"h\":\"5\"},"
	    "\"body\":{\"v\":1},\"send\":false}");
	tclient_frame(&c, "{\"type\":\"send\",\"address\":\"nobody\","
	                  "\"replyAddress\":\"r1\"}");
	expect_frame(f, &c, 2,
	    "{\"type\":\"err\",\"address\":\"r1\",\"sourceAddress\":"
	    "\"nobody\",\"failureCode\":-1,\"failureType\":\"NO_HANDLERS\","
	    "\"message\":\"No handlers for address nobody\"}");
	tclient_frame(&c, "{\"type\":\"bogus\"}");
	expect_frame(
	    f, &c, 3, "{\"type\":\"err\",\"message\":\"unknown_type\"}");
	tclient_frame(&c, "not json");
	expect_frame(f, &c, 4,
	    "{\"type\":\"err\",\"message\":\"invalid_json: not a JSON "
	    "object\"}");
	tclient_frame(&c, "{\"type\":\"unregister\",\"address\":\"zz\"}");
	expect_frame(
	    f, &c, 5, "{\"type\":\"err\",\"message\":\"unknown_address\"}");
	assert_int_equal(c.nframes, 6); /* one publish, delivered once */
	eb_bridge_stats_get(f->b, &st);
	assert_int_equal(st.conns_open, 1);
	assert_int_equal(st.frames_in[EB_BRIDGE_IN_REGISTER], 2);
	assert_int_equal(st.frames_in[EB_BRIDGE_IN_MALFORMED], 1);
	assert_int_equal(st.frames_out[EB_BRIDGE_OUT_PONG], 1);
	assert_int_equal(st.frames_out[EB_BRIDGE_OUT_ERR], 4);
	assert_int_equal(st.consumers, 1);
	assert_int_equal(eb_bridge_conn_foreach(f->b, count_conn, &n), 1);
	assert_int_equal(n, 1);
	tclient_close(f, &c);
	/* The bridge sees EOF and drops the socket's consumer. */
	while (st.consumers != 0) {
		assert_int_equal(uv_run(&t->loop, UV_RUN_ONCE) >= 0, 1);
		eb_bridge_stats_get(f->b, &st);
	}
	assert_int_equal(
	    eb_bus_send(f->bus, "a", NULL, NULL, NULL), EB_ENOHANDLERS);
	fixture_free(f);
}

/* A bus consumer that answers every request with its own body. */
static void
echo_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	(void) c;
	(void) arg;
	assert_int_equal(
	    eb_bus_msg_reply(msg, eb_bus_msg_body(msg), NULL, NULL, NULL, NULL),
	    0);
}

/* Every kept request block has room for EB__BREQ_STRS bytes of strings
 * (none is kept under the sanitizers). */
static void
check_kept_blocks(eb_bridge *b)
{
	void    *p = b->breq_spare.head;
	uint32_t n = 0;

	while (p != NULL) {
		assert_true(
		    malloc_usable_size(p) >= sizeof(eb__breq) + EB__BREQ_STRS);
		memcpy(&p, p, sizeof(p));
		n++;
	}
	assert_int_equal(n, b->breq_spare.n);
	assert_true(n <= EB__BREQ_SPARE);
#ifndef EB__SPARE_OFF
	assert_true(n > 0);
#endif
}

/* Bridge requests are kept for the next ones when their replyAddress and
 * address fit a kept block (deliver.c, EB__BREQ_STRS = 128 with the NULs):
 * rounds of requests whose strings take 7, 127, 128, 129 and 205 bytes,
 * each answered to its own replyAddress with its own body. */
static void
test_request_blocks(void **state)
{
	th_loop            *t = *state;
	static const size_t lens[] = { 1, 121, 122, 123, 199 };
	enum { NL = sizeof(lens) / sizeof(lens[0]) };
	eb_bus_consumer *ec;
	fixture         *f;
	tclient          c;
	char             token[200];
	char             frame[400];
	char             want_addr[220];
	int              round;
	size_t           i;

	f = fixture_open_all(t);
	assert_int_equal(
	    eb_bus_consumer_new(f->bus, "echo", 0, echo_handler, NULL, &ec), 0);
	tclient_connect(f, &c);
	for (round = 0; round < 3; round++) {
		for (i = 0; i < NL; i++) {
			memset(token, 'a' + (int) i, lens[i]);
			token[lens[i]] = '\0';
			(void) snprintf(frame, sizeof(frame),
			    "{\"type\":\"send\",\"address\":\"echo\","
			    "\"replyAddress\":\"%s\",\"body\":%d}",
			    token, round * 10 + (int) i);
			tclient_frame(&c, frame);
		}
		for (i = 0; i < NL; i++) {
			int   idx = round * (int) NL + (int) i;
			want  w = { &c, idx + 1 };
			char *body;

			assert_int_equal(
			    th_run_until(f->t, have_frames, &w, 2000), 0);
			memset(token, 'a' + (int) i, lens[i]);
			token[lens[i]] = '\0';
			(void) snprintf(want_addr, sizeof(want_addr),
			    "\"address\":\"%s\"", token);
			assert_non_null(strstr(c.frames[idx], want_addr));
			body = strstr(c.frames[idx], "\"body\":");
			assert_non_null(body);
			assert_int_equal(
			    strtol(body + 7, NULL, 10), round * 10 + (int) i);
		}
	}
	assert_int_equal(c.nframes, 3 * (int) NL);
	check_kept_blocks(f->b);
	eb_bus_consumer_close(ec);
	tclient_close(f, &c);
	fixture_free(f);
}

typedef struct want_open {
	fixture *f;
	uint64_t n;
} want_open;

static int
conns_open_is(void *arg)
{
	want_open      *w = arg;
	eb_bridge_stats st;

	eb_bridge_stats_get(w->f->b, &st);
	return st.conns_open == w->n;
}

static void
test_limits(void **state)
{
	th_loop        *t = *state;
	eb_bridge_opts  o;
	eb_bridge_stats st;
	fixture        *f;
	tclient         c1;
	tclient         c2;
	tclient         c3;
	unsigned char   hdr[4];

	eb_bridge_opts_init(&o);
	o.max_connections = 1;
	o.max_frame_bytes = 100;
	f = fixture_new(t, &o);
	/* A connection that has not completed a frame is evicted at the
	 * limit for a new one... */
	tclient_connect(f, &c1);
	{
		want_open w = { f, 1 };

		assert_int_equal(th_run_until(t, conns_open_is, &w, 2000), 0);
	}
	tclient_connect(f, &c2);
	{
		want w = { &c1, 1 };

		assert_int_equal(th_run_until(t, have_frames, &w, 2000), 0);
	}
	assert_int_equal(c1.eof, 1);
	eb_bridge_stats_get(f->b, &st);
	assert_int_equal(st.conns_evicted, 1);
	/* ...one that has spoken is not: the newcomer is refused. */
	tclient_frame(&c2, "{\"type\":\"ping\"}");
	expect_frame(f, &c2, 0, "{\"type\":\"pong\"}");
	tclient_connect(f, &c3);
	{
		want w = { &c3, 1 };

		assert_int_equal(th_run_until(t, have_frames, &w, 2000), 0);
	}
	assert_int_equal(c3.eof, 1); /* refused: closed at once */
	eb_bridge_stats_get(f->b, &st);
	assert_int_equal(st.conns_refused, 1);
	/* A length above max_frame_bytes closes the connection. */
	eb__frame_put_len(hdr, 101);
	tclient_raw(&c2, hdr, 4);
	{
		want w = { &c2, 2 };

		assert_int_equal(th_run_until(t, have_frames, &w, 2000), 0);
	}
	assert_int_equal(c2.eof, 1);
	assert_int_equal(c2.nframes, 1);
	eb_bridge_stats_get(f->b, &st);
	assert_int_equal(st.conns_closed_frame, 1);
	tclient_close(f, &c1);
	tclient_close(f, &c2);
	tclient_close(f, &c3);
	fixture_free(f);
}

typedef struct hook_rec {
	fixture *f;
	int      n;
	int      types[32];
	char     addrs[32][32];
	uint64_t conn_id;
} hook_rec;

static int
record_hook(const eb_bridge_event *ev, void *arg)
{
	hook_rec *h = arg;

	if (h->n < 32) {
		h->types[h->n] = (int) ev->type;
		(void) snprintf(h->addrs[h->n], sizeof(h->addrs[h->n]), "%s",
		    ev->address != NULL ? ev->address : "-");
		h->n++;
	}
	h->conn_id = ev->conn_id;
	assert_non_null(strstr(ev->peer, "127.0.0.1:"));
	if (ev->type == EB_BRIDGE_EV_REGISTERED && ev->address != NULL &&
	    strcmp(ev->address, "hello") == 0) {
		/* Vert.x hook test: a send from inside REGISTERED reaches the
		 * new consumer, i.e. the client. */
		json_t *body = json_pack("{s:s}", "value", "Francesco");

		assert_int_equal(
		    eb_bus_send(h->f->bus, "hello", body, NULL, NULL), 0);
		json_decref(body);
	}
	if (ev->type == EB_BRIDGE_EV_PUBLISH && ev->address != NULL &&
	    strcmp(ev->address, "blocked") == 0) {
		assert_non_null(ev->frame);
		return 1;
	}
	return 0;
}

static void
test_hook(void **state)
{
	th_loop         *t = *state;
	fixture         *f;
	tclient          c;
	hook_rec         h;
	static const int order[] = { EB_BRIDGE_EV_SOCKET_CREATED,
		EB_BRIDGE_EV_REGISTER, EB_BRIDGE_EV_REGISTERED,
		EB_BRIDGE_EV_PUBLISH, EB_BRIDGE_EV_SOCKET_PING,
		EB_BRIDGE_EV_SOCKET_CLOSED };
	int              i;

	memset(&h, 0, sizeof(h));
	f = fixture_open_all(t);
	h.f = f;
	eb_bridge_set_hook(f->b, record_hook, &h);
	tclient_connect(f, &c);
	tclient_frame(&c, "{\"type\":\"register\",\"address\":\"hello\"}");
	expect_frame(f, &c, 0,
	    "{\"type\":\"message\",\"address\":\"hello\",\"headers\":{},"
	    "\"body\":{\"value\":\"Francesco\"},\"send\":true}");
	tclient_frame(&c, "{\"type\":\"publish\",\"address\":\"blocked\"}");
	expect_frame(f, &c, 1,
	    "{\"type\":\"err\",\"message\":\"blocked by bridgeEvent "
	    "handler\"}");
	tclient_frame(&c, "{\"type\":\"ping\"}");
	expect_frame(f, &c, 2, "{\"type\":\"pong\"}");
	assert_int_equal(
	    eb_bridge_conn_close(f->b, h.conn_id + 100), UV_ENOENT);
	assert_int_equal(eb_bridge_conn_close(f->b, h.conn_id), 0);
	{
		want w = { &c, 4 }; /* until EOF */

		assert_int_equal(th_run_until(t, have_frames, &w, 2000), 0);
	}
	assert_int_equal(c.eof, 1);
	assert_int_equal(h.n, 6);
	for (i = 0; i < 6; i++) {
		assert_int_equal(h.types[i], order[i]);
	}
	assert_string_equal(h.addrs[1], "hello");
	assert_string_equal(h.addrs[2], "hello");
	assert_string_equal(h.addrs[3], "blocked");
	assert_string_equal(h.addrs[4], "-");
	assert_string_equal(
	    eb_bridge_event_name(EB_BRIDGE_EV_REGISTERED), "REGISTERED");
	tclient_close(f, &c);
	fixture_free(f);
}

typedef struct closer {
	eb_bridge *b;
	uint64_t   ids[4];
	int        n;
	int        closed;
} closer;

/* On every SOCKET_CLOSED, closes every other known connection. */
static int
closing_hook(const eb_bridge_event *ev, void *arg)
{
	closer *k = arg;
	int     i;

	if (ev->type == EB_BRIDGE_EV_SOCKET_CREATED && k->n < 4) {
		k->ids[k->n++] = ev->conn_id;
	}
	if (ev->type == EB_BRIDGE_EV_SOCKET_CLOSED) {
		k->closed++;
		for (i = 0; i < k->n; i++) {
			(void) eb_bridge_conn_close(k->b, k->ids[i]);
		}
	}
	return 0;
}

static int
all_created(void *arg)
{
	closer *k = arg;

	return k->n == 3;
}

static int
all_closed(void *arg)
{
	closer *k = arg;

	return k->closed == 3;
}

/* The idle sweep and the bridge's close both survive a SOCKET_CLOSED hook
 * that closes other connections. */
static void
test_hook_closes_others(void **state)
{
	th_loop       *t = *state;
	eb_bridge_opts o;
	fixture       *f;
	tclient        c[3];
	closer         k;
	int            i;

	memset(&k, 0, sizeof(k));
	eb_bridge_opts_init(&o);
	o.idle_timeout_ms = 200;
	f = fixture_new(t, &o);
	k.b = f->b;
	eb_bridge_set_hook(f->b, closing_hook, &k);
	for (i = 0; i < 3; i++) {
		tclient_connect(f, &c[i]);
	}
	assert_int_equal(th_run_until(t, all_created, &k, 2000), 0);
	/* All three go idle in the same sweep. */
	assert_int_equal(th_run_until(t, all_closed, &k, 3000), 0);
	for (i = 0; i < 3; i++) {
		tclient_close(f, &c[i]);
	}
	fixture_free(f);

	/* Now with the bridge closing them. */
	memset(&k, 0, sizeof(k));
	eb_bridge_opts_init(&o);
	f = fixture_new(t, &o);
	k.b = f->b;
	eb_bridge_set_hook(f->b, closing_hook, &k);
	for (i = 0; i < 3; i++) {
		tclient_connect(f, &c[i]);
	}
	assert_int_equal(th_run_until(t, all_created, &k, 2000), 0);
	eb_bridge_close(f->b, bridge_closed_cb, f);
	assert_int_equal(k.closed, 3);
	assert_int_equal(
	    th_run_until(t, th_flag_set, &f->bridge_closed, 2000), 0);
	for (i = 0; i < 3; i++) {
		tclient_close(f, &c[i]);
	}
	eb_bus_close(f->bus, bus_closed_cb, f);
	assert_int_equal(th_loop_run(t), 0);
	free(f);
}

/* Feeds a header declaring len, then have bytes of it. */
static void
feed_partial(eb__bconn *c, uint32_t len, size_t have)
{
	unsigned char hdr[4];
	char         *body = malloc(have);

	memset(body, 'x', have);
	eb__frame_put_len(hdr, len);
	eb__bconn_feed(c, (const char *) hdr, 4);
	eb__bconn_feed(c, body, have);
	free(body);
}

/*
 * Issue 11: over bridge.input_budget_bytes, empty buffers are given back
 * first, then the connection holding the largest buffered input is closed;
 * memory grows with the bytes received, never with the declared length.
 */
static void
test_input_budget(void **state)
{
	th_loop        *t = *state;
	eb_bridge_opts  o;
	eb_bridge_stats st;
	fixture        *f;
	eb__bconn      *idle;
	eb__bconn      *small;
	eb__bconn      *big;

	eb_bridge_opts_init(&o);
	o.input_budget_bytes = 300000;
	f = fixture_new(t, &o);
	idle = eb__bconn_open_detached(f->b);
	small = eb__bconn_open_detached(f->b);
	big = eb__bconn_open_detached(f->b);
	/* A declared 1 MiB with 10 bytes sent costs a page, not 1 MiB. */
	feed_partial(small, 1024 * 1024, 10);
	eb_bridge_stats_get(f->b, &st);
	assert_true(st.input_bytes <= 4096);
	/* idle: a whole 60 000-byte frame (not JSON: skipped); its buffer,
	 * grown to the frame's size and no further, is kept for reuse. */
	feed_partial(idle, 60000, 60000);
	eb_bridge_stats_get(f->b, &st);
	assert_int_equal(st.input_bytes, 4096 + 60004);
	/* Over the budget: idle's empty buffer goes, nobody is closed. */
	feed_partial(big, 1024 * 1024, 200000);
	eb_bridge_stats_get(f->b, &st);
	assert_int_equal(st.conns_closed_memory, 0);
	assert_true(st.input_bytes <= o.input_budget_bytes);
	assert_int_equal(st.conns_open, 3);
	/* Over again: the largest buffered input (big) is closed. */
	feed_partial(small, 1024 * 1024, 100000);
	eb_bridge_stats_get(f->b, &st);
	assert_int_equal(st.conns_closed_memory, 1);
	assert_true(st.input_bytes <= o.input_budget_bytes);
	assert_int_equal(st.conns_open, 2);
	eb__bconn_close(idle, "test");
	eb__bconn_close(small, "test");
	eb_bridge_stats_get(f->b, &st);
	assert_int_equal(st.input_bytes, 0);
	fixture_free(f);
}

/* Appends a frame of payload to out at *len (room assumed). */
static void
put_frame_at(char *out, size_t *len, const char *payload)
{
	size_t n = strlen(payload);

	eb__frame_put_len((unsigned char *) out + *len, (uint32_t) n);
	for (size_t i = 0; i < n; i++) {
		out[*len + 4 + i] = payload[i];
	}
	*len += 4 + n;
}

static int
conn_unpaused(void *arg)
{
	return !((eb__bconn *) arg)->paused;
}

/*
 * Frames that arrive whole are handled where they are read (read.c,
 * eb__frame_dec_next_in), the rest is buffered, in order: one read with 3
 * whole frames and half a fourth handles 3 and keeps the half; the next
 * read completes it (from the buffer) and brings 2 more. A frame that
 * blocks the connection (a busy address) leaves the rest of its read
 * buffered, not handled. (The per-turn share: test_frame_share.)
 */
static void
test_frames_in_place(void **state)
{
	th_loop        *t = *state;
	eb_bridge_opts  o;
	eb_bridge_stats st;
	fixture        *f;
	eb__bconn      *c;
	static char     in[512];
	size_t          len = 0;
	size_t          cut;

	eb_bridge_opts_init(&o);
	f = fixture_new(t, &o);
	c = eb__bconn_open_detached(f->b);
	put_frame_at(in, &len, "{\"type\":\"register\",\"address\":\"a\"}");
	put_frame_at(in, &len, "{\"type\":\"register\",\"address\":\"b\"}");
	put_frame_at(in, &len, "{\"type\":\"register\",\"address\":\"c\"}");
	cut = len + 20;
	put_frame_at(in, &len, "{\"type\":\"register\",\"address\":\"d\"}");
	put_frame_at(in, &len, "{\"type\":\"ping\"}");
	put_frame_at(in, &len, "{\"type\":\"register\",\"address\":\"e\"}");
	eb__bconn_feed(c, in, cut);
	eb_bridge_stats_get(f->b, &st);
	assert_int_equal(st.frames_in[EB_BRIDGE_IN_REGISTER], 3);
	assert_int_equal(eb__frame_dec_buffered(&c->dec), 20);
	eb__bconn_feed(c, in + cut, len - cut);
	eb_bridge_stats_get(f->b, &st);
	assert_int_equal(st.frames_in[EB_BRIDGE_IN_REGISTER], 5);
	assert_int_equal(st.frames_in[EB_BRIDGE_IN_PING], 1);
	assert_int_equal(eb__frame_dec_buffered(&c->dec), 0);
	/* Blocked by a busy address: the rest of the read waits. */
	eb_bus_pressure_set(f->bus, "a", 1);
	len = 0;
	put_frame_at(in, &len, "{\"type\":\"send\",\"address\":\"a\"}");
	put_frame_at(in, &len, "{\"type\":\"ping\"}");
	eb__bconn_feed(c, in, len);
	eb_bridge_stats_get(f->b, &st);
	assert_int_equal(st.frames_in[EB_BRIDGE_IN_SEND], 1);
	assert_int_equal(st.frames_in[EB_BRIDGE_IN_PING], 1);
	assert_true(c->blocked);
	assert_int_equal(eb__frame_dec_buffered(&c->dec), 19);
	eb_bus_pressure_set(f->bus, "a", 0);
	assert_int_equal(th_run_until(t, conn_unpaused, c, 2000), 0);
	eb_bridge_stats_get(f->b, &st);
	assert_int_equal(st.frames_in[EB_BRIDGE_IN_PING], 2);
	eb__bconn_close(c, "test");
	fixture_free(f);
}

/*
 * One read of 300 pings handles the first share (EB__BCONN_FRAME_BUDGET)
 * and buffers the others, which the drain handles on later turns, twice
 * as many per turn (read.c); once they ran out, the next batch starts
 * small again.
 */
static void
test_frame_share(void **state)
{
	th_loop        *t = *state;
	eb_bridge_opts  o;
	eb_bridge_stats st;
	fixture        *f;
	eb__bconn      *c;
	static char     in[300 * 20];
	size_t          len = 0;
	int             i;

	eb_bridge_opts_init(&o);
	f = fixture_new(t, &o);
	c = eb__bconn_open_detached(f->b);
	for (i = 0; i < 300; i++) {
		put_frame_at(in, &len, "{\"type\":\"ping\"}");
	}
	eb__bconn_feed(c, in, len);
	eb_bridge_stats_get(f->b, &st);
	assert_int_equal(
	    st.frames_in[EB_BRIDGE_IN_PING], EB__BCONN_FRAME_BUDGET);
	assert_int_equal(eb__frame_dec_buffered(&c->dec),
	    (300 - EB__BCONN_FRAME_BUDGET) * 19);
	assert_true(c->paused);
	/* The next turn takes twice as many, and so on up to the cap. */
	(void) uv_run(&t->loop, UV_RUN_NOWAIT);
	eb_bridge_stats_get(f->b, &st);
	assert_int_equal(
	    st.frames_in[EB_BRIDGE_IN_PING], 3 * EB__BCONN_FRAME_BUDGET);
	assert_int_equal(c->share, 4 * EB__BCONN_FRAME_BUDGET);
	assert_int_equal(th_run_until(t, conn_unpaused, c, 2000), 0);
	eb_bridge_stats_get(f->b, &st);
	assert_int_equal(st.frames_in[EB_BRIDGE_IN_PING], 300);
	assert_int_equal(eb__frame_dec_buffered(&c->dec), 0);
	assert_int_equal(c->share, 0); /* the next batch starts small */
	eb__bconn_close(c, "test");
	fixture_free(f);
}

/* Lifecycle misuse aborts (EB_ASSERT), in a child on its own loop. */
static void
bridge_misuse(const void *arg)
{
	const char    *what = arg;
	uv_loop_t      loop;
	eb_bus_opts    bo;
	eb_bus        *bus = NULL;
	eb_bridge_opts o;
	eb_bridge     *b = NULL;

	(void) uv_loop_init(&loop);
	eb_bus_opts_init(&bo);
	eb_bridge_opts_init(&o);
	o.port = 0;
	if (eb_bus_new(&loop, &bo, &bus) != 0 ||
	    eb_bridge_new(&loop, bus, &o, NULL, &b) != 0) {
		_exit(2);
	}
	eb_bridge_close(b, NULL, NULL);
	if (strcmp(what, "close") == 0) {
		eb_bridge_close(b, NULL, NULL);
	} else {
		(void) eb_bridge_start(b, NULL);
	}
}

static void
test_lifecycle_asserts(void **state)
{
	(void) state;
	assert_true(th_expect_abort(bridge_misuse, "close"));
	assert_true(th_expect_abort(bridge_misuse, "start"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_close_without_start, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_bad_options, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_port_in_use, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_protocol, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_request_blocks, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_limits, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_hook, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_hook_closes_others, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_frames_in_place, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_frame_share, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_input_budget, th_setup, th_teardown),
		cmocka_unit_test(test_lifecycle_asserts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
