/*
 * Wiring of the event bus into the node: eb_bus_new() with eb_bus_opts from
 * conf->bus and the node id, eb_bus_close() on stop.
 *
 * Minimal version written by the bridge engineer (#5) so that ebnode runs a
 * local bus for the bridge; the owner of #4 may take this file over (remote
 * seam, clustered delivery).
 */
#include <stdlib.h>

#include <ebnode/bus.h>
#include <ebnode/log.h>

#include "common/alloc.h"
#include "node/node_int.h"

typedef struct node_bus_close {
	eb_node         *n;
	eb__node_done_cb cb;
} node_bus_close;

int
eb__node_bus_start(eb_node *n, eb__node_done_cb cb)
{
	eb_bus_opts o;
	int         rv;

	eb_bus_opts_init(&o);
	o.node_id = n->conf->node.id;
	o.request_timeout_ms = (uint64_t) n->conf->bus.request_timeout_ms;
	o.consumer_queue_max = (uint32_t) n->conf->bus.consumer_queue_max;
	rv = eb_bus_new(n->loop, &o, &n->bus);
	if (rv != 0) {
		EB_LOG_ERR("node", "bus-start-failed: err=%s", eb_err_name(rv));
		n->bus = NULL;
		return rv;
	}
	eb__node_complete(n, cb, 0);
	return 0;
}

static void
node_bus_closed_cb(eb_bus *bus, void *arg)
{
	node_bus_close  *nc = arg;
	eb_node         *n = nc->n;
	eb__node_done_cb cb = nc->cb;

	(void) bus;
	free(nc);
	n->bus = NULL;
	cb(n, 0);
}

void
eb__node_bus_stop(eb_node *n, eb__node_done_cb cb)
{
	node_bus_close *nc;

	if (n->bus == NULL) {
		eb__node_complete(n, cb, 0);
		return;
	}
	nc = eb__malloc(sizeof(*nc));
	nc->n = n;
	nc->cb = cb;
	eb_bus_close(n->bus, node_bus_closed_cb, nc);
}
