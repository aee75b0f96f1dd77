/*
 * The RFC 8259 scanner (jsonscan.h). Strings are the hot part: runs of
 * plain bytes are skipped 16 or 8 at a time (common/jsonrun.h), and only a
 * quote, a backslash, a control byte or a UTF-8 lead byte stops the run.
 */
#include "common/jsonscan.h"

#include <string.h>

#include "common/jsonrun.h"
#include "common/util.h"

void
eb__jscan_init(eb__jscan *s, const char *p, size_t n, int max_depth)
{
	s->start = (const unsigned char *) p;
	s->p = s->start;
	s->end = s->start + n;
	s->max_depth = max_depth < 1 ? 1 : max_depth;
	s->why = NULL;
}

int
eb__jscan_fail(eb__jscan *s, const char *why)
{
	if (s->why == NULL) {
		/* Whatever was expected, truncated text is what went wrong. */
		s->why = s->p >= s->end ? "unexpected end of text" : why;
	}
	return 0;
}

size_t
eb__jscan_offset(const eb__jscan *s)
{
	return (size_t) (s->p - s->start);
}

/* The length of the UTF-8 sequence at p (lead byte >= 0x80) when it is
 * well formed (no overlong form, no surrogate, <= U+10FFFF), else 0. */
static size_t
utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned c = p[0];
	uint32_t cp;
	size_t   n;
	size_t   i;

	if (c >= 0xC2 && c <= 0xDF) {
		n = 2;
		cp = c & 0x1Fu;
	} else if (c >= 0xE0 && c <= 0xEF) {
		n = 3;
		cp = c & 0x0Fu;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4;
		cp = c & 0x07u;
	} else {
		return 0;
	}
	if ((size_t) (end - p) < n) {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xC0u) != 0x80u) {
			return 0;
		}
		cp = cp << 6 | (p[i] & 0x3Fu);
	}
	if (cp > 0x10FFFFu || (cp >= 0xD800u && cp <= 0xDFFFu) ||
	    (n == 3 && cp < 0x800u) || (n == 4 && cp < 0x10000u)) {
		return 0;
	}
	return n;
}

/* 1: a byte that ends a plain run ('"', '\\', controls, >= 0x80). */
static const unsigned char js_stop[256] = {
	/* clang-format off */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	/* clang-format on */
};

/* The escape at s->p (a backslash): past it and 1, else 0. */
static int
scan_escape(eb__jscan *s)
{
	uint32_t cp;

	if (s->end - s->p < 2) {
		s->p = s->end;
		return eb__jscan_fail(s, "unterminated string");
	}
	switch (s->p[1]) {
	case '"':
	case '\\':
	case '/':
	case 'b':
	case 'f':
	case 'n':
	case 'r':
	case 't':
		s->p += 2;
		return 1;
	case 'u':
		if (s->end - s->p < 6 || !eb__hex4(s->p + 2, &cp)) {
			return eb__jscan_fail(s, "invalid \\u escape");
		}
		s->p += 6;
		return 1;
	default:
		return eb__jscan_fail(s, "invalid escape in string");
	}
}

int
eb__jscan_string(eb__jscan *s, const char **str, size_t *len, int *esc)
{
	const unsigned char *start;
	const unsigned char *p;
	size_t               u;
	unsigned             c;

	if (s->p >= s->end || *s->p != '"') {
		return eb__jscan_fail(s, "expected a string");
	}
	start = ++s->p;
	*esc = 0;
	for (;;) {
		p = eb__json_plain_run(s->p, s->end, 0);
		while (p < s->end && !js_stop[*p]) {
			p++;
		}
		s->p = p;
		if (p >= s->end) {
			return eb__jscan_fail(s, "unterminated string");
		}
		c = *p;
		if (c == '"') {
			*str = (const char *) start;
			*len = (size_t) (p - start);
			s->p++;
			return 1;
		}
		if (c < 0x20) {
			return eb__jscan_fail(s, "control character in string");
		}
		if (c == '\\') {
			*esc = 1;
			if (!scan_escape(s)) {
				return 0;
			}
		} else {
			if ((u = utf8_len(p, s->end)) == 0) {
				return eb__jscan_fail(s, "invalid UTF-8");
			}
			s->p += u;
		}
	}
}

static int
digit(const eb__jscan *s)
{
	return s->p < s->end && *s->p >= '0' && *s->p <= '9';
}

static int
digits(eb__jscan *s)
{
	if (!digit(s)) {
		return eb__jscan_fail(s, "invalid number");
	}
	while (digit(s)) {
		s->p++;
	}
	return 1;
}

static int
scan_number(eb__jscan *s)
{
	(void) eb__jscan_ch(s, '-');
	if (!digit(s)) {
		return eb__jscan_fail(s, "invalid value");
	}
	if (*s->p == '0') {
		s->p++;
	} else {
		(void) digits(s);
	}
	if (eb__jscan_ch(s, '.') && !digits(s)) {
		return 0;
	}
	if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
		s->p++;
		if (s->p < s->end && (*s->p == '+' || *s->p == '-')) {
			s->p++;
		}
		if (!digits(s)) {
			return 0;
		}
	}
	if (digit(s)) { /* "01" */
		return eb__jscan_fail(s, "invalid number");
	}
	return 1;
}

static int
scan_literal(eb__jscan *s, const char *lit, size_t n)
{
	if ((size_t) (s->end - s->p) < n || memcmp(s->p, lit, n) != 0) {
		return eb__jscan_fail(s, "invalid value");
	}
	s->p += n;
	return 1;
}

/* The members or elements after '{' or '[' (s->p past it), up to and
 * past the closing bracket. */
static int
scan_container(eb__jscan *s, int depth, int object)
{
	const char *k;
	size_t      kl;
	int         esc;
	char        close = object ? '}' : ']';

	if (depth > s->max_depth) {
		return eb__jscan_fail(s, "nested too deep");
	}
	eb__jscan_ws(s);
	if (eb__jscan_ch(s, close)) {
		return 1;
	}
	for (;;) {
		if (object) {
			if (!eb__jscan_string_quick(s, &k, &kl, &esc)) {
				return 0;
			}
			eb__jscan_ws(s);
			if (!eb__jscan_ch(s, ':')) {
				return eb__jscan_fail(s, "expected ':'");
			}
			eb__jscan_ws(s);
		}
		if (!eb__jscan_value(s, depth)) {
			return 0;
		}
		eb__jscan_ws(s);
		if (eb__jscan_ch(s, close)) {
			return 1;
		}
		if (!eb__jscan_ch(s, ',')) {
			return eb__jscan_fail(s, object
			                             ? "expected ',' or '}'"
			                             : "expected ',' or ']'");
		}
		eb__jscan_ws(s);
	}
}

int
eb__jscan_value(eb__jscan *s, int depth)
{
	const char *str;
	size_t      len;
	int         esc;

	if (s->p >= s->end) {
		return eb__jscan_fail(s, "unexpected end of text");
	}
	switch (*s->p) {
	case '"':
		return eb__jscan_string_quick(s, &str, &len, &esc);
	case '{':
	case '[':
		s->p++;
		return scan_container(s, depth + 1, s->p[-1] == '{');
	case 't':
		return scan_literal(s, "true", 4);
	case 'f':
		return scan_literal(s, "false", 5);
	case 'n':
		return scan_literal(s, "null", 4);
	default:
		return scan_number(s);
	}
}

/* Writes code point cp (<= U+10FFFF, not a surrogate) as UTF-8. */
static size_t
put_utf8(char *out, uint32_t cp)
{
	if (cp < 0x80u) {
		out[0] = (char) cp;
		return 1;
	}
	if (cp < 0x800u) {
		out[0] = (char) (0xC0u | cp >> 6);
		out[1] = (char) (0x80u | (cp & 0x3Fu));
		return 2;
	}
	if (cp < 0x10000u) {
		out[0] = (char) (0xE0u | cp >> 12);
		out[1] = (char) (0x80u | (cp >> 6 & 0x3Fu));
		out[2] = (char) (0x80u | (cp & 0x3Fu));
		return 3;
	}
	out[0] = (char) (0xF0u | cp >> 18);
	out[1] = (char) (0x80u | (cp >> 12 & 0x3Fu));
	out[2] = (char) (0x80u | (cp >> 6 & 0x3Fu));
	out[3] = (char) (0x80u | (cp & 0x3Fu));
	return 4;
}

/* The \uXXXX escape (a pair for a surrogate) at p[0..end): its code point
 * and the bytes it takes in *used; 0 for an unpaired surrogate. */
static int
decode_u(const unsigned char *p, const unsigned char *end, uint32_t *cp,
    size_t *used)
{
	uint32_t lo;

	(void) eb__hex4(p + 2, cp);
	*used = 6;
	if (*cp >= 0xDC00u && *cp <= 0xDFFFu) {
		return 0;
	}
	if (*cp < 0xD800u || *cp > 0xDBFFu) {
		return 1;
	}
	if (end - p < 12 || p[6] != '\\' || p[7] != 'u' ||
	    !eb__hex4(p + 8, &lo) || lo < 0xDC00u || lo > 0xDFFFu) {
		return 0;
	}
	*cp = 0x10000u + ((*cp - 0xD800u) << 10) + (lo - 0xDC00u);
	*used = 12;
	return 1;
}

ptrdiff_t
eb__json_unescape(const char *p, size_t n, char *out)
{
	const unsigned char *q = (const unsigned char *) p;
	const unsigned char *end = q + n;
	size_t               o = 0;
	size_t               used;
	uint32_t             cp;

	while (q < end) {
		const unsigned char *bs = memchr(q, '\\', (size_t) (end - q));
		size_t               run =
                    bs == NULL ? (size_t) (end - q) : (size_t) (bs - q);

		memmove(out + o, q, run);
		o += run;
		q += run;
		if (q >= end) {
			break;
		}
		switch (q[1]) {
		case 'b':
			out[o++] = '\b';
			break;
		case 'f':
			out[o++] = '\f';
			break;
		case 'n':
			out[o++] = '\n';
			break;
		case 'r':
			out[o++] = '\r';
			break;
		case 't':
			out[o++] = '\t';
			break;
		case 'u':
			if (!decode_u(q, end, &cp, &used)) {
				return -1;
			}
			o += put_utf8(out + o, cp);
			q += used;
			continue;
		default: /* '"', '\\', '/' */
			out[o++] = (char) q[1];
			break;
		}
		q += 2;
	}
	return (ptrdiff_t) o;
}

size_t
eb__json_compact(const char *p, size_t n, char *out)
{
	size_t i;
	size_t o = 0;
	int    in_str = 0;

	for (i = 0; i < n; i++) {
		char c = p[i];

		if (in_str) {
			out[o++] = c;
			if (c == '\\' && i + 1 < n) {
				out[o++] = p[++i];
			} else if (c == '"') {
				in_str = 0;
			}
		} else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
			in_str = c == '"';
			out[o++] = c;
		}
	}
	return o;
}
