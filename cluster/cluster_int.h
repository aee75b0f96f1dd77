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

#include "cluster/cluster_config.h"
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

#endif
