/*
 * The opts each subsystem gets from the configuration: the section conf
 * loaded, which is the module's own opts struct (conf/conf.h), copied
 * whole, plus only what the node knows at run time (the node id for the bus
 * and the links, the version for the cluster; ports are set by the caller).
 * No option is mapped by hand here: tests/unit/node/wiring_test.c checks
 * that every schema key arrives in these structs. Pure; any thread.
 */
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
eb__node_cluster_opts(const eb_conf *c, eb_cluster_opts *o)
{
	*o = c->cluster;
	o->version = EB_VERSION_STRING;
}
