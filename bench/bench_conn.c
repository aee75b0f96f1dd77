/*
 * ebbench connections: connect, register sinks, wait for the pong that
 * proves the registration was processed, frame building and scanning, and
 * the responder thread. The frames are built with snprintf and scanned with
 * memmem instead of being parsed: the client must cost as little CPU as
 * possible, because it shares the machine with the server it measures.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench/bench.h"
#include "bench/bench_tls.h"
#include "bench/scan.h"
#include "common/alloc.h"
#include "common/list.h"

#define BENCH_MAX_FRAME (16u * 1024u * 1024u)
#define PING            "{\"type\":\"ping\"}"

typedef struct bench_wreq {
	uv_write_t req;
	char      *data; /* owned */
} bench_wreq;

static void
conn_append_frame(bench_conn *c, const char *payload, size_t n)
{
	unsigned char hdr[EB_FRAME_HDR];

	eb__frame_put_len(hdr, (uint32_t) n);
	eb__buf_append(&c->out, hdr, sizeof(hdr));
	eb__buf_append(&c->out, payload, n);
}

static void
conn_write_cb(uv_write_t *req, int status)
{
	bench_wreq *w = (bench_wreq *) req;
	bench_conn *c = req->handle->data;

	free(w->data);
	free(w);
	c->writing = 0;
	if (status != 0) {
		if (c->b != NULL) {
			bench_fail(c->b, "write: %s", uv_strerror(status));
		}
		return;
	}
	if (c->b != NULL) {
		bench_pump(c);
	}
	bench_conn_flush(c);
}

static void
conn_error(bench_conn *c, const char *what)
{
	if (c->b != NULL) {
		bench_fail(c->b, "connection %d: %s", c->id, what);
	}
}

static void
raw_write_cb(uv_write_t *req, int status)
{
	bench_wreq *w = (bench_wreq *) req;

	(void) status; /* a failed handshake write shows up as a read error */
	free(w->data);
	free(w);
}

/* Sends the TLS handshake bytes the SSL has produced, if any. */
static void
conn_tls_send_pending(bench_conn *c)
{
	bench_wreq *w;
	uv_buf_t    buf;
	size_t      n = 0;
	char       *data = bench_tls_pending(c, &n);

	if (data == NULL) {
		return;
	}
	w = eb__malloc(sizeof(*w));
	w->data = data;
	buf = uv_buf_init(data, (unsigned int) n);
	if (uv_write(&w->req, (uv_stream_t *) &c->tcp, &buf, 1, raw_write_cb) !=
	    0) {
		free(data);
		free(w);
	}
}

/* Accounts nread received bytes: plaintext lands in c->dec.in (directly,
 * or decrypted from c->rawin). 0, or -1 on a TLS error. */
static int
conn_input(bench_conn *c, ssize_t nread)
{
	int was_ready = c->tls_ready;

	if (c->tls == NULL) {
		c->dec.in.len += (size_t) nread;
		return 0;
	}
	if (bench_tls_input(c, c->rawin, (size_t) nread) != 0) {
		return -1;
	}
	conn_tls_send_pending(c);
	if (!was_ready && c->tls_ready) {
		bench_conn_flush(
		    c); /* the frames queued before the handshake */
	}
	return 0;
}

void
bench_conn_flush(bench_conn *c)
{
	bench_wreq *w;
	uv_buf_t    buf;
	size_t      n = eb__buf_avail(&c->out);
	int         rv;

	if (c->writing || n == 0 || uv_is_closing((uv_handle_t *) &c->tcp) ||
	    (c->tls != NULL && !c->tls_ready)) {
		return; /* plaintext waits for the handshake */
	}
	w = eb__malloc(sizeof(*w));
	if (c->tls != NULL) {
		if (bench_tls_encrypt(
		        c, eb__buf_head(&c->out), n, &w->data, &n) != 0) {
			free(w);
			conn_error(c, "TLS write failed");
			return;
		}
		eb__buf_consume(&c->out, eb__buf_avail(&c->out));
	} else {
		w->data = eb__memdup(eb__buf_head(&c->out), n);
		eb__buf_consume(&c->out, n);
	}
	buf = uv_buf_init(w->data, (unsigned int) n);
	if ((rv = uv_write(&w->req, (uv_stream_t *) &c->tcp, &buf, 1,
	         conn_write_cb)) != 0) {
		free(w->data);
		free(w);
		if (c->b != NULL) {
			bench_fail(c->b, "write: %s", uv_strerror(rv));
		}
		return;
	}
	c->writing = 1;
}

/* Appends the body JSON: {"t":"<16 hex ns>","p":"xxx"}; t is the send time,
 * read back by sinks for the one-way latency. */
static int
fmt_body(char *dst, size_t cap, const bench *b, uint64_t t)
{
	return snprintf(dst, cap, "{\"t\":\"%016llx\",\"p\":\"%.*s\"}",
	    (unsigned long long) t, (int) b->padlen, b->pad);
}

void
bench_conn_send(bench_conn *c)
{
	bench   *b = c->b;
	char     stackbuf[1024];
	char    *frame = stackbuf;
	size_t   cap = b->padlen + 512;
	int      n;
	uint64_t now = uv_hrtime();

	if (cap > sizeof(stackbuf)) {
		frame = eb__malloc(cap);
	}
	switch (c->role) {
	case ROLE_REQ:
		c->ts[c->seq % c->nts] = now;
		n = snprintf(frame, cap,
		    "{\"type\":\"send\",\"address\":\"%s\",\"replyAddress\":"
		    "\"#b%llu\",\"body\":",
		    b->o.address, (unsigned long long) c->seq);
		c->seq++;
		c->inflight++;
		break;
	case ROLE_SENDER:
		n = snprintf(frame, cap,
		    "{\"type\":\"send\",\"address\":\"%s\",\"body\":",
		    b->o.address);
		break;
	default: /* ROLE_DRIVER */
		n = snprintf(frame, cap,
		    "{\"type\":\"publish\",\"address\":\"%s\",\"body\":",
		    b->o.address);
		break;
	}
	n += fmt_body(frame + n, cap - (size_t) n, b, now);
	frame[n++] = '}';
	conn_append_frame(c, frame, (size_t) n);
	if (frame != stackbuf) {
		free(frame);
	}
	b->sent++;
}

static uint64_t
scan_hex_t(const char *p, uint32_t n)
{
	const char *q = bench_memmem(p, n, "\"t\":\"", 5);
	uint64_t    v = 0;
	int         i;
	char        ch;

	if (q == NULL || (size_t) (q - p) + 5 + 16 > n) {
		return 0;
	}
	q += 5;
	for (i = 0; i < 16; i++) {
		ch = q[i];
		v <<= 4;
		if (ch >= '0' && ch <= '9') {
			v |= (uint64_t) (ch - '0');
		} else if (ch >= 'a' && ch <= 'f') {
			v |= (uint64_t) (ch - 'a' + 10);
		} else {
			return 0;
		}
	}
	return v;
}

/* The reply token "#b<seq>" appears as address (bridge reply) or as
 * replyAddress (baseline echo). */
static int
scan_token(const char *p, uint32_t n, uint64_t *seq)
{
	const char *q = bench_memmem(p, n, "\"#b", 3);
	const char *end = p + n;
	uint64_t    v = 0;

	if (q == NULL) {
		return -1;
	}
	for (q += 3; q < end && *q >= '0' && *q <= '9'; q++) {
		v = v * 10 + (uint64_t) (*q - '0');
	}
	*seq = v;
	return 0;
}

static void
note_error(bench *b, const char *p, uint32_t n)
{
	b->errors++;
	if (b->first_err[0] == '\0') {
		(void) snprintf(b->first_err, sizeof(b->first_err), "%.*s",
		    (int) (n < 200 ? n : 200), p);
	}
}

static void
conn_handle_frame(bench_conn *c, const char *p, uint32_t n)
{
	bench   *b = c->b;
	uint64_t seq;
	int      is_err = bench_memmem(p, n, "\"type\":\"err\"", 12) != NULL;

	if (!c->ready) {
		if (bench_memmem(p, n, "\"type\":\"pong\"", 13) != NULL) {
			c->ready = 1;
			if (c->role == ROLE_SINK && b->o.sink_noread) {
				/* A consumer that never reads: the server's
				 * write queue for it must stay bounded. */
				(void) uv_read_stop((uv_stream_t *) &c->tcp);
			}
			if (++b->nready == b->nconns) {
				bench_on_ready(b);
			}
		} else if (is_err) {
			note_error(b, p, n);
			bench_fail(
			    b, "err frame during setup: %s", b->first_err);
		}
		return;
	}
	if (is_err) {
		note_error(b, p, n);
	}
	switch (c->role) {
	case ROLE_REQ:
		if (scan_token(p, n, &seq) != 0 || c->inflight == 0) {
			if (!is_err) {
				note_error(b, p, n);
			}
			return;
		}
		c->inflight--;
		bench_on_complete(b, c->ts[seq % c->nts]);
		break;
	case ROLE_SINK:
		if (!is_err) {
			bench_on_complete(b, scan_hex_t(p, n));
		}
		break;
	default:
		break; /* senders and drivers get nothing but errors */
	}
}

static void
conn_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	bench_conn *c = h->data;

	(void) hint;
	if (c->tls != NULL) {
		buf->base = c->rawin;
		buf->len = BENCH_TLS_READ;
		return;
	}
	buf->base = eb__buf_reserve(&c->dec.in, 65536);
	buf->len = 65536;
}

static void
conn_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	bench_conn *c = s->data;
	bench      *b = c->b;
	const char *p;
	uint32_t    n;
	int         rv;

	(void) buf;
	if (nread < 0) {
		bench_fail(b, "connection %d: read: %s", c->id,
		    uv_strerror((int) nread));
		return;
	}
	if (conn_input(c, nread) != 0) {
		bench_fail(b, "connection %d: TLS error", c->id);
		return;
	}
	while ((rv = eb__frame_dec_next(&c->dec, &p, &n)) == 0) {
		conn_handle_frame(c, p, n);
		if (b->done) {
			return;
		}
	}
	if (rv != UV_EAGAIN) {
		bench_fail(b, "connection %d: bad frame length", c->id);
		return;
	}
	/* Replies free in-flight slots, deliveries open the window: let every
	 * connection that can send do so, then write. */
	if (c->role == ROLE_SINK) {
		int i;

		for (i = 0; i < b->nconns; i++) {
			bench_pump(&b->conns[i]);
			bench_conn_flush(&b->conns[i]);
		}
	} else {
		bench_pump(c);
		bench_conn_flush(c);
	}
}

static void
conn_connect_cb(uv_connect_t *req, int status)
{
	bench_conn *c = req->data;
	char        frame[512];
	int         n;

	if (status != 0) {
		bench_fail(c->b, "connect %s:%d: %s", c->b->o.host,
		    c->b->o.port, uv_strerror(status));
		return;
	}
	(void) uv_tcp_nodelay(&c->tcp, 1);
	if (c->b->o.tls) {
		if (bench_tls_conn_start(c) != 0) {
			bench_fail(c->b, "connection %d: TLS setup", c->id);
			return;
		}
		conn_tls_send_pending(c);
	}
	if (c->role == ROLE_SINK) {
		n = snprintf(frame, sizeof(frame),
		    "{\"type\":\"register\",\"address\":\"%s\"}",
		    c->b->o.sink_address != NULL ? c->b->o.sink_address
		                                 : c->b->o.address);
		conn_append_frame(c, frame, (size_t) n);
	}
	conn_append_frame(c, PING, sizeof(PING) - 1);
	bench_conn_flush(c);
	(void) uv_read_start(
	    (uv_stream_t *) &c->tcp, conn_alloc_cb, conn_read_cb);
}

int
bench_conns_start(bench *b)
{
	struct sockaddr_in sa;
	struct sockaddr_in ssa;
	int                i;
	int                rv;

	if ((rv = uv_ip4_addr(b->o.host, b->o.port, &sa)) != 0 ||
	    (rv = uv_ip4_addr(b->o.host,
	         b->o.sink_port > 0 ? b->o.sink_port : b->o.port, &ssa)) != 0) {
		return rv;
	}
	for (i = 0; i < b->nconns; i++) {
		bench_conn *c = &b->conns[i];

		eb__frame_dec_init(&c->dec, BENCH_MAX_FRAME);
		eb__buf_init(&c->out);
		uv_tcp_init(b->loop, &c->tcp);
		c->tcp.data = c;
		c->creq.data = c;
		if ((rv = uv_tcp_connect(&c->creq, &c->tcp,
		         (const struct sockaddr *) (c->role == ROLE_SINK &&
		                                            b->o.mode ==
		                                                BENCH_FIRE
		                                        ? &ssa
		                                        : &sa),
		         conn_connect_cb)) != 0) {
			return rv;
		}
	}
	return 0;
}

static void
close_walk_cb(uv_handle_t *h, void *arg)
{
	(void) arg;
	if (!uv_is_closing(h)) {
		uv_close(h, NULL);
	}
}

void
bench_close_conns(bench *b)
{
	int i;

	for (i = 0; i < b->nconns; i++) {
		if (!uv_is_closing((uv_handle_t *) &b->conns[i].tcp)) {
			uv_close((uv_handle_t *) &b->conns[i].tcp, NULL);
		}
	}
}

void
bench_close_all(uv_loop_t *loop)
{
	uv_walk(loop, close_walk_cb, NULL);
}

/* ---- the responder thread ---------------------------------------------- */

struct bench_responder {
	uv_thread_t thread;
	uv_loop_t   loop;
	uv_async_t  stop;
	uv_sem_t    started;
	int         status; /* 0 ready, -1 failed */
	uv_mutex_t  lock;
	int         running; /* loop alive: stop may uv_async_send (lock) */
	bench_conn  conn;
	bench_opts  o;
};

/* Index just after the string that starts at p[i] (a quote), escapes
 * skipped; 0 if it does not end within n. */
static size_t
skip_string(const char *p, size_t n, size_t i)
{
	for (i++; i < n; i++) {
		if (p[i] == '\\') {
			i++;
		} else if (p[i] == '"') {
			return i + 1;
		}
	}
	return 0;
}

/* Length of the JSON value at p[0..n) (object, array, string or scalar);
 * 0 if it does not end within n. */
static size_t
json_value_len(const char *p, size_t n)
{
	size_t i = 0;
	int    depth = 0;

	if (n == 0) {
		return 0;
	}
	if (p[0] == '"') {
		return skip_string(p, n, 0);
	}
	if (p[0] != '{' && p[0] != '[') {
		while (i < n && p[i] != ',' && p[i] != '}' && p[i] != ']') {
			i++;
		}
		return i < n ? i : 0;
	}
	while (i < n) {
		if (p[i] == '"') {
			if ((i = skip_string(p, n, i)) == 0) {
				return 0;
			}
			continue;
		}
		if (p[i] == '{' || p[i] == '[') {
			depth++;
		} else if ((p[i] == '}' || p[i] == ']') && --depth == 0) {
			return i + 1;
		}
		i++;
	}
	return 0;
}

/* The fast path: replyAddress and body located by scanning (canonical
 * frames as bridges and ebbaseline send them). 0, or -1 to fall back. */
static int
responder_reply_scan(bench_conn *c, const char *p, uint32_t n)
{
	const char   *end = p + n;
	const char   *ra = bench_memmem(p, n, "\"replyAddress\":\"", 16);
	const char   *ra_end;
	const char   *body;
	size_t        blen = 4;
	char          head[512];
	int           hn;
	unsigned char hdr[EB_FRAME_HDR];

	if (ra == NULL) {
		return -1;
	}
	ra += 16;
	ra_end = memchr(ra, '"', (size_t) (end - ra));
	if (ra_end == NULL ||
	    memchr(ra, '\\', (size_t) (ra_end - ra)) != NULL ||
	    ra_end - ra > 256) {
		return -1;
	}
	body = bench_memmem(p, n, "\"body\":", 7);
	if (body != NULL) {
		body += 7;
		if ((blen = json_value_len(body, (size_t) (end - body))) == 0) {
			return -1;
		}
	} else {
		body = "null";
	}
	hn = snprintf(head, sizeof(head),
	    "{\"type\":\"send\",\"address\":\"%.*s\",\"body\":",
	    (int) (ra_end - ra), ra);
	eb__frame_put_len(hdr, (uint32_t) ((size_t) hn + blen + 1));
	eb__buf_append(&c->out, hdr, sizeof(hdr));
	eb__buf_append(&c->out, head, (size_t) hn);
	eb__buf_append(&c->out, body, blen);
	eb__buf_append(&c->out, "}", 1);
	c->replies++;
	return 0;
}

/* Builds {"type":"send","address":<replyAddress>,"body":<body>} from a
 * message frame: by scanning, or with jansson for unusual frames. */
static void
responder_reply(bench_conn *c, const char *p, uint32_t n)
{
	json_t     *m;
	json_t     *r;
	const char *ra;
	char       *out;
	size_t      outlen;

	if (responder_reply_scan(c, p, n) == 0) {
		return;
	}
	if ((m = json_loadb(p, n, 0, NULL)) == NULL) {
		return;
	}
	ra = json_string_value(json_object_get(m, "replyAddress"));
	if (ra != NULL) {
		r = json_pack("{s:s,s:s}", "type", "send", "address", ra);
		if (json_object_get(m, "body") != NULL) {
			json_object_set(r, "body", json_object_get(m, "body"));
		}
		if (eb__frame_encode_json(r, 0, &out, &outlen) == 0) {
			eb__buf_append(&c->out, out, outlen);
			free(out);
			c->replies++;
		}
		json_decref(r);
	}
	json_decref(m);
}

static void
responder_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	bench_conn      *c = s->data;
	bench_responder *r = EB_CONTAINER_OF(c, bench_responder, conn);
	const char      *p;
	uint32_t         n;

	(void) buf;
	if (nread < 0) {
		if (!c->ready) {
			r->status = -1;
			uv_sem_post(&r->started);
		}
		bench_close_all(&r->loop);
		return;
	}
	if (conn_input(c, nread) != 0) {
		(void) fprintf(stderr, "ebbench: responder: TLS error\n");
		if (!c->ready) {
			r->status = -1;
			uv_sem_post(&r->started);
		}
		bench_close_all(&r->loop);
		return;
	}
	while (eb__frame_dec_next(&c->dec, &p, &n) == 0) {
		if (!c->ready) {
			if (bench_memmem(p, n, "\"type\":\"pong\"", 13) !=
			    NULL) {
				c->ready = 1;
				r->status = 0;
				uv_sem_post(&r->started);
			} else if (bench_memmem(p, n, "\"type\":\"err\"", 12) !=
			           NULL) {
				(void) fprintf(stderr,
				    "ebbench: responder: %.*s\n", (int) n, p);
				r->status = -1;
				uv_sem_post(&r->started);
				bench_close_all(&r->loop);
				return;
			}
			continue;
		}
		if (bench_memmem(p, n, "\"replyAddress\"", 14) != NULL) {
			responder_reply(c, p, n);
		}
	}
	bench_conn_flush(c);
}

static void
responder_connect_cb(uv_connect_t *req, int status)
{
	bench_conn      *c = req->data;
	bench_responder *r = EB_CONTAINER_OF(c, bench_responder, conn);
	char             frame[512];
	int              n;

	if (status != 0) {
		(void) fprintf(stderr, "ebbench: responder: connect: %s\n",
		    uv_strerror(status));
		r->status = -1;
		uv_sem_post(&r->started);
		bench_close_all(&r->loop);
		return;
	}
	(void) uv_tcp_nodelay(&c->tcp, 1);
	if (r->o.tls) {
		if (bench_tls_conn_start(c) != 0) {
			r->status = -1;
			uv_sem_post(&r->started);
			bench_close_all(&r->loop);
			return;
		}
		conn_tls_send_pending(c);
	}
	n = snprintf(frame, sizeof(frame),
	    "{\"type\":\"register\",\"address\":\"%s\"}", r->o.address);
	conn_append_frame(c, frame, (size_t) n);
	conn_append_frame(c, PING, sizeof(PING) - 1);
	bench_conn_flush(c);
	(void) uv_read_start(
	    (uv_stream_t *) &c->tcp, conn_alloc_cb, responder_read_cb);
}

static void
responder_stop_cb(uv_async_t *a)
{
	bench_close_all(a->loop);
}

static void
responder_main(void *arg)
{
	bench_responder   *r = arg;
	bench_conn        *c = &r->conn;
	struct sockaddr_in sa;
	int                rv;

	uv_loop_init(&r->loop);
	uv_async_init(&r->loop, &r->stop, responder_stop_cb);
	eb__frame_dec_init(&c->dec, BENCH_MAX_FRAME);
	eb__buf_init(&c->out);
	uv_tcp_init(&r->loop, &c->tcp);
	c->tcp.data = c;
	c->creq.data = c;
	c->role = ROLE_RESPONDER;
	/* --sink-port puts the responder on another node (cross-node). */
	if ((rv = uv_ip4_addr(r->o.host,
	         r->o.sink_port > 0 ? r->o.sink_port : r->o.port, &sa)) != 0 ||
	    (rv = uv_tcp_connect(&c->creq, &c->tcp,
	         (const struct sockaddr *) &sa, responder_connect_cb)) != 0) {
		(void) fprintf(
		    stderr, "ebbench: responder: %s\n", uv_strerror(rv));
		r->status = -1;
		uv_sem_post(&r->started);
		bench_close_all(&r->loop);
	}
	(void) uv_run(&r->loop, UV_RUN_DEFAULT);
	uv_mutex_lock(&r->lock);
	r->running = 0;
	uv_mutex_unlock(&r->lock);
	(void) uv_loop_close(&r->loop);
	eb__frame_dec_free(&c->dec);
	eb__buf_free(&c->out);
	bench_tls_conn_free(c);
}

int
bench_responder_start(const bench_opts *o, bench_responder **rp)
{
	bench_responder *r = eb__calloc(1, sizeof(*r));

	r->o = *o;
	r->status = -1;
	r->running = 1;
	uv_sem_init(&r->started, 0);
	uv_mutex_init(&r->lock);
	if (uv_thread_create(&r->thread, responder_main, r) != 0) {
		uv_sem_destroy(&r->started);
		uv_mutex_destroy(&r->lock);
		free(r);
		return -1;
	}
	uv_sem_wait(&r->started);
	*rp = r;
	return r->status;
}

void
bench_responder_stop(bench_responder *r, uint64_t *replies)
{
	/* The loop's wakeup fd is valid until the thread marks the loop as
	 * finished under the lock, so the send cannot race uv_loop_close. */
	uv_mutex_lock(&r->lock);
	if (r->running) {
		uv_async_send(&r->stop);
	}
	uv_mutex_unlock(&r->lock);
	uv_thread_join(&r->thread);
	if (replies != NULL) {
		*replies = r->conn.replies;
	}
	uv_sem_destroy(&r->started);
	uv_mutex_destroy(&r->lock);
	free(r);
}
