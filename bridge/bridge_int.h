/*
 * Bridge internals shared by server.c, conn.c, proto.c and perm.c.
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

#include <regex.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include <ebnode/bridge.h>
#include <ebnode/bus.h>

#include "common/budget.h"
#include "common/frame.h"
#include "common/list.h"
#include "common/obs.h"
#include "common/stall.h"
#include "stream/stream.h"

/* ---- permissions (perm.c) ---- */

typedef struct eb__perm_entry {
	char   *address; /* owned, or NULL */
	regex_t re;
	int     has_re;
} eb__perm_entry;

typedef struct eb__perm_list {
	eb__perm_entry *v; /* owned */
	size_t          n;
} eb__perm_list;

/* Copies and compiles; 0 or EB_ECONF (bad regex, detail in err). */
int  eb__perm_init(eb__perm_list *l, const eb_bridge_permitted *v, size_t n,
     const char *what, eb_errbuf *err);
void eb__perm_free(eb__perm_list *l);
/* 1 when address matches an entry (first match wins), else 0. */
int eb__perm_allows(const eb__perm_list *l, const char *address);

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
 * body into the payload, which must outlive f. */
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

/* ---- connections (conn.c) and server (server.c) ---- */

typedef struct eb__bconn eb__bconn;

struct eb_bridge {
	uv_loop_t     *loop;  /* borrowed */
	eb_bus        *bus;   /* borrowed */
	eb_bridge_opts opts;  /* strings point into the copies below */
	char          *host;  /* owned */
	char          *token; /* owned */
	eb__perm_list  inbound;
	eb__perm_list  outbound;
	eb__tls_ctx   *tls; /* owned, NULL without TLS */

	uv_tcp_t   listener;
	uv_timer_t sweep;       /* idle and reply expiry, once a second */
	eb__stall  sweep_stall; /* no silence verdicts right after a stall */
	uv_idle_t  drain;       /* runs paused connections' buffered frames */
	int        port;
	int        started;
	int        listener_inited;
	int        drain_inited;
	eb__list   paused; /* of eb__bconn that used their frame budget */
	/* Flow control: connections that stopped reading because the address
	 * their last frame went to is busy (eb_bus_address_busy); the bus's
	 * pressure observer moves them back to paused (to drain) when it is
	 * not any more. */
	eb__list blocked;
	int      pressure_watching;
	/* Write coalescing: connections with gathered output, flushed by
	 * flush_prep (after the idle phase: bus deliveries) and flush_check
	 * (after the poll phase: answers to reads), active only while the list
	 * is non-empty. */
	eb__list     pending_out;
	uv_prepare_t flush_prep;
	uv_check_t   flush_check;
	int          flush_inited;
	int          flush_active;

	/* The node-wide input budget (bridge.input_budget_bytes): every
	 * connection's input buffer and what a layer holds for it
	 * (eb__bconn_layer_hold), plus other servers' charges (budget.h). */
	eb__budget input;

	eb__list conns; /* of eb__bconn (open, not closing) */
	eb__list
	    fresh;     /* of eb__bconn without a complete frame, oldest first */
	unsigned live; /* accepted sockets whose handle has not closed */
	uint64_t next_conn_id;

	eb_bridge_stats stats;

	eb_bridge_hook_fn hook; /* NULL: none */
	void             *hook_arg;
	eb__obs           closed_obs; /* bridge_obs.h */

	int                closing;
	int                open_handles;
	eb_bridge_close_cb close_cb;
	void              *close_arg;
};

/* Accepts one pending connection from the listener (server.c calls). */
void eb__bconn_accept(eb_bridge *b);
/*
 * Installs a transport over an accepted stream before it starts (web/:
 * the WebSocket and SockJS layer): it may replace s->ops and s->cbs with
 * its own, keeping the originals to call, and sets s->layer. 0 or an
 * error (the connection is then closed).
 */
typedef int (*eb__stream_layer_fn)(eb__stream *s, void *arg);
/*
 * Accepts one pending connection from another listener (web/: its own
 * port) as a bridge connection: the same permissions, authentication,
 * bounds, hook and statistics as the bridge's own; layer (non-NULL) wraps
 * the stream, plain or TLS by the bridge's TLS options.
 */
void eb__bconn_accept_from(
    eb_bridge *b, uv_stream_t *listener, eb__stream_layer_fn layer, void *arg);
/*
 * A connection without a socket (null stream: output discarded), fed with
 * eb__bconn_feed(): the frame-handling entry point for the fuzzer and tests.
 * Close it with eb__bconn_close() like any other.
 */
eb__bconn *eb__bconn_open_detached(eb_bridge *b);
void       eb__bconn_feed(eb__bconn *c, const char *data, size_t n);
/* A connection's stream (web/: the layer of a SockJS xhr session over a
 * detached connection, whose output it takes instead of discarding). */
eb__stream *eb__bconn_stream(eb__bconn *c);
/* Closes a connection unless it is already closing (the hook, the budget,
 * timeouts and errors may each reach one); reason for the log. */
void eb__bconn_close(eb__bconn *c, const char *reason);
/*
 * Periodic work: expires replies and decides (never closes) whether the
 * connection must go (idle, TLS handshake too slow); then
 * eb__bconn_doomed() returns the reason and server.c closes it.
 */
void        eb__bconn_sweep(eb__bconn *c, uint64_t now_ms);
const char *eb__bconn_doomed(const eb__bconn *c);
void        eb__bconn_info(
           const eb__bconn *c, uint64_t now_ms, eb_bridge_conn_info *info);
eb__bconn *eb__bconn_from_link(eb__list *l);
/* Continues a paused connection (drain idle); see conn.c. */
void       eb__bconn_drain(eb__bconn *c);
eb__bconn *eb__bconn_from_pause_link(eb__list *l);
/* Writes a connection's gathered output now (leaves b->pending_out). */
void       eb__bconn_flush(eb__bconn *c);
eb__bconn *eb__bconn_from_out_link(eb__list *l);
/* Initializes the flush handles if needed and starts them. */
void eb__bridge_flush_wake(eb_bridge *b);
/* Initializes the drain handle if needed and makes it run next turn. */
void eb__bridge_drain_wake(eb_bridge *b);
/* The bus's pressure observer (eb_bus_pressure_fn; arg: the bridge). */
void eb__bridge_pressure_cb(
    eb_bus *bus, const char *address, int busy, void *arg);
/*
 * A layer's share of its connection's accounting (web/: a partial
 * WebSocket message, an xhr_send body, a request head). bytes: what the
 * layer holds for the client now, counted with the connection's own input
 * buffer in the node-wide input budget (the connections holding the most
 * are closed beyond it, this one included); since_ms: when the unfinished
 * unit (message, request head or body) began, 0 when there is none. The
 * frame deadline (bridge.frame_timeout_ms) runs from since_ms and is not
 * reset by further bytes of the same unit. May close c (check
 * s->closing).
 */
void eb__bconn_layer_hold(eb__bconn *c, size_t bytes, uint64_t since_ms);
/*
 * Bounds a layer's own output (WebSocket pongs and close frames, SockJS
 * frames and heartbeats, HTTP answers), which does not pass through the
 * connection's frame writer: when the stream's backlog plus pending bytes
 * exceed bridge.write_queue_max_bytes, closes c as a slow consumer
 * (counted and logged as one). 1 when it closed c.
 */
int eb__bconn_out_check(eb__bconn *c, size_t pending);
/* Gives back the connections' empty input buffers (the budget's reclaim
 * callback; arg: the bridge). */
void eb__bridge_input_reclaim(eb__budget *bg, void *arg);

/* A socket's handle closed (live--); server.c may finish closing. */
void eb__bridge_conn_gone(eb_bridge *b);

#endif
