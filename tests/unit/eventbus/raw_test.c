/*
 * Unit tests for the raw-body bus API (eb_bus_send_raw, publish_raw,
 * request_raw, msg_reply_raw): the body bytes reach consumers verbatim,
 * parse lazily like any body, a NULL or "null" body is a null body, headers
 * are checked and kept (also given as their encoding, to the confirmed
 * sends); and the queue-entry pool survives overflow, consumer
 * close and bus close with messages queued (ASan/leak-checked builds judge
 * the ownership).
 */
#include <stdio.h>

#include <ebnode/bus.h>

#include "eventbus/bus_trusted.h"
#include "tests/unit/eventbus/bus_th.h"

/* What a raw consumer saw: the last body bytes and counts. */
typedef struct raw_rec {
	int              n;
	char             body[256];
	size_t           body_len;
	int              null_bodies;
	int              is_send;
	char             header_k[32];
	eb_bus_consumer *c;
	int              reply_raw; /* answer with the raw body "[1,2]" */
} raw_rec;

static void
raw_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	raw_rec      *r = arg;
	size_t        len = 0;
	const char   *b = eb_bus_msg_body_bytes(msg, &len);
	const json_t *h = eb_bus_msg_headers(msg);
	const json_t *k = json_object_get(h, "k");

	(void) c;
	r->n++;
	r->is_send = eb_bus_msg_is_send(msg);
	if (eb_bus_msg_body(msg) == NULL) {
		r->null_bodies++;
	}
	assert_true(len < sizeof(r->body));
	memcpy(r->body, b, len);
	r->body[len] = '\0';
	r->body_len = len;
	(void) snprintf(r->header_k, sizeof(r->header_k), "%s",
	    json_is_string(k) ? json_string_value(k) : "");
	if (r->reply_raw) {
		assert_int_equal(eb_bus_msg_reply_raw(
		                     msg, "[1,2]", 5, NULL, NULL, NULL, NULL),
		    0);
	}
}

/* The reply's body bytes, for request_raw. */
typedef struct raw_out {
	int  calls;
	int  status;
	char body[64];
} raw_out;

static void
raw_out_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg)
{
	raw_out *o = arg;
	size_t   len = 0;

	(void) bus;
	(void) failure;
	o->calls++;
	o->status = status;
	if (status == 0) {
		const char *b = eb_bus_msg_body_bytes(reply, &len);

		assert_true(len < sizeof(o->body));
		memcpy(o->body, b, len);
		o->body[len] = '\0';
	}
}

static void
test_send_publish_raw(void **state)
{
	th_loop    *t = *state;
	eb_bus     *bus = bus_open(t, 0, 0);
	raw_rec     r = { 0 };
	json_t     *h = json_pack("{s:s}", "k", "v");
	json_t     *bad = json_pack("{s:i}", "k", 1);
	const char *body = "{\"t\":\"x\",\"p\":[1,true,null]}";

	assert_int_equal(
	    eb_bus_consumer_new(bus, "raw", 0, raw_handler, &r, &r.c), 0);
	assert_int_equal(
	    eb_bus_send_raw(bus, "raw", body, strlen(body), h, NULL), 0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.body, body);
	assert_string_equal(r.header_k, "v");
	assert_int_equal(r.is_send, 1);
	assert_int_equal(r.null_bodies, 0);

	/* NULL, "null" and length 0 are all the null body. */
	assert_int_equal(
	    eb_bus_publish_raw(bus, "raw", NULL, 0, NULL, NULL), 0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r.is_send, 0);
	assert_string_equal(r.body, "null");
	assert_int_equal(eb_bus_send_raw(bus, "raw", "null", 4, NULL, NULL), 0);
	assert_int_equal(eb_bus_send_raw(bus, "raw", "x", 0, NULL, NULL), 0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r.n, 4);
	assert_int_equal(r.null_bodies, 3);
	assert_string_equal(r.body, "null");

	/* Headers are checked as for the parsed API; bad addresses too. */
	assert_int_equal(
	    eb_bus_send_raw(bus, "raw", "1", 1, bad, NULL), UV_EINVAL);
	assert_int_equal(
	    eb_bus_send_raw(bus, "", "1", 1, NULL, NULL), UV_EINVAL);
	assert_int_equal(
	    eb_bus_send_raw(bus, "nobody", "1", 1, NULL, NULL), EB_ENOHANDLERS);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r.n, 4);
	json_decref(h);
	json_decref(bad);
	bus_shut(t, bus);
}

/* Records the headers object a consumer was given (identity). */
static const json_t *seen_headers;

static void
headers_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	(void) c;
	(*(int *) arg)++;
	seen_headers = eb_bus_msg_headers(msg);
}

/* share_headers: the message holds the caller's object (no copy), and it
 * outlives the caller's reference; without it, a copy. */
static void
test_share_headers(void **state)
{
	th_loop         *t = *state;
	eb_bus          *bus = bus_open(t, 0, 0);
	eb_bus_consumer *c;
	eb_bus_send_opts o;
	json_t          *h = json_pack("{s:s}", "k", "v");
	int              n = 0;

	assert_int_equal(
	    eb_bus_consumer_new(bus, "sh", 0, headers_handler, &n, &c), 0);
	eb_bus_send_opts_init(&o);
	o.share_headers = 1;
	assert_int_equal(eb_bus_send_raw(bus, "sh", "1", 1, h, &o), 0);
	json_decref(h); /* the queued message keeps it alive */
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(n, 1);
	assert_ptr_equal(seen_headers, h);
	h = json_pack("{s:s}", "k", "v");
	assert_int_equal(eb_bus_send_raw(bus, "sh", "1", 1, h, NULL), 0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(n, 2);
	assert_ptr_not_equal(seen_headers, h);
	json_decref(h);
	bus_shut(t, bus);
}

static void
test_request_and_reply_raw(void **state)
{
	th_loop *t = *state;
	eb_bus  *bus = bus_open(t, 0, 0);
	raw_rec  r = { 0 };
	raw_out  o = { 0 };
	raw_out  none = { 0 };

	r.reply_raw = 1;
	assert_int_equal(
	    eb_bus_consumer_new(bus, "svc", 0, raw_handler, &r, &r.c), 0);
	assert_int_equal(eb_bus_request_raw(bus, "svc", "\"q\"", 3, NULL, NULL,
	                     raw_out_cb, &o),
	    0);
	assert_int_equal(eb_bus_request_raw(bus, "nobody", "1", 1, NULL, NULL,
	                     raw_out_cb, &none),
	    0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.body, "\"q\"");
	assert_int_equal(o.calls, 1);
	assert_int_equal(o.status, 0);
	assert_string_equal(o.body, "[1,2]");
	assert_int_equal(none.calls, 1);
	assert_int_equal(none.status, EB_ENOHANDLERS);
	bus_shut(t, bus);
}

static void
rcpt_count_cb(eb_bus *bus, int status, const eb_bus_receipt *rcpt, void *arg)
{
	int *n = arg;

	(void) bus;
	(void) rcpt;
	if (status == 0) {
		(*n)++;
	}
}

/*
 * eb_bus_send_confirmed_enc: headers given as their encoding reach the
 * consumer (parsed on first read); anything but a JSON object of strings
 * with distinct keys is refused before a message exists.
 */
static void
test_confirmed_enc_headers(void **state)
{
	static const char *const bad[] = { "", "[]", "\"k\"", "{\"k\":1}",
		"{\"k\":\"v\",\"k\":\"w\"}", "{\"k\":\"v\"} x",
		"{\"k\":\"v\",}", "{\"k\":\"v\"", "{\"k\" \"v\"}",
		"{\"\\u006b\":\"v\",\"k\":\"w\"}", "{\"k\":\"\\ud800\"}",
		"{\"k\":\"\xff\"}", "{\"k\":{}}" };
	th_loop                 *t = *state;
	eb_bus                  *bus = bus_open(t, 0, 0);
	raw_rec                  r = { 0 };
	int                      ok = 0;
	size_t                   i;

	assert_int_equal(
	    eb_bus_consumer_new(bus, "svc", 0, raw_handler, &r, &r.c), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(
		    eb_bus_send_confirmed_enc(bus, "svc", "1", 1, bad[i],
		        strlen(bad[i]), NULL, rcpt_count_cb, &ok),
		    UV_EINVAL);
	}
	assert_int_equal(eb_bus_send_confirmed_enc(bus, "svc", "1", 1, NULL, 0,
	                     NULL, rcpt_count_cb, &ok),
	    UV_EINVAL);
	assert_int_equal(eb_bus_send_confirmed_enc(bus, "svc", "2", 1,
	                     " { \"x\" : \"y\" , \"k\":\"v\" } ", 25, NULL,
	                     rcpt_count_cb, &ok),
	    0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.header_k, "v");
	/* An escaped key that repeats no other: jansson decides, accepted. */
	assert_int_equal(
	    eb_bus_publish_confirmed_enc(bus, "svc", "3", 1,
	        "{\"\\u006b\":\"w\"}", 14, NULL, rcpt_count_cb, &ok),
	    0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r.n, 2);
	assert_string_equal(r.header_k, "w");
	assert_string_equal(r.body, "3");
	assert_int_equal(ok, 2);
	bus_shut(t, bus);
}

/* The encoded headers of the last message a consumer got. */
typedef struct enc_rec {
	int  n;
	char hdr[128];
	int  is_send;
} enc_rec;

static void
enc_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	enc_rec    *r = arg;
	size_t      n = 0;
	const char *h = eb_bus_msg_headers_enc(msg, &n);

	(void) c;
	r->n++;
	r->is_send = eb_bus_msg_is_send(msg);
	(void) snprintf(
	    r->hdr, sizeof(r->hdr), "%.*s", (int) n, h != NULL ? h : "");
}

/*
 * The unchecked variants (eventbus/bus_trusted.h, the ingress router's):
 * the headers reach the consumer as the same bytes the public calls give,
 * with a receipt; and they are not checked: headers the public call
 * refuses (a repeated key) are taken (the trusted caller never writes
 * such; this only shows that the check, ~880 instructions, is skipped).
 */
static void
test_confirmed_enc_trusted(void **state)
{
	static const char hdr[] =
	    "{\"ebnode.epoch\":\"3\",\"ebnode.seq\":\"7\"}";
	static const char dup[] = "{\"k\":\"v\",\"k\":\"w\"}";
	th_loop          *t = *state;
	eb_bus           *bus = bus_open(t, 0, 0);
	eb_bus_consumer  *c;
	enc_rec           r = { 0 };
	int               ok = 0;

	assert_int_equal(
	    eb_bus_consumer_new(bus, "svc", 0, enc_handler, &r, &c), 0);
	assert_int_equal(eb__bus_send_confirmed_enc_trusted(bus, "svc", "1", 1,
	                     hdr, strlen(hdr), NULL, rcpt_count_cb, &ok),
	    0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r.n, 1);
	assert_true(r.is_send);
	assert_string_equal(r.hdr, hdr);
	assert_int_equal(eb__bus_publish_confirmed_enc_trusted(bus, "svc", "2",
	                     1, hdr, strlen(hdr), NULL, rcpt_count_cb, &ok),
	    0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r.n, 2);
	assert_false(r.is_send);
	assert_string_equal(r.hdr, hdr);
	/* The public calls give the same bytes. */
	assert_int_equal(eb_bus_send_confirmed_enc(bus, "svc", "3", 1, hdr,
	                     strlen(hdr), NULL, rcpt_count_cb, &ok),
	    0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r.n, 3);
	assert_string_equal(r.hdr, hdr);
	assert_int_equal(ok, 3);
	/* A repeated key: the public call refuses it, the unchecked one
	 * takes it; NULL headers are refused by both. */
	assert_int_equal(eb_bus_send_confirmed_enc(bus, "svc", "4", 1, dup,
	                     strlen(dup), NULL, rcpt_count_cb, &ok),
	    UV_EINVAL);
	assert_int_equal(eb__bus_send_confirmed_enc_trusted(bus, "svc", "4", 1,
	                     dup, strlen(dup), NULL, rcpt_count_cb, &ok),
	    0);
	assert_int_equal(eb__bus_send_confirmed_enc_trusted(bus, "svc", "5", 1,
	                     NULL, 0, NULL, rcpt_count_cb, &ok),
	    UV_EINVAL);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(r.n, 4);
	assert_int_equal(ok, 4);
	bus_shut(t, bus);
}

/* Overflow, a consumer closed with a full queue and a bus closed with
 * messages queued: every queue entry is reused or freed exactly once. */
static void
test_queue_pool(void **state)
{
	th_loop      *t = *state;
	eb_bus       *bus = bus_open(t, 0, 100);
	raw_rec       a = { 0 };
	raw_rec       b = { 0 };
	eb_bus_totals tot;
	int           i;

	assert_int_equal(
	    eb_bus_consumer_new(bus, "a", 0, raw_handler, &a, &a.c), 0);
	assert_int_equal(
	    eb_bus_consumer_new(bus, "b", 0, raw_handler, &b, &b.c), 0);
	for (i = 0; i < 150; i++) {
		int rv = eb_bus_send_raw(bus, "a", "7", 1, NULL, NULL);

		assert_int_equal(rv, i < 100 ? 0 : EB_EFULL);
	}
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(a.n, 100);
	/* Entries back in the pool are reused by the next round. */
	for (i = 0; i < 100; i++) {
		assert_int_equal(
		    eb_bus_send_raw(bus, "b", "8", 1, NULL, NULL), 0);
	}
	eb_bus_consumer_close(b.c); /* 100 queued: dropped, entries back */
	for (i = 0; i < 50; i++) {
		assert_int_equal(
		    eb_bus_send_raw(bus, "a", "9", 1, NULL, NULL), 0);
	}
	eb_bus_stats_totals(bus, &tot);
	assert_int_equal(tot.dropped, 150);
	assert_int_equal(b.n, 0);
	/* Closed with 50 queued for a. */
	bus_shut(t, bus);
	assert_int_equal(a.n, 100);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_confirmed_enc_trusted, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_send_publish_raw, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_share_headers, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_request_and_reply_raw, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_queue_pool, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_confirmed_enc_headers, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
