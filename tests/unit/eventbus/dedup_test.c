/*
 * Unit tests for the deduplication of keyed deliveries (eventbus/dedup.c):
 * the table (a second arrival of a delivered key is not delivered and its
 * receipt is EB_EDUPLICATE with the first stamp; the window; the key bound
 * and its eviction order; a key whose delivery is in progress; a key whose
 * delivery failed is forgotten), the RECEIPT trailer across a node link,
 * confirmed sends to a named node and eb_bus_handler_nodes.
 */
#include <stdint.h>
#include <stdio.h>

#include <ebnode/bus.h>
#include <ebnode/link.h>

#include "tests/unit/eventbus/cluster_th.h"

typedef struct rcpt_out {
	int            n;
	int            status;
	eb_bus_receipt r;
} rcpt_out;

static void
rcpt_out_cb(eb_bus *bus, int status, const eb_bus_receipt *r, void *arg)
{
	rcpt_out *o = arg;

	(void) bus;
	o->n++;
	o->status = status;
	o->r = *r;
	o->r.reason = NULL; /* borrowed */
}

static int
rcpt_out_pred(void *arg)
{
	return ((rcpt_out *) arg)->n > 0;
}

/* A confirmed send stamped (epoch, seq) with key (NULL: none), to node
 * (NULL: any); runs the loop until its receipt and returns its status. */
static int
send_keyed(th_loop *t, eb_bus *bus, const char *address, const char *key,
    uint64_t epoch, uint64_t seq, const char *node, rcpt_out *o)
{
	eb_bus_send_opts so;
	json_t          *h = json_object();
	json_t          *b = json_integer((json_int_t) seq);
	char             num[24];

	if (key != NULL) {
		(void) json_object_set_new(
		    h, EB_BUS_DEDUP_HEADER, json_string(key));
	}
	(void) snprintf(num, sizeof(num), "%llu", (unsigned long long) seq);
	(void) json_object_set_new(
	    h, EB_BUS_DEDUP_SEQ_HEADER, json_string(num));
	eb_bus_send_opts_init(&so);
	so.epoch = epoch;
	so.node = node;
	memset(o, 0, sizeof(*o));
	assert_int_equal(
	    eb_bus_send_confirmed(bus, address, b, h, &so, rcpt_out_cb, o), 0);
	json_decref(h);
	json_decref(b);
	assert_int_equal(th_run_until(t, rcpt_out_pred, o, 2000), 0);
	return o->status;
}

static eb_bus *
dbus_open(th_loop *t, uint64_t window_ms, uint32_t max_keys)
{
	eb_bus_opts bo;
	eb_bus     *bus;

	eb_bus_opts_init(&bo);
	bo.node_id = "node-a";
	bo.dedup_window_ms = window_ms;
	bo.dedup_max_keys = max_keys;
	assert_int_equal(eb_bus_new(&t->loop, &bo, &bus), 0);
	return bus;
}

static void
test_duplicate_not_delivered(void **state)
{
	th_loop           *t = *state;
	eb_bus            *bus = dbus_open(t, 60000, 100);
	rec                r = { 0 };
	rec                r2 = { 0 };
	rcpt_out           o;
	eb_bus_dedup_stats st;

	assert_int_equal(
	    eb_bus_consumer_new(bus, "orders", 0, rec_handler, &r, &r.c), 0);
	assert_int_equal(
	    eb_bus_consumer_new(bus, "other", 0, rec_handler, &r2, &r2.c), 0);
	assert_int_equal(send_keyed(t, bus, "orders", "k1", 7, 1, NULL, &o), 0);
	assert_int_equal(o.r.delivered, 1);
	assert_int_equal(o.r.duplicates, 0);
	assert_int_equal(r.n, 1);
	/* The retry, routed by a later leader: not delivered, the first
	 * stamp in the receipt. */
	assert_int_equal(
	    send_keyed(t, bus, "orders", "k1", 9, 4, NULL, &o), EB_EDUPLICATE);
	assert_int_equal(o.r.delivered, 0);
	assert_int_equal(o.r.duplicates, 1);
	assert_int_equal(o.r.orig_epoch, 7);
	assert_int_equal(o.r.orig_seq, 1);
	assert_int_equal(r.n, 1);
	/* The key is per address; unkeyed and unstamped messages are never
	 * deduplicated. */
	assert_int_equal(send_keyed(t, bus, "other", "k1", 9, 5, NULL, &o), 0);
	assert_int_equal(r2.n, 1);
	assert_int_equal(send_keyed(t, bus, "orders", NULL, 9, 6, NULL, &o), 0);
	assert_int_equal(send_keyed(t, bus, "orders", NULL, 9, 6, NULL, &o), 0);
	assert_int_equal(send_keyed(t, bus, "orders", "k2", 0, 0, NULL, &o), 0);
	assert_int_equal(send_keyed(t, bus, "orders", "k2", 0, 0, NULL, &o), 0);
	assert_int_equal(r.n, 5);
	eb_bus_dedup_stats_get(bus, &st);
	assert_int_equal(st.keys, 2);
	assert_int_equal(st.duplicates, 1);
	assert_int_equal(st.evicted, 0);
	eb_bus_consumer_close(r.c);
	eb_bus_consumer_close(r2.c);
	bus_shut(t, bus);
}

static void
test_max_keys_evicts_oldest(void **state)
{
	th_loop           *t = *state;
	eb_bus            *bus = dbus_open(t, 60000, 3);
	rec                r = { 0 };
	rcpt_out           o;
	eb_bus_dedup_stats st;

	assert_int_equal(
	    eb_bus_consumer_new(bus, "orders", 0, rec_handler, &r, &r.c), 0);
	assert_int_equal(send_keyed(t, bus, "orders", "a", 7, 1, NULL, &o), 0);
	assert_int_equal(send_keyed(t, bus, "orders", "b", 7, 2, NULL, &o), 0);
	assert_int_equal(send_keyed(t, bus, "orders", "c", 7, 3, NULL, &o), 0);
	/* A fourth key evicts the oldest, "a". */
	assert_int_equal(send_keyed(t, bus, "orders", "d", 7, 4, NULL, &o), 0);
	eb_bus_dedup_stats_get(bus, &st);
	assert_int_equal(st.keys, 3);
	assert_int_equal(st.evicted, 1);
	assert_int_equal(
	    send_keyed(t, bus, "orders", "b", 7, 5, NULL, &o), EB_EDUPLICATE);
	assert_int_equal(o.r.orig_seq, 2);
	assert_int_equal(r.n, 4);
	/* "a" was forgotten: delivered again (and evicts "b", now oldest). */
	assert_int_equal(send_keyed(t, bus, "orders", "a", 7, 6, NULL, &o), 0);
	assert_int_equal(r.n, 5);
	assert_int_equal(send_keyed(t, bus, "orders", "b", 7, 7, NULL, &o), 0);
	assert_int_equal(r.n, 6);
	assert_int_equal(
	    send_keyed(t, bus, "orders", "a", 7, 8, NULL, &o), EB_EDUPLICATE);
	assert_int_equal(o.r.orig_seq, 6);
	eb_bus_dedup_stats_get(bus, &st);
	assert_int_equal(st.keys, 3);
	assert_int_equal(st.evicted, 3);
	eb_bus_consumer_close(r.c);
	bus_shut(t, bus);
}

static void
tick_cb(uv_timer_t *tm)
{
	*(int *) tm->data = 1;
}

/* Runs the loop for ms (a timer wakes it). */
static void
run_for(th_loop *t, uint64_t ms)
{
	uv_timer_t tm;
	int        fired = 0;

	(void) uv_timer_init(&t->loop, &tm);
	tm.data = &fired;
	(void) uv_timer_start(&tm, tick_cb, ms, 0);
	assert_int_equal(th_run_until(t, th_flag_set, &fired, 2000), 0);
	uv_close((uv_handle_t *) &tm, NULL);
	(void) uv_run(&t->loop, UV_RUN_NOWAIT);
}

static void
test_window(void **state)
{
	th_loop *t = *state;
	eb_bus  *bus = dbus_open(t, 300, 100);
	rec      r = { 0 };
	rcpt_out o;

	assert_int_equal(
	    eb_bus_consumer_new(bus, "orders", 0, rec_handler, &r, &r.c), 0);
	assert_int_equal(send_keyed(t, bus, "orders", "w", 7, 1, NULL, &o), 0);
	run_for(t, 20);
	assert_int_equal(
	    send_keyed(t, bus, "orders", "w", 7, 2, NULL, &o), EB_EDUPLICATE);
	/* Past the window: the key is forgotten, the retry delivered. */
	run_for(t, 320);
	assert_int_equal(send_keyed(t, bus, "orders", "w", 7, 3, NULL, &o), 0);
	assert_int_equal(r.n, 2);
	eb_bus_consumer_close(r.c);
	bus_shut(t, bus);
}

static int g_refuse_first;

static void
refusing_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	if (g_refuse_first) {
		g_refuse_first = 0;
		eb_bus_consumer_undelivered(c, EB_EFULL);
		return;
	}
	rec_handler(c, msg, arg);
}

static void
test_in_progress_and_failed(void **state)
{
	th_loop         *t = *state;
	eb_bus          *bus = dbus_open(t, 60000, 100);
	rec              r = { 0 };
	rcpt_out         o[2];
	eb_bus_send_opts so;
	json_t          *h = json_pack("{s:s,s:s}", EB_BUS_DEDUP_HEADER, "p",
	             EB_BUS_DEDUP_SEQ_HEADER, "1");

	assert_int_equal(
	    eb_bus_consumer_new(bus, "orders", 0, refusing_handler, &r, &r.c),
	    0);
	/* The consumer could not take it: the key is forgotten, the retry
	 * is delivered. */
	g_refuse_first = 1;
	assert_int_equal(
	    send_keyed(t, bus, "orders", "f", 7, 1, NULL, &o[0]), EB_EFULL);
	assert_int_equal(
	    send_keyed(t, bus, "orders", "f", 7, 2, NULL, &o[0]), 0);
	assert_int_equal(r.n, 1);
	/* Two arrivals while the first is still queued: the second is
	 * refused (its rcpt_out is unknown yet), never queued. */
	eb_bus_send_opts_init(&so);
	so.epoch = 7;
	memset(o, 0, sizeof(o));
	eb_bus_consumer_pause(r.c);
	assert_int_equal(eb_bus_send_confirmed(
	                     bus, "orders", NULL, h, &so, rcpt_out_cb, &o[0]),
	    0);
	assert_int_equal(eb_bus_send_confirmed(
	                     bus, "orders", NULL, h, &so, rcpt_out_cb, &o[1]),
	    0);
	assert_int_equal(th_run_until(t, rcpt_out_pred, &o[1], 2000), 0);
	assert_int_equal(o[1].status, EB_EKEYBUSY);
	assert_int_equal(o[0].n, 0);
	eb_bus_consumer_resume(r.c);
	assert_int_equal(th_run_until(t, rcpt_out_pred, &o[0], 2000), 0);
	assert_int_equal(o[0].status, 0);
	assert_int_equal(r.n, 2);
	assert_int_equal(send_keyed(t, bus, "orders", "p", 8, 9, NULL, &o[0]),
	    EB_EDUPLICATE);
	assert_int_equal(o[0].r.orig_epoch, 7);
	assert_int_equal(o[0].r.orig_seq, 1);
	json_decref(h);
	eb_bus_consumer_close(r.c);
	bus_shut(t, bus);
}

static void
test_receipt_trailer_across_link(void **state)
{
	th_loop    *t = *state;
	cnode       n[2];
	rec         ra = { 0 };
	rec         rb = { 0 };
	rec         rl = { 0 };
	rcpt_out    o;
	const char *ids[4];

	cluster_open(t, n, 2, 0);
	assert_int_equal(
	    eb_bus_consumer_new(n[1].bus, "orders", 0, rec_handler, &rb, &rb.c),
	    0);
	wait_remote(t, n[0].bus, "orders", 1);
	assert_int_equal(eb_bus_handler_nodes(n[0].bus, "orders", ids, 4), 1);
	assert_string_equal(ids[0], "node-b");
	/* Delivered on node-b; the retry's RECEIPT carries the first stamp
	 * in its trailer. */
	assert_int_equal(
	    send_keyed(t, n[0].bus, "orders", "x", 12, 34, "node-b", &o), 0);
	assert_int_equal(rb.n, 1);
	assert_int_equal(
	    send_keyed(t, n[0].bus, "orders", "x", 13, 1, "node-b", &o),
	    EB_EDUPLICATE);
	assert_int_equal(o.r.targets, 1);
	assert_int_equal(o.r.delivered, 0);
	assert_int_equal(o.r.duplicates, 1);
	assert_int_equal(o.r.orig_epoch, 12);
	assert_int_equal(o.r.orig_seq, 34);
	assert_int_equal(rb.n, 1);
	/* A local-only consumer is no handler other nodes know of: not
	 * listed, and a send named to its node finds nobody. */
	assert_int_equal(
	    eb_bus_consumer_new(n[0].bus, "orders", 1, rec_handler, &rl, &rl.c),
	    0);
	assert_int_equal(eb_bus_handler_nodes(n[0].bus, "orders", ids, 4), 1);
	assert_int_equal(
	    send_keyed(t, n[0].bus, "orders", "z", 13, 2, "node-a", &o),
	    EB_ENOHANDLERS);
	assert_int_equal(rl.n, 0);
	/* A named node: this node's own consumer, or nobody there. */
	assert_int_equal(
	    eb_bus_consumer_new(n[0].bus, "orders", 0, rec_handler, &ra, &ra.c),
	    0);
	assert_int_equal(eb_bus_handler_nodes(n[0].bus, "orders", ids, 4), 2);
	assert_string_equal(ids[0], "node-a");
	assert_string_equal(ids[1], "node-b");
	assert_int_equal(eb_bus_handler_nodes(n[0].bus, "orders", ids, 1), 2);
	assert_int_equal(
	    send_keyed(t, n[0].bus, "orders", "x", 13, 2, "node-a", &o), 0);
	assert_int_equal(ra.n, 1);
	assert_int_equal(
	    send_keyed(t, n[0].bus, "orders", "y", 13, 3, "node-c", &o),
	    EB_ENOHANDLERS);
	eb_bus_consumer_close(ra.c);
	eb_bus_consumer_close(rb.c);
	eb_bus_consumer_close(rl.c);
	cluster_close(t, n, 2);
}

static void
test_publish_per_node(void **state)
{
	th_loop         *t = *state;
	cnode            n[2];
	rec              ra = { 0 };
	rec              ra2 = { 0 };
	rec              rb = { 0 };
	rcpt_out         o;
	eb_bus_send_opts so;
	json_t          *h = json_pack("{s:s,s:s}", EB_BUS_DEDUP_HEADER, "pub",
	             EB_BUS_DEDUP_SEQ_HEADER, "5");

	cluster_open(t, n, 2, 0);
	assert_int_equal(
	    eb_bus_consumer_new(n[0].bus, "audit", 0, rec_handler, &ra, &ra.c),
	    0);
	assert_int_equal(eb_bus_consumer_new(
	                     n[0].bus, "audit", 0, rec_handler, &ra2, &ra2.c),
	    0);
	assert_int_equal(
	    eb_bus_consumer_new(n[1].bus, "audit", 0, rec_handler, &rb, &rb.c),
	    0);
	wait_remote(t, n[0].bus, "audit", 1);
	eb_bus_send_opts_init(&so);
	so.epoch = 3;
	/* Every consumer gets it once: two local ones and node-b. */
	memset(&o, 0, sizeof(o));
	assert_int_equal(eb_bus_publish_confirmed(
	                     n[0].bus, "audit", NULL, h, &so, rcpt_out_cb, &o),
	    0);
	assert_int_equal(th_run_until(t, rcpt_out_pred, &o, 2000), 0);
	assert_int_equal(o.status, 0);
	assert_int_equal(o.r.delivered, 3);
	/* The retry: each node had it (node-a's consumers as one). */
	memset(&o, 0, sizeof(o));
	so.epoch = 4;
	assert_int_equal(eb_bus_publish_confirmed(
	                     n[0].bus, "audit", NULL, h, &so, rcpt_out_cb, &o),
	    0);
	assert_int_equal(th_run_until(t, rcpt_out_pred, &o, 2000), 0);
	assert_int_equal(o.status, EB_EDUPLICATE);
	assert_int_equal(o.r.delivered, 0);
	assert_int_equal(o.r.duplicates, 2);
	assert_int_equal(o.r.orig_epoch, 3);
	assert_int_equal(o.r.orig_seq, 5);
	assert_int_equal(ra.n + ra2.n + rb.n, 3);
	json_decref(h);
	eb_bus_consumer_close(ra.c);
	eb_bus_consumer_close(ra2.c);
	eb_bus_consumer_close(rb.c);
	cluster_close(t, n, 2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_duplicate_not_delivered, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_max_keys_evicts_oldest, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_window, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_in_progress_and_failed, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_receipt_trailer_across_link, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_publish_per_node, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
