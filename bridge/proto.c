/*
 * The bridge's frame codec: client frames (JSON objects) to eb__bframe, and
 * the server frames (message, err, pong) with Vert.x's key order, each as one
 * buffer holding the 4-byte length and the compact JSON.
 *
 * Decoding is lenient as BRIDGE-PROTOCOL.md section 1 asks (any key order,
 * pretty-printed JSON, "headers":null, "body":null). Values of the wrong type
 * never throw: a non-string address or type counts as missing, a non-string
 * replyAddress or a non-object headers is ignored (an empty address counts
 * as missing too), header values that are not
 * strings are stringified as Java's toString() would (true -> "true", 5 ->
 * "5", 1.5 -> "1.5", objects and arrays as compact JSON).
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/err.h>

#include "bridge/bridge_int.h"
#include "common/alloc.h"
#include "common/jsonstr.h"
#include "common/util.h"

static eb__bframe_type
bframe_type(const json_t *t)
{
	static const struct {
		const char     *name;
		eb__bframe_type type;
	} types[] = {
		{ "send", EB__BF_SEND },
		{ "publish", EB__BF_PUBLISH },
		{ "register", EB__BF_REGISTER },
		{ "unregister", EB__BF_UNREGISTER },
		{ "ping", EB__BF_PING },
	};
	size_t i;

	if (!json_is_string(t)) {
		return EB__BF_UNKNOWN; /* Vert.x defaults to "message" */
	}
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (strcmp(json_string_value(t), types[i].name) == 0) {
			return types[i].type;
		}
	}
	return EB__BF_UNKNOWN;
}

/* A header value as Java's toString() prints it; NULL for JSON null. */
static json_t *
header_string(const json_t *v)
{
	char   *s;
	json_t *out;

	switch (json_typeof(v)) {
	case JSON_STRING:
		return json_stringn(
		    json_string_value(v), json_string_length(v));
	case JSON_TRUE:
		return json_string("true");
	case JSON_FALSE:
		return json_string("false");
	case JSON_NULL:
		return NULL;
	default:
		s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		if (s == NULL) {
			return NULL;
		}
		out = json_string(s);
		free(s);
		return out;
	}
}

/* Consumes the option headers and copies the rest as strings. */
static void
bframe_headers(eb__bframe *f, json_t *h, int strip_token)
{
	void *it;

	/* The iterator API rather than json_object_foreach, whose expansion
	 * casts integers to pointers. */
	for (it = json_object_iter(h); it != NULL;
	     it = json_object_iter_next(h, it)) {
		const char *key = json_object_iter_key(it);
		json_t     *v = json_object_iter_value(it);
		json_t     *s;

		if (strcmp(key, "timeout") == 0) {
			if (json_is_integer(v) && json_integer_value(v) > 0) {
				f->timeout_ms =
				    (uint64_t) json_integer_value(v);
			} else if (json_is_real(v) && json_real_value(v) >= 1 &&
			           json_real_value(v) < 9.2e18) {
				f->timeout_ms = (uint64_t) json_real_value(v);
			}
			continue;
		}
		if (strcmp(key, "localOnly") == 0) {
			f->local_only =
			    json_is_true(v) ||
			    (json_is_string(v) &&
			        strcmp(json_string_value(v), "true") == 0);
			continue;
		}
		if (strcmp(key, "codecName") == 0) {
			continue; /* Vert.x codecs mean nothing here */
		}
		if (strcmp(key, "token") == 0) {
			f->token =
			    json_is_string(v) ? json_string_value(v) : NULL;
			if (strip_token) {
				continue; /* never forwarded */
			}
		}
		s = header_string(v);
		if (s == NULL) {
			continue;
		}
		if (f->headers == NULL) {
			f->headers = json_object();
		}
		(void) json_object_set_new(f->headers, key, s);
	}
}

/* An int failureCode: an integer, or an integral real (Java's getInteger
 * takes any Number); 1 when usable. */
static int
failure_code(const json_t *v, int *out)
{
	double d;

	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		if (i < INT32_MIN || i > INT32_MAX) {
			return 0;
		}
		*out = (int) i;
		return 1;
	}
	if (!json_is_real(v)) {
		return 0;
	}
	d = json_real_value(v);
	if (!(d >= (double) INT32_MIN && d <= (double) INT32_MAX) ||
	    d != (double) (int) d) {
		return 0;
	}
	*out = (int) d;
	return 1;
}

static int
bframe_parse_slow(const char *p, size_t n, int strip_token, eb__bframe *f)
{
	json_error_t jerr;
	json_t      *v;

	/* Without JSON_DECODE_ANY jansson still accepts a top-level array. */
	f->root = json_loadb(p, n, 0, &jerr);
	if (f->root == NULL) {
		return EB_EFRAME;
	}
	if (!json_is_object(f->root)) {
		json_decref(f->root);
		f->root = NULL;
		return EB_EFRAME;
	}
	f->type = bframe_type(json_object_get(f->root, "type"));
	v = json_object_get(f->root, "address");
	/* "" is no address either: the bus has no empty address. */
	f->address = json_is_string(v) && json_string_length(v) > 0
	                 ? json_string_value(v)
	                 : NULL;
	v = json_object_get(f->root, "replyAddress");
	f->reply_address = json_is_string(v) ? json_string_value(v) : NULL;
	v = json_object_get(f->root, "body");
	f->body = (v == NULL || json_is_null(v)) ? NULL : v;
	v = json_object_get(f->root, "headers");
	if (json_is_object(v)) {
		bframe_headers(f, v, strip_token);
	}
	v = json_object_get(f->root, "failureCode");
	if (failure_code(v, &f->failure_code)) {
		f->has_failure = 1;
		v = json_object_get(f->root, "message");
		if (json_is_string(v)) {
			f->failure_message = json_string_value(v);
		}
	}
	return 0;
}

/* ---- fast path: a scanner for the common, canonical frames ---- */

#define FAST_MAX_DEPTH 32

typedef struct fscan {
	const unsigned char *p;
	const unsigned char *end;
} fscan;

enum { FK_TYPE, FK_ADDRESS, FK_REPLY, FK_BODY, FK_HEADERS };

static int fs_value(fscan *s, int depth);

static void
fs_ws(fscan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' ||
	                            *s->p == '\n' || *s->p == '\r')) {
		s->p++;
	}
}

/* The length of the UTF-8 sequence at p (lead byte >= 0x80) when jansson
 * accepts it (no overlong forms, no surrogates, <= U+10FFFF), else 0. */
static size_t
fs_utf8(const unsigned char *p, const unsigned char *end)
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

#define FS_ONES  0x0101010101010101u
#define FS_HIGHS 0x8080808080808080u

/* Skips 8 bytes at a time while none is '"', '\\', a control or >= 0x80
 * (word-at-a-time; the byte loop finds the exact stop). */
static const unsigned char *
fs_plain_run(const unsigned char *p, const unsigned char *end)
{
	uint64_t w;
	uint64_t q;
	uint64_t b;

	while (end - p >= 8) {
		memcpy(&w, p, 8);
		q = w ^ (FS_ONES * '"');
		b = w ^ (FS_ONES * '\\');
		/* Per byte: < 0x20, == '"', == '\\', >= 0x80 (exact as a
		 * whole: a borrow only follows a byte that matched). */
		if ((((w - FS_ONES * 0x20u) & ~w) | ((q - FS_ONES) & ~q) |
		        ((b - FS_ONES) & ~b) | w) &
		    FS_HIGHS) {
			break;
		}
		p += 8;
	}
	return p;
}

/* A \uXXXX escape at s->p (a surrogate pair as two) as jansson accepts it
 * (no \u0000, no lone surrogate): past it and 1, else 0. */
static int
fs_uescape(fscan *s)
{
	uint32_t cp;
	uint32_t lo;

	if (s->end - s->p < 6 || !eb__hex4(s->p + 2, &cp) || cp == 0 ||
	    (cp >= 0xDC00u && cp <= 0xDFFFu)) {
		return 0;
	}
	if (cp >= 0xD800u && cp <= 0xDBFFu) {
		if (s->end - s->p < 12 || s->p[6] != '\\' || s->p[7] != 'u' ||
		    !eb__hex4(s->p + 8, &lo) || lo < 0xDC00u || lo > 0xDFFFu) {
			return 0;
		}
		s->p += 6;
	}
	s->p += 6;
	return 1;
}

/* 1: a byte that ends the plain run ('"', '\\', controls, >= 0x80). */
static const unsigned char fs_stop[256] = {
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

/* The escape at s->p (a backslash) as fs_string allows it for esc: past it
 * and 1, else 0. */
static int
fs_escape(fscan *s, int esc)
{
	unsigned c;

	if (!esc || s->end - s->p < 2) {
		return 0;
	}
	c = s->p[1];
	if (c == 'u' || c == '/') {
		/* Kept as written in a body value (esc 2); jansson never
		 * writes them. */
		if (esc != 2 || (c == 'u' && !fs_uescape(s))) {
			return 0;
		}
		if (c == '/') {
			s->p += 2;
		}
		return 1;
	}
	if (c != '"' && c != '\\' && c != 'b' && c != 'f' && c != 'n' &&
	    c != 'r' && c != 't') {
		return 0;
	}
	s->p += 2;
	return 1;
}

/*
 * A string at s->p whose text is its compact encoding: valid UTF-8, no
 * control characters, escapes (only when esc) limited to the ones jansson
 * writes itself (\" \\ \b \f \n \r \t), and with esc 2 (a body value,
 * passed on as written) also \/ and \uXXXX. str and len: the bytes between
 * the quotes. 0: not such a string (the caller falls back).
 */
static int
fs_string(fscan *s, int esc, const char **str, size_t *len)
{
	const unsigned char *start;
	const unsigned char *p;
	size_t               u;
	unsigned             c;

	if (s->p >= s->end || *s->p != '"') {
		return 0;
	}
	start = ++s->p;
	for (;;) {
		p = fs_plain_run(s->p, s->end);
		while (p < s->end && !fs_stop[*p]) {
			p++;
		}
		s->p = p;
		if (p >= s->end) {
			return 0;
		}
		c = *p;
		if (c == '"') {
			*str = (const char *) start;
			*len = (size_t) (p - start);
			s->p++;
			return 1;
		}
		if (c < 0x20) {
			return 0;
		}
		if (c == '\\') {
			if (!fs_escape(s, esc)) {
				return 0;
			}
		} else {
			if ((u = fs_utf8(p, s->end)) == 0) {
				return 0;
			}
			s->p += u;
		}
	}
}

static int
fs_digit(const fscan *s)
{
	return s->p < s->end && *s->p >= '0' && *s->p <= '9';
}

/* A JSON number, kept as written (0.1, 1e-7, 1.0E10, -0, integers of any
 * length): -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? and no digit or
 * letter after it. */
static int
fs_number(fscan *s)
{
	if (s->p < s->end && *s->p == '-') {
		s->p++;
	}
	if (!fs_digit(s)) {
		return 0;
	}
	if (*s->p == '0') {
		s->p++;
	} else {
		while (fs_digit(s)) {
			s->p++;
		}
	}
	if (s->p < s->end && *s->p == '.') {
		s->p++;
		if (!fs_digit(s)) {
			return 0;
		}
		while (fs_digit(s)) {
			s->p++;
		}
	}
	if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
		s->p++;
		if (s->p < s->end && (*s->p == '+' || *s->p == '-')) {
			s->p++;
		}
		if (!fs_digit(s)) {
			return 0;
		}
		while (fs_digit(s)) {
			s->p++;
		}
	}
	return !(
	    fs_digit(s) ||
	    (s->p < s->end && (*s->p == '.' || *s->p == 'e' || *s->p == 'E')));
}

/* 1 and past it when the next byte is c. */
static int
fs_ch(fscan *s, unsigned char c)
{
	if (s->p < s->end && *s->p == c) {
		s->p++;
		return 1;
	}
	return 0;
}

static int
fs_lit(fscan *s, const char *lit, size_t n)
{
	if ((size_t) (s->end - s->p) < n || memcmp(s->p, lit, n) != 0) {
		return 0;
	}
	s->p += n;
	return 1;
}

/* An object in a body: kept as written, so duplicate keys and any number
 * of members pass as they came (jansson reads the same bytes the same way
 * as the frame: the last duplicate wins). */
static int
fs_object(fscan *s, int depth)
{
	const char *key;
	size_t      len;

	if (depth > FAST_MAX_DEPTH) {
		return 0;
	}
	s->p++; /* '{' */
	if (s->p < s->end && *s->p == '}') {
		s->p++;
		return 1;
	}
	for (;;) {
		if (!fs_string(s, 2, &key, &len) || !fs_ch(s, ':') ||
		    !fs_value(s, depth)) {
			return 0;
		}
		if (fs_ch(s, '}')) {
			return 1;
		}
		if (!fs_ch(s, ',')) {
			return 0;
		}
	}
}

static int
fs_array(fscan *s, int depth)
{
	if (depth > FAST_MAX_DEPTH) {
		return 0;
	}
	s->p++; /* '[' */
	if (fs_ch(s, ']')) {
		return 1;
	}
	for (;;) {
		if (!fs_value(s, depth)) {
			return 0;
		}
		if (fs_ch(s, ']')) {
			return 1;
		}
		if (!fs_ch(s, ',')) {
			return 0;
		}
	}
}

/* A body value in compact form (no whitespace), taken as written. */
static int
fs_value(fscan *s, int depth)
{
	const char *str;
	size_t      len;

	if (s->p >= s->end) {
		return 0;
	}
	switch (*s->p) {
	case '"':
		return fs_string(s, 2, &str, &len);
	case '{':
		return fs_object(s, depth + 1);
	case '[':
		return fs_array(s, depth + 1);
	case 't':
		return fs_lit(s, "true", 4);
	case 'f':
		return fs_lit(s, "false", 5);
	case 'n':
		return fs_lit(s, "null", 4);
	default:
		return fs_number(s);
	}
}

static int
fast_key(const char *k, size_t n)
{
	static const struct {
		const char *name;
		size_t      len;
		int         key;
	} keys[] = {
		{ "type", 4, FK_TYPE },
		{ "address", 7, FK_ADDRESS },
		{ "replyAddress", 12, FK_REPLY },
		{ "body", 4, FK_BODY },
		{ "headers", 7, FK_HEADERS },
	};
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (keys[i].len == n && keys[i].name[0] == k[0] &&
		    memcmp(keys[i].name, k, n) == 0) {
			return keys[i].key;
		}
	}
	return -1;
}

/*
 * Finds the end of an object or array at s->p without judging it (jansson
 * does, on the span): strings with their escapes, brackets up to
 * FAST_MAX_DEPTH. 0 when no end is found.
 */
/* Moves s->p from a string's opening quote to its closing one. */
static int
fs_skip_string(fscan *s)
{
	s->p++;
	while (s->p < s->end && *s->p != '"') {
		if (*s->p == '\\' && s->end - s->p < 2) {
			return 0;
		}
		s->p += *s->p == '\\' ? 2 : 1;
	}
	return s->p < s->end;
}

static int
fs_skip(fscan *s)
{
	int depth = 0;

	do {
		if (s->p >= s->end) {
			return 0;
		}
		switch (*s->p) {
		case '"':
			if (!fs_skip_string(s)) {
				return 0;
			}
			break;
		case '{':
		case '[':
			if (++depth > FAST_MAX_DEPTH) {
				return 0;
			}
			break;
		case '}':
		case ']':
			depth--;
			break;
		default:
			break;
		}
		s->p++;
	} while (depth > 0);
	return 1;
}

/* headers: null or {} (nothing), or an object whose span goes to jansson
 * (span, len); anything else takes the slow path. */
static int
fs_headers(fscan *s, const char **span, size_t *len)
{
	const unsigned char *start = s->p;

	if (fs_lit(s, "null", 4)) {
		return 1;
	}
	if (!fs_ch(s, '{')) {
		return 0;
	}
	fs_ws(s);
	if (fs_ch(s, '}')) {
		return 1;
	}
	s->p = start;
	if (!fs_skip(s)) {
		return 0;
	}
	*span = (const char *) start;
	*len = (size_t) (s->p - start);
	return 1;
}

static eb__bframe_type
fast_type(const char *t, size_t n)
{
	static const struct {
		const char     *name;
		size_t          len;
		eb__bframe_type type;
	} types[] = {
		{ "send", 4, EB__BF_SEND },
		{ "publish", 7, EB__BF_PUBLISH },
		{ "register", 8, EB__BF_REGISTER },
		{ "unregister", 10, EB__BF_UNREGISTER },
		{ "ping", 4, EB__BF_PING },
	};
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (types[i].len == n && types[i].name[0] == t[0] &&
		    memcmp(types[i].name, t, n) == 0) {
			return types[i].type;
		}
	}
	return EB__BF_UNKNOWN;
}

/* Copies a string value into f->sbuf (NUL-terminated); NULL when full. */
static const char *
fast_keep(eb__bframe *f, size_t *used, const char *v, size_t n)
{
	char *dst;

	if (n >= sizeof(f->sbuf) - *used) {
		return NULL;
	}
	dst = f->sbuf + *used;
	memcpy(dst, v, n);
	dst[n] = '\0';
	*used += n + 1;
	return dst;
}

/* One member value of the top-level object into the span slots. */
static int
fast_member(fscan *s, int key, const char **v, size_t *vl)
{
	const unsigned char *start = s->p;

	switch (key) {
	case FK_TYPE:
	case FK_ADDRESS:
	case FK_REPLY:
		return fs_string(s, 0, &v[key], &vl[key]);
	case FK_BODY:
		if (!fs_value(s, 0)) {
			return 0;
		}
		v[key] = (const char *) start;
		vl[key] = (size_t) (s->p - start);
		return 1;
	default:
		return fs_headers(s, &v[key], &vl[key]);
	}
}

/* Fills f from the spans; 0 when the strings do not fit f->sbuf. */
static int
fast_fill(eb__bframe *f, const char **v, const size_t *vl)
{
	size_t used = 0;

	f->raw = 1;
	f->type = v[FK_TYPE] != NULL ? fast_type(v[FK_TYPE], vl[FK_TYPE])
	                             : EB__BF_UNKNOWN;
	if (v[FK_ADDRESS] != NULL && vl[FK_ADDRESS] > 0 &&
	    (f->address = fast_keep(f, &used, v[FK_ADDRESS], vl[FK_ADDRESS])) ==
	        NULL) {
		return 0;
	}
	if (v[FK_REPLY] != NULL && (f->reply_address = fast_keep(f, &used,
	                                v[FK_REPLY], vl[FK_REPLY])) == NULL) {
		return 0;
	}
	if (v[FK_BODY] != NULL &&
	    !(vl[FK_BODY] == 4 && memcmp(v[FK_BODY], "null", 4) == 0)) {
		f->body_raw = v[FK_BODY];
		f->body_raw_len = vl[FK_BODY];
	}
	return 1;
}

/* Headers with content: parsed by jansson alone (the rest of the frame
 * was checked), then handled as on the slow path. 0: jansson refused. */
static int
fast_headers(eb__bframe *f, const char *span, size_t len, int strip_token)
{
	json_error_t jerr;

	f->hroot = json_loadb(span, len, 0, &jerr);
	if (f->hroot == NULL) {
		return 0;
	}
	if (!json_is_object(f->hroot)) {
		json_decref(f->hroot);
		f->hroot = NULL;
		return 0;
	}
	bframe_headers(f, f->hroot, strip_token);
	return 1;
}

/* 1 when the frame was decoded by the scanner; 0: take the slow path. */
static int
bframe_parse_fast(const char *p, size_t n, int strip_token, eb__bframe *f)
{
	fscan s = { (const unsigned char *) p, (const unsigned char *) p + n };
	const char *v[FK_HEADERS + 1] = { NULL };
	size_t      vl[FK_HEADERS + 1] = { 0 };
	const char *k;
	size_t      kl;
	unsigned    seen = 0;
	int         key;

	fs_ws(&s);
	if (!fs_ch(&s, '{')) {
		return 0;
	}
	fs_ws(&s);
	if (!fs_ch(&s, '}')) {
		for (;;) {
			if (!fs_string(&s, 0, &k, &kl) ||
			    (key = fast_key(k, kl)) < 0 ||
			    (seen & (1u << key)) != 0) {
				return 0;
			}
			seen |= 1u << key;
			fs_ws(&s);
			if (!fs_ch(&s, ':')) {
				return 0;
			}
			fs_ws(&s);
			if (!fast_member(&s, key, v, vl)) {
				return 0;
			}
			fs_ws(&s);
			if (fs_ch(&s, '}')) {
				break;
			}
			if (!fs_ch(&s, ',')) {
				return 0;
			}
			fs_ws(&s);
		}
	}
	fs_ws(&s);
	if (s.p != s.end || !fast_fill(f, v, vl)) {
		return 0;
	}
	return v[FK_HEADERS] == NULL ||
	       fast_headers(f, v[FK_HEADERS], vl[FK_HEADERS], strip_token);
}

static void
bframe_reset(eb__bframe *f)
{
	memset(f, 0, offsetof(eb__bframe, sbuf));
	f->failure_message = "";
}

int
eb__bframe_parse_ex(
    const char *p, size_t n, int strip_token, int fast, eb__bframe *f)
{
	bframe_reset(f);
	if (n == 0) {
		return EB_EFRAME;
	}
	if (fast && bframe_parse_fast(p, n, strip_token, f)) {
		return 0;
	}
	bframe_reset(f);
	return bframe_parse_slow(p, n, strip_token, f);
}

int
eb__bframe_parse(const char *p, size_t n, int strip_token, eb__bframe *f)
{
	return eb__bframe_parse_ex(p, n, strip_token, 1, f);
}

void
eb__bframe_free(eb__bframe *f)
{
	json_decref(f->headers);
	json_decref(f->hroot);
	json_decref(f->root);
	bframe_reset(f);
}

/* ---- outgoing ---- */

/* Appends j as one frame (header + compact JSON) to out. */
static void
bout_json(eb__buf *out, json_t *j)
{
	const size_t flags = JSON_COMPACT | JSON_ENCODE_ANY;
	size_t       n = json_dumpb(j, NULL, 0, flags);
	char        *dst = eb__buf_reserve(out, n + EB_FRAME_HDR);

	/* Our own frames are valid UTF-8 objects far below 2 GiB. */
	if (n == 0 || n > INT32_MAX ||
	    json_dumpb(j, dst + EB_FRAME_HDR, n, flags) != n) {
		abort();
	}
	eb__frame_put_len((unsigned char *) dst, (uint32_t) n);
	out->len += n + EB_FRAME_HDR;
	json_decref(j);
}

void
eb__bout_err_buf(eb__buf *out, const char *message)
{
	json_t *j = json_object();

	(void) json_object_set_new(j, "type", json_string("err"));
	(void) json_object_set_new(j, "message", json_string(message));
	bout_json(out, j);
}

void
eb__bout_pong_buf(eb__buf *out)
{
	static const char pong[] = "\0\0\0\x0f{\"type\":\"pong\"}";

	eb__buf_append(out, pong, sizeof(pong) - 1);
}

void
eb__bout_failure_buf(eb__buf *out, const char *token, const char *source,
    int code, const char *type, const char *message)
{
	json_t *j = json_object();

	(void) json_object_set_new(j, "type", json_string("err"));
	(void) json_object_set_new(j, "address", json_string(token));
	(void) json_object_set_new(j, "sourceAddress", json_string(source));
	(void) json_object_set_new(j, "failureCode", json_integer(code));
	(void) json_object_set_new(j, "failureType", json_string(type));
	(void) json_object_set_new(
	    j, "message", json_string(message != NULL ? message : ""));
	bout_json(out, j);
}

/* Appends the compact encoding of j to b. */
static void
sb_json(eb__buf *b, const json_t *j)
{
	const size_t flags = JSON_COMPACT | JSON_ENCODE_ANY;
	size_t       n = json_dumpb(j, NULL, 0, flags);
	char        *dst = eb__buf_reserve(b, n);

	if (json_dumpb(j, dst, n, flags) != n) {
		abort();
	}
	b->len += n;
}

static void
sb_str(eb__buf *b, const char *s)
{
	eb__buf_append(b, s, strlen(s));
}

/* 1 when s is printable ASCII without '"' and '\\': its JSON encoding is
 * the bytes themselves in quotes. */
static int
plain_ascii(const char *s, size_t *n)
{
	const unsigned char *p = (const unsigned char *) s;

	for (; *p != '\0'; p++) {
		if (*p < 0x20 || *p >= 0x7f || *p == '"' || *p == '\\') {
			return 0;
		}
	}
	*n = (size_t) (p - (const unsigned char *) s);
	return 1;
}

static void
sb_string(eb__buf *b, const char *s)
{
	json_t *j;
	size_t  n;
	char   *dst;

	if (plain_ascii(s, &n)) {
		dst = eb__buf_reserve(b, n + 2);
		dst[0] = '"';
		memcpy(dst + 1, s, n);
		dst[n + 1] = '"';
		b->len += n + 2;
		return;
	}
	j = json_string(s);

	if (j == NULL) {
		/* Not UTF-8 (addresses come from JSON, so never). */
		j = json_string("");
	}
	sb_json(b, j);
	json_decref(j);
}

/* Appends s of length n to *dst and advances it. */
static void
put(char **dst, const char *s, size_t n)
{
	memcpy(*dst, s, n);
	*dst += n;
}

#define PUT_LIT(dst, lit) put(dst, lit, sizeof(lit) - 1)

/*
 * The common message frame in one reservation: plain ASCII addresses, no
 * headers. 0 when it does not apply (the general path then runs).
 */
static int
bout_message_plain(eb__buf *b, const char *address, const char *reply_address,
    const json_t *headers, const char *body_bytes, size_t body_len, int send)
{
	static const char pre[] = "{\"type\":\"message\",\"address\":\"";
	static const char mid[] = "\",\"replyAddress\":\"";
	static const char hdr[] = "\",\"headers\":{}";
	static const char bod[] = ",\"body\":";
	static const char snd[] = ",\"send\":true}";
	static const char pub[] = ",\"send\":false}";
	size_t            alen;
	size_t            rlen = 0;
	size_t            total;
	char             *dst;

	if ((headers != NULL && json_object_size(headers) > 0) ||
	    !plain_ascii(address, &alen) ||
	    (reply_address != NULL && !plain_ascii(reply_address, &rlen))) {
		return 0;
	}
	if (body_bytes == NULL ||
	    (body_len == 4 && memcmp(body_bytes, "null", 4) == 0)) {
		body_len = 0;
	}
	total = (sizeof(pre) - 1) + alen +
	        (reply_address != NULL ? (sizeof(mid) - 1) + rlen : 0) +
	        (sizeof(hdr) - 1) + (body_len > 0 ? (sizeof(bod) - 1) : 0) +
	        body_len + (send ? sizeof(snd) : sizeof(pub)) - 1;
	if (total > INT32_MAX) {
		return 0;
	}
	dst = eb__buf_reserve(b, EB_FRAME_HDR + total);
	b->len += EB_FRAME_HDR + total;
	eb__frame_put_len((unsigned char *) dst, (uint32_t) total);
	dst += EB_FRAME_HDR;
	PUT_LIT(&dst, pre);
	put(&dst, address, alen);
	if (reply_address != NULL) {
		PUT_LIT(&dst, mid);
		put(&dst, reply_address, rlen);
	}
	PUT_LIT(&dst, hdr);
	if (body_len > 0) {
		PUT_LIT(&dst, bod);
		put(&dst, body_bytes, body_len);
	}
	if (send) {
		PUT_LIT(&dst, snd);
	} else {
		PUT_LIT(&dst, pub);
	}
	return 1;
}

void
eb__bout_message_buf(eb__buf *b, const char *address, const char *reply_address,
    const json_t *headers, const char *body_bytes, size_t body_len, int send)
{
	size_t start;
	size_t payload;

	if (bout_message_plain(b, address, reply_address, headers, body_bytes,
	        body_len, send)) {
		return;
	}
	/* Offsets from off: a reserve may compact the buffer. */
	start = b->len - b->off;
	eb__buf_append(b, "\0\0\0\0", EB_FRAME_HDR);
	sb_str(b, "{\"type\":\"message\",\"address\":");
	sb_string(b, address);
	if (reply_address != NULL) {
		sb_str(b, ",\"replyAddress\":");
		sb_string(b, reply_address);
	}
	if (headers != NULL && json_is_object(headers) &&
	    json_object_size(headers) > 0) {
		sb_str(b, ",\"headers\":");
		if (eb__jsonstr_put_object(b, headers) != 0) {
			sb_json(b, headers); /* not all strings */
		}
	} else {
		sb_str(b, ",\"headers\":{}");
	}
	if (body_bytes != NULL && body_len > 0 &&
	    !(body_len == 4 && memcmp(body_bytes, "null", 4) == 0)) {
		sb_str(b, ",\"body\":");
		eb__buf_append(b, body_bytes, body_len);
	}
	sb_str(b, send ? ",\"send\":true}" : ",\"send\":false}");
	payload = b->len - b->off - start - EB_FRAME_HDR;
	eb__frame_put_len(
	    (unsigned char *) b->data + b->off + start, (uint32_t) payload);
}
