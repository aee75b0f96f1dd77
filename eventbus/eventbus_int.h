/*
 * Event bus internals, shared by the files of eventbus/ (bus.c addr.c
 * consumer.c msg.c request.c remote.c). Not installed.
 *
 * Owns: the address table (eb__bus_addr, one per address with local
 * consumers or remote interest), the consumers and their bounded delivery
 * queues, the pending requests (by reply address, with one deadline list and
 * one timer), and the per-address counters.
 *
 * Invariants:
 * - Every queued delivery and every resolved request is on bus->turn.fifo
 *   in arrival order; the idle handle is active while bus->turn.fifo or
 *   bus->rcpt.done is non-empty (or the bus is closing). Handlers and
 *   reply callbacks run only from that idle handle, in bus->turn.fifo
 *   order, never from inside an API call.
 * - A pending request is in bus->req.map (by reply address), on
 *   bus->req.deadlines (a plain list, in no order) and on either
 *   bus->req.ordered (deadlines in list order) or bus->req.heap (the
 *   deadline min-heap), which together are behind the one timer, until it
 *   is resolved; then it is on bus->req.resolved and bus->turn.fifo, out of
 *   the map, the list and the heap (a late reply finds nothing), until its
 *   callback ran. A request refused at the cap is never in the map, the
 *   ordered list or the heap.
 *   bus->req.map.count <= bus->req.max.
 * - A message that expects a reply (reply_address != NULL) is on
 *   bus->msg.reply_msgs while msg->bus is set; eb_bus_close detaches them,
 *   so a message held past the bus answers EB_ECLOSED instead of touching
 *   it.
 *
 * Threads: loop thread only.
 */
#ifndef EB_EVENTBUS_INT_H
#define EB_EVENTBUS_INT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include <ebnode/bus.h>

#include "common/hmap.h"
#include "common/imap.h"
#include "common/list.h"
#include "common/obs.h"
#include "common/spare.h"

#define EB_BUS_REPLY_PREFIX "__vertx.reply."
/* "__vertx.reply." plus a 64-bit decimal and NUL. */
#define EB_BUS_REPLY_ADDR_MAX 40

/* ---- counters ---- */

typedef struct eb__bus_counters {
	uint64_t sent;      /* send/request originated on this node */
	uint64_t published; /* publish originated on this node */
	uint64_t received;  /* handler invocations on this node */
	uint64_t replied;   /* replies by this node's handlers */
	uint64_t failed;  /* fail() by handlers + requests failed by the bus */
	uint64_t dropped; /* queue overflow, consumer closed, late replies */
} eb__bus_counters;

/* ---- addresses ---- */

typedef struct eb__bus_addr {
	eb__hent         hent;
	char            *address;     /* owned */
	size_t           address_len; /* strlen(address) */
	eb__list         consumers; /* of eb_bus_consumer, local, in RR order */
	uint32_t         n_local;   /* local consumers */
	uint32_t         n_local_only;
	uint32_t         n_remote;       /* handlers on other nodes (sum) */
	uint32_t         n_remote_nodes; /* nodes with n > 0 */
	uint64_t         rr;             /* cluster-wide weighted RR cursor */
	eb__bus_counters c;
	void            *remote; /* owned by remote.c: per-node interest */
	/* Flow control (pressure.c): local consumers over the high watermark,
	 * a component's explicit hold (eb_bus_pressure_set), and the busy
	 * state last told to the pressure observers. */
	uint32_t n_busy;
	int      held_busy;
	int      busy;
	uint32_t n_remote_busy; /* peers that said PRESSURE busy (remote.c) */
	uint32_t n_remote_cong; /* peers with interest whose link is
	                         * congested (remote.c) */
	int local_busy_told;    /* n_busy > 0 as last told to the peers */
} eb__bus_addr;

/* ---- messages ---- */

struct eb_bus_msg {
	uint32_t refs;
	int      is_send;
	int      answered;      /* reply() or fail() was called */
	char    *address;       /* owned */
	char    *reply_address; /* reply_inline or owned; NULL: no reply */
	char     reply_inline[48];
	uint32_t origin;  /* 0: the requester is local; else its peer */
	json_t  *headers; /* owned reference; NULL until parsed from hdr_enc */
	char   *hdr_enc; /* in the allocation: the headers' encoding, or NULL */
	size_t  hdr_enc_len;
	char   *body; /* owned, encoded, NUL-terminated */
	size_t  body_len;
	json_t *body_json; /* owned, parsed lazily */
	int     body_parsed;
	int     body_inline; /* body is part of the message's allocation */
	int     pooled;    /* a MSG_BLOCK block of the thread's pool (msg.c) */
	int     view;      /* eb__bus_msg_point: on a stack, nothing owned */
	int     hdr_plain; /* hdr_enc plain (eb__jsonstr_plain_object_check):
	                      1, 0, or -1 not judged yet */
	uint64_t epoch;    /* fencing stamp, 0: none (send opts / frame) */
	eb_bus  *bus;      /* borrowed; set while a reply is possible */
	eb__list bus_link; /* in bus->msg.reply_msgs while bus != NULL */
};

/* ---- consumers ---- */

struct eb_bus_consumer {
	eb__list          link;    /* in addr->consumers */
	eb_bus           *bus;     /* borrowed */
	eb__bus_addr     *addr;    /* borrowed; NULL once closed */
	char             *address; /* owned copy */
	eb_bus_handler_fn fn;
	void             *arg;
	int               local_only;
	int               closed;
	int               in_handler;
	int               undelivered; /* set by the handler: not taken */
	int               overflowing; /* logged this overflow episode */
	int               busy;        /* qlen crossed the high watermark */
	int               paused;      /* eb_bus_consumer_pause: queue parked */
	eb__list          queue;       /* of struct eb__bus_qent, owned */
	uint32_t          qlen;
	size_t            qbytes; /* body bytes queued (watermarks) */
};

typedef struct eb__bus_rcpt eb__bus_rcpt;

/*
 * One thing a loop turn hands to user code, on bus->turn.fifo in arrival
 * order: a queued consumer delivery (a qent) or a resolved request whose
 * callback is due. One queue for both keeps FIFO per sender across sends,
 * publishes and replies (a reply never overtakes an earlier message that
 * arrived in the same turn, e.g. two frames in one read).
 */
typedef struct eb__bus_turn {
	eb__list         link; /* bus->turn.fifo; self-linked when off it */
	eb_bus_consumer *c;    /* a qent's consumer; NULL: a request */
} eb__bus_turn;

typedef struct eb__bus_qent {
	eb__bus_turn  turn;
	eb__list      link;
	eb_bus_msg   *msg; /* held */
	eb__bus_rcpt *rc;  /* the receipt this delivery counts for, or NULL */
} eb__bus_qent;

/* Spare queue entries kept per bus (one per queued message otherwise costs
 * a malloc and a free). */
#define EB__BUS_QFREE 4096u

/* ---- requests ---- */

typedef struct eb__bus_req {
	eb__ient     ient; /* in bus->req.map by ient.id, the same as seq */
	char         reply_address[EB_BUS_REPLY_ADDR_MAX];
	eb__bus_turn turn;  /* on bus->turn.fifo while resolved */
	eb__list     link;  /* bus->req.deadlines, then bus->req.resolved */
	eb__list     olink; /* bus->req.ordered while hidx is EB__REQ_ORDERED */
	char        *address; /* in the allocation: where it went */
	uint64_t     timeout_ms;
	uint64_t     deadline; /* loop time, ms */
	uint64_t     seq;      /* creation order: ties on deadline */
	size_t       hidx;     /* slot in bus->req.heap, or EB__REQ_ORDERED */
	eb_bus_reply_cb cb;
	void           *arg;
	uint32_t        node; /* the peer it went to; 0: local or none */
	int             resolved;
	int             status;
	eb_bus_failure  failure; /* message owned (fmsg) */
	char           *fmsg;    /* owned */
	eb_bus_msg     *reply;   /* held */
} eb__bus_req;

/* Freed requests whose address fits EB__BUS_REQ_ADDR bytes are kept per bus
 * for the next ones, at most EB__BUS_REQ_SPARE (about 40 KiB): an ingress
 * message makes and frees two requests on the follower (issue 25). */
#define EB__BUS_REQ_ADDR  64u
#define EB__BUS_REQ_SPARE 256u

/* Frees the kept requests (bus close, after the last request is freed). */
void eb__bus_req_pool_free(eb_bus *bus);

/* hidx of a pending request on bus->req.ordered instead of the heap. */
#define EB__REQ_ORDERED SIZE_MAX

/*
 * The deadline min-heap of the pending requests (request.c): a growable
 * array ordered by (deadline, seq), each request knowing its slot (hidx), so
 * insert and remove are O(log n) and the first deadline is v[0].
 */
typedef struct eb__bus_reqheap {
	eb__bus_req **v; /* owned array; the requests are borrowed */
	size_t        n;
	size_t        cap;
} eb__bus_reqheap;

/* ---- delivery receipts (receipt.c) ---- */

/*
 * One confirmed send/publish (sender side: cb set) or one confirmed message
 * received from a peer (receiver side: peer and peer_id set; its outcome goes
 * back as a RECEIPT frame). Each target is a unit: a queued delivery
 * (qent->rc) or a remote receipt awaited (eb__bus_runit). The tracker is
 * complete when it is sealed (every unit added) and no unit is pending.
 * On bus->rcpt.open while incomplete, on bus->rcpt.done while its callback
 * waits.
 */
struct eb__bus_rcpt {
	eb__list          link;
	eb_bus_receipt_cb cb; /* NULL: receiver side, or orphaned at close */
	void             *arg;
	uint32_t          peer;    /* receiver side: the sender's node */
	uint64_t          peer_id; /* receiver side: the sender's receipt id */
	uint32_t          targets;
	uint32_t          delivered;
	uint32_t          pending;
	int               status;     /* the first failure, 0 while none */
	char             *reason;     /* owned text of the first failure */
	uint64_t          timeout_ms; /* for its remote units */
	int               sealed;
	int               complete;
	/* Deduplication (dedup.c): targets that had the key already, the
	 * first delivery's stamp, and the key this tracker's message made
	 * pending here (borrowed; NULL once handed over or none). */
	uint32_t             duplicates;
	uint64_t             orig_epoch;
	uint64_t             orig_seq;
	struct eb__bus_dkey *dkey;
};

/* A receipt awaited from a peer (sender side), by id, with a deadline. */
typedef struct eb__bus_runit {
	eb__ient      ient;     /* in bus->rcpt.runit_map by ient.id, the id */
	eb__list      link;     /* bus->rcpt.runits, in deadline order */
	uint64_t      deadline; /* loop time, ms */
	uint32_t      peer;
	eb__bus_rcpt *rc;
} eb__bus_runit;

/* ---- remote seam (remote.c); NULL ops: standalone ---- */

/* What remote.c learns from the bus, and what it asks of peers. */
typedef struct eb__bus_remote_ops {
	/* The clustered (non-local-only) local handler count of address
	 * changed to count. */
	void (*interest)(void *ctx, const char *address, uint32_t count);
	/* Delivers msg to node: kind EB__BUS_FWD_*; rid non-zero asks the
	 * node for a receipt with that id (msg->epoch travels too). 0 or a
	 * negative error (the peer is unreachable: the caller fails or
	 * drops). */
	int (*forward)(
	    void *ctx, uint32_t node, eb_bus_msg *msg, int kind, uint64_t rid);
	/* Sends a receipt (id, status, counts) back to node; for
	 * EB_EDUPLICATE with the first delivery's stamp as its trailer. */
	int (*receipt)(void *ctx, uint32_t node, uint64_t id, int status,
	    uint32_t delivered, uint32_t targets, uint64_t orig_epoch,
	    uint64_t orig_seq);
	/* The node id of a linked peer (borrowed), or NULL. */
	const char *(*peer_name)(void *ctx, uint32_t node);
	/* Answers the remote requester of a message with a failure. */
	int (*fail)(void *ctx, uint32_t node, const char *reply_address,
	    int status, eb_bus_failure_type type, int code,
	    const char *message);
	/* Picks the node for the index-th remote handler of address
	 * (0 <= index < addr->n_remote); 0 when none. */
	uint32_t (*pick)(void *ctx, eb__bus_addr *a, uint64_t index);
	/* Calls fn for every node with interest in address. */
	void (*each_node)(void *ctx, eb__bus_addr        *a,
	    void (*fn)(void *fnarg, uint32_t node), void *fnarg);
	/* The local consumers of address became busy or not (flow
	 * control): tells every peer (a PRESSURE frame). */
	void (*pressure)(void *ctx, const char *address, int busy);
	/* The bus is closing: drop per-address state (a->remote). */
	void (*addr_free)(void *ctx, eb__bus_addr *a);
} eb__bus_remote_ops;

enum { EB__BUS_FWD_SEND = 1, EB__BUS_FWD_PUBLISH = 2, EB__BUS_FWD_REPLY = 3 };

/* ---- the bus ---- */

/*
 * struct eb_bus is grouped by concern (issue 24): one sub-struct per job,
 * each saying which file owns it (creates, changes and frees it; the
 * others only read it, or call the owner's functions). Hot per-message
 * state comes first (lifecycle flags, the address table, the turn queue,
 * the remote seam, the counters); request, receipt and fencing state follow.
 */

/* Lifecycle (bus.c): eb_bus_new, drain, shut, close. */
typedef struct eb__bus_life {
	int             closing;
	int             shut;
	int             draining;
	int             open_handles;
	eb_bus_close_cb close_cb;
	void           *close_arg;
} eb__bus_life;

/* The records eb__bus_addr_find found last (addr.c): one message's path
 * looks the same few addresses up several times (bridge, bus, gateway,
 * router: issue 25), and a hit costs a length and a memcmp instead of the
 * map's keyed hash. A slot is cleared when its record is freed. */
#define EB__BUS_ADDR_MEMO 4u

/* Addresses (addr.c; watch.c owns the observers). */
typedef struct eb__bus_addrs {
	eb__hmap      map;      /* of eb__bus_addr, owned */
	eb__obs       watchers; /* of eb_bus_watch_fn (watch.c) */
	eb__bus_addr *memo[EB__BUS_ADDR_MEMO]; /* borrowed from map */
	uint32_t      memo_next; /* the slot the next miss fills */
} eb__bus_addrs;

/* The arrival-ordered turn queue and its idle handle (consumer.c runs it,
 * bus.c owns the handle and eb__bus_wake), plus consumer.c's pool of
 * spare queue entries. */
typedef struct eb__bus_turns {
	eb__list     fifo;   /* of eb__bus_turn: due, in arrival order */
	eb__bus_turn mark;   /* on fifo during a turn: where it ends */
	eb__spare    qspare; /* freed eb__bus_qent, at most EB__BUS_QFREE */
	int          idle_active;
	uv_idle_t    idle;
} eb__bus_turns;

/* The remote seam (remote.c installs it; everyone calls through it). */
typedef struct eb__bus_remote {
	const eb__bus_remote_ops *ops; /* NULL: standalone */
	void                     *ctx; /* borrowed */
	void *ext; /* vertx_route.c's state while ext nodes are attached */
} eb__bus_remote;

/* Bus-wide counters (counted where it happens; addr.c reports them). */
typedef struct eb__bus_stats {
	eb__bus_counters totals;
	uint64_t         no_handlers; /* sends/requests that found nobody */
} eb__bus_stats;

/* Flow control (pressure.c; consumer.c applies queue_max and push_grace). */
typedef struct eb__bus_flow {
	uint32_t queue_max; /* consumer queue bound */
	uint32_t q_high;    /* consumer queue watermarks */
	uint32_t q_low;
	int      push_grace;    /* see EB__BUS_GRACE (pressure.c) */
	uint64_t busy_episodes; /* address busy transitions */
	uint32_t busy_addrs;    /* addresses busy now (a->busy set) */
	eb__obs  observers;     /* of eb_bus_pressure_fn */
} eb__bus_flow;

/* Messages (msg.c; bus.c makes the shared empty headers). */
typedef struct eb__bus_msgs {
	json_t  *empty_headers; /* owned: shared by header-less msgs */
	eb__list reply_msgs;    /* messages that may still be answered */
} eb__bus_msgs;

/* Pending requests (request.c). */
typedef struct eb__bus_reqs {
	eb__imap        map;       /* of eb__bus_req, owned, by id (seq) */
	eb__list        deadlines; /* pending requests, in no order */
	eb__list        ordered;   /* pending, deadlines in order (request.c) */
	eb__bus_reqheap heap;      /* the other pending requests, by deadline */
	eb__list        resolved;  /* resolved, callback pending */
	uint64_t        next_id;   /* reply address numbers */
	uint64_t        timeout_ms;      /* the default request timeout */
	uint64_t        max_timeout_ms;  /* request timeouts clamp to this */
	uint32_t        max;             /* cap on map.count */
	uint64_t        refused;         /* requests refused at max */
	char            refuse_text[80]; /* their failure message */
	uv_timer_t      timer; /* the first deadline (ordered list or heap) */
	eb__spare spare; /* freed requests kept for the next (request.c) */
} eb__bus_reqs;

/* Delivery receipts (receipt.c). */
typedef struct eb__bus_rcpts {
	uint64_t   timeout_ms;
	uint64_t   next_id;
	uint64_t   failures;
	uint32_t   n_open;    /* sender-side trackers not yet called */
	eb__list   open;      /* incomplete trackers */
	eb__list   done;      /* complete, callback pending */
	eb__list   runits;    /* of eb__bus_runit, deadline order */
	eb__imap   runit_map; /* of eb__bus_runit, by id */
	uv_timer_t timer;     /* the first runit deadline */
	/* Freed trackers and remote units kept for the next ones (at most
	 * EB__BUS_RCPT_SPARE each): a confirmed send to another node makes
	 * and frees one of each (issue 25). */
	eb__spare spare_rc;
	eb__spare spare_unit;
} eb__bus_rcpts;

#define EB__BUS_RCPT_SPARE 256u

/* Fencing (receipt.c, eb__bus_fence_stale; rule 6). */
typedef struct eb__bus_fence {
	uint64_t epoch;    /* highest leader epoch seen */
	uint64_t rejected; /* stamped messages rejected by it */
} eb__bus_fence;

/* Deduplication of keyed deliveries (dedup.c). */
typedef struct eb__bus_dkey eb__bus_dkey;
typedef struct eb__bus_dedup {
	eb__hmap map;   /* of eb__bus_dkey, owned */
	eb__list order; /* the same keys, oldest first */
	uint64_t window_ms;
	uint32_t max; /* 0: off */
	uint64_t duplicates;
	uint64_t evicted;
	uint64_t busy;
} eb__bus_dedup;

/* The taker of one address's requests (bus_direct.h), or none. */
typedef struct eb__bus_direct {
	char *address; /* owned; NULL: none */
	int (*fn)(void *ctx, eb_bus_msg *msg, uint64_t timeout_ms,
	    eb_bus_reply_cb cb, void *arg);
	void *ctx;
} eb__bus_direct;

struct eb_bus {
	uv_loop_t     *loop;    /* borrowed */
	char          *node_id; /* owned */
	eb__bus_life   life;
	eb__bus_addrs  addr;
	eb__bus_turns  turn;
	eb__bus_remote remote;
	eb__bus_stats  stats;
	eb__bus_flow   flow;
	eb__bus_msgs   msg;
	eb__bus_reqs   req;
	eb__bus_rcpts  rcpt;
	eb__bus_fence  fence;
	eb__bus_dedup  dedup;
	eb__bus_direct direct;
};

/* addr.c */
eb__bus_addr *eb__bus_addr_find(eb_bus *bus, const char *address);
eb__bus_addr *eb__bus_addr_get(eb_bus *bus, const char *address); /* make */
/* Frees a when it has no local consumers and no remote interest. */
void eb__bus_addr_maybe_free(eb_bus *bus, eb__bus_addr *a);
void eb__bus_addr_free_all(eb_bus *bus);

/* watch.c: tells the observers that a's reachable handler count changed. */
void eb__bus_watch_notify(eb_bus *bus, const eb__bus_addr *a);

/* msg.c */
int eb__bus_headers_check(const json_t *headers);
/* empty: the bus's shared empty headers object, used (held) for NULL or
 * empty headers. */
int eb__bus_msg_new(const char *address, const json_t *body,
    const json_t *headers, json_t *empty, int is_send, eb_bus_msg **msgp);
/* A body given either as a value (json; NULL: null) or, when raw is
 * non-NULL, as its compact encoding (what json_dumps with JSON_COMPACT |
 * JSON_ENCODE_ANY produces; "null" for none), used verbatim. */
typedef struct eb__bus_body {
	const json_t *json;
	const char   *raw;
	size_t        raw_len;
	int           share_headers; /* eb_bus_send_opts.share_headers */
	const char   *hdr_enc;       /* checked encoded headers, or NULL */
	size_t        hdr_enc_len;
} eb__bus_body;
/* A raw body as the *_raw APIs take it: NULL is the JSON null. */
static inline eb__bus_body
eb__bus_raw_body(
    const char *body, size_t body_len, const eb_bus_send_opts *opts)
{
	eb__bus_body b = { NULL, body != NULL ? body : "null",
		body != NULL ? body_len : 4,
		opts != NULL && opts->share_headers, NULL, 0 };

	return b;
}
/* 0 when p[0..n) is a JSON object of strings with distinct keys (the
 * encoded headers eb_bus_send_confirmed_enc takes), else UV_EINVAL. */
int eb__bus_headers_enc_check(const char *p, size_t n);
/* eb__bus_msg_new for either kind of body. */
int eb__bus_msg_make(const char *address, const eb__bus_body *body,
    const json_t *headers, json_t *empty, int is_send, eb_bus_msg **msgp);
/* The message of a send to one handler or of a reply: when to_peer (it is
 * only written to a link, by an eb__bus_remote_ops forward that holds
 * nothing of it, before the caller's call returns) and the body is raw with
 * headers that stay as they are (encoded, shared as the caller promised, or
 * none), *msgp is v, a view on the caller's stack that points at address,
 * the body bytes and the headers instead of copying them (issue 25); it is
 * never held, queued, answered or released. Else a new message
 * (eb__bus_msg_make, is_send). Headers given as an object without
 * share_headers are always copied: remote.c's encoded-headers cache keys
 * on the object, and a changed one must not pass for the same. 0, or the
 * headers' check's error. */
int eb__bus_msg_point(eb_bus_msg *v, int to_peer, const char *address,
    const eb__bus_body *body, const json_t *headers, json_t *empty,
    eb_bus_msg **msgp);
/* Ends msg: a view's parts parsed on demand freed, else released. */
void eb__bus_msg_done(eb_bus_msg *msg);
/* From already encoded parts (remote); body bytes copied, headers (an
 * object, not NULL) held. */
eb_bus_msg *eb__bus_msg_from_bytes(const char *address, const char *body,
    size_t body_len, json_t *headers, int is_send);
/* The same with the headers kept as their bytes, hdr[0..hdr_len) checked
 * plain by eb__jsonstr_plain_object_check (parsed only if read). */
eb_bus_msg *eb__bus_msg_from_plain(const char *address, const char *body,
    size_t body_len, const char *hdr, size_t hdr_len, int is_send);
/* 1 when m is a plain reply: a send that expects no answer, handed to a
 * requester as it is (eb_bus_msg_reply_with, eb_bus_msg_plain). */
static inline int
eb__bus_msg_is_plain(const eb_bus_msg *m)
{
	return m->reply_address == NULL && m->is_send;
}
/* 0 when msg's headers surely lack key (plain bytes not parsed yet, a
 * search finds no such key), else 1: read them to know. */
int eb__bus_msg_may_have_header(const eb_bus_msg *msg, const char *key);
/* Makes msg answerable on bus (reply_address copied, origin set). */
void eb__bus_msg_set_reply(
    eb_bus *bus, eb_bus_msg *msg, const char *reply_address, uint32_t origin);
void eb__bus_msg_detach(eb_bus_msg *msg);

/* pressure.c */
/* A consumer is busy from this many body bytes queued too (a paused
 * consumer of big messages), until a quarter of it. */
#define EB__BUS_BUSY_BYTES (4u << 20)
/* A plain message from a peer for an address this node has told its peers
 * is busy was in flight before they heard it: it may exceed the queue
 * bound up to this many times queue_max instead of being dropped (the
 * peers' bridges stopped; what they had written to the link still comes). */
#define EB__BUS_GRACE 8u
/* a's busy state may have changed: tells the pressure observers. */
void eb__bus_pressure_update(eb_bus *bus, eb__bus_addr *a);
/* c's queue length changed: crosses the watermarks. */
void eb__bus_consumer_level(eb_bus *bus, eb_bus_consumer *c);

/* consumer.c */
/* Queues msg on c as one unit of rc (NULL: no receipt); 0 or EB_EFULL
 * (counted and logged, msg not queued, the unit failed). */
int eb__bus_consumer_push(
    eb_bus_consumer *c, eb_bus_msg *msg, eb__bus_rcpt *rc);
/* The next local consumer of a in round robin order, skipping local-only
 * ones when remote_sender; NULL when none. */
eb_bus_consumer *eb__bus_consumer_pick(eb__bus_addr *a, int remote_sender);
void             eb__bus_run_turn(eb_bus *bus);
void             eb__bus_consumer_free(eb_bus_consumer *c);
/* Frees the spare queue entries (bus close). */
void eb__bus_qent_pool_free(eb_bus *bus);

/* request.c */
/* A pending request: it times out at deadline_ms (the loop's clock) when
 * that is not 0, else timeout_ms from now (0: the bus's default). */
eb__bus_req *eb__bus_req_new(eb_bus *bus, const char *address,
    uint64_t timeout_ms, uint64_t deadline_ms, eb_bus_reply_cb cb, void *arg);
eb__bus_req *eb__bus_req_find(eb_bus *bus, const char *reply_address);
/* Resolves r (at most once) with a reply (held) or a failure; the callback
 * runs from the idle handle. */
void eb__bus_req_reply(eb_bus *bus, eb__bus_req *r, eb_bus_msg *reply);
void eb__bus_req_fail(eb_bus *bus, eb__bus_req *r, int status,
    eb_bus_failure_type type, int code, const char *message);
void eb__bus_req_fail_no_handlers(eb_bus *bus, eb__bus_req *r);
/* Runs a resolved request's callback (from bus->turn.fifo) and frees it. */
void eb__bus_req_run(eb_bus *bus, eb__bus_req *r);
void eb__bus_req_cancel_all(eb_bus *bus);
void eb__bus_timer_update(eb_bus *bus);
/* A request's timeout as the bus applies it: the default for 0, clamped
 * to eb_bus_opts.max_request_timeout_ms. */
uint64_t eb__bus_req_timeout(const eb_bus *bus, uint64_t timeout_ms);
/* The deadline heap (exposed for its unit test). push: r not in h; remove:
 * r in h; min: NULL when empty; free: drops the array (h empty after). */
void         eb__bus_reqheap_push(eb__bus_reqheap *h, eb__bus_req *r);
void         eb__bus_reqheap_remove(eb__bus_reqheap *h, eb__bus_req *r);
eb__bus_req *eb__bus_reqheap_min(const eb__bus_reqheap *h);
void         eb__bus_reqheap_free(eb__bus_reqheap *h);
/* Answers the requester of msg (local or remote) with a failure. */
void eb__bus_answer_fail(eb_bus *bus, eb_bus_msg *msg, int status,
    eb_bus_failure_type type, int code, const char *message);

/* remote.c */
/* For vertx_route.c (bus_ext.h): the bus of a remote seam context, and a
 * node's handler count of a (interest_set, for the ext nodes). */
eb_bus *eb__bus_remote_bus(void *ctx);
void    eb__bus_remote_interest(
       eb_bus *bus, eb__bus_addr *a, uint32_t peer, uint32_t count);
/* The bus is shutting down: stop hearing from the links. */
void eb__bus_remote_detach(eb_bus *bus);
/* Frees the remote state (after every address record is gone). */
void eb__bus_remote_free(eb_bus *bus);

/* receipt.c */
/* A tracker; sender side when cb is non-NULL. */
eb__bus_rcpt *eb__bus_rcpt_new(eb_bus *bus, eb_bus_receipt_cb cb, void *arg);
/* One more unit of rc that failed/succeeded at once (no queue). */
void eb__bus_rcpt_add_done(
    eb_bus *bus, eb__bus_rcpt *rc, int status, const char *reason);
/* Forwards msg to node as one unit of rc (a runit awaits its receipt). */
void eb__bus_rcpt_forward(
    eb_bus *bus, eb__bus_rcpt *rc, uint32_t node, eb_bus_msg *msg, int kind);
/* Every unit of rc is added: it may complete now. */
void eb__bus_rcpt_seal(eb_bus *bus, eb__bus_rcpt *rc);
/* A queued unit's outcome (delivered: 0). */
void eb__bus_rcpt_unit_done(
    eb_bus *bus, eb__bus_rcpt *rc, int status, const char *reason);
/* A RECEIPT frame from peer. */
void eb__bus_rcpt_remote(eb_bus *bus, uint32_t peer, uint64_t id, int status,
    uint32_t delivered, uint32_t targets, uint64_t orig_epoch,
    uint64_t orig_seq);
/* peer's link dropped: its awaited receipts fail with EB_ELINKDOWN. */
void eb__bus_rcpt_peer_down(eb_bus *bus, uint32_t peer, const char *text);
/* Runs the callbacks of complete trackers (idle handle). */
void eb__bus_rcpt_run_done(eb_bus *bus);
/* Bus shutdown: every tracker's callback runs now (EB_ECANCELED). */
void eb__bus_rcpt_cancel_all(eb_bus *bus);
/* Records a failure that is not a target (e.g. nobody to send to). */
void eb__bus_rcpt_fail(eb__bus_rcpt *rc, int status, const char *reason);
void eb__bus_rcpt_free_all(eb_bus *bus); /* bus free: the id map */
/* 1 (and counted) when epoch is stale: a stamp below the fence. */
int  eb__bus_fence_stale(eb_bus *bus, uint64_t epoch);
void eb__bus_rcpt_init(eb_bus *bus);

/* dedup.c */
void eb__bus_dedup_init(eb_bus *bus, uint64_t window_ms, uint32_t max);
void eb__bus_dedup_free(eb_bus *bus);
/* Before msg (stamped, confirmed by rc) is queued for this node's
 * consumers: 0 to deliver it (its key, if any, is pending on rc now),
 * EB_EDUPLICATE (rc->orig_* set: not to be delivered) or EB_EKEYBUSY. */
int eb__bus_dedup_admit(eb_bus *bus, eb_bus_msg *msg, eb__bus_rcpt *rc);
/* A unit of rc was handed to a consumer: its pending key is done. */
void eb__bus_dedup_handed(eb_bus *bus, eb__bus_rcpt *rc);
/* rc is complete: a key still pending on it was never handed over. */
void eb__bus_dedup_release(eb_bus *bus, eb__bus_rcpt *rc);

/* bus.c */
void eb__bus_wake(eb_bus *bus); /* makes sure the idle handle runs */
/* Delivers a message that arrived from a peer to the local consumers; each
 * delivery counts as a unit of rc (NULL: no receipt). */
void eb__bus_deliver_remote(
    eb_bus *bus, eb_bus_msg *msg, int publish, eb__bus_rcpt *rc);

#endif
