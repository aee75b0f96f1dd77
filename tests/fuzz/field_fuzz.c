/*
 * Differential fuzzer of the routing field extraction (ingress/field.c)
 * against jansson: the input is a body; for every key the reference finds
 * in the parsed object (and a few fixed ones), the text must agree with
 * what a rule saw on the jansson-parsed body. Inputs jansson refuses are
 * not judged (the bridge or the bus never hands such a body on), except
 * that the extraction must not crash on them.
 *
 * The same inputs check the header writer (common/jsonstr.h) against
 * jansson: a parsed object whose values are all strings, and a parsed
 * string as the value of one, must encode to exactly json_dumps's bytes; and an
 * input the plain header reader accepts must be one jansson accepts, as the
 * same object with the same key order.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/jsonstr.h"
#include "ingress/ingress_int.h"
#include "tests/harness/field_ref.h"

/* libFuzzer's name and signature. */
/* NOLINTNEXTLINE(readability-identifier-naming) */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(const char *p, size_t n, const json_t *root, const char *key)
{
	char                   t1[64];
	char                   t2[64];
	char                  *heap = NULL;
	eb__ingress_field_kind kind;
	const char *want = th_field_reference(root, key, t1, sizeof(t1));
	const char *got =
	    eb__ingress_field(p, n, key, &kind, t2, sizeof(t2), &heap);

	if (root != NULL && ((want == NULL) != (got == NULL) ||
	                        (want != NULL && strcmp(want, got) != 0))) {
		abort();
	}
	free(heap);
}

/* The writer against json_dumps, for an object of strings, or a string
 * as the value of one. */
static void
check_writer(json_t *root)
{
	eb__buf b;
	json_t *o;
	char   *want;

	if (json_is_string(root)) {
		o = json_object();
		(void) json_object_set(o, "k", root);
	} else if (json_is_object(root)) {
		o = json_incref(root);
	} else {
		return;
	}
	eb__buf_init(&b);
	want = json_dumps(o, JSON_COMPACT);
	if (eb__jsonstr_put_object(&b, o) == 0 &&
	    (want == NULL || strlen(want) != eb__buf_avail(&b) ||
	        memcmp(want, eb__buf_head(&b), strlen(want)) != 0)) {
		abort();
	}
	free(want);
	eb__buf_free(&b);
	json_decref(o);
}

/* The plain reader against json_loadb. */
static void
check_reader(const char *p, size_t n)
{
	json_t      *got = eb__jsonstr_parse_plain_object(p, n);
	json_error_t jerr;
	json_t      *want;
	char        *a;
	char        *b;

	if (got == NULL) {
		return;
	}
	want = json_loadb(p, n, JSON_REJECT_DUPLICATES, &jerr);
	if (want == NULL || !json_equal(got, want)) {
		abort();
	}
	a = json_dumps(got, JSON_COMPACT);
	b = json_dumps(want, JSON_COMPACT);
	if (a == NULL || b == NULL || strcmp(a, b) != 0) {
		abort();
	}
	free(a);
	free(b);
	json_decref(got);
	json_decref(want);
}

/* NOLINTNEXTLINE(readability-identifier-naming) */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const fixed[] = { "t", "type", "", "k" };
	const char              *p = (const char *) data;
	json_error_t             jerr;
	json_t                  *root =
	    json_loadb(p, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	const char *key;
	json_t     *v;
	size_t      i;

	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		check(p, size, root, fixed[i]);
	}
	if (json_is_object(root)) {
		json_object_foreach(root, key, v)
		{
			(void) v;
			check(p, size, root, key);
		}
	}
	check_writer(root);
	check_reader(p, size);
	json_decref(root);
	return 0;
}
