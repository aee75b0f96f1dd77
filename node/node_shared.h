/*
 * Shared data in the node (node_shared.c): its metric collector, which
 * node_admin.c registers (it reads the step's state at each scrape).
 */
#ifndef EB_NODE_NODE_SHARED_H
#define EB_NODE_NODE_SHARED_H

#include "admin/prom.h"
#include "node/node_int.h"

/* Shared data on the running cluster, started by the cluster step once it
 * runs and stopped first thing when it stops or closes (its locks go
 * before the member); nothing when standalone. A failure is logged and
 * leaves the node without shared data. */
void eb__node_shared_start(eb_node *n);
/* Idempotent. */
void eb__node_shared_stop(eb_node *n);
/* arg: the eb_node. */
void eb__node_shared_metrics(eb__prom *w, void *arg);

#endif
