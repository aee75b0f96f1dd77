/*
 * vertx/member.c, this node as a Vert.x cluster member, against the
 * in-memory ZooKeeper: the NodeInfo bytes (the value captured from a JVM),
 * one subscription znode per consumer and its removal, a JVM peer whose
 * NodeInfo first holds its id (not ready) and then the real value, the
 * registrations of an address loaded on first use and kept current by the
 * watch, a peer leaving, and everything re-created on a new session.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "tests/harness/fakezk.h"
#include "tests/harness/th.h"
#include "vertx/member.h"

#define SELF  "11111111-1111-4111-8111-111111111111"
#define JVM   "4740fc67-30d3-449b-aa0f-d6f5b2014f40"
#define NODES "/io.vertx/cluster/nodes"
#define SUBS  "/io.vertx/__vertx.subs"

typedef struct ctx {
	eb__zk        *zk;
	eb__vx_member *m;
	eb__zk        *jvm; /* a second session: the JVM's */
	int            ready;
	int            gone;
	char           gone_id[64];
	int            closed;
	int            jvm_created;
} ctx;

static fakezk_server *srv;

static void
event_cb(eb__zk *zk, eb__zk_event ev, void *arg)
{
	ctx *c = arg;

	(void) zk;
	if (c->m != NULL) {
		eb__vx_member_session_event(c->m, ev);
	}
}

static void
noop_event_cb(eb__zk *zk, eb__zk_event ev, void *arg)
{
	(void) zk;
	(void) ev;
	(void) arg;
}

static void
gone_cb(const char *node_id, void *arg)
{
	ctx *c = arg;

	c->gone++;
	(void) snprintf(c->gone_id, sizeof(c->gone_id), "%s", node_id);
}

static void
ready_cb(const char *address, void *arg)
{
	(void) address;
	((ctx *) arg)->ready++;
}

static int
registered_pred(void *arg)
{
	ctx *c = arg;

	return c->m != NULL && eb__vx_member_registered(c->m);
}

static void
open_ctx(th_loop *t, ctx *c)
{
	eb__vx_member_cfg cfg = { "io.vertx", SELF, "127.0.0.1", 23543, gone_cb,
		ready_cb, c, NULL, NULL };

	memset(c, 0, sizeof(*c));
	assert_int_equal(fakezk_client_new(srv, 400, event_cb, c, &c->zk), 0);
	assert_int_equal(eb__vx_member_new(&t->loop, c->zk, &cfg, &c->m), 0);
	assert_int_equal(eb__zk_start(c->zk), 0);
	assert_int_equal(eb__vx_member_start(c->m), 0);
	assert_int_equal(th_run_until(t, registered_pred, c, 2000), 0);
}

static void
member_closed_cb(eb__vx_member *m, void *arg)
{
	(void) m;
	((ctx *) arg)->closed++;
}

static void
zk_closed_cb(eb__zk *zk, void *arg)
{
	(void) zk;
	((ctx *) arg)->closed++;
}

static int
closed_pred(void *arg)
{
	ctx *c = arg;

	return c->closed == (c->jvm != NULL ? 3 : 2);
}

static void
close_ctx(th_loop *t, ctx *c)
{
	eb__vx_member_close(c->m, member_closed_cb, c);
	assert_int_equal(c->closed, 0); /* on a later turn */
	c->m = NULL;
	eb__zk_close(c->zk, zk_closed_cb, c);
	if (c->jvm != NULL) {
		eb__zk_close(c->jvm, zk_closed_cb, c);
	}
	assert_int_equal(th_run_until(t, closed_pred, c, 2000), 0);
}

static int
setup(void **state)
{
	th_loop *t;

	assert_int_equal(th_setup(state), 0);
	t = *state;
	srv = fakezk_server_new(&t->loop);
	return 0;
}

static int
teardown(void **state)
{
	th_loop *t = *state;

	fakezk_server_close_run(srv, t);
	return th_teardown(state);
}

typedef struct peer_q {
	ctx        *c;
	const char *id;
	int         want;
} peer_q;

static int
peer_pred(void *arg)
{
	peer_q     *q = arg;
	const char *host;
	int         port;

	return eb__vx_member_peer(q->c->m, q->id, &host, &port) == q->want;
}

static void
test_nodeinfo_bytes(void **state)
{
	th_loop    *t = *state;
	ctx         c;
	char        buf[64];
	eb__zk_stat st;
	/* a JVM on 127.0.0.1:23543 without metadata */
	static const char want[] = "\x00\x00\x00\x09"
	                           "127.0.0.1"
	                           "\x00\x00\x5b\xf7\xff\xff\xff\xff";

	open_ctx(t, &c);
	assert_int_equal(
	    fakezk_get(srv, NODES "/" SELF, buf, sizeof(buf), &st), 0);
	assert_int_equal(st.data_length, 21);
	assert_memory_equal(buf, want, 21);
	assert_int_not_equal(st.ephemeral_owner, 0);
	/* this node is a member of its own view, with its address */
	{
		peer_q      q = { &c, SELF, 0 };
		const char *host;
		int         port;

		assert_int_equal(th_run_until(t, peer_pred, &q, 2000), 0);
		assert_int_equal(
		    eb__vx_member_peer(c.m, SELF, &host, &port), 0);
		assert_string_equal(host, "127.0.0.1");
		assert_int_equal(port, 23543);
	}
	close_ctx(t, &c);
}

static int
count_pred(void *arg)
{
	return fakezk_child_count(srv, SUBS "/a") == (size_t) (uintptr_t) arg;
}

static void
test_subscriptions(void **state)
{
	th_loop    *t = *state;
	ctx         c;
	uint64_t    s0, s1;
	char        buf[64];
	eb__zk_stat st;

	open_ctx(t, &c);
	assert_int_equal(eb__vx_member_sub_add(c.m, "a", &s0), 0);
	assert_int_equal(eb__vx_member_sub_add(c.m, "a", &s1), 0);
	assert_int_not_equal(s0, s1);
	assert_int_equal(th_run_until(t, count_pred, (void *) 2, 2000), 0);
	/* RegistrationInfo: i32 36, the id, i64 seq, u8 localOnly 0 */
	(void) snprintf(
	    buf, sizeof(buf), SUBS "/a/" SELF "-%llu", (unsigned long long) s1);
	{
		char data[64];

		assert_int_equal(
		    fakezk_get(srv, buf, data, sizeof(data), &st), 0);
		assert_int_equal(st.data_length, 4 + 36 + 8 + 1);
		assert_memory_equal(data, "\0\0\0\x24" SELF, 40);
		assert_int_equal((unsigned char) data[47], (unsigned) s1);
		assert_int_equal(data[48], 0);
		assert_int_not_equal(st.ephemeral_owner, 0);
	}
	assert_int_equal(eb__vx_member_sub_del(c.m, "a", s0), 0);
	assert_int_equal(eb__vx_member_sub_del(c.m, "a", s0), UV_ENOENT);
	assert_int_equal(th_run_until(t, count_pred, (void *) 1, 2000), 0);
	assert_int_equal(eb__vx_member_sub_count(c.m), 1);
	/* what vertx-zookeeper cannot hold is refused */
	assert_int_equal(eb__vx_member_sub_add(c.m, "x/y", &s0), UV_EINVAL);
	assert_int_equal(eb__vx_member_sub_add(c.m, "..", &s0), UV_EINVAL);
	assert_int_equal(eb__vx_member_sub_add(c.m, "", &s0), UV_EINVAL);
	close_ctx(t, &c);
}

static void
set_cb(eb__zk *zk, int status, const eb__zk_stat *stat, void *arg)
{
	(void) zk;
	(void) stat;
	(void) arg;
	assert_int_equal(status, 0);
}

static void
ensure_cb(eb__zk *zk, int status, void *arg)
{
	(void) zk;
	assert_int_equal(status, 0);
	((ctx *) arg)->jvm_created++;
}

static void
jvm_created_cb(eb__zk *zk, int status, const char *path, void *arg)
{
	(void) zk;
	(void) path;
	assert_int_equal(status, 0);
	((ctx *) arg)->jvm_created++;
}

static int
jvm_created_pred(void *arg)
{
	return ((ctx *) arg)->jvm_created > 0;
}

static int
jvm_connected_pred(void *arg)
{
	return eb__zk_get_state(((ctx *) arg)->jvm) == EB_ZK_STATE_CONNECTED;
}

/* The JVM's session creates a znode with binary data. */
static void
jvm_put(th_loop *t, ctx *c, const char *path, const char *data, size_t len)
{
	c->jvm_created = 0;
	assert_int_equal(eb__zk_create(c->jvm, path, data, len, EB_ZK_EPHEMERAL,
	                     jvm_created_cb, c),
	    0);
	assert_int_equal(th_run_until(t, jvm_created_pred, c, 2000), 0);
}

static void
jvm_open(th_loop *t, ctx *c)
{
	assert_int_equal(
	    fakezk_client_new(srv, 400, noop_event_cb, NULL, &c->jvm), 0);
	assert_int_equal(eb__zk_start(c->jvm), 0);
	assert_int_equal(th_run_until(t, jvm_connected_pred, c, 2000), 0);
}

static void
test_jvm_peer(void **state)
{
	th_loop    *t = *state;
	ctx         c;
	eb__buf     ni;
	const char *host;
	int         port;
	peer_q      q = { &c, JVM, UV_EAGAIN };

	open_ctx(t, &c);
	jvm_open(t, &c);
	assert_int_equal(
	    eb__vx_member_peer(c.m, JVM, &host, &port), EB_ENOROUTE);
	/* a JVM writes its id first: a member, not ready */
	jvm_put(t, &c, NODES "/" JVM, JVM, strlen(JVM));
	assert_int_equal(th_run_until(t, peer_pred, &q, 2000), 0);
	/* then its NodeInfo: the data watch brings it */
	eb__buf_init(&ni);
	eb__vx_nodeinfo_put(&ni, "127.0.0.2", 4711);
	assert_int_equal(eb__zk_set(c.jvm, NODES "/" JVM, eb__buf_head(&ni),
	                     eb__buf_avail(&ni), -1, set_cb, NULL),
	    0);
	eb__buf_free(&ni);
	q.want = 0;
	assert_int_equal(th_run_until(t, peer_pred, &q, 2000), 0);
	assert_int_equal(eb__vx_member_peer(c.m, JVM, &host, &port), 0);
	assert_string_equal(host, "127.0.0.2");
	assert_int_equal(port, 4711);
	/* the JVM's session ends: the member is gone, and said so */
	fakezk_expire(c.jvm);
	q.want = EB_ENOROUTE;
	assert_int_equal(th_run_until(t, peer_pred, &q, 2000), 0);
	assert_int_equal(c.gone, 1);
	assert_string_equal(c.gone_id, JVM);
	close_ctx(t, &c);
}

typedef struct kind_q {
	ctx        *c;
	const char *id;
	int         want;
} kind_q;

static int
kind_pred(void *arg)
{
	kind_q *q = arg;

	return eb__vx_member_peer_kind(q->c->m, q->id) == q->want;
}

/* The NodeInfo metadata tells an ebnode node (and its engine address)
 * from a JVM; this node's own metadata is written as given. */
static void
test_peer_kind(void **state)
{
	th_loop *t = *state;
	ctx      c;
	eb__buf  ni;
	kind_q   q = { &c, JVM, EB_VX_PEER_JVM };

	open_ctx(t, &c);
	jvm_open(t, &c);
	assert_int_equal(eb__vx_member_peer_kind(c.m, JVM), EB_VX_PEER_UNKNOWN);
	eb__buf_init(&ni);
	eb__vx_nodeinfo_put(&ni, "127.0.0.2", 4711);
	jvm_put(t, &c, NODES "/" JVM, eb__buf_head(&ni), eb__buf_avail(&ni));
	ni.off = ni.len = 0;
	eb__vx_nodeinfo_put_meta(&ni, "127.0.0.3", 4712,
	    "{\"ebnode\":{\"engine_address\":\"e2\",\"cluster\":\"/eb/a\"}}");
	jvm_put(t, &c, NODES "/eb-2", eb__buf_head(&ni), eb__buf_avail(&ni));
	ni.off = ni.len = 0;
	/* an ebnode node that names no cluster */
	eb__vx_nodeinfo_put_meta(&ni, "127.0.0.5", 4714, "{\"ebnode\":{}}");
	jvm_put(t, &c, NODES "/eb-3", eb__buf_head(&ni), eb__buf_avail(&ni));
	ni.off = ni.len = 0;
	/* other metadata is no marker */
	eb__vx_nodeinfo_put_meta(&ni, "127.0.0.4", 4713, "{\"zone\":\"a\"}");
	jvm_put(t, &c, NODES "/jvm-2", eb__buf_head(&ni), eb__buf_avail(&ni));
	eb__buf_free(&ni);
	assert_int_equal(th_run_until(t, kind_pred, &q, 2000), 0);
	q.id = "eb-2";
	q.want = EB_VX_PEER_EBNODE;
	assert_int_equal(th_run_until(t, kind_pred, &q, 2000), 0);
	q.id = "jvm-2";
	q.want = EB_VX_PEER_JVM;
	assert_int_equal(th_run_until(t, kind_pred, &q, 2000), 0);
	q.id = "eb-3";
	q.want = EB_VX_PEER_EBNODE;
	assert_int_equal(th_run_until(t, kind_pred, &q, 2000), 0);
	assert_true(eb__vx_member_engine_is_ebnode(c.m, "e2"));
	assert_false(eb__vx_member_engine_is_ebnode(c.m, "e1"));
	assert_int_equal(
	    eb__vx_member_peer_kind(c.m, "nobody"), EB_VX_PEER_UNKNOWN);
	/* the ebnode cluster it names: only an exact match is a sibling */
	assert_true(eb__vx_member_peer_in_cluster(c.m, "eb-2", "/eb/a"));
	assert_false(eb__vx_member_peer_in_cluster(c.m, "eb-2", "/eb/ab"));
	assert_false(eb__vx_member_peer_in_cluster(c.m, "eb-2", "/eb"));
	assert_false(eb__vx_member_peer_in_cluster(c.m, "eb-2", NULL));
	assert_false(eb__vx_member_peer_in_cluster(c.m, "eb-3", "/eb/a"));
	assert_false(eb__vx_member_peer_in_cluster(c.m, "jvm-2", "/eb/a"));
	assert_false(eb__vx_member_peer_in_cluster(c.m, "nobody", "/eb/a"));
	close_ctx(t, &c);
}

static void
test_nodeinfo_meta_bytes(void **state)
{
	eb__buf b;
	char    host[64];
	int     port = 0;
	/* as Vert.x writes clusterNodeMetadata: length, then the JSON */
	static const char want[] = "\x00\x00\x00\x01"
	                           "h"
	                           "\x00\x00\x00\x05\x00\x00\x00\x02{}";

	(void) state;
	eb__buf_init(&b);
	eb__vx_nodeinfo_put_meta(&b, "h", 5, "{}");
	assert_int_equal(eb__buf_avail(&b), sizeof(want) - 1);
	assert_memory_equal(eb__buf_head(&b), want, sizeof(want) - 1);
	assert_int_equal(eb__vx_nodeinfo_parse(eb__buf_head(&b),
	                     eb__buf_avail(&b), host, sizeof(host), &port),
	    0);
	eb__buf_free(&b);
}

typedef struct subs_q {
	ctx        *c;
	const char *address;
	size_t      want;
} subs_q;

static int
subs_pred(void *arg)
{
	subs_q            *q = arg;
	const char *const *ids;
	size_t             n;

	return eb__vx_member_subs(q->c->m, q->address, &ids, &n) == 0 &&
	       n == q->want;
}

static void
test_address_registrations(void **state)
{
	th_loop           *t = *state;
	ctx                c;
	const char *const *ids;
	size_t             n;
	uint64_t           s;
	subs_q             q = { &c, "echo", 0 };
	eb__buf            ri;

	open_ctx(t, &c);
	jvm_open(t, &c);
	/* first use: loading, then an empty list (nobody registered) */
	assert_int_equal(eb__vx_member_subs(c.m, "echo", &ids, &n), UV_EAGAIN);
	assert_int_equal(th_run_until(t, subs_pred, &q, 2000), 0);
	assert_true(c.ready >= 1);
	/* the JVM registers twice (two consumers): the exists watch, then
	 * the child watch, keep the list current */
	eb__buf_init(&ri);
	eb__vx_reginfo_put(&ri, JVM, 0);
	c.jvm_created = 0;
	assert_int_equal(
	    eb__zk_ensure_path(c.jvm, SUBS "/echo", ensure_cb, &c), 0);
	assert_int_equal(th_run_until(t, jvm_created_pred, &c, 2000), 0);
	jvm_put(t, &c, SUBS "/echo/" JVM "-0", eb__buf_head(&ri),
	    eb__buf_avail(&ri));
	jvm_put(t, &c, SUBS "/echo/" JVM "-1", eb__buf_head(&ri),
	    eb__buf_avail(&ri));
	eb__buf_free(&ri);
	q.want = 2;
	assert_int_equal(th_run_until(t, subs_pred, &q, 2000), 0);
	assert_int_equal(eb__vx_member_subs(c.m, "echo", &ids, &n), 0);
	assert_string_equal(ids[0], JVM);
	assert_string_equal(ids[1], JVM);
	/* our own consumer joins the list */
	assert_int_equal(eb__vx_member_sub_add(c.m, "echo", &s), 0);
	q.want = 3;
	assert_int_equal(th_run_until(t, subs_pred, &q, 2000), 0);
	/* the JVM dies: its registrations go with its session */
	fakezk_expire(c.jvm);
	q.want = 1;
	assert_int_equal(th_run_until(t, subs_pred, &q, 2000), 0);
	assert_int_equal(eb__vx_member_subs(c.m, "echo", &ids, &n), 0);
	assert_string_equal(ids[0], SELF);
	close_ctx(t, &c);
}

static int
resubscribed_pred(void *arg)
{
	ctx *c = arg;

	return eb__vx_member_registered(c->m) &&
	       fakezk_child_count(srv, SUBS "/b") == 1 &&
	       fakezk_exists(srv, NODES "/" SELF);
}

static void
test_new_session_recreates(void **state)
{
	th_loop *t = *state;
	ctx      c;
	uint64_t s;
	char     path[128];

	open_ctx(t, &c);
	assert_int_equal(eb__vx_member_sub_add(c.m, "b", &s), 0);
	assert_int_equal(th_run_until(t, resubscribed_pred, &c, 2000), 0);
	fakezk_expire(c.zk);
	assert_int_equal(fakezk_exists(srv, NODES "/" SELF), 0);
	/* same node id, same sequence number */
	assert_int_equal(th_run_until(t, resubscribed_pred, &c, 2000), 0);
	(void) snprintf(path, sizeof(path), SUBS "/b/" SELF "-%llu",
	    (unsigned long long) s);
	assert_true(fakezk_exists(srv, path));
	close_ctx(t, &c);
}

static void
test_nodeinfo_parse(void **state)
{
	char    host[64];
	int     port = 0;
	eb__buf b;

	(void) state;
	eb__buf_init(&b);
	eb__vx_nodeinfo_put(&b, "10.0.0.1", 65535);
	assert_int_equal(eb__vx_nodeinfo_parse(eb__buf_head(&b),
	                     eb__buf_avail(&b), host, sizeof(host), &port),
	    0);
	assert_string_equal(host, "10.0.0.1");
	assert_int_equal(port, 65535);
	/* truncated, and a JVM's transient id-as-data */
	assert_int_equal(eb__vx_nodeinfo_parse(eb__buf_head(&b),
	                     eb__buf_avail(&b) - 1, host, sizeof(host), &port),
	    EB_EFRAME);
	assert_int_equal(
	    eb__vx_nodeinfo_parse(JVM, strlen(JVM), host, sizeof(host), &port),
	    EB_EFRAME);
	/* metadata present: accepted, ignored */
	assert_int_equal(
	    eb__vx_nodeinfo_parse("\0\0\0\x01h\0\0\0\x05\0\0\0\x02{}", 15, host,
	        sizeof(host), &port),
	    0);
	assert_string_equal(host, "h");
	eb__buf_free(&b);
}

int
main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_nodeinfo_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_subscriptions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jvm_peer, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_address_registrations, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_new_session_recreates, setup, teardown),
		cmocka_unit_test(test_nodeinfo_parse),
		cmocka_unit_test_setup_teardown(
		    test_peer_kind, setup, teardown),
		cmocka_unit_test(test_nodeinfo_meta_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
