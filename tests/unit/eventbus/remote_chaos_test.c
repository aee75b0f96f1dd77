/*
 * Robustness tests for remote.c: a seeded random mix of registrations,
 * unregistrations, sends, publishes, requests (short timeouts), replies,
 * failures, held and dropped messages, confirmed sends and publishes (short
 * receipt timeouts, random fencing stamps and fence raises) and a link cut
 * across three nodes, checking that every request and every confirmed
 * message is answered exactly once with a legal status
 * (and, under ASan, that nothing leaks); and malformed upper-layer frames
 * from a peer, which are logged and skipped without disturbing the link.
 * EB_CHAOS_SEED and EB_CHAOS_STEPS override the defaults.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <ebnode/bus.h>
#include <ebnode/link.h>

#include "link/link.h"
#include "link/link_int.h"
#include "tests/unit/eventbus/cluster_th.h"

#define NODES     3
#define ADDRS     5
#define CONSUMERS 12
#define REQS      20000
#define HELD      64

static uint64_t rng_state;

static uint32_t
rng(uint32_t n)
{
	/* xorshift64*: reproducible from the printed seed. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t) ((rng_state * 2685821657736338717ull) >> 33) % n;
}

typedef struct chaos_consumer {
	eb_bus_consumer *c;        /* NULL: free slot */
	int              behavior; /* 0 reply, 1 fail, 2 hold, 3 ignore */
	int              got;
} chaos_consumer;

typedef struct track {
	int calls;
	int status;
} track;

typedef struct rtrack {
	int calls;
	int status;
} rtrack;

static chaos_consumer cons[CONSUMERS];
static rtrack        *rtracks;
static int            n_rtracks;
static int            rcpt_by[8]; /* by status class, see rtrack_cb */
static track         *tracks;
static int            n_tracks;
static eb_bus_msg    *held[HELD];
static int            n_held;
static int            bad_status;

static void
track_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg)
{
	track *t = arg;

	(void) bus;
	(void) reply;
	t->calls++;
	t->status = status;
	if (status != 0 && failure == NULL) {
		bad_status++;
	}
	switch (status) {
	case 0:
	case EB_ENOHANDLERS:
	case EB_ETIMEOUT:
	case EB_ERECIPIENT:
	case EB_EFULL:
	case EB_ELINKDOWN:
	case EB_ECANCELED:
		break;
	default:
		bad_status++;
	}
}

static void
rtrack_cb(eb_bus *bus, int status, const eb_bus_receipt *r, void *arg)
{
	rtrack *t = arg;

	(void) bus;
	t->calls++;
	t->status = status;
	if ((status == 0) != (r->reason == NULL) ||
	    (status == 0 && (r->delivered != r->targets || r->targets == 0))) {
		bad_status++;
	}
	switch (status) {
	case 0:
		rcpt_by[0]++;
		break;
	case EB_ENOHANDLERS:
		rcpt_by[1]++;
		break;
	case EB_ETIMEOUT:
		rcpt_by[2]++;
		break;
	case EB_EFULL:
		rcpt_by[3]++;
		break;
	case EB_ELINKDOWN:
		rcpt_by[4]++;
		break;
	case EB_EFENCED:
		rcpt_by[5]++;
		break;
	case EB_ECANCELED:
		rcpt_by[6]++;
		break;
	default:
		bad_status++;
	}
}

/* A confirmed send or publish with a short receipt timeout and, sometimes,
 * a fencing stamp; sometimes a bus's fence rises first. */
static void
chaos_confirmed(cnode *n, eb_bus *bus, const char *address, int publish)
{
	eb_bus_send_opts so;
	rtrack          *t;
	int              rv;

	if (n_rtracks >= REQS) {
		return;
	}
	t = &rtracks[n_rtracks++];
	eb_bus_send_opts_init(&so);
	so.receipt_timeout_ms = 50 + rng(200);
	so.local_only = rng(8) == 0;
	so.epoch = rng(3) == 0 ? 1 + rng(4) : 0;
	if (rng(50) == 0) {
		eb_bus_fence_raise(n[rng(NODES)].bus, 1 + rng(4));
	}
	rv = publish ? eb_bus_publish_confirmed(
	                   bus, address, NULL, NULL, &so, rtrack_cb, t)
	             : eb_bus_send_confirmed(
	                   bus, address, NULL, NULL, &so, rtrack_cb, t);
	if (rv != 0) {
		t->calls = 1; /* refused: no callback (counted once) */
		t->status = 0;
	}
}

static track *
track_new(void)
{
	return n_tracks < REQS ? &tracks[n_tracks++] : NULL;
}

static void
chaos_handler(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	chaos_consumer  *cc = arg;
	track           *t;
	eb_bus_send_opts so;

	(void) c;
	eb_bus_send_opts_init(&so);
	so.timeout_ms = 100; /* a reply-to-reply nobody answers */
	cc->got++;
	if (eb_bus_msg_reply_address(msg) == NULL) {
		return;
	}
	switch (cc->behavior) {
	case 0:
		/* Sometimes the reply is itself a request. */
		t = rng(4) == 0 ? track_new() : NULL;
		if (eb_bus_msg_reply(msg, NULL, NULL, &so,
		        t != NULL ? track_cb : NULL, t) != 0 &&
		    t != NULL) {
			t->calls = 1; /* refused: no callback (counted once) */
		}
		break;
	case 1:
		(void) eb_bus_msg_fail(msg, 42, "chaos");
		break;
	case 2:
		if (n_held < HELD) {
			held[n_held++] = eb_bus_msg_hold(msg);
		}
		break;
	default:
		break; /* the requester times out */
	}
}

static void
answer_held(int all)
{
	while (n_held > 0 && (all || rng(2) == 0)) {
		eb_bus_msg *m = held[--n_held];

		switch (rng(3)) {
		case 0:
			(void) eb_bus_msg_reply(
			    m, NULL, NULL, NULL, NULL, NULL);
			break;
		case 1:
			(void) eb_bus_msg_fail(m, 7, "late");
			break;
		default:
			break; /* dropped unanswered */
		}
		eb_bus_msg_release(m);
	}
}

static void
chaos_step(cnode *n)
{
	char             address[8];
	eb_bus          *bus = n[rng(NODES)].bus;
	eb_bus_send_opts so;
	int              k = (int) rng(CONSUMERS);
	track           *t;

	(void) snprintf(address, sizeof(address), "c%u", rng(ADDRS));
	switch (rng(10)) {
	case 8:
		chaos_confirmed(n, bus, address, 0);
		break;
	case 9:
		chaos_confirmed(n, bus, address, 1);
		break;
	case 0:
		if (cons[k].c == NULL) {
			cons[k].behavior = (int) rng(4);
			(void) eb_bus_consumer_new(bus, address,
			    (int) rng(5) == 0, chaos_handler, &cons[k],
			    &cons[k].c);
		}
		break;
	case 1:
		if (cons[k].c != NULL && rng(3) == 0) {
			eb_bus_consumer_close(cons[k].c);
			cons[k].c = NULL;
		}
		break;
	case 2:
		(void) eb_bus_publish(bus, address, NULL, NULL, NULL);
		break;
	case 3:
		(void) eb_bus_send(bus, address, NULL, NULL, NULL);
		break;
	case 4:
		answer_held(0);
		break;
	default:
		if ((t = track_new()) == NULL) {
			break;
		}
		eb_bus_send_opts_init(&so);
		so.timeout_ms = 50 + rng(200);
		so.local_only = rng(8) == 0;
		if (eb_bus_request(
		        bus, address, NULL, NULL, &so, track_cb, t) != 0) {
			t->calls = 1; /* refused: no callback (counted once) */
			t->status = 0;
		}
		break;
	}
}

static int
all_answered(void *arg)
{
	(void) arg;
	for (int i = 0; i < n_tracks; i++) {
		if (tracks[i].calls == 0) {
			return 0;
		}
	}
	for (int i = 0; i < n_rtracks; i++) {
		if (rtracks[i].calls == 0) {
			return 0;
		}
	}
	return 1;
}

static void
cut_one_link(cnode *n)
{
	link_peer *p = eb__link_peer_find(n[0].mgr, n[1].id);

	if (p != NULL && p->conn != NULL) {
		eb__link_conn_close(p->conn, "chaos");
	}
}

/* Prints the outcome mix; returns how many requests or confirmed messages
 * were not called back exactly once. */
static int
tally(void)
{
	int once = 0;

	for (int i = 0; i < n_tracks; i++) {
		if (tracks[i].calls != 1) {
			printf(
			    "request %d called %d times\n", i, tracks[i].calls);
			once++;
		}
	}
	{
		int by[8] = { 0 };

		for (int i = 0; i < n_tracks; i++) {
			int rs = tracks[i].status;

			by[rs == 0                 ? 0
			    : rs == EB_ENOHANDLERS ? 1
			    : rs == EB_ETIMEOUT    ? 2
			    : rs == EB_ERECIPIENT  ? 3
			    : rs == EB_EFULL       ? 4
			    : rs == EB_ELINKDOWN   ? 5
			                           : 6]++;
		}
		printf("chaos: %d requests: ok=%d no_handlers=%d timeout=%d "
		       "recipient=%d full=%d linkdown=%d other=%d\n",
		    n_tracks, by[0], by[1], by[2], by[3], by[4], by[5], by[6]);
	}
	for (int i = 0; i < n_rtracks; i++) {
		if (rtracks[i].calls != 1) {
			printf("confirmed %d called %d times\n", i,
			    rtracks[i].calls);
			once++;
		}
	}
	printf("chaos: %d confirmed: ok=%d no_handlers=%d timeout=%d "
	       "full=%d linkdown=%d fenced=%d canceled=%d\n",
	    n_rtracks, rcpt_by[0], rcpt_by[1], rcpt_by[2], rcpt_by[3],
	    rcpt_by[4], rcpt_by[5], rcpt_by[6]);
	return once;
}

static void
test_random_operations(void **state)
{
	th_loop    *t = *state;
	cnode       n[NODES];
	const char *s = getenv("EB_CHAOS_SEED");
	const char *st = getenv("EB_CHAOS_STEPS");
	uint64_t    seed = s != NULL ? strtoull(s, NULL, 10) : 20261121;
	int         steps = st != NULL ? (int) strtol(st, NULL, 10) : 20000;
	int         once = 0;

	th_watchdog_ms(t, 60000);
	rng_state = seed != 0 ? seed : 1;
	printf("chaos: seed=%llu steps=%d\n", (unsigned long long) seed, steps);
	tracks = calloc(REQS, sizeof(*tracks));
	rtracks = calloc(REQS, sizeof(*rtracks));
	memset(cons, 0, sizeof(cons));
	memset(rcpt_by, 0, sizeof(rcpt_by));
	n_tracks = n_rtracks = n_held = bad_status = 0;
	cluster_open(t, n, NODES, 5);
	for (int i = 0; i < steps; i++) {
		chaos_step(n);
		/* Every other 500 steps the loop does not run: queues
		 * (max 5) overflow. */
		if (i % 7 == 0 && (i / 500) % 2 == 0) {
			(void) uv_run(&t->loop, UV_RUN_NOWAIT);
		}
		if (i == steps / 2) {
			cut_one_link(n); /* in-flight requests over it fail */
		}
	}
	answer_held(1);
	for (int k = 0; k < CONSUMERS; k++) {
		eb_bus_consumer_close(cons[k].c);
		cons[k].c = NULL;
	}
	/* Every request: answered, failed, timed out (<= 250 ms) or
	 * canceled; none forgotten. */
	assert_int_equal(th_run_until(t, all_answered, NULL, 5000), 0);
	answer_held(1);
	cluster_close(t, n, NODES);
	once = tally();
	assert_int_equal(once, 0);
	assert_int_equal(bad_status, 0);
	assert_true(n_tracks > 100);
	assert_true(n_rtracks > 100);
	/* The mix reaches the outcomes that matter. */
	assert_true(rcpt_by[0] > 0);
	assert_true(rcpt_by[1] > 0);
	assert_true(rcpt_by[3] > 0);
	assert_true(rcpt_by[5] > 0);
	free(tracks);
	free(rtracks);
}

/* ---- malformed frames from a peer ---- */

typedef struct rawc {
	uv_tcp_t     tcp;
	uv_connect_t creq;
	uv_write_t   wreq;
	eb__buf      out;
	int          closed;
} rawc;

static void
rawc_write_cb(uv_write_t *req, int status)
{
	(void) req;
	(void) status;
}

static void
rawc_connect_cb(uv_connect_t *req, int status)
{
	rawc    *r = req->data;
	uv_buf_t b = uv_buf_init(r->out.data, (unsigned) r->out.len);

	assert_int_equal(status, 0);
	(void) uv_write(
	    &r->wreq, (uv_stream_t *) &r->tcp, &b, 1, rawc_write_cb);
}

static void
rawc_closed_cb(uv_handle_t *h)
{
	((rawc *) h->data)->closed = 1;
}

/* Appends one frame: type byte and body. */
static void
rawc_frame(rawc *r, uint8_t type, const void *body, size_t n)
{
	eb__link_put_u32(&r->out, (uint32_t) n + 1);
	eb__link_put_u8(&r->out, type);
	eb__buf_append(&r->out, body, n);
}

static void
rawc_hello(rawc *r, const char *id)
{
	eb__buf b;

	eb__buf_init(&b);
	eb__link_put_u16(&b, EB_LINK_PROTOCOL_VERSION);
	(void) eb__link_put_str16(&b, id, strlen(id));
	(void) eb__link_put_str16(&b, "ebnode", 6);
	rawc_frame(r, 1, b.data, b.len);
	eb__buf_free(&b);
}

struct hc {
	eb_bus     *bus;
	const char *address;
	uint32_t    want;
};

static int
hc_pred(void *arg)
{
	struct hc *h = arg;

	return eb_bus_handler_count(h->bus, h->address) == h->want;
}

static void
test_malformed_frames(void **state)
{
	th_loop           *t = *state;
	cnode              n[1];
	rawc              *r = calloc(1, sizeof(*r));
	struct sockaddr_in sa;
	eb__buf            b;
	struct hc          h;
	static const char  junk[] = "\xff\xff\x00\x01garbage";

	cluster_open(t, n, 1, 0); /* "node-a" */
	eb__buf_init(&r->out);
	rawc_hello(r, "node-0"); /* lower than node-a: may dial it */
	/* Every upper-layer type, truncated or inconsistent, and an unknown
	 * type: each is logged and skipped. */
	for (uint8_t ty = 16; ty <= 19; ty++) {
		rawc_frame(r, ty, "", 0);
		rawc_frame(r, ty, junk, sizeof(junk) - 1);
	}
	eb__buf_init(&b);
	eb__link_put_u32(&b, 1000000); /* INTEREST claiming 10^6 entries */
	(void) eb__link_put_str16(&b, "y", 1);
	eb__link_put_u32(&b, 1);
	rawc_frame(r, 19, b.data, b.len);
	b.len = 0;
	(void) eb__link_put_str16(&b, "__vertx.reply.1", 15); /* FAIL, type 9 */
	eb__link_put_u8(&b, 9);
	eb__link_put_u32(&b, 0);
	eb__link_put_u32(&b, (uint32_t) EB_ETIMEOUT);
	eb__link_put_bytes32(&b, "x", 1);
	rawc_frame(r, 18, b.data, b.len);
	rawc_frame(r, 200, "future", 6);
	/* Then a valid INTEREST: the link still works. An absurd count is
	 * clamped (sums cannot overflow). */
	b.len = 0;
	eb__link_put_u32(&b, 2);
	(void) eb__link_put_str16(&b, "z", 1);
	eb__link_put_u32(&b, UINT32_MAX);
	(void) eb__link_put_str16(&b, "x", 1);
	eb__link_put_u32(&b, 2);
	rawc_frame(r, 19, b.data, b.len);
	eb__buf_free(&b);

	(void) uv_ip4_addr("127.0.0.1", eb_link_mgr_port(n[0].mgr), &sa);
	(void) uv_tcp_init(&t->loop, &r->tcp);
	r->tcp.data = r;
	r->creq.data = r;
	assert_int_equal(uv_tcp_connect(&r->creq, &r->tcp,
	                     (const struct sockaddr *) &sa, rawc_connect_cb),
	    0);
	h.bus = n[0].bus;
	h.address = "x";
	h.want = 2;
	assert_int_equal(th_run_until(t, hc_pred, &h, 2000), 0);
	assert_int_equal(eb_bus_handler_count(n[0].bus, "z"), 1000000);
	/* The peer goes: its interest goes with it. */
	uv_close((uv_handle_t *) &r->tcp, rawc_closed_cb);
	h.want = 0;
	assert_int_equal(th_run_until(t, hc_pred, &h, 2000), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &r->closed, 2000), 0);
	eb__buf_free(&r->out);
	free(r);
	cluster_close(t, n, 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_random_operations, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_malformed_frames, th_setup, th_teardown),
	};

	(void) signal(SIGPIPE, SIG_IGN); /* peers go away mid-write */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
