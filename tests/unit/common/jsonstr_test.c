/* Unit tests for common/jsonstr.h: the writer gives the same bytes as
 * jansson's compact encoding, for chosen and random keys and values; the plain
 * reader gives the object json_loadb gives, or declines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "common/jsonstr.h"
#include "tests/harness/th.h"

/* jansson's encoding of v (a string or an object of strings). */
static char *
ref(const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

	assert_non_null(s);
	return s;
}

static void
check_obj(const json_t *o)
{
	eb__buf b;
	char   *want = ref(o);

	eb__buf_init(&b);
	eb__buf_append(&b, "x", 1); /* appends, after what is there */
	assert_int_equal(eb__jsonstr_put_object(&b, o), 0);
	assert_int_equal(eb__buf_avail(&b), strlen(want) + 1);
	assert_memory_equal(eb__buf_head(&b) + 1, want, strlen(want));
	eb__buf_free(&b);
	free(want);
}

/* s as a value and, without NUL bytes, as a key. */
static void
check_str(const char *s, size_t n)
{
	json_t *o = json_object();

	assert_int_equal(json_object_set_new(o, "k", json_stringn(s, n)), 0);
	check_obj(o);
	if (memchr(s, '\0', n) == NULL) {
		assert_int_equal(
		    json_object_set_new(o, s, json_string("v")), 0);
		check_obj(o);
	}
	json_decref(o);
}

static void
test_chosen_strings(void **state)
{
	static const char *cases[] = {
		"",
		"plain",
		"quote \" and backslash \\",
		"slash / stays",
		"\b\f\n\r\t",
		"\x01\x1f\x7f",
		"caf\xc3\xa9",
		"\xe2\x80\xa8 line separator",
		"\xf0\x9f\x98\x80 emoji",
		"ebnode.entry",
	};
	size_t i;

	(void) state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		check_str(cases[i], strlen(cases[i]));
	}
	check_str("a\0b", 3); /* a NUL inside a value: \u0000 */
}

static void
test_objects(void **state)
{
	json_t *o = json_object();
	json_t *s;
	eb__buf b;

	(void) state;
	check_obj(o); /* {} */
	(void) json_object_set_new(o, "ebnode.epoch", json_string("7"));
	(void) json_object_set_new(o, "k\"\n", json_string("v\\\x02"));
	(void) json_object_set_new(o, "a", json_string("1"));
	(void) json_object_set_new(o, "ebnode.epoch", json_string("8"));
	check_obj(o); /* insertion order, the replaced key in place */

	/* Not all strings: refused, nothing written. */
	(void) json_object_set_new(o, "n", json_integer(1));
	eb__buf_init(&b);
	assert_int_equal(eb__jsonstr_put_object(&b, o), UV_EINVAL);
	assert_int_equal(eb__buf_avail(&b), 0);
	s = json_string("s");
	assert_int_equal(eb__jsonstr_put_object(&b, s), UV_EINVAL);
	json_decref(s);
	assert_int_equal(eb__jsonstr_put_object(&b, NULL), UV_EINVAL);
	assert_int_equal(eb__buf_avail(&b), 0);
	eb__buf_free(&b);
	json_decref(o);
}

/* A random valid UTF-8 string of up to max bytes into s; its length. */
static size_t
rand_utf8(char *s, size_t max, int allow_nul)
{
	size_t n = 0;
	size_t want = (size_t) rand() % (max - 4);

	while (n < want) {
		unsigned cp;
		int      r = rand() % 10;

		if (r < 4) {
			cp = (unsigned) (rand() % 0x80); /* ASCII, controls */
		} else if (r < 6) {
			cp = (unsigned) (rand() % 0x20);
		} else if (r < 7) {
			cp = 0x80 + (unsigned) (rand() % 0x780);
		} else if (r < 8) {
			cp = 0x800 + (unsigned) (rand() % 0xd000);
			/* below the surrogates */
		} else if (r < 9) {
			cp = 0x10000 + (unsigned) (rand() % 0x100000);
		} else {
			cp = (unsigned char) "\"\\/"[rand() % 3];
		}
		if (cp == 0 && !allow_nul) {
			cp = 'z';
		}
		if (cp < 0x80) {
			s[n++] = (char) cp;
		} else if (cp < 0x800) {
			s[n++] = (char) (0xc0 | cp >> 6);
			s[n++] = (char) (0x80 | (cp & 0x3f));
		} else if (cp < 0x10000) {
			s[n++] = (char) (0xe0 | cp >> 12);
			s[n++] = (char) (0x80 | (cp >> 6 & 0x3f));
			s[n++] = (char) (0x80 | (cp & 0x3f));
		} else {
			s[n++] = (char) (0xf0 | cp >> 18);
			s[n++] = (char) (0x80 | (cp >> 12 & 0x3f));
			s[n++] = (char) (0x80 | (cp >> 6 & 0x3f));
			s[n++] = (char) (0x80 | (cp & 0x3f));
		}
	}
	s[n] = '\0';
	return n;
}

static void
test_random_against_jansson(void **state)
{
	char k[64];
	char v[96];
	int  i;

	(void) state;
	srand(17);
	for (i = 0; i < 20000; i++) {
		json_t *o = json_object();
		int     keys = rand() % 6;
		size_t  n = rand_utf8(v, sizeof(v) - 1, 1);

		check_str(v, n);
		while (keys-- > 0) {
			(void) rand_utf8(k, sizeof(k) - 1, 0);
			n = rand_utf8(v, sizeof(v) - 1, 1);
			(void) json_object_set_new(o, k, json_stringn(v, n));
		}
		check_obj(o);
		json_decref(o);
	}
}

/* The plain reader on s: declines (want_null), or returns what jansson
 * returns, in the same key order; the plain check agrees with it. */
static void
check_parse(const char *s, int want_null)
{
	json_t      *got = eb__jsonstr_parse_plain_object(s, strlen(s));
	json_error_t jerr;
	json_t      *want;
	char        *a;
	char        *b;

	assert_int_equal(
	    eb__jsonstr_plain_object_check(s, strlen(s)), !want_null);
	if (want_null) {
		assert_null(got);
		return;
	}
	assert_non_null(got);
	want = json_loadb(s, strlen(s), JSON_REJECT_DUPLICATES, &jerr);
	assert_non_null(want);
	assert_true(json_equal(got, want));
	a = json_dumps(got, JSON_COMPACT);
	b = json_dumps(want, JSON_COMPACT);
	assert_string_equal(a, b);
	free(a);
	free(b);
	json_decref(got);
	json_decref(want);
}

static void
test_plain_reader(void **state)
{
	(void) state;
	check_parse("{}", 0);
	check_parse("{\"a\":\"b\"}", 0);
	check_parse("{\"\":\"\"}", 0);
	check_parse("{\"ebnode.epoch\":\"3\",\"ebnode.seq\":\"17\","
	            "\"ebnode.entry\":\"node-b\",\"x\":\"{}:,]/ ~\"}",
	    0);
	/* Declined: jansson decides (and may accept or refuse). */
	check_parse("", 1);
	check_parse("{", 1);
	check_parse("}", 1);
	check_parse("[]", 1);
	check_parse("{ }", 1);
	check_parse("{\"a\": \"b\"}", 1);
	check_parse("{\"a\":\"b\" }", 1);
	check_parse("{\"a\":\"b\",}", 1);
	check_parse("{\"a\":\"b\"}}", 1);
	check_parse("{\"a\":\"b\"", 1);
	check_parse("{\"a\":\"b}", 1);
	check_parse("{\"a\":1}", 1);
	check_parse("{\"a\":\"b\",\"a\":\"c\"}", 1); /* duplicate */
	check_parse("{\"a\":\"\\n\"}", 1);           /* an escape */
	check_parse("{\"a\":\"caf\xc3\xa9\"}", 1);   /* not ASCII */
	check_parse("{\"a\":\"\t\"}", 1);            /* a control char */
	check_parse("{\"a\"\"b\"}", 1);
	check_parse("{\"a\":\"b\"\"c\":\"d\"}", 1);
}

/* The plain check compares at most 16 keys: a plain object with more is
 * left to the parsers (declined, never wrongly accepted). */
static void
test_plain_check_many_keys(void **state)
{
	char   s[512];
	size_t n = 0;
	int    i;

	(void) state;
	s[n++] = '{';
	for (i = 0; i < 17; i++) {
		n += (size_t) snprintf(
		    s + n, sizeof(s) - n, "%s\"k%d\":\"v\"", i ? "," : "", i);
		s[n] = '}';
		assert_int_equal(
		    eb__jsonstr_plain_object_check(s, n + 1), i < 16);
	}
}

/* Whatever the writer writes for random printable ASCII is read back by
 * the plain reader as the same object. */
static void
test_plain_round_trip(void **state)
{
	char k[16];
	char v[32];
	int  i;

	(void) state;
	srand(23);
	for (i = 0; i < 5000; i++) {
		json_t *o = json_object();
		json_t *back;
		eb__buf b;
		int     keys = rand() % 6;

		while (keys-- > 0) {
			size_t kn = (size_t) rand() % (sizeof(k) - 1);
			size_t vn = (size_t) rand() % (sizeof(v) - 1);
			size_t j;

			for (j = 0; j < kn; j++) {
				k[j] = (char) (0x20 + rand() % 0x5f);
			}
			k[kn] = '\0';
			for (j = 0; j < vn; j++) {
				v[j] = (char) (0x20 + rand() % 0x5f);
			}
			(void) json_object_set_new(o, k, json_stringn(v, vn));
		}
		eb__buf_init(&b);
		assert_int_equal(eb__jsonstr_put_object(&b, o), 0);
		back = eb__jsonstr_parse_plain_object(
		    eb__buf_head(&b), eb__buf_avail(&b));
		assert_int_equal(eb__jsonstr_plain_object_check(
		                     eb__buf_head(&b), eb__buf_avail(&b)),
		    back != NULL);
		if (memchr(eb__buf_head(&b), '\\', eb__buf_avail(&b)) != NULL) {
			assert_null(back); /* '"' or '\\' needed an escape */
		} else {
			assert_non_null(back);
			assert_true(json_equal(back, o));
		}
		json_decref(back);
		eb__buf_free(&b);
		json_decref(o);
	}
}

/* put_plain_member writes what put_member writes for strings that need no
 * escape (the router's stamp keys and numbers). */
static void
test_plain_member(void **state)
{
	static const char *kv[][2] = {
		{ "ebnode.epoch", "9" },
		{ "ebnode.seq", "18446744073709551615" },
		{ "ebnode.config", "" },
		{ "", "0" },
	};
	eb__buf a;
	eb__buf b;
	size_t  i;

	(void) state;
	eb__buf_init(&a);
	eb__buf_init(&b);
	for (i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
		eb__jsonstr_put_member(&a, i == 0, kv[i][0], strlen(kv[i][0]),
		    kv[i][1], strlen(kv[i][1]));
		eb__jsonstr_put_plain_member(&b, i == 0, kv[i][0],
		    strlen(kv[i][0]), kv[i][1], strlen(kv[i][1]));
	}
	assert_int_equal(eb__buf_avail(&a), eb__buf_avail(&b));
	assert_memory_equal(
	    eb__buf_head(&a), eb__buf_head(&b), eb__buf_avail(&a));
	assert_memory_equal(eb__buf_head(&b),
	    "\"ebnode.epoch\":\"9\",\"ebnode.seq\":\"18446744073709551615\","
	    "\"ebnode.config\":\"\",\"\":\"0\"",
	    eb__buf_avail(&b));
	eb__buf_free(&a);
	eb__buf_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chosen_strings),
		cmocka_unit_test(test_objects),
		cmocka_unit_test(test_random_against_jansson),
		cmocka_unit_test(test_plain_reader),
		cmocka_unit_test(test_plain_round_trip),
		cmocka_unit_test(test_plain_check_many_keys),
		cmocka_unit_test(test_plain_member),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
