/* Each subsystem's opts: its conf section copied whole plus what only the
 * node knows (ports: the caller). unit.node.wiring_test checks them. */
#include <ebnode/version.h>

#include "node/node_int.h"

void
eb__node_bus_opts(const eb_conf *c, eb_bus_opts *o)
{
	*o = c->bus;
	o->node_id = c->cluster.node_id;
}

void
eb__node_link_opts(const eb_conf *c, eb_link_opts *o)
{
	*o = c->link;
	o->node_id = c->cluster.node_id;
}

void
eb__node_bridge_opts(const eb_conf *c, eb_bridge_opts *o)
{
	*o = c->bridge;
}

void
eb__node_web_opts(const eb_conf *c, eb_web_opts *o)
{
	*o = c->web;
}

void
eb__node_ingress_opts(const eb_conf *c, eb_ingress_opts *o)
{
	*o = c->ingress;
}

void
eb__node_admin_opts(const eb_conf *c, eb__admin_opts *o)
{
	*o = c->admin;
}

void
eb__node_cluster_opts(const eb_conf *c, eb_cluster_opts *o)
{
	*o = c->cluster;
	o->version = EB_VERSION_STRING;
}
