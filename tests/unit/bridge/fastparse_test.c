/*
 * Unit tests for the bridge's fast frame scanner (proto.c): on every input
 * it must either decline (the jansson path then decides) or produce exactly
 * what the jansson path produces, with the body bytes equal to jansson's
 * compact encoding of the parsed body. Checked on hand-written edge cases and
 * on a deterministic mutation run over them (a small differential fuzzer).
 * Also the one-reservation message encoder and frames appended back to back
 * in one output buffer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/err.h>

#include "bridge/bridge_int.h"
#include "tests/harness/th.h"

static int
str_eq(const char *a, const char *b)
{
	if (a == NULL || b == NULL) {
		return a == b;
	}
	return strcmp(a, b) == 0;
}

/*
 * Parses p both ways and asserts that they agree. Returns 1 when the fast
 * path took the frame, 0 when it declined, -1 when the frame is malformed.
 */
/* 1 when the body bytes are one JSON value that jansson refuses only for
 * a number out of its range (the fast path passes such a body on as
 * written; the jansson path cannot hold it). */
static int
jansson_range_only(const char *p, size_t n)
{
	json_error_t jerr;
	json_t      *v = json_loadb(p, n, JSON_DECODE_ANY, &jerr);

	if (v != NULL) {
		json_decref(v);
		return 0;
	}
	return strstr(jerr.text, "too big") != NULL ||
	       strstr(jerr.text, "overflow") != NULL;
}

/*
 * Parses p both ways and asserts that they agree. Returns 1 when the fast
 * path took the frame, 0 when it declined, -1 when the frame is malformed.
 * The fast path keeps a body as written (0.1, 1e-7, \u00e9): it agrees when
 * jansson reads those bytes as the jansson path's body, or refuses them only
 * for a number out of its range (then the jansson path refuses the frame).
 */
static int
check_same(const char *p, size_t n, int strip)
{
	eb__bframe   fast;
	eb__bframe   slow;
	int          rf = eb__bframe_parse_ex(p, n, strip, 1, &fast);
	int          rs = eb__bframe_parse_ex(p, n, strip, 0, &slow);
	int          took;
	json_t      *fb;
	json_error_t jerr;

	if (rf == 0 && rs != 0 && fast.raw && fast.body_raw != NULL &&
	    jansson_range_only(fast.body_raw, fast.body_raw_len)) {
		eb__bframe_free(&fast);
		return 1;
	}
	assert_int_equal(rf, rs);
	if (rs != 0) {
		return -1;
	}
	took = fast.raw;
	assert_int_equal(fast.type, slow.type);
	assert_true(str_eq(fast.address, slow.address));
	assert_true(str_eq(fast.reply_address, slow.reply_address));
	assert_true(str_eq(fast.token, slow.token));
	assert_true(str_eq(fast.failure_message, slow.failure_message));
	assert_int_equal(fast.timeout_ms, slow.timeout_ms);
	assert_int_equal(fast.local_only, slow.local_only);
	assert_int_equal(fast.has_failure, slow.has_failure);
	assert_int_equal(fast.failure_code, slow.failure_code);
	assert_true((fast.headers == NULL && slow.headers == NULL) ||
	            json_equal(fast.headers, slow.headers));
	if (took) {
		assert_null(fast.root);
		if (slow.body != NULL) {
			assert_non_null(fast.body_raw);
			/* No whitespace: the bytes are the value's text. */
			assert_null(
			    memchr(fast.body_raw, '\n', fast.body_raw_len));
			fb = json_loadb(fast.body_raw, fast.body_raw_len,
			    JSON_DECODE_ANY, &jerr);
			assert_non_null(fb);
			assert_true(json_equal(fb, slow.body));
			json_decref(fb);
		} else {
			assert_null(fast.body_raw);
		}
	}
	eb__bframe_free(&fast);
	eb__bframe_free(&slow);
	return took;
}

static int
check_str(const char *s)
{
	return check_same(s, strlen(s), 0);
}

/* Frames the scanner must take (and agree on). */
static const char *const taken[] = {
	"{\"type\":\"send\",\"address\":\"a\",\"body\":{\"t\":\"x\",\"p\":1}}",
	"{\"type\":\"publish\",\"address\":\"a.b\",\"body\":[1,-2,0,true,"
	"false,null,\"s\",[],{}]}",
	"{\"type\":\"send\",\"address\":\"a\",\"replyAddress\":\"#r1\","
	"\"body\":\"\\\"q\\\\\\n\\t\\r\\b\\f\"}",
	" { \"type\" : \"ping\" } \n",
	"{\"type\":\"register\",\"address\":\"x\",\"headers\":{}}",
	"{\"type\":\"register\",\"address\":\"x\",\"headers\":null}",
	"{\"type\":\"send\",\"address\":\"\",\"body\":null}",
	"{\"type\":\"send\",\"address\":\"a\",\"replyAddress\":\"\"}",
	"{\"type\":\"nope\",\"address\":\"a\"}",
	"{}",
	"{\"body\":123456789012345678}",
	"{\"body\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 /\"}",
	"{\"type\":\"send\",\"address\":\"\xc3\xa9t\xc3\xa9\",\"body\":1}",
	"{\"body\":{\"a\":{\"a\":{\"a\":[[[{}]]]}}}}",
	"{\"headers\":{\"k\":\"v\"}}",
	"{\"type\":\"send\",\"address\":\"a\",\"headers\":{\"k\":\"v\","
	"\"n\":5,\"timeout\":1500,\"localOnly\":true,\"token\":\"t\"},"
	"\"body\":1}",
	"{\"type\":\"publish\",\"address\":\"a\",\"headers\":{ \"x\" : [1, "
	"{\"y\": 2.5}], \"e\":\"\\u00e9\\\"}\", \"z\":null, \"c\":\"codec\", "
	"\"codecName\":\"c\", \"f\":false },\"body\":{}}",
	"{\"body\":1.5}",
	"{\"body\":{\"k\":1,\"k\":2,\"\\u006b\":3}}",
	"{\"body\":[0.1,1e-7,1.0E10,-0,-0.0e+0,2E-3]}",
	"{\"body\":1234567890123456789}",
	"{\"body\":12345678901234567890123}",
	"{\"body\":{\"k\":\"\\u00e9\\/\\ud83d\\ude00\"}}",
	"{\"headers\":{\"timeout\":2.5e3,\"localOnly\":\"true\","
	"\"token\":5,\"k\":{\"a\":[{}]},\"k\":\"again\"},\"type\":\"ping\"}",
};

/* Frames it must decline (non-canonical, or outside its subset), whatever
 * the jansson path then decides. */
static const char *const declined[] = {
	"{\"type\":\"send\",\"address\":\"a\",\"body\":{\"a\": 1}}",
	"{\"type\":\"send\",\"type\":\"publish\"}",
	"{\"address\":\"\\u0061\"}",
	"{\"address\":5}",
	"{\"type\":\"send\",\"failureCode\":1}",
	"{\"headers\":5}",
	"{\"headers\":{\"k\":1,}}",
	"{\"headers\":{\"k\":\"\\x\"}}",
	"{\"headers\":{\"k\":[}]}",
	"{\"headers\":{\"k\":\"v\"}",
	"{\"extra\":1}",
	"[1]",
	"{\"body\":1} x",
	"{\"body\":\"\xc0\xaf\"}",
	"{\"body\":\"\xed\xa0\x80\"}",
	"{\"body\":\"\xf4\x90\x80\x80\"}",
	"{\"body\":01}",
	"{\"body\":1.}",
	"{\"body\":.5}",
	"{\"body\":1e}",
	"{\"body\":\"\\u0000\"}",
	"{\"body\":\"\\ud800\"}",
	"{\"body\":\"\\udc00x\"}",
	"{\"body\":\"\\u12g4\"}",
	"{\"body\":tru}",
	"{\"body\":\"a",
	"{\"body\":[1,]}",
	"{,}",
	"{\"type\":\"send\",}",
};

static void
test_taken(void **state)
{
	size_t i;

	(void) state;
	for (i = 0; i < sizeof(taken) / sizeof(taken[0]); i++) {
		if (check_str(taken[i]) != 1) {
			fail_msg("not taken: %s", taken[i]);
		}
	}
}

static void
test_declined(void **state)
{
	size_t i;

	(void) state;
	for (i = 0; i < sizeof(declined) / sizeof(declined[0]); i++) {
		if (check_str(declined[i]) == 1) {
			fail_msg("taken: %s", declined[i]);
		}
	}
}

static void
test_values(void **state)
{
	eb__bframe f;
	const char p[] = "{\"type\":\"send\",\"address\":\"bench.echo\","
	                 "\"replyAddress\":\"#b7\",\"body\":{\"t\":\"1\"}}";

	(void) state;
	assert_int_equal(eb__bframe_parse(p, sizeof(p) - 1, 0, &f), 0);
	assert_int_equal(f.raw, 1);
	assert_int_equal(f.type, EB__BF_SEND);
	assert_string_equal(f.address, "bench.echo");
	assert_string_equal(f.reply_address, "#b7");
	assert_int_equal(f.body_raw_len, strlen("{\"t\":\"1\"}"));
	assert_memory_equal(f.body_raw, "{\"t\":\"1\"}", f.body_raw_len);
	assert_null(f.root);
	assert_null(f.body);
	eb__bframe_free(&f);
}

/* Strings longer than the frame's inline buffer take the slow path. */
static void
test_long_address(void **state)
{
	char buf[1024];
	char addr[600];
	int  n;

	(void) state;
	memset(addr, 'a', sizeof(addr) - 1);
	addr[sizeof(addr) - 1] = '\0';
	n = snprintf(buf, sizeof(buf),
	    "{\"type\":\"send\",\"address\":\"%s\",\"body\":1}", addr);
	assert_true(n > 0 && (size_t) n < sizeof(buf));
	assert_int_equal(check_same(buf, (size_t) n, 0), 0);
}

/* One special byte at every position of a long string (the scanner skips
 * plain bytes 8 at a time): both paths must agree, and a control or a lone
 * >= 0x80 byte is never taken. */
static void
test_positions(void **state)
{
	static const unsigned char special[] = { '"', '\\', 0x01, 0x1f, 0x7f,
		0x80, 0xc3, 0xff, '/' };
	char                       buf[128];
	size_t                     i;
	size_t                     at;
	int                        n;
	int                        r;

	(void) state;
	for (i = 0; i < sizeof(special); i++) {
		for (at = 0; at < 40; at++) {
			char s[41];

			memset(s, 'x', 40);
			s[40] = '\0';
			s[at] = (char) special[i];
			n = snprintf(buf, sizeof(buf), "{\"body\":\"%s\"}", s);
			assert_true(n > 0 && (size_t) n < sizeof(buf));
			r = check_same(buf, (size_t) n, 0);
			if (special[i] < 0x20 || special[i] >= 0x80) {
				assert_true(r != 1);
			} else if (special[i] == 0x7f || special[i] == '/') {
				assert_int_equal(r, 1);
			}
		}
	}
}

/* The one-reservation message encoder against the expected text, every
 * combination of reply address, body and send; then a frame appended after
 * another stays contiguous. */
static void
test_message_frames(void **state)
{
	static const char *const bodies[] = { NULL, "null", "{\"t\":1}" };
	char                     want[256];
	const char              *buf;
	size_t                   len;
	int                      ra;
	int                      send;
	size_t                   i;
	eb__buf                  b;

	(void) state;
	eb__buf_init(&b);
	for (ra = 0; ra < 2; ra++) {
		for (i = 0; i < 3; i++) {
			for (send = 0; send < 2; send++) {
				const char *body = bodies[i];
				int         n;

				eb__bout_message_buf(&b, "a.b",
				    ra ? "__vertx.reply.7" : NULL, NULL, body,
				    body != NULL ? strlen(body) : 0, send);
				buf = eb__buf_head(&b);
				len = eb__buf_avail(&b);
				n = snprintf(want, sizeof(want),
				    "{\"type\":\"message\",\"address\":\"a.b\"%"
				    "s"
				    "%s,\"headers\":{}%s%s,\"send\":%s}",
				    ra ? ",\"replyAddress\":" : "",
				    ra ? "\"__vertx.reply.7\"" : "",
				    i == 2 ? ",\"body\":" : "",
				    i == 2 ? body : "",
				    send ? "true" : "false");
				assert_true(n > 0);
				assert_int_equal(len, (size_t) n + 4);
				assert_int_equal(
				    eb__frame_get_len(
				        (const unsigned char *) buf),
				    (uint32_t) n);
				assert_memory_equal(buf + 4, want, (size_t) n);
				eb__buf_consume(&b, len);
			}
		}
	}
	eb__buf_free(&b);
	eb__buf_init(&b);
	eb__bout_pong_buf(&b);
	eb__bout_message_buf(&b, "x", NULL, NULL, "1", 1, 1);
	assert_int_equal(eb__frame_get_len((unsigned char *) b.data), 15);
	assert_memory_equal(b.data + 4, "{\"type\":\"pong\"}", 15);
	len = strlen("{\"type\":\"message\",\"address\":\"x\",\"headers\":{},"
	             "\"body\":1,\"send\":true}");
	assert_int_equal(b.len, 19 + 4 + len);
	assert_int_equal(
	    eb__frame_get_len((unsigned char *) b.data + 19), (uint32_t) len);
	eb__buf_free(&b);
}

static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Mutates seeds with JSON-significant bytes: every outcome must agree. */
static void
test_mutations(void **state)
{
	static const char  alphabet[] = "{}[]\":,\\ -0123456789.eEtrufalsn"
	                                "\x01\x7f\x80\xc3\xa9\xed\xf4";
	const char *const *sets[2] = { taken, declined };
	size_t             nsets[2] = { sizeof(taken) / sizeof(taken[0]),
		            sizeof(declined) / sizeof(declined[0]) };
	uint64_t           seed = 0x9e3779b97f4a7c15u;
	char               buf[512];
	unsigned           took = 0;
	unsigned           i;

	(void) state;
	for (i = 0; i < 200000; i++) {
		unsigned    set = (unsigned) (rnd(&seed) % 2);
		const char *src = sets[set][rnd(&seed) % nsets[set]];
		size_t      n = strlen(src);
		unsigned    edits = 1 + (unsigned) (rnd(&seed) % 3);

		memcpy(buf, src, n + 1); /* with the NUL; n is what counts */
		while (edits-- > 0 && n > 0 && n < sizeof(buf) - 1) {
			size_t at = rnd(&seed) % n;
			char c = alphabet[rnd(&seed) % (sizeof(alphabet) - 1)];

			switch (rnd(&seed) % 3) {
			case 0:
				buf[at] = c;
				break;
			case 1:
				memmove(buf + at + 1, buf + at, n - at);
				buf[at] = c;
				n++;
				break;
			default:
				memmove(buf + at, buf + at + 1, n - at - 1);
				n--;
				break;
			}
		}
		if (check_same(buf, n, (int) (i & 1)) == 1) {
			took++;
		}
	}
	/* The run must exercise the fast path, not only the fallback. */
	assert_true(took > 1000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_taken),
		cmocka_unit_test(test_declined),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_long_address),
		cmocka_unit_test(test_positions),
		cmocka_unit_test(test_message_frames),
		cmocka_unit_test(test_mutations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
