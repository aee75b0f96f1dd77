/*
 * The cluster object (include/ebnode/cluster.h): this node's ZooKeeper
 * session, registration (member/registry.h), member child cache
 * (member/childcache.h) and election (election/), composed in one place.
 *
 * Start: standalone (empty connect) elects itself with epoch 1 and
 * completes on the next turn. Clustered: create the session, registry,
 * cache and election, start them, and complete when the registry reports
 * REGISTERED (a duplicate address fails the start), or FAILED (everything
 * is closed first: a failed start holds nothing). The wait is bounded
 * (2 x session timeout + 15 s).
 *
 * Session events go to the election first (a suspended leader is revoked
 * before anything else, rule 5), then the registry, then the cache.
 *
 * Stop (rule 8): the election stops first (a leader is revoked and the
 * leadership observers hear it synchronously), then the member and the
 * claim are deleted in one multi (the successor's predecessor watch fires
 * at once), then the parts are closed. The leave is bounded (3 s).
 *
 * Who leads (the leadership observers, eb_cluster_leadership_get): the
 * member that actually won, i.e. the lowest valid eligible member of the
 * cache when the leader record <root>/leader -- written by the winner with
 * a multi that checks its member, so only after it won -- carries that
 * member's epoch and node id. While the two disagree (a hand-over in
 * progress, a member overwritten by someone else) no leader is known
 * rather than a wrong one. The record is read with a watch (re-read on
 * every change and every (re)connect).
 *
 * A session whose negotiated timeout leaves no safe leader lease
 * (docs/CLUSTER.md "The lease") fails the start, or the running cluster
 * (fail observer), with EB_ECONF after the election's "lease-unsafe" line.
 * Loop thread only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <ebnode/cluster.h>
#include <ebnode/log.h>
#include <ebnode/version.h>

#include "cluster/cluster_int.h"
#include "common/alloc.h"
#include "common/assert.h"
#include "common/obs.h"
#include "common/vec.h"
#include "election/election_owner.h"
#include "member/childcache.h"
#include "member/registry.h"
#include "zk/zk.h"

#define CL_LEAVE_TIMEOUT_MS 3000u
#define CL_DRAIN_TICK_MS    5u
#define CL_START_MARGIN_MS  15000u

typedef enum cl_state {
	CL_NEW = 0,
	CL_STARTING,
	CL_RUNNING,
	CL_STOPPING, /* the leave, then the parts close */
	CL_DOWN      /* the parts are closed (stopped or failed start) */
} cl_state;

struct eb_cluster {
	uv_loop_t *loop; /* borrowed */
	/* Options (strings owned). */
	char           *connect, *root, *auth_scheme, *auth_credentials;
	char           *node_id, *address, *host, *version;
	eb_cluster_opts o; /* the ints; string fields point at the copies */
	eb__zk         *zk;
	eb__registry   *reg;
	eb__childcache *cc;
	eb_election    *el;
	uv_timer_t      timer; /* start bound, leave bound, standalone turn */
	cl_state        state;
	int             closing;
	int             closed;
	int             open; /* parts whose close is pending */
	int             start_status;
	int             leader;
	int64_t         epoch;
	eb_cluster_start_cb start_cb;
	void               *start_arg;
	eb_cluster_stop_cb  stop_cb;
	void               *stop_arg;
	eb_cluster_close_cb close_cb;
	void               *close_arg;
	eb_cluster_fail_cb  fail_cb;
	void               *fail_arg;
	eb__obs             members_obs;
	eb__obs             leadership_obs;
	eb__vec members;        /* of eb_cluster_member, built from the cache */
	int     members_dirty;  /* the cache or the registration changed */
	eb_cluster_member self; /* the standalone member list */
	/* Observations (eb_cluster_stats_get). */
	uint64_t leads;
	uint64_t leader_changes;
	uint64_t zk_events[6]; /* by eb__zk_event (1..5) */
	char     last_leader[64];
	/* The leader record <root>/leader as last read. */
	uint64_t            live; /* live id (the session's table) */
	int64_t             rec_epoch;
	char               *rec_node; /* NULL: no record */
	char               *rec_path;
	char               *members_path;
	eb__cluster_config *config; /* <root>/config (config.c) */
	/* The leave drain (eb_cluster_set_drain). */
	eb_cluster_pending_cb drain_cb;
	void                 *drain_arg;
	uint32_t              drain_max_ms;
	uint64_t              drain_start;
};

static void rec_read(eb_cluster *c);
static void observe_leader(eb_cluster *c, const char *reason);

static int
standalone(const eb_cluster *c)
{
	return c->connect[0] == '\0';
}

static char *
dup_or(const char *s, const char *dflt)
{
	return eb__strdup(s != NULL ? s : dflt);
}

/* One default, stated in the public header and in zk/ (which cannot
 * include the cluster's). */
_Static_assert(EB_CLUSTER_MAX_REQUEST_DEFAULT == EB_ZK_DEFAULT_MAX_REQUEST,
    "zookeeper.max_request_bytes: one default");

void
eb_cluster_opts_init(eb_cluster_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->root = "/ebnode/default";
	opts->session_timeout_ms = 10000;
	opts->acl = EB_CLUSTER_ACL_OPEN;
	opts->max_request_bytes = EB_CLUSTER_MAX_REQUEST_DEFAULT;
	opts->host = "127.0.0.1";
	eb_election_opts_init(&opts->election);
	/* What an eb_link_mgr with default options speaks. */
	opts->link_min = EB_LINK_PROTOCOL_MIN;
	opts->link_max = EB_LINK_PROTOCOL_VERSION;
}

int
eb_cluster_new(uv_loop_t *loop, const eb_cluster_opts *opts, eb_cluster **cp,
    eb_errbuf *err)
{
	eb_cluster *c;
	char        path[600];

	if (loop == NULL || opts == NULL || cp == NULL) {
		return eb_errf(
		    err, UV_EINVAL, "loop, opts and cp are required");
	}
	if (opts->node_id == NULL || opts->node_id[0] == '\0' ||
	    opts->address == NULL || opts->address[0] == '\0') {
		return eb_errf(
		    err, UV_EINVAL, "node_id and address are required");
	}
	if (opts->connect != NULL && opts->connect[0] != '\0' &&
	    (opts->root == NULL || opts->root[0] != '/' ||
	        strlen(opts->root) > 400)) {
		return eb_errf(
		    err, UV_EINVAL, "root must be an absolute znode path");
	}
	c = eb__calloc(1, sizeof(*c));
	c->loop = loop;
	c->o = *opts;
	c->connect = dup_or(opts->connect, "");
	c->root = dup_or(opts->root, "");
	c->auth_scheme = dup_or(opts->auth_scheme, "");
	c->auth_credentials = dup_or(opts->auth_credentials, "");
	c->node_id = eb__strdup(opts->node_id);
	c->address = eb__strdup(opts->address);
	c->host = dup_or(opts->host, "127.0.0.1");
	c->version = dup_or(opts->version, "");
	c->o.connect = c->connect;
	c->o.root = c->root;
	c->o.auth_scheme = c->auth_scheme;
	c->o.auth_credentials = c->auth_credentials;
	c->o.node_id = c->node_id;
	c->o.address = c->address;
	c->o.host = c->host;
	c->o.version = c->version;
	(void) snprintf(path, sizeof(path), "%s/leader", c->root);
	c->rec_path = eb__strdup(path);
	(void) snprintf(path, sizeof(path), "%s/members", c->root);
	c->members_path = eb__strdup(path);
	eb__obs_init(&c->members_obs);
	eb__obs_init(&c->leadership_obs);
	c->config = eb__cluster_config_new(c);
	eb__vec_init(&c->members, sizeof(eb_cluster_member));
	c->members_dirty = 1;
	(void) uv_timer_init(loop, &c->timer);
	c->timer.data = c;
	*cp = c;
	return 0;
}

/* ---- observers ---- */

eb__zk *
eb__cluster_zk(const eb_cluster *c)
{
	return c->closing || c->state == CL_DOWN ? NULL : c->zk;
}

const char *
eb__cluster_root(const eb_cluster *c)
{
	return c->root;
}

void
eb__cluster_zk_opts(const eb_cluster *c, eb__zk_opts *zo)
{
	eb__zk_opts_init(zo);
	zo->connect = c->connect;
	zo->session_timeout_ms = c->o.session_timeout_ms;
	zo->max_request_bytes = c->o.max_request_bytes;
	if (c->auth_scheme[0] != '\0') {
		zo->auth_scheme = c->auth_scheme;
		zo->auth_credentials = c->auth_credentials;
	}
	zo->acl = c->o.acl == EB_CLUSTER_ACL_CREATOR ? EB_ZK_ACL_CREATOR
	                                             : EB_ZK_ACL_OPEN;
}

uint32_t
eb__cluster_zk_tick_ms(const eb_cluster *c)
{
	return c->o.election.zk_tick_ms;
}

void
eb_cluster_on_members(eb_cluster *c, eb_cluster_members_cb cb, void *arg)
{
	EB_ASSERT(!c->closing);
	eb__obs_add(&c->members_obs, (eb__obs_fn) cb, arg);
}

int
eb_cluster_off_members(eb_cluster *c, eb_cluster_members_cb cb, void *arg)
{
	return eb__obs_remove(&c->members_obs, (eb__obs_fn) cb, arg);
}

void
eb_cluster_on_leadership(eb_cluster *c, eb_cluster_leadership_cb cb, void *arg)
{
	EB_ASSERT(!c->closing);
	eb__obs_add(&c->leadership_obs, (eb__obs_fn) cb, arg);
}

int
eb_cluster_off_leadership(eb_cluster *c, eb_cluster_leadership_cb cb, void *arg)
{
	return eb__obs_remove(&c->leadership_obs, (eb__obs_fn) cb, arg);
}

void
eb_cluster_on_fail(eb_cluster *c, eb_cluster_fail_cb cb, void *arg)
{
	EB_ASSERT(!c->closing);
	c->fail_cb = cb;
	c->fail_arg = arg;
}

static void
emit_leadership(eb_cluster *c, const char *reason)
{
	eb_cluster_leadership l;
	eb__obs_it            it;

	if (c->closing) {
		return;
	}
	eb_cluster_leadership_get(c, &l);
	l.leader = c->leader;
	l.reason = reason;
	EB__OBS_EACH(&c->leadership_obs, it)
	{
		((eb_cluster_leadership_cb) it.fn)(c, &l, it.arg);
	}
}

static void
fail(eb_cluster *c, int err)
{
	if (c->fail_cb != NULL && !c->closing) {
		c->fail_cb(c, err, c->fail_arg);
	}
}

/* ---- the member list ---- */

static int
member_is_self(eb_cluster *c, const eb__member *m)
{
	const char *self =
	    c->reg != NULL ? eb__registry_member_name(c->reg) : NULL;

	return self != NULL && strcmp(self, m->name) == 0;
}

const eb_cluster_member *
eb_cluster_members(eb_cluster *c, size_t *n)
{
	size_t i;

	if (standalone(c) || c->cc == NULL) {
		if (c->state != CL_RUNNING) {
			*n = 0;
			return NULL;
		}
		c->self.name = "";
		c->self.node_id = c->node_id;
		c->self.address = c->address;
		c->self.host = c->host;
		c->self.cluster_port = c->o.cluster_port;
		c->self.bridge_port = c->o.bridge_port;
		c->self.admin_port = c->o.admin_port;
		c->self.version = c->version;
		c->self.link_min = c->o.link_min;
		c->self.link_max = c->o.link_max;
		c->self.czxid = c->epoch;
		c->self.eligible = c->o.election.eligible;
		c->self.self = 1;
		*n = 1;
		return &c->self;
	}
	if (!c->members_dirty) {
		*n = c->members.len;
		return c->members.data;
	}
	c->members_dirty = 0;
	eb__vec_clear(&c->members);
	for (i = 0; i < eb__childcache_count(c->cc); i++) {
		const eb__member  *m = eb__childcache_at(c->cc, i);
		eb_cluster_member *o = eb__vec_push(&c->members);

		o->name = m->name;
		o->node_id = m->node_id;
		o->address = m->address;
		o->host = m->host;
		o->cluster_port = m->cluster_port;
		o->bridge_port = m->bridge_port;
		o->admin_port = m->admin_port;
		o->version = m->version_str;
		o->link_min = m->link_min;
		o->link_max = m->link_max;
		o->seq = m->seq;
		o->czxid = m->czxid;
		o->joined_ms = m->started_ms;
		o->eligible = m->eligible;
		o->self = member_is_self(c, m);
	}
	*n = c->members.len;
	return c->members.data;
}

/* Two live members with one node id and different addresses are two
 * processes configured with the same node id: links (keyed by node id)
 * would reach only one of them. Say so. (One id with one address is a
 * re-registration after a session expiry: the newest member wins.) */
static void
members_check_one(const eb_cluster_member *ms, size_t n, size_t i)
{
	size_t j;

	for (j = i + 1; j < n; j++) {
		if (strcmp(ms[i].node_id, ms[j].node_id) != 0 ||
		    strcmp(ms[i].address, ms[j].address) == 0) {
			continue;
		}
		EB_LOG_ERR("node", "duplicate-node-id: id=%s addresses=%s,%s",
		    ms[i].node_id, ms[i].address, ms[j].address);
	}
}

static void
members_check_ids(const eb_cluster_member *ms, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		members_check_one(ms, n, i);
	}
}

static void
emit_members(eb_cluster *c)
{
	const eb_cluster_member *ms;
	size_t                   n;
	eb__obs_it               it;

	ms = eb_cluster_members(c, &n);
	members_check_ids(ms, n);
	EB__OBS_EACH(&c->members_obs, it)
	{
		((eb_cluster_members_cb) it.fn)(c, ms, n, it.arg);
	}
}

/* ---- leadership ---- */

static void
elected_cb(eb_election *e, int64_t epoch, void *arg)
{
	eb_cluster *c = arg;

	(void) e;
	c->leader = 1;
	c->epoch = epoch;
	c->leads++;
	if (standalone(c)) {
		c->leader_changes++; /* no cache: our own election is all */
		emit_leadership(c, NULL);
	} else {
		observe_leader(c, NULL); /* we are the leader the cache shows */
	}
}

static void
revoked_cb(eb_election *e, const char *reason, void *arg)
{
	eb_cluster *c = arg;

	(void) e;
	c->leader = 0;
	emit_leadership(c, reason);
}

int
eb_cluster_is_leader(eb_cluster *c)
{
	return c->el != NULL && c->state == CL_RUNNING &&
	       eb_election_is_leader(c->el);
}

int64_t
eb_cluster_epoch(const eb_cluster *c)
{
	return c->epoch;
}

int
eb_cluster_step_down(eb_cluster *c)
{
	if (c->closing || c->el == NULL || c->state != CL_RUNNING) {
		return EB_ECLOSED;
	}
	EB_LOG_NOTICE("node", "leader-release: requested");
	return eb_election_step_down(c->el);
}

/* The member that actually leads (see the top of this file): the cache's
 * lowest valid eligible member, confirmed by the leader record. */
static const eb__member *
cache_leader(eb_cluster *c)
{
	const eb__member *l;

	if (c->cc == NULL || (l = eb__childcache_leader(c->cc)) == NULL) {
		return NULL;
	}
	/* This node leading (lease valid) with that member needs no record:
	 * its own election is the confirmation, and its watch on the record
	 * may fire a moment later. */
	if (c->epoch > 0 && l->czxid == c->epoch && eb_cluster_is_leader(c)) {
		return l;
	}
	if (c->rec_node == NULL || c->rec_epoch != l->czxid ||
	    strcmp(c->rec_node, l->node_id) != 0) {
		return NULL;
	}
	return l;
}

void
eb_cluster_leadership_get(eb_cluster *c, eb_cluster_leadership *out)
{
	memset(out, 0, sizeof(*out));
	out->leader = eb_cluster_is_leader(c);
	out->epoch = c->epoch;
	if (standalone(c) || c->cc == NULL) {
		if (out->leader) {
			out->known = 1;
			out->leader_epoch = c->epoch;
			out->leader_node_id = c->node_id;
			out->leader_address = c->address;
		}
		return;
	}
	{
		const eb__member *l = cache_leader(c);
		int64_t           fence = eb__childcache_leader_epoch(c->cc);

		/* The fence (rule 6) follows the cache's lowest valid
		 * eligible member even before the record confirms it. */
		out->leader_epoch = fence > 0 ? fence : 0;
		if (l != NULL) {
			out->known = 1;
			out->leader_epoch = l->czxid;
			out->leader_node_id = l->node_id;
			out->leader_address = l->address;
		}
	}
}

/* Counts a change of the cluster's leader as this node sees it (a new
 * confirmed leader; a gap with no leader is not a change), then tells the
 * leadership observers. */
static void
observe_leader(eb_cluster *c, const char *reason)
{
	const eb__member *l = cache_leader(c);

	if (l != NULL && strcmp(c->last_leader, l->name) != 0) {
		(void) snprintf(
		    c->last_leader, sizeof(c->last_leader), "%s", l->name);
		c->leader_changes++;
	}
	emit_leadership(c, reason);
}

/* ---- closing the parts (failed start, stop, close) ---- */

static void parts_closed(eb_cluster *c);

static void
closed_one(eb_cluster *c)
{
	if (--c->open == 0) {
		parts_closed(c);
	}
}

static void
el_closed_cb(eb_election *e, void *arg)
{
	(void) e;
	closed_one(arg);
}

static void
reg_closed_cb(eb__registry *r, void *arg)
{
	(void) r;
	closed_one(arg);
}

static void
cc_closed_cb(eb__childcache *cc, void *arg)
{
	(void) cc;
	closed_one(arg);
}

static void
zk_closed_cb(eb__zk *zk, void *arg)
{
	(void) zk;
	closed_one(arg);
}

static void
nothing_to_close_cb(uv_timer_t *t)
{
	closed_one(t->data);
}

/* Closes every part; parts_closed() once all have (later turns). */
static void
parts_close(eb_cluster *c)
{
	(void) uv_timer_stop(&c->timer);
	c->state = CL_DOWN;
	c->open = 1; /* guard */
	if (c->el != NULL) {
		eb_election_stop(c->el);
		c->open++;
		eb_election_close(c->el, el_closed_cb, c);
	}
	if (c->cc != NULL) {
		c->open++;
		eb__childcache_close(c->cc, cc_closed_cb, c);
	}
	if (c->reg != NULL) {
		c->open++;
		eb__registry_close(c->reg, reg_closed_cb, c);
	}
	if (c->zk != NULL) {
		if (c->live != 0) {
			eb__zk_live_del(c->zk, c->live);
			c->live = 0;
		}
		c->open++;
		eb__zk_close(c->zk, zk_closed_cb, c);
	}
	if (c->open == 1) {
		/* Nothing to close: still a later turn for the callbacks. */
		(void) uv_timer_start(&c->timer, nothing_to_close_cb, 0, 0);
		return;
	}
	c->open--;
}

static void finish_close(eb_cluster *c);

static void
parts_closed(eb_cluster *c)
{
	eb_cluster_start_cb scb = c->start_cb;
	eb_cluster_stop_cb  pcb = c->stop_cb;

	c->el = NULL;
	c->members_dirty = 1;
	c->cc = NULL;
	c->reg = NULL;
	c->zk = NULL;
	if (c->closing) {
		finish_close(c);
		return;
	}
	c->start_cb = NULL;
	c->stop_cb = NULL;
	if (scb != NULL) {
		scb(c, c->start_status, c->start_arg);
	}
	if (pcb != NULL && !c->closing) {
		pcb(c, c->stop_arg);
	}
}

/* ---- start ---- */

static void
start_finish(eb_cluster *c, int status)
{
	eb_cluster_start_cb cb = c->start_cb;

	(void) uv_timer_stop(&c->timer);
	if (status == 0) {
		c->start_cb = NULL;
		c->state = CL_RUNNING;
		cb(c, 0, c->start_arg);
		return;
	}
	c->start_status = status;
	parts_close(c); /* start_cb after the parts closed */
}

static void
zk_event_cb(eb__zk *zk, eb__zk_event ev, void *arg)
{
	eb_cluster *c = arg;

	(void) zk;
	if ((size_t) ev < sizeof(c->zk_events) / sizeof(c->zk_events[0])) {
		c->zk_events[ev]++;
	}
	if (c->reg == NULL) {
		return;
	}
	/* The election first: a suspended leader stops at once (rule 5). */
	eb__election_session_event(c->el, ev);
	eb__registry_session_event(c->reg, ev);
	eb__childcache_session_event(c->cc, ev);
	if (ev == EB_ZK_EV_CONNECTED || ev == EB_ZK_EV_RECONNECTED) {
		rec_read(c);
	}
	eb__cluster_config_session_event(c->config, ev);
	if (ev == EB_ZK_EV_AUTH_FAILED && c->state == CL_RUNNING) {
		fail(c, EB_EZKAUTH);
	}
	if ((ev == EB_ZK_EV_CONNECTED || ev == EB_ZK_EV_RECONNECTED) &&
	    eb__election_lease_error(c->el) != 0) {
		/* The negotiated session timeout leaves no safe leader lease
		 * (the election logged "lease-unsafe" with the values): stop
		 * rather than sit in the member order unable to lead. */
		if (c->state == CL_STARTING) {
			start_finish(c, EB_ECONF);
		} else if (c->state == CL_RUNNING) {
			fail(c, EB_ECONF);
		}
	}
}

static void
leave_done(eb_cluster *c)
{
	parts_close(c); /* stop_cb after the parts closed */
}

/* A registry event while the start is pending: registered finishes it,
 * failed fails it. */
static void
reg_starting(eb_cluster *c, eb__registry_event ev, int status)
{
	if (ev == EB_REGISTRY_REGISTERED) {
		start_finish(c, 0);
		return;
	}
	if (ev != EB_REGISTRY_FAILED) {
		return;
	}
	if (status == EB_EDUPADDR) {
		/* The holder's parts read from ZooKeeper are quoted. */
		EB_LOG_ERR("node",
		    "duplicate-address: address=%s is already registered by %s",
		    c->address, eb__registry_holder(c->reg));
	}
	start_finish(c, status);
}

static void
reg_cb(eb__registry *r, eb__registry_event ev, int status, void *arg)
{
	eb_cluster *c = arg;

	(void) r;
	c->members_dirty = 1; /* which member is ours may have changed */
	eb__election_registry_event(c->el, ev);
	if (c->state == CL_STARTING) {
		reg_starting(c, ev, status);
		return;
	}
	if (ev == EB_REGISTRY_FAILED && c->state == CL_RUNNING) {
		/* Rule 7: the address was taken while we were away. */
		EB_LOG_ERR("node",
		    "registration-lost: address=%s holder: %s err=%s",
		    c->address, eb__registry_holder(c->reg),
		    eb_err_name(status));
		fail(c, status);
	} else if (ev == EB_REGISTRY_LEFT && c->state == CL_STOPPING) {
		leave_done(c);
	}
}

/* ---- what config.c uses (cluster_int.h) ---- */

eb__cluster_config *
eb__cluster_config_of(const eb_cluster *c)
{
	return c->config;
}

void *
eb__cluster_live_arg(const eb_cluster *c)
{
	return eb__zk_live_arg(c->live);
}

/* ---- the leader record <root>/leader ---- */

eb_cluster *
eb__cluster_from_live(eb__zk *zk, void *arg)
{
	eb_cluster *c = eb__zk_live_get(zk, eb__zk_live_id(arg));

	return c != NULL && c->zk != NULL && c->state != CL_STOPPING &&
	               c->state != CL_DOWN
	           ? c
	           : NULL;
}

static eb_cluster *
rec_cluster(eb__zk *zk, void *arg)
{
	eb_cluster *c = eb__zk_live_get(zk, eb__zk_live_id(arg));

	return c != NULL && c->zk != NULL && c->state != CL_STOPPING &&
	               c->state != CL_DOWN
	           ? c
	           : NULL;
}

static void
rec_watch_cb(eb__zk *zk, eb__zk_watch_type type, const char *path, void *arg)
{
	eb_cluster *c = rec_cluster(zk, arg);

	(void) type;
	(void) path;
	if (c != NULL) {
		rec_read(c);
	}
}

static void
rec_exists_cb(eb__zk *zk, int status, const eb__zk_stat *st, void *arg)
{
	eb_cluster *c = rec_cluster(zk, arg);

	(void) st;
	if (c != NULL && status == 0) {
		rec_read(c); /* created between our get and exists */
	}
}

static void
rec_get_cb(eb__zk *zk, int status, const char *data, size_t len,
    const eb__zk_stat *st, void *arg)
{
	eb_cluster *c = rec_cluster(zk, arg);
	json_t     *o;
	const char *node;

	(void) st;
	if (c == NULL) {
		return;
	}
	if (status == EB_EZKNONODE) {
		free(c->rec_node);
		c->rec_node = NULL;
		c->rec_epoch = 0;
		/* A get arms no watch on an absent node; exists does. */
		(void) eb__zk_exists(c->zk, c->rec_path, rec_watch_cb,
		    eb__zk_live_arg(c->live), rec_exists_cb,
		    eb__zk_live_arg(c->live));
		return;
	}
	if (status != 0) {
		return; /* loss: the reconnect reads again */
	}
	o = json_loadb(data, len, 0, NULL);
	node = json_string_value(json_object_get(o, "node_id"));
	free(c->rec_node);
	c->rec_node = eb__strdup(node != NULL ? node : "");
	c->rec_epoch = json_is_integer(json_object_get(o, "epoch"))
	                   ? json_integer_value(json_object_get(o, "epoch"))
	                   : 0;
	json_decref(o);
	observe_leader(c, NULL);
}

static void
rec_read(eb_cluster *c)
{
	if (eb__zk_get_state(c->zk) != EB_ZK_STATE_CONNECTED) {
		return;
	}
	(void) eb__zk_get(c->zk, c->rec_path, rec_watch_cb,
	    eb__zk_live_arg(c->live), rec_get_cb, eb__zk_live_arg(c->live));
}

static void
cc_cb(
    eb__childcache *cc, eb__childcache_event ev, const eb__member *m, void *arg)
{
	eb_cluster *c = arg;

	(void) cc;
	(void) ev;
	(void) m;
	c->members_dirty = 1;
	if (c->closing) {
		return;
	}
	observe_leader(c, NULL);
	emit_members(c);
}

static void
start_timeout_cb(uv_timer_t *t)
{
	eb_cluster *c = t->data;

	EB_LOG_ERR("node", "cluster-start-timeout: zookeeper=%s", c->connect);
	start_finish(c, EB_ETIMEOUT);
}

static void
standalone_started_cb(uv_timer_t *t)
{
	eb_cluster *c = t->data;

	start_finish(c, 0);
}

static int
clustered_new(eb_cluster *c)
{
	eb__zk_opts       zo;
	eb__registry_opts ro;
	int               rv;

	eb__zk_opts_init(&zo);
	zo.connect = c->connect;
	zo.session_timeout_ms = c->o.session_timeout_ms;
	zo.max_request_bytes = c->o.max_request_bytes;
	if (c->auth_scheme[0] != '\0') {
		zo.auth_scheme = c->auth_scheme;
		zo.auth_credentials = c->auth_credentials;
	}
	zo.acl = c->o.acl == EB_CLUSTER_ACL_CREATOR ? EB_ZK_ACL_CREATOR
	                                            : EB_ZK_ACL_OPEN;
	rv = eb__zk_new(c->loop, &zo, zk_event_cb, c, &c->zk);
	if (rv != 0) {
		c->zk = NULL;
		return rv;
	}
	c->live = eb__zk_live_add(c->zk, c);
	eb__registry_opts_init(&ro);
	ro.root = c->root;
	ro.address = c->address;
	ro.node_id = c->node_id;
	ro.host = c->host;
	ro.cluster_port = c->o.cluster_port;
	ro.bridge_port = c->o.bridge_port;
	ro.admin_port = c->o.admin_port;
	ro.version = c->version;
	ro.link_min = c->o.link_min;
	ro.link_max = c->o.link_max;
	ro.eligible = c->o.election.eligible;
	if ((rv = eb__registry_new(c->loop, c->zk, &ro, reg_cb, c, &c->reg)) !=
	    0) {
		c->reg = NULL;
		return rv;
	}
	if ((rv = eb__childcache_new(
	         c->loop, c->zk, c->members_path, cc_cb, c, &c->cc)) != 0) {
		c->cc = NULL;
		return rv;
	}
	if ((rv = eb__election_new(c->loop, c->zk, c->reg, &c->o.election,
	         elected_cb, revoked_cb, c, &c->el)) != 0) {
		c->el = NULL;
		return rv;
	}
	eb__election_set_identity(c->el, c->node_id, c->address);
	return 0;
}

int
eb_cluster_start(eb_cluster *c, eb_cluster_start_cb cb, void *arg)
{
	int rv;

	EB_ASSERT(!c->closing);        /* start after close */
	EB_ASSERT(c->state == CL_NEW); /* started once */
	EB_ASSERT(cb != NULL);
	c->start_cb = cb;
	c->start_arg = arg;
	c->state = CL_STARTING;
	if (standalone(c)) {
		rv = eb__election_new(c->loop, NULL, NULL, &c->o.election,
		    elected_cb, revoked_cb, c, &c->el);
		if (rv == 0) {
			eb__election_set_identity(
			    c->el, c->node_id, c->address);
			rv = eb__election_start(c->el);
		} else {
			c->el = NULL;
		}
		if (rv != 0) {
			c->start_cb = NULL;
			parts_close(c);
			return rv;
		}
		EB_LOG_NOTICE(
		    "node", "standalone: node=%s (own leader)", c->node_id);
		/* Running now (the election elects on a later turn); the
		 * start completes on the next turn. */
		c->state = CL_RUNNING;
		(void) uv_timer_start(&c->timer, standalone_started_cb, 0, 0);
		return 0;
	}
	rv = clustered_new(c);
	if (rv == 0) {
		if ((rv = eb__zk_start(c->zk)) == 0 &&
		    (rv = eb__registry_start(c->reg)) == 0 &&
		    (rv = eb__childcache_start(c->cc)) == 0) {
			rv = eb__election_start(c->el);
		}
	}
	if (rv != 0) {
		/* Nothing will call cb; close what exists quietly. */
		c->start_cb = NULL;
		parts_close(c);
		return rv;
	}
	(void) uv_timer_start(&c->timer, start_timeout_cb,
	    eb__zk_session_timeout_ms(c->zk) * 2u + CL_START_MARGIN_MS, 0);
	return 0;
}

/* ---- stop ---- */

static void
leave_timeout_cb(uv_timer_t *t)
{
	eb_cluster *c = t->data;

	EB_LOG_WARN("node", "leave-timeout: after_ms=%u", CL_LEAVE_TIMEOUT_MS);
	leave_done(c);
}

/* The member leaves the list: reg_cb(LEFT) or the leave timeout goes on
 * to close the parts. */
static void
leave(eb_cluster *c)
{
	if (c->reg != NULL && eb__registry_leave(c->reg) == 0) {
		(void) uv_timer_start(
		    &c->timer, leave_timeout_cb, CL_LEAVE_TIMEOUT_MS, 0);
		return; /* reg_cb(LEFT) continues */
	}
	parts_close(c);
}

static void
drain_tick_cb(uv_timer_t *t)
{
	eb_cluster *c = t->data;
	uint32_t    pending = c->drain_cb(c->drain_arg);
	uint64_t    took = uv_now(c->loop) - c->drain_start;

	if (pending > 0 && took < c->drain_max_ms) {
		return;
	}
	(void) uv_timer_stop(&c->timer);
	if (pending > 0) {
		EB_LOG_WARN("node",
		    "leave-drain-timeout: pending=%u after_ms=%llu", pending,
		    (unsigned long long) took);
	} else {
		EB_LOG_NOTICE("node", "leave-drained: after_ms=%llu",
		    (unsigned long long) took);
	}
	leave(c);
}

void
eb_cluster_set_drain(
    eb_cluster *c, eb_cluster_pending_cb pending, void *arg, uint32_t max_ms)
{
	c->drain_cb = pending;
	c->drain_arg = arg;
	c->drain_max_ms = max_ms;
}

void
eb_cluster_stop(eb_cluster *c, eb_cluster_stop_cb cb, void *arg)
{
	uint32_t pending;

	EB_ASSERT(!c->closing); /* stop after close */
	EB_ASSERT(c->stop_cb == NULL && c->state != CL_STOPPING); /* once */
	c->stop_cb = cb;
	c->stop_arg = arg;
	if (c->start_cb != NULL) {
		/* Stopped while starting: the start fails with EB_ECANCELED,
		 * then the stop completes. */
		EB_LOG_NOTICE(
		    "node", "cluster-start-canceled: zookeeper=%s", c->connect);
		start_finish(c, EB_ECANCELED);
		return;
	}
	if (c->state != CL_RUNNING) {
		parts_close(c); /* never started, or already down */
		return;
	}
	c->state = CL_STOPPING;
	/* Leader work stops first: the revoke reaches the observers. */
	if (c->el != NULL) {
		eb_election_stop(c->el);
	}
	/* Receipts still to come for what this node sent: stay a member
	 * (and linked) until they are in, bounded. */
	if (c->drain_cb != NULL && c->reg != NULL &&
	    (pending = c->drain_cb(c->drain_arg)) > 0) {
		EB_LOG_NOTICE("node", "leave-drain: pending=%u max_ms=%u",
		    pending, c->drain_max_ms);
		c->drain_start = uv_now(c->loop);
		(void) uv_timer_start(&c->timer, drain_tick_cb,
		    CL_DRAIN_TICK_MS, CL_DRAIN_TICK_MS);
		return;
	}
	leave(c);
}

/* ---- close ---- */

static void
timer_closed_cb(uv_handle_t *h)
{
	eb_cluster         *c = h->data;
	eb_cluster_close_cb cb = c->close_cb;
	void               *arg = c->close_arg;

	c->closed = 1;
	if (cb != NULL) {
		cb(c, arg);
	}
	eb__obs_free(&c->members_obs);
	eb__obs_free(&c->leadership_obs);
	eb__vec_free(&c->members);
	free(c->connect);
	free(c->root);
	free(c->auth_scheme);
	free(c->auth_credentials);
	free(c->node_id);
	free(c->address);
	free(c->host);
	free(c->version);
	free(c->rec_node);
	free(c->rec_path);
	free(c->members_path);
	eb__cluster_config_free(c->config);
	free(c);
}

static void
finish_close(eb_cluster *c)
{
	uv_close((uv_handle_t *) &c->timer, timer_closed_cb);
}

void
eb_cluster_close(eb_cluster *c, eb_cluster_close_cb cb, void *arg)
{
	EB_ASSERT(!c->closing); /* close is exactly once */
	c->closing = 1;
	c->close_cb = cb;
	c->close_arg = arg;
	c->fail_cb = NULL;
	c->start_cb = NULL;
	c->stop_cb = NULL;
	if (c->open > 0) {
		return; /* parts_closed() continues */
	}
	if (c->el != NULL || c->zk != NULL) {
		parts_close(c);
		return;
	}
	(void) uv_timer_stop(&c->timer);
	finish_close(c);
}

/* ---- what the owner shows ---- */

int
eb_cluster_health(eb_cluster *c, const char **reason)
{
	if (c->closing || c->state != CL_RUNNING || c->start_cb != NULL) {
		*reason = c->state == CL_STOPPING ? "stopping" : "starting";
		return 0;
	}
	if (standalone(c)) {
		*reason = "standalone";
		return 1;
	}
	if (eb__zk_get_state(c->zk) != EB_ZK_STATE_CONNECTED) {
		*reason = "zookeeper-disconnected";
		return 0;
	}
	if (!eb__registry_is_registered(c->reg)) {
		/* Our member was deleted or overwritten from outside: a new
		 * one is being made (not "registered" meanwhile). */
		*reason = eb__registry_reregistering(c->reg) ? "re-registering"
		                                             : "not-registered";
		return 0;
	}
	*reason = "registered";
	return 1;
}

void
eb_cluster_stats_get(eb_cluster *c, eb_cluster_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->zk_state = "closed";
	out->leads = c->leads;
	out->leader_changes = c->leader_changes;
	out->zk_connected = c->zk_events[EB_ZK_EV_CONNECTED];
	out->zk_suspended = c->zk_events[EB_ZK_EV_SUSPENDED];
	out->zk_reconnected = c->zk_events[EB_ZK_EV_RECONNECTED];
	out->zk_expired = c->zk_events[EB_ZK_EV_EXPIRED];
	out->zk_auth_failed = c->zk_events[EB_ZK_EV_AUTH_FAILED];
	if (standalone(c)) {
		out->zk_state = "standalone";
		out->members = c->state == CL_RUNNING ? 1 : 0;
		return;
	}
	if (c->zk != NULL) {
		out->zk_state = eb__zk_state_name(eb__zk_get_state(c->zk));
		out->zk_session_id = eb__zk_session_id(c->zk);
		out->zk_requests = eb__zk_requests(c->zk);
		out->zk_too_big = eb__zk_too_big(c->zk);
	}
	if (c->cc != NULL) {
		out->members = (uint32_t) eb__childcache_count(c->cc);
		out->members_invalid = (uint32_t) eb__childcache_ignored(c->cc);
	}
}
