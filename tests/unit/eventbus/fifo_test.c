/*
 * FIFO per sender across sends, publishes and replies (issue 17): a handler
 * that sends (or publishes) to an address and then answers a request, in
 * one call, must have its message handed to the address's consumer before
 * the requester's reply callback runs, on one node and across a link. The
 * sender's link coalesces the output of one loop turn into one write, so
 * across nodes the two frames arrive in one read. Before the fix the bus
 * ran every reply callback of a turn before any consumer delivery.
 */
#include <signal.h>
#include <stdio.h>

#include <ebnode/bus.h>
#include <ebnode/link.h>

#include "tests/unit/eventbus/cluster_th.h"

#define ROUNDS 200

typedef struct order_log {
	eb_bus *svc_bus; /* where the service sends from */
	int     publish;
	char    ev[2 * ROUNDS + 8]; /* 'm': the message, 'r': the reply */
	int     n;
	int     replies;
} order_log;

static order_log lg;

/* The service: sends (or publishes) "m" to x, then answers. */
static void
svc_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	json_t *v = json_integer(1);

	(void) c;
	(void) arg;
	if (lg.publish) {
		assert_int_equal(
		    eb_bus_publish(lg.svc_bus, "x", v, NULL, NULL), 0);
	} else {
		assert_int_equal(
		    eb_bus_send(lg.svc_bus, "x", v, NULL, NULL), 0);
	}
	assert_int_equal(eb_bus_msg_reply(msg, v, NULL, NULL, NULL, NULL), 0);
	json_decref(v);
}

static void
x_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	(void) c;
	(void) msg;
	(void) arg;
	lg.ev[lg.n++] = 'm';
}

static void
reply_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg)
{
	(void) bus;
	(void) reply;
	(void) failure;
	(void) arg;
	assert_int_equal(status, 0);
	lg.ev[lg.n++] = 'r';
	lg.replies++;
}

static int
round_done(void *arg)
{
	(void) arg;
	return lg.replies > 0 && lg.n >= 2;
}

/* ROUNDS requests one after the other: each must log "mr". */
static void
run_rounds(th_loop *t, eb_bus *requester)
{
	for (int i = 0; i < ROUNDS; i++) {
		lg.n = 0;
		lg.replies = 0;
		assert_int_equal(eb_bus_request(requester, "svc", NULL, NULL,
		                     NULL, reply_cb, NULL),
		    0);
		assert_int_equal(th_run_until(t, round_done, NULL, 2000), 0);
		if (lg.ev[0] != 'm' || lg.ev[1] != 'r') {
			fail_msg("round %d: the reply overtook the message "
			         "(%c%c)",
			    i, lg.ev[0], lg.ev[1]);
		}
	}
}

static void
local_case(void **state, int publish)
{
	th_loop         *t = *state;
	eb_bus          *bus;
	eb_bus_opts      o;
	eb_bus_consumer *svc;
	eb_bus_consumer *x;

	eb_bus_opts_init(&o);
	assert_int_equal(eb_bus_new(&t->loop, &o, &bus), 0);
	memset(&lg, 0, sizeof(lg));
	lg.svc_bus = bus;
	lg.publish = publish;
	assert_int_equal(
	    eb_bus_consumer_new(bus, "svc", 0, svc_handler, NULL, &svc), 0);
	assert_int_equal(
	    eb_bus_consumer_new(bus, "x", 0, x_handler, NULL, &x), 0);
	run_rounds(t, bus);
	n_bus_closed = 0;
	eb_bus_close(bus, cbus_closed_cb, NULL);
	assert_int_equal(th_run_until(t, th_flag_set, &n_bus_closed, 2000), 0);
}

static void
test_local_send_then_reply(void **state)
{
	local_case(state, 0);
}

static void
test_local_publish_then_reply(void **state)
{
	local_case(state, 1);
}

/* The service on node 0, the requester and x on node 1: node 0 writes the
 * message frame and the reply frame in one turn, node 1 reads them in one
 * read and must deliver in that order. */
static void
remote_case(void **state, int publish)
{
	th_loop         *t = *state;
	cnode            n[2];
	eb_bus_consumer *svc;
	eb_bus_consumer *x;

	cluster_open(t, n, 2, 0);
	memset(&lg, 0, sizeof(lg));
	lg.svc_bus = n[0].bus;
	lg.publish = publish;
	assert_int_equal(
	    eb_bus_consumer_new(n[0].bus, "svc", 0, svc_handler, NULL, &svc),
	    0);
	assert_int_equal(
	    eb_bus_consumer_new(n[1].bus, "x", 0, x_handler, NULL, &x), 0);
	wait_remote(t, n[1].bus, "svc", 1);
	wait_remote(t, n[0].bus, "x", 1);
	run_rounds(t, n[1].bus);
	cluster_close(t, n, 2);
}

static void
test_remote_send_then_reply(void **state)
{
	remote_case(state, 0);
}

static void
test_remote_publish_then_reply(void **state)
{
	remote_case(state, 1);
}

int
main(void)
{
	(void) signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_local_send_then_reply, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_local_publish_then_reply, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_remote_send_then_reply, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_remote_publish_then_reply, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
