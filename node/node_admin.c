/*
 * The admin step (node_int.h): the admin server (admin/) with every
 * module's routes and metric families, registered by the module's own
 * *_admin.h in the order GET /metrics shows them (docs/ADMIN.md). The step
 * starts after bus, ingress and bridge and stops before them, so what it
 * registered outlives the server. Loop thread only.
 */
#include <stdlib.h>

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

/* Errors by type across subsystems, rows from the modules that count. */
static void
errors_metrics(eb__prom *w, void *arg)
{
	eb_node *n = arg;

	eb__prom_family(w, "ebnode_errors_total", "counter",
	    "Errors by type (each also counted in its own family).");
	eb__bridge_admin_errors(w, n->bridge);
	eb__bus_admin_errors(w, n->bus);
	eb__ingress_admin_errors(w, n->ingress);
	eb__cluster_admin_errors(w, &n->cluster);
}

static void
register_all(eb_node *n, struct eb__node_admin *na)
{
	na->bridge.bridge = n->bridge;
	na->bridge.port = n->cluster.self.bridge_port;
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
		n->cluster.self.admin_port = 0;
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
	n->cluster.self.admin_port = rv;
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
