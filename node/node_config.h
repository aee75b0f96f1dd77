/*
 * node_config.c: the dynamic configuration of the node (docs/CONFIG.md
 * "Dynamic keys"). It validates the cluster configuration (<root>/config,
 * read by the eb_cluster) on top of the node's local sources, and applies
 * what passes at once to the ingress (route table, hold bounds, ack mode),
 * the bridge (permitted lists) and the log level; what fails is refused:
 * the previous version stays, an ERROR is logged, it is counted, and
 * /health says degraded with the reason. SIGHUP reloads the local sources
 * the same way. GET /config shows the applied version and where each
 * dynamic key's value came from.
 * Threads: loop thread only.
 */
#ifndef EB_NODE_NODE_CONFIG_H
#define EB_NODE_NODE_CONFIG_H

#include "admin/admin.h"
#include "node/node_int.h"

/* From the cluster step, once the cluster runs: follows its
 * <root>/config (applying what it read already) and SIGHUP. detach (the
 * cluster step's stop) undoes it; idempotent. */
void eb__node_config_attach(eb_node *n, struct eb_cluster *c);
void eb__node_config_detach(eb_node *n);
/* GET /config and the ebnode_config_* metrics (from the admin step). */
void eb__node_config_admin_register(eb__admin *adm, eb_node *n);
/* Frees what the config part holds (eb__node_free). */
void eb__node_config_free(eb_node *n);

#endif
