/*
 * The one body field a routing rule looks at, read from the body's JSON
 * encoding without parsing the rest: the router routes by the bytes that
 * arrived and forwards them untouched, so a full parse (and the re-encoding
 * it used to imply) is the cost this avoids. The result matches what the
 * rule saw on the jansson-parsed body (tests/unit/ingress/field_test.c
 * checks both against each other). Loop thread only; no state.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/util.h"
#include "ingress/ingress_int.h"

typedef struct jscan {
	const unsigned char *p;
	const unsigned char *end;
} jscan;

static void
js_ws(jscan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' ||
	                            *s->p == '\n' || *s->p == '\r')) {
		s->p++;
	}
}

/* From an opening quote to past the closing one; *esc when it has
 * escapes. 0: unterminated. */
static int
js_string(jscan *s, int *esc)
{
	*esc = 0;
	s->p++;
	while (s->p < s->end && *s->p != '"') {
		if (*s->p == '\\') {
			*esc = 1;
			if (s->end - s->p < 2) {
				return 0;
			}
			s->p++;
		}
		s->p++;
	}
	if (s->p >= s->end) {
		return 0;
	}
	s->p++;
	return 1;
}

/* Past one value that is not a string (not judged: the bridge or the
 * sender's encoder did). */
static int
js_skip(jscan *s)
{
	const unsigned char *start = s->p;
	int                  depth = 0;
	int                  esc;

	if (s->p >= s->end) {
		return 0;
	}
	if (*s->p != '{' && *s->p != '[') {
		while (s->p < s->end && *s->p != ',' && *s->p != '}' &&
		       *s->p != ']' && *s->p != ' ' && *s->p != '\t' &&
		       *s->p != '\n' && *s->p != '\r') {
			s->p++;
		}
		return s->p > start; /* an empty value is no value */
	}
	do {
		if (s->p >= s->end) {
			return 0;
		}
		if (*s->p == '"') {
			if (!js_string(s, &esc)) {
				return 0;
			}
			continue;
		}
		if (*s->p == '{' || *s->p == '[') {
			depth++;
		} else if (*s->p == '}' || *s->p == ']') {
			depth--;
		}
		s->p++;
	} while (depth > 0);
	return 1;
}

static char *
put_utf8(char *d, uint32_t cp)
{
	if (cp < 0x80) {
		*d++ = (char) cp;
	} else if (cp < 0x800) {
		*d++ = (char) (0xC0 | (cp >> 6));
		*d++ = (char) (0x80 | (cp & 0x3F));
	} else if (cp < 0x10000) {
		*d++ = (char) (0xE0 | (cp >> 12));
		*d++ = (char) (0x80 | ((cp >> 6) & 0x3F));
		*d++ = (char) (0x80 | (cp & 0x3F));
	} else {
		*d++ = (char) (0xF0 | (cp >> 18));
		*d++ = (char) (0x80 | ((cp >> 12) & 0x3F));
		*d++ = (char) (0x80 | ((cp >> 6) & 0x3F));
		*d++ = (char) (0x80 | (cp & 0x3F));
	}
	return d;
}

/* The character a one-letter escape (\" \\ \/ \b \f \n \r \t) stands
 * for; 0 for any other letter. */
static char
escape_char(unsigned char c)
{
	switch (c) {
	case '"':
	case '\\':
	case '/':
		return (char) c;
	case 'b':
		return '\b';
	case 'f':
		return '\f';
	case 'n':
		return '\n';
	case 'r':
		return '\r';
	case 't':
		return '\t';
	default:
		return 0;
	}
}

/* The \uXXXX escape at p (a surrogate pair as one code point) written to
 * *d as UTF-8; returns the byte after it, NULL when it is bad. */
static const unsigned char *
unescape_u(const unsigned char *p, const unsigned char *end, char **d)
{
	uint32_t cp;
	uint32_t lo;

	if (end - p < 6 || !eb__hex4(p + 2, &cp)) {
		return NULL;
	}
	if (cp >= 0xD800 && cp <= 0xDBFF) {
		if (end - p < 12 || p[6] != '\\' || p[7] != 'u' ||
		    !eb__hex4(p + 8, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
			return NULL;
		}
		cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
		p += 6;
	} else if (cp >= 0xDC00 && cp <= 0xDFFF) {
		return NULL;
	}
	*d = put_utf8(*d, cp);
	return p + 6;
}

/* The text between quotes [p, end) unescaped into d (room for end - p + 1
 * bytes: an escape never decodes longer than it is written). 0: bad. */
static int
unescape(const unsigned char *p, const unsigned char *end, char *d)
{
	while (p < end) {
		char c;

		if (*p != '\\') {
			*d++ = (char) *p++;
			continue;
		}
		if (end - p < 2) {
			return 0;
		}
		if (p[1] == 'u') {
			if ((p = unescape_u(p, end, &d)) == NULL) {
				return 0;
			}
			continue;
		}
		if ((c = escape_char(p[1])) == 0) {
			return 0;
		}
		*d++ = c;
		p += 2;
	}
	*d = '\0';
	return 1;
}

/* 1 when the key text [p, end) (escaped when esc) equals key. */
static int
key_is(const unsigned char *p, const unsigned char *end, int esc,
    const char *key, size_t klen)
{
	char  small[128];
	char *d = small;
	int   eq;

	if (!esc) {
		return (size_t) (end - p) == klen && memcmp(p, key, klen) == 0;
	}
	if ((size_t) (end - p) >= sizeof(small)) {
		d = eb__malloc((size_t) (end - p) + 1);
	}
	eq = unescape(p, end, d) && strcmp(d, key) == 0;
	if (d != small) {
		free(d);
	}
	return eq;
}

/* An integer token as jansson reads it, printed back; NULL when it is not
 * an integer or out of json_int_t range (jansson refuses the body then). */
static const char *
int_text(const unsigned char *p, const unsigned char *end, char *tmp, size_t n)
{
	const unsigned char *q;
	char                 num[32];
	long long            v;
	char                *e;

	for (q = p; q < end; q++) {
		if (*q == '.' || *q == 'e' || *q == 'E') {
			return NULL;
		}
	}
	if ((size_t) (end - p) >= sizeof(num)) {
		return NULL;
	}
	memcpy(num, p, (size_t) (end - p));
	num[end - p] = '\0';
	errno = 0;
	v = strtoll(num, &e, 10);
	if (errno != 0 || *e != '\0' || e == num) {
		return NULL;
	}
	(void) snprintf(tmp, n, "%lld", v);
	return tmp;
}

/* Finds the value of key in the top-level object at s: [*vp, *ve) is the
 * value as written (the last duplicate wins, as in jansson), *vesc whether
 * it is a string with escapes. 0 when the body is no object, is malformed,
 * or has no such key. */
static int
find_value(jscan *s, const char *key, const unsigned char **vp,
    const unsigned char **ve, int *vesc)
{
	size_t klen = strlen(key);

	*vp = NULL;
	js_ws(s);
	if (s->p >= s->end || *s->p != '{') {
		return 0;
	}
	s->p++;
	js_ws(s);
	if (s->p < s->end && *s->p == '}') {
		return 0;
	}
	for (;;) {
		const unsigned char *kp;
		int                  esc;
		int                  match;

		js_ws(s);
		if (s->p >= s->end || *s->p != '"') {
			return 0;
		}
		kp = s->p + 1;
		if (!js_string(s, &esc)) {
			return 0;
		}
		match = key_is(kp, s->p - 1, esc, key, klen);
		js_ws(s);
		if (s->p >= s->end || *s->p != ':') {
			return 0;
		}
		s->p++;
		js_ws(s);
		kp = s->p;
		if (s->p < s->end && *s->p == '"') {
			if (!js_string(s, &esc)) {
				return 0;
			}
		} else if (!js_skip(s)) {
			return 0;
		}
		if (match) {
			*vp = kp;
			*ve = s->p;
			*vesc = *kp == '"' && esc;
		}
		js_ws(s);
		if (s->p < s->end && *s->p == '}') {
			return *vp != NULL;
		}
		if (s->p >= s->end || *s->p != ',') {
			return 0;
		}
		s->p++;
	}
}

/* The string value [vp, ve) (quotes included) unescaped into tmp (n
 * bytes) or, when longer, into *heap. NULL when an escape is bad. */
static const char *
string_text(const unsigned char *vp, const unsigned char *ve, int vesc,
    char *tmp, size_t n, char **heap)
{
	size_t sl = (size_t) (ve - vp) - 2;
	char  *d = sl < n ? tmp : (*heap = eb__malloc(sl + 1));

	if (!vesc) {
		memcpy(d, vp + 1, sl);
		d[sl] = '\0';
	} else if (!unescape(vp + 1, ve - 1, d)) {
		free(*heap);
		*heap = NULL;
		return NULL;
	}
	return d;
}

const char *
eb__ingress_field(const char *body, size_t len, const char *key,
    eb__ingress_field_kind *kind, char *tmp, size_t n, char **heap)
{
	jscan                s = { (const unsigned char *) body,
		               (const unsigned char *) body + len };
	const unsigned char *vp;
	const unsigned char *ve = NULL;
	int                  vesc = 0;
	const char          *v;

	*kind = EB__FIELD_NONE;
	*heap = NULL;
	if (!find_value(&s, key, &vp, &ve, &vesc)) {
		return NULL;
	}
	if (*vp == '"') {
		if ((v = string_text(vp, ve, vesc, tmp, n, heap)) != NULL) {
			*kind = EB__FIELD_STRING;
		}
		return v;
	}
	if (*vp == 't' || *vp == 'f') {
		*kind = EB__FIELD_BOOL;
		return *vp == 't' ? "true" : "false";
	}
	if (*vp == '-' || (*vp >= '0' && *vp <= '9')) {
		if (int_text(vp, ve, tmp, n) == NULL) {
			return NULL;
		}
		*kind = EB__FIELD_INT;
		return tmp;
	}
	return NULL;
}
