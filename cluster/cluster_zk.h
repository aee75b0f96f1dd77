/*
 * What the modules built on the cluster may use of its ZooKeeper settings
 * (shared/: locks, counters and ids run on a session of their own, made
 * with the same settings as the cluster's). The rest of the cluster's
 * internals stay in cluster/cluster_int.h, which is for cluster/ itself.
 * Not installed.
 *
 * All three read the cluster's options only: they work before start and
 * standalone (then eb__cluster_zk_opts leaves connect NULL or empty).
 * Returned strings are borrowed from c and live as long as c.
 * Threads: loop thread only.
 */
#ifndef EB_CLUSTER_CLUSTER_ZK_H
#define EB_CLUSTER_CLUSTER_ZK_H

#include <stdint.h>

#include <ebnode/cluster.h>

#include "zk/zk.h"

/* The ZooKeeper root of this cluster ("/ebnode/default" by default, a
 * chroot folded in). */
const char *eb__cluster_root(const eb_cluster *c);
/* The configured ZooKeeper tickTime (the lease formula needs it). */
uint32_t eb__cluster_zk_tick_ms(const eb_cluster *c);
/* The settings of the cluster's session (strings borrowed from c), for a
 * second session on the same ensemble (shared/ opens its own). */
void eb__cluster_zk_opts(const eb_cluster *c, eb__zk_opts *zo);

#endif
