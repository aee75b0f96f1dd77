/*
 * A minimal HTTP/1.1 client for the admin endpoint: one request per
 * connection ("Connection: close"), the response read until the parser says
 * it is complete or the server closes, parsed with http-parser (status,
 * Content-Length or chunked body). Plain TCP only; blocking with deadlines.
 * Every request carries EB_ADMIN_CSRF_HEADER, which the admin endpoint
 * requires of writes (POST /leader/release) when no token is set.
 */
#include <errno.h>
#include <fcntl.h>
#include <http_parser.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "admin/admin.h"
#include "common/alloc.h"
#include "common/buf.h"
#include "common/util.h"
#include "ctl/ctl.h"

#define CTL_HTTP_MAX ((size_t) 16 * 1024 * 1024)

typedef struct http_ctx {
	eb__buf body;
	int     complete;
} http_ctx;

static int
on_body(http_parser *p, const char *at, size_t n)
{
	http_ctx *h = p->data;

	eb__buf_append(&h->body, at, n);
	return 0;
}

static int
on_complete(http_parser *p)
{
	http_ctx *h = p->data;

	h->complete = 1;
	return 0;
}

/* Feeds data (and EOF when eof) to a fresh parser. 0 complete, 1 more data
 * needed, -1 malformed. */
static int
parse(const char *data, size_t n, int eof, ctl_http_resp *resp)
{
	http_parser          p;
	http_parser_settings s;
	http_ctx             h;
	size_t               used;

	memset(&s, 0, sizeof(s));
	memset(resp, 0, sizeof(*resp));
	s.on_body = on_body;
	s.on_message_complete = on_complete;
	eb__buf_init(&h.body);
	h.complete = 0;
	http_parser_init(&p, HTTP_RESPONSE);
	p.data = &h;
	used = http_parser_execute(&p, &s, data, n);
	if (HTTP_PARSER_ERRNO(&p) == HPE_OK && used == n && !h.complete &&
	    eof) {
		(void) http_parser_execute(&p, &s, NULL, 0);
	}
	if (HTTP_PARSER_ERRNO(&p) != HPE_OK && !h.complete) {
		eb__buf_free(&h.body);
		return -1;
	}
	if (!h.complete) {
		eb__buf_free(&h.body);
		return eof ? -1 : 1;
	}
	resp->status = (int) p.status_code;
	resp->body_len = eb__buf_avail(&h.body);
	resp->body = eb__malloc(resp->body_len + 1);
	if (resp->body_len > 0) {
		memcpy(resp->body, eb__buf_head(&h.body), resp->body_len);
	}
	resp->body[resp->body_len] = '\0';
	eb__buf_free(&h.body);
	return 0;
}

int
eb__ctl_http_parse(const char *data, size_t n, ctl_http_resp *resp)
{
	return parse(data, n, 0, resp);
}

void
eb__ctl_http_resp_free(ctl_http_resp *resp)
{
	free(resp->body);
	resp->body = NULL;
	resp->body_len = 0;
}

static int
send_request(int fd, const char *req, size_t n, uint64_t deadline, char *err,
    size_t errlen)
{
	ssize_t w;

	while (n > 0) {
		w = send(fd, req, n, MSG_NOSIGNAL);
		if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (eb__ctl_wait_fd(fd, POLLOUT, deadline) <= 0) {
				(void) snprintf(
				    err, errlen, "write: timed out");
				return -1;
			}
			continue;
		}
		if (w < 0) {
			(void) snprintf(
			    err, errlen, "write: %s", strerror(errno));
			return -1;
		}
		req += w;
		n -= (size_t) w;
	}
	return 0;
}

/* Reads until the response parses completely, EOF or the deadline. */
static int
read_response(
    int fd, uint64_t deadline, ctl_http_resp *resp, char *err, size_t errlen)
{
	eb__buf in;
	ssize_t r;
	int     rv = 1;
	int     eof = 0;

	eb__buf_init(&in);
	while (rv == 1) {
		r = recv(fd, eb__buf_reserve(&in, 16384), 16384, 0);
		if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (eb__ctl_wait_fd(fd, POLLIN, deadline) <= 0) {
				(void) snprintf(err, errlen,
				    "no complete response: timed out");
				rv = -1;
				break;
			}
			continue;
		}
		if (r < 0) {
			(void) snprintf(
			    err, errlen, "read: %s", strerror(errno));
			rv = -1;
			break;
		}
		eof = r == 0;
		in.len += (size_t) r;
		if (eb__buf_avail(&in) > CTL_HTTP_MAX) {
			(void) snprintf(err, errlen, "response too large");
			rv = -1;
			break;
		}
		rv = parse(eb__buf_head(&in), eb__buf_avail(&in), eof, resp);
		if (rv < 0) {
			(void) snprintf(err, errlen,
			    eb__buf_avail(&in) == 0
			        ? "connection closed without a response"
			        : "malformed HTTP response");
		}
	}
	eb__buf_free(&in);
	return rv;
}

int
eb__ctl_http(const ctl_endpoint *ep, const char *method, const char *path,
    const char *token, int timeout_ms, ctl_http_resp *resp, char *err,
    size_t errlen)
{
	uint64_t deadline = eb__mono_ms() + (uint64_t) timeout_ms;
	char     req[1024];
	int      n;
	int      fd;
	int      rv;

	memset(resp, 0, sizeof(*resp));
	n = snprintf(req, sizeof(req),
	    "%s %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: ebctl\r\n"
	    "Accept: application/json\r\nConnection: close\r\n"
	    "Content-Length: 0\r\n" EB_ADMIN_CSRF_HEADER ": 1\r\n%s%s%s\r\n",
	    method, path, ep->host, ep->port,
	    token != NULL ? "Authorization: Bearer " : "",
	    token != NULL ? token : "", token != NULL ? "\r\n" : "");
	if (n < 0 || (size_t) n >= sizeof(req)) {
		(void) snprintf(err, errlen, "request too long");
		return -1;
	}
	if ((fd = eb__ctl_tcp_connect(ep, deadline, err, errlen)) < 0) {
		return -1;
	}
	rv = send_request(fd, req, (size_t) n, deadline, err, errlen);
	if (rv == 0) {
		rv = read_response(fd, deadline, resp, err, errlen);
	}
	(void) close(fd);
	return rv == 0 ? 0 : -1;
}
