/*
 * Unit tests for delivery receipts and the fence (eventbus/receipt.c):
 * buses with link managers on one loop over 127.0.0.1. A confirmed send is
 * ok only after the consumer's handler ran with the message, locally and on
 * another node; every way a message can be lost gives a failure exactly
 * once: consumer queue full, consumer closed first, no handler at the
 * receiver, link down before the receipt (at once), receiver silent (a
 * paused proxy: timeout), fence rejection (counted).
 */
#include <stdio.h>

#include <ebnode/bus.h>
#include <ebnode/link.h>

#include "tests/harness/proxy.h"
#include "tests/unit/eventbus/cluster_th.h"

typedef struct rout {
	int        n;      /* callbacks */
	int        status; /* of the last one */
	uint32_t   targets;
	uint32_t   delivered;
	char       reason[200];
	int        handler_n_at_cb; /* the handler's count when cb ran */
	rec       *h;               /* the handler to look at, or NULL */
	uint64_t   at_ms;           /* loop time of the callback */
	uv_loop_t *loop;
} rout;

static void
rout_cb(eb_bus *bus, int status, const eb_bus_receipt *r, void *arg)
{
	rout *o = arg;

	(void) bus;
	o->n++;
	o->status = status;
	o->targets = r->targets;
	o->delivered = r->delivered;
	(void) snprintf(o->reason, sizeof(o->reason), "%s",
	    r->reason != NULL ? r->reason : "");
	o->handler_n_at_cb = o->h != NULL ? o->h->n : -1;
	o->at_ms = o->loop != NULL ? uv_now(o->loop) : 0;
}

static int
rout_pred(void *arg)
{
	return ((rout *) arg)->n > 0;
}

struct routs {
	rout *o;
	int   n;
};

static int
routs_pred(void *arg)
{
	struct routs *r = arg;

	for (int i = 0; i < r->n; i++) {
		if (r->o[i].n == 0) {
			return 0;
		}
	}
	return 1;
}

static int
send_c(eb_bus *bus, const char *address, int v, const eb_bus_send_opts *o,
    rout *out)
{
	json_t *b = json_integer(v);
	int rv = eb_bus_send_confirmed(bus, address, b, NULL, o, rout_cb, out);

	json_decref(b);
	return rv;
}

static void
test_local_ok(void **state)
{
	th_loop *t = *state;
	eb_bus  *bus;
	rec      r = { 0 };
	rout     o = { .h = &r };

	assert_int_equal(eb_bus_new(&t->loop, NULL, &bus), 0);
	assert_int_equal(
	    eb_bus_consumer_new(bus, "x", 0, rec_handler, &r, &r.c), 0);
	assert_int_equal(send_c(bus, "x", 7, NULL, &o), 0);
	assert_int_equal(o.n, 0); /* never from inside the call */
	assert_int_equal(th_run_until(t, rout_pred, &o, 2000), 0);
	assert_int_equal(o.status, 0);
	assert_int_equal(o.delivered, 1);
	assert_int_equal(o.targets, 1);
	assert_int_equal(o.handler_n_at_cb, 1); /* after the handler ran */
	assert_int_equal(r.vals[0], 7);
	/* No handler: EB_ENOHANDLERS, still a callback. */
	memset(&o, 0, sizeof(o));
	assert_int_equal(send_c(bus, "nobody", 1, NULL, &o), 0);
	assert_int_equal(th_run_until(t, rout_pred, &o, 2000), 0);
	assert_int_equal(o.status, EB_ENOHANDLERS);
	assert_string_equal(o.reason, "No handlers for address nobody");
	/* Consumer closed before delivery: a failure, not silence. */
	memset(&o, 0, sizeof(o));
	assert_int_equal(send_c(bus, "x", 8, NULL, &o), 0);
	eb_bus_consumer_close(r.c);
	assert_int_equal(th_run_until(t, rout_pred, &o, 2000), 0);
	assert_int_equal(o.status, EB_ENOHANDLERS);
	assert_int_equal(r.n, 1);
	bus_shut(t, bus);
}

static void
refusing_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	(void) msg;
	(*(int *) arg)++;
	eb_bus_consumer_undelivered(c, EB_ECLOSED); /* e.g. a closing socket */
}

static void
test_handler_refuses(void **state)
{
	th_loop         *t = *state;
	eb_bus          *bus;
	eb_bus_consumer *c;
	int              calls = 0;
	rout             o = { 0 };
	eb_bus_totals    tot;

	assert_int_equal(eb_bus_new(&t->loop, NULL, &bus), 0);
	assert_int_equal(
	    eb_bus_consumer_new(bus, "x", 0, refusing_handler, &calls, &c), 0);
	eb_bus_consumer_undelivered(c, EB_ECLOSED); /* outside: no effect */
	assert_int_equal(send_c(bus, "x", 1, NULL, &o), 0);
	assert_int_equal(th_run_until(t, rout_pred, &o, 2000), 0);
	assert_int_equal(calls, 1);
	assert_int_equal(o.status, EB_ECLOSED);
	assert_int_equal(o.delivered, 0);
	assert_string_equal(o.reason, "the consumer could not take it");
	eb_bus_stats_totals(bus, &tot);
	assert_int_equal(tot.dropped, 1);
	assert_int_equal(tot.receipt_failures, 1);
	bus_shut(t, bus);
}

static void
test_local_overflow_and_close(void **state)
{
	th_loop    *t = *state;
	eb_bus_opts bo;
	eb_bus     *bus;
	rec         r = { 0 };
	rout        o[5];
	rout        pending = { 0 };
	int         ok = 0;
	int         full = 0;

	memset(o, 0, sizeof(o));
	eb_bus_opts_init(&bo);
	bo.consumer_queue_max = 2;
	assert_int_equal(eb_bus_new(&t->loop, &bo, &bus), 0);
	assert_int_equal(
	    eb_bus_consumer_new(bus, "x", 0, rec_handler, &r, &r.c), 0);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(send_c(bus, "x", i, NULL, &o[i]), 0);
	}
	struct routs all = { o, 5 };
	assert_int_equal(th_run_until(t, routs_pred, &all, 2000), 0);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(o[i].n, 1);
		ok += o[i].status == 0;
		full += o[i].status == EB_EFULL;
	}
	assert_int_equal(ok, 2);
	assert_int_equal(full, 3);
	assert_int_equal(r.n, 2);
	/* A confirmed send queued when the bus closes: EB_ECANCELED once. */
	assert_int_equal(send_c(bus, "x", 9, NULL, &pending), 0);
	bus_shut(t, bus);
	assert_int_equal(pending.n, 1);
	assert_int_equal(pending.status, EB_ECANCELED);
}

static void
test_remote_ok_and_publish(void **state)
{
	th_loop      *t = *state;
	cnode         n[3];
	rec           r[3];
	rout          o = { 0 };
	rout          p = { 0 };
	eb_bus_totals tot;

	memset(r, 0, sizeof(r));
	cluster_open(t, n, 3, 0);
	assert_int_equal(
	    eb_bus_consumer_new(n[1].bus, "x", 0, rec_handler, &r[1], &r[1].c),
	    0);
	wait_remote(t, n[0].bus, "x", 1);
	o.h = &r[1];
	assert_int_equal(send_c(n[0].bus, "x", 5, NULL, &o), 0);
	eb_bus_stats_totals(n[0].bus, &tot);
	assert_int_equal(tot.pending_receipts, 1);
	assert_int_equal(th_run_until(t, rout_pred, &o, 2000), 0);
	assert_int_equal(o.status, 0);
	assert_int_equal(o.delivered, 1);
	assert_int_equal(o.handler_n_at_cb, 1);
	eb_bus_stats_totals(n[0].bus, &tot);
	assert_int_equal(tot.pending_receipts, 0);
	assert_int_equal(tot.receipt_failures, 0);
	/* Publish: a local consumer and two nodes; ok from all three. */
	assert_int_equal(
	    eb_bus_consumer_new(n[0].bus, "x", 0, rec_handler, &r[0], &r[0].c),
	    0);
	assert_int_equal(
	    eb_bus_consumer_new(n[2].bus, "x", 0, rec_handler, &r[2], &r[2].c),
	    0);
	wait_remote(t, n[0].bus, "x", 2);
	json_t *b = json_integer(6);
	assert_int_equal(
	    eb_bus_publish_confirmed(n[0].bus, "x", b, NULL, NULL, rout_cb, &p),
	    0);
	json_decref(b);
	assert_int_equal(th_run_until(t, rout_pred, &p, 2000), 0);
	assert_int_equal(p.status, 0);
	assert_int_equal(p.targets, 3);
	assert_int_equal(p.delivered, 3);
	assert_int_equal(r[0].n, 1);
	assert_int_equal(r[1].n, 2);
	assert_int_equal(r[2].n, 1);
	/* The receiver no longer handles it: NO_HANDLERS comes back. */
	memset(&p, 0, sizeof(p));
	eb_bus_consumer_close(r[2].c);
	b = json_integer(7);
	assert_int_equal(
	    eb_bus_publish_confirmed(n[0].bus, "x", b, NULL, NULL, rout_cb, &p),
	    0);
	json_decref(b);
	assert_int_equal(th_run_until(t, rout_pred, &p, 2000), 0);
	/* Either the interest update or the message got there first: both
	 * end in a confirmed outcome, never in silence. */
	assert_true(p.status == 0 || p.status == EB_ENOHANDLERS);
	cluster_close(t, n, 3);
}

static void
test_remote_overflow(void **state)
{
	th_loop *t = *state;
	cnode    n[2];
	rec      r = { 0 };
	rout     o[6];
	int      ok = 0;
	int      full = 0;

	memset(o, 0, sizeof(o));
	cluster_open(t, n, 2, 2);
	assert_int_equal(
	    eb_bus_consumer_new(n[1].bus, "x", 0, rec_handler, &r, &r.c), 0);
	wait_remote(t, n[0].bus, "x", 1);
	/* One loop turn: the six frames arrive together and the queue of 2
	 * overflows at the receiver. */
	for (int i = 0; i < 6; i++) {
		assert_int_equal(send_c(n[0].bus, "x", i, NULL, &o[i]), 0);
	}
	struct routs all = { o, 6 };
	assert_int_equal(th_run_until(t, routs_pred, &all, 3000), 0);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(o[i].n, 1);
		ok += o[i].status == 0;
		if (o[i].status == EB_EFULL) {
			full++;
			assert_string_equal(o[i].reason,
			    "node node-b: queue full (0 of 1 consumers)");
		}
	}
	assert_int_equal(ok + full, 6);
	assert_true(full >= 1);
	assert_int_equal(ok, r.n); /* ok exactly for what was handled */
	cluster_close(t, n, 2);
}

static void
test_link_down_fails_at_once(void **state)
{
	th_loop *t = *state;
	cnode    n[2];
	rec      r = { 0 };
	rout     o[3];
	uint64_t t0;

	memset(o, 0, sizeof(o));
	cluster_open(t, n, 2, 0);
	assert_int_equal(
	    eb_bus_consumer_new(n[1].bus, "x", 0, rec_handler, &r, &r.c), 0);
	wait_remote(t, n[0].bus, "x", 1);
	for (int i = 0; i < 3; i++) {
		o[i].loop = &t->loop;
		assert_int_equal(send_c(n[0].bus, "x", i, NULL, &o[i]), 0);
	}
	/* The receiver's links go before anything is confirmed. */
	t0 = uv_now(&t->loop);
	eb_link_mgr_close(n[1].mgr, cmgr_closed_cb, &n[1]);
	struct routs all = { o, 3 };
	assert_int_equal(th_run_until(t, routs_pred, &all, 2000), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(o[i].n, 1);
		assert_int_equal(o[i].status, EB_ELINKDOWN);
		assert_string_equal(o[i].reason, "Link to node node-b lost");
		assert_true(o[i].at_ms - t0 < 500); /* not the 5 s timeout */
	}
	assert_int_equal(r.n, 0);
	cluster_close(t, n, 2);
}

static void
proxy_closed(void *arg)
{
	(*(int *) arg)++;
}

static int
flag_pred(void *arg)
{
	return *(int *) arg > 0;
}

static int
up_pred(void *arg)
{
	cnode *n = arg;

	return eb_link_mgr_peer_up(n[0].mgr, n[1].id) &&
	       eb_link_mgr_peer_up(n[1].mgr, n[0].id);
}

static void
test_receiver_silent_times_out(void **state)
{
	th_loop         *t = *state;
	cnode            n[2];
	rec              r = { 0 };
	rout             o = { 0 };
	th_proxy        *px;
	eb_bus_send_opts so;
	int              closed = 0;

	/* node-a dials node-b through a proxy that can hold the bytes. */
	for (int i = 0; i < 2; i++) {
		eb_link_opts lo;

		memset(&n[i], 0, sizeof(n[i]));
		(void) snprintf(n[i].id, sizeof(n[i].id), "node-%c", 'a' + i);
		eb_bus_opts bo;
		eb_bus_opts_init(&bo);
		bo.node_id = n[i].id;
		assert_int_equal(eb_bus_new(&t->loop, &bo, &n[i].bus), 0);
		eb_link_opts_init(&lo);
		lo.node_id = n[i].id;
		assert_int_equal(
		    eb_link_mgr_new(&t->loop, &lo, &n[i].mgr, NULL), 0);
		assert_int_equal(eb_bus_cluster_attach(n[i].bus, n[i].mgr), 0);
		assert_int_equal(eb_link_mgr_start(n[i].mgr), 0);
	}
	assert_int_equal(th_proxy_new(&t->loop, 0, "127.0.0.1",
	                     eb_link_mgr_port(n[1].mgr), &px),
	    0);
	assert_int_equal(eb_link_mgr_peer_add(
	                     n[0].mgr, n[1].id, "127.0.0.1", th_proxy_port(px)),
	    0);
	assert_int_equal(eb_link_mgr_peer_add(n[1].mgr, n[0].id, "127.0.0.1",
	                     eb_link_mgr_port(n[0].mgr)),
	    0);
	assert_int_equal(th_run_until(t, up_pred, n, 3000), 0);
	assert_int_equal(
	    eb_bus_consumer_new(n[1].bus, "x", 0, rec_handler, &r, &r.c), 0);
	wait_remote(t, n[0].bus, "x", 1);
	th_proxy_pause(px);
	eb_bus_send_opts_init(&so);
	so.receipt_timeout_ms = 150;
	o.loop = &t->loop;
	uint64_t t0 = uv_now(&t->loop);
	assert_int_equal(send_c(n[0].bus, "x", 1, &so, &o), 0);
	assert_int_equal(th_run_until(t, rout_pred, &o, 2000), 0);
	assert_int_equal(o.status, EB_ETIMEOUT);
	assert_string_equal(o.reason, "no delivery receipt within 150 ms");
	assert_true(o.at_ms - t0 >= 150);
	assert_true(eb_link_mgr_peer_up(n[0].mgr, n[1].id)); /* still up */
	/* Released, the message arrives late; the late receipt is ignored
	 * (the callback ran exactly once). */
	th_proxy_resume(px);
	assert_int_equal(th_run_until(t, flag_pred, &r.n, 2000), 0);
	assert_int_equal(o.n, 1);
	cluster_close(t, n, 2);
	th_proxy_close(px, proxy_closed, &closed);
	assert_int_equal(th_run_until(t, flag_pred, &closed, 2000), 0);
}

static void
test_fence(void **state)
{
	th_loop         *t = *state;
	cnode            n[2];
	rec              r[2];
	rout             o[4];
	eb_bus_send_opts so;
	eb_bus_totals    tot;

	memset(r, 0, sizeof(r));
	memset(o, 0, sizeof(o));
	cluster_open(t, n, 2, 0);
	assert_int_equal(
	    eb_bus_consumer_new(n[1].bus, "x", 0, rec_handler, &r[1], &r[1].c),
	    0);
	wait_remote(t, n[0].bus, "x", 1);
	eb_bus_fence_raise(n[1].bus, 10);
	eb_bus_fence_raise(n[1].bus, 3); /* never lowers */
	assert_int_equal(eb_bus_fence(n[1].bus), 10);
	eb_bus_send_opts_init(&so);
	so.epoch = 5; /* stale at the receiver, not at the sender */
	assert_int_equal(send_c(n[0].bus, "x", 1, &so, &o[0]), 0);
	assert_int_equal(th_run_until(t, rout_pred, &o[0], 2000), 0);
	assert_int_equal(o[0].status, EB_EFENCED);
	assert_int_equal(r[1].n, 0);
	eb_bus_stats_totals(n[1].bus, &tot);
	assert_int_equal(tot.fenced, 1);
	/* Accepted stamps raise the receiver's fence. */
	so.epoch = 12;
	assert_int_equal(send_c(n[0].bus, "x", 2, &so, &o[1]), 0);
	assert_int_equal(th_run_until(t, rout_pred, &o[1], 2000), 0);
	assert_int_equal(o[1].status, 0);
	assert_int_equal(r[1].n, 1);
	assert_int_equal(eb_bus_fence(n[1].bus), 12);
	/* Local delivery is fenced the same way, also while queued. */
	assert_int_equal(
	    eb_bus_consumer_new(n[0].bus, "l", 0, rec_handler, &r[0], &r[0].c),
	    0);
	so.epoch = 20;
	so.local_only = 1;
	assert_int_equal(send_c(n[0].bus, "l", 3, &so, &o[2]), 0);
	eb_bus_fence_raise(n[0].bus, 21); /* a newer leader, before delivery */
	assert_int_equal(th_run_until(t, rout_pred, &o[2], 2000), 0);
	assert_int_equal(o[2].status, EB_EFENCED);
	assert_int_equal(r[0].n, 0);
	/* A stale stamp at the sender is refused at once. */
	assert_int_equal(send_c(n[0].bus, "l", 4, &so, &o[3]), 0);
	assert_int_equal(th_run_until(t, rout_pred, &o[3], 2000), 0);
	assert_int_equal(o[3].status, EB_EFENCED);
	assert_int_equal(
	    eb_bus_send(n[0].bus, "l", NULL, NULL, &so), EB_EFENCED);
	eb_bus_stats_totals(n[0].bus, &tot);
	assert_int_equal(tot.fenced, 3);
	assert_int_equal(r[0].n, 0);
	cluster_close(t, n, 2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_local_ok, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_handler_refuses, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_local_overflow_and_close, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_remote_ok_and_publish, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_remote_overflow, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_link_down_fails_at_once, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_receiver_silent_times_out, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_fence, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
