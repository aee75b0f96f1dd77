/*
 * The Vert.x cluster transport (docs/VERTX.md "Transport"): a TCP server on
 * the cluster port and one outgoing connection per peer node, each on a
 * stream/ stream. Connections are one-way, as Vert.x's: frames flow from
 * the side that connected to the side that accepted; an accepting side
 * writes nothing but one 0x01 byte per ping it receives, and a connecting
 * side reads nothing but those pongs.
 *
 * Bounds (the links' rules, STYLE B5):
 *   - inbound frames are split with common/frame.h against max_frame before
 *     any of their bytes is buffered; a frame that is oversized, negative
 *     or does not decode (EB_EFRAME) closes the connection with a WARN
 *     (bad-frame) and counts in eb__vx_net_stats.bad_frames;
 *   - an outgoing connection whose unsent bytes (waiting for the connect,
 *     or queued in the stream) pass max_out is closed (slow-peer): the
 *     frames it held are dropped and on_down reports it, so that the owner
 *     fails what waited for answers over it;
 *   - a connection must be up within connect_timeout_ms; with pings on, a
 *     connection pings every ping_interval_ms and is closed when no pong
 *     came within ping_timeout_ms.
 *
 * Loop thread only. Frames passed to on_frame are borrowed for the call.
 * The net owns its connections; node ids and hosts passed in are copied.
 */
#ifndef EB_VERTX_NET_H
#define EB_VERTX_NET_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include <ebnode/err.h>

#include "common/buf.h"
#include "vertx/wire.h"

typedef struct eb__vx_net eb__vx_net; /* opaque */

/* A frame that arrived on an accepted connection (not a ping). status 0:
 * f is whole; EB_EPROTO: a version or codec this node cannot read, f holds
 * what could be read (address, reply address, sender) and why says what
 * a JVM would answer (docs/VERTX.md "The wire frame"). */
typedef void (*eb__vx_frame_cb)(eb__vx_net *n, int status,
    const eb__vx_frame *f, const char *why, void *arg);
/* The outgoing connection to node_id is gone (err: why); frames it held
 * were not delivered. Called on a later turn than the close (never from
 * inside eb__vx_net_send or _drop), once its socket has closed; a send in
 * between already opened a new connection. */
typedef void (*eb__vx_down_cb)(
    eb__vx_net *n, const char *node_id, int err, void *arg);
/* The outgoing connection to node_id is up (a later turn than the send
 * that opened it). */
typedef void (*eb__vx_up_cb)(eb__vx_net *n, const char *node_id, void *arg);
typedef void (*eb__vx_net_close_cb)(eb__vx_net *n, void *arg);

typedef struct eb__vx_net_cfg {
	const char     *host; /* listen address (numeric) */
	int             port; /* 0: any */
	uint32_t        max_frame;
	size_t          max_out;
	uint32_t        connect_timeout_ms;
	uint32_t        ping_interval_ms; /* 0: no pings */
	uint32_t        ping_timeout_ms;
	eb__vx_frame_cb on_frame;
	eb__vx_down_cb  on_down; /* may be NULL */
	void           *arg;
	eb__vx_up_cb    on_up; /* may be NULL */
} eb__vx_net_cfg;

typedef struct eb__vx_net_stats {
	uint64_t frames_in;
	uint64_t frames_out;
	uint64_t bad_frames;  /* inbound connections closed for garbage */
	uint64_t slow_closed; /* outgoing connections closed: peer too slow */
	uint64_t pings_in;
	uint64_t pings_out;
	uint64_t pong_timeouts;
	uint64_t connect_failed;
	size_t   inbound;  /* accepted connections open now */
	size_t   outbound; /* outgoing connections open now */
} eb__vx_net_stats;

/* No I/O until start. 0 or UV_EINVAL. */
int eb__vx_net_new(uv_loop_t *loop, const eb__vx_net_cfg *cfg, eb__vx_net **np);
/* Binds and listens; 0 or a libuv error (detail in e). */
int eb__vx_net_start(eb__vx_net *n, eb_errbuf *e);
/* The bound port (after start). */
int eb__vx_net_port(const eb__vx_net *n);
/* Exactly once; open connections are closed (on_down is not called
 * then); cb on a later turn. */
void eb__vx_net_close(eb__vx_net *n, eb__vx_net_close_cb cb, void *arg);

/*
 * Sends every byte of frames (whole frames, eb__vx_encode()) to node_id at
 * host:port over its connection, opened if there is none. frames is left
 * empty. 0: queued (a failure to connect or write is on_down's);
 * EB_EFULL: the connection passed max_out and was closed (on_down
 * follows); UV_EINVAL: host is not a numeric address (no connection).
 */
int eb__vx_net_send(eb__vx_net *n, const char *node_id, const char *host,
    int port, eb__buf *frames);
/* Closes the outgoing connection to node_id, if any (a member left). */
void eb__vx_net_drop(eb__vx_net *n, const char *node_id);

void eb__vx_net_get_stats(const eb__vx_net *n, eb__vx_net_stats *out);

#endif
