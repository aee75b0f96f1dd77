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

static void
emit_latency(eb__prom *w, const eb__hist *h)
{
	static const char name[] = "ebnode_ingress_request_duration_seconds";
	size_t            i;

	eb__prom_family(w, name, "histogram",
	    "Ingress messages from gateway receipt to the answer "
	    "(acknowledgement or failure).");
	for (i = 0; i < EB__HIST_BUCKETS; i++) {
		const char *l[] = { "le", eb__hist_bound_label(i), NULL };

		eb__prom_u64(w,
		    "ebnode_ingress_request_duration_seconds_bucket", l,
		    h != NULL ? eb__hist_cumulative(h, i) : 0);
	}
	eb__prom_f64(w, "ebnode_ingress_request_duration_seconds_sum", NULL,
	    h != NULL ? eb__hist_sum_seconds(h) : 0.0);
	eb__prom_u64(w, "ebnode_ingress_request_duration_seconds_count", NULL,
	    h != NULL ? h->count : 0);
}

/* Rule 6: what this node's fence refused, by kind. */
static void
emit_fenced(eb__prom *w, eb_bus *bus, const eb_ingress_stats *s)
{
	eb_bus_totals t;
	const char   *lm[] = { "kind", "message", NULL };
	const char   *la[] = { "kind", "ack", NULL };

	memset(&t, 0, sizeof(t));
	if (bus != NULL) {
		eb_bus_stats_totals(bus, &t);
	}
	eb__prom_family(w, "ebnode_fenced_total", "counter",
	    "Stamped messages (kind=message) and acknowledgements (kind=ack) "
	    "refused because their leader epoch is below the highest this "
	    "node has seen.");
	eb__prom_u64(w, "ebnode_fenced_total", lm, t.fenced);
	eb__prom_u64(w, "ebnode_fenced_total", la, s->fenced_acks);
	eb__prom_one(w, "ebnode_fence_epoch", "gauge",
	    "The highest leader epoch this node has seen (its fence).",
	    bus != NULL ? eb_bus_fence(bus) : 0);
	eb__prom_one(w, "ebnode_bus_pending_receipts", "gauge",
	    "Confirmed sends awaiting their delivery receipt.",
	    t.pending_receipts);
	eb__prom_one(w, "ebnode_bus_receipt_failures_total", "counter",
	    "Confirmed sends whose delivery was not confirmed.",
	    t.receipt_failures);
}

static void
ingress_metrics(eb__prom *w, void *arg)
{
	const eb__ingress_admin *ctx = arg;
	eb_ingress              *in = ctx->ingress;
	eb_ingress_stats         s;

	memset(&s, 0, sizeof(s));
	if (in != NULL) {
		eb_ingress_stats_get(in, &s);
	}
	eb__prom_one(w, "ebnode_ingress_received_total", "counter",
	    "Ingress messages that entered through this node's gateway.",
	    s.received);
	eb__prom_one(w, "ebnode_ingress_forwarded_total", "counter",
	    "Ingress messages forwarded to a leader (retries included).",
	    s.forwarded);
	eb__prom_one(w, "ebnode_ingress_acked_total", "counter",
	    "Ingress messages acknowledged by a leader.", s.acked);
	eb__prom_one(w, "ebnode_ingress_held_total", "counter",
	    "Ingress messages that had to wait for a leader.", s.held);
	eb__prom_one(w, "ebnode_ingress_holding", "gauge",
	    "Ingress messages waiting for a leader now.", s.holding);
	eb__prom_one(w, "ebnode_ingress_retried_total", "counter",
	    "Ingress forwards retried after the leader failed.", s.retried);
	eb__prom_one(w, "ebnode_ingress_failed_total", "counter",
	    "Ingress requests answered with a failure.", s.failed);
	eb__prom_one(w, "ebnode_ingress_dropped_total", "counter",
	    "Fire-and-forget ingress sends that could not be delivered.",
	    s.dropped);
	eb__prom_one(w, "ebnode_ingress_routed_total", "counter",
	    "Ingress messages routed by this node as leader.", s.routed);
	eb__prom_one(w, "ebnode_ingress_unrouted_total", "counter",
	    "Ingress messages this leader could not route (no rule, no "
	    "handler for the target).",
	    s.unrouted);
	eb__prom_one(w, "ebnode_ingress_leading", "gauge",
	    "1 while this node's ingress router is active.",
	    in != NULL && eb_ingress_is_leading(in) ? 1 : 0);
	eb__prom_one(w, "ebnode_ingress_delivered_total", "counter",
	    "Ingress messages this leader routed and saw confirmed "
	    "(acknowledged).",
	    s.delivered);
	eb__prom_one(w, "ebnode_ingress_undelivered_total", "counter",
	    "Ingress messages this leader routed whose delivery was not "
	    "confirmed (answered with a failure).",
	    s.undelivered);
	eb__prom_one(w, "ebnode_ingress_rerouted_total", "counter",
	    "Ingress sends routed again after a failed delivery receipt.",
	    s.rerouted);
	eb__prom_one(w, "ebnode_ingress_inflight", "gauge",
	    "Ingress forwards awaiting the leader's acknowledgement now.",
	    s.inflight);
	eb__prom_one(w, "ebnode_ingress_backlog", "gauge",
	    "Ingress messages waiting for the forward window now.", s.backlog);
	eb__prom_one(w, "ebnode_ingress_pressed_total", "counter",
	    "Times the backlog made the ingress address busy (the bridges "
	    "stopped reading).",
	    s.pressed);
	emit_latency(w, in != NULL ? eb__ingress_latency(in) : NULL);
	emit_fenced(w, ctx->bus, &s);
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

	memset(&s, 0, sizeof(s));
	if (in != NULL) {
		eb_ingress_stats_get(in, &s);
	}
	eb__admin_error_row(w, "ingress_failed", s.failed);
	eb__admin_error_row(w, "ingress_dropped", s.dropped);
	eb__admin_error_row(w, "ingress_unrouted", s.unrouted);
}
