/*
 * Shared helpers for the event bus unit tests: a bus on the test's private
 * loop, a recording handler and a recording reply callback. Header-only
 * (static functions), included by each *_test.c.
 */
#ifndef EB_TEST_BUS_TH_H
#define EB_TEST_BUS_TH_H

#include <stdlib.h>
#include <string.h>

#include <ebnode/bus.h>

#include "tests/harness/th.h"

#define REC_MAX 4096

/* What one consumer saw. */
typedef struct rec {
	int              n;
	json_int_t       vals[REC_MAX]; /* integer bodies, in arrival order */
	eb_bus_consumer *c;
	int              reply;     /* reply with the body + 1000 */
	int              fail_code; /* fail(code,"oops") instead, if != 0 */
	int              close_self;
	eb_bus_msg      *held;
} rec;

static __attribute__((unused)) void
rec_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	rec          *r = arg;
	const json_t *b = eb_bus_msg_body(msg);

	assert_ptr_equal(c, r->c);
	if (r->n < REC_MAX) {
		r->vals[r->n] = json_is_integer(b) ? json_integer_value(b) : -1;
	}
	r->n++;
	if (r->fail_code != 0) {
		assert_int_equal(
		    eb_bus_msg_fail(msg, r->fail_code, "oops!"), 0);
	} else if (r->reply) {
		json_t *v = json_integer(
		    (json_is_integer(b) ? json_integer_value(b) : 0) + 1000);

		assert_int_equal(
		    eb_bus_msg_reply(msg, v, NULL, NULL, NULL, NULL), 0);
		json_decref(v);
	}
	if (r->close_self) {
		eb_bus_consumer_close(c);
	}
}

/* What one request's callback saw. */
typedef struct outcome {
	int                 calls;
	int                 status;
	eb_bus_failure_type type;
	int                 code;
	char                message[256];
	json_int_t          val;
	char                reply_address[64];
} outcome;

static __attribute__((unused)) void
outcome_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg)
{
	outcome *o = arg;

	(void) bus;
	o->calls++;
	o->status = status;
	if (status == 0) {
		const json_t *b = eb_bus_msg_body(reply);

		assert_non_null(reply);
		assert_null(failure);
		o->val = json_is_integer(b) ? json_integer_value(b) : -1;
		if (eb_bus_msg_reply_address(reply) != NULL) {
			(void) snprintf(o->reply_address,
			    sizeof(o->reply_address), "%s",
			    eb_bus_msg_reply_address(reply));
		}
	} else {
		assert_null(reply);
		assert_non_null(failure);
		o->type = failure->type;
		o->code = failure->code;
		(void) snprintf(
		    o->message, sizeof(o->message), "%s", failure->message);
	}
}

static int bus_closed;

static __attribute__((unused)) void
bus_closed_cb(eb_bus *bus, void *arg)
{
	(void) bus;
	(void) arg;
	bus_closed++;
}

static __attribute__((unused)) eb_bus *
bus_open(th_loop *t, uint64_t timeout_ms, uint32_t queue_max)
{
	eb_bus_opts opts;
	eb_bus     *bus = NULL;

	eb_bus_opts_init(&opts);
	opts.node_id = "node-a";
	if (timeout_ms != 0) {
		opts.request_timeout_ms = timeout_ms;
	}
	if (queue_max != 0) {
		opts.consumer_queue_max = queue_max;
	}
	assert_int_equal(eb_bus_new(&t->loop, &opts, &bus), 0);
	return bus;
}

/* Closes the bus and runs the loop until everything is gone. */
static __attribute__((unused)) void
bus_shut(th_loop *t, eb_bus *bus)
{
	bus_closed = 0;
	eb_bus_close(bus, bus_closed_cb, NULL);
	assert_int_equal(bus_closed, 0); /* never synchronous */
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(bus_closed, 1);
}

static __attribute__((unused)) int
send_int(eb_bus *bus, const char *address, json_int_t v)
{
	json_t *b = json_integer(v);
	int     rv = eb_bus_send(bus, address, b, NULL, NULL);

	json_decref(b);
	return rv;
}

static __attribute__((unused)) int
request_int(eb_bus *bus, const char *address, json_int_t v, uint64_t timeout_ms,
    outcome *o)
{
	eb_bus_send_opts so;
	json_t          *b = json_integer(v);
	int              rv;

	eb_bus_send_opts_init(&so);
	so.timeout_ms = timeout_ms;
	rv = eb_bus_request(bus, address, b, NULL, &so, outcome_cb, o);
	json_decref(b);
	return rv;
}

#endif
