/*
 * it.zk.restart: the standalone server is restarted (SIGTERM, start again,
 * same data dir) within the session timeout: the client sees SUSPENDED and
 * then RECONNECTED with the same session id, and watches armed before the
 * restart still fire. Uses the dedicated `zkx` fixture (RESOURCE_LOCK zkx),
 * so the shared server other tests use is never restarted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "tests/harness/th.h"
#include "tests/integration/zk/zkit.h"
#include "zk/zk.h"

static void
test_restart_within_session_timeout(void **state)
{
	th_loop    *t = *state;
	zkit_events e = { .n = 0 };
	zkit_res    r;
	zkit_watch  wcreate = { 0 };
	zkit_watch  wdata = { 0 };
	zkit_proc   proc;
	char       *connect = zkit_connect();
	const char *dir = getenv("EB_ZK_FIXTURE_DIR");
	const char *args[] = { "restart", dir, NULL };
	char        root[128], node[192], eph[192];
	eb__zk     *zk;
	int64_t     sid;
	uint64_t    t0;

	assert_non_null(dir);
	th_watchdog_ms(t, 90000);
	zkit_unique_root(root, sizeof(root));
	(void) snprintf(node, sizeof(node), "%s/later", root);
	(void) snprintf(eph, sizeof(eph), "%s/eph", root);
	zk = zkit_open(t, connect, 20000, &e);
	sid = eb__zk_session_id(zk);
	assert_int_equal(zkit_ensure(t, zk, root), 0);
	assert_int_equal(zkit_create(t, zk, eph, "e", EB_ZK_EPHEMERAL, &r), 0);
	/* Two watches armed before the restart. */
	assert_int_equal(zkit_exists(t, zk, node, zkit_on_watch, &wcreate, &r),
	    EB_EZKNONODE);
	assert_int_equal(zkit_get(t, zk, eph, zkit_on_watch, &wdata, &r), 0);

	t0 = eb__mono_ms();
	zkit_script_start(t, &proc, args);
	assert_int_equal(zkit_wait_events(t, &e, 2, 30000), 0);
	assert_int_equal(e.ev[1], EB_ZK_EV_SUSPENDED);
	assert_int_equal(zkit_script_wait(t, &proc, 60000), 0);
	assert_int_equal(zkit_wait_events(t, &e, 3, 20000), 0);
	assert_int_equal(e.ev[2], EB_ZK_EV_RECONNECTED);
	(void) fprintf(stderr,
	    "MEASURE restart: suspended_after_ms=%llu "
	    "reconnected_after_ms=%llu\n",
	    (unsigned long long) (e.at_ms[1] - t0),
	    (unsigned long long) (e.at_ms[2] - t0));
	assert_int_equal(eb__zk_session_id(zk), sid);
	assert_int_equal(eb__zk_get_state(zk), EB_ZK_STATE_CONNECTED);

	/* Same session: the ephemeral is still ours. */
	assert_int_equal(zkit_exists(t, zk, eph, NULL, NULL, &r), 0);
	assert_int_equal(r.stat.ephemeral_owner, sid);
	/* And the armed watches fire. */
	assert_int_equal(zkit_create(t, zk, node, NULL, 0, &r), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &wcreate.fired, 5000), 0);
	assert_int_equal(wcreate.type, EB_ZK_WATCH_CREATED);
	assert_int_equal(zkit_set(t, zk, eph, "f", -1, &r), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &wdata.fired, 5000), 0);
	assert_int_equal(wdata.type, EB_ZK_WATCH_CHANGED);
	assert_int_equal(e.n, 3);
	zkit_close(t, zk);
	free(connect);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_restart_within_session_timeout, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
