/*
 * A validating scanner for JSON text as RFC 8259 defines it, that judges
 * the bytes and reports where values are without building anything: the
 * bridge's frame envelope and the web front read a frame with it, and the
 * body's bytes then travel as they came (docs/BRIDGE-PROTOCOL.md, "Bodies
 * pass byte for byte").
 *
 * Grammar (all of RFC 8259, nothing more): whitespace is space, tab, LF and
 * CR, anywhere between tokens; strings hold no raw control character, UTF-8
 * is checked strictly (no overlong forms, no encoded surrogates, nothing
 * past U+10FFFF), and the escapes are \" \\ \/ \b \f \n \r \t and \uXXXX
 * with any four hex digits (\u0000 and unpaired surrogates included: they
 * are valid JSON text); numbers are -?(0|[1-9][0-9]*)(.[0-9]+)?
 * ([eE][+-]?[0-9]+)? of any length; literals true, false, null; objects may
 * repeat a key. Nesting (objects and arrays) deeper than the scanner's
 * max_depth is refused. No NaN, Infinity, comments, trailing commas or
 * single quotes.
 *
 * Each function starts at s->p and, on success, leaves s->p just past what
 * it read and returns 1. On failure it returns 0, leaves s->p at the first
 * offending byte (or the end, for truncated text) and sets s->why to a
 * static description ("unexpected end of text" for any failure at the end
 * of the text); the first failure is kept. Stateless apart from *s;
 * any thread. tests/unit/common/jsonscan_test.c and
 * tests/fuzz/jsonscan_fuzz.c check it against jansson.
 */
#ifndef EB_COMMON_JSONSCAN_H
#define EB_COMMON_JSONSCAN_H

#include <stddef.h>
#include <stdint.h>

#include "common/jsonrun.h"

typedef struct eb__jscan {
	const unsigned char *start;
	const unsigned char *p;
	const unsigned char *end;
	int                  max_depth; /* >= 1 */
	const char          *why;       /* NULL until a failure */
} eb__jscan;

/* Scans p[0..n), nesting at most max_depth levels. */
void eb__jscan_init(eb__jscan *s, const char *p, size_t n, int max_depth);
/* Skips whitespace (never fails). Inline: called between every two
 * tokens. */
static inline void
eb__jscan_ws(eb__jscan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' ||
	                            *s->p == '\n' || *s->p == '\r')) {
		s->p++;
	}
}

/* 1 and past it when the next byte is c; else 0 without a failure. */
static inline int
eb__jscan_ch(eb__jscan *s, char c)
{
	if (s->p < s->end && *s->p == (unsigned char) c) {
		s->p++;
		return 1;
	}
	return 0;
}
/* Any one value, depth levels already open around it (0 at the top). */
int eb__jscan_value(eb__jscan *s, int depth);
/* A string: *str and *len the bytes between the quotes, *esc 1 when they
 * hold a backslash (eb__json_unescape() decodes them). */
int eb__jscan_string(eb__jscan *s, const char **str, size_t *len, int *esc);
/*
 * eb__jscan_string with its common case inline (issue 25: the bridge scans
 * 11 strings per ingress frame, where the call cost as much as the scan): a
 * string of plain bytes (no backslash, control or byte >= 0x80) found by
 * one run (common/jsonrun.h) is taken here, with *esc 0; any other string,
 * and any failure, is eb__jscan_string's from its opening quote (the same
 * results, the run read twice).
 */
static inline int
eb__jscan_string_quick(eb__jscan *s, const char **str, size_t *len, int *esc)
{
	const unsigned char *p;

	if (s->p < s->end && *s->p == '"') {
		p = eb__json_plain_run(s->p + 1, s->end, 0);
		if (p < s->end && *p == '"') {
			*str = (const char *) (s->p + 1);
			*len = (size_t) (p - (s->p + 1));
			*esc = 0;
			s->p = p + 1;
			return 1;
		}
	}
	return eb__jscan_string(s, str, len, esc);
}
/* The failure's offset in the text. */
size_t eb__jscan_offset(const eb__jscan *s);
/* Fails s with why at the current position (for callers' own rules;
 * "unexpected end of text" at the end); returns 0. */
int eb__jscan_fail(eb__jscan *s, const char *why);

/*
 * Decodes the string bytes p[0..n) as eb__jscan_string() returned them into
 * out, which has room for n bytes (decoding never grows the text). Returns
 * the decoded length, \u0000 decoded as a NUL byte, or -1 when an escape is
 * an unpaired surrogate, which has no UTF-8 form (the caller refuses what it
 * must read as text; such a string can still pass through as bytes).
 */
ptrdiff_t eb__json_unescape(const char *p, size_t n, char *out);

/* Copies valid JSON text p[0..n) into out (room for n bytes) without the
 * whitespace between tokens; every token stays as written (numbers,
 * escapes). Returns the length written. */
size_t eb__json_compact(const char *p, size_t n, char *out);

#endif
