/*
 * Comment stripping and the position index of a JSON config file.
 *
 * jansson reports positions only for syntax errors, yet every schema error
 * must name "file:line:col". So before jansson parses the text, a small
 * scanner walks it once and records, for each object member and array
 * element, its key path ("ingress.routes[2].to") and the line and column of
 * its key and value. The scanner also finds the first duplicate key, with
 * its path, which jansson's JSON_REJECT_DUPLICATES error lacks.
 *
 * Columns count characters, not bytes (UTF-8 continuation bytes are not
 * counted), and a tab is one column: the same rule jansson uses, so both
 * kinds of position agree. Loop-free; any thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "conf/conf_int.h"

#define SCAN_MAX_DEPTH 64

typedef struct scanner {
	const char      *s;
	size_t           len;
	size_t           i;
	int              line, col;
	int              failed; /* syntax error or duplicate: stop */
	eb__conf_posidx *idx;
} scanner;

static int
is_cont_byte(unsigned char c)
{
	return (c & 0xC0u) == 0x80u;
}

/*
 * Advances past one byte, keeping line:col as the position of s[i]. Bytes
 * of one UTF-8 sequence share the column of its first byte.
 */
static void
pos_advance(const char *s, size_t *i, int *line, int *col)
{
	unsigned char c = (unsigned char) s[*i];

	(*i)++;
	if (c == '\n') {
		(*line)++;
		*col = 1;
	} else if (!is_cont_byte(c)) {
		(*col)++;
	}
}

/* Blanks s[from..to) except newlines (which keep the line count true). */
static void
blank(char *s, size_t from, size_t to)
{
	size_t k;

	for (k = from; k < to; k++) {
		if (s[k] != '\n') {
			s[k] = ' ';
		}
	}
}

int
eb__conf_strip_comments(char *text, size_t len, int *line, int *col)
{
	size_t i = 0;
	int    ln = 1, cl = 1;
	int    in_str = 0;

	while (i < len) {
		char c = text[i];

		if (in_str) {
			if (c == '\\' && i + 1 < len) {
				pos_advance(text, &i, &ln, &cl);
			} else if (c == '"' || c == '\n') {
				in_str = 0; /* a newline: jansson reports it */
			}
			pos_advance(text, &i, &ln, &cl);
			continue;
		}
		if (c == '"') {
			in_str = 1;
		} else if (c == '/' && i + 1 < len && text[i + 1] == '/') {
			size_t start = i;

			while (i < len && text[i] != '\n') {
				pos_advance(text, &i, &ln, &cl);
			}
			blank(text, start, i);
			continue;
		} else if (c == '/' && i + 1 < len && text[i + 1] == '*') {
			size_t start = i;
			int    sl = ln, sc = cl;

			pos_advance(text, &i, &ln, &cl);
			pos_advance(text, &i, &ln, &cl);
			while (i + 1 < len &&
			       !(text[i] == '*' && text[i + 1] == '/')) {
				pos_advance(text, &i, &ln, &cl);
			}
			if (i + 1 >= len) {
				*line = sl;
				*col = sc;
				return -1;
			}
			pos_advance(text, &i, &ln, &cl);
			pos_advance(text, &i, &ln, &cl);
			blank(text, start, i);
			continue;
		}
		pos_advance(text, &i, &ln, &cl);
	}
	return 0;
}

/* ---- the scanner ------------------------------------------------------ */

static int
sc_peek(const scanner *sc)
{
	return sc->i < sc->len ? (unsigned char) sc->s[sc->i] : -1;
}

static void
sc_adv(scanner *sc)
{
	pos_advance(sc->s, &sc->i, &sc->line, &sc->col);
}

static void
sc_ws(scanner *sc)
{
	int c;

	while (
	    (c = sc_peek(sc)) == ' ' || c == '\t' || c == '\n' || c == '\r') {
		sc_adv(sc);
	}
}

static char *
path_join(const char *parent, const char *key)
{
	size_t n = strlen(parent) + strlen(key) + 2;
	char  *p = eb__malloc(n);

	if (parent[0] == '\0') {
		(void) snprintf(p, n, "%s", key);
	} else {
		(void) snprintf(p, n, "%s.%s", parent, key);
	}
	return p;
}

static char *
path_index(const char *parent, size_t k)
{
	size_t n = strlen(parent) + 24;
	char  *p = eb__malloc(n);

	(void) snprintf(p, n, "%s[%zu]", parent, k);
	return p;
}

/* Takes ownership of path. */
static void
idx_add(eb__conf_posidx *idx, char *path, int kl, int kc, int vl, int vc)
{
	eb__conf_pos *p;

	if (idx->n == idx->cap) {
		idx->cap = idx->cap ? idx->cap * 2 : 32;
		idx->v = eb__realloc(idx->v, idx->cap * sizeof(*idx->v));
	}
	p = &idx->v[idx->n++];
	p->path = path;
	p->kline = kl;
	p->kcol = kc;
	p->vline = vl;
	p->vcol = vc;
}

static int
hex4(const scanner *sc, size_t at, unsigned *out)
{
	unsigned v = 0;
	size_t   k;

	if (at + 4 > sc->len) {
		return -1;
	}
	for (k = at; k < at + 4; k++) {
		char c = sc->s[k];

		v <<= 4;
		if (c >= '0' && c <= '9') {
			v |= (unsigned) (c - '0');
		} else if (c >= 'a' && c <= 'f') {
			v |= (unsigned) (c - 'a' + 10);
		} else if (c >= 'A' && c <= 'F') {
			v |= (unsigned) (c - 'A' + 10);
		} else {
			return -1;
		}
	}
	*out = v;
	return 0;
}

static size_t
utf8_put(unsigned cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char) cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char) (0xC0 | (cp >> 6));
		out[1] = (char) (0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char) (0xE0 | (cp >> 12));
		out[1] = (char) (0x80 | ((cp >> 6) & 0x3F));
		out[2] = (char) (0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char) (0xF0 | (cp >> 18));
	out[1] = (char) (0x80 | ((cp >> 12) & 0x3F));
	out[2] = (char) (0x80 | ((cp >> 6) & 0x3F));
	out[3] = (char) (0x80 | (cp & 0x3F));
	return 4;
}

/*
 * Decodes the escape after a backslash (sc at the escape letter) into out;
 * returns the bytes written, or 0 on a syntax error. The decoded key must
 * equal jansson's, or position lookups by path would miss it.
 */
static size_t
sc_escape(scanner *sc, char *out)
{
	static const char from[] = "\"\\/bfnrtu", to[] = "\"\\/\b\f\n\r\t";
	const char       *p = strchr(from, sc_peek(sc));
	unsigned          cp, lo;
	int               k;

	if (sc_peek(sc) <= 0 || p == NULL) {
		return 0;
	}
	if (*p != 'u') {
		out[0] = to[p - from];
		sc_adv(sc);
		return 1;
	}
	if (hex4(sc, sc->i + 1, &cp) != 0) {
		return 0;
	}
	for (k = 0; k < 5; k++) {
		sc_adv(sc); /* u and 4 hex digits */
	}
	if (cp >= 0xD800 && cp < 0xDC00 && sc_peek(sc) == '\\' &&
	    sc->i + 1 < sc->len && sc->s[sc->i + 1] == 'u' &&
	    hex4(sc, sc->i + 2, &lo) == 0 && lo >= 0xDC00 && lo < 0xE000) {
		for (k = 0; k < 6; k++) {
			sc_adv(sc);
		}
		cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
	}
	return utf8_put(cp, out);
}

/* Reads a string token and returns it decoded, or NULL on a syntax error. */
static char *
sc_string(scanner *sc)
{
	size_t cap = 16, n = 0, k;
	char  *out = eb__malloc(cap);
	int    c;

	sc_adv(sc); /* the opening quote */
	while ((c = sc_peek(sc)) != '"') {
		if (c < 0x20) { /* EOF (-1) or a raw control character */
			free(out);
			return NULL;
		}
		if (n + 8 >= cap) {
			cap *= 2;
			out = eb__realloc(out, cap);
		}
		if (c == '\\') {
			sc_adv(sc);
			if ((k = sc_escape(sc, out + n)) == 0) {
				free(out);
				return NULL;
			}
			n += k;
			continue;
		}
		out[n++] = (char) c;
		sc_adv(sc);
	}
	sc_adv(sc); /* the closing quote */
	out[n] = '\0';
	return out;
}

static void sc_value(scanner *sc, const char *path, int depth);

static void
sc_object(scanner *sc, const char *path, int depth)
{
	json_t *seen = json_object(); /* used as a set of member names */

	sc_adv(sc);
	sc_ws(sc);
	if (sc_peek(sc) == '}') {
		sc_adv(sc);
		json_decref(seen);
		return;
	}
	while (!sc->failed) {
		int   kl, kc;
		char *key, *child;

		sc_ws(sc);
		kl = sc->line;
		kc = sc->col;
		if (sc_peek(sc) != '"' || (key = sc_string(sc)) == NULL) {
			sc->failed = 1;
			break;
		}
		sc_ws(sc);
		if (sc_peek(sc) != ':') {
			free(key);
			sc->failed = 1;
			break;
		}
		sc_adv(sc);
		sc_ws(sc);
		child = path_join(path, key);
		if (json_object_get(seen, key) != NULL) {
			sc->idx->dup_path = child;
			sc->idx->dup_line = kl;
			sc->idx->dup_col = kc;
			sc->failed = 1;
			free(key);
			break;
		}
		(void) json_object_set_new(seen, key, json_true());
		free(key);
		idx_add(sc->idx, child, kl, kc, sc->line, sc->col);
		sc_value(sc, child, depth + 1);
		sc_ws(sc);
		if (sc_peek(sc) == ',') {
			sc_adv(sc);
		} else if (sc_peek(sc) == '}') {
			sc_adv(sc);
			break;
		} else {
			sc->failed = 1;
		}
	}
	json_decref(seen);
}

static void
sc_array(scanner *sc, const char *path, int depth)
{
	size_t k;

	sc_adv(sc);
	sc_ws(sc);
	if (sc_peek(sc) == ']') {
		sc_adv(sc);
		return;
	}
	for (k = 0; !sc->failed; k++) {
		char *child;

		sc_ws(sc);
		child = path_index(path, k);
		idx_add(sc->idx, child, sc->line, sc->col, sc->line, sc->col);
		sc_value(sc, child, depth + 1);
		sc_ws(sc);
		if (sc_peek(sc) == ',') {
			sc_adv(sc);
		} else if (sc_peek(sc) == ']') {
			sc_adv(sc);
			break;
		} else {
			sc->failed = 1;
		}
	}
}

static void
sc_value(scanner *sc, const char *path, int depth)
{
	int    c = sc_peek(sc);
	size_t start = sc->i;

	if (sc->failed) {
		return;
	}
	if (depth > SCAN_MAX_DEPTH) {
		sc->failed = 1; /* positions deeper than this are not needed */
		return;
	}
	if (c == '{') {
		sc_object(sc, path, depth);
	} else if (c == '[') {
		sc_array(sc, path, depth);
	} else if (c == '"') {
		char *s = sc_string(sc);

		if (s == NULL) {
			sc->failed = 1;
		}
		free(s);
	} else {
		/* A number or a literal: jansson checks the exact form. */
		while ((c = sc_peek(sc)) >= 0 &&
		       (strchr("+-.", c) != NULL || (c >= '0' && c <= '9') ||
		           (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) {
			sc_adv(sc);
		}
		if (sc->i == start) {
			sc->failed = 1;
		}
	}
}

void
eb__conf_posidx_build(eb__conf_posidx *idx, const char *text, size_t len)
{
	scanner sc;

	memset(&sc, 0, sizeof(sc));
	sc.s = text;
	sc.len = len;
	sc.line = 1;
	sc.col = 1;
	sc.idx = idx;
	sc_ws(&sc);
	sc_value(&sc, "", 0);
}

const eb__conf_pos *
eb__conf_posidx_find(const eb__conf_posidx *idx, const char *path)
{
	size_t k;

	if (idx == NULL) {
		return NULL;
	}
	for (k = 0; k < idx->n; k++) {
		if (strcmp(idx->v[k].path, path) == 0) {
			return &idx->v[k];
		}
	}
	return NULL;
}

const eb__conf_pos *
eb__conf_posidx_before(const eb__conf_posidx *idx, int line, int col)
{
	const eb__conf_pos *best = NULL;
	size_t              k;

	for (k = 0; k < idx->n; k++) {
		const eb__conf_pos *p = &idx->v[k];

		if (p->kline < line || (p->kline == line && p->kcol <= col)) {
			best = p;
		}
	}
	return best;
}

void
eb__conf_posidx_free(eb__conf_posidx *idx)
{
	size_t k;

	for (k = 0; k < idx->n; k++) {
		free(idx->v[k].path);
	}
	free(idx->v);
	free(idx->dup_path);
	memset(idx, 0, sizeof(*idx));
}
