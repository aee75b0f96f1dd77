/*
 * One bridge connection: frame decoding, the per-frame protocol logic of
 * BRIDGE-PROTOCOL.md section 2 (with the section 12 improvements), the
 * socket's consumers, its replies map and its in-flight requests, and the
 * bounded write path.
 *
 * Writes are coalesced (redis handleClientsWithPendingWrites): every frame
 * is encoded straight into the connection's output buffer (c->out, header
 * and payload contiguous, frames back to back) and the connection goes on
 * b->pending_out; the bridge's prepare/check handles flush each pending
 * connection once per loop phase, one write for all its frames. The
 * slow-reader bound counts the bytes the kernel has not taken: libuv's
 * write queue plus c->out.
 *
 * Invariants: a connection on b->conns is not closing; once closing it has
 * no consumers, no replies and no attached requests, nothing pending in
 * c->out, and it is freed when its socket handle has closed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/err.h>
#include <ebnode/log.h>

#include "bridge/bridge_int.h"
#include "bridge/bridge_obs.h"
#include "common/alloc.h"
#include "common/hmap.h"
#include "common/util.h"

#define CONN_DEC_KEEP ((size_t) 65536)
/* Output gathered beyond this is written at once rather than at the end of
 * the loop phase; a bigger output buffer is given back after a flush. */
#define CONN_OUT_FLUSH_AT ((size_t) 65536)
#define CONN_OUT_KEEP     ((size_t) 262144)
/*
 * Frames handled per connection per loop turn. A client that pipelines
 * thousands of frames in one write would otherwise run them all in one
 * turn, ahead of the bus, which delivers at most 256 queued messages per
 * consumer per turn and drops beyond its queue bound; it also keeps one
 * busy connection from starving the others. Beyond the budget the
 * connection stops reading and continues on the next turn.
 */
#define BCONN_FRAME_BUDGET 256u
/* A parked connection whose client read nothing for this long is closed. */
#define BCONN_PARK_STALL_MS 2000u
/* Per-frame log lines (malformed, denied, auth) per connection, so that a
 * hostile client cannot flood the log; the rest are only counted. */
#define BCONN_LOG_BUDGET 16u

struct eb__bconn {
	eb__list      link; /* in b->conns while open */
	eb_bridge    *b;    /* borrowed */
	uint64_t      id;
	eb__stream    stream;
	eb__frame_dec dec;
	char          peer[64];
	uint64_t      started_ms;
	uint64_t      active_ms; /* last read or write */
	/* When the oldest byte of the frame not yet complete arrived; 0:
	 * nothing partial buffered (the frame deadline runs from here). */
	uint64_t frame_started_ms;
	size_t   in_acct; /* bytes counted in b->input (the budget) */
	/* A layer's share (eb__bconn_layer_hold): bytes it holds for the
	 * client, and when its unfinished unit began (0: none). */
	size_t      layer_held;
	uint64_t    layer_started_ms;
	eb__list    fresh_link; /* in b->fresh until a first frame */
	int         fresh;
	int         processing; /* a frame borrowed from dec is in use */
	size_t      n_reqs;     /* attached requests (replies awaited) */
	uint64_t    frames_in;
	uint64_t    frames_out;
	eb__list    consumers; /* of bconn_consumer, owned */
	eb__list    replies;   /* of bconn_reply, owned, oldest first */
	eb__hmap    cmap;      /* consumers by address */
	eb__hmap    rmap;      /* replies by address */
	eb__list    reqs;      /* of bconn_req, attached */
	size_t      n_consumers;
	size_t      n_replies;
	eb__list    pause_link; /* in b->paused while paused */
	eb__buf     out;        /* frames not yet handed to the stream */
	eb__list    out_link;   /* in b->pending_out while out_listed */
	int         out_listed;
	int         paused;     /* reading stopped: frames buffered */
	int         blocked;    /* flow control: in b->blocked, not reading */
	char       *blocked_on; /* owned: the busy address, while blocked */
	int         parked;     /* flow control: its bus consumers paused */
	uint64_t    parked_ms;  /* parked, or last write progress since */
	unsigned    log_left;   /* per-frame log lines still allowed */
	const char *doomed;     /* the sweep's close reason, closed next */
	int         authenticated;
	int         closing;
};

typedef struct bconn_consumer {
	eb__list         link;
	eb__hent         hnode;   /* in c->cmap */
	eb__bconn       *c;       /* borrowed: the consumer dies first */
	eb_bus_consumer *bc;      /* owned */
	char            *address; /* owned */
} bconn_consumer;

/* A server->client request awaiting the client's answer (one-shot). */
typedef struct bconn_reply {
	eb__list    link;
	eb__hent    hnode;   /* in c->rmap */
	char       *address; /* owned: the bus reply address */
	eb_bus_msg *msg;     /* one reference held */
	uint64_t    expires_ms;
} bconn_reply;

/* A client request in flight on the bus. */
typedef struct bconn_req {
	eb__list   link;
	eb__bconn *c;      /* NULL once the connection closed */
	char      *token;  /* owned: the client's replyAddress */
	char      *source; /* owned: the address it was sent to */
} bconn_req;

eb__bconn *
eb__bconn_from_link(eb__list *l)
{
	return EB_CONTAINER_OF(l, eb__bconn, link);
}

eb__bconn *
eb__bconn_from_pause_link(eb__list *l)
{
	return EB_CONTAINER_OF(l, eb__bconn, pause_link);
}

eb__bconn *
eb__bconn_from_out_link(eb__list *l)
{
	return EB_CONTAINER_OF(l, eb__bconn, out_link);
}

/* Calls the bridge-event hook; 1 when it blocks (non-zero return). */
static int
conn_hook(eb__bconn *c, eb_bridge_event_type t, const eb__bframe *f)
{
	eb_bridge      *b = c->b;
	eb_bridge_event ev;

	if (b->hook == NULL) {
		return 0;
	}
	memset(&ev, 0, sizeof(ev));
	ev.type = t;
	ev.conn_id = c->id;
	ev.peer = c->peer;
	ev.tls = c->stream.tls != NULL;
	if (f != NULL) {
		ev.address = f->address;
		ev.frame = f->root;
	}
	return b->hook(&ev, b->hook_arg) != 0;
}

/* 1 when one more per-frame event of this connection may be logged. */
static int
conn_log_ok(eb__bconn *c)
{
	if (c->log_left == 0) {
		return 0;
	}
	if (--c->log_left == 0) {
		EB_LOG_INFO("bridge",
		    "log-suppressed: peer=%s: further per-frame events of this "
		    "connection are only counted",
		    c->peer);
		return 0;
	}
	return 1;
}

/* ---- writing ---- */

static void conn_written_cb(eb__stream *s);

static void
conn_unlist_out(eb__bconn *c)
{
	if (c->out_listed) {
		c->out_listed = 0;
		eb__list_remove(&c->out_link);
	}
}

/* Hands c->out to the stream (one write); a failure closes c. */
void
eb__bconn_flush(eb__bconn *c)
{
	int rv;

	conn_unlist_out(c);
	if (c->closing || eb__buf_avail(&c->out) == 0) {
		return;
	}
	rv = c->stream.ops->write(&c->stream, &c->out);
	if (c->out.cap > CONN_OUT_KEEP) {
		eb__buf_free(&c->out);
	}
	if (rv != 0) {
		eb__bconn_close(c, eb_err_name(rv));
		return;
	}
	c->active_ms = eb__mono_ms();
	if (c->parked) {
		conn_written_cb(
		    &c->stream); /* the kernel may have taken it all */
	}
}

/*
 * Where a frame is encoded: NULL when nothing may be written any more
 * (closing). *mark is the output already gathered, for conn_out_end().
 */
static eb__buf *
conn_out_begin(eb__bconn *c, size_t *mark)
{
	if (c->closing) {
		return NULL;
	}
	*mark = eb__buf_avail(&c->out);
	return &c->out;
}

/* Accounts for the frame appended since conn_out_begin(). 0: queued on the
 * connection's output; -1: not sent (the connection is being closed). */
static int
conn_out_end(eb__bconn *c, size_t mark, eb_bridge_out_kind kind)
{
	eb_bridge *b = c->b;
	size_t     len = eb__buf_avail(&c->out) - mark;
	size_t     backlog = eb__stream_backlog(&c->stream) + mark;

	if (backlog + len > b->opts.write_queue_max_bytes) {
		/* The client does not read: bound its memory (redis
		 * client-output-buffer-limit) instead of queueing forever. */
		c->out.len = c->out.off + mark; /* this frame is not sent */
		b->stats.conns_closed_slow++;
		EB_LOG_WARN("bridge",
		    "slow-consumer-closed: peer=%s queued=%zu frame=%zu "
		    "max=%zu",
		    c->peer, backlog, len, b->opts.write_queue_max_bytes);
		eb__bconn_close(c, "slow-consumer");
		return -1;
	}
	c->frames_out++;
	b->stats.frames_out[kind]++;
	if (kind == EB_BRIDGE_OUT_ERR) {
		b->stats.errors++;
	}
	if (mark + len >= CONN_OUT_FLUSH_AT ||
	    c->stream.ops == &eb__stream_null_ops) {
		/* Big enough to write now; a detached connection (fuzzer,
		 * tests) discards at once, whether the loop runs or not. */
		eb__bconn_flush(c);
		return 0;
	}
	if (!c->out_listed) {
		c->out_listed = 1;
		eb__list_insert_tail(&b->pending_out, &c->out_link);
		eb__bridge_flush_wake(b);
	}
	return 0;
}

static void
conn_err(eb__bconn *c, const char *message)
{
	size_t   mark;
	eb__buf *out = conn_out_begin(c, &mark);

	if (out != NULL) {
		eb__bout_err_buf(out, message);
		(void) conn_out_end(c, mark, EB_BRIDGE_OUT_ERR);
	}
}

static void
conn_denied(eb__bconn *c, const char *what, const char *address)
{
	char q[EB_LOG_QUOTE_MAX];

	c->b->stats.denied++;
	if (conn_log_ok(c)) {
		EB_LOG_INFO("bridge", "access-denied: peer=%s op=%s address=%s",
		    c->peer, what, eb_log_quote(q, sizeof(q), address));
	}
	conn_err(c, "access_denied");
}

static void
conn_failure(eb__bconn *c, const char *token, const char *source, int code,
    const char *type, const char *message)
{
	size_t   mark;
	eb__buf *out = conn_out_begin(c, &mark);

	if (out != NULL) {
		eb__bout_failure_buf(out, token, source, code, type, message);
		(void) conn_out_end(c, mark, EB_BRIDGE_OUT_ERR);
	}
}

/* ---- replies map ---- */

static bconn_reply *
reply_find(eb__bconn *c, const char *address)
{
	eb__hent *n = eb__hmap_get(&c->rmap, address);

	return n != NULL ? EB_CONTAINER_OF(n, bconn_reply, hnode) : NULL;
}

static void
reply_free(eb__bconn *c, bconn_reply *r)
{
	eb__list_remove(&r->link);
	eb__hmap_del(&c->rmap, &r->hnode);
	c->n_replies--;
	eb_bus_msg_release(r->msg);
	free(r->address);
	free(r);
}

static void
reply_add(eb__bconn *c, const char *address, eb_bus_msg *msg)
{
	bconn_reply *r = reply_find(c, address);

	if (r != NULL) {
		reply_free(c, r);
	}
	r = eb__calloc(1, sizeof(*r));
	r->address = eb__strdup(address);
	r->msg = eb_bus_msg_hold(msg);
	r->expires_ms = eb__mono_ms() + c->b->opts.reply_ttl_ms;
	eb__list_insert_tail(&c->replies, &r->link);
	r->hnode.key = r->address;
	eb__hmap_put(&c->rmap, &r->hnode);
	c->n_replies++;
}

/* ---- messages from the bus ---- */

/* 0 when the frame is queued on the connection's output, else -1. */
static int
conn_message(eb__bconn *c, const char *address, eb_bus_msg *msg)
{
	const char *ra = eb_bus_msg_reply_address(msg);
	const char *body;
	size_t      body_len = 0;
	size_t      mark;
	eb__buf    *out;

	if (ra != NULL) {
		reply_add(c, ra, msg);
	}
	out = conn_out_begin(c, &mark);
	if (out == NULL) {
		return -1;
	}
	body = eb_bus_msg_body_bytes(msg, &body_len);
	eb__bout_message_buf(out, address, ra, eb_bus_msg_headers(msg), body,
	    body_len, eb_bus_msg_is_send(msg));
	return conn_out_end(c, mark, EB_BRIDGE_OUT_MESSAGE);
}

/*
 * Flow control toward a client that reads slower than its messages come:
 * past half of write_queue_max_bytes queued (gathered or refused by the
 * kernel), the connection's bus consumers are paused, so their messages
 * wait in the bus's bounded queues (whose watermarks push back on the
 * producers) instead of closing the client as too slow; below an eighth
 * they resume. A client that reads nothing for BCONN_PARK_STALL_MS while
 * parked is closed as a slow consumer by the sweep (its parked messages
 * are dropped and counted, as for any closed consumer), so it cannot
 * hold its producers forever. Only plain and TLS sockets (a layered
 * transport reports no completed writes).
 */
static size_t
conn_out_backlog(eb__bconn *c)
{
	return eb__stream_backlog(&c->stream) + eb__buf_avail(&c->out);
}

static void
conn_park_set(eb__bconn *c, int park)
{
	eb__list *it;

	c->parked = park;
	for (it = c->consumers.next; it != &c->consumers; it = it->next) {
		bconn_consumer *k = EB_CONTAINER_OF(it, bconn_consumer, link);

		if (park) {
			eb_bus_consumer_pause(k->bc);
		} else {
			eb_bus_consumer_resume(k->bc);
		}
	}
	if (park) {
		c->parked_ms = eb__mono_ms();
		c->b->stats.consumers_parked++;
		c->b->stats.parked_total++;
	} else {
		c->b->stats.consumers_parked--;
	}
}

static void
conn_park_check(eb__bconn *c)
{
	if (c->parked || c->closing || c->stream.layer != NULL ||
	    c->stream.ops == &eb__stream_null_ops) {
		return;
	}
	if (conn_out_backlog(c) >= c->b->opts.write_queue_max_bytes / 2) {
		conn_park_set(c, 1);
	}
}

static void
conn_written_cb(eb__stream *s)
{
	eb__bconn *c = s->data;

	if (!c->parked || c->closing) {
		return;
	}
	c->parked_ms = eb__mono_ms(); /* progress: the client reads */
	if (conn_out_backlog(c) <= c->b->opts.write_queue_max_bytes / 8) {
		conn_park_set(c, 0);
	}
}

static void
consumer_cb(eb_bus_consumer *bc, eb_bus_msg *msg, void *arg)
{
	bconn_consumer *k = arg;

	/* Queued on the socket's output is "delivered" for a receipt; a
	 * closing or over-full connection must say it did not take it. */
	if (k->c->closing || conn_message(k->c, k->address, msg) != 0) {
		eb_bus_consumer_undelivered(bc, EB_ECLOSED);
		return;
	}
	conn_park_check(k->c);
}

static void
req_free(bconn_req *r)
{
	if (r->c != NULL) {
		r->c->n_reqs--;
		r->c->b->stats.requests_in_flight--;
	}
	eb__list_remove(&r->link);
	free(r->token);
	free(r->source);
	free(r);
}

static void
req_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg)
{
	bconn_req *r = arg;
	eb__bconn *c = r->c;

	(void) bus;
	if (c == NULL || c->closing) {
		req_free(r); /* the client is gone: drop the answer */
		return;
	}
	if (status == 0 && reply != NULL) {
		(void) conn_message(c, r->token, reply);
	} else if (failure != NULL) {
		conn_failure(c, r->token, r->source, failure->code,
		    eb_bus_failure_name(failure->type), failure->message);
	} else {
		conn_failure(c, r->token, r->source, -1,
		    eb_bus_failure_name(EB_BUS_ERROR), eb_strerror(status));
	}
	req_free(r);
}

static bconn_req *
req_new(eb__bconn *c, const char *token, const char *source)
{
	bconn_req *r = eb__calloc(1, sizeof(*r));

	r->c = c;
	r->token = eb__strdup(token);
	r->source = eb__strdup(source);
	eb__list_insert_tail(&c->reqs, &r->link);
	c->n_reqs++;
	c->b->stats.requests_in_flight++;
	return r;
}

/* A request the bus refused synchronously (no callback will come). */
static void
req_refused(eb__bconn *c, bconn_req *r, int rv)
{
	char msg[600];

	if (rv == EB_ENOHANDLERS) {
		(void) snprintf(
		    msg, sizeof(msg), "No handlers for address %s", r->source);
		conn_failure(c, r->token, r->source, -1,
		    eb_bus_failure_name(EB_BUS_NO_HANDLERS), msg);
	} else {
		conn_failure(c, r->token, r->source, -1,
		    eb_bus_failure_name(EB_BUS_ERROR), eb_strerror(rv));
	}
	req_free(r);
}

/* ---- client frames ---- */

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
	if (conn_log_ok(c)) {
		EB_LOG_NOTICE("bridge",
		    "request-refused: peer=%s in_flight=%zu total=%llu",
		    c->peer, c->n_reqs,
		    (unsigned long long) b->stats.requests_in_flight);
	}
	conn_failure(c, f->reply_address, f->address, -1,
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

static void
frame_send(eb__bconn *c, const eb__bframe *f)
{
	eb_bridge       *b = c->b;
	bconn_reply     *reply = reply_find(c, f->address);
	eb_bus_send_opts so;
	bconn_req       *r;
	int              rv;

	if (reply != NULL && eb__mono_ms() >= reply->expires_ms) {
		reply_free(c, reply); /* expired, the sweep had not run yet */
		reply = NULL;
	}

	if (reply == NULL && !eb__perm_allows(&b->inbound, f->address)) {
		conn_denied(c, "send", f->address);
		return;
	}
	if (f->reply_address != NULL && !req_allowed(c, f)) {
		if (reply != NULL) {
			/* One-shot, as below: the waiting requester learns at
			 * once instead of timing out. */
			(void) eb_bus_msg_fail(reply->msg, -1,
			    "too_many_requests: the bridge client's reply "
			    "with a reply was refused");
			reply_free(c, reply);
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
		/* One-shot: the entry goes whatever the outcome. */
		if (f->reply_address != NULL) {
			r = req_new(c, f->reply_address, f->address);
			rv = conn_reply(reply->msg, f, &so, req_cb, r);
			if (rv != 0) {
				req_refused(c, r, rv);
			}
		} else if (f->has_failure) {
			(void) eb_bus_msg_fail(
			    reply->msg, f->failure_code, f->failure_message);
		} else {
			(void) conn_reply(reply->msg, f, &so, NULL, NULL);
		}
		reply_free(c, reply);
		return;
	}
	if (f->reply_address != NULL) {
		json_t *h = conn_stamp(c, f);

		r = req_new(c, f->reply_address, f->address);
		rv = f->raw ? eb_bus_request_raw(b->bus, f->address,
		                  f->body_raw, f->body_raw_len,
		                  h != NULL ? h : f->headers, &so, req_cb, r)
		            : eb_bus_request(b->bus, f->address, f->body,
		                  h != NULL ? h : f->headers, &so, req_cb, r);
		json_decref(h);
		if (rv != 0) {
			req_refused(c, r, rv);
		}
		return;
	}
	/* A plain send to nobody is silent, as in Vert.x. */
	if (f->raw) {
		(void) eb_bus_send_raw(b->bus, f->address, f->body_raw,
		    f->body_raw_len, f->headers, &so);
	} else {
		(void) eb_bus_send(
		    b->bus, f->address, f->body, f->headers, &so);
	}
}

static bconn_consumer *
consumer_find(eb__bconn *c, const char *address)
{
	eb__hent *n = eb__hmap_get(&c->cmap, address);

	return n != NULL ? EB_CONTAINER_OF(n, bconn_consumer, hnode) : NULL;
}

static void
consumer_free(eb__bconn *c, bconn_consumer *k)
{
	eb__list_remove(&k->link);
	eb__hmap_del(&c->cmap, &k->hnode);
	c->n_consumers--;
	c->b->stats.consumers--;
	eb_bus_consumer_close(k->bc);
	free(k->address);
	free(k);
}

/* The bus refused the consumer (e.g. EB_ECLOSED while stopping): logged,
 * no frame (Vert.x has no error for it). */
static void
register_failed(eb__bconn *c, const char *address, int rv)
{
	char q[EB_LOG_QUOTE_MAX];

	if (conn_log_ok(c)) {
		EB_LOG_WARN("bridge",
		    "register-failed: peer=%s address=%s err=%s", c->peer,
		    eb_log_quote(q, sizeof(q), address), eb_err_name(rv));
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
	if (conn_log_ok(c)) {
		EB_LOG_NOTICE("bridge",
		    "register-refused: peer=%s consumers=%zu max=%u", c->peer,
		    c->n_consumers, b->opts.max_consumers_per_conn);
	}
	conn_err(c, "too_many_consumers");
	return 0;
}

static void
frame_register(eb__bconn *c, const eb__bframe *f)
{
	bconn_consumer *k;
	int             rv;

	if (!eb__perm_allows(&c->b->outbound, f->address)) {
		conn_denied(c, "register", f->address);
		return;
	}
	if (consumer_find(c, f->address) != NULL) {
		return; /* idempotent: one consumer per (socket, address) */
	}
	if (!consumer_allowed(c)) {
		return;
	}
	k = eb__calloc(1, sizeof(*k));
	k->c = c;
	k->address = eb__strdup(f->address);
	rv = eb_bus_consumer_new(
	    c->b->bus, f->address, 0, consumer_cb, k, &k->bc);
	if (rv != 0) {
		register_failed(c, f->address, rv);
		free(k->address);
		free(k);
		return;
	}
	eb__list_insert_tail(&c->consumers, &k->link);
	k->hnode.key = k->address;
	eb__hmap_put(&c->cmap, &k->hnode);
	c->n_consumers++;
	c->b->stats.consumers++;
	(void) conn_hook(c, EB_BRIDGE_EV_REGISTERED, f);
}

static void
frame_unregister(eb__bconn *c, const eb__bframe *f)
{
	bconn_consumer *k;

	if (!eb__perm_allows(&c->b->outbound, f->address)) {
		conn_denied(c, "unregister", f->address);
		return;
	}
	k = consumer_find(c, f->address);
	if (k == NULL) {
		conn_err(c, "unknown_address");
		return;
	}
	consumer_free(c, k);
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
	if (conn_log_ok(c)) {
		EB_LOG_NOTICE("bridge", "auth-failed: peer=%s token=%s",
		    c->peer, f->token == NULL ? "missing" : "wrong");
	}
	conn_err(c, "access_denied");
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
		conn_denied(c, "publish", f->address);
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

static void
frame_ping(eb__bconn *c)
{
	size_t   mark;
	eb__buf *out = conn_out_begin(c, &mark);

	if (out != NULL) {
		eb__bout_pong_buf(out);
		(void) conn_out_end(c, mark, EB_BRIDGE_OUT_PONG);
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
 * connection stops reading (and handling what it has buffered, at most one
 * read) until the bus says the address is not busy any more; TCP then
 * pushes back on the client. Nothing read is dropped.
 */
static void
conn_block_check(eb__bconn *c, const char *address)
{
	eb_bridge *b = c->b;

	if (c->blocked || c->closing || !eb_bus_address_busy(b->bus, address)) {
		return;
	}
	if (!b->pressure_watching) {
		b->pressure_watching = 1;
		eb_bus_pressure_watch(b->bus, eb__bridge_pressure_cb, b);
	}
	c->blocked = 1;
	c->blocked_on = eb__strdup(address);
	if (c->paused) {
		eb__list_remove(&c->pause_link); /* off b->paused */
	} else {
		c->paused = 1;
		(void) uv_read_stop((uv_stream_t *) &c->stream.tcp);
	}
	eb__list_insert_tail(&b->blocked, &c->pause_link);
	b->stats.conns_blocked++;
	b->stats.blocked_total++;
}

/* Ends c's block: it drains what it buffered, then reads again. */
static void
conn_unblock(eb__bconn *c)
{
	eb_bridge *b = c->b;

	c->blocked = 0;
	free(c->blocked_on);
	c->blocked_on = NULL;
	b->stats.conns_blocked--;
	eb__list_remove(&c->pause_link);
	if (!c->closing) {
		eb__list_insert_tail(&b->paused, &c->pause_link); /* paused */
		eb__bridge_drain_wake(b);
	}
}

void
eb__bridge_pressure_cb(eb_bus *bus, const char *address, int busy, void *arg)
{
	eb_bridge *b = arg;
	eb__list  *it;
	eb__list  *tmp;

	(void) bus;
	if (busy) {
		return; /* connections see it after their next frame */
	}
	EB_LIST_FOREACH (it, tmp, &b->blocked) {
		eb__bconn *c = eb__bconn_from_pause_link(it);

		if (strcmp(c->blocked_on, address) == 0) {
			conn_unblock(c);
		}
	}
}

/* Section 2 order: type, (auth), hook, address, then the type's checks. */
static void
frame_dispatch(eb__bconn *c, const eb__bframe *f)
{
	if (!frame_auth(c, f)) {
		return;
	}
	if (f->type == EB__BF_UNKNOWN) {
		conn_err(c, "unknown_type");
		return;
	}
	if (conn_hook(c, frame_events[f->type], f)) {
		conn_err(c, "blocked by bridgeEvent handler");
		return;
	}
	if (c->closing) {
		return; /* the hook closed this connection */
	}
	if (f->type == EB__BF_PING) {
		frame_ping(c);
		return;
	}
	if (f->address == NULL) {
		conn_err(c, "missing_address");
		return;
	}
	switch (f->type) {
	case EB__BF_SEND:
		frame_send(c, f);
		conn_block_check(c, f->address);
		break;
	case EB__BF_PUBLISH:
		frame_publish(c, f);
		conn_block_check(c, f->address);
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
	if (conn_log_ok(c)) {
		EB_LOG_INFO("bridge", "malformed-frame: peer=%s len=%u %s",
		    c->peer, n, why);
	}
	conn_err(c, why);
}

static void
conn_frame(eb__bconn *c, const char *p, uint32_t n)
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

/* ---- stream events ---- */

/* Negative or oversized length: the stream cannot be resynchronised. */
static void
conn_bad_length(eb__bconn *c)
{
	c->b->stats.conns_closed_frame++;
	EB_LOG_WARN("bridge", "frame-too-big: peer=%s len=%lld max=%u", c->peer,
	    (long long) c->dec.bad_len, c->dec.max_frame);
	eb__bconn_close(c, "bad-frame-length");
}

static void
conn_pause(eb__bconn *c)
{
	if (c->paused) {
		return;
	}
	c->paused = 1;
	(void) uv_read_stop((uv_stream_t *) &c->stream.tcp);
	eb__list_insert_tail(&c->b->paused, &c->pause_link);
	eb__bridge_drain_wake(c->b);
}

static void
conn_resume(eb__bconn *c)
{
	int rv;

	c->paused = 0;
	eb__list_remove(&c->pause_link);
	rv = c->stream.ops->start(&c->stream);
	if (rv != 0) {
		eb__bconn_close(c, uv_err_name(rv));
	}
}

/* Handles up to BCONN_FRAME_BUDGET buffered frames. */
static void
conn_process(eb__bconn *c)
{
	unsigned    budget = BCONN_FRAME_BUDGET;
	unsigned    handled = 0;
	const char *p;
	uint32_t    len;
	int         rv;

	c->processing = 1;
	while (!c->closing && !c->blocked) {
		if (budget-- == 0) {
			c->processing = 0;
			conn_pause(c);
			return;
		}
		rv = eb__frame_dec_next(&c->dec, &p, &len);
		if (rv == UV_EAGAIN) {
			break;
		}
		if (rv != 0) {
			conn_bad_length(c);
			break;
		}
		conn_frame(c, p, len);
		handled++;
	}
	c->processing = 0;
	if (c->closing) {
		eb__frame_dec_free(&c->dec); /* see eb__bconn_close */
		return;
	}
	/* A paused connection resumes reading on a turn that found nothing
	 * buffered: one turn then takes at most one budget of its frames
	 * (from the drain or from a read, not both), no more than the bus
	 * delivers per consumer per turn. */
	if (c->paused && !c->blocked && handled == 0) {
		conn_resume(c);
	}
	/* After a big frame, give the buffer back instead of keeping up to
	 * max_frame_bytes per idle connection. */
	if (eb__frame_dec_buffered(&c->dec) == 0 &&
	    c->dec.in.cap > CONN_DEC_KEEP) {
		eb__frame_dec_free(&c->dec);
		eb__frame_dec_init(&c->dec, c->b->opts.max_frame_bytes);
	}
}

/* Keeps the node-wide budget in step with c's input buffer and its
 * layer's share (0 once closing). */
static void
conn_in_account(eb__bconn *c)
{
	eb_bridge *b = c->b;
	size_t     now = c->closing ? 0 : c->dec.in.cap + c->layer_held;

	eb__budget_adjust(&b->input, c->in_acct, now);
	b->stats.input_bytes = b->input.used;
	c->in_acct = now;
}

static void
conn_unfresh(eb__bconn *c)
{
	if (c->fresh) {
		c->fresh = 0;
		eb__list_remove(&c->fresh_link);
	}
}

/* Gives back the input buffers that hold nothing (kept for reuse after
 * a read), before anyone is closed for the budget or a charge refused. */
void
eb__bridge_input_reclaim(eb__budget *bg, void *arg)
{
	eb_bridge *b = arg;
	eb__list  *it;

	(void) bg;
	for (it = b->conns.next; it != &b->conns; it = it->next) {
		eb__bconn *c = eb__bconn_from_link(it);

		if (c->in_acct > c->layer_held && !c->processing &&
		    eb__frame_dec_buffered(&c->dec) == 0) {
			eb__frame_dec_free(&c->dec);
			eb__frame_dec_init(&c->dec, b->opts.max_frame_bytes);
			conn_in_account(c);
		}
	}
}

/*
 * Over the node-wide input budget: first frees the empty buffers, then
 * closes the connections holding the largest buffered input (partial or
 * not yet handled frames) until the total fits. The memory clients can
 * make the node hold is bounded by the budget, not by max_connections
 * times max_frame_bytes; the clients that hold the most pay first, idle
 * ones are never closed for it. Linear scans, but only while over the
 * budget, and each close frees the most.
 */
static void
bridge_input_budget(eb_bridge *b)
{
	eb__list  *it;
	eb__bconn *big;

	if (!eb__budget_over(&b->input)) {
		return;
	}
	eb__bridge_input_reclaim(&b->input, b);
	while (eb__budget_over(&b->input)) {
		big = NULL;
		for (it = b->conns.next; it != &b->conns; it = it->next) {
			eb__bconn *c = eb__bconn_from_link(it);

			if (c->in_acct > 0 && !c->processing &&
			    (eb__frame_dec_buffered(&c->dec) > 0 ||
			        c->layer_held > 0) &&
			    (big == NULL || c->in_acct > big->in_acct)) {
				big = c;
			}
		}
		if (big == NULL) {
			return;
		}
		b->stats.conns_closed_memory++;
		EB_LOG_RL_WARN("bridge",
		    "input-budget-closed: peer=%s buffered=%zu total=%llu "
		    "budget=%zu",
		    big->peer, big->in_acct, (unsigned long long) b->input.used,
		    b->opts.input_budget_bytes);
		eb__bconn_close(big, "input-budget");
	}
}

/* After input was handled: first-frame and frame-deadline state, memory
 * accounting and the budget. c may be closed on return. */
static void
conn_input_done(eb__bconn *c, uint64_t frames_before)
{
	if (c->closing) {
		return;
	}
	if (c->frames_in > 0) {
		conn_unfresh(c);
	}
	if (eb__frame_dec_buffered(&c->dec) == 0) {
		c->frame_started_ms = 0;
	} else if (c->frame_started_ms == 0 || c->frames_in != frames_before) {
		/* A frame completed: what is left began in this read. */
		c->frame_started_ms = eb__mono_ms();
	}
	conn_in_account(c);
	bridge_input_budget(c->b);
}

void
eb__bconn_drain(eb__bconn *c)
{
	uint64_t before = c->frames_in;

	conn_process(c);
	conn_input_done(c, before);
}

static void
conn_read_cb(eb__stream *s, const char *data, size_t n)
{
	eb__bconn *c = s->data;
	uint64_t   before = c->frames_in;

	c->active_ms = eb__mono_ms();
	eb__frame_dec_feed(&c->dec, data, n);
	if (!c->paused) {
		conn_process(c); /* else the drain handle continues */
	}
	conn_input_done(c, before);
}

static void
conn_error_cb(eb__stream *s, int status)
{
	eb__bconn *c = s->data;

	if (status == EB_ETLS) {
		c->b->stats.tls_failed++;
		EB_LOG_NOTICE("bridge", "tls-failed: peer=%s reason=%s",
		    c->peer, s->tls_err);
		eb__bconn_close(c, "tls");
		return;
	}
	eb__bconn_close(c, status == UV_EOF ? "eof" : uv_err_name(status));
}

static void
conn_closed_cb(eb__stream *s)
{
	eb__bconn *c = s->data;
	eb_bridge *b = c->b;

	eb__frame_dec_free(&c->dec);
	eb__buf_free(&c->out);
	eb__hmap_free(&c->cmap); /* empty since close */
	eb__hmap_free(&c->rmap);
	free(c);
	eb__bridge_conn_gone(b);
}

/* Closing: c leaves the flow-control lists and counts. */
static void
conn_flow_close(eb__bconn *c)
{
	if (c->blocked) {
		conn_unblock(c); /* closing: not back on b->paused */
	}
	if (c->parked) {
		c->b->stats.consumers_parked--;
		c->parked = 0;
	}
}

void
eb__bconn_close(eb__bconn *c, const char *reason)
{
	eb_bridge *b = c->b;
	eb__list  *it;
	eb__list  *tmp;

	if (c->closing) {
		return;
	}
	/* What was gathered goes out first (an err frame before an auth
	 * close, frames before a hook's close); a failure changes nothing. */
	conn_unlist_out(c);
	if (eb__buf_avail(&c->out) > 0 && !c->stream.closing) {
		(void) c->stream.ops->write(&c->stream, &c->out);
	}
	c->closing = 1;
	eb__list_remove(&c->link);
	conn_unfresh(c);
	/* The input buffer goes now, not when the handle has closed: the
	 * budget closes connections to free memory at once, many per loop
	 * turn. While a frame borrowed from it is handled, conn_process
	 * frees it afterwards. */
	if (!c->processing) {
		eb__frame_dec_free(&c->dec);
	}
	conn_in_account(c);
	conn_flow_close(c);
	if (c->paused) {
		c->paused = 0;
		eb__list_remove(&c->pause_link);
	}
	b->stats.conns_open--;
	/* Consumers go first so that nothing more is delivered. */
	EB_LIST_FOREACH (it, tmp, &c->consumers) {
		consumer_free(c, EB_CONTAINER_OF(it, bconn_consumer, link));
	}
	EB_LIST_FOREACH (it, tmp, &c->replies) {
		reply_free(c, EB_CONTAINER_OF(it, bconn_reply, link));
	}
	EB_LIST_FOREACH (it, tmp, &c->reqs) {
		bconn_req *r = EB_CONTAINER_OF(it, bconn_req, link);

		eb__list_remove(&r->link); /* req_free's remove is a no-op */
		r->c = NULL;
	}
	b->stats.requests_in_flight -= c->n_reqs;
	c->n_reqs = 0;
	(void) conn_hook(c, EB_BRIDGE_EV_SOCKET_CLOSED, NULL);
	{
		eb__obs_it it2;

		EB__OBS_EACH(&b->closed_obs, it2)
		{
			((eb__bridge_conn_closed_cb) it2.fn)(b, c->id, it2.arg);
		}
	}
	EB_LOG_RL_INFO("bridge",
	    "conn-closed: peer=%s id=%llu reason=%s frames_in=%llu "
	    "frames_out=%llu",
	    c->peer, (unsigned long long) c->id, reason,
	    (unsigned long long) c->frames_in,
	    (unsigned long long) c->frames_out);
	c->stream.ops->close(&c->stream);
}

/* ---- accept, sweep, info ---- */

static void
peer_name(uv_tcp_t *tcp, char *out, size_t n)
{
	struct sockaddr_storage ss;
	int                     len = (int) sizeof(ss);
	char                    host[INET6_ADDRSTRLEN] = "?";
	int                     port = 0;

	if (uv_tcp_getpeername(tcp, (struct sockaddr *) &ss, &len) == 0) {
		if (ss.ss_family == AF_INET) {
			const struct sockaddr_in *a = (void *) &ss;

			(void) uv_ip4_name(a, host, sizeof(host));
			port = ntohs(a->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			const struct sockaddr_in6 *a = (void *) &ss;

			(void) uv_ip6_name(a, host, sizeof(host));
			port = ntohs(a->sin6_port);
		}
	}
	/* host:port, [v6]:port */
	(void) snprintf(out, n, strchr(host, ':') != NULL ? "[%s]:%d" : "%s:%d",
	    host, port);
}

static void
refused_closed_cb(uv_handle_t *h)
{
	eb_bridge *b = h->data;

	free(h);
	eb__bridge_conn_gone(b);
}

static const eb__stream_cbs conn_cbs = {
	.read_cb = conn_read_cb,
	.error_cb = conn_error_cb,
	.closed_cb = conn_closed_cb,
	.written_cb = conn_written_cb,
};

static void
accept_refused(eb_bridge *b, uv_stream_t *listener)
{
	uv_tcp_t *t = eb__malloc(sizeof(*t));

	(void) uv_tcp_init(b->loop, t);
	t->data = b;
	b->live++;
	(void) uv_accept(listener, (uv_stream_t *) t);
	b->stats.conns_refused++;
	EB_LOG_RL_NOTICE("bridge", "conn-refused: open=%llu max=%u",
	    (unsigned long long) b->stats.conns_open, b->opts.max_connections);
	uv_close((uv_handle_t *) t, refused_closed_cb);
}

/*
 * Full, and some connection has not completed a single frame (slowloris, or
 * a client that only connects): the oldest of them makes room, so that
 * idle sockets cannot lock everyone else out. Connections that have spoken
 * are never evicted. 1 when a slot is free now.
 */
static int
conn_make_room(eb_bridge *b)
{
	eb__list  *old = eb__list_first(&b->fresh);
	eb__bconn *c;

	if (old == NULL) {
		return 0;
	}
	c = EB_CONTAINER_OF(old, eb__bconn, fresh_link);
	b->stats.conns_evicted++;
	EB_LOG_RL_NOTICE("bridge",
	    "conn-evicted: peer=%s age_ms=%llu open=%llu max=%u", c->peer,
	    (unsigned long long) (eb__mono_ms() - c->started_ms),
	    (unsigned long long) b->stats.conns_open, b->opts.max_connections);
	eb__bconn_close(c, "evicted-at-limit");
	/* A SOCKET_CLOSED hook may have opened more. */
	return b->stats.conns_open < b->opts.max_connections;
}

void
eb__bconn_accept(eb_bridge *b)
{
	eb__bconn_accept_from(b, (uv_stream_t *) &b->listener, NULL, NULL);
}

void
eb__bconn_accept_from(
    eb_bridge *b, uv_stream_t *listener, eb__stream_layer_fn layer, void *arg)
{
	eb__bconn *c;
	int        rv;

	if (b->stats.conns_open >= b->opts.max_connections &&
	    !conn_make_room(b)) {
		accept_refused(b, listener);
		return;
	}
	c = eb__calloc(1, sizeof(*c));
	c->b = b;
	c->id = ++b->next_conn_id;
	eb__list_init(&c->link);
	eb__list_insert_tail(&b->fresh, &c->fresh_link);
	c->fresh = 1;
	eb__list_init(&c->pause_link);
	eb__list_init(&c->out_link);
	eb__buf_init(&c->out);
	eb__list_init(&c->consumers);
	eb__list_init(&c->replies);
	eb__list_init(&c->reqs);
	c->log_left = BCONN_LOG_BUDGET;
	eb__frame_dec_init(&c->dec, b->opts.max_frame_bytes);
	c->started_ms = eb__mono_ms();
	c->active_ms = c->started_ms;
	(void) uv_tcp_init(b->loop, &c->stream.tcp);
	b->live++;
	b->stats.conns_open++;
	b->stats.conns_total++;
	eb__list_insert_tail(&b->conns, &c->link);
	rv = eb__stream_init(&c->stream, b->tls, &conn_cbs, c);
	if (rv == 0) {
		rv = uv_accept(listener, (uv_stream_t *) &c->stream.tcp);
	}
	if (rv == 0) {
		(void) uv_tcp_nodelay(&c->stream.tcp, 1);
		peer_name(&c->stream.tcp, c->peer, sizeof(c->peer));
		if (layer != NULL) {
			rv = layer(&c->stream, arg);
		}
	}
	if (rv == 0) {
		rv = c->stream.ops->start(&c->stream);
	}
	if (rv != 0) {
		(void) snprintf(c->peer, sizeof(c->peer), "?");
		eb__bconn_close(c, eb_err_name(rv));
		return;
	}
	EB_LOG_DEBUG("bridge", "conn-open: peer=%s id=%llu tls=%d", c->peer,
	    (unsigned long long) c->id, b->tls != NULL);
	(void) conn_hook(c, EB_BRIDGE_EV_SOCKET_CREATED, NULL);
}

eb__bconn *
eb__bconn_open_detached(eb_bridge *b)
{
	eb__bconn *c = eb__calloc(1, sizeof(*c));

	c->b = b;
	c->id = ++b->next_conn_id;
	eb__list_init(&c->fresh_link);
	eb__list_init(&c->pause_link);
	eb__list_init(&c->out_link);
	eb__buf_init(&c->out);
	eb__list_init(&c->consumers);
	eb__list_init(&c->replies);
	eb__list_init(&c->reqs);
	c->log_left = BCONN_LOG_BUDGET;
	eb__frame_dec_init(&c->dec, b->opts.max_frame_bytes);
	c->started_ms = eb__mono_ms();
	c->active_ms = c->started_ms;
	(void) snprintf(c->peer, sizeof(c->peer), "detached:%llu",
	    (unsigned long long) c->id);
	(void) uv_tcp_init(b->loop, &c->stream.tcp);
	b->live++;
	b->stats.conns_open++;
	b->stats.conns_total++;
	eb__list_insert_tail(&b->conns, &c->link);
	(void) eb__stream_init(&c->stream, NULL, &conn_cbs, c);
	eb__stream_make_null(&c->stream);
	return c;
}

void
eb__bconn_feed(eb__bconn *c, const char *data, size_t n)
{
	if (!c->closing && n > 0) {
		conn_read_cb(&c->stream, data, n);
	}
}

eb__stream *
eb__bconn_stream(eb__bconn *c)
{
	return &c->stream;
}

void
eb__bconn_layer_hold(eb__bconn *c, size_t bytes, uint64_t since_ms)
{
	if (c->closing) {
		return;
	}
	c->layer_started_ms = since_ms;
	if (bytes == c->layer_held) {
		return;
	}
	c->layer_held = bytes;
	conn_in_account(c);
	if (!c->processing) {
		bridge_input_budget(c->b);
	}
}

int
eb__bconn_out_check(eb__bconn *c, size_t pending)
{
	eb_bridge *b = c->b;
	size_t     queued = eb__stream_backlog(&c->stream) + pending;

	if (c->closing || queued <= b->opts.write_queue_max_bytes) {
		return 0;
	}
	b->stats.conns_closed_slow++;
	EB_LOG_WARN("bridge",
	    "slow-consumer-closed: peer=%s queued=%zu max=%zu", c->peer, queued,
	    b->opts.write_queue_max_bytes);
	eb__bconn_close(c, "slow-consumer");
	return 1;
}

void
eb__bconn_sweep(eb__bconn *c, uint64_t now)
{
	eb_bridge *b = c->b;
	eb__list  *it;
	eb__list  *tmp;

	if (c->doomed != NULL) {
		return;
	}
	if (b->opts.idle_timeout_ms > 0 &&
	    now - c->active_ms >= b->opts.idle_timeout_ms) {
		b->stats.conns_closed_idle++;
		c->doomed = "idle";
		return;
	}
	if (b->tls != NULL && !c->stream.handshake_done &&
	    b->opts.tls_handshake_timeout_ms > 0 &&
	    now - c->started_ms >= b->opts.tls_handshake_timeout_ms) {
		b->stats.tls_failed++;
		b->stats.conns_closed_timeout++;
		c->doomed = "tls-handshake-timeout";
		return;
	}
	/* Deadlines from a start, never reset by a byte: a client that
	 * trickles bytes cannot hold a connection (slowloris). */
	if (c->fresh && b->opts.first_frame_timeout_ms > 0 &&
	    now - c->started_ms >= b->opts.first_frame_timeout_ms) {
		b->stats.conns_closed_timeout++;
		c->doomed = "first-frame-timeout";
		return;
	}
	if (c->parked && now - c->parked_ms >= BCONN_PARK_STALL_MS) {
		b->stats.conns_closed_slow++;
		EB_LOG_WARN("bridge",
		    "slow-consumer-closed: peer=%s queued=%zu stalled_ms=%llu",
		    c->peer, conn_out_backlog(c),
		    (unsigned long long) (now - c->parked_ms));
		c->doomed = "slow-consumer";
		return;
	}
	if (c->frame_started_ms != 0 && b->opts.frame_timeout_ms > 0 &&
	    now - c->frame_started_ms >= b->opts.frame_timeout_ms) {
		b->stats.conns_closed_timeout++;
		c->doomed = "frame-timeout";
		return;
	}
	if (c->layer_started_ms != 0 && b->opts.frame_timeout_ms > 0 &&
	    now - c->layer_started_ms >= b->opts.frame_timeout_ms) {
		b->stats.conns_closed_timeout++;
		c->doomed = "message-timeout";
		return;
	}
	/* Oldest first and one TTL for all: stop at the first live entry. */
	EB_LIST_FOREACH (it, tmp, &c->replies) {
		bconn_reply *r = EB_CONTAINER_OF(it, bconn_reply, link);

		if (now < r->expires_ms) {
			break;
		}
		reply_free(c, r);
	}
}

const char *
eb__bconn_doomed(const eb__bconn *c)
{
	return c->doomed;
}

void
eb__bconn_info(const eb__bconn *c, uint64_t now, eb_bridge_conn_info *info)
{
	memset(info, 0, sizeof(*info));
	info->id = c->id;
	info->peer = c->peer;
	info->tls = c->stream.tls != NULL;
	info->age_ms = now - c->started_ms;
	info->frames_in = c->frames_in;
	info->frames_out = c->frames_out;
	info->queued_bytes =
	    eb__stream_backlog(&c->stream) + eb__buf_avail(&c->out);
	info->consumers = c->n_consumers;
	info->pending_replies = c->n_replies;
}
