/*
 * The reference the routing field extraction (ingress/field.c) is checked
 * against, shared by its unit test (tests/unit/ingress/field_test.c) and
 * its differential fuzzer (tests/fuzz/field_fuzz.c): what a routing rule
 * saw on the jansson-parsed body (the router's former rule_subject).
 *
 * Header-only (a static function): include it from one .c file of a test.
 * The returned text is borrowed from root or written into tmp.
 */
#ifndef EB_TEST_FIELD_REF_H
#define EB_TEST_FIELD_REF_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

/* key's value in root as text: a string's own, an integer in decimal
 * (into tmp, n bytes), "true" or "false"; NULL for any other value, a
 * missing key or a root that is not an object. */
static const char *
th_field_reference(const json_t *root, const char *key, char *tmp, size_t n)
{
	const json_t *v =
	    json_is_object(root) ? json_object_get(root, key) : NULL;

	if (json_is_string(v)) {
		return json_string_value(v);
	}
	if (json_is_integer(v)) {
		(void) snprintf(
		    tmp, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return tmp;
	}
	if (json_is_boolean(v)) {
		return json_is_true(v) ? "true" : "false";
	}
	return NULL;
}

#endif
