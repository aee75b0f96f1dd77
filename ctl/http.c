/*
 * A minimal HTTP/1.1 client for the admin endpoint: one request per
 * connection ("Connection: close") over ctl/net.c's blocking socket, the
 * request written and the response parsed by http/client.h (status,
 * Content-Length, chunked or read-until-close body; head and body bounded).
 * Plain TCP only; blocking with deadlines. Every request carries
 * EB_ADMIN_CSRF_HEADER, which the admin endpoint requires of writes
 * (POST /leader/release) when no token is set.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "admin/admin.h"
#include "common/alloc.h"
#include "common/buf.h"
#include "common/util.h"
#include "ctl/ctl.h"
#include "http/client.h"

/* The bounds of an answer: its head, and its body (metrics of a big
 * node are the largest). */
#define CTL_HTTP_MAX_HEAD ((size_t) 64 * 1024)
#define CTL_HTTP_MAX      ((size_t) 16 * 1024 * 1024)

/* The parsed response into resp (the body copied, NUL-terminated). */
static void
resp_take(const eb__http_resp_parser *p, ctl_http_resp *resp)
{
	resp->status = p->status;
	resp->body_len = eb__buf_avail(&p->body);
	resp->body = eb__malloc(resp->body_len + 1);
	if (resp->body_len > 0) {
		memcpy(resp->body, eb__buf_head(&p->body), resp->body_len);
	}
	resp->body[resp->body_len] = '\0';
}

/* 0 complete, 1 more data needed, -1 malformed or over a bound. */
static int
result_rv(eb__http_result res)
{
	return res == EB_HTTP_RCOMPLETE ? 0 : res == EB_HTTP_RMORE ? 1 : -1;
}

int
eb__ctl_http_parse(const char *data, size_t n, ctl_http_resp *resp)
{
	eb__http_resp_parser p;
	int                  rv;

	memset(resp, 0, sizeof(*resp));
	eb__http_resp_parser_init(&p, CTL_HTTP_MAX_HEAD, CTL_HTTP_MAX);
	rv = result_rv(eb__http_resp_parser_feed(&p, data, n));
	if (rv == 0) {
		resp_take(&p, resp);
	}
	eb__http_resp_parser_free(&p);
	return rv;
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
	eb__http_resp_parser p;
	eb__http_result      res = EB_HTTP_RMORE;
	char                 in[16384];
	size_t               got = 0;
	ssize_t              r;

	eb__http_resp_parser_init(&p, CTL_HTTP_MAX_HEAD, CTL_HTTP_MAX);
	while (res == EB_HTTP_RMORE) {
		r = recv(fd, in, sizeof(in), 0);
		if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (eb__ctl_wait_fd(fd, POLLIN, deadline) <= 0) {
				(void) snprintf(err, errlen,
				    "no complete response: timed out");
				res = EB_HTTP_RBAD;
				break;
			}
			continue;
		}
		if (r < 0) {
			(void) snprintf(
			    err, errlen, "read: %s", strerror(errno));
			res = EB_HTTP_RBAD;
			break;
		}
		got += (size_t) r;
		res = r == 0 ? eb__http_resp_parser_eof(&p)
		             : eb__http_resp_parser_feed(&p, in, (size_t) r);
		if (res == EB_HTTP_RHEAD || res == EB_HTTP_RBODY) {
			(void) snprintf(err, errlen, "response too large");
		} else if (res < 0) {
			(void) snprintf(err, errlen,
			    got == 0 ? "connection closed without a response"
			             : "malformed HTTP response");
		}
	}
	if (res == EB_HTTP_RCOMPLETE) {
		resp_take(&p, resp);
	}
	eb__http_resp_parser_free(&p);
	return res == EB_HTTP_RCOMPLETE ? 0 : -1;
}

int
eb__ctl_http(const ctl_endpoint *ep, const char *method, const char *path,
    const char *token, int timeout_ms, ctl_http_resp *resp, char *err,
    size_t errlen)
{
	uint64_t            deadline = eb__mono_ms() + (uint64_t) timeout_ms;
	char                host[300];
	char                extra[1024];
	eb__buf             req;
	eb__http_client_req rq = {
		.method = method,
		.target = path,
		.host = host,
		.extra = extra,
	};
	int n;
	int fd;
	int rv;

	memset(resp, 0, sizeof(*resp));
	n = snprintf(host, sizeof(host), "%s:%d", ep->host, ep->port);
	rv = n > 0 && (size_t) n < sizeof(host) ? 0 : -1;
	n = snprintf(extra, sizeof(extra),
	    "User-Agent: ebctl\r\nAccept: application/json\r\n"
	    "" EB_ADMIN_CSRF_HEADER ": 1\r\n%s%s%s",
	    token != NULL ? "Authorization: Bearer " : "",
	    token != NULL ? token : "", token != NULL ? "\r\n" : "");
	if (rv != 0 || n < 0 || (size_t) n >= sizeof(extra) ||
	    (token != NULL && strpbrk(token, "\r\n") != NULL)) {
		(void) snprintf(err, errlen, "request too long");
		return -1;
	}
	eb__buf_init(&req);
	if (eb__http_request_write(&req, &rq) != 0) {
		eb__buf_free(&req);
		(void) snprintf(err, errlen, "invalid request path");
		return -1;
	}
	if ((fd = eb__ctl_tcp_connect(ep, deadline, err, errlen)) < 0) {
		eb__buf_free(&req);
		return -1;
	}
	rv = send_request(
	    fd, eb__buf_head(&req), eb__buf_avail(&req), deadline, err, errlen);
	eb__buf_free(&req);
	if (rv == 0) {
		rv = read_response(fd, deadline, resp, err, errlen);
	}
	(void) close(fd);
	return rv == 0 ? 0 : -1;
}
