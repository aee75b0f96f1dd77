/*
 * libFuzzer target: bridge frame decoding. The input is a client byte
 * stream, fed to the length-prefixed decoder in chunks whose sizes come from
 * the input itself; every complete frame goes through the JSON frame parser
 * (with and without token stripping) and the parsed fields through the
 * outgoing encoders. Nothing may crash, leak or read out of bounds, and the
 * outgoing frames must carry a correct length prefix.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/bridge_int.h"
#include "common/frame.h"

/* libFuzzer's names. */
/* NOLINTNEXTLINE(readability-identifier-naming) */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_frame(char *buf, size_t len)
{
	if (len < EB_FRAME_HDR ||
	    eb__frame_get_len((unsigned char *) buf) != len - EB_FRAME_HDR) {
		abort();
	}
	free(buf);
}

static void
use_frame(const char *p, uint32_t n, int strip)
{
	eb__bframe f;
	char      *out;
	size_t     len;
	char      *body;

	if (eb__bframe_parse(p, n, strip, &f) != 0) {
		return;
	}
	body = f.body != NULL
	           ? json_dumps(f.body, JSON_COMPACT | JSON_ENCODE_ANY)
	           : NULL;
	eb__bout_message(f.address != NULL ? f.address : "", f.reply_address,
	    f.headers, body, body != NULL ? strlen(body) : 0,
	    f.type == EB__BF_SEND, &out, &len);
	check_frame(out, len);
	free(body);
	if (f.address != NULL && f.reply_address != NULL) {
		eb__bout_failure(f.reply_address, f.address, f.failure_code,
		    "RECIPIENT_FAILURE", f.failure_message, &out, &len);
		check_frame(out, len);
	}
	eb__bframe_free(&f);
}

/* Runs every complete frame; 0, or -1 after a bad length (the connection
 * would close). */
static int
drain(eb__frame_dec *d, int strip)
{
	const char *p;
	uint32_t    n;
	int         rv;

	while ((rv = eb__frame_dec_next(d, &p, &n)) == 0) {
		use_frame(p, n, strip);
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

	eb__frame_dec_init(&d, 65536);
	while (off < size) {
		/* Chunk sizes from the data: 1..64 bytes, or the rest. */
		step = (size_t) (data[off] % 65);
		if (step == 0 || step > size - off) {
			step = size - off;
		}
		eb__frame_dec_feed(&d, data + off, step);
		off += step;
		if (drain(&d, strip) != 0) {
			break;
		}
	}
	eb__frame_dec_free(&d);
	return 0;
}
