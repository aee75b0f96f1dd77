/*
 * Bridge internals shared by the bridge's files, grouped by the file that
 * defines them. Who calls whom (one direction, no cycle):
 *
 *   server.c  (options, listener, accept, sweep, close, views)
 *     -> read.c     (input: decoding, the frame budget, pausing, flow
 *                    control toward the client, the drain handle)
 *       -> handlers.c (one client frame: auth, hook, send, publish,
 *                      register, unregister, ping)
 *         -> deliver.c (bus messages and request answers to the client,
 *                       consumers and in-flight requests)
 *           -> reply.c (the replies map; err, failure and pong frames)
 *             -> out.c (the output buffer, coalesced flushes, the
 *                       write-queue bound, parking consumers)
 *               -> conn.c (a connection's lifecycle and the state it owns:
 *                          creation, close, teardown, accounting, hook)
 *     -> budget.c (the node-wide input budget) -> conn.c
 *   proto.c and perm.c call no other bridge file.
 *
 * A file calls only files below it (read.c also calls budget.c). Closing
 * is the one thing every level needs: eb__bconn_close (conn.c) tears down
 * what the connection owns itself, so it calls nothing above it; the
 * server learns that a connection's socket is gone through the stream
 * callbacks it installed when it accepted the socket.
 *
 * Ownership: the bridge owns its connections (list conns); a connection owns
 * its stream, its consumers, its replies map (each entry holds one reference
 * on a bus message) and its in-flight requests. A request outlives its
 * connection when the connection closes first: the connection detaches it
 * (req->conn = NULL) and the bus callback, which then touches nothing but the
 * request, frees it later (the bus may outlive the bridge).
 *
 * Threads: loop thread only.
 */
#ifndef EB_BRIDGE_INT_H
#define EB_BRIDGE_INT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include <ebnode/bridge.h>
#include <ebnode/bus.h>

#include "bridge/bridge_layer.h"
#include "bridge/bridge_state.h"
#include "bridge/perm.h"
#include "common/budget.h"
#include "common/frame.h"
#include "common/hmap.h"
#include "common/list.h"
#include "common/obs.h"
#include "common/stall.h"
#include "stream/stream.h"

/* ---- permissions (perm.c): bridge/perm.h ---- */

/* ---- frames (proto.c) ---- */

typedef enum eb__bframe_type {
	EB__BF_SEND = 0,
	EB__BF_PUBLISH,
	EB__BF_REGISTER,
	EB__BF_UNREGISTER,
	EB__BF_PING,
	EB__BF_UNKNOWN
} eb__bframe_type;

/* A decoded client frame. Strings point into sbuf or owned blocks; the
 * body into the payload, which must outlive f. A new field must also be
 * set in proto.c's bframe_reset(), which sets them one by one. */
typedef struct eb__bframe {
	json_t         *root; /* owned: the whole frame, for the hook only */
	eb__bframe_type type;
	const char     *address;       /* NULL: missing or not a string */
	const char     *reply_address; /* NULL: none or not a string */
	/* Always NULL: every body is carried as its bytes (body_raw). Kept
	 * until the connection code drops its jansson-body branch. */
	const json_t *body;
	int           raw; /* always 1 */
	/* The body as it came in the payload (whitespace and all); NULL:
	 * absent or JSON null. */
	const char *body_raw;
	size_t      body_raw_len;
	json_t     *headers; /* owned: stringified, option keys removed; NULL */
	const char *token;   /* headers.token (string) or NULL */
	uint64_t    timeout_ms; /* 0: not given */
	int         local_only;
	int         has_failure; /* failureCode present (an integer) */
	int         failure_code;
	const char *failure_message; /* "" when absent */
	char       *owned[5];        /* decoded strings too long for sbuf */
	unsigned    nowned;
	char        sbuf[256]; /* type, address, replyAddress, message, token */
	char        err[160];  /* after EB_EFRAME: the err frame's message */
} eb__bframe;

/*
 * Decodes one payload (proto.c: the whole JSON grammar, nesting at most
 * max_depth levels, the frame's own object included). Returns 0, or
 * EB_EFRAME with the reason in f->err ("invalid_json: ..." or
 * "invalid_frame: ..."): the caller answers it with an err frame. strip_token
 * removes "token" from the forwarded headers. Free with eb__bframe_free()
 * after either result.
 */
int eb__bframe_parse(
    const char *p, size_t n, int strip_token, int max_depth, eb__bframe *f);
void eb__bframe_free(eb__bframe *f);

/* Outgoing frames (4-byte length + compact JSON), appended to out (the
 * connection's output buffer). The failure frame answers a request:
 * address = the client's token, source = the address. A message frame's
 * body_bytes NULL or "null" omits the body; the frame is assembled as text,
 * so the body, which the bus keeps as its compact encoding, is spliced in
 * without a parse/dump cycle. */
void eb__bout_err_buf(eb__buf *out, const char *message);
void eb__bout_pong_buf(eb__buf *out);
void eb__bout_failure_buf(eb__buf *out, const char *token, const char *source,
    int code, const char *type, const char *message);
void eb__bout_message_buf(eb__buf *b, const char *address,
    const char *reply_address, const json_t *headers, const char *body_bytes,
    size_t body_len, int send);
/* The same with the headers as their compact encoding (e.g. what
 * eb_bus_msg_headers_enc returns), copied as they are. */
void eb__bout_message_enc(eb__buf *b, const char *address,
    const char *reply_address, const char *hdrs, size_t hlen,
    const char *body_bytes, size_t body_len, int send);

/* ---- connections: the structures (conn.c creates and frees them) ---- */

/*
 * Frames handled per connection per loop turn (read.c): the first turn of
 * a batch takes EB__BCONN_FRAME_BUDGET frames; while the connection still
 * has more, each next turn takes twice as many, up to
 * EB__BCONN_FRAME_BUDGET_MAX; once its frames run out it starts small
 * again. Beyond a turn's share the connection stops reading and goes on
 * next turn, after the bus ran what these frames queued and their output
 * (node links, other connections) was written.
 *
 * A client that pipelines a batch thus has its first frames passed on at
 * once: the next node starts on them while this one handles the rest, and
 * the two run at once instead of one after the other (docs/PERFORMANCE.md,
 * issue 25 round 4). A flood still goes in big turns, whose fixed costs
 * (a write, a poll) are spread over many frames. The cap keeps one busy
 * connection from starving the others, and matches the 256 messages the
 * bus delivers per consumer per turn, so one sender cannot outrun one
 * consumer's queue.
 */
#define EB__BCONN_FRAME_BUDGET     16u
#define EB__BCONN_FRAME_BUDGET_MAX 256u

/* A parked connection whose client read nothing for this long is closed
 * (out.c parks, the sweep in server.c closes). */
#define EB__BCONN_PARK_STALL_MS 2000u

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
	size_t   layer_held;
	uint64_t layer_started_ms;
	eb__list fresh_link; /* in b->fresh until a first frame */
	int      fresh;
	int      processing; /* a frame borrowed from dec is in use */
	size_t   n_reqs;     /* attached requests (replies awaited) */
	uint64_t frames_in;
	uint64_t frames_out;
	eb__list consumers; /* of eb__bconsumer, owned */
	eb__list replies;   /* of eb__breply, owned, oldest first */
	eb__hmap cmap;      /* consumers by address */
	eb__hmap rmap;      /* replies by address */
	eb__list reqs;      /* of eb__breq, attached */
	size_t   n_consumers;
	size_t   n_replies;
	eb__list pause_link; /* in b->paused or b->blocked while paused */
	eb__buf  out;        /* frames not yet handed to the stream */
	eb__list out_link;   /* in b->pending_out while out_listed */
	int      out_listed;
	int      paused; /* reading stopped: frames buffered */
	unsigned share; /* frames of the next turn, 0: EB__BCONN_FRAME_BUDGET */
	int      blocked; /* flow control: in b->blocked, not reading */
	/* owned: the busy address; set by handlers.c after a frame for a busy
	 * address, then read.c blocks the connection on it */
	char       *blocked_on;
	int         parked;    /* flow control: its bus consumers paused */
	uint64_t    parked_ms; /* parked, or last write progress since */
	unsigned    log_left;  /* per-frame log lines still allowed */
	const char *doomed;    /* the sweep's close reason, closed next */
	int         authenticated;
	int         closing;
};

/* A client's consumer on the bus (register frame). */
typedef struct eb__bconsumer {
	eb__list         link;
	eb__hent         hnode;   /* in c->cmap */
	eb__bconn       *c;       /* borrowed: the consumer dies first */
	eb_bus_consumer *bc;      /* owned */
	char            *address; /* owned */
} eb__bconsumer;

/* A server->client request awaiting the client's answer (one-shot). */
typedef struct eb__breply {
	eb__list    link;
	eb__hent    hnode;   /* in c->rmap */
	char       *address; /* owned: the bus reply address */
	eb_bus_msg *msg;     /* one reference held */
	uint64_t    expires_ms;
} eb__breply;

/* A client request in flight on the bus. */
typedef struct eb__breq {
	eb__list   link;
	eb__bconn *c;      /* NULL once the connection closed */
	char      *token;  /* in the allocation: the client's replyAddress */
	char      *source; /* in the allocation: the address it was sent to */
	int        kept;   /* its block has room for EB__BREQ_STRS bytes */
} eb__breq;

/* A request's strings (with their NULs) that fit this many bytes get a
 * block of one size, kept by the bridge for the next request when freed,
 * at most EB__BREQ_SPARE of them (deliver.c). */
#define EB__BREQ_STRS  128u
#define EB__BREQ_SPARE 256u

/* ---- conn.c: lifecycle and owned state ---- */

/*
 * A new connection on b->conns (counted open), its stream not yet
 * initialised (the caller, server.c, sets it up and starts it). fresh: on
 * b->fresh until its first frame (accepted sockets; not detached ones).
 */
eb__bconn *eb__bconn_new(eb_bridge *b, int fresh);
/* Frees c once its stream's handle has closed (the stream's closed
 * callback, server.c). */
void       eb__bconn_free(eb__bconn *c);
eb__bconn *eb__bconn_from_link(eb__list *l);
eb__bconn *eb__bconn_from_pause_link(eb__list *l);
eb__bconn *eb__bconn_from_out_link(eb__list *l);
/* Calls the bridge-event hook; 1 when it blocks (non-zero return). f may
 * be NULL. The hook may close c or others. */
int eb__bconn_hook(eb__bconn *c, eb_bridge_event_type t, const eb__bframe *f);
/* 1 when one more per-frame event of this connection may be logged. */
int  eb__bconn_log_ok(eb__bconn *c);
void eb__bconn_info(
    const eb__bconn *c, uint64_t now_ms, eb_bridge_conn_info *info);
/* Keeps the node-wide budget in step with c's input buffer and its
 * layer's share (0 once closing). */
void eb__bconn_in_account(eb__bconn *c);
/* c has completed a frame: off b->fresh (no first-frame deadline). */
void eb__bconn_unfresh(eb__bconn *c);
/* Takes c off b->pending_out (its output is written now or never). */
void eb__bconn_out_unlist(eb__bconn *c);
/* Ends c's block (flow control): off b->blocked, blocked_on freed; the
 * caller puts it back on b->paused unless it is closing. */
void eb__bconn_unblock(eb__bconn *c);
/* Releases one consumer (closes its bus consumer) / one reply entry (its
 * message reference). */
void eb__bconsumer_free(eb__bconn *c, eb__bconsumer *k);
void eb__breply_free(eb__bconn *c, eb__breply *r);

/* ---- out.c: writing ---- */

/*
 * Where a frame is encoded: NULL when nothing may be written any more
 * (closing). *mark is the output already gathered, for eb__bconn_out_end().
 */
eb__buf *eb__bconn_out_begin(eb__bconn *c, size_t *mark);
/* Accounts for the frame appended since eb__bconn_out_begin(). 0: queued
 * on the connection's output; -1: not sent (the connection exceeded
 * bridge.write_queue_max_bytes and is closed). */
int eb__bconn_out_end(eb__bconn *c, size_t mark, eb_bridge_out_kind kind);
/* Writes a connection's gathered output now (leaves b->pending_out); a
 * write failure closes c. */
void eb__bconn_flush(eb__bconn *c);
/* Bytes the kernel has not taken: the stream's backlog plus c->out. */
size_t eb__bconn_out_backlog(eb__bconn *c);
/* Parks c's bus consumers when its output backlog passed half the bound. */
void eb__bconn_park_check(eb__bconn *c);
/* The stream's written callback: unparks once the backlog drained. */
void eb__bconn_written_cb(eb__stream *s);

/* ---- reply.c: the replies map; err, failure and pong frames ---- */

eb__breply *eb__breply_find(eb__bconn *c, const char *address);
/* Remembers msg (one reference) as answerable by the client at address,
 * replacing an entry of the same address; expires after reply_ttl_ms. */
void eb__breply_add(eb__bconn *c, const char *address, eb_bus_msg *msg);
/* Drops the entries expired at now_ms (oldest first). */
void eb__breply_expire(eb__bconn *c, uint64_t now_ms);
/* {"type":"err"} with message; counted as an err frame. */
void eb__bconn_err(eb__bconn *c, const char *message);
/* access_denied for op on address: counted, logged within the budget. */
void eb__bconn_denied(eb__bconn *c, const char *what, const char *address);
/* A failure frame answering the client's request token. */
void eb__bconn_failure(eb__bconn *c, const char *token, const char *source,
    int code, const char *type, const char *message);
void eb__bconn_pong(eb__bconn *c);

/* ---- deliver.c: bus messages and request answers to the client ---- */

eb__bconsumer *eb__bconsumer_find(eb__bconn *c, const char *address);
/* A consumer of address delivering to c; 0 or the bus's error (nothing
 * kept). */
int eb__bconsumer_add(eb__bconn *c, const char *address);
/* A request of c in flight (counted); its answer goes to the client's
 * token. Pass eb__breq_cb and r to the bus; when the bus refuses
 * synchronously call eb__breq_refused (which answers and frees r). */
eb__breq *eb__breq_new(eb__bconn *c, const char *token, const char *source);
void      eb__breq_cb(eb_bus *bus, int status, eb_bus_msg *reply,
         const eb_bus_failure *failure, void *arg);
void      eb__breq_refused(eb__bconn *c, eb__breq *r, int rv);

/* ---- handlers.c: client frames ---- */

/* Handles one complete payload of n bytes (borrowed). May close c; after a
 * frame for a busy address it sets c->blocked_on (read.c blocks). */
void eb__bconn_frame(eb__bconn *c, const char *p, uint32_t n);

/* ---- budget.c: the node-wide input budget ---- */

/* Gives back the connections' empty input buffers (the budget's reclaim
 * callback; arg: the bridge). */
void eb__bridge_input_reclaim(eb__budget *bg, void *arg);
/* Over the budget: closes the connections holding the most input until
 * it fits. */
void eb__bridge_input_budget(eb_bridge *b);

/* ---- read.c: input ---- */

/* The stream's read callback: decodes and handles frames within the
 * per-turn frame budget. */
void eb__bconn_read_cb(eb__stream *s, const char *data, size_t n);
/* The bus's pressure observer (eb_bus_pressure_fn; arg: the bridge). */
void eb__bridge_pressure_cb(
    eb_bus *bus, const char *address, int busy, void *arg);

/* ---- server.c: accept and sweep (eb__bconn_accept_from,
 * eb__bconn_open_detached: bridge/bridge_layer.h) ---- */

#endif
