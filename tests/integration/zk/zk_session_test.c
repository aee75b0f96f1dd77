/*
 * it.zk.session: session loss through the TCP fault proxy against the shared
 * `zk` fixture (the server itself is never touched).
 *   - cut for longer than the session timeout: SUSPENDED, then EXPIRED, then
 *     CONNECTED with a new session id once the network heals; the server
 *     really expired the old session (its ephemeral is gone);
 *   - a silent network (pause) for longer than the session timeout: the same
 *     sequence, SUSPENDED only after the client's read timeout;
 *   - a silent network that heals after the server expired the session but
 *     before the local expiry: the server says so on reconnect (EXPIRED from
 *     the library's own expired state), then CONNECTED with a new session;
 *   - a short cut: SUSPENDED then RECONNECTED with the same session, and a
 *     watch armed before the cut still fires.
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

#define SESSION_MS 2000u

struct get_res {
	int done;
	int status;
};

static void
get_cb(eb__zk *zk, int status, const char *data, size_t len,
    const eb__zk_stat *stat, void *arg)
{
	struct get_res *g = arg;

	(void) zk;
	(void) data;
	(void) len;
	(void) stat;
	g->done++;
	g->status = status;
}

/* Heals the partition and checks the new session (events 4: CONNECTED). */
static void
heal_and_check(th_loop *t, th_proxy *px, eb__zk *zk, zkit_events *ev,
    int64_t sid1, const char *eph, int silent)
{
	zkit_res r;
	uint64_t t_exp = ev->at_ms[2];

	/* Heal: a new session. */
	if (silent) {
		th_proxy_cut(px); /* drop the stalled connections */
		th_proxy_resume(px);
	}
	th_proxy_heal(px);
	assert_int_equal(zkit_wait_events(t, ev, 4, 15000), 0);
	assert_int_equal(ev->ev[3], EB_ZK_EV_CONNECTED);
	assert_true(eb__zk_session_id(zk) != 0);
	assert_true(eb__zk_session_id(zk) != sid1);
	assert_int_equal(eb__zk_get_state(zk), EB_ZK_STATE_CONNECTED);
	(void) fprintf(stderr,
	    "MEASURE %s: expired_after_suspended_ms=%llu old=0x%llx "
	    "new=0x%llx\n",
	    silent ? "pause" : "cut",
	    (unsigned long long) (t_exp - ev->at_ms[1]),
	    (unsigned long long) sid1,
	    (unsigned long long) eb__zk_session_id(zk));
	/* The new session works. */
	assert_int_equal(zkit_create(t, zk, eph, NULL, EB_ZK_EPHEMERAL, &r), 0);
	assert_int_equal(zkit_exists(t, zk, eph, NULL, NULL, &r), 0);
	assert_int_equal(r.stat.ephemeral_owner, eb__zk_session_id(zk));
	assert_int_equal(ev->n, 4);
	assert_int_equal(ev->ev[0], EB_ZK_EV_CONNECTED);
}

static void
run_partition_longer_than_session(th_loop *t, int silent)
{
	zkit_events    e = { .n = 0 };
	zkit_events    ew = { .n = 0 };
	zkit_res       r;
	zkit_watch     gone = { 0 };
	th_proxy      *px;
	eb__zk        *zk;
	eb__zk        *witness;
	char           via[64], root[128], eph[192];
	int64_t        sid1;
	uint64_t       t_loss, t_exp;
	struct get_res g = { 0, 0 };

	th_watchdog_ms(t, 60000);
	assert_int_equal(th_proxy_new(&t->loop, 0, "127.0.0.1",
	                     zkit_port_of(zkit_connect_str), &px),
	    0);
	(void) snprintf(via, sizeof(via), "127.0.0.1:%d", th_proxy_port(px));
	zkit_unique_root(root, sizeof(root));
	(void) snprintf(eph, sizeof(eph), "%s/eph", root);

	zk = zkit_open(t, via, SESSION_MS, &e);
	sid1 = eb__zk_session_id(zk);
	assert_int_equal(zkit_ensure(t, zk, root), 0);
	assert_int_equal(zkit_create(t, zk, eph, NULL, EB_ZK_EPHEMERAL, &r), 0);
	/* A direct client watches the ephemeral: the server's view. */
	witness = zkit_open(t, zkit_connect_str, 10000, &ew);
	assert_int_equal(
	    zkit_exists(t, witness, eph, zkit_on_watch, &gone, &r), 0);
	assert_int_equal(r.stat.ephemeral_owner, sid1);

	t_loss = eb__mono_ms();
	if (silent) {
		th_proxy_pause(px);
	} else {
		th_proxy_cut(px);
	}
	/* SUSPENDED: at once for a cut, after the read timeout (2/3 of the
	 * session timeout) for a silent network. */
	assert_int_equal(zkit_wait_events(t, &e, 2, 10000), 0);
	assert_int_equal(e.ev[1], EB_ZK_EV_SUSPENDED);
	assert_int_equal(eb__zk_get_state(zk), EB_ZK_STATE_SUSPENDED);
	(void) fprintf(stderr, "MEASURE %s: suspended_after_ms=%llu\n",
	    silent ? "pause" : "cut",
	    (unsigned long long) (e.at_ms[1] - t_loss));
	/* A request while suspended completes once, with a failure. */
	assert_int_equal(eb__zk_get(zk, eph, NULL, NULL, get_cb, &g), 0);

	/* EXPIRED: decided locally one session timeout after SUSPENDED,
	 * while the partition lasts. */
	assert_int_equal(zkit_wait_events(t, &e, 3, 10000), 0);
	assert_int_equal(e.ev[2], EB_ZK_EV_EXPIRED);
	t_exp = e.at_ms[2];
	assert_true(t_exp - e.at_ms[1] >= SESSION_MS - 100);
	assert_int_equal(eb__zk_get_state(zk), EB_ZK_STATE_CONNECTING);
	assert_int_equal(eb__zk_last_ok_send_ms(zk), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &g.done, 5000), 0);
	assert_int_equal(g.done, 1);
	assert_true(g.status == EB_EZKLOSS || g.status == EB_EZKEXPIRED ||
	            g.status == EB_EZKOPTIMEOUT);
	/* The server expired it too: the ephemeral is gone. */
	assert_int_equal(th_run_until(t, th_flag_set, &gone.fired, 10000), 0);
	assert_int_equal(gone.type, EB_ZK_WATCH_DELETED);

	heal_and_check(t, px, zk, &e, sid1, eph, silent);
	zkit_close(t, zk);
	zkit_close(t, witness);
	th_proxy_close(px, NULL, NULL);
	assert_int_equal(th_loop_run(t), 0);
}

static void
test_cut_longer_than_session(void **state)
{
	run_partition_longer_than_session(*state, 0);
}

static void
test_silent_longer_than_session(void **state)
{
	run_partition_longer_than_session(*state, 1);
}

static void
test_short_cut_resumes_session(void **state)
{
	th_loop    *t = *state;
	zkit_events e = { .n = 0 };
	zkit_res    r;
	zkit_watch  w = { 0 };
	th_proxy   *px;
	eb__zk     *zk;
	char        via[64], root[128], node[192];
	int64_t     sid;
	uint64_t    gen;

	th_watchdog_ms(t, 60000);
	assert_int_equal(th_proxy_new(&t->loop, 0, "127.0.0.1",
	                     zkit_port_of(zkit_connect_str), &px),
	    0);
	(void) snprintf(via, sizeof(via), "127.0.0.1:%d", th_proxy_port(px));
	zkit_unique_root(root, sizeof(root));
	(void) snprintf(node, sizeof(node), "%s/w", root);
	zk = zkit_open(t, via, 8000, &e);
	sid = eb__zk_session_id(zk);
	assert_int_equal(zkit_ensure(t, zk, root), 0);
	assert_int_equal(
	    zkit_exists(t, zk, node, zkit_on_watch, &w, &r), EB_EZKNONODE);

	gen = eb__zk_poll_generation(zk);
	assert_true(gen >= 1);
	th_proxy_cut(px);
	assert_int_equal(zkit_wait_events(t, &e, 2, 5000), 0);
	assert_int_equal(e.ev[1], EB_ZK_EV_SUSPENDED);
	th_proxy_heal(px);
	assert_int_equal(zkit_wait_events(t, &e, 3, 8000), 0);
	assert_int_equal(e.ev[2], EB_ZK_EV_RECONNECTED);
	/* A new socket got a new uv_poll; session events never reached the
	 * per-path watch. */
	assert_true(eb__zk_poll_generation(zk) > gen);
	assert_int_equal(w.fired, 0);
	assert_int_equal(eb__zk_session_id(zk), sid);
	assert_int_equal(eb__zk_get_state(zk), EB_ZK_STATE_CONNECTED);
	/* The watch armed before the cut survived the reconnect. */
	assert_int_equal(zkit_create(t, zk, node, NULL, 0, &r), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &w.fired, 5000), 0);
	assert_int_equal(w.type, EB_ZK_WATCH_CREATED);
	assert_int_equal(e.n, 3);
	zkit_close(t, zk);
	th_proxy_close(px, NULL, NULL);
	assert_int_equal(th_loop_run(t), 0);
}

static void
test_server_side_expiry(void **state)
{
	th_loop    *t = *state;
	zkit_events e = { .n = 0 };
	zkit_events ew = { .n = 0 };
	zkit_res    r;
	zkit_watch  gone = { 0 };
	th_proxy   *px;
	eb__zk     *zk;
	eb__zk     *witness;
	char        via[64], root[128], eph[192];
	int64_t     sid1;
	uint32_t    timeout;

	th_watchdog_ms(t, 60000);
	assert_int_equal(th_proxy_new(&t->loop, 0, "127.0.0.1",
	                     zkit_port_of(zkit_connect_str), &px),
	    0);
	(void) snprintf(via, sizeof(via), "127.0.0.1:%d", th_proxy_port(px));
	zkit_unique_root(root, sizeof(root));
	(void) snprintf(eph, sizeof(eph), "%s/eph", root);
	zk = zkit_open(t, via, 4000, &e);
	timeout = eb__zk_session_timeout_ms(zk);
	sid1 = eb__zk_session_id(zk);
	assert_int_equal(zkit_ensure(t, zk, root), 0);
	assert_int_equal(zkit_create(t, zk, eph, NULL, EB_ZK_EPHEMERAL, &r), 0);
	witness = zkit_open(t, zkit_connect_str, 10000, &ew);
	assert_int_equal(
	    zkit_exists(t, witness, eph, zkit_on_watch, &gone, &r), 0);

	th_proxy_pause(px);
	assert_int_equal(zkit_wait_events(t, &e, 2, 10000), 0);
	assert_int_equal(e.ev[1], EB_ZK_EV_SUSPENDED);
	/* The server expires it (the witness sees the ephemeral go) ... */
	assert_int_equal(th_run_until(t, th_flag_set, &gone.fired, 10000), 0);
	assert_int_equal(e.n, 2);
	/* ... and the network heals before our local expiry would. */
	th_proxy_resume(px);
	assert_int_equal(zkit_wait_events(t, &e, 3, 10000), 0);
	assert_int_equal(e.ev[2], EB_ZK_EV_EXPIRED);
	assert_true(e.at_ms[2] - e.at_ms[1] < timeout);
	assert_int_equal(zkit_wait_events(t, &e, 4, 10000), 0);
	assert_int_equal(e.ev[3], EB_ZK_EV_CONNECTED);
	assert_true(eb__zk_session_id(zk) != sid1);
	(void) fprintf(stderr,
	    "MEASURE server-expiry: expired_after_suspended_ms=%llu\n",
	    (unsigned long long) (e.at_ms[2] - e.at_ms[1]));
	zkit_close(t, zk);
	zkit_close(t, witness);
	th_proxy_close(px, NULL, NULL);
	assert_int_equal(th_loop_run(t), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_short_cut_resumes_session, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_cut_longer_than_session, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_silent_longer_than_session, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_server_side_expiry, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(
	    tests, zkit_group_setup, zkit_group_teardown);
}
