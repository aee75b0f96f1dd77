/*
 * Internal access to the cluster's ZooKeeper session for modules built on
 * it (shared/: locks, counters, ids), which share the node's session so
 * that what they create dies with the node's session.
 *
 * eb__cluster_zk() is NULL before start and standalone; the eb_zk object
 * lives from start until the cluster's parts close (across session
 * expiries: the same handle makes the new session). Session observers run
 * from the session event, after the election has seen it (a suspended
 * leader is revoked first), in the order they were added.
 * Loop thread only.
 */
#ifndef EB_CLUSTER_CLUSTER_INT_H
#define EB_CLUSTER_CLUSTER_INT_H

#include <ebnode/cluster.h>

#include "zk/zk.h"

typedef void (*eb__cluster_session_cb)(
    eb_cluster *c, eb_zk_event ev, void *arg);

eb_zk *eb__cluster_zk(eb_cluster *c);
/* "<root>" as configured (no trailing '/'); "" standalone. */
const char *eb__cluster_root(const eb_cluster *c);
/* The configured ZooKeeper tickTime (0: unknown), for lease plans. */
uint32_t eb__cluster_zk_tick_ms(const eb_cluster *c);
void     eb__cluster_on_session(
        eb_cluster *c, eb__cluster_session_cb cb, void *arg);
int eb__cluster_off_session(
    eb_cluster *c, eb__cluster_session_cb cb, void *arg);

#endif
