/*
 * admin.cors_origins (origin.h): the origins a browser page may come from
 * to read the admin endpoint with CORS and to write to it. Parsed once, at
 * eb__admin_new; conf checks the same text with eb__admin_origins_check so
 * that a bad value names its file, line and key. Loop thread only.
 */
#include "admin/origin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

/* One origin as a browser sends it: "http://" or "https://", a host of
 * letters, digits, '-', '.', or a bracketed IPv6 address, an optional
 * ":port"; nothing else (no path, no trailing '/', no '*'). */
static int
origin_valid(const char *s, size_t len)
{
	size_t i = 0;
	size_t host = 0;
	int    v6 = 0;

	if (len > 7 && strncmp(s, "http://", 7) == 0) {
		i = 7;
	} else if (len > 8 && strncmp(s, "https://", 8) == 0) {
		i = 8;
	} else {
		return 0;
	}
	if (s[i] == '[') {
		v6 = 1;
		i++;
	}
	for (; i < len; i++, host++) {
		char ch = s[i];

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' ||
		    (v6 && ch == ':')) {
			continue;
		}
		break;
	}
	if (host == 0) {
		return 0;
	}
	if (v6) {
		if (i >= len || s[i] != ']') {
			return 0;
		}
		i++;
	}
	if (i == len) {
		return 1;
	}
	if (s[i] != ':' || i + 1 == len || len - i - 1 > 5) {
		return 0;
	}
	for (i++; i < len; i++) {
		if (s[i] < '0' || s[i] > '9') {
			return 0;
		}
	}
	return 1;
}

static int
is_sep(char ch)
{
	return ch == ' ' || ch == ',' || ch == '\t';
}

int
eb__admin_origins_parse(
    const char *list, eb__admin_origins *o, char *why, size_t why_len)
{
	const char *p = list != NULL ? list : "";

	memset(o, 0, sizeof(*o));
	while (*p != '\0') {
		size_t len = 0;

		while (is_sep(*p)) {
			p++;
		}
		while (p[len] != '\0' && !is_sep(p[len])) {
			len++;
		}
		if (len == 0) {
			break;
		}
		if (len > EB_ADMIN_ORIGIN_MAX || !origin_valid(p, len)) {
			(void) snprintf(why, why_len,
			    "\"%.*s\" is not an origin (scheme://host[:port], "
			    "no path, at most %d bytes)",
			    (int) (len > 64 ? 64 : len), p,
			    EB_ADMIN_ORIGIN_MAX);
			eb__admin_origins_free(o);
			return -1;
		}
		if (o->n == EB_ADMIN_MAX_ORIGINS) {
			(void) snprintf(why, why_len, "more than %d origins",
			    EB_ADMIN_MAX_ORIGINS);
			eb__admin_origins_free(o);
			return -1;
		}
		o->v[o->n] = eb__malloc(len + 1);
		memcpy(o->v[o->n], p, len);
		o->v[o->n][len] = '\0';
		o->n++;
		p += len;
	}
	return 0;
}

void
eb__admin_origins_free(eb__admin_origins *o)
{
	size_t i;

	for (i = 0; i < o->n; i++) {
		free(o->v[i]);
	}
	memset(o, 0, sizeof(*o));
}

int
eb__admin_origins_has(
    const eb__admin_origins *o, const char *origin, size_t len)
{
	size_t i;

	for (i = 0; i < o->n; i++) {
		/* Origins compare exactly: a browser sends the scheme and
		 * host in lower case, as the configuration should. */
		if (strlen(o->v[i]) == len &&
		    memcmp(o->v[i], origin, len) == 0) {
			return 1;
		}
	}
	return 0;
}

int
eb__admin_origins_check(const char *list, char *why, size_t why_len)
{
	eb__admin_origins o;

	if (eb__admin_origins_parse(list, &o, why, why_len) != 0) {
		return -1;
	}
	eb__admin_origins_free(&o);
	return 0;
}
