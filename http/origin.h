/*
 * HTTP servers and browsers (origin.c), moved here from admin/ so that both
 * servers (admin, web) use one policy: the configured origins (for the
 * admin endpoint admin.cors_origins, a fixed array of at most
 * EB_HTTP_MAX_ORIGINS owned strings), the request headers a browser sends
 * that the checks read (captured by the request reader, reader.h), and
 * the decisions made from them: whether a state-changing request is
 * refused as cross-site, and which CORS headers an answer carries
 * (admin/admin.h and docs/ADMIN.md, "Browsers and other origins"). Pure
 * functions; loop thread only.
 */
#ifndef EB_HTTP_ORIGIN_H
#define EB_HTTP_ORIGIN_H

#include <stddef.h>

/* The header a state-changing request needs without a token (any
 * non-empty value; ebctl sends it). Same text as admin.h's
 * EB_ADMIN_CSRF_HEADER. */
#define EB_HTTP_CSRF_HEADER "X-Ebnode-Admin"
/* At most this many configured origins, each at most EB_HTTP_ORIGIN_MAX
 * bytes (admin.h: EB_ADMIN_MAX_ORIGINS, EB_ADMIN_ORIGIN_MAX). */
#define EB_HTTP_MAX_ORIGINS 16
#define EB_HTTP_ORIGIN_MAX  255

typedef struct eb__http_origins {
	char  *v[EB_HTTP_MAX_ORIGINS]; /* owned */
	size_t n;
} eb__http_origins;

/* Parses list (NULL or "": none; origins separated by spaces or commas)
 * into o: 0, or -1 with the reason in why (o is then empty). */
int eb__http_origins_parse(
    const char *list, eb__http_origins *o, char *why, size_t why_len);
void eb__http_origins_free(eb__http_origins *o);
/* Checks a list as eb__http_origins_parse does: 0, or -1 with the reason
 * in why. */
int eb__http_origins_check(const char *list, char *why, size_t why_len);
/* 1 when origin (len bytes) is one of o, exactly. */
int eb__http_origins_has(
    const eb__http_origins *o, const char *origin, size_t len);

#define EB__HTTP_HDR_MAX 256u

/* A request header kept for the browser checks; a longer value only sets
 * over (then it matches nothing: an origin too long is foreign). */
typedef struct eb__http_hdr {
	char   v[EB__HTTP_HDR_MAX + 1];
	size_t len;
	int    seen;
	int    over;
} eb__http_hdr;

typedef struct eb__http_browser {
	eb__http_hdr origin; /* Origin */
	eb__http_hdr site;   /* Sec-Fetch-Site */
	eb__http_hdr host;   /* Host */
	eb__http_hdr csrf;   /* EB_HTTP_CSRF_HEADER */
} eb__http_browser;

/* Appends a piece of a header's value (values may arrive in pieces). */
void eb__http_hdr_append(eb__http_hdr *h, const char *at, size_t len);
/* 1 when the request's Origin is one of o. */
int eb__http_origin_configured(
    const eb__http_browser *b, const eb__http_origins *o);
/* A state-changing request (any method but GET, HEAD, OPTIONS): NULL when
 * it may proceed (to the token check), else why it is refused (static). */
const char *eb__http_cross_site(
    const eb__http_browser *b, const eb__http_origins *o, int token_set);
/* The CORS header lines of an answer to a GET or a preflight (into out,
 * "" for none). */
void eb__http_cors(const eb__http_browser *b, const eb__http_origins *o,
    int token_set, char *out, size_t n);

#endif
