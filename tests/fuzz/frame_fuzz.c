/*
 * libFuzzer target: bridge frame decoding. The input is a client byte
 * stream, fed to the length-prefixed decoder in chunks whose sizes come from
 * the input itself; every complete frame goes through the JSON frame parser
 * (with and without token stripping) and the parsed fields through the
 * outgoing encoders. Nothing may crash, leak or read out of bounds, and the
 * outgoing frames must carry a correct length prefix.
 *
 * Differential (issue 11): every frame is also parsed by the fast scanner
 * (eb__bframe_parse_ex, fast = 1). Where the scanner takes a frame, every
 * field must equal the strict (jansson) parse, and its raw body bytes must
 * be exactly json_dumps(strict body, JSON_COMPACT | JSON_ENCODE_ANY), the
 * bus's encoding; where it declines, it falls back to the strict parse.
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

static int
same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) ||
	       (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Aborts when the fast parse of p disagrees with the strict parse f. */
static void
compare_fast(const char *p, uint32_t n, int strip, const eb__bframe *f)
{
	eb__bframe g;

	if (eb__bframe_parse_ex(p, n, strip, 1, &g) != 0) {
		abort(); /* strict took it: the fast path must too */
	}
	if (g.type != f->type || !same_str(g.address, f->address) ||
	    !same_str(g.reply_address, f->reply_address) ||
	    !same_str(g.token, f->token) || g.timeout_ms != f->timeout_ms ||
	    g.local_only != f->local_only || g.has_failure != f->has_failure ||
	    g.failure_code != f->failure_code ||
	    !same_str(g.failure_message, f->failure_message) ||
	    (g.headers == NULL) != (f->headers == NULL) ||
	    (g.headers != NULL && !json_equal(g.headers, f->headers))) {
		abort();
	}
	if (g.raw) {
		/* The body as written: jansson must read the same value. */
		json_error_t jerr;
		json_t      *v = g.body_raw != NULL
		                     ? json_loadb(g.body_raw, g.body_raw_len,
		                           JSON_DECODE_ANY, &jerr)
		                     : NULL;

		if ((f->body == NULL) != (g.body_raw == NULL) ||
		    (f->body != NULL &&
		        (v == NULL || !json_equal(v, f->body)))) {
			abort();
		}
		json_decref(v);
	} else if ((g.body == NULL) != (f->body == NULL) ||
	           (g.body != NULL && !json_equal(g.body, f->body))) {
		abort();
	}
	eb__bframe_free(&g);
}

static void
use_frame(const char *p, uint32_t n, int strip)
{
	eb__bframe f;
	eb__buf    out;
	char      *body;

	/* The strict parse (jansson only), the reference. */
	if (eb__bframe_parse_ex(p, n, strip, 0, &f) != 0) {
		eb__bframe g;

		/* Not a JSON object: the fast path must refuse it too,
		 * unless jansson refused only a body number out of its
		 * range (the fast path keeps such a body as written). */
		if (eb__bframe_parse_ex(p, n, strip, 1, &g) == 0) {
			json_error_t jerr;
			json_t      *v = g.body_raw != NULL
			                     ? json_loadb(g.body_raw, g.body_raw_len,
			                           JSON_DECODE_ANY, &jerr)
			                     : NULL;

			if (!g.raw || g.body_raw == NULL || v != NULL ||
			    (strstr(jerr.text, "too big") == NULL &&
			        strstr(jerr.text, "overflow") == NULL)) {
				abort();
			}
			eb__bframe_free(&g);
		}
		return;
	}
	compare_fast(p, n, strip, &f);
	body = f.body != NULL
	           ? json_dumps(f.body, JSON_COMPACT | JSON_ENCODE_ANY)
	           : NULL;
	eb__buf_init(&out);
	eb__bout_message_buf(&out, f.address != NULL ? f.address : "",
	    f.reply_address, f.headers, body, body != NULL ? strlen(body) : 0,
	    f.type == EB__BF_SEND);
	check_frame(&out);
	free(body);
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
