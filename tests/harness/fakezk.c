/*
 * fakezk: the in-memory ZooKeeper backend for unit tests; see fakezk.h.
 *
 * The tree is a flat list of nodes keyed by full path (tests hold tens of
 * nodes). Everything a client asks for becomes an item on the server's FIFO
 * queue; a uv_idle handle drains it one batch per loop turn, so every
 * callback runs on a later turn than the call that caused it, as the seam
 * requires. A multi applies its ops one by one with an undo log and commits
 * watches only when every op succeeded.
 */
#include "tests/harness/fakezk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/list.h"
#include "common/util.h"
#include "zk/zk_ops.h"

typedef struct fz_node {
	eb__list link;
	char    *path; /* owned */
	char    *data; /* owned, may be NULL */
	size_t   len;
	int64_t  czxid;
	int64_t  mzxid;
	int64_t  owner;
	int32_t  version;
	int32_t  cversion;
	int64_t  order;  /* creation order, for child listing */
	int      noread; /* get fails with EB_EZKNOAUTH (an ACL) */
} fz_node;

typedef struct fz_client fz_client;

typedef struct fz_watch {
	eb__list        link;
	fz_client      *c;
	char           *path; /* owned */
	int             child;
	eb__zk_watch_cb cb;
	void           *arg;
} fz_watch;

typedef struct fz_session {
	eb__list link;
	int64_t  id;
	int      alive;
} fz_session;

enum fz_kind {
	FZ_CREATE = 1,
	FZ_DELETE,
	FZ_EXISTS,
	FZ_GET,
	FZ_CHILDREN,
	FZ_SET,
	FZ_MULTI,
	FZ_EVENT,   /* a session event for the client */
	FZ_NEWSESS, /* the client gets a new session (CONNECTED) */
	FZ_WATCHEV, /* a fired watch, to deliver */
	FZ_CLOSED   /* the client has closed: eb__zk_closed */
};

typedef struct fz_item {
	eb__list        link;
	fz_client      *c;
	enum fz_kind    kind;
	char           *path; /* owned */
	char           *data; /* owned */
	size_t          len;
	int             flags;
	int32_t         version;
	eb__zk_op      *ops; /* owned copies (multi) */
	size_t          nops;
	eb__zk_watch_cb watch;
	void           *watch_arg;
	union {
		eb__zk_create_cb   create;
		eb__zk_void_cb     v;
		eb__zk_stat_cb     stat;
		eb__zk_data_cb     data;
		eb__zk_children_cb children;
		eb__zk_multi_cb    multi;
	} cb;
	void             *arg;
	char            **op_paths; /* owned copies behind ops[i].path */
	char            **op_datas; /* owned copies behind ops[i].data */
	uint64_t          send_ms;
	int               canceled;
	eb__zk_event      ev;
	eb__zk_watch_type wtype;
} fz_item;

struct fz_client {
	eb__list       link;
	fakezk_server *s;
	eb__zk        *zk;
	int64_t        session; /* 0: none */
	int            started;
	int            connected;
	int            stalled;
	int            writes_stalled; /* writes held, reads answered */
	int            killed;
	int            closing;
	int            lose_next;
	int            fail_next;
	int            lose_next_multi;
	int            fail_next_multi;
	eb__list       held; /* fz_item held while stalled/disconnected */
	unsigned       watch_events;
	unsigned       requests;
	uint32_t       timeout_ms;
};

struct fakezk_server {
	uv_loop_t *loop;
	uv_idle_t  idle;
	eb__list   nodes;
	eb__list   watches;
	eb__list   sessions;
	eb__list   clients;
	eb__list   queue;
	int64_t    zxid;
	uint32_t   min_timeout_ms; /* negotiation bounds; 0: none */
	uint32_t   max_timeout_ms;
	int64_t    next_session;
	int64_t    order;
	void (*close_cb)(void *arg);
	void *close_arg;
};

/* Undo log entry of a multi. */
typedef struct fz_undo {
	int      kind; /* FZ_CREATE, FZ_DELETE, FZ_SET */
	fz_node *node;
	char    *old_data;
	size_t   old_len;
	int32_t  old_version;
	int64_t  old_mzxid;
	int32_t  parent_old_cversion;
} fz_undo;

typedef struct fz_trigger {
	char             *path;
	eb__zk_watch_type type;
	int               child; /* fires child watches (on path) */
} fz_trigger;

/* The most ops of one multi (the real server has no count limit, only
 * the request size: cluster/config.c trims history in the write). */
#define FZ_MULTI_MAX 64

typedef struct fz_txn {
	fz_undo    undo[FZ_MULTI_MAX];
	size_t     nundo;
	fz_trigger trig[3 * FZ_MULTI_MAX];
	size_t     ntrig;
	int64_t    zxid;
} fz_txn;

static void idle_cb(uv_idle_t *h);

/* ---- tree ---- */

static fz_node *
node_find(fakezk_server *s, const char *path)
{
	eb__list *it;
	eb__list *tmp;

	EB_LIST_FOREACH (it, tmp, &s->nodes) {
		fz_node *n = EB_CONTAINER_OF(it, fz_node, link);

		if (strcmp(n->path, path) == 0) {
			return n;
		}
	}
	return NULL;
}

static void
parent_of(const char *path, char *out, size_t cap)
{
	const char *slash = strrchr(path, '/');
	size_t      n = slash == NULL ? 0 : (size_t) (slash - path);

	if (n == 0) {
		n = 1; /* "/" */
	}
	if (n >= cap) {
		n = cap - 1;
	}
	memcpy(out, path, n);
	out[n] = '\0';
}

static int
is_child_of(const char *path, const char *parent)
{
	size_t pl = strlen(parent);

	if (strcmp(parent, "/") == 0) {
		return path[0] == '/' && path[1] != '\0' &&
		       strchr(path + 1, '/') == NULL;
	}
	return strncmp(path, parent, pl) == 0 && path[pl] == '/' &&
	       strchr(path + pl + 1, '/') == NULL;
}

static int32_t
child_count(fakezk_server *s, const char *path)
{
	eb__list *it;
	eb__list *tmp;
	int32_t   n = 0;

	EB_LIST_FOREACH (it, tmp, &s->nodes) {
		fz_node *c = EB_CONTAINER_OF(it, fz_node, link);

		if (is_child_of(c->path, path)) {
			n++;
		}
	}
	return n;
}

static void
fill_stat(fakezk_server *s, const fz_node *n, eb__zk_stat *st)
{
	memset(st, 0, sizeof(*st));
	st->czxid = n->czxid;
	st->mzxid = n->mzxid;
	st->ephemeral_owner = n->owner;
	st->version = n->version;
	st->cversion = n->cversion;
	st->num_children = child_count(s, n->path);
	st->data_length = (int32_t) n->len;
}

static void
node_free(fz_node *n)
{
	free(n->path);
	free(n->data);
	free(n);
}

static int
path_valid(const char *p)
{
	size_t l;

	if (p == NULL || p[0] != '/') {
		return 0;
	}
	l = strlen(p);
	return l == 1 || p[l - 1] != '/';
}

/* ---- queue ---- */

static void
queue_push(fakezk_server *s, fz_item *it)
{
	eb__list_insert_tail(&s->queue, &it->link);
	(void) uv_idle_start(&s->idle, idle_cb);
}

static fz_item *
item_new(fz_client *c, enum fz_kind kind)
{
	fz_item *it = eb__calloc(1, sizeof(*it));

	eb__list_init(&it->link);
	it->c = c;
	it->kind = kind;
	it->send_ms = eb__mono_ms();
	return it;
}

static void
item_free(fz_item *it)
{
	size_t i;

	for (i = 0; i < it->nops; i++) {
		free(it->op_paths[i]);
		free(it->op_datas[i]);
	}
	free(it->op_paths);
	free(it->op_datas);
	free(it->ops);
	free(it->path);
	free(it->data);
	free(it);
}

/* ---- watches ---- */

static void
watch_add(
    fz_client *c, const char *path, int child, eb__zk_watch_cb cb, void *arg)
{
	fz_watch *w;

	if (cb == NULL) {
		return;
	}
	w = eb__calloc(1, sizeof(*w));
	w->c = c;
	w->path = eb__strdup(path);
	w->child = child;
	w->cb = cb;
	w->arg = arg;
	eb__list_insert_tail(&c->s->watches, &w->link);
}

static void
watch_free(fz_watch *w)
{
	eb__list_remove(&w->link);
	free(w->path);
	free(w);
}

/* Fires (queues) every watch that matches a committed change. */
static void
fire(fakezk_server *s, const char *path, eb__zk_watch_type type, int child)
{
	eb__list *it;
	eb__list *tmp;

	EB_LIST_FOREACH (it, tmp, &s->watches) {
		fz_watch *w = EB_CONTAINER_OF(it, fz_watch, link);
		fz_item  *ev;

		if (strcmp(w->path, path) != 0 || w->child != child) {
			continue;
		}
		ev = item_new(w->c, FZ_WATCHEV);
		ev->path = eb__strdup(path);
		ev->wtype = type;
		ev->watch = w->cb;
		ev->watch_arg = w->arg;
		queue_push(s, ev);
		watch_free(w);
	}
}

static void
fire_changes(fakezk_server *s, const char *path, eb__zk_watch_type type)
{
	char parent[512];

	parent_of(path, parent, sizeof(parent));
	switch (type) {
	case EB_ZK_WATCH_CREATED:
		fire(s, path, EB_ZK_WATCH_CREATED, 0);
		fire(s, parent, EB_ZK_WATCH_CHILD, 1);
		break;
	case EB_ZK_WATCH_DELETED:
		fire(s, path, EB_ZK_WATCH_DELETED, 0);
		fire(s, path, EB_ZK_WATCH_DELETED, 1);
		fire(s, parent, EB_ZK_WATCH_CHILD, 1);
		break;
	default:
		fire(s, path, type, 0);
		break;
	}
}

/* ---- operations on the tree (with undo) ---- */

static void
txn_trigger(fz_txn *t, const char *path, eb__zk_watch_type type)
{
	if (t->ntrig < sizeof(t->trig) / sizeof(t->trig[0])) {
		t->trig[t->ntrig].path = eb__strdup(path);
		t->trig[t->ntrig].type = type;
		t->ntrig++;
	}
}

static int
tree_create(fakezk_server *s, fz_txn *t, const char *path, const char *data,
    size_t len, int flags, int64_t owner, char **created)
{
	char     parent[512];
	char     full[600];
	fz_node *p;
	fz_node *n;

	if (!path_valid(path)) {
		return EB_EZKBADARGS;
	}
	parent_of(path, parent, sizeof(parent));
	p = node_find(s, parent);
	if (p == NULL) {
		return EB_EZKNONODE;
	}
	if (p->owner != 0) {
		return EB_EZKEPHEMERALCHILD;
	}
	if (flags & EB_ZK_SEQUENTIAL) {
		(void) snprintf(
		    full, sizeof(full), "%s%010d", path, (int) p->cversion);
	} else {
		(void) snprintf(full, sizeof(full), "%s", path);
	}
	if (node_find(s, full) != NULL) {
		return EB_EZKNODEEXISTS;
	}
	n = eb__calloc(1, sizeof(*n));
	n->path = eb__strdup(full);
	n->data = len > 0 ? eb__memdup(data, len) : NULL;
	n->len = len;
	n->czxid = t->zxid;
	n->mzxid = t->zxid;
	n->owner = (flags & EB_ZK_EPHEMERAL) ? owner : 0;
	n->order = ++s->order;
	eb__list_insert_tail(&s->nodes, &n->link);
	t->undo[t->nundo].kind = FZ_CREATE;
	t->undo[t->nundo].node = n;
	t->undo[t->nundo].parent_old_cversion = p->cversion;
	t->nundo++;
	p->cversion++;
	txn_trigger(t, full, EB_ZK_WATCH_CREATED);
	if (created != NULL) {
		*created = eb__strdup(full);
	}
	return 0;
}

static int
tree_delete(fakezk_server *s, fz_txn *t, const char *path, int32_t version)
{
	char     parent[512];
	fz_node *n = node_find(s, path);
	fz_node *p;

	if (n == NULL || strcmp(path, "/") == 0) {
		return EB_EZKNONODE;
	}
	if (version != -1 && version != n->version) {
		return EB_EZKBADVERSION;
	}
	if (child_count(s, path) > 0) {
		return EB_EZKNOTEMPTY;
	}
	parent_of(path, parent, sizeof(parent));
	p = node_find(s, parent);
	eb__list_remove(&n->link);
	t->undo[t->nundo].kind = FZ_DELETE;
	t->undo[t->nundo].node = n;
	t->undo[t->nundo].parent_old_cversion = p != NULL ? p->cversion : 0;
	t->nundo++;
	if (p != NULL) {
		p->cversion++;
	}
	txn_trigger(t, path, EB_ZK_WATCH_DELETED);
	return 0;
}

static int
tree_set(fakezk_server *s, fz_txn *t, const char *path, const char *data,
    size_t len, int32_t version)
{
	fz_node *n = node_find(s, path);
	fz_undo *u;

	if (n == NULL) {
		return EB_EZKNONODE;
	}
	if (version != -1 && version != n->version) {
		return EB_EZKBADVERSION;
	}
	u = &t->undo[t->nundo++];
	u->kind = FZ_SET;
	u->node = n;
	u->old_data = n->data;
	u->old_len = n->len;
	u->old_version = n->version;
	u->old_mzxid = n->mzxid;
	n->data = len > 0 ? eb__memdup(data, len) : NULL;
	n->len = len;
	n->version++;
	n->mzxid = t->zxid;
	txn_trigger(t, path, EB_ZK_WATCH_CHANGED);
	return 0;
}

static int
tree_check(fakezk_server *s, const char *path, int32_t version)
{
	fz_node *n = node_find(s, path);

	if (n == NULL) {
		return EB_EZKNONODE;
	}
	if (version != -1 && version != n->version) {
		return EB_EZKBADVERSION;
	}
	return 0;
}

static void
txn_begin(fakezk_server *s, fz_txn *t)
{
	memset(t, 0, sizeof(*t));
	t->zxid = s->zxid + 1;
}

static void
txn_parent_cversion(fakezk_server *s, const fz_node *n, int32_t v)
{
	char     parent[512];
	fz_node *p;

	parent_of(n->path, parent, sizeof(parent));
	p = node_find(s, parent);
	if (p != NULL) {
		p->cversion = v;
	}
}

static void
txn_end(fakezk_server *s, fz_txn *t, int commit)
{
	size_t i;

	for (i = t->nundo; i-- > 0;) {
		fz_undo *u = &t->undo[i];

		if (commit) {
			if (u->kind == FZ_DELETE) {
				node_free(u->node);
			} else if (u->kind == FZ_SET) {
				free(u->old_data);
			}
			continue;
		}
		if (u->kind == FZ_CREATE) {
			eb__list_remove(&u->node->link);
			txn_parent_cversion(s, u->node, u->parent_old_cversion);
			node_free(u->node);
		} else if (u->kind == FZ_DELETE) {
			eb__list_insert_tail(&s->nodes, &u->node->link);
			txn_parent_cversion(s, u->node, u->parent_old_cversion);
		} else {
			free(u->node->data);
			u->node->data = u->old_data;
			u->node->len = u->old_len;
			u->node->version = u->old_version;
			u->node->mzxid = u->old_mzxid;
		}
	}
	if (commit && t->nundo > 0) {
		s->zxid = t->zxid;
	}
	for (i = 0; i < t->ntrig; i++) {
		if (commit) {
			fire_changes(s, t->trig[i].path, t->trig[i].type);
		}
		free(t->trig[i].path);
	}
}

/* ---- sessions ---- */

static fz_session *
session_find(fakezk_server *s, int64_t id)
{
	eb__list *it;
	eb__list *tmp;

	EB_LIST_FOREACH (it, tmp, &s->sessions) {
		fz_session *x = EB_CONTAINER_OF(it, fz_session, link);

		if (x->id == id) {
			return x;
		}
	}
	return NULL;
}

static int
session_alive(fakezk_server *s, int64_t id)
{
	fz_session *x = session_find(s, id);

	return x != NULL && x->alive;
}

static int64_t
session_new(fakezk_server *s)
{
	fz_session *x = eb__calloc(1, sizeof(*x));

	x->id = ++s->next_session;
	x->alive = 1;
	eb__list_insert_tail(&s->sessions, &x->link);
	return x->id;
}

/* 1 when c is one of the server's clients and belongs to session id. */
static int
client_in_session(fakezk_server *s, const fz_client *c, int64_t id)
{
	eb__list *it;

	for (it = s->clients.next; it != &s->clients; it = it->next) {
		const fz_client *x = EB_CONTAINER_OF(it, fz_client, link);

		if (x == c) {
			return x->session == id;
		}
	}
	return 0;
}

/* The server ends a session: ephemerals go (firing watches); the watches
 * its clients registered are dropped. */
static void
session_end(fakezk_server *s, int64_t id)
{
	fz_session *x = session_find(s, id);
	eb__list   *it;
	eb__list   *tmp;
	fz_txn      t;

	if (x == NULL || !x->alive) {
		return;
	}
	x->alive = 0;
	txn_begin(s, &t);
	EB_LIST_FOREACH (it, tmp, &s->nodes) {
		fz_node *n = EB_CONTAINER_OF(it, fz_node, link);

		if (n->owner == id && t.nundo < FZ_MULTI_MAX) {
			(void) tree_delete(s, &t, n->path, -1);
		}
	}
	txn_end(s, &t, 1);
	/* One pass over the watches (not one per client): clang-analyzer
	 * cannot prove that watch_free() relinks the list head, and would
	 * see the second pass read a freed watch through it. */
	EB_LIST_FOREACH (it, tmp, &s->watches) {
		fz_watch *w = EB_CONTAINER_OF(it, fz_watch, link);

		if (client_in_session(s, w->c, id)) {
			watch_free(w);
		}
	}
}

/* ---- request execution ---- */

static void
note_ok(fz_client *c, fz_item *it)
{
	eb__zk_note_ok(c->zk, it->send_ms);
}

static int
run_create(fz_client *c, fz_item *it, char **created)
{
	fz_txn t;
	int    rv;

	txn_begin(c->s, &t);
	rv = tree_create(c->s, &t, it->path, it->data, it->len, it->flags,
	    c->session, created);
	txn_end(c->s, &t, rv == 0);
	return rv;
}

static int
run_multi(fz_client *c, fz_item *it, eb__zk_op_result *res, char **created)
{
	fz_txn t;
	size_t i;
	int    rv = 0;

	txn_begin(c->s, &t);
	for (i = 0; i < it->nops; i++) {
		const eb__zk_op *op = &it->ops[i];

		switch (op->type) {
		case EB_ZK_OP_CREATE:
			rv = tree_create(c->s, &t, op->path, op->data, op->len,
			    op->flags, c->session, &created[i]);
			break;
		case EB_ZK_OP_DELETE:
			rv = tree_delete(c->s, &t, op->path, op->version);
			break;
		case EB_ZK_OP_SET:
			rv = tree_set(
			    c->s, &t, op->path, op->data, op->len, op->version);
			break;
		case EB_ZK_OP_CHECK:
			rv = tree_check(c->s, op->path, op->version);
			break;
		default:
			rv = EB_EZKBADARGS;
			break;
		}
		res[i].status = rv;
		if (rv != 0) {
			break;
		}
	}
	if (rv != 0) {
		size_t j;

		for (j = 0; j < it->nops; j++) {
			res[j].status =
			    j < i ? 0 : (j == i ? rv : EB_EZKRUNTIME);
			free(created[j]);
			created[j] = NULL;
		}
	}
	for (i = 0; i < it->nops; i++) {
		res[i].path = created[i];
	}
	txn_end(c->s, &t, rv == 0);
	return rv;
}

/* The req_* functions apply one kind of request to the tree and complete
 * it with status override (0: the real result). */

static void
req_create(fz_client *c, fz_item *it, int override)
{
	char *created = NULL;
	int   rv = run_create(c, it, &created);

	if (override != 0) {
		rv = override;
	} else if (rv == 0) {
		note_ok(c, it);
	}
	it->cb.create(c->zk, rv, rv == 0 ? created : NULL, it->arg);
	free(created);
}

static void
req_delete(fz_client *c, fz_item *it, int override)
{
	fakezk_server *s = c->s;
	fz_txn         t;
	int            rv;

	txn_begin(s, &t);
	rv = tree_delete(s, &t, it->path, it->version);
	txn_end(s, &t, rv == 0);
	if (override != 0) {
		rv = override;
	} else if (rv == 0) {
		note_ok(c, it);
	}
	it->cb.v(c->zk, rv, it->arg);
}

static void
req_exists(fz_client *c, fz_item *it, int override)
{
	fakezk_server *s = c->s;
	fz_node       *n = node_find(s, it->path);
	eb__zk_stat    st;
	int            rv = n == NULL ? EB_EZKNONODE : 0;

	memset(&st, 0, sizeof(st));
	if (override == 0) {
		watch_add(c, it->path, 0, it->watch, it->watch_arg);
		note_ok(c, it);
		if (n != NULL) {
			fill_stat(s, n, &st);
		}
	} else {
		rv = override;
	}
	it->cb.stat(c->zk, rv, rv == 0 ? &st : NULL, it->arg);
}

static void
req_get(fz_client *c, fz_item *it, int override)
{
	fakezk_server *s = c->s;
	fz_node       *n = node_find(s, it->path);
	eb__zk_stat    st;
	int            rv = n == NULL ? EB_EZKNONODE : 0;
	char          *copy;

	memset(&st, 0, sizeof(st));
	if (override == 0 && n != NULL && n->noread) {
		/* As ZooKeeper: the ACL is checked first, no watch is set. */
		override = EB_EZKNOAUTH;
	}
	if (override != 0) {
		rv = override;
		n = NULL;
	} else if (n != NULL) {
		watch_add(c, it->path, 0, it->watch, it->watch_arg);
		note_ok(c, it);
		fill_stat(s, n, &st);
	}
	copy = n != NULL ? eb__malloc(n->len + 1) : NULL;
	if (copy != NULL) {
		if (n->len > 0) {
			memcpy(copy, n->data, n->len);
		}
		copy[n->len] = '\0';
	}
	it->cb.data(c->zk, rv, copy, n != NULL ? n->len : 0,
	    n != NULL ? &st : NULL, it->arg);
	free(copy);
}

static void
req_children(fz_client *c, fz_item *it, int override)
{
	fakezk_server *s = c->s;
	fz_node       *n = node_find(s, it->path);
	int            rv = n == NULL ? EB_EZKNONODE : 0;
	const char   **names = NULL;
	size_t         count = 0;
	eb__list      *li;
	eb__list      *lt;

	if (override != 0) {
		rv = override;
		n = NULL;
	}
	if (n != NULL) {
		watch_add(c, it->path, 1, it->watch, it->watch_arg);
		note_ok(c, it);
		names = eb__calloc(
		    (size_t) child_count(s, it->path) + 1, sizeof(*names));
		/* Newest first: callers must not rely on order. */
		for (li = s->nodes.prev, lt = li->prev; li != &s->nodes;
		     li = lt, lt = li->prev) {
			fz_node *ch = EB_CONTAINER_OF(li, fz_node, link);

			if (is_child_of(ch->path, it->path)) {
				names[count++] = strrchr(ch->path, '/') + 1;
			}
		}
	}
	it->cb.children(c->zk, rv, (const char *const *) names, count, it->arg);
	free(names);
}

static void
req_set(fz_client *c, fz_item *it, int override)
{
	fakezk_server *s = c->s;
	fz_node       *n;
	eb__zk_stat    st;
	fz_txn         t;
	int            rv;

	memset(&st, 0, sizeof(st));
	txn_begin(s, &t);
	rv = tree_set(s, &t, it->path, it->data, it->len, it->version);
	txn_end(s, &t, rv == 0);
	n = rv == 0 ? node_find(s, it->path) : NULL;
	if (n != NULL) {
		fill_stat(s, n, &st);
	}
	if (override != 0) {
		rv = override;
	} else if (rv == 0) {
		note_ok(c, it);
	}
	it->cb.stat(c->zk, rv, rv == 0 ? &st : NULL, it->arg);
}

static void
req_multi(fz_client *c, fz_item *it, int override)
{
	eb__zk_op_result res[FZ_MULTI_MAX];
	char            *mcreated[FZ_MULTI_MAX] = { NULL };
	size_t           i;
	int              rv = run_multi(c, it, res, mcreated);

	if (override != 0) {
		rv = override;
		for (i = 0; i < it->nops; i++) {
			res[i].status = override;
			res[i].path = NULL;
		}
	} else if (rv == 0) {
		note_ok(c, it);
	}
	it->cb.multi(c->zk, rv, res, it->nops, it->arg);
	for (i = 0; i < it->nops; i++) {
		free(mcreated[i]);
	}
}

/* Applies a request to the tree and completes it with status override
 * (0: the real result). */
static void
run_request(fz_client *c, fz_item *it, int override)
{
	switch (it->kind) {
	case FZ_CREATE:
		req_create(c, it, override);
		break;
	case FZ_DELETE:
		req_delete(c, it, override);
		break;
	case FZ_EXISTS:
		req_exists(c, it, override);
		break;
	case FZ_GET:
		req_get(c, it, override);
		break;
	case FZ_CHILDREN:
		req_children(c, it, override);
		break;
	case FZ_SET:
		req_set(c, it, override);
		break;
	case FZ_MULTI:
		req_multi(c, it, override);
		break;
	default:
		break;
	}
}

/* Completes a request without touching the tree. */
static void
fail_request(fz_client *c, fz_item *it, int status)
{
	switch (it->kind) {
	case FZ_CREATE:
		it->cb.create(c->zk, status, NULL, it->arg);
		break;
	case FZ_DELETE:
		it->cb.v(c->zk, status, it->arg);
		break;
	case FZ_EXISTS:
	case FZ_SET:
		it->cb.stat(c->zk, status, NULL, it->arg);
		break;
	case FZ_GET:
		it->cb.data(c->zk, status, NULL, 0, NULL, it->arg);
		break;
	case FZ_CHILDREN:
		it->cb.children(c->zk, status, NULL, 0, it->arg);
		break;
	case FZ_MULTI:
		eb__zk_multi_fail(
		    c->zk, it->cb.multi, it->arg, it->nops, status);
		break;
	default:
		break;
	}
}

static int
is_request(const fz_item *it)
{
	return it->kind >= FZ_CREATE && it->kind <= FZ_MULTI;
}

static void client_drop_connection(fz_client *c);

static void
process_request(fz_client *c, fz_item *it)
{
	int fail;

	if (it->canceled) {
		fail_request(c, it, EB_ECANCELED);
		return;
	}
	if (!session_alive(c->s, c->session)) {
		fail_request(c, it, EB_EZKEXPIRED);
		return;
	}
	if (!c->connected) {
		fail_request(c, it, EB_EZKLOSS);
		return;
	}
	if (c->fail_next != 0) {
		fail = c->fail_next;
		c->fail_next = 0;
		fail_request(c, it, fail);
		return;
	}
	if (it->kind == FZ_MULTI && c->fail_next_multi != 0) {
		fail = c->fail_next_multi;
		c->fail_next_multi = 0;
		fail_request(c, it, fail);
		return;
	}
	if (it->kind == FZ_MULTI && c->lose_next_multi) {
		c->lose_next_multi = 0;
		c->lose_next = 1;
	}
	if (c->lose_next) {
		/* Applied by the server, reply lost with the connection. */
		c->lose_next = 0;
		client_drop_connection(c);
		run_request(c, it, EB_EZKLOSS);
		return;
	}
	run_request(c, it, 0);
}

static void
process_item(fakezk_server *s, fz_item *it)
{
	fz_client *c = it->c;

	switch (it->kind) {
	case FZ_EVENT:
		eb__zk_emit(c->zk, it->ev, c->session);
		break;
	case FZ_NEWSESS:
		if (c->closing || c->killed) {
			break;
		}
		c->session = session_new(s);
		c->connected = 1;
		/* Negotiation, as ZooKeeper clamps the requested timeout to
		 * [minSessionTimeout, maxSessionTimeout]. */
		c->zk->timeout_ms = c->timeout_ms;
		if (s->min_timeout_ms != 0 &&
		    c->zk->timeout_ms < s->min_timeout_ms) {
			c->zk->timeout_ms = s->min_timeout_ms;
		}
		if (s->max_timeout_ms != 0 &&
		    c->zk->timeout_ms > s->max_timeout_ms) {
			c->zk->timeout_ms = s->max_timeout_ms;
		}
		eb__zk_emit(c->zk, EB_ZK_EV_CONNECTED, c->session);
		break;
	case FZ_WATCHEV:
		c->watch_events++;
		it->watch(c->zk, it->wtype, it->path, it->watch_arg);
		break;
	case FZ_CLOSED:
		eb__list_remove(&c->link);
		{
			eb__zk *zk = c->zk;

			free(c);
			eb__zk_closed(zk);
		}
		break;
	default:
		process_request(c, it);
		break;
	}
}

static int
must_hold(const fz_item *it)
{
	const fz_client *c = it->c;

	if (c->closing || it->kind == FZ_CLOSED) {
		return 0;
	}
	if (c->killed) {
		return 1;
	}
	if (c->stalled) {
		return it->kind != FZ_EVENT;
	}
	if (c->writes_stalled &&
	    (it->kind == FZ_CREATE || it->kind == FZ_DELETE ||
	        it->kind == FZ_SET || it->kind == FZ_MULTI)) {
		return 1;
	}
	/* Watch events of a disconnected client wait for the reconnect. */
	return it->kind == FZ_WATCHEV && !c->connected;
}

static void
idle_cb(uv_idle_t *h)
{
	fakezk_server *s = h->data;
	eb__list       batch;
	eb__list      *li;

	eb__list_init(&batch);
	if (!eb__list_empty(&s->queue)) {
		batch.next = s->queue.next;
		batch.prev = s->queue.prev;
		batch.next->prev = &batch;
		batch.prev->next = &batch;
		eb__list_init(&s->queue);
	}
	while ((li = eb__list_first(&batch)) != NULL) {
		fz_item *it = EB_CONTAINER_OF(li, fz_item, link);

		eb__list_remove(li);
		if (must_hold(it)) {
			eb__list_insert_tail(&it->c->held, &it->link);
			continue;
		}
		process_item(s, it);
		item_free(it);
	}
	if (eb__list_empty(&s->queue)) {
		(void) uv_idle_stop(&s->idle);
	}
}

/* Moves the client's held items back onto the queue. */
static void
release_held(fz_client *c)
{
	eb__list *li;

	while ((li = eb__list_first(&c->held)) != NULL) {
		eb__list_remove(li);
		queue_push(c->s, EB_CONTAINER_OF(li, fz_item, link));
	}
}

/* Removes the client's queued and held items of one kind (0: all). */
static void
drop_items(fz_client *c, eb__list *list, enum fz_kind kind)
{
	eb__list *li;
	eb__list *lt;

	EB_LIST_FOREACH (li, lt, list) {
		fz_item *it = EB_CONTAINER_OF(li, fz_item, link);

		if (it->c == c && (kind == 0 || it->kind == kind)) {
			eb__list_remove(li);
			item_free(it);
		}
	}
}

static void
client_drop_connection(fz_client *c)
{
	if (!c->connected) {
		return;
	}
	c->connected = 0;
	eb__zk_emit(c->zk, EB_ZK_EV_SUSPENDED, c->session);
}

/* ---- backend ops ---- */

static fz_client *
client_of(eb__zk *zk)
{
	return zk->impl;
}

static int
submit(eb__zk *zk, fz_item *it)
{
	fz_client *c = client_of(zk);

	c->requests++;
	queue_push(c->s, it);
	return 0;
}

static int
op_start(eb__zk *zk)
{
	fz_client *c = client_of(zk);

	c->started = 1;
	queue_push(c->s, item_new(c, FZ_NEWSESS));
	return 0;
}

static void
op_close(eb__zk *zk)
{
	fz_client *c = client_of(zk);
	eb__list  *li;
	eb__list  *lt;

	c->closing = 1;
	drop_items(c, &c->s->queue, FZ_WATCHEV);
	drop_items(c, &c->held, FZ_WATCHEV);
	drop_items(c, &c->s->queue, FZ_EVENT);
	drop_items(c, &c->held, FZ_EVENT);
	drop_items(c, &c->s->queue, FZ_NEWSESS);
	drop_items(c, &c->held, FZ_NEWSESS);
	release_held(c);
	EB_LIST_FOREACH (li, lt, &c->s->queue) {
		fz_item *it = EB_CONTAINER_OF(li, fz_item, link);

		if (it->c == c && is_request(it)) {
			it->canceled = 1;
		}
	}
	EB_LIST_FOREACH (li, lt, &c->s->watches) {
		fz_watch *w = EB_CONTAINER_OF(li, fz_watch, link);

		if (w->c == c) {
			watch_free(w);
		}
	}
	if (!c->killed && c->session != 0) {
		session_end(c->s, c->session); /* a graceful close */
	}
	queue_push(c->s, item_new(c, FZ_CLOSED));
}

static int
op_create(eb__zk *zk, const char *path, const char *data, size_t len, int flags,
    eb__zk_create_cb cb, void *arg)
{
	fz_item *it = item_new(client_of(zk), FZ_CREATE);

	it->path = eb__strdup(path);
	it->data = len > 0 ? eb__memdup(data, len) : NULL;
	it->len = len;
	it->flags = flags;
	it->cb.create = cb;
	it->arg = arg;
	return submit(zk, it);
}

static int
op_delete(
    eb__zk *zk, const char *path, int32_t version, eb__zk_void_cb cb, void *arg)
{
	fz_item *it = item_new(client_of(zk), FZ_DELETE);

	it->path = eb__strdup(path);
	it->version = version;
	it->cb.v = cb;
	it->arg = arg;
	return submit(zk, it);
}

static int
op_exists(eb__zk *zk, const char *path, eb__zk_watch_cb watch, void *watch_arg,
    eb__zk_stat_cb cb, void *arg)
{
	fz_item *it = item_new(client_of(zk), FZ_EXISTS);

	it->path = eb__strdup(path);
	it->watch = watch;
	it->watch_arg = watch_arg;
	it->cb.stat = cb;
	it->arg = arg;
	return submit(zk, it);
}

static int
op_get(eb__zk *zk, const char *path, eb__zk_watch_cb watch, void *watch_arg,
    eb__zk_data_cb cb, void *arg)
{
	fz_item *it = item_new(client_of(zk), FZ_GET);

	it->path = eb__strdup(path);
	it->watch = watch;
	it->watch_arg = watch_arg;
	it->cb.data = cb;
	it->arg = arg;
	return submit(zk, it);
}

static int
op_children(eb__zk *zk, const char *path, eb__zk_watch_cb watch,
    void *watch_arg, eb__zk_children_cb cb, void *arg)
{
	fz_item *it = item_new(client_of(zk), FZ_CHILDREN);

	it->path = eb__strdup(path);
	it->watch = watch;
	it->watch_arg = watch_arg;
	it->cb.children = cb;
	it->arg = arg;
	return submit(zk, it);
}

static int
op_set(eb__zk *zk, const char *path, const char *data, size_t len,
    int32_t version, eb__zk_stat_cb cb, void *arg)
{
	fz_item *it = item_new(client_of(zk), FZ_SET);

	it->path = eb__strdup(path);
	it->data = len > 0 ? eb__memdup(data, len) : NULL;
	it->len = len;
	it->version = version;
	it->cb.stat = cb;
	it->arg = arg;
	return submit(zk, it);
}

static int
op_multi(eb__zk *zk, const eb__zk_op *ops, size_t count, eb__zk_multi_cb cb,
    void *arg)
{
	fz_item *it;
	size_t   i;

	if (count == 0 || count > FZ_MULTI_MAX) {
		return EB_EZKBADARGS;
	}
	it = item_new(client_of(zk), FZ_MULTI);
	it->ops = eb__calloc(count, sizeof(*it->ops));
	it->nops = count;
	it->op_paths = eb__calloc(count, sizeof(char *));
	it->op_datas = eb__calloc(count, sizeof(char *));
	for (i = 0; i < count; i++) {
		it->ops[i] = ops[i];
		it->op_paths[i] = eb__strdup(ops[i].path);
		it->op_datas[i] =
		    ops[i].len > 0 ? eb__memdup(ops[i].data, ops[i].len) : NULL;
		it->ops[i].path = it->op_paths[i];
		it->ops[i].data = it->op_datas[i];
	}
	it->cb.multi = cb;
	it->arg = arg;
	return submit(zk, it);
}

static const eb__zk_ops fakezk_ops = {
	.start = op_start,
	.close = op_close,
	.create = op_create,
	.delete_node = op_delete,
	.exists = op_exists,
	.get = op_get,
	.get_children = op_children,
	.set = op_set,
	.multi = op_multi,
};

/* ---- public (test) API ---- */

fakezk_server *
fakezk_server_new(uv_loop_t *loop)
{
	fakezk_server *s = eb__calloc(1, sizeof(*s));
	fz_node       *root = eb__calloc(1, sizeof(*root));

	s->loop = loop;
	eb__list_init(&s->nodes);
	eb__list_init(&s->watches);
	eb__list_init(&s->sessions);
	eb__list_init(&s->clients);
	eb__list_init(&s->queue);
	s->next_session = 0x1000;
	s->zxid = 1;
	root->path = eb__strdup("/");
	eb__list_insert_tail(&s->nodes, &root->link);
	(void) uv_idle_init(loop, &s->idle);
	s->idle.data = s;
	return s;
}

static void
server_closed_cb(uv_handle_t *h)
{
	fakezk_server *s = h->data;
	eb__list      *li;
	eb__list      *lt;

	/* Each free touches only its own element, so a spare cursor is safe;
	 * it also lets clang-analyzer see that no freed element is read
	 * again (it cannot prove that unlinking the first element relinks
	 * the head, which eb__list_first() would read next). */
	EB_LIST_FOREACH (li, lt, &s->queue) {
		eb__list_remove(li);
		item_free(EB_CONTAINER_OF(li, fz_item, link));
	}
	EB_LIST_FOREACH (li, lt, &s->watches) {
		watch_free(EB_CONTAINER_OF(li, fz_watch, link));
	}
	EB_LIST_FOREACH (li, lt, &s->nodes) {
		eb__list_remove(li);
		node_free(EB_CONTAINER_OF(li, fz_node, link));
	}
	EB_LIST_FOREACH (li, lt, &s->sessions) {
		eb__list_remove(li);
		free(EB_CONTAINER_OF(li, fz_session, link));
	}
	if (s->close_cb != NULL) {
		s->close_cb(s->close_arg);
	}
	free(s);
}

void
fakezk_server_close(fakezk_server *s, void (*cb)(void *arg), void *arg)
{
	s->close_cb = cb;
	s->close_arg = arg;
	uv_close((uv_handle_t *) &s->idle, server_closed_cb);
}

static void
close_flag_cb(void *arg)
{
	*(int *) arg = 1;
}

void
fakezk_server_close_run(fakezk_server *s, th_loop *t)
{
	int closed = 0;

	fakezk_server_close(s, close_flag_cb, &closed);
	(void) th_loop_run(t);
	assert_int_equal(closed, 1);
}

int
fakezk_client_new(fakezk_server *s, uint32_t timeout_ms,
    eb__zk_event_cb on_event, void *arg, eb__zk **zkp)
{
	fz_client *c = eb__calloc(1, sizeof(*c));
	int        rv;

	c->s = s;
	c->timeout_ms = timeout_ms;
	eb__list_init(&c->held);
	rv = eb__zk_new_with_ops(
	    s->loop, &fakezk_ops, c, timeout_ms, on_event, arg, zkp);
	if (rv != 0) {
		free(c);
		return rv;
	}
	c->zk = *zkp;
	eb__list_insert_tail(&s->clients, &c->link);
	return 0;
}

void
fakezk_disconnect(eb__zk *zk)
{
	fz_client *c = client_of(zk);
	eb__list  *li;
	eb__list  *lt;

	/* Requests in flight (queued or held) are answered with a loss. */
	EB_LIST_FOREACH (li, lt, &c->held) {
		fz_item *it = EB_CONTAINER_OF(li, fz_item, link);

		if (is_request(it)) {
			eb__list_remove(li);
			queue_push(c->s, it);
		}
	}
	client_drop_connection(c);
}

void
fakezk_reconnect(eb__zk *zk)
{
	fz_client *c = client_of(zk);
	fz_item   *it;

	if (c->connected || c->killed || c->closing) {
		return;
	}
	if (session_alive(c->s, c->session)) {
		c->connected = 1;
		it = item_new(c, FZ_EVENT);
		it->ev = EB_ZK_EV_RECONNECTED;
		queue_push(c->s, it);
		release_held(c);
		return;
	}
	drop_items(c, &c->held, FZ_WATCHEV);
	it = item_new(c, FZ_EVENT);
	it->ev = EB_ZK_EV_EXPIRED;
	queue_push(c->s, it);
	queue_push(c->s, item_new(c, FZ_NEWSESS));
}

void
fakezk_expire(eb__zk *zk)
{
	fz_client *c = client_of(zk);
	fz_item   *it;

	session_end(c->s, c->session);
	if (!c->connected || c->killed) {
		return; /* noticed on reconnect */
	}
	c->connected = 0;
	drop_items(c, &c->held, FZ_WATCHEV);
	drop_items(c, &c->s->queue, FZ_WATCHEV);
	it = item_new(c, FZ_EVENT);
	it->ev = EB_ZK_EV_EXPIRED;
	queue_push(c->s, it);
	queue_push(c->s, item_new(c, FZ_NEWSESS));
}

void
fakezk_lose_next_reply(eb__zk *zk)
{
	client_of(zk)->lose_next = 1;
}

void
fakezk_lose_next_multi(eb__zk *zk)
{
	client_of(zk)->lose_next_multi = 1;
}

void
fakezk_fail_next_multi(eb__zk *zk, int status)
{
	client_of(zk)->fail_next_multi = status;
}

int64_t
fakezk_session(const eb__zk *zk)
{
	return ((const fz_client *) zk->impl)->session;
}

void
fakezk_stall(eb__zk *zk, int on)
{
	fz_client *c = client_of(zk);

	c->stalled = on;
	if (!on) {
		release_held(c);
	}
}

void
fakezk_stall_writes(eb__zk *zk, int on)
{
	fz_client *c = client_of(zk);

	c->writes_stalled = on;
	if (!on) {
		release_held(c);
	}
}

void
fakezk_server_set_timeout_bounds(
    fakezk_server *s, uint32_t min_ms, uint32_t max_ms)
{
	s->min_timeout_ms = min_ms;
	s->max_timeout_ms = max_ms;
}

void
fakezk_kill(eb__zk *zk)
{
	client_of(zk)->killed = 1;
}

void
fakezk_fail_next(eb__zk *zk, int status)
{
	client_of(zk)->fail_next = status;
}

void
fakezk_server_expire_session(fakezk_server *s, int64_t session_id)
{
	eb__list *li;
	eb__list *lt;

	EB_LIST_FOREACH (li, lt, &s->clients) {
		fz_client *c = EB_CONTAINER_OF(li, fz_client, link);

		if (c->session == session_id && !c->killed && !c->closing) {
			fakezk_expire(c->zk);
			return;
		}
	}
	session_end(s, session_id);
}

int
fakezk_exists(fakezk_server *s, const char *path)
{
	return node_find(s, path) != NULL;
}

int
fakezk_get(fakezk_server *s, const char *path, char *buf, size_t cap,
    eb__zk_stat *stat)
{
	fz_node *n = node_find(s, path);
	size_t   l;

	if (n == NULL) {
		return -1;
	}
	if (buf != NULL && cap > 0) {
		l = n->len < cap - 1 ? n->len : cap - 1;
		if (l > 0) {
			memcpy(buf, n->data, l);
		}
		buf[l] = '\0';
	}
	if (stat != NULL) {
		fill_stat(s, n, stat);
	}
	return 0;
}

size_t
fakezk_child_count(fakezk_server *s, const char *path)
{
	return (size_t) child_count(s, path);
}

unsigned
fakezk_watch_events(const eb__zk *zk)
{
	return ((const fz_client *) zk->impl)->watch_events;
}

unsigned
fakezk_requests(const eb__zk *zk)
{
	return ((const fz_client *) zk->impl)->requests;
}

int
fakezk_put(fakezk_server *s, const char *path, const char *data, int64_t owner)
{
	fz_txn t;
	int    rv;

	txn_begin(s, &t);
	rv = tree_create(s, &t, path, data, data != NULL ? strlen(data) : 0,
	    owner != 0 ? EB_ZK_EPHEMERAL : 0, owner, NULL);
	txn_end(s, &t, rv == 0);
	return rv;
}

int
fakezk_set(fakezk_server *s, const char *path, const char *data)
{
	fz_txn t;
	int    rv;

	txn_begin(s, &t);
	rv = tree_set(s, &t, path, data, data != NULL ? strlen(data) : 0, -1);
	txn_end(s, &t, rv == 0);
	return rv;
}

int
fakezk_del(fakezk_server *s, const char *path)
{
	fz_txn t;
	int    rv;

	txn_begin(s, &t);
	rv = tree_delete(s, &t, path, -1);
	txn_end(s, &t, rv == 0);
	return rv;
}

int
fakezk_deny_read(fakezk_server *s, const char *path, int on)
{
	fz_node *n = node_find(s, path);

	if (n == NULL) {
		return EB_EZKNONODE;
	}
	n->noread = on;
	return 0;
}
