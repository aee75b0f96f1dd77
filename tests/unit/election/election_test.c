/*
 * The election state machine (election/election.c) over membership and the
 * in-memory ZooKeeper: lowest sequence wins, predecessor watch only (no
 * herd), synchronous revoke on suspend, lease expiry, step-down, expiry and
 * re-registration, ambiguous create adoption, ineligible members, the
 * <root>/leader record and standalone mode.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <ebnode/election.h>

#include "common/util.h"
#include "election/election_owner.h"
#include "member/registry.h"
#include "tests/harness/elsim.h"
#include "tests/harness/fakezk.h"
#include "tests/harness/th.h"

#define ROOT    "/ebnode/e"
#define MEMBERS ROOT "/members"
#define NMAX    6

typedef elsim sim;

static fakezk_server   *srv;
static sim              nodes[NMAX];
static eb_election_opts sim_opts; /* lease options for sim_open */

typedef struct reader {
	eb__zk    *zk;
	uv_timer_t timer;
	unsigned   ok;
	int        inflight;
	int        init;
} reader;

/* File scope: a failed assertion must not leave a live handle on a dead
 * stack frame; teardown closes it. */
static reader rd;

static void
sim_open(th_loop *t, int i, int eligible, uint32_t timeout_ms)
{
	elsim_open(
	    &nodes[i], &t->loop, srv, i, eligible, timeout_ms, &sim_opts);
}

/* Opens nodes one by one, so that node i gets the i-th sequence. */
static void
open_in_order(th_loop *t, int n, uint32_t timeout_ms)
{
	int i;

	for (i = 0; i < n; i++) {
		sim_open(t, i, 1, timeout_ms);
		assert_int_equal(
		    th_run_until(t, elsim_registered_pred, &nodes[i], 2000), 0);
	}
}

/* Closes a node: its session closes gracefully (ephemerals deleted). */
static void
sim_close(th_loop *t, int i)
{
	sim *s = &nodes[i];

	if (!s->open) {
		return;
	}
	elsim_close_begin(s);
	assert_int_equal(th_run_until(t, elsim_closed_pred, s, 2000), 0);
}

static int
setup(void **state)
{
	th_loop *t;

	assert_int_equal(th_setup(state), 0);
	t = *state;
	srv = fakezk_server_new(&t->loop);
	memset(nodes, 0, sizeof(nodes));
	eb_election_opts_init(&sim_opts);
	return 0;
}

static int
teardown(void **state)
{
	th_loop *t = *state;
	int      i;

	if (rd.init) {
		rd.init = 0;
		(void) uv_timer_stop(&rd.timer);
		uv_close((uv_handle_t *) &rd.timer, NULL);
	}
	for (i = 0; i < NMAX; i++) {
		sim_close(t, i);
	}
	fakezk_server_close_run(srv, t);
	return th_teardown(state);
}

static int
leaders(void)
{
	int i;
	int n = 0;

	for (i = 0; i < NMAX; i++) {
		n += nodes[i].open && nodes[i].leader ? 1 : 0;
	}
	return n;
}

static int
leader_pred(void *arg)
{
	return ((sim *) arg)->leader;
}

static void
test_lowest_sequence_wins(void **state)
{
	th_loop *t = *state;
	char     buf[256];
	json_t  *o;
	int      i;

	open_in_order(t, 3, 2000);
	assert_int_equal(th_run_until(t, leader_pred, &nodes[0], 2000), 0);
	/* Let everything settle, then exactly one leader: the lowest. */
	(void) th_run_until(t, th_flag_set, &nodes[5].open, 100);
	assert_int_equal(leaders(), 1);
	assert_true(eb_election_is_leader(nodes[0].el));
	for (i = 1; i < 3; i++) {
		assert_false(eb_election_is_leader(nodes[i].el));
		assert_int_equal(nodes[i].elected, 0);
	}
	/* Epoch = czxid of the leader's member znode (rule 6). */
	assert_int_equal(
	    nodes[0].epoch, eb__registry_member_czxid(nodes[0].reg));
	assert_int_equal(eb_election_epoch(nodes[0].el), nodes[0].epoch);
	/* The leader record. */
	assert_int_equal(
	    fakezk_get(srv, ROOT "/leader", buf, sizeof(buf), NULL), 0);
	o = json_loads(buf, 0, NULL);
	assert_string_equal(
	    json_string_value(json_object_get(o, "node_id")), "n0");
	assert_string_equal(
	    json_string_value(json_object_get(o, "address")), "addr-0");
	assert_int_equal(
	    json_integer_value(json_object_get(o, "epoch")), nodes[0].epoch);
	json_decref(o);
}

static void
test_predecessor_watch_only(void **state)
{
	th_loop *t = *state;
	unsigned checks[NMAX];
	unsigned watches[NMAX];
	int64_t  epoch;
	int      i;

	open_in_order(t, 5, 2000);
	assert_int_equal(th_run_until(t, leader_pred, &nodes[0], 2000), 0);
	(void) th_run_until(t, th_flag_set, &nodes[5].open, 100);
	for (i = 2; i < 5; i++) {
		checks[i] = eb_election_checks(nodes[i].el);
		watches[i] = fakezk_watch_events(nodes[i].zk);
	}
	epoch = nodes[0].epoch;
	sim_close(t, 0); /* the leader goes */
	assert_int_equal(th_run_until(t, leader_pred, &nodes[1], 2000), 0);
	(void) th_run_until(t, th_flag_set, &nodes[5].open, 100);
	assert_int_equal(leaders(), 1);
	assert_true(nodes[1].epoch > epoch);
	/* Nobody but the successor woke up or ran a check. */
	for (i = 2; i < 5; i++) {
		assert_int_equal(eb_election_checks(nodes[i].el), checks[i]);
		assert_int_equal(fakezk_watch_events(nodes[i].zk), watches[i]);
	}
}

static void
test_revoke_on_suspend(void **state)
{
	th_loop *t = *state;
	int64_t  epoch;

	open_in_order(t, 2, 2000);
	assert_int_equal(th_run_until(t, leader_pred, &nodes[0], 2000), 0);
	epoch = nodes[0].epoch;
	fakezk_disconnect(nodes[0].zk);
	/* Synchronous: revoked before the loop ran again (rule 5). */
	assert_int_equal(nodes[0].revoked, 1);
	assert_string_equal(nodes[0].reason, "zk-suspended");
	assert_false(eb_election_is_leader(nodes[0].el));
	/* Same session back: the same node leads again, same epoch. */
	fakezk_reconnect(nodes[0].zk);
	assert_int_equal(th_run_until(t, leader_pred, &nodes[0], 2000), 0);
	assert_int_equal(nodes[0].epoch, epoch);
	assert_int_equal(nodes[1].elected, 0);
}

static int
revoked_pred(void *arg)
{
	return ((sim *) arg)->revoked > 0;
}

static void
test_lease_expiry(void **state)
{
	th_loop *t = *state;
	uint64_t t0;
	uint64_t m = th_timeout_multiplier();

	/* 400 ms session: lease 200 ms, heartbeat 100 ms; scaled like the
	 * test's waits, so that a loaded sanitizer run does not stall a
	 * heartbeat past the lease (it flaked once at load 5). */
	open_in_order(t, 2, (uint32_t) (400 * m));
	assert_int_equal(th_run_until(t, leader_pred, &nodes[0], 2000), 0);
	/* Heartbeats keep the lease valid well past its length. */
	(void) th_run_until(t, th_flag_set, &nodes[5].open, 450);
	assert_true(eb_election_is_leader(nodes[0].el));
	assert_int_equal(nodes[0].revoked, 0);
	/* The server stops answering (no disconnect event). */
	t0 = uv_now(&t->loop);
	fakezk_stall(nodes[0].zk, 1);
	assert_int_equal(th_run_until(t, revoked_pred, &nodes[0], 2000), 0);
	assert_string_equal(nodes[0].reason, "lease-expired");
	assert_true(uv_now(&t->loop) - t0 <= 250 * m);
	assert_false(eb_election_is_leader(nodes[0].el));
	fakezk_stall(nodes[0].zk, 0);
	assert_int_equal(th_run_until(t, leader_pred, &nodes[0], 2000), 0);
	assert_int_equal(nodes[0].elected, 2);
}

/* ---- the quorum-confirmed lease (issue 10 item 1) ---- */

static void
reader_exists_cb(eb__zk *zk, int status, const eb__zk_stat *st, void *arg)
{
	reader *r = arg;

	(void) zk;
	(void) st;
	r->inflight = 0;
	r->ok += status == 0 ? 1u : 0u;
}

/* Reads on the leader's session every 20 ms: what a partitioned follower
 * keeps answering (the old lease counted any of them). */
static void
reader_cb(uv_timer_t *t)
{
	reader *r = t->data;

	if (!r->inflight && eb__zk_exists(r->zk, ROOT "/members", NULL, NULL,
	                        reader_exists_cb, r) == 0) {
		r->inflight = 1;
	}
}

static int
reader_idle_pred(void *arg)
{
	return !((reader *) arg)->inflight;
}

static void
test_reads_do_not_renew_lease(void **state)
{
	th_loop *t = *state;
	uint64_t m = th_timeout_multiplier();
	uint32_t session = (uint32_t) (1000 * m);
	uint32_t lease;
	uint64_t t0;
	reader  *r = &rd;

	/* Unknown tick: lease = 1000 - 250 - 250 - 50 = 450 ms (x m). */
	open_in_order(t, 2, session);
	assert_int_equal(th_run_until(t, leader_pred, &nodes[0], 2000), 0);
	lease = eb__election_lease_ms(nodes[0].el);
	assert_int_equal(lease, session - session / 4 - session / 4 -
	                            (session / 20 > 50 ? session / 20 : 50));
	/* The follower holding our session loses the quorum: writes stall,
	 * reads are still answered. */
	memset(r, 0, sizeof(*r));
	r->zk = nodes[0].zk;
	assert_int_equal(uv_timer_init(&t->loop, &r->timer), 0);
	r->init = 1;
	r->timer.data = r;
	assert_int_equal(uv_timer_start(&r->timer, reader_cb, 0, 20), 0);
	t0 = eb__mono_ms();
	fakezk_stall_writes(nodes[0].zk, 1);
	assert_int_equal(th_run_until(t, revoked_pred, &nodes[0], 3000), 0);
	assert_string_equal(nodes[0].reason, "lease-expired");
	/* Within the lease from the last renewal, which was sent <= t0. */
	assert_true(eb__mono_ms() - t0 <= lease + 250 * m);
	assert_false(eb_election_is_leader(nodes[0].el));
	/* Reads did succeed meanwhile, after the last renewal. */
	assert_true(r->ok > 0);
	assert_true(eb__zk_last_ok_send_ms(nodes[0].zk) > t0);
	assert_int_equal(nodes[1].elected, 0);
	(void) uv_timer_stop(&r->timer);
	/* The quorum is back: the held renewal commits, we lead again. */
	fakezk_stall_writes(nodes[0].zk, 0);
	assert_int_equal(th_run_until(t, leader_pred, &nodes[0], 3000), 0);
	assert_true(eb_election_is_leader(nodes[0].el));
	assert_int_equal(nodes[0].elected, 2);
	assert_int_equal(th_run_until(t, reader_idle_pred, r, 2000), 0);
}

static void
test_lease_from_negotiated_timeout(void **state)
{
	th_loop *t = *state;
	uint64_t m = th_timeout_multiplier();
	uint64_t t0;
	uint64_t took;

	/* Requested 300 ms, the server negotiates 2000: lease and
	 * heartbeat follow the negotiated value and the configured tick:
	 * 2000 - 500/2 - 500 - 100 = 1150, heartbeat 2000/4 = 500. */
	fakezk_server_set_timeout_bounds(srv, 2000, 2000);
	sim_opts.zk_tick_ms = 500;
	sim_open(t, 0, 1, 300);
	assert_int_equal(th_run_until(t, leader_pred, &nodes[0], 2000), 0);
	assert_int_equal(eb__zk_session_timeout_ms(nodes[0].zk), 2000);
	assert_int_equal(eb__election_lease_ms(nodes[0].el), 1150);
	assert_int_equal(eb__election_heartbeat_ms(nodes[0].el), 500);
	/* Stall at once: the lease's base is the send time of the multi
	 * that recorded <root>/leader, just before; the revoke comes 1150
	 * ms after it, not 150 ms (300 / 2, the old lease). */
	fakezk_stall(nodes[0].zk, 1);
	t0 = eb__mono_ms();
	assert_int_equal(th_run_until(t, revoked_pred, &nodes[0], 3000), 0);
	took = eb__mono_ms() - t0;
	assert_string_equal(nodes[0].reason, "lease-expired");
	assert_true(took >= 1150 - 100 * m);
	/* Upper bound: timer lateness on a loaded machine only (is_leader
	 * checks the clock itself, so a late timer never extends leading). */
	assert_true(took <= 1150 + 250 * m);
	fakezk_stall(nodes[0].zk, 0);
}

static void
test_lease_unsafe_refused(void **state)
{
	th_loop *t = *state;

	/* Negotiated 200 ms: 200 - 50 - 50 - 50 = 50 ms, below the 100 ms
	 * minimum: the node never leads (alone, it would at once). */
	fakezk_server_set_timeout_bounds(srv, 200, 200);
	sim_open(t, 0, 1, 2000);
	assert_int_equal(
	    th_run_until(t, elsim_registered_pred, &nodes[0], 2000), 0);
	assert_int_equal(eb__election_lease_error(nodes[0].el), EB_ECONF);
	assert_int_equal(th_run_until(t, leader_pred, &nodes[0], 300), -1);
	assert_int_equal(nodes[0].elected, 0);
	assert_int_equal(eb_election_checks(nodes[0].el), 0);
	sim_close(t, 0);
	/* An operator lease above the bound (2000, tick 500: 1150). */
	fakezk_server_set_timeout_bounds(srv, 2000, 2000);
	sim_opts.zk_tick_ms = 500;
	sim_opts.lease_ms = 1200;
	sim_open(t, 1, 1, 2000);
	assert_int_equal(
	    th_run_until(t, elsim_registered_pred, &nodes[1], 2000), 0);
	assert_int_equal(eb__election_lease_error(nodes[1].el), EB_ECONF);
	assert_int_equal(th_run_until(t, leader_pred, &nodes[1], 300), -1);
	sim_close(t, 1);
	/* At the bound it leads. */
	sim_opts.lease_ms = 1150;
	sim_open(t, 2, 1, 2000);
	assert_int_equal(th_run_until(t, leader_pred, &nodes[2], 2000), 0);
	assert_int_equal(eb__election_lease_error(nodes[2].el), 0);
	assert_int_equal(eb__election_lease_ms(nodes[2].el), 1150);
}

static void
test_overwritten_member_revokes(void **state)
{
	th_loop *t = *state;
	uint64_t m = th_timeout_multiplier();
	uint64_t t0;

	open_in_order(t, 2, (uint32_t) (1000 * m));
	assert_int_equal(th_run_until(t, leader_pred, &nodes[0], 2000), 0);
	/* Someone else overwrites our member (version 0 -> 1); the owner
	 * and the node still exist, so an exists would not notice. */
	t0 = eb__mono_ms();
	assert_int_equal(fakezk_set(srv, eb__registry_member_path(nodes[0].reg),
	                     "{\"node_id\":\"other\"}"),
	    0);
	assert_int_equal(th_run_until(t, revoked_pred, &nodes[0], 3000), 0);
	assert_string_equal(nodes[0].reason, "member-gone");
	/* At the next heartbeat (every 250 ms x m). */
	assert_true(eb__mono_ms() - t0 <= 250 * m + 50 * m);
}

static void
test_step_down(void **state)
{
	th_loop *t = *state;
	int64_t  seq;

	open_in_order(t, 3, 2000);
	assert_int_equal(th_run_until(t, leader_pred, &nodes[0], 2000), 0);
	assert_int_equal(eb_election_step_down(nodes[1].el), EB_ENOTLEADER);
	seq = eb__registry_member_seq(nodes[0].reg);
	assert_int_equal(eb_election_step_down(nodes[0].el), 0);
	assert_int_equal(nodes[0].revoked, 1);
	assert_string_equal(nodes[0].reason, "step-down");
	assert_int_equal(th_run_until(t, leader_pred, &nodes[1], 2000), 0);
	assert_true(nodes[1].epoch > nodes[0].epoch);
	(void) th_run_until(t, th_flag_set, &nodes[5].open, 100);
	/* The old leader is at the back now. */
	assert_true(eb__registry_member_seq(nodes[0].reg) >
	            eb__registry_member_seq(nodes[2].reg));
	assert_true(eb__registry_member_seq(nodes[0].reg) > seq);
	assert_int_equal(leaders(), 1);
	assert_int_equal(fakezk_child_count(srv, MEMBERS), 3);
}

static int
registered2_pred(void *arg)
{
	return ((sim *) arg)->registered >= 2;
}

static void
test_expiry_reregisters_as_follower(void **state)
{
	th_loop *t = *state;

	open_in_order(t, 2, 2000);
	assert_int_equal(th_run_until(t, leader_pred, &nodes[0], 2000), 0);
	fakezk_disconnect(nodes[0].zk);
	assert_string_equal(nodes[0].reason, "zk-suspended");
	fakezk_server_expire_session(srv, fakezk_session(nodes[0].zk));
	assert_int_equal(th_run_until(t, leader_pred, &nodes[1], 2000), 0);
	fakezk_reconnect(nodes[0].zk);
	assert_int_equal(
	    th_run_until(t, elsim_registered_pred, &nodes[0], 2000), 0);
	assert_int_equal(th_run_until(t, registered2_pred, &nodes[0], 2000), 0);
	(void) th_run_until(t, th_flag_set, &nodes[5].open, 100);
	assert_int_equal(nodes[0].elected, 1);
	assert_int_equal(leaders(), 1);
	assert_true(nodes[1].leader);
	assert_true(eb__registry_member_seq(nodes[0].reg) >
	            eb__registry_member_seq(nodes[1].reg));
}

static void
test_ambiguous_create_adopted(void **state)
{
	th_loop *t = *state;

	sim_open(t, 0, 1, 2000);
	fakezk_lose_next_multi(nodes[0].zk);
	assert_int_equal(th_run_until(t, leader_pred, &nodes[0], 100), -1);
	fakezk_reconnect(nodes[0].zk);
	assert_int_equal(th_run_until(t, leader_pred, &nodes[0], 2000), 0);
	assert_int_equal(fakezk_child_count(srv, MEMBERS), 1);
	assert_int_equal(
	    nodes[0].epoch, eb__registry_member_czxid(nodes[0].reg));
}

static void
test_not_eligible(void **state)
{
	th_loop *t = *state;
	int64_t  epoch;

	sim_open(t, 0, 0, 2000); /* lowest sequence, not eligible */
	assert_int_equal(
	    th_run_until(t, elsim_registered_pred, &nodes[0], 2000), 0);
	sim_open(t, 1, 1, 2000);
	assert_int_equal(
	    th_run_until(t, elsim_registered_pred, &nodes[1], 2000), 0);
	sim_open(t, 2, 1, 2000);
	assert_int_equal(
	    th_run_until(t, elsim_registered_pred, &nodes[2], 2000), 0);
	assert_int_equal(th_run_until(t, leader_pred, &nodes[1], 2000), 0);
	(void) th_run_until(t, th_flag_set, &nodes[5].open, 100);
	assert_int_equal(nodes[0].elected, 0);
	assert_int_equal(eb_election_checks(nodes[0].el), 0);
	epoch = nodes[1].epoch;
	sim_close(t, 1);
	assert_int_equal(th_run_until(t, leader_pred, &nodes[2], 2000), 0);
	assert_true(nodes[2].epoch > epoch);
	(void) th_run_until(t, th_flag_set, &nodes[5].open, 100);
	assert_int_equal(nodes[0].elected, 0);
	assert_int_equal(leaders(), 1);
}

static void
test_standalone(void **state)
{
	th_loop     *t = *state;
	sim          s;
	eb_election *e;

	memset(&s, 0, sizeof(s));
	assert_int_equal(eb__election_new(&t->loop, NULL, NULL, NULL,
	                     elsim_elected_cb, elsim_revoked_cb, &s, &e),
	    0);
	assert_int_equal(eb__election_start(e), 0);
	assert_int_equal(s.elected, 0); /* never from inside start */
	assert_int_equal(th_run_until(t, leader_pred, &s, 2000), 0);
	assert_int_equal(s.epoch, 1);
	assert_true(eb_election_is_leader(e));
	eb_election_stop(e);
	assert_int_equal(s.revoked, 1);
	assert_string_equal(s.reason, "shutdown");
	eb_election_close(e, elsim_el_closed_cb, &s);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(s.closed, 1);
}

int
main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_lowest_sequence_wins, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_predecessor_watch_only, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_revoke_on_suspend, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_lease_expiry, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_reads_do_not_renew_lease, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_lease_from_negotiated_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_lease_unsafe_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_overwritten_member_revokes, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_step_down, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_expiry_reregisters_as_follower, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_ambiguous_create_adopted, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_not_eligible, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_standalone, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
