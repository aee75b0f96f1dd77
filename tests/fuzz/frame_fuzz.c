/*
 * libFuzzer target: bridge frame decoding. The input is a client byte
 * stream, fed to the length-prefixed decoder in chunks whose sizes come from
 * the input itself; every complete frame goes through the JSON frame parser
 * (with and without token stripping) and the parsed fields through the
 * outgoing encoders. Nothing may crash, leak or read out of bounds, and the
 * outgoing frames must carry a correct length prefix.
 *
 * Differential (issue 23): every frame is also judged by the jansson
 * reference of tests/harness/frameref.h -- the same decision and fields,
 * the body a span of the payload that reads as the reference's body; the
 * first byte also picks the nesting bound (2..41). A refused frame's err
 * answer is encoded too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/bridge_int.h"
#include "common/frame.h"
#include "tests/harness/frameref.h"

/* libFuzzer's names. */
/* NOLINTNEXTLINE(readability-identifier-naming) */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_frame(eb__buf *b)
{
	size_t len = eb__buf_avail(b);

	if (len < EB_FRAME_HDR ||
	    eb__frame_get_len((const unsigned char *) eb__buf_head(b)) !=
	        len - EB_FRAME_HDR) {
		abort();
	}
	eb__buf_consume(b, len);
}

static void
use_frame(const char *p, uint32_t n, int strip, int depth)
{
	eb__bframe f;
	eb__buf    out;
	char       why[256];

	/* Differential: the parser against the jansson reference. */
	if (eb__frameref_check(p, n, strip, depth, why, sizeof(why)) < 0) {
		(void) fprintf(stderr, "frame_fuzz: %s\n", why);
		abort();
	}
	if (eb__bframe_parse(p, n, strip, depth, &f) != 0) {
		eb__buf_init(&out);
		eb__bout_err_buf(&out, f.err); /* the answer it gets */
		check_frame(&out);
		eb__buf_free(&out);
		eb__bframe_free(&f);
		return;
	}
	eb__buf_init(&out);
	eb__bout_message_buf(&out, f.address != NULL ? f.address : "",
	    f.reply_address, f.headers, f.body_raw, f.body_raw_len,
	    f.type == EB__BF_SEND);
	check_frame(&out);
	if (f.address != NULL && f.reply_address != NULL) {
		eb__bout_failure_buf(&out, f.reply_address, f.address,
		    f.failure_code, "RECIPIENT_FAILURE", f.failure_message);
		check_frame(&out);
	}
	eb__buf_free(&out);
	eb__bframe_free(&f);
}

/* Runs every complete frame; 0, or -1 after a bad length (the connection
 * would close). */
static int
drain(eb__frame_dec *d, int strip, int depth)
{
	const char *p;
	uint32_t    n;
	int         rv;

	while ((rv = eb__frame_dec_next(d, &p, &n)) == 0) {
		use_frame(p, n, strip, depth);
	}
	return rv == UV_EAGAIN ? 0 : -1;
}

/* NOLINTNEXTLINE(readability-identifier-naming) */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	eb__frame_dec d;
	size_t        off = 0;
	size_t        step;
	int           strip = size > 0 && (data[0] & 1);
	int           depth = size > 0 ? 2 + (data[0] >> 1) % 40 : 2;

	eb__frame_dec_init(&d, 65536);
	while (off < size) {
		/* Chunk sizes from the data: 1..64 bytes, or the rest. */
		step = (size_t) (data[off] % 65);
		if (step == 0 || step > size - off) {
			step = size - off;
		}
		eb__frame_dec_feed(&d, data + off, step);
		off += step;
		if (drain(&d, strip, depth) != 0) {
			break;
		}
	}
	eb__frame_dec_free(&d);
	return 0;
}
