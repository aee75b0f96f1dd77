/*
 * GET /metrics, /subscriptions and /bridge (see metrics.h).
 *
 * /metrics writes the Prometheus text exposition format 0.0.4: every
 * family is one contiguous group that opens with "# HELP" and "# TYPE",
 * names are ebnode_*, counters end in _total, label values are escaped
 * (backslash, double quote, newline), and a series appears at most once.
 * Everything is read on demand from the objects the node owns (bus,
 * bridge, ingress, links, cluster wiring): a scrape costs one pass over the
 * bus's address table (kept to the EB_METRICS_BUS_TOP busiest addresses),
 * the bridge's connection list and the link peers.
 *
 * Counters come from the objects that count; an object that is closed and
 * re-created (the cluster wiring across a stop) starts again from zero,
 * which Prometheus treats as a counter reset. Loop thread only.
 */
#include "node/metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/bridge.h>
#include <ebnode/bus.h>
#include <ebnode/ingress.h>
#include <ebnode/link.h>
#include <ebnode/version.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/hist.h"
#include "common/util.h"
#include "ingress/ingress_int.h"
#include "node/node_cluster.h"

#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* ---- the text writer ---- */

typedef struct mw {
	eb__buf b;
} mw;

static void
mw_write(mw *w, const char *s, size_t n)
{
	eb__buf_append(&w->b, s, n);
}

static void
mw_str(mw *w, const char *s)
{
	mw_write(w, s, strlen(s));
}

/* Escapes for a label value (\\, \", \n) or, with quote 0, for HELP text
 * (\\ and \n only), as the format requires. */
static void
mw_escaped(mw *w, const char *s, int quote)
{
	const char *run = s;

	for (; *s != '\0'; s++) {
		const char *esc = NULL;

		if (*s == '\\') {
			esc = "\\\\";
		} else if (*s == '\n') {
			esc = "\\n";
		} else if (*s == '"' && quote) {
			esc = "\\\"";
		}
		if (esc != NULL) {
			mw_write(w, run, (size_t) (s - run));
			mw_str(w, esc);
			run = s + 1;
		}
	}
	mw_write(w, run, (size_t) (s - run));
}

static void
mw_family(mw *w, const char *name, const char *type, const char *help)
{
	mw_str(w, "# HELP ");
	mw_str(w, name);
	mw_str(w, " ");
	mw_escaped(w, help, 0);
	mw_str(w, "\n# TYPE ");
	mw_str(w, name);
	mw_str(w, " ");
	mw_str(w, type);
	mw_str(w, "\n");
}

/* name{k="v",...} value: labels is a NULL-terminated k, v, k, v list or
 * NULL; value is already formatted. */
static void
mw_sample(mw *w, const char *name, const char *const *labels, const char *v)
{
	size_t i;

	mw_str(w, name);
	if (labels != NULL && labels[0] != NULL) {
		mw_str(w, "{");
		for (i = 0; labels[i] != NULL && labels[i + 1] != NULL;
		     i += 2) {
			if (i > 0) {
				mw_str(w, ",");
			}
			mw_str(w, labels[i]);
			mw_str(w, "=\"");
			mw_escaped(w, labels[i + 1], 1);
			mw_str(w, "\"");
		}
		mw_str(w, "}");
	}
	mw_str(w, " ");
	mw_str(w, v);
	mw_str(w, "\n");
}

static void
mw_u64(mw *w, const char *name, const char *const *labels, uint64_t v)
{
	char s[32];

	(void) snprintf(s, sizeof(s), "%llu", (unsigned long long) v);
	mw_sample(w, name, labels, s);
}

static void
mw_f64(mw *w, const char *name, const char *const *labels, double v)
{
	char s[64];

	(void) snprintf(s, sizeof(s), "%.9g", v);
	mw_sample(w, name, labels, s);
}

/* One family with a single unlabelled sample. */
static void
mw_one(mw *w, const char *name, const char *type, const char *help, uint64_t v)
{
	mw_family(w, name, type, help);
	mw_u64(w, name, NULL, v);
}

/* ---- node, role, cluster ---- */

static void
emit_node(mw *w, eb_node *n, const eb__node_cluster_stats *cs)
{
	const char *info[] = { "node_id", n->conf->cluster.node_id, "address",
		n->conf->cluster.address, "version", EB_VERSION_STRING, "mode",
		strcmp(cs->zk_state, "standalone") == 0 ? "standalone"
		                                        : "clustered",
		NULL };
	static const char *const states[] = { "standalone", "connecting",
		"connected", "suspended", "closed", "down" };
	size_t                   i;

	mw_family(w, "ebnode_info", "gauge",
	    "Constant 1, labelled with the node's identity and version.");
	mw_u64(w, "ebnode_info", info, 1);
	mw_one(w, "ebnode_leader", "gauge",
	    "1 while this node is the cluster leader (lease valid), else 0.",
	    eb__node_cluster_is_leader(n) ? 1 : 0);
	mw_one(w, "ebnode_eligible", "gauge",
	    "1 when this node may lead (node.eligible), else 0.",
	    n->conf->cluster.election.eligible ? 1 : 0);
	mw_one(w, "ebnode_epoch", "gauge",
	    "Epoch of the current leader as this node knows it (0: none).",
	    cs->leader_epoch > 0 ? (uint64_t) cs->leader_epoch : 0);
	mw_one(w, "ebnode_leader_known", "gauge",
	    "1 while a leader is known to this node, else 0.",
	    cs->leader_known ? 1 : 0);
	mw_one(w, "ebnode_members", "gauge",
	    "Cluster members this node sees (standalone: 1).", cs->members);
	mw_one(w, "ebnode_members_invalid", "gauge",
	    "Children of <root>/members ignored for leadership and membership "
	    "(foreign name, persistent, not a member record, unreadable).",
	    cs->members_invalid);
	mw_one(w, "ebnode_zk_requests_total", "counter",
	    "Requests this node sent to ZooKeeper (current session object).",
	    cs->zk_requests);
	mw_one(w, "ebnode_leader_elections_total", "counter",
	    "Times this node started leading.", cs->leads);
	mw_one(w, "ebnode_leader_changes_total", "counter",
	    "Leadership changes observed by this node (a new leader became "
	    "known).",
	    cs->leader_changes);
	mw_family(w, "ebnode_zk_session_state", "gauge",
	    "ZooKeeper session state: 1 for the current state, 0 otherwise.");
	for (i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		const char *l[] = { "state", states[i], NULL };

		mw_u64(w, "ebnode_zk_session_state", l,
		    strcmp(cs->zk_state, states[i]) == 0 ? 1 : 0);
	}
}

static void
emit_zk_events(mw *w, const eb__node_cluster_stats *cs)
{
	const struct {
		const char *ev;
		uint64_t    v;
	} evs[] = {
		{ "connected", cs->zk_connected },
		{ "suspended", cs->zk_suspended },
		{ "reconnected", cs->zk_reconnected },
		{ "expired", cs->zk_expired },
		{ "auth_failed", cs->zk_auth_failed },
	};
	size_t i;

	mw_family(w, "ebnode_zk_session_events_total", "counter",
	    "ZooKeeper session events seen by this node.");
	for (i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
		const char *l[] = { "event", evs[i].ev, NULL };

		mw_u64(w, "ebnode_zk_session_events_total", l, evs[i].v);
	}
}

/* ---- bridge ---- */

typedef struct bridge_sums {
	uint64_t queued;
	uint64_t pending;
} bridge_sums;

static void
bridge_sum_cb(const eb_bridge_conn_info *ci, void *arg)
{
	bridge_sums *s = arg;

	s->queued += ci->queued_bytes;
	s->pending += ci->pending_replies;
}

static void
emit_bridge_conns(mw *w, const eb_bridge_stats *bs)
{
	uint64_t closed = bs->conns_total - bs->conns_open;
	uint64_t known = bs->conns_closed_slow + bs->conns_closed_idle +
	                 bs->conns_closed_frame + bs->conns_closed_timeout +
	                 bs->conns_closed_memory + bs->conns_evicted;
	const struct {
		const char *reason;
		uint64_t    v;
	} rs[] = {
		{ "slow_consumer", bs->conns_closed_slow },
		{ "idle", bs->conns_closed_idle },
		{ "bad_frame", bs->conns_closed_frame },
		{ "timeout", bs->conns_closed_timeout },
		{ "memory", bs->conns_closed_memory },
		{ "evicted", bs->conns_evicted },
		{ "other", closed > known ? closed - known : 0 },
	};
	size_t i;

	mw_one(w, "ebnode_bridge_connections", "gauge",
	    "Open bridge connections.", bs->conns_open);
	mw_one(w, "ebnode_bridge_connections_accepted_total", "counter",
	    "Bridge connections accepted.", bs->conns_total);
	mw_one(w, "ebnode_bridge_connections_refused_total", "counter",
	    "Bridge connections refused (over bridge.max_connections).",
	    bs->conns_refused);
	mw_one(w, "ebnode_bridge_connections_evicted_total", "counter",
	    "Bridge connections without a complete frame closed at "
	    "bridge.max_connections to admit a new one.",
	    bs->conns_evicted);
	mw_one(w, "ebnode_bridge_input_bytes", "gauge",
	    "Bridge input buffers (partial and unhandled frames), all "
	    "connections; bounded by bridge.input_budget_bytes.",
	    bs->input_bytes);
	mw_one(w, "ebnode_bridge_refused_total", "counter",
	    "Bridge registrations and requests refused over the "
	    "per-connection caps.",
	    bs->consumers_refused + bs->requests_refused);
	mw_family(w, "ebnode_bridge_connections_closed_total", "counter",
	    "Bridge connections closed, by reason (other: the peer closed, "
	    "TLS or token failure, shutdown).");
	for (i = 0; i < sizeof(rs) / sizeof(rs[0]); i++) {
		const char *l[] = { "reason", rs[i].reason, NULL };

		mw_u64(w, "ebnode_bridge_connections_closed_total", l, rs[i].v);
	}
}

static void
emit_bridge(mw *w, eb_node *n)
{
	eb_bridge_stats bs;
	bridge_sums     sums = { 0, 0 };
	int             k;

	memset(&bs, 0, sizeof(bs));
	if (n->bridge != NULL) {
		eb_bridge_stats_get(n->bridge, &bs);
		(void) eb_bridge_conn_foreach(n->bridge, bridge_sum_cb, &sums);
	}
	emit_bridge_conns(w, &bs);
	mw_family(w, "ebnode_bridge_frames_total", "counter",
	    "Bridge frames by direction and type (in: malformed = not a JSON "
	    "object, unknown = unknown or missing type).");
	for (k = 0; k < EB_BRIDGE_IN_KINDS; k++) {
		const char *l[] = { "direction", "in", "type",
			eb_bridge_in_kind_name((eb_bridge_frame_kind) k),
			NULL };

		mw_u64(w, "ebnode_bridge_frames_total", l, bs.frames_in[k]);
	}
	for (k = 0; k < EB_BRIDGE_OUT_KINDS; k++) {
		const char *l[] = { "direction", "out", "type",
			eb_bridge_out_kind_name((eb_bridge_out_kind) k), NULL };

		mw_u64(w, "ebnode_bridge_frames_total", l, bs.frames_out[k]);
	}
	mw_one(w, "ebnode_bridge_consumers", "gauge",
	    "Addresses registered by bridge clients (all connections).",
	    bs.consumers);
	mw_one(w, "ebnode_bridge_queued_bytes", "gauge",
	    "Bytes written to bridge clients and not yet sent (sum).",
	    sums.queued);
	mw_one(w, "ebnode_bridge_pending_replies", "gauge",
	    "Requests from the bus awaiting a bridge client's reply.",
	    sums.pending);
	mw_one(w, "ebnode_bridge_requests_in_flight", "gauge",
	    "Bridge clients' requests awaiting their reply (open "
	    "connections); bounded by bridge.max_requests.",
	    bs.requests_in_flight);
}

/* ---- errors by type ---- */

static void
emit_errors(mw *w, eb_node *n, const eb__node_cluster_stats *cs)
{
	eb_bridge_stats  bs;
	eb_bus_totals    bt;
	eb_ingress_stats is;
	eb_ingress      *in = eb__node_ingress(n);
	size_t           i;

	memset(&bs, 0, sizeof(bs));
	memset(&bt, 0, sizeof(bt));
	memset(&is, 0, sizeof(is));
	if (n->bridge != NULL) {
		eb_bridge_stats_get(n->bridge, &bs);
	}
	if (n->bus != NULL) {
		eb_bus_stats_totals(n->bus, &bt);
	}
	if (in != NULL) {
		eb_ingress_stats_get(in, &is);
	}
	{
		const struct {
			const char *type;
			uint64_t    v;
		} es[] = {
			{ "bridge_malformed_frame",
			    bs.frames_in[EB_BRIDGE_IN_MALFORMED] },
			{ "bridge_unknown_type",
			    bs.frames_in[EB_BRIDGE_IN_UNKNOWN] },
			{ "bridge_bad_length", bs.conns_closed_frame },
			{ "bridge_access_denied", bs.denied },
			{ "bridge_auth_failed", bs.auth_failed },
			{ "bridge_tls_failed", bs.tls_failed },
			{ "bridge_slow_consumer", bs.conns_closed_slow },
			{ "bus_no_handlers", bt.no_handlers },
			{ "bus_failed", bt.failed },
			{ "bus_dropped", bt.dropped },
			{ "ingress_failed", is.failed },
			{ "ingress_dropped", is.dropped },
			{ "ingress_unrouted", is.unrouted },
			{ "zk_session_expired", cs->zk_expired },
			{ "zk_auth_failed", cs->zk_auth_failed },
		};

		mw_family(w, "ebnode_errors_total", "counter",
		    "Errors by type (each also counted in its own family).");
		for (i = 0; i < sizeof(es) / sizeof(es[0]); i++) {
			const char *l[] = { "type", es[i].type, NULL };

			mw_u64(w, "ebnode_errors_total", l, es[i].v);
		}
	}
}

/* ---- ingress ---- */

static void
emit_latency(mw *w, const eb__hist *h)
{
	static const char name[] = "ebnode_ingress_request_duration_seconds";
	size_t            i;

	mw_family(w, name, "histogram",
	    "Ingress messages from gateway receipt to the answer "
	    "(acknowledgement or failure).");
	for (i = 0; i < EB__HIST_BUCKETS; i++) {
		const char *l[] = { "le", eb__hist_bound_label(i), NULL };

		mw_u64(w, "ebnode_ingress_request_duration_seconds_bucket", l,
		    h != NULL ? eb__hist_cumulative(h, i) : 0);
	}
	mw_f64(w, "ebnode_ingress_request_duration_seconds_sum", NULL,
	    h != NULL ? eb__hist_sum_seconds(h) : 0.0);
	mw_u64(w, "ebnode_ingress_request_duration_seconds_count", NULL,
	    h != NULL ? h->count : 0);
}

/* Rule 6: what this node's fence refused, by kind. */
static void
emit_fenced(mw *w, eb_node *n, const eb_ingress_stats *s)
{
	eb_bus_totals t;
	const char   *lm[] = { "kind", "message", NULL };
	const char   *la[] = { "kind", "ack", NULL };

	memset(&t, 0, sizeof(t));
	if (n->bus != NULL) {
		eb_bus_stats_totals(n->bus, &t);
	}
	mw_family(w, "ebnode_fenced_total", "counter",
	    "Stamped messages (kind=message) and acknowledgements (kind=ack) "
	    "refused because their leader epoch is below the highest this "
	    "node has seen.");
	mw_u64(w, "ebnode_fenced_total", lm, t.fenced);
	mw_u64(w, "ebnode_fenced_total", la, s->fenced_acks);
	mw_one(w, "ebnode_fence_epoch", "gauge",
	    "The highest leader epoch this node has seen (its fence).",
	    n->bus != NULL ? eb_bus_fence(n->bus) : 0);
	mw_one(w, "ebnode_bus_pending_receipts", "gauge",
	    "Confirmed sends awaiting their delivery receipt.",
	    t.pending_receipts);
	mw_one(w, "ebnode_bus_receipt_failures_total", "counter",
	    "Confirmed sends whose delivery was not confirmed.",
	    t.receipt_failures);
}

static void
emit_ingress(mw *w, eb_node *n)
{
	eb_ingress      *in = eb__node_ingress(n);
	eb_ingress_stats s;

	memset(&s, 0, sizeof(s));
	if (in != NULL) {
		eb_ingress_stats_get(in, &s);
	}
	mw_one(w, "ebnode_ingress_received_total", "counter",
	    "Ingress messages that entered through this node's gateway.",
	    s.received);
	mw_one(w, "ebnode_ingress_forwarded_total", "counter",
	    "Ingress messages forwarded to a leader (retries included).",
	    s.forwarded);
	mw_one(w, "ebnode_ingress_acked_total", "counter",
	    "Ingress messages acknowledged by a leader.", s.acked);
	mw_one(w, "ebnode_ingress_held_total", "counter",
	    "Ingress messages that had to wait for a leader.", s.held);
	mw_one(w, "ebnode_ingress_holding", "gauge",
	    "Ingress messages waiting for a leader now.", s.holding);
	mw_one(w, "ebnode_ingress_retried_total", "counter",
	    "Ingress forwards retried after the leader failed.", s.retried);
	mw_one(w, "ebnode_ingress_failed_total", "counter",
	    "Ingress requests answered with a failure.", s.failed);
	mw_one(w, "ebnode_ingress_dropped_total", "counter",
	    "Fire-and-forget ingress sends that could not be delivered.",
	    s.dropped);
	mw_one(w, "ebnode_ingress_routed_total", "counter",
	    "Ingress messages routed by this node as leader.", s.routed);
	mw_one(w, "ebnode_ingress_unrouted_total", "counter",
	    "Ingress messages this leader could not route (no rule, no "
	    "handler for the target).",
	    s.unrouted);
	mw_one(w, "ebnode_ingress_leading", "gauge",
	    "1 while this node's ingress router is active.",
	    in != NULL && eb_ingress_is_leading(in) ? 1 : 0);
	mw_one(w, "ebnode_ingress_delivered_total", "counter",
	    "Ingress messages this leader routed and saw confirmed "
	    "(acknowledged).",
	    s.delivered);
	mw_one(w, "ebnode_ingress_undelivered_total", "counter",
	    "Ingress messages this leader routed whose delivery was not "
	    "confirmed (answered with a failure).",
	    s.undelivered);
	mw_one(w, "ebnode_ingress_rerouted_total", "counter",
	    "Ingress sends routed again after a failed delivery receipt.",
	    s.rerouted);
	emit_latency(w, in != NULL ? eb__ingress_latency(in) : NULL);
	emit_fenced(w, n, &s);
}

/* ---- node links ---- */

typedef struct link_row {
	char              *node_id; /* owned */
	eb_link_peer_stats st;
} link_row;

typedef struct link_rows {
	link_row *rows; /* owned */
	size_t    n;
	size_t    cap;
} link_rows;

static void
link_collect_cb(const eb_link_peer_stats *s, void *arg)
{
	link_rows *lr = arg;

	if (lr->n == lr->cap) {
		lr->cap = lr->cap != 0 ? lr->cap * 2 : 8;
		lr->rows = eb__realloc(lr->rows, lr->cap * sizeof(link_row));
	}
	lr->rows[lr->n].st = *s;
	lr->rows[lr->n].node_id = eb__strdup(s->node_id);
	lr->rows[lr->n].st.node_id = lr->rows[lr->n].node_id;
	lr->rows[lr->n].st.host = NULL; /* borrowed: not kept */
	lr->n++;
}

/* Every per-peer family, one group each, peers in the same order. */
static void
emit_link_family(mw *w, const link_rows *lr, int which)
{
	size_t i;

	for (i = 0; i < lr->n; i++) {
		const eb_link_peer_stats *s = &lr->rows[i].st;
		const char               *l[] = { "peer", s->node_id, NULL };
		const char *in[] = { "peer", s->node_id, "direction", "in",
			NULL };
		const char *out[] = { "peer", s->node_id, "direction", "out",
			NULL };

		switch (which) {
		case 0:
			mw_u64(w, "ebnode_link_up", l, s->up ? 1 : 0);
			break;
		case 1:
			mw_u64(w, "ebnode_link_ups_total", l, s->ups);
			break;
		case 2:
			mw_u64(w, "ebnode_link_frames_total", in, s->frames_in);
			mw_u64(
			    w, "ebnode_link_frames_total", out, s->frames_out);
			break;
		case 3:
			mw_u64(w, "ebnode_link_bytes_total", in, s->bytes_in);
			mw_u64(w, "ebnode_link_bytes_total", out, s->bytes_out);
			break;
		default:
			mw_u64(w, "ebnode_link_queued_bytes", l, s->queued);
			break;
		}
	}
}

static void
emit_links(mw *w, eb_node *n)
{
	link_rows lr = { NULL, 0, 0 };
	size_t    i;

	if (n->links != NULL) {
		eb_link_mgr_stats_foreach(n->links, link_collect_cb, &lr);
	}
	mw_family(w, "ebnode_link_up", "gauge",
	    "1 while the node link to peer is up (hello exchanged).");
	emit_link_family(w, &lr, 0);
	mw_family(w, "ebnode_link_ups_total", "counter",
	    "Times the node link to peer came up.");
	emit_link_family(w, &lr, 1);
	mw_family(w, "ebnode_link_frames_total", "counter",
	    "Node link frames by peer and direction.");
	emit_link_family(w, &lr, 2);
	mw_family(w, "ebnode_link_bytes_total", "counter",
	    "Node link bytes by peer and direction.");
	emit_link_family(w, &lr, 3);
	mw_family(w, "ebnode_link_queued_bytes", "gauge",
	    "Bytes waiting to be written on the node link to peer.");
	emit_link_family(w, &lr, 4);
	for (i = 0; i < lr.n; i++) {
		free(lr.rows[i].node_id);
	}
	free(lr.rows);
}

/* ---- bus ---- */

typedef struct bus_row {
	char             *address; /* owned */
	uint64_t          total;
	eb_bus_addr_stats st;
} bus_row;

typedef struct bus_top {
	bus_row rows[EB_METRICS_BUS_TOP];
	size_t  n;
	size_t  least; /* the least busy row, once the table is full */
} bus_top;

static uint64_t
bus_total(const eb_bus_addr_stats *s)
{
	return s->sent + s->published + s->received + s->replied + s->failed +
	       s->dropped;
}

/* Busier first; ties by address so that the selection is deterministic. */
static int
bus_row_before(uint64_t ta, const char *aa, uint64_t tb, const char *ab)
{
	return ta > tb || (ta == tb && strcmp(aa, ab) < 0);
}

static void
bus_top_find_least(bus_top *t)
{
	size_t i;

	t->least = 0;
	for (i = 1; i < t->n; i++) {
		if (bus_row_before(t->rows[t->least].total,
		        t->rows[t->least].address, t->rows[i].total,
		        t->rows[i].address)) {
			t->least = i;
		}
	}
}

/* Keeps the EB_METRICS_BUS_TOP busiest records: O(1) for a record that
 * does not make it, O(EB_METRICS_BUS_TOP) for one that does. */
static void
bus_top_cb(const eb_bus_addr_stats *s, void *arg)
{
	bus_top *t = arg;
	uint64_t total = bus_total(s);
	size_t   slot = t->n;

	if (t->n == EB_METRICS_BUS_TOP) {
		slot = t->least;
		if (!bus_row_before(total, s->address, t->rows[slot].total,
		        t->rows[slot].address)) {
			return;
		}
		free(t->rows[slot].address);
	} else {
		t->n++;
	}
	t->rows[slot].address = eb__strdup(s->address);
	t->rows[slot].total = total;
	t->rows[slot].st = *s;
	t->rows[slot].st.address = t->rows[slot].address;
	if (t->n == EB_METRICS_BUS_TOP) {
		bus_top_find_least(t);
	}
}

static int
bus_row_cmp(const void *a, const void *b)
{
	const bus_row *ra = a;
	const bus_row *rb = b;

	if (ra->total != rb->total) {
		return ra->total > rb->total ? -1 : 1;
	}
	return strcmp(ra->address, rb->address);
}

static void
emit_bus_addresses(mw *w, const bus_top *t)
{
	static const char *const kinds[] = { "sent", "published", "received",
		"replied", "failed", "dropped" };
	size_t                   i;
	size_t                   k;

	mw_family(w, "ebnode_bus_messages_total", "counter",
	    "Bus messages per address and kind, for the busiest addresses "
	    "only (at most 32; see ebnode_bus_addresses).");
	for (i = 0; i < t->n; i++) {
		const eb_bus_addr_stats *s = &t->rows[i].st;
		const uint64_t v[] = { s->sent, s->published, s->received,
			s->replied, s->failed, s->dropped };

		for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			const char *l[] = { "address", s->address, "kind",
				kinds[k], NULL };

			mw_u64(w, "ebnode_bus_messages_total", l, v[k]);
		}
	}
	mw_family(w, "ebnode_bus_handlers", "gauge",
	    "Handlers per address (same addresses as "
	    "ebnode_bus_messages_total), local or on other nodes.");
	for (i = 0; i < t->n; i++) {
		const eb_bus_addr_stats *s = &t->rows[i].st;
		const char *lo[] = { "address", s->address, "where", "local",
			NULL };
		const char *re[] = { "address", s->address, "where", "remote",
			NULL };

		mw_u64(w, "ebnode_bus_handlers", lo, s->handlers);
		mw_u64(w, "ebnode_bus_handlers", re, s->remote_handlers);
	}
}

static void
emit_bus(mw *w, eb_node *n)
{
	static const char *const kinds[] = { "sent", "published", "received",
		"replied", "failed", "dropped" };
	bus_top                 *t = eb__calloc(1, sizeof(*t));
	eb_bus_totals            bt;
	size_t                   i;

	memset(&bt, 0, sizeof(bt));
	if (n->bus != NULL) {
		eb_bus_stats_totals(n->bus, &bt);
		eb_bus_stats_foreach(n->bus, bus_top_cb, t);
	}
	qsort(t->rows, t->n, sizeof(t->rows[0]), bus_row_cmp);
	{
		const uint64_t v[] = { bt.sent, bt.published, bt.received,
			bt.replied, bt.failed, bt.dropped };

		mw_family(w, "ebnode_bus_messages_all_total", "counter",
		    "Bus messages of every address, by kind.");
		for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
			const char *l[] = { "kind", kinds[i], NULL };

			mw_u64(w, "ebnode_bus_messages_all_total", l, v[i]);
		}
	}
	mw_one(w, "ebnode_bus_no_handlers_total", "counter",
	    "Sends and requests that found no handler.", bt.no_handlers);
	mw_one(w, "ebnode_bus_addresses", "gauge",
	    "Address records (local consumers or remote interest).",
	    bt.addresses);
	mw_one(w, "ebnode_bus_pending_requests", "gauge",
	    "Requests awaiting a reply.", bt.pending_requests);
	mw_one(w, "ebnode_bus_requests_refused_total", "counter",
	    "Requests failed at once (too_many_requests) because "
	    "bus.max_pending_requests were pending.",
	    bt.requests_refused);
	emit_bus_addresses(w, t);
	for (i = 0; i < t->n; i++) {
		free(t->rows[i].address);
	}
	free(t);
}

/* ---- process ---- */

static void
emit_process(mw *w, eb_node *n)
{
	size_t      rss = 0;
	uv_rusage_t ru;
	double      cpu = 0.0;

	(void) uv_resident_set_memory(&rss);
	if (uv_getrusage(&ru) == 0) {
		cpu =
		    (double) ru.ru_utime.tv_sec + (double) ru.ru_stime.tv_sec +
		    (double) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	}
	mw_one(w, "ebnode_process_resident_memory_bytes", "gauge",
	    "Resident set size of the ebnode process.", (uint64_t) rss);
	mw_family(w, "ebnode_process_cpu_seconds_total", "counter",
	    "User and system CPU time of the ebnode process.");
	mw_f64(w, "ebnode_process_cpu_seconds_total", NULL, cpu);
	mw_family(w, "ebnode_uptime_seconds", "gauge",
	    "Seconds since this node started.");
	mw_f64(w, "ebnode_uptime_seconds", NULL,
	    (double) (eb__mono_ms() - n->start_ms) / 1000.0);
}

void
eb__admin_metrics(eb_node *n, const eb__admin_req *rq, eb__admin_resp *rs)
{
	eb__node_cluster_stats cs;
	mw                     w;

	(void) rq;
	eb__buf_init(&w.b);
	eb__node_cluster_stats_get(n, &cs);
	emit_node(&w, n, &cs);
	emit_zk_events(&w, &cs);
	emit_bridge(&w, n);
	emit_ingress(&w, n);
	emit_links(&w, n);
	emit_bus(&w, n);
	emit_errors(&w, n, &cs);
	emit_process(&w, n);
	eb__admin_reply_text(rs, 200, PROM_CONTENT_TYPE, eb__buf_head(&w.b),
	    eb__buf_avail(&w.b));
	eb__buf_free(&w.b);
}

/* ---- GET /subscriptions ---- */

/* Query: ?prefix=<address prefix>&limit=<n>; the answer lists the first
 * limit matching addresses in address order, so that a node with a huge
 * address table is never serialised whole on the loop. */
#define SUBS_LIMIT_DEFAULT 1000
#define SUBS_LIMIT_MAX     100000
#define SUBS_PREFIX_MAX    1024

typedef struct subs_query {
	char    prefix[SUBS_PREFIX_MAX + 1];
	int64_t limit;
} subs_query;

static int
hexval(char c)
{
	if (c >= '0' && c <= '9') {
		return c - '0';
	}
	if (c >= 'a' && c <= 'f') {
		return c - 'a' + 10;
	}
	if (c >= 'A' && c <= 'F') {
		return c - 'A' + 10;
	}
	return -1;
}

/* Percent-decodes s[0..len) ('+' is a space) into out (NUL-terminated).
 * 0, or -1 for a bad escape, an embedded NUL or no room. */
static int
url_decode(const char *s, size_t len, char *out, size_t cap)
{
	size_t i;
	size_t o = 0;

	for (i = 0; i < len; i++) {
		char c = s[i];

		if (c == '%') {
			int hi = i + 2 < len ? hexval(s[i + 1]) : -1;
			int lo = i + 2 < len ? hexval(s[i + 2]) : -1;

			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
				return -1;
			}
			c = (char) (hi * 16 + lo);
			i += 2;
		} else if (c == '+') {
			c = ' ';
		}
		if (o + 1 >= cap) {
			return -1;
		}
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

/* Parses rq->query into q. 0, or -1 with a message for a 400. */
static int
subs_query_parse(const char *query, subs_query *q, const char **why)
{
	const char *p = query;

	q->prefix[0] = '\0';
	q->limit = SUBS_LIMIT_DEFAULT;
	while (*p != '\0') {
		const char *amp = strchr(p, '&');
		size_t      len = amp != NULL ? (size_t) (amp - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		size_t      klen = eq != NULL ? (size_t) (eq - p) : len;
		const char *val = eq != NULL ? eq + 1 : p + len;
		size_t      vlen = (size_t) (p + len - val);
		char        num[24];

		if (klen == 6 && strncmp(p, "prefix", 6) == 0) {
			if (url_decode(
			        val, vlen, q->prefix, sizeof(q->prefix)) != 0) {
				*why = "bad prefix (escape or length)";
				return -1;
			}
		} else if (klen == 5 && strncmp(p, "limit", 5) == 0) {
			if (url_decode(val, vlen, num, sizeof(num)) != 0 ||
			    eb__parse_i64(num, 0, SUBS_LIMIT_MAX, &q->limit) !=
			        0) {
				*why = "limit: expected an integer 0..100000";
				return -1;
			}
		} else if (len > 0) {
			*why = "unknown query parameter (prefix, limit)";
			return -1;
		}
		p += len + (amp != NULL ? 1 : 0);
	}
	return 0;
}

typedef struct subs_scan {
	const char *prefix;
	size_t      prefix_len;
	bus_row    *rows; /* owned */
	size_t      n;
	size_t      cap;
} subs_scan;

static void
subs_cb(const eb_bus_addr_stats *s, void *arg)
{
	subs_scan *sc = arg;

	if (strncmp(s->address, sc->prefix, sc->prefix_len) != 0) {
		return;
	}
	if (sc->n == sc->cap) {
		sc->cap = sc->cap != 0 ? sc->cap * 2 : 64;
		sc->rows = eb__realloc(sc->rows, sc->cap * sizeof(bus_row));
	}
	sc->rows[sc->n].address = eb__strdup(s->address);
	sc->rows[sc->n].total = 0;
	sc->rows[sc->n].st = *s;
	sc->rows[sc->n].st.address = sc->rows[sc->n].address;
	sc->n++;
}

static int
subs_cmp(const void *a, const void *b)
{
	const bus_row *ra = a;
	const bus_row *rb = b;

	return strcmp(ra->address, rb->address);
}

static json_t *
subs_row_json(const eb_bus_addr_stats *s)
{
	return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
	                 "s:I}",
	    "address", s->address, "handlers", (json_int_t) s->handlers,
	    "local_only_handlers", (json_int_t) s->local_only_handlers,
	    "remote_handlers", (json_int_t) s->remote_handlers, "remote_nodes",
	    (json_int_t) s->remote_nodes, "sent", (json_int_t) s->sent,
	    "published", (json_int_t) s->published, "received",
	    (json_int_t) s->received, "replied", (json_int_t) s->replied,
	    "failed", (json_int_t) s->failed, "dropped",
	    (json_int_t) s->dropped);
}

static json_t *
subs_totals_json(eb_bus *bus)
{
	eb_bus_totals t;

	eb_bus_stats_totals(bus, &t);
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
	    "addresses", (json_int_t) t.addresses, "pending_requests",
	    (json_int_t) t.pending_requests, "no_handlers",
	    (json_int_t) t.no_handlers, "sent", (json_int_t) t.sent,
	    "published", (json_int_t) t.published, "received",
	    (json_int_t) t.received, "replied", (json_int_t) t.replied,
	    "failed", (json_int_t) t.failed, "dropped", (json_int_t) t.dropped);
}

void
eb__admin_subscriptions(eb_node *n, const eb__admin_req *rq, eb__admin_resp *rs)
{
	subs_query  q;
	subs_scan   sc;
	const char *why = NULL;
	json_t     *arr;
	json_t     *o;
	size_t      i;

	if (subs_query_parse(rq->query, &q, &why) != 0) {
		eb__admin_reply_error(rs, 400, "bad_request", why);
		return;
	}
	if (n->bus == NULL) {
		eb__admin_reply_error(
		    rs, 503, "unavailable", "bus not running");
		return;
	}
	memset(&sc, 0, sizeof(sc));
	sc.prefix = q.prefix;
	sc.prefix_len = strlen(q.prefix);
	eb_bus_stats_foreach(n->bus, subs_cb, &sc);
	qsort(sc.rows, sc.n, sizeof(bus_row), subs_cmp);
	arr = json_array();
	for (i = 0; i < sc.n; i++) {
		if (i < (size_t) q.limit) {
			(void) json_array_append_new(
			    arr, subs_row_json(&sc.rows[i].st));
		}
		free(sc.rows[i].address);
	}
	free(sc.rows);
	o = json_pack("{s:s, s:s, s:I, s:I, s:b, s:o, s:o}", "node_id",
	    eb_bus_node_id(n->bus), "prefix", q.prefix, "matched",
	    (json_int_t) sc.n, "limit", (json_int_t) q.limit, "truncated",
	    sc.n > (size_t) q.limit, "totals", subs_totals_json(n->bus),
	    "subscriptions", arr);
	eb__admin_reply_json(rs, 200, o);
	json_decref(o);
}

/* ---- GET /bridge ---- */

static void
conn_json_cb(const eb_bridge_conn_info *ci, void *arg)
{
	json_t *o = json_pack("{s:I, s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I}",
	    "id", (json_int_t) ci->id, "peer", ci->peer, "tls", ci->tls,
	    "age_ms", (json_int_t) ci->age_ms, "frames_in",
	    (json_int_t) ci->frames_in, "frames_out",
	    (json_int_t) ci->frames_out, "queued_bytes",
	    (json_int_t) ci->queued_bytes, "consumers",
	    (json_int_t) ci->consumers, "pending_replies",
	    (json_int_t) ci->pending_replies);

	(void) json_array_append_new(arg, o);
}

static json_t *
bridge_stats_json(const eb_bridge_stats *bs)
{
	json_t *in = json_object();
	json_t *out = json_object();
	int     k;

	for (k = 0; k < EB_BRIDGE_IN_KINDS; k++) {
		(void) json_object_set_new(in,
		    eb_bridge_in_kind_name((eb_bridge_frame_kind) k),
		    json_integer((json_int_t) bs->frames_in[k]));
	}
	for (k = 0; k < EB_BRIDGE_OUT_KINDS; k++) {
		(void) json_object_set_new(out,
		    eb_bridge_out_kind_name((eb_bridge_out_kind) k),
		    json_integer((json_int_t) bs->frames_out[k]));
	}
	json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
	                      "s:I, s:I, s:o, s:o}",
	    "connections_open", (json_int_t) bs->conns_open, "accepted",
	    (json_int_t) bs->conns_total, "refused",
	    (json_int_t) bs->conns_refused, "closed_slow",
	    (json_int_t) bs->conns_closed_slow, "closed_idle",
	    (json_int_t) bs->conns_closed_idle, "closed_bad_frame",
	    (json_int_t) bs->conns_closed_frame, "denied",
	    (json_int_t) bs->denied, "auth_failed",
	    (json_int_t) bs->auth_failed, "tls_failed",
	    (json_int_t) bs->tls_failed, "errors", (json_int_t) bs->errors,
	    "consumers", (json_int_t) bs->consumers, "frames_in", in,
	    "frames_out", out);

	/* Issue 11's bounds (hostile clients). */
	(void) json_object_set_new(o, "closed_timeout",
	    json_integer((json_int_t) bs->conns_closed_timeout));
	(void) json_object_set_new(o, "closed_memory",
	    json_integer((json_int_t) bs->conns_closed_memory));
	(void) json_object_set_new(
	    o, "evicted", json_integer((json_int_t) bs->conns_evicted));
	(void) json_object_set_new(o, "consumers_refused",
	    json_integer((json_int_t) bs->consumers_refused));
	(void) json_object_set_new(o, "requests_refused",
	    json_integer((json_int_t) bs->requests_refused));
	(void) json_object_set_new(
	    o, "input_bytes", json_integer((json_int_t) bs->input_bytes));
	return o;
}

void
eb__admin_bridge(eb_node *n, const eb__admin_req *rq, eb__admin_resp *rs)
{
	eb_bridge_stats bs;
	json_t         *conns = json_array();
	json_t         *o;

	(void) rq;
	memset(&bs, 0, sizeof(bs));
	if (n->bridge != NULL) {
		eb_bridge_stats_get(n->bridge, &bs);
		(void) eb_bridge_conn_foreach(n->bridge, conn_json_cb, conns);
	}
	o = json_pack("{s:b, s:i, s:b, s:o, s:o}", "enabled", n->bridge != NULL,
	    "port", n->bridge_port, "tls",
	    n->bridge != NULL && n->conf->bridge.tls_cert != NULL, "stats",
	    bridge_stats_json(&bs), "connections", conns);
	eb__admin_reply_json(rs, 200, o);
	json_decref(o);
}
