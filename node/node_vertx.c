/*
 * Membership in a Vert.x cluster (node_int.h; issue 26, docs/VERTX.md):
 * with vertx.enabled the node joins the Vert.x cluster under vertx.root on
 * a ZooKeeper session of its own (the cluster's settings, like shared
 * data's) once its cluster runs, so that the bus's links are attached. The
 * cluster step's stop closes it first (the subscriptions go, the node
 * drains for vertx.drain_ms, then its session and sockets close), so it
 * is gone before the bus.
 *
 * Migration mode (vertx.engine_root) with ingress.address equal to the
 * engine's ingress address: the ingress gateway is that address's only
 * consumer on this node, and it asks the Vert.x node who routes
 * (ingress/ingress_ext.h): ebnode's router while an ebnode node leads the
 * engine, the leading JVM's ingress consumer while a JVM leads, nobody
 * (hold) while that is not known. The ops are removed when the Vert.x
 * node has closed, before it is freed. Loop thread only.
 */
#include <stdlib.h>
#include <string.h>

#include <ebnode/log.h>

#include "cluster/cluster_zk.h"
#include "common/alloc.h"
#include "ingress/ingress_ext.h"
#include "node/node_int.h"
#include "vertx/vxnode.h"

/* The engine address is taken (the Java engine exits; so does the node,
 * with exit code 3 as for its own duplicate address). */
static void
vertx_fail_cb(eb__vx_node *v, int err, void *arg)
{
	(void) v;
	eb__node_fail(arg, err);
}

static eb__ingress_route
ingress_route(void *ctx)
{
	eb__node *n = ctx;
	uint32_t  node = 0;

	switch (eb__vx_node_ingress_route(n->vertx, &node)) {
	case EB_VX_ROUTE_JVM:
		return EB__INGRESS_ROUTE_EXT;
	case EB_VX_ROUTE_WAIT:
		return EB__INGRESS_ROUTE_WAIT;
	default:
		return EB__INGRESS_ROUTE_OWN;
	}
}

static int
ingress_forward(void *ctx, const char *body, size_t len, const json_t *headers,
    uint64_t timeout_ms, eb_bus_reply_cb cb, void *arg)
{
	eb__node *n = ctx;

	return eb__vx_node_ingress_forward(
	    n->vertx, body, len, headers, timeout_ms, cb, arg);
}

static const eb__ingress_ext_ops ingress_ops = {
	.route = ingress_route,
	.forward = ingress_forward,
};

/* The route may have changed: held messages go if they can. */
static void
route_cb(void *arg)
{
	eb__node *n = arg;

	if (n->ingress != NULL) {
		eb_ingress_kick(n->ingress);
	}
}

/* 1 when this node's gateway serves the engine's ingress address. */
static int
ingress_forwards(const eb__node *n, const eb_vertx_opts *vo)
{
	const char *engine = vo->engine_ingress != NULL
	                         ? vo->engine_ingress
	                         : EB_VERTX_ENGINE_INGRESS;

	return vo->engine_root != NULL && n->ingress != NULL &&
	       n->conf->ingress.address != NULL &&
	       strcmp(n->conf->ingress.address, engine) == 0;
}

int
eb__node_vertx_up(eb__node *n)
{
	eb__zk_opts   zo;
	eb_vertx_opts vo = n->conf->vertx;
	eb_errbuf     e = { { 0 } };
	int           rv;

	if (!n->conf->vertx_enabled || n->cluster.cluster == NULL) {
		return 0;
	}
	if (vo.engine_address == NULL) {
		vo.engine_address = n->conf->cluster.address;
	}
	/* Our ebnode peers are reached over ebnode's links, not Vert.x (the
	 * same ZooKeeper: the root names the cluster). */
	vo.ebnode_cluster = n->conf->cluster.root;
	eb__cluster_zk_opts(n->cluster.cluster, &zo);
	rv = eb__vx_node_new(n->loop, n->bus, &vo, &zo, &n->vertx);
	if (rv != 0) {
		EB_LOG_ERR("node", "vertx-failed: err=%s", eb_err_name(rv));
		n->vertx = NULL;
		return rv;
	}
	eb__vx_node_on_fail(n->vertx, vertx_fail_cb, n);
	if (ingress_forwards(n, &vo)) {
		eb__vx_node_ingress_local(n->vertx, 1);
		eb__vx_node_on_route(n->vertx, route_cb, n);
		eb__ingress_set_ext(n->ingress, &ingress_ops, n);
	}
	rv = eb__vx_node_start(n->vertx, &e);
	if (rv != 0) {
		EB_LOG_ERR("node", "vertx-failed: err=%s detail=%s",
		    eb_err_name(rv), e.msg);
	}
	return rv;
}

typedef struct down_ctx {
	eb__node *n;
	void (*done)(eb__node *n, int status);
	int status;
} down_ctx;

static void
vertx_closed_cb(eb__vx_node *v, void *arg)
{
	down_ctx *d = arg;
	down_ctx  copy = *d;

	(void) v;
	free(d);
	if (copy.n->ingress != NULL) {
		/* before v is freed; retries of what failed with it go
		 * through ebnode's router */
		eb__ingress_set_ext(copy.n->ingress, NULL, NULL);
	}
	copy.n->vertx = NULL;
	copy.done(copy.n, copy.status);
}

void
eb__node_vertx_down(
    eb__node *n, void (*done)(eb__node *n, int status), int status)
{
	down_ctx *d;

	if (n->vertx == NULL) {
		done(n, status);
		return;
	}
	/* The node no longer counts as the leader (the cluster step has
	 * stopped running), so its ingress router would answer every forward
	 * "not the leader" until the cluster stops after the drain, and the
	 * gateways' one retry would meet the same router: it goes now, and
	 * the gateways hold until the next leader (as for a leader lost). */
	if (n->ingress != NULL && eb_ingress_is_leading(n->ingress)) {
		eb_ingress_unlead(n->ingress);
	}
	d = eb__malloc(sizeof(*d));
	d->n = n;
	d->done = done;
	d->status = status;
	eb__vx_node_close(n->vertx, vertx_closed_cb, d);
}
