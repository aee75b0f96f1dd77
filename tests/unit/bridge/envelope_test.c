/*
 * Unit tests for the bridge's frame parser (proto.c): on every input it must
 * agree with the jansson reference of tests/harness/frameref.h -- the same
 * decision and fields, the body as a span of the payload that parses to the
 * reference's body -- checked on hand-written frames and on a deterministic
 * mutation run over them (a small differential fuzzer). Bodies pass byte for
 * byte (the official clients' frames among them), refusals carry a reason
 * for the err frame, and the outgoing message encoder writes frames back to
 * back in one output buffer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/bridge.h>
#include <ebnode/err.h>

#include "bridge/bridge_int.h"
#include "tests/harness/frameref.h"
#include "tests/harness/th.h"

/* 1 taken, 0 refused (both as the reference says; a disagreement fails). */
static int
check_same(const char *p, size_t n, int strip)
{
	char why[256];
	int  rv = eb__frameref_check(
	     p, n, strip, EB_BRIDGE_DEFAULT_JSON_DEPTH, why, sizeof(why));

	if (rv < 0) {
		fail_msg("frame [%.*s]: %s", (int) n, p, why);
	}
	return rv;
}

static int
check_str(const char *s)
{
	return check_same(s, strlen(s), 0);
}

static int
parse(const char *s, eb__bframe *f)
{
	return eb__bframe_parse(
	    s, strlen(s), 0, EB_BRIDGE_DEFAULT_JSON_DEPTH, f);
}

/* Frames it must take (and agree on). */
static const char *const taken[] = {
	"{\"type\":\"send\",\"address\":\"a\",\"body\":{\"t\":\"x\",\"p\":1}}",
	("{\"type\":\"publish\",\"address\":\"a.b\",\"body\":[1,-2,0,true,"
	 "false,null,\"s\",[],{}]}"),
	("{\"type\":\"send\",\"address\":\"a\",\"replyAddress\":\"#r1\","
	 "\"body\":\"\\\"q\\\\\\n\\t\\r\\b\\f\"}"),
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
	("{\"type\":\"send\",\"address\":\"a\",\"headers\":{\"k\":\"v\","
	 "\"n\":5,\"timeout\":1500,\"localOnly\":true,\"token\":\"t\"},"
	 "\"body\":1}"),
	("{\"type\":\"publish\",\"address\":\"a\",\"headers\":{ \"x\" : [1, "
	 "{\"y\": 2.5}], \"e\":\"\\u00e9\\\"}\", \"z\":null, \"c\":\"codec\", "
	 "\"codecName\":\"c\", \"f\":false },\"body\":{}}"),
	"{\"body\":1.5}",
	"{\"body\":{\"k\":1,\"k\":2,\"\\u006b\":3}}",
	"{\"body\":[0.1,1e-7,1.0E10,-0,-0.0e+0,2E-3]}",
	"{\"body\":1234567890123456789}",
	"{\"body\":12345678901234567890123}",
	"{\"body\":{\"k\":\"\\u00e9\\/\\ud83d\\ude00\"}}",
	("{\"headers\":{\"timeout\":2.5e3,\"localOnly\":\"true\","
	 "\"token\":5,\"k\":{\"a\":[{}]},\"k\":\"again\"},\"type\":\"ping\"}"),
	/* Outside the old fast scanner's subset, all valid JSON. */
	"{\"type\":\"send\",\"address\":\"a\",\"body\":{\"a\": 1}}",
	"{\"type\":\"send\",\"type\":\"publish\"}",
	"{\"address\":\"\\u0061\"}",
	"{\"\\u0061ddress\":\"a\",\"t\\u0079pe\":\"\\u0073end\"}",
	"{\"address\":5}",
	"{\"type\":\"send\",\"failureCode\":1}",
	"{\"headers\":5}",
	"{\"extra\":1,\"more\":{\"x\":[null]}}",
	"{\"body\":\"\\u0000\"}",
	"{\"body\":\"\\ud800\"}",
	"{\"body\":\"\\udc00x\"}",
	"{\"body\":[12345678901234567890, -1e400, 1E+999]}",
	"{\"headers\":{\"k\":\"a\\u0000b\",\"timeout\":100,\"timeout\":\"x\"}}",
	("{\"headers\":{\"n\":0.1,\"m\":1e-07,\"o\":{ \"a\" : [ 1 , \"b c\" ] "
	 "}}}"),
	"{\"type\":\"send\",\"failureCode\":-7.0,\"message\":\"m\\u00e9\"}",
	("\n{\n  \"type\" : \"send\" ,\n  \"body\" : {\n    \"a\" : [ 1 ,\n 2 "
	 "]\n  }\n}\n"),
};

/* Frames it must refuse, with the reason for the err frame. */
static const struct {
	const char *frame;
	const char *err;
} refused[] = {
	{ "", "invalid_json: empty frame" },
	{ "[1]", "invalid_json: not a JSON object" },
	{ "{\"headers\":{\"k\":1,}}",
	    "invalid_json: expected a string at byte 18" },
	{ "{\"headers\":{\"k\":\"\\x\"}}",
	    "invalid_json: invalid escape in string at byte 17" },
	{ "{\"headers\":{\"k\":[}]}",
	    "invalid_json: invalid value at byte 17" },
	{ "{\"headers\":{\"k\":\"v\"}",
	    "invalid_json: unexpected end of text at byte 20" },
	{ "{\"body\":1} x", "invalid_json: bytes after the object at byte 11" },
	{ "{\"body\":\"\xc0\xaf\"}", "invalid_json: invalid UTF-8 at byte 9" },
	{ "{\"body\":\"\xed\xa0\x80\"}",
	    "invalid_json: invalid UTF-8 at byte 9" },
	{ "{\"body\":\"\xf4\x90\x80\x80\"}",
	    "invalid_json: invalid UTF-8 at byte 9" },
	{ "{\"body\":01}", "invalid_json: invalid number at byte 9" },
	{ "{\"body\":1.}", "invalid_json: invalid number at byte 10" },
	{ "{\"body\":.5}", "invalid_json: invalid value at byte 8" },
	{ "{\"body\":1e}", "invalid_json: invalid number at byte 10" },
	{ "{\"body\":\"\\u12g4\"}",
	    "invalid_json: invalid \\u escape at byte 9" },
	{ "{\"body\":tru}", "invalid_json: invalid value at byte 8" },
	{ "{\"body\":\"a", "invalid_json: unexpected end of text at byte 10" },
	{ "{\"body\":[1,]}", "invalid_json: invalid value at byte 11" },
	{ "{,}", "invalid_json: expected a string at byte 1" },
	{ "{\"type\":\"send\",}",
	    "invalid_json: expected a string at byte 15" },
	{ "{\"body\":NaN}", "invalid_json: invalid value at byte 8" },
	{ "{\"a\" 1}", "invalid_json: expected ':' at byte 5" },
	{ "{\"address\":\"a\\u0000b\"}",
	    "invalid_frame: address holds U+0000" },
	{ "{\"address\":\"\\ud800\"}",
	    "invalid_frame: address holds an unpaired surrogate" },
	{ "{\"type\":\"send\",\"headers\":{\"token\":\"s\\u0000x\"}}",
	    "invalid_frame: headers.token holds U+0000" },
	{ "{\"headers\":{\"a\\u0000\":1}}",
	    "invalid_frame: a header name holds U+0000" },
	{ "{\"headers\":{\"k\":\"\\udc00\"}}",
	    "invalid_frame: header k holds an unpaired surrogate" },
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
test_refused(void **state)
{
	eb__bframe f;
	size_t     i;

	(void) state;
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		const char *p = refused[i].frame;

		assert_int_equal(check_str(p), 0);
		assert_int_equal(parse(p, &f), EB_EFRAME);
		if (strcmp(f.err, refused[i].err) != 0) {
			fail_msg("[%s]: err \"%s\", want \"%s\"", p, f.err,
			    refused[i].err);
		}
		eb__bframe_free(&f);
	}
}

/* The official clients' frames: Python's json.dumps (", " and ": "),
 * pretty-printed ones, numbers in every form: the body's bytes are exactly
 * the ones that came. */
static void
test_exact_bodies(void **state)
{
	static const char *const bodies[] = {
		"{\"a\": 0.1, \"b\": 1e-07, \"c\": 10000000000.0, \"e\": "
		"\"\\u00e9\"}",
		"1.0E10",
		"12345678901234567890",
		"-123456789012345678901234567890.5e-3",
		"\"\\u0000\"",
		"\"\xc3\xa9\"",
		"[ 1 ,\n\t[ { \"x\" : null } ] ]",
		"{\n  \"nested\": {\n    \"deep\": [\n      1,\n      2\n    "
		"]\n  }\n}",
	};
	char       buf[512];
	eb__bframe f;
	size_t     i;
	int        n;

	(void) state;
	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		n = snprintf(buf, sizeof(buf),
		    "{\"type\": \"send\", \"address\": \"orders\", "
		    "\"headers\": {}, \"body\": %s, \"replyAddress\": \"r\"}",
		    bodies[i]);
		assert_true(n > 0 && (size_t) n < sizeof(buf));
		assert_int_equal(check_same(buf, (size_t) n, 0), 1);
		assert_int_equal(parse(buf, &f), 0);
		assert_int_equal(f.body_raw_len, strlen(bodies[i]));
		assert_memory_equal(f.body_raw, bodies[i], f.body_raw_len);
		assert_string_equal(f.address, "orders");
		eb__bframe_free(&f);
	}
}

/* The nesting bound counts the frame's own object. */
static void
test_depth(void **state)
{
	char       buf[64];
	eb__bframe f;

	(void) state;
	(void) snprintf(buf, sizeof(buf), "{\"body\":[[[1]]]}");
	assert_int_equal(eb__bframe_parse(buf, strlen(buf), 0, 4, &f), 0);
	eb__bframe_free(&f);
	assert_int_equal(
	    eb__bframe_parse(buf, strlen(buf), 0, 3, &f), EB_EFRAME);
	assert_string_equal(f.err, "invalid_json: nested too deep at byte 11");
	eb__bframe_free(&f);
	assert_int_equal(eb__frameref_check(buf, strlen(buf), 0, 3, buf + 32,
	                     sizeof(buf) - 32),
	    0);
}

static void
test_values(void **state)
{
	eb__bframe f;
	const char p[] = "{\"type\":\"send\",\"address\":\"bench.echo\","
	                 "\"replyAddress\":\"#b7\",\"body\":{\"t\":\"1\"}}";

	(void) state;
	assert_int_equal(parse(p, &f), 0);
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

/* Strings longer than the frame's inline buffer get blocks of their own. */
static void
test_long_address(void **state)
{
	char       buf[1024];
	char       addr[600];
	int        n;
	eb__bframe f;

	(void) state;
	memset(addr, 'a', sizeof(addr) - 1);
	addr[sizeof(addr) - 1] = '\0';
	n = snprintf(buf, sizeof(buf),
	    "{\"type\":\"send\",\"address\":\"%s\",\"body\":1}", addr);
	assert_true(n > 0 && (size_t) n < sizeof(buf));
	assert_int_equal(check_same(buf, (size_t) n, 0), 1);
	assert_int_equal(parse(buf, &f), 0);
	assert_string_equal(f.address, addr);
	eb__bframe_free(&f);
}

/* A key the parser decodes as text, repeated many times and too long for
 * the frame's inline buffer: decoded once (the last one), never one block
 * per repetition. */
static void
test_repeated_long_token(void **state)
{
	char       buf[8192];
	char       tok[301];
	size_t     off;
	eb__bframe f;
	int        i;

	(void) state;
	memset(tok, 't', sizeof(tok) - 1);
	tok[sizeof(tok) - 1] = '\0';
	off = (size_t) snprintf(buf, sizeof(buf),
	    "{\"type\":\"send\",\"address\":\"a\",\"headers\":{");
	for (i = 0; i < 20; i++) {
		tok[0] = (char) ('a' + i);
		off += (size_t) snprintf(buf + off, sizeof(buf) - off,
		    "%s\"token\":\"%s\"", i > 0 ? "," : "", tok);
	}
	off += (size_t) snprintf(buf + off, sizeof(buf) - off, "}}");
	assert_true(off < sizeof(buf));
	assert_int_equal(check_same(buf, off, 1), 1);
	assert_int_equal(
	    eb__bframe_parse(buf, off, 1, EB_BRIDGE_DEFAULT_JSON_DEPTH, &f), 0);
	assert_non_null(f.token);
	assert_int_equal(strlen(f.token), 300);
	assert_int_equal(f.token[0], 'a' + 19); /* the last one */
	assert_true(f.nowned <= 1);
	eb__bframe_free(&f);
}

/* One special byte at every position of a long string (the scanner skips
 * plain bytes 8 at a time): it agrees with the reference, and a control or
 * a lone >= 0x80 byte is never taken. */
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
				assert_int_equal(r, 0);
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
	static const char alphabet[] = "{}[]\":,\\ -0123456789.eEtrufalsn"
	                               "\x01\x7f\x80\xc3\xa9\xed\xf4";
	const char       *sets[2][64];
	size_t            nsets[2] = { 0, 0 };
	uint64_t          seed = 0x9e3779b97f4a7c15u;
	char              buf[512];
	unsigned          took = 0;
	unsigned          i;

	(void) state;
	nsets[0] = sizeof(taken) / sizeof(taken[0]);
	nsets[1] = sizeof(refused) / sizeof(refused[0]);
	assert_true(nsets[0] <= 64 && nsets[1] <= 64);
	for (i = 0; i < nsets[0]; i++) {
		sets[0][i] = taken[i];
	}
	for (i = 0; i < nsets[1]; i++) {
		sets[1][i] = refused[i].frame;
	}
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
	/* Both decisions, many times. */
	assert_true(took > 10000 && took < 190000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_taken),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_exact_bodies),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_long_address),
		cmocka_unit_test(test_repeated_long_token),
		cmocka_unit_test(test_positions),
		cmocka_unit_test(test_message_frames),
		cmocka_unit_test(test_mutations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
