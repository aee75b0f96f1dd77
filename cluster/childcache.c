/*
 * The member child cache; see childcache.h.
 *
 * Entries live in an array kept sorted by sequence. An entry is created
 * (unloaded) when a listing first shows its name and becomes visible
 * (loaded, ADDED) when its get completes. A listing marks every entry it
 * shows; unmarked entries are swept (REMOVED if they were visible).
 * Completions carry {live id, generation, name}; the generation changes on
 * every new session, so late completions of an old session are dropped.
 */
#include "cluster/childcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/log.h>

#include "common/alloc.h"

typedef struct cc_ent {
	eb_member m;
	int       loaded;
	int       seen;    /* marked by the current listing */
	int       refetch; /* new session: get again (re-arms the watch) */
	int       getting; /* a get is in flight */
} cc_ent;

struct eb_childcache {
	uv_loop_t             *loop;  /* borrowed */
	eb_zk                 *zk;    /* borrowed */
	uv_timer_t             timer; /* close deferral only */
	char                  *path;  /* owned */
	uint64_t               id;
	uint64_t               gen;
	cc_ent               **ents; /* owned array of owned entries */
	size_t                 n;
	size_t                 cap;
	int                    started;
	int                    closing;
	int                    listing;
	int                    relist;
	int                    synced;
	int                    pending;
	unsigned               lists;
	eb_childcache_cb       cb;
	void                  *arg;
	eb_childcache_close_cb close_cb;
	void                  *close_arg;
};

typedef struct cc_req {
	uint64_t id;
	uint64_t gen;
	char     name[64];
} cc_req;

static void cc_list(eb_childcache *c);

static cc_req *
req_new(eb_childcache *c, const char *name)
{
	cc_req *q = eb__calloc(1, sizeof(*q));

	q->id = c->id;
	q->gen = c->gen;
	if (name != NULL) {
		(void) snprintf(q->name, sizeof(q->name), "%s", name);
	}
	return q;
}

static eb_childcache *
req_cache(const cc_req *q)
{
	eb_childcache *c = eb__live_get(q->id);

	if (c == NULL || c->closing || c->gen != q->gen) {
		return NULL;
	}
	return c;
}

static void
emit(eb_childcache *c, eb_childcache_event ev, const eb_member *m)
{
	if (!c->closing && c->cb != NULL) {
		c->cb(c, ev, m, c->arg);
	}
}

static size_t
ent_index(const eb_childcache *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		if (strcmp(c->ents[i]->m.name, name) == 0) {
			return i;
		}
	}
	return (size_t) -1;
}

static cc_ent *
ent_insert(eb_childcache *c, const char *name, int64_t seq)
{
	cc_ent *e = eb__calloc(1, sizeof(*e));
	size_t  i;

	e->m.name = eb__strdup(name);
	e->m.seq = seq;
	if (c->n == c->cap) {
		c->cap = c->cap == 0 ? 16 : c->cap * 2;
		c->ents = eb__realloc(c->ents, c->cap * sizeof(cc_ent *));
	}
	/* Sorted by sequence (rule 3), ties by name for determinism. */
	for (i = c->n; i > 0; i--) {
		const eb_member *p = &c->ents[i - 1]->m;

		if (p->seq < seq ||
		    (p->seq == seq && strcmp(p->name, name) < 0)) {
			break;
		}
		c->ents[i] = c->ents[i - 1];
	}
	c->ents[i] = e;
	c->n++;
	return e;
}

static void
ent_remove_at(eb_childcache *c, size_t i, int report)
{
	cc_ent *e = c->ents[i];

	memmove(
	    &c->ents[i], &c->ents[i + 1], (c->n - i - 1) * sizeof(cc_ent *));
	c->n--;
	if (e->loaded && report) {
		EB_LOG_INFO("childcache", "removed: member=%s node=%s",
		    e->m.name, e->m.node_id);
		emit(c, EB_CC_REMOVED, &e->m);
	}
	eb__member_free(&e->m);
	free(e);
}

static void
maybe_synced(eb_childcache *c)
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
		EB_LOG_INFO("childcache", "synced: path=%s members=%zu",
		    c->path, eb__childcache_count(c));
	}
	emit(c, EB_CC_SYNCED, NULL);
}

/* ---- data of one child ---- */

static void cc_get(eb_childcache *c, cc_ent *e);

static void
data_watch_cb(eb_zk *zk, eb_zk_watch_type type, const char *path, void *arg)
{
	eb_childcache *c = eb__live_get(eb__live_id(arg));
	const char    *name;
	size_t         i;

	(void) zk;
	if (c == NULL || c->closing || path == NULL) {
		return;
	}
	name = strrchr(path, '/') != NULL ? strrchr(path, '/') + 1 : path;
	i = ent_index(c, name);
	if (i == (size_t) -1) {
		return;
	}
	if (type == EB_ZK_WATCH_CHANGED) {
		cc_get(c, c->ents[i]);
	} else if (type == EB_ZK_WATCH_DELETED) {
		ent_remove_at(c, i, 1);
	}
}

/* Takes m (freshly read): replaces e's member and reports ADDED or
 * UPDATED, unless the znode is unchanged (same version and czxid), as after
 * a rebuild, when m is dropped and nothing is reported. */
static void
ent_apply(eb_childcache *c, cc_ent *e, eb_member *m)
{
	int was = e->loaded;

	if (was && e->m.version == m->version && e->m.czxid == m->czxid) {
		eb__member_free(m); /* unchanged (rebuild) */
		return;
	}
	eb__member_free(&e->m);
	e->m = *m;
	e->loaded = 1;
	EB_LOG_INFO("childcache", "%s: member=%s node=%s seq=%lld",
	    was ? "updated" : "added", e->m.name, e->m.node_id,
	    (long long) e->m.seq);
	emit(c, was ? EB_CC_UPDATED : EB_CC_ADDED, &e->m);
}

static void
get_cb(eb_zk *zk, int status, const char *data, size_t len,
    const eb_zk_stat *st, void *arg)
{
	cc_req        *q = arg;
	eb_childcache *c = req_cache(q);
	eb_member      m;
	cc_ent        *e;
	size_t         i;

	(void) zk;
	if (c == NULL) {
		free(q);
		return;
	}
	c->pending--;
	i = ent_index(c, q->name);
	if (i == (size_t) -1) {
		free(q); /* removed meanwhile */
		maybe_synced(c);
		return;
	}
	e = c->ents[i];
	e->getting = 0;
	if (status == EB_EZKNONODE) {
		/* Vanished between the list and the get. */
		ent_remove_at(c, i, 1);
	} else if (status == 0 &&
	           eb__member_init(&m, q->name, data, len, st->czxid,
	               st->ephemeral_owner, st->version) == 0) {
		ent_apply(c, e, &m);
	}
	/* Other errors (loss): the reconnect re-lists and re-gets. */
	if (status != 0 && status != EB_EZKNONODE) {
		e->refetch = 1;
	}
	free(q);
	maybe_synced(c);
}

static void
cc_get(eb_childcache *c, cc_ent *e)
{
	char    path[1024];
	cc_req *q = req_new(c, e->m.name);

	(void) snprintf(path, sizeof(path), "%s/%s", c->path, e->m.name);
	if (eb_zk_get(c->zk, path, data_watch_cb, eb__live_arg(c->id), get_cb,
	        q) != 0) {
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
child_watch_cb(eb_zk *zk, eb_zk_watch_type type, const char *path, void *arg)
{
	eb_childcache *c = eb__live_get(eb__live_id(arg));

	(void) zk;
	(void) path;
	(void) type;
	if (c == NULL || c->closing) {
		return;
	}
	cc_list(c);
}

static void
exists_cb(eb_zk *zk, int status, const eb_zk_stat *st, void *arg)
{
	cc_req        *q = arg;
	eb_childcache *c = req_cache(q);

	(void) zk;
	(void) st;
	free(q);
	if (c != NULL && status == 0) {
		cc_list(c); /* created between our list and exists */
	}
}

static void
list_cb(
    eb_zk *zk, int status, const char *const *names, size_t count, void *arg)
{
	cc_req        *q = arg;
	eb_childcache *c = req_cache(q);
	size_t         i;
	int64_t        seq;

	(void) zk;
	free(q);
	if (c == NULL) {
		return;
	}
	c->listing = 0;
	if (status == EB_EZKNONODE) {
		/* No parent yet: wait for its creation (exists watch). */
		q = req_new(c, NULL);
		if (eb_zk_exists(c->zk, c->path, child_watch_cb,
		        eb__live_arg(c->id), exists_cb, q) != 0) {
			free(q);
		}
		maybe_synced(c);
		return;
	}
	if (status != 0) {
		/* Loss: the reconnect re-lists. */
		return;
	}
	for (i = 0; i < c->n; i++) {
		c->ents[i]->seen = 0;
	}
	for (i = 0; i < count; i++) {
		size_t j;

		if (eb__member_parse_name(names[i], &seq, NULL) != 0) {
			continue;
		}
		j = ent_index(c, names[i]);
		if (j == (size_t) -1) {
			ent_insert(c, names[i], seq)->seen = 1;
		} else {
			c->ents[j]->seen = 1;
		}
	}
	for (i = c->n; i-- > 0;) {
		if (!c->ents[i]->seen) {
			ent_remove_at(c, i, 1);
		}
	}
	for (i = 0; i < c->n; i++) {
		cc_ent *e = c->ents[i];

		if ((!e->loaded || e->refetch) && !e->getting) {
			cc_get(c, e);
		}
	}
	maybe_synced(c);
}

static void
cc_list(eb_childcache *c)
{
	cc_req *q;

	if (c->closing || !c->started ||
	    eb_zk_get_state(c->zk) != EB_ZK_STATE_CONNECTED) {
		return;
	}
	if (c->listing || c->pending > 0) {
		c->relist = 1; /* coalesce: one more list after this one */
		return;
	}
	q = req_new(c, NULL);
	if (eb_zk_get_children(c->zk, c->path, child_watch_cb,
	        eb__live_arg(c->id), list_cb, q) != 0) {
		free(q);
		return;
	}
	c->listing = 1;
	c->lists++;
}

/* ---- session events and lifecycle ---- */

void
eb__childcache_session_event(eb_childcache *c, eb_zk_event ev)
{
	size_t i;

	if (c->closing || !c->started) {
		return;
	}
	switch (ev) {
	case EB_ZK_EV_CONNECTED:
		/* New session: every watch is gone. Rebuild, then diff. */
		c->gen++;
		c->listing = 0;
		c->relist = 0;
		c->pending = 0;
		c->synced = 0;
		for (i = 0; i < c->n; i++) {
			c->ents[i]->refetch = 1;
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
eb__childcache_new(uv_loop_t *loop, eb_zk *zk, const char *path,
    eb_childcache_cb cb, void *arg, eb_childcache **cp)
{
	eb_childcache *c;
	int            rv;

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
	c->id = eb__live_add(c);
	*cp = c;
	return 0;
}

int
eb__childcache_start(eb_childcache *c)
{
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
	eb_childcache *c = h->data;
	size_t         i;

	if (c->close_cb != NULL) {
		c->close_cb(c, c->close_arg);
	}
	for (i = 0; i < c->n; i++) {
		eb__member_free(&c->ents[i]->m);
		free(c->ents[i]);
	}
	free(c->ents);
	free(c->path);
	free(c);
}

void
eb__childcache_close(eb_childcache *c, eb_childcache_close_cb cb, void *arg)
{
	c->closing = 1;
	c->close_cb = cb;
	c->close_arg = arg;
	eb__live_del(c->id);
	uv_close((uv_handle_t *) &c->timer, cache_closed_cb);
}

size_t
eb__childcache_count(const eb_childcache *c)
{
	size_t i;
	size_t n = 0;

	for (i = 0; i < c->n; i++) {
		n += c->ents[i]->loaded ? 1u : 0u;
	}
	return n;
}

const eb_member *
eb__childcache_at(const eb_childcache *c, size_t i)
{
	size_t k;

	for (k = 0; k < c->n; k++) {
		if (c->ents[k]->loaded && i-- == 0) {
			return &c->ents[k]->m;
		}
	}
	return NULL;
}

const eb_member *
eb__childcache_find(const eb_childcache *c, const char *name)
{
	size_t i = ent_index(c, name);

	return i != (size_t) -1 && c->ents[i]->loaded ? &c->ents[i]->m : NULL;
}

int
eb__childcache_synced(const eb_childcache *c)
{
	return c->synced;
}

unsigned
eb__childcache_lists(const eb_childcache *c)
{
	return c->lists;
}
