/*
 * it.zk.ops: every wrapped operation against the real ZooKeeper fixture
 * (shared `zk`): watches, sequential naming, ephemeral ownership, multi
 * success and failure (nothing applied), ensure_path, the lease base, ACLs
 * and digest auth, and close semantics (pending ops cancelled exactly once;
 * the loop never blocked, measured with a 5 ms ticker).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "tests/harness/proxy.h"
#include "tests/harness/th.h"
#include "tests/integration/zk/zkit.h"
#include "zk/zk.h"
#include "zk/zk_int.h"

static void
path_join(char *out, size_t n, const char *a, const char *b)
{
	(void) snprintf(out, n, "%s/%s", a, b);
}

static void
test_basic_ops_and_watches(void **state)
{
	th_loop    *t = *state;
	zkit_events e = { .n = 0 };
	zkit_res    r;
	zkit_watch  wchg = { 0 };
	zkit_watch  wcre = { 0 };
	char        root[128], p[192], nope[192], ab[192];
	eb__zk     *zk;

	th_watchdog_ms(t, 60000);
	zkit_unique_root(root, sizeof(root));
	path_join(p, sizeof(p), root, "p");
	path_join(nope, sizeof(nope), root, "nope");
	path_join(ab, sizeof(ab), root, "a/b");
	zk = zkit_open(t, zkit_connect_str, 10000, &e);
	assert_true(eb__zk_session_timeout_ms(zk) >= 1000);

	/* ensure_path: parents created, idempotent, null data. */
	assert_int_equal(zkit_ensure(t, zk, ab), 0);
	assert_int_equal(zkit_ensure(t, zk, ab), 0);
	assert_int_equal(zkit_get(t, zk, ab, NULL, NULL, &r), 0);
	assert_false(r.has_data);
	assert_int_equal(r.len, 0);

	/* create / duplicate / get+watch / set / bad version. */
	assert_int_equal(zkit_create(t, zk, p, "hello", 0, &r), 0);
	assert_string_equal(r.path, p);
	assert_int_equal(
	    zkit_create(t, zk, p, "again", 0, &r), EB_EZKNODEEXISTS);
	assert_int_equal(zkit_get(t, zk, p, zkit_on_watch, &wchg, &r), 0);
	assert_string_equal(r.data, "hello");
	assert_int_equal(r.stat.version, 0);
	assert_int_equal(r.stat.ephemeral_owner, 0);
	assert_int_equal(zkit_set(t, zk, p, "world", 0, &r), 0);
	assert_int_equal(r.stat.version, 1);
	assert_int_equal(th_run_until(t, th_flag_set, &wchg.fired, 5000), 0);
	assert_int_equal(wchg.type, EB_ZK_WATCH_CHANGED);
	assert_string_equal(wchg.path, p);
	assert_int_equal(zkit_set(t, zk, p, "x", 0, &r), EB_EZKBADVERSION);

	/* exists on a missing node arms a creation watch. */
	assert_int_equal(
	    zkit_exists(t, zk, nope, zkit_on_watch, &wcre, &r), EB_EZKNONODE);
	assert_false(r.has_stat);
	assert_int_equal(zkit_create(t, zk, nope, NULL, 0, &r), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &wcre.fired, 5000), 0);
	assert_int_equal(wcre.type, EB_ZK_WATCH_CREATED);
	assert_int_equal(wcre.fired, 1); /* one-shot */

	/* delete: missing, not empty, fine. */
	assert_int_equal(zkit_delete(t, zk, nope, -1), 0);
	assert_int_equal(zkit_delete(t, zk, nope, -1), EB_EZKNONODE);
	(void) snprintf(ab, sizeof(ab), "%s/a", root);
	assert_int_equal(zkit_delete(t, zk, ab, -1), EB_EZKNOTEMPTY);

	/* The lease base moved to a recent send time. */
	assert_true(eb__zk_last_ok_send_ms(zk) > 0);
	assert_true(eb__zk_last_ok_send_ms(zk) <= eb__mono_ms());
	zkit_close(t, zk);
	assert_int_equal(e.n, 1); /* CONNECTED only */
}

static void
test_ephemeral_sequential_children(void **state)
{
	th_loop    *t = *state;
	zkit_events e = { .n = 0 };
	zkit_res    r;
	zkit_watch  wch = { 0 };
	char        root[128], path[192], s1[512], s2[512];
	eb__zk     *zk;
	size_t      i;
	int         found = 0;

	th_watchdog_ms(t, 60000);
	zkit_unique_root(root, sizeof(root));
	zk = zkit_open(t, zkit_connect_str, 10000, &e);
	assert_int_equal(zkit_ensure(t, zk, root), 0);

	/* Ephemeral: owned by this session. */
	path_join(path, sizeof(path), root, "eph");
	assert_int_equal(zkit_create(t, zk, path, "e", EB_ZK_EPHEMERAL, &r), 0);
	assert_int_equal(zkit_exists(t, zk, path, NULL, NULL, &r), 0);
	assert_true(r.has_stat);
	assert_int_equal(r.stat.ephemeral_owner, eb__zk_session_id(zk));
	/* Ephemerals cannot have children. */
	path_join(s1, sizeof(s1), path, "kid");
	assert_int_equal(
	    zkit_create(t, zk, s1, NULL, 0, &r), EB_EZKEPHEMERALCHILD);

	/* Sequential: 10-digit suffix, increasing. */
	path_join(path, sizeof(path), root, "s-");
	assert_int_equal(
	    zkit_create(t, zk, path, NULL, EB_ZK_SEQUENTIAL, &r), 0);
	(void) snprintf(s1, sizeof(s1), "%s", r.path);
	assert_int_equal(zkit_create(t, zk, path, NULL,
	                     EB_ZK_SEQUENTIAL | EB_ZK_EPHEMERAL, &r),
	    0);
	(void) snprintf(s2, sizeof(s2), "%s", r.path);
	assert_int_equal(strlen(s1), strlen(path) + 10);
	assert_int_equal(strncmp(s1, path, strlen(path)), 0);
	assert_true(strcmp(s1, s2) < 0);
	assert_int_equal(zkit_exists(t, zk, s2, NULL, NULL, &r), 0);
	assert_int_equal(r.stat.ephemeral_owner, eb__zk_session_id(zk));
	assert_int_equal(zkit_exists(t, zk, s1, NULL, NULL, &r), 0);
	assert_int_equal(r.stat.ephemeral_owner, 0);

	/* Children with a watch; a new child fires it. */
	assert_int_equal(
	    zkit_children(t, zk, root, zkit_on_watch, &wch, &r), 0);
	assert_int_equal(r.count, 3);
	for (i = 0; i < r.count; i++) {
		found += strcmp(r.names[i], "eph") == 0;
		found += strcmp(r.names[i], s1 + strlen(root) + 1) == 0;
	}
	assert_int_equal(found, 2);
	path_join(path, sizeof(path), root, "late");
	assert_int_equal(zkit_create(t, zk, path, NULL, 0, &r), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &wch.fired, 5000), 0);
	assert_int_equal(wch.type, EB_ZK_WATCH_CHILD);
	assert_string_equal(wch.path, root);
	assert_int_equal(
	    zkit_children(t, zk, "/ebtest-zk/none-such", NULL, NULL, &r),
	    EB_EZKNONODE);
	zkit_close(t, zk);
}

struct multi_res {
	int    done;
	int    status;
	size_t count;
	int    st[8];
	char   path[8][256];
};

static void
multi_cb(eb__zk *zk, int status, const eb__zk_op_result *res, size_t count,
    void *arg)
{
	struct multi_res *m = arg;
	size_t            i;

	(void) zk;
	m->done++;
	m->status = status;
	m->count = count;
	for (i = 0; i < count && i < 8; i++) {
		m->st[i] = res[i].status;
		m->path[i][0] = '\0';
		if (res[i].path != NULL) {
			(void) snprintf(
			    m->path[i], sizeof(m->path[i]), "%s", res[i].path);
		}
	}
}

/* A failing check (the fencing pattern): nothing is set. */
static void
multi_failing_check(th_loop *t, eb__zk *zk, const char *p)
{
	struct multi_res m;
	zkit_res         r;
	eb__zk_op        ops[2] = {
		       { .type = EB_ZK_OP_CHECK, .path = p, .version = 0 },
		       { .type = EB_ZK_OP_SET,
		           .path = p,
		           .data = "v2",
		           .len = 2,
		           .version = -1 },
	};

	memset(&m, 0, sizeof(m));
	assert_int_equal(eb__zk_multi(zk, ops, 2, multi_cb, &m), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &m.done, 5000), 0);
	assert_int_equal(m.status, EB_EZKBADVERSION);
	assert_int_equal(m.st[0], EB_EZKBADVERSION);
	assert_int_equal(zkit_get(t, zk, p, NULL, NULL, &r), 0);
	assert_string_equal(r.data, "v1");
}

static void
test_multi(void **state)
{
	th_loop         *t = *state;
	zkit_events      e = { .n = 0 };
	zkit_res         r;
	struct multi_res m;
	char             root[128], p[192], m1[192], m2[192], sq[192];
	eb__zk          *zk;
	uint64_t         before;

	th_watchdog_ms(t, 60000);
	zkit_unique_root(root, sizeof(root));
	path_join(p, sizeof(p), root, "p");
	path_join(m1, sizeof(m1), root, "m1");
	path_join(m2, sizeof(m2), root, "m2");
	path_join(sq, sizeof(sq), root, "q-");
	zk = zkit_open(t, zkit_connect_str, 10000, &e);
	assert_int_equal(zkit_ensure(t, zk, root), 0);
	assert_int_equal(zkit_create(t, zk, p, "v0", 0, &r), 0);

	{
		/* All applied under one zxid: the created member and claim
		 * share czxid and owner. */
		eb__zk_op ops[4] = {
			{ .type = EB_ZK_OP_CHECK, .path = p, .version = 0 },
			{ .type = EB_ZK_OP_CREATE,
			    .path = m1,
			    .data = "a",
			    .len = 1,
			    .flags = EB_ZK_EPHEMERAL },
			{ .type = EB_ZK_OP_CREATE,
			    .path = sq,
			    .flags = EB_ZK_EPHEMERAL | EB_ZK_SEQUENTIAL },
			{ .type = EB_ZK_OP_SET,
			    .path = p,
			    .data = "v1",
			    .len = 2,
			    .version = 0 },
		};

		memset(&m, 0, sizeof(m));
		before = eb__zk_last_ok_send_ms(zk);
		assert_int_equal(eb__zk_multi(zk, ops, 4, multi_cb, &m), 0);
		assert_int_equal(
		    th_run_until(t, th_flag_set, &m.done, 5000), 0);
		assert_int_equal(m.status, 0);
		assert_int_equal(m.count, 4);
		assert_int_equal(m.st[0], 0);
		assert_int_equal(m.st[3], 0);
		assert_string_equal(m.path[1], m1);
		assert_int_equal(strlen(m.path[2]), strlen(sq) + 10);
		assert_string_equal(m.path[0], "");
		assert_true(eb__zk_last_ok_send_ms(zk) >= before);
	}
	{
		eb__zk_stat a, b;

		assert_int_equal(zkit_exists(t, zk, m1, NULL, NULL, &r), 0);
		a = r.stat;
		assert_int_equal(
		    zkit_exists(t, zk, m.path[2], NULL, NULL, &r), 0);
		b = r.stat;
		assert_true(a.czxid == b.czxid);
		assert_int_equal(a.ephemeral_owner, eb__zk_session_id(zk));
		assert_int_equal(b.ephemeral_owner, eb__zk_session_id(zk));
		assert_int_equal(zkit_get(t, zk, p, NULL, NULL, &r), 0);
		assert_string_equal(r.data, "v1");
	}
	{
		/* The second create fails: nothing of the multi is applied. */
		eb__zk_op ops[3] = {
			{ .type = EB_ZK_OP_CREATE, .path = m2 },
			{ .type = EB_ZK_OP_CREATE, .path = p },
			{ .type = EB_ZK_OP_DELETE, .path = m1, .version = -1 },
		};

		memset(&m, 0, sizeof(m));
		assert_int_equal(eb__zk_multi(zk, ops, 3, multi_cb, &m), 0);
		assert_int_equal(
		    th_run_until(t, th_flag_set, &m.done, 5000), 0);
		assert_int_equal(m.done, 1);
		assert_int_equal(m.status, EB_EZKNODEEXISTS);
		assert_int_equal(m.count, 3);
		assert_int_equal(m.st[1], EB_EZKNODEEXISTS);
		assert_string_equal(m.path[0], "");
		assert_int_equal(
		    zkit_exists(t, zk, m2, NULL, NULL, &r), EB_EZKNONODE);
		assert_int_equal(zkit_exists(t, zk, m1, NULL, NULL, &r), 0);
	}
	multi_failing_check(t, zk, p);
	zkit_close(t, zk);
}

static void
never_stat_cb(eb__zk *zk, int status, const eb__zk_stat *stat, void *arg)
{
	(void) zk;
	(void) status;
	(void) stat;
	(void) arg;
	fail_msg("no callback expected");
}

static void
test_acl_and_auth(void **state)
{
	th_loop    *t = *state;
	zkit_events e1 = { .n = 0 };
	zkit_events e2 = { .n = 0 };
	zkit_events e3 = { .n = 0 };
	zkit_res    r;
	eb__zk_opts o;
	eb__zk     *owner = NULL;
	eb__zk     *other;
	eb__zk     *bogus = NULL;
	char        root[128], p[192];

	th_watchdog_ms(t, 60000);
	zkit_unique_root(root, sizeof(root));
	path_join(p, sizeof(p), root, "locked");

	eb__zk_opts_init(&o);
	o.connect = zkit_connect_str;
	o.auth_scheme = "digest";
	o.auth_credentials = "ebnode:secret";
	o.acl = EB_ZK_ACL_CREATOR;
	assert_int_equal(
	    eb__zk_new(&t->loop, &o, zkit_on_event, &e1, &owner), 0);
	assert_int_equal(eb__zk_start(owner), 0);
	assert_int_equal(zkit_wait_events(t, &e1, 1, 20000), 0);
	assert_int_equal(e1.ev[0], EB_ZK_EV_CONNECTED);
	assert_int_equal(zkit_ensure(t, owner, p), 0);
	assert_int_equal(zkit_set(t, owner, p, "mine", -1, &r), 0);

	/* Without the credentials: world may read, not write. */
	other = zkit_open(t, zkit_connect_str, 10000, &e2);
	assert_int_equal(zkit_get(t, other, p, NULL, NULL, &r), 0);
	assert_string_equal(r.data, "mine");
	assert_int_equal(zkit_set(t, other, p, "theirs", -1, &r), EB_EZKNOAUTH);
	assert_int_equal(zkit_delete(t, other, p, -1), EB_EZKNOAUTH);
	zkit_close(t, other);

	/* An unknown scheme: the server refuses, the handle is dead. */
	eb__zk_opts_init(&o);
	o.connect = zkit_connect_str;
	o.auth_scheme = "no-such-scheme";
	o.auth_credentials = "x";
	assert_int_equal(
	    eb__zk_new(&t->loop, &o, zkit_on_event, &e3, &bogus), 0);
	assert_int_equal(eb__zk_start(bogus), 0);
	assert_int_equal(zkit_wait_events(t, &e3, 2, 20000), 0);
	assert_int_equal(e3.ev[e3.n - 1], EB_ZK_EV_AUTH_FAILED);
	/* Requests on the dead handle fail at once, naming the cause. */
	assert_int_equal(
	    eb__zk_exists(bogus, "/", NULL, NULL, never_stat_cb, NULL),
	    EB_EZKAUTH);
	zkit_close(t, bogus);
	zkit_close(t, owner);
}

struct cancel_res {
	int done;
	int status;
};

static void
cancel_get_cb(eb__zk *zk, int status, const char *data, size_t len,
    const eb__zk_stat *stat, void *arg)
{
	struct cancel_res *c = arg;

	(void) zk;
	(void) data;
	(void) len;
	(void) stat;
	c->done++;
	c->status = status;
}

static void
closed_cb(eb__zk *zk, void *arg)
{
	(void) zk;
	(*(int *) arg)++;
}

/* Close on a live session with a request in flight. */
static void
test_close_cancels_in_flight(void **state)
{
	th_loop          *t = *state;
	zkit_events       e = { .n = 0 };
	struct cancel_res c = { 0, 0 };
	zkit_meter        m;
	eb__zk           *zk;
	int               closed = 0;
	uint64_t          t0, call_ns, done_ns;

	th_watchdog_ms(t, 60000);
	zk = zkit_open(t, zkit_connect_str, 10000, &e);
	assert_int_equal(eb__zk_get(zk, "/", NULL, NULL, cancel_get_cb, &c), 0);
	zkit_meter_start(t, &m);
	t0 = uv_hrtime();
	eb__zk_close(zk, closed_cb, &closed);
	call_ns = uv_hrtime() - t0;
	assert_int_equal(c.done, 0);
	assert_int_equal(th_run_until(t, th_flag_set, &closed, 15000), 0);
	done_ns = uv_hrtime() - t0;
	zkit_meter_stop(&m);
	assert_int_equal(c.done, 1);
	assert_int_equal(c.status, EB_ECANCELED);
	assert_int_equal(closed, 1);
	(void) fprintf(stderr,
	    "MEASURE close-live: call_us=%llu close_cb_ms=%llu "
	    "max_loop_gap_ms=%llu\n",
	    (unsigned long long) (call_ns / 1000),
	    (unsigned long long) (done_ns / 1000000),
	    (unsigned long long) (m.max_gap_ns / 1000000));
	assert_true(call_ns < UINT64_C(5000000));
	assert_true(m.max_gap_ns < UINT64_C(200000000));
	/* The meter lives on this stack: let its close finish here. */
	assert_int_equal(th_loop_run(t), 0);
}

struct self_close {
	int first_done;
	int first_status;
	int second_done;
	int second_status;
	int closed;
};

static void
self_close_closed_cb(eb__zk *zk, void *arg)
{
	struct self_close *c = arg;

	(void) zk;
	/* Last: after every pending callback. */
	assert_int_equal(c->second_done, 1);
	c->closed++;
}

static void
self_close_second_cb(eb__zk *zk, int status, const char *data, size_t len,
    const eb__zk_stat *stat, void *arg)
{
	struct self_close *c = arg;

	(void) zk;
	(void) data;
	(void) len;
	(void) stat;
	c->second_done++;
	c->second_status = status;
}

static void
self_close_first_cb(eb__zk *zk, int status, const char *data, size_t len,
    const eb__zk_stat *stat, void *arg)
{
	struct self_close *c = arg;

	(void) data;
	(void) len;
	(void) stat;
	c->first_done++;
	c->first_status = status;
	/* Closing from inside a ZooKeeper completion is legal (STYLE B4.6):
	 * nothing is torn down here, the next turn does it. */
	eb__zk_close(zk, self_close_closed_cb, c);
	assert_int_equal(c->closed, 0);
}

/* The owner closes from inside a completion while another reply is in the
 * same batch: that one is cancelled, not delivered. */
static void
test_close_from_completion(void **state)
{
	th_loop          *t = *state;
	zkit_events       e = { .n = 0 };
	struct self_close c;
	eb__zk           *zk;

	memset(&c, 0, sizeof(c));
	th_watchdog_ms(t, 60000);
	zk = zkit_open(t, zkit_connect_str, 10000, &e);
	assert_int_equal(
	    eb__zk_get(zk, "/", NULL, NULL, self_close_first_cb, &c), 0);
	assert_int_equal(
	    eb__zk_get(zk, "/", NULL, NULL, self_close_second_cb, &c), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &c.closed, 15000), 0);
	assert_int_equal(c.first_done, 1);
	assert_int_equal(c.first_status, 0);
	assert_int_equal(c.second_done, 1);
	assert_int_equal(c.second_status, EB_ECANCELED);
	assert_int_equal(c.closed, 1);
	assert_int_equal(e.n, 1);
}

/*
 * The case zookeeper_close() blocks on: a CONNECTED session whose server
 * stopped answering (proxy paused). The loop keeps ticking at 5 ms while
 * the close runs in the threadpool.
 */
static void
test_close_unresponsive_does_not_block(void **state)
{
	th_loop    *t = *state;
	zkit_events e = { .n = 0 };
	zkit_meter  m;
	th_proxy   *px;
	eb__zk     *zk;
	char        via[64];
	int         closed = 0;
	int         pclosed = 0;
	uint64_t    t0, call_ns, done_ns;

	th_watchdog_ms(t, 60000);
	assert_int_equal(th_proxy_new(&t->loop, 0, "127.0.0.1",
	                     zkit_port_of(zkit_connect_str), &px),
	    0);
	(void) snprintf(via, sizeof(via), "127.0.0.1:%d", th_proxy_port(px));
	zk = zkit_open(t, via, 20000, &e);
	th_proxy_pause(px);
	zkit_meter_start(t, &m);
	t0 = uv_hrtime();
	eb__zk_close(zk, closed_cb, &closed);
	call_ns = uv_hrtime() - t0;
	assert_int_equal(th_run_until(t, th_flag_set, &closed, 20000), 0);
	done_ns = uv_hrtime() - t0;
	zkit_meter_stop(&m);
	(void) fprintf(stderr,
	    "MEASURE close-unresponsive: call_us=%llu close_cb_ms=%llu "
	    "max_loop_gap_ms=%llu ticks=%llu\n",
	    (unsigned long long) (call_ns / 1000),
	    (unsigned long long) (done_ns / 1000000),
	    (unsigned long long) (m.max_gap_ns / 1000000),
	    (unsigned long long) m.ticks);
	assert_true(call_ns < UINT64_C(5000000));
	/* The loop ran all along, even while the close took seconds. */
	assert_true(m.max_gap_ns < UINT64_C(200000000));
	assert_int_equal(closed, 1);
	th_proxy_close(px, NULL, NULL);
	(void) pclosed;
	assert_int_equal(th_loop_run(t), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_basic_ops_and_watches, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_ephemeral_sequential_children, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_multi, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_acl_and_auth, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_close_cancels_in_flight, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_close_unresponsive_does_not_block, th_setup,
		    th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_close_from_completion, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(
	    tests, zkit_group_setup, zkit_group_teardown);
}
