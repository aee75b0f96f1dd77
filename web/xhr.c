/*
 * The SockJS xhr transports: xhr_streaming (one long chunked answer per
 * receiving request: a 2 KiB 'h' prelude, then "o", "a[...]" and "h"
 * frames, each followed by '\n', ended after WEB_XHR_RESPONSE_LIMIT bytes
 * so that the client reconnects with the same session), xhr (polling: one
 * frame per answer) and xhr_send (a POSTed JSON array of strings: 204).
 *
 * A session outlives the HTTP connections that carry it, so it is its own
 * bridge connection: a detached one (eb__bconn_open_detached) whose stream
 * this file layers over (s->layer is the web_xhr): the connection's output
 * becomes SockJS frames queued in the session (bounded by
 * bridge.write_queue_max_bytes, the carrier socket's backlog included) and
 * written to the receiving response when one is attached; xhr_send feeds
 * its messages to the connection. Sessions are found by id in w->xhr_map;
 * there are at most bridge.max_connections connections of every kind. A
 * session without a receiving response for WEB_XHR_DISCONNECT_MS closes.
 *
 * The carrier sockets are bridge connections too (the web port accepts
 * only those); each gets one ping frame on its first xhr request so that
 * it no longer counts as a connection that never spoke (evicted at the
 * limit, closed by bridge.first_frame_timeout_ms); the pong is dropped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/util.h"
#include "http/response.h"
#include "web/web_int.h"

#define WEB_XHR_RESPONSE_LIMIT ((size_t) 131072) /* SockJS response_limit */
#define WEB_XHR_DISCONNECT_MS  5000u             /* SockJS disconnect_delay */
#define WEB_XHR_ID_MAX         64u

typedef struct web_xhr {
	eb__hent              hent; /* in w->xhr_map while open */
	eb__list              link; /* in w->xhrs until freed */
	char                  id[WEB_XHR_ID_MAX + 1];
	eb_web               *w;     /* borrowed */
	eb__bconn            *c;     /* the session's bridge connection */
	eb__stream           *s;     /* its stream */
	const eb__stream_ops *inner; /* the null ops */
	eb__stream_cbs        conn_cbs;
	eb__buf               pend; /* frames not yet written to a receiver */
	eb__buf               msg;
	eb__buf               one;
	web_sess             *recv; /* the attached receiving response */
	uint64_t              detached_ms;
	uint64_t              last_out_ms;
	int                   closing;
} web_xhr;

static const char go_away[] = "c[3000,\"Go away!\"]\n";
static const char another[] = "c[2010,\"Another connection still open\"]\n";

/* ---- receiving responses (chunked) ---- */

static void
recv_chunk(web_sess *r, const char *p, size_t n)
{
	char h[24];
	int  k = snprintf(h, sizeof(h), "%zx\r\n", n);

	EB_ASSERT(k > 0 && (size_t) k < sizeof(h));
	eb__buf_append(&r->wsout, h, (size_t) k);
	eb__buf_append(&r->wsout, p, n);
	eb__buf_append(&r->wsout, "\r\n", 2);
	r->xhr_sent += n;
}

/* Ends the chunked answer; the socket reads requests again. */
static void
recv_end(web_sess *r)
{
	eb__buf_append(&r->wsout, "0\r\n\r\n", 5);
	if (r->xs != NULL) {
		r->xs->recv = NULL;
		r->xs->detached_ms = eb__mono_ms();
		r->xs = NULL;
	}
	r->state = WEB_HTTP;
	eb__web_flush(r);
}

/* The session's queued frames to its receiver, if any. */
static void
xhr_push(web_xhr *xs)
{
	web_sess *r = xs->recv;
	size_t    n = eb__buf_avail(&xs->pend);

	if (r == NULL || n == 0) {
		return;
	}
	if (r->s->closing) {
		/* The carrier is closing (its closed callback detaches it
		 * later): the frames wait for the next request. */
		eb__web_xhr_detach(r);
		return;
	}
	recv_chunk(r, eb__buf_head(&xs->pend), n);
	eb__buf_consume(&xs->pend, n);
	xs->last_out_ms = eb__mono_ms();
	if (r->xhr_poll || r->xhr_sent >= WEB_XHR_RESPONSE_LIMIT) {
		recv_end(r);
	} else {
		eb__web_flush(r);
	}
}

void
eb__web_xhr_detach(web_sess *ss)
{
	web_xhr *xs = ss->xs;

	EB_ASSERT(xs != NULL && xs->recv == ss);
	xs->recv = NULL;
	xs->detached_ms = eb__mono_ms();
	ss->xs = NULL;
}

/* ---- the layer over the session's bridge connection ---- */

static web_xhr *
xhr_of(eb__stream *s)
{
	return s->layer;
}

static int
xhr_start(eb__stream *s)
{
	return xhr_of(s)->inner->start(s);
}

static int
xhr_write(eb__stream *s, eb__buf *b)
{
	web_xhr *xs = xhr_of(s);
	size_t   max = xs->w->bridge->opts.write_queue_max_bytes;
	size_t   backlog;

	EB_ASSERT(!s->closing); /* write after close */
	if (!eb__web_sockjs_frame(&xs->msg, &xs->one, b)) {
		b->off = 0;
		b->len = 0;
		return 0;
	}
	b->off = 0;
	b->len = 0;
	backlog = eb__buf_avail(&xs->pend) +
	          (xs->recv != NULL ? eb__stream_backlog(xs->recv->s) : 0);
	if (backlog + eb__buf_avail(&xs->msg) + 1 > max) {
		/* The client does not read: the bridge closes the session
		 * (its write_queue_max_bytes bound, as for a socket). */
		return UV_ENOBUFS;
	}
	eb__buf_append(
	    &xs->pend, eb__buf_head(&xs->msg), eb__buf_avail(&xs->msg));
	eb__buf_append(&xs->pend, "\n", 1);
	xhr_push(xs);
	return 0;
}

static void
xhr_close(eb__stream *s)
{
	web_xhr *xs = xhr_of(s);

	xs->closing = 1;
	eb__hmap_del(&xs->w->xhr_map, &xs->hent);
	if (xs->recv != NULL && xs->recv->s->closing) {
		eb__web_xhr_detach(xs->recv);
	} else if (xs->recv != NULL) {
		web_sess *r = xs->recv;

		recv_chunk(r, go_away, sizeof(go_away) - 1);
		recv_end(r);
	}
	xs->inner->close(s);
}

static void
xhr_read_cb(eb__stream *s, const char *data, size_t n)
{
	xhr_of(s)->conn_cbs.read_cb(s, data, n);
}

static void
xhr_error_cb(eb__stream *s, int status)
{
	xhr_of(s)->conn_cbs.error_cb(s, status);
}

static void
xhr_closed_cb(eb__stream *s)
{
	web_xhr       *xs = xhr_of(s);
	eb_web        *w = xs->w;
	eb__stream_cbs cbs = xs->conn_cbs;

	EB_ASSERT(xs->closing && xs->recv == NULL);
	eb__list_remove(&xs->link);
	EB_ASSERT(w->stats.xhr_sessions > 0);
	w->stats.xhr_sessions--;
	s->layer = NULL;
	s->ops = xs->inner;
	eb__buf_free(&xs->pend);
	eb__buf_free(&xs->msg);
	eb__buf_free(&xs->one);
	free(xs);
	eb__web_session_gone(w);
	cbs.closed_cb(s);
}

static const eb__stream_ops xhr_ops = {
	.name = "sockjs-xhr",
	.start = xhr_start,
	.write = xhr_write,
	.close = xhr_close,
};

static const eb__stream_cbs xhr_cbs = {
	.read_cb = xhr_read_cb,
	.error_cb = xhr_error_cb,
	.closed_cb = xhr_closed_cb,
};

/*
 * At bridge.max_connections, a new session takes the place of the session
 * that has been without a receiving request the longest (none attached:
 * not held by a client that is polling or streaming right now). A client
 * that floods session ids then evicts its own oldest sessions instead of
 * locking new clients out for the disconnect delay; a polling client is
 * without a request only between an answer and its next poll, so it is
 * the last to go. 1 when a slot is free now.
 */
static int
xhr_make_room(eb_web *w)
{
	eb_bridge *b = w->bridge;
	web_xhr   *old = NULL;
	eb__list  *it;

	for (it = w->xhrs.next; it != &w->xhrs; it = it->next) {
		web_xhr *xs = EB_CONTAINER_OF(it, web_xhr, link);

		if (!xs->closing && xs->recv == NULL &&
		    (old == NULL || xs->detached_ms < old->detached_ms)) {
			old = xs;
		}
	}
	if (old == NULL) {
		return 0;
	}
	w->stats.xhr_evicted++;
	EB_LOG_RL_NOTICE("web",
	    "xhr-session-evicted: id=%s detached_ms=%llu open=%llu max=%u",
	    old->id, (unsigned long long) (eb__mono_ms() - old->detached_ms),
	    (unsigned long long) b->stats.conns_open, b->opts.max_connections);
	eb__bconn_close(old->c, "xhr-evicted-at-limit");
	return b->stats.conns_open < b->opts.max_connections;
}

/* A new session (its "o" queued); NULL at the connection limit. */
static web_xhr *
xhr_open(eb_web *w, const char *sid, size_t n)
{
	eb_bridge *b = w->bridge;
	web_xhr   *xs;

	if (w->closing || b->closing) {
		return NULL;
	}
	if (b->stats.conns_open >= b->opts.max_connections &&
	    !xhr_make_room(w)) {
		return NULL;
	}
	xs = eb__calloc(1, sizeof(*xs));
	memcpy(xs->id, sid, n);
	xs->id[n] = '\0';
	xs->w = w;
	xs->c = eb__bconn_open_detached(b);
	xs->s = eb__bconn_stream(xs->c);
	xs->inner = xs->s->ops;
	xs->conn_cbs = xs->s->cbs;
	eb__buf_init(&xs->pend);
	eb__buf_init(&xs->msg);
	eb__buf_init(&xs->one);
	xs->hent.key = xs->id;
	eb__hmap_put(&w->xhr_map, &xs->hent);
	eb__list_insert_tail(&w->xhrs, &xs->link);
	w->live++;
	w->stats.xhr_opened++;
	w->stats.xhr_sessions++;
	xs->last_out_ms = eb__mono_ms();
	xs->detached_ms = xs->last_out_ms;
	xs->s->layer = xs;
	xs->s->ops = &xhr_ops;
	xs->s->cbs = xhr_cbs;
	eb__buf_append(&xs->pend, "o\n", 2);
	EB_LOG_DEBUG("web", "xhr-session-open: id=%s", xs->id);
	return xs;
}

static web_xhr *
xhr_find(eb_web *w, const char *sid)
{
	eb__hent *e = eb__hmap_get(&w->xhr_map, sid);

	return e == NULL ? NULL : EB_CONTAINER_OF(e, web_xhr, hent);
}

/* The carrier's bridge connection has spoken (see the top comment). */
static void
carrier_ping(web_sess *ss)
{
	static const char ping[] = "\0\0\0\017{\"type\":\"ping\"}";

	if (ss->pinged) {
		return;
	}
	ss->pinged = 1;
	ss->conn_cbs.read_cb(ss->s, ping, sizeof(ping) - 1);
}

static void
xhr_receive(web_sess *ss, const char *sid, int poll)
{
	eb_web            *w = ss->w;
	web_xhr           *xs = xhr_find(w, sid);
	char               cors[512];
	eb__http_resp_head h = {
		.status = 200,
		.content_type = "application/javascript; charset=UTF-8",
		.chunked = 1,
		.cache_control = "no-store, no-cache, no-transform, "
		                 "must-revalidate, max-age=0",
		.extra = cors,
	};

	if (xs == NULL) {
		xs = xhr_open(w, sid, strlen(sid));
		if (xs == NULL) {
			eb__web_cors(ss, cors, sizeof(cors));
			eb__web_reply(
			    ss, 503, "text/plain", cors, "Too many sessions");
			return;
		}
	}
	eb__web_cors(ss, cors, sizeof(cors));
	eb__http_head_write(&ss->wsout, &h);
	ss->state = WEB_XHR;
	ss->xhr_poll = poll;
	ss->xhr_sent = 0;
	if (!poll) {
		char prelude[2049];

		memset(prelude, 'h', 2048);
		prelude[2048] = '\n';
		recv_chunk(ss, prelude, sizeof(prelude));
		ss->xhr_sent = 0;
	}
	if (xs->recv != NULL && xs->recv->s->closing) {
		eb__web_xhr_detach(xs->recv); /* aborted, not yet closed */
	}
	if (xs->recv != NULL) {
		recv_chunk(ss, another, sizeof(another) - 1);
		recv_end(ss);
		return;
	}
	xs->recv = ss;
	ss->xs = xs;
	if (eb__buf_avail(&xs->pend) > 0) {
		xhr_push(xs);
	} else {
		eb__web_flush(ss);
	}
}

static void
xhr_send(web_sess *ss, const char *sid)
{
	web_xhr *xs = xhr_find(ss->w, sid);
	char     cors[512];

	eb__web_cors(ss, cors, sizeof(cors));
	if (xs == NULL) {
		eb__web_reply(ss, 404, "text/plain", cors, "Not found");
		return;
	}
	if (ss->body_over) {
		eb__web_reply(
		    ss, 413, "text/plain", cors, "Payload too large.");
		return;
	}
	if (eb__buf_avail(&ss->body) == 0) {
		eb__web_reply(ss, 500, "text/plain", cors, "Payload expected.");
		return;
	}
	ss->proto_error = 0;
	ss->feed.off = 0;
	ss->feed.len = 0;
	eb__web_sockjs_in(
	    ss, eb__buf_head(&ss->body), eb__buf_avail(&ss->body));
	if (ss->proto_error) {
		ss->proto_error = 0;
		ss->feed.off = 0;
		ss->feed.len = 0;
		eb__web_reply(
		    ss, 500, "text/plain", cors, "Broken JSON encoding.");
		return;
	}
	ss->w->stats.ws_messages_in++;
	eb__bconn_feed(
	    xs->c, eb__buf_head(&ss->feed), eb__buf_avail(&ss->feed));
	ss->feed.off = 0;
	ss->feed.len = 0;
	eb__web_reply(ss, 204, "text/plain; charset=UTF-8", cors, "");
}

int
eb__web_xhr_request(web_sess *ss, const char *sid, size_t sid_len,
    const char *kind, size_t kind_len)
{
	char id[WEB_XHR_ID_MAX + 1];
	int  which;

	if (kind_len == 13 && memcmp(kind, "xhr_streaming", 13) == 0) {
		which = 0;
	} else if (kind_len == 3 && memcmp(kind, "xhr", 3) == 0) {
		which = 1;
	} else if (kind_len == 8 && memcmp(kind, "xhr_send", 8) == 0) {
		which = 2;
	} else {
		return 0;
	}
	if (sid_len > WEB_XHR_ID_MAX) {
		return 0;
	}
	if (eb__http_reader_method_is(&ss->rd, "OPTIONS")) {
		char cors[512];
		char extra[700];

		eb__web_cors(ss, cors, sizeof(cors));
		(void) snprintf(extra, sizeof(extra),
		    "%sAccess-Control-Allow-Methods: OPTIONS, POST\r\n"
		    "Access-Control-Max-Age: 31536000\r\n",
		    cors);
		eb__web_reply(ss, 204, "text/plain", extra, "");
		return 1;
	}
	if (!eb__http_reader_method_is(&ss->rd, "POST")) {
		return 0;
	}
	memcpy(id, sid, sid_len);
	id[sid_len] = '\0';
	carrier_ping(ss);
	if (ss->s->closing) {
		return 1;
	}
	if (which == 2) {
		xhr_send(ss, id);
	} else {
		xhr_receive(ss, id, which == 1);
	}
	return 1;
}

void
eb__web_xhr_beat(eb_web *w, uint64_t now_ms)
{
	eb__list *it;
	eb__list *tmp;

	EB_LIST_FOREACH (it, tmp, &w->xhrs) {
		web_xhr  *xs = EB_CONTAINER_OF(it, web_xhr, link);
		web_sess *r = xs->recv;

		if (xs->closing) {
			continue;
		}
		if (r == NULL) {
			if (now_ms - xs->detached_ms >= WEB_XHR_DISCONNECT_MS) {
				eb__bconn_close(xs->c, "sockjs-disconnect");
			}
			continue;
		}
		if (w->opts.heartbeat_ms == 0 ||
		    now_ms - xs->last_out_ms < w->opts.heartbeat_ms ||
		    eb__buf_avail(&xs->pend) > 0) {
			continue;
		}
		w->stats.heartbeats++;
		eb__buf_append(&xs->pend, "h\n", 2);
		xhr_push(xs);
	}
}

void
eb__web_xhr_close_all(eb_web *w)
{
	eb__list *it;
	eb__list *tmp;

	EB_LIST_FOREACH (it, tmp, &w->xhrs) {
		web_xhr *xs = EB_CONTAINER_OF(it, web_xhr, link);

		if (!xs->closing) {
			eb__bconn_close(xs->c, "web-closed");
		}
	}
}
