/* Unit tests for bus_direct.h: a taker gets a request to its address only
 * where that changes nothing a requester sees (one idle local consumer,
 * nothing queued before it, no fencing epoch), with the timeout the bus
 * would apply; a declined request takes the usual way; and
 * eb_bus_msg_plain, what a taker answers with. */
#include <stdio.h>

#include <ebnode/bus.h>

#include "eventbus/bus_direct.h"
#include "tests/unit/eventbus/bus_th.h"

/* What the taker saw; it takes when take is set. */
typedef struct taker {
	int             take;
	int             calls;
	json_int_t      val;
	uint64_t        timeout_ms;
	eb_bus_msg     *msg; /* held */
	eb_bus_reply_cb cb;
	void           *arg;
} taker;

static int
take_fn(void *ctx, eb_bus_msg *msg, uint64_t timeout_ms, eb_bus_reply_cb cb,
    void *arg)
{
	taker        *k = ctx;
	const json_t *b = eb_bus_msg_body(msg);

	k->calls++;
	k->val = json_is_integer(b) ? json_integer_value(b) : -1;
	k->timeout_ms = timeout_ms;
	if (!k->take) {
		return 0;
	}
	assert_null(eb_bus_msg_reply_address(msg)); /* answered through cb */
	eb_bus_msg_release(k->msg);
	k->msg = eb_bus_msg_hold(msg);
	k->cb = cb;
	k->arg = arg;
	return 1;
}

static void
test_direct_taken(void **state)
{
	th_loop      *t = *state;
	eb_bus       *bus = bus_open(t, 7000, 0);
	rec           r = { .reply = 1 };
	taker         k = { .take = 1 };
	outcome       o = { 0 };
	eb_bus_totals before;
	eb_bus_totals after;
	eb_bus_msg   *answer;

	assert_int_equal(
	    eb_bus_consumer_new(bus, "in", 1, rec_handler, &r, &r.c), 0);
	eb__bus_direct_set(bus, "in", take_fn, &k);
	eb_bus_stats_totals(bus, &before);
	assert_int_equal(request_int(bus, "in", 5, 0, &o), 0);
	assert_int_equal(k.calls, 1);
	assert_int_equal(k.val, 5);
	assert_int_equal(k.timeout_ms, 7000); /* the bus default for 0 */
	eb_bus_stats_totals(bus, &after);
	assert_int_equal(after.sent, before.sent + 1);
	assert_int_equal(after.received, before.received + 1);
	assert_int_equal(after.pending_requests, 0); /* no bus request */
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r.n, 0); /* the consumer never saw it */
	assert_int_equal(o.calls, 0);
	/* The taker answers through the requester's callback. */
	answer = eb_bus_msg_plain(k.msg);
	k.cb(bus, 0, answer, NULL, k.arg);
	eb_bus_msg_release(answer);
	assert_int_equal(o.calls, 1);
	assert_int_equal(o.status, 0);
	assert_int_equal(o.val, 5);
	/* A request's own timeout, clamped as the bus clamps it. */
	assert_int_equal(request_int(bus, "in", 6, 50, &o), 0);
	assert_int_equal(k.calls, 2);
	assert_int_equal(k.timeout_ms, 50);
	k.cb(bus, EB_ECANCELED, NULL,
	    &(eb_bus_failure){ EB_BUS_ERROR, -1, "x" }, k.arg);
	assert_int_equal(o.calls, 2);
	eb_bus_msg_release(k.msg);
	eb__bus_direct_set(bus, NULL, NULL, NULL);
	bus_shut(t, bus);
}

static void
test_direct_declined(void **state)
{
	th_loop *t = *state;
	eb_bus  *bus = bus_open(t, 0, 0);
	rec      r = { .reply = 1 };
	taker    k = { .take = 0 };
	outcome  o = { 0 };

	assert_int_equal(
	    eb_bus_consumer_new(bus, "in", 1, rec_handler, &r, &r.c), 0);
	eb__bus_direct_set(bus, "in", take_fn, &k);
	assert_int_equal(request_int(bus, "in", 5, 0, &o), 0);
	assert_int_equal(k.calls, 1);
	assert_int_equal(th_loop_run(t), 0);
	/* The usual way: the consumer answered. */
	assert_int_equal(r.n, 1);
	assert_int_equal(o.calls, 1);
	assert_int_equal(o.val, 1005);
	eb__bus_direct_set(bus, NULL, NULL, NULL);
	bus_shut(t, bus);
}

static void
test_direct_keeps_order(void **state)
{
	th_loop *t = *state;
	eb_bus  *bus = bus_open(t, 0, 0);
	rec      r = { .reply = 1 };
	taker    k = { .take = 0 };
	outcome  o0 = { 0 };
	outcome  o1 = { 0 };
	outcome  o2 = { 0 };

	assert_int_equal(
	    eb_bus_consumer_new(bus, "in", 1, rec_handler, &r, &r.c), 0);
	eb__bus_direct_set(bus, "in", take_fn, &k);
	/* A declined request waits in the consumer's queue: the next one
	 * must not overtake it, so the taker is not asked. */
	assert_int_equal(request_int(bus, "in", 1, 0, &o0), 0);
	assert_int_equal(k.calls, 1);
	k.take = 1;
	assert_int_equal(request_int(bus, "in", 2, 0, &o1), 0);
	assert_int_equal(k.calls, 1);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.vals[0], 1);
	assert_int_equal(r.vals[1], 2);
	assert_int_equal(o0.val, 1001);
	assert_int_equal(o1.val, 1002);
	/* The queue is empty again: taken. */
	assert_int_equal(request_int(bus, "in", 3, 0, &o2), 0);
	assert_int_equal(k.calls, 2);
	k.cb(bus, EB_ECANCELED, NULL,
	    &(eb_bus_failure){ EB_BUS_ERROR, -1, "x" }, k.arg);
	assert_int_equal(o2.calls, 1);
	eb_bus_msg_release(k.msg);
	eb__bus_direct_set(bus, NULL, NULL, NULL);
	bus_shut(t, bus);
}

static void
test_direct_only_alone(void **state)
{
	th_loop         *t = *state;
	eb_bus          *bus = bus_open(t, 0, 0);
	rec              r = { .reply = 1 };
	rec              r2 = { .reply = 1 };
	taker            k = { .take = 1 };
	outcome          o = { 0 };
	eb_bus_send_opts so;
	json_t          *b = json_integer(4);

	eb__bus_direct_set(bus, "in", take_fn, &k);
	/* No consumer: the bus answers NO_HANDLERS, the taker is not asked. */
	assert_int_equal(request_int(bus, "in", 1, 0, &o), 0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(o.status, EB_ENOHANDLERS);
	/* Two consumers: the bus's round robin, not the taker. */
	assert_int_equal(
	    eb_bus_consumer_new(bus, "in", 1, rec_handler, &r, &r.c), 0);
	assert_int_equal(
	    eb_bus_consumer_new(bus, "in", 1, rec_handler, &r2, &r2.c), 0);
	assert_int_equal(request_int(bus, "in", 2, 0, &o), 0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r.n + r2.n, 1);
	eb_bus_consumer_close(r2.c);
	/* A fencing epoch: the bus checks it on delivery. */
	eb_bus_send_opts_init(&so);
	so.epoch = 3;
	assert_int_equal(
	    eb_bus_request(bus, "in", b, NULL, &so, outcome_cb, &o), 0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r.n + r2.n, 2);
	/* Another address, and a removed taker. */
	assert_int_equal(
	    eb_bus_consumer_new(bus, "other", 1, rec_handler, &r2, &r2.c), 0);
	assert_int_equal(request_int(bus, "other", 5, 0, &o), 0);
	eb__bus_direct_set(bus, NULL, NULL, NULL);
	assert_int_equal(request_int(bus, "in", 6, 0, &o), 0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r.n + r2.n, 4);
	assert_int_equal(k.calls, 0);
	json_decref(b);
	bus_shut(t, bus);
}

static eb_bus_msg *plain_held;

static void
plain_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	(void) c;
	(*(int *) arg)++;
	plain_held = eb_bus_msg_hold(msg);
}

static void
test_msg_plain(void **state)
{
	th_loop         *t = *state;
	eb_bus          *bus = bus_open(t, 0, 0);
	eb_bus_consumer *c;
	eb_bus_msg      *p;
	outcome          o = { 0 };
	json_t          *h = json_pack("{s:s}", "k", "v");
	const char      *body;
	size_t           len;
	int              got = 0;

	assert_int_equal(
	    eb_bus_consumer_new(bus, "p", 0, plain_handler, &got, &c), 0);
	/* A send is plain already: itself. */
	assert_int_equal(send_int(bus, "p", 1), 0);
	assert_int_equal(th_loop_run(t), 0);
	p = eb_bus_msg_plain(plain_held);
	assert_ptr_equal(p, plain_held);
	eb_bus_msg_release(p);
	eb_bus_msg_release(plain_held);
	/* A request: a copy that expects no answer, same body and headers. */
	got = 0;
	assert_int_equal(
	    eb_bus_request_raw(bus, "p", "[7]", 3, h, NULL, outcome_cb, &o), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &got, 1000), 0);
	p = eb_bus_msg_plain(plain_held);
	assert_true(p != plain_held);
	assert_null(eb_bus_msg_reply_address(p));
	assert_true(eb_bus_msg_is_send(p));
	assert_string_equal(eb_bus_msg_address(p), "p");
	body = eb_bus_msg_body_bytes(p, &len);
	assert_int_equal(len, 3);
	assert_memory_equal(body, "[7]", 3);
	assert_true(json_equal(eb_bus_msg_headers(p), h));
	eb_bus_msg_release(p);
	assert_int_equal(eb_bus_msg_fail(plain_held, 1, "done"), 0);
	eb_bus_msg_release(plain_held);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(o.calls, 1);
	json_decref(h);
	bus_shut(t, bus);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_direct_taken, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_direct_declined, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_direct_keeps_order, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_direct_only_alone, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_msg_plain, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
