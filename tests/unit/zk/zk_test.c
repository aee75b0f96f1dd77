/*
 * eb__zk without a server: the common part (zk_core.c) through a stub backend
 * (state transitions, lease base, ensure_path, argument checks), and the real
 * backend (zk.c) against a port nobody listens on (close semantics).
 */
#include <stdlib.h>
#include <string.h>

#include "tests/harness/th.h"
#include "zk/zk.h"
#include "zk/zk_int.h"
#include "zk/zk_ops.h"

/* ---- a stub backend ------------------------------------------------------ */

struct stub {
	uv_timer_t       timer; /* completes the one pending create */
	eb__zk          *zk;
	char             paths[8][64];
	int              npaths;
	int              fail_at;     /* create index that fails (-1: none) */
	int              fail_status; /* its status */
	int              exists_at;   /* create index answering NODEEXISTS */
	eb__zk_create_cb cb;
	void            *arg;
	int              status;
	int              exists_calls;
	eb__zk_stat_cb   stat_cb;
	int              closing;
};

static void
stub_timer_cb(uv_timer_t *t)
{
	struct stub *s = t->data;

	if (s->closing) {
		eb__zk_closed(s->zk);
		return;
	}
	if (s->stat_cb != NULL) {
		eb__zk_stat_cb cb = s->stat_cb;

		s->stat_cb = NULL;
		cb(s->zk, 0, NULL, s->arg);
		return;
	}
	s->cb(s->zk, s->status, s->paths[s->npaths - 1], s->arg);
}

static int
stub_start(eb__zk *zk)
{
	(void) zk;
	return 0;
}

static void
stub_close(eb__zk *zk)
{
	struct stub *s = zk->impl;

	s->closing = 1;
	(void) uv_timer_start(&s->timer, stub_timer_cb, 0, 0);
}

static int
stub_create(eb__zk *zk, const char *path, const char *data, size_t len,
    int flags, eb__zk_create_cb cb, void *arg)
{
	struct stub *s = zk->impl;
	int          i = s->npaths;

	(void) data;
	(void) len;
	assert_int_equal(flags, 0);
	assert_true(i < 8);
	(void) strncpy(s->paths[i], path, sizeof(s->paths[i]) - 1);
	s->npaths++;
	s->cb = cb;
	s->arg = arg;
	s->status = i == s->fail_at     ? s->fail_status
	            : i == s->exists_at ? EB_EZKNODEEXISTS
	                                : 0;
	(void) uv_timer_start(&s->timer, stub_timer_cb, 0, 0);
	return 0;
}

static int
stub_exists(eb__zk *zk, const char *path, eb__zk_watch_cb watch,
    void *watch_arg, eb__zk_stat_cb cb, void *arg)
{
	struct stub *s = zk->impl;

	(void) watch;
	(void) watch_arg;
	assert_string_equal(path, "/");
	s->exists_calls++;
	s->stat_cb = cb;
	s->arg = arg;
	(void) uv_timer_start(&s->timer, stub_timer_cb, 0, 0);
	return 0;
}

static int
stub_multi(eb__zk *zk, const eb__zk_op *ops, size_t count, eb__zk_multi_cb cb,
    void *arg)
{
	(void) zk;
	(void) ops;
	(void) count;
	(void) cb;
	(void) arg;
	fail_msg("multi must not reach the backend with bad arguments");
	return 0;
}

static const eb__zk_ops stub_ops = {
	.start = stub_start,
	.close = stub_close,
	.create = stub_create,
	.exists = stub_exists,
	.multi = stub_multi,
};

struct events {
	eb__zk_event ev[16];
	int          n;
};

static void
on_event(eb__zk *zk, eb__zk_event ev, void *arg)
{
	struct events *e = arg;

	(void) zk;
	assert_true(e->n < 16);
	e->ev[e->n++] = ev;
}

static int closed;

static void
on_closed(eb__zk *zk, void *arg)
{
	(void) zk;
	(void) arg;
	closed++;
}

static eb__zk *
stub_new(th_loop *t, struct stub *s, struct events *e)
{
	eb__zk *zk = NULL;

	memset(s, 0, sizeof(*s));
	s->fail_at = -1;
	s->exists_at = -1;
	(void) uv_timer_init(&t->loop, &s->timer);
	s->timer.data = s;
	assert_int_equal(
	    eb__zk_new_with_ops(&t->loop, &stub_ops, s, 4000, on_event, e, &zk),
	    0);
	s->zk = zk;
	return zk;
}

static void
stub_finish(th_loop *t, eb__zk *zk)
{
	closed = 0;
	eb__zk_close(zk, on_closed, NULL);
	assert_int_equal(closed, 0);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(closed, 1);
}

/* ---- common part --------------------------------------------------------- */

static void
test_opts_defaults(void **state)
{
	eb__zk_opts o;

	(void) state;
	memset(&o, 0x5a, sizeof(o));
	eb__zk_opts_init(&o);
	assert_null(o.connect);
	assert_int_equal(o.session_timeout_ms, 10000);
	assert_null(o.auth_scheme);
	assert_null(o.auth_credentials);
	assert_int_equal(o.acl, EB_ZK_ACL_OPEN);
}

static void
test_state_names(void **state)
{
	(void) state;
	assert_string_equal(
	    eb__zk_state_name(EB_ZK_STATE_CONNECTING), "connecting");
	assert_string_equal(
	    eb__zk_state_name(EB_ZK_STATE_CONNECTED), "connected");
	assert_string_equal(
	    eb__zk_state_name(EB_ZK_STATE_SUSPENDED), "suspended");
	assert_string_equal(eb__zk_state_name(EB_ZK_STATE_CLOSED), "closed");
	assert_string_equal(eb__zk_state_name((eb__zk_state) 7), "closed");
}

static void
test_session_transitions(void **state)
{
	th_loop      *t = *state;
	struct stub   s;
	struct events e = { .n = 0 };
	eb__zk       *zk = stub_new(t, &s, &e);

	assert_int_equal(eb__zk_get_state(zk), EB_ZK_STATE_CONNECTING);
	assert_int_equal(eb__zk_session_id(zk), 0);
	assert_int_equal(eb__zk_session_timeout_ms(zk), 4000);
	assert_int_equal(eb__zk_last_ok_send_ms(zk), 0);
	assert_int_equal(eb__zk_start(zk), 0);
	assert_int_equal(eb__zk_start(zk), EB_EZKINVALIDSTATE); /* once */

	eb__zk_emit(zk, EB_ZK_EV_CONNECTED, 0x11);
	assert_int_equal(eb__zk_get_state(zk), EB_ZK_STATE_CONNECTED);
	assert_int_equal(eb__zk_session_id(zk), 0x11);
	/* The lease base only moves forward. */
	eb__zk_note_ok(zk, 100);
	eb__zk_note_ok(zk, 50);
	assert_int_equal(eb__zk_last_ok_send_ms(zk), 100);

	eb__zk_emit(zk, EB_ZK_EV_SUSPENDED, 0x11);
	assert_int_equal(eb__zk_get_state(zk), EB_ZK_STATE_SUSPENDED);
	assert_int_equal(eb__zk_last_ok_send_ms(zk), 100);
	eb__zk_emit(zk, EB_ZK_EV_RECONNECTED, 0x11);
	assert_int_equal(eb__zk_get_state(zk), EB_ZK_STATE_CONNECTED);
	assert_int_equal(eb__zk_session_id(zk), 0x11);

	/* Expiry: no lease from the dead session, the id names it until the
	 * next session is up. */
	eb__zk_emit(zk, EB_ZK_EV_EXPIRED, 0x11);
	assert_int_equal(eb__zk_get_state(zk), EB_ZK_STATE_CONNECTING);
	assert_int_equal(eb__zk_last_ok_send_ms(zk), 0);
	assert_int_equal(eb__zk_session_id(zk), 0x11);
	eb__zk_emit(zk, EB_ZK_EV_CONNECTED, 0x22);
	assert_int_equal(eb__zk_session_id(zk), 0x22);
	eb__zk_emit(zk, EB_ZK_EV_AUTH_FAILED, 0x22);
	assert_int_equal(eb__zk_get_state(zk), EB_ZK_STATE_CONNECTING);

	assert_int_equal(e.n, 6);
	assert_int_equal(e.ev[0], EB_ZK_EV_CONNECTED);
	assert_int_equal(e.ev[1], EB_ZK_EV_SUSPENDED);
	assert_int_equal(e.ev[2], EB_ZK_EV_RECONNECTED);
	assert_int_equal(e.ev[3], EB_ZK_EV_EXPIRED);
	assert_int_equal(e.ev[4], EB_ZK_EV_CONNECTED);
	assert_int_equal(e.ev[5], EB_ZK_EV_AUTH_FAILED);

	closed = 0;
	eb__zk_close(zk, on_closed, NULL);
	assert_int_equal(eb__zk_get_state(zk), EB_ZK_STATE_CLOSED);
	/* After close the owner hears nothing more. */
	eb__zk_emit(zk, EB_ZK_EV_CONNECTED, 0x33);
	assert_int_equal(e.n, 6);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(closed, 1);
	uv_close((uv_handle_t *) &s.timer, NULL);
	assert_int_equal(th_loop_run(t), 0);
}

static void
dummy_create_cb(eb__zk *zk, int status, const char *path, void *arg)
{
	(void) zk;
	(void) status;
	(void) path;
	(void) arg;
	fail_msg("no callback expected");
}

static void
dummy_void_cb(eb__zk *zk, int status, void *arg)
{
	(void) zk;
	(void) status;
	(void) arg;
	fail_msg("no callback expected");
}

static void
dummy_multi_cb(
    eb__zk *zk, int status, const eb__zk_op_result *r, size_t n, void *arg)
{
	(void) zk;
	(void) status;
	(void) r;
	(void) n;
	(void) arg;
	fail_msg("no callback expected");
}

static void
test_argument_and_state_checks(void **state)
{
	th_loop      *t = *state;
	struct stub   s;
	struct events e = { .n = 0 };
	eb__zk       *zk = stub_new(t, &s, &e);
	eb__zk_op     op = { .type = EB_ZK_OP_CHECK, .path = "/x" };
	eb__zk_op     bad = { .type = (eb__zk_op_type) 9, .path = "/x" };

	/* Not started yet. */
	assert_int_equal(
	    eb__zk_create(zk, "/a", NULL, 0, 0, dummy_create_cb, NULL),
	    EB_EZKINVALIDSTATE);
	assert_int_equal(eb__zk_start(zk), 0);
	assert_int_equal(
	    eb__zk_create(zk, "a", NULL, 0, 0, dummy_create_cb, NULL),
	    EB_EZKBADARGS);
	assert_int_equal(
	    eb__zk_create(zk, "/a", NULL, 0, 8, dummy_create_cb, NULL),
	    EB_EZKBADARGS);
	assert_int_equal(
	    eb__zk_create(zk, "/a", NULL, 0, 0, NULL, NULL), EB_EZKBADARGS);
	assert_int_equal(
	    eb__zk_multi(zk, NULL, 1, dummy_multi_cb, NULL), EB_EZKBADARGS);
	assert_int_equal(
	    eb__zk_multi(zk, &op, 0, dummy_multi_cb, NULL), EB_EZKBADARGS);
	assert_int_equal(
	    eb__zk_multi(zk, &bad, 1, dummy_multi_cb, NULL), EB_EZKBADARGS);
	assert_int_equal(
	    eb__zk_ensure_path(zk, "/a/", dummy_void_cb, NULL), EB_EZKBADARGS);
	assert_int_equal(eb__zk_ensure_path(zk, "/a//b", dummy_void_cb, NULL),
	    EB_EZKBADARGS);
	assert_int_equal(
	    eb__zk_ensure_path(zk, "a/b", dummy_void_cb, NULL), EB_EZKBADARGS);
	assert_int_equal(s.npaths, 0);

	closed = 0;
	eb__zk_close(zk, on_closed, NULL);
	/* Closing: everything is refused, nothing is called back. */
	assert_int_equal(
	    eb__zk_create(zk, "/a", NULL, 0, 0, dummy_create_cb, NULL),
	    EB_ECLOSED);
	assert_int_equal(
	    eb__zk_ensure_path(zk, "/a", dummy_void_cb, NULL), EB_ECLOSED);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(closed, 1);
	uv_close((uv_handle_t *) &s.timer, NULL);
	assert_int_equal(th_loop_run(t), 0);
}

struct ensure_result {
	int calls;
	int status;
};

static void
ensure_cb(eb__zk *zk, int status, void *arg)
{
	struct ensure_result *r = arg;

	(void) zk;
	r->calls++;
	r->status = status;
}

static void
run_ensure(th_loop *t, const char *path, int fail_at, int fail_status,
    int exists_at, struct stub *s, struct ensure_result *res)
{
	struct events e = { .n = 0 };
	eb__zk       *zk = stub_new(t, s, &e);

	s->fail_at = fail_at;
	s->fail_status = fail_status;
	s->exists_at = exists_at;
	memset(res, 0, sizeof(*res));
	assert_int_equal(eb__zk_start(zk), 0);
	assert_int_equal(eb__zk_ensure_path(zk, path, ensure_cb, res), 0);
	assert_int_equal(res->calls, 0); /* never from inside the call */
	/* The stub completes from timers only: run until nothing is left. */
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(res->calls, 1);
	stub_finish(t, zk);
	uv_close((uv_handle_t *) &s->timer, NULL);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(res->calls, 1);
}

static void
test_ensure_path(void **state)
{
	th_loop             *t = *state;
	struct stub          s;
	struct ensure_result r;

	/* Top-down, an existing level is fine. */
	run_ensure(t, "/a/b/c", -1, 0, 0, &s, &r);
	assert_int_equal(r.status, 0);
	assert_int_equal(s.npaths, 3);
	assert_string_equal(s.paths[0], "/a");
	assert_string_equal(s.paths[1], "/a/b");
	assert_string_equal(s.paths[2], "/a/b/c");

	/* Another error stops at that level and is the status. */
	run_ensure(t, "/a/b/c", 1, EB_EZKNOAUTH, -1, &s, &r);
	assert_int_equal(r.status, EB_EZKNOAUTH);
	assert_int_equal(s.npaths, 2);

	/* The whole path existing is success too. */
	run_ensure(t, "/x", -1, 0, 0, &s, &r);
	assert_int_equal(r.status, 0);
	assert_int_equal(s.npaths, 1);

	/* "/" needs no create: one exists() round trip. */
	run_ensure(t, "/", -1, 0, -1, &s, &r);
	assert_int_equal(r.status, 0);
	assert_int_equal(s.npaths, 0);
	assert_int_equal(s.exists_calls, 1);
}

/* ---- request sizes --------------------------------------------------------
 */

static void
count_create_cb(eb__zk *zk, int status, const char *path, void *arg)
{
	(void) zk;
	(void) path;
	assert_int_equal(status, 0);
	(*(int *) arg)++;
}

static void
dummy_stat_cb(eb__zk *zk, int status, const eb__zk_stat *st, void *arg)
{
	(void) zk;
	(void) status;
	(void) st;
	(void) arg;
	fail_msg("a refused request must not call back");
}

static void
dummy_data_cb(eb__zk *zk, int status, const char *data, size_t len,
    const eb__zk_stat *st, void *arg)
{
	(void) zk;
	(void) status;
	(void) data;
	(void) len;
	(void) st;
	(void) arg;
	fail_msg("a refused request must not call back");
}

static void
dummy_children_cb(
    eb__zk *zk, int status, const char *const *names, size_t count, void *arg)
{
	(void) zk;
	(void) status;
	(void) names;
	(void) count;
	(void) arg;
	fail_msg("a refused request must not call back");
}

/* The estimates, byte for byte against the jute layout (zk_core.c). */
static void
test_size_estimates(void **state)
{
	th_loop      *t = *state;
	struct stub   s;
	struct events e = { .n = 0 };
	eb__zk       *zk = stub_new(t, &s, &e);
	eb__zk_op     ops[3];
	char          data[10];

	memset(ops, 0, sizeof(ops));
	memset(data, 'x', sizeof(data));
	assert_int_equal(eb__zk_max_request(zk), EB_ZK_DEFAULT_MAX_REQUEST);
	/* create "/a" + 10 bytes: frame 12, path 4+2, data 4+10, ACL 64,
	 * flags 4, TTL 8. */
	ops[0] = (eb__zk_op){ .type = EB_ZK_OP_CREATE,
		.path = "/a",
		.data = data,
		.len = sizeof(data) };
	assert_int_equal(eb__zk_op_bytes(zk, &ops[0]), 108);
	/* set: frame, path, data, version. */
	ops[1] = (eb__zk_op){ .type = EB_ZK_OP_SET,
		.path = "/bb",
		.data = data,
		.len = 4,
		.version = -1 };
	assert_int_equal(eb__zk_op_bytes(zk, &ops[1]), 12 + 7 + 8 + 4);
	/* delete and check: frame, path, version; NULL data is 4 bytes. */
	ops[2] = (eb__zk_op){ .type = EB_ZK_OP_DELETE, .path = "/c" };
	assert_int_equal(eb__zk_op_bytes(zk, &ops[2]), 12 + 6 + 4);
	/* A multi: the frame once, 9 per op, 9 to close. */
	assert_int_equal(eb__zk_multi_op_bytes(zk, &ops[0]), 9 + 108 - 12);
	assert_int_equal(eb__zk_multi_bytes(zk, ops, 3),
	    12 + 9 + (9 + 96) + (9 + 19) + (9 + 10));
	/* The chroot is sent with every path. */
	zk->chroot_len = 7;
	assert_int_equal(eb__zk_op_bytes(zk, &ops[2]), 12 + 6 + 7 + 4);
	assert_int_equal(eb__zk_multi_bytes(zk, ops, 3),
	    12 + 9 + (9 + 96) + (9 + 19) + (9 + 10) + 3 * 7);
	/* Lengths near SIZE_MAX saturate instead of wrapping to small. */
	ops[0].len = SIZE_MAX - 3;
	assert_true(eb__zk_op_bytes(zk, &ops[0]) > ((size_t) 1 << 40));
	assert_true(eb__zk_multi_bytes(zk, ops, 3) > ((size_t) 1 << 40));
	stub_finish(t, zk);
	uv_close((uv_handle_t *) &s.timer, NULL);
	assert_int_equal(th_loop_run(t), 0);
}

/* At the bound a request is sent; one byte over, every kind of request is
 * refused in the call, counted, and never reaches the backend. */
static void
test_size_bound(void **state)
{
	th_loop      *t = *state;
	struct stub   s;
	struct events e = { .n = 0 };
	eb__zk       *zk = stub_new(t, &s, &e);
	static char   data[2048];
	char          path[1100];
	eb__zk_op     op;
	size_t        fit;
	int           created = 0;

	memset(data, 'd', sizeof(data));
	memset(path, 'p', sizeof(path));
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	zk->max_request = 1000;
	assert_int_equal(eb__zk_start(zk), 0);
	/* create "/a" with fit bytes of data is exactly 1000 bytes. */
	fit = 1000 - (12 + 6 + 4 + 64 + 4 + 8);
	op = (eb__zk_op){
		.type = EB_ZK_OP_CREATE, .path = "/a", .data = data, .len = fit
	};
	assert_int_equal(eb__zk_op_bytes(zk, &op), 1000);
	assert_int_equal(eb__zk_create(zk, "/a", data, fit + 1, 0,
	                     dummy_create_cb, &created),
	    EB_EZKTOOBIG);
	assert_int_equal(s.npaths, 0);
	assert_int_equal(
	    eb__zk_set(zk, "/a", data, 1000, -1, dummy_stat_cb, NULL),
	    EB_EZKTOOBIG);
	assert_int_equal(
	    eb__zk_delete(zk, path, -1, dummy_void_cb, NULL), EB_EZKTOOBIG);
	assert_int_equal(
	    eb__zk_exists(zk, path, NULL, NULL, dummy_stat_cb, NULL),
	    EB_EZKTOOBIG);
	assert_int_equal(eb__zk_get(zk, path, NULL, NULL, dummy_data_cb, NULL),
	    EB_EZKTOOBIG);
	assert_int_equal(
	    eb__zk_get_children(zk, path, NULL, NULL, dummy_children_cb, NULL),
	    EB_EZKTOOBIG);
	assert_int_equal(
	    eb__zk_ensure_path(zk, path, dummy_void_cb, NULL), EB_EZKTOOBIG);
	op.len = fit / 2; /* two of them in one multi: over */
	{
		eb__zk_op two[2] = { op, op };

		assert_true(eb__zk_multi_bytes(zk, two, 2) > 1000);
		assert_int_equal(eb__zk_multi(zk, two, 2, dummy_multi_cb, NULL),
		    EB_EZKTOOBIG);
	}
	assert_int_equal(eb__zk_too_big(zk), 8);
	assert_int_equal(eb__zk_requests(zk), 0);
	/* Exactly at the bound: sent. */
	assert_int_equal(
	    eb__zk_create(zk, "/a", data, fit, 0, count_create_cb, &created),
	    0);
	assert_int_equal(s.npaths, 1);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(created, 1);
	assert_int_equal(eb__zk_too_big(zk), 8);
	stub_finish(t, zk);
	uv_close((uv_handle_t *) &s.timer, NULL);
	assert_int_equal(th_loop_run(t), 0);
}

/* ---- real backend, no server --------------------------------------------- */

static void
test_new_bad_opts(void **state)
{
	th_loop    *t = *state;
	eb__zk_opts o;
	eb__zk     *zk = NULL;

	eb__zk_opts_init(&o);
	assert_int_equal(eb__zk_new(&t->loop, &o, NULL, NULL, &zk), EB_ECONF);
	o.connect = "127.0.0.1:1";
	o.acl = EB_ZK_ACL_CREATOR; /* creator needs an identity */
	assert_int_equal(eb__zk_new(&t->loop, &o, NULL, NULL, &zk), EB_ECONF);
	o.acl = EB_ZK_ACL_OPEN;
	o.auth_scheme = "digest"; /* and credentials */
	assert_int_equal(eb__zk_new(&t->loop, &o, NULL, NULL, &zk), EB_ECONF);
	assert_null(zk);
	assert_int_equal(th_loop_run(t), 0);
}

/* The real backend takes the bound from its opts and counts the chroot. */
static void
test_new_size_opts(void **state)
{
	th_loop    *t = *state;
	eb__zk_opts o;
	eb__zk     *zk = NULL;
	eb__zk_op   op = { .type = EB_ZK_OP_DELETE, .path = "/x" };

	eb__zk_opts_init(&o);
	assert_int_equal(o.max_request_bytes, EB_ZK_DEFAULT_MAX_REQUEST);
	o.connect = "127.0.0.1:1,127.0.0.1:2/ebnode/t";
	o.max_request_bytes = 70000;
	assert_int_equal(eb__zk_new(&t->loop, &o, NULL, NULL, &zk), 0);
	assert_int_equal(eb__zk_max_request(zk), 70000);
	assert_int_equal(eb__zk_op_bytes(zk, &op), 12 + 4 + 9 + 2 + 4);
	eb__zk_close(zk, NULL, NULL);
	assert_int_equal(th_loop_run(t), 0);
	o.max_request_bytes = 0; /* the default */
	o.connect = "127.0.0.1:1";
	assert_int_equal(eb__zk_new(&t->loop, &o, NULL, NULL, &zk), 0);
	assert_int_equal(eb__zk_max_request(zk), EB_ZK_DEFAULT_MAX_REQUEST);
	assert_int_equal(eb__zk_op_bytes(zk, &op), 12 + 4 + 2 + 4);
	eb__zk_close(zk, NULL, NULL);
	assert_int_equal(th_loop_run(t), 0);
}

static void
test_close_without_start(void **state)
{
	th_loop    *t = *state;
	eb__zk_opts o;
	eb__zk     *zk = NULL;

	eb__zk_opts_init(&o);
	o.connect = "127.0.0.1:1";
	assert_int_equal(eb__zk_new(&t->loop, &o, NULL, NULL, &zk), 0);
	assert_int_equal(eb__zk_get_state(zk), EB_ZK_STATE_CONNECTING);
	assert_int_equal(eb__zk_session_timeout_ms(zk), 10000);
	closed = 0;
	eb__zk_close(zk, on_closed, NULL);
	assert_int_equal(closed, 0); /* never synchronous */
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(closed, 1);
}

static void
hole_accept_cb(uv_stream_t *server, int status)
{
	(void) server;
	(void) status;
	/* Never accept: the kernel completed the handshake, nobody answers. */
}

/* A loopback listener that never answers: the client's TCP connect succeeds
 * and its requests wait for the session handshake. Returns the port. */
static int
black_hole(uv_loop_t *loop, uv_tcp_t *tcp)
{
	struct sockaddr_in      a;
	struct sockaddr_storage name;
	int                     len = sizeof(name);

	(void) uv_ip4_addr("127.0.0.1", 0, &a);
	(void) uv_tcp_init(loop, tcp);
	assert_int_equal(uv_tcp_bind(tcp, (const struct sockaddr *) &a, 0), 0);
	assert_int_equal(uv_listen((uv_stream_t *) tcp, 4, hole_accept_cb), 0);
	assert_int_equal(
	    uv_tcp_getsockname(tcp, (struct sockaddr *) &name, &len), 0);
	return ntohs(((struct sockaddr_in *) &name)->sin_port);
}

struct pending {
	int order[4];
	int n;
	int create_status;
	int get_status;
	int create_calls;
	int get_calls;
};

static struct pending *pend;

static void
pend_create_cb(eb__zk *zk, int status, const char *path, void *arg)
{
	(void) zk;
	(void) arg;
	assert_null(path);
	pend->create_calls++;
	pend->create_status = status;
	pend->order[pend->n++] = 1;
}

static void
pend_get_cb(eb__zk *zk, int status, const char *data, size_t len,
    const eb__zk_stat *stat, void *arg)
{
	(void) zk;
	(void) arg;
	assert_null(data);
	assert_int_equal(len, 0);
	assert_null(stat);
	pend->get_calls++;
	pend->get_status = status;
	pend->order[pend->n++] = 2;
}

static void
pend_watch_cb(eb__zk *zk, eb__zk_watch_type type, const char *path, void *arg)
{
	(void) zk;
	(void) type;
	(void) path;
	(void) arg;
	fail_msg("a watch on a closed session fired");
}

static void
pend_closed(eb__zk *zk, void *arg)
{
	(void) zk;
	(void) arg;
	pend->order[pend->n++] = 3;
	closed++;
}

static void
test_close_cancels_pending(void **state)
{
	th_loop       *t = *state;
	struct events  e = { .n = 0 };
	struct pending p;
	eb__zk_opts    o;
	eb__zk        *zk = NULL;
	char           connect[64];
	uv_tcp_t       hole;
	uint64_t       t0;
	uint64_t       t1;

	memset(&p, 0, sizeof(p));
	pend = &p;
	(void) snprintf(connect, sizeof(connect), "127.0.0.1:%d",
	    black_hole(&t->loop, &hole));
	eb__zk_opts_init(&o);
	o.connect = connect;
	o.session_timeout_ms = 30000;
	assert_int_equal(eb__zk_new(&t->loop, &o, on_event, &e, &zk), 0);
	assert_int_equal(eb__zk_start(zk), 0);
	/* Queued in the client while it tries to connect. */
	assert_int_equal(
	    eb__zk_create(zk, "/q", "x", 1, 0, pend_create_cb, NULL), 0);
	assert_int_equal(
	    eb__zk_get(zk, "/q", pend_watch_cb, NULL, pend_get_cb, NULL), 0);
	/* Let it connect and wait for the handshake answer. */
	(void) th_run_until(t, th_flag_set, &p.create_calls, 300);
	assert_int_equal(p.create_calls, 0);
	assert_int_equal(eb__zk_get_state(zk), EB_ZK_STATE_CONNECTING);

	closed = 0;
	t0 = uv_hrtime();
	eb__zk_close(zk, pend_closed, NULL);
	t1 = uv_hrtime();
	assert_true(t1 - t0 < UINT64_C(50000000)); /* returns at once */
	assert_int_equal(p.n, 0);
	uv_close((uv_handle_t *) &hole, NULL);
	assert_int_equal(th_loop_run(t), 0);
	/* Each pending op exactly once with EB_ECANCELED, then close. */
	assert_int_equal(p.create_calls, 1);
	assert_int_equal(p.get_calls, 1);
	assert_int_equal(p.create_status, EB_ECANCELED);
	assert_int_equal(p.get_status, EB_ECANCELED);
	assert_int_equal(p.n, 3);
	assert_int_equal(p.order[2], 3);
	assert_int_equal(closed, 1);
	assert_int_equal(e.n, 0); /* never connected: no session event */
}

/* ---- live ids ----------------------------------------------------------- */

static void
test_live_ids(void **state)
{
	th_loop      *t = *state;
	struct stub   s;
	struct stub   s2;
	struct events e = { .n = 0 };
	eb__zk       *zk = stub_new(t, &s, &e);
	eb__zk       *other = stub_new(t, &s2, &e);
	int           a;
	int           b;
	uint64_t      ia;
	uint64_t      ib;
	uint64_t      ic;

	ia = eb__zk_live_add(zk, &a);
	ib = eb__zk_live_add(zk, &b);
	assert_true(ia != 0 && ib != 0 && ia != ib);
	assert_ptr_equal(eb__zk_live_get(zk, ia), &a);
	assert_ptr_equal(eb__zk_live_get(zk, ib), &b);
	assert_ptr_equal(
	    eb__zk_live_get(zk, eb__zk_live_id(eb__zk_live_arg(ia))), &a);
	assert_null(eb__zk_live_get(zk, 0));
	assert_null(eb__zk_live_get(zk, ib + 1000));
	/* Per session: another session's table does not know the id. */
	assert_null(eb__zk_live_get(other, ia));
	eb__zk_live_del(zk, ia);
	assert_null(eb__zk_live_get(zk, ia));
	eb__zk_live_del(zk, ia); /* a second delete is harmless */
	/* The freed slot is reused under a new generation: the stale id
	 * never finds its next owner. */
	ic = eb__zk_live_add(zk, &a);
	assert_true(ic != ia);
	assert_null(eb__zk_live_get(zk, ia));
	assert_ptr_equal(eb__zk_live_get(zk, ic), &a);
	assert_ptr_equal(eb__zk_live_get(zk, ib), &b);
	stub_finish(t, other);
	stub_finish(t, zk);
	uv_close((uv_handle_t *) &s.timer, NULL);
	uv_close((uv_handle_t *) &s2.timer, NULL);
	assert_int_equal(th_loop_run(t), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opts_defaults),
		cmocka_unit_test(test_state_names),
		cmocka_unit_test_setup_teardown(
		    test_session_transitions, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_argument_and_state_checks, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_ensure_path, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_size_estimates, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_size_bound, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_new_bad_opts, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_new_size_opts, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_close_without_start, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_close_cancels_pending, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_live_ids, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
