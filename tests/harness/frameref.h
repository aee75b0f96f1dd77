/*
 * The bridge's frame parser (bridge/proto.c) judged against a reference
 * built on jansson, for the unit test and the fuzzer: jansson parses the
 * frame (JSON_ALLOW_NUL) and the reference reads its fields with the rules
 * of docs/BRIDGE-PROTOCOL.md section 1 (a non-string address or type is
 * missing, headers stringified, option headers consumed, the last of a
 * repeated key wins). Where jansson takes the frame, the parser must take it
 * with the same fields, and its body bytes -- a span of the payload, as it
 * came -- must parse to the reference's body; header values must be the
 * reference's value as text (numbers as written). Where jansson refuses it,
 * the parser must refuse it too, unless jansson refuses only what RFC 8259
 * allows (an integer past 64 bits, a real past a double, an unpaired
 * surrogate, \u0000 in an object key). The parser also refuses, with a reason,
 * a frame nested deeper than max_depth, U+0000 in a string it reads as text,
 * and bytes after a NUL byte (where jansson's reader stops).
 */
#ifndef EB_TESTS_HARNESS_FRAMEREF_H
#define EB_TESTS_HARNESS_FRAMEREF_H

#include <stddef.h>

/* 1: the parser took p[0..n) and agrees; 0: it refused it, rightly; -1: a
 * disagreement, described in why. */
int eb__frameref_check(const char *p, size_t n, int strip_token, int max_depth,
    char *why, size_t why_len);

#endif
