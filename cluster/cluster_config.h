/*
 * Writing and reading the history of <root>/config on any ZooKeeper
 * session: the node's own (cluster/config.c watches and re-reads it) or
 * ebctl's (`ebctl config set/history/rollback`, ctl/config_cmd.c). The rest
 * of the cluster's internals stay in cluster/cluster_int.h, which is for
 * cluster/ itself. Not installed. Threads: loop thread only.
 *
 * Callbacks run exactly once on a later turn when the call returned 0
 * (EB_ECANCELED when the session closes first); ctx strings are copied.
 */
#ifndef EB_CLUSTER_CLUSTER_CONFIG_H
#define EB_CLUSTER_CLUSTER_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include <ebnode/cluster.h>

#include "zk/zk.h"

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

#endif
