/*
 * Every schema key reaches the subsystem that uses it.
 *
 * For each row of the schema (conf/schema.c) the test sets a valid value
 * that differs from the default with --set, loads it, and checks that
 *   - the bytes of the row's field in the loaded eb__conf differ from the
 *     default configuration (which starts from the modules' _opts_init);
 *   - the field lies inside one section of eb__conf, and where node/ builds
 *     the subsystem's opts from it (node_opts.c: bus, links, cluster) the
 *     opts carry the same value; the sections node passes as they are
 *     (bridge, ingress, admin, web: the module's own opts struct) and
 *     those it keeps for itself (bridge.enabled, admin.enabled, log) are
 *     listed by name.
 * It also checks that no two rows write the same bytes, that integer
 * ranges fit the field's width, and that a row without its own default
 * holds exactly the module's _opts_init default.
 *
 * A new row with no value generator, or in a section nobody hands on,
 * fails here.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "conf/conf.h"
#include "conf/conf_int.h"
#include "node/node_int.h"
#include "tests/harness/th.h"

/* ---- sections ------------------------------------------------------------ */

/* A section's opts as node hands them to the subsystem (into out). */
typedef void (*hand_fn)(const eb__conf *c, void *out);

static void
hand_cluster(const eb__conf *c, void *out)
{
	eb__node_cluster_opts(c, out);
}
static void
hand_link(const eb__conf *c, void *out)
{
	eb__node_link_opts(c, out);
}
static void
hand_bus(const eb__conf *c, void *out)
{
	eb__node_bus_opts(c, out);
}

typedef struct section {
	const char *name;
	size_t      off, size;
	hand_fn     hand; /* NULL: used by node itself, or passed as is */
} section;

#define SEC(f, h)                                                         \
	{                                                                 \
#f, offsetof(eb__conf, f), sizeof(((eb__conf *) 0)->f), h \
	}

static const section sections[] = {
	SEC(cluster, hand_cluster),
	SEC(link, hand_link),
	SEC(bus, hand_bus),
	/* node passes these sections to their subsystem as they are */
	SEC(bridge, NULL),
	SEC(ingress, NULL),
	SEC(bridge_enabled, NULL), /* node_bridge.c: start the bridge or not */
	SEC(log, NULL),            /* main.c, node.c: level and sink */
	SEC(admin, NULL),
	SEC(admin_enabled, NULL), /* node_admin.c: start the admin or not */
	SEC(web, NULL),
	SEC(web_enabled, NULL), /* node_web.c: start the web front or not */
	SEC(shared, NULL),      /* node_cluster.c: to shared/host.c as is */
	/* vertx/ takes its own opts as they are (issue 26); node/ does not
	 * start it yet: docs/VERTX.md "Not done yet" */
	SEC(vertx, NULL),
	SEC(vertx_enabled, NULL),
};
#define N_SECTIONS (sizeof(sections) / sizeof(sections[0]))

static const section *
section_of(const eb__conf_entry *e)
{
	size_t k;

	for (k = 0; k < N_SECTIONS; k++) {
		if (e->off >= sections[k].off &&
		    e->off + e->size <= sections[k].off + sections[k].size) {
			return &sections[k];
		}
	}
	return NULL;
}

/* ---- loading ---------------------------------------------------------------
 */

static eb__conf *
load_sets(const char *const *sets, size_t n)
{
	eb__conf_sources src;
	eb__conf        *c = NULL;
	eb_errbuf        e = { { 0 } };

	memset(&src, 0, sizeof(src));
	src.sets = sets;
	src.n_sets = n;
	if (eb__conf_load(&src, &c, &e) != 0) {
		fail_msg("load failed: %s", e.msg);
	}
	return c;
}

/* ---- values ----------------------------------------------------------------
 */

/* Keys whose value has a shape, or that need other keys set with them. */
typedef struct special {
	const char *path;
	const char *value;
	const char *with[3]; /* companion "key=value" flags */
} special;

static const special specials[] = {
	{ "zookeeper.connect", "zk-t:2181", { NULL } },
	{ "zookeeper.root", "/t/r", { NULL } },
	{ "zookeeper.auth.scheme", "digest",
	    { "zookeeper.auth.credentials=u:p" } },
	{ "zookeeper.auth.credentials", "u:p",
	    { "zookeeper.auth.scheme=digest" } },
	{ "zookeeper.acl", "creator",
	    { "zookeeper.auth.scheme=digest",
	        "zookeeper.auth.credentials=u:p" } },
	{ "cluster.listen", "127.0.0.2", { NULL } },
	{ "cluster.link_timeout_ms", "4000", { NULL } },
	{ "cluster.heartbeat_ms", "500", { NULL } },
	{ "bridge.listen", "127.0.0.2", { NULL } },
	{ "admin.listen", "127.0.0.2", { NULL } },
	{ "admin.cors_origins", "http://v.example", { NULL } },
	{ "cluster.tls.cert", "c",
	    { "cluster.tls.key=k", "cluster.tls.ca=a" } },
	{ "cluster.tls.key", "k",
	    { "cluster.tls.cert=c", "cluster.tls.ca=a" } },
	{ "cluster.tls.ca", "a",
	    { "cluster.tls.cert=c", "cluster.tls.key=k" } },
	{ "bridge.tls.cert", "c", { "bridge.tls.key=k" } },
	{ "bridge.tls.key", "k", { "bridge.tls.cert=c" } },
	{ "bridge.tls.ca", "a", { "bridge.tls.cert=c", "bridge.tls.key=k" } },
	{ "bridge.tls.client_auth", "required",
	    { "bridge.tls.cert=c", "bridge.tls.key=k", "bridge.tls.ca=a" } },
	{ "bridge.auth.mode", "first", { "bridge.auth.token=t" } },
	{ "bridge.inbound", "[{\"addressRegex\": \"x\\\\..+\"}]", { NULL } },
	{ "bridge.outbound", "[{\"address\": \"x\"}]", { NULL } },
	{ "ingress.routes",
	    "[{\"header\": \"h\", \"prefix\": \"p\", \"to\": \"t\", "
	    "\"mode\": \"publish\"}]",
	    { NULL } },
	{ "ingress.default_route", "{\"to\": \"d\", \"mode\": \"publish\"}",
	    { NULL } },
	{ "vertx.enabled", "true", { "zookeeper.connect=zk-t:2181" } },
	{ "vertx.root", "t.vertx", { NULL } },
	{ "vertx.cluster_host", "127.0.0.2", { NULL } },
	{ "vertx.node_id", "n-1", { NULL } },
	{ "vertx.engine_root", "/engine", { NULL } },
	{ "vertx.engine_address", "e-1", { NULL } },
};

static const special *
special_of(const char *path)
{
	size_t k;

	for (k = 0; k < sizeof(specials) / sizeof(specials[0]); k++) {
		if (strcmp(specials[k].path, path) == 0) {
			return &specials[k];
		}
	}
	return NULL;
}

static bool
is_int_kind(const eb__conf_entry *e)
{
	return e->type == EB__CT_I64 || e->type == EB__CT_U64 ||
	       e->type == EB__CT_U32 || e->type == EB__CT_INT ||
	       e->type == EB__CT_SIZE;
}

/* A valid value for e that differs from its value in def, as --set text. */
static void
value_for(const eb__conf_entry *e, const eb__conf *def, char *out, size_t n)
{
	const special *sp = special_of(e->path);
	json_t        *cur = eb__conf_get_json(def, e, true);
	size_t         k;

	if (sp != NULL) {
		(void) snprintf(out, n, "%s", sp->value);
	} else if (e->type == EB__CT_STRING) {
		(void) snprintf(out, n, "v-%s", e->path);
	} else if (is_int_kind(e)) {
		(void) snprintf(out, n, "%lld",
		    (long long) (json_integer_value(cur) != e->min ? e->min
		                                                   : e->max));
	} else if (e->type == EB__CT_BOOL || e->type == EB__CT_IBOOL) {
		(void) snprintf(
		    out, n, "%s", json_is_true(cur) ? "false" : "true");
	} else if (e->type == EB__CT_ENUM || e->type == EB__CT_WORD) {
		out[0] = '\0';
		for (k = 0; e->words[k] != NULL && out[0] == '\0'; k++) {
			if (strcmp(e->words[k], json_string_value(cur)) != 0) {
				(void) snprintf(out, n, "%s", e->words[k]);
			}
		}
	} else {
		fail_msg("%s: no test value for this kind of row; add one to "
		         "specials[]",
		    e->path);
	}
	json_decref(cur);
}

/* ---- tests -----------------------------------------------------------------
 */

static bool
rows_overlap(const eb__conf_entry *a, const eb__conf_entry *b)
{
	if (a->off < b->off + b->size && b->off < a->off + a->size) {
		return true;
	}
	return a->type == EB__CT_ARRAY && b->type == EB__CT_ARRAY &&
	       a->off_n == b->off_n;
}

/* Row i writes bytes no later row writes. */
static void
check_row_unique(size_t i)
{
	size_t j;

	for (j = i + 1; j < eb__conf_schema_len; j++) {
		if (rows_overlap(&eb__conf_schema[i], &eb__conf_schema[j])) {
			fail_msg("%s and %s write the same field",
			    eb__conf_schema[i].path, eb__conf_schema[j].path);
		}
	}
}

static void
test_rows_disjoint(void **state)
{
	size_t i;

	(void) state;
	for (i = 0; i < eb__conf_schema_len; i++) {
		assert_true(eb__conf_schema[i].size > 0);
		check_row_unique(i);
	}
}

static void
test_ranges_fit(void **state)
{
	size_t k;

	(void) state;
	for (k = 0; k < eb__conf_schema_len; k++) {
		const eb__conf_entry *e = &eb__conf_schema[k];
		int64_t               lo = 0, hi = INT64_MAX;

		switch (e->type) {
		case EB__CT_U32:
			hi = UINT32_MAX;
			break;
		case EB__CT_INT:
			lo = INT_MIN;
			hi = INT_MAX;
			break;
		case EB__CT_I64:
			lo = INT64_MIN;
			break;
		case EB__CT_U64:
		case EB__CT_SIZE:
			break;
		default:
			continue;
		}
		if (e->min < lo || e->max > hi || e->min > e->max) {
			fail_msg("%s: range %lld..%lld does not fit its field",
			    e->path, (long long) e->min, (long long) e->max);
		}
	}
}

/* The modules' _opts_init defaults, laid out like eb__conf. */
static void
module_defaults(eb__conf *m)
{
	memset(m, 0, sizeof(*m));
	eb_cluster_opts_init(&m->cluster);
	eb_link_opts_init(&m->link);
	eb_bus_opts_init(&m->bus);
	eb_bridge_opts_init(&m->bridge);
	eb_web_opts_init(&m->web);
	eb_ingress_opts_init(&m->ingress);
	eb__admin_opts_init(&m->admin);
}

/* A string row's default (NULL for "" where the row stores "" as NULL). */
static const char *
str_at(const eb__conf *c, const eb__conf_entry *e)
{
	const char *v;

	memcpy(&v, (const char *) c + e->off, sizeof(v));
	if ((e->flags & EB__CF_NULLSTR) != 0 && v != NULL && v[0] == '\0') {
		return NULL;
	}
	return v;
}

static void
check_default(const eb__conf_entry *e, const eb__conf *m, const eb__conf *def)
{
	const char *ms, *ds;

	if (e->type == EB__CT_ARRAY || e->type == EB__CT_OBJECT) {
		return;
	}
	if (e->type != EB__CT_STRING && e->type != EB__CT_WORD) {
		if (memcmp((const char *) m + e->off,
		        (const char *) def + e->off, e->size) != 0) {
			fail_msg("%s: default is not the module's", e->path);
		}
		return;
	}
	ms = str_at(m, e);
	ds = str_at(def, e);
	if ((ms == NULL) != (ds == NULL) ||
	    (ms != NULL && strcmp(ms, ds) != 0)) {
		fail_msg("%s: default \"%s\" is not the module's \"%s\"",
		    e->path, ds != NULL ? ds : "(null)",
		    ms != NULL ? ms : "(null)");
	}
}

static void
test_defaults_from_modules(void **state)
{
	eb__conf  m;
	eb__conf *def = load_sets(NULL, 0);
	size_t    k;

	(void) state;
	module_defaults(&m);
	for (k = 0; k < eb__conf_schema_len; k++) {
		const eb__conf_entry *e = &eb__conf_schema[k];

		if ((e->flags & (EB__CF_DEFAULT | EB__CF_COMPUTED)) == 0 &&
		    section_of(e) != NULL && section_of(e)->hand != NULL) {
			check_default(e, &m, def);
		}
	}
	eb__conf_free(def);
}

/* Whether row e holds different values in a and b (strings and lists by
 * content, everything else by its bytes). */
static bool
row_differs(const eb__conf_entry *e, const eb__conf *a, const eb__conf *b)
{
	json_t *ja, *jb;
	bool    differs;

	if (e->type != EB__CT_STRING && e->type != EB__CT_WORD &&
	    e->type != EB__CT_ARRAY && e->type != EB__CT_OBJECT) {
		return memcmp((const char *) a + e->off,
		           (const char *) b + e->off, e->size) != 0;
	}
	ja = eb__conf_get_json(a, e, true);
	jb = eb__conf_get_json(b, e, true);
	differs = !json_equal(ja, jb);
	json_decref(ja);
	json_decref(jb);
	return differs;
}

/* The opts node hands for section s, placed at s->off of a zeroed eb__conf
 * so that schema offsets apply to it. */
static eb__conf *
handed(const section *s, const eb__conf *c)
{
	eb__conf *h = calloc(1, sizeof(*h));

	assert_non_null(h);
	s->hand(c, (char *) h + s->off);
	return h;
}

/* Sets row e to a non-default value and follows it to its subsystem. */
static void
check_row(const eb__conf_entry *e, const eb__conf *def)
{
	const special *sp = special_of(e->path);
	const section *s = section_of(e);
	const char    *sets[4];
	char           value[256], flag[300];
	size_t         n = 0, j;
	eb__conf      *c, *hc, *hd;

	if (s == NULL) {
		fail_msg("%s: its field is in no section that node hands on or "
		         "uses",
		    e->path);
		return;
	}
	value_for(e, def, value, sizeof(value));
	for (j = 0; sp != NULL && j < 3 && sp->with[j] != NULL; j++) {
		sets[n++] = sp->with[j];
	}
	(void) snprintf(flag, sizeof(flag), "%s=%s", e->path, value);
	sets[n++] = flag;
	c = load_sets(sets, n);
	if (!row_differs(e, c, def)) {
		fail_msg("--set %s did not change its field", flag);
	}
	if (s->hand != NULL) {
		/* node hands the subsystem the value, not the default */
		hc = handed(s, c);
		hd = handed(s, def);
		if (row_differs(e, hc, c) || !row_differs(e, hc, hd)) {
			fail_msg("%s: node does not hand the value to the %s "
			         "subsystem",
			    e->path, s->name);
		}
		free(hc);
		free(hd);
	}
	eb__conf_free(c);
}

static void
test_every_key_reaches(void **state)
{
	eb__conf *def = load_sets(NULL, 0);
	size_t    k;

	(void) state;
	for (k = 0; k < eb__conf_schema_len; k++) {
		check_row(&eb__conf_schema[k], def);
	}
	eb__conf_free(def);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_disjoint),
		cmocka_unit_test(test_ranges_fit),
		cmocka_unit_test(test_defaults_from_modules),
		cmocka_unit_test(test_every_key_reaches),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
