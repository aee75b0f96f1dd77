/*
 * The load pipeline: defaults < file < environment < --set, then the
 * computed defaults and the rules that span keys, all or nothing.
 *
 * Each source goes through the same schema setters (schema.c); what
 * differs is the origin used in messages. The origin of every key's final
 * value is remembered so that a cross-key rule (bridge.tls.cert without
 * bridge.tls.key) blames the place where the offending value was set.
 * Loop-free; any thread.
 */
#include "conf/conf.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/lease.h"
#include "common/util.h"
#include "conf/conf_int.h"

#define CONF_MAX_FILE_BYTES (16u << 20)

/* Everything one eb__conf_load() call needs. */
typedef struct load_ctx {
	eb__conf       *conf;
	const char     *file;
	eb__conf_posidx idx;
	const char     *cluster; /* the cluster layer's name in messages */
	eb__conf_posidx cidx;    /* positions in the cluster layer */
	int             layer;   /* the kind walk() records as origin */
	int            *origin;  /* per schema row: enum eb__conf_src_kind */
	eb_errbuf      *err;
	json_t         *optional; /* borrowed: the layer's "optional" list */
} load_ctx;

/* ---- messages ----------------------------------------------------------- */

/* The position of path, or of its nearest enclosing path that has one. */
static void
file_pos(
    const eb__conf_src *src, const char *path, bool at_key, int *line, int *col)
{
	char                buf[256];
	const eb__conf_pos *p = NULL;
	char               *cut;

	*line = src->line > 0 ? src->line : 1;
	*col = src->col > 0 ? src->col : 1;
	if (src->idx == NULL) {
		return;
	}
	(void) snprintf(buf, sizeof(buf), "%s", path);
	while (buf[0] != '\0' &&
	       (p = eb__conf_posidx_find(src->idx, buf)) == NULL) {
		cut = strrchr(buf, '.');
		if (strrchr(buf, '[') > cut) {
			cut = strrchr(buf, '[');
		}
		if (cut == NULL) {
			break;
		}
		*cut = '\0';
		at_key = false; /* an enclosing value: point at its start */
	}
	if (p != NULL) {
		*line = at_key ? p->kline : p->vline;
		*col = at_key ? p->kcol : p->vcol;
	}
}

int
eb__conf_errf(const eb__conf_src *src, eb_errbuf *err, const char *path,
    bool at_key, const char *fmt, ...)
{
	char    text[200], origin[200];
	int     line, col;
	va_list ap;

	va_start(ap, fmt);
	(void) vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	switch (src->kind) {
	case EB__CONF_SRC_FILE:
		file_pos(src, path, at_key, &line, &col);
		(void) snprintf(
		    origin, sizeof(origin), "%s:%d:%d", src->name, line, col);
		break;
	case EB__CONF_SRC_ENV:
		(void) snprintf(
		    origin, sizeof(origin), "environment %s", src->name);
		break;
	case EB__CONF_SRC_FLAG:
		(void) snprintf(origin, sizeof(origin), "--set %s", src->name);
		if (strcmp(src->name, path) == 0) {
			path = "";
		}
		break;
	default:
		(void) snprintf(origin, sizeof(origin), "%s",
		    src->name != NULL ? src->name : "default");
		break;
	}
	if (path[0] == '\0') {
		return eb_errf(err, EB_ECONF, "%s: %s", origin, text);
	}
	return eb_errf(err, EB_ECONF, "%s: %s: %s", origin, path, text);
}

int
eb__conf_env_name(const char *path, char *out, size_t n)
{
	size_t k, plen = strlen(path);

	if (n < plen + 8) {
		return EB_ECONF;
	}
	memcpy(out, "EBNODE_", 7);
	for (k = 0; k < plen; k++) {
		char c = path[k];

		if (c == '.') {
			c = '_';
		} else if (c >= 'a' && c <= 'z') {
			c = (char) (c - 'a' + 'A');
		}
		out[7 + k] = c;
	}
	out[7 + plen] = '\0';
	return 0;
}

static size_t
row_of(const eb__conf_entry *e)
{
	return (size_t) (e - eb__conf_schema);
}

/* ---- the file ----------------------------------------------------------- */

static int
read_file(const char *path, char **textp, size_t *lenp, eb_errbuf *err)
{
	int rv = eb__read_file(path, CONF_MAX_FILE_BYTES, textp, lenp);

	if (rv == UV_EFBIG) {
		return eb_errf(err, EB_ECONF, "%s: cannot read: %s", path,
		    "larger than 16 MiB");
	}
	if (rv != 0) {
		return eb_errf(err, EB_ECONF, "%s: cannot %s: %s", path,
		    rv == UV_ENOENT || rv == UV_EACCES ? "open" : "read",
		    strerror(-rv));
	}
	return 0;
}

/*
 * Forward compatibility (docs/UPGRADING.md, "Configuration"): the
 * top-level "optional" list names key paths ("web", "ingress.new_key") a
 * newer release may have added. A key this release does not know, at or
 * under a listed path, is skipped with a warning instead of refused.
 */
#define OPTIONAL_KEY "optional"

static int
optional_check(load_ctx *lc, json_t *root, const eb__conf_src *src)
{
	json_t *list = json_object_get(root, OPTIONAL_KEY);
	json_t *v;
	size_t  i;

	lc->optional = NULL;
	if (list == NULL) {
		return 0;
	}
	if (!json_is_array(list)) {
		return eb__conf_errf(src, lc->err, OPTIONAL_KEY, true,
		    "expected an array of key paths");
	}
	json_array_foreach(list, i, v)
	{
		const char *path = json_string_value(v);

		if (path == NULL || path[0] == '\0' || path[0] == '.') {
			return eb__conf_errf(src, lc->err, OPTIONAL_KEY, true,
			    "expected an array of key paths, element %zu is "
			    "not one",
			    i);
		}
	}
	lc->optional = list;
	return 0;
}

/* path is listed in "optional", or lies under a listed path. */
static bool
optional_listed(const load_ctx *lc, const char *path)
{
	json_t *v;
	size_t  i;

	json_array_foreach(lc->optional, i, v)
	{
		const char *p = json_string_value(v);
		size_t      n = strlen(p);

		if (strncmp(path, p, n) == 0 &&
		    (path[n] == '\0' || path[n] == '.')) {
			return true;
		}
	}
	return false;
}

/* An unknown key: refused, or skipped with a warning when optional. */
static int
walk_unknown(load_ctx *lc, const char *path, const eb__conf_src *src)
{
	if (lc->optional != NULL && optional_listed(lc, path)) {
		EB_LOG_WARN("config",
		    "ignored: %s: unknown key, listed in \"optional\" (a "
		    "newer release's?)",
		    path);
		return 0;
	}
	return eb__conf_errf(src, lc->err, path, true, "unknown key");
}

/* Applies one object of the file, recursing into sections. */
static int
walk(load_ctx *lc, json_t *obj, const char *prefix, const eb__conf_src *src)
{
	const char *key;
	json_t     *v;
	char        path[256], got[64];

	if (!json_is_object(obj)) {
		eb__conf_describe(obj, got, sizeof(got));
		return eb__conf_errf(src, lc->err, prefix, false,
		    "expected an object, got %s", got);
	}
	json_object_foreach((json_t *) obj, key, v)
	{
		const eb__conf_entry *e;

		(void) snprintf(path, sizeof(path), "%s%s%s", prefix,
		    prefix[0] != '\0' ? "." : "", key);
		if (strchr(key, '.') != NULL) {
			/* "bridge.port" as one key is not a path. */
			return eb__conf_errf(
			    src, lc->err, path, true, "unknown key");
		}
		if (prefix[0] == '\0' && strcmp(key, OPTIONAL_KEY) == 0) {
			continue; /* read first (optional_check) */
		}
		if ((e = eb__conf_find(path)) != NULL) {
			if (lc->layer == EB__CONF_SRC_CLUSTER &&
			    (e->flags & EB__CF_DYNAMIC) == 0) {
				return eb__conf_errf(src, lc->err, path, true,
				    "a static key: set it in each node's own "
				    "configuration");
			}
			if (eb__conf_set(lc->conf, e, v, src, lc->err) != 0) {
				return EB_ECONF;
			}
			lc->origin[row_of(e)] = lc->layer;
		} else if (eb__conf_is_section(path)) {
			if (walk(lc, v, path, src) != 0) {
				return EB_ECONF;
			}
		} else if (walk_unknown(lc, path, src) != 0) {
			return EB_ECONF;
		}
	}
	return 0;
}

/*
 * Applies one JSON text (owned: freed here) named name in messages, with
 * its positions in idx; walk() records layer as the origin of its keys.
 */
static int
load_text(load_ctx *lc, const char *name, char *text, size_t len,
    eb__conf_posidx *idx, int layer)
{
	eb__conf_src        src = { EB__CONF_SRC_FILE, name, NULL, 0, 0 };
	const eb__conf_pos *near;
	json_error_t        jerr;
	json_t             *root = NULL;
	int                 rv, line, col;

	lc->layer = layer;
	if (eb__conf_strip_comments(text, len, &line, &col) != 0) {
		rv = eb_errf(lc->err, EB_ECONF,
		    "%s:%d:%d: unterminated comment", name, line, col);
		goto fail;
	}
	eb__conf_posidx_build(idx, text, len);
	if (idx->dup_path != NULL) {
		rv = eb_errf(lc->err, EB_ECONF, "%s:%d:%d: %s: duplicate key",
		    name, idx->dup_line, idx->dup_col, idx->dup_path);
		goto fail;
	}
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		/* jansson says column 0 at an end of file; columns start at 1
		 */
		jerr.column = jerr.column > 0 ? jerr.column : 1;
		jerr.line = jerr.line > 0 ? jerr.line : 1;
		near = eb__conf_posidx_before(idx, jerr.line, jerr.column);
		rv = eb_errf(lc->err, EB_ECONF, "%s:%d:%d: %s%s%s: %s", name,
		    jerr.line, jerr.column, "syntax error",
		    near != NULL ? " after " : "",
		    near != NULL ? near->path : "", jerr.text);
		goto fail;
	}
	src.idx = idx;
	rv = json_is_object(root) ? optional_check(lc, root, &src) : 0;
	if (rv == 0) {
		rv = walk(lc, root, "", &src);
	}
	lc->optional = NULL;
fail:
	json_decref(root);
	free(text);
	return rv;
}

static char *
text_copy(const char *t, size_t len)
{
	char *text = eb__malloc(len + 1);

	memcpy(text, t, len);
	text[len] = '\0';
	return text;
}

static int
load_file(load_ctx *lc, const eb__conf_sources *in)
{
	char  *text = NULL;
	size_t len = 0;
	int    rv;

	if (in->text != NULL) {
		/* Given in memory (tests, fuzzing): a private copy to strip. */
		text = text_copy(in->text, in->text_len);
		len = in->text_len;
	} else if ((rv = read_file(lc->file, &text, &len, lc->err)) != 0) {
		return rv;
	}
	return load_text(lc, lc->file, text, len, &lc->idx, EB__CONF_SRC_FILE);
}

/* The cluster configuration: dynamic keys only, on top of everything. */
static int
load_cluster(load_ctx *lc, const eb__conf_sources *in)
{
	return load_text(lc, lc->cluster,
	    text_copy(in->cluster_text, in->cluster_len), in->cluster_len,
	    &lc->cidx, EB__CONF_SRC_CLUSTER);
}

/* ---- environment and flags --------------------------------------------- */

static const char *
env_lookup(const char *const *env, const char *name)
{
	size_t n = strlen(name);

	for (; *env != NULL; env++) {
		if (strncmp(*env, name, n) == 0 && (*env)[n] == '=') {
			return *env + n + 1;
		}
	}
	return NULL;
}

static int
apply_text(load_ctx *lc, const eb__conf_entry *e, const char *text,
    const eb__conf_src *src)
{
	json_t *v = NULL;
	int     rv;

	if ((rv = eb__conf_parse_text(e, text, &v, src, lc->err)) != 0) {
		return rv;
	}
	rv = eb__conf_set(lc->conf, e, v, src, lc->err);
	json_decref(v);
	if (rv == 0) {
		lc->origin[row_of(e)] = src->kind;
	}
	return rv;
}

static int
load_env(load_ctx *lc, const char *const *env)
{
	char   name[128];
	size_t k;

	for (k = 0; k < eb__conf_schema_len; k++) {
		const eb__conf_entry *e = &eb__conf_schema[k];
		eb__conf_src src = { EB__CONF_SRC_ENV, name, NULL, 0, 0 };
		const char  *text;

		if (eb__conf_env_name(e->path, name, sizeof(name)) != 0 ||
		    (text = env_lookup(env, name)) == NULL) {
			continue;
		}
		if (apply_text(lc, e, text, &src) != 0) {
			return EB_ECONF;
		}
	}
	return 0;
}

static int
load_set(load_ctx *lc, const char *arg)
{
	const char           *eq = strchr(arg, '=');
	char                  key[128];
	eb__conf_src          src = { EB__CONF_SRC_FLAG, key, NULL, 0, 0 };
	const eb__conf_entry *e;

	if (eq == NULL || eq == arg || (size_t) (eq - arg) >= sizeof(key)) {
		(void) snprintf(key, sizeof(key), "%.100s", arg);
		return eb__conf_errf(
		    &src, lc->err, "", false, "expected KEY=VALUE");
	}
	memcpy(key, arg, (size_t) (eq - arg));
	key[eq - arg] = '\0';
	if ((e = eb__conf_find(key)) == NULL) {
		return eb__conf_errf(&src, lc->err, "", false, "%s",
		    eb__conf_is_section(key)
		        ? "a section, not a key: set its keys one by one"
		        : "unknown key");
	}
	return apply_text(lc, e, eq + 1, &src);
}

/* ---- computed defaults and cross-key rules ------------------------------ */

/* The defaults conf computes (schema.c says which). */
static void
derive(eb__conf *c, const int *origin)
{
	const eb__conf_entry *inbound = eb__conf_find("bridge.inbound");
	eb_bridge_permitted  *in;
	char                  host[256], addr[300];

	if (c->cluster.address == NULL) {
		if (gethostname(host, sizeof(host)) != 0 || host[0] == '\0') {
			(void) snprintf(host, sizeof(host), "localhost");
		}
		host[sizeof(host) - 1] = '\0';
		(void) snprintf(addr, sizeof(addr), "ebnode-%s", host);
		c->cluster.address = eb__strdup(addr);
	}
	if (c->cluster.node_id == NULL) {
		c->cluster.node_id = eb__strdup(c->cluster.address);
	}
	if (origin[row_of(inbound)] == EB__CONF_SRC_DEFAULT) {
		/* Absent: clients may send to the ingress address only. */
		in = eb__calloc(1, sizeof(*in));
		in->address = eb__strdup(c->ingress.address);
		c->bridge.inbound = in;
		c->bridge.inbound_count = 1;
	}
	/* A token turns authentication on, "every" frame unless set. */
	if (c->bridge.auth_token == NULL) {
		c->bridge.auth_mode = EB_BRIDGE_AUTH_OFF;
	} else if (c->bridge.auth_mode == EB_BRIDGE_AUTH_OFF) {
		c->bridge.auth_mode = EB_BRIDGE_AUTH_EVERY;
	}
}

static int
origin_of(const load_ctx *lc, const char *path)
{
	const eb__conf_entry *e = eb__conf_find(path);

	return e != NULL ? lc->origin[row_of(e)] : EB__CONF_SRC_DEFAULT;
}

/* The origin of the value of path, for a message about it. */
static void
blame(const load_ctx *lc, const char *path, eb__conf_src *src, char *name,
    size_t n)
{
	int kind = origin_of(lc, path);

	memset(src, 0, sizeof(*src));
	src->kind = kind;
	src->name = name;
	switch (kind) {
	case EB__CONF_SRC_FILE:
		src->name = lc->file;
		src->idx = &lc->idx;
		break;
	case EB__CONF_SRC_ENV:
		(void) eb__conf_env_name(path, name, n);
		break;
	case EB__CONF_SRC_FLAG:
		(void) snprintf(name, n, "%s", path);
		break;
	case EB__CONF_SRC_CLUSTER:
		src->kind = EB__CONF_SRC_FILE; /* positions, as for a file */
		src->name = lc->cluster;
		src->idx = &lc->cidx;
		break;
	default:
		(void) snprintf(name, n, "default");
		break;
	}
}

/* eb__conf_errf() with the origin of key's value. */
#define RULE_FAIL(lc, key, ...)                                   \
	do {                                                      \
		eb__conf_src src_;                                \
		char         name_[128];                          \
		blame((lc), (key), &src_, name_, sizeof(name_));  \
		return eb__conf_errf(                             \
		    &src_, (lc)->err, (key), false, __VA_ARGS__); \
	} while (0)

static bool
set(const char *s)
{
	return s != NULL && s[0] != '\0';
}

static int
check_zookeeper(load_ctx *lc)
{
	const eb_cluster_opts *z = &lc->conf->cluster;
	bool                   digest = set(z->auth_scheme);
	size_t                 n = strlen(z->root);

	if (n < 2 || z->root[0] != '/' || z->root[n - 1] == '/' ||
	    strstr(z->root, "//") != NULL) {
		RULE_FAIL(lc, "zookeeper.root",
		    "expected a path that starts with \"/\" and does not end "
		    "with \"/\", got \"%.60s\"",
		    z->root);
	}
	if (digest && !set(z->auth_credentials)) {
		RULE_FAIL(lc, "zookeeper.auth.scheme",
		    "\"digest\" requires zookeeper.auth.credentials "
		    "\"user:password\"");
	}
	if (digest && (strchr(z->auth_credentials, ':') == NULL ||
	                  z->auth_credentials[0] == ':')) {
		RULE_FAIL(lc, "zookeeper.auth.credentials",
		    "expected \"user:password\"");
	}
	if (!digest && set(z->auth_credentials)) {
		RULE_FAIL(lc, "zookeeper.auth.credentials",
		    "requires zookeeper.auth.scheme \"digest\"");
	}
	if (z->acl == EB_CLUSTER_ACL_CREATOR && !digest) {
		RULE_FAIL(lc, "zookeeper.acl",
		    "\"creator\" requires zookeeper.auth.scheme \"digest\"");
	}
	return 0;
}

/* What start enforces (cluster/registry.c, link.c), checked here so that
 * --check catches it with the key named. */
#define ZK_ROOT_MAX      512u
#define NODE_ADDRESS_MAX 160u
#define NODE_ID_MAX      1024u

/*
 * A ZooKeeper path's segments: not "." or "..", printable ASCII only (the
 * server rejects "." and ".." and some non-ASCII ranges; control bytes and
 * invalid UTF-8 never make sense in a path). NULL when valid, else what is
 * wrong.
 */
static const char *
zk_path_problem(const char *p)
{
	const char *seg = p;
	size_t      len;

	if (p[0] != '/' || p[1] == '\0' || p[strlen(p) - 1] == '/' ||
	    strstr(p, "//") != NULL) {
		return "expected a path that starts with \"/\" and does not "
		       "end "
		       "with \"/\"";
	}
	for (; *p != '\0'; p++) {
		if ((unsigned char) *p < 0x20 || (unsigned char) *p > 0x7e) {
			return "expected printable ASCII only";
		}
	}
	while (*seg == '/') {
		seg++;
		len = strcspn(seg, "/");
		if ((len == 1 && seg[0] == '.') ||
		    (len == 2 && seg[0] == '.' && seg[1] == '.')) {
			return "a path segment may not be \".\" or \"..\"";
		}
		seg += len;
	}
	return NULL;
}

/* zookeeper.connect's host list (before the chroot), as the ZooKeeper
 * client takes it (conf/zkhosts.c). "/chroot" alone is check_zk_paths'. */
static int
check_zk_hosts(load_ctx *lc)
{
	const char *connect = lc->conf->cluster.connect;
	size_t      n;
	const char *why;
	char        buf[160];

	if (!set(connect) || (n = strcspn(connect, "/")) == 0) {
		return 0;
	}
	if ((why = eb__conf_zk_hosts_problem(connect, n, buf, sizeof(buf))) !=
	    NULL) {
		RULE_FAIL(lc, "zookeeper.connect", "%s", why);
	}
	return 0;
}

/*
 * zookeeper.connect "host:port[,...]/chroot": ZooKeeper's chroot suffix.
 * It is folded into zookeeper.root (connect "h:2181/app" with root
 * "/ebnode/default" becomes connect "h:2181" with root
 * "/app/ebnode/default": the very znodes the chroot would address), so the
 * registry creates the chroot path like the rest of the root instead of
 * failing with ZNONODE when it does not exist yet.
 */
static int
check_zk_paths(load_ctx *lc)
{
	eb_cluster_opts *z = &lc->conf->cluster;
	char            *connect, *old_root, *root;
	char            *slash;
	const char      *why;
	size_t           n;

	/* Both strings are owned by conf (const only in eb_cluster_opts). */
	memcpy(&connect, &z->connect, sizeof(connect));
	slash = strchr(connect, '/');

	if (slash != NULL && strcmp(slash, "/") == 0) {
		*slash = '\0'; /* "h:p/": ZooKeeper's chroot "/" is none */
	} else if (slash != NULL) {
		if ((why = zk_path_problem(slash)) != NULL) {
			RULE_FAIL(lc, "zookeeper.connect",
			    "chroot \"%.60s\": %s", slash, why);
		}
		if (zk_path_problem(z->root) == NULL) {
			n = strlen(slash) + strlen(z->root) + 1;
			root = eb__malloc(n);
			(void) snprintf(root, n, "%s%s", slash, z->root);
			memcpy(&old_root, &z->root, sizeof(old_root));
			free(old_root);
			z->root = root;
			*slash = '\0';
		}
	}
	if (slash == connect) {
		RULE_FAIL(lc, "zookeeper.connect",
		    "expected host:port[,host:port...][/chroot]");
	}
	if ((why = zk_path_problem(z->root)) != NULL) {
		RULE_FAIL(
		    lc, "zookeeper.root", "%s, got \"%.60s\"", why, z->root);
	}
	if (strlen(z->root) > ZK_ROOT_MAX) {
		RULE_FAIL(lc, "zookeeper.root",
		    "longer than %u characters (%zu%s)", ZK_ROOT_MAX,
		    strlen(z->root),
		    slash != NULL ? ", with the chroot of zookeeper.connect"
		                  : "");
	}
	return 0;
}

/* A listen address is bound as given: a numeric IPv4 or IPv6 address (an
 * IPv6 scope "%if" allowed), never a name to resolve. */
static bool
numeric_ip(const char *s)
{
	unsigned char buf[sizeof(struct in6_addr)];
	char          v6[INET6_ADDRSTRLEN + 1];
	size_t        n = strcspn(s, "%");

	if (inet_pton(AF_INET, s, buf) == 1) {
		return true;
	}
	if (n >= sizeof(v6)) {
		return false;
	}
	memcpy(v6, s, n);
	v6[n] = '\0';
	return inet_pton(AF_INET6, v6, buf) == 1;
}

static int
check_addresses(load_ctx *lc)
{
	const eb__conf *c = lc->conf;
	const struct {
		const char *key;
		const char *value;
		bool        used;
	} listen[] = {
		{ "bridge.listen", c->bridge.host, c->bridge_enabled },
		{ "web.listen", c->web.host, c->web_enabled },
		{ "admin.listen", c->admin.listen, c->admin_enabled },
		{ "cluster.listen", c->link.host, true },
	};
	size_t i;

	if (strlen(c->cluster.address) > NODE_ADDRESS_MAX) {
		RULE_FAIL(lc, "node.address", "longer than %u characters (%zu)",
		    NODE_ADDRESS_MAX, strlen(c->cluster.address));
	}
	if (strlen(c->cluster.node_id) > NODE_ID_MAX) {
		RULE_FAIL(lc, "node.id", "longer than %u characters (%zu)",
		    NODE_ID_MAX, strlen(c->cluster.node_id));
	}
	for (i = 0; i < sizeof(listen) / sizeof(listen[0]); i++) {
		if (listen[i].used && !numeric_ip(listen[i].value)) {
			RULE_FAIL(lc, listen[i].key,
			    "expected a numeric IPv4 or IPv6 address (host "
			    "names such as \"localhost\" are not resolved), "
			    "got \"%.60s\"",
			    listen[i].value);
		}
	}
	return 0;
}

/*
 * The leader lease must end before ZooKeeper can expire the leader's session
 * (docs/CLUSTER.md "The lease"). Decided here with the configured session
 * timeout; the election decides again with the negotiated one. Standalone
 * (no ZooKeeper) has no lease.
 */
#define HEARTBEAT_MIN_MS 100u

static int
check_lease(load_ctx *lc)
{
	const eb_cluster_opts  *z = &lc->conf->cluster;
	const eb_election_opts *el = &z->election;
	eb_lease_plan           p;
	const char             *key = NULL;

	/* Each heartbeat is a quorum write (a check-only multi): 1 ms would
	 * be 1 000 ZooKeeper writes/s for one node. */
	if (el->heartbeat_ms != 0 && el->heartbeat_ms < HEARTBEAT_MIN_MS) {
		RULE_FAIL(lc, "election.heartbeat_ms",
		    "0 (session timeout / 4) or at least %u ms: each "
		    "heartbeat is a ZooKeeper write, got %u",
		    HEARTBEAT_MIN_MS, el->heartbeat_ms);
	}
	if (!set(z->connect)) {
		return 0;
	}
	if (eb__lease_plan(z->session_timeout_ms, el->zk_tick_ms,
	        el->heartbeat_ms, el->lease_ms, &p, &key) != 0) {
		/* One short line: the error buffer holds 256 bytes. */
		RULE_FAIL(lc, key,
		    "unsafe leader lease: session %u - tick/2 %u%s - heartbeat "
		    "%u - margin %u = %lld ms; lease %lld must be <= that, >= "
		    "%u "
		    "and > heartbeat",
		    p.session_ms, p.tick_ms / 2, p.tick_assumed ? "?" : "",
		    p.heartbeat_ms, p.margin_ms, (long long) p.bound_ms,
		    (long long) (el->lease_ms != 0 ? el->lease_ms : p.bound_ms),
		    EB_LEASE_MIN_MS);
	}
	return 0;
}

static int
check_tls(load_ctx *lc)
{
	const eb_link_opts   *cl = &lc->conf->link;
	const eb_bridge_opts *br = &lc->conf->bridge;
	int n = set(cl->tls_cert_file) + set(cl->tls_key_file) +
	        set(cl->tls_ca_file);

	if (n != 0 && n != 3) {
		const char *first = set(cl->tls_cert_file)  ? "cluster.tls.cert"
		                    : set(cl->tls_key_file) ? "cluster.tls.key"
		                                            : "cluster.tls.ca";

		RULE_FAIL(lc, first,
		    "cluster.tls.cert, cluster.tls.key and cluster.tls.ca must "
		    "be set together");
	}
	if (set(br->tls_cert) && !set(br->tls_key)) {
		RULE_FAIL(lc, "bridge.tls.cert", "requires bridge.tls.key");
	}
	if (set(br->tls_key) && !set(br->tls_cert)) {
		RULE_FAIL(lc, "bridge.tls.key", "requires bridge.tls.cert");
	}
	if (set(br->tls_ca) && !set(br->tls_cert)) {
		RULE_FAIL(lc, "bridge.tls.ca", "requires bridge.tls.cert");
	}
	if (br->tls_client_auth != EB_BRIDGE_CLIENT_AUTH_NONE &&
	    !set(br->tls_ca)) {
		RULE_FAIL(lc, "bridge.tls.client_auth",
		    "\"%s\" requires bridge.tls.ca",
		    br->tls_client_auth == EB_BRIDGE_CLIENT_AUTH_REQUIRED
		        ? "required"
		        : "request");
	}
	return 0;
}

/* A link must outlive a heartbeat (the link manager refuses it).
 * Releases before 0.1.0 raised such a timeout to 3 heartbeats and started;
 * 0.1.0 refused the config, a compatibility break. Under the policy
 * (docs/UPGRADING.md, "Configuration") it starts again, with a warning
 * naming the key: raised as before. */
static void
adjust_link_timeout(load_ctx *lc)
{
	eb__conf *c = lc->conf;

	if (c->link.dead_ms <= c->link.heartbeat_ms) {
		EB_LOG_WARN("config",
		    "adjusted: %s: cluster.link_timeout_ms (%u) is not greater "
		    "than cluster.heartbeat_ms (%u): using %u (3 heartbeats)",
		    origin_of(lc, "cluster.link_timeout_ms") ==
		            EB__CONF_SRC_DEFAULT
		        ? "cluster.heartbeat_ms"
		        : "cluster.link_timeout_ms",
		    c->link.dead_ms, c->link.heartbeat_ms,
		    c->link.heartbeat_ms * 3);
		c->link.dead_ms = c->link.heartbeat_ms * 3;
	}
}

static int
check_ports(load_ctx *lc)
{
	const eb__conf *c = lc->conf;

	if (c->bridge_enabled && c->admin_enabled && c->admin.port != 0 &&
	    c->admin.port == c->bridge.port &&
	    strcmp(c->admin.listen, c->bridge.host) == 0) {
		/* Blame the one that was set, not the default. */
		if (origin_of(lc, "admin.port") == EB__CONF_SRC_DEFAULT) {
			RULE_FAIL(lc, "bridge.port",
			    "same as admin.port (%lld)",
			    (long long) c->admin.port);
		}
		RULE_FAIL(lc, "admin.port", "same as bridge.port (%lld)",
		    (long long) c->bridge.port);
	}
	if (c->link.port != 0 && strcmp(c->link.host, c->bridge.host) == 0 &&
	    c->bridge_enabled && c->link.port == c->bridge.port) {
		RULE_FAIL(lc, "cluster.port", "same as bridge.port (%lld)",
		    (long long) c->bridge.port);
	}
	if (c->link.port != 0 && strcmp(c->link.host, c->admin.listen) == 0 &&
	    c->admin_enabled && c->link.port == c->admin.port) {
		RULE_FAIL(lc, "cluster.port", "same as admin.port (%lld)",
		    (long long) c->admin.port);
	}
	return 0;
}

/* The vertx section (docs/VERTX.md): the root is a ZooKeeper path without
 * its leading '/', the node id a znode name (no '/', printable ASCII: Java
 * writes its length in UTF-16 units), the host one the JVMs can dial, and
 * membership needs ZooKeeper. Checked whether or not it is enabled, so a
 * file that turns it on later is already valid. */
#define VERTX_ID_MAX 128u

static int
check_vertx(load_ctx *lc)
{
	const eb__conf      *c = lc->conf;
	const eb_vertx_opts *v = &c->vertx;
	char                 path[300];

	(void) snprintf(path, sizeof(path), "/%s", v->root);
	if (v->root[0] == '/' || strlen(v->root) > 200 ||
	    zk_path_problem(path) != NULL) {
		RULE_FAIL(lc, "vertx.root",
		    "expected a ZooKeeper path without the leading \"/\" "
		    "(vertx-zookeeper's rootPath, e.g. \"io.vertx\"), at most "
		    "200 characters, got \"%.60s\"",
		    v->root);
	}
	/* An unset node id is drawn (a UUID) by the vertx module when it
	 * starts: here, every reload would see a changed static key. */
	if (v->node_id != NULL && (strlen(v->node_id) > VERTX_ID_MAX ||
	                              strchr(v->node_id, '/') != NULL)) {
		RULE_FAIL(lc, "vertx.node_id",
		    "expected at most %u printable ASCII characters without "
		    "\"/\" (a UUID, as Vert.x uses), got \"%.60s\"",
		    VERTX_ID_MAX, v->node_id);
	}
	for (const char *p = v->node_id; p != NULL && *p != '\0'; p++) {
		if ((unsigned char) *p <= 0x20 || (unsigned char) *p > 0x7e) {
			RULE_FAIL(lc, "vertx.node_id",
			    "expected printable ASCII without spaces, got "
			    "\"%.60s\"",
			    v->node_id);
		}
	}
	(void) snprintf(path, sizeof(path), "%s",
	    v->engine_root != NULL ? v->engine_root : "/");
	if (v->engine_root != NULL &&
	    (strlen(v->engine_root) > 200 || zk_path_problem(path) != NULL)) {
		RULE_FAIL(lc, "vertx.engine_root",
		    "expected the Java engine's root, a ZooKeeper path that "
		    "starts with \"/\" (under vertx.root), at most 200 "
		    "characters, got \"%.60s\"",
		    v->engine_root);
	}
	if (!numeric_ip(v->cluster_host)) {
		RULE_FAIL(lc, "vertx.cluster_host",
		    "expected a numeric IPv4 or IPv6 address (the JVMs dial "
		    "it), got \"%.60s\"",
		    v->cluster_host);
	}
	if (c->vertx_enabled && !set(c->cluster.connect)) {
		RULE_FAIL(lc, "vertx.enabled",
		    "needs zookeeper.connect (a Vert.x cluster lives in "
		    "ZooKeeper)");
	}
	return 0;
}

/* A route to the ingress address itself would loop forever. */
static int
check_ingress(load_ctx *lc)
{
	const eb_ingress_opts *in = &lc->conf->ingress;
	char                   path[64];
	size_t                 k;

	for (k = 0; k < in->route_count; k++) {
		if (strcmp(in->routes[k].to, in->address) == 0) {
			eb__conf_src src;
			char         name[128];

			blame(lc, "ingress.routes", &src, name, sizeof(name));
			(void) snprintf(
			    path, sizeof(path), "ingress.routes[%zu].to", k);
			return eb__conf_errf(&src, lc->err, path, false,
			    "routes back to ingress.address \"%.60s\"",
			    in->address);
		}
	}
	if (in->default_route != NULL &&
	    strcmp(in->default_route->to, in->address) == 0) {
		RULE_FAIL(lc, "ingress.default_route",
		    "routes back to ingress.address \"%.60s\"", in->address);
	}
	return 0;
}

/* ---- entry points ------------------------------------------------------- */

/*
 * Keys, values and regexes quoted in a message come from the input and may
 * hold control characters (a "\n" escape in a key): the message stays one
 * line.
 */
static void
one_line(eb_errbuf *err)
{
	char *p;

	if (err == NULL) {
		return;
	}
	for (p = err->msg; *p != '\0'; p++) {
		if ((unsigned char) *p < 0x20 || *p == 0x7f) {
			*p = '?';
		}
	}
}

int
eb__conf_load(const eb__conf_sources *src, eb__conf **confp, eb_errbuf *err)
{
	load_ctx lc;
	size_t   k;
	int      rv = 0;

	memset(&lc, 0, sizeof(lc));
	lc.conf = eb__calloc(1, sizeof(*lc.conf));
	lc.origin = eb__calloc(eb__conf_schema_len, sizeof(*lc.origin));
	lc.file = src->file != NULL ? src->file : "-";
	lc.err = err;
	eb__conf_defaults(lc.conf);
	if (src->file != NULL || src->text != NULL) {
		rv = load_file(&lc, src);
	}
	if (rv == 0 && src->env != NULL) {
		rv = load_env(&lc, src->env);
	}
	for (k = 0; rv == 0 && k < src->n_sets; k++) {
		rv = load_set(&lc, src->sets[k]);
	}
	if (rv == 0 && src->cluster_text != NULL) {
		lc.cluster = src->cluster_name != NULL ? src->cluster_name
		                                       : "cluster config";
		rv = load_cluster(&lc, src);
	}
	if (rv == 0) {
		derive(lc.conf, lc.origin);
		adjust_link_timeout(&lc);
		if ((rv = check_zookeeper(&lc)) == 0 &&
		    (rv = check_zk_hosts(&lc)) == 0 &&
		    (rv = check_zk_paths(&lc)) == 0 &&
		    (rv = check_addresses(&lc)) == 0 &&
		    (rv = check_lease(&lc)) == 0 &&
		    (rv = check_tls(&lc)) == 0 &&
		    (rv = check_ports(&lc)) == 0 &&
		    (rv = check_ingress(&lc)) == 0) {
			rv = check_vertx(&lc);
		}
	}
	eb__conf_posidx_free(&lc.idx);
	eb__conf_posidx_free(&lc.cidx);
	lc.conf->origin = lc.origin; /* owned by the conf from here */
	if (rv != 0) {
		eb__conf_free(lc.conf);
		one_line(err);
		return rv;
	}
	*confp = lc.conf;
	return 0;
}

int
eb__conf_check_dynamic(
    const char *text, size_t len, const char *name, eb_errbuf *err)
{
	eb__conf_sources src;
	eb__conf        *c = NULL;
	int              rv;

	memset(&src, 0, sizeof(src));
	src.cluster_text = text;
	src.cluster_len = len;
	src.cluster_name = name;
	if ((rv = eb__conf_load(&src, &c, err)) == 0) {
		eb__conf_free(c);
	}
	return rv;
}

bool
eb__conf_key_dynamic(const char *path)
{
	const eb__conf_entry *e = eb__conf_find(path);

	return e != NULL && (e->flags & EB__CF_DYNAMIC) != 0;
}

static const char *
origin_name(int kind)
{
	switch (kind) {
	case EB__CONF_SRC_FILE:
		return "file";
	case EB__CONF_SRC_ENV:
		return "env";
	case EB__CONF_SRC_FLAG:
		return "flag";
	case EB__CONF_SRC_CLUSTER:
		return "cluster";
	default:
		return "default";
	}
}

json_t *
eb__conf_dynamic_to_json(const eb__conf *conf)
{
	return eb__conf_keys_to_json(conf, true);
}

json_t *
eb__conf_keys_to_json(const eb__conf *conf, bool dynamic)
{
	json_t *root = json_object();
	size_t  k;

	for (k = 0; k < eb__conf_schema_len; k++) {
		const eb__conf_entry *e = &eb__conf_schema[k];

		if (((e->flags & EB__CF_DYNAMIC) != 0) != dynamic) {
			continue;
		}
		(void) json_object_set_new(root, e->path,
		    json_pack("{s:o, s:s}", "value",
		        eb__conf_get_json(conf, e, false), "from",
		        origin_name(conf->origin != NULL
		                        ? conf->origin[k]
		                        : EB__CONF_SRC_DEFAULT)));
	}
	return root;
}

size_t
eb__conf_static_changes(
    const eb__conf *a, const eb__conf *b, char *out, size_t n)
{
	size_t k, changed = 0, used = 0;

	if (n > 0) {
		out[0] = '\0';
	}
	for (k = 0; k < eb__conf_schema_len; k++) {
		const eb__conf_entry *e = &eb__conf_schema[k];
		json_t               *va, *vb;
		int                   w;

		if ((e->flags & EB__CF_DYNAMIC) != 0) {
			continue;
		}
		va = eb__conf_get_json(a, e, true);
		vb = eb__conf_get_json(b, e, true);
		if (!json_equal(va, vb)) {
			changed++;
			w = snprintf(out + used, n - used, "%s%s",
			    used > 0 ? "," : "", e->path);
			if (w > 0 && (size_t) w < n - used) {
				used += (size_t) w;
			}
		}
		json_decref(va);
		json_decref(vb);
	}
	return changed;
}

void
eb__conf_free(eb__conf *conf)
{
	if (conf == NULL) {
		return;
	}
	eb__conf_release(conf);
	free(conf);
}

/* Sets value at a dotted path, creating the sections on the way. */
static void
json_set_path(json_t *root, const char *path, json_t *value)
{
	char    buf[256], *p = buf, *dot;
	json_t *obj = root, *next;

	(void) snprintf(buf, sizeof(buf), "%s", path);
	while ((dot = strchr(p, '.')) != NULL) {
		*dot = '\0';
		if ((next = json_object_get(obj, p)) == NULL) {
			next = json_object();
			(void) json_object_set_new(obj, p, next);
		}
		obj = next;
		p = dot + 1;
	}
	(void) json_object_set_new(obj, p, value);
}

json_t *
eb__conf_to_json(const eb__conf *conf, bool show_secrets)
{
	json_t *root = json_object();
	size_t  k;

	for (k = 0; k < eb__conf_schema_len; k++) {
		const eb__conf_entry *e = &eb__conf_schema[k];

		json_set_path(
		    root, e->path, eb__conf_get_json(conf, e, show_secrets));
	}
	return root;
}
