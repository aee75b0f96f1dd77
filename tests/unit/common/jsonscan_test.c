/* Unit tests for common/jsonscan.h: chosen texts with the decision RFC 8259
 * makes, the same texts and random mutations of valid ones against jansson
 * (tests/harness/jsonref.h), spans, the depth bound and unescaping; the
 * plain run both scanners share (common/jsonrun.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonrun.h"
#include "common/jsonscan.h"
#include "tests/harness/jsonref.h"
#include "tests/harness/th.h"

static int
accepts_n(const char *t, size_t n, int max_depth)
{
	eb__jscan s;

	eb__jscan_init(&s, t, n, max_depth);
	eb__jscan_ws(&s);
	if (!eb__jscan_value(&s, 0)) {
		return 0;
	}
	eb__jscan_ws(&s);
	return s.p == s.end;
}

static int
accepts(const char *t, int max_depth)
{
	return accepts_n(t, strlen(t), max_depth);
}

/* The scanner and jansson agree on t; the scanner's decision. */
static int
agree(const char *t, size_t n)
{
	char why[200];
	int  ok = 0;
	int  rv = eb__jsonref_check(t, n, 32, &ok, why, sizeof(why));

	if (rv != 0) {
		print_error("text [%.*s]: %s\n", (int) n, t, why);
	}
	assert_int_equal(rv, 0);
	return ok;
}

static void
test_chosen(void **state)
{
	static const char *const valid[] = {
		"0",
		"-0",
		"0.1",
		"1e-07",
		"1.0E10",
		"10000000000.0",
		"12345678901234567890",
		"-123456789012345678901234567890e-400",
		"1e999",
		"\"\\u00e9\"",
		"\"\xc3\xa9\"",
		"\"\\u0000\"",
		"\"a\\u0000b\"",
		"\"\\ud83d\\ude00\"",
		"\"\\ud800\"",
		"\"\\udc00x\"",
		"\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"",
		" { \"a\" : 0.1 , \"b\" : 1e-07 , \"c\" : [ 1 , { } , [ ] ] } ",
		"{\"a\":1,\"a\":2}",
		"{\"\\u0061\":true}",
		"[true,false,null]",
		"\t\r\n[\n1\n]\n",
		"\"\xf4\x8f\xbf\xbf\"",
	};
	static const char *const invalid[] = {
		"",
		" ",
		"01",
		"-01",
		"1.",
		".5",
		"+1",
		"1e",
		"1e+",
		"0x10",
		"NaN",
		"Infinity",
		"-Infinity",
		"tru",
		"nul",
		"[1,]",
		"{\"a\":1,}",
		"{'a':1}",
		"{\"a\" 1}",
		"{a:1}",
		"[1 2]",
		"\"\\x\"",
		"\"\\u12\"",
		"\"\\u12G4\"",
		"\"unterminated",
		"\"tab\there\"",
		"\"\xc0\x80\"",
		"\"\xed\xa0\x80\"",
		"\"\xf4\x90\x80\x80\"",
		"\"\xe9\"",
		"1 2",
		"{} x",
		"[",
		"/* c */ 1",
	};
	size_t i;

	(void) state;
	for (i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
		if (!accepts(valid[i], 32)) {
			print_error("refused: %s\n", valid[i]);
		}
		assert_true(accepts(valid[i], 32));
		assert_true(agree(valid[i], strlen(valid[i])));
	}
	for (i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
		if (accepts(invalid[i], 32)) {
			print_error("accepted: %s\n", invalid[i]);
		}
		assert_false(accepts(invalid[i], 32));
		assert_false(agree(invalid[i], strlen(invalid[i])));
	}
	/* A NUL byte outside a string, and inside one (raw). */
	assert_false(accepts_n("\0", 1, 32) || accepts_n("1\0", 2, 32));
	assert_false(agree("[1]\0", 4));
	assert_false(agree("\"a\0\"", 4));
}

static void
test_depth(void **state)
{
	char t[80];
	int  i;

	(void) state;
	for (i = 0; i < 8; i++) {
		t[i] = '[';
		t[15 - i] = ']';
	}
	t[16] = '\0';
	assert_true(accepts(t, 8));
	assert_false(accepts(t, 7));
	assert_int_equal(eb__jsonref_check(t, 16, 7, NULL, t + 20, 60), 0);
	assert_true(accepts("{\"a\":{\"b\":[1]}}", 3));
	assert_false(accepts("{\"a\":{\"b\":[1]}}", 2));
}

static void
test_spans(void **state)
{
	static const char    text[] = "{ \"k\\u0041\" :\n [ 1, \"x\" ] }";
	eb__jscan            s;
	const char          *str;
	size_t               len;
	int                  esc;
	const unsigned char *v;
	char                 out[16];

	(void) state;
	eb__jscan_init(&s, text, sizeof(text) - 1, 32);
	assert_true(eb__jscan_ch(&s, '{'));
	eb__jscan_ws(&s);
	assert_true(eb__jscan_string(&s, &str, &len, &esc));
	assert_int_equal(esc, 1);
	assert_int_equal(len, 7);
	assert_int_equal(eb__json_unescape(str, len, out), 2);
	assert_memory_equal(out, "kA", 2);
	eb__jscan_ws(&s);
	assert_true(eb__jscan_ch(&s, ':'));
	eb__jscan_ws(&s);
	v = s.p;
	assert_true(eb__jscan_value(&s, 1));
	assert_int_equal((size_t) (s.p - v), 10); /* "[ 1, \"x\" ]" as it is */
	assert_memory_equal(v, "[ 1, \"x\" ]", 10);
	/* A failure stays at the first offending byte. */
	eb__jscan_init(&s, "[1, 2 x]", 8, 32);
	assert_false(eb__jscan_value(&s, 0));
	assert_int_equal(eb__jscan_offset(&s), 6);
	assert_string_equal(s.why, "expected ',' or ']'");
}

/* eb__jscan_string_quick and eb__jscan_string on text[0..len): the same
 * result, span, esc, position and failure; plain_at >= 0: a plain string
 * of that length, taken. */
static void
check_quick(const char *text, size_t len, long plain_at)
{
	eb__jscan   a;
	eb__jscan   b;
	const char *sa = NULL;
	const char *sb = NULL;
	size_t      la = 0;
	size_t      lb = 0;
	int         ea = -1;
	int         eb = -1;
	int         ra;
	int         rb;

	eb__jscan_init(&a, text, len, 8);
	eb__jscan_init(&b, text, len, 8);
	ra = eb__jscan_string_quick(&a, &sa, &la, &ea);
	rb = eb__jscan_string(&b, &sb, &lb, &eb);
	assert_int_equal(ra, rb);
	assert_ptr_equal(a.p, b.p);
	assert_ptr_equal(a.why, b.why);
	if (ra) {
		assert_ptr_equal(sa, sb);
		assert_int_equal(la, lb);
		assert_int_equal(ea, eb);
	}
	if (plain_at >= 0) {
		assert_true(ra);
		assert_int_equal(la, (size_t) plain_at);
		assert_int_equal(ea, 0);
	}
}

/* Every offset of the stop (check_quick) for one string length n, stop
 * and tail. */
static void
check_quick_offsets(size_t n, const char *stop, int plain, size_t tail)
{
	char   text[128];
	size_t at;
	size_t len;

	for (at = 0; at <= n; at++) {
		text[0] = '"';
		memset(text + 1, 'a', n);
		(void) snprintf(text + 1 + at, sizeof(text) - 1 - at, "%s%.*s",
		    stop, (int) tail, "zzzzzzzzzzzzzzzzzzzz");
		len = stop[0] == '\0' ? 1 + at : 1 + at + strlen(stop) + tail;
		check_quick(text, len, plain ? (long) at : -1);
	}
}

/*
 * eb__jscan_string_quick takes a plain string inline and leaves every other
 * case to eb__jscan_string: at every length from 0 to 40 (around the 8- and
 * 16-byte steps of the run), with the stop byte (a quote, an escape, a
 * control, UTF-8, a bad byte, a DEL, the end) at every offset and 0 to 20
 * bytes after the string, both give the same result, span, esc, position
 * and failure. A plain string is taken by the quick path with esc 0.
 */
static void
test_string_quick(void **state)
{
	static const char *const stops[] = { "\"", "\\n\"", "\\u00e9\"",
		"\x01\"", "\xc3\xa9\"", "\xff\"", "\x7f\"",
		"" /* unterminated */ };
	size_t                   n;
	size_t                   i;
	size_t                   tail;

	(void) state;
	for (n = 0; n <= 40; n++) {
		for (i = 0; i < sizeof(stops) / sizeof(stops[0]); i++) {
			for (tail = 0; tail <= 20; tail += 5) {
				check_quick_offsets(n, stops[i], i == 0, tail);
			}
		}
	}
}

static void
test_unescape(void **state)
{
	char out[32];

	(void) state;
	assert_int_equal(eb__json_unescape("a\\u0000b", 8, out), 3);
	assert_memory_equal(out, "a\0b", 3);
	assert_int_equal(eb__json_unescape("\\ud83d\\ude00", 12, out), 4);
	assert_memory_equal(out, "\xf0\x9f\x98\x80", 4);
	assert_int_equal(eb__json_unescape("\\ud800", 6, out), -1);
	assert_int_equal(eb__json_unescape("\\udc00", 6, out), -1);
	assert_int_equal(eb__json_unescape("\\ud800\\u0041", 12, out), -1);
	assert_int_equal(eb__json_unescape("\\u00e9\\/", 8, out), 3);
	assert_memory_equal(out, "\xc3\xa9/", 3);
	/* In place: the output never overtakes the input. */
	{
		char in[] = "x\\n\\u0041yz";

		assert_int_equal(eb__json_unescape(in, 11, in), 5);
		assert_memory_equal(in, "x\nAyz", 5);
	}
}

/* Up to 3 random edits (replace, insert, delete) of t[0..n) with bytes
 * from alphabet; the new length. */
static size_t
mutate(char *t, size_t n, size_t cap, const char *alphabet, size_t na)
{
	int edits = 1 + rand() % 3;
	int k;

	for (k = 0; k < edits && n > 0; k++) {
		size_t at = (size_t) rand() % n;
		char   c = alphabet[(size_t) rand() % na];

		switch (rand() % 3) {
		case 0:
			t[at] = c;
			break;
		case 1:
			if (n + 1 < cap) {
				memmove(t + at + 1, t + at, n - at);
				t[at] = c;
				n++;
			}
			break;
		default:
			memmove(t + at, t + at + 1, n - at - 1);
			n--;
			break;
		}
	}
	return n;
}

/* Random mutations of valid texts: every one must agree with jansson. */
static void
test_mutations(void **state)
{
	static const char *const seeds[] = {
		("{\"type\":\"send\",\"address\":\"a\",\"body\":{\"x\":[1,2."
		 "5e3,\"\\u00e9\"],\"y\":null}}"),
		" [ -0.0 , 1E+2 , \"\\ud83d\\ude00\" , { \"\" : false } ] ",
		"\"\xe2\x82\xac\\t\\\"\"",
	};
	static const char alphabet[] = "{}[]\",:\\u0123456789abcdefe+-. \t\n"
	                               "truefalsnl\x01\x7f\xc3\xa9\xed\xf4";
	char              t[256];
	size_t            i;
	size_t            n;
	size_t            taken = 0;

	(void) state;
	srand(20261127);
	for (i = 0; i < 200000; i++) {
		n = strlen(seeds[i % 3]);
		memcpy(t, seeds[i % 3], n + 1);
		n = mutate(t, n, sizeof(t), alphabet, sizeof(alphabet) - 1);
		taken += (size_t) agree(t, n);
	}
	/* Both decisions were exercised, many times. */
	assert_true(taken > 10000 && taken < 190000);
}

/* 1 when c stops a plain run (common/jsonrun.h). */
static int
run_stop(unsigned char c, int del)
{
	return c == '"' || c == '\\' || c < 0x20 || c >= 0x80 ||
	       (del && c == 0x7f);
}

/* One case: n bytes at buf + off, the byte at `at` set to c (when n > 0),
 * a '"' just past the end that the scan must not see. */
static void
plain_run_case(size_t off, size_t n, size_t at, unsigned char c, int del)
{
	unsigned char        buf[8 + 48 + 1];
	const unsigned char *p = buf + off;
	const unsigned char *r;
	size_t               want;
	size_t               i;

	memset(buf, 'a', sizeof(buf));
	if (n > 0) {
		buf[off + at] = c;
	}
	buf[off + n] = '"';
	want = n > 0 && run_stop(c, del) ? at : n;
	r = eb__json_plain_run(p, p + n, del);
	assert_true(r >= p && r <= p + n);
	for (i = 0; i < (size_t) (r - p); i++) {
		assert_false(run_stop(p[i], del));
	}
	assert_true((size_t) (r - p) <= want);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* In a whole word (or 16-byte block) the stop is found exactly. */
	if (want < n && want / 8 < n / 8) {
		assert_int_equal(r - p, want);
	}
#endif
}

/* Every position of byte c in n bytes at offset off, both stop sets. */
static void
plain_run_len(size_t off, size_t n, unsigned char c)
{
	size_t at;

	for (at = 0; at < n || at == 0; at++) {
		plain_run_case(off, n, at, c, 0);
		plain_run_case(off, n, at, c, 1);
	}
}

/* eb__json_plain_run at every offset and length up to 48 bytes, with one
 * byte of each kind at every position: no stop byte is skipped, nothing
 * past the end is read, and in whole words the stop is found exactly. */
static void
test_plain_run(void **state)
{
	static const unsigned char bytes[] = { '"', '\\', 0x00, 0x1f, 0x7f,
		0x80, 0xc3, 0xff, 0x20, 'z' };
	size_t                     off;
	size_t                     n;
	size_t                     k;

	(void) state;
	for (k = 0; k < sizeof(bytes); k++) {
		for (off = 0; off < 8; off++) {
			for (n = 0; n <= 48; n++) {
				plain_run_len(off, n, bytes[k]);
			}
		}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chosen),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_spans),
		cmocka_unit_test(test_string_quick),
		cmocka_unit_test(test_unescape),
		cmocka_unit_test(test_mutations),
		cmocka_unit_test(test_plain_run),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
