/*
 * The HTTP/1.1 response writer (response.c) of both servers (admin/, web/):
 * the status text table, the status line, Content-Type, Content-Length,
 * Cache-Control, Connection and the caller's extra header lines, appended
 * to a byte buffer the caller writes to its socket; and the CORS header
 * lines the SockJS endpoints answer with (the admin endpoint's CORS policy
 * is origin.h's). Pure functions; loop thread only.
 */
#ifndef EB_HTTP_RESPONSE_H
#define EB_HTTP_RESPONSE_H

#include <stddef.h>

#include "common/buf.h"

typedef struct eb__http_resp_head {
	int         status;
	const char *content_type;   /* NULL: no Content-Type line */
	size_t      content_length; /* of the body (even for HEAD) */
	int         chunked;        /* Transfer-Encoding: chunked, no length */
	const char *cache_control;  /* NULL: no Cache-Control line */
	const char *connection;     /* NULL: none, else "keep-alive"/"close" */
	const char *extra; /* header lines, each ending in CRLF; NULL: none */
} eb__http_resp_head;

/* The reason phrase of status ("Internal Server Error" for one not in the
 * table, as the admin endpoint always answered). Static. */
const char *eb__http_status_text(int status);
/* Appends the status line and header lines of h, and the blank line. */
void eb__http_head_write(eb__buf *out, const eb__http_resp_head *h);
/* Appends a whole response: the head of h (content_length set to
 * body_len) and, unless head_only (an answer to HEAD, RFC 9110 9.3.2),
 * the body. */
void eb__http_response_write(eb__buf *out, const eb__http_resp_head *h,
    const char *body, size_t body_len, int head_only);
/* The CORS header lines echoing origin (NULL or "": "*") with credentials
 * allowed (the SockJS endpoints' CORS), into out ("" if it does not
 * fit). */
void eb__http_cors_echo(const char *origin, char *out, size_t n);

#endif
