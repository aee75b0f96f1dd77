/*
 * JSON strings and objects of strings, written and read (common/jsonstr.h).
 */
#include "common/jsonstr.h"

#include <stdint.h>
#include <string.h>

#include <uv.h>

#include "common/jsonrun.h"

/* The escape of each byte, 0 when it is written as it is: the two-character
 * escapes jansson uses, 'u' for the other control characters. */
static const char esc_tab[256] = {
	/* clang-format off */
	'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'b', 't', 'n', 'u', 'f', 'r', 'u', 'u',
	'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u',
	0, 0, '"', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, '\\', 0, 0, 0,
	/* clang-format on */
};

static inline char
esc_of(unsigned char c)
{
	return esc_tab[c];
}

/* The length of s's encoding without the quotes. */
static size_t
encoded_len(const unsigned char *s, size_t n)
{
	size_t out = n;
	size_t i;

	for (i = 0; i < n; i++) {
		char e = esc_of(s[i]);

		if (e == 'u') {
			out += 5; /* \u00XX for one byte */
		} else if (e != 0) {
			out += 1;
		}
	}
	return out;
}

/* Writes s (n bytes) quoted at d, which has room for its encoding, in one
 * pass: runs of plain bytes copied whole, escapes between them. Returns
 * the end. */
static char *
put_str(char *d, const char *s, size_t n)
{
	static const char    hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *) s;
	const unsigned char *end = p + n;
	const unsigned char *run = p;

	*d++ = '"';
	for (; p < end; p++) {
		char e = esc_of(*p);

		if (e == 0) {
			continue;
		}
		memcpy(d, run, (size_t) (p - run));
		d += p - run;
		run = p + 1;
		d[0] = '\\';
		if (e != 'u') {
			d[1] = e;
			d += 2;
		} else {
			d[1] = 'u';
			d[2] = '0';
			d[3] = '0';
			d[4] = hex[*p >> 4];
			d[5] = hex[*p & 0xf];
			d += 6;
		}
	}
	memcpy(d, run, (size_t) (end - run));
	d += end - run;
	*d++ = '"';
	return d;
}

int
eb__jsonstr_put_object(eb__buf *b, const json_t *obj)
{
	json_t *o = eb__json_unconst(obj);
	void   *it;
	size_t  total = 2; /* the braces */
	char   *dst;
	char   *d;

	if (!json_is_object(obj)) {
		return UV_EINVAL;
	}
	/* One pass for the size (and the check), then one reservation. */
	for (it = json_object_iter(o); it != NULL;
	     it = json_object_iter_next(o, it)) {
		const char   *k = json_object_iter_key(it);
		const json_t *v = json_object_iter_value(it);

		if (!json_is_string(v)) {
			return UV_EINVAL;
		}
		total +=
		    encoded_len((const unsigned char *) k, strlen(k)) +
		    encoded_len((const unsigned char *) json_string_value(v),
		        json_string_length(v)) +
		    6; /* 4 quotes, ':' and ',' (one too many) */
	}
	d = dst = eb__buf_reserve(b, total);
	*d++ = '{';
	for (it = json_object_iter(o); it != NULL;
	     it = json_object_iter_next(o, it)) {
		const char   *k = json_object_iter_key(it);
		const json_t *v = json_object_iter_value(it);

		if (d != dst + 1) {
			*d++ = ',';
		}
		d = put_str(d, k, strlen(k));
		*d++ = ':';
		d = put_str(d, json_string_value(v), json_string_length(v));
	}
	*d++ = '}';
	b->len += (size_t) (d - dst);
	return 0;
}

/* s quoted at d as it is (its encoding is itself); returns the end. */
static char *
put_plain(char *d, const char *s, size_t n)
{
	*d++ = '"';
	memcpy(d, s, n);
	d += n;
	*d++ = '"';
	return d;
}

void
eb__jsonstr_put_member(
    eb__buf *b, int first, const char *k, size_t kn, const char *v, size_t vn)
{
	size_t ke = encoded_len((const unsigned char *) k, kn);
	size_t ve = encoded_len((const unsigned char *) v, vn);
	char  *dst = eb__buf_reserve(b, ke + ve + 6);
	char  *d = dst;

	if (!first) {
		*d++ = ',';
	}
	/* A string whose encoding is as long as it has nothing to escape. */
	d = ke == kn ? put_plain(d, k, kn) : put_str(d, k, kn);
	*d++ = ':';
	d = ve == vn ? put_plain(d, v, vn) : put_str(d, v, vn);
	b->len += (size_t) (d - dst);
}

void
eb__jsonstr_put_plain_member(
    eb__buf *b, int first, const char *k, size_t kn, const char *v, size_t vn)
{
	char *dst = eb__buf_reserve(b, kn + vn + 6);
	char *d = dst;

	if (!first) {
		*d++ = ',';
	}
	d = put_plain(d, k, kn);
	*d++ = ':';
	d = put_plain(d, v, vn);
	b->len += (size_t) (d - dst);
}

/* The end of a plain string's body starting at p (after its '"'), at its
 * closing '"'; NULL when a byte outside printable ASCII, a '\\' or the
 * end comes first. */
static const char *
plain_body_end(const char *p, const char *end)
{
	/* Past the run of bytes that are surely plain (common/jsonrun.h;
	 * 0x7f stops it too), then byte by byte. */
	p = (const char *) eb__json_plain_run(
	    (const unsigned char *) p, (const unsigned char *) end, 1);
	for (; p < end; p++) {
		unsigned char c = (unsigned char) *p;

		if (c == '"') {
			return p;
		}
		if (c < 0x20 || c > 0x7e || c == '\\') {
			return NULL;
		}
	}
	return NULL;
}

/* Adds the pair at p ("key":"value", p at the key's '"') to o; returns
 * the byte after the value's closing '"', or NULL when the pair is not
 * plain or the key is already there. */
static const char *
add_plain_pair(json_t *o, const char *p, const char *end)
{
	const char *k = p + 1;
	const char *ke;
	const char *v;
	const char *ve;

	if (*p != '"' || (ke = plain_body_end(k, end)) == NULL) {
		return NULL;
	}
	/* ':' '"' and at least the value's closing '"' */
	if (end - ke < 4 || ke[1] != ':' || ke[2] != '"') {
		return NULL;
	}
	v = ke + 3;
	if ((ve = plain_body_end(v, end)) == NULL ||
	    json_object_getn(o, k, (size_t) (ke - k)) != NULL ||
	    json_object_setn_new_nocheck(o, k, (size_t) (ke - k),
	        json_stringn_nocheck(v, (size_t) (ve - v))) != 0) {
		return NULL;
	}
	return ve + 1;
}

json_t *
eb__jsonstr_parse_plain_object(const char *p, size_t n)
{
	const char *end = p + n;
	json_t     *o;

	if (n < 2 || p[0] != '{' || end[-1] != '}' ||
	    (o = json_object()) == NULL) {
		return NULL;
	}
	if (n == 2) {
		return o; /* {} */
	}
	/* Pairs separated by ',' and the last one followed by the final '}'
	 * (which end[-1] is): p stays below end - 1 until then. */
	for (p++;;) {
		if ((p = add_plain_pair(o, p, end)) == NULL) {
			break;
		}
		if (p == end - 1) {
			return o;
		}
		if (*p != ',') {
			break;
		}
		p++;
	}
	json_decref(o);
	return NULL;
}

/* At most this many keys are compared pairwise by the check below; an
 * object with more is not called plain (the caller parses it). */
#define PLAIN_KEYS_MAX 16

/* The pair at p, as add_plain_pair reads it, without adding it: its key in
 * *k, *kn; the byte after the value's closing '"', or NULL. */
static const char *
plain_pair(const char *p, const char *end, const char **k, size_t *kn)
{
	const char *ke;
	const char *ve;

	if (*p != '"' || (ke = plain_body_end(p + 1, end)) == NULL) {
		return NULL;
	}
	if (end - ke < 4 || ke[1] != ':' || ke[2] != '"' ||
	    (ve = plain_body_end(ke + 3, end)) == NULL) {
		return NULL;
	}
	*k = p + 1;
	*kn = (size_t) (ke - *k);
	return ve + 1;
}

int
eb__jsonstr_plain_object_check(const char *p, size_t n)
{
	const char *end = p + n;
	const char *keys[PLAIN_KEYS_MAX];
	size_t      lens[PLAIN_KEYS_MAX];
	size_t      nk = 0;
	size_t      i;

	if (n < 2 || p[0] != '{' || end[-1] != '}') {
		return 0;
	}
	if (n == 2) {
		return 1;
	}
	for (p++; nk < PLAIN_KEYS_MAX; p++) {
		if ((p = plain_pair(p, end, &keys[nk], &lens[nk])) == NULL) {
			return 0;
		}
		for (i = 0; i < nk; i++) {
			if (lens[i] == lens[nk] &&
			    memcmp(keys[i], keys[nk], lens[i]) == 0) {
				return 0;
			}
		}
		nk++;
		if (p == end - 1) {
			return 1;
		}
		if (*p != ',') {
			return 0;
		}
	}
	return 0;
}
