/*
 * Wiring of shared data (ebnode/shared.h, docs/SHARED.md) into the node:
 * after the cluster step, an eb_shared on the cluster's session and its
 * bus services (node-local consumers at ebnode.lock, ebnode.counter,
 * ebnode.id); a bridge connection that closes releases its locks (the
 * bridge's conn-closed observer). Standalone nodes have no shared data
 * (the services are not registered: requests get NO_HANDLERS).
 * Stop (before the cluster's): the services release their locks, then the
 * object closes. Loop thread only.
 */
#include "node/node_shared.h"

#include <stdlib.h>

#include <ebnode/log.h>
#include <ebnode/shared.h>

#include "bridge/bridge_obs.h"
#include "common/alloc.h"
#include "node/node_int.h"

struct eb__node_shared {
	eb_node           *n;
	eb_shared         *s;
	eb_shared_service *svc;
	eb_bridge         *bridge; /* observed; NULL: none */
};

static void
conn_closed_cb(eb_bridge *b, uint64_t conn_id, void *arg)
{
	struct eb__node_shared *ns = arg;
	size_t                  n;

	(void) b;
	if (ns->svc == NULL) {
		return;
	}
	n = eb_shared_service_conn_closed(ns->svc, conn_id);
	if (n > 0) {
		EB_LOG_INFO("shared",
		    "conn-locks-released: conn=%llu locks=%zu",
		    (unsigned long long) conn_id, n);
	}
}

void
eb__node_shared_start(eb_node *n)
{
	struct eb__node_shared *ns;
	eb_cluster *c = (n->cluster.running ? n->cluster.cluster : NULL);
	int         rv;

	if (c == NULL || n->shared != NULL ||
	    n->conf->cluster.connect == NULL ||
	    n->conf->cluster.connect[0] == '\0') {
		return; /* standalone: none */
	}
	ns = eb__calloc(1, sizeof(*ns));
	ns->n = n;
	if ((rv = eb_shared_new(n->loop, c, &ns->s)) != 0) {
		EB_LOG_ERR("shared", "start-failed: err=%s", eb_err_name(rv));
		free(ns);
		return;
	}
	if ((rv = eb_shared_service_new(ns->s, n->bus, &ns->svc)) != 0) {
		EB_LOG_ERR("shared", "start-failed: err=%s", eb_err_name(rv));
		eb_shared_close(ns->s, NULL, NULL);
		free(ns);
		return;
	}
	if (n->bridge != NULL) {
		ns->bridge = n->bridge;
		eb__bridge_on_conn_closed(n->bridge, conn_closed_cb, ns);
	}
	n->shared = ns;
}

static void
shared_closed_cb(eb_shared *s, void *arg)
{
	(void) s;
	free(arg);
}

void
eb__node_shared_stop(eb_node *n)
{
	struct eb__node_shared *ns = n->shared;

	if (ns == NULL) {
		return;
	}
	n->shared = NULL;
	if (ns->bridge != NULL && n->bridge == ns->bridge) {
		(void) eb__bridge_off_conn_closed(
		    ns->bridge, conn_closed_cb, ns);
	}
	eb_shared_service_close(ns->svc);
	ns->svc = NULL;
	/* What it still does with the session it does now; the object
	 * itself is freed on a later turn. */
	eb_shared_close(ns->s, shared_closed_cb, ns);
}

void
eb__node_shared_metrics(eb__prom *w, void *arg)
{
	eb_node        *n = arg;
	eb_shared_stats st = { 0 };

	if (n->shared != NULL) {
		eb_shared_stats_get(n->shared->s, &st);
	}
	eb__prom_one(w, "ebnode_shared_locks_held", "gauge",
	    "Locks held by this node's clients now.", st.locks_held);
	eb__prom_one(w, "ebnode_shared_locks_waiting", "gauge",
	    "Lock acquisitions waiting now.", st.locks_waiting);
	eb__prom_one(w, "ebnode_shared_lock_acquisitions_total", "counter",
	    "Locks acquired.", st.acquisitions);
	eb__prom_one(w, "ebnode_shared_lock_revocations_total", "counter",
	    "Held locks lost (suspended, expired, lease lapsed, node gone).",
	    st.revocations);
	eb__prom_one(w, "ebnode_shared_lock_timeouts_total", "counter",
	    "Acquisitions that timed out or found the lock busy (try).",
	    st.timeouts);
	eb__prom_one(w, "ebnode_shared_counter_ops_total", "counter",
	    "Counter operations completed.", st.counter_ops);
	eb__prom_one(w, "ebnode_shared_counter_retries_total", "counter",
	    "Counter compare-and-set retries (contention).",
	    st.counter_retries);
	eb__prom_one(w, "ebnode_shared_ids_total", "counter",
	    "Unique ids handed out.", st.ids);
	eb__prom_one(w, "ebnode_shared_id_blocks_total", "counter",
	    "Id blocks taken from ZooKeeper.", st.id_blocks);
}
