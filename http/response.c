/*
 * The HTTP/1.1 response writer (response.h). Loop thread only.
 */
#include "http/response.h"

#include <stdio.h>
#include <string.h>

#include "common/assert.h"

const char *
eb__http_status_text(int status)
{
	static const struct {
		int         status;
		const char *text;
	} table[] = {
		{ 101, "Switching Protocols" },
		{ 200, "OK" },
		{ 201, "Created" },
		{ 202, "Accepted" },
		{ 204, "No Content" },
		{ 400, "Bad Request" },
		{ 401, "Unauthorized" },
		{ 403, "Forbidden" },
		{ 404, "Not Found" },
		{ 405, "Method Not Allowed" },
		{ 408, "Request Timeout" },
		{ 409, "Conflict" },
		{ 413, "Payload Too Large" },
		{ 429, "Too Many Requests" },
		{ 431, "Request Header Fields Too Large" },
		{ 500, "Internal Server Error" },
		{ 502, "Bad Gateway" },
		{ 503, "Service Unavailable" },
		{ 504, "Gateway Timeout" },
	};
	size_t i;

	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (table[i].status == status) {
			return table[i].text;
		}
	}
	return "Internal Server Error";
}

/* Appends one formatted header line "name: value\r\n". */
static void
line(eb__buf *out, const char *name, const char *value)
{
	size_t nl = strlen(name);
	size_t vl = strlen(value);

	eb__buf_append(out, name, nl);
	eb__buf_append(out, ": ", 2);
	eb__buf_append(out, value, vl);
	eb__buf_append(out, "\r\n", 2);
}

void
eb__http_head_write(eb__buf *out, const eb__http_resp_head *h)
{
	char s[64];
	int  n;

	EB_ASSERT(h->status >= 100 && h->status <= 999);
	n = snprintf(s, sizeof(s), "HTTP/1.1 %d ", h->status);
	EB_ASSERT(n > 0 && (size_t) n < sizeof(s));
	eb__buf_append(out, s, (size_t) n);
	eb__buf_append(out, eb__http_status_text(h->status),
	    strlen(eb__http_status_text(h->status)));
	eb__buf_append(out, "\r\n", 2);
	if (h->content_type != NULL) {
		line(out, "Content-Type", h->content_type);
	}
	if (h->chunked) {
		line(out, "Transfer-Encoding", "chunked");
	} else if (h->status != 101) {
		n = snprintf(s, sizeof(s), "%zu", h->content_length);
		EB_ASSERT(n > 0 && (size_t) n < sizeof(s));
		line(out, "Content-Length", s);
	}
	if (h->cache_control != NULL) {
		line(out, "Cache-Control", h->cache_control);
	}
	if (h->connection != NULL) {
		line(out, "Connection", h->connection);
	}
	if (h->extra != NULL) {
		eb__buf_append(out, h->extra, strlen(h->extra));
	}
	eb__buf_append(out, "\r\n", 2);
}

void
eb__http_response_write(eb__buf *out, const eb__http_resp_head *h,
    const char *body, size_t body_len, int head_only)
{
	eb__http_resp_head hh = *h;

	hh.content_length = body_len;
	eb__http_head_write(out, &hh);
	if (!head_only && body_len > 0) {
		eb__buf_append(out, body, body_len);
	}
}

void
eb__http_cors_echo(const char *origin, char *out, size_t n)
{
	const char *o = origin != NULL && origin[0] != '\0' ? origin : "*";
	int         w;

	w = snprintf(out, n,
	    "Access-Control-Allow-Origin: %s\r\n"
	    "Access-Control-Allow-Credentials: true\r\n"
	    "Vary: Origin\r\n",
	    o);
	if (w < 0 || (size_t) w >= n) {
		out[0] = '\0';
	}
}
