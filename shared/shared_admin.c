/*
 * The shared-data metric families (shared_admin.h), read on demand from
 * shared data's stats (zeros while it is not running). Loop thread only.
 */
#include "shared/shared_admin.h"

#include <string.h>

#include "admin/prom.h"
#include "shared/shared_int.h"
#include "zk/zk.h"

/* What the metric table reads: shared data's stats and whether its own
 * session is connected. */
typedef struct shared_vals {
	eb_shared_stats s;
	uint64_t        zk_connected;
	uint64_t        zk_in_flight;
	uint64_t        zk_held;
	double          renew_last_s;
	double          renew_max_s;
} shared_vals;

#define SV(m) EB__PROM_AT(shared_vals, m)

static const eb__prom_desc families[] = {
	EB__PROM_ONE("ebnode_shared_locks_held", "gauge",
	    "Locks held by this node's clients now.", SV(s.locks_held)),
	EB__PROM_ONE("ebnode_shared_locks_waiting", "gauge",
	    "Lock acquisitions waiting now.", SV(s.locks_waiting)),
	EB__PROM_ONE("ebnode_shared_lock_acquisitions_total", "counter",
	    "Locks acquired.", SV(s.acquisitions)),
	EB__PROM_ONE("ebnode_shared_lock_revocations_total", "counter",
	    "Held locks lost (suspended, expired, lease lapsed, node gone).",
	    SV(s.revocations)),
	EB__PROM_ONE("ebnode_shared_lock_timeouts_total", "counter",
	    "Acquisitions that timed out or found the lock busy (try).",
	    SV(s.timeouts)),
	EB__PROM_ONE("ebnode_shared_counter_ops_total", "counter",
	    "Counter operations completed.", SV(s.counter_ops)),
	EB__PROM_ONE("ebnode_shared_counter_retries_total", "counter",
	    "Counter compare-and-set retries (contention).",
	    SV(s.counter_retries)),
	EB__PROM_ONE("ebnode_shared_ids_total", "counter",
	    "Unique ids handed out.", SV(s.ids)),
	EB__PROM_ONE("ebnode_shared_id_blocks_total", "counter",
	    "Id blocks taken from ZooKeeper.", SV(s.id_blocks)),
	EB__PROM_ONE("ebnode_shared_refused_total", "counter",
	    "Lock acquisitions and counter creates refused by a cap (429).",
	    SV(s.refused)),
	EB__PROM_ONE("ebnode_shared_lock_renewals_total", "counter",
	    "Lock lease renewal multis sent (each under the request limit).",
	    SV(s.renewals)),
	EB__PROM_ONE("ebnode_shared_lock_renewal_last_seconds", "gauge",
	    "Round trip of the last committed lease renewal (held locks "
	    "lapse if one takes longer than the lease minus the heartbeat).",
	    EB__PROM_AT_F64(shared_vals, renew_last_s)),
	EB__PROM_ONE("ebnode_shared_lock_renewal_max_seconds", "gauge",
	    "The slowest committed lease renewal's round trip since start.",
	    EB__PROM_AT_F64(shared_vals, renew_max_s)),
	EB__PROM_ONE("ebnode_shared_zk_requests_in_flight", "gauge",
	    "Requests of shared data's own session in flight (at most the "
	    "window, plus renewals sent ahead of it).",
	    SV(zk_in_flight)),
	EB__PROM_ONE("ebnode_shared_zk_requests_held", "gauge",
	    "Lock and counter requests waiting for the window (renewals "
	    "never wait).",
	    SV(zk_held)),
	EB__PROM_ONE("ebnode_shared_lock_deletes_pending", "gauge",
	    "Lock nodes still to delete (in flight or retried with back-off).",
	    SV(s.deletes_pending)),
	EB__PROM_ONE("ebnode_shared_counters_deleted_total", "counter",
	    "Counters deleted.", SV(s.counters_deleted)),
	EB__PROM_ONE("ebnode_shared_zk_connected", "gauge",
	    "1 while shared data's own ZooKeeper session is connected.",
	    SV(zk_connected)),
	EB__PROM_ONE("ebnode_shared_zk_suspensions_total", "counter",
	    "Connection losses of shared data's own ZooKeeper session.",
	    SV(s.zk_suspensions)),
	EB__PROM_ONE("ebnode_shared_zk_expiries_total", "counter",
	    "Expiries of shared data's own ZooKeeper session.",
	    SV(s.zk_expiries)),
};

static void
shared_metrics(eb__prom *w, void *arg)
{
	eb__shared_host **slot = arg;
	shared_vals       v;

	memset(&v, 0, sizeof(v));
	if (*slot != NULL) {
		const eb_shared  *s = eb__shared_host_shared(*slot);
		eb__shared_window win;

		eb_shared_stats_get(s, &v.s);
		eb__shared_window_get(s, &win);
		v.zk_connected = v.s.zk_state == EB_ZK_STATE_CONNECTED ? 1 : 0;
		v.zk_in_flight = win.in_flight;
		v.zk_held = win.held;
		v.renew_last_s = (double) win.renew_last_ms / 1000.0;
		v.renew_max_s = (double) win.renew_max_ms / 1000.0;
	}
	eb__prom_write(w, families, EB__PROM_LEN(families), &v);
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
	return eb__zk_state_name((eb__zk_state) st.zk_state);
}

void
eb__shared_admin_register(eb__admin *adm, eb__shared_host **slot)
{
	eb__admin_on_metrics(adm, shared_metrics, slot);
}
