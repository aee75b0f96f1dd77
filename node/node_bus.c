/*
 * Wiring of the event bus (eb_bus_new/start with eb_bus_opts from conf->bus)
 * into the node.
 *
 * STUB: succeeds and does nothing; the owner of #4 replaces this file.
 * TODO(#4): create, start and stop the subsystem here (contract in
 * node_int.h).
 */
#include "node/node_int.h"

int
eb__node_bus_start(eb_node *n, eb__node_done_cb cb)
{
	eb__node_complete(n, cb, 0);
	return 0;
}

void
eb__node_bus_stop(eb_node *n, eb__node_done_cb cb)
{
	eb__node_complete(n, cb, 0);
}
