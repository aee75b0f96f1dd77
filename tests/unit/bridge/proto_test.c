/* Unit tests for the bridge frame codec: lenient decoding, header
 * stringification, option headers, and byte-exact outgoing frames. */
#include <stdlib.h>
#include <string.h>

#include <ebnode/err.h>

#include "bridge/bridge_int.h"
#include "tests/harness/th.h"

/* envelope_test checks the parser against a jansson reference on many
 * frames; these are the rules, one by one. */
static int
parse(const char *s, int strip, eb__bframe *f)
{
	return eb__bframe_parse(
	    s, strlen(s), strip, EB_BRIDGE_DEFAULT_JSON_DEPTH, f);
}

/* The payload of an encoded frame must equal want, after a correct header. */
static void
assert_frame(eb__buf *b, const char *want)
{
	size_t n = strlen(want);

	assert_int_equal(eb__buf_avail(b), n + 4);
	assert_int_equal(
	    eb__frame_get_len((const unsigned char *) eb__buf_head(b)), n);
	assert_memory_equal(eb__buf_head(b) + 4, want, n);
	eb__buf_consume(b, eb__buf_avail(b));
}

static void
test_send_full(void **state)
{
	eb__bframe f;

	(void) state;
	assert_int_equal(parse("{\"type\":\"send\",\"address\":\"a\","
	                       "\"replyAddress\":\"#r\",\"body\":{\"v\":1},"
	                       "\"headers\":{\"x\":\"y\"}}",
	                     0, &f),
	    0);
	assert_int_equal(f.type, EB__BF_SEND);
	assert_string_equal(f.address, "a");
	assert_string_equal(f.reply_address, "#r");
	assert_int_equal(f.body_raw_len, 7);
	assert_memory_equal(f.body_raw, "{\"v\":1}", 7);
	assert_string_equal(
	    json_string_value(json_object_get(f.headers, "x")), "y");
	assert_int_equal(f.has_failure, 0);
	eb__bframe_free(&f);
}

static void
test_lenient(void **state)
{
	eb__bframe f;

	(void) state;
	/* Pretty-printed, address first, null headers and body (Go, C). */
	assert_int_equal(parse("{\n  \"address\" : \"a\",\n  \"type\" : "
	                       "\"publish\",\n \"headers\":null,\"body\":null}",
	                     0, &f),
	    0);
	assert_int_equal(f.type, EB__BF_PUBLISH);
	assert_null(f.body_raw);
	assert_null(f.headers);
	eb__bframe_free(&f);
}

static void
test_types(void **state)
{
	static const struct {
		const char     *json;
		eb__bframe_type t;
	} cases[] = {
		{ "{\"type\":\"ping\"}", EB__BF_PING },
		{ "{\"type\":\"register\"}", EB__BF_REGISTER },
		{ "{\"type\":\"unregister\"}", EB__BF_UNREGISTER },
		{ "{\"type\":\"message\"}", EB__BF_UNKNOWN },
		{ "{\"type\":\"auth\"}", EB__BF_UNKNOWN },
		{ "{\"address\":\"a\"}", EB__BF_UNKNOWN },
		{ "{\"type\":7}", EB__BF_UNKNOWN },
		{ "{\"type\":\"PING\"}", EB__BF_UNKNOWN },
	};
	size_t i;

	(void) state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		eb__bframe f;

		assert_int_equal(parse(cases[i].json, 0, &f), 0);
		assert_int_equal(f.type, cases[i].t);
		eb__bframe_free(&f);
	}
}

static void
test_malformed(void **state)
{
	static const char *bad[] = { "", "[1,2]", "\"str\"", "42", "null",
		"{\"type\":", "{\"a\":1}}", "{\"a\":tru}", "\xff\xfe{}" };
	size_t             i;

	(void) state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		eb__bframe f;

		assert_int_equal(parse(bad[i], 0, &f), EB_EFRAME);
		assert_true(strncmp(f.err, "invalid_json: ", 14) == 0);
		eb__bframe_free(&f);
	}
}

static void
test_wrong_value_types(void **state)
{
	eb__bframe f;

	(void) state;
	assert_int_equal(parse("{\"type\":\"send\",\"address\":5,"
	                       "\"replyAddress\":[],\"headers\":\"h\","
	                       "\"failureCode\":\"x\"}",
	                     0, &f),
	    0);
	assert_null(f.address);
	assert_null(f.reply_address);
	assert_null(f.headers);
	assert_int_equal(f.has_failure, 0);
	eb__bframe_free(&f);
	assert_int_equal(
	    parse("{\"type\":\"send\",\"address\":\"\"}", 0, &f), 0);
	assert_null(f.address); /* empty: missing */
	eb__bframe_free(&f);
}

static void
test_headers(void **state)
{
	eb__bframe f;
	json_t    *h;

	(void) state;
	assert_int_equal(
	    parse("{\"type\":\"send\",\"address\":\"a\","
	          "\"headers\":{\"b\":true,\"f\":false,\"n\":5,"
	          "\"d\":1.5,\"r\":0.1,\"z\":null,\"o\":{\"k\": [1]},"
	          "\"timeout\":100,\"localOnly\":true,"
	          "\"codecName\":\"x\",\"token\":\"s3cret\"}}",
	        1, &f),
	    0);
	h = f.headers;
	assert_string_equal(json_string_value(json_object_get(h, "b")), "true");
	assert_string_equal(
	    json_string_value(json_object_get(h, "f")), "false");
	assert_string_equal(json_string_value(json_object_get(h, "n")), "5");
	assert_string_equal(json_string_value(json_object_get(h, "d")), "1.5");
	assert_string_equal(
	    json_string_value(json_object_get(h, "r")), "0.1"); /* as written */
	assert_string_equal(
	    json_string_value(json_object_get(h, "o")), "{\"k\":[1]}");
	assert_null(json_object_get(h, "z"));
	assert_null(json_object_get(h, "timeout"));
	assert_null(json_object_get(h, "localOnly"));
	assert_null(json_object_get(h, "codecName"));
	assert_null(json_object_get(h, "token")); /* stripped */
	assert_int_equal(json_object_size(h), 6);
	assert_int_equal(f.timeout_ms, 100);
	assert_int_equal(f.local_only, 1);
	assert_string_equal(f.token, "s3cret");
	eb__bframe_free(&f);

	/* Token kept when auth is off; string timeout ignored. */
	assert_int_equal(parse("{\"type\":\"send\",\"address\":\"a\","
	                       "\"headers\":{\"token\":\"t\",\"timeout\":"
	                       "\"100\"}}",
	                     0, &f),
	    0);
	assert_string_equal(
	    json_string_value(json_object_get(f.headers, "token")), "t");
	assert_int_equal(f.timeout_ms, 0);
	eb__bframe_free(&f);
}

static void
test_duplicate_keys_last_wins(void **state)
{
	eb__bframe f;

	(void) state;
	assert_int_equal(parse("{\"type\":\"ping\",\"address\":\"a\","
	                       "\"type\":\"send\",\"address\":\"b\"}",
	                     0, &f),
	    0);
	assert_int_equal(f.type, EB__BF_SEND);
	assert_string_equal(f.address, "b");
	eb__bframe_free(&f);
}

static void
test_failure_fields(void **state)
{
	eb__bframe f;

	(void) state;
	assert_int_equal(parse("{\"type\":\"send\",\"address\":\"r\","
	                       "\"failureCode\":1234,\"message\":\"ooops!\"}",
	                     0, &f),
	    0);
	assert_int_equal(f.has_failure, 1);
	assert_int_equal(f.failure_code, 1234);
	assert_string_equal(f.failure_message, "ooops!");
	eb__bframe_free(&f);

	/* An integral real counts (Java's getInteger takes any Number)... */
	assert_int_equal(parse("{\"type\":\"send\",\"address\":\"r\","
	                       "\"failureCode\":-7.0}",
	                     0, &f),
	    0);
	assert_int_equal(f.has_failure, 1);
	assert_int_equal(f.failure_code, -7);
	assert_string_equal(f.failure_message, "");
	eb__bframe_free(&f);
	/* ...a fractional or out-of-range one does not. */
	assert_int_equal(parse("{\"type\":\"send\",\"address\":\"r\","
	                       "\"failureCode\":1.5}",
	                     0, &f),
	    0);
	assert_int_equal(f.has_failure, 0);
	eb__bframe_free(&f);
	assert_int_equal(parse("{\"type\":\"send\",\"address\":\"r\","
	                       "\"failureCode\":3000000000}",
	                     0, &f),
	    0);
	assert_int_equal(f.has_failure, 0);
	eb__bframe_free(&f);
}

static void
test_out_frames(void **state)
{
	eb__buf b;
	json_t *h = json_pack("{s:s}", "k", "v/é");

	(void) state;
	eb__buf_init(&b);
	eb__bout_err_buf(&b, "access_denied");
	assert_frame(&b, "{\"type\":\"err\",\"message\":\"access_denied\"}");
	eb__bout_pong_buf(&b);
	assert_frame(&b, "{\"type\":\"pong\"}");
	eb__bout_failure_buf(&b, "r1", "nobody", -1, "NO_HANDLERS",
	    "No handlers for address nobody");
	assert_frame(&b,
	    "{\"type\":\"err\",\"address\":\"r1\",\"sourceAddress\":\"nobody\","
	    "\"failureCode\":-1,\"failureType\":\"NO_HANDLERS\",\"message\":"
	    "\"No handlers for address nobody\"}");
	eb__bout_message_buf(&b, "#backtrack", NULL, NULL,
	    "{\"value\":\"Hello vert.x\"}", 24, 1);
	assert_frame(&b,
	    "{\"type\":\"message\",\"address\":\"#backtrack\",\"headers\":{},"
	    "\"body\":{\"value\":\"Hello vert.x\"},\"send\":true}");
	eb__bout_message_buf(&b, "a", "__vertx.reply.1", h, "null", 4, 0);
	assert_frame(&b,
	    "{\"type\":\"message\",\"address\":\"a\",\"replyAddress\":"
	    "\"__vertx.reply.1\",\"headers\":{\"k\":\"v/é\"},\"send\":false}");
	eb__buf_free(&b);
	json_decref(h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_full),
		cmocka_unit_test(test_lenient),
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_wrong_value_types),
		cmocka_unit_test(test_headers),
		cmocka_unit_test(test_failure_fields),
		cmocka_unit_test(test_duplicate_keys_last_wins),
		cmocka_unit_test(test_out_frames),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
