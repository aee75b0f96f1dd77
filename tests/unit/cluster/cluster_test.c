/*
 * The cluster object (cluster/cluster.c) without ZooKeeper: option checks,
 * the standalone lifecycle (own leader with epoch 1, leadership and fail
 * observers, stop, close) and close at every stage. The clustered paths
 * run against a real ZooKeeper in it.cluster.* and it.cluster.embed_example.
 */
#include <string.h>

#include <ebnode/cluster.h>

#include "tests/harness/th.h"

typedef struct obs {
	int     started;
	int     start_status;
	int     stopped;
	int     closed;
	int     leadership;
	int     leader;
	int64_t epoch;
	int     members;
} obs;

static void
start_cb(eb_cluster *c, int status, void *arg)
{
	obs *o = arg;

	(void) c;
	o->started++;
	o->start_status = status;
}

static void
stop_cb(eb_cluster *c, void *arg)
{
	(void) c;
	((obs *) arg)->stopped++;
}

static void
close_cb(eb_cluster *c, void *arg)
{
	(void) c;
	((obs *) arg)->closed++;
}

static void
leadership_cb(eb_cluster *c, const eb_cluster_leadership *l, void *arg)
{
	obs *o = arg;

	(void) c;
	o->leadership++;
	o->leader = l->leader;
	o->epoch = l->epoch;
}

static void
members_cb(eb_cluster *c, const eb_cluster_member *m, size_t n, void *arg)
{
	(void) c;
	(void) m;
	(void) n;
	((obs *) arg)->members++;
}

static void
opts(eb_cluster_opts *o)
{
	eb_cluster_opts_init(o);
	o->node_id = "n1";
	o->address = "127.0.0.1:1";
}

static void
test_bad_opts(void **state)
{
	th_loop        *t = *state;
	eb_cluster_opts o;
	eb_cluster     *c = NULL;
	eb_errbuf       e;

	eb_cluster_opts_init(&o);
	assert_int_equal(o.session_timeout_ms, 10000);
	assert_int_equal(o.election.eligible, 1);
	assert_int_equal(eb_cluster_new(&t->loop, &o, &c, &e), UV_EINVAL);
	assert_null(c);
	opts(&o);
	o.connect = "127.0.0.1:2181";
	o.root = "relative";
	assert_int_equal(eb_cluster_new(&t->loop, &o, &c, &e), UV_EINVAL);
	assert_null(c);
}

static void
test_standalone_lifecycle(void **state)
{
	th_loop                 *t = *state;
	eb_cluster_opts          o;
	eb_cluster              *c;
	eb_cluster_leadership    l;
	eb_cluster_stats         st;
	const eb_cluster_member *ms;
	size_t                   n;
	const char              *reason;
	obs                      ob;

	memset(&ob, 0, sizeof(ob));
	opts(&o);
	assert_int_equal(eb_cluster_new(&t->loop, &o, &c, NULL), 0);
	eb_cluster_on_leadership(c, leadership_cb, &ob);
	eb_cluster_on_members(c, members_cb, &ob);
	assert_int_equal(eb_cluster_health(c, &reason), 0);
	assert_string_equal(reason, "starting");
	assert_int_equal(eb_cluster_start(c, start_cb, &ob), 0);
	assert_int_equal(ob.started, 0); /* later turn */
	assert_int_equal(th_run_until(t, th_flag_set, &ob.leader, 2000), 0);
	assert_int_equal(ob.started, 1);
	assert_int_equal(ob.start_status, 0);
	assert_int_equal(ob.epoch, 1);
	assert_true(eb_cluster_is_leader(c));
	assert_int_equal(eb_cluster_epoch(c), 1);
	eb_cluster_leadership_get(c, &l);
	assert_true(l.leader && l.known);
	assert_string_equal(l.leader_node_id, "n1");
	ms = eb_cluster_members(c, &n);
	assert_int_equal(n, 1);
	assert_true(ms[0].self);
	assert_string_equal(ms[0].node_id, "n1");
	assert_int_equal(eb_cluster_health(c, &reason), 1);
	assert_string_equal(reason, "standalone");
	eb_cluster_stats_get(c, &st);
	assert_string_equal(st.zk_state, "standalone");
	assert_int_equal(st.members, 1);
	assert_int_equal(st.leads, 1);

	/* Stop: the revoke reaches the observers synchronously. */
	eb_cluster_stop(c, stop_cb, &ob);
	assert_int_equal(ob.leader, 0);
	assert_false(eb_cluster_is_leader(c));
	assert_int_equal(eb_cluster_step_down(c), EB_ECLOSED);
	assert_int_equal(th_run_until(t, th_flag_set, &ob.stopped, 2000), 0);
	eb_cluster_close(c, close_cb, &ob);
	assert_int_equal(ob.closed, 0);
	assert_int_equal(th_run_until(t, th_flag_set, &ob.closed, 2000), 0);
	assert_int_equal(ob.members, 0); /* standalone: no member events */
}

static void
test_close_at_every_stage(void **state)
{
	th_loop        *t = *state;
	eb_cluster_opts o;
	eb_cluster     *c;
	obs             ob;

	/* Never started. */
	memset(&ob, 0, sizeof(ob));
	opts(&o);
	assert_int_equal(eb_cluster_new(&t->loop, &o, &c, NULL), 0);
	eb_cluster_close(c, close_cb, &ob);
	assert_int_equal(th_run_until(t, th_flag_set, &ob.closed, 2000), 0);

	/* Closed while the start is pending: no start callback. */
	memset(&ob, 0, sizeof(ob));
	assert_int_equal(eb_cluster_new(&t->loop, &o, &c, NULL), 0);
	eb_cluster_on_leadership(c, leadership_cb, &ob);
	assert_int_equal(eb_cluster_start(c, start_cb, &ob), 0);
	eb_cluster_close(c, close_cb, &ob);
	assert_int_equal(th_run_until(t, th_flag_set, &ob.closed, 2000), 0);
	assert_int_equal(ob.started, 0);
	assert_int_equal(ob.leadership, 0);

	/* Stopped while the start is pending: EB_ECANCELED, then stopped. */
	memset(&ob, 0, sizeof(ob));
	assert_int_equal(eb_cluster_new(&t->loop, &o, &c, NULL), 0);
	assert_int_equal(eb_cluster_start(c, start_cb, &ob), 0);
	eb_cluster_stop(c, stop_cb, &ob);
	assert_int_equal(th_run_until(t, th_flag_set, &ob.stopped, 2000), 0);
	assert_int_equal(ob.started, 1);
	assert_int_equal(ob.start_status, EB_ECANCELED);
	eb_cluster_close(c, close_cb, &ob);
	assert_int_equal(th_run_until(t, th_flag_set, &ob.closed, 2000), 0);

	/* Running, closed without a stop: no callback but the close's. */
	memset(&ob, 0, sizeof(ob));
	assert_int_equal(eb_cluster_new(&t->loop, &o, &c, NULL), 0);
	eb_cluster_on_leadership(c, leadership_cb, &ob);
	assert_int_equal(eb_cluster_start(c, start_cb, &ob), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &ob.leader, 2000), 0);
	ob.leadership = 0;
	eb_cluster_close(c, close_cb, &ob);
	assert_int_equal(th_run_until(t, th_flag_set, &ob.closed, 2000), 0);
	assert_int_equal(ob.leadership, 0);
}

static void
test_observers_off(void **state)
{
	th_loop        *t = *state;
	eb_cluster_opts o;
	eb_cluster     *c;
	obs             ob;

	memset(&ob, 0, sizeof(ob));
	opts(&o);
	assert_int_equal(eb_cluster_new(&t->loop, &o, &c, NULL), 0);
	eb_cluster_on_leadership(c, leadership_cb, &ob);
	eb_cluster_on_members(c, members_cb, &ob);
	assert_int_equal(eb_cluster_off_leadership(c, leadership_cb, &ob), 0);
	assert_int_equal(eb_cluster_off_leadership(c, leadership_cb, &ob), -1);
	assert_int_equal(eb_cluster_off_members(c, members_cb, &ob), 0);
	assert_int_equal(eb_cluster_start(c, start_cb, &ob), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &ob.started, 2000), 0);
	(void) th_run_until(t, th_flag_set, &ob.leader, 100);
	assert_int_equal(ob.leadership, 0);
	eb_cluster_close(c, close_cb, &ob);
	assert_int_equal(th_run_until(t, th_flag_set, &ob.closed, 2000), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_bad_opts, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_standalone_lifecycle, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_close_at_every_stage, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_observers_off, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
