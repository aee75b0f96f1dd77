/*
 * The election over well-formed members only, and the own member changed
 * from outside (election/election.c with member/registry.c over the
 * in-memory ZooKeeper):
 *   - 1 000 members elect exactly one leader with a bounded number of
 *     requests, and a failover costs a bounded number more (no fixed-size
 *     table, no herd);
 *   - a damaged lowest child (persistent with bad JSON, persistent naming
 *     another node, unreadable, foreign names) never blocks the election
 *     and causes no busy loop (requests stay flat while nothing changes);
 *   - the own member deleted or overwritten: revoked at once, a new member
 *     (the old overwritten one deleted, the address claim kept), a leader
 *     again; every member deleted: a leader again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/election.h>

#include "election/election_owner.h"
#include "member/member.h"
#include "member/registry.h"
#include "tests/harness/elsim.h"
#include "tests/harness/fakezk.h"
#include "tests/harness/th.h"

#define ROOT    "/ebnode/e"
#define MEMBERS ROOT "/members"
#define SESS_MS 2000u

typedef elsim sim;

static fakezk_server *srv;
static sim           *nodes; /* owned array of nsims */
static int            nsims;

static void
sim_open(th_loop *t, int i)
{
	elsim_open(&nodes[i], &t->loop, srv, i, 1, SESS_MS, NULL);
}

static void
sims_alloc(int n)
{
	nodes = calloc((size_t) n, sizeof(*nodes));
	assert_non_null(nodes);
	nsims = n;
}

/* Starts closing a node (its session closes: its ephemerals go). */
static void
sim_close_begin(int i)
{
	elsim_close_begin(&nodes[i]);
}

static void
sim_close(th_loop *t, int i)
{
	sim_close_begin(i);
	assert_int_equal(
	    th_run_until(t, elsim_closed_pred, &nodes[i], 5000), 0);
}

static int
all_closed_pred(void *arg)
{
	int i;

	(void) arg;
	for (i = 0; i < nsims; i++) {
		if (nodes[i].closed != 3 && nodes[i].zk != NULL) {
			return 0;
		}
	}
	return 1;
}

static int
setup(void **state)
{
	th_loop *t;

	assert_int_equal(th_setup(state), 0);
	t = *state;
	srv = fakezk_server_new(&t->loop);
	assert_int_equal(fakezk_put(srv, "/ebnode", NULL, 0), 0);
	assert_int_equal(fakezk_put(srv, ROOT, NULL, 0), 0);
	assert_int_equal(fakezk_put(srv, MEMBERS, NULL, 0), 0);
	nodes = NULL;
	nsims = 0;
	return 0;
}

static int
teardown(void **state)
{
	th_loop *t = *state;
	int      i;

	for (i = 0; i < nsims; i++) {
		sim_close_begin(i);
	}
	assert_int_equal(th_run_until(t, all_closed_pred, NULL, 20000), 0);
	free(nodes);
	fakezk_server_close_run(srv, t);
	return th_teardown(state);
}

static int
leaders(void)
{
	int i;
	int n = 0;

	for (i = 0; i < nsims; i++) {
		n += nodes[i].open && nodes[i].leader ? 1 : 0;
	}
	return n;
}

static int
one_leader_pred(void *arg)
{
	int *who = arg;
	int  i;

	if (leaders() != 1) {
		return 0;
	}
	for (i = 0; i < nsims; i++) {
		if (nodes[i].open && nodes[i].leader) {
			*who = i;
		}
	}
	return 1;
}

static int
registered_pred(void *arg)
{
	return ((sim *) arg)->registered > 0;
}

static unsigned long
total_requests(void)
{
	unsigned long n = 0;
	int           i;

	for (i = 0; i < nsims; i++) {
		if (nodes[i].open) {
			n += fakezk_requests(nodes[i].zk);
		}
	}
	return n;
}

static int
never_pred(void *arg)
{
	(void) arg;
	return 0;
}

/* Runs the loop for ms (a quiet period: nothing should happen). */
static void
run_for(th_loop *t, uint64_t ms)
{
	(void) th_run_until(t, never_pred, NULL, ms);
}

/* Requests a quiet cluster may make in a run_for(300): the leader's
 * heartbeat (every SESS_MS / 4), scaled like the period itself. */
static unsigned long
quiet_bound(void)
{
	return 4ul * (unsigned long) th_timeout_multiplier();
}

/* Opens n nodes one after the other (node i gets the i-th member). */
static void
open_in_order(th_loop *t, int n)
{
	int i;

	sims_alloc(n);
	for (i = 0; i < n; i++) {
		sim_open(t, i);
		assert_int_equal(
		    th_run_until(t, registered_pred, &nodes[i], 2000), 0);
	}
}

static void
test_thousand_members(void **state)
{
	th_loop      *t = *state;
	int           who = -1;
	int           i;
	unsigned long before;
	unsigned long settled;

	/* All at once: registrations and checks interleave. */
	sims_alloc(1000);
	for (i = 0; i < nsims; i++) {
		sim_open(t, i);
	}
	assert_int_equal(th_run_until(t, one_leader_pred, &who, 20000), 0);
	for (i = 0; i < nsims; i++) {
		assert_int_equal(
		    th_run_until(t, registered_pred, &nodes[i], 2000), 0);
	}
	run_for(t, 100);
	assert_int_equal(leaders(), 1);
	settled = total_requests();
	/* Registration is ~5 requests, a check ~3 (list, read and watch
	 * the predecessor); re-checks while others register add some. A
	 * node that read every lower member would cost ~500 000. */
	assert_true(settled < 1000ul * 16);
	before = total_requests();
	run_for(t, 300);
	assert_true(total_requests() - before <= quiet_bound());
	assert_int_equal(leaders(), 1);
	(void) fprintf(stderr,
	    "MEASURE members-1000: requests=%lu leader=n%d\n", settled, who);

	/* Failover: only the successor re-checks (no herd). */
	before = total_requests() - fakezk_requests(nodes[who].zk);
	sim_close(t, who);
	assert_int_equal(th_run_until(t, one_leader_pred, &who, 5000), 0);
	run_for(t, 100);
	(void) fprintf(stderr, "MEASURE members-1000-failover: requests=%lu\n",
	    total_requests() - before);
	assert_true(total_requests() - before < 40);
}

/* A member name with the given sequence and a fixed uuid. */
static void
damaged_path(char *out, size_t cap, int seq)
{
	(void) snprintf(out, cap,
	    MEMBERS "/m-0badc0de-0000-4000-8000-000000000000-%010d", seq);
}

/* Opens 3 nodes above whatever is in members, checks that node 0 leads
 * and that nothing is polled while nothing changes. */
static void
expect_election_despite_damage(th_loop *t)
{
	int           who = -1;
	unsigned long before;

	open_in_order(t, 3);
	assert_int_equal(th_run_until(t, one_leader_pred, &who, 5000), 0);
	assert_int_equal(who, 0);
	run_for(t, 100);
	before = total_requests();
	run_for(t, 300);
	/* A busy loop would be thousands; the leader's heartbeat is
	 * SESS_MS / 4. */
	assert_true(total_requests() - before <= quiet_bound());
	assert_int_equal(leaders(), 1);
}

static void
test_persistent_bad_json_lowest(void **state)
{
	char path[256];

	damaged_path(path, sizeof(path), 0);
	assert_int_equal(fakezk_put(srv, path, "{not json", 0), 0);
	expect_election_despite_damage(*state);
}

static void
test_persistent_valid_json_lowest(void **state)
{
	char path[256];

	damaged_path(path, sizeof(path), 0);
	assert_int_equal(fakezk_put(srv, path,
	                     "{\"node_id\":\"intruder\",\"address\":\"x\","
	                     "\"cluster_port\":1}",
	                     0),
	    0);
	expect_election_despite_damage(*state);
}

static void
test_ephemeral_not_a_record_lowest(void **state)
{
	char path[256];

	/* Ephemeral (some other session) but not a member record. */
	damaged_path(path, sizeof(path), 0);
	assert_int_equal(fakezk_put(srv, path, "[1,2]", 0x7777), 0);
	expect_election_despite_damage(*state);
}

static void
test_unreadable_lowest(void **state)
{
	th_loop *t = *state;
	char     path[256];
	int      who = -1;

	damaged_path(path, sizeof(path), 0);
	assert_int_equal(
	    fakezk_put(srv, path, "{\"node_id\":\"hidden\",\"address\":\"h\"}",
	        0x7777),
	    0);
	assert_int_equal(fakezk_deny_read(srv, path, 1), 0);
	expect_election_despite_damage(t);
	/* Ignored until it changes: when it goes, node 0 re-checks (its
	 * exists watch) and stays the leader. */
	assert_int_equal(fakezk_del(srv, path), 0);
	run_for(t, 100);
	assert_int_equal(th_run_until(t, one_leader_pred, &who, 2000), 0);
	assert_int_equal(who, 0);
	assert_int_equal(nodes[0].revoked, 0);
}

static void
test_foreign_names(void **state)
{
	assert_int_equal(fakezk_put(srv, MEMBERS "/zzz", "x", 0), 0);
	assert_int_equal(
	    fakezk_put(srv, MEMBERS "/m-short-0000000000", "x", 0x7777), 0);
	assert_int_equal(
	    fakezk_put(srv,
	        MEMBERS "/m-0badc0de-0000-4000-8000-000000000000-00000000x1",
	        "x", 0x7777),
	    0);
	expect_election_despite_damage(*state);
}

static int
rereg_pred(void *arg)
{
	sim *s = arg;

	return s->rereg > 0 && s->registered > 1;
}

static void
member_of(int i, char *out, size_t cap)
{
	const char *name = eb__registry_member_name(nodes[i].reg);

	assert_non_null(name);
	(void) snprintf(out, cap, MEMBERS "/%s", name);
}

static void
claim_owner_is(int i)
{
	char        path[128];
	eb__zk_stat st;

	(void) snprintf(path, sizeof(path), ROOT "/addresses/addr-%d", i);
	assert_int_equal(fakezk_get(srv, path, NULL, 0, &st), 0);
	assert_int_equal(st.ephemeral_owner, fakezk_session(nodes[i].zk));
}

static void
test_own_member_deleted(void **state)
{
	th_loop      *t = *state;
	char          path[256];
	char          now[256];
	int           who = -1;
	unsigned long before;

	open_in_order(t, 3);
	assert_int_equal(th_run_until(t, one_leader_pred, &who, 5000), 0);
	assert_int_equal(who, 0);
	member_of(0, path, sizeof(path));
	assert_int_equal(fakezk_del(srv, path), 0);
	assert_int_equal(th_run_until(t, rereg_pred, &nodes[0], 2000), 0);
	assert_int_equal(nodes[0].revoked, 1);
	assert_string_equal(nodes[0].reason, "member-gone");
	assert_true(nodes[0].rereg_state_ok); /* /health: re-registering */
	assert_false(eb__registry_reregistering(nodes[0].reg));
	/* A new member, the claim kept (same session), a new leader. */
	member_of(0, now, sizeof(now));
	assert_string_not_equal(now, path);
	assert_true(fakezk_exists(srv, now));
	claim_owner_is(0);
	assert_int_equal(th_run_until(t, one_leader_pred, &who, 2000), 0);
	assert_int_equal(who, 1); /* node 0 is at the back now */
	before = total_requests();
	run_for(t, 300);
	assert_true(total_requests() - before <= quiet_bound());
	assert_int_equal(leaders(), 1);
}

static void
test_own_member_overwritten(void **state)
{
	th_loop *t = *state;
	char     path[256];
	char     now[256];
	int      who = -1;

	open_in_order(t, 3);
	assert_int_equal(th_run_until(t, one_leader_pred, &who, 5000), 0);
	member_of(0, path, sizeof(path));
	assert_int_equal(fakezk_set(srv, path,
	                     "{\"node_id\":\"n2\",\"address\":\"addr-2\","
	                     "\"cluster_port\":1}"),
	    0);
	assert_int_equal(th_run_until(t, rereg_pred, &nodes[0], 2000), 0);
	assert_int_equal(nodes[0].revoked, 1);
	/* The overwritten member (ours, naming n2) is gone. */
	assert_false(fakezk_exists(srv, path));
	member_of(0, now, sizeof(now));
	assert_string_not_equal(now, path);
	claim_owner_is(0);
	assert_int_equal(th_run_until(t, one_leader_pred, &who, 2000), 0);
	assert_int_equal(who, 1);
}

static int
all_rereg_pred(void *arg)
{
	int i;

	(void) arg;
	for (i = 0; i < nsims; i++) {
		if (!rereg_pred(&nodes[i])) {
			return 0;
		}
	}
	return 1;
}

static void
test_every_member_deleted(void **state)
{
	th_loop *t = *state;
	char     paths[3][256];
	int      who = -1;
	int      i;

	open_in_order(t, 3);
	assert_int_equal(th_run_until(t, one_leader_pred, &who, 5000), 0);
	for (i = 0; i < 3; i++) {
		member_of(i, paths[i], sizeof(paths[i]));
	}
	for (i = 0; i < 3; i++) {
		assert_int_equal(fakezk_del(srv, paths[i]), 0);
	}
	assert_int_equal(th_run_until(t, all_rereg_pred, NULL, 2000), 0);
	assert_int_equal(th_run_until(t, one_leader_pred, &who, 2000), 0);
	assert_int_equal(fakezk_child_count(srv, MEMBERS), 3);
}

int
main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_thousand_members, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_persistent_bad_json_lowest, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_persistent_valid_json_lowest, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_ephemeral_not_a_record_lowest, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_unreadable_lowest, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_foreign_names, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_own_member_deleted, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_own_member_overwritten, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_every_member_deleted, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
