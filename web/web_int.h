/*
 * Web front internals shared by server.c (options, listener, heartbeat
 * timer, close) and session.c (the per-socket layer over a bridge
 * connection's stream: HTTP request heads, the SockJS endpoints, the
 * WebSocket upgrade, wslay framing, SockJS message framing).
 *
 * Ownership: the bridge owns each connection and its stream; the layer's
 * session state (web_sess) hangs off stream->layer, is listed in w->sessions
 * and is freed when the stream's handle has closed, just before the
 * bridge's own closed callback. The web front counts its live sessions and
 * finishes closing only after the last one is gone.
 *
 * Threads: loop thread only.
 */
#ifndef EB_WEB_WEB_INT_H
#define EB_WEB_WEB_INT_H

#include <stdint.h>

#include <uv.h>

#include <ebnode/web.h>

#include "bridge/bridge_int.h"
#include "common/list.h"

struct eb_web {
	uv_loop_t  *loop;   /* borrowed */
	eb_bridge  *bridge; /* borrowed */
	eb_web_opts opts;   /* strings point into the copies below */
	char       *host;   /* owned */
	char       *path;   /* owned, without a trailing '/' */
	size_t      path_len;

	uv_tcp_t   listener;
	uv_timer_t beat; /* heartbeats */
	int        listener_inited;
	int        beat_inited;
	int        port;
	int        started;

	eb_list  sessions; /* of web_sess, open or closing */
	unsigned live;     /* sessions not yet freed */

	eb_web_stats stats;

	int             closing;
	int             open_handles;
	eb_web_close_cb close_cb;
	void           *close_arg;
};

/* Installs the layer on an accepted bridge stream (eb__stream_layer_fn;
 * arg is the eb_web). */
int eb__web_layer(eb__stream *s, void *arg);
/* Heartbeat pass over every upgraded session (the beat timer). */
void eb__web_beat(eb_web *w, uint64_t now_ms);
/* Closes the bridge connection under every session (eb_web_close). */
void eb__web_close_sessions(eb_web *w);
/* A session was freed (live--); server.c may finish closing. */
void eb__web_session_gone(eb_web *w);

#endif
