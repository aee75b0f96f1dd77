/* Length-prefixed frame decoder and encoder; see frame.h. */
#include "common/frame.h"

#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include <ebnode/err.h>

#include "common/alloc.h"

#define FRAME_MAX_SIGNED 0x7fffffffu

void
eb__frame_dec_init(eb__frame_dec *d, uint32_t max_frame)
{
	eb__buf_init(&d->in);
	d->max_frame = max_frame;
	d->pending = 0;
	d->bad_len = 0;
}

void
eb__frame_dec_free(eb__frame_dec *d)
{
	eb__buf_free(&d->in);
}

void
eb__frame_dec_feed(eb__frame_dec *d, const void *p, size_t n)
{
	size_t avail = eb__buf_avail(&d->in);
	size_t upto = 0;
	char  *dst;

	/* A frame still pending from next() stays in the buffer (compaction
	 * keeps it at the read offset); next() consumes it. Memory grows with
	 * the bytes that arrived, never with the declared length; when the
	 * input ends inside the frame whose header is buffered, growth stops
	 * at that frame's size instead of doubling past it. */
	if (d->pending == 0 && avail >= EB_FRAME_HDR) {
		uint32_t len = eb__frame_get_len(
		    (const unsigned char *) eb__buf_head(&d->in));

		if (len <= d->max_frame &&
		    avail + n <= (size_t) len + EB_FRAME_HDR) {
			upto = (size_t) len + EB_FRAME_HDR;
		}
	}
	if (n == 0) {
		return;
	}
	dst = eb__buf_reserve_upto(&d->in, n, upto);
	memcpy(dst, p, n);
	d->in.len += n;
}

int
eb__frame_dec_next(eb__frame_dec *d, const char **payload, uint32_t *len)
{
	uint32_t n;

	/* The frame returned last time is consumed now, not before: the
	 * caller's borrowed pointer stays valid until this call. */
	if (d->pending > 0) {
		eb__buf_consume(&d->in, d->pending);
		d->pending = 0;
	}
	if (eb__buf_avail(&d->in) < EB_FRAME_HDR) {
		return UV_EAGAIN;
	}
	n = eb__frame_get_len((const unsigned char *) eb__buf_head(&d->in));
	if (n > FRAME_MAX_SIGNED) {
		/* Vert.x reads the length as a signed int. */
		d->bad_len = (int64_t) (int32_t) n;
		return EB_EFRAME;
	}
	if (n > d->max_frame) {
		d->bad_len = (int64_t) n;
		return EB_EFRAME; /* the peer controls n: reject first */
	}
	if (eb__buf_avail(&d->in) - EB_FRAME_HDR < n) {
		return UV_EAGAIN; /* body incomplete: read more */
	}
	*payload = eb__buf_head(&d->in) + EB_FRAME_HDR;
	*len = n;
	d->pending = n + EB_FRAME_HDR;
	return 0;
}

int
eb__frame_dec_next_in(eb__frame_dec *d, const char **p, size_t *n,
    const char **payload, uint32_t *len)
{
	uint32_t m;

	if (d->pending > 0) {
		eb__buf_consume(&d->in, d->pending);
		d->pending = 0;
	}
	if (eb__buf_avail(&d->in) > 0 || *n < EB_FRAME_HDR) {
		return UV_EAGAIN;
	}
	m = eb__frame_get_len((const unsigned char *) *p);
	if (m > FRAME_MAX_SIGNED || m > d->max_frame || *n - EB_FRAME_HDR < m) {
		return UV_EAGAIN;
	}
	*payload = *p + EB_FRAME_HDR;
	*len = m;
	*p += EB_FRAME_HDR + (size_t) m;
	*n -= EB_FRAME_HDR + (size_t) m;
	return 0;
}

size_t
eb__frame_dec_buffered(const eb__frame_dec *d)
{
	return eb__buf_avail(&d->in) - d->pending;
}

int
eb__frame_encode_json(
    const json_t *j, uint32_t max_frame, char **out, size_t *outlen)
{
	const size_t flags = JSON_COMPACT | JSON_ENCODE_ANY;
	size_t       n;
	size_t       w;
	char        *buf;

	n = json_dumpb(j, NULL, 0, flags);
	if (n == 0) {
		return EB_EFRAME;
	}
	if (n > FRAME_MAX_SIGNED || (max_frame > 0 && n > max_frame)) {
		return EB_EFRAME;
	}
	buf = eb__malloc(n + EB_FRAME_HDR);
	w = json_dumpb(j, buf + EB_FRAME_HDR, n, flags);
	if (w != n) {
		free(buf);
		return EB_EFRAME;
	}
	eb__frame_put_len((unsigned char *) buf, (uint32_t) n);
	*out = buf;
	*outlen = n + EB_FRAME_HDR;
	return 0;
}
