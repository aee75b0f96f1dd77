/*
 * Unit tests for the ext seam (eventbus/vertx_route.c): ebnode's own
 * addresses (EB__BUS_OWN_PREFIX, e.g. the ingress leader's) never cross to
 * ext nodes. Their interest is not reported to the ext ops, an ext node's
 * interest in one is ignored, and an ext node's request to one is answered
 * NO_HANDLERS without reaching the local consumer; any other address
 * crosses as before. One bus with a link manager (the seam wraps the
 * links'), recording ext ops, no network traffic.
 */
#include <stdio.h>
#include <string.h>

#include <ebnode/bus.h>
#include <ebnode/ingress.h>
#include <ebnode/link.h>

#include "eventbus/bus_ext.h"
#include "tests/unit/eventbus/cluster_th.h"

typedef struct xrec {
	char     interest[8][64]; /* addresses reported, in order */
	uint32_t count[8];
	int      n_interest;
	int      n_fail;
	int      fail_type;
	char     fail_reply[64];
	char     fail_msg[200];
	int      n_forward;
} xrec;

static int
x_forward(void *ctx, uint32_t node, eb_bus_msg *msg, int kind)
{
	(void) node;
	(void) msg;
	(void) kind;
	((xrec *) ctx)->n_forward++;
	return 0;
}

static int
x_fail(void *ctx, uint32_t node, const char *reply_address, int status,
    eb_bus_failure_type type, int code, const char *message)
{
	xrec *x = ctx;

	(void) node;
	(void) status;
	(void) code;
	x->n_fail++;
	x->fail_type = (int) type;
	(void) snprintf(x->fail_reply, sizeof(x->fail_reply), "%s",
	    reply_address != NULL ? reply_address : "");
	(void) snprintf(x->fail_msg, sizeof(x->fail_msg), "%s",
	    message != NULL ? message : "");
	return 0;
}

static const char *
x_peer_name(void *ctx, uint32_t node)
{
	(void) ctx;
	(void) node;
	return "jvm";
}

static void
x_interest(void *ctx, const char *address, uint32_t count)
{
	xrec *x = ctx;

	if (x->n_interest < 8) {
		(void) snprintf(x->interest[x->n_interest],
		    sizeof(x->interest[0]), "%s", address);
		x->count[x->n_interest] = count;
	}
	x->n_interest++;
}

static const eb__bus_ext_ops x_ops = { x_forward, x_fail, x_peer_name,
	x_interest };

static void
test_own_addresses_stay_inside(void **state)
{
	th_loop *t = *state;
	cnode    n[1];
	xrec     x;
	rec      own = { 0 };
	rec      plain = { 0 };
	rec      late = { 0 };
	json_t  *h;
	uint32_t jvm = EB__BUS_EXT_NODE | 1u;

	memset(&x, 0, sizeof(x));
	cluster_open(t, n, 1, 0);
	/* registered before the seam: reported at attach, own ones not */
	assert_int_equal(
	    eb_bus_consumer_new(n[0].bus, EB_INGRESS_LEADER_ADDRESS, 0,
	        rec_handler, &own, &own.c),
	    0);
	assert_int_equal(eb_bus_consumer_new(n[0].bus, "orders", 0, rec_handler,
	                     &plain, &plain.c),
	    0);
	assert_int_equal(eb__bus_ext_attach(n[0].bus, &x_ops, &x), 0);
	assert_int_equal(x.n_interest, 1);
	assert_string_equal(x.interest[0], "orders");
	assert_int_equal(x.count[0], 1);
	/* registered after: the same rule */
	assert_int_equal(eb_bus_consumer_new(n[0].bus, "__ebnode.other", 0,
	                     rec_handler, &late, &late.c),
	    0);
	assert_int_equal(x.n_interest, 1);
	eb_bus_consumer_close(late.c);
	assert_int_equal(x.n_interest, 1);
	/* an ext node's interest in an own address is not a handler */
	eb__bus_ext_interest(n[0].bus, "__ebnode.remote", jvm, 2);
	assert_int_equal(eb_bus_handler_count(n[0].bus, "__ebnode.remote"), 0);
	eb__bus_ext_interest(n[0].bus, "remote.plain", jvm, 2);
	assert_int_equal(eb_bus_handler_count(n[0].bus, "remote.plain"), 2);
	/* an ext node's request to an own address: NO_HANDLERS, to it */
	h = json_object();
	eb__bus_ext_deliver(
	    n[0].bus, jvm, EB_INGRESS_LEADER_ADDRESS, "r-1", 0, "{}", 2, h);
	assert_int_equal(x.n_fail, 1);
	assert_int_equal(x.fail_type, EB_BUS_NO_HANDLERS);
	assert_string_equal(x.fail_reply, "r-1");
	assert_string_equal(
	    x.fail_msg, "No handlers for address " EB_INGRESS_LEADER_ADDRESS);
	/* a send or publish to one is dropped */
	eb__bus_ext_deliver(
	    n[0].bus, jvm, EB_INGRESS_LEADER_ADDRESS, NULL, 1, "{}", 2, h);
	eb__bus_ext_deliver(
	    n[0].bus, jvm, EB_INGRESS_LEADER_ADDRESS, NULL, 0, "{}", 2, h);
	/* another address is delivered as before */
	eb__bus_ext_deliver(n[0].bus, jvm, "orders", NULL, 0, "7", 1, h);
	json_decref(h);
	assert_int_equal(th_run_until(t, th_flag_set, &plain.n, 2000), 0);
	assert_int_equal(plain.vals[0], 7);
	assert_int_equal(own.n, 0);
	assert_int_equal(x.n_fail, 1);
	eb__bus_ext_detach(n[0].bus);
	eb_bus_consumer_close(own.c);
	eb_bus_consumer_close(plain.c);
	cluster_close(t, n, 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_own_addresses_stay_inside, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
