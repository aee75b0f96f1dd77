/*
 * Wiring of ZooKeeper session, node links, membership and election (set
 * n->cluster_port) into the node.
 *
 * STUB: succeeds and does nothing; the owner of #3 replaces this file.
 * TODO(#3): create, start and stop the subsystem here (contract in
 * node_int.h).
 */
#include "node/node_int.h"

int
eb__node_cluster_start(eb_node *n, eb__node_done_cb cb)
{
	eb__node_complete(n, cb, 0);
	return 0;
}

void
eb__node_cluster_stop(eb_node *n, eb__node_done_cb cb)
{
	eb__node_complete(n, cb, 0);
}
