/*
 * Unit tests for the node's lifecycle (node/node.c over common/steps.c) with
 * fake subsystem wiring: start order, reverse stop order, failed starts (exit
 * codes 1 and 3), a stop requested while a start step is in flight, a run-time
 * fatal error, and the second signal that forces the exit.
 *
 * The fakes below replace node_bus.c, node_bridge.c, admin.c and
 * node_cluster.c (this executable links node.c alone). Each one records
 * "start:<name>" / "stop:<name>" and completes as its mode says.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include <ebnode/err.h>
#include <ebnode/log.h>

#include "conf/conf.h"
#include "node/node_int.h"
#include "tests/harness/th.h"

enum fake_mode {
	FAKE_OK = 0,     /* complete with 0 on the next turn */
	FAKE_SYNC_FAIL,  /* start returns an error: no callback */
	FAKE_ASYNC_FAIL, /* complete with fake.err on the next turn */
	FAKE_HOLD        /* complete only when the test releases it */
};

enum { BUS, INGRESS, BRIDGE, ADMIN, CLUSTER, NSTEPS };
static const char *const step_names[NSTEPS] = { "bus", "ingress", "bridge",
	"admin", "cluster" };

static struct fake {
	int               start_mode[NSTEPS];
	int               stop_mode[NSTEPS];
	int               err;
	char              events[512];
	eb__steps_done_cb held_cb; /* a FAKE_HOLD step's callback */
	eb__node         *node;
	int               shutdown_after_ready; /* 1: shutdown, 2: fail */
	uv_timer_t        timer;
	int               signals_to_send;
} fake;

static void
record(const char *what, int step)
{
	size_t n = strlen(fake.events);

	(void) snprintf(fake.events + n, sizeof(fake.events) - n, "%s%s:%s",
	    n > 0 ? " " : "", what, step_names[step]);
}

static void
after_ready(void *arg)
{
	eb__node *n = arg;

	if (fake.shutdown_after_ready == 1) {
		eb__node_shutdown(n);
	} else if (fake.shutdown_after_ready == 2) {
		eb__node_fail(n, EB_EDUPADDR);
	}
}

static int
fake_start(int step, eb__steps *s, eb__steps_done_cb cb)
{
	eb__node *n = EB__NODE(s);

	fake.node = n;
	record("start", step);
	switch (fake.start_mode[step]) {
	case FAKE_SYNC_FAIL:
		return UV_EADDRINUSE;
	case FAKE_ASYNC_FAIL:
		eb__steps_complete(s, cb, fake.err);
		return 0;
	case FAKE_HOLD:
		fake.held_cb = cb;
		return 0;
	default:
		eb__steps_complete(s, cb, 0);
		if (step == CLUSTER && fake.shutdown_after_ready != 0) {
			/* Queued after the completion: runs after READY. */
			eb__defer(&n->defer, after_ready, n);
		}
		return 0;
	}
}

static void
fake_stop(int step, eb__steps *s, eb__steps_done_cb cb)
{
	record("stop", step);
	if (fake.stop_mode[step] == FAKE_HOLD) {
		fake.held_cb = cb;
		return;
	}
	eb__steps_complete(s, cb, 0);
}

/* The wiring functions node.c calls. */
int
eb__node_bus_start(eb__steps *s, eb__steps_done_cb cb)
{
	return fake_start(BUS, s, cb);
}
void
eb__node_bus_stop(eb__steps *s, eb__steps_done_cb cb)
{
	fake_stop(BUS, s, cb);
}
int
eb__node_ingress_start(eb__steps *s, eb__steps_done_cb cb)
{
	return fake_start(INGRESS, s, cb);
}
void
eb__node_ingress_stop(eb__steps *s, eb__steps_done_cb cb)
{
	fake_stop(INGRESS, s, cb);
}
int
eb__node_bridge_start(eb__steps *s, eb__steps_done_cb cb)
{
	return fake_start(BRIDGE, s, cb);
}
void
eb__node_bridge_stop(eb__steps *s, eb__steps_done_cb cb)
{
	fake_stop(BRIDGE, s, cb);
}
int
eb__node_admin_start(eb__steps *s, eb__steps_done_cb cb)
{
	return fake_start(ADMIN, s, cb);
}
void
eb__node_admin_stop(eb__steps *s, eb__steps_done_cb cb)
{
	fake_stop(ADMIN, s, cb);
}
int
eb__node_cluster_start(eb__steps *s, eb__steps_done_cb cb)
{
	return fake_start(CLUSTER, s, cb);
}
void
eb__node_cluster_stop(eb__steps *s, eb__steps_done_cb cb)
{
	fake_stop(CLUSTER, s, cb);
}
void
eb__node_cluster_cancel_start(eb__steps *s)
{
	eb__steps_done_cb cb = fake.held_cb;

	record("cancel", CLUSTER);
	if (cb != NULL) {
		fake.held_cb = NULL;
		eb__steps_complete(s, cb, EB_ECANCELED);
	}
}

/* ---- helpers --------------------------------------------------------------
 */

static eb__conf *
default_conf(void)
{
	static const char *const env[] = { NULL };
	eb__conf_sources         src;
	eb__conf                *c = NULL;
	eb_errbuf                e;

	memset(&src, 0, sizeof(src));
	src.env = env;
	assert_int_equal(eb__conf_load(&src, &c, &e), 0);
	return c;
}

static int
setup(void **state)
{
	memset(&fake, 0, sizeof(fake));
	eb_log_set_level(EB_LOG_LEVEL_WARN);
	return th_setup(state);
}

/* Runs a node to its end; returns the exit code. */
static int
run_node(th_loop *t, eb__conf *c, eb__node **np)
{
	eb__node *n = NULL;
	int       code;

	assert_int_equal(eb__node_new(&t->loop, c, &n), 0);
	code = eb__node_run(n);
	*np = n;
	return code;
}

static void
release_held_cb(uv_timer_t *h)
{
	eb__steps_done_cb cb = fake.held_cb;

	(void) h;
	if (fake.signals_to_send > 0) {
		fake.signals_to_send--;
		assert_int_equal(uv_kill(getpid(), SIGTERM), 0);
		(void) uv_timer_start(&fake.timer, release_held_cb, 20, 0);
		return;
	}
	if (cb != NULL) {
		fake.held_cb = NULL;
		cb(&fake.node->steps, 0);
	}
	uv_close((uv_handle_t *) &fake.timer, NULL);
}

/* ---- tests ----------------------------------------------------------------
 */

static void
test_start_and_stop_in_order(void **state)
{
	th_loop  *t = *state;
	eb__conf *c = default_conf();
	eb__node *n;

	fake.shutdown_after_ready = 1;
	assert_int_equal(run_node(t, c, &n), EB_NODE_EXIT_OK);
	assert_string_equal(fake.events,
	    "start:bus start:ingress start:bridge start:admin start:cluster "
	    "stop:cluster stop:admin stop:bridge stop:ingress stop:bus");
	assert_int_equal(n->steps.phase, EB__STEPS_DONE);
	assert_int_equal(n->steps.started, 0);
	eb__node_free(n);
	eb__conf_free(c);
}

static void
test_duplicate_address_exits_3(void **state)
{
	th_loop  *t = *state;
	eb__conf *c = default_conf();
	eb__node *n;

	fake.start_mode[CLUSTER] = FAKE_ASYNC_FAIL;
	fake.err = EB_EDUPADDR;
	assert_int_equal(run_node(t, c, &n), EB_NODE_EXIT_DUPADDR);
	/* The failed step is not stopped; the others are, in reverse. */
	assert_string_equal(fake.events,
	    "start:bus start:ingress start:bridge start:admin start:cluster "
	    "stop:admin stop:bridge stop:ingress stop:bus");
	eb__node_free(n);
	eb__conf_free(c);
}

static void
test_sync_start_failure_exits_1(void **state)
{
	th_loop  *t = *state;
	eb__conf *c = default_conf();
	eb__node *n;

	fake.start_mode[BRIDGE] = FAKE_SYNC_FAIL;
	assert_int_equal(run_node(t, c, &n), EB_NODE_EXIT_FATAL);
	assert_string_equal(fake.events,
	    "start:bus start:ingress start:bridge stop:ingress stop:bus");
	eb__node_free(n);
	eb__conf_free(c);
}

static void
test_signal_during_start_step(void **state)
{
	th_loop  *t = *state;
	eb__conf *c = default_conf();
	eb__node *n;

	/* admin's start is in flight when SIGTERM arrives; once it
	 * completes, the node stops instead of starting the cluster. */
	fake.start_mode[ADMIN] = FAKE_HOLD;
	fake.signals_to_send = 1;
	assert_int_equal(uv_timer_init(&t->loop, &fake.timer), 0);
	assert_int_equal(
	    uv_timer_start(&fake.timer, release_held_cb, 20, 0), 0);
	assert_int_equal(run_node(t, c, &n), EB_NODE_EXIT_OK);
	assert_string_equal(fake.events, "start:bus start:ingress start:bridge "
	                                 "start:admin stop:admin stop:bridge "
	                                 "stop:ingress stop:bus");
	assert_int_equal(n->signals, 1);
	eb__node_free(n);
	eb__conf_free(c);
}

/* Issue 11: SIGTERM while the cluster step waits (ZooKeeper unreachable
 * for its whole bound) cancels that step at once: a clean stop (exit 0),
 * not a wait for the step's timeout. */
static void
test_signal_cancels_cluster_start(void **state)
{
	th_loop  *t = *state;
	eb__conf *c = default_conf();
	eb__node *n;

	fake.start_mode[CLUSTER] = FAKE_HOLD;
	fake.signals_to_send = 1;
	assert_int_equal(uv_timer_init(&t->loop, &fake.timer), 0);
	assert_int_equal(
	    uv_timer_start(&fake.timer, release_held_cb, 20, 0), 0);
	assert_int_equal(run_node(t, c, &n), EB_NODE_EXIT_OK);
	assert_string_equal(fake.events,
	    "start:bus start:ingress start:bridge start:admin start:cluster "
	    "cancel:cluster stop:admin stop:bridge stop:ingress stop:bus");
	eb__node_free(n);
	eb__conf_free(c);
}

static void
test_fatal_after_ready(void **state)
{
	th_loop  *t = *state;
	eb__conf *c = default_conf();
	eb__node *n;

	fake.shutdown_after_ready = 2; /* eb__node_fail(EB_EDUPADDR) */
	assert_int_equal(run_node(t, c, &n), EB_NODE_EXIT_DUPADDR);
	assert_string_equal(fake.events,
	    "start:bus start:ingress start:bridge start:admin start:cluster "
	    "stop:cluster stop:admin stop:bridge stop:ingress stop:bus");
	eb__node_free(n);
	eb__conf_free(c);
}

static void
close_any_cb(uv_handle_t *h, void *arg)
{
	th_loop *t = arg;

	/* The watchdog belongs to th_teardown. */
	if (h != (uv_handle_t *) &t->watchdog && !uv_is_closing(h)) {
		uv_close(h, NULL);
	}
}

static void
test_second_signal_forces_exit(void **state)
{
	th_loop  *t = *state;
	eb__conf *c = default_conf();
	eb__node *n;

	/* The cluster's stop never completes (a hung hand-over): the second
	 * SIGTERM ends the run with open handles and exit code 1. */
	fake.shutdown_after_ready = 1;
	fake.stop_mode[CLUSTER] = FAKE_HOLD;
	fake.signals_to_send = 2;
	assert_int_equal(uv_timer_init(&t->loop, &fake.timer), 0);
	assert_int_equal(
	    uv_timer_start(&fake.timer, release_held_cb, 20, 0), 0);
	/* The stop starts from eb__node_shutdown(); the first signal finds
	 * it in progress, the second one forces the exit. */
	assert_int_equal(run_node(t, c, &n), EB_NODE_EXIT_FATAL);
	assert_true(n->forced);
	assert_int_equal(n->signals, 2);
	assert_string_equal(fake.events,
	    "start:bus start:ingress start:bridge start:admin "
	    "start:cluster stop:cluster");
	/* What main would leave to _Exit(): close it here for the leak check.
	 */
	fake.held_cb = NULL;
	uv_walk(&t->loop, close_any_cb, t);
	(void) uv_run(&t->loop, UV_RUN_DEFAULT);
	eb__node_free(n);
	eb__conf_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_start_and_stop_in_order, setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_duplicate_address_exits_3, setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_sync_start_failure_exits_1, setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_signal_during_start_step, setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_signal_cancels_cluster_start, setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_fatal_after_ready, setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_second_signal_forces_exit, setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
