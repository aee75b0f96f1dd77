/*
 * TLS streams on the TLS engine (tls/tls.h): ciphertext read from the
 * socket is fed to the engine; whatever it wants to send (handshake
 * records, alerts, application data, session tickets) is drained after
 * every call and written to the socket. The socket itself is libuv's. A
 * server waits for the ClientHello; a client sends its hello from start.
 */
#include <stdio.h>
#include <stdlib.h>

#include <ebnode/err.h>

#include "common/assert.h"
#include "stream/stream.h"
#include "tls/tls.h"

#define TLS_PLAIN_CHUNK 16384

/* Keeps the engine's reason of the last failure for the owner's log. */
static void
tls_note_error(eb__stream *s)
{
	(void) snprintf(
	    s->tls_err, sizeof(s->tls_err), "%s", eb__tls_error(s->tls));
}

/* Moves pending ciphertext to the socket, all of it in one write (one
 * syscall when the kernel takes it; queued without a copy when it takes
 * none). 0 or an error. */
static int
tls_flush(eb__stream *s)
{
	size_t n;
	char  *data = eb__tls_take(s->tls, &n);

	return data == NULL ? 0 : eb__stream_raw_send_owned(s, data, n);
}

/* Flushes; on a socket error reports it to the owner. 0 or -1. */
static int
tls_flush_or_report(eb__stream *s)
{
	int rv = tls_flush(s);

	if (rv != 0) {
		if (!s->closing) {
			s->cbs.error_cb(s, rv);
		}
		return -1;
	}
	return 0;
}

static void
tls_fail(eb__stream *s)
{
	tls_note_error(s);
	/* Send the alert the engine queued (unknown CA, protocol version...).
	 */
	(void) tls_flush(s);
	s->cbs.error_cb(s, EB_ETLS);
}

/* Drives the handshake; 1 done, 0 needs more input, -1 failed (reported). */
static int
tls_handshake(eb__stream *s)
{
	int r = eb__tls_handshake(s->tls);

	if (r < 0) {
		tls_fail(s);
		return -1;
	}
	s->handshake_done = r;
	if (tls_flush_or_report(s) != 0) {
		return -1;
	}
	return r;
}

/* Hands every decrypted byte to the owner. */
static void
tls_read_plain(eb__stream *s)
{
	char buf[TLS_PLAIN_CHUNK];
	int  r;

	for (;;) {
		r = eb__tls_read(s->tls, buf, sizeof(buf));
		if (r > 0) {
			s->cbs.read_cb(s, buf, (size_t) r);
			if (s->closing) {
				return;
			}
			continue;
		}
		if (r == 0) {
			(void) tls_flush_or_report(s);
			return;
		}
		if (r == EB_ECLOSED) {
			(void) tls_flush(s); /* our close_notify */
			s->cbs.error_cb(s, UV_EOF);
			return;
		}
		tls_fail(s);
		return;
	}
}

void
eb__stream_tls_input(eb__stream *s, const char *p, size_t n)
{
	if (eb__tls_feed(s->tls, p, n) != 0) {
		tls_fail(s);
		return;
	}
	if (!s->handshake_done) {
		if (tls_handshake(s) != 1) {
			return;
		}
		if (s->cbs.handshake_cb != NULL) {
			s->cbs.handshake_cb(s);
			if (s->closing) {
				return;
			}
		}
	}
	tls_read_plain(s);
}

/* Reads; a client also sends its hello (a failure is returned, not
 * reported: callbacks never run from inside start). */
static int
tls_start(eb__stream *s)
{
	int rv = eb__stream_read_start(s);

	if (rv != 0 || !s->client) {
		return rv;
	}
	if (eb__tls_handshake(s->tls) < 0) {
		tls_note_error(s);
		return EB_ETLS;
	}
	return tls_flush(s);
}

static int
tls_write(eb__stream *s, eb__buf *b)
{
	size_t len = eb__buf_avail(b);
	int    r;

	EB_ASSERT(!s->closing); /* use after close */
	if (!s->handshake_done || len > (size_t) INT32_MAX) {
		/* The bridge produces frames only after the peer sent one,
		 * which needs a finished handshake; other owners wait for
		 * handshake_cb. */
		b->off = b->len = 0;
		return EB_ETLS;
	}
	if (len == 0) {
		return 0;
	}
	/* Everything gathered in one write: full records, one flush. */
	r = eb__tls_write(s->tls, eb__buf_head(b), len);
	b->off = b->len = 0;
	if (r != 0) {
		tls_note_error(s);
		return EB_ETLS;
	}
	return tls_flush(s);
}

const eb__stream_ops eb__stream_tls_ops = {
	.name = "tls",
	.start = tls_start,
	.write = tls_write,
	.close = eb__stream_raw_close,
};

int
eb__stream_tls_setup(eb__stream *s, eb__tls_ctx *tls)
{
	eb_errbuf e;

	s->tls = eb__tls_new(tls, !s->client, &e);
	if (s->tls == NULL) {
		(void) snprintf(s->tls_err, sizeof(s->tls_err), "%s", e.msg);
		return EB_ETLS;
	}
	return 0;
}
