/*
 * The HTTP/1.1 request reader (reader.c): one incremental parser over
 * http-parser for both servers (admin/, web/). Bytes are fed as they
 * arrive; the reader bounds the request target, the head (request line
 * and header bytes) and the number of header lines, and the body when a
 * bound is set, keeps the request headers the servers decide on (Host,
 * Origin, Sec-Fetch-Site, EB_HTTP_CSRF_HEADER, Authorization, Upgrade,
 * Sec-WebSocket-Key/-Version, Access-Control-Request-Method/-Headers;
 * keep-alive and Content-Length from the parser), hands body bytes to a
 * callback, and stops after each complete request: bytes behind it (a
 * pipelined request) are left to the caller, which holds them (and charges
 * them to the input budget) until the request is answered, then feeds them
 * again. The time of a request's first byte is kept for head and body
 * deadlines.
 *
 * Trailers after a chunked body count toward the head and header-count
 * bounds but are never taken for the request's headers.
 * A captured header value longer than its array only sets `over` (it then
 * matches nothing); the caller decides whether that refuses the request.
 * Results of eb__http_reader_feed map to answers: EB_HTTP_RBAD 400,
 * EB_HTTP_RHEAD 431 (the admin endpoint answers 413, as before),
 * EB_HTTP_RBODY 413; EB_HTTP_RREFUSED is the body callback's refusal.
 *
 * Ownership: an eb__http_reader is embedded in its owner's connection; it
 * owns the arrays of the target and of Authorization, sized by its limits
 * (so a server that keeps short targets and no token, the web front,
 * holds little), freed by eb__http_reader_free. The views it returns are
 * valid until the next feed. Loop thread only.
 */
#ifndef EB_HTTP_READER_H
#define EB_HTTP_READER_H

#include <http_parser.h>
#include <stddef.h>
#include <stdint.h>

#include "http/origin.h"

/* The request target is kept up to this many bytes (limits.max_url). */
#define EB__HTTP_URL_MAX 2048u
/* Authorization is kept up to this many bytes (limits.max_auth). */
#define EB__HTTP_AUTH_MAX 1024u

typedef struct eb__http_limits {
	size_t max_url;     /* request target bytes, <= EB__HTTP_URL_MAX */
	size_t max_head;    /* request line + header bytes */
	size_t max_headers; /* header lines; 0: no bound */
	size_t max_body;    /* body bytes; 0: no bound (the callback's) */
	/* Authorization bytes kept (<= EB__HTTP_AUTH_MAX); 0: none kept
	 * (a server without auth); longer: auth_over. */
	size_t max_auth;
} eb__http_limits;

typedef enum eb__http_result {
	EB_HTTP_RMORE = 0,     /* all bytes taken, no complete request yet */
	EB_HTTP_RCOMPLETE = 1, /* a complete message; *used may be < n */
	EB_HTTP_RBAD = -1,     /* malformed: 400 */
	EB_HTTP_RHEAD = -2,    /* target, head or header count over: 431 */
	EB_HTTP_RBODY = -3,    /* body (or its Content-Length) over: 413 */
	EB_HTTP_RREFUSED = -4, /* the body callback refused its bytes */
} eb__http_result;

typedef struct eb__http_reader eb__http_reader;

/* Body bytes of the current request (borrowed for the call): 0 to go on,
 * non-zero to stop the request (feed returns EB_HTTP_RREFUSED). */
typedef int (*eb__http_body_cb)(
    eb__http_reader *r, const char *at, size_t n, void *arg);

struct eb__http_reader {
	http_parser      parser;
	eb__http_limits  lim;
	eb__http_body_cb body_cb;    /* NULL: the body is dropped */
	void            *arg;        /* borrowed, for body_cb */
	uint64_t         started_ms; /* first byte of this request, 0: none */
	size_t           head_bytes; /* request line, headers, trailers */
	size_t           body_bytes;
	size_t           nheaders;
	int              in_body;  /* the head is complete (trailers next) */
	int              in_value; /* the last callback was a value */
	int              which;    /* the header the value belongs to */
	int              result;   /* an error seen in a callback */
	int              complete;
	uint64_t         content_length; /* declared; UINT64_MAX: none */
	char             field[32];      /* the header name being read */
	char            *url;            /* owned: lim.max_url + 1 bytes */
	size_t           url_len;
	/* The captured headers (`seen` when present). */
	eb__http_browser browser; /* Origin, Sec-Fetch-Site, Host, CSRF */
	eb__http_hdr     upgrade;
	eb__http_hdr     ws_key;
	eb__http_hdr     ws_version;
	eb__http_hdr     acr_method;  /* Access-Control-Request-Method */
	eb__http_hdr     acr_headers; /* Access-Control-Request-Headers */
	char  *auth; /* owned: lim.max_auth + 1 bytes, Authorization */
	size_t auth_len;
	int    auth_over;
};

/* Sets r up for a connection's requests (lim copied; body_cb may be NULL;
 * arg is borrowed). Every init is paired with one eb__http_reader_free. */
void eb__http_reader_init(eb__http_reader *r, const eb__http_limits *lim,
    eb__http_body_cb body_cb, void *arg);
/* Frees what r owns (r may be all zero bytes: nothing to free). */
void eb__http_reader_free(eb__http_reader *r);
/* Parses data[0..n): *used is set to the bytes taken. After
 * EB_HTTP_RCOMPLETE the request's fields below are valid until the next
 * feed, which starts the next request. After an error the reader is
 * spent (the connection is answered and closed). */
eb__http_result eb__http_reader_feed(
    eb__http_reader *r, const char *data, size_t n, size_t *used);
/* The status an error result is answered with (400, 413, 431; 500 for
 * others). */
int eb__http_result_status(eb__http_result res);

/* The parser's name of the last error ("HPE_OK" when none; static), for
 * logs. */
const char *eb__http_reader_error(const eb__http_reader *r);
/* The request's method ("GET", ...), its target (NUL-terminated), whether
 * the connection stays open after the answer, and its Content-Length
 * (UINT64_MAX: none or chunked). */
const char *eb__http_reader_method(const eb__http_reader *r);
int eb__http_reader_method_is(const eb__http_reader *r, const char *method);
const char *eb__http_reader_url(const eb__http_reader *r);
int         eb__http_reader_keep_alive(const eb__http_reader *r);
uint64_t    eb__http_reader_content_length(const eb__http_reader *r);
/* Splits the target into path and query (NUL-terminated, each of
 * EB__HTTP_URL_MAX + 1 bytes); 0, or -1 when it is malformed. */
int eb__http_reader_target(const eb__http_reader *r, char *path, char *query);

#endif
