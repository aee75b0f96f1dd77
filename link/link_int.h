/*
 * Node link internals shared by link/link*.c only.
 *
 * Ownership: the manager owns its peers (list) and connections (list).
 * A peer has at most one up connection (peer->conn) and, when this node is
 * the dialer, at most one connection being dialed (peer->dialing). A
 * connection points back to its peer (borrowed) once known: at once for
 * outbound ones, after the hello for inbound ones; removing a peer clears
 * those back pointers before it frees the peer.
 *
 * Timing: one manager timer ticks every tick_ms and drives reconnects,
 * heartbeats, dead-link detection and connect/hello timeouts. Output is
 * coalesced per connection and written in the prepare phase of the loop
 * turn that made it, just before the loop polls (so a bus turn's frames
 * leave in that turn, not the next: the next node starts on them while
 * this one goes on); an idle handle backs it up so that output made after
 * the prepare phase keeps the loop from blocking. Both are active only
 * while some connection has output pending.
 *
 * Bytes: each connection is an eb__stream (stream/stream.h): its socket,
 * its (mutual) TLS as client or server, its read path and its write queue,
 * whose backlog is what "queued" and the max_out cut count.
 *
 * Threads: loop thread only.
 */
#ifndef EB_LINK_LINK_INT_H
#define EB_LINK_LINK_INT_H

#include <stdint.h>
#include <stdlib.h>

#include <uv.h>

#include <ebnode/link.h>
#include <ebnode/log.h>

#include "common/assert.h"
#include "common/buf.h"
#include "common/frame.h"
#include "common/list.h"
#include "common/stall.h"
#include "link/link.h"
#include "stream/stream.h"
#include "tls/tls.h"

enum { LINK_FRAME_HELLO = 1, LINK_FRAME_HEARTBEAT = 2 };

enum link_state {
	LINK_CONNECTING = 0, /* outbound TCP connect in progress */
	LINK_HELLO = 1,      /* connected, waiting for the peer's hello */
	LINK_UP = 2,
	LINK_CLOSING = 3
};

typedef struct link_peer {
	eb__list link; /* in mgr->peers */
	uint32_t id;
	char    *node_id; /* owned */
	char    *host;    /* owned; NULL: known only from an inbound link */
	int      port;
	int      dialer;             /* our node id is the lower one: we dial */
	struct link_conn *conn;      /* borrowed: the up connection */
	struct link_conn *dialing;   /* borrowed: outbound attempt */
	uint64_t          retry_at;  /* loop ms; next dial not before */
	uint32_t          attempts;  /* failed dials since the last up */
	int               resolving; /* a host name lookup is in flight */
	uint64_t          frames_out, frames_in, bytes_out, bytes_in, ups;
	uint64_t          congestions; /* times its link became congested */
	uint16_t          rec_min, rec_max; /* member record range; 0: none */
	uint16_t          version;          /* of the up link, else 0 */
	int               down;       /* eb_link_down_reason, NONE when up */
	uint64_t          down_since; /* loop ms down was set */
} link_peer;

typedef struct link_conn {
	eb__list        link;       /* in mgr->conns */
	eb__list        flush_link; /* in mgr->dirty while output pending */
	eb_link_mgr    *mgr;        /* borrowed */
	link_peer      *peer;       /* borrowed; NULL until known */
	eb__stream      s;          /* socket, TLS, write queue */
	int             setup_err;  /* eb__stream_init* failed (EB_ETLS) */
	enum link_state state;
	int             outbound;
	int             doomed;  /* close on the next idle turn */
	uint64_t        started; /* loop ms */
	uint64_t        last_rx;
	uint64_t        last_tx;
	eb__frame_dec   dec;
	eb__buf         out;       /* plaintext frames not yet written */
	size_t          frame_off; /* start of the frame being built */
	int             congested; /* told the handler: write queue past HI */
	int             fail;      /* eb_link_down_reason of a failure, 0 */
	uint16_t        version;   /* the linked (or proposed) version */
	char            peer_addr[64]; /* for log lines */
} link_conn;

struct eb_link_mgr {
	uv_loop_t              *loop; /* borrowed */
	char                   *node_id;
	char                   *cluster;
	char                   *host;
	int                     port;
	int                     bound_port;
	uint32_t                heartbeat_ms, dead_ms, connect_timeout_ms;
	uint32_t                backoff_min_ms, backoff_max_ms, tick_ms;
	uint32_t                max_frame;
	uint64_t                max_out;
	uint32_t                max_pending; /* inbound conns before hello */
	uint16_t                proto_min, proto_max; /* spoken */
	uint64_t                down_total[EB_LINK_DOWN_REASONS];
	int                     pending_full; /* logged this episode */
	eb__tls_ctx            *tls_ctx;      /* owned, NULL: plain TCP */
	uv_tcp_t                listener;
	uv_timer_t              timer;
	eb__stall               stall; /* no silence verdicts after a stall */
	uv_idle_t               idle;
	uv_prepare_t            prep;
	int                     flush_active; /* idle and prep started */
	int                     listening;
	int                     closing;
	int                     open_handles;
	eb__list                peers; /* of link_peer, owned */
	eb__list                conns; /* of link_conn, owned */
	eb__list                dirty; /* of link_conn with output pending */
	eb__list                resolving; /* of struct link_resolve (link.c) */
	uint32_t                next_peer_id;
	link_conn              *cur; /* the frame being built (begin/end) */
	eb_link_mgr_close_cb    close_cb;
	void                   *close_arg;
	const eb__link_handler *h; /* borrowed */
	void                   *hctx;
};

/* link.c */
link_peer *eb__link_peer_find(eb_link_mgr *m, const char *node_id);
link_peer *eb__link_peer_by_id(eb_link_mgr *m, uint32_t id);
link_peer *eb__link_peer_new(eb_link_mgr *m, const char *node_id);
/* A connection finished its hello: make it peer's link (replacing an old
 * one) and tell the upper layer. */
void eb__link_peer_up(eb_link_mgr *m, link_peer *p, link_conn *c);
/* A connection of p went away (c was its up link or its dial). */
void eb__link_peer_lost(eb_link_mgr *m, link_peer *p, link_conn *c);
void eb__link_mgr_conn_gone(eb_link_mgr *m); /* for close accounting */
/* The delay before dial attempt attempts + 1: min * 2^(attempts - 1),
 * capped at max, then drawn in [d/2, d]. */
uint64_t eb__link_backoff_ms(const eb_link_mgr *m, uint32_t attempts);

/* link_conn.c */
/* A connection on a uv_tcp_init'ed stream, to be accepted into (inbound)
 * or connected with eb__link_conn_dial (outbound). */
link_conn *eb__link_conn_new(eb_link_mgr *m, int outbound);
/* Connects an outbound connection; then it starts itself. 0 or an error
 * (the caller closes). */
int  eb__link_conn_dial(link_conn *c, const struct sockaddr *sa);
void eb__link_conn_start(link_conn *c); /* connected: TLS, hello */
/* Closes c unless it is already closing: errors, timeouts and the
 * manager's close may each reach one connection. Starting a connection
 * twice or after close, writing to a closing one, are programming errors
 * (EB_ASSERT). */
void eb__link_conn_close(link_conn *c, const char *why);
/* judge false: no timeout verdicts this tick (after a stall). */
void eb__link_conn_tick(link_conn *c, uint64_t now, bool judge);
void eb__link_conn_flush(link_conn *c);
void eb__link_conn_mark_dirty(link_conn *c);
/* The log level for a failure of c: WARN, but DEBUG for a dial that has
 * failed before (a peer that stays unreachable or misconfigured logs once
 * per episode, not on every back-off retry). */
eb_log_level eb__link_conn_log_level(const link_conn *c);
/* Plaintext input (after TLS, if any). 0 or an error: close. */
int eb__link_conn_input(link_conn *c, const char *p, size_t n);
/* Bytes written but not taken by the kernel yet, with their requests
 * (eb__stream_backlog). */
size_t eb__link_conn_backlog(const link_conn *c);

/* link_version.c */
/* The highest version in both [amin, amax] and [bmin, bmax], else 0. */
uint16_t eb__link_version_pick(
    uint16_t amin, uint16_t amax, uint16_t bmin, uint16_t bmax);
/* The version to propose to p: the highest in common with its record's
 * range (no range: EB_LINK_PROTOCOL_LEGACY), 0 when there is none. */
uint16_t eb__link_version_for(const eb_link_mgr *m, const link_peer *p);
/* p's record range; none: EB_LINK_PROTOCOL_LEGACY..LEGACY. */
void eb__link_peer_range(const link_peer *p, uint16_t *lo, uint16_t *hi);
/* p's record range against ours: version skew is known before any
 * connection (both sides, dialer or not); a record that changed to a
 * common range clears it. */
void eb__link_peer_check_range(eb_link_mgr *m, link_peer *p);
/* p's link is down for reason r (EB_LINK_DOWN_NONE: up again); counts a
 * change into a reason in m->down_total. */
void eb__link_peer_set_down(eb_link_mgr *m, link_peer *p, int r);

/* link_tls.c */
/* The mutual-TLS context of o (CA, certificate and key all given). */
int eb__link_tls_ctx_new(
    const eb_link_opts *o, eb__tls_ctx **ctxp, eb_errbuf *err);
/* Logs a TLS failure of c (op: new, handshake, read, write) with the
 * engine's reason, at c's failure log level. */
void eb__link_tls_log(const link_conn *c, const char *op);

#endif
