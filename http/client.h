/*
 * The HTTP/1.1 client side (client.c), for ebctl over its own blocking
 * connection (ctl/net.c): the request writer and an incremental response
 * parser over http-parser. Works over bytes only (no socket): the caller
 * writes what eb__http_request_write appended and feeds what it reads.
 *
 * The parser bounds the status line and headers (max_head) and the body
 * (max_body) before a byte is kept: an answer over a bound is
 * EB_HTTP_RHEAD or EB_HTTP_RBODY (reader.h's results), a malformed one
 * EB_HTTP_RBAD. A body without a length ends at EOF
 * (eb__http_resp_parser_eof). Ownership: the parser owns its body buffer
 * until eb__http_resp_parser_free (or eb__http_resp_parser_take_body).
 * Any thread, one parser per thread.
 */
#ifndef EB_HTTP_CLIENT_H
#define EB_HTTP_CLIENT_H

#include <http_parser.h>
#include <stddef.h>

#include "common/buf.h"
#include "http/reader.h"

typedef struct eb__http_client_req {
	const char *method; /* "GET", ... */
	const char *target; /* "/nodes?x=1" */
	const char *host;   /* the Host header's value, "h:port" */
	const char *extra;  /* header lines, each ending in CRLF; NULL: none */
	const char *body;   /* NULL: none (Content-Length: 0) */
	size_t      body_len;
	int         keep_alive; /* 0: "Connection: close" */
} eb__http_client_req;

/* Appends the request to out: 0, or UV_EINVAL when the method, target or
 * host holds a CR or LF (header injection) or is empty. */
int eb__http_request_write(eb__buf *out, const eb__http_client_req *rq);

typedef struct eb__http_resp_parser {
	http_parser parser;
	size_t      max_head;
	size_t      max_body;
	size_t      head_bytes;
	int         result; /* an error seen in a callback */
	int         complete;
	int         status;
	eb__buf     body; /* owned */
} eb__http_resp_parser;

/* A parser for one response with the given bounds (bytes). */
void eb__http_resp_parser_init(
    eb__http_resp_parser *p, size_t max_head, size_t max_body);
void eb__http_resp_parser_free(eb__http_resp_parser *p);
/* Feeds n bytes: EB_HTTP_RMORE, EB_HTTP_RCOMPLETE (status and body are
 * set; bytes after the response are ignored) or an error result. Feeding
 * after a result other than EB_HTTP_RMORE returns it again. */
eb__http_result eb__http_resp_parser_feed(
    eb__http_resp_parser *p, const char *data, size_t n);
/* The peer closed: EB_HTTP_RCOMPLETE when that ends the response (a body
 * without a length), else EB_HTTP_RBAD (cut short). */
eb__http_result eb__http_resp_parser_eof(eb__http_resp_parser *p);

#endif
