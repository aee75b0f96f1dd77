/*
 * The admin HTTP endpoint (GET /health, /nodes, /leader, /metrics, ...),
 * wired into the node.
 *
 * STUB: succeeds and does nothing (READY shows admin=-); the owner of #3
 * replaces this file.
 * TODO(#3): listen on conf->admin.listen:port, set n->admin_port.
 */
#include "node/node_int.h"

int
eb__node_admin_start(eb_node *n, eb__node_done_cb cb)
{
	eb__node_complete(n, cb, 0);
	return 0;
}

void
eb__node_admin_stop(eb_node *n, eb__node_done_cb cb)
{
	eb__node_complete(n, cb, 0);
}
