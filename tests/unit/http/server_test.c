/* Unit tests for http/server.h on a real loop and a real socket:
 * keep-alive with two pipelined requests in one write (both answered, in
 * order, the second closing), 404/405, the auth callback and open routes,
 * the reader's bounds as answers (413 head and body, 400 garbage), the
 * request deadline closing a client that never finishes its head, and the
 * eviction of the oldest idle connection when every slot is taken. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/server.h"
#include "tests/harness/th.h"

/* ---- a raw HTTP client on the loop ---- */

typedef struct client {
	uv_tcp_t     tcp;
	uv_connect_t conn;
	uv_write_t   wr;
	char         req[2048];
	char         resp[8192];
	size_t       len;
	int          done; /* the connection is closed */
} client;

static void
cl_closed_cb(uv_handle_t *h)
{
	((client *) h->data)->done = 1;
}

static void
cl_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
	client *c = h->data;

	(void) suggested;
	b->base = c->resp + c->len;
	b->len = sizeof(c->resp) - 1 - c->len;
}

static void
cl_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	client *c = s->data;

	(void) b;
	if (n > 0) {
		c->len += (size_t) n;
		c->resp[c->len] = '\0';
	} else if (n < 0) {
		uv_close((uv_handle_t *) &c->tcp, cl_closed_cb);
	}
}

static void
cl_write_cb(uv_write_t *w, int status)
{
	(void) w;
	(void) status; /* a refused client may see a reset */
}

static void
cl_connect_cb(uv_connect_t *req, int status)
{
	client  *c = req->data;
	uv_buf_t b = uv_buf_init(c->req, (unsigned) strlen(c->req));

	assert_int_equal(status, 0);
	assert_int_equal(
	    uv_read_start((uv_stream_t *) &c->tcp, cl_alloc_cb, cl_read_cb), 0);
	c->wr.data = c;
	assert_int_equal(
	    uv_write(&c->wr, (uv_stream_t *) &c->tcp, &b, 1, cl_write_cb), 0);
}

/* Connects and sends bytes in one write (the loop is not run). */
static void
cl_start(th_loop *t, int port, const char *bytes, client *c)
{
	struct sockaddr_in sa;

	memset(c, 0, sizeof(*c));
	(void) snprintf(c->req, sizeof(c->req), "%s", bytes);
	assert_int_equal(uv_ip4_addr("127.0.0.1", port, &sa), 0);
	assert_int_equal(uv_tcp_init(&t->loop, &c->tcp), 0);
	c->tcp.data = c;
	c->conn.data = c;
	assert_int_equal(uv_tcp_connect(&c->conn, &c->tcp,
	                     (const struct sockaddr *) &sa, cl_connect_cb),
	    0);
}

/* Sends bytes and runs the loop until the server closed. */
static void
cl_raw(th_loop *t, int port, const char *bytes, client *c)
{
	cl_start(t, port, bytes, c);
	assert_int_equal(th_run_until(t, th_flag_set, &c->done, 5000), 0);
}

static int
count_of(const char *hay, const char *needle)
{
	int n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

/* ---- the server under test ---- */

static void
echo_route(const eb__http_req *rq, eb__http_resp *rs, void *arg)
{
	char b[256];

	(void) arg;
	(void) snprintf(b, sizeof(b), "%s %s q=%s body=%s", rq->method,
	    rq->path, rq->query, rq->body);
	eb__http_reply_text(rs, 200, "text/plain", b, strlen(b));
}

static int
auth_cb(const char *auth, size_t len, void *arg)
{
	(void) arg;
	return len == 6 && memcmp(auth, "Bearer", 6) == 0;
}

static void
closed_cb(void *arg)
{
	(*(int *) arg)++;
}

static eb__http_server *
server(th_loop *t, const eb__http_server_opts *o, int *port)
{
	eb__http_server *srv = NULL;

	assert_int_equal(eb__http_server_new(&t->loop, o, &srv), 0);
	eb__http_server_route(srv, "GET", "/echo", echo_route, NULL);
	eb__http_server_route(srv, "POST", "/echo", echo_route, NULL);
	eb__http_server_route_open(srv, "GET", "/open", echo_route, NULL);
	*port = eb__http_server_start(srv);
	assert_true(*port > 0);
	return srv;
}

static void
close_server(th_loop *t, eb__http_server *srv)
{
	int closed = 0;

	eb__http_server_close(srv, closed_cb, &closed);
	assert_int_equal(closed, 0); /* never from inside close */
	assert_int_equal(th_run_until(t, th_flag_set, &closed, 5000), 0);
	assert_int_equal(closed, 1);
	assert_int_equal(th_loop_run(t), 0);
}

static void
test_pipelined_keep_alive(void **state)
{
	th_loop             *t = *state;
	eb__http_server_opts o;
	eb__http_server     *srv;
	client               c;
	int                  port;
	const char          *second;

	eb__http_server_opts_init(&o);
	srv = server(t, &o, &port);
	cl_raw(t, port,
	    "GET /echo?a=1 HTTP/1.1\r\nHost: x\r\n\r\n"
	    "POST /echo HTTP/1.1\r\nHost: x\r\nX-Ebnode-Admin: 1\r\n"
	    "Content-Length: 3\r\nConnection: close\r\n\r\nxyz",
	    &c);
	assert_int_equal(count_of(c.resp, "HTTP/1.1 200 OK\r\n"), 2);
	second = strstr(c.resp + 1, "HTTP/1.1 200");
	assert_non_null(second);
	assert_non_null(strstr(c.resp, "Connection: keep-alive\r\n"));
	assert_true(strstr(c.resp, "GET /echo q=a=1 body=") < second);
	assert_non_null(strstr(second, "Connection: close\r\n"));
	assert_non_null(strstr(second, "POST /echo q= body=xyz"));
	close_server(t, srv);
}

static void
test_routes_and_auth(void **state)
{
	th_loop             *t = *state;
	eb__http_server_opts o;
	eb__http_server     *srv;
	client               c;
	int                  port;

	eb__http_server_opts_init(&o);
	o.auth = auth_cb;
	srv = server(t, &o, &port);
	cl_raw(t, port, "GET /nope HTTP/1.1\r\nConnection: close\r\n\r\n", &c);
	assert_non_null(strstr(c.resp, "HTTP/1.1 401 "));
	cl_raw(t, port,
	    "GET /nope HTTP/1.1\r\nAuthorization: Bearer\r\n"
	    "Connection: close\r\n\r\n",
	    &c);
	assert_non_null(strstr(c.resp, "HTTP/1.1 404 "));
	cl_raw(t, port,
	    "PUT /echo HTTP/1.1\r\nAuthorization: Bearer\r\n"
	    "X-Ebnode-Admin: 1\r\nConnection: close\r\n\r\n",
	    &c);
	assert_non_null(strstr(c.resp, "HTTP/1.1 405 "));
	cl_raw(t, port, "GET /open HTTP/1.1\r\nConnection: close\r\n\r\n", &c);
	assert_non_null(strstr(c.resp, "HTTP/1.1 200 "));
	/* A write from another origin: 403 before auth. */
	cl_raw(t, port,
	    "POST /echo HTTP/1.1\r\nOrigin: http://evil\r\nHost: x\r\n"
	    "Connection: close\r\n\r\n",
	    &c);
	assert_non_null(strstr(c.resp, "HTTP/1.1 403 "));
	close_server(t, srv);
}

static void
test_bounds(void **state)
{
	th_loop             *t = *state;
	eb__http_server_opts o;
	eb__http_server     *srv;
	client               c;
	char                 req[1500];
	int                  port;

	eb__http_server_opts_init(&o);
	o.max_head = 256;
	o.max_body = 8;
	srv = server(t, &o, &port);
	(void) snprintf(req, sizeof(req),
	    "GET /echo HTTP/1.1\r\nX-Big: %0*d\r\n\r\n", 300, 0);
	cl_raw(t, port, req, &c);
	assert_non_null(strstr(c.resp, "HTTP/1.1 413 "));
	assert_non_null(strstr(c.resp, "head too large"));
	cl_raw(t, port,
	    "POST /echo HTTP/1.1\r\nX-Ebnode-Admin: 1\r\n"
	    "Content-Length: 9\r\n\r\n123456789",
	    &c);
	assert_non_null(strstr(c.resp, "HTTP/1.1 413 "));
	assert_non_null(strstr(c.resp, "body too large"));
	cl_raw(t, port, "\x01garbage\r\n\r\n", &c);
	assert_non_null(strstr(c.resp, "HTTP/1.1 400 "));
	close_server(t, srv);
}

static void
test_deadline_and_eviction(void **state)
{
	th_loop             *t = *state;
	eb__http_server_opts o;
	eb__http_server     *srv;
	client               slow;
	client               c;
	int                  port;

	eb__http_server_opts_init(&o);
	o.request_timeout_ms = 100;
	srv = server(t, &o, &port);
	/* A head never finished: closed at its deadline, unanswered. */
	cl_raw(t, port, "GET /echo HTTP/1.1\r\nHo", &slow);
	assert_int_equal(slow.len, 0);
	close_server(t, srv);

	/* One slot: the idle connection makes room for the new one. */
	o.request_timeout_ms = 10000;
	o.max_conns = 1;
	srv = server(t, &o, &port);
	cl_start(t, port, "GET /echo HTTP/1.1\r\nHo", &slow);
	cl_raw(t, port, "GET /echo HTTP/1.1\r\nConnection: close\r\n\r\n", &c);
	assert_non_null(strstr(c.resp, "HTTP/1.1 200 "));
	assert_int_equal(th_run_until(t, th_flag_set, &slow.done, 5000), 0);
	assert_int_equal(slow.len, 0);
	close_server(t, srv);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_pipelined_keep_alive, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_routes_and_auth, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_bounds, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_deadline_and_eviction, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
