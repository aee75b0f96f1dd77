/* Unit tests for leader-routed ingress over the local bus. Every test runs
 * twice: with requests reaching the gateway through the bus ("bus"), and
 * with the gateway taking them from the requester where it can ("direct",
 * eventbus/bus_direct.h, as the node installs it). */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ebnode/bus.h>
#include <ebnode/ingress.h>

#include "eventbus/bus_direct.h"
#include "eventbus/bus_trusted.h"
#include "ingress/ingress_int.h"
#include "tests/harness/th.h"

typedef struct fx {
	th_loop    *t;
	eb_bus     *bus;
	eb_ingress *in;
	/* replies to the test's requests, by request index (an ack waits
	 * for the delivery receipt, so answers may overtake each other) */
	int                 n_requests;
	int                 slot[64]; /* slot[i] == i: the callback argument */
	int                 n_replies;
	int                 status[64];
	long long           seq[64];
	long long           epoch[64];
	int                 fcode[64];
	eb_bus_failure_type ftype[64];
	char                fmsg[64][400];
	/* what the target consumer got */
	int  n_target;
	char target_seq[64][24];
	char target_entry[64][64];
	char target_config[64][24];   /* "" when the header is absent */
	char target_headers[64][256]; /* all of them, compact, in order */
	char target_addr[64][24];
	char target_body[64][64];
} fx;

static fx       g_fx;
static uint64_t warmup_ms; /* 0 unless a test sets it */
static int      direct;    /* the "direct" group: the gateway takes */

static void
reply_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg)
{
	int i = *(const int *) arg;

	(void) bus;
	g_fx.n_replies++;
	g_fx.status[i] = status;
	if (status == 0) {
		const json_t *b = eb_bus_msg_body(reply);

		g_fx.seq[i] =
		    (long long) json_integer_value(json_object_get(b, "seq"));
		g_fx.epoch[i] =
		    (long long) json_integer_value(json_object_get(b, "epoch"));
	} else {
		g_fx.fcode[i] = failure->code;
		g_fx.ftype[i] = failure->type;
		(void) snprintf(
		    g_fx.fmsg[i], sizeof(g_fx.fmsg[i]), "%s", failure->message);
	}
}

static void
target_cb(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	const json_t *h = eb_bus_msg_headers(msg);
	size_t        n;
	const char   *b = eb_bus_msg_body_bytes(msg, &n);
	int           i = g_fx.n_target++;

	(void) c;
	(void) arg;
	(void) snprintf(g_fx.target_seq[i], sizeof(g_fx.target_seq[i]), "%s",
	    json_string_value(json_object_get(h, EB_INGRESS_HDR_SEQ)));
	(void) snprintf(g_fx.target_entry[i], sizeof(g_fx.target_entry[i]),
	    "%s", json_string_value(json_object_get(h, EB_INGRESS_HDR_ENTRY)));
	(void) snprintf(g_fx.target_body[i], sizeof(g_fx.target_body[i]),
	    "%.*s", (int) n, b);
	(void) snprintf(g_fx.target_config[i], sizeof(g_fx.target_config[i]),
	    "%s",
	    json_is_string(json_object_get(h, EB_INGRESS_HDR_CONFIG))
	        ? json_string_value(json_object_get(h, EB_INGRESS_HDR_CONFIG))
	        : "");
	(void) snprintf(g_fx.target_addr[i], sizeof(g_fx.target_addr[i]), "%s",
	    arg != NULL ? (const char *) arg : "orders");
	{
		char *all = json_dumps(h, JSON_COMPACT);

		(void) snprintf(g_fx.target_headers[i],
		    sizeof(g_fx.target_headers[i]), "%s", all);
		free(all);
	}
}

static int
setup(void **state)
{
	eb_bus_opts bo;

	if (th_setup(state) != 0) {
		return -1;
	}
	memset(&g_fx, 0, sizeof(g_fx));
	warmup_ms = 0;
	g_fx.t = *state;
	eb_bus_opts_init(&bo);
	bo.node_id = "n1";
	assert_int_equal(eb_bus_new(&g_fx.t->loop, &bo, &g_fx.bus), 0);
	return 0;
}

static void
closed_cb(eb_ingress *in, void *arg)
{
	(void) in;
	(*(int *) arg)++;
}

static void
bus_closed_cb(eb_bus *bus, void *arg)
{
	(void) bus;
	(*(int *) arg)++;
}

static int
teardown(void **state)
{
	int closed = 0;
	int expect = 1;

	if (g_fx.in != NULL) {
		eb__bus_direct_set(g_fx.bus, NULL, NULL, NULL);
		eb_ingress_close(g_fx.in, closed_cb, &closed);
		g_fx.in = NULL;
		expect = 2;
	}
	eb_bus_close(g_fx.bus, bus_closed_cb, &closed);
	assert_int_equal(th_loop_run(g_fx.t), 0);
	assert_int_equal(closed, expect);
	return th_teardown(state);
}

static void
make(const eb_ingress_route *routes, size_t n, const eb_ingress_route *def,
    uint32_t hold_max, uint64_t hold_ms)
{
	eb_ingress_opts o;
	eb_errbuf       e;

	eb_ingress_opts_init(&o);
	o.warmup_ms = warmup_ms;
	o.routes = routes;
	o.route_count = n;
	o.default_route = def;
	if (hold_max > 0) {
		o.hold_max = hold_max;
	}
	if (hold_ms > 0) {
		o.hold_ms = hold_ms;
	}
	assert_int_equal(
	    eb_ingress_new(&g_fx.t->loop, g_fx.bus, &o, &e, &g_fx.in), 0);
	assert_int_equal(eb_ingress_start(g_fx.in), 0);
	if (direct) {
		eb__bus_direct_set(
		    g_fx.bus, "external.ingress", eb__ingress_take, g_fx.in);
	}
}

static void
request(const char *body_json, const char *hk, const char *hv)
{
	json_t *body = json_loads(body_json, JSON_DECODE_ANY, NULL);
	json_t *h = hk != NULL ? json_pack("{s:s}", hk, hv) : NULL;

	int *slot = &g_fx.slot[g_fx.n_requests];

	*slot = g_fx.n_requests++;
	assert_int_equal(eb_bus_request(g_fx.bus, "external.ingress", body, h,
	                     NULL, reply_cb, slot),
	    0);
	json_decref(body);
	json_decref(h);
}

static int
replies_at_least(void *arg)
{
	return g_fx.n_replies >= *(int *) arg;
}

static void
wait_replies(int n)
{
	assert_int_equal(th_run_until(g_fx.t, replies_at_least, &n, 3000), 0);
}

static const eb_ingress_route def_route = { .to = "orders" };

/* A request with these headers (compact JSON, key order kept). */
static void
request_h(const char *headers_json)
{
	json_t *h = json_loads(headers_json, JSON_PRESERVE_ORDER, NULL);
	int    *slot = &g_fx.slot[g_fx.n_requests];

	assert_non_null(h);
	*slot = g_fx.n_requests++;
	assert_int_equal(eb_bus_request(g_fx.bus, "external.ingress", NULL, h,
	                     NULL, reply_cb, slot),
	    0);
	json_decref(h);
}

/*
 * The stamped headers as the target sees them: the client's own keys in
 * their order (then the gateway's ebnode.entry), a stamp key the client set
 * (here ebnode.seq, with escapes elsewhere) overwritten in place, the other
 * stamps after them; a client's ebnode.config kept while no config version
 * is in force. The same bytes the jansson copy-and-set of before gave.
 */
static void
test_stamped_header_encoding(void **state)
{
	eb_bus_consumer *tc;

	(void) state;
	make(NULL, 0, &def_route, 0, 0);
	assert_int_equal(
	    eb_bus_consumer_new(g_fx.bus, "orders", 0, target_cb, NULL, &tc),
	    0);
	assert_int_equal(eb_ingress_lead(g_fx.in, 9), 0);
	request_h("{\"a\":\"q\\\"\\u0001\",\"ebnode.seq\":\"forged\","
	          "\"ebnode.config\":\"c\"}");
	request_h("{}");
	wait_replies(2);
	assert_int_equal(g_fx.n_target, 2);
	assert_string_equal(g_fx.target_headers[0],
	    "{\"a\":\"q\\\"\\u0001\",\"ebnode.seq\":\"1\","
	    "\"ebnode.config\":\"c\",\"ebnode.entry\":\"n1\","
	    "\"ebnode.epoch\":\"9\"}");
	assert_string_equal(g_fx.target_headers[1],
	    "{\"ebnode.entry\":\"n1\",\"ebnode.epoch\":\"9\","
	    "\"ebnode.seq\":\"2\"}");
}
static char addr_orders[] = "orders", addr_refunds[] = "refunds";

static void
test_routes_stamps_and_acks(void **state)
{
	eb_bus_consumer *tc;

	(void) state;
	make(NULL, 0, &def_route, 0, 0);
	assert_int_equal(
	    eb_bus_consumer_new(g_fx.bus, "orders", 0, target_cb, NULL, &tc),
	    0);
	assert_int_equal(eb_ingress_lead(g_fx.in, 77), 0);
	request("{\"n\":1}", NULL, NULL);
	request("{\"n\":2}", NULL, NULL);
	wait_replies(2);
	assert_int_equal(g_fx.status[0], 0);
	assert_int_equal(g_fx.epoch[0], 77);
	assert_int_equal(g_fx.seq[0], 1);
	assert_int_equal(g_fx.seq[1], 2);
	assert_int_equal(g_fx.n_target, 2);
	assert_string_equal(g_fx.target_seq[1], "2");
	assert_string_equal(g_fx.target_entry[0], "n1");
	assert_string_equal(g_fx.target_body[1], "{\"n\":2}");
	eb_bus_consumer_close(tc);
}

/*
 * The gateway's per-message blocks (eb__ingress_held) are kept for the next
 * messages (common/spare.h; none under the sanitizers): after 3 answered
 * requests 3 are kept, and 2 more take 2 of them and put them back, so
 * still 3, each answered with its own stamp and delivered with its own body.
 */
static void
test_held_blocks_reused(void **state)
{
	eb_bus_consumer *tc;
	uint32_t         kept = 3;

	(void) state;
#ifdef EB__SPARE_OFF
	kept = 0;
#endif
	make(NULL, 0, &def_route, 0, 0);
	assert_int_equal(
	    eb_bus_consumer_new(g_fx.bus, "orders", 0, target_cb, NULL, &tc),
	    0);
	assert_int_equal(eb_ingress_lead(g_fx.in, 5), 0);
	assert_int_equal(g_fx.in->held_spare.n, 0);
	request("{\"n\":1}", NULL, NULL);
	request("{\"n\":2}", NULL, NULL);
	request("{\"n\":3}", NULL, NULL);
	wait_replies(3);
	assert_int_equal(g_fx.in->held_spare.n, kept);
	request("{\"n\":4}", NULL, NULL);
	request("{\"n\":5}", NULL, NULL);
	wait_replies(5);
	assert_int_equal(g_fx.in->held_spare.n, kept);
	for (int i = 0; i < 5; i++) {
		char want[24];

		assert_int_equal(g_fx.status[i], 0);
		assert_int_equal(g_fx.seq[i], i + 1);
		(void) snprintf(want, sizeof(want), "{\"n\":%d}", i + 1);
		assert_string_equal(g_fx.target_body[i], want);
	}
	eb_bus_consumer_close(tc);
}

/*
 * The router's contexts (one per routed message) are kept for the next
 * ones when their strings fit EB__INGRESS_ROUTE_STRS (none kept under the
 * sanitizers): 3 routed messages leave 3, 2 more reuse 2 of them; a message
 * whose stamped headers do not fit gets a block of its own, freed, not
 * kept; each target gets its own stamp, headers and body.
 */
static void
test_route_blocks_reused(void **state)
{
	eb_bus_consumer *tc;
	uint32_t         kept = 3;
	char             big[400];
	char             want[64];

	(void) state;
#ifdef EB__SPARE_OFF
	kept = 0;
#endif
	make(NULL, 0, &def_route, 0, 0);
	assert_int_equal(
	    eb_bus_consumer_new(g_fx.bus, "orders", 0, target_cb, NULL, &tc),
	    0);
	assert_int_equal(eb_ingress_lead(g_fx.in, 4), 0);
	request("{\"n\":1}", NULL, NULL);
	request("{\"n\":2}", NULL, NULL);
	request("{\"n\":3}", NULL, NULL);
	wait_replies(3);
	assert_int_equal(g_fx.in->route_spare.n, kept);
	request("{\"n\":4}", NULL, NULL);
	memset(big, 'h', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	request("{\"n\":5}", "big", big); /* ~500 bytes of headers */
	request("{\"n\":6}", NULL, NULL);
	wait_replies(6);
	assert_int_equal(g_fx.in->route_spare.n, kept);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(g_fx.status[i], 0);
		assert_int_equal(g_fx.seq[i], i + 1);
		(void) snprintf(want, sizeof(want), "{\"n\":%d}", i + 1);
		assert_string_equal(g_fx.target_body[i], want);
		(void) snprintf(want, sizeof(want), "%d", i + 1);
		assert_string_equal(g_fx.target_seq[i], want);
		assert_string_equal(g_fx.target_entry[i], "n1");
	}
	eb_bus_consumer_close(tc);
}

/* The router's unchecked sends, counted (test_trusted_stamp_sends). */
static int n_trusted;

static int
counting_send(eb_bus *bus, const char *address, const char *body,
    size_t body_len, const char *hdr, size_t hdr_len,
    const eb_bus_send_opts *opts, eb_bus_receipt_cb cb, void *arg)
{
	n_trusted++;
	return eb__bus_send_confirmed_enc_trusted(
	    bus, address, body, body_len, hdr, hdr_len, opts, cb, arg);
}

static int
counting_publish(eb_bus *bus, const char *address, const char *body,
    size_t body_len, const char *hdr, size_t hdr_len,
    const eb_bus_send_opts *opts, eb_bus_receipt_cb cb, void *arg)
{
	n_trusted++;
	return eb__bus_publish_confirmed_enc_trusted(
	    bus, address, body, body_len, hdr, hdr_len, opts, cb, arg);
}

static char enc_seen[4][200];
static int  n_enc_seen;

static void
enc_target_cb(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	size_t      n = 0;
	const char *h = eb_bus_msg_headers_enc(msg, &n);

	(void) c;
	(void) arg;
	if (h == NULL) {
		h = "(not encoded)";
		n = strlen(h);
	}
	assert_true(n_enc_seen < 4);
	(void) snprintf(
	    enc_seen[n_enc_seen++], sizeof(enc_seen[0]), "%.*s", (int) n, h);
}

/*
 * The router's stamped headers go through the sends the node installs
 * (eb__ingress_set_enc_sends: the bus's unchecked ones) and reach the
 * target as the exact bytes the checked path gave; a key with a NUL byte
 * (cut by the encoding, so it may repeat another) goes through the public
 * checked call instead, which refuses the repeated key as before: the
 * sender gets the same failure.
 */
static void
test_trusted_stamp_sends(void **state)
{
	eb_bus_consumer *tc;
	eb_bus_send_opts o;
	json_t          *h;
	int             *slot;

	(void) state;
	n_trusted = 0;
	n_enc_seen = 0;
	make(NULL, 0, &def_route, 0, 0);
	eb__ingress_set_enc_sends(g_fx.in, counting_send, counting_publish);
	assert_int_equal(eb_bus_consumer_new(
	                     g_fx.bus, "orders", 0, enc_target_cb, NULL, &tc),
	    0);
	assert_int_equal(eb_ingress_lead(g_fx.in, 3), 0);
	request_h("{\"a\":\"b\"}");
	request_h("{\"q\":\"\\\"x\",\"ebnode.seq\":\"forged\"}");
	wait_replies(2);
	assert_int_equal(g_fx.status[0], 0);
	assert_int_equal(g_fx.status[1], 0);
	assert_int_equal(n_trusted, 2);
	assert_int_equal(n_enc_seen, 2);
	assert_string_equal(enc_seen[0],
	    "{\"a\":\"b\",\"ebnode.entry\":\"n1\",\"ebnode.epoch\":\"3\","
	    "\"ebnode.seq\":\"1\"}");
	/* An escape: not the plain form eb_bus_msg_headers_enc gives. */
	assert_string_equal(enc_seen[1], "(not encoded)");
	/* "a\0x" is written as "a", next to "a": the checked call refuses
	 * the repeated key, and the router answers as it always did. Sent
	 * to the router's address as a link delivers it (the gateway's
	 * json_deep_copy, jansson 2.14, would merge the two keys). */
	h = json_object();
	assert_int_equal(
	    json_object_setn_new(h, "a\0x", 3, json_string("1")), 0);
	assert_int_equal(json_object_set_new(h, "a", json_string("2")), 0);
	slot = &g_fx.slot[g_fx.n_requests];
	*slot = g_fx.n_requests++;
	eb_bus_send_opts_init(&o);
	o.share_headers = 1; /* not copied (a copy merges the keys) */
	assert_int_equal(eb_bus_request_raw(g_fx.bus, EB_INGRESS_LEADER_ADDRESS,
	                     "1", 1, h, &o, reply_cb, slot),
	    0);
	json_decref(h);
	wait_replies(3);
	assert_int_equal(n_trusted, 2);
	assert_int_equal(n_enc_seen, 2);
	assert_int_not_equal(g_fx.status[2], 0);
	assert_int_equal(g_fx.fcode[2], EB_INGRESS_NO_TARGET);
	assert_string_equal(g_fx.fmsg[2], "No handlers for address orders");
	eb_bus_consumer_close(tc);
}

static void
test_held_until_leader_then_in_order(void **state)
{
	eb_bus_consumer *tc;
	eb_ingress_stats st;
	int              i;
	char             b[32];

	(void) state;
	make(NULL, 0, &def_route, 0, 0);
	assert_int_equal(
	    eb_bus_consumer_new(g_fx.bus, "orders", 0, target_cb, NULL, &tc),
	    0);
	for (i = 0; i < 5; i++) {
		(void) snprintf(b, sizeof(b), "{\"i\":%d}", i);
		request(b, NULL, NULL);
	}
	/* Nothing answers while no leader exists. */
	assert_int_equal(
	    th_run_until(g_fx.t, replies_at_least, &(int){ 1 }, 100), -1);
	eb_ingress_stats_get(g_fx.in, &st);
	assert_int_equal(st.holding, 5);
	assert_int_equal(eb_ingress_lead(g_fx.in, 3), 0);
	wait_replies(5);
	for (i = 0; i < 5; i++) {
		(void) snprintf(b, sizeof(b), "{\"i\":%d}", i);
		assert_int_equal(g_fx.status[i], 0);
		assert_int_equal(g_fx.seq[i], i + 1);
		assert_string_equal(g_fx.target_body[i], b);
	}
	eb_bus_consumer_close(tc);
}

static void
test_hold_overflow_and_timeout(void **state)
{
	(void) state;
	make(NULL, 0, &def_route, 2, 150);
	request("1", NULL, NULL);
	request("2", NULL, NULL);
	request("3", NULL, NULL); /* over the bound: failed at once */
	wait_replies(1);
	assert_int_equal(g_fx.fcode[2], EB_INGRESS_HOLD_FULL);
	assert_string_equal(g_fx.fmsg[2],
	    "ebnode: ingress hold queue full (2 messages) and no leader "
	    "reachable");
	wait_replies(3);
	assert_int_equal(g_fx.fcode[0], EB_INGRESS_HOLD_TIMEOUT);
	assert_int_equal(g_fx.fcode[1], EB_INGRESS_HOLD_TIMEOUT);
	assert_string_equal(
	    g_fx.fmsg[0], "ebnode: no ingress leader within 150 ms");
}

static void
test_rules(void **state)
{
	eb_bus_consumer       *a;
	eb_bus_consumer       *b;
	const eb_ingress_route routes[] = {
		{ .header = "kind",
		    .match = EB_INGRESS_MATCH_EQUALS,
		    .value = "order",
		    .to = "A" },
		{ .field = "sku",
		    .match = EB_INGRESS_MATCH_PREFIX,
		    .value = "X-",
		    .to = "B" },
		{ .field = "n",
		    .match = EB_INGRESS_MATCH_REGEX,
		    .value = "4[0-9]",
		    .to = "B" },
		{ .field = "dead",
		    .match = EB_INGRESS_MATCH_EQUALS,
		    .value = "true",
		    .to = "nobody" },
	};

	(void) state;
	make(routes, 4, NULL, 0, 0);
	assert_int_equal(
	    eb_bus_consumer_new(g_fx.bus, "A", 0, target_cb, NULL, &a), 0);
	assert_int_equal(
	    eb_bus_consumer_new(g_fx.bus, "B", 0, target_cb, NULL, &b), 0);
	assert_int_equal(eb_ingress_lead(g_fx.in, 1), 0);
	request("{}", "kind", "order");            /* A, seq 1 */
	request("{\"sku\":\"X-12\"}", NULL, NULL); /* B, seq 2 */
	request("{\"n\":42}", NULL, NULL);         /* B, seq 3 */
	request("{\"n\":420}", NULL, NULL);        /* regex is whole-string */
	request("{\"dead\":true}", NULL, NULL);    /* target has no handler */
	request("{}", NULL, NULL);                 /* seq 4: no gap */
	wait_replies(6);
	assert_int_equal(g_fx.seq[0], 1);
	assert_int_equal(g_fx.seq[1], 2);
	assert_int_equal(g_fx.seq[2], 3);
	assert_int_equal(g_fx.fcode[3], EB_INGRESS_NO_ROUTE);
	assert_string_equal(
	    g_fx.fmsg[3], "ebnode: no ingress route matches the message");
	assert_int_equal(g_fx.fcode[4], EB_INGRESS_NO_TARGET);
	assert_string_equal(g_fx.fmsg[4], "No handlers for address nobody");
	assert_int_equal(g_fx.fcode[5], EB_INGRESS_NO_ROUTE);
	request("{\"sku\":\"X-9\"}", NULL, NULL);
	wait_replies(7);
	assert_int_equal(g_fx.seq[6], 4);
	assert_int_equal(g_fx.n_target, 4);
	eb_bus_consumer_close(a);
	eb_bus_consumer_close(b);
}

static int lease_ok;

static int
lease_cb(void *arg)
{
	(void) arg;
	return lease_ok;
}

static void
test_lease_lost_is_retried_once_then_failed(void **state)
{
	eb_ingress_stats st;

	(void) state;
	make(NULL, 0, &def_route, 0, 0);
	eb_ingress_set_leader_check(g_fx.in, lease_cb, NULL);
	lease_ok = 0;
	assert_int_equal(eb_ingress_lead(g_fx.in, 9), 0);
	request("{}", NULL, NULL);
	wait_replies(1);
	assert_int_equal(g_fx.fcode[0], EB_INGRESS_NOT_LEADER);
	eb_ingress_stats_get(g_fx.in, &st);
	assert_int_equal(st.retried, 1);
	assert_int_equal(st.routed, 0);
}

static void
custom_cb(
    eb_ingress *in, eb_bus_msg *msg, const eb_ingress_stamp *stamp, void *arg)
{
	(void) in;
	(*(int *) arg)++;
	assert_int_equal(stamp->epoch, 5);
	(void) eb_ingress_ack(msg, stamp, "custom");
}

static void
test_custom_handler(void **state)
{
	int calls = 0;

	(void) state;
	make(NULL, 0, NULL, 0, 0);
	eb_ingress_set_handler(g_fx.in, custom_cb, &calls);
	assert_int_equal(eb_ingress_lead(g_fx.in, 5), 0);
	request("{}", NULL, NULL);
	request("{}", NULL, NULL);
	wait_replies(2);
	assert_int_equal(calls, 2);
	assert_int_equal(g_fx.seq[1], 2);
}

/* A custom handler that keeps what it is given and answers nothing. */
static eb_bus_msg *kept[4];
static int         n_kept;

static void
keep_cb(
    eb_ingress *in, eb_bus_msg *msg, const eb_ingress_stamp *stamp, void *arg)
{
	(void) in;
	(void) stamp;
	(void) arg;
	assert_true(n_kept < 4);
	kept[n_kept++] = eb_bus_msg_hold(msg);
}

/* An ingress leading with keep_cb as its router's handler. */
static void
lead_keeping(void)
{
	n_kept = 0;
	make(NULL, 0, NULL, 0, 0);
	eb_ingress_set_handler(g_fx.in, keep_cb, NULL);
	assert_int_equal(eb_ingress_lead(g_fx.in, 5), 0);
}

/* A request with its own timeout (ms). */
static void
request_t(uint64_t timeout_ms)
{
	eb_bus_send_opts so;
	int             *slot = &g_fx.slot[g_fx.n_requests];

	*slot = g_fx.n_requests++;
	eb_bus_send_opts_init(&so);
	so.timeout_ms = timeout_ms;
	assert_int_equal(eb_bus_request_raw(g_fx.bus, "external.ingress", "{}",
	                     2, NULL, &so, reply_cb, slot),
	    0);
}

/*
 * A requester's timeout holds whichever way its request reached the
 * gateway: it gets a TIMEOUT failure when it gives up, and the leader's
 * late answer reaches nobody.
 */
static void
test_requester_timeout(void **state)
{
	uint64_t t0;

	(void) state;
	lead_keeping();
	/* The loop's time is 400 ms old when the request is made (no loop
	 * turn since): its 100 ms count from the request, not from the
	 * loop's last look at the clock, nor 400 ms later. */
	assert_int_equal(
	    nanosleep(&(struct timespec){ 0, 400000000 }, NULL), 0);
	t0 = uv_hrtime();
	request_t(100);
	wait_replies(1);
	assert_true(uv_hrtime() - t0 >= 99 * 1000000ull);
	assert_true(uv_hrtime() - t0 < 400 * 1000000ull);
	assert_int_equal(n_kept, 1);
	assert_int_equal(g_fx.status[0], EB_ETIMEOUT);
	assert_int_equal(g_fx.ftype[0], EB_BUS_TIMEOUT);
	assert_int_equal(g_fx.fcode[0], -1);
	assert_true(
	    strncmp(g_fx.fmsg[0],
	        "Timed out after waiting 100(ms) for a reply. address: ", 54) ==
	    0);
	/* The leader answers late: nobody hears it. */
	assert_int_equal(eb_bus_msg_fail(kept[0], 1, "late"), 0);
	eb_bus_msg_release(kept[0]);
	assert_int_equal(
	    th_run_until(g_fx.t, replies_at_least, &(int){ 2 }, 100), -1);
	assert_int_equal(g_fx.n_replies, 1);
}

/*
 * The leader goes away with a request the gateway took: the retry waits
 * for a leader (held), but no longer than its requester does. It is
 * answered TIMEOUT at the requester's 300 ms, not at the hold's 5 s, and
 * the gateway lets go of it then. (A request that came through the bus
 * times out at the bus the same way; the gateway keeps its message until
 * the hold ends, as it always did.)
 */
static void
test_requester_deadline_while_held(void **state)
{
	eb_ingress_stats st;
	eb_bus_totals    tot;

	(void) state;
	lead_keeping();
	request_t(300);
	assert_int_equal(th_run_until(g_fx.t, th_flag_set, &n_kept, 1000), 0);
	/* Taken: the gateway's forward is the one bus request pending. */
	eb_bus_stats_totals(g_fx.bus, &tot);
	assert_int_equal(tot.pending_requests, direct ? 1 : 2);
	eb_ingress_unlead(g_fx.in);
	assert_int_equal(eb_bus_msg_fail(kept[0], EB_INGRESS_NOT_LEADER,
	                     EB_INGRESS_NOT_LEADER_TEXT),
	    0);
	eb_bus_msg_release(kept[0]);
	wait_replies(1);
	assert_int_equal(g_fx.status[0], EB_ETIMEOUT);
	assert_int_equal(g_fx.ftype[0], EB_BUS_TIMEOUT);
	eb_ingress_stats_get(g_fx.in, &st);
	assert_int_equal(st.retried, 1);
	assert_int_equal(st.holding, direct ? 0 : 1);
}

/*
 * The gateway counts a taken request's deadline in loop time from its
 * uv_hrtime() receipt stamp (eb__ingress_take): that holds only while the
 * loop's time is uv_hrtime's clock in milliseconds, as in libuv on Linux
 * (its fast clock is the monotonic one, or the coarse monotonic one when
 * that ticks at least every millisecond).
 */
static void
test_loop_time_base(void **state)
{
	int i;

	(void) state;
	for (i = 0; i < 100; i++) {
		uint64_t now_ms;
		uint64_t hr_ms;

		uv_update_time(&g_fx.t->loop);
		now_ms = uv_now(&g_fx.t->loop);
		hr_ms = uv_hrtime() / 1000000u;
		assert_true(hr_ms >= now_ms && hr_ms - now_ms <= 1);
	}
}

/* Rule 6 at the entry node: an ack below the node's fence is refused, the
 * message routed once more, then failed (409); an accepted ack raises the
 * fence. */
static void
test_gateway_fences_acks(void **state)
{
	int              calls = 0;
	eb_ingress_stats st;

	(void) state;
	make(NULL, 0, NULL, 0, 0);
	eb_ingress_set_handler(g_fx.in, custom_cb, &calls);
	assert_int_equal(eb_ingress_lead(g_fx.in, 5), 0);
	request("{}", NULL, NULL);
	wait_replies(1);
	assert_int_equal(g_fx.status[0], 0);
	assert_int_equal(eb_bus_fence(g_fx.bus), 5); /* raised by the ack */
	eb_bus_fence_raise(g_fx.bus, 9); /* a newer leader is known */
	request("{}", NULL, NULL);
	wait_replies(2);
	assert_int_equal(calls, 3); /* routed again once */
	assert_int_equal(g_fx.fcode[1], EB_INGRESS_FENCED_ACK);
	assert_string_equal(g_fx.fmsg[1],
	    "ebnode: acknowledgement from superseded leader epoch 5 (highest "
	    "seen 9); the message may have been delivered");
	eb_ingress_stats_get(g_fx.in, &st);
	assert_int_equal(st.fenced_acks, 2);
	assert_int_equal(st.retried, 1);
	assert_int_equal(st.acked, 1);
}

/* Acks not in the router's template form: the gateway reads their epoch
 * the general way. */
static const char *const raw_acks[] = {
	"{\"epoch\":5,\"status\":\"ok\"}",
	"{\"status\":\"ok\",\"epoch\":5,\"seq\":1,\"to\":\"a\",\"x\":1}",
	"{\"status\":\"ok\",\"epoch\":5,\"seq\":1,\"to\":\"a\"}",
};

/* A custom handler answering with bodies[calls % n], written by hand. */
typedef struct raw_replies {
	const char *const *bodies;
	int                n;
	int                calls;
} raw_replies;

static void
custom_raw_cb(
    eb_ingress *in, eb_bus_msg *msg, const eb_ingress_stamp *st, void *arg)
{
	raw_replies *r = arg;
	const char  *b = r->bodies[r->calls++ % r->n];

	(void) in;
	(void) st;
	(void) eb_bus_msg_reply_raw(msg, b, strlen(b), NULL, NULL, NULL, NULL);
}

/* Acks from an old epoch are fenced whatever their form: reordered, with a
 * member the template lacks, or exactly the template. */
static void
test_gateway_fences_any_ack_form(void **state)
{
	raw_replies      r = { raw_acks, 3, 0 };
	int              i;
	eb_ingress_stats st;

	(void) state;
	make(NULL, 0, NULL, 0, 0);
	eb_ingress_set_handler(g_fx.in, custom_raw_cb, &r);
	assert_int_equal(eb_ingress_lead(g_fx.in, 5), 0);
	eb_bus_fence_raise(g_fx.bus, 9);
	for (i = 0; i < 3; i++) {
		request("{}", NULL, NULL);
	}
	wait_replies(3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(g_fx.fcode[i], EB_INGRESS_FENCED_ACK);
	}
	eb_ingress_stats_get(g_fx.in, &st);
	assert_int_equal(st.fenced_acks, 6); /* each, and its one retry */
	assert_int_equal(st.acked, 0);
}

/* Acks in the router's template form at the edges of its reader: 18 and
 * 19 digits (INT64_MAX), one past INT64_MAX (not a template epoch, nor one
 * the field reader takes: not fenced), long plain and escaped "to". */
static const char *const edge_acks[] = {
	"{\"status\":\"ok\",\"epoch\":999999999999999999,\"seq\":1,"
	"\"to\":\"a.long.plain.target.address.of.forty.chars\"}",
	"{\"status\":\"ok\",\"epoch\":9223372036854775807,\"seq\":"
	"9223372036854775807,\"to\":\"x\\\"y\"}",
	"{\"status\":\"ok\",\"epoch\":9223372036854775808,\"seq\":3}",
	"{\"status\":\"ok\",\"epoch\":5,\"seq\":4,\"to\":"
	"\"0123456789abcdef0123456789abcdef\xc3\xa9\"}",
};

static void
test_gateway_ack_template_edges(void **state)
{
	raw_replies      r = { edge_acks, 4, 0 };
	eb_ingress_stats st;

	(void) state;
	make(NULL, 0, NULL, 0, 0);
	eb_ingress_set_handler(g_fx.in, custom_raw_cb, &r);
	assert_int_equal(eb_ingress_lead(g_fx.in, 5), 0);
	request("{}", NULL, NULL);
	wait_replies(1);
	assert_int_equal(g_fx.status[0], 0);
	assert_true(eb_bus_fence(g_fx.bus) == 999999999999999999ull);
	request("{}", NULL, NULL);
	wait_replies(2);
	assert_int_equal(g_fx.status[1], 0);
	assert_true(eb_bus_fence(g_fx.bus) == 9223372036854775807ull);
	request("{}", NULL, NULL);
	wait_replies(3);
	assert_int_equal(g_fx.status[2], 0); /* no epoch it can read */
	assert_true(eb_bus_fence(g_fx.bus) == 9223372036854775807ull);
	request("{}", NULL, NULL); /* epoch 5: fenced, retried, fenced */
	wait_replies(4);
	assert_int_equal(g_fx.fcode[3], EB_INGRESS_FENCED_ACK);
	eb_ingress_stats_get(g_fx.in, &st);
	assert_int_equal(st.acked, 3);
	assert_int_equal(st.fenced_acks, 2);
	assert_int_equal(r.calls, 5);
}

static void
test_close_fails_held(void **state)
{
	int closed = 0;

	(void) state;
	make(NULL, 0, &def_route, 0, 0);
	request("{}", NULL, NULL);
	assert_int_equal(
	    th_run_until(g_fx.t, replies_at_least, &(int){ 1 }, 50), -1);
	eb__bus_direct_set(g_fx.bus, NULL, NULL, NULL);
	eb_ingress_close(g_fx.in, closed_cb, &closed);
	g_fx.in = NULL;
	wait_replies(1);
	assert_int_equal(g_fx.fcode[0], EB_INGRESS_CLOSING);
	assert_int_equal(th_run_until(g_fx.t, th_flag_set, &closed, 1000), 0);
}

static void
register_target_cb(uv_timer_t *t)
{
	eb_bus_consumer **tc = t->data;

	assert_int_equal(
	    eb_bus_consumer_new(g_fx.bus, "orders", 0, target_cb, NULL, tc), 0);
}

static void
timer_closed_cb(uv_handle_t *h)
{
	(void) h;
}

static void
test_warmup_waits_for_target_in_order(void **state)
{
	eb_bus_consumer  *tc = NULL;
	static uv_timer_t t; /* closes after this function returns */
	int               i;
	char              b[32];

	(void) state;
	warmup_ms = 2000;
	make(NULL, 0, &def_route, 0, 0);
	assert_int_equal(eb_ingress_lead(g_fx.in, 8), 0);
	for (i = 0; i < 3; i++) {
		(void) snprintf(b, sizeof(b), "{\"i\":%d}", i);
		request(b, NULL, NULL);
	}
	/* The target's interest arrives 50 ms after the leader took over
	 * (a failover): nothing fails meanwhile, and all three are routed
	 * in order once it is there. */
	(void) uv_timer_init(&g_fx.t->loop, &t);
	t.data = &tc;
	(void) uv_timer_start(&t, register_target_cb, 50, 0);
	wait_replies(3);
	for (i = 0; i < 3; i++) {
		(void) snprintf(b, sizeof(b), "{\"i\":%d}", i);
		assert_int_equal(g_fx.status[i], 0);
		assert_int_equal(g_fx.seq[i], i + 1);
		assert_string_equal(g_fx.target_body[i], b);
	}
	uv_close((uv_handle_t *) &t, timer_closed_cb);
	eb_bus_consumer_close(tc);
}

static void
test_warmup_ends_with_502(void **state)
{
	(void) state;
	/* Scaled like th_run_until's waits, so that the early probe stays
	 * inside the warm-up under the sanitizer multiplier. */
	warmup_ms = 200 * th_timeout_multiplier();
	make(NULL, 0, &def_route, 0, 0);
	assert_int_equal(eb_ingress_lead(g_fx.in, 8), 0);
	request("{}", NULL, NULL);
	/* Still waiting well inside the warm-up. */
	assert_int_equal(
	    th_run_until(g_fx.t, replies_at_least, &(int){ 1 }, 50), -1);
	wait_replies(1);
	assert_int_equal(g_fx.fcode[0], EB_INGRESS_NO_TARGET);
	assert_string_equal(g_fx.fmsg[0], "No handlers for address orders");
}

static void
test_bad_regex_rejected(void **state)
{
	eb_ingress_opts        o;
	eb_errbuf              e;
	eb_ingress            *in = NULL;
	const eb_ingress_route r = { .field = "x",
		.match = EB_INGRESS_MATCH_REGEX,
		.value = "(",
		.to = "A" };

	(void) state;
	eb_ingress_opts_init(&o);
	o.routes = &r;
	o.route_count = 1;
	assert_int_equal(
	    eb_ingress_new(&g_fx.t->loop, g_fx.bus, &o, &e, &in), EB_ECONF);
	assert_string_equal(e.msg, "ingress route 0: invalid regex \"(\"");
	assert_null(in);
}

/* Runs fn in a child process: it must abort (EB_ASSERT), not return. */
static void
expect_abort(void (*fn)(void))
{
	int   status = 0;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
}

static void
close_twice(void)
{
	eb_ingress_close(g_fx.in, NULL, NULL);
	eb_ingress_close(g_fx.in, NULL, NULL);
}

static void
start_after_close(void)
{
	eb_ingress_close(g_fx.in, NULL, NULL);
	(void) eb_ingress_start(g_fx.in);
}

static void
bus_close_twice(void)
{
	eb_bus_close(g_fx.bus, NULL, NULL);
	eb_bus_close(g_fx.bus, NULL, NULL);
}

/* Lifecycle misuse is a programming error: EB_ASSERT aborts at the call. */
static void
test_lifecycle_misuse_asserts(void **state)
{
	(void) state;
	make(NULL, 0, &def_route, 0, 0);
	expect_abort(close_twice);
	expect_abort(start_after_close);
	expect_abort(bus_close_twice);
}

/* The whole table swaps between two messages; each message is routed by
 * one version and says which; held messages are routed by the version in
 * force when they are routed; a bad table changes nothing. */
static void
test_reconfigure_swaps_table(void **state)
{
	static const eb_ingress_route refunds = { .to = "refunds" };
	static const eb_ingress_route bad = { .field = "k",
		.value = "(",
		.to = "x",
		.match = EB_INGRESS_MATCH_REGEX };
	eb_bus_consumer              *t1, *t2;
	eb_ingress_opts               o;
	eb_errbuf                     e;

	(void) state;
	make(NULL, 0, &def_route, 0, 0);
	assert_int_equal(eb_bus_consumer_new(g_fx.bus, "orders", 0, target_cb,
	                     addr_orders, &t1),
	    0);
	assert_int_equal(eb_bus_consumer_new(g_fx.bus, "refunds", 0, target_cb,
	                     addr_refunds, &t2),
	    0);
	assert_int_equal(eb_ingress_lead(g_fx.in, 5), 0);
	request("{\"n\":1}", NULL, NULL);
	wait_replies(1);
	eb_ingress_opts_init(&o);
	o.default_route = &refunds;
	o.hold_max = 10;
	assert_int_equal(eb_ingress_reconfigure(g_fx.in, &o, 7, &e), 0);
	assert_int_equal(eb_ingress_config_version(g_fx.in), 7);
	request("{\"n\":2}", NULL, NULL);
	wait_replies(2);
	o.routes = &bad;
	o.route_count = 1;
	assert_int_equal(eb_ingress_reconfigure(g_fx.in, &o, 8, &e), EB_ECONF);
	assert_int_equal(eb_ingress_config_version(g_fx.in), 7);
	/* Held while no leader, then routed by the version in force then. */
	eb_ingress_unlead(g_fx.in);
	request("{\"n\":3}", NULL, NULL);
	o.default_route = &def_route;
	o.routes = NULL;
	o.route_count = 0;
	assert_int_equal(eb_ingress_reconfigure(g_fx.in, &o, 9, &e), 0);
	assert_int_equal(eb_ingress_lead(g_fx.in, 6), 0);
	wait_replies(3);
	assert_int_equal(g_fx.n_target, 3);
	assert_string_equal(g_fx.target_addr[0], "orders");
	assert_string_equal(g_fx.target_config[0], "");
	assert_string_equal(g_fx.target_addr[1], "refunds");
	assert_string_equal(g_fx.target_config[1], "7");
	assert_string_equal(g_fx.target_body[1], "{\"n\":2}");
	assert_string_equal(g_fx.target_addr[2], "orders");
	assert_string_equal(g_fx.target_config[2], "9");
	assert_string_equal(g_fx.target_body[2], "{\"n\":3}");
	eb_bus_consumer_close(t1);
	eb_bus_consumer_close(t2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_routes_stamps_and_acks, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_held_until_leader_then_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_held_blocks_reused, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_trusted_stamp_sends, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_route_blocks_reused, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_hold_overflow_and_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_lease_lost_is_retried_once_then_failed, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    test_custom_handler, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_stamped_header_encoding, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_gateway_fences_acks, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_gateway_fences_any_ack_form, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_gateway_ack_template_edges, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_close_fails_held, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_bad_regex_rejected, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_warmup_waits_for_target_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_warmup_ends_with_502, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_lifecycle_misuse_asserts, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_reconfigure_swaps_table, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_requester_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_requester_deadline_while_held, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_loop_time_base, setup, teardown),
	};
	int failed = cmocka_run_group_tests_name("bus", tests, NULL, NULL);

	direct = 1;
	return failed +
	       cmocka_run_group_tests_name("direct", tests, NULL, NULL);
}
