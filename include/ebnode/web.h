/*
 * The browser bridge: a SockJS and WebSocket front for an eb_bridge, on its
 * own port, compatible with the Vert.x SockJS event-bus bridge so that the
 * official browser client (npm @vertx/eventbus-bridge-client.js, over
 * sockjs-client) works unchanged (docs/BROWSER.md).
 *
 * Under opts.path (default "/eventbus") it serves the SockJS info endpoint
 * (<path>/info), the SockJS websocket transport
 * (<path>/<server>/<session>/websocket) and a raw WebSocket
 * (<path>/websocket: one event-bus JSON message per text frame). Every
 * upgraded socket is a connection of the bridge it fronts: the same
 * permitted lists, token authentication, TLS (wss when the bridge has
 * TLS), bounds (frame size, write queue, connections, deadlines), hook and
 * statistics; ingress routing follows from the bus as for TCP clients.
 *
 * Threads: loop thread only. The bridge is borrowed and must outlive the
 * web front (close this first).
 */
#ifndef EBNODE_WEB_H
#define EBNODE_WEB_H

#include <stdint.h>

#include <uv.h>

#include <ebnode/api.h>
#include <ebnode/bridge.h>
#include <ebnode/err.h>

typedef struct eb_web eb_web; /* opaque */

typedef struct eb_web_opts {
	const char *host;    /* listen address, default "127.0.0.1" */
	int         port;    /* 0: pick one, see eb_web_port() */
	int         backlog; /* default 128 */
	const char *path;    /* URL prefix, default "/eventbus" */
	/* SockJS "h" frames (raw WebSocket: pings) after this much silence
	 * towards the client; default 25000 as SockJS; 0: none. */
	uint64_t heartbeat_ms;
	/* Bytes of one HTTP request head, default 8192 (431 beyond). */
	uint32_t max_header_bytes;
} eb_web_opts;

EB_API void eb_web_opts_init(eb_web_opts *opts);

/* Validates and copies the options. No I/O. 0 or EB_ECONF (detail in
 * err). */
EB_API int eb_web_new(uv_loop_t *loop, eb_bridge *bridge,
    const eb_web_opts *opts, eb_errbuf *err, eb_web **webp);
/* Binds and listens; 0 or a libuv error. */
EB_API int eb_web_start(eb_web *w, eb_errbuf *err);
/* The bound port after a successful start, else 0. */
EB_API int eb_web_port(const eb_web *w);

/* Counters since eb_web_new(). */
typedef struct eb_web_stats {
	uint64_t http_requests;  /* request heads parsed */
	uint64_t info_requests;  /* <path>/info */
	uint64_t sockjs_opened;  /* SockJS websocket sessions */
	uint64_t raw_opened;     /* raw WebSockets */
	uint64_t sessions;       /* open WebSockets of both kinds */
	uint64_t http_rejected;  /* 4xx answers */
	uint64_t ws_messages_in; /* text messages from clients */
	uint64_t heartbeats;     /* "h" frames and pings sent */
	uint64_t xhr_opened;     /* SockJS xhr/xhr_streaming sessions */
	uint64_t xhr_sessions;   /* of them open now */
	uint64_t xhr_evicted;    /* closed at the limit for a new one */
} eb_web_stats;

EB_API void eb_web_stats_get(const eb_web *w, eb_web_stats *out);

typedef void (*eb_web_close_cb)(eb_web *w, void *arg);
/* Exactly once, also after a failed start: stops listening, closes every
 * connection it accepted, then cb on a later tick; freed after cb. */
EB_API void eb_web_close(eb_web *w, eb_web_close_cb cb, void *arg);

#endif
