/*
 * node/ internals of the cluster wiring (node_cluster.c) for the other
 * wiring files: the admin endpoint (node_admin.c) and the ingress wiring.
 *
 * Leadership listeners (any number) may be registered before the cluster
 * step starts; they are called on every change (leader=true with the epoch,
 * then leader=false), synchronously from the cluster's leadership event,
 * so a revoke reaches them before anything else happens (rule 5, rule 8).
 * Loop thread only.
 */
#ifndef EB_NODE_NODE_CLUSTER_H
#define EB_NODE_NODE_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "node/node_int.h"

typedef void (*eb__node_leader_cb)(
    eb_node *n, bool leader, int64_t epoch, void *arg);

/* Always 0. */
int eb__node_cluster_on_leader(eb_node *n, eb__node_leader_cb cb, void *arg);
/* The running cluster object, or NULL (shared data, node_shared.c). */
struct eb_cluster *eb__node_cluster_obj(eb_node *n);
/* Leadership now (the election lease is checked at this call). */
bool    eb__node_cluster_is_leader(eb_node *n);
int64_t eb__node_cluster_epoch(eb_node *n);
/* 1 when the node is a registered member with a live session (or
 * standalone and running); else 0 with a short reason. */
int eb__node_cluster_health(eb_node *n, const char **reason);
/* {"leader","epoch","self","standalone","nodes":[...]} (new reference). */
json_t *eb__node_cluster_nodes_json(eb_node *n);
/* {"node_id","address","epoch","self",...} or NULL when no leader is known
 * (new reference). */
json_t *eb__node_cluster_leader_json(eb_node *n);
/* Step down: 0, EB_ENOTLEADER, or EB_ECLOSED when not running. */
int eb__node_cluster_release(eb_node *n);

/* What the metrics show (node_admin.c). Counters live as long as the
 * cluster step (from start to the end of its stop). */
typedef struct eb__node_cluster_stats {
	/* "standalone", "connecting", "connected", "suspended", "closed",
	 * or "down" (the cluster step is not running). Static string. */
	const char *zk_state;
	int64_t     zk_session_id;   /* 0: none */
	uint32_t    members;         /* in the member cache (standalone: 1) */
	uint32_t    members_invalid; /* children ignored: not valid members */
	uint64_t    zk_requests;     /* requests sent to ZooKeeper */
	int         leader_known;    /* a leader is known (cache or self) */
	int64_t     leader_epoch;    /* its epoch, 0 when none is known */
	uint64_t    leads;           /* times this node was elected */
	uint64_t    leader_changes;  /* times the known leader changed */
	/* ZooKeeper session events seen. */
	uint64_t zk_connected, zk_suspended, zk_reconnected, zk_expired,
	    zk_auth_failed;
} eb__node_cluster_stats;
void eb__node_cluster_stats_get(eb_node *n, eb__node_cluster_stats *out);

#endif
