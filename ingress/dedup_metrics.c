/*
 * The safe-retry metric families (dedup_metrics.h): ebnode_ingress_*
 * about the keys this node, as a consumer's node, remembers, read from the
 * bus's deduplication counters (eb_bus_dedup_stats). A node without a bus
 * shows zeros. Loop thread only.
 */
#include "ingress/dedup_metrics.h"

#include <stddef.h>

#include <ebnode/bus.h>

#include "ingress/ingress_admin.h"

#define DV(m) EB__PROM_AT(eb_bus_dedup_stats, m)

static const eb__prom_desc families[] = {
	EB__PROM_ONE("ebnode_ingress_duplicates_total", "counter",
	    "Keyed ingress messages (ebnode.msgid) that arrived again at this "
	    "node after it delivered them, and were not delivered again.",
	    DV(duplicates)),
	EB__PROM_ONE("ebnode_ingress_dedup_keys", "gauge",
	    "Ingress idempotency keys this node remembers now "
	    "(ingress.dedup_max_keys at most).",
	    DV(keys)),
	EB__PROM_ONE("ebnode_ingress_dedup_evicted_total", "counter",
	    "Ingress idempotency keys evicted before their window ended "
	    "(ingress.dedup_max_keys reached).",
	    DV(evicted)),
	EB__PROM_ONE("ebnode_ingress_dedup_busy_total", "counter",
	    "Keyed ingress messages refused while the first delivery of the "
	    "same key was still on its way (answered 508, retried).",
	    DV(busy)),
};

void
eb__ingress_dedup_metrics(eb__prom *w, void *arg)
{
	const eb__ingress_admin *ctx = arg;
	eb_bus_dedup_stats       d;

	eb_bus_dedup_stats_get(ctx->bus, &d); /* zeros without a bus */
	eb__prom_write(w, families, EB__PROM_LEN(families), &d);
}
