/*
 * The ingress metric families (ingress_admin.h), read on demand from the
 * ingress counters, its latency histogram and the bus's fence. A disabled
 * ingress shows zeros. Loop thread only.
 */
#include "ingress/ingress_admin.h"

#include <string.h>

#include "common/hist.h"
#include "ingress/dedup_metrics.h"
#include "ingress/ingress_int.h"

/* What the metric tables read: the ingress's counters, its router's
 * state and the bus's fence and receipts. */
typedef struct ingress_vals {
	eb_ingress_stats s;
	eb_bus_totals    t;
	uint64_t         leading; /* the router is active */
	uint64_t         fence;   /* the highest leader epoch seen */
} ingress_vals;

#define IV(m) EB__PROM_AT(ingress_vals, m)

static const eb__prom_desc families[] = {
	EB__PROM_ONE("ebnode_ingress_received_total", "counter",
	    "Ingress messages that entered through this node's gateway.",
	    IV(s.received)),
	EB__PROM_ONE("ebnode_ingress_forwarded_total", "counter",
	    "Ingress messages forwarded to a leader (retries included).",
	    IV(s.forwarded)),
	EB__PROM_ONE("ebnode_ingress_acked_total", "counter",
	    "Ingress messages acknowledged by a leader.", IV(s.acked)),
	EB__PROM_ONE("ebnode_ingress_held_total", "counter",
	    "Ingress messages that had to wait for a leader.", IV(s.held)),
	EB__PROM_ONE("ebnode_ingress_holding", "gauge",
	    "Ingress messages waiting for a leader now.", IV(s.holding)),
	EB__PROM_ONE("ebnode_ingress_retried_total", "counter",
	    "Ingress forwards retried after the leader failed.", IV(s.retried)),
	EB__PROM_ONE("ebnode_ingress_failed_total", "counter",
	    "Ingress requests answered with a failure.", IV(s.failed)),
	EB__PROM_ONE("ebnode_ingress_dropped_total", "counter",
	    "Fire-and-forget ingress sends that could not be delivered.",
	    IV(s.dropped)),
	EB__PROM_ONE("ebnode_ingress_routed_total", "counter",
	    "Ingress messages routed by this node as leader.", IV(s.routed)),
	EB__PROM_ONE("ebnode_ingress_unrouted_total", "counter",
	    "Ingress messages this leader could not route (no rule, no "
	    "handler for the target).",
	    IV(s.unrouted)),
	EB__PROM_ONE("ebnode_ingress_leading", "gauge",
	    "1 while this node's ingress router is active.", IV(leading)),
	EB__PROM_ONE("ebnode_ingress_delivered_total", "counter",
	    "Ingress messages this leader routed and saw confirmed "
	    "(acknowledged).",
	    IV(s.delivered)),
	EB__PROM_ONE("ebnode_ingress_undelivered_total", "counter",
	    "Ingress messages this leader routed whose delivery was not "
	    "confirmed (answered with a failure).",
	    IV(s.undelivered)),
	EB__PROM_ONE("ebnode_ingress_rerouted_total", "counter",
	    "Ingress sends routed again after a failed delivery receipt.",
	    IV(s.rerouted)),
	EB__PROM_ONE("ebnode_ingress_inflight", "gauge",
	    "Ingress forwards awaiting the leader's acknowledgement now.",
	    IV(s.inflight)),
	EB__PROM_ONE("ebnode_ingress_backlog", "gauge",
	    "Ingress messages waiting for the forward window now.",
	    IV(s.backlog)),
	EB__PROM_ONE("ebnode_ingress_pressed_total", "counter",
	    "Times the backlog made the ingress address busy (the bridges "
	    "stopped reading).",
	    IV(s.pressed)),
};

/* Rule 6: what this node's fence refused, by kind. */
static const eb__prom_field fenced_kinds[] = {
	{ "message", IV(t.fenced) },
	{ "ack", IV(s.fenced_acks) },
};

/* After the latency histogram. */
static const eb__prom_desc fence_families[] = {
	EB__PROM_SET("ebnode_fenced_total", "counter",
	    "Stamped messages (kind=message) and acknowledgements (kind=ack) "
	    "refused because their leader epoch is below the highest this "
	    "node has seen.",
	    "kind", fenced_kinds),
	EB__PROM_ONE("ebnode_fence_epoch", "gauge",
	    "The highest leader epoch this node has seen (its fence).",
	    IV(fence)),
	EB__PROM_ONE("ebnode_bus_pending_receipts", "gauge",
	    "Confirmed sends awaiting their delivery receipt.",
	    IV(t.pending_receipts)),
	EB__PROM_ONE("ebnode_bus_receipt_failures_total", "counter",
	    "Confirmed sends whose delivery was not confirmed.",
	    IV(t.receipt_failures)),
};

static const eb__prom_field error_types[] = {
	{ "ingress_failed", EB__PROM_AT(eb_ingress_stats, failed) },
	{ "ingress_dropped", EB__PROM_AT(eb_ingress_stats, dropped) },
	{ "ingress_unrouted", EB__PROM_AT(eb_ingress_stats, unrouted) },
};

/* in's counters, or zeros without an ingress (disabled). */
static void
stats_get(eb_ingress *in, eb_ingress_stats *s)
{
	memset(s, 0, sizeof(*s));
	if (in != NULL) {
		eb_ingress_stats_get(in, s);
	}
}

static void
ingress_metrics(eb__prom *w, void *arg)
{
	const eb__ingress_admin *ctx = arg;
	eb_ingress              *in = ctx->ingress;
	ingress_vals             v;

	memset(&v, 0, sizeof(v));
	stats_get(in, &v.s);
	v.leading = in != NULL && eb_ingress_is_leading(in) ? 1 : 0;
	if (ctx->bus != NULL) {
		eb_bus_stats_totals(ctx->bus, &v.t);
		v.fence = eb_bus_fence(ctx->bus);
	}
	eb__prom_write(w, families, EB__PROM_LEN(families), &v);
	eb__prom_hist(w, "ebnode_ingress_request_duration_seconds",
	    "Ingress messages from gateway receipt to the answer "
	    "(acknowledgement or failure).",
	    in != NULL ? eb__ingress_latency(in) : NULL);
	eb__prom_write(w, fence_families, EB__PROM_LEN(fence_families), &v);
}

void
eb__ingress_admin_register(eb__admin *adm, eb__ingress_admin *ctx)
{
	eb__admin_on_metrics(adm, ingress_metrics, ctx);
	eb__admin_on_metrics(adm, eb__ingress_dedup_metrics, ctx);
}

void
eb__ingress_admin_errors(eb__prom *w, eb_ingress *in)
{
	eb_ingress_stats s;

	stats_get(in, &s);
	eb__admin_error_rows(w, error_types, EB__PROM_LEN(error_types), &s);
}
