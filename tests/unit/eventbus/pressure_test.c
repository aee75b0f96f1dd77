/*
 * Unit tests for flow control (pressure.c, the PRESSURE link frame of
 * remote.c): consumer queue watermarks and the busy state of an address,
 * its observers, parked (paused) consumers, explicit holds, and a peer's
 * pressure over a real link on 127.0.0.1 (with the grace for what was in
 * flight). Nothing is dropped on the way.
 */
#include <signal.h>
#include <stdio.h>

#include <ebnode/bus.h>
#include <ebnode/link.h>

#include "tests/unit/eventbus/cluster_th.h"

typedef struct pobs {
	int  calls;
	int  last;
	char address[64];
} pobs;

static void
pobs_cb(eb_bus *bus, const char *address, int busy, void *arg)
{
	pobs *o = arg;

	(void) bus;
	o->calls++;
	o->last = busy;
	(void) snprintf(o->address, sizeof(o->address), "%s", address);
}

struct rec_n {
	rec *r;
	int  want;
};

static int
rec_n_pred(void *arg)
{
	struct rec_n *w = arg;

	return w->r->n >= w->want;
}

/* queue_max 8: busy at 4 queued, not busy again at 2. */
static void
test_watermarks_and_paused_consumer(void **state)
{
	th_loop     *t = *state;
	eb_bus      *bus = bus_open(t, 1000, 8);
	rec          r = { 0 };
	pobs         o = { 0 };
	struct rec_n w = { &r, 6 };

	assert_int_equal(
	    eb_bus_consumer_new(bus, "w", 0, rec_handler, &r, &r.c), 0);
	eb_bus_pressure_watch(bus, pobs_cb, &o);
	eb_bus_consumer_pause(r.c);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(send_int(bus, "w", i), 0);
	}
	assert_false(eb_bus_address_busy(bus, "w"));
	assert_int_equal(o.calls, 0);
	assert_int_equal(send_int(bus, "w", 3), 0);
	assert_true(eb_bus_address_busy(bus, "w"));
	assert_int_equal(o.calls, 1);
	assert_int_equal(o.last, 1);
	assert_string_equal(o.address, "w");
	assert_int_equal(eb_bus_busy_episodes(bus), 1);
	/* Parked: a loop turn delivers nothing. */
	assert_int_equal(th_run_until(t, rec_n_pred, &w, 50), -1);
	assert_int_equal(r.n, 0);
	/* Over the watermark the bus still queues (the bound is queue_max). */
	assert_int_equal(send_int(bus, "w", 4), 0);
	assert_int_equal(send_int(bus, "w", 5), 0);
	eb_bus_consumer_resume(r.c);
	assert_int_equal(th_run_until(t, rec_n_pred, &w, 2000), 0);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(r.vals[i], i); /* in order, none dropped */
	}
	assert_false(eb_bus_address_busy(bus, "w"));
	assert_int_equal(o.calls, 2);
	assert_int_equal(o.last, 0);
	assert_int_equal(eb_bus_pressure_unwatch(bus, pobs_cb, &o), 0);
	assert_int_equal(eb_bus_pressure_unwatch(bus, pobs_cb, &o), UV_ENOENT);
	{
		eb_bus_totals tt;

		eb_bus_stats_totals(bus, &tt);
		assert_int_equal(tt.dropped, 0);
	}
	bus_shut(t, bus);
}

/* A pause and a resume from inside the handler. */
static void
pause_in_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	rec *r = arg;

	rec_handler(c, msg, arg);
	if (r->n == 2) {
		eb_bus_consumer_pause(c);
	}
}

static void
test_pause_from_handler_keeps_order(void **state)
{
	th_loop     *t = *state;
	eb_bus      *bus = bus_open(t, 1000, 100);
	rec          r = { 0 };
	struct rec_n w = { &r, 10 };

	assert_int_equal(
	    eb_bus_consumer_new(bus, "p", 0, pause_in_handler, &r, &r.c), 0);
	for (int i = 0; i < 10; i++) {
		assert_int_equal(send_int(bus, "p", i), 0);
	}
	assert_int_equal(th_run_until(t, rec_n_pred, &w, 50), -1);
	assert_int_equal(r.n, 2);
	eb_bus_consumer_resume(r.c);
	assert_int_equal(th_run_until(t, rec_n_pred, &w, 2000), 0);
	for (int i = 0; i < 10; i++) {
		assert_int_equal(r.vals[i], i);
	}
	bus_shut(t, bus);
}

/* A busy consumer that closes takes its pressure with it; a hold makes an
 * address busy without any consumer and goes with its release. */
static void
test_close_and_hold(void **state)
{
	th_loop *t = *state;
	eb_bus  *bus = bus_open(t, 1000, 8);
	rec      r = { 0 };
	pobs     o = { 0 };

	eb_bus_pressure_watch(bus, pobs_cb, &o);
	assert_int_equal(
	    eb_bus_consumer_new(bus, "c", 0, rec_handler, &r, &r.c), 0);
	eb_bus_consumer_pause(r.c);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(send_int(bus, "c", i), 0);
	}
	assert_true(eb_bus_address_busy(bus, "c"));
	eb_bus_consumer_close(r.c);
	assert_false(eb_bus_address_busy(bus, "c"));
	assert_int_equal(o.calls, 2);

	eb_bus_pressure_set(bus, "held", 1);
	assert_true(eb_bus_address_busy(bus, "held"));
	assert_int_equal(o.last, 1);
	eb_bus_pressure_set(bus, "held", 1); /* no change, no call */
	assert_int_equal(o.calls, 3);
	eb_bus_pressure_set(bus, "held", 0);
	assert_false(eb_bus_address_busy(bus, "held"));
	assert_int_equal(o.calls, 4);
	assert_int_equal(eb_bus_handler_count(bus, "held"), 0);
	eb_bus_pressure_set(bus, "never", 0); /* nothing to release */
	assert_false(eb_bus_address_busy(bus, "never"));
	assert_int_equal(o.calls, 4);
	bus_shut(t, bus);
}

/* Big bodies make a consumer busy before its count does. */
static void
test_bytes_watermark(void **state)
{
	th_loop *t = *state;
	eb_bus  *bus = bus_open(t, 1000, 10000);
	rec      r = { 0 };
	char    *big = malloc(1u << 20);
	json_t  *s;

	memset(big, 'x', (1u << 20) - 1);
	big[(1u << 20) - 1] = '\0';
	s = json_string(big);
	assert_int_equal(
	    eb_bus_consumer_new(bus, "b", 0, rec_handler, &r, &r.c), 0);
	eb_bus_consumer_pause(r.c);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(eb_bus_send(bus, "b", s, NULL, NULL), 0);
	}
	assert_false(eb_bus_address_busy(bus, "b"));
	assert_int_equal(eb_bus_send(bus, "b", s, NULL, NULL), 0);
	assert_true(eb_bus_address_busy(bus, "b"));
	eb_bus_consumer_resume(r.c);
	{
		struct rec_n w = { &r, 4 };

		assert_int_equal(th_run_until(t, rec_n_pred, &w, 2000), 0);
	}
	assert_false(eb_bus_address_busy(bus, "b"));
	json_decref(s);
	free(big);
	bus_shut(t, bus);
}

struct busy_is {
	eb_bus     *bus;
	const char *address;
	int         want;
};

static int
busy_is_pred(void *arg)
{
	struct busy_is *b = arg;

	return eb_bus_address_busy(b->bus, b->address) == b->want;
}

/* A PRESSURE frame over a real link: node a treats "w" as busy while the
 * consumer on node b is over its watermark, and not once it drained or
 * its interest is gone. */
static void
test_pressure_across_link(void **state)
{
	th_loop       *t = *state;
	cnode          n[2];
	rec            r = { 0 };
	pobs           o = { 0 };
	struct busy_is busy = { NULL, "w", 1 };
	struct busy_is idle = { NULL, "w", 0 };
	struct rec_n   w = { &r, 20 };

	cluster_open(t, n, 2, 8);
	busy.bus = idle.bus = n[0].bus;
	eb_bus_pressure_watch(n[0].bus, pobs_cb, &o);
	assert_int_equal(
	    eb_bus_consumer_new(n[1].bus, "w", 0, rec_handler, &r, &r.c), 0);
	wait_remote(t, n[0].bus, "w", 1);
	eb_bus_consumer_pause(r.c);
	/* 20 plain sends in one turn, past queue_max 8: what was in flight
	 * when b said busy is within the grace, not dropped. */
	for (int i = 0; i < 20; i++) {
		assert_int_equal(send_int(n[0].bus, "w", i), 0);
	}
	assert_int_equal(th_run_until(t, busy_is_pred, &busy, 3000), 0);
	assert_int_equal(o.last, 1);
	assert_true(eb_bus_address_busy(n[1].bus, "w"));
	eb_bus_consumer_resume(r.c);
	assert_int_equal(th_run_until(t, rec_n_pred, &w, 3000), 0);
	assert_int_equal(th_run_until(t, busy_is_pred, &idle, 3000), 0);
	assert_int_equal(o.last, 0);
	for (int i = 0; i < 20; i++) {
		assert_int_equal(r.vals[i], i);
	}
	{
		eb_bus_totals tt;

		eb_bus_stats_totals(n[1].bus, &tt);
		assert_int_equal(tt.dropped, 0);
	}
	/* Busy again; then the consumer goes: its interest, and with it the
	 * peer's pressure, is forgotten. */
	eb_bus_consumer_pause(r.c);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(send_int(n[0].bus, "w", i), 0);
	}
	assert_int_equal(th_run_until(t, busy_is_pred, &busy, 3000), 0);
	eb_bus_consumer_close(r.c);
	assert_int_equal(th_run_until(t, busy_is_pred, &idle, 3000), 0);
	cluster_close(t, n, 2);
}

int
main(void)
{
	(void) signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_watermarks_and_paused_consumer, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_pause_from_handler_keeps_order, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_close_and_hold, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_bytes_watermark, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_pressure_across_link, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
