/*
 * Plain TCP streams, and the socket plumbing both stream kinds share: the
 * one read path, the connect of a client, and the one write queue: one
 * write per gathered buffer (many whole frames, each header and payload
 * contiguous), tried directly first (uv_try_write) and queued only for what
 * the kernel did not take, and the byte count of writes still in flight,
 * which the owners bound (eb__stream_backlog).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/err.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "stream/stream.h"

#define STREAM_READ_CHUNK 65536

/* A queued write: the bytes follow the struct (one allocation), or are a
 * buffer handed over by the caller (owned). */
typedef struct stream_wreq {
	uv_write_t  req;
	eb__stream *s; /* borrowed: valid until closed_cb, after this cb */
	size_t      len;
	char       *owned; /* owned; NULL: the bytes follow */
} stream_wreq;

/*
 * One read buffer per thread: libuv calls alloc_cb and read_cb back to back
 * for one stream at a time, and read_cb consumes (copies) the bytes before
 * returning, so the buffer is never shared between two reads.
 */
static _Thread_local char stream_rbuf[STREAM_READ_CHUNK];

static void
stream_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	(void) h;
	(void) hint;
	buf->base = stream_rbuf;
	buf->len = sizeof(stream_rbuf);
}

static void
stream_write_cb(uv_write_t *req, int status)
{
	stream_wreq *w = (stream_wreq *) req;
	eb__stream  *s = w->s;

	s->queued -= sizeof(*w) + w->len;
	free(w->owned);
	free(w);
	/* Writes still queued at close complete with UV_ECANCELED. */
	if (status < 0 && !s->closing) {
		s->cbs.error_cb(s, status);
	} else if (status == 0 && !s->closing && s->cbs.written_cb != NULL) {
		s->cbs.written_cb(s);
	}
}

/* Writes what the kernel takes at once when nothing is queued: the bytes
 * written (0: none, or something is queued) or an error. */
static ssize_t
stream_try(eb__stream *s, const char *p, size_t n)
{
	char    *base;
	uv_buf_t ub;
	int      rv;

	if (eb__stream_backlog(s) != 0) {
		return 0; /* keep the order: behind the queue */
	}
	/* uv_buf_t is not const; uv_try_write does not write to it. */
	memcpy(&base, &p, sizeof(base));
	ub = uv_buf_init(base, (unsigned int) n);
	rv = uv_try_write((uv_stream_t *) &s->tcp, &ub, 1);
	return rv == UV_EAGAIN ? 0 : rv;
}

/* Queues w (its buffer at base) in one uv_write. 0 or an error (w freed). */
static int
stream_queue(eb__stream *s, stream_wreq *w, char *base, size_t n)
{
	uv_buf_t ub = uv_buf_init(base, (unsigned int) n);
	int      rv;

	w->s = s;
	w->len = n;
	rv =
	    uv_write(&w->req, (uv_stream_t *) &s->tcp, &ub, 1, stream_write_cb);
	if (rv != 0) {
		free(w->owned);
		free(w);
		return rv;
	}
	s->queued += sizeof(*w) + n;
	return 0;
}

/* Queues a copy of p[0..n) (the bytes follow the request). */
static int
stream_queue_copy(eb__stream *s, const char *p, size_t n)
{
	stream_wreq *w = eb__malloc(sizeof(*w) + n);

	w->owned = NULL;
	memcpy(w + 1, p, n);
	return stream_queue(s, w, (char *) (w + 1), n);
}

int
eb__stream_raw_send(eb__stream *s, const char *p, size_t n)
{
	ssize_t done;

	EB_ASSERT(!s->closing); /* use after close */
	if (n == 0) {
		return 0;
	}
	/* Nothing queued: the kernel usually takes it all, no copy. */
	done = stream_try(s, p, n);
	if (done < 0) {
		return (int) done;
	}
	if ((size_t) done == n) {
		return 0;
	}
	return stream_queue_copy(s, p + done, n - (size_t) done);
}

int
eb__stream_raw_send_owned(eb__stream *s, char *data, size_t n)
{
	stream_wreq *w;
	ssize_t      done;

	EB_ASSERT(!s->closing); /* use after close */
	EB_ASSERT(data != NULL || n == 0);
	done = n == 0 ? 0 : stream_try(s, data, n);
	if (done < 0 || (size_t) done == n) {
		free(data);
		return done < 0 ? (int) done : 0;
	}
	if (done > 0) {
		/* The kernel took a part: queue a copy of the rest (the
		 * backlog counts what is held, as for raw_send). */
		int rv = stream_queue_copy(s, data + done, n - (size_t) done);

		free(data);
		return rv;
	}
	w = eb__malloc(sizeof(*w));
	w->owned = data;
	return stream_queue(s, w, data, n);
}

/* Leaves b empty, keeping its memory. */
static void
buf_reset(eb__buf *b)
{
	b->off = 0;
	b->len = 0;
}

static int
tcp_write(eb__stream *s, eb__buf *b)
{
	int rv = eb__stream_raw_send(s, eb__buf_head(b), eb__buf_avail(b));

	buf_reset(b);
	return rv;
}

/*
 * The memory the queued writes hold: each one's bytes and its request
 * (which dominates when a client makes the node answer many tiny writes,
 * e.g. one pong per read), until libuv completes it.
 */
size_t
eb__stream_backlog(const eb__stream *s)
{
	return s->queued;
}

static void
stream_closed_cb(uv_handle_t *h)
{
	eb__stream *s = h->data;

	eb__tls_free(s->tls); /* accepts NULL */
	s->tls = NULL;
	s->cbs.closed_cb(s);
}

void
eb__stream_raw_close(eb__stream *s)
{
	EB_ASSERT(!s->closing); /* double close */
	s->closing = 1;
	(void) uv_read_stop((uv_stream_t *) &s->tcp);
	uv_close((uv_handle_t *) &s->tcp, stream_closed_cb);
}

/* The one read path: plaintext to the owner, ciphertext to the engine. */
static void
stream_read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
	eb__stream *s = st->data;

	if (s->closing) {
		return;
	}
	if (nread < 0) {
		(void) uv_read_stop(st);
		s->cbs.error_cb(s, (int) nread);
	} else if (nread > 0) {
		if (s->tls != NULL) {
			eb__stream_tls_input(s, buf->base, (size_t) nread);
		} else {
			s->cbs.read_cb(s, buf->base, (size_t) nread);
		}
	}
}

int
eb__stream_read_start(eb__stream *s)
{
	EB_ASSERT(!s->closing); /* start after close */
	return uv_read_start(
	    (uv_stream_t *) &s->tcp, stream_alloc_cb, stream_read_cb);
}

const eb__stream_ops eb__stream_tcp_ops = {
	.name = "tcp",
	.start = eb__stream_read_start,
	.write = tcp_write,
	.close = eb__stream_raw_close,
};

static int
null_start(eb__stream *s)
{
	EB_ASSERT(!s->closing);
	return 0;
}

static int
null_write(eb__stream *s, eb__buf *b)
{
	EB_ASSERT(!s->closing);
	buf_reset(b);
	return 0;
}

const eb__stream_ops eb__stream_null_ops = {
	.name = "null",
	.start = null_start,
	.write = null_write,
	.close = eb__stream_raw_close,
};

void
eb__stream_make_null(eb__stream *s)
{
	s->ops = &eb__stream_null_ops;
}

static int
stream_setup(eb__stream *s, eb__tls_ctx *tls, int client,
    const eb__stream_cbs *cbs, void *data)
{
	s->cbs = *cbs;
	s->data = data;
	s->queued = 0;
	s->closing = 0;
	s->connect_cb = NULL;
	s->tls = NULL;
	s->layer = NULL;
	s->handshake_done = 0;
	s->client = client;
	s->tls_err[0] = '\0';
	s->tcp.data = s;
	if (tls == NULL) {
		s->ops = &eb__stream_tcp_ops;
		return 0;
	}
	s->ops = &eb__stream_tls_ops;
	return eb__stream_tls_setup(s, tls);
}

int
eb__stream_init(
    eb__stream *s, eb__tls_ctx *tls, const eb__stream_cbs *cbs, void *data)
{
	return stream_setup(s, tls, 0, cbs, data);
}

int
eb__stream_init_client(eb__stream *s, eb__tls_ctx *tls, const char *server_name,
    int verify_name, const eb__stream_cbs *cbs, void *data)
{
	int rv = stream_setup(s, tls, 1, cbs, data);

	if (rv == 0 && s->tls != NULL && server_name != NULL &&
	    eb__tls_set_peer_name(s->tls, server_name, verify_name) != 0) {
		(void) snprintf(s->tls_err, sizeof(s->tls_err), "%s",
		    eb__tls_error(s->tls));
		rv = EB_ETLS;
	}
	return rv;
}

static void
stream_connect_cb(uv_connect_t *req, int status)
{
	eb__stream *s = req->data;

	if (s->closing && status != UV_ECANCELED) {
		return;
	}
	s->connect_cb(s, status);
}

int
eb__stream_connect(eb__stream *s, const struct sockaddr *sa,
    void (*cb)(eb__stream *s, int status))
{
	EB_ASSERT(!s->closing); /* connect after close */
	s->connect_cb = cb;
	s->creq.data = s;
	return uv_tcp_connect(&s->creq, &s->tcp, sa, stream_connect_cb);
}
