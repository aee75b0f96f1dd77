/*
 * The admin endpoint and browsers (origin.c): the configured origins
 * (admin.cors_origins, a fixed array of at most EB_ADMIN_MAX_ORIGINS owned
 * strings), the request headers a browser sends that the checks read, and
 * the two decisions made from them: whether a state-changing request is
 * refused as cross-site, and which CORS headers an answer carries
 * (admin.h and docs/ADMIN.md, "Browsers and other origins"). Pure
 * functions; loop thread only.
 */
#ifndef EB_ADMIN_ORIGIN_H
#define EB_ADMIN_ORIGIN_H

#include <stddef.h>

#include "admin/admin.h"

typedef struct eb__admin_origins {
	char  *v[EB_ADMIN_MAX_ORIGINS]; /* owned */
	size_t n;
} eb__admin_origins;

/* Parses list (NULL or "": none; origins separated by spaces or commas)
 * into o: 0, or -1 with the reason in why (o is then empty). */
int eb__admin_origins_parse(
    const char *list, eb__admin_origins *o, char *why, size_t why_len);
void eb__admin_origins_free(eb__admin_origins *o);
/* 1 when origin (len bytes) is one of o, exactly. */
int eb__admin_origins_has(
    const eb__admin_origins *o, const char *origin, size_t len);

#define EB__ADMIN_BROWSER_HDR_MAX 256u

/* A request header kept for the browser checks; a longer value only sets
 * over (then it matches nothing: an origin too long is foreign). */
typedef struct eb__admin_hdr {
	char   v[EB__ADMIN_BROWSER_HDR_MAX + 1];
	size_t len;
	int    seen;
	int    over;
} eb__admin_hdr;

typedef struct eb__admin_browser {
	eb__admin_hdr origin; /* Origin */
	eb__admin_hdr site;   /* Sec-Fetch-Site */
	eb__admin_hdr host;   /* Host */
	eb__admin_hdr csrf;   /* EB_ADMIN_CSRF_HEADER */
} eb__admin_browser;

/* Appends a piece of a header's value (values may arrive in pieces). */
void eb__admin_hdr_append(eb__admin_hdr *h, const char *at, size_t len);
/* 1 when the request's Origin is one of o. */
int eb__admin_origin_configured(
    const eb__admin_browser *b, const eb__admin_origins *o);
/* A state-changing request (any method but GET, HEAD, OPTIONS): NULL when
 * it may proceed (to the token check), else why it is refused (static). */
const char *eb__admin_cross_site(
    const eb__admin_browser *b, const eb__admin_origins *o, int token_set);
/* The CORS header lines of an answer to a GET or a preflight (into out,
 * "" for none). */
void eb__admin_cors(const eb__admin_browser *b, const eb__admin_origins *o,
    int token_set, char *out, size_t n);

#endif
