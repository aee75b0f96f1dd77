/*
 * The cluster's admin routes and metric families (cluster_admin.h), read
 * from the eb_cluster object on demand. Answers without a running cluster
 * (not started yet, stopping, standalone) come from the view's own
 * fields. Loop thread only.
 */
#include "cluster/cluster_admin.h"

#include <string.h>

#include <ebnode/version.h>

#include "admin/prom.h"

bool
eb__cluster_view_is_leader(const eb__cluster_view *v)
{
	return v->running && eb_cluster_is_leader(v->cluster);
}

static int64_t
view_epoch(const eb__cluster_view *v)
{
	return v->cluster != NULL ? eb_cluster_epoch(v->cluster) : 0;
}

static int
view_standalone(const eb__cluster_view *v)
{
	return v->self.connect == NULL || v->self.connect[0] == '\0';
}

/* ---- routes ---- */

static void
route_health(const eb__admin_req *rq, eb__admin_resp *rs, void *arg)
{
	eb__cluster_view *v = arg;
	const char       *reason = v->stopping ? "stopping" : "starting";
	int     ok = v->running ? eb_cluster_health(v->cluster, &reason) : 0;
	int     degraded = ok && v->degraded != NULL;
	char    links[256];
	json_t *o;

	(void) rq;
	if (degraded) {
		reason = v->degraded;
	} else if (ok && v->links_degraded != NULL &&
	           v->links_degraded(
	               v->links_degraded_arg, links, sizeof(links)) > 0) {
		degraded = 1;
		reason = links;
	}
	o = json_pack("{s:s, s:s, s:s, s:b}", "status",
	    !ok        ? "unhealthy"
	    : degraded ? "degraded"
	               : "ok",
	    "reason", reason, "node_id", v->self.node_id, "leader",
	    eb__cluster_view_is_leader(v));
	if (v->shared_zk != NULL) {
		(void) json_object_set_new(o, "shared_zk",
		    json_string(v->shared_zk(v->shared_zk_arg)));
	}
	eb__admin_reply_json(rs, ok ? 200 : 503, o);
	json_decref(o);
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
	                 "s:I, s:b, s:b, s:b, s:s, s:i, s:i}",
	    "node_id", m->node_id, "address", m->address, "host", m->host,
	    "member", m->name, "cluster_port", m->cluster_port, "bridge_port",
	    m->bridge_port, "admin_port", m->admin_port, "sequence",
	    (json_int_t) m->seq, "epoch", (json_int_t) m->czxid, "czxid",
	    (json_int_t) m->czxid, "joined_ms", (json_int_t) m->joined_ms,
	    "leader", m == leader, "self", m->self, "eligible", m->eligible,
	    "version", m->version, "link_min", m->link_min, "link_max",
	    m->link_max);
}

/* {"leader","epoch","self","standalone","nodes":[...]} */
static json_t *
nodes_json(const eb__cluster_view *v)
{
	const eb_cluster_opts   *s = &v->self;
	json_t                  *arr = json_array();
	const eb_cluster_member *ms;
	const eb_cluster_member *leader;
	size_t                   count;
	size_t                   i;
	bool                     lead = eb__cluster_view_is_leader(v);

	if (v->cluster == NULL || view_standalone(v)) {
		(void) json_array_append_new(arr,
		    json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:I, s:b, s:b, "
		              "s:s, s:i, s:i}",
		        "node_id", s->node_id, "address", s->address, "host",
		        s->host, "cluster_port", s->cluster_port, "bridge_port",
		        s->bridge_port, "admin_port", s->admin_port, "epoch",
		        (json_int_t) view_epoch(v), "leader", lead, "self", 1,
		        "version", s->version != NULL ? s->version : "",
		        "link_min", s->link_min, "link_max", s->link_max));
		return json_pack("{s:s, s:I, s:s, s:b, s:o}", "leader",
		    lead ? s->node_id : "", "epoch", (json_int_t) view_epoch(v),
		    "self", s->node_id, "standalone", 1, "nodes", arr);
	}
	ms = eb_cluster_members(v->cluster, &count);
	leader = leader_member(v->cluster, ms, count);
	for (i = 0; i < count; i++) {
		(void) json_array_append_new(arr, member_json(&ms[i], leader));
	}
	return json_pack("{s:s?, s:I, s:s, s:b, s:o}", "leader",
	    leader != NULL ? leader->node_id : NULL, "epoch",
	    (json_int_t) (leader != NULL ? leader->czxid : 0), "self",
	    s->node_id, "standalone", 0, "nodes", arr);
}

static void
route_nodes(const eb__admin_req *rq, eb__admin_resp *rs, void *arg)
{
	json_t *o = nodes_json(arg);

	(void) rq;
	eb__admin_reply_json(rs, 200, o);
	json_decref(o);
}

/* {"node_id","address","epoch","self",...} or NULL: no leader known. */
static json_t *
leader_json(const eb__cluster_view *v)
{
	const eb_cluster_member *ms;
	const eb_cluster_member *leader;
	size_t                   count;

	if (v->cluster == NULL || view_standalone(v)) {
		if (!eb__cluster_view_is_leader(v)) {
			return NULL;
		}
		return json_pack("{s:s, s:s, s:I, s:b, s:b}", "node_id",
		    v->self.node_id, "address", v->self.address, "epoch",
		    (json_int_t) view_epoch(v), "self", 1, "standalone", 1);
	}
	ms = eb_cluster_members(v->cluster, &count);
	leader = leader_member(v->cluster, ms, count);
	if (leader == NULL) {
		return NULL;
	}
	return json_pack("{s:s, s:s, s:s, s:I, s:I, s:b, s:b, s:b}", "node_id",
	    leader->node_id, "address", leader->address, "member", leader->name,
	    "epoch", (json_int_t) leader->czxid, "sequence",
	    (json_int_t) leader->seq, "self", leader->self, "is_leader_here",
	    eb__cluster_view_is_leader(v), "standalone", 0);
}

static void
route_leader(const eb__admin_req *rq, eb__admin_resp *rs, void *arg)
{
	json_t *o = leader_json(arg);

	(void) rq;
	if (o == NULL) {
		eb__admin_reply_error(rs, 503, "no_leader", "no leader known");
		return;
	}
	eb__admin_reply_json(rs, 200, o);
	json_decref(o);
}

static void
route_release(const eb__admin_req *rq, eb__admin_resp *rs, void *arg)
{
	eb__cluster_view *v = arg;
	int     rv = v->running ? eb_cluster_step_down(v->cluster) : EB_ECLOSED;
	json_t *o;

	(void) rq;
	if (rv == EB_ENOTLEADER) {
		eb__admin_reply_error(
		    rs, 409, "not_leader", "this node is not the leader");
		return;
	}
	if (rv != 0) {
		eb__admin_reply_error(rs, 503, "unavailable", eb_strerror(rv));
		return;
	}
	o = json_pack("{s:b, s:s, s:I}", "released", 1, "node_id",
	    v->self.node_id, "epoch", (json_int_t) view_epoch(v));
	eb__admin_reply_json(rs, 200, o);
	json_decref(o);
}

/* ---- metrics ---- */

#define ZK_STATES 6

/* What the metric tables read: the cluster's stats and what the view
 * derives (role, leadership, the session state one-hot). */
typedef struct cluster_vals {
	eb_cluster_stats s;
	uint64_t         leader;           /* this node leads (lease valid) */
	uint64_t         eligible;         /* node.eligible */
	uint64_t         epoch;            /* the known leader's, 0: none */
	uint64_t         known;            /* a leader is known */
	uint64_t         state[ZK_STATES]; /* 1 at the current zk_states[] */
} cluster_vals;

#define CV(m) EB__PROM_AT(cluster_vals, m)

/* Label values match eb_cluster_stats.zk_state ("down": no cluster). */
static const eb__prom_field zk_states[ZK_STATES] = {
	{ "standalone", CV(state[0]) },
	{ "connecting", CV(state[1]) },
	{ "connected", CV(state[2]) },
	{ "suspended", CV(state[3]) },
	{ "closed", CV(state[4]) },
	{ "down", CV(state[5]) },
};

static const eb__prom_field zk_events[] = {
	{ "connected", CV(s.zk_connected) },
	{ "suspended", CV(s.zk_suspended) },
	{ "reconnected", CV(s.zk_reconnected) },
	{ "expired", CV(s.zk_expired) },
	{ "auth_failed", CV(s.zk_auth_failed) },
};

/* After ebnode_info. */
static const eb__prom_desc families[] = {
	EB__PROM_ONE("ebnode_leader", "gauge",
	    "1 while this node is the cluster leader (lease valid), else 0.",
	    CV(leader)),
	EB__PROM_ONE("ebnode_eligible", "gauge",
	    "1 when this node may lead (node.eligible), else 0.", CV(eligible)),
	EB__PROM_ONE("ebnode_epoch", "gauge",
	    "Epoch of the current leader as this node knows it (0: none).",
	    CV(epoch)),
	EB__PROM_ONE("ebnode_leader_known", "gauge",
	    "1 while a leader is known to this node, else 0.", CV(known)),
	EB__PROM_ONE("ebnode_members", "gauge",
	    "Cluster members this node sees (standalone: 1).", CV(s.members)),
	EB__PROM_ONE("ebnode_members_invalid", "gauge",
	    "Children of <root>/members ignored for leadership and membership "
	    "(foreign name, persistent, not a member record, unreadable).",
	    CV(s.members_invalid)),
	EB__PROM_ONE("ebnode_zk_requests_total", "counter",
	    "Requests this node sent to ZooKeeper (current session object).",
	    CV(s.zk_requests)),
	EB__PROM_ONE("ebnode_zk_requests_too_big_total", "counter",
	    "Requests refused before sending: above "
	    "zookeeper.max_request_bytes (current session object).",
	    CV(s.zk_too_big)),
	EB__PROM_ONE("ebnode_leader_elections_total", "counter",
	    "Times this node started leading.", CV(s.leads)),
	EB__PROM_ONE("ebnode_leader_changes_total", "counter",
	    "Leadership changes observed by this node (a new leader became "
	    "known).",
	    CV(s.leader_changes)),
	EB__PROM_SET("ebnode_zk_session_state", "gauge",
	    "ZooKeeper session state: 1 for the current state, 0 otherwise.",
	    "state", zk_states),
	EB__PROM_SET("ebnode_zk_session_events_total", "counter",
	    "ZooKeeper session events seen by this node.", "event", zk_events),
};

static const eb__prom_field error_types[] = {
	{ "zk_session_expired", EB__PROM_AT(eb_cluster_stats, zk_expired) },
	{ "zk_auth_failed", EB__PROM_AT(eb_cluster_stats, zk_auth_failed) },
};

/* The cluster's stats, or zeros (state "down") without one. */
static void
view_stats(const eb__cluster_view *v, eb_cluster_stats *cs)
{
	memset(cs, 0, sizeof(*cs));
	cs->zk_state = "down";
	if (v->cluster != NULL) {
		eb_cluster_stats_get(v->cluster, cs);
	}
}

static void
cluster_vals_get(const eb__cluster_view *v, cluster_vals *cv)
{
	eb_cluster_leadership l;
	size_t                i;

	memset(cv, 0, sizeof(*cv));
	view_stats(v, &cv->s);
	memset(&l, 0, sizeof(l));
	if (v->cluster != NULL) {
		eb_cluster_leadership_get(v->cluster, &l);
	}
	cv->leader = eb__cluster_view_is_leader(v) ? 1 : 0;
	cv->eligible = v->self.election.eligible ? 1 : 0;
	cv->epoch =
	    l.known && l.leader_epoch > 0 ? (uint64_t) l.leader_epoch : 0;
	cv->known = l.known ? 1 : 0;
	for (i = 0; i < ZK_STATES; i++) {
		cv->state[i] =
		    strcmp(cv->s.zk_state, zk_states[i].label) == 0 ? 1 : 0;
	}
}

static void
cluster_metrics(eb__prom *w, void *arg)
{
	const eb__cluster_view *v = arg;
	cluster_vals            cv;

	cluster_vals_get(v, &cv);
	{
		const char *info[] = { "node_id", v->self.node_id, "address",
			v->self.address, "version", EB_VERSION_STRING, "mode",
			strcmp(cv.s.zk_state, "standalone") == 0 ? "standalone"
			                                         : "clustered",
			NULL };

		eb__prom_family(w, "ebnode_info", "gauge",
		    "Constant 1, labelled with the node's identity and "
		    "version.");
		eb__prom_u64(w, "ebnode_info", info, 1);
	}
	eb__prom_write(w, families, EB__PROM_LEN(families), &cv);
}

void
eb__cluster_admin_errors(eb__prom *w, const eb__cluster_view *v)
{
	eb_cluster_stats cs;

	view_stats(v, &cs);
	eb__admin_error_rows(w, error_types, EB__PROM_LEN(error_types), &cs);
}

void
eb__cluster_admin_register(eb__admin *adm, eb__cluster_view *v)
{
	eb__admin_route(adm, "GET", "/health", route_health, v);
	eb__admin_route(adm, "GET", "/nodes", route_nodes, v);
	eb__admin_route(adm, "GET", "/leader", route_leader, v);
	eb__admin_route(adm, "POST", "/leader/release", route_release, v);
	eb__admin_on_metrics(adm, cluster_metrics, v);
}
