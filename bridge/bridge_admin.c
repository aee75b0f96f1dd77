/*
 * GET /bridge and the bridge metric families (bridge_admin.h), read on
 * demand from the bridge's counters and its connection list. A disabled
 * bridge shows zeros. Loop thread only.
 */
#include "bridge/bridge_admin.h"

#include <string.h>

/* ---- metrics ---- */

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
emit_bridge_conns(eb__prom *w, const eb_bridge_stats *bs)
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

	eb__prom_one(w, "ebnode_bridge_connections", "gauge",
	    "Open bridge connections.", bs->conns_open);
	eb__prom_one(w, "ebnode_bridge_connections_accepted_total", "counter",
	    "Bridge connections accepted.", bs->conns_total);
	eb__prom_one(w, "ebnode_bridge_connections_refused_total", "counter",
	    "Bridge connections refused (over bridge.max_connections).",
	    bs->conns_refused);
	eb__prom_one(w, "ebnode_bridge_connections_evicted_total", "counter",
	    "Bridge connections without a complete frame closed at "
	    "bridge.max_connections to admit a new one.",
	    bs->conns_evicted);
	eb__prom_one(w, "ebnode_bridge_input_bytes", "gauge",
	    "Bridge input buffers (partial and unhandled frames), all "
	    "connections; bounded by bridge.input_budget_bytes.",
	    bs->input_bytes);
	eb__prom_one(w, "ebnode_bridge_refused_total", "counter",
	    "Bridge registrations and requests refused over the "
	    "per-connection caps.",
	    bs->consumers_refused + bs->requests_refused);
	eb__prom_family(w, "ebnode_bridge_connections_closed_total", "counter",
	    "Bridge connections closed, by reason (other: the peer closed, "
	    "TLS or token failure, shutdown).");
	for (i = 0; i < sizeof(rs) / sizeof(rs[0]); i++) {
		const char *l[] = { "reason", rs[i].reason, NULL };

		eb__prom_u64(
		    w, "ebnode_bridge_connections_closed_total", l, rs[i].v);
	}
}

static void
bridge_metrics(eb__prom *w, void *arg)
{
	const eb__bridge_admin *ctx = arg;
	eb_bridge_stats         bs;
	bridge_sums             sums = { 0, 0 };
	int                     k;

	memset(&bs, 0, sizeof(bs));
	if (ctx->bridge != NULL) {
		eb_bridge_stats_get(ctx->bridge, &bs);
		(void) eb_bridge_conn_foreach(
		    ctx->bridge, bridge_sum_cb, &sums);
	}
	emit_bridge_conns(w, &bs);
	eb__prom_family(w, "ebnode_bridge_frames_total", "counter",
	    "Bridge frames by direction and type (in: malformed = not a JSON "
	    "object, unknown = unknown or missing type).");
	for (k = 0; k < EB_BRIDGE_IN_KINDS; k++) {
		const char *l[] = { "direction", "in", "type",
			eb_bridge_in_kind_name((eb_bridge_frame_kind) k),
			NULL };

		eb__prom_u64(
		    w, "ebnode_bridge_frames_total", l, bs.frames_in[k]);
	}
	for (k = 0; k < EB_BRIDGE_OUT_KINDS; k++) {
		const char *l[] = { "direction", "out", "type",
			eb_bridge_out_kind_name((eb_bridge_out_kind) k), NULL };

		eb__prom_u64(
		    w, "ebnode_bridge_frames_total", l, bs.frames_out[k]);
	}
	eb__prom_one(w, "ebnode_bridge_consumers", "gauge",
	    "Addresses registered by bridge clients (all connections).",
	    bs.consumers);
	eb__prom_one(w, "ebnode_bridge_queued_bytes", "gauge",
	    "Bytes written to bridge clients and not yet sent (sum).",
	    sums.queued);
	eb__prom_one(w, "ebnode_bridge_pending_replies", "gauge",
	    "Requests from the bus awaiting a bridge client's reply.",
	    sums.pending);
	eb__prom_one(w, "ebnode_bridge_requests_in_flight", "gauge",
	    "Bridge clients' requests awaiting their reply (open "
	    "connections); bounded by bridge.max_requests.",
	    bs.requests_in_flight);
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
	memset(&bs, 0, sizeof(bs));
	if (ctx->bridge != NULL) {
		eb_bridge_stats_get(ctx->bridge, &bs);
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

	memset(&s, 0, sizeof(s));
	if (b != NULL) {
		eb_bridge_stats_get(b, &s);
	}
	eb__admin_error_row(
	    w, "bridge_malformed_frame", s.frames_in[EB_BRIDGE_IN_MALFORMED]);
	eb__admin_error_row(
	    w, "bridge_unknown_type", s.frames_in[EB_BRIDGE_IN_UNKNOWN]);
	eb__admin_error_row(w, "bridge_bad_length", s.conns_closed_frame);
	eb__admin_error_row(w, "bridge_access_denied", s.denied);
	eb__admin_error_row(w, "bridge_auth_failed", s.auth_failed);
	eb__admin_error_row(w, "bridge_tls_failed", s.tls_failed);
	eb__admin_error_row(w, "bridge_slow_consumer", s.conns_closed_slow);
}
