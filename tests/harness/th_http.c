/* The one-shot HTTP client of the unit tests (th_http.h). */
#include "tests/harness/th_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
closed_cb(uv_handle_t *h)
{
	((th_http *) h->data)->done = 1;
}

static void
alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
	th_http *c = h->data;

	(void) suggested;
	b->base = c->resp + c->len;
	b->len = sizeof(c->resp) - 1 - c->len;
}

static void
read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	th_http *c = s->data;

	(void) b;
	if (n > 0) {
		c->len += (size_t) n;
		c->resp[c->len] = '\0';
	} else if (n < 0) {
		uv_close((uv_handle_t *) &c->tcp, closed_cb);
	}
}

static void
write_cb(uv_write_t *w, int status)
{
	assert_int_equal(status, 0);
	((th_http *) w->data)->written = 1;
}

static void
connect_cb(uv_connect_t *req, int status)
{
	th_http *c = req->data;
	uv_buf_t b = uv_buf_init(c->req, (unsigned) strlen(c->req));

	assert_int_equal(status, 0);
	assert_int_equal(
	    uv_read_start((uv_stream_t *) &c->tcp, alloc_cb, read_cb), 0);
	c->wr.data = c;
	assert_int_equal(
	    uv_write(&c->wr, (uv_stream_t *) &c->tcp, &b, 1, write_cb), 0);
}

void
th_http_start(th_loop *t, int port, const char *bytes, th_http *c)
{
	struct sockaddr_in sa;

	memset(c, 0, sizeof(*c));
	assert_true(strlen(bytes) < sizeof(c->req));
	(void) snprintf(c->req, sizeof(c->req), "%s", bytes);
	assert_int_equal(uv_ip4_addr("127.0.0.1", port, &sa), 0);
	assert_int_equal(uv_tcp_init(&t->loop, &c->tcp), 0);
	c->tcp.data = c;
	c->conn.data = c;
	assert_int_equal(uv_tcp_connect(&c->conn, &c->tcp,
	                     (const struct sockaddr *) &sa, connect_cb),
	    0);
}

void
th_http_run(th_loop *t, int port, const char *bytes, th_http *c)
{
	th_http_start(t, port, bytes, c);
	assert_int_equal(th_run_until(t, th_flag_set, &c->done, 5000), 0);
}

int
th_http_status(const th_http *c)
{
	static const char pre[] = "HTTP/1.1 ";
	char             *end = NULL;
	long              st;

	assert_int_equal(strncmp(c->resp, pre, sizeof(pre) - 1), 0);
	st = strtol(c->resp + sizeof(pre) - 1, &end, 10);
	assert_true(end != NULL && *end == ' ');
	return (int) st;
}

const char *
th_http_body(const th_http *c)
{
	const char *b = strstr(c->resp, "\r\n\r\n");

	assert_non_null(b);
	return b + 4;
}
