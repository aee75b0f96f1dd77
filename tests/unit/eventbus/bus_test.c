/* Unit tests for bus.c: routing (round robin, publish, local-only, no
 * handlers), ordering, deferred delivery, close semantics, statistics. */
#include <ebnode/bus.h>

#include "tests/unit/eventbus/bus_th.h"

static void
test_send_round_robin(void **state)
{
	th_loop *t = *state;
	eb_bus  *bus = bus_open(t, 0, 0);
	rec     *r = calloc(3, sizeof(*r));
	int      i;

	for (i = 0; i < 3; i++) {
		assert_int_equal(eb_bus_consumer_new(
		                     bus, "rr", 0, rec_handler, &r[i], &r[i].c),
		    0);
	}
	for (i = 0; i < 30; i++) {
		assert_int_equal(send_int(bus, "rr", i), 0);
	}
	/* Registration is synchronous, delivery is not. */
	assert_int_equal(r[0].n + r[1].n + r[2].n, 0);
	assert_int_equal(th_loop_run(t), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(r[i].n, 10);
		/* Strict rotation: handler i sees i, i+3, i+6, ... */
		assert_int_equal(r[i].vals[0], i);
		assert_int_equal(r[i].vals[1] - r[i].vals[0], 3);
	}
	bus_shut(t, bus);
	free(r);
}

static void
test_publish_fan_out(void **state)
{
	th_loop      *t = *state;
	eb_bus       *bus = bus_open(t, 0, 0);
	rec          *r = calloc(3, sizeof(*r));
	rec          *other = calloc(1, sizeof(*other));
	json_t       *b = json_pack("{s:i}", "k", 7);
	eb_bus_totals tot;
	int           i;

	for (i = 0; i < 3; i++) {
		assert_int_equal(eb_bus_consumer_new(bus, "pub", i == 2,
		                     rec_handler, &r[i], &r[i].c),
		    0);
	}
	assert_int_equal(
	    eb_bus_consumer_new(bus, "pub2", 0, rec_handler, other, &other->c),
	    0);
	assert_int_equal(eb_bus_publish(bus, "pub", b, NULL, NULL), 0);
	assert_int_equal(eb_bus_publish(bus, "pub", b, NULL, NULL), 0);
	/* Publishing to nobody is not an error (Vert.x). */
	assert_int_equal(eb_bus_publish(bus, "nobody", b, NULL, NULL), 0);
	assert_int_equal(th_loop_run(t), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(r[i].n, 2); /* local-only included locally */
	}
	assert_int_equal(other->n, 0);
	eb_bus_stats_totals(bus, &tot);
	assert_int_equal(tot.published, 3);
	assert_int_equal(tot.received, 6);
	json_decref(b);
	bus_shut(t, bus);
	free(r);
	free(other);
}

static void
test_local_only(void **state)
{
	th_loop         *t = *state;
	eb_bus          *bus = bus_open(t, 0, 0);
	rec              r = { 0 };
	eb_bus_send_opts so;
	json_t          *b = json_integer(1);

	assert_int_equal(
	    eb_bus_consumer_new(bus, "lo", 1, rec_handler, &r, &r.c), 0);
	eb_bus_send_opts_init(&so);
	so.local_only = 1;
	assert_int_equal(eb_bus_send(bus, "lo", b, NULL, &so), 0);
	assert_int_equal(eb_bus_send(bus, "lo", b, NULL, NULL), 0);
	assert_int_equal(eb_bus_publish(bus, "lo", b, NULL, &so), 0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r.n, 3);
	json_decref(b);
	bus_shut(t, bus);
}

static void
test_send_no_handlers(void **state)
{
	th_loop      *t = *state;
	eb_bus       *bus = bus_open(t, 0, 0);
	rec           r = { 0 };
	eb_bus_totals tot;

	assert_int_equal(send_int(bus, "none", 1), EB_ENOHANDLERS);
	assert_int_equal(
	    eb_bus_consumer_new(bus, "gone", 0, rec_handler, &r, &r.c), 0);
	eb_bus_consumer_close(r.c);
	assert_int_equal(send_int(bus, "gone", 1), EB_ENOHANDLERS);
	eb_bus_stats_totals(bus, &tot);
	assert_int_equal(tot.no_handlers, 2);
	assert_int_equal(tot.addresses, 0); /* the record went with it */
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r.n, 0);
	bus_shut(t, bus);
}

static void
test_order_preserved(void **state)
{
	th_loop *t = *state;
	eb_bus  *bus = bus_open(t, 0, 200000);
	rec     *r = calloc(1, sizeof(*r));
	int      i;
	int      bad = 0;

	assert_int_equal(
	    eb_bus_consumer_new(bus, "ord", 0, rec_handler, r, &r->c), 0);
	for (i = 0; i < REC_MAX; i++) {
		assert_int_equal(send_int(bus, "ord", i), 0);
	}
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r->n, REC_MAX);
	for (i = 0; i < REC_MAX; i++) {
		bad += r->vals[i] != i;
	}
	assert_int_equal(bad, 0);
	bus_shut(t, bus);
	free(r);
}

static void
test_bad_arguments(void **state)
{
	th_loop         *t = *state;
	eb_bus          *bus = bus_open(t, 0, 0);
	rec              r = { 0 };
	json_t          *h = json_pack("{s:i}", "n", 5);
	eb_bus_consumer *c;

	assert_int_equal(
	    eb_bus_consumer_new(bus, "", 0, rec_handler, &r, &c), UV_EINVAL);
	assert_int_equal(
	    eb_bus_consumer_new(bus, "x", 0, rec_handler, &r, &r.c), 0);
	/* Header values must be strings. */
	assert_int_equal(eb_bus_send(bus, "x", NULL, h, NULL), UV_EINVAL);
	assert_int_equal(
	    eb_bus_request(bus, "x", NULL, NULL, NULL, NULL, NULL), UV_EINVAL);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r.n, 0);
	json_decref(h);
	bus_shut(t, bus);
}

static void
test_close_cancels_pending_once(void **state)
{
	th_loop *t = *state;
	eb_bus  *bus = bus_open(t, 0, 0);
	rec      r = { 0 };
	outcome  o[3];

	memset(o, 0, sizeof(o));
	assert_int_equal(
	    eb_bus_consumer_new(bus, "sink", 0, rec_handler, &r, &r.c), 0);
	assert_int_equal(request_int(bus, "sink", 1, 0, &o[0]), 0);
	assert_int_equal(request_int(bus, "sink", 2, 0, &o[1]), 0);
	/* This one is already resolved (no handlers) but not called back. */
	assert_int_equal(request_int(bus, "none", 3, 0, &o[2]), 0);
	bus_closed = 0;
	eb_bus_close(bus, bus_closed_cb, NULL);
	assert_int_equal(o[0].calls + o[1].calls + o[2].calls, 0);
	assert_int_equal(send_int(bus, "sink", 1), EB_ECLOSED);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(bus_closed, 1);
	assert_int_equal(r.n, 0); /* handlers do not run after close */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(o[i].calls, 1);
		assert_int_equal(o[i].status, EB_ECANCELED);
		assert_int_equal(o[i].type, EB_BUS_ERROR);
	}
}

static eb_bus *close_from_handler_bus;

static void
closing_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	(void) c;
	(void) msg;
	(*(int *) arg)++;
	eb_bus_close(close_from_handler_bus, bus_closed_cb, NULL);
}

static void
test_close_from_handler(void **state)
{
	th_loop         *t = *state;
	eb_bus          *bus = bus_open(t, 0, 0);
	eb_bus_consumer *c;
	int              calls = 0;

	close_from_handler_bus = bus;
	bus_closed = 0;
	assert_int_equal(
	    eb_bus_consumer_new(bus, "x", 0, closing_handler, &calls, &c), 0);
	assert_int_equal(send_int(bus, "x", 1), 0);
	assert_int_equal(send_int(bus, "x", 2), 0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(calls, 1); /* the second is dropped by the close */
	assert_int_equal(bus_closed, 1);
}

struct seen {
	int      n;
	uint32_t handlers;
	uint64_t sent;
	uint64_t received;
};

static void
stats_cb(const eb_bus_addr_stats *s, void *arg)
{
	struct seen *seen = arg;

	if (strcmp(s->address, "st") == 0) {
		seen->handlers = s->handlers;
		seen->sent = s->sent;
		seen->received = s->received;
	}
	seen->n++;
}

static void
test_stats(void **state)
{
	th_loop    *t = *state;
	eb_bus     *bus = bus_open(t, 0, 0);
	rec         r[2];
	struct seen seen = { 0 };

	memset(r, 0, sizeof(r));
	assert_int_equal(
	    eb_bus_consumer_new(bus, "st", 0, rec_handler, &r[0], &r[0].c), 0);
	assert_int_equal(
	    eb_bus_consumer_new(bus, "st", 1, rec_handler, &r[1], &r[1].c), 0);
	assert_int_equal(send_int(bus, "st", 1), 0);
	assert_int_equal(send_int(bus, "st", 2), 0);
	assert_int_equal(send_int(bus, "st", 3), 0);
	assert_int_equal(th_loop_run(t), 0);
	eb_bus_stats_foreach(bus, stats_cb, &seen);
	assert_int_equal(seen.n, 1);
	assert_int_equal(seen.handlers, 2);
	assert_int_equal(seen.sent, 3);
	assert_int_equal(seen.received, 3);
	assert_string_equal(eb_bus_node_id(bus), "node-a");
	assert_string_equal(
	    eb_bus_failure_name(EB_BUS_RECIPIENT_FAILURE), "RECIPIENT_FAILURE");
	bus_shut(t, bus);
}

struct watch_seen {
	int      calls;
	uint32_t last;
	char     address[32];
};

static void
watch_cb(eb_bus *bus, const char *address, uint32_t count, void *arg)
{
	struct watch_seen *w = arg;

	(void) bus;
	w->calls++;
	w->last = count;
	(void) snprintf(w->address, sizeof(w->address), "%s", address);
}

static void
test_handler_count_watch(void **state)
{
	th_loop          *t = *state;
	eb_bus           *bus = bus_open(t, 0, 0);
	struct watch_seen w = { 0 };
	struct watch_seen w2 = { 0 };
	rec               r[2];

	memset(r, 0, sizeof(r));
	eb_bus_watch_add(bus, watch_cb, &w);
	eb_bus_watch_add(bus, watch_cb, &w2);
	assert_int_equal(eb_bus_handler_count(bus, "wc"), 0);
	assert_int_equal(
	    eb_bus_consumer_new(bus, "wc", 0, rec_handler, &r[0], &r[0].c), 0);
	assert_int_equal(w.calls, 1);
	assert_int_equal(w.last, 1);
	assert_string_equal(w.address, "wc");
	assert_int_equal(
	    eb_bus_consumer_new(bus, "wc", 1, rec_handler, &r[1], &r[1].c), 0);
	assert_int_equal(eb_bus_handler_count(bus, "wc"), 2);
	assert_int_equal(w.last, 2);
	eb_bus_consumer_close(r[0].c);
	eb_bus_consumer_close(r[1].c);
	assert_int_equal(w.calls, 4);
	assert_int_equal(w.last, 0);
	assert_int_equal(eb_bus_handler_count(bus, "wc"), 0);
	/* Every observer sees every change; a removed one sees no more. */
	assert_int_equal(w2.calls, 4);
	assert_int_equal(eb_bus_watch_remove(bus, watch_cb, &w2), 0);
	assert_int_equal(eb_bus_watch_remove(bus, watch_cb, &w2), UV_ENOENT);
	assert_int_equal(
	    eb_bus_consumer_new(bus, "wc", 0, rec_handler, &r[0], &r[0].c), 0);
	assert_int_equal(w.calls, 5);
	assert_int_equal(w2.calls, 4);
	eb_bus_consumer_close(r[0].c);
	assert_int_equal(eb_bus_watch_remove(bus, watch_cb, &w), 0);
	bus_shut(t, bus);
}

/* eb__bus_addr_find's memo of the last records found (addr.c): names of
 * one length, a prefix and a longer name; memo_names[i] gets i + 1
 * consumers, so a wrong record shows as a count. */
static const char *const memo_names[] = { "m1", "m2", "m3", "m4", "m5", "m6",
	"m10" };
enum { MEMO_NA = 7, MEMO_NC = 1 + 2 + 3 + 4 + 5 + 6 + 7 };

static void
memo_lookups(eb_bus *bus)
{
	int i;
	int round;

	for (round = 0; round < 3; round++) {
		for (i = 0; i < MEMO_NA; i++) {
			assert_int_equal(
			    eb_bus_handler_count(bus, memo_names[i]), i + 1);
			assert_int_equal(
			    eb_bus_handler_count(bus, memo_names[i]), i + 1);
		}
		assert_int_equal(eb_bus_handler_count(bus, "m"), 0);
		assert_int_equal(eb_bus_handler_count(bus, "m100"), 0);
		assert_int_equal(eb_bus_handler_count(bus, "m7"), 0);
	}
}

/* Repeated lookups find each name's own record, and a record freed while
 * in the memo is not found again (a re-registration gets its own). */
static void
test_addr_memo(void **state)
{
	th_loop      *t = *state;
	eb_bus       *bus = bus_open(t, 0, 0);
	rec          *r = calloc(MEMO_NC, sizeof(*r));
	rec           again = { 0 };
	eb_bus_totals tot;
	int           i;
	int           k;
	int           n = 0;

	for (i = 0; i < MEMO_NA; i++) {
		for (k = 0; k <= i; k++, n++) {
			assert_int_equal(eb_bus_consumer_new(bus, memo_names[i],
			                     0, rec_handler, &r[n], &r[n].c),
			    0);
		}
	}
	memo_lookups(bus);
	/* "m3" (consumers 3..5) was just found: it is in the memo. */
	assert_int_equal(eb_bus_handler_count(bus, "m3"), 3);
	for (n = 3; n < 6; n++) {
		eb_bus_consumer_close(r[n].c);
	}
	eb_bus_stats_totals(bus, &tot);
	assert_int_equal(tot.addresses, MEMO_NA - 1);
	assert_int_equal(eb_bus_handler_count(bus, "m3"), 0);
	assert_int_equal(eb_bus_handler_count(bus, "m4"), 4);
	assert_int_equal(
	    eb_bus_consumer_new(bus, "m3", 0, rec_handler, &again, &again.c),
	    0);
	assert_int_equal(eb_bus_handler_count(bus, "m3"), 1);
	assert_int_equal(eb_bus_handler_count(bus, "m10"), 7);
	assert_int_equal(send_int(bus, "m3", 42), 0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(again.n, 1);
	eb_bus_consumer_close(again.c);
	for (n = 0; n < MEMO_NC; n++) {
		if (n < 3 || n >= 6) {
			eb_bus_consumer_close(r[n].c);
		}
	}
	eb_bus_stats_totals(bus, &tot);
	assert_int_equal(tot.addresses, 0);
	bus_shut(t, bus);
	free(r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_send_round_robin, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_publish_fan_out, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_local_only, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_send_no_handlers, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_order_preserved, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_bad_arguments, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_close_cancels_pending_once, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_close_from_handler, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_stats, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_handler_count_watch, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_addr_memo, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
