/*
 * Unit tests for vertx/wire.c, the Vert.x 4.5 cluster frame codec. The byte
 * vectors were captured from running Vert.x 4.5.15 JVMs (a TCP-bridge
 * request with one header, as a JVM sent it to a foreign node), the ping
 * frame's known length, and the codec layouts of docs/VERTX.md "Bodies".
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <uv.h>

#include <ebnode/err.h>

#include "common/buf.h"
#include "tests/harness/th.h"
#include "vertx/wire.h"

#define SENDER "4740fc67-30d3-449b-aa0f-d6f5b2014f40"
#define REPLY  "__vertx.reply.f1915235-71f2-4160-af04-f3417607eb24"

/* The captured request frame, length prefix included. */
static const char real_hex[] =
    "000000a1"
    "020d00"
    "00000008706f632e61646472"
    "000000325f5f76657274782e7265706c792e66313931353233352d373166322d34"
    "3136302d616630342d663334313736303765623234"
    "000000243437343066633637"
    "2d333064332d343439622d616130662d643666356232303134663430"
    "00000019"
    "00000001"
    "00000008782d636c69656e740000000131"
    "000000177b2268656c6c6f223a2266726f6d2d627269646765227d";

static size_t
unhex(const char *h, unsigned char *out)
{
	size_t n = 0;

	for (; h[0] != '\0'; h += 2) {
		char  two[3] = { h[0], h[1], '\0' };
		char *end = NULL;

		out[n++] = (unsigned char) strtoul(two, &end, 16);
		assert_true(end == two + 2);
	}
	return n;
}

static size_t
real_frame(unsigned char *out)
{
	/* the dump has the sender split after its first 8 characters; the
	 * hex above keeps the bytes contiguous except for that one space */
	char   h[sizeof(real_hex)];
	size_t j = 0;

	for (size_t i = 0; real_hex[i] != '\0'; i++) {
		if (real_hex[i] != ' ') {
			h[j++] = real_hex[i];
		}
	}
	h[j] = '\0';
	return unhex(h, out);
}

static int
span_eq(const eb__vx_span *s, const char *str)
{
	return s->n == strlen(str) && memcmp(s->p, str, s->n) == 0;
}

static void
test_decode_real_frame(void **state)
{
	unsigned char  b[512];
	size_t         n = real_frame(b);
	eb__vx_frame   f;
	eb__vx_failure fail;
	eb__buf        out;
	json_t        *h;
	int            err;

	(void) state;
	assert_int_equal(n, 4 + 161);
	assert_int_equal(eb__vx_decode(b + 4, n - 4, &f, NULL), 0);
	assert_int_equal(f.version, 2);
	assert_int_equal(f.codec, EB_VX_CODEC_JSON_OBJECT);
	assert_int_equal(f.publish, 0);
	assert_true(span_eq(&f.address, "poc.addr"));
	assert_true(span_eq(&f.reply, REPLY));
	assert_true(span_eq(&f.sender, SENDER));
	assert_int_equal(f.header_count, 1);
	h = eb__vx_headers_json(&f, &err);
	assert_non_null(h);
	assert_string_equal(
	    json_string_value(json_object_get(h, "x-client")), "1");
	assert_int_equal(json_object_size(h), 1);
	json_decref(h);
	eb__buf_init(&out);
	assert_int_equal(eb__vx_body_json(&f, &out, &fail, NULL), 0);
	assert_int_equal(eb__buf_avail(&out), 23);
	assert_memory_equal(
	    eb__buf_head(&out), "{\"hello\":\"from-bridge\"}", 23);
	eb__buf_free(&out);
}

/* Encoding the same message gives the JVM's bytes exactly. */
static void
test_encode_matches_real_frame(void **state)
{
	unsigned char b[512];
	size_t        n = real_frame(b);
	eb__buf       out;
	json_t       *h = json_pack("{s:s}", "x-client", "1");
	const char   *body = "{\"hello\":\"from-bridge\"}";
	eb__vx_out m = { "poc.addr", REPLY, SENDER, 0, h, body, strlen(body) };

	(void) state;
	eb__buf_init(&out);
	assert_int_equal(eb__vx_encode(&out, &m), 0);
	assert_int_equal(eb__buf_avail(&out), n);
	assert_memory_equal(eb__buf_head(&out), b, n);
	eb__buf_free(&out);
	json_decref(h);
}

/* Every strict prefix of the payload is refused as truncated, never read
 * past its end (ASan checks the reads). */
static void
test_every_truncation_refused(void **state)
{
	unsigned char b[512];
	size_t        n = real_frame(b) - 4;
	eb__vx_frame  f;

	(void) state;
	for (size_t k = 0; k < n; k++) {
		unsigned char *copy = malloc(k + 1);

		memcpy(copy, b + 4, k);
		assert_int_equal(eb__vx_decode(copy, k, &f, NULL), EB_EFRAME);
		free(copy);
	}
}

static void
test_ping_frame(void **state)
{
	eb__buf      out;
	eb__vx_frame f;

	(void) state;
	eb__buf_init(&out);
	assert_int_equal(eb__vx_encode_ping(&out, SENDER), 0);
	/* a 36-character node id gives the length prefix 0x43. */
	assert_int_equal(eb__buf_avail(&out), 4 + 0x43);
	assert_memory_equal(eb__buf_head(&out), "\0\0\0\x43\x02\x01\x00", 7);
	assert_int_equal(
	    eb__vx_decode(eb__buf_head(&out) + 4, 0x43, &f, NULL), 0);
	assert_int_equal(f.codec, EB_VX_CODEC_PING);
	assert_true(span_eq(&f.address, "__vertx_ping"));
	assert_true(span_eq(&f.sender, SENDER));
	assert_int_equal(f.reply.n, 0);
	assert_int_equal(f.body.n, 0);
	eb__buf_free(&out);
}

static void
test_failure_roundtrip(void **state)
{
	eb__buf        out;
	eb__buf        js;
	eb__vx_frame   f;
	eb__vx_failure fail;
	const char    *p;

	(void) state;
	eb__buf_init(&out);
	eb__buf_init(&js);
	assert_int_equal(eb__vx_encode_failure(&out, REPLY, SENDER,
	                     EB_VX_FAIL_RECIPIENT, 7, "boom"),
	    0);
	p = eb__buf_head(&out);
	assert_int_equal(
	    eb__vx_decode(p + 4, eb__buf_avail(&out) - 4, &f, NULL), 0);
	assert_int_equal(f.codec, EB_VX_CODEC_FAILURE);
	/* body: u8 type 2, i32 code 7, u8 1, str "boom" */
	assert_int_equal(f.body.n, 1 + 4 + 1 + 4 + 4);
	assert_memory_equal(f.body.p,
	    "\x02\0\0\0\x07\x01\0\0\0\x04"
	    "boom",
	    14);
	assert_int_equal(eb__vx_body_json(&f, &js, &fail, NULL), EB_ERECIPIENT);
	assert_int_equal(eb__buf_avail(&js), 0);
	assert_int_equal(fail.type, EB_VX_FAIL_RECIPIENT);
	assert_int_equal(fail.code, 7);
	assert_true(fail.has_message);
	assert_true(span_eq(&fail.message, "boom"));
	/* no message: hasMessage 0 and nothing after it */
	out.off = out.len = 0;
	assert_int_equal(eb__vx_encode_failure(&out, REPLY, SENDER,
	                     EB_VX_FAIL_NO_HANDLERS, -1, NULL),
	    0);
	p = eb__buf_head(&out);
	assert_int_equal(
	    eb__vx_decode(p + 4, eb__buf_avail(&out) - 4, &f, NULL), 0);
	assert_int_equal(eb__vx_body_json(&f, &js, &fail, NULL), EB_ERECIPIENT);
	assert_int_equal(fail.type, EB_VX_FAIL_NO_HANDLERS);
	assert_int_equal(fail.code, -1);
	assert_false(fail.has_message);
	eb__buf_free(&out);
	eb__buf_free(&js);
}

/* Builds a payload: version 2, codec, send, "a", no reply, sender "s", no
 * headers, then the body bytes. */
static size_t
payload(unsigned char *b, int codec, const void *body, size_t n)
{
	static const unsigned char head[] = { 2, 0, 0, 0, 0, 0, 1, 'a', 0, 0, 0,
		0, 0, 0, 0, 1, 's', 0, 0, 0, 4 };

	memcpy(b, head, sizeof(head));
	b[1] = (unsigned char) codec;
	memcpy(b + sizeof(head), body, n);
	return sizeof(head) + n;
}

static void
expect_json(int codec, const void *body, size_t n, const char *want)
{
	unsigned char  b[256];
	size_t         len = payload(b, codec, body, n);
	eb__vx_frame   f;
	eb__vx_failure fail;
	eb__buf        out;

	assert_int_equal(eb__vx_decode(b, len, &f, NULL), 0);
	eb__buf_init(&out);
	assert_int_equal(eb__vx_body_json(&f, &out, &fail, NULL), 0);
	assert_int_equal(eb__buf_avail(&out), strlen(want));
	assert_memory_equal(eb__buf_head(&out), want, strlen(want));
	eb__buf_free(&out);
}

static void
test_scalar_bodies(void **state)
{
	(void) state;
	expect_json(EB_VX_CODEC_NULL, "", 0, "null");
	expect_json(EB_VX_CODEC_BYTE, "\xfe", 1, "-2");
	/* Boolean is inverted, 0 = true */
	expect_json(EB_VX_CODEC_BOOL, "\0", 1, "true");
	expect_json(EB_VX_CODEC_BOOL, "\1", 1, "false");
	expect_json(EB_VX_CODEC_SHORT, "\x80\x00", 2, "-32768");
	expect_json(EB_VX_CODEC_INT, "\x00\x01\x00\x00", 4, "65536");
	expect_json(EB_VX_CODEC_LONG, "\x7f\xff\xff\xff\xff\xff\xff\xff", 8,
	    "9223372036854775807");
	expect_json(EB_VX_CODEC_FLOAT, "\x3d\xcc\xcc\xcd", 4, "0.1"); /* 0.1f */
	expect_json(EB_VX_CODEC_DOUBLE, "\x3f\xf8\0\0\0\0\0\0", 8, "1.5");
	expect_json(EB_VX_CODEC_DOUBLE, "\x40\x00\0\0\0\0\0\0", 8, "2.0");
	expect_json(EB_VX_CODEC_DOUBLE, "\x7f\xf8\0\0\0\0\0\0", 8, "\"NaN\"");
	expect_json(EB_VX_CODEC_CHAR, "\x00\xe9", 2, "\"\xc3\xa9\"");
	expect_json(EB_VX_CODEC_STRING,
	    "\0\0\0\x04"
	    "a\"\n\x01",
	    8, "\"a\\\"\\n\\u0001\"");
	/* a NUL byte in a String is \u0000 */
	expect_json(EB_VX_CODEC_STRING,
	    "\0\0\0\x02"
	    "\0b",
	    6, "\"\\u0000b\"");
	/* Buffer and byte[]: base64url without padding, as Vert.x 4 JSON */
	expect_json(
	    EB_VX_CODEC_BUFFER, "\0\0\0\x04\xfb\xff\x00\x01", 8, "\"-_8AAQ\"");
	expect_json(EB_VX_CODEC_BYTES,
	    "\0\0\0\x03"
	    "abc",
	    7, "\"YWJj\"");
	expect_json(EB_VX_CODEC_JSON_ARRAY, "\0\0\0\x07[1, 2 ]", 11, "[1,2]");
}

static void
expect_decode(int codec, const void *body, size_t n, int err)
{
	unsigned char b[256];
	size_t        len = payload(b, codec, body, n);
	eb__vx_frame  f;
	eb_errbuf     e;

	assert_int_equal(eb__vx_decode(b, len, &f, &e), err);
}

static void
test_body_sizes_checked(void **state)
{
	(void) state;
	expect_decode(EB_VX_CODEC_INT, "\0\0\0", 3, EB_EFRAME);
	expect_decode(EB_VX_CODEC_INT, "\0\0\0\0\0", 5, EB_EFRAME);
	expect_decode(EB_VX_CODEC_NULL, "x", 1, EB_EFRAME);
	/* a String whose length says 2^31-1: refused, nothing sized by it */
	expect_decode(EB_VX_CODEC_STRING,
	    "\x7f\xff\xff\xff"
	    "ab",
	    6, EB_EFRAME);
	expect_decode(EB_VX_CODEC_STRING, "\xff\xff\xff\xff", 4, EB_EFRAME);
	expect_decode(EB_VX_CODEC_STRING,
	    "\0\0\0\x01"
	    "ab",
	    6, EB_EFRAME);
	expect_decode(EB_VX_CODEC_FAILURE, "\x02\0\0\0\x07\x01\0\0\0\x09x", 11,
	    EB_EFRAME);
}

static void
test_unsupported_codecs(void **state)
{
	unsigned char b[256];
	size_t        len;
	eb__vx_frame  f;
	eb_errbuf     e;
	/* codec -1: "my.codec", send, "a", reply "r", sender "s", headers */
	static const unsigned char user[] = { 2, 0xff, 0, 0, 0, 8, 'm', 'y',
		'.', 'c', 'o', 'd', 'e', 'c', 0, 0, 0, 0, 1, 'a', 0, 0, 0, 1,
		'r', 0, 0, 0, 1, 's', 0, 0, 0, 4, 'x' };

	(void) state;
	assert_int_equal(eb__vx_decode(user, sizeof(user), &f, &e), EB_EPROTO);
	assert_string_equal(
	    e.msg, "No message codec registered with name my.codec");
	/* the fields needed for the ERROR reply are there */
	assert_true(span_eq(&f.reply, "r"));
	assert_true(span_eq(&f.sender, "s"));
	len = payload(b, EB_VX_CODEC_SERIALIZABLE, "\0\0\0\0", 4);
	assert_int_equal(eb__vx_decode(b, len, &f, &e), EB_EPROTO);
	assert_non_null(strstr(e.msg, "unsupported message codec 17"));
	len = payload(b, 42, "", 0);
	assert_int_equal(eb__vx_decode(b, len, &f, &e), EB_EPROTO);
	/* version 3: refused with the JVM's text, reply fields kept */
	len = payload(b, EB_VX_CODEC_NULL, "", 0);
	b[0] = 3;
	assert_int_equal(eb__vx_decode(b, len, &f, &e), EB_EPROTO);
	assert_string_equal(
	    e.msg, "Invalid wire protocol version 3 should be <= 2");
	assert_true(span_eq(&f.sender, "s"));
}

static void
test_bad_json_bodies(void **state)
{
	unsigned char  b[256];
	size_t         len;
	eb__vx_frame   f;
	eb__vx_failure fail;
	eb__buf        out;

	(void) state;
	eb__buf_init(&out);
	len = payload(b, EB_VX_CODEC_JSON_OBJECT, "\0\0\0\x02[]", 6);
	assert_int_equal(eb__vx_decode(b, len, &f, NULL), 0);
	assert_int_equal(eb__vx_body_json(&f, &out, &fail, NULL), EB_EFRAME);
	len = payload(b, EB_VX_CODEC_JSON_OBJECT, "\0\0\0\x03{a}", 7);
	assert_int_equal(eb__vx_decode(b, len, &f, NULL), 0);
	assert_int_equal(eb__vx_body_json(&f, &out, &fail, NULL), EB_EFRAME);
	len = payload(b, EB_VX_CODEC_STRING, "\0\0\0\x02\xc3\x28", 6);
	assert_int_equal(eb__vx_decode(b, len, &f, NULL), 0);
	assert_int_equal(eb__vx_body_json(&f, &out, &fail, NULL), EB_EFRAME);
	len = payload(b, EB_VX_CODEC_CHAR, "\xd8\x00", 2);
	assert_int_equal(eb__vx_decode(b, len, &f, NULL), 0);
	assert_int_equal(eb__vx_body_json(&f, &out, &fail, NULL), EB_EFRAME);
	len = payload(b, EB_VX_CODEC_PING, "", 0);
	assert_int_equal(eb__vx_decode(b, len, &f, NULL), 0);
	assert_int_equal(eb__vx_body_json(&f, &out, &fail, NULL), EB_EPROTO);
	assert_int_equal(eb__buf_avail(&out), 0);
	eb__buf_free(&out);
}

static void
test_header_block_checked(void **state)
{
	/* "a", no reply, sender "s", then headers, then a null body */
	unsigned char b[64] = { 2, 0, 0, 0, 0, 0, 1, 'a', 0, 0, 0, 0, 0, 0, 0,
		1, 's' };
	eb__vx_frame  f;
	/* block 14 = 4 + 4 + (4+1) + ... one byte short of its entry */
	static const unsigned char bad1[] = { 0, 0, 0, 14, 0, 0, 0, 1, 0, 0, 0,
		1, 'k', 0, 0, 0, 1, 'v' };
	/* entries end before the block does */
	static const unsigned char bad2[] = { 0, 0, 0, 19, 0, 0, 0, 1, 0, 0, 0,
		1, 'k', 0, 0, 0, 1, 'v', 0 };
	/* negative count */
	static const unsigned char bad3[] = { 0, 0, 0, 8, 0xff, 0xff, 0xff,
		0xff };
	/* block shorter than its own length field */
	static const unsigned char bad4[] = { 0, 0, 0, 3 };
	/* a good one with two values of one key: the last wins */
	static const unsigned char good[] = { 0, 0, 0, 28, 0, 0, 0, 2, 0, 0, 0,
		1, 'k', 0, 0, 0, 1, 'v', 0, 0, 0, 1, 'k', 0, 0, 0, 1, 'w' };
	json_t                    *h;
	int                        err;

	(void) state;
	memcpy(b + 17, bad1, sizeof(bad1));
	assert_int_equal(
	    eb__vx_decode(b, 17 + sizeof(bad1), &f, NULL), EB_EFRAME);
	memcpy(b + 17, bad2, sizeof(bad2));
	assert_int_equal(
	    eb__vx_decode(b, 17 + sizeof(bad2), &f, NULL), EB_EFRAME);
	memcpy(b + 17, bad3, sizeof(bad3));
	assert_int_equal(
	    eb__vx_decode(b, 17 + sizeof(bad3), &f, NULL), EB_EFRAME);
	memcpy(b + 17, bad4, sizeof(bad4));
	assert_int_equal(
	    eb__vx_decode(b, 17 + sizeof(bad4), &f, NULL), EB_EFRAME);
	memcpy(b + 17, good, sizeof(good));
	assert_int_equal(eb__vx_decode(b, 17 + sizeof(good), &f, NULL), 0);
	assert_int_equal(f.header_count, 2);
	h = eb__vx_headers_json(&f, &err);
	assert_non_null(h);
	assert_string_equal(json_string_value(json_object_get(h, "k")), "w");
	json_decref(h);
	/* NUL inside the address */
	b[7] = '\0';
	assert_int_equal(
	    eb__vx_decode(b, 17 + sizeof(good), &f, NULL), EB_EFRAME);
}

/* Bridge JSON -> codec -> bridge JSON for every kind of body. */
static void
roundtrip(const char *body, int codec, const char *want)
{
	eb__buf        out;
	eb__buf        js;
	eb__vx_frame   f;
	eb__vx_failure fail;
	eb__vx_out     m = { "a", NULL, SENDER, 1, NULL, body,
                body != NULL ? strlen(body) : 0 };

	eb__buf_init(&out);
	eb__buf_init(&js);
	assert_int_equal(eb__vx_encode(&out, &m), 0);
	assert_int_equal(eb__vx_decode(eb__buf_head(&out) + 4,
	                     eb__buf_avail(&out) - 4, &f, NULL),
	    0);
	assert_int_equal(f.codec, codec);
	assert_int_equal(f.publish, 1);
	assert_int_equal(f.reply.n, 0);
	assert_int_equal(eb__vx_body_json(&f, &js, &fail, NULL), 0);
	assert_int_equal(eb__buf_avail(&js), strlen(want));
	assert_memory_equal(eb__buf_head(&js), want, strlen(want));
	eb__buf_free(&out);
	eb__buf_free(&js);
}

static void
test_body_roundtrip(void **state)
{
	(void) state;
	roundtrip("{\"a\": [1, \"\xc3\xa9\"]}", EB_VX_CODEC_JSON_OBJECT,
	    "{\"a\":[1,\"\xc3\xa9\"]}");
	roundtrip(" [true,null] ", EB_VX_CODEC_JSON_ARRAY, "[true,null]");
	roundtrip("\"hi\\u0041\\n\"", EB_VX_CODEC_STRING, "\"hiA\\n\"");
	roundtrip("true", EB_VX_CODEC_BOOL, "true");
	roundtrip("false", EB_VX_CODEC_BOOL, "false");
	roundtrip("null", EB_VX_CODEC_NULL, "null");
	roundtrip(NULL, EB_VX_CODEC_NULL, "null");
	roundtrip("-2147483648", EB_VX_CODEC_INT, "-2147483648");
	roundtrip("2147483648", EB_VX_CODEC_LONG, "2147483648");
	roundtrip("2.5e3", EB_VX_CODEC_DOUBLE, "2500.0");
	roundtrip("0.1", EB_VX_CODEC_DOUBLE, "0.1");
	/* past i64: a Double, as close as it gets */
	roundtrip("92233720368547758080", EB_VX_CODEC_DOUBLE,
	    "9.223372036854776e+19");
}

static void
test_encode_refusals(void **state)
{
	eb__buf    out;
	json_t    *h = json_pack("{s:i}", "n", 1);
	eb__vx_out m = { "a", NULL, SENDER, 0, h, "1", 1 };

	(void) state;
	eb__buf_init(&out);
	/* a header value that is not a string: nothing written */
	assert_int_equal(eb__vx_encode(&out, &m), UV_EINVAL);
	assert_int_equal(eb__buf_avail(&out), 0);
	/* a string with an unpaired surrogate escape */
	m.headers = NULL;
	m.body = "\"\\ud800\"";
	m.body_len = strlen(m.body);
	assert_int_equal(eb__vx_encode(&out, &m), UV_EINVAL);
	assert_int_equal(eb__buf_avail(&out), 0);
	eb__buf_free(&out);
	json_decref(h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_real_frame),
		cmocka_unit_test(test_encode_matches_real_frame),
		cmocka_unit_test(test_every_truncation_refused),
		cmocka_unit_test(test_ping_frame),
		cmocka_unit_test(test_failure_roundtrip),
		cmocka_unit_test(test_scalar_bodies),
		cmocka_unit_test(test_body_sizes_checked),
		cmocka_unit_test(test_unsupported_codecs),
		cmocka_unit_test(test_bad_json_bodies),
		cmocka_unit_test(test_header_block_checked),
		cmocka_unit_test(test_body_roundtrip),
		cmocka_unit_test(test_encode_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
