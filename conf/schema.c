/*
 * The configuration schema: one table row per key, {path, kind, offset,
 * min, max, flags} (like redis' standardConfig), and the typed setters that
 * validate a JSON value against a row and store it in the field of the
 * module's opts struct that the row names, at that field's width. Text from the
 * environment or --set is first turned into JSON by eb__conf_parse_text(), so
 * every source goes through the same checks.
 *
 * Array and object rows (eb_bridge_permitted lists, eb_ingress_route
 * routes) are described by an element table (eb__conf_objdesc) with a check
 * function for the rules that span fields. Loop-free; any thread.
 */
#include <inttypes.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/util.h"
#include "conf/conf_int.h"

#define OFF(f) offsetof(eb__conf, f)
#define FSZ(f) sizeof(((eb__conf *) 0)->f)
/* 0, or a compile error when the field f is not as wide as T. */
#define WIDTH(f, T) (0 * sizeof(char[FSZ(f) == sizeof(T) ? 1 : -1]))
#define ROW(p, f, T, ty) \
	.path = (p), .off = OFF(f) + WIDTH(f, T), .size = FSZ(f), .type = (ty)

static const char *const log_words[] = { "err", "warn", "notice", "info",
	"debug", NULL };
static const char *const sink_words[] = { "auto", "stderr", "journald",
	"syslog", NULL };
static const char *const scheme_words[] = { "", "digest", NULL };
static const char *const acl_words[] = { "open", "creator", NULL };
static const int acl_vals[] = { EB_CLUSTER_ACL_OPEN, EB_CLUSTER_ACL_CREATOR };
static const char *const client_auth_words[] = { "none", "request", "required",
	NULL };
static const int         client_auth_vals[] = { EB_BRIDGE_CLIENT_AUTH_NONE,
	        EB_BRIDGE_CLIENT_AUTH_REQUEST, EB_BRIDGE_CLIENT_AUTH_REQUIRED };
/* EB_BRIDGE_AUTH_OFF has no word: conf derives it from an empty token. */
static const char *const auth_mode_words[] = { "every", "first", NULL };
static const int         auth_mode_vals[] = { EB_BRIDGE_AUTH_EVERY,
	        EB_BRIDGE_AUTH_FIRST };
/* eb_ingress_route.publish: 0 send, 1 publish. */
static const char *const mode_words[] = { "send", "publish", NULL };

/* ---- element objects --------------------------------------------------- */

static int check_permit(const void *obj, int n_match, const char *path,
    const eb__conf_src *src, eb_errbuf *err);
static int check_route(const void *obj, int n_match, const char *path,
    const eb__conf_src *src, eb_errbuf *err);
static int check_target(const void *obj, int n_match, const char *path,
    const eb__conf_src *src, eb_errbuf *err);

#define FS(k, T, f, fl)                                                   \
	{                                                                 \
		.key = (k), .type = EB__CT_STRING, .off = offsetof(T, f), \
		.flags = (fl)                                             \
	}
#define FM(k, t, fl)                                                   \
	{                                                              \
		.key = (k), .type = EB__CT_MATCH,                      \
		.off = offsetof(eb_ingress_route, value),              \
		.off2 = offsetof(eb_ingress_route, match), .tag = (t), \
		.flags = (fl)                                          \
	}
#define FE(k, f, w)                                                \
	{                                                          \
		.key = (k), .type = EB__CT_ENUM,                   \
		.off = offsetof(eb_ingress_route, f), .words = (w) \
	}

static const eb__conf_field permit_fields[] = {
	FS("address", eb_bridge_permitted, address, EB__CF_NONEMPTY),
	FS("addressRegex", eb_bridge_permitted, address_regex,
	    EB__CF_NONEMPTY | EB__CF_REGEX),
};
static const eb__conf_objdesc permit_desc = { sizeof(eb_bridge_permitted),
	permit_fields, sizeof(permit_fields) / sizeof(permit_fields[0]),
	check_permit };

static const eb__conf_field route_fields[] = {
	FS("header", eb_ingress_route, header, EB__CF_NONEMPTY),
	FS("field", eb_ingress_route, field, EB__CF_NONEMPTY),
	FM("equals", EB_INGRESS_MATCH_EQUALS, 0),
	FM("prefix", EB_INGRESS_MATCH_PREFIX, 0),
	FM("regex", EB_INGRESS_MATCH_REGEX, EB__CF_REGEX),
	FS("to", eb_ingress_route, to, EB__CF_NONEMPTY),
	FE("mode", publish, mode_words),
};
static const eb__conf_objdesc route_desc = { sizeof(eb_ingress_route),
	route_fields, sizeof(route_fields) / sizeof(route_fields[0]),
	check_route };

static const eb__conf_field target_fields[] = {
	FS("to", eb_ingress_route, to, EB__CF_NONEMPTY),
	FE("mode", publish, mode_words),
};
static const eb__conf_objdesc target_desc = { sizeof(eb_ingress_route),
	target_fields, sizeof(target_fields) / sizeof(target_fields[0]),
	check_target };

/* ---- the table ---------------------------------------------------------- */

/* Strings; SD states the row's own default. */
#define S(p, f, fl)                                                   \
	{                                                             \
		ROW(p, f, const char *, EB__CT_STRING), .flags = (fl) \
	}
#define SD(p, f, d, fl)                                            \
	{                                                          \
		ROW(p, f, const char *, EB__CT_STRING),            \
		    .def_str = (d), .flags = (fl) | EB__CF_DEFAULT \
	}
#define W(p, f, w, fl)                                              \
	{                                                           \
		ROW(p, f, const char *, EB__CT_WORD), .words = (w), \
		                                      .flags = (fl) \
	}
/* Integers of the field's width (T, kind ty) in lo..hi. */
#define N(p, f, T, ty, lo, hi)                             \
	{                                                  \
		ROW(p, f, T, ty), .min = (lo), .max = (hi) \
	}
#define ND(p, f, T, ty, d, lo, hi)                                          \
	{                                                                   \
		ROW(p, f, T, ty), .def_int = (d), .min = (lo), .max = (hi), \
		                  .flags = EB__CF_DEFAULT                   \
	}
#define U32(p, f, lo, hi) N(p, f, uint32_t, EB__CT_U32, lo, hi)
#define U64(p, f, lo, hi) N(p, f, uint64_t, EB__CT_U64, lo, hi)
#define SZ(p, f, lo, hi)  N(p, f, size_t, EB__CT_SIZE, lo, hi)
#define IN(p, f, lo, hi)  N(p, f, int, EB__CT_INT, lo, hi)
#define BD(p, f, d)                                                     \
	{                                                               \
		ROW(p, f, bool, EB__CT_BOOL), .def_int = (d), .max = 1, \
		                              .flags = EB__CF_DEFAULT   \
	}
#define IB(p, f, fl)                                                  \
	{                                                             \
		ROW(p, f, int, EB__CT_IBOOL), .max = 1, .flags = (fl) \
	}
#define E(p, f, w, v)                                                  \
	{                                                              \
		ROW(p, f, int, EB__CT_ENUM), .words = (w), .vals = (v) \
	}
#define ED(p, f, w, d)                                                     \
	{                                                                  \
		ROW(p, f, int, EB__CT_ENUM), .words = (w), .def_int = (d), \
		                             .flags = EB__CF_DEFAULT       \
	}
/* Arrays and objects: the field is a pointer (moved via memcpy), the
 * count of an array a size_t. */
#define A(p, f, n, fl, o)                                                      \
	{                                                                      \
		.path = (p), .off = OFF(f), .size = sizeof(void *),            \
		.off_n = OFF(n) + WIDTH(n, size_t), .flags = (fl), .obj = (o), \
		.type = EB__CT_ARRAY                                           \
	}
#define O(p, f, o)                                                  \
	{                                                           \
		.path = (p), .off = OFF(f), .size = sizeof(void *), \
		.obj = (o), .type = EB__CT_OBJECT                   \
	}

/*
 * Defaults: a row without its own (no SD/ND/BD/ED) keeps what the owning
 * module's _opts_init put there. Rows that state one do so because the
 * module has none (log has no opts struct; bridge.enabled and
 * admin.enabled are the node's choice) or because the daemon's default
 * differs from the library's: zookeeper.connect ("" rather than NULL, both
 * standalone), cluster.name ("ebnode" in eb_link_opts_init),
 * cluster.link_timeout_ms (3500 there), bridge.port and admin.port (0,
 * ephemeral, there). Computed rows are derived by conf.c after loading:
 * node.address ("ebnode-" + host name), node.id (node.address),
 * bridge.inbound (only ingress.address) and bridge.auth.mode (off without
 * a token, "every" with one unless set).
 */
const eb__conf_entry eb__conf_schema[] = {
	S("node.id", cluster.node_id, EB__CF_NONEMPTY | EB__CF_COMPUTED),
	S("node.address", cluster.address, EB__CF_NONEMPTY | EB__CF_COMPUTED),
	S("node.host", cluster.host, EB__CF_NONEMPTY),
	IB("node.eligible", cluster.election.eligible, 0),
	{ ROW("log.level", log.level, int, EB__CT_ENUM), .words = log_words,
	    .def_int = EB_LOG_LEVEL_INFO,
	    .flags = EB__CF_DEFAULT | EB__CF_DYNAMIC },
	ED("log.sink", log.sink, sink_words, EB_LOG_SINK_AUTO),
	SD("log.journal_socket", log.journal_socket,
	    "/run/systemd/journal/socket", EB__CF_NONEMPTY),
	SD("zookeeper.connect", cluster.connect, "", 0),
	S("zookeeper.root", cluster.root, 0),
	U32("zookeeper.session_timeout_ms", cluster.session_timeout_ms, 1000,
	    600000),
	U32("zookeeper.tick_ms", cluster.election.zk_tick_ms, 0, 600000),
	W("zookeeper.auth.scheme", cluster.auth_scheme, scheme_words,
	    EB__CF_NULLSTR),
	S("zookeeper.auth.credentials", cluster.auth_credentials,
	    EB__CF_SECRET | EB__CF_NULLSTR),
	E("zookeeper.acl", cluster.acl, acl_words, acl_vals),
	SZ("zookeeper.max_request_bytes", cluster.max_request_bytes,
	    EB_CLUSTER_MAX_REQUEST_MIN, EB_CLUSTER_MAX_REQUEST_MAX),
	U32("election.heartbeat_ms", cluster.election.heartbeat_ms, 0, 600000),
	U32("election.lease_ms", cluster.election.lease_ms, 0, 600000),
	SD("cluster.name", link.cluster_name, "default", EB__CF_NONEMPTY),
	S("cluster.listen", link.host, EB__CF_NONEMPTY),
	IN("cluster.port", link.port, 0, 65535),
	U32("cluster.heartbeat_ms", link.heartbeat_ms, 50, 60000),
	ND("cluster.link_timeout_ms", link.dead_ms, uint32_t, EB__CT_U32, 3000,
	    100, 600000),
	S("cluster.tls.cert", link.tls_cert_file, EB__CF_NULLSTR),
	S("cluster.tls.key", link.tls_key_file, EB__CF_NULLSTR),
	S("cluster.tls.ca", link.tls_ca_file, EB__CF_NULLSTR),
	U64("bus.request_timeout_ms", bus.request_timeout_ms, 1, 3600000),
	U64("bus.receipt_timeout_ms", bus.receipt_timeout_ms, 1, 3600000),
	U32("bus.consumer_queue_max", bus.consumer_queue_max, 1, 10000000),
	U32("bus.max_pending_requests", bus.max_pending_requests, 1, 16777216),
	U64("bus.max_request_timeout_ms", bus.max_request_timeout_ms, 1,
	    86400000),
	BD("bridge.enabled", bridge_enabled, 1),
	S("bridge.listen", bridge.host, EB__CF_NONEMPTY),
	ND("bridge.port", bridge.port, int, EB__CT_INT, 7000, 0, 65535),
	U32("bridge.max_frame_bytes", bridge.max_frame_bytes, 16, 2147483647),
	U32("bridge.max_json_depth", bridge.max_json_depth, 2,
	    EB_BRIDGE_MAX_JSON_DEPTH),
	U32("bridge.max_connections", bridge.max_connections, 1, 1000000),
	SZ("bridge.write_queue_bytes", bridge.write_queue_max_bytes, 1024,
	    INT64_MAX),
	U64("bridge.idle_timeout_ms", bridge.idle_timeout_ms, 0, 86400000),
	U64("bridge.reply_ttl_ms", bridge.reply_ttl_ms, 1, 3600000),
	U64("bridge.frame_timeout_ms", bridge.frame_timeout_ms, 0, 86400000),
	U64("bridge.first_frame_timeout_ms", bridge.first_frame_timeout_ms, 0,
	    86400000),
	U64("bridge.tls.handshake_timeout_ms", bridge.tls_handshake_timeout_ms,
	    0, 86400000),
	SZ("bridge.input_budget_bytes", bridge.input_budget_bytes, 0,
	    INT64_MAX),
	U32("bridge.max_consumers_per_conn", bridge.max_consumers_per_conn, 0,
	    10000000),
	U32("bridge.max_requests_per_conn", bridge.max_requests_per_conn, 0,
	    10000000),
	U32("bridge.max_requests", bridge.max_requests, 0, 100000000),
	U64("bridge.max_request_timeout_ms", bridge.max_request_timeout_ms, 0,
	    86400000),
	A("bridge.inbound", bridge.inbound, bridge.inbound_count,
	    EB__CF_COMPUTED | EB__CF_DYNAMIC, &permit_desc),
	A("bridge.outbound", bridge.outbound, bridge.outbound_count,
	    EB__CF_DYNAMIC, &permit_desc),
	S("bridge.tls.cert", bridge.tls_cert, EB__CF_NULLSTR),
	S("bridge.tls.key", bridge.tls_key, EB__CF_NULLSTR),
	S("bridge.tls.ca", bridge.tls_ca, EB__CF_NULLSTR),
	E("bridge.tls.client_auth", bridge.tls_client_auth, client_auth_words,
	    client_auth_vals),
	S("bridge.auth.token", bridge.auth_token,
	    EB__CF_SECRET | EB__CF_NULLSTR),
	E("bridge.auth.mode", bridge.auth_mode, auth_mode_words,
	    auth_mode_vals),
	BD("web.enabled", web_enabled, 0), /* the node's choice */
	S("web.listen", web.host, EB__CF_NONEMPTY),
	ND("web.port", web.port, int, EB__CT_INT, 7300, 0, 65535),
	S("web.path", web.path, EB__CF_NONEMPTY),
	U64("web.heartbeat_ms", web.heartbeat_ms, 0, 3600000),
	U32("web.max_header_bytes", web.max_header_bytes, 512, 1048576),
	BD("admin.enabled", admin_enabled, 1),
	S("admin.listen", admin.listen, EB__CF_NONEMPTY),
	ND("admin.port", admin.port, int, EB__CT_INT, 7100, 0, 65535),
	S("admin.token", admin.token, EB__CF_SECRET | EB__CF_NULLSTR),
	U64("admin.request_timeout_ms", admin.request_timeout_ms, 100, 3600000),
	S("admin.cors_origins", admin.cors_origins,
	    EB__CF_NULLSTR | EB__CF_ORIGINS),
	S("ingress.address", ingress.address, EB__CF_NONEMPTY),
	{ ROW("ingress.hold_max", ingress.hold_max, uint32_t, EB__CT_U32),
	    .max = 10000000, .flags = EB__CF_DYNAMIC },
	{ ROW("ingress.hold_ms", ingress.hold_ms, uint64_t, EB__CT_U64),
	    .max = 3600000, .flags = EB__CF_DYNAMIC },
	IB("ingress.ack", ingress.relay_replies, EB__CF_NOT | EB__CF_DYNAMIC),
	/* Safe retries: the consumer's node keeps the keys (the bus). */
	U64("ingress.dedup_window_ms", bus.dedup_window_ms, 1, 86400000),
	U32("ingress.dedup_max_keys", bus.dedup_max_keys, 0, 16777216),
	A("ingress.routes", ingress.routes, ingress.route_count, EB__CF_DYNAMIC,
	    &route_desc),
	{ .path = "ingress.default_route",
	    .off = OFF(ingress.default_route),
	    .size = sizeof(void *),
	    .obj = &target_desc,
	    .type = EB__CT_OBJECT,
	    .flags = EB__CF_DYNAMIC },
	/* Shared data caps (docs/SHARED.md "Caps"; 0: no cap). */
	ND("shared.max_locks_per_conn", shared.max_locks_per_conn, uint32_t,
	    EB__CT_U32, EB_SHARED_MAX_LOCKS_PER_CONN, 0, 1000000),
	ND("shared.max_locks_per_node", shared.max_locks_per_node, uint32_t,
	    EB__CT_U32, EB_SHARED_MAX_LOCKS_PER_NODE, 0, 1000000),
	ND("shared.max_waits_per_node", shared.max_waits_per_node, uint32_t,
	    EB__CT_U32, EB_SHARED_MAX_WAITS_PER_NODE, 0, 1000000),
	ND("shared.max_counters", shared.max_counters, uint32_t, EB__CT_U32,
	    EB_SHARED_MAX_COUNTERS, 0, 100000000),
	/* Membership in a Vert.x 4.5 cluster (docs/VERTX.md); an empty
	 * vertx.node_id: the vertx module draws a random UUID at start. */
	BD("vertx.enabled", vertx_enabled, 0), /* the node's choice */
	S("vertx.root", vertx.root, EB__CF_NONEMPTY),
	S("vertx.cluster_host", vertx.cluster_host, EB__CF_NONEMPTY),
	IN("vertx.cluster_port", vertx.cluster_port, 0, 65535),
	S("vertx.node_id", vertx.node_id, EB__CF_NULLSTR),
	U32("vertx.max_frame_bytes", vertx.max_frame_bytes, 64, 2147483647),
	SZ("vertx.write_queue_bytes", vertx.write_queue_bytes, 1024, INT64_MAX),
	U32("vertx.connect_timeout_ms", vertx.connect_timeout_ms, 1, 600000),
	U32("vertx.ping_interval_ms", vertx.ping_interval_ms, 0, 3600000),
	U32("vertx.ping_timeout_ms", vertx.ping_timeout_ms, 1, 3600000),
	U32("vertx.drain_ms", vertx.drain_ms, 0, 60000),
	S("vertx.engine_root", vertx.engine_root, EB__CF_NULLSTR),
	S("vertx.engine_address", vertx.engine_address, EB__CF_NULLSTR),
	S("vertx.engine_ingress", vertx.engine_ingress, EB__CF_NONEMPTY),
};
const size_t eb__conf_schema_len =
    sizeof(eb__conf_schema) / sizeof(eb__conf_schema[0]);

const eb__conf_entry *
eb__conf_find(const char *path)
{
	size_t k;

	for (k = 0; k < eb__conf_schema_len; k++) {
		if (strcmp(eb__conf_schema[k].path, path) == 0) {
			return &eb__conf_schema[k];
		}
	}
	return NULL;
}

bool
eb__conf_is_section(const char *path)
{
	size_t k, n = strlen(path);

	for (k = 0; k < eb__conf_schema_len; k++) {
		const char *p = eb__conf_schema[k].path;

		if (strncmp(p, path, n) == 0 && p[n] == '.') {
			return true;
		}
	}
	return false;
}

/* ---- raw slots ---------------------------------------------------------- */

static void *
slot(eb__conf *c, size_t off)
{
	return (char *) c + off;
}

static const void *
cslot(const eb__conf *c, size_t off)
{
	return (const char *) c + off;
}

/* String fields are const char * in the opts structs but owned by the
 * eb__conf: they are read and written through memcpy. */
static const char *
str_get(const void *slotp)
{
	const char *s;

	memcpy(&s, slotp, sizeof(s));
	return s;
}

static void
str_put(void *slotp, const char *s)
{
	char *old, *copy = s != NULL ? eb__strdup(s) : NULL;

	memcpy(&old, slotp, sizeof(old));
	memcpy(slotp, &copy, sizeof(copy));
	free(old);
}

/* Stores s, or NULL for "" when flags has EB__CF_NULLSTR. */
static void
str_store(void *slotp, const char *s, unsigned flags)
{
	if ((flags & EB__CF_NULLSTR) != 0 && s != NULL && s[0] == '\0') {
		s = NULL;
	}
	str_put(slotp, s);
}

static void
obj_release(const eb__conf_objdesc *d, void *obj)
{
	size_t k;

	for (k = 0; k < d->n_fields; k++) {
		if (d->fields[k].type != EB__CT_ENUM) {
			str_put((char *) obj + d->fields[k].off, NULL);
		}
	}
}

/* Frees an array of n elements of d (and the array). */
static void
arr_free(const eb__conf_objdesc *d, void *items, size_t n)
{
	size_t k;

	for (k = 0; k < n; k++) {
		obj_release(d, (char *) items + k * d->size);
	}
	free(items);
}

/* Array slots are typed pointers in eb__conf; they are moved via memcpy. */
static void *
arr_get(const eb__conf *c, const eb__conf_entry *e, size_t *n)
{
	void *items;

	memcpy(&items, cslot(c, e->off), sizeof(items));
	*n = 1;
	if (e->type == EB__CT_ARRAY) {
		memcpy(n, cslot(c, e->off_n), sizeof(*n));
	}
	return items;
}

static void
arr_put(eb__conf *c, const eb__conf_entry *e, void *items, size_t n)
{
	size_t old_n;
	void  *old = arr_get(c, e, &old_n);

	if (old != NULL) {
		arr_free(e->obj, old, old_n);
	}
	memcpy(slot(c, e->off), &items, sizeof(items));
	if (e->type == EB__CT_ARRAY) {
		memcpy(slot(c, e->off_n), &n, sizeof(n));
	}
}

/* Integer-like rows: the value of the field, widened. */
static int64_t
int_get(const eb__conf *c, const eb__conf_entry *e)
{
	const void *p = cslot(c, e->off);
	int64_t     v = 0;

	switch (e->type) {
	case EB__CT_I64:
		v = *(const int64_t *) p;
		break;
	case EB__CT_U64:
		v = (int64_t) * (const uint64_t *) p;
		break;
	case EB__CT_U32:
		v = *(const uint32_t *) p;
		break;
	case EB__CT_SIZE:
		v = (int64_t) * (const size_t *) p;
		break;
	case EB__CT_BOOL:
		v = *(const bool *) p;
		break;
	case EB__CT_INT:
	case EB__CT_IBOOL:
	case EB__CT_ENUM:
		v = *(const int *) p;
		break;
	default:
		break;
	}
	return v;
}

/* Stores v (already range-checked) at the field's width. */
static void
int_put(eb__conf *c, const eb__conf_entry *e, int64_t v)
{
	void *p = slot(c, e->off);

	switch (e->type) {
	case EB__CT_I64:
		*(int64_t *) p = v;
		break;
	case EB__CT_U64:
		*(uint64_t *) p = (uint64_t) v;
		break;
	case EB__CT_U32:
		*(uint32_t *) p = (uint32_t) v;
		break;
	case EB__CT_SIZE:
		*(size_t *) p = (size_t) v;
		break;
	case EB__CT_BOOL:
		*(bool *) p = v != 0;
		break;
	case EB__CT_INT:
	case EB__CT_IBOOL:
	case EB__CT_ENUM:
		*(int *) p = (int) v;
		break;
	default:
		break;
	}
}

static bool
is_string(const eb__conf_entry *e)
{
	return e->type == EB__CT_STRING || e->type == EB__CT_WORD;
}

void
eb__conf_defaults(eb__conf *c)
{
	size_t k;

	memset(c, 0, sizeof(*c));
	eb_cluster_opts_init(&c->cluster);
	eb_link_opts_init(&c->link);
	eb_bus_opts_init(&c->bus);
	eb_bridge_opts_init(&c->bridge);
	eb_web_opts_init(&c->web);
	eb_ingress_opts_init(&c->ingress);
	eb__admin_opts_init(&c->admin);
	eb_vertx_opts_init(&c->vertx);
	for (k = 0; k < eb__conf_schema_len; k++) {
		const eb__conf_entry *e = &eb__conf_schema[k];
		const char           *def;

		if (is_string(e)) {
			/* The module's default is a literal: own a copy. */
			def = (e->flags & EB__CF_DEFAULT) != 0
			          ? e->def_str
			          : str_get(slot(c, e->off));
			memset(slot(c, e->off), 0, sizeof(char *));
			str_store(slot(c, e->off), def, e->flags);
		} else if ((e->flags & EB__CF_DEFAULT) != 0) {
			int_put(c, e, e->def_int);
		}
	}
}

void
eb__conf_release(eb__conf *c)
{
	size_t k;

	for (k = 0; k < eb__conf_schema_len; k++) {
		const eb__conf_entry *e = &eb__conf_schema[k];

		if (is_string(e)) {
			str_put(slot(c, e->off), NULL);
		} else if (e->type == EB__CT_ARRAY ||
		           e->type == EB__CT_OBJECT) {
			arr_put(c, e, NULL, 0);
		}
	}
	free(c->origin);
	c->origin = NULL;
}

/* ---- value checks ---------------------------------------------------------
 */

void
eb__conf_describe(const json_t *v, char *out, size_t n)
{
	char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);

	if (s == NULL) {
		(void) snprintf(out, n, "?");
		return;
	}
	if (strlen(s) > 40) {
		(void) snprintf(out, n, "%.37s...", s);
	} else {
		(void) snprintf(out, n, "%s", s);
	}
	free(s);
}

static void
range_text(const eb__conf_entry *e, char *out, size_t n)
{
	if (e->max == INT64_MAX) {
		(void) snprintf(out, n, ">= %" PRId64, e->min);
	} else {
		(void) snprintf(
		    out, n, "in %" PRId64 "..%" PRId64, e->min, e->max);
	}
}

/* "err|warn|...", with "" shown as "" so that it is visible. */
static void
words_text(const char *const *w, char *out, size_t n)
{
	size_t used = 0;

	out[0] = '\0';
	for (; *w != NULL && used < n; w++) {
		int k = snprintf(out + used, n - used, "%s%s",
		    used > 0 ? "|" : "", (*w)[0] != '\0' ? *w : "\"\"");

		if (k < 0) {
			break;
		}
		used += (size_t) k;
	}
}

static int
word_index(const char *const *w, const char *s)
{
	int k;

	for (k = 0; w[k] != NULL; k++) {
		if (strcmp(w[k], s) == 0) {
			return k;
		}
	}
	return -1;
}

static int
check_regex(
    const char *re, const char *path, const eb__conf_src *src, eb_errbuf *err)
{
	regex_t rx;
	char    msg[128];
	int     rc = regcomp(&rx, re, REG_EXTENDED | REG_NOSUB);

	if (rc != 0) {
		(void) regerror(rc, &rx, msg, sizeof(msg));
		return eb__conf_errf(src, err, path, false,
		    "invalid regular expression \"%s\": %s", re, msg);
	}
	regfree(&rx);
	return 0;
}

/* Checks a string value; 0 when ok. */
static int
check_string(const json_t *v, unsigned flags, const char *path,
    const eb__conf_src *src, eb_errbuf *err)
{
	char got[64];

	if (!json_is_string(v)) {
		eb__conf_describe(v, got, sizeof(got));
		return eb__conf_errf(
		    src, err, path, false, "expected a string, got %s", got);
	}
	if ((flags & EB__CF_NONEMPTY) != 0 && json_string_length(v) == 0) {
		return eb__conf_errf(src, err, path, false,
		    "expected a non-empty string, got \"\"");
	}
	if (strlen(json_string_value(v)) != json_string_length(v)) {
		return eb__conf_errf(
		    src, err, path, false, "string contains a NUL character");
	}
	if ((flags & EB__CF_REGEX) != 0) {
		return check_regex(json_string_value(v), path, src, err);
	}
	if ((flags & EB__CF_ORIGINS) != 0) {
		char why[160];

		if (eb__admin_origins_check(
		        json_string_value(v), why, sizeof(why)) != 0) {
			return eb__conf_errf(src, err, path, false, "%s", why);
		}
	}
	return 0;
}

static int
check_enum(const json_t *v, const char *const *words, const char *path,
    const eb__conf_src *src, eb_errbuf *err, int *out)
{
	char got[64], list[128];
	int  k =
            json_is_string(v) ? word_index(words, json_string_value(v)) : -1;

	if (k < 0) {
		eb__conf_describe(v, got, sizeof(got));
		words_text(words, list, sizeof(list));
		return eb__conf_errf(src, err, path, false,
		    "expected one of %s, got %s", list, got);
	}
	*out = k;
	return 0;
}

/* ---- element objects ---------------------------------------------------- */

static int
obj_parse(const eb__conf_objdesc *d, json_t *v, void *obj, const char *path,
    const eb__conf_src *src, eb_errbuf *err)
{
	const char *key;
	json_t     *val;
	char        got[64], sub[256];
	size_t      k;
	int         n_match = 0;

	if (!json_is_object(v)) {
		eb__conf_describe(v, got, sizeof(got));
		return eb__conf_errf(
		    src, err, path, false, "expected an object, got %s", got);
	}
	json_object_foreach((json_t *) v, key, val)
	{
		const eb__conf_field *f = NULL;
		void                 *fp;

		(void) snprintf(sub, sizeof(sub), "%s.%s", path, key);
		for (k = 0; k < d->n_fields && f == NULL; k++) {
			if (strcmp(d->fields[k].key, key) == 0) {
				f = &d->fields[k];
			}
		}
		if (f == NULL) {
			return eb__conf_errf(
			    src, err, sub, true, "unknown key");
		}
		fp = (char *) obj + f->off;
		if (f->type == EB__CT_ENUM) {
			if (check_enum(val, f->words, sub, src, err, fp) != 0) {
				return EB_ECONF;
			}
			continue;
		}
		if (check_string(val, f->flags, sub, src, err) != 0) {
			return EB_ECONF;
		}
		str_put(fp, json_string_value(val));
		if (f->type == EB__CT_MATCH) {
			*(int *) ((char *) obj + f->off2) = f->tag;
			n_match++;
		}
	}
	return d->check(obj, n_match, path, src, err);
}

static int
check_permit(const void *obj, int n_match, const char *path,
    const eb__conf_src *src, eb_errbuf *err)
{
	const eb_bridge_permitted *p = obj;

	(void) n_match;
	if (p->address != NULL && p->address_regex != NULL) {
		return eb__conf_errf(src, err, path, false,
		    "\"address\" and \"addressRegex\" are mutually exclusive");
	}
	return 0;
}

static int
check_target(const void *obj, int n_match, const char *path,
    const eb__conf_src *src, eb_errbuf *err)
{
	const eb_ingress_route *t = obj;

	(void) n_match;
	if (t->to == NULL) {
		return eb__conf_errf(
		    src, err, path, false, "missing required key \"to\"");
	}
	return 0;
}

static int
check_route(const void *obj, int n_match, const char *path,
    const eb__conf_src *src, eb_errbuf *err)
{
	const eb_ingress_route *r = obj;

	if ((r->header != NULL) == (r->field != NULL)) {
		return eb__conf_errf(src, err, path, false,
		    "expected exactly one of \"header\" or \"field\"");
	}
	if (n_match != 1) {
		return eb__conf_errf(src, err, path, false,
		    "expected exactly one of \"equals\", \"prefix\" or "
		    "\"regex\"");
	}
	if (r->to == NULL) {
		return eb__conf_errf(
		    src, err, path, false, "missing required key \"to\"");
	}
	return 0;
}

static int
set_array(eb__conf *c, const eb__conf_entry *e, json_t *v,
    const eb__conf_src *src, eb_errbuf *err)
{
	const eb__conf_objdesc *d = e->obj;
	size_t                  n, k;
	char                   *items;
	char                    got[64], sub[256];

	if (!json_is_array(v)) {
		eb__conf_describe(v, got, sizeof(got));
		return eb__conf_errf(src, err, e->path, false,
		    "expected an array of objects, got %s", got);
	}
	n = json_array_size(v);
	items = eb__calloc(n > 0 ? n : 1, d->size);
	for (k = 0; k < n; k++) {
		(void) snprintf(sub, sizeof(sub), "%s[%zu]", e->path, k);
		if (obj_parse(d, json_array_get(v, k), items + k * d->size, sub,
		        src, err) != 0) {
			arr_free(d, items, k + 1);
			return EB_ECONF;
		}
	}
	arr_put(c, e, items, n);
	return 0;
}

static int
set_object(eb__conf *c, const eb__conf_entry *e, json_t *v,
    const eb__conf_src *src, eb_errbuf *err)
{
	void *obj;

	if (json_is_null(v)) {
		arr_put(c, e, NULL, 0);
		return 0;
	}
	obj = eb__calloc(1, e->obj->size);
	if (obj_parse(e->obj, v, obj, e->path, src, err) != 0) {
		arr_free(e->obj, obj, 1);
		return EB_ECONF;
	}
	arr_put(c, e, obj, 1);
	return 0;
}

static bool
is_integer(const eb__conf_entry *e)
{
	switch (e->type) {
	case EB__CT_I64:
	case EB__CT_U64:
	case EB__CT_U32:
	case EB__CT_INT:
	case EB__CT_SIZE:
		return true;
	default:
		return false;
	}
}

static int
enum_val(const eb__conf_entry *e, int k)
{
	return e->vals != NULL ? e->vals[k] : k;
}

int
eb__conf_set(eb__conf *c, const eb__conf_entry *e, json_t *v,
    const eb__conf_src *src, eb_errbuf *err)
{
	char got[64], range[64];
	int  k = 0;

	if (is_integer(e)) {
		if (!json_is_integer(v) || json_integer_value(v) < e->min ||
		    json_integer_value(v) > e->max) {
			eb__conf_describe(v, got, sizeof(got));
			range_text(e, range, sizeof(range));
			return eb__conf_errf(src, err, e->path, false,
			    "expected an integer %s, got %s", range, got);
		}
		int_put(c, e, json_integer_value(v));
		return 0;
	}
	switch (e->type) {
	case EB__CT_STRING:
		if (check_string(v, e->flags, e->path, src, err) != 0) {
			return EB_ECONF;
		}
		str_store(slot(c, e->off), json_string_value(v), e->flags);
		return 0;
	case EB__CT_WORD:
		if (check_enum(v, e->words, e->path, src, err, &k) != 0) {
			return EB_ECONF;
		}
		str_store(slot(c, e->off), e->words[k], e->flags);
		return 0;
	case EB__CT_BOOL:
	case EB__CT_IBOOL:
		if (!json_is_boolean(v)) {
			eb__conf_describe(v, got, sizeof(got));
			return eb__conf_errf(src, err, e->path, false,
			    "expected true or false, got %s", got);
		}
		int_put(
		    c, e, json_is_true(v) != ((e->flags & EB__CF_NOT) != 0));
		return 0;
	case EB__CT_ENUM:
		if (check_enum(v, e->words, e->path, src, err, &k) != 0) {
			return EB_ECONF;
		}
		int_put(c, e, enum_val(e, k));
		return 0;
	case EB__CT_ARRAY:
		return set_array(c, e, v, src, err);
	case EB__CT_OBJECT:
		return set_object(c, e, v, src, err);
	default:
		return EB_ECONF;
	}
}

/* ---- text (environment, --set) ----------------------------------------- */

static int
parse_bool_text(const char *s, bool *out)
{
	static const char *const yes[] = { "true", "1", "yes", "on", NULL };
	static const char *const no[] = { "false", "0", "no", "off", NULL };

	if (word_index(yes, s) >= 0) {
		*out = true;
		return 0;
	}
	if (word_index(no, s) >= 0) {
		*out = false;
		return 0;
	}
	return -1;
}

int
eb__conf_parse_text(const eb__conf_entry *e, const char *text, json_t **out,
    const eb__conf_src *src, eb_errbuf *err)
{
	json_error_t jerr;
	int64_t      i;
	bool         b;
	char         range[64];

	*out = NULL;
	if (is_integer(e)) {
		if (eb__parse_i64(text, INT64_MIN, INT64_MAX, &i) != 0) {
			range_text(e, range, sizeof(range));
			return eb__conf_errf(src, err, e->path, false,
			    "expected an integer %s, got \"%.40s\"", range,
			    text);
		}
		*out = json_integer(i);
		return 0;
	}
	switch (e->type) {
	case EB__CT_STRING:
	case EB__CT_WORD:
	case EB__CT_ENUM:
		*out = json_string(text);
		if (*out == NULL) {
			return eb__conf_errf(src, err, e->path, false,
			    "expected a UTF-8 string");
		}
		return 0;
	case EB__CT_BOOL:
	case EB__CT_IBOOL:
		if (parse_bool_text(text, &b) != 0) {
			return eb__conf_errf(src, err, e->path, false,
			    "expected true or false, got \"%.40s\"", text);
		}
		*out = json_boolean(b);
		return 0;
	case EB__CT_ARRAY:
	case EB__CT_OBJECT:
		*out = json_loads(
		    text, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
		if (*out == NULL) {
			return eb__conf_errf(src, err, e->path, false,
			    "invalid JSON at column %d: %s", jerr.column,
			    jerr.text);
		}
		return 0;
	default:
		return EB_ECONF;
	}
}

/* ---- output ------------------------------------------------------------- */

static json_t *
obj_to_json(const eb__conf_objdesc *d, const void *obj)
{
	json_t *o = json_object();
	size_t  k;

	for (k = 0; k < d->n_fields; k++) {
		const eb__conf_field *f = &d->fields[k];
		const void           *fp = (const char *) obj + f->off;

		if (f->type == EB__CT_ENUM) {
			(void) json_object_set_new(o, f->key,
			    json_string(f->words[*(const int *) fp]));
		} else if (str_get(fp) != NULL &&
		           (f->type != EB__CT_MATCH ||
		               *(const int *) ((const char *) obj + f->off2) ==
		                   f->tag)) {
			(void) json_object_set_new(
			    o, f->key, json_string(str_get(fp)));
		}
	}
	return o;
}

/* The word of an enum value; the first word for a value without one
 * (bridge.auth.mode off: no token). */
static const char *
enum_word(const eb__conf_entry *e, int v)
{
	int k;

	for (k = 0; e->words[k] != NULL; k++) {
		if (enum_val(e, k) == v) {
			return e->words[k];
		}
	}
	return e->words[0];
}

json_t *
eb__conf_get_json(const eb__conf *c, const eb__conf_entry *e, bool show_secrets)
{
	const char *s;
	size_t      n, k;
	void       *items;
	json_t     *a;

	if (is_integer(e)) {
		return json_integer(int_get(c, e));
	}
	switch (e->type) {
	case EB__CT_STRING:
	case EB__CT_WORD:
		s = str_get(cslot(c, e->off));
		if (s == NULL) {
			return (e->flags & EB__CF_NULLSTR) != 0
			           ? json_string("")
			           : json_null();
		}
		if ((e->flags & EB__CF_SECRET) != 0 && !show_secrets &&
		    s[0] != '\0') {
			return json_string("<redacted>");
		}
		return json_string(s);
	case EB__CT_BOOL:
	case EB__CT_IBOOL:
		return json_boolean(
		    (int_get(c, e) != 0) != ((e->flags & EB__CF_NOT) != 0));
	case EB__CT_ENUM:
		return json_string(enum_word(e, (int) int_get(c, e)));
	case EB__CT_ARRAY:
		items = arr_get(c, e, &n);
		a = json_array();
		for (k = 0; k < n; k++) {
			(void) json_array_append_new(
			    a, obj_to_json(e->obj,
			           (const char *) items + k * e->obj->size));
		}
		return a;
	case EB__CT_OBJECT:
		items = arr_get(c, e, &n);
		return items != NULL ? obj_to_json(e->obj, items) : json_null();
	default:
		return json_null();
	}
}
