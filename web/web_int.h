/*
 * Web front internals shared by server.c (options, listener, heartbeat
 * timer, close) and session.c (the per-socket layer over a bridge
 * connection's stream: HTTP requests read with http/reader.h and answered
 * with http/response.h, the SockJS endpoints, the
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
#include <wslay/wslay.h>

#include <uv.h>

#include <ebnode/web.h>

#include "bridge/bridge_layer.h"
#include "common/hmap.h"
#include "common/list.h"
#include "common/stall.h"
#include "http/reader.h"

struct eb_web {
	uv_loop_t  *loop;   /* borrowed */
	eb_bridge  *bridge; /* borrowed */
	eb_web_opts opts;   /* strings point into the copies below */
	char       *host;   /* owned */
	char       *path;   /* owned, without a trailing '/' */
	size_t      path_len;

	uv_tcp_t   listener;
	uv_timer_t beat;       /* heartbeats */
	uint64_t   beat_ms;    /* its period */
	eb__stall  beat_stall; /* no disconnect verdict after a stall */
	int        listener_inited;
	int        beat_inited;
	int        port;
	int        started;

	eb__list sessions; /* of web_sess, open or closing */
	eb__list xhrs;     /* of web_xhr (xhr.c), open or closing */
	eb__hmap xhr_map;  /* web_xhr by session id, open ones only */
	unsigned live;     /* sessions not yet freed */

	eb_web_stats stats;

	int             closing;
	int             open_handles;
	eb_web_close_cb close_cb;
	void           *close_arg;
};

typedef enum web_state {
	WEB_HTTP = 0, /* reading request heads */
	WEB_SOCKJS,   /* upgraded: SockJS websocket transport */
	WEB_RAW,      /* upgraded: one message per text frame */
	WEB_XHR,      /* an xhr/xhr_streaming response is open (xhr.c) */
	WEB_DONE      /* answered with an error; closing */
} web_state;

typedef struct web_sess {
	eb__list              link; /* in w->sessions */
	eb_web               *w;    /* borrowed */
	eb__stream           *s;    /* borrowed: the bridge connection's */
	const eb__stream_ops *inner;
	eb__stream_cbs        conn_cbs; /* the bridge connection's */
	web_state             state;

	eb__http_reader rd; /* the request head and body (http/reader.h) */

	wslay_event_context_ptr ctx;
	/* The socket bytes of the read being handled, borrowed for the
	 * call: wslay reads them in place (no copy kept). */
	const char *rd_p;
	size_t      rd_n;
	eb__buf     wsout; /* wslay's output, to the socket */
	eb__buf     feed;  /* frames for the bridge connection */
	eb__buf     msg;   /* a SockJS frame being assembled */
	eb__buf     one;   /* one outgoing message, reworded */
	uint64_t    last_out_ms;
	int         proto_error; /* a SockJS message was broken */
	/* The unfinished WebSocket message wslay assembles: the payload it
	 * has allocated for it (each frame's declared length, allocated at
	 * the frame's start) and when its first frame began (0: none). */
	size_t   ws_partial;
	uint64_t ws_partial_ms;
	/* When the first byte of the request being parsed (head and body)
	 * arrived; 0 between requests. */
	uint64_t req_started_ms;

	/* xhr transports (xhr.c): the request body, the session a receiving
	 * response is attached to, its kind and the bytes it carried. */
	eb__buf         body;
	int             body_over; /* the body exceeded the bound */
	struct web_xhr *xs;        /* NULL: not receiving */
	int             xhr_poll;  /* xhr (one answer) vs xhr_streaming */
	size_t          xhr_sent;
	int             pinged; /* the carrier connection got its ping */
} web_sess;

/* Installs the layer on an accepted bridge stream (eb__stream_layer_fn;
 * arg is the eb_web). */
int eb__web_layer(eb__stream *s, void *arg);
/* Heartbeat pass over every upgraded session (the beat timer). */
void eb__web_beat(eb_web *w, uint64_t now_ms);
/* Closes the bridge connection under every session (eb_web_close). */
void eb__web_close_sessions(eb_web *w);
/* A session was freed (live--); server.c may finish closing. */
void eb__web_session_gone(eb_web *w);

/* session.c helpers for xhr.c */
/* Reports what the session holds for its client (the unfinished
 * WebSocket message, the request body) and since when, to the bridge
 * connection's accounting: the node-wide input budget and the frame
 * deadline (eb__bconn_layer_hold). May close the connection. */
void eb__web_account(web_sess *ss);
/* Writes ss->wsout to the socket; a failure closes the connection. */
void eb__web_flush(web_sess *ss);
/* A complete HTTP answer with Content-Length (extra: header lines; the
 * reason phrase from http/response.h's table). */
void eb__web_reply(web_sess *ss, int code, const char *content_type,
    const char *extra, const char *body);
/* The CORS header lines echoing the request's Origin. */
void eb__web_cors(const web_sess *ss, char *out, size_t n);
/* A SockJS client message (a JSON array of strings, or one string) as
 * bridge frames appended to ss->feed; sets ss->proto_error if broken. */
void eb__web_sockjs_in(web_sess *ss, const char *p, size_t n);
/* The connection's frames in b as one SockJS "a[...]" frame in msg
 * (emptied first; one: scratch); 0 when none (pongs are dropped). */
int eb__web_sockjs_frame(eb__buf *msg, eb__buf *one, const eb__buf *b);

/* xhr.c: the SockJS xhr_streaming, xhr (polling) and xhr_send transports,
 * sessions that outlive one HTTP connection. */
/* A request for <path>/<server>/<sid>/<kind> other than websocket;
 * 0 when kind is not an xhr transport (the caller answers 404). */
int eb__web_xhr_request(web_sess *ss, const char *sid, size_t sid_len,
    const char *kind, size_t kind_len);
/* The carrier socket of a receiving response closed. */
void eb__web_xhr_detach(web_sess *ss);
/* Heartbeats for receiving responses, the disconnect delay. */
void eb__web_xhr_beat(eb_web *w, uint64_t now_ms);
/* Closes every xhr session (eb_web_close). */
void eb__web_xhr_close_all(eb_web *w);

#endif
