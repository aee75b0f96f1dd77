/*
 * Unit tests for "an acknowledgement means delivered" (ingress/router.c):
 * a leader bus (node-a, with the ingress) linked to node-b through a proxy
 * that can hold the bytes. The ack comes only after the target's handler
 * ran; a send whose receipt fails is routed once more to another handler;
 * with none, the sender gets 508 naming the stamp and the reason.
 */
#include <stdint.h>
#include <stdio.h>

#include <ebnode/bus.h>
#include <ebnode/ingress.h>
#include <ebnode/link.h>

#include "tests/harness/proxy.h"
#include "tests/unit/eventbus/cluster_th.h"

typedef struct answer {
	int       n;
	int       status;
	long long seq;
	int       code;
	char      text[400];
	int       target_n_at_ack; /* handler invocations when it came */
} answer;

static rec g_local;  /* a handler of "orders" on node-a */
static rec g_remote; /* a handler of "orders" on node-b */

static void
answer_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg)
{
	answer *a = arg;

	(void) bus;
	a->n++;
	a->status = status;
	a->target_n_at_ack = g_local.n + g_remote.n;
	if (status == 0) {
		a->seq = (long long) json_integer_value(
		    json_object_get(eb_bus_msg_body(reply), "seq"));
	} else {
		a->code = failure->code;
		(void) snprintf(
		    a->text, sizeof(a->text), "%s", failure->message);
	}
}

static int
answered_pred(void *arg)
{
	return ((answer *) arg)->n > 0;
}

typedef struct world {
	cnode       n[2];
	th_proxy   *px;
	eb_ingress *in;
} world;

static int
up_pred(void *arg)
{
	cnode *n = arg;

	return eb_link_mgr_peer_up(n[0].mgr, n[1].id) &&
	       eb_link_mgr_peer_up(n[1].mgr, n[0].id);
}

static void
world_open(th_loop *t, world *w)
{
	eb_ingress_opts         io;
	eb_errbuf               err;
	static eb_ingress_route def = { .to = "orders" };

	memset(&g_local, 0, sizeof(g_local));
	memset(&g_remote, 0, sizeof(g_remote));
	for (int i = 0; i < 2; i++) {
		eb_bus_opts  bo;
		eb_link_opts lo;

		memset(&w->n[i], 0, sizeof(w->n[i]));
		(void) snprintf(
		    w->n[i].id, sizeof(w->n[i].id), "node-%c", 'a' + i);
		eb_bus_opts_init(&bo);
		bo.node_id = w->n[i].id;
		bo.receipt_timeout_ms = 150;
		assert_int_equal(eb_bus_new(&t->loop, &bo, &w->n[i].bus), 0);
		eb_link_opts_init(&lo);
		lo.node_id = w->n[i].id;
		assert_int_equal(
		    eb_link_mgr_new(&t->loop, &lo, &w->n[i].mgr, NULL), 0);
		assert_int_equal(
		    eb_bus_cluster_attach(w->n[i].bus, w->n[i].mgr), 0);
		assert_int_equal(eb_link_mgr_start(w->n[i].mgr), 0);
	}
	/* node-a dials node-b (lower id) through the proxy. */
	assert_int_equal(th_proxy_new(&t->loop, 0, "127.0.0.1",
	                     eb_link_mgr_port(w->n[1].mgr), &w->px),
	    0);
	assert_int_equal(eb_link_mgr_peer_add(w->n[0].mgr, w->n[1].id,
	                     "127.0.0.1", th_proxy_port(w->px)),
	    0);
	assert_int_equal(eb_link_mgr_peer_add(w->n[1].mgr, w->n[0].id,
	                     "127.0.0.1", eb_link_mgr_port(w->n[0].mgr)),
	    0);
	assert_int_equal(th_run_until(t, up_pred, w->n, 3000), 0);
	eb_ingress_opts_init(&io);
	io.default_route = &def;
	io.warmup_ms = 0;
	assert_int_equal(
	    eb_ingress_new(&t->loop, w->n[0].bus, &io, &err, &w->in), 0);
	assert_int_equal(eb_ingress_start(w->in), 0);
	assert_int_equal(eb_ingress_lead(w->in, 7), 0);
}

static void
ingress_closed(eb_ingress *in, void *arg)
{
	(void) in;
	(*(int *) arg)++;
}

static void
proxy_closed(void *arg)
{
	(*(int *) arg)++;
}

static int
two_pred(void *arg)
{
	return *(int *) arg == 2;
}

static void
world_close(th_loop *t, world *w)
{
	int closed = 0;

	eb_ingress_close(w->in, ingress_closed, &closed);
	th_proxy_close(w->px, proxy_closed, &closed);
	assert_int_equal(th_run_until(t, two_pred, &closed, 2000), 0);
	cluster_close(t, w->n, 2);
}

static void
request(world *w, int v, answer *a)
{
	json_t *b = json_integer(v);

	assert_int_equal(eb_bus_request(w->n[0].bus, "external.ingress", b,
	                     NULL, NULL, answer_cb, a),
	    0);
	json_decref(b);
}

static void
test_ack_after_remote_delivery(void **state)
{
	th_loop *t = *state;
	world    w;
	answer   a = { 0 };

	world_open(t, &w);
	assert_int_equal(eb_bus_consumer_new(w.n[1].bus, "orders", 0,
	                     rec_handler, &g_remote, &g_remote.c),
	    0);
	wait_remote(t, w.n[0].bus, "orders", 1);
	request(&w, 1, &a);
	assert_int_equal(th_run_until(t, answered_pred, &a, 2000), 0);
	assert_int_equal(a.status, 0);
	assert_int_equal(a.seq, 1);
	assert_int_equal(a.target_n_at_ack, 1); /* delivered before the ack */
	/* Held by the network: no ack while no receipt; then 508 (the only
	 * handler's node never confirmed). */
	memset(&a, 0, sizeof(a));
	th_proxy_pause(w.px);
	request(&w, 2, &a);
	assert_int_equal(th_run_until(t, answered_pred, &a, 100), -1);
	assert_int_equal(th_run_until(t, answered_pred, &a, 2000), 0);
	assert_int_equal(a.code, EB_INGRESS_UNCONFIRMED);
	assert_string_equal(a.text,
	    "ebnode: delivery to orders not confirmed (epoch 7, seq 2): no "
	    "delivery receipt within 150 ms; it may have been delivered");
	th_proxy_resume(w.px);
	world_close(t, &w);
}

static void
test_reroute_to_another_handler(void **state)
{
	th_loop         *t = *state;
	world            w;
	answer           a[2];
	eb_ingress_stats st;

	memset(a, 0, sizeof(a));
	world_open(t, &w);
	assert_int_equal(eb_bus_consumer_new(w.n[0].bus, "orders", 0,
	                     rec_handler, &g_local, &g_local.c),
	    0);
	assert_int_equal(eb_bus_consumer_new(w.n[1].bus, "orders", 0,
	                     rec_handler, &g_remote, &g_remote.c),
	    0);
	wait_remote(t, w.n[0].bus, "orders", 1);
	/* Round robin: the first goes to node-a's handler, the second to
	 * node-b, whose node is cut off; its link drops and the send is
	 * routed again, to node-a's handler, with the same stamp. */
	th_proxy_pause(w.px);
	request(&w, 1, &a[0]);
	request(&w, 2, &a[1]);
	assert_int_equal(th_run_until(t, answered_pred, &a[0], 2000), 0);
	th_proxy_cut(w.px);
	assert_int_equal(th_run_until(t, answered_pred, &a[1], 2000), 0);
	assert_int_equal(a[0].status, 0);
	assert_int_equal(a[1].status, 0);
	assert_int_equal(a[1].seq, 2);
	assert_int_equal(g_local.n, 2);
	assert_int_equal(g_remote.n, 0);
	eb_ingress_stats_get(w.in, &st);
	assert_int_equal(st.rerouted, 1);
	assert_int_equal(st.delivered, 2);
	/* No handler left but node-a's, and that one closes: 502 at once. */
	eb_bus_consumer_close(g_local.c);
	memset(&a[0], 0, sizeof(a[0]));
	request(&w, 3, &a[0]);
	assert_int_equal(th_run_until(t, answered_pred, &a[0], 2000), 0);
	assert_int_equal(a[0].code, EB_INGRESS_NO_TARGET);
	th_proxy_heal(w.px);
	world_close(t, &w);
}

static void
test_link_down_without_other_handler(void **state)
{
	th_loop *t = *state;
	world    w;
	answer   a = { 0 };

	world_open(t, &w);
	assert_int_equal(eb_bus_consumer_new(w.n[1].bus, "orders", 0,
	                     rec_handler, &g_remote, &g_remote.c),
	    0);
	wait_remote(t, w.n[0].bus, "orders", 1);
	th_proxy_pause(w.px);
	request(&w, 1, &a);
	assert_int_equal(th_run_until(t, answered_pred, &a, 50), -1);
	th_proxy_cut(w.px);
	assert_int_equal(th_run_until(t, answered_pred, &a, 2000), 0);
	assert_int_equal(a.code, EB_INGRESS_UNCONFIRMED);
	assert_string_equal(a.text,
	    "ebnode: delivery to orders not confirmed (epoch 7, seq 1): Link "
	    "to node node-b lost; it may have been delivered");
	assert_int_equal(g_remote.n, 0);
	th_proxy_heal(w.px);
	world_close(t, &w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_ack_after_remote_delivery, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_reroute_to_another_handler, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_link_down_without_other_handler, th_setup,
		    th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
