/* Unit tests for the admin server (admin/admin.h) on a real loop and a
 * real socket: routes registered with their argument, 404/405, the token,
 * cross-site writes refused (403 before 405), GET /metrics running the
 * collectors in order, asynchronous routes (answered later, at once, or
 * never: the deadline closes the connection and a late answer finds
 * nothing), close (every handle gone, the callback called once), and
 * EB_ASSERT on a double close or a start after close. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "admin/admin.h"
#include "tests/harness/th.h"
#include "tests/harness/th_http.h"

/* ---- requests (tests/harness/th_http.h) ---- */

/* Sends "METHOD path" (Connection: close, optional bearer token and extra
 * header lines) and runs the loop until the server closed; the response is
 * in c->resp. */
static void
http_x(th_loop *t, int port, const char *method, const char *path,
    const char *token, const char *extra, th_http *c)
{
	char req[512];

	(void) snprintf(req, sizeof(req),
	    "%s %s HTTP/1.1\r\nHost: x\r\n%s%s%s%sConnection: close\r\n"
	    "Content-Length: 0\r\n\r\n",
	    method, path, token != NULL ? "Authorization: Bearer " : "",
	    token != NULL ? token : "", token != NULL ? "\r\n" : "",
	    extra != NULL ? extra : "");
	th_http_run(t, port, req, c);
}

static void
http(th_loop *t, int port, const char *method, const char *path,
    const char *token, th_http *c)
{
	http_x(t, port, method, path, token, NULL, c);
}

/* ---- routes and collectors under test ---- */

static void
hello_route(const eb__admin_req *rq, eb__admin_resp *rs, void *arg)
{
	json_t *o = json_pack(
	    "{s:s, s:s}", "hello", (const char *) arg, "query", rq->query);

	eb__admin_reply_json(rs, 200, o);
	json_decref(o);
}

static void
silent_route(const eb__admin_req *rq, eb__admin_resp *rs, void *arg)
{
	(void) rq;
	(void) rs;
	(void) arg;
}

static void
first_collector(eb__prom *w, void *arg)
{
	eb__prom_one(w, "first", "gauge", "First.", *(uint64_t *) arg);
}

static void
second_collector(eb__prom *w, void *arg)
{
	(void) arg;
	eb__prom_one(w, "second", "counter", "Second.", 2);
}

static void
closed_cb(void *arg)
{
	(*(int *) arg)++;
}

static char world[] = "world";

static eb__admin *
server(th_loop *t, const char *token, int *port)
{
	eb__admin_opts o;
	eb__admin     *adm = NULL;

	eb__admin_opts_init(&o);
	o.token = token;
	assert_int_equal(eb__admin_new(&t->loop, &o, &adm), 0);
	eb__admin_route(adm, "GET", "/hello", hello_route, world);
	eb__admin_route(adm, "GET", "/silent", silent_route, NULL);
	*port = eb__admin_start(adm);
	assert_true(*port > 0);
	return adm;
}

static void
close_server(th_loop *t, eb__admin *adm)
{
	int closed = 0;

	eb__admin_close(adm, closed_cb, &closed);
	assert_int_equal(closed, 0); /* never from inside close */
	assert_int_equal(th_run_until(t, th_flag_set, &closed, 5000), 0);
	assert_int_equal(closed, 1);
	assert_int_equal(th_loop_run(t), 0);
}

static void
test_routes(void **state)
{
	th_loop   *t = *state;
	int        port;
	eb__admin *adm = server(t, NULL, &port);
	th_http    c;

	http(t, port, "GET", "/hello?x=1", NULL, &c);
	assert_int_equal(th_http_status(&c), 200);
	assert_non_null(strstr(c.resp, "Content-Type: application/json\r\n"));
	assert_string_equal(
	    th_http_body(&c), "{\"hello\":\"world\",\"query\":\"x=1\"}");
	/* A write without a token needs the CSRF header, from no foreign
	 * origin: refused before the route is looked up. */
	http(t, port, "POST", "/hello", NULL, &c);
	assert_int_equal(th_http_status(&c), 403);
	http_x(t, port, "POST", "/hello", NULL,
	    "Origin: http://evil.example\r\n" EB_ADMIN_CSRF_HEADER ": 1\r\n",
	    &c);
	assert_int_equal(th_http_status(&c), 403);
	http_x(t, port, "POST", "/hello", NULL, EB_ADMIN_CSRF_HEADER ": 1\r\n",
	    &c);
	assert_int_equal(th_http_status(&c), 405);
	http_x(t, port, "POST", "/hello", NULL,
	    "Origin: http://x\r\n" EB_ADMIN_CSRF_HEADER ": 1\r\n", &c);
	assert_int_equal(
	    th_http_status(&c), 405); /* its own origin (Host: x) */
	http(t, port, "GET", "/nope", NULL, &c);
	assert_int_equal(th_http_status(&c), 404);
	assert_string_equal(th_http_body(&c),
	    "{\"error\":\"not_found\",\"message\":\"no such route\"}");
	http(t, port, "GET", "/silent", NULL, &c);
	assert_int_equal(th_http_status(&c), 500);
	close_server(t, adm);
}

static void
test_token(void **state)
{
	th_loop   *t = *state;
	int        port;
	eb__admin *adm = server(t, "s3cret", &port);
	th_http    c;

	http(t, port, "GET", "/hello", NULL, &c);
	assert_int_equal(th_http_status(&c), 401);
	assert_non_null(strstr(c.resp, "WWW-Authenticate: Bearer\r\n"));
	http(t, port, "GET", "/hello", "wrong!", &c);
	assert_int_equal(th_http_status(&c), 401);
	http(t, port, "GET", "/hello", "s3cret", &c);
	assert_int_equal(th_http_status(&c), 200);
	close_server(t, adm);
}

static void
test_metrics_in_order(void **state)
{
	th_loop   *t = *state;
	int        port;
	eb__admin *adm = server(t, NULL, &port);
	uint64_t   v = 7;
	th_http    c;

	eb__admin_on_metrics(adm, first_collector, &v);
	eb__admin_on_metrics(adm, second_collector, NULL);
	http(t, port, "GET", "/metrics", NULL, &c);
	assert_int_equal(th_http_status(&c), 200);
	assert_non_null(strstr(c.resp, "Content-Type: text/plain; "
	                               "version=0.0.4; charset=utf-8\r\n"));
	assert_string_equal(th_http_body(&c), "# HELP first First.\n"
	                                      "# TYPE first gauge\n"
	                                      "first 7\n"
	                                      "# HELP second Second.\n"
	                                      "# TYPE second counter\n"
	                                      "second 2\n");
	close_server(t, adm);
}

/* ---- asynchronous routes ---- */

typedef struct async_ctx {
	eb__admin *adm;
	uv_timer_t timer;
	uint64_t   id;
	int        calls;
	int        answered; /* eb__admin_answer's result + 1000 */
} async_ctx;

static void
answer(async_ctx *x, const char *text)
{
	eb__admin_resp rs;

	memset(&rs, 0, sizeof(rs));
	eb__admin_reply_text(&rs, 200, "text/plain", text, strlen(text));
	x->answered = eb__admin_answer(x->adm, x->id, &rs) + 1000;
	free(rs.body);
}

static void
later_timer_cb(uv_timer_t *tm)
{
	answer(tm->data, "later");
}

static void
later_route(eb__admin *adm, const eb__admin_req *rq, uint64_t id, void *arg)
{
	async_ctx *x = arg;

	(void) rq;
	x->adm = adm;
	x->id = id;
	x->calls++;
	assert_int_equal(uv_timer_start(&x->timer, later_timer_cb, 20, 0), 0);
}

static void
now_route(eb__admin *adm, const eb__admin_req *rq, uint64_t id, void *arg)
{
	async_ctx *x = arg;

	(void) rq;
	x->adm = adm;
	x->id = id;
	x->calls++;
	answer(x, "now");
}

static void
never_route(eb__admin *adm, const eb__admin_req *rq, uint64_t id, void *arg)
{
	async_ctx *x = arg;

	(void) rq;
	x->adm = adm;
	x->id = id;
	x->calls++;
}

static void
test_async_routes(void **state)
{
	th_loop       *t = *state;
	eb__admin_opts o;
	eb__admin     *adm = NULL;
	async_ctx      x;
	th_http        c;
	int            port;
	size_t         len = 0;
	char          *text;

	memset(&x, 0, sizeof(x));
	assert_int_equal(uv_timer_init(&t->loop, &x.timer), 0);
	x.timer.data = &x;
	eb__admin_opts_init(&o);
	o.request_timeout_ms = 300;
	assert_int_equal(eb__admin_new(&t->loop, &o, &adm), 0);
	eb__admin_route_async(adm, "GET", "/later", later_route, &x);
	eb__admin_route_async(adm, "GET", "/now", now_route, &x);
	eb__admin_route_async(adm, "GET", "/never", never_route, &x);
	port = eb__admin_start(adm);
	assert_true(port > 0);

	http(t, port, "GET", "/later", NULL, &c);
	assert_int_equal(th_http_status(&c), 200);
	assert_string_equal(th_http_body(&c), "later");
	assert_int_equal(x.answered, 1000);
	http(t, port, "GET", "/now", NULL, &c);
	assert_int_equal(th_http_status(&c), 200);
	assert_string_equal(th_http_body(&c), "now");
	/* Two requests in one write (pipelined): the second is held until
	 * the first's asynchronous answer is written, then served. */
	th_http_run(t, port,
	    "GET /later HTTP/1.1\r\nHost: x\r\n\r\n"
	    "GET /now HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
	    &c);
	assert_non_null(strstr(c.resp, "\r\n\r\nlater"));
	assert_non_null(strstr(c.resp, "\r\n\r\nnow"));
	assert_true(strstr(c.resp, "later") < strstr(c.resp, "now"));
	/* Never answered: the request deadline closes the connection, and
	 * an answer after that finds nothing. */
	http(t, port, "GET", "/never", NULL, &c);
	assert_int_equal(c.len, 0);
	answer(&x, "too late");
	assert_int_equal(x.answered, 1000 + UV_ENOENT);
	assert_int_equal(x.calls, 5);
	/* The GET /metrics body (no collectors here: empty). */
	text = eb__admin_metrics_text(adm, &len);
	assert_non_null(text);
	assert_int_equal(len, strlen(text));
	free(text);
	close_server(t, adm);
	uv_close((uv_handle_t *) &x.timer, NULL);
	assert_int_equal(th_loop_run(t), 0);
}

static void
test_close_with_open_connection(void **state)
{
	th_loop   *t = *state;
	int        port;
	eb__admin *adm = server(t, NULL, &port);
	th_http    c;
	int        closed = 0;

	/* A client that sent half a request: close ends its connection. */
	th_http_start(t, port, "GET /hello HTTP/1.1\r\n", &c);
	assert_int_equal(th_run_until(t, th_flag_set, &c.written, 5000), 0);
	eb__admin_close(adm, closed_cb, &closed);
	assert_int_equal(th_run_until(t, th_flag_set, &c.done, 5000), 0);
	assert_int_equal(closed, 1);
	assert_int_equal(c.len, 0);
	assert_int_equal(th_loop_run(t), 0);
}

static void
test_start_failure_then_close(void **state)
{
	th_loop       *t = *state;
	eb__admin_opts o;
	eb__admin     *adm = NULL;
	int            closed = 0;

	eb__admin_opts_init(&o);
	o.listen = "not-an-address";
	assert_int_equal(eb__admin_new(&t->loop, &o, &adm), 0);
	assert_true(eb__admin_start(adm) < 0);
	eb__admin_close(adm, closed_cb, &closed);
	assert_int_equal(th_run_until(t, th_flag_set, &closed, 5000), 0);
	o.request_timeout_ms = 0;
	assert_int_equal(eb__admin_new(&t->loop, &o, &adm), UV_EINVAL);
}

/* Runs misuse(adm) in a child on a fresh loop: it must die by EB_ASSERT
 * (SIGABRT), never run on. */
static void
expect_abort(void (*misuse)(eb__admin *adm))
{
	int   st = 0;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		uv_loop_t      loop;
		eb__admin_opts o;
		eb__admin     *adm = NULL;

		if (uv_loop_init(&loop) != 0) {
			_exit(2);
		}
		eb__admin_opts_init(&o);
		if (eb__admin_new(&loop, &o, &adm) != 0) {
			_exit(2);
		}
		misuse(adm);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGABRT);
}

static void
double_close(eb__admin *adm)
{
	eb__admin_close(adm, NULL, NULL);
	eb__admin_close(adm, NULL, NULL);
}

static void
start_after_close(eb__admin *adm)
{
	eb__admin_close(adm, NULL, NULL);
	(void) eb__admin_start(adm);
}

static void
start_twice(eb__admin *adm)
{
	(void) eb__admin_start(adm);
	(void) eb__admin_start(adm);
}

static void
test_lifecycle_asserts(void **state)
{
	(void) state;
	expect_abort(double_close);
	expect_abort(start_after_close);
	expect_abort(start_twice);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_routes, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_token, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_metrics_in_order, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_async_routes, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_close_with_open_connection, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_start_failure_then_close, th_setup, th_teardown),
		cmocka_unit_test(test_lifecycle_asserts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
