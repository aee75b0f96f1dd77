/*
 * The admin endpoint's observability routes (metrics.c), registered in
 * admin.c's route table:
 *
 *   GET /metrics        Prometheus text exposition format 0.0.4
 *   GET /subscriptions  the bus's address table as JSON
 *   GET /bridge         bridge counters and the connection list as JSON
 *
 * Each handler reads the node's objects on demand (nothing is sampled in
 * the background) and fills the response synchronously; see admin.h for
 * the handler contract. A subsystem that is disabled or not (yet) running
 * shows zeros, never an error. docs/ADMIN.md lists every metric.
 * Loop thread only.
 */
#ifndef EB_NODE_METRICS_H
#define EB_NODE_METRICS_H

#include "node/admin.h"
#include "node/node_int.h"

/* At most this many addresses get per-address bus series (the busiest by
 * total messages); ebnode_bus_addresses shows how many exist. */
#define EB_METRICS_BUS_TOP 32

void eb__admin_metrics(eb_node *n, const eb__admin_req *rq, eb__admin_resp *rs);
void eb__admin_subscriptions(
    eb_node *n, const eb__admin_req *rq, eb__admin_resp *rs);
void eb__admin_bridge(eb_node *n, const eb__admin_req *rq, eb__admin_resp *rs);

#endif
