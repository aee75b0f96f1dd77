/*
 * The admin step (node_int.h): the admin server (admin/) with every
 * module's routes and metric families, registered by the module's own
 * *_admin.h in the order GET /metrics shows them (docs/ADMIN.md). The step
 * starts after bus, ingress and bridge and stops before them, so what it
 * registered outlives the server. Loop thread only.
 */
#include <string.h>

#include <ebnode/log.h>

#include "admin/admin.h"
#include "eventbus/bus_admin.h"
#include "link/link_admin.h"
#include "node/node_int.h"
#include "shared/shared_admin.h"
#include "web/cview.h"
#include "web/dashboard.h"

/* Errors by type across subsystems, rows from the modules that count. */
static void
errors_metrics(eb__prom *w, void *arg)
{
	eb__node *n = arg;

	eb__admin_errors_family(w);
	eb__bridge_admin_errors(w, n->bridge);
	eb__bus_admin_errors(w, n->bus);
	eb__ingress_admin_errors(w, n->ingress);
	eb__cluster_admin_errors(w, &n->cluster);
}

/* For /health: member peers this node cannot link to. */
static int
links_degraded(void *arg, char *buf, size_t size)
{
	eb__node *n = arg;

	return n->links != NULL ? eb_link_mgr_degraded(n->links, buf, size) : 0;
}

/* The other members' node ids, for the cluster view (web/cview.h). */
static size_t
cview_peers(void *arg, const char **ids, size_t max)
{
	eb__node                *n = arg;
	const eb_cluster_member *ms;
	size_t                   count;
	size_t                   i;
	size_t                   k = 0;

	if (n->cluster.cluster == NULL || !n->cluster.running) {
		return 0;
	}
	ms = eb_cluster_members(n->cluster.cluster, &count);
	for (i = 0; i < count && k < max; i++) {
		if (!ms[i].self && ms[i].node_id[0] != '\0') {
			ids[k++] = ms[i].node_id;
		}
	}
	return k;
}

/* GET /cluster/metrics, gathered over the node links (clustered: this
 * node also answers the others' requests). */
static int
cview_start(eb__node *n, eb__admin *adm)
{
	eb__web_cview_opts o;
	int                rv;

	memset(&o, 0, sizeof(o));
	o.bus = n->bus;
	o.self_id = n->cluster.self.node_id;
	o.peers = cview_peers;
	o.peers_arg = n;
	o.serve = n->links != NULL;
	if ((rv = eb__web_cview_new(&o, &n->cview)) != 0) {
		return rv;
	}
	if ((rv = eb__web_cview_start(n->cview, adm)) != 0) {
		EB_LOG_ERR(
		    "admin", "cluster-view-failed: err=%s", eb_err_name(rv));
		eb__web_cview_release(n->cview);
		n->cview = NULL;
	}
	return rv;
}

static void
register_all(eb__node *n, eb__admin *adm)
{
	n->bridge_admin.bridge = n->bridge;
	n->bridge_admin.port = n->cluster.self.bridge_port;
	n->bridge_admin.tls = n->conf->bridge.tls_cert != NULL &&
	                      n->conf->bridge.tls_cert[0] != '\0';
	n->ingress_admin.ingress = n->ingress;
	n->ingress_admin.bus = n->bus;
	n->cluster.shared_zk = eb__shared_admin_zk_state;
	n->cluster.shared_zk_arg = &n->shared;
	n->cluster.links_degraded = links_degraded;
	n->cluster.links_degraded_arg = n;
	eb__cluster_admin_register(adm, &n->cluster);
	eb__web_dashboard_register(adm);
	eb__bridge_admin_register(adm, &n->bridge_admin);
	eb__web_admin_register(adm, n->web);
	eb__ingress_admin_register(adm, &n->ingress_admin);
	eb__link_admin_register(adm, n->links);
	eb__bus_admin_register(adm, n->bus);
	eb__admin_on_metrics(adm, errors_metrics, n);
	eb__shared_admin_register(adm, &n->shared);
	eb__admin_on_metrics(adm, eb__admin_process_metrics, &n->start_ms);
	eb__conf_dyn_admin_register(adm, eb__node_config(n));
}

int
eb__node_admin_start(eb__steps *s, eb__steps_done_cb cb)
{
	eb__node       *n = EB__NODE(s);
	eb__admin_opts  opts = n->conf->admin;
	eb__admin_opts *o = &opts;
	eb__admin      *adm;
	int             rv;

	if (!n->conf->admin_enabled) {
		eb__steps_complete(&n->steps, cb, 0);
		return 0;
	}
	/* One input budget for every client-facing server: the bridge's
	 * (the bridge step starts before this one and stops after it). */
	opts.budget = n->bridge != NULL ? eb__bridge_budget(n->bridge) : NULL;
	if ((rv = eb__admin_new(n->loop, o, &adm)) != 0) {
		return rv;
	}
	register_all(n, adm);
	if ((rv = cview_start(n, adm)) != 0) {
		eb__admin_close(adm, NULL, NULL);
		return rv;
	}
	if ((rv = eb__admin_start(adm)) < 0) {
		EB_LOG_ERR("admin", "listen-failed: listen=%s port=%d err=%s",
		    o->listen, o->port, eb_err_name(rv));
		if (n->cview != NULL) {
			eb__web_cview_release(n->cview);
			n->cview = NULL;
		}
		eb__admin_close(adm, NULL, NULL);
		return rv;
	}
	n->admin = adm;
	n->cluster.self.admin_port = rv;
	EB_LOG_INFO("admin", "listening: listen=%s port=%d auth=%s", o->listen,
	    rv, o->token != NULL && o->token[0] != '\0' ? "bearer" : "none");
	eb__steps_complete(&n->steps, cb, 0);
	return 0;
}

static void
closed_cb(void *arg)
{
	eb__steps_wait_done(arg);
}

void
eb__node_admin_stop(eb__steps *s, eb__steps_done_cb cb)
{
	eb__node  *n = EB__NODE(s);
	eb__admin *adm = n->admin;

	if (adm == NULL) {
		eb__steps_complete(&n->steps, cb, 0);
		return;
	}
	n->admin = NULL;
	if (n->cview != NULL) {
		eb__web_cview_release(n->cview); /* before adm goes */
		n->cview = NULL;
	}
	eb__admin_close(
	    adm, closed_cb, eb__steps_wait_new(&n->steps, cb, 0, 1));
}
