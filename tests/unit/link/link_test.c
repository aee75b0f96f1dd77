/* Unit tests for the node link manager (link/link*.c) over real TCP on
 * 127.0.0.1: hello, who dials, frames, removal, reconnect, cluster and
 * version mismatches, heartbeat timeout, oversized frames. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ebnode/link.h>

#include "link/link.h"
#include "link/link_int.h"
#include "tests/harness/th.h"

typedef struct node {
	eb_link_mgr *mgr;
	int          ups;
	int          downs;
	int          frames;
	int          closed;
	int          congested_on, congested_off;
	uint32_t     last_peer;
	char         last_node[64];
	char         last_body[64];
} node;

static void
up_cb(void *ctx, uint32_t peer, const char *node_id)
{
	node *n = ctx;

	n->ups++;
	n->last_peer = peer;
	(void) snprintf(n->last_node, sizeof(n->last_node), "%s", node_id);
}

static void
down_cb(void *ctx, uint32_t peer)
{
	node *n = ctx;

	(void) peer;
	n->downs++;
}

static void
frame_cb(void *ctx, uint32_t peer, uint8_t type, const char *p, size_t len)
{
	node *n = ctx;

	(void) peer;
	assert_int_equal(type, EB_LINK_FRAME_USER);
	n->frames++;
	(void) snprintf(
	    n->last_body, sizeof(n->last_body), "%.*s", (int) len, p);
}

static void
congested_cb(void *ctx, uint32_t peer, int on)
{
	node *n = ctx;

	(void) peer;
	if (on) {
		n->congested_on++;
	} else {
		n->congested_off++;
	}
}

static const eb__link_handler handler = { up_cb, down_cb, frame_cb, NULL,
	congested_cb };

static void
node_open(th_loop *t, node *n, const char *id, const char *cluster, uint32_t hb,
    uint32_t dead)
{
	eb_link_opts o;

	memset(n, 0, sizeof(*n));
	eb_link_opts_init(&o);
	o.node_id = id;
	if (cluster != NULL) {
		o.cluster_name = cluster;
	}
	if (hb != 0) {
		o.heartbeat_ms = hb;
		o.dead_ms = dead;
	}
	assert_int_equal(eb_link_mgr_new(&t->loop, &o, &n->mgr, NULL), 0);
	eb__link_mgr_set_handler(n->mgr, &handler, n);
	assert_int_equal(eb_link_mgr_start(n->mgr), 0);
	assert_true(eb_link_mgr_port(n->mgr) > 0);
}

static void
closed_cb(eb_link_mgr *m, void *arg)
{
	(void) m;
	((node *) arg)->closed++;
}

static void
node_close(th_loop *t, node *n)
{
	eb_link_mgr_close(n->mgr, closed_cb, n);
	assert_int_equal(th_run_until(t, th_flag_set, &n->closed, 2000), 0);
	assert_int_equal(n->closed, 1);
}

static int
ge1_ups2(void *arg)
{
	node **n = arg;

	return n[0]->ups >= 1 && n[1]->ups >= 1;
}

static int
downs_ge1(void *arg)
{
	return ((node *) arg)->downs >= 1;
}

static int
ups_ge2(void *arg)
{
	return ((node *) arg)->ups >= 2;
}

static int
frames_ge1(void *arg)
{
	return ((node *) arg)->frames >= 1;
}

static void
send_text(node *n, uint32_t peer, const char *text)
{
	eb__buf *b = eb__link_frame_begin(n->mgr, peer, EB_LINK_FRAME_USER);

	assert_non_null(b);
	eb__buf_append(b, text, strlen(text));
	assert_int_equal(eb__link_frame_end(n->mgr, peer), 0);
}

static void
test_link_up_and_frames(void **state)
{
	th_loop *t = *state;
	node     a;
	node     b;
	node    *both[2] = { &a, &b };

	node_open(t, &a, "node-a", NULL, 0, 0);
	node_open(t, &b, "node-b", NULL, 0, 0);
	/* b is the higher id: adding a does not dial. */
	assert_int_equal(eb_link_mgr_peer_add(b.mgr, "node-a", "127.0.0.1",
	                     eb_link_mgr_port(a.mgr)),
	    0);
	assert_int_equal(
	    eb_link_mgr_peer_add(b.mgr, "node-b", "127.0.0.1", 1), 0);
	assert_int_equal(eb_link_mgr_peer_add(a.mgr, "node-b", "127.0.0.1",
	                     eb_link_mgr_port(b.mgr)),
	    0);
	assert_int_equal(th_run_until(t, ge1_ups2, both, 2000), 0);
	assert_string_equal(a.last_node, "node-b");
	assert_string_equal(b.last_node, "node-a");
	assert_true(eb_link_mgr_peer_up(a.mgr, "node-b"));
	assert_true(eb_link_mgr_peer_up(b.mgr, "node-a"));
	assert_string_equal(
	    eb__link_peer_node_id(a.mgr, a.last_peer), "node-b");
	send_text(&a, a.last_peer, "ping");
	assert_int_equal(th_run_until(t, frames_ge1, &b, 2000), 0);
	assert_string_equal(b.last_body, "ping");
	send_text(&b, b.last_peer, "pong");
	assert_int_equal(th_run_until(t, frames_ge1, &a, 2000), 0);
	assert_string_equal(a.last_body, "pong");
	assert_int_equal(a.ups + b.ups, 2); /* one link, no flapping */
	/* Removing the peer drops the link on both sides. */
	assert_int_equal(eb_link_mgr_peer_remove(a.mgr, "node-b"), 0);
	assert_int_equal(a.downs, 1); /* at once */
	assert_null(
	    eb__link_frame_begin(a.mgr, a.last_peer, EB_LINK_FRAME_USER));
	assert_int_equal(th_run_until(t, downs_ge1, &b, 2000), 0);
	node_close(t, &a);
	node_close(t, &b);
}

/* An idle callback that sends one link frame, as a bus turn does. */
static void
send_from_idle_cb(uv_idle_t *h)
{
	node *n = h->data;

	send_text(n, n->last_peer, "from-idle");
	(void) uv_idle_stop(h);
}

/*
 * Frames made by an idle callback (the bus runs its turns from one) are
 * written in that loop turn's prepare phase, before the loop polls, not on
 * the next turn: the next node starts on them while this one goes on with
 * what it read (issue 25 round 4). One uv_run(NOWAIT) is one turn.
 */
static void
test_idle_turn_frames_leave_that_turn(void **state)
{
	th_loop   *t = *state;
	node       a;
	node       b;
	node      *both[2] = { &a, &b };
	link_peer *p;
	uv_idle_t  idle;

	node_open(t, &a, "node-a", NULL, 0, 0);
	node_open(t, &b, "node-b", NULL, 0, 0);
	assert_int_equal(eb_link_mgr_peer_add(a.mgr, "node-b", "127.0.0.1",
	                     eb_link_mgr_port(b.mgr)),
	    0);
	assert_int_equal(eb_link_mgr_peer_add(b.mgr, "node-a", "127.0.0.1",
	                     eb_link_mgr_port(a.mgr)),
	    0);
	assert_int_equal(th_run_until(t, ge1_ups2, both, 2000), 0);
	p = eb__link_peer_by_id(a.mgr, a.last_peer);
	assert_non_null(p);
	assert_non_null(p->conn);
	assert_int_equal(eb__buf_avail(&p->conn->out), 0);
	(void) uv_idle_init(&t->loop, &idle);
	idle.data = &a;
	(void) uv_idle_start(&idle, send_from_idle_cb);
	(void) uv_run(&t->loop, UV_RUN_NOWAIT);
	assert_false(uv_is_active((uv_handle_t *) &idle)); /* it ran */
	assert_int_equal(eb__buf_avail(&p->conn->out), 0); /* and left */
	assert_int_equal(th_run_until(t, frames_ge1, &b, 2000), 0);
	assert_string_equal(b.last_body, "from-idle");
	uv_close((uv_handle_t *) &idle, NULL);
	node_close(t, &a);
	node_close(t, &b);
}

static void
test_reconnect_after_drop(void **state)
{
	th_loop   *t = *state;
	node       a;
	node       b;
	node      *both[2] = { &a, &b };
	link_peer *p;

	node_open(t, &a, "a", NULL, 0, 0);
	node_open(t, &b, "b", NULL, 0, 0);
	assert_int_equal(eb_link_mgr_peer_add(
	                     a.mgr, "b", "127.0.0.1", eb_link_mgr_port(b.mgr)),
	    0);
	assert_int_equal(th_run_until(t, ge1_ups2, both, 2000), 0);
	/* b drops the connection (as if the network cut it): a redials
	 * after its back-off and both see the link again. */
	p = eb__link_peer_find(b.mgr, "a");
	assert_non_null(p);
	eb__link_conn_close(p->conn, "test");
	assert_int_equal(b.downs, 1);
	assert_int_equal(th_run_until(t, ups_ge2, &a, 3000), 0);
	assert_int_equal(th_run_until(t, ups_ge2, &b, 3000), 0);
	assert_int_equal(a.downs, 1);
	node_close(t, &b);
	assert_int_equal(th_run_until(t, downs_ge1, &a, 2000), 0);
	assert_int_equal(a.downs, 2);
	node_close(t, &a);
}

static void
test_restarted_peer(void **state)
{
	th_loop *t = *state;
	node     a;
	node     b;
	node     b2;
	node    *both[2] = { &a, &b };
	node    *both2[2] = { &a, &b2 };

	node_open(t, &a, "a", NULL, 0, 0);
	node_open(t, &b, "b", NULL, 0, 0);
	assert_int_equal(eb_link_mgr_peer_add(
	                     a.mgr, "b", "127.0.0.1", eb_link_mgr_port(b.mgr)),
	    0);
	assert_int_equal(th_run_until(t, ge1_ups2, both, 2000), 0);
	node_close(t, &b);
	assert_int_equal(th_run_until(t, downs_ge1, &a, 2000), 0);
	/* The same node id comes back elsewhere (membership update). */
	node_open(t, &b2, "b", NULL, 0, 0);
	a.ups = 0;
	assert_int_equal(eb_link_mgr_peer_add(
	                     a.mgr, "b", "127.0.0.1", eb_link_mgr_port(b2.mgr)),
	    0);
	assert_int_equal(th_run_until(t, ge1_ups2, both2, 2000), 0);
	node_close(t, &a);
	node_close(t, &b2);
}

static void
test_host_name_resolved(void **state)
{
	th_loop *t = *state;
	node     a;
	node     b;
	node    *both[2] = { &a, &b };

	node_open(t, &a, "a", NULL, 0, 0);
	node_open(t, &b, "b", NULL, 0, 0);
	/* Not an IP literal: looked up on the threadpool, then dialed. */
	assert_int_equal(eb_link_mgr_peer_add(
	                     a.mgr, "b", "localhost", eb_link_mgr_port(b.mgr)),
	    0);
	assert_int_equal(th_run_until(t, ge1_ups2, both, 3000), 0);
	/* A name that does not resolve: no crash, no link, close is clean
	 * even with the lookup possibly in flight. */
	assert_int_equal(eb_link_mgr_peer_add(a.mgr, "c",
	                     "no-such-host.invalid", eb_link_mgr_port(b.mgr)),
	    0);
	node_close(t, &a);
	node_close(t, &b);
}

static int
attempts_ge3(void *arg)
{
	link_peer *p = arg;

	return p->attempts >= 3;
}

static void
test_cluster_mismatch(void **state)
{
	th_loop   *t = *state;
	node       a;
	node       b;
	link_peer *p;

	node_open(t, &a, "a", "red", 0, 0);
	node_open(t, &b, "b", "blue", 0, 0);
	assert_int_equal(eb_link_mgr_peer_add(
	                     a.mgr, "b", "127.0.0.1", eb_link_mgr_port(b.mgr)),
	    0);
	p = eb__link_peer_find(a.mgr, "b");
	assert_non_null(p);
	/* Rejected again and again, with growing back-off, never up. */
	assert_int_equal(th_run_until(t, attempts_ge3, p, 3000), 0);
	assert_int_equal(a.ups + b.ups, 0);
	node_close(t, &a);
	node_close(t, &b);
}

/* ---- a raw client speaking the wire by hand ---- */

typedef struct raw {
	int          no_read; /* never read: a peer that does not read */
	uv_tcp_t     tcp;
	uv_connect_t creq;
	uv_write_t   wreq;
	char         out[256];
	size_t       outlen;
	int          connected;
	int          eof;
	int          closed;
	char         in[4096];
	size_t       inlen;
} raw;

static void
raw_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	raw *r = h->data;

	(void) hint;
	*buf = uv_buf_init(
	    r->in + r->inlen, (unsigned) (sizeof(r->in) - r->inlen));
}

static void
raw_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	raw *r = s->data;

	(void) buf;
	if (n < 0) {
		r->eof = 1;
		(void) uv_read_stop(s);
	} else {
		r->inlen += (size_t) n;
	}
}

static void
raw_write_cb(uv_write_t *req, int status)
{
	(void) req;
	(void) status;
}

static void
raw_connect_cb(uv_connect_t *req, int status)
{
	raw     *r = req->data;
	uv_buf_t b = uv_buf_init(r->out, (unsigned) r->outlen);

	assert_int_equal(status, 0);
	r->connected = 1;
	if (!r->no_read) {
		(void) uv_read_start(
		    (uv_stream_t *) &r->tcp, raw_alloc_cb, raw_read_cb);
	}
	(void) uv_write(&r->wreq, (uv_stream_t *) &r->tcp, &b, 1, raw_write_cb);
}

static void
raw_closed_cb(uv_handle_t *h)
{
	((raw *) h->data)->closed = 1;
}

static void
raw_hello(raw *r, uint16_t version, const char *id, const char *cluster)
{
	eb__buf b;
	size_t  n;

	eb__buf_init(&b);
	eb__link_put_u32(&b, 0);
	eb__link_put_u8(&b, 1);
	eb__link_put_u16(&b, version);
	(void) eb__link_put_str16(&b, id, strlen(id));
	(void) eb__link_put_str16(&b, cluster, strlen(cluster));
	n = eb__buf_avail(&b);
	eb__frame_put_len((unsigned char *) b.data, (uint32_t) (n - 4));
	memcpy(r->out + r->outlen, b.data, n);
	r->outlen += n;
	eb__buf_free(&b);
}

static void
raw_connect(th_loop *t, raw *r, int port)
{
	struct sockaddr_in sa;

	(void) uv_ip4_addr("127.0.0.1", port, &sa);
	(void) uv_tcp_init(&t->loop, &r->tcp);
	r->tcp.data = r;
	r->creq.data = r;
	assert_int_equal(uv_tcp_connect(&r->creq, &r->tcp,
	                     (const struct sockaddr *) &sa, raw_connect_cb),
	    0);
}

static void
raw_close(th_loop *t, raw *r)
{
	uv_close((uv_handle_t *) &r->tcp, raw_closed_cb);
	assert_int_equal(th_run_until(t, th_flag_set, &r->closed, 2000), 0);
}

static void
test_heartbeat_timeout(void **state)
{
	th_loop *t = *state;
	node     b;
	raw     *r = calloc(1, sizeof(*r));
	uint64_t t0;
	uint64_t dt;

	node_open(t, &b, "b", NULL, 20, 100);
	/* A valid hello from a lower id, then silence. */
	raw_hello(r, EB_LINK_PROTOCOL_VERSION, "a", "ebnode");
	raw_connect(t, r, eb_link_mgr_port(b.mgr));
	assert_int_equal(th_run_until(t, th_flag_set, &b.ups, 2000), 0);
	t0 = uv_now(&t->loop);
	assert_int_equal(th_run_until(t, downs_ge1, &b, 2000), 0);
	dt = uv_now(&t->loop) - t0;
	assert_true(dt >= 60 && dt < 500 * th_timeout_multiplier());
	assert_int_equal(th_run_until(t, th_flag_set, &r->eof, 2000), 0);
	/* It heard b's hello and heartbeats meanwhile. */
	assert_true(r->inlen > 20);
	raw_close(t, r);
	node_close(t, &b);
	free(r);
}

static void
test_bad_hellos(void **state)
{
	th_loop *t = *state;
	node     b;
	raw     *r = calloc(3, sizeof(*r));
	char     big[4] = { 0x7f, 0, 0, 0 };

	node_open(t, &b, "b", NULL, 0, 0);
	raw_hello(&r[0], 99, "a", "ebnode"); /* wrong version */
	raw_hello(
	    &r[1], EB_LINK_PROTOCOL_VERSION, "c", "ebnode"); /* not dialer */
	memcpy(r[2].out, big, 4); /* 2 GiB frame: rejected before allocation */
	r[2].outlen = 4;
	for (int i = 0; i < 3; i++) {
		raw_connect(t, &r[i], eb_link_mgr_port(b.mgr));
	}
	for (int i = 0; i < 3; i++) {
		assert_int_equal(
		    th_run_until(t, th_flag_set, &r[i].eof, 2000), 0);
		raw_close(t, &r[i]);
	}
	assert_int_equal(b.ups, 0);
	node_close(t, &b);
	free(r);
}

static void
test_backoff_capped_and_jittered(void **state)
{
	th_loop     *t = *state;
	eb_link_opts o;
	eb_link_mgr *m;
	node         n;
	uint64_t     seen_min = UINT64_MAX;
	uint64_t     seen_max = 0;

	memset(&n, 0, sizeof(n));
	eb_link_opts_init(&o);
	o.node_id = "x";
	o.backoff_min_ms = 50;
	o.backoff_max_ms = 400;
	assert_int_equal(eb_link_mgr_new(&t->loop, &o, &m, NULL), 0);
	for (uint32_t a = 1; a <= 20; a++) {
		uint64_t d = 50;

		for (uint32_t i = 1; i < a && d < 400; i++) {
			d *= 2;
		}
		d = d > 400 ? 400 : d;
		for (int k = 0; k < 200; k++) {
			uint64_t v = eb__link_backoff_ms(m, a);

			assert_true(v >= d / 2 && v <= d);
			if (a == 20) {
				seen_min = v < seen_min ? v : seen_min;
				seen_max = v > seen_max ? v : seen_max;
			}
		}
	}
	/* Capped at 400 and spread over [200, 400]. */
	assert_true(seen_max <= 400 && seen_min >= 200);
	assert_true(seen_max - seen_min >= 100);
	n.mgr = m;
	node_close(t, &n);
}

struct pump {
	node    *b;
	uint64_t sent;
	int      until_congested; /* stop once the link is congested */
};

static void
pump_idle_cb(uv_idle_t *h)
{
	struct pump *p = h->data;
	static char  chunk[65536];
	eb__buf     *buf;

	if (p->b->downs > 0 || p->sent > ((uint64_t) 512 << 20) ||
	    (p->until_congested && p->b->congested_on > 0)) {
		(void) uv_idle_stop(h);
		return;
	}
	buf = eb__link_frame_begin(
	    p->b->mgr, p->b->last_peer, EB_LINK_FRAME_USER);
	if (buf == NULL) {
		return;
	}
	eb__buf_append(buf, chunk, sizeof(chunk));
	(void) eb__link_frame_end(p->b->mgr, p->b->last_peer);
	p->sent += sizeof(chunk);
}

static void
idle_closed_cb(uv_handle_t *h)
{
	(void) h;
}

static void
test_slow_peer_cut_off(void **state)
{
	th_loop     *t = *state;
	eb_link_opts o;
	node         b;
	raw         *r = calloc(1, sizeof(*r));
	uv_idle_t    idle;
	struct pump  p = { &b, 0, 0 };

	memset(&b, 0, sizeof(b));
	eb_link_opts_init(&o);
	o.node_id = "b";
	o.max_out_bytes = UINT64_C(256) * 1024;
	assert_int_equal(eb_link_mgr_new(&t->loop, &o, &b.mgr, NULL), 0);
	eb__link_mgr_set_handler(b.mgr, &handler, &b);
	assert_int_equal(eb_link_mgr_start(b.mgr), 0);
	/* A peer that says hello and then never reads. */
	r->no_read = 1;
	raw_hello(r, EB_LINK_PROTOCOL_VERSION, "a", "ebnode");
	raw_connect(t, r, eb_link_mgr_port(b.mgr));
	assert_int_equal(th_run_until(t, th_flag_set, &b.ups, 2000), 0);
	(void) uv_idle_init(&t->loop, &idle);
	idle.data = &p;
	(void) uv_idle_start(&idle, pump_idle_cb);
	assert_int_equal(th_run_until(t, downs_ge1, &b, 10000), 0);
	/* Cut off once the kernel buffers were full and 256 KiB more were
	 * queued, long before the 512 MiB the pump would send. */
	assert_true(p.sent < ((uint64_t) 512 << 20));
	uv_close((uv_handle_t *) &idle, idle_closed_cb);
	raw_close(t, r);
	node_close(t, &b);
	free(r);
}

static int
congested_on_ge1(void *arg)
{
	return ((node *) arg)->congested_on >= 1;
}

static int
congested_off_ge1(void *arg)
{
	return ((node *) arg)->congested_off >= 1;
}

static void
drain_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	static char sink[65536];

	(void) h;
	(void) hint;
	*buf = uv_buf_init(sink, sizeof(sink));
}

static void
drain_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	(void) buf;
	if (n < 0) {
		(void) uv_read_stop(s);
	}
}

/* A peer that stops reading makes its link congested after a bounded
 * amount (fixed socket buffers + the 1 MiB watermark), long before the
 * 64 MiB cut; once it reads again the congestion ends. */
static void
test_congestion_reported(void **state)
{
	th_loop     *t = *state;
	eb_link_opts o;
	node         b;
	raw         *r = calloc(1, sizeof(*r));
	uv_idle_t    idle;
	struct pump  p = { &b, 0, 1 };

	memset(&b, 0, sizeof(b));
	eb_link_opts_init(&o);
	o.node_id = "b";
	assert_int_equal(eb_link_mgr_new(&t->loop, &o, &b.mgr, NULL), 0);
	eb__link_mgr_set_handler(b.mgr, &handler, &b);
	assert_int_equal(eb_link_mgr_start(b.mgr), 0);
	r->no_read = 1;
	raw_hello(r, EB_LINK_PROTOCOL_VERSION, "a", "ebnode");
	raw_connect(t, r, eb_link_mgr_port(b.mgr));
	assert_int_equal(th_run_until(t, th_flag_set, &b.ups, 2000), 0);
	(void) uv_idle_init(&t->loop, &idle);
	idle.data = &p;
	(void) uv_idle_start(&idle, pump_idle_cb);
	assert_int_equal(th_run_until(t, congested_on_ge1, &b, 10000), 0);
	assert_int_equal(b.downs, 0);
	assert_int_equal(b.congested_off, 0);
	/* Kernel buffers (the link's fixed 2 x 256 KiB doubled, the raw
	 * peer's default receive buffer) plus 1 MiB queued. */
	assert_true(p.sent < ((uint64_t) 6 << 20));
	(void) uv_read_start(
	    (uv_stream_t *) &r->tcp, drain_alloc_cb, drain_read_cb);
	assert_int_equal(th_run_until(t, congested_off_ge1, &b, 10000), 0);
	assert_int_equal(b.downs, 0);
	uv_close((uv_handle_t *) &idle, idle_closed_cb);
	raw_close(t, r);
	node_close(t, &b);
	free(r);
}

static int
eofs_ge1(void *arg)
{
	raw *r = arg;

	return r[0].eof + r[1].eof + r[2].eof >= 1;
}

static int
eofs_ge3(void *arg)
{
	raw *r = arg;

	return r[0].eof + r[1].eof + r[2].eof >= 3;
}

static void
test_pending_inbound_capped(void **state)
{
	th_loop     *t = *state;
	eb_link_opts o;
	node         b;
	raw         *r = calloc(3, sizeof(*r));

	memset(&b, 0, sizeof(b));
	eb_link_opts_init(&o);
	o.node_id = "b";
	o.max_pending_inbound = 2;
	o.connect_timeout_ms = 1500;
	assert_int_equal(eb_link_mgr_new(&t->loop, &o, &b.mgr, NULL), 0);
	eb__link_mgr_set_handler(b.mgr, &handler, &b);
	assert_int_equal(eb_link_mgr_start(b.mgr), 0);
	/* Three silent connections (no hello): the third is dropped at
	 * once, the others when their hello time is up. */
	for (int i = 0; i < 3; i++) {
		raw_connect(t, &r[i], eb_link_mgr_port(b.mgr));
	}
	assert_int_equal(th_run_until(t, eofs_ge1, r, 1000), 0);
	assert_int_equal(r[0].eof + r[1].eof + r[2].eof, 1);
	assert_int_equal(th_run_until(t, eofs_ge3, r, 3000), 0);
	for (int i = 0; i < 3; i++) {
		raw_close(t, &r[i]);
	}
	assert_int_equal(b.ups, 0);
	node_close(t, &b);
	free(r);
}

static void
test_options(void **state)
{
	th_loop     *t = *state;
	eb_link_opts o;
	eb_link_mgr *m;
	eb_errbuf    e;

	eb_link_opts_init(&o);
	assert_int_equal(eb_link_mgr_new(&t->loop, &o, &m, &e), UV_EINVAL);
	o.node_id = "x";
	o.tls_ca_file = "/nonexistent/ca.pem";
	assert_int_equal(eb_link_mgr_new(&t->loop, &o, &m, &e), UV_EINVAL);
	o.tls_cert_file = "/nonexistent/c.pem";
	o.tls_key_file = "/nonexistent/k.pem";
	assert_int_equal(eb_link_mgr_new(&t->loop, &o, &m, &e), EB_ETLS);
	assert_non_null(strstr(e.msg, "/nonexistent/ca.pem"));
}

/* Lifecycle misuse aborts (EB_ASSERT), in a child on its own loop. */
static void
mgr_misuse(const void *arg)
{
	const char  *what = arg;
	uv_loop_t    loop;
	eb_link_opts o;
	eb_link_mgr *m = NULL;

	(void) uv_loop_init(&loop);
	eb_link_opts_init(&o);
	o.node_id = "a";
	if (eb_link_mgr_new(&loop, &o, &m, NULL) != 0) {
		_exit(2);
	}
	eb_link_mgr_close(m, NULL, NULL);
	if (strcmp(what, "close") == 0) {
		eb_link_mgr_close(m, NULL, NULL);
	} else {
		(void) eb_link_mgr_start(m);
	}
}

static void
test_lifecycle_asserts(void **state)
{
	(void) state;
	assert_true(th_expect_abort(mgr_misuse, "close"));
	assert_true(th_expect_abort(mgr_misuse, "start"));
}

int
main(void)
{
	/* A peer that goes away mid-write must not kill the test: libuv
	 * writes with write(2), as ebnode does after ignoring SIGPIPE. */
	(void) signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_link_up_and_frames, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_idle_turn_frames_leave_that_turn, th_setup,
		    th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_reconnect_after_drop, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_restarted_peer, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_host_name_resolved, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_cluster_mismatch, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_heartbeat_timeout, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_bad_hellos, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_backoff_capped_and_jittered, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_slow_peer_cut_off, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_congestion_reported, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_pending_inbound_capped, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_options, th_setup, th_teardown),
		cmocka_unit_test(test_lifecycle_asserts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
