/*
 * cluster internals shared by cluster.c (the session owner) and config.c
 * (the configuration center at <root>/config). Not installed. Other
 * modules use cluster/cluster_zk.h (the session settings) or the public
 * <ebnode/cluster.h>; tests may include this header (they test the module).
 * One non-test user remains outside: ctl/config_cmd.c (ebctl writes
 * <root>/config with eb__config_write/eb__config_history on its own
 * session; issue 24 leaves moving that to the ctl owner).
 *
 * eb__cluster_zk() is NULL before start and standalone; the eb__zk object
 * lives from start until the cluster's parts close (across session
 * expiries: the same handle makes the new session). Session observers run
 * from the session event, after the election has seen it (a suspended
 * leader is revoked first), in the order they were added.
 * Threads: loop thread only.
 */
#ifndef EB_CLUSTER_CLUSTER_INT_H
#define EB_CLUSTER_CLUSTER_INT_H

#include <ebnode/cluster.h>

#include "cluster/cluster_zk.h"
#include "zk/zk.h"

typedef struct eb__cluster_config eb__cluster_config;

/* cluster.c: the session (NULL standalone or before start), the
 * configuration part, and the cluster behind a live-id callback argument
 * (NULL once it is stopping or gone). */
eb__zk             *eb__cluster_zk(const eb_cluster *c);
eb__cluster_config *eb__cluster_config_of(const eb_cluster *c);
void               *eb__cluster_live_arg(const eb_cluster *c);
eb_cluster         *eb__cluster_from_live(eb__zk *zk, void *arg);

/* config.c */
eb__cluster_config *eb__cluster_config_new(eb_cluster *c);
void                eb__cluster_config_free(eb__cluster_config *cf);
/* A session event: (re)connected re-reads <root>/config. */
void eb__cluster_config_session_event(eb__cluster_config *cf, eb__zk_event ev);

/*
 * Writing and history of <root>/config on any session (the node's, or
 * ebctl's own): config.c, see its header comment. Callbacks run exactly
 * once on a later turn when the call returned 0 (EB_ECANCELED when the
 * session closes first); ctx strings are copied.
 */
typedef struct eb__config_version {
	int64_t version;
	char   *data; /* NUL-terminated, len bytes */
	size_t  len;
} eb__config_version;
/* status 0 and the new version; EB_EZKBADVERSION: <root>/config was not
 * at expected_version any more (a concurrent writer). The history is
 * trimmed to EB_CLUSTER_CONFIG_HISTORY in the same multi. Returns
 * EB_EZKTOOBIG (and sends nothing) when len is above
 * eb__config_max_bytes(zk, root). */
typedef void (*eb__config_set_cb)(int status, int64_t version, void *arg);
int eb__config_write(eb__zk *zk, const char *root, const char *data, size_t len,
    int64_t expected_version, eb__config_set_cb cb, void *arg);
/* The longest configuration one write can carry on this session: the
 * bytes go twice (config and history copy) into one request of at most
 * eb__zk_max_request(zk). */
size_t eb__config_max_bytes(const eb__zk *zk, const char *root);
/* The kept versions, oldest first (borrowed for the call). */
typedef void (*eb__config_history_cb)(
    int status, const eb__config_version *v, size_t n, void *arg);
int eb__config_history(
    eb__zk *zk, const char *root, eb__config_history_cb cb, void *arg);

/* Session observers (the settings: cluster/cluster_zk.h). */
typedef void (*eb__cluster_session_cb)(
    eb_cluster *c, eb__zk_event ev, void *arg);
void eb__cluster_on_session(
    eb_cluster *c, eb__cluster_session_cb cb, void *arg);
int eb__cluster_off_session(
    eb_cluster *c, eb__cluster_session_cb cb, void *arg);

#endif
