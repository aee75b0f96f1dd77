/*
 * it.zk.ensemble: a 3-server ensemble (`zk3` fixture, RESOURCE_LOCK zk3).
 * The server the client is connected to is killed with SIGKILL: the client
 * moves to another server within the session timeout and keeps its session
 * (SUSPENDED, then RECONNECTED with the same id; its ephemeral survives).
 * The killed server is started again afterwards so the fixture stays whole.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "tests/harness/th.h"
#include "tests/integration/zk/zkit.h"
#include "zk/zk.h"
#include "zk/zk_int.h"

/* The 1-based index of the fixture server listening on port, or 0. */
static int
server_index(const char *dir, int port)
{
	char  path[512];
	char *line;
	int   i, found = 0;

	for (i = 1; i <= 3 && !found; i++) {
		(void) snprintf(path, sizeof(path), "%s/connect.%d", dir, i);
		line = zkit_read_line(path);
		if (line != NULL && strrchr(line, ':') != NULL &&
		    strtol(strrchr(line, ':') + 1, NULL, 10) == port) {
			found = i;
		}
		free(line);
	}
	return found;
}

static void
test_kill_connected_server(void **state)
{
	th_loop    *t = *state;
	zkit_events e = { .n = 0 };
	zkit_res    r;
	zkit_proc   proc;
	char       *connect = zkit_connect();
	const char *dir = getenv("EB_ZK_FIXTURE_DIR");
	char        idx[8], root[128], eph[192];
	const char *kill_args[] = { "kill", dir, idx, NULL };
	const char *restart_args[] = { "restart", dir, idx, NULL };
	eb__zk     *zk;
	int64_t     sid;
	int         port, port2, victim;
	uint64_t    t0;

	assert_non_null(dir);
	th_watchdog_ms(t, 120000);
	zkit_unique_root(root, sizeof(root));
	(void) snprintf(eph, sizeof(eph), "%s/eph", root);
	zk = zkit_open(t, connect, 10000, &e);
	sid = eb__zk_session_id(zk);
	assert_int_equal(zkit_ensure(t, zk, root), 0);
	assert_int_equal(zkit_create(t, zk, eph, NULL, EB_ZK_EPHEMERAL, &r), 0);
	port = eb__zk_connected_port(zk);
	victim = server_index(dir, port);
	assert_true(victim >= 1 && victim <= 3);
	(void) snprintf(idx, sizeof(idx), "%d", victim);
	(void) fprintf(stderr,
	    "zk-ensemble: connected to server %d (port %d)\n", victim, port);

	t0 = eb__mono_ms();
	zkit_script_start(t, &proc, kill_args);
	assert_int_equal(zkit_script_wait(t, &proc, 30000), 0);
	assert_int_equal(zkit_wait_events(t, &e, 2, 10000), 0);
	assert_int_equal(e.ev[1], EB_ZK_EV_SUSPENDED);
	/* Another server takes the session over within the timeout. */
	assert_int_equal(zkit_wait_events(t, &e, 3, 10000), 0);
	assert_int_equal(e.ev[2], EB_ZK_EV_RECONNECTED);
	assert_true(e.at_ms[2] - t0 < eb__zk_session_timeout_ms(zk));
	assert_int_equal(eb__zk_session_id(zk), sid);
	port2 = eb__zk_connected_port(zk);
	assert_true(port2 != 0 && port2 != port);
	(void) fprintf(stderr,
	    "MEASURE ensemble-failover: killed=%d suspended_after_ms=%llu "
	    "reconnected_after_ms=%llu new_server=%d\n",
	    victim, (unsigned long long) (e.at_ms[1] - t0),
	    (unsigned long long) (e.at_ms[2] - t0), server_index(dir, port2));
	/* Same session: the ephemeral is still ours, requests work. */
	assert_int_equal(zkit_exists(t, zk, eph, NULL, NULL, &r), 0);
	assert_int_equal(r.stat.ephemeral_owner, sid);
	assert_int_equal(e.n, 3);
	zkit_close(t, zk);

	/* Leave the fixture whole for the next test. */
	zkit_script_start(t, &proc, restart_args);
	assert_int_equal(zkit_script_wait(t, &proc, 90000), 0);
	free(connect);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_kill_connected_server, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
