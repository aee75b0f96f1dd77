/*
 * Wiring of the TCP event-bus bridge (eb_bridge_opts from conf->bridge; set
 * n->bridge_port) into the node.
 *
 * STUB: succeeds and does nothing; the owner of #5 replaces this file.
 * TODO(#5): create, start and stop the subsystem here (contract in
 * node_int.h).
 */
#include "node/node_int.h"

int
eb__node_bridge_start(eb_node *n, eb__node_done_cb cb)
{
	eb__node_complete(n, cb, 0);
	return 0;
}

void
eb__node_bridge_stop(eb_node *n, eb__node_done_cb cb)
{
	eb__node_complete(n, cb, 0);
}
