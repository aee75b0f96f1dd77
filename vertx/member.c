/*
 * This node as a Vert.x cluster member in ZooKeeper; see member.h for the
 * layout and the contract. Invariants:
 *   - every completion and watch carries the member's live id (STYLE B4.5):
 *     a late one finds the member gone and returns;
 *   - `gen` counts sessions: a subscription created in an older session is
 *     created again in the new one; a completion of an older session is
 *     ignored;
 *   - a subscription removed while its parents are being ensured is never
 *     created; one removed after its create was sent is deleted after it
 *     (ZooKeeper applies one session's requests in order);
 *   - the member and address listings run one at a time each; a watch that
 *     fires during a listing makes one more listing (no event is lost).
 * Loop thread only; the structures here are owned by the member.
 */
#include "vertx/member.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <ebnode/err.h>
#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/vec.h"

#define NODES_DIR "cluster/nodes"
#define SUBS_DIR  "__vertx.subs"
#define HOST_MAX  256

typedef struct sub {
	char    *address; /* owned */
	uint64_t seq;
	uint64_t gen;  /* session generation it was sent in; 0: not yet */
	int      sent; /* the create went out in that session */
} sub;

typedef struct peer {
	char *id; /* owned */
	char  host[HOST_MAX];
	int   port;
	int   ready;   /* NodeInfo parsed */
	int   seen;    /* in the latest listing */
	int   ebnode;  /* its NodeInfo metadata marks an ebnode node */
	char *engine;  /* owned: the engine address it advertises, or NULL */
	char *cluster; /* owned: the ebnode cluster it names, or NULL */
} peer;

typedef struct addr {
	char   *address; /* owned */
	eb__vec ids;     /* char * (owned), one per registration */
	int     loaded;
	int     listing;
	int     again; /* a watch fired during the listing */
} addr;

struct eb__vx_member {
	eb__zk                *zk;  /* borrowed */
	uint64_t               id;  /* live id */
	eb__vx_member_cfg      cfg; /* its strings point at the copies below */
	char                  *root_name; /* owned copies of cfg's strings */
	char                  *node_id;
	char                  *host;
	char                  *metadata;   /* NULL: none */
	char                  *root;       /* "/io.vertx" (owned) */
	char                  *nodes_path; /* <root>/cluster/nodes */
	char                  *self_path;  /* <nodes_path>/<id> */
	char                  *subs_path;  /* <root>/__vertx.subs */
	uv_timer_t             timer; /* only for a close on a later turn */
	eb__vec                subs;  /* sub */
	eb__vec                peers; /* peer */
	eb__vec                addrs; /* addr */
	uint64_t               next_seq;
	uint64_t               gen;
	int                    registered;
	int                    registering;
	int                    listing_nodes;
	int                    relist_nodes;
	int                    watch_all; /* mirror every address (eager) */
	int                    listing_root;
	int                    relist_root;
	int                    started;
	int                    closing;
	eb__vx_member_close_cb close_cb;
	void                  *close_arg;
};

/* One in-flight request about a path (a subscription's or a peer's). */
typedef struct req {
	uint64_t id;  /* the member's live id */
	uint64_t gen; /* session generation when sent */
	uint64_t seq;
	char    *text; /* owned: an address or a node id */
} req;

static req *
req_new(eb__vx_member *m, const char *text, uint64_t seq)
{
	req *r = eb__calloc(1, sizeof(*r));

	r->id = m->id;
	r->gen = m->gen;
	r->seq = seq;
	r->text = eb__strdup(text);
	return r;
}

static void
req_free(req *r)
{
	free(r->text);
	free(r);
}

static char *
path_join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char  *p = eb__malloc(n);

	(void) snprintf(p, n, "%s/%s", a, b);
	return p;
}

/* ---- the binary forms ---- */

static void
put_be32(eb__buf *out, uint32_t v)
{
	unsigned char b[4] = { (unsigned char) (v >> 24),
		(unsigned char) (v >> 16), (unsigned char) (v >> 8),
		(unsigned char) v };

	eb__buf_append(out, b, 4);
}

void
eb__vx_nodeinfo_put(eb__buf *out, const char *host, int port)
{
	eb__vx_nodeinfo_put_meta(out, host, port, NULL);
}

void
eb__vx_nodeinfo_put_meta(
    eb__buf *out, const char *host, int port, const char *meta)
{
	put_be32(out, (uint32_t) strlen(host));
	eb__buf_append(out, host, strlen(host));
	put_be32(out, (uint32_t) port);
	if (meta == NULL) {
		put_be32(out, 0xffffffffu); /* no metadata */
		return;
	}
	put_be32(out, (uint32_t) strlen(meta));
	eb__buf_append(out, meta, strlen(meta));
}

static uint32_t get_be32(const unsigned char *p);

/* The ebnode marker of a parsed NodeInfo's metadata (the bytes after
 * host and port): {"ebnode":{"engine_address":A,"cluster":C}}, A and C
 * optional. 1 and *engine, *cluster (allocated, or NULL) when it is
 * there; else 0. */
static int
nodeinfo_ebnode(const char *p, size_t n, char **engine, char **cluster)
{
	const unsigned char *u = (const unsigned char *) p;
	uint32_t             hl = get_be32(u);
	json_t              *meta;
	json_t              *eb;
	const char          *a;
	const char          *c;
	int                  yes;

	*engine = NULL;
	*cluster = NULL;
	if (n <= 12u + hl) {
		return 0; /* no metadata */
	}
	meta = json_loadb(p + 12 + hl, n - 12 - hl, 0, NULL);
	eb = json_object_get(meta, "ebnode");
	yes = json_is_object(eb);
	a = json_string_value(json_object_get(eb, "engine_address"));
	c = json_string_value(json_object_get(eb, "cluster"));
	if (yes && a != NULL && a[0] != '\0') {
		*engine = eb__strdup(a);
	}
	if (yes && c != NULL && c[0] != '\0') {
		*cluster = eb__strdup(c);
	}
	json_decref(meta);
	return yes;
}

void
eb__vx_reginfo_put(eb__buf *out, const char *node_id, uint64_t seq)
{
	put_be32(out, (uint32_t) strlen(node_id));
	eb__buf_append(out, node_id, strlen(node_id));
	put_be32(out, (uint32_t) (seq >> 32));
	put_be32(out, (uint32_t) seq);
	eb__buf_append(out, "", 1); /* localOnly = 0 */
}

static uint32_t
get_be32(const unsigned char *p)
{
	return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 |
	       (uint32_t) p[2] << 8 | (uint32_t) p[3];
}

int
eb__vx_nodeinfo_parse(
    const char *p, size_t n, char *host, size_t cap, int *port)
{
	const unsigned char *u = (const unsigned char *) p;
	uint32_t             hl;
	uint32_t             pt;
	uint32_t             ml;

	if (n < 12) {
		return EB_EFRAME;
	}
	hl = get_be32(u);
	if (hl == 0 || hl >= cap || hl > n - 12) {
		return EB_EFRAME;
	}
	pt = get_be32(u + 4 + hl);
	ml = get_be32(u + 8 + hl);
	if (pt == 0 || pt > 65535 || (ml != 0xffffffffu && ml != n - 12 - hl) ||
	    (ml == 0xffffffffu && n != 12 + hl) ||
	    memchr(p + 4, '\0', hl) != NULL) {
		return EB_EFRAME;
	}
	memcpy(host, p + 4, hl);
	host[hl] = '\0';
	*port = (int) pt;
	return 0;
}

/* ---- lookups ---- */

static peer *
peer_find(const eb__vx_member *m, const char *id, size_t *at)
{
	for (size_t i = 0; i < m->peers.len; i++) {
		peer *p = eb__vec_at(&m->peers, i);

		if (strcmp(p->id, id) == 0) {
			if (at != NULL) {
				*at = i;
			}
			return p;
		}
	}
	return NULL;
}

static addr *
addr_find(const eb__vx_member *m, const char *address)
{
	for (size_t i = 0; i < m->addrs.len; i++) {
		addr *a = eb__vec_at(&m->addrs, i);

		if (strcmp(a->address, address) == 0) {
			return a;
		}
	}
	return NULL;
}

static void
ids_clear(eb__vec *ids)
{
	for (size_t i = 0; i < ids->len; i++) {
		free(*(char **) eb__vec_at(ids, i));
	}
	eb__vec_clear(ids);
}

/* ---- this node and its subscriptions ---- */

static void sub_send(eb__vx_member *m, const sub *s);
static void nodes_list(eb__vx_member *m);
static void addr_list(eb__vx_member *m, addr *a);

static eb__vx_member *
live(eb__zk *zk, uint64_t id)
{
	eb__vx_member *m = eb__zk_live_get(zk, id);

	return m != NULL && !m->closing ? m : NULL;
}

static void
sub_created_cb(eb__zk *zk, int status, const char *path, void *arg)
{
	char           q[128];
	req           *r = arg;
	eb__vx_member *m = live(zk, r->id);

	(void) path;
	if (m == NULL || r->gen != m->gen || status == 0 ||
	    status == EB_EZKNODEEXISTS || eb__zk_status_transient(status)) {
		req_free(r); /* done, or a new session sends it again */
		return;
	}
	if (status != EB_EZKNONODE) {
		EB_LOG_RL_WARN("vertx", "sub-create-failed: address=%s err=%s",
		    eb_log_quote(q, sizeof(q), r->text), eb_err_name(status));
		req_free(r);
		return;
	}
	/* NONODE: the parent was reaped between ensure and create */
	for (size_t i = 0; i < m->subs.len; i++) {
		sub *s = eb__vec_at(&m->subs, i);

		if (s->seq == r->seq) {
			sub_send(m, s);
		}
	}
	req_free(r);
}

static void
sub_parent_cb(eb__zk *zk, int status, void *arg)
{
	req           *r = arg;
	eb__vx_member *m = live(zk, r->id);
	eb__buf        data;
	char           name[64];
	char          *dir;
	char          *path;
	size_t         len;
	int            rv;

	if (m == NULL || r->gen != m->gen || status != 0) {
		req_free(r); /* a new session sends it again */
		return;
	}
	for (size_t i = 0; i < m->subs.len; i++) {
		sub *s = eb__vec_at(&m->subs, i);

		if (s->seq != r->seq) {
			continue;
		}
		eb__buf_init(&data);
		eb__vx_reginfo_put(&data, m->cfg.node_id, s->seq);
		(void) snprintf(
		    name, sizeof(name), "-%llu", (unsigned long long) s->seq);
		dir = path_join(m->subs_path, s->address);
		len = strlen(dir) + strlen(m->cfg.node_id) + strlen(name) + 2;
		path = eb__malloc(len);
		(void) snprintf(
		    path, len, "%s/%s%s", dir, m->cfg.node_id, name);
		s->sent = 1;
		rv = eb__zk_create(zk, path, eb__buf_head(&data),
		    eb__buf_avail(&data), EB_ZK_EPHEMERAL, sub_created_cb, r);
		free(dir);
		free(path);
		eb__buf_free(&data);
		if (rv != 0) {
			s->sent = 0;
			break;
		}
		return; /* r goes on to sub_created_cb */
	}
	req_free(r); /* removed meanwhile: never created */
}

static void
sub_send(eb__vx_member *m, const sub *s)
{
	char *dir;
	req  *r;

	if (!m->registered) {
		return; /* register_all sends it */
	}
	dir = path_join(m->subs_path, s->address);
	r = req_new(m, s->address, s->seq);
	if (eb__zk_ensure_path(m->zk, dir, sub_parent_cb, r) != 0) {
		req_free(r);
	}
	free(dir);
}

static void
self_created_cb(eb__zk *zk, int status, const char *path, void *arg)
{
	req           *r = arg;
	eb__vx_member *m = live(zk, r->id);

	(void) path;
	if (m == NULL || r->gen != m->gen) {
		req_free(r);
		return;
	}
	m->registering = 0;
	if (status == 0) {
		m->registered = 1;
		/* a listing before the parents existed armed no watch */
		nodes_list(m);
		EB_LOG_INFO("vertx", "member-registered: node_id=%s path=%s",
		    m->cfg.node_id, m->self_path);
		for (size_t i = 0; i < m->subs.len; i++) {
			sub *s = eb__vec_at(&m->subs, i);

			s->gen = m->gen;
			s->sent = 0;
			sub_send(m, s);
		}
	} else if (!eb__zk_status_transient(status)) {
		/* EXISTS: an earlier process with this node id whose session
		 * has not expired yet; anything else is unexpected. The next
		 * session event tries again. */
		EB_LOG_RL_WARN("vertx",
		    "member-register-failed: path=%s err=%s", m->self_path,
		    eb_err_name(status));
	}
	req_free(r);
}

static void
self_parent_cb(eb__zk *zk, int status, void *arg)
{
	req           *r = arg;
	eb__vx_member *m = live(zk, r->id);
	eb__buf        data;

	if (m == NULL || r->gen != m->gen || status != 0) {
		if (m != NULL && r->gen == m->gen) {
			m->registering = 0;
		}
		req_free(r);
		return;
	}
	eb__buf_init(&data);
	eb__vx_nodeinfo_put_meta(
	    &data, m->cfg.host, m->cfg.port, m->cfg.metadata);
	if (eb__zk_create(zk, m->self_path, eb__buf_head(&data),
	        eb__buf_avail(&data), EB_ZK_EPHEMERAL, self_created_cb,
	        r) != 0) {
		m->registering = 0;
		req_free(r);
	}
	eb__buf_free(&data);
}

static void
register_all(eb__vx_member *m)
{
	req *r;

	if (m->registered || m->registering || !m->started || m->closing ||
	    eb__zk_get_state(m->zk) != EB_ZK_STATE_CONNECTED) {
		return;
	}
	m->registering = 1;
	r = req_new(m, m->cfg.node_id, 0);
	if (eb__zk_ensure_path(m->zk, m->nodes_path, self_parent_cb, r) != 0) {
		m->registering = 0;
		req_free(r);
	}
}

/* ---- the members cache ---- */

static void peer_get(eb__vx_member *m, const char *id);

static void
peer_watch_cb(eb__zk *zk, eb__zk_watch_type type, const char *path, void *arg)
{
	eb__vx_member *m = live(zk, eb__zk_live_id(arg));
	const char    *slash = strrchr(path, '/');

	if (m != NULL && type == EB_ZK_WATCH_CHANGED && slash != NULL &&
	    peer_find(m, slash + 1, NULL) != NULL) {
		peer_get(m, slash + 1);
	}
}

static void
peer_data_cb(eb__zk *zk, int status, const char *data, size_t len,
    const eb__zk_stat *stat, void *arg)
{
	char           q[128];
	req           *r = arg;
	eb__vx_member *m = live(zk, r->id);
	peer          *p;

	(void) stat;
	p = m != NULL ? peer_find(m, r->text, NULL) : NULL;
	if (p != NULL && status == 0) {
		p->ready = eb__vx_nodeinfo_parse(data, len, p->host,
		               sizeof(p->host), &p->port) == 0;
		free(p->engine);
		free(p->cluster);
		p->engine = NULL;
		p->cluster = NULL;
		p->ebnode = p->ready &&
		            nodeinfo_ebnode(data, len, &p->engine, &p->cluster);
		EB_LOG_INFO("vertx",
		    "member-seen: node_id=%s ready=%d host=%s port=%d "
		    "ebnode=%d",
		    eb_log_quote(q, sizeof(q), p->id), p->ready,
		    p->ready ? p->host : "-", p->ready ? p->port : 0,
		    p->ebnode);
		if (p->ready && m->cfg.on_seen != NULL) {
			m->cfg.on_seen(p->id, m->cfg.arg);
		}
	}
	req_free(r);
}

static void
peer_get(eb__vx_member *m, const char *id)
{
	char *path = path_join(m->nodes_path, id);
	req  *r = req_new(m, id, 0);

	/* The data watch brings a JVM's NodeInfo after its transient
	 * nodeId-as-data value. */
	if (eb__zk_get(m->zk, path, peer_watch_cb, eb__zk_live_arg(m->id),
	        peer_data_cb, r) != 0) {
		req_free(r);
	}
	free(path);
}

static void
peer_drop(eb__vx_member *m, size_t i)
{
	char  q[128];
	peer *p = eb__vec_at(&m->peers, i);
	char *id = p->id;

	free(p->engine);
	free(p->cluster);
	eb__vec_swap_remove(&m->peers, i);
	EB_LOG_INFO(
	    "vertx", "member-gone: node_id=%s", eb_log_quote(q, sizeof(q), id));
	if (m->cfg.on_gone != NULL) {
		m->cfg.on_gone(id, m->cfg.arg);
	}
	free(id);
}

static void
nodes_watch_cb(eb__zk *zk, eb__zk_watch_type type, const char *path, void *arg)
{
	eb__vx_member *m = live(zk, eb__zk_live_id(arg));

	(void) type;
	(void) path;
	if (m != NULL) {
		nodes_list(m);
	}
}

static void
nodes_children_cb(
    eb__zk *zk, int status, const char *const *names, size_t count, void *arg)
{
	eb__vx_member *m = live(zk, eb__zk_live_id(arg));

	if (m == NULL) {
		return;
	}
	m->listing_nodes = 0;
	if (status == 0) {
		for (size_t i = 0; i < m->peers.len; i++) {
			((peer *) eb__vec_at(&m->peers, i))->seen = 0;
		}
		for (size_t k = 0; k < count; k++) {
			peer *p = peer_find(m, names[k], NULL);

			if (p == NULL && strchr(names[k], '/') == NULL) {
				p = eb__vec_push(&m->peers);
				p->id = eb__strdup(names[k]);
				peer_get(m, names[k]);
			}
			if (p != NULL) {
				p->seen = 1;
			}
		}
		for (size_t i = m->peers.len; i-- > 0;) {
			if (!((peer *) eb__vec_at(&m->peers, i))->seen) {
				peer_drop(m, i);
			}
		}
	}
	if (m->relist_nodes) {
		m->relist_nodes = 0;
		nodes_list(m);
	}
}

static void
nodes_list(eb__vx_member *m)
{
	if (m->listing_nodes) {
		m->relist_nodes = 1;
		return;
	}
	if (eb__zk_get_children(m->zk, m->nodes_path, nodes_watch_cb,
	        eb__zk_live_arg(m->id), nodes_children_cb,
	        eb__zk_live_arg(m->id)) == 0) {
		m->listing_nodes = 1;
	}
}

/* ---- the registrations cache ---- */

static void
addr_watch_cb(eb__zk *zk, eb__zk_watch_type type, const char *path, void *arg)
{
	eb__vx_member *m = live(zk, eb__zk_live_id(arg));
	const char    *slash = strrchr(path, '/');
	addr          *a;

	(void) type;
	if (m == NULL || slash == NULL) {
		return;
	}
	a = addr_find(m, slash + 1);
	if (a != NULL) {
		addr_list(m, a);
	}
}

/* "<nodeId>-<seq>" -> nodeId; NULL for another shape. */
static char *
reg_node(const char *name)
{
	const char *dash = strrchr(name, '-');

	if (dash == NULL || dash == name || dash[1] == '\0' ||
	    strspn(dash + 1, "0123456789") != strlen(dash + 1)) {
		return NULL;
	}
	return eb__strndup(name, (size_t) (dash - name));
}

static void
addr_done(eb__vx_member *m, const char *address)
{
	addr *a = addr_find(m, address);

	if (a == NULL) {
		return;
	}
	a->listing = 0;
	a->loaded = 1;
	if (a->again) {
		a->again = 0;
		addr_list(m, a);
	}
	if (m->cfg.on_ready != NULL) {
		m->cfg.on_ready(address, m->cfg.arg);
	}
}

static void
addr_exists_cb(eb__zk *zk, int status, const eb__zk_stat *stat, void *arg)
{
	req           *r = arg;
	eb__vx_member *m = live(zk, r->id);
	addr          *a;

	(void) stat;
	if (m != NULL && (a = addr_find(m, r->text)) != NULL) {
		if (status == 0) {
			/* created between the listing and this check */
			a->listing = 0;
			addr_list(m, a);
		} else {
			addr_done(m, r->text);
		}
	}
	req_free(r);
}

static void
addr_children_cb(
    eb__zk *zk, int status, const char *const *names, size_t count, void *arg)
{
	req           *r = arg;
	eb__vx_member *m = live(zk, r->id);
	addr          *a = m != NULL ? addr_find(m, r->text) : NULL;
	char          *path;
	req           *q;

	if (a == NULL) {
		req_free(r);
		return;
	}
	ids_clear(&a->ids);
	if (status == EB_EZKNONODE) {
		/* nobody yet: watch for the address's creation */
		path = path_join(m->subs_path, a->address);
		q = req_new(m, a->address, 0);
		if (eb__zk_exists(zk, path, addr_watch_cb,
		        eb__zk_live_arg(m->id), addr_exists_cb, q) != 0) {
			req_free(q);
			addr_done(m, a->address);
		}
		free(path);
		req_free(r);
		return;
	}
	for (size_t k = 0; status == 0 && k < count; k++) {
		char *node = reg_node(names[k]);

		if (node != NULL) {
			*(char **) eb__vec_push(&a->ids) = node;
		}
	}
	addr_done(m, a->address);
	req_free(r);
}

static void
addr_list(eb__vx_member *m, addr *a)
{
	char *path;
	req  *r;

	if (a->listing) {
		a->again = 1;
		return;
	}
	path = path_join(m->subs_path, a->address);
	r = req_new(m, a->address, 0);
	if (eb__zk_get_children(m->zk, path, addr_watch_cb,
	        eb__zk_live_arg(m->id), addr_children_cb, r) == 0) {
		a->listing = 1;
	} else {
		req_free(r);
	}
	free(path);
}

/* ---- every address (eb__vx_member_watch_all) ---- */

static void root_list(eb__vx_member *m);

static void
root_watch_cb(eb__zk *zk, eb__zk_watch_type type, const char *path, void *arg)
{
	eb__vx_member *m = live(zk, eb__zk_live_id(arg));

	(void) type;
	(void) path;
	if (m != NULL) {
		root_list(m);
	}
}

static void
root_exists_cb(eb__zk *zk, int status, const eb__zk_stat *stat, void *arg)
{
	eb__vx_member *m = live(zk, eb__zk_live_id(arg));

	(void) stat;
	if (m != NULL && status == 0) {
		root_list(m); /* created between the listing and this check */
	}
}

/* Addresses no longer listed read as empty from now on. */
static void
root_prune(eb__vx_member *m, const char *const *names, size_t count)
{
	for (size_t i = 0; i < m->addrs.len; i++) {
		addr  *a = eb__vec_at(&m->addrs, i);
		size_t k = 0;

		while (k < count && strcmp(names[k], a->address) != 0) {
			k++;
		}
		if (k == count && a->loaded && a->ids.len > 0) {
			ids_clear(&a->ids);
			if (m->cfg.on_ready != NULL) {
				m->cfg.on_ready(a->address, m->cfg.arg);
			}
		}
	}
}

static void
root_children_cb(
    eb__zk *zk, int status, const char *const *names, size_t count, void *arg)
{
	eb__vx_member *m = live(zk, eb__zk_live_id(arg));

	if (m == NULL) {
		return;
	}
	m->listing_root = 0;
	if (status == EB_EZKNONODE) {
		(void) eb__zk_exists(zk, m->subs_path, root_watch_cb,
		    eb__zk_live_arg(m->id), root_exists_cb,
		    eb__zk_live_arg(m->id));
		root_prune(m, NULL, 0);
	} else if (status == 0) {
		for (size_t k = 0; k < count; k++) {
			if (addr_find(m, names[k]) == NULL) {
				addr *a = eb__vec_push(&m->addrs);

				a->address = eb__strdup(names[k]);
				eb__vec_init(&a->ids, sizeof(char *));
				addr_list(m, a);
			}
		}
		root_prune(m, names, count);
	}
	if (m->relist_root) {
		m->relist_root = 0;
		root_list(m);
	}
}

static void
root_list(eb__vx_member *m)
{
	if (!m->watch_all) {
		return;
	}
	if (m->listing_root) {
		m->relist_root = 1;
		return;
	}
	if (eb__zk_get_children(m->zk, m->subs_path, root_watch_cb,
	        eb__zk_live_arg(m->id), root_children_cb,
	        eb__zk_live_arg(m->id)) == 0) {
		m->listing_root = 1;
	}
}

/* ---- the API ---- */

/* What vertx-zookeeper can hold as one znode name under __vertx.subs. */
static int
address_ok(const char *a)
{
	if (a[0] == '\0' || strcmp(a, ".") == 0 || strcmp(a, "..") == 0 ||
	    strchr(a, '/') != NULL || strlen(a) > 1024) {
		return 0;
	}
	for (const unsigned char *p = (const unsigned char *) a; *p != 0; p++) {
		if (*p < 0x20 || *p == 0x7f) {
			return 0;
		}
	}
	return 1;
}

int
eb__vx_member_new(uv_loop_t *loop, eb__zk *zk, const eb__vx_member_cfg *cfg,
    eb__vx_member **mp)
{
	eb__vx_member *m;

	if (loop == NULL || zk == NULL || cfg == NULL || cfg->root == NULL ||
	    cfg->node_id == NULL || cfg->host == NULL || cfg->root[0] == '/' ||
	    cfg->node_id[0] == '\0' || strchr(cfg->node_id, '/') != NULL ||
	    cfg->port <= 0 || cfg->port > 65535) {
		return UV_EINVAL;
	}
	m = eb__calloc(1, sizeof(*m));
	if (uv_timer_init(loop, &m->timer) != 0) {
		free(m);
		return UV_EINVAL;
	}
	m->timer.data = m;
	m->zk = zk;
	m->cfg = *cfg;
	m->root_name = eb__strdup(cfg->root);
	m->node_id = eb__strdup(cfg->node_id);
	m->host = eb__strdup(cfg->host);
	m->metadata = cfg->metadata != NULL ? eb__strdup(cfg->metadata) : NULL;
	m->cfg.metadata = m->metadata;
	m->cfg.root = m->root_name;
	m->cfg.node_id = m->node_id;
	m->cfg.host = m->host;
	m->root = path_join("", cfg->root);
	m->nodes_path = path_join(m->root, NODES_DIR);
	m->self_path = path_join(m->nodes_path, cfg->node_id);
	m->subs_path = path_join(m->root, SUBS_DIR);
	eb__vec_init(&m->subs, sizeof(sub));
	eb__vec_init(&m->peers, sizeof(peer));
	eb__vec_init(&m->addrs, sizeof(addr));
	m->gen = 1;
	*mp = m;
	return 0;
}

int
eb__vx_member_start(eb__vx_member *m)
{
	EB_ASSERT(!m->closing); /* start after close */
	if (m->started) {
		return EB_EZKINVALIDSTATE;
	}
	m->started = 1;
	m->id = eb__zk_live_add(m->zk, m);
	if (eb__zk_get_state(m->zk) == EB_ZK_STATE_CONNECTED) {
		register_all(m);
		nodes_list(m);
		root_list(m);
	}
	return 0;
}

void
eb__vx_member_session_event(eb__vx_member *m, eb__zk_event ev)
{
	if (!m->started || m->closing) {
		return;
	}
	switch (ev) {
	case EB_ZK_EV_EXPIRED:
		/* The ephemerals are gone and the watches with them. */
		m->gen++;
		m->registered = 0;
		m->registering = 0;
		m->listing_nodes = 0;
		m->listing_root = 0;
		for (size_t i = 0; i < m->addrs.len; i++) {
			((addr *) eb__vec_at(&m->addrs, i))->listing = 0;
		}
		break;
	case EB_ZK_EV_CONNECTED:
		m->listing_nodes = 0;
		m->listing_root = 0;
		register_all(m);
		nodes_list(m);
		root_list(m);
		for (size_t i = 0; i < m->addrs.len; i++) {
			addr *a = eb__vec_at(&m->addrs, i);

			a->listing = 0;
			addr_list(m, a);
		}
		break;
	case EB_ZK_EV_RECONNECTED:
		register_all(m); /* when a request was lost meanwhile */
		nodes_list(m);   /* events may have been missed */
		root_list(m);
		break;
	default:
		break;
	}
}

void
eb__vx_member_watch_all(eb__vx_member *m)
{
	if (m->watch_all) {
		return;
	}
	m->watch_all = 1;
	if (m->started && eb__zk_get_state(m->zk) == EB_ZK_STATE_CONNECTED) {
		root_list(m);
	}
}

void
eb__vx_member_each_addr(
    eb__vx_member *m, void (*fn)(const char *address, void *arg), void *arg)
{
	for (size_t i = 0; i < m->addrs.len; i++) {
		fn(((addr *) eb__vec_at(&m->addrs, i))->address, arg);
	}
}

int
eb__vx_member_registered(const eb__vx_member *m)
{
	return m->registered;
}

int
eb__vx_member_sub_add(eb__vx_member *m, const char *address, uint64_t *seq)
{
	sub *s;

	EB_ASSERT(!m->closing);
	if (!address_ok(address)) {
		return UV_EINVAL;
	}
	s = eb__vec_push(&m->subs);
	s->address = eb__strdup(address);
	s->seq = m->next_seq++;
	s->gen = m->gen;
	*seq = s->seq;
	if (m->registered) {
		sub_send(m, s);
	}
	return 0;
}

/* A withdrawal that did not happen leaves the znode to the session. */
static void
sub_deleted_cb(eb__zk *zk, int status, void *arg)
{
	(void) zk;
	(void) arg;
	if (status != 0 && status != EB_EZKNONODE &&
	    !eb__zk_status_transient(status)) {
		EB_LOG_RL_WARN(
		    "vertx", "sub-delete-failed: err=%s", eb_err_name(status));
	}
}

int
eb__vx_member_sub_del(eb__vx_member *m, const char *address, uint64_t seq)
{
	char name[64];
	char path[1400];

	for (size_t i = 0; i < m->subs.len; i++) {
		sub *s = eb__vec_at(&m->subs, i);

		if (s->seq != seq || strcmp(s->address, address) != 0) {
			continue;
		}
		if (s->sent && s->gen == m->gen && m->registered) {
			(void) snprintf(name, sizeof(name), "-%llu",
			    (unsigned long long) seq);
			(void) snprintf(path, sizeof(path), "%s/%s/%s%s",
			    m->subs_path, address, m->cfg.node_id, name);
			(void) eb__zk_delete(
			    m->zk, path, -1, sub_deleted_cb, NULL);
		}
		free(s->address);
		eb__vec_remove(&m->subs, i);
		return 0;
	}
	return UV_ENOENT;
}

size_t
eb__vx_member_sub_count(const eb__vx_member *m)
{
	return m->subs.len;
}

int
eb__vx_member_subs(
    eb__vx_member *m, const char *address, const char *const **ids, size_t *n)
{
	addr *a = addr_find(m, address);

	if (a == NULL) {
		if (!address_ok(address)) {
			*ids = NULL;
			*n = 0;
			return 0; /* nobody can have registered it */
		}
		a = eb__vec_push(&m->addrs);
		a->address = eb__strdup(address);
		eb__vec_init(&a->ids, sizeof(char *));
		addr_list(m, a);
		return UV_EAGAIN;
	}
	if (!a->loaded) {
		return UV_EAGAIN;
	}
	*ids = (const char *const *) a->ids.data;
	*n = a->ids.len;
	return 0;
}

int
eb__vx_member_peer(
    const eb__vx_member *m, const char *node_id, const char **host, int *port)
{
	const peer *p = peer_find(m, node_id, NULL);

	if (p == NULL) {
		return EB_ENOROUTE;
	}
	if (!p->ready) {
		return UV_EAGAIN;
	}
	*host = p->host;
	*port = p->port;
	return 0;
}

size_t
eb__vx_member_peer_count(const eb__vx_member *m)
{
	return m->peers.len;
}

int
eb__vx_member_peer_kind(const eb__vx_member *m, const char *node_id)
{
	const peer *p = peer_find(m, node_id, NULL);

	if (p == NULL || !p->ready) {
		return EB_VX_PEER_UNKNOWN;
	}
	return p->ebnode ? EB_VX_PEER_EBNODE : EB_VX_PEER_JVM;
}

int
eb__vx_member_peer_in_cluster(
    const eb__vx_member *m, const char *node_id, const char *cluster)
{
	const peer *p = peer_find(m, node_id, NULL);

	return cluster != NULL && p != NULL && p->ready && p->ebnode &&
	       p->cluster != NULL && strcmp(p->cluster, cluster) == 0;
}

int
eb__vx_member_engine_is_ebnode(const eb__vx_member *m, const char *engine)
{
	for (size_t i = 0; i < m->peers.len; i++) {
		const peer *p = eb__vec_at(&m->peers, i);

		if (p->ready && p->ebnode && p->engine != NULL &&
		    strcmp(p->engine, engine) == 0) {
			return 1;
		}
	}
	return 0;
}

static void
member_free(eb__vx_member *m)
{
	for (size_t i = 0; i < m->subs.len; i++) {
		free(((sub *) eb__vec_at(&m->subs, i))->address);
	}
	for (size_t i = 0; i < m->peers.len; i++) {
		free(((peer *) eb__vec_at(&m->peers, i))->id);
		free(((peer *) eb__vec_at(&m->peers, i))->engine);
		free(((peer *) eb__vec_at(&m->peers, i))->cluster);
	}
	for (size_t i = 0; i < m->addrs.len; i++) {
		addr *a = eb__vec_at(&m->addrs, i);

		ids_clear(&a->ids);
		eb__vec_free(&a->ids);
		free(a->address);
	}
	eb__vec_free(&m->subs);
	eb__vec_free(&m->peers);
	eb__vec_free(&m->addrs);
	free(m->root_name);
	free(m->node_id);
	free(m->host);
	free(m->metadata);
	free(m->root);
	free(m->nodes_path);
	free(m->self_path);
	free(m->subs_path);
	free(m);
}

static void
member_closed_cb(uv_handle_t *h)
{
	eb__vx_member *m = h->data;

	if (m->close_cb != NULL) {
		m->close_cb(m, m->close_arg);
	}
	member_free(m);
}

void
eb__vx_member_close(eb__vx_member *m, eb__vx_member_close_cb cb, void *arg)
{
	EB_ASSERT(!m->closing); /* close is exactly once */
	m->closing = 1;
	m->close_cb = cb;
	m->close_arg = arg;
	if (m->started) {
		eb__zk_live_del(m->zk, m->id);
	}
	uv_close((uv_handle_t *) &m->timer, member_closed_cb);
}
