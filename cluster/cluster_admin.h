/*
 * The cluster on the admin server (cluster_admin.c): GET /health, /nodes,
 * /leader, POST /leader/release, and the role, ZooKeeper and membership
 * metric families (ebnode_info, ebnode_leader, ebnode_epoch,
 * ebnode_members, ebnode_zk_*, ebnode_leader_*). Kept out of eb_cluster
 * (library eb_cluster_admin) so that libebnode does not carry the HTTP
 * server. Loop thread only.
 */
#ifndef EB_CLUSTER_CLUSTER_ADMIN_H
#define EB_CLUSTER_CLUSTER_ADMIN_H

#include <stdbool.h>

#include <ebnode/cluster.h>

#include "admin/admin.h"

/* What the routes read. The owner (the node's cluster wiring) keeps it
 * current; it outlives the admin server. */
typedef struct eb__cluster_view {
	/* This node as a standalone answer shows it: node_id, address,
	 * host, the ports, election.eligible, connect (empty: standalone).
	 * Strings borrowed. */
	eb_cluster_opts self;
	eb_cluster     *cluster;  /* borrowed; NULL: none (metrics "down") */
	bool            running;  /* started and not stopping */
	bool            stopping; /* from the stop until the close ended */
	const char     *degraded; /* NULL, or why the node runs degraded (a
	                             refused cluster configuration); /health
	                             says "degraded" with it (borrowed) */
	/* Optional: the state of shared data's own ZooKeeper session, which
	 * /health shows as "shared_zk" (NULL: not shown). */
	const char *(*shared_zk)(void *arg);
	void *shared_zk_arg;
	/* Optional: the number of member peers this node cannot link to
	 * (version skew, TLS, unreachable), with a line for the first in buf;
	 * more than 0 makes /health "degraded" with that line (NULL: none). */
	int (*links_degraded)(void *arg, char *buf, size_t size);
	void *links_degraded_arg;
} eb__cluster_view;

/* Leadership now: running and leading (the lease is checked). */
bool eb__cluster_view_is_leader(const eb__cluster_view *v);
/* Registers the routes and the cluster collector. v is borrowed and must
 * outlive adm. */
void eb__cluster_admin_register(eb__admin *adm, eb__cluster_view *v);
/* The ZooKeeper rows of ebnode_errors_total (no cluster: zeros). */
void eb__cluster_admin_errors(eb__prom *w, const eb__cluster_view *v);

#endif
