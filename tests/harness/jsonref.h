/*
 * The scanner of common/jsonscan.h judged against a reference parser
 * (jansson, with JSON_DECODE_ANY | JSON_ALLOW_NUL), for the unit test and
 * the fuzzer. They must agree on every text, apart from the three things
 * jansson refuses although RFC 8259 allows them, where the scanner must
 * accept: integers beyond 64 bits ("too big integer"), reals beyond a
 * double ("real number overflow") unpaired surrogate escapes ("invalid
 * Unicode") and \u0000 in an object key; and jansson ends the text at a NUL
 * byte outside a string, which the scanner refuses as a trailing byte. Nesting
 * deeper than max_depth must be refused by the scanner. When both accept a text
 * that is one string, eb__json_unescape() must give jansson's bytes.
 */
#ifndef EB_TESTS_HARNESS_JSONREF_H
#define EB_TESTS_HARNESS_JSONREF_H

#include <stddef.h>

#include <jansson.h>

/* 0 when they agree on p[0..n); -1 with the disagreement in why. *accepted
 * (may be NULL): the scanner's decision. */
int eb__jsonref_check(const char *p, size_t n, int max_depth, int *accepted,
    char *why, size_t why_len);

/* The nesting depth of j (a scalar is 0, [] is 1). */
int eb__jsonref_depth(const json_t *j);
/* 1 when jansson's error text is one of the refusals above (RFC 8259
 * allows the text). */
int eb__jsonref_known_refusal(const char *text);

#endif
