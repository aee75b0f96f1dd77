/*
 * GET /bridge and the bridge metric families (bridge_admin.h), read on
 * demand from the bridge's counters and its connection list. A disabled
 * bridge shows zeros. Loop thread only.
 */
#include "bridge/bridge_admin.h"

#include <string.h>

/* ---- metrics ---- */

/* What the metric tables read: the bridge's counters, the values derived
 * from them and the sums over the open connections. */
typedef struct bridge_vals {
	eb_bridge_stats s;
	uint64_t        refused;      /* registrations + requests over caps */
	uint64_t        closed_other; /* closed for no counted reason */
	uint64_t        queued;       /* sum over the connections */
	uint64_t        pending;      /* sum over the connections */
} bridge_vals;

#define BV(m) EB__PROM_AT(bridge_vals, m)

static const eb__prom_field closed_reasons[] = {
	{ "slow_consumer", BV(s.conns_closed_slow) },
	{ "idle", BV(s.conns_closed_idle) },
	{ "bad_frame", BV(s.conns_closed_frame) },
	{ "timeout", BV(s.conns_closed_timeout) },
	{ "memory", BV(s.conns_closed_memory) },
	{ "evicted", BV(s.conns_evicted) },
	{ "other", BV(closed_other) },
};

static const eb__prom_desc conn_families[] = {
	EB__PROM_ONE("ebnode_bridge_connections", "gauge",
	    "Open bridge connections.", BV(s.conns_open)),
	EB__PROM_ONE("ebnode_bridge_connections_accepted_total", "counter",
	    "Bridge connections accepted.", BV(s.conns_total)),
	EB__PROM_ONE("ebnode_bridge_connections_refused_total", "counter",
	    "Bridge connections refused (over bridge.max_connections).",
	    BV(s.conns_refused)),
	EB__PROM_ONE("ebnode_bridge_connections_evicted_total", "counter",
	    "Bridge connections without a complete frame closed at "
	    "bridge.max_connections to admit a new one.",
	    BV(s.conns_evicted)),
	EB__PROM_ONE("ebnode_bridge_input_bytes", "gauge",
	    "Bridge input buffers (partial and unhandled frames), all "
	    "connections; bounded by bridge.input_budget_bytes.",
	    BV(s.input_bytes)),
	EB__PROM_ONE("ebnode_bridge_refused_total", "counter",
	    "Bridge registrations and requests refused over the "
	    "per-connection caps.",
	    BV(refused)),
	EB__PROM_SET("ebnode_bridge_connections_closed_total", "counter",
	    "Bridge connections closed, by reason (other: the peer closed, "
	    "TLS or token failure, shutdown).",
	    "reason", closed_reasons),
};

/* After ebnode_bridge_frames_total. */
static const eb__prom_desc load_families[] = {
	EB__PROM_ONE("ebnode_bridge_consumers", "gauge",
	    "Addresses registered by bridge clients (all connections).",
	    BV(s.consumers)),
	EB__PROM_ONE("ebnode_bridge_queued_bytes", "gauge",
	    "Bytes written to bridge clients and not yet sent (sum).",
	    BV(queued)),
	EB__PROM_ONE("ebnode_bridge_pending_replies", "gauge",
	    "Requests from the bus awaiting a bridge client's reply.",
	    BV(pending)),
	EB__PROM_ONE("ebnode_bridge_requests_in_flight", "gauge",
	    "Bridge clients' requests awaiting their reply (open "
	    "connections); bounded by bridge.max_requests.",
	    BV(s.requests_in_flight)),
};

static const eb__prom_field error_types[] = {
	{ "bridge_malformed_frame",
	    EB__PROM_AT(eb_bridge_stats, frames_in[EB_BRIDGE_IN_MALFORMED]) },
	{ "bridge_unknown_type",
	    EB__PROM_AT(eb_bridge_stats, frames_in[EB_BRIDGE_IN_UNKNOWN]) },
	{ "bridge_bad_length",
	    EB__PROM_AT(eb_bridge_stats, conns_closed_frame) },
	{ "bridge_access_denied", EB__PROM_AT(eb_bridge_stats, denied) },
	{ "bridge_auth_failed", EB__PROM_AT(eb_bridge_stats, auth_failed) },
	{ "bridge_tls_failed", EB__PROM_AT(eb_bridge_stats, tls_failed) },
	{ "bridge_slow_consumer",
	    EB__PROM_AT(eb_bridge_stats, conns_closed_slow) },
};

/* b's counters, or zeros without a bridge (disabled). */
static void
stats_get(eb_bridge *b, eb_bridge_stats *s)
{
	memset(s, 0, sizeof(*s));
	if (b != NULL) {
		eb_bridge_stats_get(b, s);
	}
}

static void
bridge_sum_cb(const eb_bridge_conn_info *ci, void *arg)
{
	bridge_vals *v = arg;

	v->queued += ci->queued_bytes;
	v->pending += ci->pending_replies;
}

static void
bridge_vals_get(const eb__bridge_admin *ctx, bridge_vals *v)
{
	const eb_bridge_stats *bs = &v->s;
	uint64_t               closed;
	uint64_t               known;

	memset(v, 0, sizeof(*v));
	stats_get(ctx->bridge, &v->s);
	if (ctx->bridge != NULL) {
		(void) eb_bridge_conn_foreach(ctx->bridge, bridge_sum_cb, v);
	}
	closed = bs->conns_total - bs->conns_open;
	known = bs->conns_closed_slow + bs->conns_closed_idle +
	        bs->conns_closed_frame + bs->conns_closed_timeout +
	        bs->conns_closed_memory + bs->conns_evicted;
	v->closed_other = closed > known ? closed - known : 0;
	v->refused = bs->consumers_refused + bs->requests_refused;
}

/* Two labels, the type names from the bridge's own kind names. */
static void
emit_frames(eb__prom *w, const eb_bridge_stats *bs)
{
	int k;

	eb__prom_family(w, "ebnode_bridge_frames_total", "counter",
	    "Bridge frames by direction and type (in: malformed = not a JSON "
	    "object, unknown = unknown or missing type).");
	for (k = 0; k < EB_BRIDGE_IN_KINDS; k++) {
		const char *l[] = { "direction", "in", "type",
			eb_bridge_in_kind_name((eb_bridge_frame_kind) k),
			NULL };

		eb__prom_u64(
		    w, "ebnode_bridge_frames_total", l, bs->frames_in[k]);
	}
	for (k = 0; k < EB_BRIDGE_OUT_KINDS; k++) {
		const char *l[] = { "direction", "out", "type",
			eb_bridge_out_kind_name((eb_bridge_out_kind) k), NULL };

		eb__prom_u64(
		    w, "ebnode_bridge_frames_total", l, bs->frames_out[k]);
	}
}

static void
bridge_metrics(eb__prom *w, void *arg)
{
	bridge_vals v;

	bridge_vals_get(arg, &v);
	eb__prom_write(w, conn_families, EB__PROM_LEN(conn_families), &v);
	emit_frames(w, &v.s);
	eb__prom_write(w, load_families, EB__PROM_LEN(load_families), &v);
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
	/* Flow control (issue 17). */
	(void) json_object_set_new(
	    o, "blocked", json_integer((json_int_t) bs->conns_blocked));
	(void) json_object_set_new(
	    o, "blocked_total", json_integer((json_int_t) bs->blocked_total));
	(void) json_object_set_new(
	    o, "parked", json_integer((json_int_t) bs->consumers_parked));
	(void) json_object_set_new(
	    o, "parked_total", json_integer((json_int_t) bs->parked_total));
	return o;
}

static void
bridge_route(const eb__admin_req *rq, eb__admin_resp *rs, void *arg)
{
	const eb__bridge_admin *ctx = arg;
	eb_bridge_stats         bs;
	json_t                 *conns = json_array();
	json_t                 *o;

	(void) rq;
	stats_get(ctx->bridge, &bs);
	if (ctx->bridge != NULL) {
		(void) eb_bridge_conn_foreach(ctx->bridge, conn_json_cb, conns);
	}
	o = json_pack("{s:b, s:i, s:b, s:o, s:o}", "enabled",
	    ctx->bridge != NULL, "port", ctx->port, "tls",
	    ctx->bridge != NULL && ctx->tls, "stats", bridge_stats_json(&bs),
	    "connections", conns);
	eb__admin_reply_json(rs, 200, o);
	json_decref(o);
}

void
eb__bridge_admin_register(eb__admin *adm, eb__bridge_admin *ctx)
{
	eb__admin_route(adm, "GET", "/bridge", bridge_route, ctx);
	eb__admin_on_metrics(adm, bridge_metrics, ctx);
}

void
eb__bridge_admin_errors(eb__prom *w, eb_bridge *b)
{
	eb_bridge_stats s;

	stats_get(b, &s);
	eb__admin_error_rows(w, error_types, EB__PROM_LEN(error_types), &s);
}
