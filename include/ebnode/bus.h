/*
 * The event bus: Vert.x semantics (addresses, consumers, send, publish,
 * request/reply), local, and clustered through the remote seam
 * (eventbus/remote.c) when the node joins a cluster.
 *
 * Threads: loop thread only. Every callback runs on the loop, never from
 * inside the call that caused it (sends to local consumers are delivered on a
 * later loop turn).
 *
 * Ownership: bodies and headers passed in are borrowed for the call (the bus
 * copies or holds what it keeps). eb_bus_msg is refcounted (fan-out): a handler
 * borrows the message for the duration of the call and calls
 * eb_bus_msg_hold() to keep it (e.g. to reply later), eb_bus_msg_release()
 * when done.
 *
 * Headers are a JSON object whose values are all strings; NULL means none.
 * Bodies are any JSON value (NULL: null body). Messages keep the body as its
 * encoded bytes and parse lazily, so forwarding never re-parses.
 */
#ifndef EBNODE_BUS_H
#define EBNODE_BUS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include <ebnode/api.h>
#include <ebnode/err.h>

typedef struct eb_bus          eb_bus;          /* opaque */
typedef struct eb_bus_msg      eb_bus_msg;      /* opaque, refcounted */
typedef struct eb_bus_consumer eb_bus_consumer; /* opaque */

/* Failure types, as on the bridge wire (failureType). */
typedef enum eb_bus_failure_type {
	EB_BUS_TIMEOUT = 0,
	EB_BUS_NO_HANDLERS = 1,
	EB_BUS_RECIPIENT_FAILURE = 2,
	EB_BUS_ERROR = 3
} eb_bus_failure_type;

/* "TIMEOUT", "NO_HANDLERS", "RECIPIENT_FAILURE", "ERROR". */
EB_API const char *eb_bus_failure_name(eb_bus_failure_type t);

/*
 * A failed request. message is the exact Vert.x text:
 *   NO_HANDLERS: "No handlers for address <address>", code -1
 *   TIMEOUT: "Timed out after waiting <ms>(ms) for a reply. address:
 *            <reply address>, repliedAddress: <address>", code -1
 *   RECIPIENT_FAILURE: the consumer's code and message
 * Borrowed for the duration of the callback.
 */
typedef struct eb_bus_failure {
	eb_bus_failure_type type;
	int                 code;
	const char         *message;
} eb_bus_failure;

typedef struct eb_bus_opts {
	const char *node_id;            /* for reply addresses; copied */
	uint64_t    request_timeout_ms; /* default 30000 */
	uint32_t    consumer_queue_max; /* per consumer, default 10000 */
	/* How long a confirmed send/publish waits for a peer's receipt
	 * (default 5000 ms). */
	uint64_t receipt_timeout_ms;
	/* Requests this bus made (eb_bus_request, reply-with-reply) that may
	 * await their outcome at once, node-wide, default 131072. Beyond it a
	 * request fails at once: status EB_EFULL, type ERROR, code -1, message
	 * "too_many_requests: <n> requests already pending on this node"
	 * (counted in eb_bus_totals.requests_refused). */
	uint32_t max_pending_requests;
	/* Request timeouts (the default and every per-request one) are
	 * clamped to this, default 300000 ms. */
	uint64_t max_request_timeout_ms;
	/*
	 * Deduplication of keyed, stamped deliveries (docs/INGRESS.md "Safe
	 * retries"): a message stamped with an epoch (eb_bus_send_opts.epoch),
	 * delivered with a receipt and carrying the header
	 * EB_BUS_DEDUP_HEADER (at most EB_BUS_DEDUP_KEY_MAX bytes) is
	 * remembered by (address, key) once handed to a consumer here, with
	 * its stamp (the epoch and the EB_BUS_DEDUP_SEQ_HEADER header); a
	 * second arrival within dedup_window_ms is not delivered and its
	 * receipt is EB_EDUPLICATE with the first one's stamp. At most
	 * dedup_max_keys keys (the oldest are evicted first). Defaults
	 * 600000 ms and 65536; dedup_max_keys 0 turns it off.
	 */
	uint64_t dedup_window_ms;
	uint32_t dedup_max_keys;
} eb_bus_opts;

/* The header that names a message for deduplication (its idempotency
 * key), its bound, and the header that holds the stamp's sequence. */
#define EB_BUS_DEDUP_HEADER     "ebnode.msgid"
#define EB_BUS_DEDUP_KEY_MAX    128
#define EB_BUS_DEDUP_SEQ_HEADER "ebnode.seq"

typedef struct eb_bus_send_opts {
	uint64_t timeout_ms; /* request only; 0: the bus default */
	int      local_only; /* deliver only to this node's consumers */
	/*
	 * Fencing stamp (DESIGN rule 6), 0: none. A message stamped with an
	 * epoch lower than the highest one its receiving bus has seen (see
	 * eb_bus_fence_raise) is rejected there: never handed to a consumer,
	 * counted (eb_bus_totals.fenced), a request fails with EB_EFENCED, a
	 * confirmed send's receipt fails with EB_EFENCED. Travels in the link
	 * frame, not in the headers.
	 */
	uint64_t epoch;
	uint64_t receipt_timeout_ms; /* confirmed only; 0: the bus default */
	/*
	 * Non-zero: the message keeps the headers object by reference
	 * (json_incref) instead of a copy. The caller promises never to
	 * modify it afterwards (the ingress passes one shared object for
	 * every forward; the link encoder then reuses its encoding).
	 */
	int share_headers;
	/*
	 * Confirmed send only: the node id of the one node to deliver to
	 * (this bus's own id: a local consumer that is not local-only), NULL:
	 * any handler (round robin). Nobody handles the address there:
	 * EB_ENOHANDLERS.
	 * Borrowed for the call.
	 */
	const char *node;
	/*
	 * Request only: when it times out, in the loop's clock (uv_now's
	 * base, uv_hrtime in ms), instead of timeout_ms from now; 0: none.
	 * For a caller that has just read the clock (the ingress gateway's
	 * receipt stamp): the bus then reads it no more for this request.
	 * Clamped like a timeout, to max_request_timeout_ms from the loop's
	 * time; one already past times out on the next turn. A timeout's
	 * failure text names timeout_ms when it is set.
	 */
	uint64_t deadline_ms;
} eb_bus_send_opts;

EB_API void eb_bus_opts_init(eb_bus_opts *opts);
EB_API void eb_bus_send_opts_init(eb_bus_send_opts *opts);

typedef void (*eb_bus_close_cb)(eb_bus *bus, void *arg);
/*
 * A message for a consumer. msg is borrowed for the call; hold it to keep
 * it. If eb_bus_msg_reply_address(msg) is non-NULL the sender awaits a
 * reply: answer with eb_bus_msg_reply() or eb_bus_msg_fail(), now or later.
 */
typedef void (*eb_bus_handler_fn)(
    eb_bus_consumer *c, eb_bus_msg *msg, void *arg);
/*
 * The outcome of a request: status 0 and reply (borrowed), or status
 * EB_ERECIPIENT/EB_ETIMEOUT/EB_ENOHANDLERS/... and failure (borrowed).
 * Exactly once per successful eb_bus_request() / eb_bus_msg_reply() call
 * that passed a callback, also when the bus closes (EB_ECANCELED, type ERROR).
 */
typedef void (*eb_bus_reply_cb)(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg);

/* No I/O and no callbacks until used. */
EB_API int eb_bus_new(uv_loop_t *loop, const eb_bus_opts *opts, eb_bus **busp);
/* Exactly once. Pending requests fail with EB_ECANCELED; cb runs on a later
 * tick and the bus is freed after it returns. */
EB_API void eb_bus_close(eb_bus *bus, eb_bus_close_cb cb, void *arg);

/*
 * Registers a consumer; effective synchronously for local senders (a send
 * right after this returns reaches it). Clustered: the interest propagates
 * to peers unless local_only.
 */
EB_API int eb_bus_consumer_new(eb_bus *bus, const char *address, int local_only,
    eb_bus_handler_fn fn, void *arg, eb_bus_consumer **cp);
/* Unregisters synchronously; queued messages for it are answered
 * NO_HANDLERS (requests) or dropped and counted (sends/publishes). */
EB_API void        eb_bus_consumer_close(eb_bus_consumer *c);
EB_API const char *eb_bus_consumer_address(const eb_bus_consumer *c);
/*
 * Called by a handler, during its call, when it could not take the message
 * it was given (e.g. a bridge connection that is closing or whose output is
 * over its bound): the delivery counts as failed (status, a negative
 * EB_E or UV_E code) for a confirmed send's receipt, and as dropped. Outside
 * a handler call: no effect.
 */
EB_API void eb_bus_consumer_undelivered(eb_bus_consumer *c, int status);

/* Point-to-point, round robin across the handlers of the cluster. Returns
 * 0 or EB_ENOHANDLERS when nobody (reachable) handles address. Also:
 * EB_EFULL when the chosen local consumer's queue is full, EB_ELINKDOWN when
 * the chosen peer's link failed under the send (both dropped and counted),
 * UV_EINVAL (bad address or headers), EB_ECLOSED. */
EB_API int eb_bus_send(eb_bus *bus, const char *address, const json_t *body,
    const json_t *headers, const eb_bus_send_opts *opts);
/* Every handler; 0 even with no handlers (Vert.x). */
EB_API int eb_bus_publish(eb_bus *bus, const char *address, const json_t *body,
    const json_t *headers, const eb_bus_send_opts *opts);
/*
 * Delivery receipts. The outcome of a confirmed send/publish: status 0 when
 * every target confirmed that the message was handed to a consumer (its
 * handler was called with it; for a bridge consumer that means queued on its
 * socket), else the first failure:
 *   EB_ENOHANDLERS  nobody handles the address (here or at the receiver, or
 *                   the consumer closed before the message reached it)
 *   EB_EFULL        the consumer's queue was full
 *   EB_ELINKDOWN    the link to the receiving node dropped before its
 *                   receipt arrived (the node may have delivered it)
 *   EB_ETIMEOUT     no receipt within receipt_timeout_ms (idem)
 *   EB_EFENCED      rejected by the fence (eb_bus_fence_raise)
 *   EB_ECANCELED    the bus closed first
 *   EB_EDUPLICATE   no target delivered it because every target had
 *                   already delivered a message with the same key
 *                   (eb_bus_opts.dedup_window_ms): not a failure;
 *                   orig_epoch and orig_seq name the first delivery
 *   EB_EKEYBUSY     a message with the same key was still on its way to a
 *                   consumer there (its outcome unknown yet): retry later
 * targets: local consumers plus remote nodes the message went to (a remote
 * node confirms for all of its consumers at once); delivered: how many of
 * them confirmed. reason: a text for the failure (NULL when status is 0).
 * All borrowed for the callback.
 */
typedef struct eb_bus_receipt {
	uint32_t    targets;
	uint32_t    delivered;
	const char *reason;
	/* Targets that had delivered the same key already (not counted in
	 * delivered), and the stamp of the first such delivery (0: none). */
	uint32_t duplicates;
	uint64_t orig_epoch;
	uint64_t orig_seq;
} eb_bus_receipt;
typedef void (*eb_bus_receipt_cb)(
    eb_bus *bus, int status, const eb_bus_receipt *receipt, void *arg);
/*
 * eb_bus_send/eb_bus_publish with a delivery receipt: cb exactly once, never
 * from inside the call, also when nobody handles address (EB_ENOHANDLERS) and
 * when the bus closes (EB_ECANCELED). Non-zero return (UV_EINVAL, EB_ECLOSED):
 * no callback.
 */
EB_API int eb_bus_send_confirmed(eb_bus *bus, const char *address,
    const json_t *body, const json_t *headers, const eb_bus_send_opts *opts,
    eb_bus_receipt_cb cb, void *arg);
EB_API int eb_bus_publish_confirmed(eb_bus *bus, const char *address,
    const json_t *body, const json_t *headers, const eb_bus_send_opts *opts,
    eb_bus_receipt_cb cb, void *arg);

/*
 * Fencing (DESIGN rule 6): raises the highest leader epoch this bus has seen
 * to epoch (never lowers it). The bus also raises it from every stamped
 * message it accepts. eb_bus_fence() returns the current value (0: none).
 */
EB_API void     eb_bus_fence_raise(eb_bus *bus, uint64_t epoch);
EB_API uint64_t eb_bus_fence(const eb_bus *bus);

/* A send that expects a reply: cb exactly once (reply, failure, timeout).
 * Returns 0 also when nobody handles address (cb reports NO_HANDLERS on a
 * later turn); non-zero (UV_EINVAL, EB_ECLOSED) means no callback. */
EB_API int eb_bus_request(eb_bus *bus, const char *address, const json_t *body,
    const json_t *headers, const eb_bus_send_opts *opts, eb_bus_reply_cb cb,
    void *arg);

/*
 * The same with the body given as its encoding, used verbatim and never
 * re-encoded (the bridge passes a client's body through as the bytes that
 * arrived; the ingress forwards them): body_len bytes of one valid JSON
 * value without insignificant whitespace; the caller guarantees it. Numbers
 * and string escapes stay as written (0.1, 1e-7, "\u00e9", integers beyond
 * 64 bits), so eb_bus_msg_body() may read such a body as null (jansson
 * cannot hold it) while the bytes travel intact. NULL or "null": a null
 * body.
 */
EB_API int eb_bus_send_raw(eb_bus *bus, const char *address, const char *body,
    size_t body_len, const json_t *headers, const eb_bus_send_opts *opts);
EB_API int eb_bus_publish_raw(eb_bus *bus, const char *address,
    const char *body, size_t body_len, const json_t *headers,
    const eb_bus_send_opts *opts);
EB_API int eb_bus_send_confirmed_raw(eb_bus *bus, const char *address,
    const char *body, size_t body_len, const json_t *headers,
    const eb_bus_send_opts *opts, eb_bus_receipt_cb cb, void *arg);
/*
 * The confirmed sends with the headers also given as their encoding:
 * headers_len bytes of a compact JSON object whose values are strings and
 * whose keys are distinct, e.g. {"ebnode.epoch":"3"}. It is checked (a scan,
 * nothing built: UV_EINVAL when it is not such an object), kept as these
 * bytes and written to links as they are; eb_bus_msg_headers() parses it
 * on first use. The ingress router stamps every routed message this way.
 */
EB_API int eb_bus_send_confirmed_enc(eb_bus *bus, const char *address,
    const char *body, size_t body_len, const char *headers_json,
    size_t headers_len, const eb_bus_send_opts *opts, eb_bus_receipt_cb cb,
    void *arg);
EB_API int eb_bus_publish_confirmed_enc(eb_bus *bus, const char *address,
    const char *body, size_t body_len, const char *headers_json,
    size_t headers_len, const eb_bus_send_opts *opts, eb_bus_receipt_cb cb,
    void *arg);
EB_API int eb_bus_publish_confirmed_raw(eb_bus *bus, const char *address,
    const char *body, size_t body_len, const json_t *headers,
    const eb_bus_send_opts *opts, eb_bus_receipt_cb cb, void *arg);
EB_API int eb_bus_request_raw(eb_bus *bus, const char *address,
    const char *body, size_t body_len, const json_t *headers,
    const eb_bus_send_opts *opts, eb_bus_reply_cb cb, void *arg);

/* Message accessors; results borrowed from msg. */
EB_API const char   *eb_bus_msg_address(const eb_bus_msg *msg);
EB_API const char   *eb_bus_msg_reply_address(const eb_bus_msg *msg);
EB_API int           eb_bus_msg_is_send(const eb_bus_msg *msg);
EB_API const json_t *eb_bus_msg_headers(const eb_bus_msg *msg); /* object */
/* The headers' JSON encoding when msg keeps them as bytes (sent with
 * eb_bus_send_confirmed_enc, or received so from another node) that are
 * exactly the compact form the object encodes to (printable ASCII, no
 * escapes), and *len its length; else NULL (eb_bus_msg_headers() always
 * works). Lets a writer copy them instead of encoding the object. */
EB_API const char *eb_bus_msg_headers_enc(const eb_bus_msg *msg, size_t *len);
/* The body parsed (lazily); NULL for a null body. */
EB_API const json_t *eb_bus_msg_body(eb_bus_msg *msg);
/* The body as its compact JSON encoding ("null" for none). */
EB_API const char *eb_bus_msg_body_bytes(const eb_bus_msg *msg, size_t *len);
EB_API eb_bus_msg *eb_bus_msg_hold(eb_bus_msg *msg);
EB_API void        eb_bus_msg_release(eb_bus_msg *msg);

/*
 * Answers a message whose sender awaits a reply. With cb non-NULL the reply
 * itself expects a reply (reply-to-reply). Returns EB_EPROTO when msg
 * expects no reply or was already answered.
 */
EB_API int eb_bus_msg_reply(eb_bus_msg *msg, const json_t *body,
    const json_t *headers, const eb_bus_send_opts *opts, eb_bus_reply_cb cb,
    void *arg);
/* eb_bus_msg_reply with the body as its encoding (see eb_bus_send_raw). */
EB_API int eb_bus_msg_reply_raw(eb_bus_msg *msg, const char *body,
    size_t body_len, const json_t *headers, const eb_bus_send_opts *opts,
    eb_bus_reply_cb cb, void *arg);
/*
 * Answers msg with another message's body and headers, as a reply that
 * expects no answer (a relay passing on the answer it got). When msg's
 * requester is on this node and reply expects no answer either, reply
 * itself goes to the requester (held, not copied); otherwise a copy does.
 * Returns as eb_bus_msg_reply; UV_EINVAL for a NULL reply.
 */
EB_API int eb_bus_msg_reply_with(eb_bus_msg *msg, eb_bus_msg *reply);
/*
 * msg as a reply that expects no answer: msg itself, held, when it is one
 * already (a send without a reply address); else a new message with its
 * address, body and headers and no reply address. The caller releases the
 * result. For a module that passes on an answer it got to a requester of
 * its own (what eb_bus_msg_reply_with does for a message's requester).
 */
EB_API eb_bus_msg *eb_bus_msg_plain(eb_bus_msg *msg);
/* Fails the request with RECIPIENT_FAILURE (code, message). */
EB_API int eb_bus_msg_fail(eb_bus_msg *msg, int code, const char *message);

/*
 * Statistics (admin GET /subscriptions, metrics). Counters are per address
 * record; a record exists while the address has local consumers or remote
 * interest, and its counters go with it.
 *   sent/published: originated on this node; received: handler invocations
 *   here; replied: replies by handlers here; failed: fail() by handlers here
 *   plus requests the bus failed (no handlers, timeout, overflow); dropped:
 *   queue overflow, a consumer closed with messages queued, late replies.
 */
typedef struct eb_bus_addr_stats {
	const char *address;             /* borrowed for the callback */
	uint32_t    handlers;            /* local consumers */
	uint32_t    local_only_handlers; /* of which local-only */
	uint32_t    remote_handlers;     /* on other nodes (reachable) */
	uint32_t    remote_nodes;        /* nodes with handlers */
	uint64_t    sent, published, received, replied, failed, dropped;
} eb_bus_addr_stats;

typedef struct eb_bus_totals {
	uint32_t addresses;        /* address records */
	uint32_t pending_requests; /* awaiting a reply */
	uint64_t no_handlers;      /* sends/requests that found nobody */
	uint64_t sent, published, received, replied, failed, dropped;
	uint64_t fenced;           /* stamped messages the fence rejected */
	uint32_t pending_receipts; /* confirmed sends awaiting their outcome */
	uint64_t receipt_failures; /* confirmed sends that failed */
	uint64_t requests_refused; /* at eb_bus_opts.max_pending_requests */
} eb_bus_totals;

typedef void (*eb_bus_stats_fn)(const eb_bus_addr_stats *s, void *arg);
/* Calls fn once per address record, in no particular order. fn must not
 * change the bus (no consumer_new/close, no send). */
EB_API void eb_bus_stats_foreach(eb_bus *bus, eb_bus_stats_fn fn, void *arg);
/* Bus-wide counters (they survive address records). */
EB_API void eb_bus_stats_totals(eb_bus *bus, eb_bus_totals *out);
/*
 * Clustering: routes over the node links of links (include/ebnode/link.h):
 * interest propagates to every linked peer, sends pick a node weighted by
 * its handler count, publishes reach every interested node, replies go back
 * to the requester's node. A request in flight to a peer whose link drops
 * fails at once with status EB_ELINKDOWN, type ERROR, code -1. Call once,
 * before eb_link_mgr_start(). Either object may be closed first; the other
 * then runs standalone. 0, UV_EBUSY (already attached) or EB_ECLOSED.
 */
typedef struct eb_link_mgr eb_link_mgr;
EB_API int eb_bus_cluster_attach(eb_bus *bus, eb_link_mgr *links);

/*
 * Handlers a sender on this node can reach for address: every local
 * consumer plus the handlers advertised by linked peers.
 */
EB_API uint32_t eb_bus_handler_count(eb_bus *bus, const char *address);
/*
 * The nodes a sender on this node can reach handlers of address on: up to
 * max node ids into ids (this node's own id when it has a consumer that is
 * not local-only, then every linked peer with interest: the same set every
 * linked node sees), borrowed until the bus changes. Returns how many
 * there are (may exceed max).
 */
EB_API size_t eb_bus_handler_nodes(
    eb_bus *bus, const char *address, const char **ids, size_t max);

/* Deduplication counters (eb_bus_opts.dedup_window_ms). */
typedef struct eb_bus_dedup_stats {
	uint32_t keys;       /* keys remembered now */
	uint64_t duplicates; /* arrivals not delivered again */
	uint64_t evicted;    /* keys evicted at dedup_max_keys */
	uint64_t busy;       /* arrivals refused while the first was on its
	                      * way (EB_EKEYBUSY) */
} eb_bus_dedup_stats;
EB_API void eb_bus_dedup_stats_get(eb_bus *bus, eb_bus_dedup_stats *out);
/*
 * Observers of reachable handler counts, any number of them: each fn runs
 * whenever the count of an address changes (local registration, peer
 * interest, link loss), in the order they were added. It may run from
 * inside eb_bus_consumer_new/close: it must not call back into the bus;
 * defer any work (the ingress gateway arms a timer). An observer may remove
 * itself (or another) from its callback. Not called once the bus closes.
 */
typedef void (*eb_bus_watch_fn)(
    eb_bus *bus, const char *address, uint32_t count, void *arg);
/* Adds (fn, arg); the same pair added twice is called twice. Adding
 * after eb_bus_close() is a programming error (it aborts). */
EB_API void eb_bus_watch_add(eb_bus *bus, eb_bus_watch_fn fn, void *arg);
/* Removes one (fn, arg) pair: 0, or UV_ENOENT when it was not added. */
EB_API int eb_bus_watch_remove(eb_bus *bus, eb_bus_watch_fn fn, void *arg);

/*
 * Flow control. An address is busy while one of its local consumers has
 * more than half of consumer_queue_max queued (it stops being busy at a
 * quarter), or while a component holding messages for it says so
 * (eb_bus_pressure_set: the ingress gateway for the ingress address).
 * Producers that can wait (the bridge's connections) stop taking input
 * for a busy address and resume when its observer says it is not busy any
 * more; the bus itself never refuses a message for it (the queue bound
 * still does). A publish is held back while any consumer is busy.
 */
EB_API int eb_bus_address_busy(eb_bus *bus, const char *address);
/* A component holds messages for address (busy != 0) or not any more. */
EB_API void eb_bus_pressure_set(eb_bus *bus, const char *address, int busy);
/* Observers of busy changes; same rules as eb_bus_watch_fn (may run from
 * inside a send or a delivery turn: must not call back into the bus). */
typedef void (*eb_bus_pressure_fn)(
    eb_bus *bus, const char *address, int busy, void *arg);
EB_API void eb_bus_pressure_watch(
    eb_bus *bus, eb_bus_pressure_fn fn, void *arg);
EB_API int eb_bus_pressure_unwatch(
    eb_bus *bus, eb_bus_pressure_fn fn, void *arg);
/*
 * Parks c's deliveries: they wait in its queue (which counts for the
 * watermarks and the bound) until eb_bus_consumer_resume, in order. For a
 * handler that hands messages on to something slower (a bridge client's
 * socket). Either may be called from the handler itself.
 */
EB_API void eb_bus_consumer_pause(eb_bus_consumer *c);
EB_API void eb_bus_consumer_resume(eb_bus_consumer *c);
/* Transitions of addresses to busy since the bus was made. */
EB_API uint64_t eb_bus_busy_episodes(const eb_bus *bus);

/* This bus's node id (opts.node_id, or a generated uuid). */
EB_API const char *eb_bus_node_id(const eb_bus *bus);

#endif
