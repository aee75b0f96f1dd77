/*
 * The web layer over one bridge connection's stream (web_int.h).
 *
 * Until a WebSocket upgrade the socket speaks HTTP/1.1 (keep-alive): the
 * SockJS greeting and info endpoint, 404 for the rest. After the upgrade
 * wslay does the WebSocket framing (masking, fragments, control frames,
 * close handshake, the message size bound). Client messages go to the
 * bridge connection as its length-prefixed frames (one per event-bus
 * message: a raw WebSocket text frame, or each string of a SockJS
 * array); the connection's output frames leave as WebSocket text frames
 * (raw), or gathered into one SockJS "a[...]" frame per write. The
 * bridge's pong answers are dropped: the Vert.x SockJS bridge sends none,
 * and the browser client would warn about an unhandled message.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <wslay/wslay.h>

#include <jansson.h>

#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/util.h"
#include "http/reader.h"
#include "http/response.h"
#include "tls/digest.h"
#include "web/web_int.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
/* A scratch buffer bigger than this is given back once empty, so that an
 * idle session keeps little beyond what the accounting counts. */
#define WEB_BUF_KEEP ((size_t) 16384)

static void sess_send(web_sess *ss);

/* ---- output ---- */

static int
sess_write(web_sess *ss, eb__buf *b)
{
	if (eb__buf_avail(b) == 0) {
		return 0;
	}
	ss->last_out_ms = eb__mono_ms();
	return ss->inner->write(ss->s, b);
}

/* Empties b, and gives its memory back when it grew big. */
static void
buf_trim(eb__buf *b)
{
	b->off = 0;
	b->len = 0;
	if (b->cap > WEB_BUF_KEEP) {
		eb__buf_free(b);
	}
}

/*
 * After the layer wrote output of its own (pongs, close frames, SockJS
 * frames, heartbeats, HTTP answers): the same bound as the connection's
 * frames, bridge.write_queue_max_bytes over the socket's backlog, so a
 * client that sends pings and never reads is closed as a slow consumer.
 * 1 when the connection was closed.
 */
static int
sess_bound(web_sess *ss)
{
	size_t pending = 0;

	buf_trim(&ss->wsout);
	if (ss->s->closing) {
		return 1;
	}
	if (ss->ctx != NULL) {
		/* Messages wslay has not framed yet (none while it writes:
		 * the send callback takes everything). */
		pending = wslay_event_get_queued_msg_length(ss->ctx);
	}
	return eb__bconn_out_check(ss->s->data, pending);
}

void
eb__web_flush(web_sess *ss)
{
	int rv;

	if (ss->s->closing) {
		ss->wsout.off = 0;
		ss->wsout.len = 0;
		return;
	}
	rv = sess_write(ss, &ss->wsout);

	if (rv != 0 && !ss->s->closing) {
		ss->conn_cbs.error_cb(ss->s, rv);
		return;
	}
	(void) sess_bound(ss);
}

void
eb__web_account(web_sess *ss)
{
	uint64_t since = ss->req_started_ms;
	size_t   held = ss->ws_partial + (since != 0 ? ss->body.cap : 0);

	if (since == 0 ||
	    (ss->ws_partial_ms != 0 && ss->ws_partial_ms < since)) {
		since = ss->ws_partial_ms;
	}
	if (!ss->s->closing) {
		eb__bconn_layer_hold(ss->s->data, held, since);
	}
}

static void
http_reply(web_sess *ss, int code, const char *content_type, const char *extra,
    const char *body)
{
	eb__http_resp_head h = {
		.status = code,
		.content_type = content_type,
		.cache_control = "no-store, no-cache, no-transform, "
		                 "must-revalidate, max-age=0",
		.extra = extra,
	};

	/* A HEAD answer has the length but never the body (RFC 9110 9.3.2):
	 * a keep-alive client would read it as the next answer. */
	eb__http_response_write(&ss->wsout, &h, body, strlen(body),
	    eb__http_reader_method_is(&ss->rd, "HEAD"));
	if (code >= 400) {
		ss->w->stats.http_rejected++;
	}
	(void) sess_write(ss, &ss->wsout);
	(void) sess_bound(ss);
}

/* The CORS headers SockJS answers with (sockjs-client's info request is
 * cross-origin when the page comes from elsewhere). */
static void
cors_headers(const web_sess *ss, char *out, size_t n)
{
	eb__http_cors_echo(ss->rd.browser.origin.v, out, n);
}

void
eb__web_reply(web_sess *ss, int code, const char *content_type,
    const char *extra, const char *body)
{
	http_reply(ss, code, content_type, extra, body);
}

void
eb__web_cors(const web_sess *ss, char *out, size_t n)
{
	cors_headers(ss, out, n);
}

/* ---- WebSocket ---- */

static ssize_t
ws_recv_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
    void *user)
{
	web_sess *ss = user;
	size_t    n = ss->rd_n;

	(void) flags;
	if (n == 0) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	if (n > len) {
		n = len;
	}
	memcpy(buf, ss->rd_p, n);
	ss->rd_p += n;
	ss->rd_n -= n;
	return (ssize_t) n;
}

static ssize_t
ws_send_cb(wslay_event_context_ptr ctx, const uint8_t *data, size_t len,
    int flags, void *user)
{
	web_sess *ss = user;

	(void) ctx;
	(void) flags;
	eb__buf_append(&ss->wsout, data, len);
	return (ssize_t) len;
}

static void
feed_frame(web_sess *ss, const char *p, size_t n)
{
	unsigned char h[4];

	h[0] = (unsigned char) (n >> 24);
	h[1] = (unsigned char) (n >> 16);
	h[2] = (unsigned char) (n >> 8);
	h[3] = (unsigned char) n;
	eb__buf_append(&ss->feed, h, sizeof(h));
	eb__buf_append(&ss->feed, p, n);
}

/* A SockJS client message: a JSON array of strings (or one string). */
void
eb__web_sockjs_in(web_sess *ss, const char *p, size_t n)
{
	json_error_t e;
	json_t      *root;
	json_t      *v;
	size_t       k;

	if (n == 0) {
		return; /* SockJS ignores empty frames */
	}
	root = json_loadb(p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
	if (root == NULL) {
		ss->proto_error = 1;
		return;
	}
	if (json_is_string(root)) {
		feed_frame(
		    ss, json_string_value(root), json_string_length(root));
	} else if (json_is_array(root)) {
		json_array_foreach(root, k, v)
		{
			if (!json_is_string(v)) {
				ss->proto_error = 1;
				break;
			}
			feed_frame(
			    ss, json_string_value(v), json_string_length(v));
		}
	} else {
		ss->proto_error = 1;
	}
	json_decref(root);
}

static void
ws_msg_cb(wslay_event_context_ptr             ctx,
    const struct wslay_event_on_msg_recv_arg *arg, void *user)
{
	web_sess *ss = user;

	(void) ctx;
	if (wslay_is_ctrl_frame(arg->opcode)) {
		return; /* wslay answers pings and closes itself */
	}
	ss->ws_partial = 0; /* complete: wslay frees it on return */
	ss->ws_partial_ms = 0;
	ss->w->stats.ws_messages_in++;
	if (ss->state == WEB_RAW) {
		feed_frame(ss, (const char *) arg->msg, arg->msg_length);
	} else {
		eb__web_sockjs_in(ss, (const char *) arg->msg, arg->msg_length);
	}
}

/* wslay allocates each data frame's declared payload when the frame
 * starts and keeps the frames of a message until its last: that is what
 * the session holds for the client (eb__web_account). */
static void
ws_frame_start_cb(wslay_event_context_ptr             ctx,
    const struct wslay_event_on_frame_recv_start_arg *arg, void *user)
{
	web_sess *ss = user;

	(void) ctx;
	if (wslay_is_ctrl_frame(arg->opcode)) {
		return; /* at most 125 bytes, freed at its end */
	}
	if (ss->ws_partial_ms == 0) {
		ss->ws_partial_ms = eb__mono_ms();
	}
	ss->ws_partial += (size_t) arg->payload_length;
}

static const struct wslay_event_callbacks ws_callbacks = {
	.recv_callback = ws_recv_cb,
	.send_callback = ws_send_cb,
	.on_frame_recv_start_callback = ws_frame_start_cb,
	.on_msg_recv_callback = ws_msg_cb,
};

/* wslay's queued output to the socket; a failed write closes. */
static void
sess_send(web_sess *ss)
{
	int rv;

	(void) wslay_event_send(ss->ctx);
	rv = sess_write(ss, &ss->wsout);
	if (rv != 0 && !ss->s->closing) {
		ss->conn_cbs.error_cb(ss->s, rv);
		return;
	}
	(void) sess_bound(ss);
}

static void
ws_queue(web_sess *ss, uint8_t opcode, const char *p, size_t n)
{
	struct wslay_event_msg m;

	m.opcode = opcode;
	m.msg = (const uint8_t *) p;
	m.msg_length = n;
	(void) wslay_event_queue_msg(ss->ctx, &m); /* copies */
}

/* The bytes of one read after the upgrade (borrowed); what wslay does not
 * read (it stopped reading: a close, an error) is dropped, the connection
 * then closes. */
static void
ws_input(web_sess *ss, const char *data, size_t n)
{
	int rv;

	ss->rd_p = data;
	ss->rd_n = n;
	rv = wslay_event_recv(ss->ctx);
	ss->rd_p = NULL;
	ss->rd_n = 0;
	if (eb__buf_avail(&ss->feed) > 0) {
		ss->conn_cbs.read_cb(
		    ss->s, eb__buf_head(&ss->feed), eb__buf_avail(&ss->feed));
		buf_trim(&ss->feed);
		if (ss->s->closing) {
			return;
		}
	}
	if (ss->proto_error) {
		(void) wslay_event_queue_close(
		    ss->ctx, WSLAY_CODE_INVALID_FRAME_PAYLOAD_DATA, NULL, 0);
	}
	sess_send(ss);
	if (ss->s->closing) {
		return;
	}
	if (rv != 0 || ss->proto_error || !wslay_event_want_read(ss->ctx)) {
		ss->conn_cbs.error_cb(
		    ss->s, rv != 0 || ss->proto_error ? UV_EPROTO : UV_EOF);
	}
}

/* SockJS string escaping: JSON, with every control byte as \u00XX. */
static void
sockjs_escape(eb__buf *b, const char *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t            k, from = 0;

	for (k = 0; k < n; k++) {
		unsigned char c = (unsigned char) p[k];
		char          e[6];

		if (c >= 0x20 && c != '"' && c != '\\') {
			continue;
		}
		eb__buf_append(b, p + from, k - from);
		from = k + 1;
		if (c == '"' || c == '\\') {
			e[0] = '\\';
			e[1] = (char) c;
			eb__buf_append(b, e, 2);
		} else {
			e[0] = '\\';
			e[1] = 'u';
			e[2] = '0';
			e[3] = '0';
			e[4] = hex[c >> 4];
			e[5] = hex[c & 15];
			eb__buf_append(b, e, 6);
		}
	}
	eb__buf_append(b, p + from, n - from);
}

static int
is_pong(const char *p, size_t n)
{
	static const char pong[] = "{\"type\":\"pong\"}";

	return n == sizeof(pong) - 1 && memcmp(p, pong, n) == 0;
}

/*
 * An err frame without an address, {"type":"err","message":M}, as the
 * Vert.x SockJS bridge words it: {"type":"err","body":M}, keeping
 * "message" for clients of the TCP wording. NULL: not such a frame.
 */
static const char *
err_body(const char *p, size_t n, size_t *vlen)
{
	static const char pre[] = "{\"type\":\"err\",\"message\":";
	size_t            k = sizeof(pre) - 1;

	if (n < k + 3 || memcmp(p, pre, k) != 0 || p[k] != '"' ||
	    p[n - 1] != '}' || p[n - 2] != '"') {
		return NULL;
	}
	*vlen = n - 1 - k;
	return p + k;
}

static void
ws_out_one(eb__buf *to, const char *p, size_t n)
{
	static const char head[] = "{\"type\":\"err\",\"body\":";
	static const char mid[] = ",\"message\":";
	size_t            vlen = 0;
	const char       *v = err_body(p, n, &vlen);

	to->off = 0;
	to->len = 0;
	if (v == NULL) {
		eb__buf_append(to, p, n);
		return;
	}
	eb__buf_append(to, head, sizeof(head) - 1);
	eb__buf_append(to, v, vlen);
	eb__buf_append(to, mid, sizeof(mid) - 1);
	eb__buf_append(to, v, vlen);
	eb__buf_append(to, "}", 1);
}

/* Calls fn for each frame (4-byte length + JSON) of b but pongs. */
static void
frames_each(
    const eb__buf *b, void (*fn)(void *, const char *, size_t), void *arg)
{
	const char *p = eb__buf_head(b);
	size_t      left = eb__buf_avail(b);

	while (left >= 4) {
		const unsigned char *u = (const unsigned char *) p;
		size_t n = ((size_t) u[0] << 24) | ((size_t) u[1] << 16) |
		           ((size_t) u[2] << 8) | (size_t) u[3];

		EB_ASSERT(
		    n <= left - 4); /* the connection writes whole frames */
		p += 4;
		left -= 4;
		if (!is_pong(p, n)) {
			fn(arg, p, n);
		}
		p += n;
		left -= n;
	}
}

typedef struct sockjs_acc {
	eb__buf *msg;
	eb__buf *one;
	int      first;
} sockjs_acc;

static void
sockjs_add(void *arg, const char *p, size_t n)
{
	sockjs_acc *a = arg;

	ws_out_one(a->one, p, n);
	eb__buf_append(a->msg, a->first ? "a[\"" : ",\"", a->first ? 3 : 2);
	sockjs_escape(a->msg, eb__buf_head(a->one), eb__buf_avail(a->one));
	eb__buf_append(a->msg, "\"", 1);
	a->first = 0;
}

int
eb__web_sockjs_frame(eb__buf *msg, eb__buf *one, const eb__buf *b)
{
	sockjs_acc a = { msg, one, 1 };

	msg->off = 0;
	msg->len = 0;
	frames_each(b, sockjs_add, &a);
	if (a.first) {
		return 0;
	}
	eb__buf_append(msg, "]", 1);
	return 1;
}

static void
raw_add(void *arg, const char *p, size_t n)
{
	web_sess *ss = arg;

	ws_out_one(&ss->one, p, n);
	ws_queue(ss, WSLAY_TEXT_FRAME, eb__buf_head(&ss->one),
	    eb__buf_avail(&ss->one));
}

/* The connection's frames to WebSocket messages. */
static void
ws_out_frames(web_sess *ss, eb__buf *b)
{
	if (ss->state == WEB_RAW) {
		frames_each(b, raw_add, ss);
	} else if (eb__web_sockjs_frame(&ss->msg, &ss->one, b)) {
		ws_queue(ss, WSLAY_TEXT_FRAME, eb__buf_head(&ss->msg),
		    eb__buf_avail(&ss->msg));
	}
}

/* ---- HTTP ---- */

/* The body is kept up to the SockJS message bound (xhr_send). */
static int
body_cb(eb__http_reader *r, const char *at, size_t n, void *arg)
{
	web_sess *ss = arg;
	size_t    max = (size_t) ss->w->bridge->opts.max_frame_bytes * 2u + 64u;
	size_t    have = eb__buf_avail(&ss->body);
	uint64_t  clen = eb__http_reader_content_length(r);

	if (ss->body_over || have + n > max) {
		ss->body_over = 1;
		return 0;
	}
	if (have == 0 && clen != UINT64_MAX && clen <= (uint64_t) max) {
		/* The whole declared body at once: one allocation, counted
		 * in the budget before the client fills it, no copies of
		 * growing buffers left behind. */
		(void) eb__buf_reserve_upto(
		    &ss->body, (size_t) clen, (size_t) clen);
	}
	eb__buf_append(&ss->body, at, n);
	return 0;
}

/* 1 when seg (not containing '/') is a SockJS server or session id. */
static int
sockjs_id(const char *seg, size_t n)
{
	size_t k;

	if (n == 0) {
		return 0;
	}
	for (k = 0; k < n; k++) {
		if (seg[k] == '.' || seg[k] == '/') {
			return 0;
		}
	}
	return 1;
}

/* The WebSocket handshake answer; 0, or -1 after a 400. */
static int
ws_accept(web_sess *ss)
{
	char               src[EB__HTTP_HDR_MAX + sizeof(WS_GUID) + 1];
	unsigned char      sha[EB__SHA1_LEN];
	char               acc[32];
	char               extra[128];
	int                n;
	eb__http_resp_head h = {
		.status = 101,
		.connection = "Upgrade",
		.extra = extra,
	};

	if (!eb__http_reader_method_is(&ss->rd, "GET") ||
	    strcasecmp(ss->rd.upgrade.v, "websocket") != 0 ||
	    ss->rd.ws_key.v[0] == '\0' ||
	    strcmp(ss->rd.ws_version.v, "13") != 0) {
		http_reply(ss, 400, "text/plain", "",
		    "Can \"Upgrade\" only to \"WebSocket\".");
		return -1;
	}
	n = snprintf(src, sizeof(src), "%s%s", ss->rd.ws_key.v, WS_GUID);
	EB_ASSERT(n > 0 && (size_t) n < sizeof(src));
	eb__sha1(src, (size_t) n, sha);
	(void) eb__base64(sha, sizeof(sha), acc);
	n = snprintf(extra, sizeof(extra),
	    "Upgrade: websocket\r\nSec-WebSocket-Accept: %s\r\n", acc);
	EB_ASSERT(n > 0 && (size_t) n < sizeof(extra));
	eb__http_head_write(&ss->wsout, &h);
	(void) sess_write(ss, &ss->wsout);
	return 0;
}

static void
ws_open(web_sess *ss, web_state st)
{
	uint32_t max = ss->w->bridge->opts.max_frame_bytes;
	int      rv;

	rv = wslay_event_context_server_init(&ss->ctx, &ws_callbacks, ss);
	EB_ASSERT(rv == 0);
	/* A SockJS message carries frames JSON-escaped: room for the
	 * escaping of a frame at the bound; the bridge checks each frame. */
	wslay_event_config_set_max_recv_msg_length(ss->ctx,
	    st == WEB_RAW ? (uint64_t) max : (uint64_t) max * 2u + 64u);
	ss->state = st;
	ss->w->stats.sessions++;
	if (st == WEB_SOCKJS) {
		ss->w->stats.sockjs_opened++;
		ws_queue(ss, WSLAY_TEXT_FRAME, "o", 1);
		sess_send(ss);
	} else {
		ss->w->stats.raw_opened++;
	}
}

/* Answers one parsed request; returns the new state. */
static void
http_request(web_sess *ss)
{
	eb_web     *w = ss->w;
	const char *u = eb__http_reader_url(&ss->rd);
	size_t      plen = strcspn(u, "?#");
	const char *rest;
	size_t      rlen;
	const char *slash;
	char        cors[512];
	char        body[160];

	w->stats.http_requests++;
	if (ss->rd.upgrade.over || ss->rd.ws_key.over ||
	    ss->rd.ws_version.over || ss->rd.browser.origin.over) {
		/* A header the endpoints read does not fit its array. */
		http_reply(ss, 431, "text/plain", "", "");
		ss->state = WEB_DONE;
		return;
	}
	if (plen < w->path_len || memcmp(u, w->path, w->path_len) != 0 ||
	    (plen > w->path_len && u[w->path_len] != '/')) {
		http_reply(ss, 404, "text/plain", "", "Not found");
		return;
	}
	rest = u + w->path_len;
	rlen = plen - w->path_len;
	cors_headers(ss, cors, sizeof(cors));
	if (rlen <= 1) {
		http_reply(ss, 200, "text/plain; charset=UTF-8", cors,
		    "Welcome to SockJS!\n");
		return;
	}
	if (rlen == 5 && memcmp(rest, "/info", 5) == 0) {
		w->stats.info_requests++;
		if (eb__http_reader_method_is(&ss->rd, "OPTIONS")) {
			char extra[700];

			(void) snprintf(extra, sizeof(extra),
			    "%sAccess-Control-Allow-Methods: OPTIONS, GET\r\n"
			    "Access-Control-Max-Age: 31536000\r\n",
			    cors);
			http_reply(ss, 204, "text/plain", extra, "");
			return;
		}
		(void) snprintf(body, sizeof(body),
		    "{\"websocket\":true,\"origins\":[\"*:*\"],"
		    "\"cookie_needed\":false,\"entropy\":%u}",
		    (unsigned) (eb__mono_ms() * 2654435761u));
		http_reply(
		    ss, 200, "application/json; charset=UTF-8", cors, body);
		return;
	}
	if (rlen == 10 && memcmp(rest, "/websocket", 10) == 0) {
		if (ws_accept(ss) == 0) {
			ws_open(ss, WEB_RAW);
		} else {
			ss->state = WEB_DONE;
		}
		return;
	}
	/* /<server>/<session>/websocket */
	slash = memchr(rest + 1, '/', rlen - 1);
	if (slash != NULL) {
		const char *sess = slash + 1;
		const char *slash2 =
		    memchr(sess, '/', (size_t) (u + plen - sess));

		if (slash2 != NULL &&
		    sockjs_id(rest + 1, (size_t) (slash - rest - 1)) &&
		    sockjs_id(sess, (size_t) (slash2 - sess)) &&
		    (size_t) (u + plen - slash2) == 10 &&
		    memcmp(slash2, "/websocket", 10) == 0) {
			if (ws_accept(ss) == 0) {
				ws_open(ss, WEB_SOCKJS);
			} else {
				ss->state = WEB_DONE;
			}
			return;
		}
		if (slash2 != NULL &&
		    sockjs_id(rest + 1, (size_t) (slash - rest - 1)) &&
		    sockjs_id(sess, (size_t) (slash2 - sess)) &&
		    eb__web_xhr_request(ss, sess, (size_t) (slash2 - sess),
		        slash2 + 1, (size_t) (u + plen - slash2 - 1))) {
			return;
		}
	}
	http_reply(ss, 404, "text/plain", cors, "Not found");
}

/*
 * Parses up to one request head from data (answering it); returns the
 * bytes used, or SIZE_MAX after a parse error (answered, state DONE).
 */
static size_t
http_parse_one(web_sess *ss, const char *data, size_t n)
{
	size_t          used = 0;
	eb__http_result res = eb__http_reader_feed(&ss->rd, data, n, &used);

	/* When the request being read began (0: none): the accounting's
	 * head and body deadline (eb__web_account). */
	ss->req_started_ms = ss->rd.started_ms;
	if (res < 0) {
		http_reply(
		    ss, eb__http_result_status(res), "text/plain", "", "");
		ss->state = WEB_DONE;
		return SIZE_MAX;
	}
	if (res == EB_HTTP_RMORE) {
		EB_ASSERT(used == n); /* the reader keeps a partial head */
		return used;
	}
	http_request(ss);
	/* Answered: the body is not needed any more. */
	ss->body.off = 0;
	ss->body.len = 0;
	ss->body_over = 0;
	buf_trim(&ss->body);
	return used;
}

static void
http_input(web_sess *ss, const char *data, size_t n)
{
	while (n > 0 && ss->state == WEB_HTTP && !ss->s->closing) {
		size_t used = http_parse_one(ss, data, n);

		if (used == SIZE_MAX) {
			break;
		}
		data += used;
		n -= used;
	}
	if (ss->state == WEB_DONE && !ss->s->closing) {
		ss->conn_cbs.error_cb(ss->s, UV_EPROTO);
		return;
	}
	if ((ss->state == WEB_SOCKJS || ss->state == WEB_RAW) && n > 0 &&
	    !ss->s->closing) {
		ws_input(ss, data, n);
	}
}

/* ---- the stream layer ---- */

static web_sess *
sess_of_stream(eb__stream *s)
{
	return s->layer;
}

static void
layer_read_cb(eb__stream *s, const char *data, size_t n)
{
	web_sess *ss = sess_of_stream(s);

	if (ss->state == WEB_HTTP) {
		http_input(ss, data, n);
	} else if (ss->state == WEB_XHR) {
		/* no pipelining behind an open xhr answer: dropped */
	} else if (ss->state != WEB_DONE) {
		ws_input(ss, data, n);
	}
	eb__web_account(ss);
}

static void
layer_error_cb(eb__stream *s, int status)
{
	web_sess *ss = sess_of_stream(s);

	ss->conn_cbs.error_cb(s, status);
}

static void
layer_closed_cb(eb__stream *s)
{
	web_sess             *ss = sess_of_stream(s);
	eb_web               *w = ss->w;
	eb__stream_cbs        cbs = ss->conn_cbs;
	const eb__stream_ops *ss_inner = ss->inner;

	eb__list_remove(&ss->link);
	if (ss->xs != NULL) {
		eb__web_xhr_detach(ss);
	}
	if (ss->state == WEB_SOCKJS || ss->state == WEB_RAW) {
		EB_ASSERT(w->stats.sessions > 0);
		w->stats.sessions--;
	}
	if (ss->ctx != NULL) {
		wslay_event_context_free(ss->ctx);
	}
	eb__buf_free(&ss->wsout);
	eb__buf_free(&ss->feed);
	eb__buf_free(&ss->msg);
	eb__buf_free(&ss->one);
	eb__buf_free(&ss->body);
	eb__http_reader_free(&ss->rd);
	free(ss);
	s->layer = NULL;
	s->ops = ss_inner;
	eb__web_session_gone(w);
	cbs.closed_cb(s);
}

static int
layer_start(eb__stream *s)
{
	web_sess *ss = sess_of_stream(s);

	return ss->inner->start(s);
}

static int
layer_write(eb__stream *s, eb__buf *b)
{
	web_sess *ss = sess_of_stream(s);
	int       rv;

	EB_ASSERT(!s->closing); /* write after close */
	if ((ss->state == WEB_SOCKJS || ss->state == WEB_RAW) &&
	    wslay_event_get_write_enabled(ss->ctx)) {
		/* (after a close frame wslay writes nothing: dropped) */
		ws_out_frames(ss, b);
		(void) wslay_event_send(ss->ctx);
	}
	b->off = 0;
	b->len = 0;
	rv = sess_write(ss, &ss->wsout);
	buf_trim(&ss->wsout);
	buf_trim(&ss->msg);
	buf_trim(&ss->one);
	return rv;
}

static void
layer_close(eb__stream *s)
{
	web_sess *ss = sess_of_stream(s);

	/* What the client made the session hold goes now, not when the
	 * handle has closed (a later loop turn): the input budget closes
	 * connections to free memory at once, many per turn. Nothing reads
	 * or writes the session after close (every path checks closing). */
	if (ss->ctx != NULL) {
		wslay_event_context_free(ss->ctx);
		ss->ctx = NULL;
	}
	ss->ws_partial = 0;
	eb__buf_free(&ss->body);
	ss->inner->close(s);
}

static const eb__stream_ops web_ops = {
	.name = "web",
	.start = layer_start,
	.write = layer_write,
	.close = layer_close,
};

static const eb__stream_cbs web_cbs = {
	.read_cb = layer_read_cb,
	.error_cb = layer_error_cb,
	.closed_cb = layer_closed_cb,
};

int
eb__web_layer(eb__stream *s, void *arg)
{
	eb_web         *w = arg;
	web_sess       *ss;
	eb__http_limits lim = {
		/* A target of up to 1 KiB; the head bound of web.*; the
		 * body's bound is body_cb's (413 from xhr_send). */
		.max_url = 1023,
		.max_head = w->opts.max_header_bytes,
	};

	EB_ASSERT(s->layer == NULL);
	if (w->closing) {
		return UV_ECANCELED;
	}
	ss = eb__calloc(1, sizeof(*ss));
	ss->w = w;
	ss->s = s;
	ss->inner = s->ops;
	ss->conn_cbs = s->cbs;
	ss->state = WEB_HTTP;
	eb__http_reader_init(&ss->rd, &lim, body_cb, ss);
	eb__buf_init(&ss->wsout);
	eb__buf_init(&ss->feed);
	eb__buf_init(&ss->msg);
	eb__buf_init(&ss->one);
	eb__buf_init(&ss->body);
	ss->last_out_ms = eb__mono_ms();
	eb__list_insert_tail(&w->sessions, &ss->link);
	w->live++;
	s->layer = ss;
	s->ops = &web_ops;
	s->cbs = web_cbs;
	return 0;
}

void
eb__web_beat(eb_web *w, uint64_t now_ms)
{
	eb__list *it;
	eb__list *tmp;

	EB_LIST_FOREACH (it, tmp, &w->sessions) {
		web_sess *ss = EB_CONTAINER_OF(it, web_sess, link);

		if (w->opts.heartbeat_ms == 0 ||
		    (ss->state != WEB_SOCKJS && ss->state != WEB_RAW) ||
		    ss->s->closing ||
		    now_ms - ss->last_out_ms < w->opts.heartbeat_ms) {
			continue;
		}
		w->stats.heartbeats++;
		if (ss->state == WEB_SOCKJS) {
			ws_queue(ss, WSLAY_TEXT_FRAME, "h", 1);
		} else {
			ws_queue(ss, WSLAY_PING, "", 0);
		}
		sess_send(ss);
	}
	eb__web_xhr_beat(w, now_ms);
}

void
eb__web_close_sessions(eb_web *w)
{
	eb__list *it;
	eb__list *tmp;

	EB_LIST_FOREACH (it, tmp, &w->sessions) {
		web_sess *ss = EB_CONTAINER_OF(it, web_sess, link);

		if (!ss->s->closing) {
			eb__bconn_close(ss->s->data, "web-closed");
		}
	}
}
