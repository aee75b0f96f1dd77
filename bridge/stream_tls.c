/*
 * TLS streams: OpenSSL over two memory BIOs. Ciphertext read from the socket
 * is pushed into rbio; whatever OpenSSL wants to send (handshake records,
 * alerts, application data, session tickets) is drained from wbio after every
 * SSL call and written to the socket in one uv_write. The socket itself is
 * libuv's; OpenSSL never sees the fd.
 */
#include <stdio.h>
#include <stdlib.h>

#include <openssl/err.h>

#include <ebnode/err.h>

#include "bridge/stream.h"
#include "common/alloc.h"

#define TLS_PLAIN_CHUNK  16384
#define TLS_CIPHER_CHUNK 65536

/* Records the first queued OpenSSL error as text and clears the queue. */
static void
tls_note_error(eb__stream *s, int ssl_err)
{
	unsigned long e = ERR_get_error();

	if (e != 0) {
		ERR_error_string_n(e, s->tls_err, sizeof(s->tls_err));
	} else {
		(void) snprintf(
		    s->tls_err, sizeof(s->tls_err), "ssl_error=%d", ssl_err);
	}
	ERR_clear_error();
}

/* Moves pending ciphertext from wbio to the socket. 0 or an error. */
static int
tls_flush(eb__stream *s)
{
	char buf[TLS_CIPHER_CHUNK];
	int  n;
	int  rv;

	while (BIO_ctrl_pending(s->wbio) > 0) {
		n = BIO_read(s->wbio, buf, (int) sizeof(buf));
		if (n <= 0) {
			return 0;
		}
		rv = eb__stream_raw_send(s, buf, (size_t) n);
		if (rv != 0) {
			return rv;
		}
	}
	return 0;
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
tls_fail(eb__stream *s, int ssl_err)
{
	tls_note_error(s, ssl_err);
	/* Send the alert OpenSSL queued (unknown CA, protocol version...). */
	(void) tls_flush(s);
	s->cbs.error_cb(s, EB_ETLS);
}

/* Drives the handshake; 1 done, 0 needs more input, -1 failed (reported). */
static int
tls_handshake(eb__stream *s)
{
	int r;
	int e;

	r = SSL_do_handshake(s->ssl);
	if (r == 1) {
		s->handshake_done = 1;
		return tls_flush_or_report(s) == 0 ? 1 : -1;
	}
	e = SSL_get_error(s->ssl, r);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		return tls_flush_or_report(s) == 0 ? 0 : -1;
	}
	tls_fail(s, e);
	return -1;
}

/* Hands every decrypted byte to the owner. */
static void
tls_read_plain(eb__stream *s)
{
	char buf[TLS_PLAIN_CHUNK];
	int  r;
	int  e;

	for (;;) {
		r = SSL_read(s->ssl, buf, (int) sizeof(buf));
		if (r > 0) {
			s->cbs.read_cb(s, buf, (size_t) r);
			if (s->closing) {
				return;
			}
			continue;
		}
		e = SSL_get_error(s->ssl, r);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			(void) tls_flush_or_report(s);
			return;
		}
		if (e == SSL_ERROR_ZERO_RETURN) {
			(void) tls_flush(s); /* our close_notify */
			s->cbs.error_cb(s, UV_EOF);
			return;
		}
		tls_fail(s, e);
		return;
	}
}

static void
tls_read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
	eb__stream *s = st->data;

	if (s->closing) {
		return;
	}
	if (nread < 0) {
		(void) uv_read_stop(st);
		s->cbs.error_cb(s, (int) nread);
		return;
	}
	if (nread == 0) {
		return;
	}
	/* A memory BIO grows as needed; the owner's frame cap and the read
	 * chunk bound what accumulates here. */
	if (BIO_write(s->rbio, buf->base, (int) nread) != (int) nread) {
		tls_fail(s, SSL_ERROR_SYSCALL);
		return;
	}
	if (!s->handshake_done && tls_handshake(s) != 1) {
		return;
	}
	tls_read_plain(s);
}

static int
tls_start(eb__stream *s)
{
	return eb__stream_read_start(s, tls_read_cb);
}

static int
tls_write(eb__stream *s, eb__buf *b)
{
	size_t len = eb__buf_avail(b);
	int    r;
	int    e;

	if (s->closing) {
		b->off = b->len = 0;
		return EB_ECLOSED;
	}
	if (!s->handshake_done || len > (size_t) INT32_MAX) {
		/* Frames are only produced after the peer sent one, which
		 * needs a finished handshake. */
		b->off = b->len = 0;
		return EB_ETLS;
	}
	if (len == 0) {
		return 0;
	}
	/* Everything gathered in one SSL_write: full records, one flush. */
	r = SSL_write(s->ssl, eb__buf_head(b), (int) len);
	b->off = b->len = 0;
	if (r <= 0) {
		e = SSL_get_error(s->ssl, r);
		tls_note_error(s, e);
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
eb__stream_tls_setup(eb__stream *s, SSL_CTX *tls)
{
	s->ssl = SSL_new(tls);
	if (s->ssl == NULL) {
		tls_note_error(s, 0);
		return EB_ETLS;
	}
	s->rbio = BIO_new(BIO_s_mem());
	s->wbio = BIO_new(BIO_s_mem());
	if (s->rbio == NULL || s->wbio == NULL) {
		BIO_free(s->rbio);
		BIO_free(s->wbio);
		s->rbio = NULL;
		s->wbio = NULL;
		tls_note_error(s, 0);
		return EB_ETLS;
	}
	SSL_set_bio(s->ssl, s->rbio, s->wbio); /* ssl owns both now */
	SSL_set_accept_state(s->ssl);
	return 0;
}
