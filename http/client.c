/*
 * The HTTP/1.1 client side (client.h): the request writer and the bounded,
 * incremental response parser.
 */
#include "http/client.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <uv.h>

/* 1 when s is non-empty and has no CR or LF. */
static int
token_safe(const char *s)
{
	return s != NULL && s[0] != '\0' && strpbrk(s, "\r\n") == NULL;
}

int
eb__http_request_write(eb__buf *out, const eb__http_client_req *rq)
{
	char len[32];
	int  n;

	if (!token_safe(rq->method) || !token_safe(rq->target) ||
	    !token_safe(rq->host) || strchr(rq->target, ' ') != NULL) {
		return UV_EINVAL;
	}
	n = snprintf(
	    len, sizeof(len), "%zu", rq->body != NULL ? rq->body_len : 0);
	if (n <= 0 || (size_t) n >= sizeof(len)) {
		return UV_EINVAL;
	}
	eb__buf_append(out, rq->method, strlen(rq->method));
	eb__buf_append(out, " ", 1);
	eb__buf_append(out, rq->target, strlen(rq->target));
	eb__buf_append(out, " HTTP/1.1\r\nHost: ", 17);
	eb__buf_append(out, rq->host, strlen(rq->host));
	eb__buf_append(out, "\r\nConnection: ", 14);
	if (rq->keep_alive) {
		eb__buf_append(out, "keep-alive", 10);
	} else {
		eb__buf_append(out, "close", 5);
	}
	eb__buf_append(out, "\r\nContent-Length: ", 18);
	eb__buf_append(out, len, (size_t) n);
	eb__buf_append(out, "\r\n", 2);
	if (rq->extra != NULL) {
		eb__buf_append(out, rq->extra, strlen(rq->extra));
	}
	eb__buf_append(out, "\r\n", 2);
	if (rq->body != NULL && rq->body_len > 0) {
		eb__buf_append(out, rq->body, rq->body_len);
	}
	return 0;
}

static int
stop(eb__http_resp_parser *p, eb__http_result res)
{
	p->result = res;
	return 1;
}

static int
head_cb(http_parser *hp, const char *at, size_t n)
{
	eb__http_resp_parser *p = hp->data;

	(void) at;
	p->head_bytes += n;
	if (p->head_bytes > p->max_head) {
		return stop(p, EB_HTTP_RHEAD);
	}
	return 0;
}

static int
headers_done_cb(http_parser *hp)
{
	eb__http_resp_parser *p = hp->data;

	/* A status code is three digits (RFC 9112 section 4); http-parser
	 * takes fewer ("HTTP/1.1 20 O"). */
	if (hp->status_code < 100) {
		return stop(p, EB_HTTP_RBAD);
	}
	if (hp->content_length != ULLONG_MAX &&
	    hp->content_length > p->max_body) {
		return stop(p, EB_HTTP_RBODY);
	}
	return 0;
}

static int
body_cb(http_parser *hp, const char *at, size_t n)
{
	eb__http_resp_parser *p = hp->data;

	if (eb__buf_avail(&p->body) + n > p->max_body) {
		return stop(p, EB_HTTP_RBODY);
	}
	eb__buf_append(&p->body, at, n);
	return 0;
}

static int
complete_cb(http_parser *hp)
{
	eb__http_resp_parser *p = hp->data;

	p->complete = 1;
	p->status = (int) hp->status_code;
	http_parser_pause(hp, 1); /* one response */
	return 0;
}

static const http_parser_settings resp_settings = {
	.on_status = head_cb,
	.on_header_field = head_cb,
	.on_header_value = head_cb,
	.on_headers_complete = headers_done_cb,
	.on_body = body_cb,
	.on_message_complete = complete_cb,
};

void
eb__http_resp_parser_init(
    eb__http_resp_parser *p, size_t max_head, size_t max_body)
{
	memset(p, 0, sizeof(*p));
	p->max_head = max_head;
	p->max_body = max_body;
	eb__buf_init(&p->body);
	http_parser_init(&p->parser, HTTP_RESPONSE);
	p->parser.data = p;
}

void
eb__http_resp_parser_free(eb__http_resp_parser *p)
{
	eb__buf_free(&p->body);
}

/* Runs the parser over data (n == 0: the end of input). */
static eb__http_result
run(eb__http_resp_parser *p, const char *data, size_t n)
{
	if (p->result != EB_HTTP_RMORE) {
		return (eb__http_result) p->result;
	}
	if (p->complete) {
		return EB_HTTP_RCOMPLETE;
	}
	(void) http_parser_execute(&p->parser, &resp_settings, data, n);
	if (p->result != EB_HTTP_RMORE) {
		return (eb__http_result) p->result;
	}
	if (p->complete) {
		return EB_HTTP_RCOMPLETE;
	}
	if (HTTP_PARSER_ERRNO(&p->parser) != HPE_OK) {
		p->result = EB_HTTP_RBAD;
		return EB_HTTP_RBAD;
	}
	return EB_HTTP_RMORE;
}

eb__http_result
eb__http_resp_parser_feed(eb__http_resp_parser *p, const char *data, size_t n)
{
	if (n == 0) {
		/* http-parser reads no bytes as the end of input. */
		return p->result != EB_HTTP_RMORE ? (eb__http_result) p->result
		       : p->complete              ? EB_HTTP_RCOMPLETE
		                                  : EB_HTTP_RMORE;
	}
	return run(p, data, n);
}

eb__http_result
eb__http_resp_parser_eof(eb__http_resp_parser *p)
{
	eb__http_result res = run(p, NULL, 0);

	if (res == EB_HTTP_RMORE) {
		p->result = EB_HTTP_RBAD;
		return EB_HTTP_RBAD;
	}
	return res;
}
