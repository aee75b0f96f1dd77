/*
 * Wiring of the cluster object (ebnode/cluster.h) into the node (contract
 * in node_int.h and node_cluster.h): the options from the configuration
 * (node_cluster_opts), start and stop as the last node step, a run-time
 * failure fails the node (eb__node_fail), the leadership observer raises
 * the bus fence (rule 6) and tells the node's leadership listeners (the
 * ingress) about every change, and the members observer reconciles the
 * node links with the member list (eb_link_mgr_set_peers).
 *
 * Start: a failed start (duplicate address: exit 3; lease-unsafe: exit 1)
 * holds nothing: the cluster object is closed before the step reports.
 * Stop (rule 8): eb_cluster_stop revokes leadership synchronously (the
 * listeners release ingress), leaves (bounded), then the object is closed.
 * Loop thread only.
 */
#include "node/node_cluster.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <ebnode/cluster.h>
#include <ebnode/link.h>
#include <ebnode/log.h>
#include <ebnode/version.h>

#include "common/alloc.h"
#include "common/obs.h"
#include "node/node_int.h"
#include "node/node_shared.h"

struct eb__node_cluster {
	eb_node         *n;         /* borrowed (owns us) */
	eb_cluster      *c;         /* owned; NULL before start */
	eb__obs          listeners; /* of eb__node_leader_cb */
	int              notified;  /* leader flag last told the listeners */
	int              starting;  /* eb_cluster_start's callback pending */
	int              running;
	int              stopping;
	eb__node_done_cb cb; /* start or stop step */
	int              status;
};

typedef struct eb__node_cluster node_cluster;

static node_cluster *
nc_get(eb_node *n)
{
	if (n->cluster == NULL) {
		n->cluster = eb__calloc(1, sizeof(node_cluster));
		n->cluster->n = n;
		eb__obs_init(&n->cluster->listeners);
	}
	return n->cluster;
}

/* The cluster options: the configuration's section (node_opts.c) plus
 * the ports the listeners bound. */
static void
node_cluster_opts(const eb_node *n, eb_cluster_opts *o)
{
	eb__node_cluster_opts(n->conf, o);
	o->cluster_port = n->cluster_port;
	o->bridge_port = n->bridge_port;
	o->admin_port = n->admin_port;
}

/* ---- observers ---- */

int
eb__node_cluster_on_leader(eb_node *n, eb__node_leader_cb cb, void *arg)
{
	eb__obs_add(&nc_get(n)->listeners, (eb__obs_fn) cb, arg);
	return 0;
}

static void
leadership_cb(eb_cluster *c, const eb_cluster_leadership *l, void *arg)
{
	node_cluster *nc = arg;
	eb_node      *n = nc->n;
	eb__obs_it    it;

	(void) c;
	/* Anything stamped below the current leader's epoch comes from a
	 * superseded leader: the bus refuses it from now on (rule 6). */
	if (n->bus != NULL && l->leader && l->epoch > 0) {
		eb_bus_fence_raise(n->bus, (uint64_t) l->epoch);
	}
	if (n->bus != NULL && l->leader_epoch > 0) {
		eb_bus_fence_raise(n->bus, (uint64_t) l->leader_epoch);
	}
	if (l->leader == nc->notified) {
		return;
	}
	nc->notified = l->leader;
	EB__OBS_EACH(&nc->listeners, it)
	{
		((eb__node_leader_cb) it.fn)(
		    n, l->leader != 0, l->epoch, it.arg);
	}
}

static void
members_cb(eb_cluster *c, const eb_cluster_member *ms, size_t count, void *arg)
{
	node_cluster *nc = arg;
	eb_link_peer *peers;
	size_t        i;

	(void) c;
	if (nc->n->links == NULL) {
		return;
	}
	/* In sequence order: for one node id the newest member wins. */
	peers = eb__calloc(count + 1, sizeof(*peers));
	for (i = 0; i < count; i++) {
		peers[i].node_id = ms[i].node_id;
		peers[i].host = ms[i].host;
		peers[i].port = ms[i].cluster_port;
	}
	(void) eb_link_mgr_set_peers(nc->n->links, peers, count);
	free(peers);
}

static void
fail_cb(eb_cluster *c, int err, void *arg)
{
	node_cluster *nc = arg;

	(void) c;
	if (nc->running && !nc->stopping) {
		eb__node_fail(nc->n, err);
	}
}

/* ---- lifecycle ---- */

static void
cluster_closed_cb(eb_cluster *c, void *arg)
{
	node_cluster    *nc = arg;
	eb_node         *n = nc->n;
	eb__node_done_cb cb = nc->cb;
	int              status = nc->status;

	(void) c;
	/* A node is started once: nothing of the cluster wiring outlives its
	 * stop (or failed start). */
	n->cluster = NULL;
	eb__obs_free(&nc->listeners);
	free(nc);
	if (cb != NULL) {
		cb(n, status);
	}
}

static void
close_with(node_cluster *nc, eb__node_done_cb cb, int status)
{
	eb__node_shared_stop(nc->n);
	nc->cb = cb;
	nc->status = status;
	eb_cluster_close(nc->c, cluster_closed_cb, nc);
}

static void
started_cb(eb_cluster *c, int status, void *arg)
{
	node_cluster    *nc = arg;
	eb__node_done_cb cb = nc->cb;

	(void) c;
	nc->starting = 0;
	if (status != 0) {
		close_with(nc, cb, status);
		return;
	}
	nc->running = 1;
	eb__node_shared_start(nc->n);
	cb(nc->n, 0);
}

int
eb__node_cluster_start(eb_node *n, eb__node_done_cb cb)
{
	node_cluster   *nc = nc_get(n);
	eb_cluster_opts o;
	eb_errbuf       e;
	int             rv;

	node_cluster_opts(n, &o);
	rv = eb_cluster_new(n->loop, &o, &nc->c, &e);
	if (rv != 0) {
		EB_LOG_ERR("node", "cluster-failed: err=%s detail=%s",
		    eb_err_name(rv), e.msg);
		n->cluster = NULL;
		eb__obs_free(&nc->listeners);
		free(nc);
		return rv;
	}
	eb_cluster_on_leadership(nc->c, leadership_cb, nc);
	eb_cluster_on_members(nc->c, members_cb, nc);
	eb_cluster_on_fail(nc->c, fail_cb, nc);
	nc->cb = cb;
	nc->starting = 1;
	rv = eb_cluster_start(nc->c, started_cb, nc);
	if (rv != 0) {
		nc->starting = 0;
		/* Nothing will call cb; close quietly. */
		close_with(nc, NULL, rv);
		return rv;
	}
	return 0;
}

void
eb__node_cluster_cancel_start(eb_node *n)
{
	node_cluster *nc = n->cluster;

	if (nc != NULL && nc->starting) {
		/* The start completes with EB_ECANCELED (started_cb). */
		eb_cluster_stop(nc->c, NULL, NULL);
	}
}

static void
stopped_cb(eb_cluster *c, void *arg)
{
	node_cluster *nc = arg;

	(void) c;
	close_with(nc, nc->cb, 0);
}

void
eb__node_cluster_stop(eb_node *n, eb__node_done_cb cb)
{
	node_cluster *nc = n->cluster;

	nc->stopping = 1;
	nc->cb = cb;
	eb__node_shared_stop(n); /* its locks go before the member does */
	eb_cluster_stop(nc->c, stopped_cb, nc);
}

/* ---- what the admin endpoint and the metrics show ---- */

static eb_cluster *
running(eb_node *n)
{
	node_cluster *nc = n->cluster;

	return nc != NULL && nc->running ? nc->c : NULL;
}

bool
eb__node_cluster_is_leader(eb_node *n)
{
	eb_cluster *c = running(n);

	return c != NULL && !n->cluster->stopping && eb_cluster_is_leader(c);
}

eb_cluster *
eb__node_cluster_obj(eb_node *n)
{
	return running(n);
}

int64_t
eb__node_cluster_epoch(eb_node *n)
{
	return n->cluster != NULL && n->cluster->c != NULL
	           ? eb_cluster_epoch(n->cluster->c)
	           : 0;
}

int
eb__node_cluster_release(eb_node *n)
{
	eb_cluster *c = running(n);

	if (c == NULL || n->cluster->stopping) {
		return EB_ECLOSED;
	}
	return eb_cluster_step_down(c);
}

int
eb__node_cluster_health(eb_node *n, const char **reason)
{
	node_cluster *nc = n->cluster;

	if (nc == NULL || !nc->running || nc->stopping) {
		*reason = nc != NULL && nc->stopping ? "stopping" : "starting";
		return 0;
	}
	return eb_cluster_health(nc->c, reason);
}

static int
standalone(const eb_node *n)
{
	return n->conf->cluster.connect == NULL ||
	       n->conf->cluster.connect[0] == '\0';
}

/* The cluster object while it exists (from the start of the step). */
static eb_cluster *
cl(eb_node *n)
{
	return n->cluster != NULL ? n->cluster->c : NULL;
}

/* The member the leadership view names, or NULL. */
static const eb_cluster_member *
leader_member(eb_cluster *c, const eb_cluster_member *ms, size_t count)
{
	eb_cluster_leadership l;
	size_t                i;

	eb_cluster_leadership_get(c, &l);
	if (!l.known) {
		return NULL;
	}
	for (i = 0; i < count; i++) {
		if (ms[i].czxid == l.leader_epoch &&
		    strcmp(ms[i].node_id, l.leader_node_id) == 0) {
			return &ms[i];
		}
	}
	return NULL;
}

static json_t *
member_json(const eb_cluster_member *m, const eb_cluster_member *leader)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:I, s:I, s:I, "
	                 "s:I, s:b, s:b, s:b, s:s}",
	    "node_id", m->node_id, "address", m->address, "host", m->host,
	    "member", m->name, "cluster_port", m->cluster_port, "bridge_port",
	    m->bridge_port, "admin_port", m->admin_port, "sequence",
	    (json_int_t) m->seq, "epoch", (json_int_t) m->czxid, "czxid",
	    (json_int_t) m->czxid, "joined_ms", (json_int_t) m->joined_ms,
	    "leader", m == leader, "self", m->self, "eligible", m->eligible,
	    "version", m->version);
}

json_t *
eb__node_cluster_nodes_json(eb_node *n)
{
	eb_cluster              *c = cl(n);
	json_t                  *arr = json_array();
	const eb_cluster_member *ms;
	const eb_cluster_member *leader;
	size_t                   count;
	size_t                   i;

	if (c == NULL || standalone(n)) {
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
	ms = eb_cluster_members(c, &count);
	leader = leader_member(c, ms, count);
	for (i = 0; i < count; i++) {
		(void) json_array_append_new(arr, member_json(&ms[i], leader));
	}
	return json_pack("{s:s?, s:I, s:s, s:b, s:o}", "leader",
	    leader != NULL ? leader->node_id : NULL, "epoch",
	    (json_int_t) (leader != NULL ? leader->czxid : 0), "self",
	    n->conf->cluster.node_id, "standalone", 0, "nodes", arr);
}

json_t *
eb__node_cluster_leader_json(eb_node *n)
{
	eb_cluster              *c = cl(n);
	const eb_cluster_member *ms;
	const eb_cluster_member *leader;
	size_t                   count;

	if (c == NULL || standalone(n)) {
		if (!eb__node_cluster_is_leader(n)) {
			return NULL;
		}
		return json_pack("{s:s, s:s, s:I, s:b, s:b}", "node_id",
		    n->conf->cluster.node_id, "address",
		    n->conf->cluster.address, "epoch",
		    (json_int_t) eb__node_cluster_epoch(n), "self", 1,
		    "standalone", 1);
	}
	ms = eb_cluster_members(c, &count);
	leader = leader_member(c, ms, count);
	if (leader == NULL) {
		return NULL;
	}
	return json_pack("{s:s, s:s, s:s, s:I, s:I, s:b, s:b, s:b}", "node_id",
	    leader->node_id, "address", leader->address, "member", leader->name,
	    "epoch", (json_int_t) leader->czxid, "sequence",
	    (json_int_t) leader->seq, "self", leader->self, "is_leader_here",
	    eb__node_cluster_is_leader(n), "standalone", 0);
}

void
eb__node_cluster_stats_get(eb_node *n, eb__node_cluster_stats *out)
{
	node_cluster         *nc = n->cluster;
	eb_cluster_stats      s;
	eb_cluster_leadership l;

	memset(out, 0, sizeof(*out));
	out->zk_state = "down";
	if (nc == NULL || nc->c == NULL) {
		return;
	}
	eb_cluster_stats_get(nc->c, &s);
	eb_cluster_leadership_get(nc->c, &l);
	out->zk_state = s.zk_state;
	out->zk_session_id = s.zk_session_id;
	out->members = s.members;
	out->members_invalid = s.members_invalid;
	out->zk_requests = s.zk_requests;
	out->leader_known = l.known;
	out->leader_epoch = l.known ? l.leader_epoch : 0;
	out->leads = s.leads;
	out->leader_changes = s.leader_changes;
	out->zk_connected = s.zk_connected;
	out->zk_suspended = s.zk_suspended;
	out->zk_reconnected = s.zk_reconnected;
	out->zk_expired = s.zk_expired;
	out->zk_auth_failed = s.zk_auth_failed;
}
