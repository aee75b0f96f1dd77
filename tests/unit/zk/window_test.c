/*
 * The request window of a session (zk/zk_window.c, eb__zk_set_window)
 * against the in-memory ZooKeeper: no more than the window in flight, held
 * requests sent in call order as earlier ones complete, eb__zk_multi_ahead
 * past the queue, held requests own copies of their arguments, and every
 * held request completes exactly once (answered, refused when its turn
 * comes, or canceled at close).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/fakezk.h"
#include "tests/harness/th.h"
#include "zk/zk.h"

#define N 12

static fakezk_server *srv;

typedef struct wstate {
	int connected;
	int order[N + 4]; /* completion order: the request's index */
	int status[N + 4];
	int calls[N + 4];
	int n;
	int closed;
} wstate;

static wstate *ws;
static int     ids[N + 4]; /* ids[i] == i: the callback argument of request i */

static void
on_event(eb__zk *zk, eb__zk_event ev, void *arg)
{
	(void) zk;
	if (ev == EB_ZK_EV_CONNECTED) {
		((wstate *) arg)->connected = 1;
	}
}

static void
done(int i, int status)
{
	ws->calls[i]++;
	ws->status[i] = status;
	ws->order[ws->n++] = i;
}

static void
create_cb(eb__zk *zk, int status, const char *path, void *arg)
{
	(void) zk;
	(void) path;
	done(*(const int *) arg, status);
}

static void
data_cb(eb__zk *zk, int status, const char *data, size_t len,
    const eb__zk_stat *stat, void *arg)
{
	(void) zk;
	(void) data;
	(void) len;
	(void) stat;
	done(*(const int *) arg, status);
}

static void
multi_cb(eb__zk *zk, int status, const eb__zk_op_result *res, size_t count,
    void *arg)
{
	(void) zk;
	assert_int_equal(count, 2); /* one result per op, even when refused */
	assert_non_null(res);
	done(*(const int *) arg, status);
}

static void
closed_cb(eb__zk *zk, void *arg)
{
	(void) zk;
	((wstate *) arg)->closed++;
}

static int
setup(void **state)
{
	th_loop *t;

	assert_int_equal(th_setup(state), 0);
	t = *state;
	srv = fakezk_server_new(&t->loop);
	return 0;
}

static int
teardown(void **state)
{
	th_loop *t = *state;

	fakezk_server_close_run(srv, t);
	return th_teardown(state);
}

static eb__zk *
open_client(th_loop *t, wstate *w, size_t window)
{
	eb__zk *zk = NULL;
	int     i;

	memset(w, 0, sizeof(*w));
	ws = w;
	for (i = 0; i < N + 4; i++) {
		ids[i] = i;
	}
	assert_int_equal(fakezk_client_new(srv, 4000, on_event, w, &zk), 0);
	assert_int_equal(eb__zk_start(zk), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &w->connected, 2000), 0);
	eb__zk_set_window(zk, window);
	return zk;
}

static int
all_done(void *arg)
{
	return ((wstate *) arg)->n >= N + 1;
}

static void
close_client(th_loop *t, eb__zk *zk, wstate *w)
{
	eb__zk_close(zk, closed_cb, w);
	assert_int_equal(th_run_until(t, th_flag_set, &w->closed, 2000), 0);
}

/* N creates through a window of 4 while the server holds every answer:
 * 4 are sent, the rest wait; a multi sent ahead passes them; when the
 * server answers, the held ones go in call order, and all are created. */
static void
test_window_bounds_and_order(void **state)
{
	th_loop  *t = *state;
	wstate    w;
	eb__zk   *zk = open_client(t, &w, 4);
	unsigned  r0 = fakezk_requests(zk);
	size_t    in_flight = 0, held = 0;
	char      path[32];
	eb__zk_op ops[2];
	int       i;

	fakezk_stall(zk, 1);
	for (i = 0; i < N; i++) {
		(void) snprintf(path, sizeof(path), "/w%02d", i);
		assert_int_equal(
		    eb__zk_create(zk, path, "v", 1, 0, create_cb, &ids[i]), 0);
	}
	assert_int_equal(fakezk_requests(zk) - r0, 4);
	eb__zk_window_stats(zk, &in_flight, &held);
	assert_int_equal(in_flight, 4);
	assert_int_equal(held, N - 4);

	/* Ahead of the queue: sent at once (a fifth request in flight). */
	memset(ops, 0, sizeof(ops));
	ops[0].type = EB_ZK_OP_CHECK;
	ops[0].path = "/w00";
	ops[0].version = 0;
	ops[1] = ops[0];
	assert_int_equal(eb__zk_multi_ahead(zk, ops, 2, multi_cb, &ids[N]), 0);
	assert_int_equal(fakezk_requests(zk) - r0, 5);
	eb__zk_window_stats(zk, &in_flight, &held);
	assert_int_equal(in_flight, 5);
	assert_int_equal(held, N - 4);

	fakezk_stall(zk, 0);
	assert_int_equal(th_run_until(t, all_done, &w, 2000), 0);
	for (i = 0; i < N; i++) {
		(void) snprintf(path, sizeof(path), "/w%02d", i);
		assert_int_equal(w.calls[i], 1);
		assert_int_equal(w.status[i], 0);
		assert_true(fakezk_exists(srv, path));
	}
	/* The creates completed in call order (the ahead multi among them,
	 * after the first, which it checks). */
	for (i = 0, held = 0; i < w.n; i++) {
		if (w.order[i] != N) {
			assert_int_equal(w.order[i], (int) held);
			held++;
		}
	}
	assert_int_equal(w.calls[N], 1);
	assert_int_equal(w.status[N], 0);
	eb__zk_window_stats(zk, &in_flight, &held);
	assert_int_equal(in_flight, 0);
	assert_int_equal(held, 0);
	assert_int_equal(fakezk_requests(zk) - r0, N + 1);
	close_client(t, zk, &w);
}

/* A held request keeps copies: the caller's buffers are reused right
 * after the call, and the held create still makes the node it was given. */
static void
test_held_owns_copies(void **state)
{
	th_loop  *t = *state;
	wstate    w;
	eb__zk   *zk = open_client(t, &w, 1);
	char      path[32], data[8], mpath[32];
	eb__zk_op ops[2];
	char      buf[16];
	int       i;

	fakezk_stall(zk, 1);
	for (i = 0; i < N - 1; i++) {
		(void) snprintf(path, sizeof(path), "/c%02d", i);
		(void) snprintf(data, sizeof(data), "d%02d", i);
		assert_int_equal(eb__zk_create(zk, path, data, strlen(data), 0,
		                     create_cb, &ids[i]),
		    0);
		memset(path, 'x', sizeof(path) - 1);
		memset(data, 'y', sizeof(data) - 1);
	}
	/* A held multi of two creates, its paths and data reused too. */
	memset(ops, 0, sizeof(ops));
	(void) snprintf(mpath, sizeof(mpath), "/m0");
	(void) snprintf(data, sizeof(data), "md");
	ops[0].type = EB_ZK_OP_CREATE;
	ops[0].path = mpath;
	ops[0].data = data;
	ops[0].len = 2;
	ops[1].type = EB_ZK_OP_CREATE;
	ops[1].path = "/m1";
	assert_int_equal(eb__zk_multi(zk, ops, 2, multi_cb, &ids[N - 1]), 0);
	memset(mpath, 'x', sizeof(mpath) - 1);
	memset(data, 'y', sizeof(data) - 1);
	/* And a held get. */
	assert_int_equal(
	    eb__zk_get(zk, "/c00", NULL, NULL, data_cb, &ids[N]), 0);
	fakezk_stall(zk, 0);
	assert_int_equal(th_run_until(t, all_done, &w, 2000), 0);
	for (i = 0; i < N - 1; i++) {
		(void) snprintf(path, sizeof(path), "/c%02d", i);
		assert_int_equal(w.status[i], 0);
		assert_int_equal(
		    fakezk_get(srv, path, buf, sizeof(buf), NULL), 0);
		(void) snprintf(data, sizeof(data), "d%02d", i);
		assert_string_equal(buf, data);
	}
	assert_int_equal(w.status[N - 1], 0);
	assert_int_equal(fakezk_get(srv, "/m0", buf, sizeof(buf), NULL), 0);
	assert_string_equal(buf, "md");
	assert_true(fakezk_exists(srv, "/m1"));
	assert_int_equal(w.status[N], 0);
	close_client(t, zk, &w);
}

/* Close with requests held: each completes exactly once, EB_ECANCELED,
 * before the close callback. */
static void
test_close_cancels_held(void **state)
{
	th_loop *t = *state;
	wstate   w;
	eb__zk  *zk = open_client(t, &w, 2);
	char     path[32];
	int      i;

	fakezk_stall(zk, 1);
	for (i = 0; i < N + 1; i++) {
		(void) snprintf(path, sizeof(path), "/k%02d", i);
		assert_int_equal(
		    eb__zk_create(zk, path, NULL, 0, 0, create_cb, &ids[i]), 0);
	}
	eb__zk_close(zk, closed_cb, &w);
	assert_int_equal(w.n, 0); /* never from inside the close call */
	assert_int_equal(th_run_until(t, th_flag_set, &w.closed, 2000), 0);
	assert_int_equal(w.n, N + 1);
	for (i = 0; i < N + 1; i++) {
		assert_int_equal(w.calls[i], 1);
		assert_int_equal(w.status[i], EB_ECANCELED);
	}
}

/* The session expires with requests held: each still completes exactly
 * once (the ones in flight with the loss, the held ones when their turn
 * comes), and nothing stays held. */
static void
test_expiry_completes_held(void **state)
{
	th_loop *t = *state;
	wstate   w;
	eb__zk  *zk = open_client(t, &w, 2);
	size_t   in_flight = 0, held = 0;
	char     path[32];
	int      i;

	fakezk_stall(zk, 1);
	for (i = 0; i < N + 1; i++) {
		(void) snprintf(path, sizeof(path), "/e%02d", i);
		assert_int_equal(
		    eb__zk_get(zk, path, NULL, NULL, data_cb, &ids[i]), 0);
	}
	fakezk_expire(zk);
	fakezk_stall(zk, 0);
	assert_int_equal(th_run_until(t, all_done, &w, 2000), 0);
	for (i = 0; i < N + 1; i++) {
		assert_int_equal(w.calls[i], 1);
		assert_int_not_equal(
		    w.status[i], 0); /* no such node, or lost */
	}
	eb__zk_window_stats(zk, &in_flight, &held);
	assert_int_equal(in_flight, 0);
	assert_int_equal(held, 0);
	close_client(t, zk, &w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_window_bounds_and_order, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_held_owns_copies, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_close_cancels_held, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_expiry_completes_held, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
