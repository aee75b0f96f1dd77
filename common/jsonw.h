/*
 * Writing JSON text straight into a byte buffer, for the hot paths that only
 * ever write strings and objects of strings (message headers, addresses).
 * The bytes are exactly jansson's JSON_COMPACT encoding of the same value
 * (raw UTF-8, '/' unescaped, key order kept, control characters as \uXXXX
 * with upper-case hex), so a frame is the same whichever writer built it;
 * unit.common.jsonw_test checks that against json_dumps. No allocation
 * beyond growing the buffer, no parsing.
 */
#ifndef EB_COMMON_JSONW_H
#define EB_COMMON_JSONW_H

#include <stddef.h>

#include <jansson.h>

#include "common/buf.h"

/* Appends s (n bytes of UTF-8, NUL bytes allowed) as a JSON string. The
 * caller guarantees valid UTF-8 (jansson checked it when the string was
 * made); the bytes are copied as they are. */
void eb__jsonw_str(eb__buf *b, const char *s, size_t n);

/* Appends obj, an object whose values are all strings. Returns 0, or
 * UV_EINVAL (nothing appended) when obj is not such an object: the caller
 * then falls back to jansson. */
int eb__jsonw_str_object(eb__buf *b, const json_t *obj);

#endif
