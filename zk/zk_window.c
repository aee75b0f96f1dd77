/*
 * The request window of a session (eb__zk_set_window, zk.h): at most
 * `window` requests in flight; the rest wait here, in call order, and go
 * out as earlier ones complete. A request sent with eb__zk_multi_ahead()
 * is never held: it passes the queue, so its wait at the server is bounded
 * by the window instead of by everything the session's users asked for.
 *
 * Why (docs/ZOOKEEPER.md "The request window"): a ZooKeeper server
 * answers one session's requests in order. Without a window, a lease
 * renewal sent behind a thousand client lock creates and counter writes
 * waits for all of them, and under load that outlasts the lease.
 *
 * A held request is a copy of the call (paths, data and multi ops are
 * duplicated), so the caller's arguments stay borrowed for the call only,
 * as without a window. Completions of tracked requests come back through
 * one wrapper per callback type, which frees the slot, sends what waits,
 * and then calls the owner. A held request that cannot be sent when its
 * turn comes (the session is gone) completes with the backend's status
 * then; at close, what is still held completes with EB_ECANCELED.
 * Loop thread only.
 */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "zk/zk_ops.h"

/* A dispatched request of a session with a window: its slot is freed when
 * the completion arrives. */
struct zk_track {
	eb__zk          *zk;
	union eb__zkw_cb cb;
	void            *arg;
};

static void pump(eb__zk *zk);

/* The completion of a tracked request: frees the slot, sends what waits,
 * returns the owner's callback and argument. */
static void *
track_done(struct zk_track *t, union eb__zkw_cb *cb)
{
	eb__zk *zk = t->zk;
	void   *arg = t->arg;

	*cb = t->cb;
	free(t);
	EB_ASSERT(zk->in_flight > 0);
	zk->in_flight--;
	pump(zk);
	return arg;
}

static void
track_create(eb__zk *zk, int status, const char *path, void *arg)
{
	union eb__zkw_cb cb;
	void            *a = track_done(arg, &cb);

	cb.create(zk, status, path, a);
}

static void
track_void(eb__zk *zk, int status, void *arg)
{
	union eb__zkw_cb cb;
	void            *a = track_done(arg, &cb);

	cb.void_(zk, status, a);
}

static void
track_stat(eb__zk *zk, int status, const eb__zk_stat *stat, void *arg)
{
	union eb__zkw_cb cb;
	void            *a = track_done(arg, &cb);

	cb.stat(zk, status, stat, a);
}

static void
track_data(eb__zk *zk, int status, const char *data, size_t len,
    const eb__zk_stat *stat, void *arg)
{
	union eb__zkw_cb cb;
	void            *a = track_done(arg, &cb);

	cb.data(zk, status, data, len, stat, a);
}

static void
track_children(
    eb__zk *zk, int status, const char *const *names, size_t count, void *arg)
{
	union eb__zkw_cb cb;
	void            *a = track_done(arg, &cb);

	cb.children(zk, status, names, count, a);
}

static void
track_multi(eb__zk *zk, int status, const eb__zk_op_result *res, size_t count,
    void *arg)
{
	union eb__zkw_cb cb;
	void            *a = track_done(arg, &cb);

	cb.multi(zk, status, res, count, a);
}

/* Hands c to the backend, tracked when the session has a window. 0 or the
 * backend's error (then no callback will come, and the slot is free). */
static int
dispatch(eb__zk *zk, const struct eb__zkw_call *c)
{
	struct zk_track *t = NULL;
	void            *arg = c->arg;
	int              rv = EB_EZKBADARGS;

	if (zk->window != 0) {
		t = eb__calloc(1, sizeof(*t));
		t->zk = zk;
		t->cb = c->cb;
		t->arg = c->arg;
		arg = t;
	}
	switch (c->kind) {
	case EB__ZKW_CREATE:
		rv = zk->ops->create(zk, c->path, c->data, c->len, c->flags,
		    t != NULL ? track_create : c->cb.create, arg);
		break;
	case EB__ZKW_DELETE:
		rv = zk->ops->delete_node(zk, c->path, c->version,
		    t != NULL ? track_void : c->cb.void_, arg);
		break;
	case EB__ZKW_EXISTS:
		rv = zk->ops->exists(zk, c->path, c->watch, c->watch_arg,
		    t != NULL ? track_stat : c->cb.stat, arg);
		break;
	case EB__ZKW_GET:
		rv = zk->ops->get(zk, c->path, c->watch, c->watch_arg,
		    t != NULL ? track_data : c->cb.data, arg);
		break;
	case EB__ZKW_CHILDREN:
		rv = zk->ops->get_children(zk, c->path, c->watch, c->watch_arg,
		    t != NULL ? track_children : c->cb.children, arg);
		break;
	case EB__ZKW_SET:
		rv = zk->ops->set(zk, c->path, c->data, c->len, c->version,
		    t != NULL ? track_stat : c->cb.stat, arg);
		break;
	case EB__ZKW_MULTI:
		rv = zk->ops->multi(zk, c->ops, c->count,
		    t != NULL ? track_multi : c->cb.multi, arg);
		break;
	}
	if (rv == 0) {
		zk->requests++;
		if (t != NULL) {
			zk->in_flight++;
		}
	} else {
		free(t);
	}
	return rv;
}

/* A held request: the call, and its owned copies after it in one block. */
struct zk_held {
	eb__list            link; /* in zk->held */
	struct eb__zkw_call c;
};

/* Copies n bytes of src (NULL: none) to *at with a NUL after them, and
 * advances *at. */
static const char *
put(char **at, const char *src, size_t n)
{
	char *d = *at;

	if (src == NULL) {
		return NULL;
	}
	memcpy(d, src, n);
	d[n] = '\0';
	*at = d + n + 1;
	return d;
}

static size_t
str_room(const char *s, size_t n)
{
	return s != NULL ? n + 1 : 0;
}

/* A copy of c that owns its paths, data and ops (one allocation). */
static struct zk_held *
held_copy(const struct eb__zkw_call *c)
{
	size_t          count = c->kind == EB__ZKW_MULTI ? c->count : 0;
	size_t          plen = c->path != NULL ? strlen(c->path) : 0;
	size_t          room = sizeof(struct zk_held), i;
	struct zk_held *h;
	eb__zk_op      *ops;
	char           *at;

	room += count * sizeof(eb__zk_op);
	room += str_room(c->path, plen) + str_room(c->data, c->len);
	for (i = 0; i < count; i++) {
		room += strlen(c->ops[i].path) + 1 +
		        str_room(c->ops[i].data, c->ops[i].len);
	}
	h = eb__calloc(1, room);
	ops = (eb__zk_op *) (void *) (h + 1);
	at = (char *) (ops + count);
	h->c = *c;
	h->c.path = put(&at, c->path, plen);
	h->c.data = put(&at, c->data, c->len);
	h->c.ops = count > 0 ? ops : NULL;
	h->c.count = count;
	for (i = 0; i < count; i++) {
		ops[i] = c->ops[i];
		ops[i].path = put(&at, c->ops[i].path, strlen(c->ops[i].path));
		ops[i].data = put(&at, c->ops[i].data, c->ops[i].len);
	}
	return h;
}

/* The owner's callback of a request that was never sent, with status. */
static void
call_fail(eb__zk *zk, const struct eb__zkw_call *c, int status)
{
	switch (c->kind) {
	case EB__ZKW_CREATE:
		c->cb.create(zk, status, NULL, c->arg);
		break;
	case EB__ZKW_DELETE:
		c->cb.void_(zk, status, c->arg);
		break;
	case EB__ZKW_EXISTS:
	case EB__ZKW_SET:
		c->cb.stat(zk, status, NULL, c->arg);
		break;
	case EB__ZKW_GET:
		c->cb.data(zk, status, NULL, 0, NULL, c->arg);
		break;
	case EB__ZKW_CHILDREN:
		c->cb.children(zk, status, NULL, 0, c->arg);
		break;
	case EB__ZKW_MULTI:
		eb__zk_multi_fail(zk, c->cb.multi, c->arg, c->count, status);
		break;
	}
}

/* Takes the first held request off the queue, or NULL. */
static struct zk_held *
held_take(eb__zk *zk)
{
	eb__list       *it = eb__list_first(&zk->held);
	struct zk_held *h;

	if (it == NULL) {
		return NULL;
	}
	h = EB_CONTAINER_OF(it, struct zk_held, link);
	eb__list_remove(&h->link);
	zk->n_held--;
	return h;
}

/* Sends held requests, oldest first, while the window has room. One that
 * the backend refuses completes now with that status (this runs inside a
 * completion or a settings call, never inside the caller's request). */
static void
pump(eb__zk *zk)
{
	struct zk_held *h;
	int             rv;

	if (zk->pumping) {
		return; /* the outer pump goes on */
	}
	zk->pumping = 1;
	while (!zk->closing &&
	       (zk->window == 0 || zk->in_flight < zk->window) &&
	       (h = held_take(zk)) != NULL) {
		if ((rv = dispatch(zk, &h->c)) != 0) {
			call_fail(zk, &h->c, rv);
		}
		free(h);
	}
	zk->pumping = 0;
}

int
eb__zkw_submit(eb__zk *zk, const struct eb__zkw_call *c, int ahead)
{
	struct zk_held *h;

	if (zk->window == 0 || ahead ||
	    (zk->n_held == 0 && zk->in_flight < zk->window)) {
		return dispatch(zk, c);
	}
	h = held_copy(c);
	eb__list_insert_tail(&zk->held, &h->link);
	zk->n_held++;
	return 0;
}

void
eb__zkw_cancel_held(eb__zk *zk)
{
	struct zk_held *h;

	while ((h = held_take(zk)) != NULL) {
		call_fail(zk, &h->c, EB_ECANCELED);
		free(h);
	}
}

void
eb__zk_set_window(eb__zk *zk, size_t window)
{
	zk->window = window;
	pump(zk);
}

void
eb__zk_window_stats(const eb__zk *zk, size_t *in_flight, size_t *held)
{
	*in_flight = zk->in_flight;
	*held = zk->n_held;
}
