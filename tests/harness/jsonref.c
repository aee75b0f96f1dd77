/*
 * The differential check of the JSON scanner against jansson (jsonref.h).
 */
#include "tests/harness/jsonref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/jsonscan.h"
#include "common/jsonstr.h"

int
eb__jsonref_depth(const json_t *j)
{
	json_t *v = eb__json_unconst(j); /* iterators take no const */
	int     d = 0;
	int     c;
	size_t  i;
	void   *it;

	if (json_is_array(v)) {
		for (i = 0; i < json_array_size(v); i++) {
			c = eb__jsonref_depth(json_array_get(v, i));
			d = c > d ? c : d;
		}
		return d + 1;
	}
	if (json_is_object(v)) {
		for (it = json_object_iter(v); it != NULL;
		     it = json_object_iter_next(v, it)) {
			c = eb__jsonref_depth(json_object_iter_value(it));
			d = c > d ? c : d;
		}
		return d + 1;
	}
	return 0;
}

int
eb__jsonref_known_refusal(const char *text)
{
	return strstr(text, "too big") != NULL ||
	       strstr(text, "real number overflow") != NULL ||
	       strstr(text, "invalid Unicode") != NULL ||
	       strstr(text, "NUL byte in object key") != NULL;
}

static int
check_string(const char *p, size_t n, json_t *v, char *why, size_t why_len)
{
	eb__jscan   s;
	const char *str;
	size_t      len;
	int         esc;
	char       *out;
	ptrdiff_t   got;
	int         rv = 0;

	eb__jscan_init(&s, p, n, 1);
	eb__jscan_ws(&s);
	if (!eb__jscan_string(&s, &str, &len, &esc)) {
		(void) snprintf(why, why_len, "string not rescanned");
		return -1;
	}
	out = malloc(len + 1);
	if (out == NULL) {
		return 0;
	}
	got = eb__json_unescape(str, len, out);
	if (got < 0 || (size_t) got != json_string_length(v) ||
	    memcmp(out, json_string_value(v), (size_t) got) != 0) {
		(void) snprintf(why, why_len,
		    "unescape gives %td bytes, jansson %zu", got,
		    json_string_length(v));
		rv = -1;
	}
	free(out);
	return rv;
}

int
eb__jsonref_check(const char *p, size_t n, int max_depth, int *accepted,
    char *why, size_t why_len)
{
	eb__jscan    s;
	json_error_t jerr;
	json_t      *v;
	int          ok;
	int          rv = 0;

	eb__jscan_init(&s, p, n, max_depth);
	eb__jscan_ws(&s);
	ok = eb__jscan_value(&s, 0);
	if (ok) {
		eb__jscan_ws(&s);
		ok = s.p == s.end ? 1 : eb__jscan_fail(&s, "trailing bytes");
	}
	if (accepted != NULL) {
		*accepted = ok;
	}
	v = json_loadb(p, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (v == NULL) {
		if (ok && !eb__jsonref_known_refusal(jerr.text)) {
			(void) snprintf(why, why_len,
			    "scanner accepts, jansson refuses: %s", jerr.text);
			rv = -1;
		}
		return rv;
	}
	if (eb__jsonref_depth(v) > max_depth) {
		/* Refused for the depth, or first at a NUL byte outside a
		 * string (jansson's reader, see below, skips what the scanner
		 * refuses there; the depth it then sees is past that byte). */
		if (ok || (strcmp(s.why, "nested too deep") != 0 &&
		              !(s.p < s.end && *s.p == '\0'))) {
			(void) snprintf(why, why_len,
			    "depth %d > %d not refused as too deep",
			    eb__jsonref_depth(v), max_depth);
			rv = -1;
		}
	} else if (!ok && !(s.p < s.end && *s.p == '\0')) {
		/* (Refused at a NUL byte: jansson's reader ends the text at a
		 * NUL byte outside a string and accepts what came before.) */
		(void) snprintf(why, why_len,
		    "jansson accepts, scanner refuses at %zu: %s",
		    eb__jscan_offset(&s), s.why);
		rv = -1;
	} else if (json_is_string(v)) {
		rv = check_string(p, n, v, why, why_len);
	}
	json_decref(v);
	return rv;
}
