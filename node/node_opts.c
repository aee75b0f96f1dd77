/* The opts of the subsystems that need more than their conf section (which
 * the others get as it is): the section copied whole plus what only the
 * node knows (ports: the caller). unit.node.wiring_test checks them. */
#include <stdlib.h>

#include <ebnode/link.h>
#include <ebnode/version.h>

#include "node/node_int.h"

void
eb__node_bus_opts(const eb__conf *c, eb_bus_opts *o)
{
	*o = c->bus;
	o->node_id = c->cluster.node_id;
}

void
eb__node_link_range(int *proto_min, int *proto_max)
{
	const char   *e = getenv("EBNODE_TEST_LINK_PROTOCOLS");
	char         *end = NULL;
	unsigned long lo = 0;
	unsigned long hi = 0;

	*proto_min = EB_LINK_PROTOCOL_MIN;
	*proto_max = EB_LINK_PROTOCOL_VERSION;
	if (e == NULL || e[0] == '\0') {
		return;
	}
	lo = strtoul(e, &end, 10);
	if (end[0] == '.' && end[1] == '.') {
		hi = strtoul(end + 2, &end, 10);
	}
	/* Anything malformed leaves the build's range. */
	if (end[0] == '\0' && lo >= 1 && lo <= hi && hi <= 65535) {
		*proto_min = (int) lo;
		*proto_max = (int) hi;
	}
}

void
eb__node_link_opts(const eb__conf *c, eb_link_opts *o)
{
	int lo;
	int hi;

	*o = c->link;
	o->node_id = c->cluster.node_id;
	eb__node_link_range(&lo, &hi);
	o->proto_min = (uint16_t) lo;
	o->proto_max = (uint16_t) hi;
}

void
eb__node_cluster_opts(const eb__conf *c, eb_cluster_opts *o)
{
	*o = c->cluster;
	o->version = EB_VERSION_STRING;
	eb__node_link_range(&o->link_min, &o->link_max);
}
