/*
 * The member child cache; see childcache.h.
 *
 * Entries live in a hash by name (lookups per listed child stay O(1) with
 * thousands of children) and in an array kept sorted by sequence (foreign
 * names last). An entry is created when a listing first shows its name;
 * its get decides what it is:
 *   - a valid member (eb__member_load, the rule shared with the election):
 *     loaded, visible, ADDED/UPDATED;
 *   - anything else (foreign name, persistent, bad data, unreadable):
 *     ignored. It is logged once (WARN) when it becomes ignored or its
 *     reason changes, counted by eb__childcache_ignored(), never visible,
 *     and read again only when it changes (its data or exists watch fires)
 *     or on a new session: an unreadable child costs no request while
 *     nothing changes.
 * A listing marks every entry it shows; unmarked entries are swept
 * (REMOVED if they were visible). Completions carry {live id, generation,
 * name}; the generation changes on every new session and reconnect, so
 * late completions of an old connection are dropped.
 */
#include "member/childcache.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/hmap.h"
#include "common/list.h"

typedef struct cc_ent {
	eb__hent    hent; /* key: name */
	char       *name; /* owned */
	int64_t     seq;  /* INT64_MAX for a foreign name */
	eb__member  m;    /* filled while loaded */
	int         loaded;
	const char *ignored; /* static reason while ignored, else NULL */
	int64_t     czxid;   /* of the last read (loaded or ignored) */
	int32_t     version;
	int         seen;    /* marked by the current listing */
	int         refetch; /* get again (new session, loss) */
	int         getting; /* a get (or exists) is in flight */
} cc_ent;

struct eb__childcache {
	uv_loop_t              *loop;  /* borrowed */
	eb__zk                 *zk;    /* borrowed */
	uv_timer_t              timer; /* close deferral only */
	char                   *path;  /* owned */
	uint64_t                id;
	uint64_t                gen;
	eb__hmap                byname; /* name -> cc_ent */
	cc_ent                **ents;   /* owned array of owned entries */
	size_t                  n;
	size_t                  cap;
	cc_ent                **vis; /* the loaded entries, in order */
	size_t                  nvis;
	int                     started;
	int                     closing;
	int                     listing;
	int                     relist;
	int                     synced;
	int                     pending;
	unsigned                lists;
	eb__childcache_cb       cb;
	void                   *arg;
	eb__childcache_close_cb close_cb;
	void                   *close_arg;
};

typedef struct cc_req {
	eb__zk  *zk; /* borrowed: the session of the live id */
	uint64_t id;
	uint64_t gen;
	char     name[64];
} cc_req;

static void cc_list(eb__childcache *c);

static cc_req *
req_new(eb__childcache *c, const char *name)
{
	cc_req *q = eb__calloc(1, sizeof(*q));

	q->zk = c->zk;
	q->id = c->id;
	q->gen = c->gen;
	if (name != NULL) {
		(void) snprintf(q->name, sizeof(q->name), "%s", name);
	}
	return q;
}

static eb__childcache *
req_cache(const cc_req *q)
{
	eb__childcache *c = eb__zk_live_get(q->zk, q->id);

	if (c == NULL || c->closing || c->gen != q->gen) {
		return NULL;
	}
	return c;
}

/* Rebuilds the visible (loaded) array; called after every change of the
 * loaded set and before it is reported, so accessors are O(1). */
static void
vis_update(eb__childcache *c)
{
	size_t i;

	c->vis = eb__realloc(c->vis, (c->n + 1) * sizeof(cc_ent *));
	c->nvis = 0;
	for (i = 0; i < c->n; i++) {
		if (c->ents[i]->loaded) {
			c->vis[c->nvis++] = c->ents[i];
		}
	}
}

static void
emit(eb__childcache *c, eb__childcache_event ev, const eb__member *m)
{
	vis_update(c);
	if (!c->closing && c->cb != NULL) {
		c->cb(c, ev, m, c->arg);
	}
}

static cc_ent *
ent_find(const eb__childcache *c, const char *name)
{
	eb__hent *h = eb__hmap_get(&c->byname, name);

	return h != NULL ? EB_CONTAINER_OF(h, cc_ent, hent) : NULL;
}

static size_t
ent_index(const eb__childcache *c, const cc_ent *e)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		if (c->ents[i] == e) {
			return i;
		}
	}
	return (size_t) -1;
}

static int
ent_cmp(const void *a, const void *b)
{
	const cc_ent *x = *(cc_ent *const *) a;
	const cc_ent *y = *(cc_ent *const *) b;

	/* Sorted by sequence (rule 3), ties by name for determinism. */
	if (x->seq != y->seq) {
		return x->seq < y->seq ? -1 : 1;
	}
	return strcmp(x->name, y->name);
}

/* Appends an entry; the caller sorts once after a listing. */
static cc_ent *
ent_add(eb__childcache *c, const char *name)
{
	cc_ent *e = eb__calloc(1, sizeof(*e));

	e->name = eb__strdup(name);
	e->hent.key = e->name;
	if (eb__member_parse_name(name, &e->seq, NULL) != 0) {
		e->seq = INT64_MAX;
		e->ignored = "bad-name";
		EB_LOG_WARN("childcache",
		    "member-ignored: child=%.64s reason=bad-name", name);
	}
	if (c->n == c->cap) {
		c->cap = c->cap == 0 ? 16 : c->cap * 2;
		c->ents = eb__realloc(c->ents, c->cap * sizeof(cc_ent *));
	}
	c->ents[c->n++] = e;
	eb__hmap_put(&c->byname, &e->hent);
	return e;
}

static void
ent_free(cc_ent *e)
{
	eb__member_free(&e->m);
	free(e->name);
	free(e);
}

/* Drops e; a visible member is reported REMOVED. */
static void
ent_remove(eb__childcache *c, cc_ent *e)
{
	char   q[EB_LOG_QUOTE_MAX];
	size_t i = ent_index(c, e);

	memmove(
	    &c->ents[i], &c->ents[i + 1], (c->n - i - 1) * sizeof(cc_ent *));
	c->n--;
	eb__hmap_del(&c->byname, &e->hent);
	if (e->loaded) {
		e->loaded = 0;
		EB_LOG_INFO("childcache", "removed: member=%s node=%s",
		    e->m.name, eb_log_quote(q, sizeof(q), e->m.node_id));
		emit(c, EB_CC_REMOVED, &e->m);
	}
	ent_free(e);
}

static void
maybe_synced(eb__childcache *c)
{
	if (c->pending != 0 || c->listing) {
		return; /* gets or a listing still in flight */
	}
	if (c->relist) {
		c->relist = 0;
		cc_list(c);
		return;
	}
	if (!c->synced) {
		c->synced = 1;
		EB_LOG_INFO("childcache",
		    "synced: path=%s members=%zu ignored=%zu", c->path,
		    eb__childcache_count(c), eb__childcache_ignored(c));
	}
	emit(c, EB_CC_SYNCED, NULL);
}

/* ---- data of one child ---- */

static void cc_get(eb__childcache *c, cc_ent *e);

static void
data_watch_cb(eb__zk *zk, eb__zk_watch_type type, const char *path, void *arg)
{
	eb__childcache *c = eb__zk_live_get(zk, eb__zk_live_id(arg));
	const char     *name;
	cc_ent         *e;

	(void) zk;
	if (c == NULL || c->closing || path == NULL) {
		return;
	}
	name = strrchr(path, '/') != NULL ? strrchr(path, '/') + 1 : path;
	e = ent_find(c, name);
	if (e == NULL) {
		return;
	}
	if (type == EB_ZK_WATCH_DELETED) {
		ent_remove(c, e);
	} else if (!e->getting) {
		/* Changed (or the watch was dropped): read it again. */
		cc_get(c, e);
	}
}

/* Takes m (freshly read, valid): replaces e's member and reports ADDED or
 * UPDATED, unless the znode is unchanged (same version and czxid), as after
 * a rebuild, when m is dropped and nothing is reported. */
static void
ent_apply(eb__childcache *c, cc_ent *e, eb__member *m)
{
	char q[EB_LOG_QUOTE_MAX];
	int  was = e->loaded;

	e->ignored = NULL;
	e->czxid = m->czxid;
	e->version = m->version;
	if (was && e->m.version == m->version && e->m.czxid == m->czxid) {
		eb__member_free(m); /* unchanged (rebuild) */
		return;
	}
	eb__member_free(&e->m);
	e->m = *m;
	e->loaded = 1;
	EB_LOG_INFO("childcache", "%s: member=%s node=%s seq=%lld",
	    was ? "updated" : "added", e->m.name,
	    eb_log_quote(q, sizeof(q), e->m.node_id), (long long) e->m.seq);
	emit(c, was ? EB_CC_UPDATED : EB_CC_ADDED, &e->m);
}

/* e is not (or no longer) a valid member: hide it, log it once. */
static void
ent_ignore(eb__childcache *c, cc_ent *e, const char *why, const eb__zk_stat *st)
{
	char q[EB_LOG_QUOTE_MAX];
	int  same = e->ignored != NULL && strcmp(e->ignored, why) == 0 &&
	           (st == NULL ||
	               (st->czxid == e->czxid && st->version == e->version));

	if (st != NULL) {
		e->czxid = st->czxid;
		e->version = st->version;
	}
	e->ignored = why;
	if (!same) {
		EB_LOG_WARN("childcache",
		    "member-ignored: child=%s reason=%s owner=0x%llx",
		    eb_log_quote(q, sizeof(q), e->name), why,
		    (unsigned long long) (st != NULL ? st->ephemeral_owner
		                                     : 0));
	}
	if (e->loaded) {
		e->loaded = 0;
		EB_LOG_INFO("childcache", "removed: member=%s node=%s",
		    e->m.name, eb_log_quote(q, sizeof(q), e->m.node_id));
		emit(c, EB_CC_REMOVED, &e->m);
		eb__member_free(&e->m);
	}
}

static void
unreadable_exists_cb(eb__zk *zk, int status, const eb__zk_stat *st, void *arg)
{
	cc_req         *q = arg;
	eb__childcache *c = req_cache(q);
	cc_ent         *e;

	(void) zk;
	(void) st;
	if (c == NULL) {
		free(q);
		return;
	}
	c->pending--;
	e = ent_find(c, q->name);
	free(q);
	if (e != NULL) {
		e->getting = 0;
		if (status == EB_EZKNONODE) {
			ent_remove(c, e);
		} else if (eb__zk_status_transient(status)) {
			e->refetch = 1;
		}
	}
	maybe_synced(c);
}

/* An unreadable child (ACL): watch it for changes without reading it
 * (exists needs no READ permission); nothing is polled meanwhile. */
static void
cc_watch_unreadable(eb__childcache *c, cc_ent *e)
{
	char    path[1024];
	cc_req *q = req_new(c, e->name);

	(void) snprintf(path, sizeof(path), "%s/%s", c->path, e->name);
	if (eb__zk_exists(c->zk, path, data_watch_cb, eb__zk_live_arg(c->id),
	        unreadable_exists_cb, q) != 0) {
		free(q);
		return;
	}
	e->getting = 1;
	c->pending++;
}

/* NOAUTH and the like: ignored until it changes (watched, not polled). */
static void
ent_unreadable(eb__childcache *c, cc_ent *e, int status)
{
	char q[EB_LOG_QUOTE_MAX];

	if (e->ignored == NULL || strcmp(e->ignored, "unreadable") != 0) {
		EB_LOG_WARN("childcache",
		    "member-ignored: child=%s reason=unreadable err=%s",
		    eb_log_quote(q, sizeof(q), e->name), eb_err_name(status));
	}
	e->ignored = "unreadable";
	ent_ignore(c, e, "unreadable", NULL); /* hides it if it was shown */
	cc_watch_unreadable(c, e);
}

static void
get_result(eb__childcache *c, cc_ent *e, int status, const char *data,
    size_t len, const eb__zk_stat *st)
{
	eb__member  m;
	const char *why;

	if (status == EB_EZKNONODE) {
		/* Vanished between the list and the get. */
		ent_remove(c, e);
		return;
	}
	if (eb__zk_status_transient(status)) {
		e->refetch = 1; /* the reconnect re-lists and re-gets */
		return;
	}
	if (status != 0) {
		ent_unreadable(c, e, status);
		return;
	}
	why = eb__member_load(&m, e->name, data, len, st->czxid,
	    st->ephemeral_owner, st->version);
	if (why != NULL) {
		ent_ignore(c, e, why, st);
		return;
	}
	ent_apply(c, e, &m);
}

static void
get_cb(eb__zk *zk, int status, const char *data, size_t len,
    const eb__zk_stat *st, void *arg)
{
	cc_req         *q = arg;
	eb__childcache *c = req_cache(q);
	cc_ent         *e;

	(void) zk;
	if (c == NULL) {
		free(q);
		return;
	}
	c->pending--;
	e = ent_find(c, q->name);
	free(q);
	if (e != NULL) {
		e->getting = 0;
		get_result(c, e, status, data, len, st);
	}
	maybe_synced(c);
}

static void
cc_get(eb__childcache *c, cc_ent *e)
{
	char    path[1024];
	cc_req *q;

	if (e->seq == INT64_MAX) {
		return; /* a foreign name: nothing to read */
	}
	q = req_new(c, e->name);
	(void) snprintf(path, sizeof(path), "%s/%s", c->path, e->name);
	if (eb__zk_get(c->zk, path, data_watch_cb, eb__zk_live_arg(c->id),
	        get_cb, q) != 0) {
		free(q);
		e->refetch = 1;
		return;
	}
	e->getting = 1;
	e->refetch = 0;
	c->pending++;
}

/* ---- listing ---- */

static void
child_watch_cb(eb__zk *zk, eb__zk_watch_type type, const char *path, void *arg)
{
	eb__childcache *c = eb__zk_live_get(zk, eb__zk_live_id(arg));

	(void) zk;
	(void) path;
	(void) type;
	if (c == NULL || c->closing) {
		return;
	}
	cc_list(c);
}

static void
exists_cb(eb__zk *zk, int status, const eb__zk_stat *st, void *arg)
{
	cc_req         *q = arg;
	eb__childcache *c = req_cache(q);

	(void) zk;
	(void) st;
	free(q);
	if (c != NULL && status == 0) {
		cc_list(c); /* created between our list and exists */
	}
}

/* Marks the listed entries (creating new ones), keeps the array sorted
 * and sweeps what the listing no longer shows. */
static void
list_apply(eb__childcache *c, const char *const *names, size_t count)
{
	size_t i;
	int    added = 0;

	for (i = 0; i < c->n; i++) {
		c->ents[i]->seen = 0;
	}
	for (i = 0; i < count; i++) {
		cc_ent *e = ent_find(c, names[i]);

		if (e == NULL) {
			e = ent_add(c, names[i]);
			e->refetch = e->seq != INT64_MAX;
			added = 1;
		}
		e->seen = 1;
	}
	if (added) {
		qsort(c->ents, c->n, sizeof(cc_ent *), ent_cmp);
	}
	for (i = c->n; i-- > 0;) {
		if (!c->ents[i]->seen) {
			ent_remove(c, c->ents[i]);
		}
	}
}

static void
list_cb(
    eb__zk *zk, int status, const char *const *names, size_t count, void *arg)
{
	cc_req         *q = arg;
	eb__childcache *c = req_cache(q);
	size_t          i;

	(void) zk;
	free(q);
	if (c == NULL) {
		return;
	}
	c->listing = 0;
	if (status == EB_EZKNONODE) {
		/* No parent yet: wait for its creation (exists watch). */
		q = req_new(c, NULL);
		if (eb__zk_exists(c->zk, c->path, child_watch_cb,
		        eb__zk_live_arg(c->id), exists_cb, q) != 0) {
			free(q);
		}
		maybe_synced(c);
		return;
	}
	if (status != 0) {
		/* Loss: the reconnect re-lists. */
		return;
	}
	list_apply(c, names, count);
	for (i = 0; i < c->n; i++) {
		cc_ent *e = c->ents[i];

		if (e->refetch && !e->getting) {
			cc_get(c, e);
		}
	}
	maybe_synced(c);
}

static void
cc_list(eb__childcache *c)
{
	cc_req *q;

	if (c->closing || !c->started ||
	    eb__zk_get_state(c->zk) != EB_ZK_STATE_CONNECTED) {
		return;
	}
	if (c->listing || c->pending > 0) {
		c->relist = 1; /* coalesce: one more list after this one */
		return;
	}
	q = req_new(c, NULL);
	if (eb__zk_get_children(c->zk, c->path, child_watch_cb,
	        eb__zk_live_arg(c->id), list_cb, q) != 0) {
		free(q);
		return;
	}
	c->listing = 1;
	c->lists++;
}

/* ---- session events and lifecycle ---- */

void
eb__childcache_session_event(eb__childcache *c, eb__zk_event ev)
{
	size_t i;

	if (c->closing || !c->started) {
		return;
	}
	switch (ev) {
	case EB_ZK_EV_CONNECTED:
		/* New session: every watch is gone. Rebuild, then diff;
		 * ignored children are read again too (an ACL may have been
		 * fixed meanwhile). */
		c->gen++;
		c->listing = 0;
		c->relist = 0;
		c->pending = 0;
		c->synced = 0;
		for (i = 0; i < c->n; i++) {
			c->ents[i]->refetch = c->ents[i]->seq != INT64_MAX;
			c->ents[i]->getting = 0;
		}
		cc_list(c);
		break;
	case EB_ZK_EV_RECONNECTED:
		/* Completions of the old connection failed with a loss. */
		c->gen++;
		c->listing = 0;
		c->relist = 0;
		c->pending = 0;
		for (i = 0; i < c->n; i++) {
			if (c->ents[i]->getting) {
				c->ents[i]->getting = 0;
				c->ents[i]->refetch = 1;
			}
		}
		cc_list(c);
		break;
	default:
		break;
	}
}

int
eb__childcache_new(uv_loop_t *loop, eb__zk *zk, const char *path,
    eb__childcache_cb cb, void *arg, eb__childcache **cp)
{
	eb__childcache *c;
	int             rv;

	if (loop == NULL || zk == NULL || path == NULL || path[0] != '/') {
		return UV_EINVAL;
	}
	c = eb__calloc(1, sizeof(*c));
	rv = uv_timer_init(loop, &c->timer);
	if (rv != 0) {
		free(c);
		return rv;
	}
	c->loop = loop;
	c->zk = zk;
	c->path = eb__strdup(path);
	c->cb = cb;
	c->arg = arg;
	c->timer.data = c;
	eb__hmap_init(&c->byname);
	c->id = c->zk != NULL ? eb__zk_live_add(c->zk, c) : 0;
	*cp = c;
	return 0;
}

int
eb__childcache_start(eb__childcache *c)
{
	EB_ASSERT(!c->closing); /* start after close */
	if (c->closing) {
		return EB_ECLOSED;
	}
	if (c->started) {
		return EB_EZKINVALIDSTATE;
	}
	c->started = 1;
	cc_list(c);
	return 0;
}

static void
cache_closed_cb(uv_handle_t *h)
{
	eb__childcache *c = h->data;
	size_t          i;

	if (c->close_cb != NULL) {
		c->close_cb(c, c->close_arg);
	}
	for (i = 0; i < c->n; i++) {
		ent_free(c->ents[i]);
	}
	eb__hmap_free(&c->byname);
	free(c->ents);
	free(c->vis);
	free(c->path);
	free(c);
}

void
eb__childcache_close(eb__childcache *c, eb__childcache_close_cb cb, void *arg)
{
	EB_ASSERT(!c->closing); /* close is exactly once */
	c->closing = 1;
	c->close_cb = cb;
	c->close_arg = arg;
	if (c->zk != NULL) {
		eb__zk_live_del(c->zk, c->id);
	}
	uv_close((uv_handle_t *) &c->timer, cache_closed_cb);
}

size_t
eb__childcache_count(const eb__childcache *c)
{
	return c->nvis;
}

const eb__member *
eb__childcache_at(const eb__childcache *c, size_t i)
{
	return i < c->nvis ? &c->vis[i]->m : NULL;
}

size_t
eb__childcache_ignored(const eb__childcache *c)
{
	size_t i;
	size_t n = 0;

	for (i = 0; i < c->n; i++) {
		n += c->ents[i]->ignored != NULL ? 1u : 0u;
	}
	return n;
}

const eb__member *
eb__childcache_leader(const eb__childcache *c)
{
	size_t i;

	for (i = 0; i < c->nvis; i++) {
		if (c->vis[i]->m.eligible) {
			return &c->vis[i]->m;
		}
	}
	return NULL;
}

int64_t
eb__childcache_leader_epoch(const eb__childcache *c)
{
	const eb__member *l = eb__childcache_leader(c);

	return l != NULL ? l->czxid : 0;
}

int
eb__childcache_synced(const eb__childcache *c)
{
	return c->synced;
}

unsigned
eb__childcache_lists(const eb__childcache *c)
{
	return c->lists;
}
