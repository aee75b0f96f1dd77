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
#include "tests/harness/th_http.h"

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
	th_http              c;
	int                  port;
	const char          *second;

	eb__http_server_opts_init(&o);
	srv = server(t, &o, &port);
	th_http_run(t, port,
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
	th_http              c;
	int                  port;

	eb__http_server_opts_init(&o);
	o.auth = auth_cb;
	srv = server(t, &o, &port);
	th_http_run(
	    t, port, "GET /nope HTTP/1.1\r\nConnection: close\r\n\r\n", &c);
	assert_non_null(strstr(c.resp, "HTTP/1.1 401 "));
	th_http_run(t, port,
	    "GET /nope HTTP/1.1\r\nAuthorization: Bearer\r\n"
	    "Connection: close\r\n\r\n",
	    &c);
	assert_non_null(strstr(c.resp, "HTTP/1.1 404 "));
	th_http_run(t, port,
	    "PUT /echo HTTP/1.1\r\nAuthorization: Bearer\r\n"
	    "X-Ebnode-Admin: 1\r\nConnection: close\r\n\r\n",
	    &c);
	assert_non_null(strstr(c.resp, "HTTP/1.1 405 "));
	th_http_run(
	    t, port, "GET /open HTTP/1.1\r\nConnection: close\r\n\r\n", &c);
	assert_non_null(strstr(c.resp, "HTTP/1.1 200 "));
	/* A write from another origin: 403 before auth. */
	th_http_run(t, port,
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
	th_http              c;
	char                 req[1500];
	int                  port;

	eb__http_server_opts_init(&o);
	o.max_head = 256;
	o.max_body = 8;
	srv = server(t, &o, &port);
	(void) snprintf(req, sizeof(req),
	    "GET /echo HTTP/1.1\r\nX-Big: %0*d\r\n\r\n", 300, 0);
	th_http_run(t, port, req, &c);
	assert_non_null(strstr(c.resp, "HTTP/1.1 413 "));
	assert_non_null(strstr(c.resp, "head too large"));
	th_http_run(t, port,
	    "POST /echo HTTP/1.1\r\nX-Ebnode-Admin: 1\r\n"
	    "Content-Length: 9\r\n\r\n123456789",
	    &c);
	assert_non_null(strstr(c.resp, "HTTP/1.1 413 "));
	assert_non_null(strstr(c.resp, "body too large"));
	th_http_run(t, port, "\x01garbage\r\n\r\n", &c);
	assert_non_null(strstr(c.resp, "HTTP/1.1 400 "));
	close_server(t, srv);
}

static void
test_deadline_and_eviction(void **state)
{
	th_loop             *t = *state;
	eb__http_server_opts o;
	eb__http_server     *srv;
	th_http              slow;
	th_http              c;
	int                  port;

	eb__http_server_opts_init(&o);
	o.request_timeout_ms = 100;
	srv = server(t, &o, &port);
	/* A head never finished: closed at its deadline, unanswered. */
	th_http_run(t, port, "GET /echo HTTP/1.1\r\nHo", &slow);
	assert_int_equal(slow.len, 0);
	close_server(t, srv);

	/* One slot: the idle connection makes room for the new one. */
	o.request_timeout_ms = 10000;
	o.max_conns = 1;
	srv = server(t, &o, &port);
	th_http_start(t, port, "GET /echo HTTP/1.1\r\nHo", &slow);
	th_http_run(
	    t, port, "GET /echo HTTP/1.1\r\nConnection: close\r\n\r\n", &c);
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
