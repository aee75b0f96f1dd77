/*
 * Counters (linearizable compare-and-set loops on a znode's version) and
 * cluster-unique ids (blocks taken from the counter <root>/ids), see
 * include/ebnode/shared.h and docs/SHARED.md.
 *
 * A counter's znode holds its value as decimal text. One operation:
 *   read (data, version); absent: create it ("0", or the result of an add
 *   or a matching cas), NODEEXISTS: again;
 *   add / matching cas: setData(new, version), BADVERSION: again;
 *   get / failed cas: a multi that checks the version read (a quorum write,
 *   so the value read was the latest at that point), BADVERSION: again;
 *   delete: delete(version read), BADVERSION: again.
 * A create under <root>/counters first reads the parent's numChildren:
 * at o.max_counters names it fails with EB_EFULL. Concurrent creates on
 * several nodes may each pass that check, so the cap can be passed by at
 * most the number of creates other nodes have in flight at that moment
 * (this node's own creates in flight are counted).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/shared.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "shared/shared_int.h"

struct eb__counter_op {
	eb_shared       *s;
	eb__list         link; /* s->ops */
	uint64_t         live;
	char            *path;
	int              kind;     /* 'g', 'a', 'c', 'd' */
	int              capped;   /* a counter name: creates are capped */
	int              reserved; /* counted in s->counter_creates */
	int64_t          a, b; /* add: a = delta; cas: a = expect, b = update */
	int              ensured;
	int64_t          value; /* the value being written or confirmed */
	int              ok;
	eb__counter_done done;
	eb_counter_cb    cb;
	void            *arg;
};

static void op_read(eb__counter_op *op);

static void
unreserve(eb__counter_op *op)
{
	if (op->reserved) {
		op->reserved = 0;
		op->s->counter_creates--;
	}
}

static void
op_end(eb__counter_op *op, int status, int64_t value, int ok)
{
	eb_shared *s = op->s;

	eb__list_remove(&op->link);
	eb__zk_live_del(s->zk, op->live);
	unreserve(op);
	if (status == 0) {
		s->st.counter_ops++;
	}
	op->done(s, op, status, value, ok);
	free(op->path);
	free(op);
}

static eb__counter_op *
op_get(eb__zk *zk, void *arg)
{
	return eb__zk_live_get(zk, eb__zk_live_id(arg));
}

static void
op_retry(eb__counter_op *op)
{
	op->s->st.counter_retries++;
	op_read(op);
}

static int
op_status(int status)
{
	return eb__zk_status_transient(status) ? EB_EZKLOSS : status;
}

static void
set_cb(eb__zk *zk, int status, const eb__zk_stat *st, void *arg)
{
	eb__counter_op *op = op_get(zk, arg);

	(void) st;
	if (op == NULL) {
		return;
	}
	if (status == EB_EZKBADVERSION || status == EB_EZKNONODE) {
		op_retry(op);
	} else {
		op_end(op, op_status(status), op->value, op->ok);
	}
}

static void
check_cb(eb__zk *zk, int status, const eb__zk_op_result *res, size_t count,
    void *arg)
{
	eb__counter_op *op = op_get(zk, arg);

	(void) res;
	(void) count;
	if (op == NULL) {
		return;
	}
	if (status == EB_EZKBADVERSION || status == EB_EZKNONODE) {
		op_retry(op);
	} else {
		op_end(op, op_status(status), op->value, op->ok);
	}
}

static void create_cb(eb__zk *zk, int status, const char *path, void *arg);

static void
del_cb(eb__zk *zk, int status, void *arg)
{
	eb__counter_op *op = op_get(zk, arg);

	if (op == NULL) {
		return;
	}
	if (status == EB_EZKBADVERSION || status == EB_EZKNONODE) {
		op_retry(op);
		return;
	}
	if (status == 0) {
		op->s->st.counters_deleted++;
	}
	op_end(op, op_status(status), op->value, 1);
}

static int
op_create_now(eb__counter_op *op)
{
	char buf[32];

	(void) snprintf(buf, sizeof(buf), "%" PRId64, op->value);
	return eb__zk_create(op->s->zk, op->path, buf, strlen(buf), 0,
	    create_cb, eb__zk_live_arg(op->live));
}

/* The parent's numChildren, for the cap on counter names. */
static void
count_cb(eb__zk *zk, int status, const eb__zk_stat *st, void *arg)
{
	eb__counter_op *op = op_get(zk, arg);
	int             rv;

	if (op == NULL) {
		return;
	}
	/* This node's creates in flight count too (their names may not be
	 * in num_children yet): one node alone never passes the cap. */
	if (status == 0 && op->s->o.max_counters != 0 &&
	    (uint64_t) st->num_children + op->s->counter_creates >=
	        op->s->o.max_counters) {
		op->s->st.refused++;
		op_end(op, EB_EFULL, 0, 0);
		return;
	}
	if (status != 0 && status != EB_EZKNONODE) {
		op_end(op, op_status(status), 0, 0);
		return;
	}
	op->reserved = 1;
	op->s->counter_creates++;
	if ((rv = op_create_now(op)) != 0) {
		op_end(op, op_status(rv), 0, 0);
	}
}

/* Creates the counter with op->value, within the cap on names. */
static int
op_create(eb__counter_op *op)
{
	char  dir[EB__SHARED_PATH_MAX];
	char *slash;

	if (!op->capped || op->s->o.max_counters == 0) {
		return op_create_now(op);
	}
	(void) snprintf(dir, sizeof(dir), "%s", op->path);
	slash = strrchr(dir, '/');
	*slash = '\0';
	return eb__zk_exists(
	    op->s->zk, dir, NULL, NULL, count_cb, eb__zk_live_arg(op->live));
}

static void
ensure_cb(eb__zk *zk, int status, void *arg)
{
	eb__counter_op *op = op_get(zk, arg);

	if (op == NULL) {
		return;
	}
	if (status != 0 && status != EB_EZKNODEEXISTS) {
		op_end(op, op_status(status), 0, 0);
		return;
	}
	op_read(op);
}

static void
create_cb(eb__zk *zk, int status, const char *path, void *arg)
{
	eb__counter_op *op = op_get(zk, arg);
	char            dir[EB__SHARED_PATH_MAX];
	char           *slash;

	(void) path;
	if (op == NULL) {
		return;
	}
	unreserve(op);
	if (status == EB_EZKNODEEXISTS) {
		op_retry(op);
	} else if (status == EB_EZKNONODE && !op->ensured) {
		op->ensured = 1;
		(void) snprintf(dir, sizeof(dir), "%s", op->path);
		slash = strrchr(dir, '/');
		*slash = '\0';
		if (eb__zk_ensure_path(zk, dir, ensure_cb, arg) != 0) {
			op_end(op, EB_EZKLOSS, 0, 0);
		}
	} else {
		op_end(op, op_status(status), op->value, op->ok);
	}
}

/* The new value of an add or a matching cas; 0 or UV_ERANGE. */
static int
op_next(eb__counter_op *op, int64_t cur, int64_t *next, int *write)
{
	*write = 0;
	op->ok = 1;
	switch (op->kind) {
	case 'a':
		if (__builtin_add_overflow(cur, op->a, next)) {
			return UV_ERANGE;
		}
		*write = 1;
		break;
	case 'c':
		if (cur == op->a) {
			*next = op->b;
			*write = 1;
		} else {
			*next = cur;
			op->ok = 0;
		}
		break;
	default:
		*next = cur;
		break;
	}
	return 0;
}

static void
get_cb(eb__zk *zk, int status, const char *data, size_t len,
    const eb__zk_stat *st, void *arg)
{
	eb__counter_op *op = op_get(zk, arg);
	char            buf[32], *end = NULL;
	int64_t         cur = 0, next;
	int             write, rv;
	eb__zk_op       chk;

	if (op == NULL) {
		return;
	}
	if (status != 0 && status != EB_EZKNONODE) {
		op_end(op, op_status(status), 0, 0);
		return;
	}
	if (op->kind == 'd' && status == EB_EZKNONODE) {
		op_end(op, 0, 0, 0); /* nothing to delete */
		return;
	}
	if (status == 0) {
		if (len == 0 || len >= sizeof(buf)) {
			op_end(op, EB_EPROTO, 0, 0);
			return;
		}
		memcpy(buf, data, len);
		buf[len] = '\0';
		cur = strtoll(buf, &end, 10);
		if (end == NULL || *end != '\0') {
			op_end(op, EB_EPROTO, 0, 0);
			return;
		}
	}
	if ((rv = op_next(op, cur, &next, &write)) != 0) {
		op_end(op, rv, cur, 0);
		return;
	}
	op->value = next;
	if (op->kind == 'd') {
		rv = eb__zk_delete(zk, op->path, st->version, del_cb, arg);
	} else if (status == EB_EZKNONODE) {
		/* Absent reads 0: create it with the result (get, failed
		 * cas: 0), which also linearizes the read. */
		if (!write) {
			op->value = 0;
		}
		rv = op_create(op);
	} else if (write) {
		(void) snprintf(buf, sizeof(buf), "%" PRId64, next);
		rv = eb__zk_set(
		    zk, op->path, buf, strlen(buf), st->version, set_cb, arg);
	} else {
		memset(&chk, 0, sizeof(chk));
		chk.type = EB_ZK_OP_CHECK;
		chk.path = op->path;
		chk.version = st->version;
		rv = eb__zk_multi(zk, &chk, 1, check_cb, arg);
	}
	if (rv != 0) {
		op_end(op, op_status(rv), 0, 0);
	}
}

static void
op_read(eb__counter_op *op)
{
	int rv = eb__zk_get(
	    op->s->zk, op->path, NULL, NULL, get_cb, eb__zk_live_arg(op->live));

	if (rv != 0) {
		op_end(op, op_status(rv), 0, 0);
	}
}

int
eb__counter_start(eb_shared *s, const char *path, int kind, int64_t a,
    int64_t b, eb__counter_done done, eb_counter_cb cb, void *arg)
{
	eb__counter_op *op;
	int             rv;

	EB_ASSERT(!s->closing); /* use after close */
	if (eb__zk_get_state(s->zk) != EB_ZK_STATE_CONNECTED) {
		return EB_EZKLOSS;
	}
	op = eb__calloc(1, sizeof(*op));
	op->s = s;
	op->path = eb__strdup(path);
	op->kind = kind;
	op->a = a;
	op->b = b;
	op->done = done;
	op->cb = cb;
	op->arg = arg;
	op->capped = strncmp(path, s->root, strlen(s->root)) == 0 &&
	             strncmp(path + strlen(s->root), "/counters/", 10) == 0;
	op->live = eb__zk_live_add(s->zk, op);
	eb__list_init(&op->link);
	eb__list_insert_tail(&s->ops, &op->link);
	rv = eb__zk_get(
	    s->zk, op->path, NULL, NULL, get_cb, eb__zk_live_arg(op->live));
	if (rv != 0) {
		eb__list_remove(&op->link);
		eb__zk_live_del(s->zk, op->live);
		free(op->path);
		free(op);
	}
	return rv;
}

void
eb__counter_cancel_all(eb_shared *s)
{
	eb__list *it, *tmp;

	EB_LIST_FOREACH (it, tmp, &s->ops) {
		op_end(EB_CONTAINER_OF(it, eb__counter_op, link), EB_ECANCELED,
		    0, 0);
	}
}

/* ---- counters: the API ---- */

static void
user_done(eb_shared *s, eb__counter_op *op, int status, int64_t value, int ok)
{
	op->cb(s, status, value, ok, op->arg);
}

static int
counter_op(eb_shared *s, const char *name, int kind, int64_t a, int64_t b,
    eb_counter_cb cb, void *arg)
{
	char path[EB__SHARED_PATH_MAX];

	if (!eb__shared_name_ok(name) || cb == NULL) {
		return UV_EINVAL;
	}
	(void) snprintf(path, sizeof(path), "%s/counters/%s", s->root, name);
	return eb__counter_start(s, path, kind, a, b, user_done, cb, arg);
}

int
eb_counter_get(eb_shared *s, const char *name, eb_counter_cb cb, void *arg)
{
	return counter_op(s, name, 'g', 0, 0, cb, arg);
}

int
eb_counter_add(
    eb_shared *s, const char *name, int64_t delta, eb_counter_cb cb, void *arg)
{
	return counter_op(s, name, 'a', delta, 0, cb, arg);
}

int
eb_counter_cas(eb_shared *s, const char *name, int64_t expect, int64_t update,
    eb_counter_cb cb, void *arg)
{
	return counter_op(s, name, 'c', expect, update, cb, arg);
}

int
eb_counter_delete(eb_shared *s, const char *name, eb_counter_cb cb, void *arg)
{
	return counter_op(s, name, 'd', 0, 0, cb, arg);
}

/* ---- ids ---- */

typedef struct id_req {
	size_t    count;
	size_t    filled;
	uint64_t *ids;
	eb_id_cb  cb;
	void     *arg;
} id_req;

static void id_fetch(eb_shared *s);

/* Serves waiting requests from the block, in order; fetches the next
 * block when it runs out. */
static void
id_serve(eb_shared *s)
{
	while (s->id_reqs.len > 0) {
		id_req *r = *(id_req **) eb__vec_at(&s->id_reqs, 0);

		while (r->filled < r->count && s->id_next < s->id_end) {
			r->ids[r->filled++] = s->id_next++;
		}
		if (r->filled < r->count) {
			id_fetch(s);
			return;
		}
		eb__vec_remove(&s->id_reqs, 0);
		s->st.ids += r->count;
		r->cb(s, 0, r->ids, r->count, r->arg);
		free(r->ids);
		free(r);
	}
}

static void
id_fail_all(eb_shared *s, int status)
{
	while (s->id_reqs.len > 0) {
		id_req *r = *(id_req **) eb__vec_at(&s->id_reqs, 0);

		eb__vec_remove(&s->id_reqs, 0);
		r->cb(s, status, NULL, 0, r->arg);
		free(r->ids);
		free(r);
	}
}

static void
block_done(eb_shared *s, eb__counter_op *op, int status, int64_t value, int ok)
{
	(void) op;
	(void) ok;
	s->id_fetching = 0;
	if (status == EB_ECANCELED && s->closing) {
		return; /* eb__id_cancel_all answers the requests */
	}
	if (status != 0) {
		id_fail_all(s, status);
		return;
	}
	/* The counter went from value - BLOCK to value: ours are
	 * value - BLOCK + 1 .. value (never 0). */
	s->st.id_blocks++;
	s->id_next = (uint64_t) value - EB_SHARED_ID_BLOCK + 1;
	s->id_end = (uint64_t) value + 1;
	id_serve(s);
}

static void
id_fetch(eb_shared *s)
{
	char path[EB__SHARED_PATH_MAX];
	int  rv;

	if (s->id_fetching) {
		return;
	}
	(void) snprintf(path, sizeof(path), "%s/ids", s->root);
	s->id_fetching = 1;
	rv = eb__counter_start(
	    s, path, 'a', EB_SHARED_ID_BLOCK, 0, block_done, NULL, NULL);
	if (rv != 0) {
		s->id_fetching = 0;
		id_fail_all(s, rv);
	}
}

void
eb__id_defer_cb(uv_timer_t *t)
{
	id_serve(t->data);
}

void
eb__id_cancel_all(eb_shared *s)
{
	id_fail_all(s, EB_ECANCELED);
}

int
eb_id_next(eb_shared *s, size_t count, eb_id_cb cb, void *arg)
{
	id_req *r;

	EB_ASSERT(!s->closing); /* use after close */
	if (count == 0 || count > EB_SHARED_ID_BLOCK || cb == NULL) {
		return UV_EINVAL;
	}
	r = eb__calloc(1, sizeof(*r));
	r->count = count;
	r->ids = eb__calloc(count, sizeof(uint64_t));
	r->cb = cb;
	r->arg = arg;
	*(id_req **) eb__vec_push(&s->id_reqs) = r;
	/* Never from inside the call: served on a later turn. */
	(void) uv_timer_start(&s->defer, eb__id_defer_cb, 0, 0);
	return 0;
}
