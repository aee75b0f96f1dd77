/*
 * The ingress gateway: every node's local-only consumer on the ingress
 * address. It forwards each message as a request to the leader address,
 * holds messages in order while no leader is reachable, retries a forward
 * once when the leader it went to fails, and answers the original sender.
 * See include/ebnode/ingress.h for the guarantees. Loop thread only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/ingress.h>
#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/jsonrun.h"
#include "ingress/ingress_ext.h"
#include "ingress/ingress_int.h"

static void flush(eb_ingress *in);

/* The message got its final answer (or, for a send, its final outcome). */
static void
record_latency(eb_ingress *in, const eb__ingress_held *h)
{
	eb__hist_record_ns(&in->latency, uv_hrtime() - h->recv_ns);
}

/* Answers a request the gateway took from its requester (eb__ingress_take)
 * through the requester's callback, exactly once. */
static void
answer_taken(eb_ingress *in, eb__ingress_held *h, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure)
{
	eb_bus_reply_cb cb = h->cb;

	h->cb = NULL;
	cb(in->bus, status, reply, failure, h->cb_arg);
}

/* A taken request's requester gave up: answered as the bus answers a
 * request that timed out. */
static void
answer_timeout(eb_ingress *in, eb__ingress_held *h)
{
	char           why[256];
	eb_bus_failure f;

	record_latency(in, h);
	(void) snprintf(why, sizeof(why),
	    "Timed out after waiting %llu(ms) for a reply. address: %s",
	    (unsigned long long) h->timeout_ms, in->address);
	f.type = EB_BUS_TIMEOUT;
	f.code = -1;
	f.message = why;
	answer_taken(in, h, EB_ETIMEOUT, NULL, &f);
	in->st.failed++;
}

/* Answers the original sender with a failure; counts it either way. */
static void
answer_failure(eb_ingress *in, eb__ingress_held *h, int code, const char *why)
{
	eb_bus_failure f;

	record_latency(in, h);
	if (h->cb != NULL) {
		/* What eb_bus_msg_fail would have made of it. */
		f.type = EB_BUS_RECIPIENT_FAILURE;
		f.code = code;
		f.message = why != NULL ? why : "";
		answer_taken(in, h, EB_ERECIPIENT, NULL, &f);
		in->st.failed++;
		return;
	}
	if (eb_bus_msg_reply_address(h->msg) != NULL) {
		(void) eb_bus_msg_fail(h->msg, code, why);
		in->st.failed++;
		return;
	}
	/* A fire-and-forget send cannot be answered: count and log it, never
	 * drop it silently. The first and every 1000th are logged. */
	in->st.dropped++;
	if (in->st.dropped % 1000 == 1) {
		char q[EB_LOG_QUOTE_MAX];

		/* why may be a consumer's failure text: quoted, escaped. */
		EB_LOG_WARN("ingress",
		    "send-dropped: code=%d reason=%s total=%llu", code,
		    eb_log_quote(q, sizeof(q), why),
		    (unsigned long long) in->st.dropped);
	}
}

eb__ingress_held *
eb__ingress_held_new(eb_ingress *in)
{
	eb__ingress_held *h = eb__spare_get(&in->held_spare, sizeof(*h));

	memset(h, 0, sizeof(*h));
	return h;
}

void
eb__ingress_held_free(eb_ingress *in, eb__ingress_held *h)
{
	EB_ASSERT(h->cb == NULL); /* a taken request was answered */
	eb_bus_msg_release(h->msg);
	if (in == NULL) {
		free(h); /* the ingress may be gone */
		return;
	}
	eb__spare_put(&in->held_spare, h, EB__INGRESS_HELD_SPARE);
}

static void arm_timer(eb_ingress *in);

static void
hold(eb_ingress *in, eb__ingress_held *h, int at_head)
{
	char why[128];

	if (in->n_held >= in->hold_max) {
		(void) snprintf(why, sizeof(why),
		    "ebnode: ingress hold queue full (%u messages) and no "
		    "leader reachable",
		    in->hold_max);
		answer_failure(in, h, EB_INGRESS_HOLD_FULL, why);
		eb__ingress_held_free(in, h);
		return;
	}
	h->since_ms = uv_now(in->loop);
	if (at_head) {
		eb__list_insert_head(&in->held, &h->link);
	} else {
		eb__list_insert_tail(&in->held, &h->link);
	}
	if (in->n_held++ == 0) {
		EB_LOG_RL_NOTICE("ingress",
		    "holding: reason=no-leader max=%u ms=%llu", in->hold_max,
		    (unsigned long long) in->hold_ms);
	}
	in->st.held++;
	arm_timer(in);
}

static void forward_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg);
static void forward_done(eb_ingress *in, eb__ingress_held *h, int status,
    eb_bus_msg *reply, const eb_bus_failure *failure);

/* Who routes now: ebnode's router unless the external ops say
 * otherwise (ingress_ext.h). */
static eb__ingress_route
route_now(const eb_ingress *in)
{
	return in->ext != NULL ? in->ext->route(in->ext_ctx)
	                       : EB__INGRESS_ROUTE_OWN;
}

/* 1 when a forward by route would find a router now. */
static int
route_reachable(const eb_ingress *in, eb__ingress_route route)
{
	switch (route) {
	case EB__INGRESS_ROUTE_EXT:
		return 1;
	case EB__INGRESS_ROUTE_WAIT:
		return 0;
	default:
		/* The watch's count (ingress.c): eb_bus_handler_count's,
		 * without a lookup per forward. */
		return in->leader_handlers > 0;
	}
}

/* 0: in flight; EB_ENOHANDLERS: no leader reachable; else an error. */
static int
try_forward(eb_ingress *in, eb__ingress_held *h)
{
	eb_bus_send_opts  o;
	json_t           *headers;
	const char       *body;
	size_t            len;
	int               rv;
	uint64_t          timeout = in->timeout_ms;
	uint64_t          now = 0;
	eb__ingress_route route = route_now(in);

	/* A taken request's forward ends when its requester gives up (the
	 * bus's default for the forward is the default of requests). */
	if (h->deadline_ms != 0) {
		/* The time now, not the loop's (up to a turn old): the receipt
		 * stamp on the first forward, the clock again on a retry. */
		if (h->retried) {
			uv_update_time(in->loop);
			now = uv_now(in->loop);
		} else {
			now = h->recv_ns / 1000000u;
		}
		if (now >= h->deadline_ms) {
			return EB_ETIMEOUT;
		}
		if (timeout == 0 || h->deadline_ms - now < timeout) {
			timeout = h->deadline_ms - now;
		}
	}
	/* The bus answers a request without handlers asynchronously; ask
	 * first so that the message is held instead of failed. */
	if (!route_reachable(in, route)) {
		return EB_ENOHANDLERS;
	}
	if (json_object_size(eb_bus_msg_headers(h->msg)) == 0) {
		if (in->entry_headers == NULL) {
			in->entry_headers = json_pack("{s:s}",
			    EB_INGRESS_HDR_ENTRY, eb_bus_node_id(in->bus));
		}
		headers = json_incref(in->entry_headers);
	} else {
		headers = json_deep_copy(eb_bus_msg_headers(h->msg));
		if (json_object_get(headers, EB_INGRESS_HDR_ENTRY) == NULL) {
			(void) json_object_set_new(headers,
			    EB_INGRESS_HDR_ENTRY,
			    json_string(eb_bus_node_id(in->bus)));
		}
	}
	/* The body goes on as the bytes that arrived, never parsed here. */
	body = eb_bus_msg_body_bytes(h->msg, &len);
	if (route == EB__INGRESS_ROUTE_EXT) {
		rv = in->ext->forward(
		    in->ext_ctx, body, len, headers, timeout, forward_cb, h);
	} else {
		eb_bus_send_opts_init(&o);
		o.timeout_ms = timeout;
		/* A taken request's forward ends at the time read above: the
		 * bus need not read the clock again. */
		o.deadline_ms = h->deadline_ms != 0 ? now + timeout : 0;
		o.share_headers = 1; /* never modified after this call */
		rv = eb_bus_request_raw(in->bus, EB_INGRESS_LEADER_ADDRESS,
		    body, len, headers, &o, forward_cb, h);
	}
	json_decref(headers);
	if (rv == 0) {
		eb__list_insert_tail(&in->inflight, &h->link);
		in->n_inflight++;
		in->st.forwarded++;
	}
	return rv;
}

/* The ingress address is busy while the backlog is long (hysteresis). */
static void
pressure(eb_ingress *in)
{
	if (!in->pressing && in->n_backlog >= EB__INGRESS_BACKLOG_HIGH) {
		in->pressing = 1;
		in->st.pressed++;
		eb_bus_pressure_set(in->bus, in->address, 1);
	} else if (in->pressing && in->n_backlog <= EB__INGRESS_BACKLOG_LOW) {
		in->pressing = 0;
		eb_bus_pressure_set(in->bus, in->address, 0);
	}
}

static void submit_now(eb_ingress *in, eb__ingress_held *h, int at_head);

/* A forward that could not start (try_forward's error rv). */
static void
answer_error(eb_ingress *in, eb__ingress_held *h, int rv)
{
	if (rv == EB_ETIMEOUT && h->cb != NULL) {
		answer_timeout(in, h);
	} else {
		answer_failure(in, h, -1, eb_strerror(rv));
	}
}

/* Moves backlog into the window, in order, while a leader is reachable
 * (nothing held). */
static void
pump(eb_ingress *in)
{
	eb__list *it;

	while (in->n_inflight < EB__INGRESS_WINDOW &&
	       eb__list_empty(&in->held) &&
	       (it = eb__list_first(&in->backlog)) != NULL) {
		eb__list_remove(it);
		in->n_backlog--;
		submit_now(in, EB_CONTAINER_OF(it, eb__ingress_held, link), 0);
	}
	pressure(in);
}

/* An arrival: behind the backlog, or into the window. */
static void
submit(eb_ingress *in, eb__ingress_held *h)
{
	if (in->n_backlog > 0 || (in->n_inflight >= EB__INGRESS_WINDOW &&
	                             eb__list_empty(&in->held))) {
		eb__list_insert_tail(&in->backlog, &h->link);
		in->n_backlog++;
		pressure(in);
		return;
	}
	submit_now(in, h, 0);
}

static void
submit_now(eb_ingress *in, eb__ingress_held *h, int at_head)
{
	int rv;

	/* Arrivals queue behind held messages to keep their order. */
	if (!eb__list_empty(&in->held)) {
		hold(in, h, at_head);
		flush(in);
		return;
	}
	rv = try_forward(in, h);
	if (rv == EB_ENOHANDLERS) {
		hold(in, h, at_head);
	} else if (rv != 0) {
		answer_error(in, h, rv);
		eb__ingress_held_free(in, h);
	}
}

static int
retryable(int status, const eb_bus_failure *failure)
{
	if (status == EB_ELINKDOWN || status == EB_ENOHANDLERS) {
		return 1; /* the leader's node went away */
	}
	/* Only the router's own answer, not a target's failure that happens
	 * to use the same code. */
	return failure != NULL && failure->type == EB_BUS_RECIPIENT_FAILURE &&
	       failure->code == EB_INGRESS_NOT_LEADER &&
	       failure->message != NULL &&
	       strcmp(failure->message, EB_INGRESS_NOT_LEADER_TEXT) == 0;
}

/* Past the digits of a positive decimal without leading zeros at *p, its
 * value in *v; 0 when there is none or it exceeds INT64_MAX. */
static int
tmpl_number(const char **p, const char *end, uint64_t *v)
{
	const char *q = *p;
	const char *sure = end - q > 18 ? q + 18 : end;
	uint64_t    x = 0;

	*v = 0;
	if (q >= end || *q < '1' || *q > '9') {
		return 0;
	}
	/* 18 digits stay below INT64_MAX: only the ones past them are
	 * checked (issue 25: a check per digit cost as much as the rest). */
	for (; q < sure && *q >= '0' && *q <= '9'; q++) {
		x = x * 10 + (uint64_t) (*q - '0');
	}
	for (; q < end && *q >= '0' && *q <= '9'; q++) {
		if (x > ((uint64_t) INT64_MAX - (uint64_t) (*q - '0')) / 10) {
			return 0;
		}
		x = x * 10 + (uint64_t) (*q - '0');
	}
	*v = x;
	*p = q;
	return 1;
}

/* Past the literal lit at *p; 0 when it is not there. */
static int
tmpl_lit(const char **p, const char *end, const char *lit, size_t n)
{
	if ((size_t) (end - *p) < n || memcmp(*p, lit, n) != 0) {
		return 0;
	}
	*p += n;
	return 1;
}

/*
 * 1 and the epoch when b is exactly the acknowledgement the router writes
 * from its template (eb_ingress_ack: {"status":"ok","epoch":E,"seq":S} with
 * an optional "to" of plain characters): every member known, so no repeated
 * key can make the parsed value differ. Else 0, and the caller reads the
 * field the general way.
 */
static int
ack_template_epoch(const char *b, size_t len, uint64_t *epoch)
{
	static const char h1[] = "{\"status\":\"ok\",\"epoch\":";
	static const char h2[] = ",\"seq\":";
	static const char h3[] = ",\"to\":\"";
	const char       *p = b;
	const char       *end = b + len;
	uint64_t          seq;

	if (!tmpl_lit(&p, end, h1, sizeof(h1) - 1) ||
	    !tmpl_number(&p, end, epoch) ||
	    !tmpl_lit(&p, end, h2, sizeof(h2) - 1) ||
	    !tmpl_number(&p, end, &seq)) {
		return 0;
	}
	if (tmpl_lit(&p, end, h3, sizeof(h3) - 1)) {
		/* Its plain characters a run at a time, then byte by byte. */
		p = (const char *) eb__json_plain_run(
		    (const unsigned char *) p, (const unsigned char *) end, 0);
		while (p < end && *p != '"' && *p != '\\' &&
		       (unsigned char) *p >= 0x20 &&
		       (unsigned char) *p < 0x80) {
			p++;
		}
		if (!tmpl_lit(&p, end, "\"", 1)) {
			return 0;
		}
	}
	return tmpl_lit(&p, end, "}", 1) && p == end;
}

/*
 * Rule 6 at the entry node: an acknowledgement stamped with an epoch below
 * the highest leader epoch this node has seen comes from a superseded
 * leader. It is refused and counted; an accepted one raises the fence.
 * Returns 1 when refused.
 */
static int
ack_fenced(eb_ingress *in, eb_bus_msg *reply)
{
	size_t                 len;
	const char            *b = eb_bus_msg_body_bytes(reply, &len);
	char                   tmp[32];
	char                  *heap;
	eb__ingress_field_kind kind;
	const char            *e;
	uint64_t               epoch;
	uint64_t               fence = eb_bus_fence(in->bus);

	/* Only the stamp is read from the acknowledgement, not parsed whole:
	 * the router's own template at once, anything else by the field
	 * reader. */
	if (!ack_template_epoch(b, len, &epoch)) {
		e = eb__ingress_field(
		    b, len, "epoch", &kind, tmp, sizeof(tmp), &heap);
		free(heap);
		if (kind != EB__FIELD_INT || e[0] == '-' || e[0] == '0') {
			return 0; /* a custom handler's or relayed reply */
		}
		epoch = strtoull(e, NULL, 10);
	}
	if (epoch >= fence) {
		eb_bus_fence_raise(in->bus, epoch);
		return 0;
	}
	if (in->st.fenced_acks++ % 1000 == 0) {
		EB_LOG_WARN("ingress",
		    "ack-fenced: epoch=%llu fence=%llu total=%llu",
		    (unsigned long long) epoch, (unsigned long long) fence,
		    (unsigned long long) in->st.fenced_acks);
	}
	(void) snprintf(in->fenced_why, sizeof(in->fenced_why),
	    "ebnode: acknowledgement from superseded leader epoch %llu "
	    "(highest seen %llu); the message may have been delivered",
	    (unsigned long long) epoch, (unsigned long long) fence);
	return 1;
}

static void
forward_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg)
{
	eb__ingress_held *h = arg;
	eb_ingress       *in = h->in;

	(void) bus;
	eb__list_remove(&h->link);
	if (in == NULL) {
		/* The ingress closed (and answered it): not kept. */
		eb__ingress_held_free(NULL, h);
		return;
	}
	in->n_inflight--;
	forward_done(in, h, status, reply, failure);
	pump(in);
}

static void
forward_done(eb_ingress *in, eb__ingress_held *h, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure)
{
	if (status == 0 && ack_fenced(in, reply)) {
		/* The old leader delivered it (its receipt came first), but
		 * its ack would take this node's acknowledged epochs back.
		 * Route it once more through the current leader (at-least-
		 * once, as for a leader that died), else fail. */
		if (!h->retried) {
			h->retried = 1;
			in->st.retried++;
			submit_now(in, h, 1);
			return;
		}
		answer_failure(in, h, EB_INGRESS_FENCED_ACK, in->fenced_why);
		eb__ingress_held_free(in, h);
		return;
	}
	if (status == 0) {
		in->st.acked++;
		record_latency(in, h);
		if (h->cb != NULL) {
			/* As the bus hands a reply on (eb_bus_msg_reply_with):
			 * one that expects no answer. */
			eb_bus_msg *plain = eb_bus_msg_plain(reply);

			answer_taken(in, h, 0, plain, NULL);
			eb_bus_msg_release(plain);
		} else if (eb_bus_msg_reply_address(h->msg) != NULL) {
			(void) eb_bus_msg_reply_with(h->msg, reply);
		}
		eb__ingress_held_free(in, h);
		return;
	}
	if (status == EB_ETIMEOUT && h->cb != NULL &&
	    uv_now(in->loop) >= h->deadline_ms) {
		/* The forward ended with its requester's time. */
		answer_timeout(in, h);
		eb__ingress_held_free(in, h);
		return;
	}
	if (!h->retried && retryable(status, failure)) {
		/* At-least-once: the leader may have routed it before it
		 * failed; the new leader's stamp tells the copies apart. */
		h->retried = 1;
		in->st.retried++;
		submit_now(in, h, 1);
		return;
	}
	answer_failure(in, h, failure != NULL ? failure->code : -1,
	    failure != NULL ? failure->message : eb_strerror(status));
	eb__ingress_held_free(in, h);
}

static void
flush(eb_ingress *in)
{
	eb__list *it;

	while ((it = eb__list_first(&in->held)) != NULL) {
		eb__ingress_held *h =
		    EB_CONTAINER_OF(it, eb__ingress_held, link);
		int rv;

		eb__list_remove(it);
		in->n_held--;
		rv = try_forward(in, h);
		if (rv == EB_ENOHANDLERS) {
			eb__list_insert_head(
			    &in->held, it); /* still no leader */
			in->n_held++;
			return;
		}
		if (rv != 0) {
			answer_error(in, h, rv);
			eb__ingress_held_free(in, h);
		}
	}
	EB_LOG_NOTICE("ingress", "flushed: reason=leader-reachable");
	pump(in);
}

static void
hold_timer_cb(uv_timer_t *t)
{
	eb_ingress *in = t->data;
	uint64_t    now = uv_now(in->loop);
	eb__list   *it;
	eb__list   *tmp;
	char        why[128];
	uint64_t    expired = 0;

	EB_ASSERT(!in->closing); /* close stops the timer */
	in->timer_armed = 0;
	eb__ingress_router_drain(in);
	if (!eb__list_empty(&in->held) && route_reachable(in, route_now(in))) {
		flush(in);
	}
	(void) snprintf(why, sizeof(why),
	    "ebnode: no ingress leader within %llu ms",
	    (unsigned long long) in->hold_ms);
	EB_LIST_FOREACH (it, tmp, &in->held) {
		eb__ingress_held *h =
		    EB_CONTAINER_OF(it, eb__ingress_held, link);

		if (now - h->since_ms >= in->hold_ms) {
			eb__list_remove(it);
			in->n_held--;
			answer_failure(in, h, EB_INGRESS_HOLD_TIMEOUT, why);
			eb__ingress_held_free(in, h);
			expired++;
		} else if (h->deadline_ms != 0 && now >= h->deadline_ms) {
			eb__list_remove(it);
			in->n_held--;
			answer_timeout(in, h); /* its requester gave up */
			eb__ingress_held_free(in, h);
		}
	}
	if (expired > 0) {
		EB_LOG_RL_WARN("ingress", "hold-expired: count=%llu ms=%llu",
		    (unsigned long long) expired,
		    (unsigned long long) in->hold_ms);
	}
	arm_timer(in);
}

static void
arm_timer(eb_ingress *in)
{
	uint64_t  oldest = UINT64_MAX;
	uint64_t  now = uv_now(in->loop);
	eb__list *it;
	eb__list *tmp;

	if (in->timer_armed || in->closing) {
		return;
	}
	/* The first held message to give up: at the end of the hold, or
	 * sooner when its requester's deadline comes first. */
	EB_LIST_FOREACH (it, tmp, &in->held) {
		eb__ingress_held *h =
		    EB_CONTAINER_OF(it, eb__ingress_held, link);
		uint64_t due = h->since_ms + in->hold_ms;

		if (h->deadline_ms != 0 && h->deadline_ms < due) {
			due = h->deadline_ms;
		}
		if (due < oldest) {
			oldest = due;
		}
	}
	if (eb__ingress_router_deadline(in) < oldest) {
		oldest = eb__ingress_router_deadline(in);
	}
	if (oldest == UINT64_MAX) {
		return;
	}
	in->timer_armed = 1;
	(void) uv_timer_start(
	    &in->hold_timer, hold_timer_cb, oldest > now ? oldest - now : 0, 0);
}

void
eb__ingress_gateway_cb(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	eb_ingress       *in = arg;
	eb__ingress_held *h;

	(void) c;
	EB_ASSERT(!in->closing); /* the gateway consumer closed with it */
	in->st.received++;
	h = eb__ingress_held_new(in);
	h->msg = eb_bus_msg_hold(msg);
	h->in = in;
	h->recv_ns = uv_hrtime();
	submit(in, h);
}

int
eb__ingress_take(void *ctx, eb_bus_msg *msg, uint64_t timeout_ms,
    eb_bus_reply_cb cb, void *arg)
{
	eb_ingress       *in = ctx;
	eb__ingress_held *h;

	/* Only what the gateway would forward at once, and in order: nothing
	 * held or in the backlog before it, room in the window, ebnode's own
	 * router (an external one may answer with a reply that asks back). */
	if (in->closing || in->gateway == NULL || in->n_backlog > 0 ||
	    !eb__list_empty(&in->held) ||
	    in->n_inflight >= EB__INGRESS_WINDOW ||
	    route_now(in) != EB__INGRESS_ROUTE_OWN) {
		return 0;
	}
	h = eb__ingress_held_new(in);
	h->msg = eb_bus_msg_hold(msg);
	h->in = in;
	h->recv_ns = uv_hrtime();
	h->cb = cb;
	h->cb_arg = arg;
	h->timeout_ms = timeout_ms;
	/* Counted from now, as the bus counts a request's timeout, in loop
	 * time: libuv's loop time is its monotonic clock in ms, the clock of
	 * uv_hrtime (unit.ingress.ingress_test test_loop_time_base), so the
	 * receipt time read above serves without another clock read. */
	h->deadline_ms = h->recv_ns / 1000000u + timeout_ms;
	if (try_forward(in, h) != 0) {
		/* Not taken: the bus's way, where the gateway meets the same
		 * error and answers it. */
		h->cb = NULL;
		eb__ingress_held_free(in, h);
		return 0;
	}
	in->st.received++;
	return 1;
}

const eb__hist *
eb__ingress_latency(const eb_ingress *in)
{
	return &in->latency;
}

void
eb_ingress_kick(eb_ingress *in)
{
	/* On a later loop turn: the caller may be inside the bus. */
	if (!in->closing &&
	    (!eb__list_empty(&in->held) || !eb__list_empty(&in->waiting))) {
		in->timer_armed = 1;
		(void) uv_timer_start(&in->hold_timer, hold_timer_cb, 0, 0);
	}
}

void
eb__ingress_fail_all(eb_ingress *in)
{
	eb__list *it;

	while ((it = eb__list_first(&in->backlog)) != NULL) {
		eb__ingress_held *h =
		    EB_CONTAINER_OF(it, eb__ingress_held, link);

		eb__list_remove(it);
		in->n_backlog--;
		answer_failure(
		    in, h, EB_INGRESS_CLOSING, "ebnode: node shutting down");
		eb__ingress_held_free(in, h);
	}
	if (in->pressing) {
		in->pressing = 0;
		eb_bus_pressure_set(in->bus, in->address, 0);
	}
	while ((it = eb__list_first(&in->held)) != NULL) {
		eb__ingress_held *h =
		    EB_CONTAINER_OF(it, eb__ingress_held, link);

		eb__list_remove(it);
		in->n_held--;
		answer_failure(
		    in, h, EB_INGRESS_CLOSING, "ebnode: node shutting down");
		eb__ingress_held_free(in, h);
	}
	/* In-flight forwards stay with the bus until their callback; answer
	 * their senders now and let the callback only free them. */
	while ((it = eb__list_first(&in->inflight)) != NULL) {
		eb__ingress_held *h =
		    EB_CONTAINER_OF(it, eb__ingress_held, link);

		eb__list_remove(it);
		answer_failure(
		    in, h, EB_INGRESS_CLOSING, "ebnode: node shutting down");
		h->in = NULL;
	}
	in->n_inflight = 0;
}
