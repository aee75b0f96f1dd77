/*
 * The admin endpoint and browsers (origin.h). admin.cors_origins: the
 * origins a browser page may come from to read the admin endpoint with
 * CORS and to write to it, parsed once at eb__admin_new (conf checks the
 * same text with eb__admin_origins_check, so that a bad value names its
 * file, line and key); and the cross-site and CORS decisions made from a
 * request's Origin, Sec-Fetch-Site, Host and EB_HTTP_CSRF_HEADER. Loop
 * thread only.
 */
#include "http/origin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
eb__http_origins_parse(
    const char *list, eb__http_origins *o, char *why, size_t why_len)
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
		if (len > EB_HTTP_ORIGIN_MAX || !origin_valid(p, len)) {
			(void) snprintf(why, why_len,
			    "\"%.*s\" is not an origin (scheme://host[:port], "
			    "no path, at most %d bytes)",
			    (int) (len > 64 ? 64 : len), p, EB_HTTP_ORIGIN_MAX);
			eb__http_origins_free(o);
			return -1;
		}
		if (o->n == EB_HTTP_MAX_ORIGINS) {
			(void) snprintf(why, why_len, "more than %d origins",
			    EB_HTTP_MAX_ORIGINS);
			eb__http_origins_free(o);
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
eb__http_origins_free(eb__http_origins *o)
{
	size_t i;

	for (i = 0; i < o->n; i++) {
		free(o->v[i]);
	}
	memset(o, 0, sizeof(*o));
}

int
eb__http_origins_has(const eb__http_origins *o, const char *origin, size_t len)
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
eb__http_origins_check(const char *list, char *why, size_t why_len)
{
	eb__http_origins o;

	if (eb__http_origins_parse(list, &o, why, why_len) != 0) {
		return -1;
	}
	eb__http_origins_free(&o);
	return 0;
}

/* ---- the browser checks ---- */

void
eb__http_hdr_append(eb__http_hdr *h, const char *at, size_t len)
{
	h->seen = 1;
	if (h->over || h->len + len > EB__HTTP_HDR_MAX) {
		h->over = 1;
		return;
	}
	memcpy(h->v + h->len, at, len);
	h->len += len;
	h->v[h->len] = '\0';
}

static int
hdr_is(const eb__http_hdr *h, const char *v)
{
	return h->seen && !h->over && strlen(v) == h->len &&
	       strncasecmp(h->v, v, h->len) == 0;
}

int
eb__http_origin_configured(const eb__http_browser *b, const eb__http_origins *o)
{
	return b->origin.seen && !b->origin.over &&
	       eb__http_origins_has(o, b->origin.v, b->origin.len);
}

/* 1 when the request's Origin is the endpoint's own: "http://" + Host
 * (what a page this endpoint served, the dashboard, sends). */
static int
origin_own(const eb__http_browser *b)
{
	static const char scheme[] = "http://";
	const size_t      sl = sizeof(scheme) - 1;

	return b->origin.seen && !b->origin.over && b->host.seen &&
	       !b->host.over && b->host.len > 0 &&
	       b->origin.len == sl + b->host.len &&
	       strncasecmp(b->origin.v, scheme, sl) == 0 &&
	       strncasecmp(b->origin.v + sl, b->host.v, b->host.len) == 0;
}

/*
 * A configured origin may write (with the token or the CSRF header); any
 * other Origin but ours, or a Sec-Fetch-Site saying the page is from
 * another origin, is refused; and without a token the CSRF header is
 * required, so a client that sends neither header (an old browser) cannot
 * be driven by a form or a simple fetch either.
 */
const char *
eb__http_cross_site(
    const eb__http_browser *b, const eb__http_origins *o, int token_set)
{
	int configured = eb__http_origin_configured(b, o);

	if (b->origin.seen && !configured && !origin_own(b)) {
		return "cross-site request refused: foreign Origin";
	}
	if (b->site.seen && !configured && !hdr_is(&b->site, "same-origin") &&
	    !hdr_is(&b->site, "none")) {
		return "cross-site request refused: Sec-Fetch-Site";
	}
	if (!token_set && (!b->csrf.seen || b->csrf.len == 0)) {
		return "without admin.token a write needs the "
		       "header " EB_HTTP_CSRF_HEADER;
	}
	return NULL;
}

/*
 * A configured origin is echoed (with Vary: Origin); with a token set any
 * origin may read ("*": every data route needs the token, which such a
 * page must hold, and no cookie is used); otherwise none, so a page of
 * another origin cannot read what it makes the browser fetch.
 */
void
eb__http_cors(const eb__http_browser *b, const eb__http_origins *o,
    int token_set, char *out, size_t n)
{
	if (eb__http_origin_configured(b, o)) {
		(void) snprintf(out, n,
		    "Access-Control-Allow-Origin: %.*s\r\nVary: Origin\r\n",
		    (int) b->origin.len, b->origin.v);
	} else if (token_set) {
		(void) snprintf(out, n, "Access-Control-Allow-Origin: *\r\n");
	} else {
		out[0] = '\0';
	}
}
