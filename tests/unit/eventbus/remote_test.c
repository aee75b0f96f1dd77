/*
 * Unit tests for remote.c: several buses with link managers on one loop,
 * real TCP on 127.0.0.1. Round robin across nodes, publish per node,
 * request/reply and failures across nodes, NO_HANDLERS from a node that
 * just unregistered, in-flight requests failing when a link dies, order of
 * 100 000 messages, and how fast a registration becomes reachable.
 */
#include <signal.h>
#include <stdio.h>

#include <ebnode/bus.h>
#include <ebnode/link.h>

#include "tests/unit/eventbus/cluster_th.h"

struct count_at_least {
	rec *r;
	int  n;
	int  want;
};

static int
total_pred(void *arg)
{
	struct count_at_least *c = arg;
	int                    sum = 0;

	for (int i = 0; i < c->n; i++) {
		sum += c->r[i].n;
	}
	return sum >= c->want;
}

static void
test_round_robin_across_nodes(void **state)
{
	th_loop              *t = *state;
	cnode                 n[2];
	rec                  *r = calloc(4, sizeof(*r));
	struct count_at_least c = { r, 4, 400 };
	eb_bus_consumer      *lo;
	rec                   lor = { 0 };

	cluster_open(t, n, 2, 0);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(eb_bus_consumer_new(n[i / 2].bus, "w", 0,
		                     rec_handler, &r[i], &r[i].c),
		    0);
	}
	/* A local-only consumer on b is not advertised. */
	assert_int_equal(
	    eb_bus_consumer_new(n[1].bus, "w", 1, rec_handler, &lor, &lo), 0);
	lor.c = lo;
	wait_remote(t, n[0].bus, "w", 2);
	for (int i = 0; i < 400; i++) {
		assert_int_equal(send_int(n[0].bus, "w", i), 0);
	}
	assert_int_equal(th_run_until(t, total_pred, &c, 3000), 0);
	for (int i = 0; i < 4; i++) {
		assert_true(r[i].n >= 99 && r[i].n <= 101);
	}
	assert_int_equal(lor.n, 0);
	cluster_close(t, n, 2);
	free(r);
}

static void
test_publish_each_handler_once(void **state)
{
	th_loop              *t = *state;
	cnode                 n[3];
	rec                  *r = calloc(5, sizeof(*r));
	struct count_at_least c = { r, 5, 4 };
	json_t               *b = json_integer(42);

	cluster_open(t, n, 3, 0);
	/* a: 1, b: 2 (+1 local-only), c: 1 */
	assert_int_equal(
	    eb_bus_consumer_new(n[0].bus, "p", 0, rec_handler, &r[0], &r[0].c),
	    0);
	assert_int_equal(
	    eb_bus_consumer_new(n[1].bus, "p", 0, rec_handler, &r[1], &r[1].c),
	    0);
	assert_int_equal(
	    eb_bus_consumer_new(n[1].bus, "p", 0, rec_handler, &r[2], &r[2].c),
	    0);
	assert_int_equal(
	    eb_bus_consumer_new(n[1].bus, "p", 1, rec_handler, &r[3], &r[3].c),
	    0);
	assert_int_equal(
	    eb_bus_consumer_new(n[2].bus, "p", 0, rec_handler, &r[4], &r[4].c),
	    0);
	wait_remote(t, n[0].bus, "p", 3);
	assert_int_equal(eb_bus_publish(n[0].bus, "p", b, NULL, NULL), 0);
	assert_int_equal(th_run_until(t, total_pred, &c, 3000), 0);
	/* Give stray duplicates a chance to show up. */
	c.want = 5;
	assert_int_equal(th_run_until(t, total_pred, &c, 100), -1);
	assert_int_equal(r[0].n, 1);
	assert_int_equal(r[1].n, 1);
	assert_int_equal(r[2].n, 1);
	assert_int_equal(r[3].n, 0);
	assert_int_equal(r[4].n, 1);
	assert_int_equal(r[4].vals[0], 42);
	json_decref(b);
	cluster_close(t, n, 3);
	free(r);
}

static void
test_request_reply_across_nodes(void **state)
{
	th_loop *t = *state;
	cnode    n[2];
	rec      echo = { .reply = 1 };
	rec      failer = { .fail_code = 77 };
	outcome  o[3];

	memset(o, 0, sizeof(o));
	cluster_open(t, n, 2, 0);
	assert_int_equal(eb_bus_consumer_new(
	                     n[1].bus, "echo", 0, rec_handler, &echo, &echo.c),
	    0);
	assert_int_equal(eb_bus_consumer_new(n[1].bus, "fail", 0, rec_handler,
	                     &failer, &failer.c),
	    0);
	wait_remote(t, n[0].bus, "echo", 1);
	wait_remote(t, n[0].bus, "fail", 1);
	assert_int_equal(request_int(n[0].bus, "echo", 7, 2000, &o[0]), 0);
	assert_int_equal(request_int(n[0].bus, "fail", 7, 2000, &o[1]), 0);
	assert_int_equal(request_int(n[0].bus, "none", 7, 2000, &o[2]), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &o[0].calls, 2000), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &o[1].calls, 2000), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &o[2].calls, 2000), 0);
	assert_int_equal(o[0].status, 0);
	assert_int_equal(o[0].val, 1007);
	assert_int_equal(o[1].status, EB_ERECIPIENT);
	assert_int_equal(o[1].type, EB_BUS_RECIPIENT_FAILURE);
	assert_int_equal(o[1].code, 77);
	assert_string_equal(o[1].message, "oops!");
	assert_int_equal(o[2].status, EB_ENOHANDLERS);
	cluster_close(t, n, 2);
}

/* What peek_handler saw: each message's body bytes and header "k". */
typedef struct peek {
	eb_bus_consumer *c;
	int              n;
	char             body[4][32];
	char             k[4][16];
	char             answer[32]; /* raw_reply_cb's "status:body" */
} peek;

static int
peek_done(void *arg)
{
	const peek *p = arg;

	return p->n >= 4 && p->answer[0] != '\0';
}

static void
peek_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	peek         *p = arg;
	size_t        len;
	const char   *b = eb_bus_msg_body_bytes(msg, &len);
	const json_t *k = json_object_get(eb_bus_msg_headers(msg), "k");

	(void) c;
	assert_true(p->n < 4 && len < sizeof(p->body[0]));
	memcpy(p->body[p->n], b, len);
	p->body[p->n][len] = '\0';
	(void) snprintf(p->k[p->n], sizeof(p->k[0]), "%s",
	    json_is_string(k) ? json_string_value(k) : "-");
	p->n++;
	if (eb_bus_msg_reply_address(msg) != NULL) {
		/* Raw, no headers, no answer expected: written to the link
		 * from these bytes (a view), not from a copy. */
		assert_int_equal(eb_bus_msg_reply_raw(msg, "\"pong\"", 6, NULL,
		                     NULL, NULL, NULL),
		    0);
	}
}

static void
raw_reply_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg)
{
	char       *out = arg;
	size_t      len = 0;
	const char *b = reply != NULL ? eb_bus_msg_body_bytes(reply, &len) : "";

	(void) bus;
	(void) failure;
	(void) snprintf(out, 32, "%d:%.*s", status, (int) len, b);
}

/* Sends, requests and replies whose handlers are all on another node are
 * written to the link from the caller's bytes (issue 25): what arrives is
 * what the call was given, though the caller changes its buffers as soon as
 * the call returns, and headers the caller did not promise to keep as they
 * are are still copied (a changed object is sent as changed). */
static void
test_caller_bytes_across_nodes(void **state)
{
	th_loop         *t = *state;
	cnode            n[2];
	peek             p;
	char             body[16];
	json_t          *shared = json_pack("{s:s}", "k", "shared");
	json_t          *mine = json_pack("{s:s}", "k", "v1");
	eb_bus_send_opts o;

	memset(&p, 0, sizeof(p));
	cluster_open(t, n, 2, 0);
	assert_int_equal(
	    eb_bus_consumer_new(n[1].bus, "peek", 0, peek_handler, &p, &p.c),
	    0);
	wait_remote(t, n[0].bus, "peek", 1);

	eb_bus_send_opts_init(&o);
	o.share_headers = 1;
	(void) snprintf(body, sizeof(body), "{\"a\":1}");
	assert_int_equal(eb_bus_request_raw(n[0].bus, "peek", body,
	                     strlen(body), shared, &o, raw_reply_cb, p.answer),
	    0);
	memset(body, 'x', sizeof(body) - 1);
	assert_int_equal(
	    eb_bus_send_raw(n[0].bus, "peek", "2", 1, mine, NULL), 0);
	assert_int_equal(json_object_set_new(mine, "k", json_string("v2")), 0);
	assert_int_equal(
	    eb_bus_send_raw(n[0].bus, "peek", "3", 1, mine, NULL), 0);
	assert_int_equal(
	    eb_bus_send_raw(n[0].bus, "peek", NULL, 0, NULL, NULL), 0);

	assert_int_equal(th_run_until(t, peek_done, &p, 2000), 0);
	assert_string_equal(p.body[0], "{\"a\":1}");
	assert_string_equal(p.k[0], "shared");
	assert_string_equal(p.body[1], "2");
	assert_string_equal(p.k[1], "v1");
	assert_string_equal(p.body[2], "3");
	assert_string_equal(p.k[2], "v2");
	assert_string_equal(p.body[3], "null");
	assert_string_equal(p.k[3], "-");
	assert_string_equal(p.answer, "0:\"pong\"");
	json_decref(shared);
	json_decref(mine);
	cluster_close(t, n, 2);
}

/* Reply-to-reply across nodes: b's handler answers with a reply that
 * expects an answer; a answers it; b's callback sees a's answer. */
static outcome rtr_b;

static void
rtr_b_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	json_t *v = json_integer(1);

	(void) c;
	(void) arg;
	assert_int_equal(
	    eb_bus_msg_reply(msg, v, NULL, NULL, outcome_cb, &rtr_b), 0);
	json_decref(v);
}

static void
rtr_a_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg)
{
	json_t *v = json_integer(2);

	(void) bus;
	(void) failure;
	(*(int *) arg)++;
	assert_int_equal(status, 0);
	assert_non_null(eb_bus_msg_reply_address(reply));
	assert_int_equal(eb_bus_msg_reply(reply, v, NULL, NULL, NULL, NULL), 0);
	json_decref(v);
}

static void
test_reply_to_reply_across_nodes(void **state)
{
	th_loop         *t = *state;
	cnode            n[2];
	eb_bus_consumer *c;
	int              a_calls = 0;

	memset(&rtr_b, 0, sizeof(rtr_b));
	cluster_open(t, n, 2, 0);
	assert_int_equal(
	    eb_bus_consumer_new(n[1].bus, "rtr", 0, rtr_b_handler, NULL, &c),
	    0);
	wait_remote(t, n[0].bus, "rtr", 1);
	assert_int_equal(eb_bus_request(n[0].bus, "rtr", NULL, NULL, NULL,
	                     rtr_a_cb, &a_calls),
	    0);
	assert_int_equal(th_run_until(t, th_flag_set, &rtr_b.calls, 2000), 0);
	assert_int_equal(a_calls, 1);
	assert_int_equal(rtr_b.status, 0);
	assert_int_equal(rtr_b.val, 2);
	cluster_close(t, n, 2);
}

static void
test_no_handlers_after_unregister(void **state)
{
	th_loop *t = *state;
	cnode    n[2];
	rec      r = { 0 };
	outcome  o = { 0 };

	cluster_open(t, n, 2, 0);
	assert_int_equal(
	    eb_bus_consumer_new(n[1].bus, "gone", 0, rec_handler, &r, &r.c), 0);
	wait_remote(t, n[0].bus, "gone", 1);
	/* b unregisters; a still believes b serves it and sends: b answers
	 * NO_HANDLERS at once (Vert.x would let it time out). */
	eb_bus_consumer_close(r.c);
	assert_int_equal(request_int(n[0].bus, "gone", 1, 5000, &o), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &o.calls, 1000), 0);
	assert_int_equal(o.status, EB_ENOHANDLERS);
	assert_int_equal(o.type, EB_BUS_NO_HANDLERS);
	assert_int_equal(o.code, -1);
	assert_string_equal(o.message, "No handlers for address gone");
	/* Then the interest delta arrives and a stops routing there. */
	wait_remote(t, n[0].bus, "gone", 0);
	assert_int_equal(send_int(n[0].bus, "gone", 1), EB_ENOHANDLERS);
	cluster_close(t, n, 2);
}

static eb_bus_msg *held_req;

static void
hold_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	(void) c;
	(*(int *) arg)++;
	held_req = eb_bus_msg_hold(msg);
}

static void
test_inflight_fails_on_link_loss(void **state)
{
	th_loop         *t = *state;
	cnode            n[2];
	eb_bus_consumer *c;
	int              got = 0;
	outcome          o = { 0 };
	uint64_t         t0;
	uint64_t         dt;

	held_req = NULL;
	cluster_open(t, n, 2, 0);
	assert_int_equal(
	    eb_bus_consumer_new(n[1].bus, "slow", 0, hold_handler, &got, &c),
	    0);
	wait_remote(t, n[0].bus, "slow", 1);
	/* Reachable handlers count the peer's too. */
	assert_int_equal(eb_bus_handler_count(n[0].bus, "slow"), 1);
	assert_int_equal(request_int(n[0].bus, "slow", 1, 30000, &o), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &got, 2000), 0);
	/* b's links die (its process would be gone): a fails the request
	 * at once instead of after 30 s. */
	t0 = uv_hrtime();
	eb_link_mgr_close(n[1].mgr, cmgr_closed_cb, &n[1]);
	assert_int_equal(th_run_until(t, th_flag_set, &o.calls, 1000), 0);
	dt = (uv_hrtime() - t0) / 1000000u;
	printf("in-flight request failed %llu ms after the link died\n",
	    (unsigned long long) dt);
	assert_true(dt < 100 * th_timeout_multiplier());
	assert_int_equal(o.status, EB_ELINKDOWN);
	assert_int_equal(o.type, EB_BUS_ERROR);
	assert_int_equal(o.code, -1);
	assert_string_equal(o.message, "Link to node node-b lost");
	/* Its interest is gone: the selector skips b. */
	assert_int_equal(remote_handlers(n[0].bus, "slow"), 0);
	assert_int_equal(eb_bus_handler_count(n[0].bus, "slow"), 0);
	assert_int_equal(send_int(n[0].bus, "slow", 1), EB_ENOHANDLERS);
	/* A reply to the dead link is dropped, not a crash. */
	assert_int_equal(
	    eb_bus_msg_reply(held_req, NULL, NULL, NULL, NULL, NULL), 0);
	eb_bus_msg_release(held_req);
	assert_int_equal(
	    th_run_until(t, th_flag_set, &n[1].mgr_closed, 2000), 0);
	cluster_close(t, n, 2);
}

/* A 1 MiB body crosses the link (many reads, one frame) unchanged. */
static size_t big_len;

static void
big_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	const json_t *b = eb_bus_msg_body(msg);

	(void) c;
	(void) arg;
	big_len = json_is_string(b) ? json_string_length(b) : 0;
	/* Echo the body back as it came, through its bytes. */
	assert_int_equal(eb_bus_msg_reply(msg, b, NULL, NULL, NULL, NULL), 0);
}

static size_t big_reply_len;

static void
big_reply_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg)
{
	size_t len;

	(void) bus;
	(void) failure;
	assert_int_equal(status, 0);
	(void) eb_bus_msg_body_bytes(reply, &len);
	big_reply_len = len;
	(*(int *) arg)++;
}

static void
test_big_body(void **state)
{
	th_loop         *t = *state;
	cnode            n[2];
	eb_bus_consumer *c;
	char            *s = malloc(1 << 20);
	json_t          *b;
	int              done = 0;

	memset(s, 'x', (1 << 20) - 1);
	s[(1 << 20) - 1] = '\0';
	b = json_string(s);
	cluster_open(t, n, 2, 0);
	assert_int_equal(
	    eb_bus_consumer_new(n[1].bus, "big", 0, big_handler, NULL, &c), 0);
	wait_remote(t, n[0].bus, "big", 1);
	assert_int_equal(
	    eb_bus_request(n[0].bus, "big", b, NULL, NULL, big_reply_cb, &done),
	    0);
	assert_int_equal(th_run_until(t, th_flag_set, &done, 5000), 0);
	assert_int_equal(big_len, (1 << 20) - 1);
	assert_int_equal(big_reply_len, (1 << 20) + 1); /* the quotes */
	json_decref(b);
	free(s);
	cluster_close(t, n, 2);
}

#define ORDER_N 100000

typedef struct order_rec {
	int n;
	int bad;
} order_rec;

static void
order_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	order_rec *o = arg;

	(void) c;
	if (json_integer_value(eb_bus_msg_body(msg)) != o->n) {
		o->bad++;
	}
	o->n++;
}

static int
order_done(void *arg)
{
	return ((order_rec *) arg)->n >= ORDER_N;
}

static void
test_order_100k(void **state)
{
	th_loop         *t = *state;
	cnode            n[2];
	eb_bus_consumer *c;
	order_rec        o = { 0, 0 };

	th_watchdog_ms(t, 30000);
	cluster_open(t, n, 2, ORDER_N);
	assert_int_equal(
	    eb_bus_consumer_new(n[1].bus, "ord", 0, order_handler, &o, &c), 0);
	wait_remote(t, n[0].bus, "ord", 1);
	for (int i = 0; i < ORDER_N; i++) {
		assert_int_equal(send_int(n[0].bus, "ord", i), 0);
	}
	assert_int_equal(th_run_until(t, order_done, &o, 20000), 0);
	assert_int_equal(o.n, ORDER_N);
	assert_int_equal(o.bad, 0);
	cluster_close(t, n, 2);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *) a;
	uint64_t y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

static void
test_registration_latency(void **state)
{
	th_loop *t = *state;
	cnode    n[2];
	uint64_t us[100];
	char     address[32];

	cluster_open(t, n, 2, 0);
	for (int i = 0; i < 100; i++) {
		eb_bus_consumer *c;
		rec              r = { 0 };
		uint64_t         t0;

		(void) snprintf(address, sizeof(address), "reg.%d", i);
		t0 = uv_hrtime();
		assert_int_equal(eb_bus_consumer_new(
		                     n[1].bus, address, 0, rec_handler, &r, &c),
		    0);
		wait_remote(t, n[0].bus, address, 1);
		us[i] = (uv_hrtime() - t0) / 1000u;
		eb_bus_consumer_close(c);
		wait_remote(t, n[0].bus, address, 0);
	}
	qsort(us, 100, sizeof(us[0]), cmp_u64);
	printf("registration reachable from the peer: median %llu us, "
	       "worst %llu us\n",
	    (unsigned long long) us[50], (unsigned long long) us[99]);
	assert_true(us[50] < 10000);
	assert_true(us[99] < 10000 * th_timeout_multiplier());
	cluster_close(t, n, 2);
}

int
main(void)
{
	/* A peer that goes away mid-write must not kill the test: libuv
	 * writes with write(2), as ebnode does after ignoring SIGPIPE. */
	(void) signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_round_robin_across_nodes, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_publish_each_handler_once, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_request_reply_across_nodes, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_reply_to_reply_across_nodes, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_caller_bytes_across_nodes, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_no_handlers_after_unregister, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_inflight_fails_on_link_loss, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_order_100k, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_big_body, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_registration_latency, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
