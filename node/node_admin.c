/*
 * The admin endpoint's node step (node_int.h): starts the admin server
 * (admin/) and registers the routes and metric families of every
 * subsystem, in the order GET /metrics shows them: role and cluster, the
 * bridge, the ingress, node links, the bus, errors by type, the process.
 *
 * The bus, bridge and ingress register their own (eventbus/bus_admin.h,
 * bridge/bridge_admin.h, ingress/ingress_admin.h). Registered here: what
 * the node's wiring owns, read through node_cluster.h and the link
 * manager: GET /health, /nodes, /leader, POST /leader/release, the role,
 * ZooKeeper and link families, and errors by type across subsystems; the
 * process families come from admin/ (eb__admin_process_metrics).
 * docs/ADMIN.md lists every route and metric.
 *
 * The step starts after bus, ingress and bridge and stops before them, so
 * the objects registered outlive the server. Counters come from the
 * objects that count; an object that is closed and re-created (the
 * cluster wiring across a stop) starts again from zero, which Prometheus
 * treats as a counter reset. Loop thread only.
 */
#include <stdlib.h>
#include <string.h>

#include <ebnode/bridge.h>
#include <ebnode/bus.h>
#include <ebnode/ingress.h>
#include <ebnode/link.h>
#include <ebnode/log.h>
#include <ebnode/version.h>

#include "admin/admin.h"
#include "bridge/bridge_admin.h"
#include "common/alloc.h"
#include "common/vec.h"
#include "eventbus/bus_admin.h"
#include "ingress/ingress_admin.h"
#include "node/node_cluster.h"
#include "node/node_int.h"
#include "node/node_shared.h"

struct eb__node_admin {
	eb_node          *n;   /* borrowed */
	eb__admin        *adm; /* owned */
	eb__bridge_admin  bridge;
	eb__ingress_admin ingress;
	eb__node_done_cb  stop_cb;
};

/* ---- routes ---- */

static void
route_health(const eb__admin_req *rq, eb__admin_resp *rs, void *arg)
{
	eb_node    *n = arg;
	const char *reason = "?";
	int         ok = eb__node_cluster_health(n, &reason);
	json_t     *o;

	(void) rq;
	o = json_pack("{s:s, s:s, s:s, s:b}", "status", ok ? "ok" : "unhealthy",
	    "reason", reason, "node_id", n->conf->cluster.node_id, "leader",
	    eb__node_cluster_is_leader(n));
	eb__admin_reply_json(rs, ok ? 200 : 503, o);
	json_decref(o);
}

static void
route_nodes(const eb__admin_req *rq, eb__admin_resp *rs, void *arg)
{
	eb_node *n = arg;
	json_t  *o = eb__node_cluster_nodes_json(n);

	(void) rq;
	eb__admin_reply_json(rs, 200, o);
	json_decref(o);
}

static void
route_leader(const eb__admin_req *rq, eb__admin_resp *rs, void *arg)
{
	eb_node *n = arg;
	json_t  *o = eb__node_cluster_leader_json(n);

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
	eb_node *n = arg;
	int      rv = eb__node_cluster_release(n);
	json_t  *o;

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
	    n->conf->cluster.node_id, "epoch",
	    (json_int_t) eb__node_cluster_epoch(n));
	eb__admin_reply_json(rs, 200, o);
	json_decref(o);
}

/* ---- role, cluster ---- */

static void
emit_node(eb__prom *w, eb_node *n, const eb__node_cluster_stats *cs)
{
	const char *info[] = { "node_id", n->conf->cluster.node_id, "address",
		n->conf->cluster.address, "version", EB_VERSION_STRING, "mode",
		strcmp(cs->zk_state, "standalone") == 0 ? "standalone"
		                                        : "clustered",
		NULL };
	static const char *const states[] = { "standalone", "connecting",
		"connected", "suspended", "closed", "down" };
	size_t                   i;

	eb__prom_family(w, "ebnode_info", "gauge",
	    "Constant 1, labelled with the node's identity and version.");
	eb__prom_u64(w, "ebnode_info", info, 1);
	eb__prom_one(w, "ebnode_leader", "gauge",
	    "1 while this node is the cluster leader (lease valid), else 0.",
	    eb__node_cluster_is_leader(n) ? 1 : 0);
	eb__prom_one(w, "ebnode_eligible", "gauge",
	    "1 when this node may lead (node.eligible), else 0.",
	    n->conf->cluster.election.eligible ? 1 : 0);
	eb__prom_one(w, "ebnode_epoch", "gauge",
	    "Epoch of the current leader as this node knows it (0: none).",
	    cs->leader_epoch > 0 ? (uint64_t) cs->leader_epoch : 0);
	eb__prom_one(w, "ebnode_leader_known", "gauge",
	    "1 while a leader is known to this node, else 0.",
	    cs->leader_known ? 1 : 0);
	eb__prom_one(w, "ebnode_members", "gauge",
	    "Cluster members this node sees (standalone: 1).", cs->members);
	eb__prom_one(w, "ebnode_members_invalid", "gauge",
	    "Children of <root>/members ignored for leadership and membership "
	    "(foreign name, persistent, not a member record, unreadable).",
	    cs->members_invalid);
	eb__prom_one(w, "ebnode_zk_requests_total", "counter",
	    "Requests this node sent to ZooKeeper (current session object).",
	    cs->zk_requests);
	eb__prom_one(w, "ebnode_leader_elections_total", "counter",
	    "Times this node started leading.", cs->leads);
	eb__prom_one(w, "ebnode_leader_changes_total", "counter",
	    "Leadership changes observed by this node (a new leader became "
	    "known).",
	    cs->leader_changes);
	eb__prom_family(w, "ebnode_zk_session_state", "gauge",
	    "ZooKeeper session state: 1 for the current state, 0 otherwise.");
	for (i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		const char *l[] = { "state", states[i], NULL };

		eb__prom_u64(w, "ebnode_zk_session_state", l,
		    strcmp(cs->zk_state, states[i]) == 0 ? 1 : 0);
	}
}

static void
emit_zk_events(eb__prom *w, const eb__node_cluster_stats *cs)
{
	const struct {
		const char *ev;
		uint64_t    v;
	} evs[] = {
		{ "connected", cs->zk_connected },
		{ "suspended", cs->zk_suspended },
		{ "reconnected", cs->zk_reconnected },
		{ "expired", cs->zk_expired },
		{ "auth_failed", cs->zk_auth_failed },
	};
	size_t i;

	eb__prom_family(w, "ebnode_zk_session_events_total", "counter",
	    "ZooKeeper session events seen by this node.");
	for (i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
		const char *l[] = { "event", evs[i].ev, NULL };

		eb__prom_u64(w, "ebnode_zk_session_events_total", l, evs[i].v);
	}
}

static void
cluster_metrics(eb__prom *w, void *arg)
{
	eb_node               *n = arg;
	eb__node_cluster_stats cs;

	eb__node_cluster_stats_get(n, &cs);
	emit_node(w, n, &cs);
	emit_zk_events(w, &cs);
}

/* ---- node links ---- */

typedef struct link_row {
	char              *node_id; /* owned */
	eb_link_peer_stats st;
} link_row;

static void
link_collect_cb(const eb_link_peer_stats *s, void *arg)
{
	link_row *r = eb__vec_push(arg);

	r->st = *s;
	r->node_id = eb__strdup(s->node_id);
	r->st.node_id = r->node_id;
	r->st.host = NULL; /* borrowed: not kept */
}

/* Every per-peer family, one group each, peers in the same order. */
static void
emit_link_family(eb__prom *w, const eb__vec *lr, int which)
{
	size_t i;

	for (i = 0; i < lr->len; i++) {
		const eb_link_peer_stats *s =
		    &((const link_row *) eb__vec_at(lr, i))->st;
		const char *l[] = { "peer", s->node_id, NULL };
		const char *in[] = { "peer", s->node_id, "direction", "in",
			NULL };
		const char *out[] = { "peer", s->node_id, "direction", "out",
			NULL };

		switch (which) {
		case 0:
			eb__prom_u64(w, "ebnode_link_up", l, s->up ? 1 : 0);
			break;
		case 1:
			eb__prom_u64(w, "ebnode_link_ups_total", l, s->ups);
			break;
		case 2:
			eb__prom_u64(
			    w, "ebnode_link_frames_total", in, s->frames_in);
			eb__prom_u64(
			    w, "ebnode_link_frames_total", out, s->frames_out);
			break;
		case 3:
			eb__prom_u64(
			    w, "ebnode_link_bytes_total", in, s->bytes_in);
			eb__prom_u64(
			    w, "ebnode_link_bytes_total", out, s->bytes_out);
			break;
		default:
			eb__prom_u64(
			    w, "ebnode_link_queued_bytes", l, s->queued);
			break;
		}
	}
}

static void
links_metrics(eb__prom *w, void *arg)
{
	eb_node *n = arg;
	eb__vec  lr;
	size_t   i;

	eb__vec_init(&lr, sizeof(link_row));
	if (n->links != NULL) {
		eb_link_mgr_stats_foreach(n->links, link_collect_cb, &lr);
	}
	eb__prom_family(w, "ebnode_link_up", "gauge",
	    "1 while the node link to peer is up (hello exchanged).");
	emit_link_family(w, &lr, 0);
	eb__prom_family(w, "ebnode_link_ups_total", "counter",
	    "Times the node link to peer came up.");
	emit_link_family(w, &lr, 1);
	eb__prom_family(w, "ebnode_link_frames_total", "counter",
	    "Node link frames by peer and direction.");
	emit_link_family(w, &lr, 2);
	eb__prom_family(w, "ebnode_link_bytes_total", "counter",
	    "Node link bytes by peer and direction.");
	emit_link_family(w, &lr, 3);
	eb__prom_family(w, "ebnode_link_queued_bytes", "gauge",
	    "Bytes waiting to be written on the node link to peer.");
	emit_link_family(w, &lr, 4);
	for (i = 0; i < lr.len; i++) {
		free(((link_row *) eb__vec_at(&lr, i))->node_id);
	}
	eb__vec_free(&lr);
}

/* ---- errors by type ---- */

static void
errors_metrics(eb__prom *w, void *arg)
{
	eb_node               *n = arg;
	eb__node_cluster_stats cs;
	eb_bridge_stats        bs;
	eb_bus_totals          bt;
	eb_ingress_stats       is;
	eb_ingress            *in = eb__node_ingress(n);
	size_t                 i;

	eb__node_cluster_stats_get(n, &cs);
	memset(&bs, 0, sizeof(bs));
	memset(&bt, 0, sizeof(bt));
	memset(&is, 0, sizeof(is));
	if (n->bridge != NULL) {
		eb_bridge_stats_get(n->bridge, &bs);
	}
	if (n->bus != NULL) {
		eb_bus_stats_totals(n->bus, &bt);
	}
	if (in != NULL) {
		eb_ingress_stats_get(in, &is);
	}
	{
		const struct {
			const char *type;
			uint64_t    v;
		} es[] = {
			{ "bridge_malformed_frame",
			    bs.frames_in[EB_BRIDGE_IN_MALFORMED] },
			{ "bridge_unknown_type",
			    bs.frames_in[EB_BRIDGE_IN_UNKNOWN] },
			{ "bridge_bad_length", bs.conns_closed_frame },
			{ "bridge_access_denied", bs.denied },
			{ "bridge_auth_failed", bs.auth_failed },
			{ "bridge_tls_failed", bs.tls_failed },
			{ "bridge_slow_consumer", bs.conns_closed_slow },
			{ "bus_no_handlers", bt.no_handlers },
			{ "bus_failed", bt.failed },
			{ "bus_dropped", bt.dropped },
			{ "ingress_failed", is.failed },
			{ "ingress_dropped", is.dropped },
			{ "ingress_unrouted", is.unrouted },
			{ "zk_session_expired", cs.zk_expired },
			{ "zk_auth_failed", cs.zk_auth_failed },
		};

		eb__prom_family(w, "ebnode_errors_total", "counter",
		    "Errors by type (each also counted in its own family).");
		for (i = 0; i < sizeof(es) / sizeof(es[0]); i++) {
			const char *l[] = { "type", es[i].type, NULL };

			eb__prom_u64(w, "ebnode_errors_total", l, es[i].v);
		}
	}
}

/* ---- the step ---- */

static void
register_all(struct eb__node_admin *na)
{
	eb_node   *n = na->n;
	eb__admin *adm = na->adm;

	eb__admin_route(adm, "GET", "/health", route_health, n);
	eb__admin_route(adm, "GET", "/nodes", route_nodes, n);
	eb__admin_route(adm, "GET", "/leader", route_leader, n);
	eb__admin_route(adm, "POST", "/leader/release", route_release, n);
	na->bridge.bridge = n->bridge;
	na->bridge.port = n->bridge_port;
	na->bridge.tls = n->conf->bridge.tls_cert != NULL &&
	                 n->conf->bridge.tls_cert[0] != '\0';
	na->ingress.ingress = eb__node_ingress(n);
	na->ingress.bus = n->bus;
	eb__admin_on_metrics(adm, cluster_metrics, n);
	eb__bridge_admin_register(adm, &na->bridge);
	eb__ingress_admin_register(adm, &na->ingress);
	eb__admin_on_metrics(adm, links_metrics, n);
	eb__bus_admin_register(adm, n->bus);
	eb__admin_on_metrics(adm, errors_metrics, n);
	eb__admin_on_metrics(adm, eb__node_shared_metrics, n);
	eb__admin_on_metrics(adm, eb__admin_process_metrics, &n->start_ms);
}

static void
failed_closed_cb(void *arg)
{
	free(arg);
}

int
eb__node_admin_start(eb_node *n, eb__node_done_cb cb)
{
	const eb_conf_admin   *c = &n->conf->admin;
	struct eb__node_admin *na;
	eb__admin_opts         o;
	int                    rv;

	if (!c->enabled) {
		n->admin_port = 0;
		eb__node_complete(n, cb, 0);
		return 0;
	}
	eb__admin_opts_init(&o);
	o.listen = c->listen;
	o.port = (int) c->port;
	o.token = c->token;
	o.request_timeout_ms = (uint64_t) c->request_timeout_ms;
	na = eb__calloc(1, sizeof(*na));
	na->n = n;
	if ((rv = eb__admin_new(n->loop, &o, &na->adm)) != 0) {
		free(na);
		return rv;
	}
	register_all(na);
	rv = eb__admin_start(na->adm);
	if (rv < 0) {
		EB_LOG_ERR("admin", "listen-failed: listen=%s port=%lld err=%s",
		    c->listen, (long long) c->port, eb_err_name(rv));
		eb__admin_close(na->adm, failed_closed_cb, na);
		return rv;
	}
	n->admin = na;
	n->admin_port = rv;
	EB_LOG_INFO("admin", "listening: listen=%s port=%d auth=%s", c->listen,
	    rv, c->token != NULL && c->token[0] != '\0' ? "bearer" : "none");
	eb__node_complete(n, cb, 0);
	return 0;
}

static void
closed_cb(void *arg)
{
	struct eb__node_admin *na = arg;
	eb__node_done_cb       cb = na->stop_cb;
	eb_node               *n = na->n;

	free(na);
	n->admin = NULL;
	cb(n, 0);
}

void
eb__node_admin_stop(eb_node *n, eb__node_done_cb cb)
{
	struct eb__node_admin *na = n->admin;

	if (na == NULL) {
		eb__node_complete(n, cb, 0);
		return;
	}
	na->stop_cb = cb;
	eb__admin_close(na->adm, closed_cb, na);
}
