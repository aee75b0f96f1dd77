/*
 * The bridge as web/ sees it: a transport layered over a bridge
 * connection's stream (WebSocket, SockJS), and connections without a
 * socket fed by such a layer (SockJS xhr sessions). Nothing else of the
 * bridge's internals (frames, permissions, the connection structure) is
 * visible here; web/ treats eb__bconn as opaque.
 *
 * Ownership: the bridge owns every connection and its stream; a layer owns
 * what it hangs off s->layer. A connection pointer stays valid until its
 * stream's closed callback has run (the layer's wrapper of it sees that
 * callback last). Threads: loop thread only.
 */
#ifndef EB_BRIDGE_BRIDGE_LAYER_H
#define EB_BRIDGE_BRIDGE_LAYER_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include <ebnode/bridge.h>

/* struct eb_bridge, for web/xhr.c's connection-limit check only (see
 * bridge/bridge_state.h). */
#include "bridge/bridge_state.h"
#include "stream/stream.h"

typedef struct eb__bconn eb__bconn;

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

#endif
