/*
 * libFuzzer target: the browser front (web/) over its real input path.
 * Each input builds a local bus, a bridge (permit-all, small bounds) and a
 * web front on one process-wide loop, plays the bytes two clients send on
 * their sockets (carrier connections A and B: detached bridge connections
 * with the web layer over a stream standing in for the socket, fed through
 * the stream's read callback as libuv would; what the layer writes goes
 * to an output oracle, see out_write), then closes everything and runs the
 * loop until the last handle is gone (ASan checks for leaks).
 * WEB_FUZZ_VERBOSE=1 prints the output, the counters and the debug log.
 *
 * Input: byte 0 opens the connections (bits 0-2: A, bits 3-5: B: nothing,
 * a raw WebSocket, a SockJS websocket, GET info, xhr_streaming, xhr
 * polling, OPTIONS xhr_send, a bad upgrade), byte 1 picks how each read is
 * split, then records until the end: a control byte, a length (one byte,
 * two big-endian when ctl & 0x80) and that many data bytes. ctl & 0x40
 * picks connection B, (ctl >> 3) & 7 is the variant, ctl & 7 the kind:
 *   0 raw bytes, as one or several reads
 *   1 a masked WebSocket frame of the data (variant: text, binary, text
 *     unfinished, continuation unfinished, continuation, close, ping, pong)
 *   2 xhr_send of the data (variant & 1: wrapped as the SockJS array
 *     ["data"]; variant & 2: session s1 instead of s0)
 *   3 an xhr_streaming (variant & 1: xhr polling) request (variant & 2: s1)
 *   4 loop turns (1 + variant)
 *   5 a heartbeat pass variant * 2 s ahead (variant >= 3 ends detached
 *     xhr sessions)
 *   6 variant 0: the server closes the connection; 1: the client's EOF;
 *     else a new connection in its place, opened as route variant
 *   7 a masked text frame holding the SockJS array ["data"]
 */
#include <http_parser.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <ebnode/bridge.h>
#include <ebnode/bus.h>
#include <ebnode/log.h>
#include <ebnode/web.h>

#include "bridge/bridge_int.h"
#include "bridge/bridge_obs.h"
#include "common/assert.h"
#include "common/util.h"
#include "tests/fuzz/fz_node.h"
#include "web/web_int.h"

/* libFuzzer's names and signatures. */
/* NOLINTNEXTLINE(readability-identifier-naming) */
int LLVMFuzzerInitialize(int *argc, char ***argv);
/* NOLINTNEXTLINE(readability-identifier-naming) */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CONNS 2

typedef struct fz_conn {
	eb__bconn *c; /* NULL: none, or closed */
	uint64_t   id;
} fz_conn;

static fz_conn  fz_conns[FZ_CONNS];
static unsigned fz_split;
static int      fz_verbose; /* WEB_FUZZ_VERBOSE: output and counters */

/*
 * The carriers' socket: what the web layer writes is checked and dropped
 * (printed when verbose). The check is an oracle for the output: HTTP/1.1
 * responses that http-parser accepts (Content-Length or chunked; SockJS
 * xhr chunks of "o", "h", "a[...]" or "c[...]" lines), then after a 101
 * unmasked server WebSocket frames, nothing after a close frame, text
 * frames that are SockJS frames (a SockJS session: "o", "h", an "a" array
 * of strings each a JSON object, "c") or JSON objects (raw).
 */
#define FZ_OUTS 16

typedef struct fz_out {
	const eb__stream *s; /* NULL: slot free */
	http_parser       p;
	int               ws;     /* after the 101 */
	int               sockjs; /* -1: no text frame yet (SockJS: "o") */
	int               closed; /* a close frame went out */
	int               chunked;
	eb__buf           body; /* a chunked answer's data, by lines */
	eb__buf           wsb;  /* WebSocket bytes not yet a whole frame */
} fz_out;

static fz_out fz_outs[FZ_OUTS];

static void
bad(const char *what, const char *p, size_t n)
{
	(void) fprintf(stderr, "web_fuzz: bad output: %s: %.*s\n", what,
	    (int) (n > 200 ? 200 : n), p);
	abort();
}

/* A JSON object (jansson, duplicates refused). */
static void
check_object(const char *p, size_t n)
{
	json_error_t e;
	json_t      *j = json_loadb(p, n, JSON_REJECT_DUPLICATES, &e);

	if (j == NULL || !json_is_object(j)) {
		bad("not a JSON object", p, n);
	}
	json_decref(j);
}

/* One SockJS frame: o, h, a["{...}",...] or c[code,"reason"]. */
static void
check_sockjs(const char *p, size_t n)
{
	json_error_t e;
	json_t      *j;
	json_t      *v;
	size_t       k;

	if (n == 1 && (p[0] == 'o' || p[0] == 'h')) {
		return;
	}
	if (n < 2 || (p[0] != 'a' && p[0] != 'c')) {
		bad("not a SockJS frame", p, n);
	}
	j = json_loadb(p + 1, n - 1, JSON_REJECT_DUPLICATES, &e);
	if (j == NULL || !json_is_array(j)) {
		bad("SockJS frame not an array", p, n);
	}
	if (p[0] == 'c') {
		if (json_array_size(j) != 2 ||
		    !json_is_integer(json_array_get(j, 0))) {
			bad("SockJS close frame", p, n);
		}
	} else {
		if (json_array_size(j) == 0) {
			bad("empty SockJS array", p, n);
		}
		json_array_foreach(j, k, v)
		{
			if (!json_is_string(v)) {
				bad("SockJS array element", p, n);
			}
			check_object(
			    json_string_value(v), json_string_length(v));
		}
	}
	json_decref(j);
}

static int
out_body_cb(http_parser *hp, const char *at, size_t n)
{
	fz_out *o = hp->data;

	if (o->chunked) {
		eb__buf_append(&o->body, at, n);
	}
	return 0;
}

/* 1 when the answer being written on s is to a HEAD request: it has the
 * length of the body it does not carry (RFC 9110 9.3.2). The web session
 * hangs off the stream, its reader still holding the request answered. */
static int
answering_head(const eb__stream *s)
{
	const web_sess *ss = s->layer;

	return ss != NULL && eb__http_reader_method_is(&ss->rd, "HEAD");
}

static int
out_headers_cb(http_parser *hp)
{
	fz_out *o = hp->data;

	o->chunked = (hp->flags & F_CHUNKED) != 0;
	o->body.off = 0;
	o->body.len = 0;
	/* 1: the parser expects no body for this answer. */
	return answering_head(o->s);
}

/* The chunked answers' data: '\n'-ended SockJS frames (the prelude is
 * 2048 'h' and a '\n'). */
static void
check_lines(fz_out *o, int all)
{
	for (;;) {
		const char *p = eb__buf_head(&o->body);
		size_t      n = eb__buf_avail(&o->body);
		const char *nl = memchr(p, '\n', n);
		size_t      k;

		if (nl == NULL) {
			if (all && n > 0) {
				bad("xhr answer ends inside a frame", p, n);
			}
			return;
		}
		k = (size_t) (nl - p);
		if (!(k == 2048 && p[0] == 'h' && p[2047] == 'h')) {
			check_sockjs(p, k);
		}
		eb__buf_consume(&o->body, k + 1);
	}
}

static int
out_done_cb(http_parser *hp)
{
	fz_out *o = hp->data;

	if (o->chunked) {
		check_lines(o, 1);
	}
	return 0;
}

static const http_parser_settings out_settings = {
	.on_headers_complete = out_headers_cb,
	.on_body = out_body_cb,
	.on_message_complete = out_done_cb,
};

static void
check_ws(fz_out *o)
{
	for (;;) {
		const uint8_t *p = (const uint8_t *) eb__buf_head(&o->wsb);
		size_t         n = eb__buf_avail(&o->wsb);
		size_t         h = 2;
		uint64_t       len;
		unsigned       op;

		if (n < 2) {
			return;
		}
		op = p[0] & 0x0f;
		if ((p[0] & 0xf0) != 0x80 || (p[1] & 0x80) != 0 ||
		    (op != 1 && op != 8 && op != 9 && op != 10)) {
			bad("server frame header", (const char *) p, n);
		}
		if (o->closed) {
			bad("a frame after the close frame", (const char *) p,
			    n);
		}
		len = p[1] & 0x7f;
		if (len == 126) {
			if (n < 4) {
				return;
			}
			len = ((uint64_t) p[2] << 8) | p[3];
			h = 4;
		} else if (len == 127) {
			if (n < 10) {
				return;
			}
			len = 0;
			for (h = 2; h < 10; h++) {
				len = (len << 8) | p[h];
			}
		}
		if (n - h < len) {
			return;
		}
		if (op == 8) {
			o->closed = 1;
		} else if (op == 1 && o->sockjs < 0) {
			o->sockjs = len == 1 && p[h] == 'o';
			if (!o->sockjs) {
				check_object(
				    (const char *) p + h, (size_t) len);
			}
		} else if (op == 1 && o->sockjs) {
			check_sockjs((const char *) p + h, (size_t) len);
		} else if (op == 1) {
			check_object((const char *) p + h, (size_t) len);
		}
		eb__buf_consume(&o->wsb, h + (size_t) len);
	}
}

static fz_out *
out_of(const eb__stream *s)
{
	int i;

	for (i = 0; i < FZ_OUTS; i++) {
		if (fz_outs[i].s == s) {
			return &fz_outs[i];
		}
	}
	return NULL;
}

static void
out_add(const eb__stream *s)
{
	fz_out *o = out_of(NULL);

	if (o == NULL) {
		return; /* more connections than checked: not checked */
	}
	memset(o, 0, sizeof(*o));
	o->s = s;
	o->sockjs = -1;
	http_parser_init(&o->p, HTTP_RESPONSE);
	o->p.data = o;
	eb__buf_init(&o->body);
	eb__buf_init(&o->wsb);
}

static void
outs_free(void)
{
	int i;

	for (i = 0; i < FZ_OUTS; i++) {
		if (fz_outs[i].s != NULL) {
			eb__buf_free(&fz_outs[i].body);
			eb__buf_free(&fz_outs[i].wsb);
			fz_outs[i].s = NULL;
		}
	}
}

static void
check_out(const eb__stream *s, const char *p, size_t n)
{
	fz_out *o = out_of(s);
	size_t  used;

	if (o == NULL) {
		return;
	}
	if (!o->ws) {
		used = http_parser_execute(&o->p, &out_settings, p, n);
		if (HTTP_PARSER_ERRNO(&o->p) != HPE_OK) {
			bad(http_errno_name(HTTP_PARSER_ERRNO(&o->p)), p, n);
		}
		if (o->chunked) {
			check_lines(o, 0);
		}
		if (o->p.upgrade) {
			if (o->p.status_code != 101) {
				bad("upgrade without 101", p, n);
			}
			o->ws = 1;
		} else if (used != n) {
			bad("trailing bytes", p, n);
		}
		p += used;
		n -= used;
	}
	if (o->ws && n > 0) {
		eb__buf_append(&o->wsb, p, n);
		check_ws(o);
	}
}

static int
out_start(eb__stream *s)
{
	EB_ASSERT(!s->closing);
	return 0;
}

static int
out_write(eb__stream *s, eb__buf *b)
{
	EB_ASSERT(!s->closing); /* write after close */
	if (fz_verbose) {
		const unsigned char *p =
		    (const unsigned char *) eb__buf_head(b);
		size_t k, n = eb__buf_avail(b);

		(void) fprintf(stderr, "<< %zu bytes: ", n);
		for (k = 0; k < n && k < 400; k++) {
			(void) fprintf(stderr,
			    p[k] >= 0x20 && p[k] < 0x7f ? "%c" : "\\x%02x",
			    p[k]);
		}
		(void) fprintf(stderr, "\n");
	}
	check_out(s, eb__buf_head(b), eb__buf_avail(b));
	b->off = 0;
	b->len = 0;
	return 0;
}

static const eb__stream_ops out_ops = {
	.name = "fuzz",
	.start = out_start,
	.write = out_write,
	.close = eb__stream_raw_close,
};

/* NOLINTBEGIN(readability-identifier-naming,readability-non-const-parameter) */
int
LLVMFuzzerInitialize(int *argc, char ***argv)
/* NOLINTEND(readability-identifier-naming,readability-non-const-parameter) */
{
	(void) argc;
	(void) argv;
	fz_verbose = getenv("WEB_FUZZ_VERBOSE") != NULL;
	eb_log_set_level(fz_verbose ? EB_LOG_LEVEL_DEBUG : EB_LOG_LEVEL_ERR);
	if (uv_loop_init(&fz_loop) != 0) {
		abort();
	}
	return 0;
}

static void
turns(int n)
{
	int i;

	for (i = 0; i < n; i++) {
		(void) uv_run(&fz_loop, UV_RUN_NOWAIT);
	}
}

static void
conn_closed_cb(eb_bridge *b, uint64_t conn_id, void *arg)
{
	int i;

	(void) b;
	(void) arg;
	for (i = 0; i < FZ_CONNS; i++) {
		if (fz_conns[i].c != NULL && fz_conns[i].id == conn_id) {
			fz_conns[i].c = NULL;
		}
	}
}

/* Bytes from the client's socket: the stream's read callback, which is
 * the web layer's (a closed connection reads nothing more). */
static void
deliver(int i, const char *p, size_t n)
{
	eb__stream *s;

	if (fz_conns[i].c == NULL || n == 0) {
		return;
	}
	s = eb__bconn_stream(fz_conns[i].c);
	if (s->closing) {
		return;
	}
	s->cbs.read_cb(s, p, n);
}

/* The same bytes as several reads, cut as byte 1 of the input says;
 * split & 0x80: a loop turn between reads. */
static void
feed(int i, const char *p, size_t n)
{
	size_t   k = 0;
	unsigned step = 0;

	if ((fz_split & 0x7f) == 0) {
		deliver(i, p, n);
		return;
	}
	while (k < n) {
		size_t m = 1 + (fz_split * 7u + step * 13u) % (fz_split & 0x7f);

		if (m > n - k) {
			m = n - k;
		}
		deliver(i, p + k, m);
		k += m;
		step++;
		if (fz_split & 0x80) {
			turns(1);
		}
	}
}

static void
feed_str(int i, const char *str)
{
	feed(i, str, strlen(str));
}

static const char ws_head[] =
    "Host: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    "Sec-WebSocket-Version: 13\r\nOrigin: http://o\r\n\r\n";

static void
route(int i, unsigned r)
{
	char req[512];

	switch (r & 7) {
	case 1:
		(void) snprintf(req, sizeof(req),
		    "GET /eventbus/websocket HTTP/1.1\r\n%s", ws_head);
		break;
	case 2:
		(void) snprintf(req, sizeof(req),
		    "GET /eventbus/000/ws%d/websocket HTTP/1.1\r\n%s", i,
		    ws_head);
		break;
	case 3:
		(void) snprintf(req, sizeof(req),
		    "GET /eventbus/info HTTP/1.1\r\nHost: h\r\n\r\n");
		break;
	case 4:
		(void) snprintf(req, sizeof(req),
		    "POST /eventbus/000/s0/xhr_streaming HTTP/1.1\r\n"
		    "Host: h\r\nContent-Length: 0\r\n\r\n");
		break;
	case 5:
		(void) snprintf(req, sizeof(req),
		    "POST /eventbus/000/s0/xhr HTTP/1.1\r\n"
		    "Host: h\r\nContent-Length: 0\r\n\r\n");
		break;
	case 6:
		(void) snprintf(req, sizeof(req),
		    "OPTIONS /eventbus/000/s0/xhr_send HTTP/1.1\r\n"
		    "Host: h\r\nOrigin: http://o\r\n\r\n");
		break;
	case 7:
		(void) snprintf(req, sizeof(req),
		    "GET /eventbus/websocket HTTP/1.1\r\nHost: h\r\n"
		    "Upgrade: h2c\r\n\r\n");
		break;
	default:
		return;
	}
	feed_str(i, req);
}

/* A new carrier connection in slot i (the old one, if open, stays open
 * until the end of the run). */
static void
conn_open(int i, unsigned r)
{
	eb__bconn          *c = eb__bconn_open_detached(fz_bridge);
	eb_bridge_conn_info info;

	eb__bconn_info(c, eb__mono_ms(), &info);
	fz_conns[i].c = c;
	fz_conns[i].id = info.id;
	eb__bconn_stream(c)->ops = &out_ops;
	out_add(eb__bconn_stream(c));
	if (eb__web_layer(eb__bconn_stream(c), fz_web) != 0) {
		abort(); /* the web front is open */
	}
	route(i, r);
}

/* A client WebSocket frame: FIN/opcode byte, masked length, the mask,
 * the masked payload. */
static void
ws_frame(int i, uint8_t b0, const uint8_t *p, size_t n)
{
	static const uint8_t mask[4] = { 0x37, 0xfa, 0x21, 0x3d };
	uint8_t             *f = malloc(n + 14);
	size_t               h = 0;
	size_t               k;

	if (f == NULL) {
		abort();
	}
	f[h++] = b0;
	if (n < 126) {
		f[h++] = (uint8_t) (0x80 | n);
	} else {
		f[h++] = 0x80 | 126;
		f[h++] = (uint8_t) (n >> 8);
		f[h++] = (uint8_t) n;
	}
	memcpy(f + h, mask, 4);
	h += 4;
	for (k = 0; k < n; k++) {
		f[h + k] = p[k] ^ mask[k & 3];
	}
	feed(i, (const char *) f, h + n);
	free(f);
}

/* ["data"]: the data as one JSON string (control bytes, quote and
 * backslash escaped; other bytes as they are, so that invalid UTF-8
 * reaches the JSON parser). Returns a malloc'ed buffer of *len bytes. */
static char *
sockjs_wrap(const uint8_t *p, size_t n, size_t *len)
{
	char  *o = malloc(n * 6 + 4);
	size_t k, m = 0;

	if (o == NULL) {
		abort();
	}
	o[m++] = '[';
	o[m++] = '"';
	for (k = 0; k < n; k++) {
		if (p[k] < 0x20) {
			m += (size_t) snprintf(o + m, 7, "\\u%04x", p[k]);
		} else if (p[k] == '"' || p[k] == '\\') {
			o[m++] = '\\';
			o[m++] = (char) p[k];
		} else {
			o[m++] = (char) p[k];
		}
	}
	o[m++] = '"';
	o[m++] = ']';
	*len = m;
	return o;
}

static void
xhr_send(int i, int wrap, int sid, const uint8_t *p, size_t n)
{
	const char *body = (const char *) p;
	char       *w = NULL;
	char        head[160];
	size_t      len = n;

	if (wrap) {
		w = sockjs_wrap(p, n, &len);
		body = w;
	}
	(void) snprintf(head, sizeof(head),
	    "POST /eventbus/000/s%d/xhr_send HTTP/1.1\r\nHost: h\r\n"
	    "Content-Length: %zu\r\n\r\n",
	    sid, len);
	feed_str(i, head);
	feed(i, body, len);
	free(w);
}

static void
xhr_recv(int i, int poll, int sid)
{
	char head[160];

	(void) snprintf(head, sizeof(head),
	    "POST /eventbus/000/s%d/%s HTTP/1.1\r\nHost: h\r\n"
	    "Content-Length: 0\r\n\r\n",
	    sid, poll ? "xhr" : "xhr_streaming");
	feed_str(i, head);
}

static void
record(unsigned ctl, const uint8_t *p, size_t n)
{
	static const uint8_t ws_b0[8] = { 0x81, 0x82, 0x01, 0x00, 0x80, 0x88,
		0x89, 0x8a };
	int                  i = (ctl & 0x40) != 0;
	unsigned             v = (ctl >> 3) & 7;
	eb__stream          *s;
	char                *w;
	size_t               len;

	switch (ctl & 7) {
	case 0:
		feed(i, (const char *) p, n);
		break;
	case 1:
		ws_frame(i, ws_b0[v], p, n);
		break;
	case 2:
		xhr_send(i, (int) (v & 1), (v & 2) != 0, p, n);
		break;
	case 3:
		xhr_recv(i, (int) (v & 1), (v & 2) != 0);
		break;
	case 4:
		turns(1 + (int) v);
		break;
	case 5:
		eb__web_beat(fz_web, eb__mono_ms() + (uint64_t) v * 2000u);
		break;
	case 6:
		if (v >= 2) {
			conn_open(i, v);
		} else if (fz_conns[i].c != NULL) {
			s = eb__bconn_stream(fz_conns[i].c);
			if (v == 0) {
				eb__bconn_close(fz_conns[i].c, "fuzz");
			} else if (!s->closing) {
				s->cbs.error_cb(s, UV_EOF);
			}
		}
		break;
	default:
		w = sockjs_wrap(p, n, &len);
		ws_frame(i, 0x81, (const uint8_t *) w, len);
		free(w);
		break;
	}
	turns(1);
}

static void
setup(void)
{
	eb_bus_opts    bo;
	eb_bridge_opts o;
	eb_web_opts    wo;

	eb_bus_opts_init(&bo);
	bo.request_timeout_ms = 5;
	fz_bridge_opts(&o);
	o.max_frame_bytes = 1024;
	o.write_queue_max_bytes = 2048;
	o.max_connections = 6;
	fz_bus_bridge_new(&bo, &o, 0);
	eb__bridge_on_conn_closed(fz_bridge, conn_closed_cb, NULL);
	eb_web_opts_init(&wo);
	wo.heartbeat_ms = 1000;
	wo.max_header_bytes = 1024;
	fz_web_new(&wo, 0);
}

static void
teardown(void)
{
	eb_bridge_stats st;

	if (fz_verbose) {
		eb_web_stats ws;

		eb_web_stats_get(fz_web, &ws);
		eb_bridge_stats_get(fz_bridge, &st);
		(void) fprintf(stderr,
		    "web: http=%llu rejected=%llu sockjs=%llu raw=%llu "
		    "xhr=%llu ws_in=%llu beats=%llu; bridge: conns=%llu "
		    "consumers=%llu\n",
		    (unsigned long long) ws.http_requests,
		    (unsigned long long) ws.http_rejected,
		    (unsigned long long) ws.sockjs_opened,
		    (unsigned long long) ws.raw_opened,
		    (unsigned long long) ws.xhr_opened,
		    (unsigned long long) ws.ws_messages_in,
		    (unsigned long long) ws.heartbeats,
		    (unsigned long long) st.conns_total,
		    (unsigned long long) st.consumers);
	}
	fz_web_close();
	eb_bridge_stats_get(fz_bridge, &st);
	if (st.conns_open != 0 || st.consumers != 0) {
		abort(); /* the web front closed every connection */
	}
	(void) eb__bridge_off_conn_closed(fz_bridge, conn_closed_cb, NULL);
	fz_bus_bridge_close();
	memset(fz_conns, 0, sizeof(fz_conns));
	outs_free();
}

/* NOLINTNEXTLINE(readability-identifier-naming) */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t k = 2;

	if (size < 2) {
		return 0;
	}
	setup();
	fz_split = data[1];
	conn_open(0, data[0]);
	conn_open(1, (unsigned) data[0] >> 3);
	turns(1);
	while (k < size) {
		unsigned ctl = data[k++];
		size_t   n;

		if (ctl & 0x80) {
			n = k + 1 < size ? ((size_t) data[k] << 8) | data[k + 1]
			                 : 0;
			k += 2;
		} else {
			n = k < size ? data[k] : 0;
			k += 1;
		}
		if (k > size) {
			k = size;
		}
		if (n > size - k) {
			n = size - k;
		}
		record(ctl, data + k, n);
		k += n;
	}
	turns(2);
	teardown();
	return 0;
}
