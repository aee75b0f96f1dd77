/*
 * Differential test of the routing field extraction (ingress/field.c): on
 * every body, the text it returns for a key must equal what a rule saw on
 * the jansson-parsed body (the reference below is the router's former
 * rule_subject): the same kind, the same text, or both nothing.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingress/ingress_int.h"
#include "tests/harness/field_ref.h"
#include "tests/harness/th.h"

/* The reference: jansson parses the whole body. NULL: no subject. */
static const char *
reference(const char *body, size_t len, const char *key, char *tmp, size_t n)
{
	static json_t *last; /* keeps the returned string alive */
	json_error_t   jerr;

	json_decref(last);
	last = json_loadb(body, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	return th_field_reference(last, key, tmp, n);
}

static void
agree(const char *body, size_t len, const char *key)
{
	char                   t1[64];
	char                   t2[64];
	char                  *heap = NULL;
	eb__ingress_field_kind kind;
	const char            *want = reference(body, len, key, t1, sizeof(t1));
	const char            *got =
	    eb__ingress_field(body, len, key, &kind, t2, sizeof(t2), &heap);

	if ((want == NULL) != (got == NULL) ||
	    (want != NULL && strcmp(want, got) != 0)) {
		fail_msg("body %.*s key %s: jansson %s, fast %s", (int) len,
		    body, key, want != NULL ? want : "(none)",
		    got != NULL ? got : "(none)");
	}
	assert_true((got == NULL) == (kind == EB__FIELD_NONE));
	free(heap);
}

static void
agree_str(const char *body, const char *key)
{
	agree(body, strlen(body), key);
}

static void
test_cases(void **state)
{
	/* Longer than the caller's 64-byte buffer: the heap holds them. */
	static const char long_plain[] =
	    "{\"t\":\"a long string past the small buffer of sixty four "
	    "bytes, so that the heap holds it\"}";
	static const char long_escaped[] =
	    "{\"t\":\"a long string with an escape \\t past the small "
	    "buffer of sixty four bytes\"}";
	static const char *const bodies[] = {
		"{\"t\":\"x\",\"p\":1}",
		"{\"p\":1,\"t\":\"x\"}",
		"{ \"t\" : \"x\" , \"q\" : [1,{\"t\":\"no\"}] }",
		"{\"q\":{\"t\":\"nested\"},\"t\":\"top\"}",
		"{\"t\":\"a\",\"t\":\"b\"}",
		"{\"t\":\"caf\\u00e9\",\"u\":\"\\ud83d\\ude00\\/\\n\"}",
		"{\"\\u0074\":\"escaped key\"}",
		"{\"t\":-0,\"u\":12,\"v\":-9223372036854775808}",
		"{\"t\":9223372036854775807}",
		"{\"t\":0.1,\"u\":1e-7,\"v\":1.0E10}",
		"{\"t\":true,\"u\":false,\"v\":null}",
		"{\"t\":[\"x\"],\"u\":{}}",
		"{\"t\":\"s\\\"}q\",\"u\":\"x\"}",
		"[\"t\"]",
		"\"t\"",
		"5",
		"null",
		"{}",
		long_plain,
		long_escaped,
	};
	static const char *const keys[] = { "t", "u", "v", "q", "absent" };
	size_t                   i;
	size_t                   k;

	(void) state;
	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			agree_str(bodies[i], keys[k]);
		}
	}
}

/* A random value of depth at most d (keys from a small set, so that they
 * repeat and nest). */
static json_t *
random_value(unsigned *seed, int d)
{
	static const char *const keys[] = { "t", "u", "\xc3\xa9", "t\"", "" };
	static const char *const strs[] = { "x", "", "caf\xc3\xa9",
		"q\"\\/\n\t", "\xf0\x9f\x98\x80", "1", "true" };
	json_t                  *v;
	int                      i;
	int                      n;

	switch (rand_r(seed) % (d > 0 ? 9 : 6)) {
	case 0:
		return json_string(strs[(unsigned) rand_r(seed) %
		                        (sizeof(strs) / sizeof(strs[0]))]);
	case 1:
		return json_integer((json_int_t) rand_r(seed) - RAND_MAX / 2);
	case 2:
		return json_real((double) rand_r(seed) / 7.0);
	case 3:
		return json_boolean(rand_r(seed) % 2);
	case 4:
		return json_null();
	case 5:
		return json_integer(
		    rand_r(seed) % 2 ? INT64_MAX : (json_int_t) INT64_MIN);
	case 6:
		v = json_array();
		n = rand_r(seed) % 4;
		for (i = 0; i < n; i++) {
			(void) json_array_append_new(
			    v, random_value(seed, d - 1));
		}
		return v;
	default:
		v = json_object();
		n = rand_r(seed) % 5;
		for (i = 0; i < n; i++) {
			(void) json_object_set_new(v,
			    keys[(unsigned) rand_r(seed) %
			         (sizeof(keys) / sizeof(keys[0]))],
			    random_value(seed, d - 1));
		}
		return v;
	}
}

/* 20 000 random bodies in three encodings (compact, ASCII-escaped,
 * indented): every key agrees with the reference. */
/* Cut bodies (the fuzzer found a read past the end after ':'): nothing. */
static void
test_truncated(void **state)
{
	static const char *const cut[] = { "{\"t\":", "{\"t\": ", "{\"t\"",
		"{\"t", "{", "{\"t\":1", "{\"t\":\"x", "{\"t\":\"x\"",
		"{\"t\":[1,", "{\"u\":,\"t\":1}", "{\"t\":\"\\" };
	size_t                   i;

	(void) state;
	for (i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
		char                   tmp[64];
		char                  *heap = NULL;
		eb__ingress_field_kind kind;
		/* An exact-size copy, so ASan sees a read past the end. */
		size_t n = strlen(cut[i]);
		char  *p = malloc(n);

		assert_non_null(p);
		memcpy(p, cut[i], n);
		assert_null(eb__ingress_field(
		    p, n, "t", &kind, tmp, sizeof(tmp), &heap));
		assert_int_equal(kind, EB__FIELD_NONE);
		free(p);
	}
}

static void
test_random(void **state)
{
	static const size_t      flags[] = { JSON_COMPACT | JSON_ENCODE_ANY,
		     JSON_COMPACT | JSON_ENCODE_ANY | JSON_ENSURE_ASCII |
		         JSON_ESCAPE_SLASH,
		     JSON_INDENT(1) | JSON_ENCODE_ANY };
	static const char *const keys[] = { "t", "u", "\xc3\xa9", "t\"", "",
		"absent" };
	unsigned                 seed = 17;
	int                      i;
	size_t                   f;
	size_t                   k;

	(void) state;
	for (i = 0; i < 20000; i++) {
		json_t *v = random_value(&seed, 3);

		for (f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
			char *enc = json_dumps(v, flags[f]);

			assert_non_null(enc);
			for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
				agree_str(enc, keys[k]);
			}
			free(enc);
		}
		json_decref(v);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
