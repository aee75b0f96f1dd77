/*
 * libFuzzer target for vertx/wire.c, the Vert.x cluster frame codec. The
 * input is one frame's payload (the bytes after the length prefix). Checks:
 * the decoder never reads outside the input (ASan); a decoded body that maps
 * to JSON is valid JSON text (common/jsonscan.h agrees) and survives a round
 * trip: encoded again as a frame, decoded and mapped again, it gives the same
 * JSON text and the same headers.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/jsonscan.h"
#include "vertx/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(int ok, const char *what)
{
	if (!ok) {
		(void) fprintf(stderr, "vertx_fuzz: %s\n", what);
		abort();
	}
}

static void
roundtrip(const eb__vx_frame *f, const eb__buf *js, json_t *headers)
{
	char          *addr = eb__strndup(f->address.p, f->address.n);
	char          *reply = eb__strndup(f->reply.p, f->reply.n);
	eb__vx_out     m = { addr, reply, "fuzz-node", f->publish, headers,
		    eb__buf_head(js), eb__buf_avail(js) };
	eb__buf        out;
	eb__buf        js2;
	eb__vx_frame   g;
	eb__vx_failure fail;
	json_t        *h2;
	int            err;

	eb__buf_init(&out);
	eb__buf_init(&js2);
	check(eb__vx_encode(&out, &m) == 0, "encode of a decoded body failed");
	check(eb__vx_decode(eb__buf_head(&out) + 4, eb__buf_avail(&out) - 4, &g,
	          NULL) == 0,
	    "re-encoded frame does not decode");
	check(eb__vx_body_json(&g, &js2, &fail, NULL) == 0,
	    "re-encoded body does not map");
	check(eb__buf_avail(&js2) == eb__buf_avail(js) &&
	          memcmp(eb__buf_head(&js2), eb__buf_head(js),
	              eb__buf_avail(js)) == 0,
	    "body JSON changed in a round trip");
	h2 = eb__vx_headers_json(&g, &err);
	check(h2 != NULL && json_equal(h2, headers), "headers changed");
	json_decref(h2);
	eb__buf_free(&out);
	eb__buf_free(&js2);
	free(addr);
	free(reply);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	eb__vx_frame   f;
	eb__vx_failure fail;
	eb__buf        js;
	json_t        *headers;
	eb__jscan      sc;
	int            err;

	if (eb__vx_decode(data, size, &f, NULL) != 0) {
		return 0;
	}
	headers = eb__vx_headers_json(&f, &err);
	if (headers == NULL) {
		return 0;
	}
	eb__buf_init(&js);
	if (eb__vx_body_json(&f, &js, &fail, NULL) == 0) {
		/* the project's RFC 8259 scanner, not jansson: jansson refuses
		 * numbers past the double range (1E405), which RFC 8259 and the
		 * bus accept */
		eb__jscan_init(&sc, eb__buf_head(&js), eb__buf_avail(&js), 256);
		check(eb__jscan_value(&sc, 0) && sc.p == sc.end,
		    "body JSON is not valid JSON");
		roundtrip(&f, &js, headers);
	}
	eb__buf_free(&js);
	json_decref(headers);
	return 0;
}
