/*
 * Membership in a Vert.x cluster (node_int.h; issue 26, docs/VERTX.md):
 * with vertx.enabled the node joins the Vert.x cluster under vertx.root on
 * a ZooKeeper session of its own (the cluster's settings, like shared
 * data's) once its cluster runs, so that the bus's links are attached. The
 * cluster step's stop closes it first (the subscriptions go, the node
 * drains for vertx.drain_ms, then its session and sockets close), so it
 * is gone before the bus. Loop thread only.
 */
#include <stdlib.h>

#include <ebnode/log.h>

#include "cluster/cluster_zk.h"
#include "common/alloc.h"
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
	eb__cluster_zk_opts(n->cluster.cluster, &zo);
	rv = eb__vx_node_new(n->loop, n->bus, &vo, &zo, &n->vertx);
	if (rv != 0) {
		EB_LOG_ERR("node", "vertx-failed: err=%s", eb_err_name(rv));
		n->vertx = NULL;
		return rv;
	}
	eb__vx_node_on_fail(n->vertx, vertx_fail_cb, n);
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
	d = eb__malloc(sizeof(*d));
	d->n = n;
	d->done = done;
	d->status = status;
	eb__vx_node_close(n->vertx, vertx_closed_cb, d);
}
