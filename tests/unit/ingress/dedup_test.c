/*
 * Unit tests for safe retries (ingress/router.c, issue 23): rendezvous
 * hashing of ebnode.msgid over node ids (stable whatever the order, the
 * same from process to process, spread, moving only the keys of a node
 * that goes), a keyed send never routed to another node after a failed
 * receipt, a retry of a delivered key answered "duplicate" with the first
 * stamp (on the leader's own node and across a link), the retry after a
 * 508 of a paused link, and the 400 for an over-long key. A leader bus
 * (node-a, with the ingress) linked to node-b through a proxy.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <ebnode/bus.h>
#include <ebnode/ingress.h>
#include <ebnode/link.h>

#include "ingress/ingress_int.h"
#include "tests/harness/proxy.h"
#include "tests/unit/eventbus/cluster_th.h"

typedef struct answer {
	int       n;
	int       status;
	char      kind[16]; /* "ok", "duplicate" */
	long long epoch, seq, orig_epoch, orig_seq;
	int       code;
	char      text[400];
} answer;

static rec g_local;  /* a handler of "orders" on node-a */
static rec g_remote; /* a handler of "orders" on node-b */

static long long
int_of(const json_t *o, const char *k)
{
	return (long long) json_integer_value(json_object_get(o, k));
}

static void
answer_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg)
{
	answer *a = arg;

	(void) bus;
	a->n++;
	a->status = status;
	if (status == 0) {
		const json_t *b = eb_bus_msg_body(reply);

		(void) snprintf(a->kind, sizeof(a->kind), "%s",
		    json_string_value(json_object_get(b, "status")));
		a->epoch = int_of(b, "epoch");
		a->seq = int_of(b, "seq");
		a->orig_epoch = int_of(b, "original_epoch");
		a->orig_seq = int_of(b, "original_seq");
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
request_keyed(world *w, int v, const char *key, answer *a)
{
	json_t *b = json_integer(v);
	json_t *h =
	    key != NULL ? json_pack("{s:s}", EB_INGRESS_HDR_MSGID, key) : NULL;

	memset(a, 0, sizeof(*a));
	assert_int_equal(eb_bus_request(w->n[0].bus, "external.ingress", b, h,
	                     NULL, answer_cb, a),
	    0);
	json_decref(b);
	json_decref(h);
}

static void
ask(th_loop *t, world *w, int v, const char *key, answer *a)
{
	request_keyed(w, v, key, a);
	assert_int_equal(th_run_until(t, answered_pred, a, 2000), 0);
}

/* A key that rendezvous hashing sends to node among {node-a, node-b}. */
static const char *
key_for(const char *node, char *buf, size_t size)
{
	const char *ids[] = { "node-a", "node-b" };

	for (int i = 0;; i++) {
		(void) snprintf(buf, size, "key-%d", i);
		if (strcmp(eb__ingress_rendezvous(buf, strlen(buf), ids, 2),
		        node) == 0) {
			return buf;
		}
	}
}

static void
test_rendezvous(void **state)
{
	const char *three[] = { "node-a", "node-b", "node-c" };
	const char *rev[] = { "node-c", "node-b", "node-a" };
	int         count[3] = { 0, 0, 0 };
	int         moved = 0;
	char        key[32];

	(void) state;
	assert_null(eb__ingress_rendezvous("k", 1, three, 0));
	/* A fixed function of (key, node): every leader, in every process,
	 * computes the same weights (pinned: a change would split a
	 * mixed-version cluster). */
	assert_true(eb__ingress_rendezvous_weight("order-1", 7, "node-a") ==
	            eb__ingress_rendezvous_weight("order-1", 7, "node-a"));
	assert_true(eb__ingress_rendezvous_weight("order-1", 7, "node-a") !=
	            eb__ingress_rendezvous_weight("order-1", 7, "node-b"));
	/* FNV-1a 64 over key, 0xff, node, then splitmix64's finalizer
	 * (computed independently in Python). */
	assert_true(
	    eb__ingress_rendezvous_weight("", 0, "") == 0x4f2db50f124040cdULL);
	assert_true(eb__ingress_rendezvous_weight("order-1", 7, "node-a") ==
	            0xd1f314ae20fc54b6ULL);
	for (int i = 0; i < 30000; i++) {
		const char *p;
		const char *two[2];
		size_t      n = 0;
		int         len = snprintf(key, sizeof(key), "m-%d", i);

		p = eb__ingress_rendezvous(key, (size_t) len, three, 3);
		/* Stable: the order of the nodes does not matter. */
		assert_string_equal(
		    p, eb__ingress_rendezvous(key, (size_t) len, rev, 3));
		count[p[5] - 'a']++;
		/* node-c goes: only its keys move. */
		two[n++] = "node-a";
		two[n++] = "node-b";
		if (strcmp(eb__ingress_rendezvous(key, (size_t) len, two, n),
		        p) != 0) {
			assert_string_equal(p, "node-c");
			moved++;
		}
	}
	/* Spread: each node gets a third, within 3 %. */
	for (int i = 0; i < 3; i++) {
		assert_in_range(count[i], 9100, 10900);
	}
	assert_int_equal(moved, count[2]);
}

static void
test_keyed_not_rerouted(void **state)
{
	th_loop         *t = *state;
	world            w;
	answer           a;
	eb_ingress_stats st;
	char             kb[32];
	const char      *key = key_for("node-b", kb, sizeof(kb));

	world_open(t, &w);
	assert_int_equal(eb_bus_consumer_new(w.n[0].bus, "orders", 0,
	                     rec_handler, &g_local, &g_local.c),
	    0);
	assert_int_equal(eb_bus_consumer_new(w.n[1].bus, "orders", 0,
	                     rec_handler, &g_remote, &g_remote.c),
	    0);
	wait_remote(t, w.n[0].bus, "orders", 1);
	/* The key's node is node-b, cut off: the send is not routed to
	 * node-a's handler (node-b may have delivered it), 508. */
	th_proxy_pause(w.px);
	request_keyed(&w, 1, key, &a);
	assert_int_equal(th_run_until(t, answered_pred, &a, 50), -1);
	th_proxy_cut(w.px);
	assert_int_equal(th_run_until(t, answered_pred, &a, 2000), 0);
	assert_int_equal(a.code, EB_INGRESS_UNCONFIRMED);
	assert_int_equal(g_local.n, 0);
	eb_ingress_stats_get(w.in, &st);
	assert_int_equal(st.rerouted, 0);
	assert_int_equal(st.keyed, 1);
	/* node-b is gone: the key's node is now node-a, on every retry. */
	ask(t, &w, 2, key, &a);
	assert_string_equal(a.kind, "ok");
	ask(t, &w, 3, key, &a);
	assert_string_equal(a.kind, "duplicate");
	assert_int_equal(a.orig_seq, 2);
	assert_int_equal(g_local.n, 1);
	th_proxy_heal(w.px);
	world_close(t, &w);
}

static void
test_duplicate_answer(void **state)
{
	th_loop         *t = *state;
	world            w;
	answer           a;
	eb_ingress_stats st;
	char             big[EB_INGRESS_MSGID_MAX + 2];

	world_open(t, &w);
	assert_int_equal(eb_bus_consumer_new(w.n[1].bus, "orders", 0,
	                     rec_handler, &g_remote, &g_remote.c),
	    0);
	wait_remote(t, w.n[0].bus, "orders", 1);
	ask(t, &w, 1, "order-17", &a);
	assert_int_equal(a.status, 0);
	assert_string_equal(a.kind, "ok");
	assert_int_equal(a.seq, 1);
	ask(t, &w, 2, "order-17", &a);
	assert_int_equal(a.status, 0);
	assert_string_equal(a.kind, "duplicate");
	assert_int_equal(a.epoch, 7); /* this leader's: the gateway's fence */
	assert_int_equal(a.seq, 2);
	assert_int_equal(a.orig_epoch, 7);
	assert_int_equal(a.orig_seq, 1);
	assert_int_equal(g_remote.n, 1);
	/* Another key, and no key: delivered. */
	ask(t, &w, 3, "order-18", &a);
	assert_string_equal(a.kind, "ok");
	ask(t, &w, 4, NULL, &a);
	ask(t, &w, 4, NULL, &a);
	assert_string_equal(a.kind, "ok");
	assert_int_equal(g_remote.n, 4);
	/* A key over its bound is refused, and not routed. */
	memset(big, 'k', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ask(t, &w, 5, big, &a);
	assert_int_equal(a.code, EB_INGRESS_BAD_MSGID);
	assert_string_equal(
	    a.text, "ebnode: ebnode.msgid longer than 128 bytes");
	big[EB_INGRESS_MSGID_MAX] = '\0';
	ask(t, &w, 5, big, &a);
	assert_string_equal(a.kind, "ok");
	eb_ingress_stats_get(w.in, &st);
	assert_int_equal(st.duplicates, 1);
	/* The same on the leader's own node. */
	eb_bus_consumer_close(g_remote.c);
	assert_int_equal(eb_bus_consumer_new(w.n[0].bus, "orders", 0,
	                     rec_handler, &g_local, &g_local.c),
	    0);
	wait_remote(t, w.n[0].bus, "orders", 0);
	ask(t, &w, 6, "order-17", &a);
	assert_string_equal(a.kind, "ok");
	ask(t, &w, 7, "order-17", &a);
	assert_string_equal(a.kind, "duplicate");
	assert_int_equal(a.orig_seq, a.seq - 1);
	assert_int_equal(g_local.n, 1);
	world_close(t, &w);
}

static int
handled_pred(void *arg)
{
	return ((rec *) arg)->n > 0;
}

static void
test_retry_after_lost_receipt(void **state)
{
	th_loop *t = *state;
	world    w;
	answer   a;

	world_open(t, &w);
	assert_int_equal(eb_bus_consumer_new(w.n[1].bus, "orders", 0,
	                     rec_handler, &g_remote, &g_remote.c),
	    0);
	wait_remote(t, w.n[0].bus, "orders", 1);
	/* The paused-node case: no receipt within its timeout, 508, but
	 * node-b delivers it when the bytes flow again. */
	th_proxy_pause(w.px);
	ask(t, &w, 1, "order-99", &a);
	assert_int_equal(a.code, EB_INGRESS_UNCONFIRMED);
	th_proxy_resume(w.px);
	assert_int_equal(th_run_until(t, handled_pred, &g_remote, 2000), 0);
	/* The client's retry with the same key: not delivered again, and
	 * the answer names the first delivery. */
	ask(t, &w, 1, "order-99", &a);
	assert_int_equal(a.status, 0);
	assert_string_equal(a.kind, "duplicate");
	assert_int_equal(a.orig_seq, 1);
	assert_int_equal(a.seq, 2);
	assert_int_equal(g_remote.n, 1);
	world_close(t, &w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rendezvous),
		cmocka_unit_test_setup_teardown(
		    test_keyed_not_rerouted, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_duplicate_answer, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_retry_after_lost_receipt, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
