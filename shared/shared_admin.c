/* The shared-data metric families (shared_admin.h). */
#include "shared/shared_admin.h"

#include "admin/prom.h"
#include "zk/zk.h"

static void
shared_metrics(eb__prom *w, void *arg)
{
	eb__shared_host **slot = arg;
	eb_shared_stats   st = { 0 };

	if (*slot != NULL) {
		eb_shared_stats_get(eb__shared_host_shared(*slot), &st);
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
	eb__prom_one(w, "ebnode_shared_refused_total", "counter",
	    "Lock acquisitions and counter creates refused by a cap (429).",
	    st.refused);
	eb__prom_one(w, "ebnode_shared_lock_renewals_total", "counter",
	    "Lock lease renewal multis sent (each under the request limit).",
	    st.renewals);
	eb__prom_one(w, "ebnode_shared_lock_deletes_pending", "gauge",
	    "Lock nodes still to delete (in flight or retried with back-off).",
	    st.deletes_pending);
	eb__prom_one(w, "ebnode_shared_counters_deleted_total", "counter",
	    "Counters deleted.", st.counters_deleted);
	eb__prom_one(w, "ebnode_shared_zk_connected", "gauge",
	    "1 while shared data's own ZooKeeper session is connected.",
	    *slot != NULL && st.zk_state == EB_ZK_STATE_CONNECTED ? 1 : 0);
	eb__prom_one(w, "ebnode_shared_zk_suspensions_total", "counter",
	    "Connection losses of shared data's own ZooKeeper session.",
	    st.zk_suspensions);
	eb__prom_one(w, "ebnode_shared_zk_expiries_total", "counter",
	    "Expiries of shared data's own ZooKeeper session.", st.zk_expiries);
}

const char *
eb__shared_admin_zk_state(void *slot)
{
	eb__shared_host *h = *(eb__shared_host **) slot;
	eb_shared_stats  st;

	if (h == NULL) {
		return "none";
	}
	eb_shared_stats_get(eb__shared_host_shared(h), &st);
	switch (st.zk_state) {
	case EB_ZK_STATE_CONNECTING:
		return "connecting";
	case EB_ZK_STATE_CONNECTED:
		return "connected";
	case EB_ZK_STATE_SUSPENDED:
		return "suspended";
	default:
		return "closed";
	}
}

void
eb__shared_admin_register(eb__admin *adm, eb__shared_host **slot)
{
	eb__admin_on_metrics(adm, shared_metrics, slot);
}
