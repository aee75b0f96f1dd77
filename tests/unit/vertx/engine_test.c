/*
 * vertx/engine.c, this node in the Java engine's election, against the
 * in-memory ZooKeeper with a second session playing a Java engine node:
 * follower behind an older Java child, leader once that session ends; the
 * duplicate check (our address in a live child: no child of ours); leader
 * first, and the child deleted at close.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/fakezk.h"
#include "tests/harness/th.h"
#include "vertx/engine.h"

#define ROOT "/io.vertx/engine"

typedef struct ctx {
	eb__zk        *zk;
	eb__vx_engine *e;
	eb__zk        *java;
	int            registered;
	int            leader;
	int            follower;
	int            duplicate;
	char           detail[128];
	int            created;
	int            closed;
} ctx;

static fakezk_server *srv;

static void
event_cb(eb__zk *zk, eb__zk_event ev, void *arg)
{
	ctx *c = arg;

	(void) zk;
	if (c->e != NULL) {
		eb__vx_engine_session_event(c->e, ev);
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
engine_cb(eb__vx_engine_event ev, const char *detail, void *arg)
{
	ctx *c = arg;

	(void) snprintf(c->detail, sizeof(c->detail), "%s", detail);
	switch (ev) {
	case EB_VX_ENGINE_REGISTERED:
		c->registered++;
		break;
	case EB_VX_ENGINE_LEADER:
		c->leader++;
		break;
	case EB_VX_ENGINE_FOLLOWER:
		c->follower++;
		break;
	case EB_VX_ENGINE_DUPLICATE:
		c->duplicate++;
		break;
	}
}

static int
connected_pred(void *arg)
{
	return eb__zk_get_state(arg) == EB_ZK_STATE_CONNECTED;
}

static void
created_cb(eb__zk *zk, int status, const char *path, void *arg)
{
	(void) zk;
	(void) path;
	assert_int_equal(status, 0);
	((ctx *) arg)->created++;
}

static void
ensured_cb(eb__zk *zk, int status, void *arg)
{
	(void) zk;
	assert_int_equal(status, 0);
	((ctx *) arg)->created++;
}

/* The Java node's child: EPHEMERAL_SEQUENTIAL engine-, data = address. */
static void
java_join(th_loop *t, ctx *c, const char *address)
{
	assert_int_equal(
	    fakezk_client_new(srv, 400, noop_event_cb, NULL, &c->java), 0);
	assert_int_equal(eb__zk_start(c->java), 0);
	assert_int_equal(th_run_until(t, connected_pred, c->java, 2000), 0);
	c->created = 0;
	assert_int_equal(eb__zk_ensure_path(c->java, ROOT, ensured_cb, c), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &c->created, 2000), 0);
	c->created = 0;
	assert_int_equal(
	    eb__zk_create(c->java, ROOT "/engine-", address, strlen(address),
	        EB_ZK_EPHEMERAL | EB_ZK_SEQUENTIAL, created_cb, c),
	    0);
	assert_int_equal(th_run_until(t, th_flag_set, &c->created, 2000), 0);
}

static void
ebnode_join(th_loop *t, ctx *c)
{
	(void) t;
	assert_int_equal(fakezk_client_new(srv, 400, event_cb, c, &c->zk), 0);
	assert_int_equal(eb__vx_engine_new(&t->loop, c->zk, ROOT, "eb-1",
	                     engine_cb, c, &c->e),
	    0);
	assert_int_equal(eb__zk_start(c->zk), 0);
	assert_int_equal(eb__vx_engine_start(c->e), 0);
}

static void
engine_closed_cb(eb__vx_engine *e, void *arg)
{
	(void) e;
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

	return c->closed == (c->java != NULL ? 3 : 2);
}

static void
close_all(th_loop *t, ctx *c)
{
	eb__vx_engine_close(c->e, engine_closed_cb, c);
	c->e = NULL;
	eb__zk_close(c->zk, zk_closed_cb, c);
	if (c->java != NULL) {
		eb__zk_close(c->java, zk_closed_cb, c);
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
	fakezk_server_close_run(srv, *state);
	return th_teardown(state);
}

static void
test_follower_then_leader(void **state)
{
	th_loop *t = *state;
	ctx      c;

	memset(&c, 0, sizeof(c));
	java_join(t, &c, "java-1");
	ebnode_join(t, &c);
	assert_int_equal(th_run_until(t, th_flag_set, &c.follower, 2000), 0);
	assert_int_equal(c.registered, 1);
	assert_string_equal(c.detail, "java-1");
	assert_false(eb__vx_engine_leading(c.e));
	assert_int_equal(fakezk_child_count(srv, ROOT), 2);
	/* the Java leader's session ends: the lowest child is ours now */
	fakezk_expire(c.java);
	assert_int_equal(th_run_until(t, th_flag_set, &c.leader, 2000), 0);
	assert_string_equal(c.detail, "eb-1");
	assert_true(eb__vx_engine_leading(c.e));
	close_all(t, &c);
}

static void
test_duplicate(void **state)
{
	th_loop *t = *state;
	ctx      c;

	memset(&c, 0, sizeof(c));
	java_join(t, &c, "eb-1"); /* a live child holds our address */
	ebnode_join(t, &c);
	assert_int_equal(th_run_until(t, th_flag_set, &c.duplicate, 2000), 0);
	assert_string_equal(c.detail, "engine-0000000000");
	assert_int_equal(fakezk_child_count(srv, ROOT), 1);
	assert_int_equal(c.registered + c.leader + c.follower, 0);
	close_all(t, &c);
}

static int
one_child_pred(void *arg)
{
	(void) arg;
	return fakezk_child_count(srv, ROOT) == 1;
}

static void
test_leader_first_and_close(void **state)
{
	th_loop *t = *state;
	ctx      c;

	memset(&c, 0, sizeof(c));
	ebnode_join(t, &c);
	assert_int_equal(th_run_until(t, th_flag_set, &c.leader, 2000), 0);
	java_join(t, &c, "java-2");
	assert_int_equal(fakezk_child_count(srv, ROOT), 2);
	assert_true(eb__vx_engine_leading(c.e));
	assert_int_equal(c.follower, 0);
	/* close deletes our child at once: the Java node is alone */
	eb__vx_engine_close(c.e, engine_closed_cb, &c);
	c.e = NULL;
	assert_int_equal(th_run_until(t, one_child_pred, NULL, 2000), 0);
	eb__zk_close(c.zk, zk_closed_cb, &c);
	eb__zk_close(c.java, zk_closed_cb, &c);
	assert_int_equal(th_run_until(t, closed_pred, &c, 2000), 0);
}

int
main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_follower_then_leader, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_duplicate, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_leader_first_and_close, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
