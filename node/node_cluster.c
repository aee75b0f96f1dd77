/*
 * Wiring of the ZooKeeper session, membership (registry), the member child
 * cache and the election into the node (contract in node_int.h).
 *
 * Start: standalone (zookeeper.connect empty) elects itself with epoch 1
 * and completes at once. Clustered: create the session, registry, cache and
 * election, start them, and complete the start step when the registry
 * reports REGISTERED (so a duplicate address fails before READY, exit 3),
 * or FAILED (everything is closed first: a failed start holds nothing).
 * The wait is bounded (2 x session timeout + 15 s).
 *
 * Stop (rule 8): the election stops first (a leader is revoked and the
 * leadership listeners release ingress synchronously), then the member and
 * the claim are deleted in one multi (the successor's predecessor watch
 * fires at once), then everything is closed. The leave is bounded (3 s).
 *
 * A FAILED registry at run time (the address was taken while the session
 * was re-created, rule 7) fails the node loudly with EB_EDUPADDR (exit 3).
 *
 * Who leads, as /leader, /nodes and the metrics tell it: the member that
 * actually won, i.e. the lowest valid eligible member of the cache
 * (eb__childcache_leader) when the leader record <root>/leader -- written
 * by the winner with a multi that checks its member, so only after it won
 * -- carries that member's epoch and node id. While the two disagree (a
 * hand-over in progress, a member overwritten by someone else) no leader
 * is reported rather than a wrong one. The record is read with a watch
 * (re-read on every change and every (re)connect).
 *
 * A session whose negotiated timeout leaves no safe leader lease
 * (docs/CLUSTER.md "The lease") fails the start, or the running node, with
 * EB_ECONF (exit 1) after the election's "lease-unsafe" ERROR line.
 * Loop thread only.
 */
#include "node/node_cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <ebnode/election.h>
#include <ebnode/log.h>
#include <ebnode/version.h>

#include "cluster/childcache.h"
#include "cluster/registry.h"
#include "cluster/zk.h"
#include "common/alloc.h"
#include "common/util.h"
#include "election/election_int.h"
#include "node/node_int.h"

#define NC_MAX_LISTENERS    8
#define NC_LEAVE_TIMEOUT_MS 3000u
#define NC_START_MARGIN_MS  15000u

struct eb__node_cluster {
	eb_node         *n;     /* borrowed (owns us) */
	eb_zk           *zk;    /* owned */
	eb_registry     *reg;   /* owned */
	eb_childcache   *cc;    /* owned */
	eb_election     *el;    /* owned */
	uv_timer_t       timer; /* start bound, leave bound */
	int              timer_init;
	int              running;
	int              stopping;
	int              open; /* objects whose close is pending */
	int              leader;
	int64_t          epoch;
	eb__node_done_cb start_cb;
	eb__node_done_cb done_cb; /* after close_all */
	int              done_status;
	struct {
		eb__node_leader_cb cb;
		void              *arg;
	} listeners[NC_MAX_LISTENERS];
	size_t nlisteners;
	/* Observations for the metrics (eb__node_cluster_stats_get). */
	uint64_t leads;           /* times this node was elected */
	uint64_t leader_changes;  /* times the known leader changed */
	uint64_t zk_events[6];    /* by eb_zk_event (1..5) */
	char     last_leader[64]; /* member name (or node id) last seen */
	/* The leader record <root>/leader as last read. */
	uint64_t live; /* live id for the record's watch and reads */
	int64_t  rec_epoch;
	char    *rec_node; /* owned, NULL: no record */
	char    *rec_path; /* owned */
};

typedef struct eb__node_cluster node_cluster;

static void rec_read(node_cluster *nc);

static node_cluster *
nc_get(eb_node *n)
{
	if (n->cluster == NULL) {
		n->cluster = eb__calloc(1, sizeof(node_cluster));
		n->cluster->n = n;
		n->cluster->live = eb__live_add(n->cluster);
	}
	return n->cluster;
}

static int
standalone(const eb_node *n)
{
	return n->conf->cluster.connect == NULL ||
	       n->conf->cluster.connect[0] == '\0';
}

/* ---- leadership ---- */

static void
notify(node_cluster *nc)
{
	size_t i;

	for (i = 0; i < nc->nlisteners; i++) {
		nc->listeners[i].cb(
		    nc->n, nc->leader != 0, nc->epoch, nc->listeners[i].arg);
	}
}

static void observe_leader(node_cluster *nc);

static void
elected_cb(eb_election *e, int64_t epoch, void *arg)
{
	node_cluster *nc = arg;

	(void) e;
	nc->leader = 1;
	nc->epoch = epoch;
	nc->leads++;
	if (epoch > 0 && nc->n->bus != NULL) {
		eb_bus_fence_raise(nc->n->bus, (uint64_t) epoch); /* rule 6 */
	}
	if (standalone(nc->n)) {
		nc->leader_changes++; /* no cache: our own election is all */
	} else {
		observe_leader(nc); /* we are the leader the cache shows */
	}
	notify(nc);
}

static void
revoked_cb(eb_election *e, const char *reason, void *arg)
{
	node_cluster *nc = arg;

	(void) e;
	(void) reason;
	nc->leader = 0;
	notify(nc);
}

int
eb__node_cluster_on_leader(eb_node *n, eb__node_leader_cb cb, void *arg)
{
	node_cluster *nc = nc_get(n);

	if (nc->nlisteners == NC_MAX_LISTENERS) {
		return UV_ENOBUFS;
	}
	nc->listeners[nc->nlisteners].cb = cb;
	nc->listeners[nc->nlisteners].arg = arg;
	nc->nlisteners++;
	return 0;
}

bool
eb__node_cluster_is_leader(eb_node *n)
{
	node_cluster *nc = n->cluster;

	return nc != NULL && nc->el != NULL && nc->running &&
	       eb_election_is_leader(nc->el);
}

int64_t
eb__node_cluster_epoch(eb_node *n)
{
	return n->cluster != NULL ? n->cluster->epoch : 0;
}

int
eb__node_cluster_release(eb_node *n)
{
	node_cluster *nc = n->cluster;

	if (nc == NULL || nc->el == NULL || !nc->running || nc->stopping) {
		return EB_ECLOSED;
	}
	EB_LOG_NOTICE("node", "leader-release: requested");
	return eb_election_step_down(nc->el);
}

/* ---- closing everything (failed start, stop) ---- */

static void
nc_free(node_cluster *nc)
{
	eb__live_del(nc->live);
	free(nc->rec_node);
	free(nc->rec_path);
	free(nc);
}

static void
closed_one(node_cluster *nc)
{
	eb__node_done_cb cb;
	eb_node         *n = nc->n;
	int              status;

	if (--nc->open > 0) {
		return;
	}
	cb = nc->done_cb;
	status = nc->done_status;
	/* A node is started once: nothing of the cluster wiring outlives
	 * its stop (or failed start). */
	n->cluster = NULL;
	nc_free(nc);
	if (cb != NULL) {
		cb(n, status);
	}
}

static void
el_closed_cb(eb_election *e, void *arg)
{
	(void) e;
	closed_one(arg);
}

static void
reg_closed_cb(eb_registry *r, void *arg)
{
	(void) r;
	closed_one(arg);
}

static void
cc_closed_cb(eb_childcache *c, void *arg)
{
	(void) c;
	closed_one(arg);
}

static void
zk_closed_cb(eb_zk *zk, void *arg)
{
	(void) zk;
	closed_one(arg);
}

static void
timer_closed_cb(uv_handle_t *h)
{
	closed_one(h->data);
}

/* Closes every object; cb(n, status) once all have closed (later turn). */
static void
close_all(node_cluster *nc, eb__node_done_cb cb, int status)
{
	nc->done_cb = cb;
	nc->done_status = status;
	nc->open = 1; /* guard: released at the end of this function */
	if (nc->el != NULL) {
		eb_election_stop(nc->el);
		nc->open++;
		eb_election_close(nc->el, el_closed_cb, nc);
	}
	if (nc->cc != NULL) {
		nc->open++;
		eb__childcache_close(nc->cc, cc_closed_cb, nc);
	}
	if (nc->reg != NULL) {
		nc->open++;
		eb__registry_close(nc->reg, reg_closed_cb, nc);
	}
	if (nc->zk != NULL) {
		nc->open++;
		eb_zk_close(nc->zk, zk_closed_cb, nc);
	}
	if (nc->timer_init) {
		nc->timer_init = 0;
		nc->open++;
		uv_close((uv_handle_t *) &nc->timer, timer_closed_cb);
	}
	/* The close callbacks all run on later turns; drop the guard now
	 * through the same path so that cb never runs from in here. */
	if (nc->open == 1) {
		eb_node *n = nc->n;

		n->cluster = NULL;
		nc_free(nc);
		eb__node_complete(n, cb, status);
		return;
	}
	nc->open--;
}

/* ---- ZooKeeper session and registry events ---- */

static void start_finish(node_cluster *nc, int status);

static void
zk_event_cb(eb_zk *zk, eb_zk_event ev, void *arg)
{
	node_cluster *nc = arg;

	(void) zk;
	if ((size_t) ev < sizeof(nc->zk_events) / sizeof(nc->zk_events[0])) {
		nc->zk_events[ev]++;
	}
	if (nc->reg == NULL) {
		return;
	}
	/* The election first: a suspended leader stops at once (rule 5). */
	eb__election_session_event(nc->el, ev);
	eb__registry_session_event(nc->reg, ev);
	eb__childcache_session_event(nc->cc, ev);
	if (ev == EB_ZK_EV_CONNECTED || ev == EB_ZK_EV_RECONNECTED) {
		rec_read(nc);
	}
	if (ev == EB_ZK_EV_AUTH_FAILED && nc->running) {
		eb__node_fail(nc->n, EB_EZKAUTH);
	}
	if ((ev == EB_ZK_EV_CONNECTED || ev == EB_ZK_EV_RECONNECTED) &&
	    eb__election_lease_error(nc->el) != 0) {
		/* The negotiated session timeout leaves no safe leader lease
		 * (the election logged "lease-unsafe" with the values): stop
		 * rather than sit in the member order unable to lead. */
		if (nc->start_cb != NULL) {
			start_finish(nc, EB_ECONF);
		} else if (nc->running && !nc->stopping) {
			eb__node_fail(nc->n, EB_ECONF);
		}
	}
}

static void
start_finish(node_cluster *nc, int status)
{
	eb__node_done_cb cb = nc->start_cb;

	nc->start_cb = NULL;
	(void) uv_timer_stop(&nc->timer);
	if (status == 0) {
		nc->running = 1;
		cb(nc->n, 0);
		return;
	}
	close_all(nc, cb, status);
}

/* A registry event while the start is pending: registered finishes it,
 * failed fails it. */
static void
reg_starting(node_cluster *nc, eb_registry_event ev, int status)
{
	if (ev == EB_REGISTRY_REGISTERED) {
		start_finish(nc, 0);
		return;
	}
	if (ev != EB_REGISTRY_FAILED) {
		return;
	}
	if (status == EB_EDUPADDR) {
		/* The holder's parts read from ZooKeeper are quoted. */
		EB_LOG_ERR("node",
		    "duplicate-address: address=%s is already registered by %s",
		    nc->n->conf->cluster.address, eb__registry_holder(nc->reg));
	}
	start_finish(nc, status);
}

static void
reg_cb(eb_registry *r, eb_registry_event ev, int status, void *arg)
{
	node_cluster *nc = arg;

	(void) r;
	eb__election_registry_event(nc->el, ev);
	if (nc->start_cb != NULL) {
		reg_starting(nc, ev, status);
		return;
	}
	if (ev == EB_REGISTRY_FAILED && nc->running && !nc->stopping) {
		/* Rule 7: the address was taken while we were away. */
		EB_LOG_ERR("node",
		    "registration-lost: address=%s holder: %s err=%s",
		    nc->n->conf->cluster.address, eb__registry_holder(nc->reg),
		    eb_err_name(status));
		eb__node_fail(nc->n, status);
	} else if (ev == EB_REGISTRY_LEFT && nc->stopping) {
		(void) uv_timer_stop(&nc->timer);
		close_all(nc, nc->done_cb, 0);
	}
}

/* ---- the leader record <root>/leader ---- */

static node_cluster *
rec_nc(void *arg)
{
	node_cluster *nc = eb__live_get(eb__live_id(arg));

	return nc != NULL && nc->zk != NULL && !nc->stopping ? nc : NULL;
}

static void
rec_watch_cb(eb_zk *zk, eb_zk_watch_type type, const char *path, void *arg)
{
	node_cluster *nc = rec_nc(arg);

	(void) zk;
	(void) type;
	(void) path;
	if (nc != NULL) {
		rec_read(nc);
	}
}

static void
rec_exists_cb(eb_zk *zk, int status, const eb_zk_stat *st, void *arg)
{
	node_cluster *nc = rec_nc(arg);

	(void) zk;
	(void) st;
	if (nc != NULL && status == 0) {
		rec_read(nc); /* created between our get and exists */
	}
}

static void observe_leader(node_cluster *nc);

static void
rec_get_cb(eb_zk *zk, int status, const char *data, size_t len,
    const eb_zk_stat *st, void *arg)
{
	node_cluster *nc = rec_nc(arg);
	json_t       *o;
	const char   *node;

	(void) zk;
	(void) st;
	if (nc == NULL) {
		return;
	}
	if (status == EB_EZKNONODE) {
		free(nc->rec_node);
		nc->rec_node = NULL;
		nc->rec_epoch = 0;
		/* A get arms no watch on an absent node; exists does. */
		(void) eb_zk_exists(nc->zk, nc->rec_path, rec_watch_cb,
		    eb__live_arg(nc->live), rec_exists_cb,
		    eb__live_arg(nc->live));
		return;
	}
	if (status != 0) {
		return; /* loss: the reconnect reads again */
	}
	o = json_loadb(data, len, 0, NULL);
	node = json_string_value(json_object_get(o, "node_id"));
	free(nc->rec_node);
	nc->rec_node = eb__strdup(node != NULL ? node : "");
	nc->rec_epoch = json_is_integer(json_object_get(o, "epoch"))
	                    ? json_integer_value(json_object_get(o, "epoch"))
	                    : 0;
	json_decref(o);
	observe_leader(nc);
}

static void
rec_read(node_cluster *nc)
{
	if (eb_zk_get_state(nc->zk) != EB_ZK_STATE_CONNECTED) {
		return;
	}
	(void) eb_zk_get(nc->zk, nc->rec_path, rec_watch_cb,
	    eb__live_arg(nc->live), rec_get_cb, eb__live_arg(nc->live));
}

static const eb_member *cache_leader(node_cluster *nc);

/*
 * Rule 6: the epoch of the current leader as the member cache shows it: the
 * czxid of the lowest valid eligible member (eb__childcache_leader_epoch;
 * the cache shows valid members only, cluster/member.c). A damaged or
 * foreign child never raises the fence: its czxid may be far above the
 * real leader's and would fence every message. 0: none.
 */
static uint64_t
cache_leader_epoch(node_cluster *nc)
{
	int64_t epoch = eb__childcache_leader_epoch(nc->cc);

	return epoch > 0 ? (uint64_t) epoch : 0;
}

/* Raises the fence, and counts a change of the cluster's leader as this
 * node sees it (a new confirmed leader); a gap with no leader is not a
 * change. */
static void
observe_leader(node_cluster *nc)
{
	const eb_member *l = cache_leader(nc);
	uint64_t         epoch = cache_leader_epoch(nc);

	/* Anything stamped below the current leader's epoch comes from a
	 * superseded leader: the bus refuses it from now on. */
	if (epoch > 0 && nc->n->bus != NULL) {
		eb_bus_fence_raise(nc->n->bus, epoch);
	}
	if (l == NULL || strcmp(nc->last_leader, l->name) == 0) {
		return;
	}
	(void) snprintf(
	    nc->last_leader, sizeof(nc->last_leader), "%s", l->name);
	nc->leader_changes++;
}

static void
cc_cb(eb_childcache *c, eb_childcache_event ev, const eb_member *m, void *arg)
{
	node_cluster *nc = arg;

	(void) ev;
	(void) m;
	observe_leader(nc);
	/* The admin endpoint reads the cache on demand; the node links
	 * follow it (node_bus.c). */
	eb__node_bus_members(nc->n, c);
}

static void
start_timeout_cb(uv_timer_t *t)
{
	node_cluster *nc = t->data;

	EB_LOG_ERR("node", "cluster-start-timeout: zookeeper=%s",
	    nc->n->conf->cluster.connect);
	start_finish(nc, EB_ETIMEOUT);
}

static int
clustered_new(node_cluster *nc)
{
	const eb_conf   *c = nc->n->conf;
	eb_zk_opts       zo;
	eb_registry_opts ro;
	eb_election_opts eo;
	char             members[600];
	int              rv;

	eb_zk_opts_init(&zo);
	zo.connect = c->cluster.connect;
	zo.session_timeout_ms = c->cluster.session_timeout_ms;
	if (c->cluster.auth_scheme != NULL) {
		zo.auth_scheme = c->cluster.auth_scheme;
		zo.auth_credentials = c->cluster.auth_credentials;
	}
	zo.acl = c->cluster.acl == EB_CLUSTER_ACL_CREATOR ? EB_ZK_ACL_CREATOR
	                                                  : EB_ZK_ACL_OPEN;
	rv = eb_zk_new(nc->n->loop, &zo, zk_event_cb, nc, &nc->zk);
	if (rv != 0) {
		return rv;
	}
	eb__registry_opts_init(&ro);
	ro.root = c->cluster.root;
	ro.address = c->cluster.address;
	ro.node_id = c->cluster.node_id;
	ro.host = c->cluster.host;
	ro.cluster_port = nc->n->cluster_port;
	ro.bridge_port = nc->n->bridge_port;
	ro.admin_port = nc->n->admin_port;
	ro.version = EB_VERSION_STRING;
	ro.eligible = c->cluster.election.eligible;
	rv = eb__registry_new(nc->n->loop, nc->zk, &ro, reg_cb, nc, &nc->reg);
	if (rv != 0) {
		return rv;
	}
	(void) snprintf(members, sizeof(members), "%s/leader", c->cluster.root);
	nc->rec_path = eb__strdup(members);
	(void) snprintf(
	    members, sizeof(members), "%s/members", c->cluster.root);
	rv = eb__childcache_new(
	    nc->n->loop, nc->zk, members, cc_cb, nc, &nc->cc);
	if (rv != 0) {
		return rv;
	}
	eo = c->cluster.election;
	rv = eb__election_new(nc->n->loop, nc->zk, nc->reg, &eo, elected_cb,
	    revoked_cb, nc, &nc->el);
	if (rv != 0) {
		return rv;
	}
	eb__election_set_identity(
	    nc->el, c->cluster.node_id, c->cluster.address);
	return 0;
}

static int
clustered_start(node_cluster *nc)
{
	int rv;

	if ((rv = eb_zk_start(nc->zk)) != 0 ||
	    (rv = eb__registry_start(nc->reg)) != 0 ||
	    (rv = eb__childcache_start(nc->cc)) != 0 ||
	    (rv = eb__election_start(nc->el)) != 0) {
		return rv;
	}
	return 0;
}

static void
failed_start_closed_cb(eb_node *n, int status)
{
	(void) n;
	(void) status;
}

int
eb__node_cluster_start(eb_node *n, eb__node_done_cb cb)
{
	node_cluster *nc = nc_get(n);
	uint32_t      bound;
	int           rv;

	(void) uv_timer_init(n->loop, &nc->timer);
	nc->timer.data = nc;
	nc->timer_init = 1;
	if (standalone(n)) {
		rv = eb__election_new(n->loop, NULL, NULL, NULL, elected_cb,
		    revoked_cb, nc, &nc->el);
		if (rv == 0) {
			eb__election_set_identity(nc->el,
			    n->conf->cluster.node_id, n->conf->cluster.address);
			rv = eb__election_start(nc->el);
		}
		if (rv != 0) {
			close_all(nc, failed_start_closed_cb, rv);
			return rv;
		}
		EB_LOG_NOTICE("node", "standalone: node=%s (own leader)",
		    n->conf->cluster.node_id);
		nc->running = 1;
		eb__node_complete(n, cb, 0);
		return 0;
	}
	rv = clustered_new(nc);
	if (rv == 0) {
		rv = clustered_start(nc);
	}
	if (rv != 0) {
		/* Nothing will call cb; close what exists quietly. */
		close_all(nc, failed_start_closed_cb, rv);
		return rv;
	}
	nc->start_cb = cb;
	bound = eb_zk_session_timeout_ms(nc->zk) * 2u + NC_START_MARGIN_MS;
	(void) uv_timer_start(&nc->timer, start_timeout_cb, bound, 0);
	return 0;
}

void
eb__node_cluster_cancel_start(eb_node *n)
{
	node_cluster *nc = n->cluster;

	if (nc != NULL && nc->start_cb != NULL) {
		EB_LOG_NOTICE("node", "cluster-start-canceled: zookeeper=%s",
		    n->conf->cluster.connect);
		start_finish(nc, EB_ECANCELED);
	}
}

static void
leave_timeout_cb(uv_timer_t *t)
{
	node_cluster *nc = t->data;

	EB_LOG_WARN("node", "leave-timeout: after_ms=%u", NC_LEAVE_TIMEOUT_MS);
	close_all(nc, nc->done_cb, 0);
}

void
eb__node_cluster_stop(eb_node *n, eb__node_done_cb cb)
{
	node_cluster *nc = n->cluster;

	nc->stopping = 1;
	nc->done_cb = cb;
	/* Leader work stops first: revoked listeners release ingress. */
	if (nc->el != NULL) {
		eb_election_stop(nc->el);
	}
	if (nc->reg != NULL && eb__registry_leave(nc->reg) == 0) {
		(void) uv_timer_start(
		    &nc->timer, leave_timeout_cb, NC_LEAVE_TIMEOUT_MS, 0);
		return; /* reg_cb(LEFT) continues */
	}
	close_all(nc, cb, 0);
}

/* ---- what the admin endpoint shows ---- */

int
eb__node_cluster_health(eb_node *n, const char **reason)
{
	node_cluster *nc = n->cluster;

	if (nc == NULL || !nc->running || nc->stopping) {
		*reason = nc != NULL && nc->stopping ? "stopping" : "starting";
		return 0;
	}
	if (standalone(n)) {
		*reason = "standalone";
		return 1;
	}
	if (eb_zk_get_state(nc->zk) != EB_ZK_STATE_CONNECTED) {
		*reason = "zookeeper-disconnected";
		return 0;
	}
	if (!eb__registry_is_registered(nc->reg)) {
		/* Our member was deleted or overwritten from outside: a new
		 * one is being made (not "registered" meanwhile). */
		*reason = eb__registry_reregistering(nc->reg)
		              ? "re-registering"
		              : "not-registered";
		return 0;
	}
	*reason = "registered";
	return 1;
}

/* The member that actually leads (see the top of this file): the cache's
 * lowest valid eligible member, confirmed by the leader record. */
static const eb_member *
cache_leader(node_cluster *nc)
{
	const eb_member *l = eb__childcache_leader(nc->cc);

	if (l == NULL) {
		return NULL;
	}
	/* This node leading (lease valid) with that member needs no record:
	 * its own election is the confirmation, and its watch on the record
	 * may fire a moment later. */
	if (nc->epoch > 0 && l->czxid == nc->epoch &&
	    eb__node_cluster_is_leader(nc->n)) {
		return l;
	}
	if (nc->rec_node == NULL || nc->rec_epoch != l->czxid ||
	    strcmp(nc->rec_node, l->node_id) != 0) {
		return NULL;
	}
	return l;
}

static json_t *
member_json(node_cluster *nc, const eb_member *m, const eb_member *leader)
{
	const char *self = eb__registry_member_name(nc->reg);

	return json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:I, s:I, s:I, "
	                 "s:I, s:b, s:b, s:b, s:s}",
	    "node_id", m->node_id, "address", m->address, "host", m->host,
	    "member", m->name, "cluster_port", m->cluster_port, "bridge_port",
	    m->bridge_port, "admin_port", m->admin_port, "sequence",
	    (json_int_t) m->seq, "epoch", (json_int_t) m->czxid, "czxid",
	    (json_int_t) m->czxid, "joined_ms", (json_int_t) m->started_ms,
	    "leader", m == leader, "self",
	    self != NULL && strcmp(self, m->name) == 0, "eligible", m->eligible,
	    "version", m->version_str);
}

json_t *
eb__node_cluster_nodes_json(eb_node *n)
{
	node_cluster    *nc = n->cluster;
	json_t          *out;
	json_t          *arr = json_array();
	const eb_member *leader;
	size_t           i;

	if (nc == NULL || standalone(n) || nc->cc == NULL) {
		json_t *self =
		    json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:I, s:b, s:b}",
		        "node_id", n->conf->cluster.node_id, "address",
		        n->conf->cluster.address, "host", n->conf->cluster.host,
		        "cluster_port", n->cluster_port, "bridge_port",
		        n->bridge_port, "admin_port", n->admin_port, "epoch",
		        (json_int_t) eb__node_cluster_epoch(n), "leader",
		        eb__node_cluster_is_leader(n), "self", 1);

		(void) json_array_append_new(arr, self);
		return json_pack("{s:s, s:I, s:s, s:b, s:o}", "leader",
		    eb__node_cluster_is_leader(n) ? n->conf->cluster.node_id
		                                  : "",
		    "epoch", (json_int_t) eb__node_cluster_epoch(n), "self",
		    n->conf->cluster.node_id, "standalone", 1, "nodes", arr);
	}
	leader = cache_leader(nc);
	for (i = 0; i < eb__childcache_count(nc->cc); i++) {
		(void) json_array_append_new(
		    arr, member_json(nc, eb__childcache_at(nc->cc, i), leader));
	}
	out = json_pack("{s:s?, s:I, s:s, s:b, s:o}", "leader",
	    leader != NULL ? leader->node_id : NULL, "epoch",
	    (json_int_t) (leader != NULL ? leader->czxid : 0), "self",
	    n->conf->cluster.node_id, "standalone", 0, "nodes", arr);
	return out;
}

json_t *
eb__node_cluster_leader_json(eb_node *n)
{
	node_cluster    *nc = n->cluster;
	const eb_member *leader;

	if (nc == NULL || standalone(n) || nc->cc == NULL) {
		if (!eb__node_cluster_is_leader(n)) {
			return NULL;
		}
		return json_pack("{s:s, s:s, s:I, s:b, s:b}", "node_id",
		    n->conf->cluster.node_id, "address",
		    n->conf->cluster.address, "epoch",
		    (json_int_t) eb__node_cluster_epoch(n), "self", 1,
		    "standalone", 1);
	}
	leader = cache_leader(nc);
	if (leader == NULL) {
		return NULL;
	}
	return json_pack("{s:s, s:s, s:s, s:I, s:I, s:b, s:b, s:b}", "node_id",
	    leader->node_id, "address", leader->address, "member", leader->name,
	    "epoch", (json_int_t) leader->czxid, "sequence",
	    (json_int_t) leader->seq, "self",
	    eb__registry_member_name(nc->reg) != NULL &&
	        strcmp(eb__registry_member_name(nc->reg), leader->name) == 0,
	    "is_leader_here", eb__node_cluster_is_leader(n), "standalone", 0);
}

static const char *
zk_state_name(node_cluster *nc)
{
	switch (eb_zk_get_state(nc->zk)) {
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

void
eb__node_cluster_stats_get(eb_node *n, eb__node_cluster_stats *out)
{
	node_cluster *nc = n->cluster;

	memset(out, 0, sizeof(*out));
	out->zk_state = "down";
	if (nc == NULL) {
		return;
	}
	out->leads = nc->leads;
	out->leader_changes = nc->leader_changes;
	out->zk_connected = nc->zk_events[EB_ZK_EV_CONNECTED];
	out->zk_suspended = nc->zk_events[EB_ZK_EV_SUSPENDED];
	out->zk_reconnected = nc->zk_events[EB_ZK_EV_RECONNECTED];
	out->zk_expired = nc->zk_events[EB_ZK_EV_EXPIRED];
	out->zk_auth_failed = nc->zk_events[EB_ZK_EV_AUTH_FAILED];
	if (standalone(n)) {
		out->zk_state = "standalone";
		out->members = nc->running ? 1 : 0;
		out->leader_known = eb__node_cluster_is_leader(n);
		out->leader_epoch = out->leader_known ? nc->epoch : 0;
		return;
	}
	if (nc->zk != NULL) {
		out->zk_state = zk_state_name(nc);
		out->zk_session_id = eb_zk_session_id(nc->zk);
		out->zk_requests = eb_zk_requests(nc->zk);
	}
	if (nc->cc != NULL) {
		const eb_member *l = cache_leader(nc);

		out->members = (uint32_t) eb__childcache_count(nc->cc);
		out->members_invalid =
		    (uint32_t) eb__childcache_ignored(nc->cc);
		out->leader_known = l != NULL;
		out->leader_epoch = l != NULL ? l->czxid : 0;
	}
}
