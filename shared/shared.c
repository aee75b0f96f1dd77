/*
 * eb_shared: the object, its session events, the lock lease and the lock
 * recipe (include/ebnode/shared.h, docs/SHARED.md).
 *
 * The session is this object's own (eb_shared_new opens it with the
 * cluster's settings), never the cluster's: a client's locks, however many,
 * cannot suspend or expire the session that holds membership and
 * leadership, and every multi built here is split under the ZooKeeper
 * request limit (eb__zk_max_request).
 *
 * Lock node names are "l-<tag>-<seq>": the tag (node session id and a
 * per-node counter) finds a node whose create was sent but whose answer
 * was lost with the connection. A lock node whose delete fails, for any
 * reason, is kept as an orphan (dir, prefix) and retried with back-off
 * until it is gone or the session ends: no orphan blocks a name while the
 * session lives. The lock's directory goes once its last node has.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/log.h>
#include <ebnode/shared.h>

#include "cluster/cluster_zk.h"
#include "common/alloc.h"
#include "common/assert.h"
#include "common/lease.h"
#include "common/util.h"
#include "shared/shared_int.h"

enum lk_state {
	LK_CREATING = 0, /* the create is in flight */
	LK_WAITING = 1,  /* created; a predecessor holds or waits */
	LK_HELD = 2,
	LK_DONE = 3 /* reported, released or revoked: waits for the create */
};

struct eb_lock {
	eb_shared *s;
	eb__list   link; /* s->locks */
	uint64_t   live;
	int        state;
	int        user;     /* callbacks still due to the user */
	int        checking; /* a children read is in flight */
	int        recheck;  /* another check was asked meanwhile */
	int        ensured;  /* times the lock directory was created */
	int        creating; /* the create is in flight */
	int        lowest;   /* found lowest; held once the token is
	                        known */
	char              *name;
	char              *dir;    /* <root>/locks/<name> */
	char              *prefix; /* "l-<tag>-" */
	char              *path;   /* own node; NULL until created */
	int64_t            token;
	uint64_t           owner;
	int64_t            timeout_ms;
	uint64_t           deadline_ms; /* 0: none */
	uint64_t           create_sent_ms;
	uint64_t           confirmed_ms; /* send time of the holding check */
	eb_lock_cb         cb;
	eb_lock_revoked_cb revoked;
	void              *arg;
};

int
eb__shared_name_ok(const char *name)
{
	size_t i, n;

	if (name == NULL) {
		return 0;
	}
	n = strlen(name);
	if (n == 0 || n > EB__SHARED_NAME_MAX || strcmp(name, ".") == 0 ||
	    strcmp(name, "..") == 0) {
		return 0;
	}
	for (i = 0; i < n; i++) {
		char ch = name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		        (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
		        ch == '-')) {
			return 0;
		}
	}
	return 1;
}

/* ---- the lease ---- */

static void
lease_plan(eb_shared *s)
{
	eb_lease_plan p;
	const char   *key = NULL;

	if (eb__lease_plan(eb__zk_session_timeout_ms(s->zk), s->tick_ms, 0, 0,
	        &p, &key) != 0) {
		EB_LOG_ERR("shared",
		    "lease-unsafe: key=%s session_ms=%u (locks are refused)",
		    key != NULL ? key : "-", p.session_ms);
		s->lease_ms = 0;
		s->heartbeat_ms = p.heartbeat_ms;
		return;
	}
	s->lease_ms = p.lease_ms;
	s->heartbeat_ms = p.heartbeat_ms;
}

static uint64_t
lk_base(const eb_lock *lk)
{
	uint64_t r = lk->s->renewed_ms;

	return lk->confirmed_ms > r ? lk->confirmed_ms : r;
}

static int
lk_valid(const eb_lock *lk, uint64_t now)
{
	return lk->state == LK_HELD && lk->s->lease_ms > 0 &&
	       now - lk_base(lk) < lk->s->lease_ms;
}

static size_t
count_state(const eb_shared *s, int state)
{
	eb__list *it;
	size_t    n = 0;

	for (it = eb__list_first(&s->locks); it != NULL && it != &s->locks;
	     it = it->next) {
		const eb_lock *lk = EB_CONTAINER_OF(it, eb_lock, link);

		n += lk->state == state && lk->user;
	}
	return n;
}

/* ---- freeing and deleting nodes ---- */

static void retry_cb(uv_timer_t *t);

/* The next retry of the orphans, after the current back-off (doubling up
 * to EB__SHARED_RETRY_MAX_MS; a delete that succeeds resets it). */
static void
retry_arm(eb_shared *s)
{
	if (s->closing || uv_is_active((uv_handle_t *) &s->retry)) {
		return;
	}
	if (s->retry_ms < EB__SHARED_RETRY_MIN_MS) {
		s->retry_ms = EB__SHARED_RETRY_MIN_MS;
	}
	(void) uv_timer_start(&s->retry, retry_cb, s->retry_ms, 0);
	s->retry_ms = s->retry_ms * 2 > EB__SHARED_RETRY_MAX_MS
	                  ? EB__SHARED_RETRY_MAX_MS
	                  : s->retry_ms * 2;
}

/* A lock node (dir, prefix*) still to delete: retried until it is gone or
 * the session ends. */
static void
orphan_add(eb_shared *s, const char *dir, const char *prefix)
{
	char **slot = eb__vec_push(&s->orphans);
	size_t n = strlen(dir) + strlen(prefix) + 2;

	*slot = eb__malloc(n);
	(void) snprintf(*slot, n, "%s\n%s", dir, prefix);
	retry_arm(s);
}

typedef struct del_req {
	uint64_t s_live;
	char    *dir;
	char    *prefix;
} del_req;

static void
dir_cb(eb__zk *zk, int status, void *arg)
{
	(void) zk;
	(void) arg;
	/* NOTEMPTY: another waiter came (its create re-makes the directory
	 * if it went first); NONODE: someone else removed it. */
	(void) status;
}

/* The lock's directory, once its last node is gone (refused by ZooKeeper
 * while it has children). */
static void
dir_remove(eb_shared *s, const char *dir)
{
	if (!s->closing) {
		(void) eb__zk_delete(s->zk, dir, -1, dir_cb, NULL);
	}
}

/* Was the lock node's delete (or its orphan listing) final? 0: gone (the
 * directory goes too); else kept to retry, unless the session ended. */
static void
delete_answered(eb_shared *s, int status, const char *dir, const char *prefix)
{
	if (status == 0 || status == EB_EZKNONODE) {
		s->retry_ms = 0;
		dir_remove(s, dir);
		return;
	}
	if (status == EB_EZKEXPIRED) {
		return; /* the session's nodes are gone with it */
	}
	EB_LOG_DEBUG("shared", "lock-delete-retry: dir=%s err=%s", dir,
	    eb_err_name(status));
	orphan_add(s, dir, prefix);
}

static void
del_cb(eb__zk *zk, int status, void *arg)
{
	del_req   *d = arg;
	eb_shared *s = eb__zk_live_get(zk, d->s_live);

	if (s != NULL) {
		s->deletes--;
		if (!s->closing) {
			delete_answered(s, status, d->dir, d->prefix);
		}
	}
	free(d->dir);
	free(d->prefix);
	free(d);
}

static void
node_delete(eb_shared *s, const char *path, const char *dir, const char *prefix)
{
	del_req *d = eb__calloc(1, sizeof(*d));

	d->s_live = s->live;
	d->dir = eb__strdup(dir);
	d->prefix = eb__strdup(prefix);
	if (eb__zk_delete(s->zk, path, -1, del_cb, d) != 0) {
		orphan_add(s, dir, prefix);
		free(d->dir);
		free(d->prefix);
		free(d);
		return;
	}
	s->deletes++;
}

static void
lk_free(eb_lock *lk)
{
	eb__list_remove(&lk->link);
	if (lk->live != 0) {
		eb__zk_live_del(lk->s->zk, lk->live);
	}
	free(lk->name);
	free(lk->dir);
	free(lk->prefix);
	free(lk->path);
	free(lk);
}

/* No more callbacks to the user; the node goes now, or when the create
 * answers (create_cb frees then). */
static void
lk_finish(eb_lock *lk)
{
	lk->user = 0;
	lk->state = LK_DONE;
	if (lk->path != NULL) {
		node_delete(lk->s, lk->path, lk->dir, lk->prefix);
		lk_free(lk);
		return;
	}
	if (lk->creating && !lk->s->closing) {
		return;
	}
	lk_free(lk);
}

static void
lk_fail(eb_lock *lk, int status)
{
	eb_shared *s = lk->s;

	if (lk->user) {
		lk->user = 0;
		if (status == EB_ETIMEOUT || status == UV_EBUSY) {
			s->st.timeouts++;
		}
		lk->cb(lk, status, 0, lk->arg);
	}
	lk_finish(lk);
}

static void
lk_revoke(eb_lock *lk, const char *reason)
{
	eb_shared *s = lk->s;

	EB_LOG_WARN("shared",
	    "lock-revoked: name=%s token=%" PRId64 " reason=%s", lk->name,
	    lk->token, reason);
	s->st.revocations++;
	if (lk->user) {
		lk->user = 0;
		if (lk->revoked != NULL) {
			lk->revoked(lk, reason, lk->arg);
		}
	}
	lk_finish(lk);
}

enum { MATCH_LIVE, MATCH_LAPSED, MATCH_DUE };

/* MATCH_LIVE: reported to nobody yet, or held; MATCH_LAPSED: held with
 * its lease run out; MATCH_DUE: waiting past its deadline. */
static int
lk_matches(const eb_lock *lk, int what, uint64_t now)
{
	if (!lk->user || lk->state == LK_DONE) {
		return 0;
	}
	return what == MATCH_LIVE ||
	       (what == MATCH_LAPSED && lk->state == LK_HELD &&
	           !lk_valid(lk, now)) ||
	       (what == MATCH_DUE && lk->state != LK_HELD &&
	           lk->deadline_ms != 0 && lk->deadline_ms <= now);
}

/*
 * Calls fn for every lock that matches, with a reason and a status. The
 * locks are named by live id first and looked up again before each call,
 * since a callback to the user may release any lock.
 */
static void
lk_each(eb_shared *s, int what, void (*fn)(eb_lock *, const char *, int),
    const char *reason, int status)
{
	uint64_t  now = eb__mono_ms();
	eb__vec   ids;
	eb__list *it;
	size_t    i;

	eb__vec_init(&ids, sizeof(uint64_t));
	for (it = eb__list_first(&s->locks); it != NULL && it != &s->locks;
	     it = it->next) {
		const eb_lock *lk = EB_CONTAINER_OF(it, eb_lock, link);

		if (lk_matches(lk, what, now)) {
			*(uint64_t *) eb__vec_push(&ids) = lk->live;
		}
	}
	for (i = 0; i < ids.len; i++) {
		eb_lock *lk = eb__zk_live_get(
		    s->zk, *(const uint64_t *) eb__vec_at(&ids, i));

		if (lk != NULL && lk_matches(lk, what, now)) {
			fn(lk, reason, status);
		}
	}
	eb__vec_free(&ids);
}

static void
lk_drop(eb_lock *lk, const char *reason, int status)
{
	if (lk->state == LK_HELD) {
		lk_revoke(lk, reason);
	} else {
		lk_fail(lk, status);
	}
}

/* Every lock: held ones revoked, pending ones failed with status. */
static void
lk_drop_all(eb_shared *s, const char *reason, int status)
{
	lk_each(s, MATCH_LIVE, lk_drop, reason, status);
}

/* ---- timers ---- */

static void lease_arm(eb_shared *s);
static void deadline_arm(eb_shared *s);
static void heartbeat_cb(uv_timer_t *t);

static void
lease_cb(uv_timer_t *t)
{
	eb_shared *s = t->data;

	lk_each(s, MATCH_LAPSED, lk_drop, "lease-expired", 0);
	lease_arm(s);
}

static void
lease_arm(eb_shared *s)
{
	uint64_t  due = 0, now = eb__mono_ms();
	eb__list *it;

	if (s->closing) {
		return;
	}
	for (it = eb__list_first(&s->locks); it != NULL && it != &s->locks;
	     it = it->next) {
		const eb_lock *lk = EB_CONTAINER_OF(it, eb_lock, link);
		uint64_t       d;

		if (lk->state != LK_HELD) {
			continue;
		}
		d = lk_base(lk) + s->lease_ms;
		if (due == 0 || d < due) {
			due = d;
		}
	}
	if (due == 0) {
		(void) uv_timer_stop(&s->lease);
		(void) uv_timer_stop(&s->heartbeat);
		return;
	}
	(void) uv_timer_start(
	    &s->lease, lease_cb, due > now ? due - now : 0, 0);
	if (!uv_is_active((uv_handle_t *) &s->heartbeat)) {
		(void) uv_timer_start(&s->heartbeat, heartbeat_cb,
		    s->heartbeat_ms, s->heartbeat_ms);
	}
}

static void
deadline_cb(uv_timer_t *t)
{
	eb_shared *s = t->data;

	lk_each(s, MATCH_DUE, lk_drop, NULL, EB_ETIMEOUT);
	deadline_arm(s);
}

static void
deadline_arm(eb_shared *s)
{
	uint64_t  due = 0, now = eb__mono_ms();
	eb__list *it;

	if (s->closing) {
		return;
	}
	for (it = eb__list_first(&s->locks); it != NULL && it != &s->locks;
	     it = it->next) {
		const eb_lock *lk = EB_CONTAINER_OF(it, eb_lock, link);

		if (lk->user && lk->state != LK_HELD && lk->deadline_ms != 0 &&
		    (due == 0 || lk->deadline_ms < due)) {
			due = lk->deadline_ms;
		}
	}
	if (due == 0) {
		(void) uv_timer_stop(&s->deadline);
		return;
	}
	(void) uv_timer_start(
	    &s->deadline, deadline_cb, due > now ? due - now : 0, 0);
}

/* ---- the renewal (the lease's base) ---- */

typedef struct renew_req {
	uint64_t s_live;
	uint64_t sent;
	size_t   n;
	uint64_t lives[]; /* the locks checked, in op order */
} renew_req;

static void
renew_cb(eb__zk *zk, int status, const eb__zk_op_result *res, size_t count,
    void *arg)
{
	renew_req *q = arg;
	eb_shared *s = eb__zk_live_get(zk, q->s_live);
	size_t     i;

	if (s == NULL || s->closing) {
		free(q);
		return;
	}
	if (status == 0) {
		uint64_t rtt = eb__mono_ms() - q->sent;

		/* Committed by the quorum: the session was alive there after
		 * `sent` (as the election's renewal, docs/CLUSTER.md). */
		s->renew_last_ms = rtt;
		if (rtt > s->renew_max_ms) {
			s->renew_max_ms = rtt;
		}
		if (q->sent > s->renewed_ms) {
			s->renewed_ms = q->sent;
		}
	} else if (!eb__zk_status_transient(status)) {
		for (i = 0; i < count && i < q->n; i++) {
			eb_lock *lk;

			if (res[i].status != EB_EZKNONODE &&
			    res[i].status != EB_EZKBADVERSION) {
				continue;
			}
			lk = eb__zk_live_get(zk, q->lives[i]);
			if (lk != NULL && lk->state == LK_HELD) {
				lk_revoke(lk, "lock-gone");
			}
		}
	}
	free(q);
	lease_arm(s);
}

size_t
eb__shared_chunk(const eb__zk *zk, const eb__zk_op *ops, size_t n)
{
	size_t bytes = eb__zk_multi_bytes(zk, ops, 0), k;

	for (k = 0; k < n; k++) {
		bytes += eb__zk_multi_op_bytes(zk, &ops[k]);
		if (bytes > eb__zk_max_request(zk) && k > 0) {
			break;
		}
	}
	return k;
}

/* One renewal multi: ops[0..n), the locks lives[0..n). */
static void
renew_send(eb_shared *s, const eb__zk_op *ops, const uint64_t *lives, size_t n,
    uint64_t sent)
{
	renew_req *q = eb__calloc(1, sizeof(*q) + n * sizeof(q->lives[0]));

	q->s_live = s->live;
	q->sent = sent;
	q->n = n;
	memcpy(q->lives, lives, n * sizeof(lives[0]));
	/* Ahead of the window: the lease's margin is this round trip. */
	if (eb__zk_multi_ahead(s->zk, ops, n, renew_cb, q) != 0) {
		free(q);
	}
}

/* Every heartbeat_ms while locks are held, even while earlier renewals are
 * pending: multis checking each held lock node (quorum writes), as many
 * as it takes to keep each under the ZooKeeper request limit. Any one of
 * them committed proves the session alive at the send time. */
static void
heartbeat_cb(uv_timer_t *t)
{
	eb_shared *s = t->data;
	size_t     n = count_state(s, LK_HELD), i = 0, k;
	eb__zk_op *ops;
	uint64_t  *lives, sent = eb__mono_ms();
	eb__list  *it;

	if (n == 0) {
		(void) uv_timer_stop(&s->heartbeat);
		return;
	}
	ops = eb__calloc(n, sizeof(*ops));
	lives = eb__calloc(n, sizeof(*lives));
	for (it = s->locks.next; it != &s->locks && i < n; it = it->next) {
		eb_lock *lk = EB_CONTAINER_OF(it, eb_lock, link);

		if (lk->state != LK_HELD || !lk->user) {
			continue;
		}
		ops[i].type = EB_ZK_OP_CHECK;
		ops[i].path = lk->path;
		ops[i].version = 0; /* lock nodes are never written */
		lives[i] = lk->live;
		i++;
	}
	n = i;
	for (i = 0; i < n; i += k) {
		k = eb__shared_chunk(s->zk, ops + i, n - i);
		renew_send(s, ops + i, lives + i, k, sent);
		s->st.renewals++;
	}
	free(ops);
	free(lives);
}

/* ---- the recipe ---- */

static void lk_check(eb_lock *lk);
static int  lk_create(eb_lock *lk);

/* The sequence suffix of a lock node name ("l-<tag>-0000000042"). */
static int
seq_of(const char *name, int64_t *seq)
{
	const char *dash = strrchr(name, '-');
	char       *end = NULL;
	long long   v;

	if (dash == NULL || dash[1] == '\0' || strncmp(name, "l-", 2) != 0) {
		return -1;
	}
	v = strtoll(dash + 1, &end, 10);
	if (end == NULL || *end != '\0' || v < 0) {
		return -1;
	}
	*seq = (int64_t) v;
	return 0;
}

static int
lk_status(int status)
{
	return eb__zk_status_transient(status) ? EB_EZKLOSS : status;
}

static eb_lock *
lk_get(eb__zk *zk, void *arg)
{
	return eb__zk_live_get(zk, eb__zk_live_id(arg));
}

typedef struct confirm_req {
	uint64_t lk_live;
	uint64_t sent;
} confirm_req;

/* The holding check answered: a quorum-committed write sent at q->sent
 * proves the session alive then, the base of the lock's lease. */
static void
confirmed_cb(eb__zk *zk, int status, const eb__zk_op_result *res, size_t count,
    void *arg)
{
	confirm_req *q = arg;
	eb_lock     *lk = eb__zk_live_get(zk, q->lk_live);
	eb_shared   *s;

	(void) res;
	(void) count;
	if (lk == NULL || lk->state != LK_WAITING) {
		free(q);
		return;
	}
	s = lk->s;
	lk->confirmed_ms = q->sent;
	free(q);
	if (status != 0) {
		lk_fail(lk, status == EB_EZKBADVERSION ? EB_EZKNONODE
		                                       : lk_status(status));
		return;
	}
	lk->state = LK_HELD;
	if (!lk_valid(lk, eb__mono_ms())) {
		lk_fail(lk, EB_EZKLOSS); /* the lease lapsed meanwhile */
		return;
	}
	s->st.acquisitions++;
	lease_arm(s);
	deadline_arm(s);
	lk->cb(lk, 0, lk->token, lk->arg);
}

/*
 * Lowest, with the token known: held. The lease's first base is the send
 * time of a quorum-committed write of this session: the create itself
 * while it is recent (less than half a lease ago), else a fresh check of
 * the lock node (a waiter that waited long).
 */
static void
lk_hold(eb_lock *lk)
{
	eb__zk_op    op;
	confirm_req *q;

	if (eb__mono_ms() - lk->create_sent_ms < lk->s->lease_ms / 2) {
		lk->confirmed_ms = lk->create_sent_ms;
		q = eb__calloc(1, sizeof(*q));
		q->lk_live = lk->live;
		q->sent = lk->create_sent_ms;
		confirmed_cb(lk->s->zk, 0, NULL, 0, q);
		return;
	}
	memset(&op, 0, sizeof(op));
	op.type = EB_ZK_OP_CHECK;
	op.path = lk->path;
	op.version = 0;
	q = eb__calloc(1, sizeof(*q));
	q->lk_live = lk->live;
	q->sent = eb__mono_ms();
	if (eb__zk_multi(lk->s->zk, &op, 1, confirmed_cb, q) != 0) {
		free(q);
		lk_fail(lk, EB_EZKLOSS);
	}
}

/* The token: the czxid of the lock node, read right after the create
 * (pipelined with the first children read). */
static void
token_cb(eb__zk *zk, int status, const eb__zk_stat *st, void *arg)
{
	eb_lock *lk = lk_get(zk, arg);

	if (lk == NULL || lk->state != LK_WAITING) {
		return;
	}
	if (status != 0) {
		lk_fail(lk,
		    status == EB_EZKNONODE ? EB_EZKNONODE : lk_status(status));
		return;
	}
	lk->token = st->czxid;
	if (lk->lowest) {
		lk_hold(lk);
	}
}

static void
pred_watch(eb__zk *zk, eb__zk_watch_type type, const char *path, void *arg)
{
	eb_lock *lk = lk_get(zk, arg);

	(void) type;
	(void) path;
	if (lk != NULL && lk->state == LK_WAITING) {
		lk_check(lk);
	}
}

static void
pred_cb(eb__zk *zk, int status, const eb__zk_stat *st, void *arg)
{
	eb_lock *lk = lk_get(zk, arg);

	(void) st;
	if (lk == NULL || lk->state != LK_WAITING) {
		return;
	}
	if (status == EB_EZKNONODE || (status == 0 && lk->recheck)) {
		lk_check(lk); /* gone before the watch was set */
	} else if (status != 0) {
		lk_fail(lk, lk_status(status));
	}
}

static void
children_cb(
    eb__zk *zk, int status, const char *const *names, size_t count, void *arg)
{
	eb_lock    *lk = lk_get(zk, arg);
	const char *own, *pred = NULL;
	int64_t     own_seq, seq, pred_seq = -1;
	int         found = 0;
	size_t      i;
	char        pp[EB__SHARED_PATH_MAX];

	if (lk == NULL) {
		return;
	}
	lk->checking = 0;
	if (lk->state != LK_WAITING) {
		return;
	}
	if (status != 0) {
		lk_fail(lk, lk_status(status));
		return;
	}
	own = strrchr(lk->path, '/') + 1;
	if (seq_of(own, &own_seq) != 0) {
		lk_fail(lk, EB_EPROTO);
		return;
	}
	for (i = 0; i < count; i++) {
		if (strcmp(names[i], own) == 0) {
			found = 1;
		} else if (seq_of(names[i], &seq) == 0 && seq < own_seq &&
		           seq > pred_seq) {
			pred = names[i];
			pred_seq = seq;
		}
	}
	if (!found) {
		lk_fail(lk, EB_EZKNONODE);
		return;
	}
	if (pred == NULL) {
		lk->lowest = 1;
		if (lk->token != 0) {
			lk_hold(lk);
		}
		return; /* else token_cb holds */
	}
	if (lk->timeout_ms == 0) {
		lk_fail(lk, UV_EBUSY);
		return;
	}
	if (lk->recheck) {
		lk_check(lk);
		return;
	}
	(void) snprintf(pp, sizeof(pp), "%s/%s", lk->dir, pred);
	if (eb__zk_exists(zk, pp, pred_watch, arg, pred_cb, arg) != 0) {
		lk_fail(lk, EB_EZKLOSS);
	}
}

static void
lk_check(eb_lock *lk)
{
	if (lk->checking) {
		lk->recheck = 1;
		return;
	}
	lk->checking = 1;
	lk->recheck = 0;
	if (eb__zk_get_children(lk->s->zk, lk->dir, NULL, NULL, children_cb,
	        eb__zk_live_arg(lk->live)) != 0) {
		lk->checking = 0;
		lk_fail(lk, EB_EZKLOSS);
	}
}

static void
create_cb(eb__zk *zk, int status, const char *path, void *arg)
{
	eb_lock   *lk = lk_get(zk, arg);
	eb_shared *s;

	if (lk == NULL) {
		return;
	}
	s = lk->s;
	lk->creating = 0;
	if (lk->state == LK_DONE) { /* abandoned while creating */
		if (status == 0) {
			node_delete(s, path, lk->dir, lk->prefix);
		} else if (eb__zk_status_transient(status)) {
			orphan_add(s, lk->dir, lk->prefix);
		}
		lk_free(lk);
		return;
	}
	if (status != 0) {
		if (eb__zk_status_transient(status)) {
			orphan_add(s, lk->dir, lk->prefix);
		}
		lk_fail(lk, lk_status(status));
		return;
	}
	lk->path = eb__strdup(path);
	lk->state = LK_WAITING;
	if (eb__zk_exists(zk, lk->path, NULL, NULL, token_cb, arg) != 0) {
		lk_fail(lk, EB_EZKLOSS);
		return;
	}
	lk_check(lk);
}

static void
ensure_cb(eb__zk *zk, int status, void *arg)
{
	eb_lock *lk = lk_get(zk, arg);
	int      rv;

	if (lk == NULL) {
		return;
	}
	lk->creating = 0;
	if (lk->state == LK_DONE) {
		lk_free(lk);
		return;
	}
	if (status != 0 && status != EB_EZKNODEEXISTS) {
		lk_fail(lk, lk_status(status));
		return;
	}
	if ((rv = lk_create(lk)) != 0) {
		lk_fail(lk, lk_status(rv));
	}
}

static void
lk_create_answered(eb__zk *zk, int status, const char *path, void *arg)
{
	eb_lock *lk = lk_get(zk, arg);

	if (lk != NULL && status == EB_EZKNONODE && lk->ensured < 3 &&
	    lk->state == LK_CREATING) {
		/* The lock's directory is missing (never made, or removed
		 * with its last node meanwhile): make it, then again. */
		lk->ensured++;
		if (eb__zk_ensure_path(zk, lk->dir, ensure_cb, arg) == 0) {
			return;
		}
		lk->creating = 0;
		lk_fail(lk, EB_EZKLOSS);
		return;
	}
	create_cb(zk, status, path, arg);
}

static int
lk_create(eb_lock *lk)
{
	char path[EB__SHARED_PATH_MAX];
	int  rv;

	(void) snprintf(path, sizeof(path), "%s/%s", lk->dir, lk->prefix);
	lk->creating = 1;
	lk->create_sent_ms = eb__mono_ms();
	rv = eb__zk_create(lk->s->zk, path, NULL, 0,
	    EB_ZK_EPHEMERAL | EB_ZK_SEQUENTIAL, lk_create_answered,
	    eb__zk_live_arg(lk->live));
	if (rv != 0) {
		lk->creating = 0;
	}
	return rv;
}

/* ---- orphans: nodes of abandoned or revoked locks ---- */

typedef struct orphan_req {
	uint64_t s_live;
	char    *dir;
	char    *prefix;
} orphan_req;

/* Deletes the children of dir named prefix*; returns how many. */
static size_t
orphan_delete(eb_shared *s, const char *dir, const char *prefix,
    const char *const *names, size_t count)
{
	size_t i, n = 0;
	char   path[EB__SHARED_PATH_MAX];

	for (i = 0; i < count; i++) {
		if (strncmp(names[i], prefix, strlen(prefix)) == 0) {
			(void) snprintf(
			    path, sizeof(path), "%s/%s", dir, names[i]);
			node_delete(s, path, dir, prefix);
			n++;
		}
	}
	return n;
}

static void
orphan_list_cb(
    eb__zk *zk, int status, const char *const *names, size_t count, void *arg)
{
	orphan_req *q = arg;
	eb_shared  *s = eb__zk_live_get(zk, q->s_live);

	if (s != NULL) {
		s->deletes--;
	}
	if (s != NULL && !s->closing) {
		if (status == 0 &&
		    orphan_delete(s, q->dir, q->prefix, names, count) == 0) {
			status = EB_EZKNONODE; /* none left: gone */
		}
		if (status != 0) {
			delete_answered(s, status, q->dir, q->prefix);
		}
	}
	free(q->dir);
	free(q->prefix);
	free(q);
}

static void
orphans_clear(eb_shared *s)
{
	size_t i;

	for (i = 0; i < s->orphans.len; i++) {
		free(*(char **) eb__vec_at(&s->orphans, i));
	}
	eb__vec_clear(&s->orphans);
}

static void
orphans_run(eb_shared *s)
{
	char **v;
	size_t n = s->orphans.len, i;

	if (n == 0) {
		return;
	}
	v = eb__vec_steal(&s->orphans);
	eb__vec_init(&s->orphans, sizeof(char *));
	for (i = 0; i < n; i++) {
		orphan_req *q = eb__calloc(1, sizeof(*q));
		char       *nl = strchr(v[i], '\n');

		*nl = '\0';
		q->s_live = s->live;
		q->dir = eb__strdup(v[i]);
		q->prefix = eb__strdup(nl + 1);
		free(v[i]);
		if (eb__zk_get_children(
		        s->zk, q->dir, NULL, NULL, orphan_list_cb, q) != 0) {
			orphan_add(s, q->dir, q->prefix);
			free(q->dir);
			free(q->prefix);
			free(q);
			continue;
		}
		s->deletes++;
	}
	free(v);
}

static void
retry_cb(uv_timer_t *t)
{
	eb_shared *s = t->data;

	if (eb__zk_get_state(s->zk) == EB_ZK_STATE_CONNECTED) {
		orphans_run(s);
	} else if (s->orphans.len > 0) {
		retry_arm(s); /* and at the reconnection */
	}
}

/* ---- session events (of its own session) ---- */

static void
session_event(eb_shared *s, eb__zk_event ev)
{
	switch (ev) {
	case EB_ZK_EV_SUSPENDED:
		lk_drop_all(s, "zk-suspended", EB_EZKLOSS);
		break;
	case EB_ZK_EV_EXPIRED:
		lk_drop_all(s, "zk-expired", EB_EZKEXPIRED);
		orphans_clear(s); /* the session's nodes are gone */
		break;
	case EB_ZK_EV_AUTH_FAILED:
		lk_drop_all(s, "zk-auth-failed", EB_EZKAUTH);
		break;
	case EB_ZK_EV_CONNECTED:
		orphans_clear(s);
		lease_plan(s);
		break;
	case EB_ZK_EV_RECONNECTED:
		lease_plan(s);
		orphans_run(s);
		break;
	}
	lease_arm(s);
	deadline_arm(s);
}

static void
zk_event_cb(eb__zk *zk, eb__zk_event ev, void *arg)
{
	eb_shared *s = arg;

	(void) zk;
	if ((size_t) ev < sizeof(s->zk_events) / sizeof(s->zk_events[0])) {
		s->zk_events[ev]++;
	}
	EB_LOG_INFO("shared", "zk-session: event=%d session=%" PRIx64, (int) ev,
	    (uint64_t) eb__zk_session_id(zk));
	if (!s->closing) {
		session_event(s, ev);
	}
}

/* ---- lifecycle ---- */

void
eb__shared_session_event(eb_shared *s, eb__zk_event ev)
{
	session_event(s, ev);
}

void
eb_shared_opts_init(eb_shared_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->max_locks_per_conn = EB_SHARED_MAX_LOCKS_PER_CONN;
	opts->max_locks_per_node = EB_SHARED_MAX_LOCKS_PER_NODE;
	opts->max_waits_per_node = EB_SHARED_MAX_WAITS_PER_NODE;
	opts->max_counters = EB_SHARED_MAX_COUNTERS;
}

/* Everything but the session's live id and the lease (no I/O). */
static eb_shared *
shared_alloc(uv_loop_t *loop, const char *root, uint32_t tick_ms,
    const eb_shared_opts *opts)
{
	eb_shared *s = eb__calloc(1, sizeof(*s));

	s->loop = loop;
	if (opts != NULL) {
		s->o = *opts;
	} else {
		eb_shared_opts_init(&s->o);
	}
	s->root = eb__strdup(root);
	s->tick_ms = tick_ms;
	eb__list_init(&s->locks);
	eb__list_init(&s->ops);
	eb__vec_init(&s->orphans, sizeof(char *));
	eb__vec_init(&s->id_reqs, sizeof(void *));
	(void) uv_timer_init(loop, &s->heartbeat);
	(void) uv_timer_init(loop, &s->lease);
	(void) uv_timer_init(loop, &s->deadline);
	(void) uv_timer_init(loop, &s->defer);
	(void) uv_timer_init(loop, &s->retry);
	s->heartbeat.data = s;
	s->lease.data = s;
	s->deadline.data = s;
	s->defer.data = s;
	s->retry.data = s;
	return s;
}

eb_shared *
eb__shared_new_zk(uv_loop_t *loop, eb__zk *zk, const char *root,
    uint32_t tick_ms, const eb_shared_opts *opts)
{
	eb_shared *s = shared_alloc(loop, root, tick_ms, opts);

	s->zk = zk;
	s->live = eb__zk_live_add(zk, s);
	eb__zk_set_window(zk, EB__SHARED_ZK_WINDOW);
	lease_plan(s);
	return s;
}

int
eb_shared_new(
    uv_loop_t *loop, eb_cluster *c, const eb_shared_opts *opts, eb_shared **sp)
{
	eb__zk_opts zo;
	eb__zk     *zk = NULL;
	eb_shared  *s;
	int         rv;

	if (loop == NULL || c == NULL || sp == NULL) {
		return UV_EINVAL;
	}
	eb__cluster_zk_opts(c, &zo);
	if (zo.connect == NULL || zo.connect[0] == '\0') {
		return UV_EINVAL; /* standalone */
	}
	s = shared_alloc(
	    loop, eb__cluster_root(c), eb__cluster_zk_tick_ms(c), opts);
	if ((rv = eb__zk_new(loop, &zo, zk_event_cb, s, &zk)) != 0) {
		eb_shared_close(s, NULL, NULL);
		return rv;
	}
	s->zk = zk;
	s->own_zk = 1;
	s->c = c;
	s->live = eb__zk_live_add(zk, s);
	eb__zk_set_window(zk, EB__SHARED_ZK_WINDOW);
	lease_plan(s);
	if ((rv = eb__zk_start(zk)) != 0) {
		eb_shared_close(s, NULL, NULL);
		return rv;
	}
	*sp = s;
	return 0;
}

static void
handle_closed(eb_shared *s)
{
	if (--s->open_handles > 0) {
		return;
	}
	s->closed = 1;
	if (s->close_cb != NULL) {
		s->close_cb(s, s->close_arg);
	}
	orphans_clear(s);
	eb__vec_free(&s->orphans);
	eb__vec_free(&s->id_reqs);
	free(s->root);
	free(s);
}

static void
timer_closed_cb(uv_handle_t *h)
{
	handle_closed(h->data);
}

static void
zk_closed_cb(eb__zk *zk, void *arg)
{
	(void) zk;
	handle_closed(arg);
}

void
eb_shared_close(eb_shared *s, eb_shared_close_cb cb, void *arg)
{
	EB_ASSERT(!s->closing); /* close is exactly once */
	if (s->zk == NULL) {
		/* eb_shared_new failed before the session: nothing to drop */
		s->closing = 1;
	} else {
		lk_drop_all(s, "shutdown", EB_ECANCELED);
	}
	s->closing = 1;
	s->close_cb = cb;
	s->close_arg = arg;
	{
		eb__list *it, *tmp;

		/* Creates in flight: their nodes go with the session. */
		EB_LIST_FOREACH (it, tmp, &s->locks) {
			lk_free(EB_CONTAINER_OF(it, eb_lock, link));
		}
	}
	eb__counter_cancel_all(s);
	eb__id_cancel_all(s);
	if (s->live != 0) {
		eb__zk_live_del(s->zk, s->live);
		s->live = 0;
	}
	s->open_handles = 5;
	if (s->own_zk) {
		/* Closing the session deletes its lock nodes on the server
		 * (the deletes just sent are canceled). */
		s->open_handles++;
		eb__zk_close(s->zk, zk_closed_cb, s);
	}
	uv_close((uv_handle_t *) &s->heartbeat, timer_closed_cb);
	uv_close((uv_handle_t *) &s->lease, timer_closed_cb);
	uv_close((uv_handle_t *) &s->deadline, timer_closed_cb);
	uv_close((uv_handle_t *) &s->defer, timer_closed_cb);
	uv_close((uv_handle_t *) &s->retry, timer_closed_cb);
}

void
eb_shared_stats_get(const eb_shared *s, eb_shared_stats *out)
{
	eb__list *it;

	*out = s->st;
	out->locks_held = 0;
	out->locks_waiting = 0;
	for (it = eb__list_first(&s->locks); it != NULL && it != &s->locks;
	     it = it->next) {
		const eb_lock *lk = EB_CONTAINER_OF(it, eb_lock, link);

		if (!lk->user) {
			continue;
		}
		if (lk->state == LK_HELD) {
			out->locks_held++;
		} else {
			out->locks_waiting++;
		}
	}
	out->deletes_pending = s->orphans.len + s->deletes;
	out->zk_state =
	    s->zk != NULL ? (int) eb__zk_get_state(s->zk) : EB_ZK_STATE_CLOSED;
	out->zk_suspensions = s->zk_events[EB_ZK_EV_SUSPENDED];
	out->zk_expiries = s->zk_events[EB_ZK_EV_EXPIRED];
}

void
eb__shared_window_get(const eb_shared *s, eb__shared_window *out)
{
	memset(out, 0, sizeof(*out));
	if (s->zk != NULL && !s->closing) {
		eb__zk_window_stats(s->zk, &out->in_flight, &out->held);
	}
	out->renew_last_ms = s->renew_last_ms;
	out->renew_max_ms = s->renew_max_ms;
}

/* EB_EFULL when one more lock (held or waited for) of owner would pass a
 * cap: the node's (locks, waiters), or the owner's (owner 0: the node's
 * only). */
static int
lk_cap(eb_shared *s, uint64_t owner)
{
	eb__list *it;
	uint64_t  node = 0, mine = 0, waits = 0;

	for (it = eb__list_first(&s->locks); it != NULL && it != &s->locks;
	     it = it->next) {
		const eb_lock *lk = EB_CONTAINER_OF(it, eb_lock, link);

		if (!lk->user) {
			continue;
		}
		node++;
		waits += lk->state != LK_HELD;
		mine += owner != 0 && lk->owner == owner;
	}
	if ((s->o.max_locks_per_node != 0 && node >= s->o.max_locks_per_node) ||
	    (s->o.max_waits_per_node != 0 &&
	        waits >= s->o.max_waits_per_node) ||
	    (s->o.max_locks_per_conn != 0 && owner != 0 &&
	        mine >= s->o.max_locks_per_conn)) {
		s->st.refused++;
		return EB_EFULL;
	}
	return 0;
}

/* ---- locks: the API ---- */

int
eb_lock_acquire(eb_shared *s, const char *name, int64_t timeout_ms,
    uint64_t owner, eb_lock_cb cb, eb_lock_revoked_cb revoked, void *arg,
    eb_lock **lkp)
{
	eb_lock *lk;
	char     buf[EB__SHARED_PATH_MAX];
	int      rv;

	EB_ASSERT(!s->closing); /* use after close */
	if (!eb__shared_name_ok(name) || cb == NULL) {
		return UV_EINVAL;
	}
	if (eb__zk_get_state(s->zk) != EB_ZK_STATE_CONNECTED) {
		return EB_EZKLOSS;
	}
	if (s->lease_ms == 0) {
		return EB_ECONF;
	}
	if ((rv = lk_cap(s, owner)) != 0) {
		return rv;
	}
	lk = eb__calloc(1, sizeof(*lk));
	lk->s = s;
	lk->name = eb__strdup(name);
	(void) snprintf(buf, sizeof(buf), "%s/locks/%s", s->root, name);
	lk->dir = eb__strdup(buf);
	(void) snprintf(buf, sizeof(buf), "l-%" PRIx64 "x%" PRIu64 "-",
	    (uint64_t) eb__zk_session_id(s->zk), ++s->tag);
	lk->prefix = eb__strdup(buf);
	lk->owner = owner;
	lk->timeout_ms = timeout_ms;
	lk->deadline_ms =
	    timeout_ms > 0 ? eb__mono_ms() + (uint64_t) timeout_ms : 0;
	lk->cb = cb;
	lk->revoked = revoked;
	lk->arg = arg;
	lk->user = 1;
	lk->state = LK_CREATING;
	lk->live = eb__zk_live_add(s->zk, lk);
	eb__list_init(&lk->link);
	eb__list_insert_tail(&s->locks, &lk->link);
	if ((rv = lk_create(lk)) != 0) {
		lk_free(lk);
		return rv;
	}
	deadline_arm(s);
	if (lkp != NULL) {
		*lkp = lk;
	}
	return 0;
}

void
eb_lock_release(eb_lock *lk)
{
	eb_shared *s = lk->s;

	EB_ASSERT(lk->user); /* released, failed or revoked already */
	lk_finish(lk);
	lease_arm(s);
	deadline_arm(s);
}

int
eb_lock_held(eb_lock *lk)
{
	return lk->user && lk_valid(lk, eb__mono_ms());
}

int64_t
eb_lock_token(const eb_lock *lk)
{
	return lk->token;
}

const char *
eb_lock_name(const eb_lock *lk)
{
	return lk->name;
}

uint64_t
eb_lock_owner(const eb_lock *lk)
{
	return lk->owner;
}

size_t
eb_shared_release_owner(eb_shared *s, uint64_t owner)
{
	eb__list *it;
	eb__vec   ids;
	size_t    n = 0, i;

	if (owner == 0) {
		return 0;
	}
	eb__vec_init(&ids, sizeof(uint64_t));
	for (it = eb__list_first(&s->locks); it != NULL && it != &s->locks;
	     it = it->next) {
		const eb_lock *lk = EB_CONTAINER_OF(it, eb_lock, link);

		if (lk->user && lk->owner == owner) {
			*(uint64_t *) eb__vec_push(&ids) = lk->live;
		}
	}
	for (i = 0; i < ids.len; i++) {
		eb_lock *lk = eb__zk_live_get(
		    s->zk, *(const uint64_t *) eb__vec_at(&ids, i));

		if (lk != NULL && lk->user) {
			lk_finish(lk);
			n++;
		}
	}
	eb__vec_free(&ids);
	lease_arm(s);
	deadline_arm(s);
	return n;
}

eb_lock *
eb_shared_find_lock(
    eb_shared *s, uint64_t owner, const char *name, int64_t token)
{
	eb__list *it;

	for (it = eb__list_first(&s->locks); it != NULL && it != &s->locks;
	     it = it->next) {
		eb_lock *lk = EB_CONTAINER_OF(it, eb_lock, link);

		if (lk->user && lk->state == LK_HELD && lk->owner == owner &&
		    lk->token == token && strcmp(lk->name, name) == 0) {
			return lk;
		}
	}
	return NULL;
}
