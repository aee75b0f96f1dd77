/*
 * The admin endpoint's node step (node_int.h): starts the admin server
 * (admin/) and registers the routes and metric families of every
 * subsystem, in the order GET /metrics shows them: role and cluster
 * (cluster/cluster_admin.h), the bridge, the ingress, node links
 * (link/link_admin.h), the bus, errors by type, the process. Each module
 * registers its own; only ebnode_errors_total, which sums across
 * subsystems, is defined here. docs/ADMIN.md lists every route and metric.
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
#include <ebnode/log.h>

#include "admin/admin.h"
#include "bridge/bridge_admin.h"
#include "cluster/cluster_admin.h"
#include "common/alloc.h"
#include "eventbus/bus_admin.h"
#include "ingress/ingress_admin.h"
#include "link/link_admin.h"
#include "node/node_int.h"

struct eb__node_admin {
	eb__admin        *adm; /* owned */
	eb__bridge_admin  bridge;
	eb__ingress_admin ingress;
};

/* Errors by type across subsystems (each also in its own family). */
static void
errors_metrics(eb__prom *w, void *arg)
{
	eb_node         *n = arg;
	eb_cluster_stats cs;
	eb_bridge_stats  bs;
	eb_bus_totals    bt;
	eb_ingress_stats is;
	size_t           i;

	memset(&cs, 0, sizeof(cs));
	memset(&bs, 0, sizeof(bs));
	memset(&bt, 0, sizeof(bt));
	memset(&is, 0, sizeof(is));
	if (n->cluster.cluster != NULL) {
		eb_cluster_stats_get(n->cluster.cluster, &cs);
	}
	if (n->bridge != NULL) {
		eb_bridge_stats_get(n->bridge, &bs);
	}
	if (n->bus != NULL) {
		eb_bus_stats_totals(n->bus, &bt);
	}
	if (n->ingress != NULL) {
		eb_ingress_stats_get(n->ingress, &is);
	}
	const struct {
		const char *type;
		uint64_t    v;
	} es[] = {
		{ "bridge_malformed_frame",
		    bs.frames_in[EB_BRIDGE_IN_MALFORMED] },
		{ "bridge_unknown_type", bs.frames_in[EB_BRIDGE_IN_UNKNOWN] },
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

static void
register_all(eb_node *n, struct eb__node_admin *na)
{
	na->bridge.bridge = n->bridge;
	na->bridge.port = n->bridge_port;
	na->bridge.tls = n->conf->bridge.tls_cert != NULL &&
	                 n->conf->bridge.tls_cert[0] != '\0';
	na->ingress.ingress = n->ingress;
	na->ingress.bus = n->bus;
	eb__cluster_admin_register(na->adm, &n->cluster);
	eb__bridge_admin_register(na->adm, &na->bridge);
	eb__ingress_admin_register(na->adm, &na->ingress);
	eb__link_admin_register(na->adm, n->links);
	eb__bus_admin_register(na->adm, n->bus);
	eb__admin_on_metrics(na->adm, errors_metrics, n);
	eb__admin_on_metrics(na->adm, eb__admin_process_metrics, &n->start_ms);
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
	if ((rv = eb__admin_new(n->loop, &o, &na->adm)) != 0) {
		free(na);
		return rv;
	}
	register_all(n, na);
	rv = eb__admin_start(na->adm);
	if (rv < 0) {
		EB_LOG_ERR("admin", "listen-failed: listen=%s port=%lld err=%s",
		    c->listen, (long long) c->port, eb_err_name(rv));
		eb__admin_close(na->adm, failed_closed_cb, na);
		return rv;
	}
	n->admin = na;
	n->admin_port = rv;
	eb__node_cluster_self(n); /* the ports standalone answers show */
	EB_LOG_INFO("admin", "listening: listen=%s port=%d auth=%s", c->listen,
	    rv, c->token != NULL && c->token[0] != '\0' ? "bearer" : "none");
	eb__node_complete(n, cb, 0);
	return 0;
}

static void
closed_cb(void *arg)
{
	eb__node_wait *w = arg;

	free(w->n->admin);
	w->n->admin = NULL;
	eb__node_wait_done(w);
}

void
eb__node_admin_stop(eb_node *n, eb__node_done_cb cb)
{
	if (n->admin == NULL) {
		eb__node_complete(n, cb, 0);
		return;
	}
	eb__admin_close(
	    n->admin->adm, closed_cb, eb__node_wait_new(n, cb, 0, 1));
}
