/*
 * The member child cache (member/childcache.c) against the in-memory
 * ZooKeeper: initial load in sequence order, add/remove/update events, a
 * child vanishing between list and get, re-list on reconnect, rebuild and
 * diff on a new session; damaged children (persistent, bad JSON,
 * unreadable, foreign names) ignored, counted and not polled; a member
 * overwritten with garbage removed; the leader and its epoch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "member/childcache.h"
#include "tests/harness/fakezk.h"
#include "tests/harness/th.h"

#define MEMBERS "/ebnode/t/members"

typedef struct cnode {
	eb__zk         *zk;
	eb__childcache *cc;
	int             added;
	int             removed;
	int             updated;
	int             synced;
	int             closed;
	char            last_node[64];
} cnode;

static fakezk_server *srv;

static void
cn_event_cb(eb__zk *zk, eb__zk_event ev, void *arg)
{
	cnode *n = arg;

	(void) zk;
	if (n->cc != NULL) {
		eb__childcache_session_event(n->cc, ev);
	}
}

static void
cn_cache_cb(
    eb__childcache *c, eb__childcache_event ev, const eb__member *m, void *arg)
{
	cnode *n = arg;

	(void) c;
	switch (ev) {
	case EB_CC_ADDED:
		n->added++;
		break;
	case EB_CC_REMOVED:
		n->removed++;
		break;
	case EB_CC_UPDATED:
		n->updated++;
		break;
	case EB_CC_SYNCED:
		n->synced++;
		return;
	}
	(void) snprintf(n->last_node, sizeof(n->last_node), "%s", m->node_id);
}

static void
cn_open(th_loop *t, cnode *n)
{
	memset(n, 0, sizeof(*n));
	assert_int_equal(
	    fakezk_client_new(srv, 400, cn_event_cb, n, &n->zk), 0);
	assert_int_equal(eb__childcache_new(
	                     &t->loop, n->zk, MEMBERS, cn_cache_cb, n, &n->cc),
	    0);
	assert_int_equal(eb__zk_start(n->zk), 0);
	assert_int_equal(eb__childcache_start(n->cc), 0);
}

static void
cn_cc_closed_cb(eb__childcache *c, void *arg)
{
	(void) c;
	((cnode *) arg)->closed++;
}

static void
cn_zk_closed_cb(eb__zk *zk, void *arg)
{
	(void) zk;
	((cnode *) arg)->closed++;
}

static int
closed_pred(void *arg)
{
	return ((cnode *) arg)->closed == 2;
}

static void
cn_close(th_loop *t, cnode *n)
{
	eb__childcache_close(n->cc, cn_cc_closed_cb, n);
	n->cc = NULL;
	eb__zk_close(n->zk, cn_zk_closed_cb, n);
	assert_int_equal(th_run_until(t, closed_pred, n, 2000), 0);
}

static int
setup(void **state)
{
	th_loop *t;

	assert_int_equal(th_setup(state), 0);
	t = *state;
	srv = fakezk_server_new(&t->loop);
	assert_int_equal(fakezk_put(srv, "/ebnode", NULL, 0), 0);
	assert_int_equal(fakezk_put(srv, "/ebnode/t", NULL, 0), 0);
	assert_int_equal(fakezk_put(srv, MEMBERS, NULL, 0), 0);
	return 0;
}

static int
teardown(void **state)
{
	th_loop *t = *state;

	fakezk_server_close_run(srv, t);
	return th_teardown(state);
}

/* Creates a member with a given uuid-ish prefix digit and sequence. */
static void
put_member(char digit, int seq, const char *node_id)
{
	char path[256];
	char data[256];
	char uuid[37];

	memset(uuid, digit, 36);
	uuid[8] = uuid[13] = uuid[18] = uuid[23] = '-';
	uuid[36] = '\0';
	(void) snprintf(path, sizeof(path), MEMBERS "/m-%s-%010d", uuid, seq);
	(void) snprintf(data, sizeof(data),
	    "{\"address\":\"addr-%s\",\"node_id\":\"%s\",\"host\":\"h\","
	    "\"bridge_port\":%d,\"admin_port\":1,\"cluster_port\":2,"
	    "\"version\":\"v\",\"started_ms\":5}",
	    node_id, node_id, 1000 + seq);
	assert_int_equal(fakezk_put(srv, path, data, 77), 0);
}

static void
member_path(char digit, int seq, char *out, size_t cap)
{
	char uuid[37];

	memset(uuid, digit, 36);
	uuid[8] = uuid[13] = uuid[18] = uuid[23] = '-';
	uuid[36] = '\0';
	(void) snprintf(out, cap, MEMBERS "/m-%s-%010d", uuid, seq);
}

static int
synced_pred(void *arg)
{
	cnode *n = arg;

	return eb__childcache_synced(n->cc);
}

static void
test_initial_load_in_sequence_order(void **state)
{
	th_loop          *t = *state;
	cnode             n;
	const eb__member *m;

	/* Name order (by uuid) is the reverse of sequence order. */
	put_member('f', 1, "first");
	put_member('a', 3, "third");
	put_member('c', 2, "second");
	assert_int_equal(fakezk_put(srv, MEMBERS "/not-a-member", "x", 0), 0);
	cn_open(t, &n);
	assert_int_equal(th_run_until(t, synced_pred, &n, 2000), 0);
	assert_int_equal(n.added, 3);
	assert_int_equal(eb__childcache_count(n.cc), 3);
	assert_string_equal(eb__childcache_at(n.cc, 0)->node_id, "first");
	assert_string_equal(eb__childcache_at(n.cc, 1)->node_id, "second");
	assert_string_equal(eb__childcache_at(n.cc, 2)->node_id, "third");
	m = eb__childcache_at(n.cc, 1);
	assert_int_equal(m->seq, 2);
	assert_int_equal(m->bridge_port, 1002);
	assert_int_equal(m->owner, 77);
	assert_true(m->czxid > 0);
	assert_string_equal(m->address, "addr-second");
	assert_true(m->eligible);
	assert_null(eb__childcache_at(n.cc, 3));
	cn_close(t, &n);
}

static int
added_pred(void *arg)
{
	return ((cnode *) arg)->added >= 2;
}

static int
removed_pred(void *arg)
{
	return ((cnode *) arg)->removed >= 1;
}

static int
updated_pred(void *arg)
{
	return ((cnode *) arg)->updated >= 1;
}

static void
test_add_remove_update(void **state)
{
	th_loop *t = *state;
	cnode    n;
	cnode    other;
	char     path[256];

	put_member('a', 1, "one");
	cn_open(t, &n);
	cn_open(t, &other); /* a second client changing data */
	assert_int_equal(th_run_until(t, synced_pred, &n, 2000), 0);
	put_member('b', 2, "two");
	assert_int_equal(th_run_until(t, added_pred, &n, 2000), 0);
	assert_string_equal(n.last_node, "two");
	member_path('a', 1, path, sizeof(path));
	assert_int_equal(fakezk_del(srv, path), 0);
	assert_int_equal(th_run_until(t, removed_pred, &n, 2000), 0);
	assert_string_equal(n.last_node, "one");
	assert_int_equal(eb__childcache_count(n.cc), 1);
	cn_close(t, &other);
	cn_close(t, &n);
}

static void
set_cb(eb__zk *zk, int status, const eb__zk_stat *st, void *arg)
{
	(void) zk;
	(void) st;
	*(int *) arg = status == 0 ? 1 : -1;
}

static void
test_update(void **state)
{
	th_loop          *t = *state;
	cnode             n;
	cnode             other;
	char              path[256];
	int               done = 0;
	static const char data[] =
	    "{\"node_id\":\"renamed\",\"address\":\"a\"}";

	put_member('a', 1, "one");
	cn_open(t, &n);
	cn_open(t, &other);
	assert_int_equal(th_run_until(t, synced_pred, &n, 2000), 0);
	assert_int_equal(th_run_until(t, synced_pred, &other, 2000), 0);
	member_path('a', 1, path, sizeof(path));
	assert_int_equal(eb__zk_set(other.zk, path, data, sizeof(data) - 1, -1,
	                     set_cb, &done),
	    0);
	assert_int_equal(th_run_until(t, updated_pred, &n, 2000), 0);
	assert_int_equal(done, 1);
	assert_string_equal(n.last_node, "renamed");
	assert_string_equal(eb__childcache_at(n.cc, 0)->node_id, "renamed");
	assert_int_equal(n.added, 1);
	cn_close(t, &other);
	cn_close(t, &n);
}

static int
listed_pred(void *arg)
{
	return eb__childcache_lists(((cnode *) arg)->cc) >= 1;
}

static void
test_vanish_between_list_and_get(void **state)
{
	th_loop *t = *state;
	cnode    n;
	char     path[256];

	put_member('a', 1, "one");
	put_member('b', 2, "two");
	cn_open(t, &n);
	/* Run until the listing was answered (the gets are queued)... */
	assert_int_equal(th_run_until(t, listed_pred, &n, 2000), 0);
	while (eb__childcache_synced(n.cc) == 0 && n.added == 0 &&
	       fakezk_requests(n.zk) < 3) {
		(void) uv_run(&t->loop, UV_RUN_ONCE);
	}
	/* ...then one child goes before its get is served. */
	member_path('b', 2, path, sizeof(path));
	assert_int_equal(fakezk_del(srv, path), 0);
	assert_int_equal(th_run_until(t, synced_pred, &n, 2000), 0);
	assert_int_equal(eb__childcache_count(n.cc), 1);
	assert_string_equal(eb__childcache_at(n.cc, 0)->node_id, "one");
	assert_int_equal(n.removed, 0); /* never reported as added */
	assert_int_equal(n.added, 1);
	cn_close(t, &n);
}

static void
test_relist_on_reconnect(void **state)
{
	th_loop *t = *state;
	cnode    n;
	unsigned lists;

	put_member('a', 1, "one");
	cn_open(t, &n);
	assert_int_equal(th_run_until(t, synced_pred, &n, 2000), 0);
	lists = eb__childcache_lists(n.cc);
	fakezk_disconnect(n.zk);
	put_member('b', 2, "two");
	assert_int_equal(th_run_until(t, added_pred, &n, 100), -1);
	fakezk_reconnect(n.zk);
	assert_int_equal(th_run_until(t, added_pred, &n, 2000), 0);
	assert_true(eb__childcache_lists(n.cc) > lists);
	assert_int_equal(eb__childcache_count(n.cc), 2);
	cn_close(t, &n);
}

static int
rebuilt_pred(void *arg)
{
	cnode *n = arg;

	return n->removed >= 1 && n->added >= 3 && eb__childcache_synced(n->cc);
}

static void
test_rebuild_on_new_session(void **state)
{
	th_loop *t = *state;
	cnode    n;
	char     path[256];

	put_member('a', 1, "one");
	put_member('b', 2, "two");
	cn_open(t, &n);
	assert_int_equal(th_run_until(t, synced_pred, &n, 2000), 0);
	assert_int_equal(n.added, 2);
	fakezk_disconnect(n.zk);
	fakezk_server_expire_session(srv, fakezk_session(n.zk));
	/* Changes while we were away: one left, one joined. */
	member_path('a', 1, path, sizeof(path));
	assert_int_equal(fakezk_del(srv, path), 0);
	put_member('c', 3, "three");
	fakezk_reconnect(n.zk); /* EXPIRED, then a new session */
	assert_int_equal(th_run_until(t, rebuilt_pred, &n, 2000), 0);
	/* The diff: "one" removed, "three" added, "two" not re-added. */
	assert_int_equal(n.added, 3);
	assert_int_equal(n.removed, 1);
	assert_int_equal(n.updated, 0);
	assert_int_equal(eb__childcache_count(n.cc), 2);
	assert_string_equal(eb__childcache_at(n.cc, 0)->node_id, "two");
	assert_string_equal(eb__childcache_at(n.cc, 1)->node_id, "three");
	cn_close(t, &n);
}

static int
never_pred(void *arg)
{
	(void) arg;
	return 0;
}

/* Damaged children: a persistent member naming another node, one with
 * bad JSON, an unreadable one, a foreign name. None is visible or leads;
 * each is counted; nothing is polled; a change is noticed. */
static void
test_invalid_children_ignored(void **state)
{
	th_loop *t = *state;
	cnode    n;
	char     path[256];
	unsigned reqs;

	member_path('a', 0, path, sizeof(path));
	assert_int_equal(fakezk_put(srv, path,
	                     "{\"node_id\":\"intruder\",\"address\":\"x\"}", 0),
	    0);
	member_path('b', 1, path, sizeof(path));
	assert_int_equal(fakezk_put(srv, path, "{not json", 77), 0);
	member_path('c', 2, path, sizeof(path));
	assert_int_equal(fakezk_put(srv, path,
	                     "{\"node_id\":\"hidden\",\"address\":\"h\"}", 77),
	    0);
	assert_int_equal(fakezk_deny_read(srv, path, 1), 0);
	assert_int_equal(fakezk_put(srv, MEMBERS "/zzz", "x", 0), 0);
	put_member('d', 3, "good");
	cn_open(t, &n);
	assert_int_equal(th_run_until(t, synced_pred, &n, 2000), 0);
	assert_int_equal(n.added, 1);
	assert_int_equal(eb__childcache_count(n.cc), 1);
	assert_int_equal(eb__childcache_ignored(n.cc), 4);
	assert_string_equal(eb__childcache_leader(n.cc)->node_id, "good");
	assert_int_equal(eb__childcache_leader_epoch(n.cc),
	    eb__childcache_leader(n.cc)->czxid);
	/* The unreadable child is not visible. */
	assert_string_not_equal(
	    eb__childcache_at(n.cc, 0)->name, strrchr(path, '/') + 1);
	/* Nothing is polled while nothing changes. */
	reqs = fakezk_requests(n.zk);
	(void) th_run_until(t, never_pred, NULL, 200);
	assert_int_equal(fakezk_requests(n.zk), reqs);
	/* The unreadable one goes: noticed (exists watch), not counted. */
	assert_int_equal(fakezk_del(srv, path), 0);
	(void) th_run_until(t, never_pred, NULL, 50);
	assert_int_equal(eb__childcache_ignored(n.cc), 3);
	cn_close(t, &n);
}

/* A visible member overwritten with data that is not a member record is
 * removed; made valid again, it is added again. */
static void
test_member_overwritten_invalid(void **state)
{
	th_loop *t = *state;
	cnode    n;
	char     path[256];

	put_member('a', 1, "one");
	cn_open(t, &n);
	assert_int_equal(th_run_until(t, synced_pred, &n, 2000), 0);
	member_path('a', 1, path, sizeof(path));
	assert_int_equal(fakezk_set(srv, path, "garbage"), 0);
	assert_int_equal(th_run_until(t, removed_pred, &n, 2000), 0);
	assert_int_equal(eb__childcache_count(n.cc), 0);
	assert_int_equal(eb__childcache_ignored(n.cc), 1);
	assert_null(eb__childcache_leader(n.cc));
	assert_int_equal(eb__childcache_leader_epoch(n.cc), 0);
	assert_int_equal(
	    fakezk_set(srv, path, "{\"node_id\":\"back\",\"address\":\"b\"}"),
	    0);
	assert_int_equal(th_run_until(t, added_pred, &n, 2000), 0);
	assert_string_equal(eb__childcache_leader(n.cc)->node_id, "back");
	assert_int_equal(eb__childcache_ignored(n.cc), 0);
	cn_close(t, &n);
}

int
main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_initial_load_in_sequence_order, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_add_remove_update, setup, teardown),
		cmocka_unit_test_setup_teardown(test_update, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_vanish_between_list_and_get, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_relist_on_reconnect, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_rebuild_on_new_session, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_invalid_children_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_member_overwritten_invalid, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
