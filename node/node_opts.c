/* The opts of the subsystems that need more than their conf section (which
 * the others get as it is): the section copied whole plus what only the
 * node knows (ports: the caller). unit.node.wiring_test checks them. */
#include <ebnode/version.h>

#include "node/node_int.h"

void
eb__node_bus_opts(const eb__conf *c, eb_bus_opts *o)
{
	*o = c->bus;
	o->node_id = c->cluster.node_id;
}

void
eb__node_link_opts(const eb__conf *c, eb_link_opts *o)
{
	*o = c->link;
	o->node_id = c->cluster.node_id;
}

void
eb__node_cluster_opts(const eb__conf *c, eb_cluster_opts *o)
{
	*o = c->cluster;
	o->version = EB_VERSION_STRING;
}
