/*
 * The Java engine's election, as one more participant; see engine.h.
 * Invariants:
 *   - completions carry the engine's live id and the session generation
 *     they were sent in; a stale one is ignored (STYLE B4.5);
 *   - the duplicate check reads every child's data before our child is
 *     created, one get at a time, all in one session generation;
 *   - one listing at a time; a watch firing during it makes one more;
 *   - on_change is called only when the leading state or the leader's
 *     address changed.
 * Loop thread only; the engine owns its strings.
 */
#include "vertx/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/err.h>
#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/vec.h"

struct eb__vx_engine {
	uv_loop_t             *loop;
	eb__zk                *zk; /* borrowed */
	uint64_t               id; /* live id */
	uint64_t               gen;
	char                  *path;    /* owned: the engine root */
	char                  *address; /* owned */
	char                  *child;   /* owned: our child's path, or NULL */
	char                  *leader;  /* owned: last leader address told */
	eb__vx_engine_cb       cb;
	void                  *arg;
	uv_timer_t             timer; /* a close on a later turn */
	int                    started;
	int                    joining;
	int                    duplicate;
	int                    leading;
	int                    listing;
	int                    relist;
	int                    closing;
	eb__vx_engine_close_cb close_cb;
	void                  *close_arg;
};

/* The duplicate check in progress: the children to read, one by one. */
typedef struct dup_req {
	uint64_t id;
	uint64_t gen;
	eb__vec  names; /* char *, owned */
	size_t   next;
} dup_req;

static eb__vx_engine *
live(eb__zk *zk, uint64_t id, uint64_t gen)
{
	eb__vx_engine *e = eb__zk_live_get(zk, id);

	return e != NULL && !e->closing && e->gen == gen ? e : NULL;
}

static void
dup_free(dup_req *d)
{
	for (size_t i = 0; i < d->names.len; i++) {
		free(*(char **) eb__vec_at(&d->names, i));
	}
	eb__vec_free(&d->names);
	free(d);
}

static char *
child_path(const eb__vx_engine *e, const char *name)
{
	size_t n = strlen(e->path) + strlen(name) + 2;
	char  *p = eb__malloc(n);

	(void) snprintf(p, n, "%s/%s", e->path, name);
	return p;
}

static void tell(eb__vx_engine *e, int leading, const char *leader);
static void elect_list(eb__vx_engine *e);

/* ---- the leader ---- */

static void
tell(eb__vx_engine *e, int leading, const char *leader)
{
	if (leading == e->leading && e->leader != NULL &&
	    strcmp(e->leader, leader) == 0) {
		return;
	}
	e->leading = leading;
	free(e->leader);
	e->leader = eb__strdup(leader);
	EB_LOG_NOTICE("vertx", "engine-%s: address=%s leader=%s",
	    leading ? "elected" : "follower", e->address, leader);
	e->cb(leading ? EB_VX_ENGINE_LEADER : EB_VX_ENGINE_FOLLOWER, leader,
	    e->arg);
}

static void
leader_data_cb(eb__zk *zk, int status, const char *data, size_t len,
    const eb__zk_stat *stat, void *arg)
{
	eb__vx_engine *e = eb__zk_live_get(zk, eb__zk_live_id(arg));
	char          *leader;

	(void) stat;
	if (e == NULL || e->closing) {
		return;
	}
	if (status != 0) {
		elect_list(e); /* the lowest child went meanwhile */
		return;
	}
	leader = eb__strndup(data, len);
	tell(e, strcmp(leader, e->address) == 0 && e->child != NULL, leader);
	free(leader);
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static void
elect_watch_cb(eb__zk *zk, eb__zk_watch_type type, const char *path, void *arg)
{
	eb__vx_engine *e = eb__zk_live_get(zk, eb__zk_live_id(arg));

	(void) type;
	(void) path;
	if (e != NULL && !e->closing) {
		elect_list(e);
	}
}

static void
elect_children_cb(
    eb__zk *zk, int status, const char *const *names, size_t count, void *arg)
{
	eb__vx_engine *e = eb__zk_live_get(zk, eb__zk_live_id(arg));
	const char   **sorted;
	const char    *lowest = NULL;
	char          *p;

	if (e == NULL || e->closing) {
		return;
	}
	e->listing = 0;
	if (status == 0 && count > 0) {
		/* engine-%010d: the names sort as their sequence numbers */
		sorted = eb__malloc(count * sizeof(*sorted));
		memcpy(sorted, names, count * sizeof(*sorted));
		qsort(sorted, count, sizeof(*sorted), name_cmp);
		for (size_t i = 0; i < count && lowest == NULL; i++) {
			if (strncmp(sorted[i], "engine-", 7) == 0) {
				lowest = sorted[i];
			}
		}
		if (lowest != NULL) {
			p = child_path(e, lowest);
			(void) eb__zk_get(zk, p, NULL, NULL, leader_data_cb,
			    eb__zk_live_arg(e->id));
			free(p);
		}
		free(sorted);
	}
	if (e->relist) {
		e->relist = 0;
		elect_list(e);
	}
}

static void
elect_list(eb__vx_engine *e)
{
	if (e->listing) {
		e->relist = 1;
		return;
	}
	if (eb__zk_get_children(e->zk, e->path, elect_watch_cb,
	        eb__zk_live_arg(e->id), elect_children_cb,
	        eb__zk_live_arg(e->id)) == 0) {
		e->listing = 1;
	}
}

/* ---- joining: duplicate check, then our child ---- */

static void
registered(eb__vx_engine *e, const char *path)
{
	e->child = eb__strdup(path);
	EB_LOG_NOTICE(
	    "vertx", "engine-registered: path=%s address=%s", path, e->address);
	e->cb(EB_VX_ENGINE_REGISTERED, path, e->arg);
	elect_list(e);
}

static void
created_cb(eb__zk *zk, int status, const char *path, void *arg)
{
	dup_req       *d = arg;
	eb__vx_engine *e = live(zk, d->id, d->gen);

	if (e != NULL) {
		e->joining = 0;
	}
	if (e != NULL && status == 0) {
		registered(e, path);
	}
	dup_free(d);
}

static void dup_next(eb__vx_engine *e, dup_req *d);

static void
dup_data_cb(eb__zk *zk, int status, const char *data, size_t len,
    const eb__zk_stat *stat, void *arg)
{
	dup_req       *d = arg;
	eb__vx_engine *e = live(zk, d->id, d->gen);
	const char    *name;

	(void) stat;
	if (e == NULL) {
		dup_free(d);
		return;
	}
	name = *(char **) eb__vec_at(&d->names, d->next - 1);
	if (status == 0 && len == strlen(e->address) &&
	    memcmp(data, e->address, len) == 0) {
		/* the engine's rule: a live child holds our address */
		e->joining = 0;
		e->duplicate = 1;
		EB_LOG_ERR("vertx", "engine-duplicate: address=%s child=%s",
		    e->address, name);
		e->cb(EB_VX_ENGINE_DUPLICATE, name, e->arg);
		dup_free(d);
		return;
	}
	dup_next(e, d);
}

static void
dup_next(eb__vx_engine *e, dup_req *d)
{
	char *p;
	int   rv;

	if (d->next < d->names.len) {
		p = child_path(e, *(char **) eb__vec_at(&d->names, d->next));
		d->next++;
		rv = eb__zk_get(e->zk, p, NULL, NULL, dup_data_cb, d);
		free(p);
		if (rv != 0) {
			e->joining = 0;
			dup_free(d);
		}
		return;
	}
	p = child_path(e, "engine-");
	rv = eb__zk_create(e->zk, p, e->address, strlen(e->address),
	    EB_ZK_EPHEMERAL | EB_ZK_SEQUENTIAL, created_cb, d);
	free(p);
	if (rv != 0) {
		e->joining = 0;
		dup_free(d);
	}
}

static void
dup_children_cb(
    eb__zk *zk, int status, const char *const *names, size_t count, void *arg)
{
	dup_req       *d = arg;
	eb__vx_engine *e = live(zk, d->id, d->gen);

	if (e == NULL || status != 0) {
		if (e != NULL) {
			e->joining = 0;
		}
		dup_free(d);
		return;
	}
	for (size_t k = 0; k < count; k++) {
		*(char **) eb__vec_push(&d->names) = eb__strdup(names[k]);
	}
	dup_next(e, d);
}

static void
root_cb(eb__zk *zk, int status, void *arg)
{
	dup_req       *d = arg;
	eb__vx_engine *e = live(zk, d->id, d->gen);

	if (e == NULL || status != 0 ||
	    eb__zk_get_children(zk, e->path, NULL, NULL, dup_children_cb, d) !=
	        0) {
		if (e != NULL) {
			e->joining = 0;
		}
		dup_free(d);
	}
}

static void
join(eb__vx_engine *e)
{
	dup_req *d;

	if (!e->started || e->closing || e->joining || e->duplicate ||
	    e->child != NULL ||
	    eb__zk_get_state(e->zk) != EB_ZK_STATE_CONNECTED) {
		return;
	}
	d = eb__calloc(1, sizeof(*d));
	d->id = e->id;
	d->gen = e->gen;
	eb__vec_init(&d->names, sizeof(char *));
	e->joining = 1;
	if (eb__zk_ensure_path(e->zk, e->path, root_cb, d) != 0) {
		e->joining = 0;
		dup_free(d);
	}
}

/* ---- the API ---- */

int
eb__vx_engine_new(uv_loop_t *loop, eb__zk *zk, const char *path,
    const char *address, eb__vx_engine_cb cb, void *arg, eb__vx_engine **ep)
{
	eb__vx_engine *e;

	if (loop == NULL || zk == NULL || path == NULL || path[0] != '/' ||
	    address == NULL || address[0] == '\0' || cb == NULL) {
		return UV_EINVAL;
	}
	e = eb__calloc(1, sizeof(*e));
	if (uv_timer_init(loop, &e->timer) != 0) {
		free(e);
		return UV_EINVAL;
	}
	e->timer.data = e;
	e->loop = loop;
	e->zk = zk;
	e->gen = 1;
	e->path = eb__strdup(path);
	e->address = eb__strdup(address);
	e->cb = cb;
	e->arg = arg;
	*ep = e;
	return 0;
}

int
eb__vx_engine_start(eb__vx_engine *e)
{
	EB_ASSERT(!e->closing && !e->started);
	e->started = 1;
	e->id = eb__zk_live_add(e->zk, e);
	join(e);
	return 0;
}

void
eb__vx_engine_session_event(eb__vx_engine *e, eb__zk_event ev)
{
	if (!e->started || e->closing) {
		return;
	}
	switch (ev) {
	case EB_ZK_EV_EXPIRED:
		/* our child went with the session: no longer a candidate */
		e->gen++;
		e->joining = 0;
		e->listing = 0;
		free(e->child);
		e->child = NULL;
		if (e->leading) {
			tell(e, 0, "-");
		}
		break;
	case EB_ZK_EV_CONNECTED:
		e->listing = 0;
		join(e);
		break;
	case EB_ZK_EV_RECONNECTED:
		join(e);
		if (e->child != NULL) {
			elect_list(e); /* events may have been missed */
		}
		break;
	default:
		break;
	}
}

int
eb__vx_engine_leading(const eb__vx_engine *e)
{
	return e->leading;
}

static void
engine_deleted_cb(eb__zk *zk, int status, void *arg)
{
	(void) zk;
	(void) status;
	(void) arg;
}

static void
engine_closed_cb(uv_handle_t *h)
{
	eb__vx_engine *e = h->data;

	if (e->close_cb != NULL) {
		e->close_cb(e, e->close_arg);
	}
	free(e->path);
	free(e->address);
	free(e->child);
	free(e->leader);
	free(e);
}

void
eb__vx_engine_close(eb__vx_engine *e, eb__vx_engine_close_cb cb, void *arg)
{
	EB_ASSERT(!e->closing); /* close is exactly once */
	e->closing = 1;
	e->close_cb = cb;
	e->close_arg = arg;
	if (e->child != NULL &&
	    eb__zk_get_state(e->zk) == EB_ZK_STATE_CONNECTED) {
		/* SIGTERM hands over at once, as the Java engine's close */
		(void) eb__zk_delete(
		    e->zk, e->child, -1, engine_deleted_cb, NULL);
	}
	if (e->started) {
		eb__zk_live_del(e->zk, e->id);
	}
	uv_close((uv_handle_t *) &e->timer, engine_closed_cb);
}
