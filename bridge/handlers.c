/*
 * One client frame of the bridge protocol (BRIDGE-PROTOCOL.md section 2,
 * with the section 12 improvements): decoding, authentication, the
 * bridge-event hook, then send (to the bus, or answering a message the
 * client received), publish, register, unregister and ping, with their
 * permission checks and per-connection bounds (consumers, requests).
 *
 * Invariants: every frame is answered at most once with an err or
 * failure frame; a refused frame sends nothing on the bus; the token is
 * never logged; per-frame log lines stay within the connection's log
 * budget. After a send or publish to an address the bus reports busy,
 * c->blocked_on names it and read.c stops reading (flow control).
 *
 * Threads: loop thread only.
 */
#include <stdio.h>
#include <string.h>

#include <ebnode/err.h>
#include <ebnode/log.h>

#include "bridge/bridge_int.h"
#include "bridge/bridge_obs.h"
#include "common/alloc.h"
#include "common/util.h"

/*
 * 1 when one more request may wait for its reply on this connection;
 * otherwise the client is answered at once with an addressable failure
 * (its reply handler fires) and nothing is sent on the bus. Bounds what
 * one connection can make the node hold for requests nobody answers.
 */
static int
req_allowed(eb__bconn *c, const eb__bframe *f)
{
	eb_bridge *b = c->b;
	char       msg[160];

	if (b->opts.max_requests_per_conn > 0 &&
	    c->n_reqs >= b->opts.max_requests_per_conn) {
		(void) snprintf(msg, sizeof(msg),
		    "too_many_requests: %u replies already awaited on this "
		    "connection",
		    b->opts.max_requests_per_conn);
	} else if (b->opts.max_requests > 0 &&
	           b->stats.requests_in_flight >= b->opts.max_requests) {
		(void) snprintf(msg, sizeof(msg),
		    "too_many_requests: %u replies already awaited on this "
		    "node's bridge",
		    b->opts.max_requests);
	} else {
		return 1;
	}
	b->stats.requests_refused++;
	if (eb__bconn_log_ok(c)) {
		EB_LOG_NOTICE("bridge",
		    "request-refused: peer=%s in_flight=%zu total=%llu",
		    c->peer, c->n_reqs,
		    (unsigned long long) b->stats.requests_in_flight);
	}
	eb__bconn_failure(c, f->reply_address, f->address, -1,
	    eb_bus_failure_name(EB_BUS_ERROR), msg);
	return 0;
}

/* Answers msg with the frame's body, raw (fast path) or parsed. */
static int
conn_reply(eb_bus_msg *msg, const eb__bframe *f, const eb_bus_send_opts *so,
    eb_bus_reply_cb cb, void *arg)
{
	if (f->raw) {
		return eb_bus_msg_reply_raw(
		    msg, f->body_raw, f->body_raw_len, f->headers, so, cb, arg);
	}
	return eb_bus_msg_reply(msg, f->body, f->headers, so, cb, arg);
}

/* Requests to reserved addresses name their connection (bridge_obs.h):
 * the headers with EB__BRIDGE_CONN_HEADER set, or NULL for others. */
static json_t *
conn_stamp(const eb__bconn *c, const eb__bframe *f)
{
	json_t *h;
	char    id[24];

	if (strncmp(f->address, EB__BRIDGE_RESERVED_PREFIX,
	        sizeof(EB__BRIDGE_RESERVED_PREFIX) - 1) != 0) {
		return NULL;
	}
	h = f->headers != NULL ? json_copy((json_t *) f->headers)
	                       : json_object();
	(void) snprintf(id, sizeof(id), "%llu", (unsigned long long) c->id);
	(void) json_object_set_new(h, EB__BRIDGE_CONN_HEADER, json_string(id));
	return h;
}

/* The client answers a message it received (reply, one-shot: the entry
 * goes whatever the outcome); with a replyAddress it asks back. */
static void
send_answer(eb__bconn *c, const eb__bframe *f, eb__breply *reply,
    const eb_bus_send_opts *so)
{
	eb__breq *r;
	int       rv;

	if (f->reply_address != NULL) {
		r = eb__breq_new(c, f->reply_address, f->address);
		rv = conn_reply(reply->msg, f, so, eb__breq_cb, r);
		if (rv != 0) {
			eb__breq_refused(c, r, rv);
		}
	} else if (f->has_failure) {
		(void) eb_bus_msg_fail(
		    reply->msg, f->failure_code, f->failure_message);
	} else {
		(void) conn_reply(reply->msg, f, so, NULL, NULL);
	}
	eb__breply_free(c, reply);
}

/* A send to the bus: a request when the frame has a replyAddress. */
static void
send_bus(eb__bconn *c, const eb__bframe *f, const eb_bus_send_opts *so)
{
	eb_bridge *b = c->b;
	eb__breq  *r;
	json_t    *h;
	int        rv;

	if (f->reply_address == NULL) {
		/* A plain send to nobody is silent, as in Vert.x. */
		if (f->raw) {
			(void) eb_bus_send_raw(b->bus, f->address, f->body_raw,
			    f->body_raw_len, f->headers, so);
		} else {
			(void) eb_bus_send(
			    b->bus, f->address, f->body, f->headers, so);
		}
		return;
	}
	h = conn_stamp(c, f);
	r = eb__breq_new(c, f->reply_address, f->address);
	rv = f->raw ? eb_bus_request_raw(b->bus, f->address, f->body_raw,
	                  f->body_raw_len, h != NULL ? h : f->headers, so,
	                  eb__breq_cb, r)
	            : eb_bus_request(b->bus, f->address, f->body,
	                  h != NULL ? h : f->headers, so, eb__breq_cb, r);
	json_decref(h);
	if (rv != 0) {
		eb__breq_refused(c, r, rv);
	}
}

static void
frame_send(eb__bconn *c, const eb__bframe *f)
{
	eb_bridge       *b = c->b;
	eb__breply      *reply = eb__breply_find(c, f->address);
	eb_bus_send_opts so;

	if (reply != NULL && eb__mono_ms() >= reply->expires_ms) {
		eb__breply_free(c, reply); /* expired, the sweep had not run */
		reply = NULL;
	}

	if (reply == NULL && !eb__perm_allows(&b->inbound, f->address)) {
		eb__bconn_denied(c, "send", f->address);
		return;
	}
	if (f->reply_address != NULL && !req_allowed(c, f)) {
		if (reply != NULL) {
			/* One-shot, as below: the waiting requester learns at
			 * once instead of timing out. */
			(void) eb_bus_msg_fail(reply->msg, -1,
			    "too_many_requests: the bridge client's reply "
			    "with a reply was refused");
			eb__breply_free(c, reply);
		}
		return;
	}
	eb_bus_send_opts_init(&so);
	/* A client's headers.timeout is clamped: it cannot make the node
	 * hold a request (and its memory) for years. */
	so.timeout_ms = f->timeout_ms;
	if (b->opts.max_request_timeout_ms > 0 &&
	    so.timeout_ms > b->opts.max_request_timeout_ms) {
		so.timeout_ms = b->opts.max_request_timeout_ms;
	}
	so.local_only = f->local_only;
	if (reply != NULL) {
		send_answer(c, f, reply, &so);
	} else {
		send_bus(c, f, &so);
	}
}

/* 1 when one more consumer fits max_consumers_per_conn; else answered. */
static int
consumer_allowed(eb__bconn *c)
{
	eb_bridge *b = c->b;

	if (b->opts.max_consumers_per_conn == 0 ||
	    c->n_consumers < b->opts.max_consumers_per_conn) {
		return 1;
	}
	b->stats.consumers_refused++;
	if (eb__bconn_log_ok(c)) {
		EB_LOG_NOTICE("bridge",
		    "register-refused: peer=%s consumers=%zu max=%u", c->peer,
		    c->n_consumers, b->opts.max_consumers_per_conn);
	}
	eb__bconn_err(c, "too_many_consumers");
	return 0;
}

/* The bus refused the consumer (e.g. EB_ECLOSED while stopping): logged,
 * no frame (Vert.x has no error for it). */
static void
register_failed(eb__bconn *c, const char *address, int rv)
{
	char q[EB_LOG_QUOTE_MAX];

	if (eb__bconn_log_ok(c)) {
		EB_LOG_WARN("bridge",
		    "register-failed: peer=%s address=%s err=%s", c->peer,
		    eb_log_quote(q, sizeof(q), address), eb_err_name(rv));
	}
}

static void
frame_register(eb__bconn *c, const eb__bframe *f)
{
	int rv;

	if (!eb__perm_allows(&c->b->outbound, f->address)) {
		eb__bconn_denied(c, "register", f->address);
		return;
	}
	if (eb__bconsumer_find(c, f->address) != NULL) {
		return; /* idempotent: one consumer per (socket, address) */
	}
	if (!consumer_allowed(c)) {
		return;
	}
	rv = eb__bconsumer_add(c, f->address);
	if (rv != 0) {
		register_failed(c, f->address, rv);
		return;
	}
	(void) eb__bconn_hook(c, EB_BRIDGE_EV_REGISTERED, f);
}

static void
frame_unregister(eb__bconn *c, const eb__bframe *f)
{
	eb__bconsumer *k;

	if (!eb__perm_allows(&c->b->outbound, f->address)) {
		eb__bconn_denied(c, "unregister", f->address);
		return;
	}
	k = eb__bconsumer_find(c, f->address);
	if (k == NULL) {
		eb__bconn_err(c, "unknown_address");
		return;
	}
	eb__bconsumer_free(c, k);
}

/* Compares every byte whatever differs, so the time taken does not tell
 * how much of a guessed token was right. */
static int
token_eq(const char *a, const char *b, size_t n)
{
	volatile unsigned char d = 0;
	size_t                 i;

	for (i = 0; i < n; i++) {
		d |= (unsigned char) (a[i] ^ b[i]);
	}
	return d == 0;
}

static int
token_ok(const eb_bridge *b, const char *token)
{
	size_t n = strlen(b->token);

	return token != NULL && strlen(token) == n &&
	       token_eq(token, b->token, n);
}

/* 1 when the frame may proceed; otherwise it was answered (and in "first"
 * mode the connection closed). The token is never logged. */
static int
frame_auth(eb__bconn *c, const eb__bframe *f)
{
	eb_bridge *b = c->b;

	if (b->opts.auth_mode == EB_BRIDGE_AUTH_OFF || f->type == EB__BF_PING) {
		return 1;
	}
	if (b->opts.auth_mode == EB_BRIDGE_AUTH_FIRST && c->authenticated) {
		return 1;
	}
	if (token_ok(b, f->token)) {
		c->authenticated = 1;
		return 1;
	}
	b->stats.auth_failed++;
	if (eb__bconn_log_ok(c)) {
		EB_LOG_NOTICE("bridge", "auth-failed: peer=%s token=%s",
		    c->peer, f->token == NULL ? "missing" : "wrong");
	}
	eb__bconn_err(c, "access_denied");
	if (b->opts.auth_mode == EB_BRIDGE_AUTH_FIRST) {
		eb__bconn_close(c, "auth-failed");
	}
	return 0;
}

static void
frame_publish(eb__bconn *c, const eb__bframe *f)
{
	eb_bus_send_opts so;

	if (!eb__perm_allows(&c->b->inbound, f->address)) {
		eb__bconn_denied(c, "publish", f->address);
		return;
	}
	eb_bus_send_opts_init(&so);
	so.local_only = f->local_only;
	if (f->raw) {
		(void) eb_bus_publish_raw(c->b->bus, f->address, f->body_raw,
		    f->body_raw_len, f->headers, &so);
	} else {
		(void) eb_bus_publish(
		    c->b->bus, f->address, f->body, f->headers, &so);
	}
}

static const eb_bridge_event_type frame_events[] = {
	[EB__BF_SEND] = EB_BRIDGE_EV_SEND,
	[EB__BF_PUBLISH] = EB_BRIDGE_EV_PUBLISH,
	[EB__BF_REGISTER] = EB_BRIDGE_EV_REGISTER,
	[EB__BF_UNREGISTER] = EB_BRIDGE_EV_UNREGISTER,
	[EB__BF_PING] = EB_BRIDGE_EV_SOCKET_PING,
};

/*
 * Flow control toward the client: after a frame for a busy address the
 * connection must stop reading (and handling what it has buffered) until
 * the bus says the address is not busy any more; TCP then pushes back on
 * the client. Marks the address; read.c blocks before the next frame.
 */
static void
conn_busy_check(eb__bconn *c, const char *address)
{
	if (c->blocked || c->closing || c->blocked_on != NULL ||
	    !eb_bus_address_busy(c->b->bus, address)) {
		return;
	}
	c->blocked_on = eb__strdup(address);
}

/* Section 2 order: type, (auth), hook, address, then the type's checks. */
static void
frame_dispatch(eb__bconn *c, const eb__bframe *f)
{
	if (!frame_auth(c, f)) {
		return;
	}
	if (f->type == EB__BF_UNKNOWN) {
		eb__bconn_err(c, "unknown_type");
		return;
	}
	if (eb__bconn_hook(c, frame_events[f->type], f)) {
		eb__bconn_err(c, "blocked by bridgeEvent handler");
		return;
	}
	if (c->closing) {
		return; /* the hook closed this connection */
	}
	if (f->type == EB__BF_PING) {
		eb__bconn_pong(c);
		return;
	}
	if (f->address == NULL) {
		eb__bconn_err(c, "missing_address");
		return;
	}
	switch (f->type) {
	case EB__BF_SEND:
		frame_send(c, f);
		conn_busy_check(c, f->address);
		break;
	case EB__BF_PUBLISH:
		frame_publish(c, f);
		conn_busy_check(c, f->address);
		break;
	case EB__BF_REGISTER:
		frame_register(c, f);
		break;
	case EB__BF_UNREGISTER:
		frame_unregister(c, f);
		break;
	default:
		break;
	}
}

/* A frame the node will not take (not JSON, not an object, nested too
 * deep, a string it must read without a text form): answered with an err
 * frame carrying the reason, counted, and the socket keeps working. */
static void
conn_malformed(eb__bconn *c, uint32_t n, const char *why)
{
	c->b->stats.frames_in[EB_BRIDGE_IN_MALFORMED]++;
	if (eb__bconn_log_ok(c)) {
		EB_LOG_INFO("bridge", "malformed-frame: peer=%s len=%u %s",
		    c->peer, n, why);
	}
	eb__bconn_err(c, why);
}

void
eb__bconn_frame(eb__bconn *c, const char *p, uint32_t n)
{
	eb_bridge *b = c->b;
	eb__bframe f;
	int        rv;

	c->frames_in++;
	rv = eb__bframe_parse(p, n, b->opts.auth_mode != EB_BRIDGE_AUTH_OFF,
	    (int) b->opts.max_json_depth, &f);
	if (rv != 0) {
		conn_malformed(c, n, f.err);
		eb__bframe_free(&f);
		return;
	}
	if (b->hook != NULL) {
		/* A hook sees the frame as a json_t (NULL where jansson
		 * cannot hold it: integers past 64 bits, bad surrogates). */
		f.root = json_loadb(p, n, JSON_ALLOW_NUL, NULL);
	}
	b->stats.frames_in[(int) f.type]++;
	frame_dispatch(c, &f);
	eb__bframe_free(&f);
}
