/*
 * The configuration schema: one table row per key, {path, type, offset,
 * default, min, max, flags} (like redis' standardConfig), and the typed
 * setters that validate a JSON value against a row and store it in an
 * eb_conf. Text from the environment or --set is first turned into JSON by
 * eb__conf_parse_text(), so every source goes through the same checks.
 *
 * Array and object rows (permitted lists, ingress routes) are described by
 * an element table (eb__conf_objdesc) with a check function for the rules
 * that span fields. Loop-free; any thread.
 */
#include <inttypes.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/util.h"
#include "conf/conf_int.h"

#define OFF(field) offsetof(eb_conf, field)

static const char *const log_words[] = { "err", "warn", "notice", "info",
	"debug", NULL };
static const char *const sink_words[] = { "auto", "stderr", "journald",
	"syslog", NULL };
static const char *const scheme_words[] = { "", "digest", NULL };
static const char *const acl_words[] = { "open", "creator", NULL };
static const char *const client_auth_words[] = { "none", "request", "required",
	NULL };
static const char *const auth_mode_words[] = { "every", "first", NULL };
static const char *const mode_words[] = { "send", "publish", NULL };

/* ---- element objects --------------------------------------------------- */

static int check_permit(
    const void *obj, const char *path, const eb__conf_src *src, eb_errbuf *err);
static int check_route(
    const void *obj, const char *path, const eb__conf_src *src, eb_errbuf *err);
static int check_target(
    const void *obj, const char *path, const eb__conf_src *src, eb_errbuf *err);

static const eb__conf_field permit_fields[] = {
	{ "address", EB__CT_STRING, offsetof(eb_conf_permit, address), NULL, 0,
	    EB__CF_NONEMPTY },
	{ "addressRegex", EB__CT_STRING,
	    offsetof(eb_conf_permit, address_regex), NULL, 0,
	    EB__CF_NONEMPTY | EB__CF_REGEX },
};
static const eb__conf_objdesc permit_desc = { sizeof(eb_conf_permit),
	permit_fields, sizeof(permit_fields) / sizeof(permit_fields[0]),
	check_permit };

static const eb__conf_field route_fields[] = {
	{ "header", EB__CT_STRING, offsetof(eb_conf_route, header), NULL, 0,
	    EB__CF_NONEMPTY },
	{ "field", EB__CT_STRING, offsetof(eb_conf_route, field), NULL, 0,
	    EB__CF_NONEMPTY },
	{ "equals", EB__CT_STRING, offsetof(eb_conf_route, equals), NULL, 0,
	    0 },
	{ "prefix", EB__CT_STRING, offsetof(eb_conf_route, prefix), NULL, 0,
	    0 },
	{ "regex", EB__CT_STRING, offsetof(eb_conf_route, regex), NULL, 0,
	    EB__CF_REGEX },
	{ "to", EB__CT_STRING, offsetof(eb_conf_route, to), NULL, 0,
	    EB__CF_NONEMPTY },
	{ "mode", EB__CT_ENUM, offsetof(eb_conf_route, mode), mode_words,
	    EB_CONF_MODE_SEND, 0 },
};
static const eb__conf_objdesc route_desc = { sizeof(eb_conf_route),
	route_fields, sizeof(route_fields) / sizeof(route_fields[0]),
	check_route };

static const eb__conf_field target_fields[] = {
	{ "to", EB__CT_STRING, offsetof(eb_conf_target, to), NULL, 0,
	    EB__CF_NONEMPTY },
	{ "mode", EB__CT_ENUM, offsetof(eb_conf_target, mode), mode_words,
	    EB_CONF_MODE_SEND, 0 },
};
static const eb__conf_objdesc target_desc = { sizeof(eb_conf_target),
	target_fields, sizeof(target_fields) / sizeof(target_fields[0]),
	check_target };

/* ---- the table ---------------------------------------------------------- */

#define S(p, f, d, fl)                                                     \
	{                                                                  \
		.path = (p), .off = OFF(f), .def_str = (d), .flags = (fl), \
		.type = EB__CT_STRING                                      \
	}
#define I(p, f, d, lo, hi)                                               \
	{                                                                \
		.path = (p), .off = OFF(f), .def_int = (d), .min = (lo), \
		.max = (hi), .type = EB__CT_INT                          \
	}
#define B(p, f, d)                                                    \
	{                                                             \
		.path = (p), .off = OFF(f), .def_int = (d), .min = 0, \
		.max = 1, .type = EB__CT_BOOL                         \
	}
#define E(p, f, d, w)                                                     \
	{                                                                 \
		.path = (p), .off = OFF(f), .def_int = (d), .words = (w), \
		.type = EB__CT_ENUM                                       \
	}
#define A(p, f, n, fl, o)                                                   \
	{                                                                   \
		.path = (p), .off = OFF(f), .off_n = OFF(n), .flags = (fl), \
		.obj = (o), .type = EB__CT_ARRAY                            \
	}
#define O(p, f, o)                                                            \
	{                                                                     \
		.path = (p), .off = OFF(f), .obj = (o), .type = EB__CT_OBJECT \
	}

const eb__conf_entry eb__conf_schema[] = {
	S("node.id", node.id, NULL, EB__CF_NONEMPTY | EB__CF_COMPUTED),
	S("node.address", node.address, NULL,
	    EB__CF_NONEMPTY | EB__CF_COMPUTED),
	S("node.host", node.host, "127.0.0.1", EB__CF_NONEMPTY),
	B("node.eligible", node.eligible, 1),
	E("log.level", log.level, 3, log_words),
	E("log.sink", log.sink, 0, sink_words),
	S("log.journal_socket", log.journal_socket,
	    "/run/systemd/journal/socket", EB__CF_NONEMPTY),
	S("zookeeper.connect", zookeeper.connect, "", 0),
	S("zookeeper.root", zookeeper.root, "/ebnode/default", 0),
	I("zookeeper.session_timeout_ms", zookeeper.session_timeout_ms, 10000,
	    1000, 600000),
	I("zookeeper.tick_ms", zookeeper.tick_ms, 0, 0, 600000),
	E("zookeeper.auth.scheme", zookeeper.auth_scheme, 0, scheme_words),
	S("zookeeper.auth.credentials", zookeeper.auth_credentials, "",
	    EB__CF_SECRET),
	E("zookeeper.acl", zookeeper.acl, 0, acl_words),
	I("election.heartbeat_ms", election.heartbeat_ms, 0, 0, 600000),
	I("election.lease_ms", election.lease_ms, 0, 0, 600000),
	S("cluster.name", cluster.name, "default", EB__CF_NONEMPTY),
	S("cluster.listen", cluster.listen, "127.0.0.1", EB__CF_NONEMPTY),
	I("cluster.port", cluster.port, 0, 0, 65535),
	I("cluster.heartbeat_ms", cluster.heartbeat_ms, 1000, 50, 60000),
	I("cluster.link_timeout_ms", cluster.link_timeout_ms, 3000, 100,
	    600000),
	S("cluster.tls.cert", cluster.tls_cert, "", 0),
	S("cluster.tls.key", cluster.tls_key, "", 0),
	S("cluster.tls.ca", cluster.tls_ca, "", 0),
	I("bus.request_timeout_ms", bus.request_timeout_ms, 30000, 1, 3600000),
	I("bus.receipt_timeout_ms", bus.receipt_timeout_ms, 5000, 1, 3600000),
	I("bus.consumer_queue_max", bus.consumer_queue_max, 10000, 1, 10000000),
	I("bus.max_pending_requests", bus.max_pending_requests, 131072, 1,
	    16777216),
	I("bus.max_request_timeout_ms", bus.max_request_timeout_ms, 300000, 1,
	    86400000),
	B("bridge.enabled", bridge.enabled, 1),
	S("bridge.listen", bridge.listen, "127.0.0.1", EB__CF_NONEMPTY),
	I("bridge.port", bridge.port, 7000, 0, 65535),
	I("bridge.max_frame_bytes", bridge.max_frame_bytes, 1048576, 16,
	    2147483647),
	I("bridge.max_connections", bridge.max_connections, 1024, 1, 1000000),
	I("bridge.write_queue_bytes", bridge.write_queue_bytes, 4194304, 1024,
	    INT64_MAX),
	I("bridge.idle_timeout_ms", bridge.idle_timeout_ms, 0, 0, 86400000),
	I("bridge.reply_ttl_ms", bridge.reply_ttl_ms, 30000, 1, 3600000),
	I("bridge.frame_timeout_ms", bridge.frame_timeout_ms, 30000, 0,
	    86400000),
	I("bridge.first_frame_timeout_ms", bridge.first_frame_timeout_ms, 10000,
	    0, 86400000),
	I("bridge.tls.handshake_timeout_ms", bridge.tls_handshake_timeout_ms,
	    10000, 0, 86400000),
	I("bridge.input_budget_bytes", bridge.input_budget_bytes, 33554432, 0,
	    INT64_MAX),
	I("bridge.max_consumers_per_conn", bridge.max_consumers_per_conn, 1024,
	    0, 10000000),
	I("bridge.max_requests_per_conn", bridge.max_requests_per_conn, 1024, 0,
	    10000000),
	I("bridge.max_requests", bridge.max_requests, 65536, 0, 100000000),
	I("bridge.max_request_timeout_ms", bridge.max_request_timeout_ms,
	    300000, 0, 86400000),
	A("bridge.inbound", bridge.inbound, bridge.n_inbound, EB__CF_COMPUTED,
	    &permit_desc),
	A("bridge.outbound", bridge.outbound, bridge.n_outbound, 0,
	    &permit_desc),
	S("bridge.tls.cert", bridge.tls_cert, "", 0),
	S("bridge.tls.key", bridge.tls_key, "", 0),
	S("bridge.tls.ca", bridge.tls_ca, "", 0),
	E("bridge.tls.client_auth", bridge.tls_client_auth, 0,
	    client_auth_words),
	S("bridge.auth.token", bridge.auth_token, "", EB__CF_SECRET),
	E("bridge.auth.mode", bridge.auth_mode, 0, auth_mode_words),
	B("admin.enabled", admin.enabled, 1),
	S("admin.listen", admin.listen, "127.0.0.1", EB__CF_NONEMPTY),
	I("admin.port", admin.port, 7100, 0, 65535),
	S("admin.token", admin.token, "", EB__CF_SECRET),
	I("admin.request_timeout_ms", admin.request_timeout_ms, 10000, 100,
	    3600000),
	S("ingress.address", ingress.address, "external.ingress",
	    EB__CF_NONEMPTY),
	I("ingress.hold_max", ingress.hold_max, 1000, 0, 10000000),
	I("ingress.hold_ms", ingress.hold_ms, 5000, 0, 3600000),
	B("ingress.ack", ingress.ack, 1),
	A("ingress.routes", ingress.routes, ingress.n_routes, 0, &route_desc),
	O("ingress.default_route", ingress.default_route, &target_desc),
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
slot(eb_conf *c, size_t off)
{
	return (char *) c + off;
}

static const void *
cslot(const eb_conf *c, size_t off)
{
	return (const char *) c + off;
}

static void
str_replace(char **slotp, const char *s)
{
	char *old = *slotp;

	*slotp = s != NULL ? eb__strdup(s) : NULL;
	free(old);
}

static void
obj_release(const eb__conf_objdesc *d, void *obj)
{
	size_t k;

	for (k = 0; k < d->n_fields; k++) {
		if (d->fields[k].type == EB__CT_STRING) {
			char **sp = (char **) ((char *) obj + d->fields[k].off);

			free(*sp);
			*sp = NULL;
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

/* Array slots are typed pointers in eb_conf; they are moved via memcpy. */
static void *
arr_get(const eb_conf *c, const eb__conf_entry *e, size_t *n)
{
	void *items;

	memcpy(&items, cslot(c, e->off), sizeof(items));
	memcpy(n, cslot(c, e->off_n), sizeof(*n));
	return items;
}

static void
arr_put(eb_conf *c, const eb__conf_entry *e, void *items, size_t n)
{
	size_t old_n;
	void  *old = arr_get(c, e, &old_n);

	if (e->type == EB__CT_ARRAY) {
		arr_free(e->obj, old, old_n);
	} else if (old != NULL) {
		arr_free(e->obj, old, 1);
	}
	memcpy(slot(c, e->off), &items, sizeof(items));
	if (e->type == EB__CT_ARRAY) {
		memcpy(slot(c, e->off_n), &n, sizeof(n));
	}
}

void
eb__conf_defaults(eb_conf *c)
{
	size_t k;

	memset(c, 0, sizeof(*c));
	for (k = 0; k < eb__conf_schema_len; k++) {
		const eb__conf_entry *e = &eb__conf_schema[k];

		switch (e->type) {
		case EB__CT_STRING:
			str_replace(slot(c, e->off), e->def_str);
			break;
		case EB__CT_INT:
			*(int64_t *) slot(c, e->off) = e->def_int;
			break;
		case EB__CT_BOOL:
			*(bool *) slot(c, e->off) = e->def_int != 0;
			break;
		case EB__CT_ENUM:
			*(int *) slot(c, e->off) = (int) e->def_int;
			break;
		case EB__CT_ARRAY:
		case EB__CT_OBJECT:
			break; /* NULL, 0 */
		}
	}
}

void
eb__conf_release(eb_conf *c)
{
	size_t k;

	for (k = 0; k < eb__conf_schema_len; k++) {
		const eb__conf_entry *e = &eb__conf_schema[k];

		if (e->type == EB__CT_STRING) {
			str_replace(slot(c, e->off), NULL);
		} else if (e->type == EB__CT_ARRAY ||
		           e->type == EB__CT_OBJECT) {
			arr_put(c, e, NULL, 0);
		}
	}
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

	if (!json_is_object(v)) {
		eb__conf_describe(v, got, sizeof(got));
		return eb__conf_errf(
		    src, err, path, false, "expected an object, got %s", got);
	}
	for (k = 0; k < d->n_fields; k++) {
		if (d->fields[k].type == EB__CT_ENUM) {
			*(int *) ((char *) obj + d->fields[k].off) =
			    d->fields[k].def;
		}
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
		str_replace(fp, json_string_value(val));
	}
	return d->check(obj, path, src, err);
}

static int
check_permit(
    const void *obj, const char *path, const eb__conf_src *src, eb_errbuf *err)
{
	const eb_conf_permit *p = obj;

	if (p->address != NULL && p->address_regex != NULL) {
		return eb__conf_errf(src, err, path, false,
		    "\"address\" and \"addressRegex\" are mutually exclusive");
	}
	return 0;
}

static int
check_target(
    const void *obj, const char *path, const eb__conf_src *src, eb_errbuf *err)
{
	const eb_conf_target *t = obj;

	if (t->to == NULL) {
		return eb__conf_errf(
		    src, err, path, false, "missing required key \"to\"");
	}
	return 0;
}

static int
check_route(
    const void *obj, const char *path, const eb__conf_src *src, eb_errbuf *err)
{
	const eb_conf_route *r = obj;
	int                  n_ops =
	    (r->equals != NULL) + (r->prefix != NULL) + (r->regex != NULL);

	if ((r->header != NULL) == (r->field != NULL)) {
		return eb__conf_errf(src, err, path, false,
		    "expected exactly one of \"header\" or \"field\"");
	}
	if (n_ops != 1) {
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
set_array(eb_conf *c, const eb__conf_entry *e, json_t *v,
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
set_object(eb_conf *c, const eb__conf_entry *e, json_t *v,
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

int
eb__conf_set(eb_conf *c, const eb__conf_entry *e, json_t *v,
    const eb__conf_src *src, eb_errbuf *err)
{
	char got[64], range[64];

	switch (e->type) {
	case EB__CT_STRING:
		if (check_string(v, e->flags, e->path, src, err) != 0) {
			return EB_ECONF;
		}
		str_replace(slot(c, e->off), json_string_value(v));
		return 0;
	case EB__CT_INT:
		if (!json_is_integer(v) || json_integer_value(v) < e->min ||
		    json_integer_value(v) > e->max) {
			eb__conf_describe(v, got, sizeof(got));
			range_text(e, range, sizeof(range));
			return eb__conf_errf(src, err, e->path, false,
			    "expected an integer %s, got %s", range, got);
		}
		*(int64_t *) slot(c, e->off) = json_integer_value(v);
		return 0;
	case EB__CT_BOOL:
		if (!json_is_boolean(v)) {
			eb__conf_describe(v, got, sizeof(got));
			return eb__conf_errf(src, err, e->path, false,
			    "expected true or false, got %s", got);
		}
		*(bool *) slot(c, e->off) = json_is_true(v);
		return 0;
	case EB__CT_ENUM:
		return check_enum(
		    v, e->words, e->path, src, err, (int *) slot(c, e->off));
	case EB__CT_ARRAY:
		return set_array(c, e, v, src, err);
	case EB__CT_OBJECT:
		return set_object(c, e, v, src, err);
	}
	return EB_ECONF;
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
	switch (e->type) {
	case EB__CT_STRING:
	case EB__CT_ENUM:
		*out = json_string(text);
		if (*out == NULL) {
			return eb__conf_errf(src, err, e->path, false,
			    "expected a UTF-8 string");
		}
		return 0;
	case EB__CT_INT:
		if (eb__parse_i64(text, INT64_MIN, INT64_MAX, &i) != 0) {
			range_text(e, range, sizeof(range));
			return eb__conf_errf(src, err, e->path, false,
			    "expected an integer %s, got \"%.40s\"", range,
			    text);
		}
		*out = json_integer(i);
		return 0;
	case EB__CT_BOOL:
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
	}
	return EB_ECONF;
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
		} else if (*(char *const *) fp != NULL) {
			(void) json_object_set_new(
			    o, f->key, json_string(*(char *const *) fp));
		}
	}
	return o;
}

json_t *
eb__conf_get_json(const eb_conf *c, const eb__conf_entry *e, bool show_secrets)
{
	const void *p = cslot(c, e->off);
	size_t      n, k;
	void       *items;
	json_t     *a;

	switch (e->type) {
	case EB__CT_STRING: {
		const char *s = *(char *const *) p;

		if (s == NULL) {
			return json_null();
		}
		if ((e->flags & EB__CF_SECRET) != 0 && !show_secrets &&
		    s[0] != '\0') {
			return json_string("<redacted>");
		}
		return json_string(s);
	}
	case EB__CT_INT:
		return json_integer(*(const int64_t *) p);
	case EB__CT_BOOL:
		return json_boolean(*(const bool *) p);
	case EB__CT_ENUM:
		return json_string(e->words[*(const int *) p]);
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
		memcpy(&items, p, sizeof(items));
		return items != NULL ? obj_to_json(e->obj, items) : json_null();
	}
	return json_null();
}

const char *
eb_conf_mode_name(int mode)
{
	return mode == EB_CONF_MODE_PUBLISH ? "publish" : "send";
}
