/*
 * The cluster step (node_int.h), last: the eb_cluster object from conf and
 * the bound ports; a run-time failure fails the node; the leadership
 * observer raises the bus fence (rule 6) and tells the ingress; the
 * members observer reconciles the node links (eb_link_mgr_set_peers).
 * With the cluster's start, when clustered: shared data (shared/host.h, on
 * a ZooKeeper session of its own that connects meanwhile; a bridge
 * connection that closes releases its locks). Once it runs: the dynamic
 * configuration (node_config.c). A failed start holds nothing. Stop (rule 8):
 * shared data first (its locks go before the member), eb_cluster_stop revokes
 * leadership synchronously, leaves (bounded), then the object closes. Loop
 * thread only.
 */
#include <stdlib.h>

#include <ebnode/cluster.h>
#include <ebnode/link.h>
#include <ebnode/log.h>

#include "bridge/bridge_obs.h"
#include "common/alloc.h"
#include "node/node_int.h"

static void
leadership_cb(eb_cluster *c, const eb_cluster_leadership *l, void *arg)
{
	eb__node *n = arg;

	(void) c;
	/* Anything stamped below the current leader's epoch comes from a
	 * superseded leader: the bus refuses it from now on (rule 6). */
	if (n->bus != NULL && l->leader && l->epoch > 0) {
		eb_bus_fence_raise(n->bus, (uint64_t) l->epoch);
	}
	if (n->bus != NULL && l->leader_epoch > 0) {
		eb_bus_fence_raise(n->bus, (uint64_t) l->leader_epoch);
	}
	if ((l->leader != 0) != n->cluster_leader) {
		n->cluster_leader = l->leader != 0;
		eb__node_ingress_leadership(n, n->cluster_leader, l->epoch);
	}
}

static void
members_cb(eb_cluster *c, const eb_cluster_member *ms, size_t count, void *arg)
{
	eb__node     *n = arg;
	eb_link_peer *peers;
	size_t        i;

	(void) c;
	if (n->links == NULL) {
		return;
	}
	/* In sequence order: for one node id the newest member wins. Each
	 * with the range of its record first, then the rest removed. */
	peers = eb__calloc(count + 1, sizeof(*peers));
	for (i = 0; i < count; i++) {
		peers[i].node_id = ms[i].node_id;
		peers[i].host = ms[i].host;
		peers[i].port = ms[i].cluster_port;
		if (ms[i].node_id[0] != '\0' && ms[i].host[0] != '\0' &&
		    ms[i].cluster_port > 0) {
			(void) eb_link_mgr_peer_add_range(n->links,
			    ms[i].node_id, ms[i].host, ms[i].cluster_port,
			    ms[i].link_min, ms[i].link_max);
		}
	}
	(void) eb_link_mgr_set_peers(n->links, peers, count);
	free(peers);
}

static void
fail_cb(eb_cluster *c, int err, void *arg)
{
	eb__node *n = arg;

	(void) c;
	if (n->cluster.running) {
		eb__node_fail(n, err);
	}
}

static void
conn_closed_cb(eb_bridge *b, uint64_t conn_id, void *arg)
{
	eb__node *n = arg;

	(void) b;
	if (n->shared != NULL) {
		eb__shared_host_conn_closed(n->shared, conn_id);
	}
}

/* Standalone nodes have no shared data (requests get NO_HANDLERS); a
 * failed start is logged and leaves the node without. */
static void
shared_start(eb__node *n)
{
	if (n->conf->cluster.connect == NULL ||
	    n->conf->cluster.connect[0] == '\0' ||
	    eb__shared_host_start(n->loop, n->cluster.cluster, n->bus,
	        &n->conf->shared, &n->shared) != 0) {
		return;
	}
	if (n->bridge != NULL) {
		eb__bridge_on_conn_closed(n->bridge, conn_closed_cb, n);
	}
}

/* Idempotent. */
static void
shared_stop(eb__node *n)
{
	eb__shared_host *h = n->shared;

	if (h == NULL) {
		return;
	}
	n->shared = NULL;
	if (n->bridge != NULL) {
		(void) eb__bridge_off_conn_closed(n->bridge, conn_closed_cb, n);
	}
	eb__shared_host_close(h);
}

static void
cluster_closed_cb(eb_cluster *c, void *arg)
{
	eb__steps_wait *w = arg;

	(void) c;
	/* A node is started once: nothing of the cluster wiring outlives its
	 * stop (or failed start). */
	EB__NODE(w->s)->cluster.cluster = NULL;
	EB__NODE(w->s)->cluster.stopping = false;
	eb__steps_wait_done(w);
}

static void
close_with(eb__node *n, eb__steps_done_cb cb, int status)
{
	shared_stop(n);
	eb_cluster_close(n->cluster.cluster, cluster_closed_cb,
	    eb__steps_wait_new(&n->steps, cb, status, 1));
}

static void
vertx_failed_cb(eb__node *n, int status)
{
	close_with(n, n->cluster_cb, status);
}

static void
started_cb(eb_cluster *c, int status, void *arg)
{
	eb__node *n = arg;

	(void) c;
	n->cluster_starting = false;
	if (status != 0) {
		close_with(n, n->cluster_cb, status);
		return;
	}
	n->cluster.running = true;
	/* Vert.x membership (issue 26) once the bus's links are attached */
	if ((status = eb__node_vertx_up(n)) != 0) {
		n->cluster.running = false;
		eb__node_vertx_down(n, vertx_failed_cb, status);
		return;
	}
	eb__conf_dyn_start(eb__node_config(n), n->loop, n->cluster.cluster);
	n->cluster_cb(&n->steps, 0);
}

/* The leave drain's bound: a receipt fails by itself after the bus's
 * receipt timeout, so waiting longer gains nothing. */
#define NODE_DRAIN_MAX_MS 10000u

static uint32_t
pending_receipts(void *arg)
{
	eb__node     *n = arg;
	eb_bus_totals t;

	if (n->bus == NULL) {
		return 0;
	}
	eb_bus_stats_totals(n->bus, &t);
	return t.pending_receipts;
}

int
eb__node_cluster_start(eb__steps *s, eb__steps_done_cb cb)
{
	eb__node *n = EB__NODE(s);
	eb_errbuf e;
	int       rv;

	rv = eb_cluster_new(n->loop, &n->cluster.self, &n->cluster.cluster, &e);
	if (rv != 0) {
		EB_LOG_ERR("node", "cluster-failed: err=%s detail=%s",
		    eb_err_name(rv), e.msg);
		n->cluster.cluster = NULL;
		return rv;
	}
	eb_cluster_on_leadership(n->cluster.cluster, leadership_cb, n);
	eb_cluster_on_members(n->cluster.cluster, members_cb, n);
	eb_cluster_on_fail(n->cluster.cluster, fail_cb, n);
	eb_cluster_set_drain(n->cluster.cluster, pending_receipts, n,
	    n->conf->bus.receipt_timeout_ms < NODE_DRAIN_MAX_MS
	        ? (uint32_t) n->conf->bus.receipt_timeout_ms + 100u
	        : NODE_DRAIN_MAX_MS);
	/* Its own session connects while the cluster's registers, so that
	 * it is up by the time the node is READY. */
	shared_start(n);
	n->cluster_cb = cb;
	n->cluster_starting = true;
	rv = eb_cluster_start(n->cluster.cluster, started_cb, n);
	if (rv != 0) {
		n->cluster_starting = false;
		/* Nothing will call cb; close quietly. */
		close_with(n, NULL, rv);
		return rv;
	}
	return 0;
}

void
eb__node_cluster_cancel_start(eb__steps *s)
{
	eb__node *n = EB__NODE(s);

	if (n->cluster_starting) {
		/* The start completes with EB_ECANCELED (started_cb). */
		eb_cluster_stop(n->cluster.cluster, NULL, NULL);
	}
}

static void
stopped_cb(eb_cluster *c, void *arg)
{
	eb__node *n = arg;

	(void) c;
	close_with(n, n->cluster_cb, 0);
}

static void
vertx_down_cb(eb__node *n, int status)
{
	(void) status;
	eb_cluster_stop(n->cluster.cluster, stopped_cb, n);
}

void
eb__node_cluster_stop(eb__steps *s, eb__steps_done_cb cb)
{
	eb__node *n = EB__NODE(s);

	eb__conf_dyn_stop(n->config);
	shared_stop(n); /* its locks go before the member does */
	n->cluster.running = false;
	n->cluster.stopping = true;
	n->cluster_cb = cb;
	/* The Vert.x part leaves (and drains) first: its session is not the
	 * cluster's, but it must be gone before the bus closes. */
	eb__node_vertx_down(n, vertx_down_cb, 0);
}
