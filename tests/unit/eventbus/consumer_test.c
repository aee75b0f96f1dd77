/* Unit tests for consumer.c: bounded queues and overflow, closing with
 * queued messages, closing from a handler. */
#include <ebnode/bus.h>

#include "tests/unit/eventbus/bus_th.h"

struct addr_seen {
	const char *address;
	uint64_t    dropped;
	uint64_t    failed;
	int         found;
};

static void
find_cb(const eb_bus_addr_stats *s, void *arg)
{
	struct addr_seen *a = arg;

	if (strcmp(s->address, a->address) == 0) {
		a->found = 1;
		a->dropped = s->dropped;
		a->failed = s->failed;
	}
}

static void
test_overflow(void **state)
{
	th_loop         *t = *state;
	eb_bus          *bus = bus_open(t, 0, 3);
	rec              r = { 0 };
	outcome          o = { 0 };
	json_t          *b = json_integer(9);
	struct addr_seen seen = { .address = "q" };
	eb_bus_totals    tot;
	int              i;

	assert_int_equal(
	    eb_bus_consumer_new(bus, "q", 0, rec_handler, &r, &r.c), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(send_int(bus, "q", i), 0);
	}
	/* Full: a send is refused and counted, a publish copy is dropped
	 * and counted, a request fails at once with ERROR. */
	assert_int_equal(send_int(bus, "q", 3), EB_EFULL);
	assert_int_equal(eb_bus_publish(bus, "q", b, NULL, NULL), 0);
	assert_int_equal(request_int(bus, "q", 4, 0, &o), 0);
	assert_int_equal(o.calls, 0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.vals[2], 2);
	assert_int_equal(o.calls, 1);
	assert_int_equal(o.status, EB_EFULL);
	assert_int_equal(o.type, EB_BUS_ERROR);
	assert_string_equal(o.message, "consumer queue full");
	eb_bus_stats_foreach(bus, find_cb, &seen);
	assert_int_equal(seen.found, 1);
	assert_int_equal(seen.dropped, 3);
	assert_int_equal(seen.failed, 1);
	eb_bus_stats_totals(bus, &tot);
	assert_int_equal(tot.dropped, 3);
	/* Drained: accepted again. */
	assert_int_equal(send_int(bus, "q", 5), 0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r.n, 4);
	json_decref(b);
	bus_shut(t, bus);
}

static void
test_close_with_queued(void **state)
{
	th_loop      *t = *state;
	eb_bus       *bus = bus_open(t, 0, 0);
	rec           r = { 0 };
	outcome       o[2];
	eb_bus_totals tot;
	json_t       *b = json_integer(1);

	memset(o, 0, sizeof(o));
	assert_int_equal(
	    eb_bus_consumer_new(bus, "cq", 0, rec_handler, &r, &r.c), 0);
	assert_int_equal(send_int(bus, "cq", 1), 0);
	assert_int_equal(request_int(bus, "cq", 2, 0, &o[0]), 0);
	assert_int_equal(eb_bus_publish(bus, "cq", b, NULL, NULL), 0);
	assert_int_equal(request_int(bus, "cq", 3, 0, &o[1]), 0);
	eb_bus_consumer_close(r.c);
	assert_int_equal(o[0].calls + o[1].calls, 0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r.n, 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(o[i].calls, 1);
		assert_int_equal(o[i].status, EB_ENOHANDLERS);
		assert_int_equal(o[i].type, EB_BUS_NO_HANDLERS);
		assert_string_equal(o[i].message, "No handlers for address cq");
	}
	eb_bus_stats_totals(bus, &tot);
	assert_int_equal(tot.dropped, 2); /* the send and the publish */
	json_decref(b);
	bus_shut(t, bus);
}

static void
test_close_self_in_handler(void **state)
{
	th_loop *t = *state;
	eb_bus  *bus = bus_open(t, 0, 0);
	rec      r[2];
	outcome  o = { 0 };

	memset(r, 0, sizeof(r));
	r[0].close_self = 1;
	assert_int_equal(
	    eb_bus_consumer_new(bus, "cs", 0, rec_handler, &r[0], &r[0].c), 0);
	assert_int_equal(send_int(bus, "cs", 1), 0);
	assert_int_equal(send_int(bus, "cs", 2), 0);
	assert_int_equal(request_int(bus, "cs", 3, 0, &o), 0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r[0].n, 1);
	assert_int_equal(o.calls, 1);
	assert_int_equal(o.status, EB_ENOHANDLERS);
	/* The address is free again. */
	assert_int_equal(send_int(bus, "cs", 4), EB_ENOHANDLERS);
	bus_shut(t, bus);
}

static eb_bus_consumer *victim;

static void
killer_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	(void) c;
	(void) msg;
	(*(int *) arg)++;
	eb_bus_consumer_close(victim);
	victim = NULL;
}

static void
test_close_other_during_delivery(void **state)
{
	th_loop         *t = *state;
	eb_bus          *bus = bus_open(t, 0, 0);
	eb_bus_consumer *k;
	rec              r = { 0 };
	int              kills = 0;

	assert_int_equal(
	    eb_bus_consumer_new(bus, "k", 0, killer_handler, &kills, &k), 0);
	assert_int_equal(
	    eb_bus_consumer_new(bus, "v", 0, rec_handler, &r, &r.c), 0);
	victim = r.c;
	/* Both are ready in the same turn; the first closes the second. */
	assert_int_equal(send_int(bus, "k", 1), 0);
	assert_int_equal(send_int(bus, "v", 1), 0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(kills, 1);
	assert_int_equal(r.n, 0);
	eb_bus_consumer_close(k);
	bus_shut(t, bus);
}

static void
test_fair_turns(void **state)
{
	th_loop *t = *state;
	eb_bus  *bus = bus_open(t, 0, 0);
	rec     *r = calloc(1, sizeof(*r));
	int      i;

	/* More than one turn's budget: all arrive, in order. */
	assert_int_equal(
	    eb_bus_consumer_new(bus, "many", 0, rec_handler, r, &r->c), 0);
	for (i = 0; i < 1000; i++) {
		assert_int_equal(send_int(bus, "many", i), 0);
	}
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r->n, 1000);
	assert_int_equal(r->vals[999], 999);
	bus_shut(t, bus);
	free(r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_overflow, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_close_with_queued, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_close_self_in_handler, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_close_other_during_delivery, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_fair_turns, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
