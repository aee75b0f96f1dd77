/*
 * conf: the daemon's configuration. One JSON file (// and slash-star
 * comments allowed), overridden by EBNODE_<PATH> environment variables and
 * by "--set key.path=value" flags, in that order of precedence on top of the
 * built-in defaults, all validated against one schema table (schema.c). The
 * cluster configuration (<root>/config) comes last and may set only the
 * dynamic keys (EB__CF_DYNAMIC rows: docs/CONFIG.md).
 *
 * The result is an immutable eb__conf built all or nothing: either every
 * source is valid and consistent, or eb__conf_load() fails with one message
 * naming the origin ("file:line:col", "environment EBNODE_X" or
 * "--set key") and the key path, e.g.
 *
 *     ebnode.json:12:13: bridge.port: expected an integer in 0..65535, got
 *     70000
 *
 * Only node/ includes this header; conf depends on the modules' public
 * headers and _opts_init functions, no module depends on conf (STYLE B2).
 *
 * Threads: none of this touches a loop; call it from any one thread.
 * Ownership: every string and array in an eb__conf is owned by it and freed
 * by eb__conf_free(). Never modify a loaded eb__conf.
 */
#ifndef EB_CONF_CONF_H
#define EB_CONF_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <ebnode/bridge.h>
#include <ebnode/bus.h>
#include <ebnode/cluster.h>
#include <ebnode/err.h>
#include <ebnode/ingress.h>
#include <ebnode/link.h>
#include <ebnode/log.h>
#include <ebnode/shared.h>
#include <ebnode/vertx.h>
#include <ebnode/web.h>

#include "admin/admin.h"

/*
 * Each section is the owning module's own opts struct, filled by the
 * module's _opts_init first; the schema rows (schema.c) write straight into
 * its fields. Strings and arrays in them are owned by the eb__conf although
 * the fields are const (freed by eb__conf_free). node/ hands these structs
 * to the modules, adding only what is known at run time (node id, ports).
 *
 *   cluster   node.*, zookeeper.*, election.* (election.* and node.eligible
 *             and zookeeper.tick_ms in cluster.election)
 *   link      cluster.* (the node links)
 *   bus, bridge, ingress, log, admin: the sections of the same name
 *
 * Strings that mean "off" when empty (TLS files, tokens, the ZooKeeper
 * auth scheme) are NULL when "" was configured, as the modules expect.
 */

/* log.*: the log module has no opts struct (its level and sink are
 * process-wide setters), so conf keeps the three values it needs, typed by
 * the log module's own enums. */
typedef struct eb__conf_log {
	eb_log_level     level;
	eb_log_sink_kind sink;
	const char      *journal_socket; /* the journal's native socket */
} eb__conf_log;

typedef struct eb__conf {
	eb_cluster_opts cluster;
	eb_link_opts    link;
	eb_bus_opts     bus;
	eb_bridge_opts  bridge;
	bool            bridge_enabled; /* bridge.enabled: node's choice */
	eb_web_opts     web;            /* the browser bridge (web/) */
	bool            web_enabled;    /* web.enabled: node's choice */
	eb_ingress_opts ingress;
	eb__conf_log    log;
	eb__admin_opts  admin;
	bool            admin_enabled; /* admin.enabled: node's choice */
	eb_shared_opts  shared;        /* shared.*: caps of shared data */
	eb_vertx_opts   vertx;         /* vertx.*: Vert.x cluster member */
	bool            vertx_enabled; /* vertx.enabled: node's choice */
	/* Where each key's value came from (per schema row; owned; read it
	 * through eb__conf_dynamic_to_json). */
	int *origin;
} eb__conf;

/* Where the configuration comes from. Every field may be NULL/0. */
typedef struct eb__conf_sources {
	const char        *file; /* path, as it should appear in messages */
	const char        *text; /* non-NULL: the file's content (not read) */
	size_t             text_len;
	const char *const *env;  /* "NAME=value" list, NULL-terminated */
	const char *const *sets; /* "key.path=value" list, in flag order */
	size_t             n_sets;
	/* The cluster configuration (JSON, dynamic keys only), applied last:
	 * for dynamic keys, local sources < cluster. NULL: none. Messages
	 * name it cluster_name ("<root>/config v7"). */
	const char *cluster_text;
	size_t      cluster_len;
	const char *cluster_name;
} eb__conf_sources;

/*
 * Builds a configuration from defaults < file < env < sets < the cluster
 * layer (dynamic keys only; a static key there is an error). Returns 0 and
 * *confp (free with eb__conf_free), or EB_ECONF with the one-line message in
 * err (if non-NULL) and *confp untouched. Unknown EBNODE_* environment
 * variables are ignored (EBNODE_CONFIG and EBNODE_BIN are not keys).
 */
int eb__conf_load(
    const eb__conf_sources *src, eb__conf **confp, eb_errbuf *err);
void eb__conf_free(eb__conf *conf); /* accepts NULL */

/*
 * The effective configuration as a new JSON object (caller releases it).
 * Secrets (tokens, ZooKeeper credentials) are shown as "<redacted>" when
 * set, unless show_secrets.
 */
json_t *eb__conf_to_json(const eb__conf *conf, bool show_secrets);

/*
 * Dynamic keys (docs/CONFIG.md "Dynamic keys") may change at run time: from
 * the cluster configuration (<root>/config) or a SIGHUP reload of the local
 * sources. Every other key is static.
 */
bool eb__conf_key_dynamic(const char *path);
/* Validates a cluster configuration on the defaults (what `ebctl config
 * set` checks before writing): 0 or EB_ECONF with the message. */
int eb__conf_check_dynamic(
    const char *text, size_t len, const char *name, eb_errbuf *err);
/* {"key.path": {"value": V, "from": "default|file|env|flag|cluster"}} for
 * every dynamic key (new reference). */
json_t *eb__conf_dynamic_to_json(const eb__conf *conf);
/* The same for the dynamic (dynamic true) or the static keys; secrets are
 * shown as "<redacted>" when set. */
json_t *eb__conf_keys_to_json(const eb__conf *conf, bool dynamic);
/* The number of static keys whose values differ between a and b; their
 * paths, comma-separated, in out (n bytes, cut when full). */
size_t eb__conf_static_changes(
    const eb__conf *a, const eb__conf *b, char *out, size_t n);

/* zookeeper.connect's host list s[0..n) (before any "/chroot"), checked as
 * the ZooKeeper C client takes it (conf/zkhosts.c; also ebctl's --zk):
 * NULL when valid, else a one-line reason written into buf (cap bytes) and
 * returned. */
const char *eb__conf_zk_hosts_problem(
    const char *s, size_t n, char *buf, size_t cap);

/* The environment variable for a key path: "bridge.port" ->
 * "EBNODE_BRIDGE_PORT". Writes at most n bytes; returns 0 or EB_ECONF (too
 * long). */
int eb__conf_env_name(const char *path, char *out, size_t n);

#endif
