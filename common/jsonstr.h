/*
 * JSON strings and objects of strings (message headers) on the hot paths,
 * without jansson's encoder and, for the plain case, its parser.
 *
 * Written: the bytes are exactly jansson's JSON_COMPACT encoding of the
 * same value (raw UTF-8, '/' unescaped, key order kept, control characters
 * as \uXXXX with upper-case hex), so a frame is the same whichever writer
 * built it. Read: only the compact, escape-free form this writer produces
 * for printable ASCII; anything else is left to jansson. unit.common.
 * jsonstr_test and field_fuzz check both against jansson.
 */
#ifndef EB_COMMON_JSONSTR_H
#define EB_COMMON_JSONSTR_H

#include <stddef.h>
#include <string.h>

#include <jansson.h>

#include "common/buf.h"

/* j without its const: for jansson functions that take a non-const
 * pointer but only read through it or count references (iterators,
 * json_copy, json_incref). Copies the pointer rather than casting the
 * qualifier away. */
static inline json_t *
eb__json_unconst(const json_t *j)
{
	json_t *m;

	memcpy(&m, &j, sizeof(json_t *));
	return m;
}

/* Appends obj, an object whose values are all strings. Returns 0, or
 * UV_EINVAL (nothing appended) when obj is not such an object: the caller
 * then falls back to jansson. The strings' bytes are copied as they are
 * (jansson checked their UTF-8 when they were made; NUL bytes in values
 * are escaped). */
int eb__jsonstr_put_object(eb__buf *b, const json_t *obj);

/* Appends one member "k":"v" of such an object, a ',' before it unless
 * first: the same bytes put_object writes for it. */
void eb__jsonstr_put_member(
    eb__buf *b, int first, const char *k, size_t kn, const char *v, size_t vn);

/* The same for a key and a value the caller knows need no escape (a
 * constant name, decimal digits): written as they are, unchecked. */
void eb__jsonstr_put_plain_member(
    eb__buf *b, int first, const char *k, size_t kn, const char *v, size_t vn);

/* Parses p[0..n) when it is a compact object of strings whose keys and
 * values are printable ASCII without '"' or '\\' and whose keys are
 * distinct, e.g. {"ebnode.epoch":"3","ebnode.seq":"17"}: a new object, the
 * one json_loadb would return. NULL for anything else (not an error: the
 * caller then asks jansson, which also reports what is wrong). */
json_t *eb__jsonstr_parse_plain_object(const char *p, size_t n);

/* 1 when eb__jsonstr_parse_plain_object(p, n) would succeed, with at most
 * 16 keys; nothing built. Such bytes are exactly what eb__jsonstr_put_object
 * writes for the object they hold, so they can travel as they are. */
int eb__jsonstr_plain_object_check(const char *p, size_t n);

#endif
