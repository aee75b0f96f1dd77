/*
 * The dynamic configuration in the node (conf/dynamic.h does the building,
 * refusing, SIGHUP and GET /config): each new eb__conf goes to the ingress
 * (route table, hold bounds, ack mode), the bridge (permitted lists) and
 * the log level; it follows the cluster's <root>/config while the cluster
 * step runs.
 * Loop thread only.
 */
#include <ebnode/bridge.h>
#include <ebnode/ingress.h>
#include <ebnode/log.h>

#include "common/assert.h"
#include "node/node_int.h"

/* Each swap is all or nothing; when the bridge refuses its lists after the
 * ingress took its table, the ingress gets the table in force back. */
static int
apply_cb(void *arg, const eb__conf *c, int64_t version, eb_errbuf *err)
{
	eb__node *n = arg;
	int       rv = 0;

	if (n->ingress != NULL) {
		rv = eb_ingress_reconfigure(
		    n->ingress, &c->ingress, (uint64_t) version, err);
		if (rv != 0) {
			return rv;
		}
	}
	if (n->bridge != NULL) {
		rv = eb_bridge_set_permitted(n->bridge, c->bridge.inbound,
		    c->bridge.inbound_count, c->bridge.outbound,
		    c->bridge.outbound_count, err);
	}
	if (rv != 0 && n->ingress != NULL) {
		/* conf compiled the same regexes: not expected */
		int back;

		back = eb_ingress_reconfigure(n->ingress,
		    &eb__conf_dyn_current(n->config)->ingress,
		    (uint64_t) eb__conf_dyn_version(n->config), NULL);
		EB_ASSERT(back == 0);
	}
	if (rv == 0) {
		eb_log_set_level(c->log.level);
	}
	return rv;
}

eb__conf_dyn *
eb__node_config(eb__node *n)
{
	if (n->config == NULL) {
		n->config = eb__conf_dyn_new(
		    n->conf, n->src, apply_cb, n, &n->cluster.degraded);
	}
	return n->config;
}
