/*
 * Requests, completions and watches of the real eb__zk backend (see
 * zk/zk.c for the design and zk/zk_real.h for the structures).
 *
 * Each request is linked into its session's conn->reqs from the moment it is
 * handed to the library until its completion has been delivered on the loop
 * (then it is freed), or until the session is retired (then the owner hears
 * the retire status once and the request is freed after zookeeper_close()).
 * A completion therefore runs the owner's callback only when the request is
 * neither delivered nor retired and eb__zk_close() has not been called; after
 * close the close step cancels it (EB_ECANCELED, exactly once).
 * Loop thread only, except as described in zk_real.h.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <zookeeper/zookeeper.h>

#include "common/alloc.h"
#include "common/list.h"
#include "common/util.h"
#include "zk/zk_int.h"
#include "zk/zk_ops.h"
#include "zk/zk_real.h"

/* ---- small helpers ------------------------------------------------------ */

static void
stat_from_zk(eb__zk_stat *out, const struct Stat *s)
{
	out->czxid = s->czxid;
	out->mzxid = s->mzxid;
	out->ephemeral_owner = s->ephemeralOwner;
	out->version = s->version;
	out->cversion = s->cversion;
	out->num_children = s->numChildren;
	out->data_length = s->dataLength;
}

static int
zk_mode(int flags)
{
	int eph = (flags & EB_ZK_EPHEMERAL) != 0;
	int seq = (flags & EB_ZK_SEQUENTIAL) != 0;

	if (eph) {
		return seq ? ZOO_EPHEMERAL_SEQUENTIAL : ZOO_EPHEMERAL;
	}
	return seq ? ZOO_PERSISTENT_SEQUENTIAL : ZOO_PERSISTENT;
}

static const struct ACL_vector *
zk_acl(struct zk_real *r)
{
	return r->acl == EB_ZK_ACL_CREATOR ? &r->creator_aclv
	                                   : &ZOO_OPEN_ACL_UNSAFE;
}

/* The status for an operation that finds no live session. */
static int
zk_no_session_status(const struct zk_real *r)
{
	if (r->auth_failed) {
		return EB_EZKAUTH;
	}
	if (r->conn != NULL && r->conn->dead == ZK_DEAD_AUTH) {
		return EB_EZKAUTH;
	}
	return EB_EZKEXPIRED;
}

/* The library hands our pointers back as const void *; C11 allows reading
 * them through a union, which keeps the const-correctness warnings on. */
static struct zk_req *
req_of(const void *data)
{
	union {
		const void    *c;
		struct zk_req *q;
	} u;

	u.c = data;
	return u.q;
}

void
eb__zkr_watch_free(struct zk_watch *w)
{
	eb__list_remove(&w->link);
	free(w);
}

void
eb__zkr_req_free(struct zk_req *q)
{
	size_t i;

	eb__list_remove(&q->link);
	if (q->paths != NULL) {
		for (i = 0; i < q->count; i++) {
			free(q->paths[i]);
		}
	}
	free(q->paths);
	free(q->stats);
	free(q->results);
	free(q->ops);
	free(q);
}

/*
 * A completion for q has arrived on the loop: 1 when the owner's callback
 * should run now. After eb__zk_close() the request stays pending and the
 * close step fails it with EB_ECANCELED (exactly once).
 */
static int
req_deliverable(struct zk_req *q)
{
	if (q->conn->retired || q->delivered) {
		return 0;
	}
	return !q->conn->r->zk->closing;
}

static void
req_done(struct zk_req *q, int status)
{
	q->delivered = 1;
	if (status == 0) {
		eb__zk_note_ok(q->conn->r->zk, q->send_ms);
	}
}

/* ---- completions -------------------------------------------------------- */

void
eb__zkr_req_fail(struct zk_req *q, int status)
{
	eb__zk *zk = q->conn->r->zk;

	q->delivered = 1;
	switch (q->kind) {
	case ZK_REQ_CREATE:
		q->cb.create(zk, status, NULL, q->arg);
		break;
	case ZK_REQ_VOID:
		q->cb.void_(zk, status, q->arg);
		break;
	case ZK_REQ_STAT:
		q->cb.stat(zk, status, NULL, q->arg);
		break;
	case ZK_REQ_DATA:
		q->cb.data(zk, status, NULL, 0, NULL, q->arg);
		break;
	case ZK_REQ_CHILDREN:
		q->cb.children(zk, status, NULL, 0, q->arg);
		break;
	case ZK_REQ_MULTI:
		eb__zk_multi_fail(zk, q->cb.multi, q->arg, q->count, status);
		break;
	}
}

/* The server keeps a watch only for these results (zookeeper.c checkers). */
static void
req_settle_watch(struct zk_req *q, int rc, int exists)
{
	if (q->watch == NULL) {
		return;
	}
	if (!(rc == ZOK || (exists && rc == ZNONODE))) {
		eb__zkr_watch_free(q->watch);
	}
	q->watch = NULL;
}

static void
create_done(int rc, const char *value, const void *data)
{
	struct zk_req *q = req_of(data);
	int            st = eb__err_from_zk(rc);

	if (!req_deliverable(q)) {
		return;
	}
	req_done(q, st);
	q->cb.create(q->conn->r->zk, st, st == 0 ? value : NULL, q->arg);
	eb__zkr_req_free(q);
}

static void
void_done(int rc, const void *data)
{
	struct zk_req *q = req_of(data);
	int            st = eb__err_from_zk(rc);

	if (!req_deliverable(q)) {
		return;
	}
	req_done(q, st);
	q->cb.void_(q->conn->r->zk, st, q->arg);
	eb__zkr_req_free(q);
}

static void
stat_done(int rc, const struct Stat *stat, const void *data)
{
	struct zk_req *q = req_of(data);
	int            st = eb__err_from_zk(rc);
	eb__zk_stat    s;

	if (!req_deliverable(q)) {
		return;
	}
	req_settle_watch(q, rc, 1);
	/* exists() answering "no node" is a successful request. */
	req_done(q, rc == ZNONODE ? 0 : st);
	if (st == 0 && stat != NULL) {
		stat_from_zk(&s, stat);
	}
	q->cb.stat(
	    q->conn->r->zk, st, st == 0 && stat != NULL ? &s : NULL, q->arg);
	eb__zkr_req_free(q);
}

static void
data_done(int rc, const char *value, int len, const struct Stat *stat,
    const void *data)
{
	struct zk_req *q = req_of(data);
	int            st = eb__err_from_zk(rc);
	eb__zk_stat    s;

	if (!req_deliverable(q)) {
		return;
	}
	req_settle_watch(q, rc, 0);
	req_done(q, st);
	if (st != 0 || len < 0) {
		value = NULL; /* len -1: the node holds null data */
		len = 0;
	}
	if (st == 0 && stat != NULL) {
		stat_from_zk(&s, stat);
	}
	q->cb.data(q->conn->r->zk, st, value, (size_t) len,
	    st == 0 && stat != NULL ? &s : NULL, q->arg);
	eb__zkr_req_free(q);
}

static void
children_done(int rc, const struct String_vector *v, const void *data)
{
	struct zk_req *q = req_of(data);
	int            st = eb__err_from_zk(rc);
	size_t         n = 0;

	if (!req_deliverable(q)) {
		return;
	}
	req_settle_watch(q, rc, 0);
	req_done(q, st);
	if (st == 0 && v != NULL && v->count > 0) {
		n = (size_t) v->count;
	}
	q->cb.children(q->conn->r->zk, st,
	    n > 0 ? (const char *const *) v->data : NULL, n, q->arg);
	eb__zkr_req_free(q);
}

static void
multi_done(int rc, const void *data)
{
	struct zk_req    *q = req_of(data);
	int               st = eb__err_from_zk(rc);
	eb__zk_op_result *res;
	size_t            i;

	if (!req_deliverable(q)) {
		return;
	}
	req_done(q, st);
	res = eb__calloc(q->count, sizeof(*res));
	for (i = 0; i < q->count; i++) {
		/* Codes above ZAPIERROR are client/system failures of the
		 * whole request: the per-op results were never filled in. */
		if (rc != ZOK && rc > ZAPIERROR) {
			res[i].status = st;
		} else {
			res[i].status = eb__err_from_zk(q->results[i].err);
		}
		res[i].path = NULL;
		if (rc == ZOK && q->ops[i].type == ZOO_CREATE_OP) {
			res[i].path = q->paths[i];
		}
	}
	q->cb.multi(q->conn->r->zk, st, res, q->count, q->arg);
	free(res);
	eb__zkr_req_free(q);
}

static void
watch_fire(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	struct zk_watch  *w = ctx;
	eb__zk_watch_type t;

	(void) zh;
	(void) state;
	/* Session events reach every watcher: they are not node events. */
	if (w->conn->retired || type == ZOO_SESSION_EVENT ||
	    w->conn->r->zk->closing) {
		return;
	}
	if (type == ZOO_CREATED_EVENT) {
		t = EB_ZK_WATCH_CREATED;
	} else if (type == ZOO_DELETED_EVENT) {
		t = EB_ZK_WATCH_DELETED;
	} else if (type == ZOO_CHANGED_EVENT) {
		t = EB_ZK_WATCH_CHANGED;
	} else if (type == ZOO_CHILD_EVENT) {
		t = EB_ZK_WATCH_CHILD;
	} else {
		t = EB_ZK_WATCH_NOT_WATCHING;
	}
	/* One-shot: the library has dropped it; so do we. */
	w->cb(w->conn->r->zk, t, path, w->arg);
	eb__zkr_watch_free(w);
}

/* ---- operations --------------------------------------------------------- */

/* A request on the current session, or NULL with *err set. */
static struct zk_req *
req_new(struct zk_real *r, enum zk_req_kind kind, void *arg, int *err)
{
	struct zk_req *q;

	if (r->conn == NULL || r->conn->dead) {
		*err = zk_no_session_status(r);
		return NULL;
	}
	q = eb__calloc(1, sizeof(*q));
	q->conn = r->conn;
	q->kind = kind;
	q->arg = arg;
	q->send_ms = eb__mono_ms();
	eb__list_insert_tail(&r->conn->reqs, &q->link);
	return q;
}

static void
req_watch(struct zk_req *q, eb__zk_watch_cb cb, void *arg)
{
	struct zk_watch *w;

	if (cb == NULL) {
		return;
	}
	w = eb__calloc(1, sizeof(*w));
	w->conn = q->conn;
	w->cb = cb;
	w->arg = arg;
	eb__list_insert_tail(&q->conn->watches, &w->link);
	q->watch = w;
}

/* After a zoo_a* call: 0, or the translated error with q released. */
static int
req_issued(struct zk_real *r, struct zk_req *q, int rc)
{
	if (rc == ZMARSHALLINGERROR) {
		/* The completion may be registered already: keep q (inert)
		 * until the handle is closed. */
		q->delivered = 1;
		q->watch = NULL;
		return eb__err_from_zk(rc);
	}
	if (rc != ZOK) {
		if (q->watch != NULL) {
			eb__zkr_watch_free(q->watch);
		}
		eb__zkr_req_free(q);
		return eb__err_from_zk(rc);
	}
	eb__zkr_drive(
	    r); /* the request may need the socket to become writable */
	return 0;
}

int
eb__zkr_create(eb__zk *zk, const char *path, const char *data, size_t len,
    int flags, eb__zk_create_cb cb, void *arg)
{
	struct zk_real *r = zk->impl;
	struct zk_req  *q;
	int             err;

	if (len > INT_MAX) {
		return EB_EZKBADARGS;
	}
	if ((q = req_new(r, ZK_REQ_CREATE, arg, &err)) == NULL) {
		return err;
	}
	q->cb.create = cb;
	return req_issued(r, q,
	    zoo_acreate(r->conn->zh, path, data, data != NULL ? (int) len : -1,
	        zk_acl(r), zk_mode(flags), create_done, q));
}

int
eb__zkr_delete(
    eb__zk *zk, const char *path, int32_t version, eb__zk_void_cb cb, void *arg)
{
	struct zk_real *r = zk->impl;
	struct zk_req  *q;
	int             err;

	if ((q = req_new(r, ZK_REQ_VOID, arg, &err)) == NULL) {
		return err;
	}
	q->cb.void_ = cb;
	return req_issued(
	    r, q, zoo_adelete(r->conn->zh, path, version, void_done, q));
}

int
eb__zkr_exists(eb__zk *zk, const char *path, eb__zk_watch_cb watch,
    void *watch_arg, eb__zk_stat_cb cb, void *arg)
{
	struct zk_real *r = zk->impl;
	struct zk_req  *q;
	int             err;

	if ((q = req_new(r, ZK_REQ_STAT, arg, &err)) == NULL) {
		return err;
	}
	q->cb.stat = cb;
	req_watch(q, watch, watch_arg);
	return req_issued(r, q,
	    zoo_awexists(r->conn->zh, path,
	        q->watch != NULL ? watch_fire : NULL, q->watch, stat_done, q));
}

int
eb__zkr_get(eb__zk *zk, const char *path, eb__zk_watch_cb watch,
    void *watch_arg, eb__zk_data_cb cb, void *arg)
{
	struct zk_real *r = zk->impl;
	struct zk_req  *q;
	int             err;

	if ((q = req_new(r, ZK_REQ_DATA, arg, &err)) == NULL) {
		return err;
	}
	q->cb.data = cb;
	req_watch(q, watch, watch_arg);
	return req_issued(r, q,
	    zoo_awget(r->conn->zh, path, q->watch != NULL ? watch_fire : NULL,
	        q->watch, data_done, q));
}

int
eb__zkr_get_children(eb__zk *zk, const char *path, eb__zk_watch_cb watch,
    void *watch_arg, eb__zk_children_cb cb, void *arg)
{
	struct zk_real *r = zk->impl;
	struct zk_req  *q;
	int             err;

	if ((q = req_new(r, ZK_REQ_CHILDREN, arg, &err)) == NULL) {
		return err;
	}
	q->cb.children = cb;
	req_watch(q, watch, watch_arg);
	return req_issued(r, q,
	    zoo_awget_children(r->conn->zh, path,
	        q->watch != NULL ? watch_fire : NULL, q->watch, children_done,
	        q));
}

int
eb__zkr_set(eb__zk *zk, const char *path, const char *data, size_t len,
    int32_t version, eb__zk_stat_cb cb, void *arg)
{
	struct zk_real *r = zk->impl;
	struct zk_req  *q;
	int             err;

	if (len > INT_MAX) {
		return EB_EZKBADARGS;
	}
	if ((q = req_new(r, ZK_REQ_STAT, arg, &err)) == NULL) {
		return err;
	}
	q->cb.stat = cb;
	return req_issued(r, q,
	    zoo_aset(r->conn->zh, path, data, data != NULL ? (int) len : -1,
	        version, stat_done, q));
}

/* Fills q->ops from the caller's (borrowed) ops; 0 or EB_EZKBADARGS. */
static int
multi_prepare(struct zk_real *r, struct zk_req *q, const eb__zk_op *ops)
{
	size_t i;

	for (i = 0; i < q->count; i++) {
		const eb__zk_op *o = &ops[i];
		int              len = o->data != NULL ? (int) o->len : -1;
		size_t           plen;

		if (o->len > INT_MAX) {
			return EB_EZKBADARGS;
		}
		switch (o->type) {
		case EB_ZK_OP_CREATE:
			/* Room for the 10-digit sequence suffix. */
			plen = strlen(o->path) + 16;
			q->paths[i] = eb__calloc(1, plen);
			zoo_create_op_init(&q->ops[i], o->path, o->data, len,
			    zk_acl(r), zk_mode(o->flags), q->paths[i],
			    (int) plen);
			break;
		case EB_ZK_OP_DELETE:
			zoo_delete_op_init(&q->ops[i], o->path, o->version);
			break;
		case EB_ZK_OP_SET:
			zoo_set_op_init(&q->ops[i], o->path, o->data, len,
			    o->version, &q->stats[i]);
			break;
		case EB_ZK_OP_CHECK:
			zoo_check_op_init(&q->ops[i], o->path, o->version);
			break;
		default:
			return EB_EZKBADARGS;
		}
	}
	return 0;
}

int
eb__zkr_multi(eb__zk *zk, const eb__zk_op *ops, size_t count,
    eb__zk_multi_cb cb, void *arg)
{
	struct zk_real *r = zk->impl;
	struct zk_req  *q;
	int             err;

	if (count > INT_MAX) {
		return EB_EZKBADARGS;
	}
	if ((q = req_new(r, ZK_REQ_MULTI, arg, &err)) == NULL) {
		return err;
	}
	q->cb.multi = cb;
	q->count = count;
	q->ops = eb__calloc(count, sizeof(*q->ops));
	q->results = eb__calloc(count, sizeof(*q->results));
	q->paths = eb__calloc(count, sizeof(*q->paths));
	q->stats = eb__calloc(count, sizeof(*q->stats));
	if ((err = multi_prepare(r, q, ops)) != 0) {
		eb__zkr_req_free(q);
		return err;
	}
	return req_issued(r, q,
	    zoo_amulti(
	        r->conn->zh, (int) count, q->ops, q->results, multi_done, q));
}
