/*
 * The HTTP/1.1 request reader (reader.h) over http-parser: bounds, the
 * captured headers, a pause after each complete request. Every bound is
 * checked before a byte is kept; header names may arrive in pieces (across
 * reads) and are assembled (up to 31 bytes: longer names are none we
 * keep). Loop thread only; the only allocations are the two arrays of
 * eb__http_reader_init (the body goes to the callback).
 */
#include "http/reader.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/alloc.h"
#include "common/util.h"

enum {
	HDR_NONE = 0,
	HDR_AUTH,
	HDR_ORIGIN,
	HDR_SITE,
	HDR_HOST,
	HDR_CSRF,
	HDR_UPGRADE,
	HDR_WS_KEY,
	HDR_WS_VERSION,
	HDR_ACR_METHOD,
	HDR_ACR_HEADERS
};

static const struct {
	const char *name;
	int         which;
} hdr_names[] = {
	{ "Authorization", HDR_AUTH },
	{ "Origin", HDR_ORIGIN },
	{ "Sec-Fetch-Site", HDR_SITE },
	{ "Host", HDR_HOST },
	{ EB_HTTP_CSRF_HEADER, HDR_CSRF },
	{ "Upgrade", HDR_UPGRADE },
	{ "Sec-WebSocket-Key", HDR_WS_KEY },
	{ "Sec-WebSocket-Version", HDR_WS_VERSION },
	{ "Access-Control-Request-Method", HDR_ACR_METHOD },
	{ "Access-Control-Request-Headers", HDR_ACR_HEADERS },
};

static eb__http_hdr *
hdr_of(eb__http_reader *r, int which)
{
	switch (which) {
	case HDR_ORIGIN:
		return &r->browser.origin;
	case HDR_SITE:
		return &r->browser.site;
	case HDR_HOST:
		return &r->browser.host;
	case HDR_CSRF:
		return &r->browser.csrf;
	case HDR_UPGRADE:
		return &r->upgrade;
	case HDR_WS_KEY:
		return &r->ws_key;
	case HDR_WS_VERSION:
		return &r->ws_version;
	case HDR_ACR_METHOD:
		return &r->acr_method;
	case HDR_ACR_HEADERS:
		return &r->acr_headers;
	default:
		return NULL;
	}
}

static int
fail(eb__http_reader *r, eb__http_result res)
{
	r->result = res;
	return 1; /* stops http-parser */
}

/* Counts n more head bytes against the bound. */
static int
head_bound(eb__http_reader *r, size_t n)
{
	r->head_bytes += n;
	if (r->head_bytes > r->lim.max_head) {
		return fail(r, EB_HTTP_RHEAD);
	}
	return 0;
}

static int
on_message_begin(http_parser *p)
{
	eb__http_reader *r = p->data;

	r->started_ms = eb__mono_ms();
	r->head_bytes = 0;
	r->body_bytes = 0;
	r->nheaders = 0;
	r->in_body = 0;
	r->in_value = 0;
	r->which = HDR_NONE;
	r->complete = 0;
	r->content_length = UINT64_MAX;
	r->field[0] = '\0';
	r->url[0] = '\0';
	r->url_len = 0;
	memset(&r->browser, 0, sizeof(r->browser));
	memset(&r->upgrade, 0, sizeof(r->upgrade));
	memset(&r->ws_key, 0, sizeof(r->ws_key));
	memset(&r->ws_version, 0, sizeof(r->ws_version));
	memset(&r->acr_method, 0, sizeof(r->acr_method));
	memset(&r->acr_headers, 0, sizeof(r->acr_headers));
	if (r->auth != NULL) {
		r->auth[0] = '\0';
	}
	r->auth_len = 0;
	r->auth_over = 0;
	return 0;
}

static int
on_url(http_parser *p, const char *at, size_t n)
{
	eb__http_reader *r = p->data;

	if (head_bound(r, n)) {
		return 1;
	}
	if (r->url_len + n > r->lim.max_url) {
		return fail(r, EB_HTTP_RHEAD);
	}
	memcpy(r->url + r->url_len, at, n);
	r->url_len += n;
	r->url[r->url_len] = '\0';
	return 0;
}

static int
on_header_field(http_parser *p, const char *at, size_t n)
{
	eb__http_reader *r = p->data;
	size_t           have;

	if (head_bound(r, n)) {
		return 1;
	}
	if (r->in_value || r->nheaders == 0) {
		/* A new header line. */
		r->field[0] = '\0';
		r->in_value = 0;
		r->nheaders++;
		if (r->lim.max_headers != 0 &&
		    r->nheaders > r->lim.max_headers) {
			return fail(r, EB_HTTP_RHEAD);
		}
	}
	have = strlen(r->field);
	if (have + n < sizeof(r->field)) {
		memcpy(r->field + have, at, n);
		r->field[have + n] = '\0';
	} else {
		/* A name we do not keep; stays unknown for its rest. */
		memset(r->field, '\n', sizeof(r->field) - 1);
		r->field[sizeof(r->field) - 1] = '\0';
	}
	return 0;
}

static int
which_header(const char *field)
{
	size_t i;

	for (i = 0; i < sizeof(hdr_names) / sizeof(hdr_names[0]); i++) {
		if (strcasecmp(field, hdr_names[i].name) == 0) {
			return hdr_names[i].which;
		}
	}
	return HDR_NONE;
}

static int
on_header_value(http_parser *p, const char *at, size_t n)
{
	eb__http_reader *r = p->data;
	eb__http_hdr    *h;

	if (head_bound(r, n)) {
		return 1;
	}
	if (!r->in_value) {
		r->in_value = 1;
		/* Trailers (after a chunked body) are bounded with the head
		 * but never taken for the request's headers. */
		r->which = r->in_body ? HDR_NONE : which_header(r->field);
	}
	if (r->which == HDR_AUTH) {
		if (r->auth == NULL || r->auth_over ||
		    r->auth_len + n > r->lim.max_auth) {
			r->auth_over = 1;
			return 0;
		}
		memcpy(r->auth + r->auth_len, at, n);
		r->auth_len += n;
		r->auth[r->auth_len] = '\0';
	} else if ((h = hdr_of(r, r->which)) != NULL) {
		eb__http_hdr_append(h, at, n);
	}
	return 0;
}

static int
on_headers_complete(http_parser *p)
{
	eb__http_reader *r = p->data;

	if (r->lim.max_body != 0 && p->content_length != ULLONG_MAX &&
	    p->content_length > r->lim.max_body) {
		return fail(r, EB_HTTP_RBODY);
	}
	r->in_body = 1;
	r->content_length =
	    (p->flags & F_CHUNKED) != 0 || p->content_length == ULLONG_MAX
	        ? UINT64_MAX
	        : (uint64_t) p->content_length;
	return 0;
}

static int
on_body(http_parser *p, const char *at, size_t n)
{
	eb__http_reader *r = p->data;

	r->body_bytes += n;
	if (r->lim.max_body != 0 && r->body_bytes > r->lim.max_body) {
		return fail(r, EB_HTTP_RBODY);
	}
	if (r->body_cb != NULL && r->body_cb(r, at, n, r->arg) != 0) {
		return fail(r, EB_HTTP_RREFUSED);
	}
	return 0;
}

static int
on_message_complete(http_parser *p)
{
	eb__http_reader *r = p->data;

	r->complete = 1;
	r->started_ms = 0;
	http_parser_pause(p, 1); /* one request at a time */
	return 0;
}

static const http_parser_settings reader_settings = {
	.on_message_begin = on_message_begin,
	.on_url = on_url,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

void
eb__http_reader_init(eb__http_reader *r, const eb__http_limits *lim,
    eb__http_body_cb body_cb, void *arg)
{
	memset(r, 0, sizeof(*r));
	r->lim = *lim;
	if (r->lim.max_url == 0 || r->lim.max_url > EB__HTTP_URL_MAX) {
		r->lim.max_url = EB__HTTP_URL_MAX;
	}
	if (r->lim.max_auth > EB__HTTP_AUTH_MAX) {
		r->lim.max_auth = EB__HTTP_AUTH_MAX;
	}
	r->url = eb__malloc(r->lim.max_url + 1);
	r->url[0] = '\0';
	if (r->lim.max_auth > 0) {
		r->auth = eb__malloc(r->lim.max_auth + 1);
		r->auth[0] = '\0';
	}
	r->body_cb = body_cb;
	r->arg = arg;
	http_parser_init(&r->parser, HTTP_REQUEST);
	r->parser.data = r;
}

void
eb__http_reader_free(eb__http_reader *r)
{
	free(r->url);
	free(r->auth);
	r->url = NULL;
	r->auth = NULL;
}

eb__http_result
eb__http_reader_feed(
    eb__http_reader *r, const char *data, size_t n, size_t *used)
{
	enum http_errno e;

	r->complete = 0;
	r->result = EB_HTTP_RMORE;
	http_parser_pause(&r->parser, 0);
	*used = http_parser_execute(&r->parser, &reader_settings, data, n);
	if (r->result != EB_HTTP_RMORE) {
		return (eb__http_result) r->result;
	}
	if (r->complete) {
		return EB_HTTP_RCOMPLETE;
	}
	e = HTTP_PARSER_ERRNO(&r->parser);
	if (e != HPE_OK) {
		return EB_HTTP_RBAD;
	}
	return EB_HTTP_RMORE;
}

int
eb__http_result_status(eb__http_result res)
{
	switch (res) {
	case EB_HTTP_RBAD:
		return 400;
	case EB_HTTP_RHEAD:
		return 431;
	case EB_HTTP_RBODY:
		return 413;
	default:
		return 500;
	}
}

const char *
eb__http_reader_error(const eb__http_reader *r)
{
	return http_errno_name(HTTP_PARSER_ERRNO(&r->parser));
}

const char *
eb__http_reader_method(const eb__http_reader *r)
{
	return http_method_str((enum http_method) r->parser.method);
}

int
eb__http_reader_method_is(const eb__http_reader *r, const char *method)
{
	return strcmp(eb__http_reader_method(r), method) == 0;
}

const char *
eb__http_reader_url(const eb__http_reader *r)
{
	return r->url;
}

int
eb__http_reader_keep_alive(const eb__http_reader *r)
{
	return http_should_keep_alive(&r->parser);
}

uint64_t
eb__http_reader_content_length(const eb__http_reader *r)
{
	return r->content_length;
}

int
eb__http_reader_target(const eb__http_reader *r, char *path, char *query)
{
	struct http_parser_url u;

	http_parser_url_init(&u);
	if (http_parser_parse_url(r->url, r->url_len, 0, &u) != 0 ||
	    !(u.field_set & (1 << UF_PATH))) {
		return -1;
	}
	(void) snprintf(path, EB__HTTP_URL_MAX + 1, "%.*s",
	    (int) u.field_data[UF_PATH].len,
	    r->url + u.field_data[UF_PATH].off);
	query[0] = '\0';
	if (u.field_set & (1 << UF_QUERY)) {
		(void) snprintf(query, EB__HTTP_URL_MAX + 1, "%.*s",
		    (int) u.field_data[UF_QUERY].len,
		    r->url + u.field_data[UF_QUERY].off);
	}
	return 0;
}
