/* The leader lease bound; see lease.h and docs/CLUSTER.md. */
#include "common/lease.h"

#include <string.h>

#include <ebnode/err.h>

/* A lease of l ms with heartbeats every h ms is worth running. */
static int
usable(int64_t l, uint32_t h)
{
	return l >= (int64_t) EB_LEASE_MIN_MS && l > (int64_t) h;
}

int
eb__lease_plan(uint32_t session_ms, uint32_t tick_ms, uint32_t heartbeat_ms,
    uint32_t lease_ms, eb_lease_plan *plan, const char **key)
{
	eb_lease_plan *p = plan;
	const char    *k = NULL;

	memset(p, 0, sizeof(*p));
	p->session_ms = session_ms;
	p->tick_assumed = tick_ms == 0;
	/* Unknown tick: ZooKeeper's default minSessionTimeout is 2 x tickTime,
	 * so a negotiated session is never shorter than 2 ticks. */
	p->tick_ms = tick_ms != 0 ? tick_ms : session_ms / 2;
	p->heartbeat_ms = heartbeat_ms != 0 ? heartbeat_ms : session_ms / 4;
	p->margin_ms = session_ms / 20 > EB_LEASE_MARGIN_MIN_MS
	                   ? session_ms / 20
	                   : EB_LEASE_MARGIN_MIN_MS;
	p->bound_ms = (int64_t) session_ms - (int64_t) (p->tick_ms / 2) -
	              (int64_t) p->heartbeat_ms - (int64_t) p->margin_ms;
	if (lease_ms != 0 && (int64_t) lease_ms > p->bound_ms) {
		k = "election.lease_ms"; /* longer than ZooKeeper allows */
	} else if (lease_ms != 0 && !usable(lease_ms, p->heartbeat_ms)) {
		k = heartbeat_ms != 0 && usable(lease_ms, session_ms / 4)
		        ? "election.heartbeat_ms"
		        : "election.lease_ms";
	} else if (lease_ms == 0 && !usable(p->bound_ms, p->heartbeat_ms)) {
		/* Blame what the operator set: a heartbeat that the default
		 * would not have, else the tick, else the session itself. */
		uint32_t hd = session_ms / 4;
		int64_t  bd = p->bound_ms + (int64_t) p->heartbeat_ms - hd;

		k = heartbeat_ms != 0 && usable(bd, hd)
		        ? "election.heartbeat_ms"
		    : tick_ms != 0 ? "zookeeper.tick_ms"
		                   : "zookeeper.session_timeout_ms";
	}
	if (k != NULL) {
		if (key != NULL) {
			*key = k;
		}
		return EB_ECONF;
	}
	p->lease_ms = lease_ms != 0 ? lease_ms : (uint32_t) p->bound_ms;
	return 0;
}
