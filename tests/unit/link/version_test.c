/* Unit tests for versioned node links (link/link_version.c and the hello
 * in link_conn.c) over real TCP on 127.0.0.1: the highest common version,
 * a peer's record range, version skew known before connecting and what
 * /health reads of it, a release before versioned links (a hello without
 * a range), a stale record. */
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/link.h>

#include "link/link.h"
#include "link/link_int.h"
#include "tests/harness/th.h"

typedef struct vnode {
	eb_link_mgr *mgr;
	int          ups;
	int          downs;
	int          closed;
} vnode;

static void
up_cb(void *ctx, uint32_t peer, const char *node_id)
{
	(void) peer;
	(void) node_id;
	((vnode *) ctx)->ups++;
}

static void
down_cb(void *ctx, uint32_t peer)
{
	(void) peer;
	((vnode *) ctx)->downs++;
}

static void
frame_cb(void *ctx, uint32_t peer, uint8_t type, const char *p, size_t len)
{
	(void) ctx;
	(void) peer;
	(void) type;
	(void) p;
	(void) len;
}

static const eb__link_handler handler = { up_cb, down_cb, frame_cb, NULL,
	NULL };

static void
vnode_open(th_loop *t, vnode *n, const char *id, uint16_t lo, uint16_t hi)
{
	eb_link_opts o;

	memset(n, 0, sizeof(*n));
	eb_link_opts_init(&o);
	o.node_id = id;
	o.proto_min = lo;
	o.proto_max = hi;
	assert_int_equal(eb_link_mgr_new(&t->loop, &o, &n->mgr, NULL), 0);
	eb__link_mgr_set_handler(n->mgr, &handler, n);
	assert_int_equal(eb_link_mgr_start(n->mgr), 0);
}

static void
closed_cb(eb_link_mgr *m, void *arg)
{
	(void) m;
	((vnode *) arg)->closed++;
}

static void
vnode_close(th_loop *t, vnode *n)
{
	eb_link_mgr_close(n->mgr, closed_cb, n);
	assert_int_equal(th_run_until(t, th_flag_set, &n->closed, 2000), 0);
}

/* Tells each about the other with the given record ranges. */
static void
introduce(vnode *a, int alo, int ahi, vnode *b, int blo, int bhi)
{
	assert_int_equal(eb_link_mgr_peer_add_range(a->mgr, "b", "127.0.0.1",
	                     eb_link_mgr_port(b->mgr), blo, bhi),
	    0);
	assert_int_equal(eb_link_mgr_peer_add_range(b->mgr, "a", "127.0.0.1",
	                     eb_link_mgr_port(a->mgr), alo, ahi),
	    0);
}

static int
both_up(void *arg)
{
	vnode **n = arg;

	return n[0]->ups >= 1 && n[1]->ups >= 1;
}

struct peer_q {
	const char *node_id;
	int         version;
	int         found;
	const char *reason;
};

static void
peer_q_cb(const eb_link_peer_stats *s, void *arg)
{
	struct peer_q *q = arg;

	if (strcmp(s->node_id, q->node_id) == 0) {
		q->found = 1;
		q->version = s->version;
		q->reason = s->down_reason;
	}
}

static struct peer_q
peer_get(vnode *n, const char *node_id)
{
	struct peer_q q = { node_id, 0, 0, NULL };

	eb_link_mgr_stats_foreach(n->mgr, peer_q_cb, &q);
	assert_true(q.found);
	return q;
}

static void
test_pick(void **state)
{
	(void) state;
	assert_int_equal(eb__link_version_pick(3, 4, 3, 4), 4);
	assert_int_equal(eb__link_version_pick(3, 4, 3, 3), 3);
	assert_int_equal(eb__link_version_pick(3, 3, 3, 5), 3);
	assert_int_equal(eb__link_version_pick(4, 6, 3, 5), 5);
	assert_int_equal(eb__link_version_pick(3, 3, 4, 4), 0);
	assert_int_equal(eb__link_version_pick(5, 6, 3, 4), 0);
	assert_string_equal(
	    eb_link_down_reason_name(EB_LINK_DOWN_VERSION), "version");
	assert_null(eb_link_down_reason_name(EB_LINK_DOWN_NONE));
	assert_null(eb_link_down_reason_name(EB_LINK_DOWN_REASONS));
}

/* The highest version both speak: 4 between two 3..4 nodes, 3 between a
 * 3..4 and a 3..3 node (in either role). */
static void
test_highest_common(void **state)
{
	th_loop *t = *state;
	vnode    a;
	vnode    b;
	vnode   *both[2] = { &a, &b };
	int      lo;
	int      hi;

	vnode_open(t, &a, "a", 3, 4);
	vnode_open(t, &b, "b", 3, 4);
	eb_link_mgr_protocols(a.mgr, &lo, &hi);
	assert_int_equal(lo, 3);
	assert_int_equal(hi, 4);
	introduce(&a, 3, 4, &b, 3, 4);
	assert_int_equal(th_run_until(t, both_up, both, 2000), 0);
	assert_int_equal(peer_get(&a, "b").version, 4);
	assert_int_equal(peer_get(&b, "a").version, 4);
	assert_int_equal(
	    eb__link_peer_version(a.mgr, eb__link_peer_find(a.mgr, "b")->id),
	    4);
	assert_int_equal(eb__link_peer_version(a.mgr, 999), 0);
	vnode_close(t, &b);
	/* The dialer (a) speaks more than the acceptor. */
	a.ups = 0;
	vnode_open(t, &b, "b", 3, 3);
	introduce(&a, 3, 4, &b, 3, 3);
	assert_int_equal(th_run_until(t, both_up, both, 2000), 0);
	assert_int_equal(peer_get(&a, "b").version, 3);
	assert_int_equal(peer_get(&b, "a").version, 3);
	assert_int_equal(eb_link_mgr_degraded(a.mgr, NULL, 0), 0);
	vnode_close(t, &a);
	vnode_close(t, &b);
	/* The acceptor speaks more than the dialer. */
	vnode_open(t, &a, "a", 3, 3);
	vnode_open(t, &b, "b", 3, 4);
	introduce(&a, 3, 3, &b, 3, 4);
	assert_int_equal(th_run_until(t, both_up, both, 2000), 0);
	assert_int_equal(peer_get(&a, "b").version, 3);
	assert_int_equal(peer_get(&b, "a").version, 3);
	vnode_close(t, &a);
	vnode_close(t, &b);
}

/* A stale record (the peer restarted as another release): the dialer
 * proposes 4 from the record (3..4; before, 5..5: skew), the acceptor
 * that speaks only 3 answers 3 and the pair links at 3. */
static void
test_stale_record(void **state)
{
	th_loop *t = *state;
	vnode    a;
	vnode    b;
	vnode   *both[2] = { &a, &b };

	vnode_open(t, &a, "a", 3, 4);
	vnode_open(t, &b, "b", 3, 3);
	introduce(&a, 3, 4, &b, 5, 5); /* a believes b speaks 5..5 */
	/* Version skew from the record: a does not dial, and says why. */
	assert_int_equal(peer_get(&a, "b").version, 0);
	assert_string_equal(peer_get(&a, "b").reason, "version");
	/* The record catches up: 3..4 (still not b's 3..3). */
	assert_int_equal(eb_link_mgr_peer_add_range(a.mgr, "b", "127.0.0.1",
	                     eb_link_mgr_port(b.mgr), 3, 4),
	    0);
	assert_int_equal(th_run_until(t, both_up, both, 2000), 0);
	assert_int_equal(peer_get(&a, "b").version, 3);
	assert_null(peer_get(&a, "b").reason);
	vnode_close(t, &a);
	vnode_close(t, &b);
}

static int
degraded(void *arg)
{
	return eb_link_mgr_degraded(arg, NULL, 0) > 0;
}

/* No version in common: neither side dials or accepts, both report the
 * peer down for "version" at once (health: degraded), counted once. */
static void
test_skew(void **state)
{
	th_loop *t = *state;
	vnode    a;
	vnode    b;
	char     why[160];

	vnode_open(t, &a, "a", 3, 3);
	vnode_open(t, &b, "b", 4, 4);
	introduce(&a, 3, 3, &b, 4, 4);
	assert_int_equal(eb_link_mgr_degraded(a.mgr, why, sizeof(why)), 1);
	assert_string_equal(
	    why, "link-down: node=b reason=version peer=4..4 self=3..3");
	assert_int_equal(eb_link_mgr_degraded(b.mgr, why, sizeof(why)), 1);
	assert_string_equal(
	    why, "link-down: node=a reason=version peer=3..3 self=4..4");
	/* a (the lower id) did not dial: no connection could link. */
	assert_null(eb__link_peer_find(a.mgr, "b")->dialing);
	assert_int_equal(eb__link_peer_find(a.mgr, "b")->attempts, 0);
	assert_int_equal(a.ups + b.ups, 0);
	assert_int_equal(
	    eb_link_mgr_down_total(a.mgr, EB_LINK_DOWN_VERSION), 1);
	assert_int_equal(
	    eb_link_mgr_down_total(a.mgr, EB_LINK_DOWN_UNREACHABLE), 0);
	/* A record without a range is a release before versioned links: it
	 * speaks 3, which b (4..4) does not. */
	assert_int_equal(eb_link_mgr_peer_add_range(b.mgr, "a", "127.0.0.1",
	                     eb_link_mgr_port(a.mgr), 0, 0),
	    0);
	assert_true(degraded(b.mgr));
	vnode_close(t, &a);
	vnode_close(t, &b);
}

static int
unreachable_counted(void *arg)
{
	vnode *n = arg;

	return eb_link_mgr_degraded(n->mgr, NULL, 0) > 0;
}

/* A member whose dials fail: down for "unreachable" from the first
 * failure, but degraded (health) only once that lasted dead_ms; a restart
 * of the peer is not an outage. */
static void
test_unreachable(void **state)
{
	th_loop     *t = *state;
	eb_link_opts o;
	vnode        a;
	uv_tcp_t     s;
	int          port;
	char         why[160];

	/* A port nobody listens on: bound, never listening. */
	{
		struct sockaddr_in      sa;
		struct sockaddr_storage got;
		int                     len = sizeof(got);

		(void) uv_ip4_addr("127.0.0.1", 0, &sa);
		(void) uv_tcp_init(&t->loop, &s);
		assert_int_equal(
		    uv_tcp_bind(&s, (const struct sockaddr *) &sa, 0), 0);
		(void) uv_tcp_getsockname(&s, (struct sockaddr *) &got, &len);
		port = ntohs(((struct sockaddr_in *) &got)->sin_port);
	}
	memset(&a, 0, sizeof(a));
	eb_link_opts_init(&o);
	o.node_id = "a";
	o.heartbeat_ms = 50;
	o.dead_ms = 300;
	assert_int_equal(eb_link_mgr_new(&t->loop, &o, &a.mgr, NULL), 0);
	eb__link_mgr_set_handler(a.mgr, &handler, &a);
	assert_int_equal(eb_link_mgr_start(a.mgr), 0);
	assert_int_equal(
	    eb_link_mgr_peer_add_range(a.mgr, "b", "127.0.0.1", port, 3, 3), 0);
	assert_int_equal(eb_link_mgr_degraded(a.mgr, NULL, 0), 0);
	assert_int_equal(th_run_until(t, unreachable_counted, &a, 3000), 0);
	assert_true(
	    uv_now(&t->loop) - eb__link_peer_find(a.mgr, "b")->down_since >=
	    300);
	assert_string_equal(peer_get(&a, "b").reason, "unreachable");
	assert_int_equal(eb_link_mgr_degraded(a.mgr, why, sizeof(why)), 1);
	assert_string_equal(
	    why, "link-down: node=b reason=unreachable peer=3..3 self=3..3");
	assert_int_equal(
	    eb_link_mgr_down_total(a.mgr, EB_LINK_DOWN_UNREACHABLE), 1);
	uv_close((uv_handle_t *) &s, NULL);
	vnode_close(t, &a);
}

/* ---- a release before versioned links, by hand: its hello has no range
 * and it accepts only its own version ---- */

typedef struct raw {
	uv_tcp_t     tcp;
	uv_connect_t creq;
	uv_write_t   wreq;
	char         out[256];
	size_t       outlen;
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
	(void) uv_read_start(
	    (uv_stream_t *) &r->tcp, raw_alloc_cb, raw_read_cb);
	(void) uv_write(&r->wreq, (uv_stream_t *) &r->tcp, &b, 1, raw_write_cb);
}

static void
raw_closed_cb(uv_handle_t *h)
{
	((raw *) h->data)->closed = 1;
}

/* The 0.1.0 hello: u16 version, str16 id, str16 cluster, nothing more. */
static void
raw_legacy_hello(th_loop *t, raw *r, uint16_t version, int port)
{
	eb__buf            b;
	size_t             n;
	struct sockaddr_in sa;

	eb__buf_init(&b);
	eb__link_put_u32(&b, 0);
	eb__link_put_u8(&b, 1);
	eb__link_put_u16(&b, version);
	(void) eb__link_put_str16(&b, "a", 1);
	(void) eb__link_put_str16(&b, "ebnode", 6);
	n = eb__buf_avail(&b);
	eb__frame_put_len((unsigned char *) b.data, (uint32_t) (n - 4));
	memcpy(r->out, b.data, n);
	r->outlen = n;
	eb__buf_free(&b);
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

static int
raw_has_hello(void *arg)
{
	return ((raw *) arg)->inlen >= 7;
}

/* A 3..4 acceptor answers an old dialer's hello (version 3, no range)
 * with version 3 and links; a 4-only acceptor refuses it and reports the
 * peer down for "version". The old node reads the answer as it always
 * did: version first, the range after the cluster name ignored. */
static void
test_legacy_dialer(void **state)
{
	th_loop *t = *state;
	vnode    b;
	raw     *r = calloc(2, sizeof(*r));

	vnode_open(t, &b, "b", 3, 4);
	raw_legacy_hello(t, &r[0], 3, eb_link_mgr_port(b.mgr));
	assert_int_equal(th_run_until(t, th_flag_set, &b.ups, 2000), 0);
	assert_int_equal(th_run_until(t, raw_has_hello, &r[0], 2000), 0);
	assert_int_equal((unsigned char) r[0].in[4], 1); /* hello */
	assert_int_equal(
	    ((unsigned char) r[0].in[5] << 8) | (unsigned char) r[0].in[6], 3);
	assert_int_equal(peer_get(&b, "a").version, 3);
	raw_close(t, &r[0]);
	vnode_close(t, &b);

	vnode_open(t, &b, "b", 4, 4);
	assert_int_equal(
	    eb_link_mgr_peer_add_range(b.mgr, "a", "127.0.0.1", 1, 0, 0), 0);
	raw_legacy_hello(t, &r[1], 3, eb_link_mgr_port(b.mgr));
	assert_int_equal(th_run_until(t, th_flag_set, &r[1].eof, 2000), 0);
	assert_int_equal(b.ups, 0);
	assert_string_equal(peer_get(&b, "a").reason, "version");
	raw_close(t, &r[1]);
	vnode_close(t, &b);
	free(r);
}

static void
test_bad_ranges(void **state)
{
	th_loop     *t = *state;
	eb_link_opts o;
	eb_link_mgr *m = NULL;
	vnode        a;

	eb_link_opts_init(&o);
	o.node_id = "a";
	assert_int_equal(o.proto_min, EB_LINK_PROTOCOL_MIN);
	assert_int_equal(o.proto_max, EB_LINK_PROTOCOL_VERSION);
	o.proto_min = 5;
	o.proto_max = 4;
	assert_int_equal(eb_link_mgr_new(&t->loop, &o, &m, NULL), UV_EINVAL);
	o.proto_min = 0;
	assert_int_equal(eb_link_mgr_new(&t->loop, &o, &m, NULL), UV_EINVAL);
	assert_null(m);
	vnode_open(t, &a, "a", 3, 3);
	assert_int_equal(
	    eb_link_mgr_peer_add_range(a.mgr, "b", "127.0.0.1", 1, 4, 3),
	    UV_EINVAL);
	assert_int_equal(
	    eb_link_mgr_peer_add_range(a.mgr, "b", "127.0.0.1", 1, 0, 3),
	    UV_EINVAL);
	vnode_close(t, &a);
}

int
main(void)
{
	(void) signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pick),
		cmocka_unit_test_setup_teardown(
		    test_highest_common, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_stale_record, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_skew, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_legacy_dialer, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_unreachable, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_bad_ranges, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
