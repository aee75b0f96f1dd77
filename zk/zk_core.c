/*
 * The backend-independent half of eb__zk (zk.h, zk_ops.h): argument and state
 * checks, dispatch to the ops table, session bookkeeping (state, session id,
 * negotiated timeout, the lease base) and eb__zk_ensure_path, which is built
 * on eb__zk_create and so works on every backend.
 *
 * Invariants: zk->closing is set by eb__zk_close() and never cleared; after it
 * every public operation returns EB_ECLOSED and no session event reaches the
 * owner. The backend frees nothing of the common part; eb__zk_closed() does.
 * Loop thread only.
 */
#include <stdlib.h>
#include <string.h>

#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "zk/zk.h"
#include "zk/zk_ops.h"

#define ZK_DEFAULT_TIMEOUT_MS 10000u

void
eb__zk_opts_init(eb__zk_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->connect = NULL;
	opts->session_timeout_ms = ZK_DEFAULT_TIMEOUT_MS;
	opts->auth_scheme = NULL;
	opts->auth_credentials = NULL;
	opts->acl = EB_ZK_ACL_OPEN;
	opts->max_request_bytes = EB_ZK_DEFAULT_MAX_REQUEST;
}

int
eb__zk_new_with_ops(uv_loop_t *loop, const eb__zk_ops *ops, void *impl,
    uint32_t timeout_ms, eb__zk_event_cb on_event, void *arg, eb__zk **zkp)
{
	eb__zk *zk;

	if (loop == NULL || ops == NULL || zkp == NULL) {
		return EB_EZKBADARGS;
	}
	zk = eb__calloc(1, sizeof(*zk));
	zk->loop = loop;
	zk->ops = ops;
	zk->impl = impl;
	zk->on_event = on_event;
	zk->event_arg = arg;
	zk->state = EB_ZK_STATE_CONNECTING;
	zk->session_id = 0;
	zk->timeout_ms = timeout_ms != 0 ? timeout_ms : ZK_DEFAULT_TIMEOUT_MS;
	zk->last_ok_send_ms = 0;
	zk->max_request = EB_ZK_DEFAULT_MAX_REQUEST;
	zk->chroot_len = 0;
	eb__vec_init(&zk->live, sizeof(eb__zk_live_slot));
	eb__list_init(&zk->held);
	*zkp = zk;
	return 0;
}

static const char *
zk_event_name(eb__zk_event ev)
{
	switch (ev) {
	case EB_ZK_EV_CONNECTED:
		return "connected";
	case EB_ZK_EV_SUSPENDED:
		return "suspended";
	case EB_ZK_EV_RECONNECTED:
		return "reconnected";
	case EB_ZK_EV_EXPIRED:
		return "expired";
	case EB_ZK_EV_AUTH_FAILED:
		return "auth-failed";
	}
	return "?";
}

void
eb__zk_emit(eb__zk *zk, eb__zk_event ev, int64_t session_id)
{
	if (zk->closing) {
		return; /* the owner asked for silence */
	}
	switch (ev) {
	case EB_ZK_EV_CONNECTED:
		/* A new session: nothing of the old one counts for the lease.
		 */
		zk->state = EB_ZK_STATE_CONNECTED;
		zk->session_id = session_id;
		zk->last_ok_send_ms = 0;
		break;
	case EB_ZK_EV_RECONNECTED:
		zk->state = EB_ZK_STATE_CONNECTED;
		zk->session_id = session_id;
		break;
	case EB_ZK_EV_SUSPENDED:
		zk->state = EB_ZK_STATE_SUSPENDED;
		break;
	case EB_ZK_EV_EXPIRED:
	case EB_ZK_EV_AUTH_FAILED:
		/* The session is gone; session_id keeps naming the dead one
		 * until the next CONNECTED, so the owner can log it. */
		zk->state = EB_ZK_STATE_CONNECTING;
		zk->last_ok_send_ms = 0;
		break;
	}
	EB_LOG_INFO("zk", "session-%s: session=0x%llx timeout_ms=%u",
	    zk_event_name(ev), (unsigned long long) zk->session_id,
	    zk->timeout_ms);
	if (zk->on_event != NULL) {
		zk->on_event(zk, ev, zk->event_arg);
	}
}

void
eb__zk_note_ok(eb__zk *zk, uint64_t send_ms)
{
	/* Completions can arrive out of send order across reconnects: keep
	 * the latest send time, the lease must never move backwards. */
	if (send_ms > zk->last_ok_send_ms) {
		zk->last_ok_send_ms = send_ms;
	}
}

void
eb__zk_closed(eb__zk *zk)
{
	eb__zk_close_cb cb = zk->close_cb;
	void           *arg = zk->close_arg;

	zk->state = EB_ZK_STATE_CLOSED;
	eb__zkw_cancel_held(zk);
	if (cb != NULL) {
		cb(zk, arg);
	}
	eb__vec_free(&zk->live);
	free(zk);
}

void
eb__zk_multi_fail(
    eb__zk *zk, eb__zk_multi_cb cb, void *arg, size_t count, int status)
{
	eb__zk_op_result *res = eb__calloc(count, sizeof(*res));
	size_t            i;

	for (i = 0; i < count; i++) {
		res[i].status = status;
	}
	cb(zk, status, res, count, arg);
	free(res);
}

int
eb__zk_start(eb__zk *zk)
{
	EB_ASSERT(!zk->closing); /* start after close */
	if (zk->closing) {
		return EB_ECLOSED;
	}
	if (zk->started) {
		return EB_EZKINVALIDSTATE;
	}
	zk->started = 1;
	return zk->ops->start(zk);
}

void
eb__zk_close(eb__zk *zk, eb__zk_close_cb cb, void *arg)
{
	EB_ASSERT(!zk->closing); /* close is exactly once */
	zk->closing = 1;
	zk->state = EB_ZK_STATE_CLOSED;
	zk->close_cb = cb;
	zk->close_arg = arg;
	zk->ops->close(zk);
}

eb__zk_state
eb__zk_get_state(const eb__zk *zk)
{
	return zk->state;
}

const char *
eb__zk_state_name(eb__zk_state s)
{
	switch (s) {
	case EB_ZK_STATE_CONNECTING:
		return "connecting";
	case EB_ZK_STATE_CONNECTED:
		return "connected";
	case EB_ZK_STATE_SUSPENDED:
		return "suspended";
	default:
		return "closed";
	}
}

int64_t
eb__zk_session_id(const eb__zk *zk)
{
	return zk->session_id;
}

uint32_t
eb__zk_session_timeout_ms(const eb__zk *zk)
{
	return zk->timeout_ms;
}

uint64_t
eb__zk_last_ok_send_ms(const eb__zk *zk)
{
	return zk->last_ok_send_ms;
}

uint64_t
eb__zk_requests(const eb__zk *zk)
{
	return zk->requests;
}

int
eb__zk_status_transient(int status)
{
	return status == EB_EZKLOSS || status == EB_EZKOPTIMEOUT ||
	       status == EB_EZKNOTHING || status == EB_EZKEXPIRED ||
	       status == EB_ECANCELED || status == EB_ECLOSED ||
	       status == EB_EZKINVALIDSTATE || status == EB_EZKCLOSING;
}

/* ---- request sizes ---- */

/*
 * Jute, as the C client writes a request: a 4-byte length prefix, the
 * RequestHeader (xid, type: 8), then the record. A ustring and a buffer are
 * a 4-byte length and the bytes (a NULL buffer: the length -1 alone); ints
 * are 4 bytes, booleans 1. Paths carry the chroot. ACLs are bounded by
 * ZK_ACL_MAX: the open ACL is 27 bytes (count, perms, "world", "anyone"),
 * the creator ACL 39 (adds perms, "auth", ""). A create may be sent as a
 * create2/TTL record, 8 bytes more. A multi adds a MultiHeader (type, done,
 * err: 9) before each op and one after the last.
 */
#define ZK_FRAME_BYTES   12u
#define ZK_ACL_MAX       64u
#define ZK_MULTI_HDR     9u
#define ZK_CREATE_EXTRA  (ZK_ACL_MAX + 4u + 8u)
#define ZK_SIZE_SATURATE ((size_t) 1 << (sizeof(size_t) * 8 - 2))

/* a + b, pinned at ZK_SIZE_SATURATE (far above any bound) on overflow. */
static size_t
size_add(size_t a, size_t b)
{
	if (a >= ZK_SIZE_SATURATE || b >= ZK_SIZE_SATURATE - a) {
		return ZK_SIZE_SATURATE;
	}
	return a + b;
}

static size_t
path_bytes(const eb__zk *zk, const char *path)
{
	return size_add(4u + zk->chroot_len, path != NULL ? strlen(path) : 0);
}

static size_t
data_bytes(const char *data, size_t len)
{
	return data != NULL ? size_add(4u, len) : 4u;
}

/* The record of one op, without framing or multi header. */
static size_t
op_record_bytes(const eb__zk *zk, const eb__zk_op *op)
{
	size_t n = path_bytes(zk, op->path);

	switch (op->type) {
	case EB_ZK_OP_CREATE:
		return size_add(size_add(n, data_bytes(op->data, op->len)),
		    ZK_CREATE_EXTRA);
	case EB_ZK_OP_SET:
		return size_add(size_add(n, data_bytes(op->data, op->len)), 4u);
	case EB_ZK_OP_DELETE:
	case EB_ZK_OP_CHECK:
		return size_add(n, 4u); /* the version (exists: the watch) */
	}
	return size_add(n, 4u);
}

size_t
eb__zk_max_request(const eb__zk *zk)
{
	return zk->max_request;
}

uint64_t
eb__zk_too_big(const eb__zk *zk)
{
	return zk->too_big;
}

size_t
eb__zk_op_bytes(const eb__zk *zk, const eb__zk_op *op)
{
	return size_add(ZK_FRAME_BYTES, op_record_bytes(zk, op));
}

size_t
eb__zk_multi_op_bytes(const eb__zk *zk, const eb__zk_op *op)
{
	return size_add(ZK_MULTI_HDR, op_record_bytes(zk, op));
}

size_t
eb__zk_multi_bytes(const eb__zk *zk, const eb__zk_op *ops, size_t count)
{
	size_t n = ZK_FRAME_BYTES + ZK_MULTI_HDR; /* the closing header */
	size_t i;

	for (i = 0; i < count; i++) {
		n = size_add(n, eb__zk_multi_op_bytes(zk, &ops[i]));
	}
	return n;
}

/* 0, or EB_EZKTOOBIG (counted and logged) when bytes exceed the bound. */
static int
zk_size_check(eb__zk *zk, const char *what, const char *path, size_t bytes)
{
	if (bytes <= zk->max_request) {
		return 0;
	}
	zk->too_big++;
	EB_LOG_RL_AT(EB_LOG_LEVEL_WARN, "zk",
	    "request-too-big: op=%s path=%.128s bytes=%zu "
	    "max_request_bytes=%zu",
	    what, path, bytes, zk->max_request);
	return EB_EZKTOOBIG;
}

/* The same check for a single op of type t. */
static int
zk_op_size_check(eb__zk *zk, const char *what, eb__zk_op_type t,
    const char *path, const char *data, size_t len)
{
	eb__zk_op op;

	memset(&op, 0, sizeof(op));
	op.type = t;
	op.path = path;
	op.data = data;
	op.len = len;
	return zk_size_check(zk, what, path, eb__zk_op_bytes(zk, &op));
}

/* Common checks of every operation: 0 when it may be dispatched. */
static int
zk_op_check(const eb__zk *zk, const char *path, int has_cb)
{
	if (zk->closing) {
		return EB_ECLOSED;
	}
	if (!zk->started) {
		return EB_EZKINVALIDSTATE;
	}
	if (path == NULL || path[0] != '/' || !has_cb) {
		return EB_EZKBADARGS;
	}
	return 0;
}

/* zk_op_check and the size of a read of path (path, watch flag: bounded
 * by the estimate of a check op). */
static int
zk_read_check(eb__zk *zk, const char *what, const char *path, int has_cb)
{
	int rv = zk_op_check(zk, path, has_cb);

	return rv != 0
	           ? rv
	           : zk_op_size_check(zk, what, EB_ZK_OP_CHECK, path, NULL, 0);
}

int
eb__zk_create(eb__zk *zk, const char *path, const char *data, size_t len,
    int flags, eb__zk_create_cb cb, void *arg)
{
	struct eb__zkw_call c = { .kind = EB__ZKW_CREATE,
		.path = path,
		.data = data,
		.len = len,
		.flags = flags,
		.cb.create = cb,
		.arg = arg };
	int                 rv = zk_op_check(zk, path, cb != NULL);

	if (rv != 0) {
		return rv;
	}
	if ((flags & ~(EB_ZK_EPHEMERAL | EB_ZK_SEQUENTIAL)) != 0) {
		return EB_EZKBADARGS;
	}
	if ((rv = zk_op_size_check(
	         zk, "create", EB_ZK_OP_CREATE, path, data, len)) != 0) {
		return rv;
	}
	return eb__zkw_submit(zk, &c, 0);
}

int
eb__zk_delete(
    eb__zk *zk, const char *path, int32_t version, eb__zk_void_cb cb, void *arg)
{
	struct eb__zkw_call c = { .kind = EB__ZKW_DELETE,
		.path = path,
		.version = version,
		.cb.void_ = cb,
		.arg = arg };
	int                 rv = zk_op_check(zk, path, cb != NULL);

	if (rv == 0) {
		rv = zk_op_size_check(
		    zk, "delete", EB_ZK_OP_DELETE, path, NULL, 0);
	}
	return rv != 0 ? rv : eb__zkw_submit(zk, &c, 0);
}

int
eb__zk_exists(eb__zk *zk, const char *path, eb__zk_watch_cb watch,
    void *watch_arg, eb__zk_stat_cb cb, void *arg)
{
	struct eb__zkw_call c = { .kind = EB__ZKW_EXISTS,
		.path = path,
		.watch = watch,
		.watch_arg = watch_arg,
		.cb.stat = cb,
		.arg = arg };
	int                 rv = zk_read_check(zk, "exists", path, cb != NULL);

	return rv != 0 ? rv : eb__zkw_submit(zk, &c, 0);
}

int
eb__zk_get(eb__zk *zk, const char *path, eb__zk_watch_cb watch, void *watch_arg,
    eb__zk_data_cb cb, void *arg)
{
	struct eb__zkw_call c = { .kind = EB__ZKW_GET,
		.path = path,
		.watch = watch,
		.watch_arg = watch_arg,
		.cb.data = cb,
		.arg = arg };
	int                 rv = zk_read_check(zk, "get", path, cb != NULL);

	return rv != 0 ? rv : eb__zkw_submit(zk, &c, 0);
}

int
eb__zk_get_children(eb__zk *zk, const char *path, eb__zk_watch_cb watch,
    void *watch_arg, eb__zk_children_cb cb, void *arg)
{
	struct eb__zkw_call c = { .kind = EB__ZKW_CHILDREN,
		.path = path,
		.watch = watch,
		.watch_arg = watch_arg,
		.cb.children = cb,
		.arg = arg };
	int rv = zk_read_check(zk, "get_children", path, cb != NULL);

	return rv != 0 ? rv : eb__zkw_submit(zk, &c, 0);
}

int
eb__zk_set(eb__zk *zk, const char *path, const char *data, size_t len,
    int32_t version, eb__zk_stat_cb cb, void *arg)
{
	struct eb__zkw_call c = { .kind = EB__ZKW_SET,
		.path = path,
		.data = data,
		.len = len,
		.version = version,
		.cb.stat = cb,
		.arg = arg };
	int                 rv = zk_op_check(zk, path, cb != NULL);

	if (rv == 0) {
		rv = zk_op_size_check(zk, "set", EB_ZK_OP_SET, path, data, len);
	}
	return rv != 0 ? rv : eb__zkw_submit(zk, &c, 0);
}

static int
zk_multi(eb__zk *zk, const eb__zk_op *ops, size_t count, eb__zk_multi_cb cb,
    void *arg, int ahead)
{
	struct eb__zkw_call c = { .kind = EB__ZKW_MULTI,
		.ops = ops,
		.count = count,
		.cb.multi = cb,
		.arg = arg };
	size_t              i;
	int                 rv = zk_op_check(zk, "/", cb != NULL);

	if (rv != 0) {
		return rv;
	}
	if (ops == NULL || count == 0) {
		return EB_EZKBADARGS;
	}
	for (i = 0; i < count; i++) {
		if (ops[i].path == NULL || ops[i].path[0] != '/' ||
		    ops[i].type < EB_ZK_OP_CREATE ||
		    ops[i].type > EB_ZK_OP_CHECK) {
			return EB_EZKBADARGS;
		}
	}
	if ((rv = zk_size_check(zk, "multi", ops[0].path,
	         eb__zk_multi_bytes(zk, ops, count))) != 0) {
		return rv;
	}
	return eb__zkw_submit(zk, &c, ahead);
}

int
eb__zk_multi(eb__zk *zk, const eb__zk_op *ops, size_t count, eb__zk_multi_cb cb,
    void *arg)
{
	return zk_multi(zk, ops, count, cb, arg, 0);
}

int
eb__zk_multi_ahead(eb__zk *zk, const eb__zk_op *ops, size_t count,
    eb__zk_multi_cb cb, void *arg)
{
	return zk_multi(zk, ops, count, cb, arg, 1);
}

/*
 * eb__zk_ensure_path: creates each missing ancestor top-down, one create at a
 * time; EB_EZKNODEEXISTS for a level is success. Going top-down costs one
 * round trip per level even when most exist, but it needs no exists()
 * probing and is race-free against a concurrent creator.
 */
struct ensure_req {
	eb__zk_void_cb cb;
	void          *arg;
	char          *path; /* owned: the full path */
	size_t         done; /* length of the prefix known to exist */
};

static int ensure_next(eb__zk *zk, struct ensure_req *r);

static void
ensure_finish(eb__zk *zk, struct ensure_req *r, int status)
{
	r->cb(zk, status, r->arg);
	free(r->path);
	free(r);
}

static void
ensure_create_cb(eb__zk *zk, int status, const char *path, void *arg)
{
	struct ensure_req *r = arg;
	int                rv;

	(void) path;
	if (status != 0 && status != EB_EZKNODEEXISTS) {
		ensure_finish(zk, r, status);
		return;
	}
	if (r->path[r->done] == '\0') {
		ensure_finish(zk, r, 0);
		return;
	}
	rv = ensure_next(zk, r);
	if (rv != 0) {
		/* We are inside a completion already, so this is "later". */
		ensure_finish(zk, r, rv);
	}
}

static void
ensure_root_cb(eb__zk *zk, int status, const eb__zk_stat *stat, void *arg)
{
	struct ensure_req *r = arg;

	(void) stat;
	ensure_finish(zk, r, status);
}

/* Issues the create for the next level; 0 or an immediate error. */
static int
ensure_next(eb__zk *zk, struct ensure_req *r)
{
	struct eb__zkw_call c = { .kind = EB__ZKW_CREATE,
		.path = r->path,
		.cb.create = ensure_create_cb,
		.arg = r };
	char               *slash;
	size_t              end;
	int                 rv;

	slash = strchr(r->path + r->done + 1, '/');
	end = slash != NULL ? (size_t) (slash - r->path) : strlen(r->path);
	r->path[end] = '\0';
	rv = eb__zkw_submit(zk, &c, 0);
	if (slash != NULL) {
		r->path[end] = '/';
	}
	if (rv == 0) {
		r->done = end;
	}
	return rv;
}

int
eb__zk_ensure_path(eb__zk *zk, const char *path, eb__zk_void_cb cb, void *arg)
{
	struct ensure_req *r;
	size_t             n;
	int                rv = zk_op_check(zk, path, cb != NULL);

	if (rv != 0) {
		return rv;
	}
	n = strlen(path);
	if (n > 1 && (path[n - 1] == '/' || strstr(path, "//") != NULL)) {
		return EB_EZKBADARGS;
	}
	/* Each level's create is a prefix of the last one: one check. */
	if ((rv = zk_op_size_check(
	         zk, "ensure_path", EB_ZK_OP_CREATE, path, NULL, 0)) != 0) {
		return rv;
	}
	r = eb__calloc(1, sizeof(*r));
	r->cb = cb;
	r->arg = arg;
	r->path = eb__strdup(path);
	r->done = 0;
	if (n == 1) {
		/* "/" always exists; an exists() gives the one later callback
		 * (and a real status if the session is gone). */
		struct eb__zkw_call c = { .kind = EB__ZKW_EXISTS,
			.path = "/",
			.cb.stat = ensure_root_cb,
			.arg = r };

		rv = eb__zkw_submit(zk, &c, 0);
	} else {
		rv = ensure_next(zk, r);
	}
	if (rv != 0) {
		free(r->path);
		free(r);
	}
	return rv;
}

/* ---- live ids ---- */

/* id = generation << 32 | (slot + 1); a slot's generation grows on every
 * delete, so a stale id never finds the slot's next owner. */
uint64_t
eb__zk_live_add(eb__zk *zk, void *obj)
{
	eb__zk_live_slot *s;
	size_t            i;

	EB_ASSERT(obj != NULL);
	if (zk->live_free != 0) {
		i = zk->live_free - 1;
		s = eb__vec_at(&zk->live, i);
		zk->live_free = s->next_free;
	} else {
		i = zk->live.len;
		s = eb__vec_push(&zk->live);
		s->gen = 1;
	}
	s->obj = obj;
	s->next_free = 0;
	return ((uint64_t) s->gen << 32) | (uint64_t) (i + 1);
}

static eb__zk_live_slot *
live_slot(const eb__zk *zk, uint64_t id)
{
	size_t            i = (size_t) (id & 0xffffffffu);
	eb__zk_live_slot *s;

	if (i == 0 || i > zk->live.len) {
		return NULL;
	}
	s = eb__vec_at(&zk->live, i - 1);
	return s->obj != NULL && s->gen == (uint32_t) (id >> 32) ? s : NULL;
}

void *
eb__zk_live_get(const eb__zk *zk, uint64_t id)
{
	eb__zk_live_slot *s = live_slot(zk, id);

	return s != NULL ? s->obj : NULL;
}

void
eb__zk_live_del(eb__zk *zk, uint64_t id)
{
	eb__zk_live_slot *s = live_slot(zk, id);

	if (s == NULL) {
		return;
	}
	s->obj = NULL;
	s->gen++;
	s->next_free = zk->live_free;
	zk->live_free = (uint32_t) (id & 0xffffffffu);
}
