/* th_proxy: forwarding, pause/resume, cut/heal, delay (tests/harness/proxy.h).
 */
#include <stdlib.h>
#include <string.h>

#include "tests/harness/proxy.h"
#include "tests/harness/th.h"

/* An echo server on 127.0.0.1:0. */
struct echo {
	uv_tcp_t listener;
	uv_tcp_t peers[8];
	int      npeers;
	int      port;
};

/* A test client: connects, sends, collects what comes back. */
struct client {
	uv_tcp_t     tcp;
	uv_connect_t req;
	int          connected;
	int          eof;
	char         got[256];
	size_t       ngot;
	uint64_t     first_byte_ms;
};

static void
alloc_cb(uv_handle_t *h, size_t n, uv_buf_t *b)
{
	(void) h;
	b->base = malloc(n);
	b->len = n;
}

static void
write_free_cb(uv_write_t *w, int status)
{
	(void) status;
	free(w->data);
	free(w);
}

static void
send_str(uv_stream_t *s, const char *str)
{
	uv_write_t *w = malloc(sizeof(*w));
	uv_buf_t    b;

	b.len = strlen(str);
	b.base = malloc(b.len);
	memcpy(b.base, str, b.len);
	w->data = b.base;
	assert_int_equal(uv_write(w, s, &b, 1, write_free_cb), 0);
}

static void
echo_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	if (n > 0) {
		uv_buf_t    out = uv_buf_init(b->base, (unsigned) n);
		uv_write_t *w = malloc(sizeof(*w));

		w->data = b->base;
		assert_int_equal(uv_write(w, s, &out, 1, write_free_cb), 0);
		return;
	}
	free(b->base);
	if (n < 0) {
		(void) uv_read_stop(s);
	}
}

static void
echo_accept_cb(uv_stream_t *server, int status)
{
	struct echo *e = server->data;
	uv_tcp_t    *t;

	assert_int_equal(status, 0);
	assert_true(e->npeers < 8);
	t = &e->peers[e->npeers++];
	(void) uv_tcp_init(server->loop, t);
	assert_int_equal(uv_accept(server, (uv_stream_t *) t), 0);
	(void) uv_read_start((uv_stream_t *) t, alloc_cb, echo_read_cb);
}

static void
echo_start(uv_loop_t *loop, struct echo *e)
{
	struct sockaddr_in      a;
	struct sockaddr_storage name;
	int                     len = sizeof(name);

	memset(e, 0, sizeof(*e));
	(void) uv_ip4_addr("127.0.0.1", 0, &a);
	(void) uv_tcp_init(loop, &e->listener);
	e->listener.data = e;
	assert_int_equal(
	    uv_tcp_bind(&e->listener, (const struct sockaddr *) &a, 0), 0);
	assert_int_equal(
	    uv_listen((uv_stream_t *) &e->listener, 8, echo_accept_cb), 0);
	assert_int_equal(
	    uv_tcp_getsockname(&e->listener, (struct sockaddr *) &name, &len),
	    0);
	e->port = ntohs(((struct sockaddr_in *) &name)->sin_port);
}

static void
echo_stop(struct echo *e)
{
	int i;

	uv_close((uv_handle_t *) &e->listener, NULL);
	for (i = 0; i < e->npeers; i++) {
		uv_close((uv_handle_t *) &e->peers[i], NULL);
	}
}

static void
client_read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct client *c = s->data;

	if (n > 0) {
		if (c->ngot == 0) {
			c->first_byte_ms = uv_now(s->loop);
		}
		assert_true(c->ngot + (size_t) n <= sizeof(c->got));
		memcpy(c->got + c->ngot, b->base, (size_t) n);
		c->ngot += (size_t) n;
	} else if (n < 0) {
		c->eof = 1;
		(void) uv_read_stop(s);
	}
	free(b->base);
}

static void
client_connect_cb(uv_connect_t *req, int status)
{
	struct client *c = req->data;

	if (status != 0) {
		c->eof = 1;
		return;
	}
	c->connected = 1;
	(void) uv_read_start((uv_stream_t *) &c->tcp, alloc_cb, client_read_cb);
}

static void
client_start(uv_loop_t *loop, struct client *c, int port)
{
	struct sockaddr_in a;

	memset(c, 0, sizeof(*c));
	(void) uv_ip4_addr("127.0.0.1", port, &a);
	(void) uv_tcp_init(loop, &c->tcp);
	c->tcp.data = c;
	c->req.data = c;
	assert_int_equal(uv_tcp_connect(&c->req, &c->tcp,
	                     (const struct sockaddr *) &a, client_connect_cb),
	    0);
}

static int
got_n(void *arg)
{
	struct client *c = arg;

	return c->ngot >= 4 || c->eof;
}

static int
is_connected(void *arg)
{
	struct client *c = arg;

	return c->connected || c->eof;
}

static int
is_eof(void *arg)
{
	return ((struct client *) arg)->eof;
}

static int proxy_closed;

static void
proxy_closed_cb(void *arg)
{
	(void) arg;
	proxy_closed++;
}

static void
finish(th_loop *t, th_proxy *p, struct echo *e, struct client *c, int nc)
{
	int i;

	proxy_closed = 0;
	th_proxy_close(p, proxy_closed_cb, NULL);
	assert_int_equal(proxy_closed, 0); /* never synchronous */
	for (i = 0; i < nc; i++) {
		uv_close((uv_handle_t *) &c[i].tcp, NULL);
	}
	echo_stop(e);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(proxy_closed, 1);
}

static void
test_forward_pause_resume(void **state)
{
	th_loop      *t = *state;
	struct echo   e;
	struct client c;
	th_proxy     *p;

	echo_start(&t->loop, &e);
	assert_int_equal(th_proxy_new(&t->loop, 0, "127.0.0.1", e.port, &p), 0);
	assert_true(th_proxy_port(p) > 0);
	client_start(&t->loop, &c, th_proxy_port(p));
	assert_int_equal(th_run_until(t, is_connected, &c, 2000), 0);
	send_str((uv_stream_t *) &c.tcp, "ping");
	assert_int_equal(th_run_until(t, got_n, &c, 2000), 0);
	assert_memory_equal(c.got, "ping", 4);
	assert_int_equal(th_proxy_active(p), 1);

	/* Paused: nothing comes back, the connection stays open. */
	th_proxy_pause(p);
	c.ngot = 0;
	send_str((uv_stream_t *) &c.tcp, "pong");
	assert_int_equal(th_run_until(t, got_n, &c, 300), -1);
	assert_int_equal(c.ngot, 0);
	assert_int_equal(c.eof, 0);
	/* Resumed: what waited is delivered. */
	th_proxy_resume(p);
	assert_int_equal(th_run_until(t, got_n, &c, 2000), 0);
	assert_memory_equal(c.got, "pong", 4);
	finish(t, p, &e, &c, 1);
}

static void
test_cut_heal(void **state)
{
	th_loop      *t = *state;
	struct echo   e;
	struct client c[3];
	th_proxy     *p;

	echo_start(&t->loop, &e);
	assert_int_equal(th_proxy_new(&t->loop, 0, "127.0.0.1", e.port, &p), 0);
	client_start(&t->loop, &c[0], th_proxy_port(p));
	assert_int_equal(th_run_until(t, is_connected, &c[0], 2000), 0);
	send_str((uv_stream_t *) &c[0].tcp, "abcd");
	assert_int_equal(th_run_until(t, got_n, &c[0], 2000), 0);

	/* Cut: the open connection ends, a new one is refused (closed). */
	th_proxy_cut(p);
	assert_int_equal(th_run_until(t, is_eof, &c[0], 2000), 0);
	client_start(&t->loop, &c[1], th_proxy_port(p));
	assert_int_equal(th_run_until(t, is_eof, &c[1], 2000), 0);
	assert_int_equal(c[1].ngot, 0);
	assert_int_equal(th_proxy_active(p), 0);

	/* Healed: forwarding works again on a new connection. */
	th_proxy_heal(p);
	client_start(&t->loop, &c[2], th_proxy_port(p));
	assert_int_equal(th_run_until(t, is_connected, &c[2], 2000), 0);
	send_str((uv_stream_t *) &c[2].tcp, "wxyz");
	assert_int_equal(th_run_until(t, got_n, &c[2], 2000), 0);
	assert_memory_equal(c[2].got, "wxyz", 4);
	assert_int_equal(th_proxy_accepted(p), 3);
	finish(t, p, &e, c, 3);
}

static void
test_delay(void **state)
{
	th_loop      *t = *state;
	struct echo   e;
	struct client c;
	th_proxy     *p;
	uint64_t      sent;

	echo_start(&t->loop, &e);
	assert_int_equal(th_proxy_new(&t->loop, 0, "127.0.0.1", e.port, &p), 0);
	th_proxy_delay_ms(p, 150);
	client_start(&t->loop, &c, th_proxy_port(p));
	assert_int_equal(th_run_until(t, is_connected, &c, 2000), 0);
	uv_update_time(&t->loop);
	sent = uv_now(&t->loop);
	send_str((uv_stream_t *) &c.tcp, "dly1");
	assert_int_equal(th_run_until(t, got_n, &c, 3000), 0);
	assert_memory_equal(c.got, "dly1", 4);
	/* Delayed once each way. */
	assert_true(c.first_byte_ms - sent >= 300);
	finish(t, p, &e, &c, 1);
}

static void
test_parse_target(void **state)
{
	char host[64];
	int  port = 0;

	(void) state;
	assert_int_equal(
	    th_proxy_parse_target("127.0.0.1:2181", host, sizeof(host), &port),
	    0);
	assert_string_equal(host, "127.0.0.1");
	assert_int_equal(port, 2181);
	assert_int_equal(
	    th_proxy_parse_target("[::1]:99", host, sizeof(host), &port), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(port, 99);
	assert_int_equal(
	    th_proxy_parse_target("x", host, sizeof(host), &port), UV_EINVAL);
	assert_int_equal(
	    th_proxy_parse_target("h:0", host, sizeof(host), &port), UV_EINVAL);
	assert_int_equal(
	    th_proxy_parse_target("h:70000", host, sizeof(host), &port),
	    UV_EINVAL);
	assert_int_equal(
	    th_proxy_parse_target("bad-target:1", host, 4, &port), UV_EINVAL);
}

static void
test_bad_target(void **state)
{
	th_loop  *t = *state;
	th_proxy *p = NULL;

	assert_int_equal(
	    th_proxy_new(&t->loop, 0, "not-an-ip", 1, &p), UV_EINVAL);
	assert_null(p);
	assert_int_equal(th_loop_run(t), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_forward_pause_resume, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_cut_heal, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_delay, th_setup, th_teardown),
		cmocka_unit_test(test_parse_target),
		cmocka_unit_test_setup_teardown(
		    test_bad_target, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
