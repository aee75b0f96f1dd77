/*
 * Length-prefixed frames: a big-endian 32-bit length, then that many payload
 * bytes. This is the Vert.x TCP event-bus bridge framing, also used by the
 * cluster links. The decoder is pure (no I/O) and checks the peer-controlled
 * length against max_frame before the buffer is grown for it.
 *
 * The length is read as Vert.x reads it, as a signed int: a value with the top
 * bit set is a "negative length" and is rejected like an oversized one. A
 * zero-length frame is returned as a valid, empty frame; the bridge treats it
 * as malformed JSON and skips it.
 */
#ifndef EB_COMMON_FRAME_H
#define EB_COMMON_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/buf.h"

#define EB_FRAME_HDR 4

typedef struct eb__frame_dec {
	eb__buf  in;
	uint32_t max_frame;
	uint32_t pending; /* bytes of the frame returned by the last next() */
	int64_t  bad_len; /* the rejected length after EB_EFRAME (may be < 0) */
} eb__frame_dec;

void eb__frame_dec_init(eb__frame_dec *d, uint32_t max_frame);
void eb__frame_dec_free(eb__frame_dec *d);
/* Copies n input bytes in. */
void eb__frame_dec_feed(eb__frame_dec *d, const void *p, size_t n);
/*
 * Returns 0 and the next complete frame (payload borrowed until the next call
 * to feed or next), UV_EAGAIN when more input is needed, or EB_EFRAME when the
 * length is negative or above max_frame (see bad_len). After EB_EFRAME the
 * stream cannot be resynchronised: the caller closes the connection.
 */
int eb__frame_dec_next(eb__frame_dec *d, const char **payload, uint32_t *len);
/* Bytes buffered and not yet returned as frames. */
size_t eb__frame_dec_buffered(const eb__frame_dec *d);
/*
 * The frames of the input p[0..n) read where they are, without the copy
 * of feed (issue 25: a node link's reads), for a caller that is done with
 * each payload before the input goes away: while nothing is buffered
 * (the frame of the last next() is consumed here), returns 0 and the next
 * whole frame at *p (payload borrowed from the input), moving *p and *n
 * past it. Else UV_EAGAIN, leaving *p and *n: the caller feeds the rest
 * and goes on with next(), which also reports a bad length.
 */
int eb__frame_dec_next_in(eb__frame_dec *d, const char **p, size_t *n,
    const char **payload, uint32_t *len);

static inline void
eb__frame_put_len(unsigned char *hdr, uint32_t n)
{
	hdr[0] = (unsigned char) (n >> 24);
	hdr[1] = (unsigned char) (n >> 16);
	hdr[2] = (unsigned char) (n >> 8);
	hdr[3] = (unsigned char) n;
}

static inline uint32_t
eb__frame_get_len(const unsigned char *hdr)
{
	return (uint32_t) hdr[0] << 24 | (uint32_t) hdr[1] << 16 |
	       (uint32_t) hdr[2] << 8 | (uint32_t) hdr[3];
}

/*
 * Encodes j compactly (raw UTF-8, '/' unescaped, key order kept) into one
 * malloc'd buffer holding header and payload, so that the frame goes out in
 * one write. Returns 0, EB_EFRAME if j cannot be encoded or the payload would
 * exceed max_frame (0: no limit below 2^31-1).
 */
int eb__frame_encode_json(
    const json_t *j, uint32_t max_frame, char **out, size_t *outlen);

#endif
