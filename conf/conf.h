/*
 * conf: the daemon's configuration. One JSON file (// and slash-star
 * comments allowed), overridden by EBNODE_<PATH> environment variables and
 * by "--set key.path=value" flags, in that order of precedence on top of the
 * built-in defaults, all validated against one schema table (schema.c).
 *
 * The result is an immutable eb_conf built all or nothing: either every
 * source is valid and consistent, or eb_conf_load() fails with one message
 * naming the origin ("file:line:col", "environment EBNODE_X" or
 * "--set key") and the key path, e.g.
 *
 *     ebnode.json:12:13: bridge.port: expected an integer in 0..65535, got
 *     70000
 *
 * Only node/ includes this header; node maps each section onto the owning
 * module's eb_<m>_opts, so no module depends on conf (STYLE B2).
 *
 * Threads: none of this touches a loop; call it from any one thread.
 * Ownership: every string and array in an eb_conf is owned by it and freed
 * by eb_conf_free(). Never modify a loaded eb_conf.
 */
#ifndef EB_CONF_CONF_H
#define EB_CONF_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <ebnode/err.h>

/* Enum values. Each matches the position of its word in the schema. */
enum eb_conf_zk_scheme { EB_CONF_ZK_SCHEME_NONE = 0, EB_CONF_ZK_SCHEME_DIGEST };
enum eb_conf_zk_acl { EB_CONF_ZK_ACL_OPEN = 0, EB_CONF_ZK_ACL_CREATOR };
enum eb_conf_client_auth {
	EB_CONF_CLIENT_AUTH_NONE = 0,
	EB_CONF_CLIENT_AUTH_REQUEST,
	EB_CONF_CLIENT_AUTH_REQUIRED
};
enum eb_conf_auth_mode { EB_CONF_AUTH_EVERY = 0, EB_CONF_AUTH_FIRST };
enum eb_conf_route_mode { EB_CONF_MODE_SEND = 0, EB_CONF_MODE_PUBLISH };

/* {"address": x} | {"addressRegex": re} | {} (matches every address). */
typedef struct eb_conf_permit {
	char *address; /* owned, NULL if absent */
	char
	    *address_regex; /* owned, NULL if absent; compiles (REG_EXTENDED) */
} eb_conf_permit;

/*
 * An ingress route: match a header or a top-level body field (exactly one
 * of header/field) with exactly one of equals/prefix/regex; deliver to
 * "to" by send or publish.
 */
typedef struct eb_conf_route {
	char *header; /* owned, NULL if absent */
	char *field;  /* owned, NULL if absent */
	char *equals; /* owned, NULL if absent */
	char *prefix; /* owned, NULL if absent */
	char *regex;  /* owned, NULL if absent; compiles (REG_EXTENDED) */
	char *to;     /* owned, never NULL or empty */
	int   mode;   /* enum eb_conf_route_mode */
} eb_conf_route;

/* ingress.default_route: where frames that match no route go. */
typedef struct eb_conf_target {
	char *to;   /* owned, never NULL or empty */
	int   mode; /* enum eb_conf_route_mode */
} eb_conf_target;

typedef struct eb_conf_node {
	char *id;      /* default: node.address */
	char *address; /* default: "ebnode-" + hostname */
	char *host;    /* advertised host, "127.0.0.1" */
	bool  eligible;
} eb_conf_node;

typedef struct eb_conf_log {
	int   level;          /* eb_log_level: err=0 .. debug=4 */
	int   sink;           /* eb_log_sink_kind: auto=0 .. syslog=3 */
	char *journal_socket; /* the journal's native socket */
} eb_conf_log;

typedef struct eb_conf_zookeeper {
	char   *connect; /* "" = standalone */
	char   *root;    /* starts with '/', does not end with '/' */
	int64_t session_timeout_ms;
	int64_t tick_ms;          /* the ensemble's tickTime; 0 = unknown */
	int     auth_scheme;      /* enum eb_conf_zk_scheme */
	char   *auth_credentials; /* "user:password" when scheme is digest */
	int     acl;              /* enum eb_conf_zk_acl */
} eb_conf_zookeeper;

/* The leader lease (docs/CLUSTER.md "The lease"); 0 = derived. */
typedef struct eb_conf_election {
	int64_t heartbeat_ms; /* 0: negotiated session / 4 */
	int64_t lease_ms;     /* 0: the safe bound; larger is refused */
} eb_conf_election;

typedef struct eb_conf_cluster {
	char   *name;
	char   *listen;
	int64_t port; /* 0: ephemeral */
	int64_t heartbeat_ms;
	int64_t link_timeout_ms;
	char   *tls_cert; /* "" = off; cert, key and ca all set or none */
	char   *tls_key;
	char   *tls_ca;
} eb_conf_cluster;

typedef struct eb_conf_bus {
	int64_t request_timeout_ms;
	int64_t receipt_timeout_ms; /* confirmed sends (ingress) */
	int64_t consumer_queue_max;
	int64_t max_pending_requests;   /* node-wide cap, eb_bus_opts */
	int64_t max_request_timeout_ms; /* clamp of request timeouts */
} eb_conf_bus;

typedef struct eb_conf_bridge {
	bool            enabled;
	char           *listen;
	int64_t         port;
	int64_t         max_frame_bytes;
	int64_t         max_connections;
	int64_t         write_queue_bytes;
	int64_t         idle_timeout_ms; /* 0 = off */
	int64_t         reply_ttl_ms;
	int64_t         frame_timeout_ms;       /* 0 = off */
	int64_t         first_frame_timeout_ms; /* 0 = off */
	int64_t         tls_handshake_timeout_ms;
	int64_t         input_budget_bytes; /* 0 = off */
	int64_t         max_consumers_per_conn;
	int64_t         max_requests_per_conn;
	int64_t         max_requests;
	int64_t         max_request_timeout_ms;
	eb_conf_permit *inbound; /* owned array */
	size_t          n_inbound;
	eb_conf_permit *outbound; /* owned array */
	size_t          n_outbound;
	char           *tls_cert; /* "" = plain TCP */
	char           *tls_key;
	char           *tls_ca;
	int             tls_client_auth; /* enum eb_conf_client_auth */
	char           *auth_token;      /* "" = off; secret */
	int             auth_mode;       /* enum eb_conf_auth_mode */
} eb_conf_bridge;

typedef struct eb_conf_admin {
	bool    enabled;
	char   *listen;
	int64_t port;
	char   *token; /* "" = none; secret */
	int64_t request_timeout_ms;
} eb_conf_admin;

typedef struct eb_conf_ingress {
	char           *address;
	int64_t         hold_max;
	int64_t         hold_ms;
	bool            ack;
	eb_conf_route  *routes; /* owned array */
	size_t          n_routes;
	eb_conf_target *default_route; /* owned, NULL if absent */
} eb_conf_ingress;

typedef struct eb_conf {
	eb_conf_node      node;
	eb_conf_log       log;
	eb_conf_zookeeper zookeeper;
	eb_conf_election  election;
	eb_conf_cluster   cluster;
	eb_conf_bus       bus;
	eb_conf_bridge    bridge;
	eb_conf_admin     admin;
	eb_conf_ingress   ingress;
} eb_conf;

/* Where the configuration comes from. Every field may be NULL/0. */
typedef struct eb_conf_sources {
	const char        *file; /* path, as it should appear in messages */
	const char        *text; /* non-NULL: the file's content (not read) */
	size_t             text_len;
	const char *const *env;  /* "NAME=value" list, NULL-terminated */
	const char *const *sets; /* "key.path=value" list, in flag order */
	size_t             n_sets;
} eb_conf_sources;

/*
 * Builds a configuration from defaults < file < env < sets. Returns 0 and
 * *confp (free with eb_conf_free), or EB_ECONF with the one-line message in
 * err (if non-NULL) and *confp untouched. Unknown EBNODE_* environment
 * variables are ignored (EBNODE_CONFIG and EBNODE_BIN are not keys).
 */
int  eb_conf_load(const eb_conf_sources *src, eb_conf **confp, eb_errbuf *err);
void eb_conf_free(eb_conf *conf); /* accepts NULL */

/*
 * The effective configuration as a new JSON object (caller releases it).
 * Secrets (tokens, ZooKeeper credentials) are shown as "<redacted>" when
 * set, unless show_secrets.
 */
json_t *eb_conf_to_json(const eb_conf *conf, bool show_secrets);

/* The environment variable for a key path: "bridge.port" ->
 * "EBNODE_BRIDGE_PORT". Writes at most n bytes; returns 0 or EB_ECONF (too
 * long). */
int eb_conf_env_name(const char *path, char *out, size_t n);

/* Enum words, for logs and tests ("send"/"publish", ...). Never NULL. */
const char *eb_conf_mode_name(int mode);

#endif
