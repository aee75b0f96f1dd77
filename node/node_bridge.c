/*
 * The bridge step (node_int.h): the TCP event-bus bridge on the node's bus
 * (its bound port in n->cluster.self). Loop thread only.
 */

#include <ebnode/bridge.h>
#include <ebnode/log.h>

#include "node/node_int.h"

static void
node_bridge_closed_cb(eb_bridge *b, void *arg)
{
	eb__node_wait *w = arg;

	(void) b;
	w->n->bridge = NULL;
	eb__node_wait_done(w);
}

static void
node_bridge_close(eb_node *n, eb__node_done_cb cb, int status)
{
	n->cluster.self.bridge_port = 0;
	eb_bridge_close(n->bridge, node_bridge_closed_cb,
	    eb__node_wait_new(n, cb, status, 1));
}

int
eb__node_bridge_start(eb_node *n, eb__node_done_cb cb)
{
	eb_bridge_opts o;
	eb_errbuf      err = { { 0 } };
	int            rv;

	if (!n->conf->bridge_enabled) {
		eb__node_complete(n, cb, 0);
		return 0;
	}
	eb__node_bridge_opts(n->conf, &o);
	rv = eb_bridge_new(n->loop, n->bus, &o, &err, &n->bridge);
	if (rv != 0) {
		EB_LOG_ERR("bridge", "start-failed: err=%s detail=\"%s\"",
		    eb_err_name(rv), err.msg);
		n->bridge = NULL;
		return rv;
	}
	rv = eb_bridge_start(n->bridge, &err);
	if (rv != 0) {
		EB_LOG_ERR("bridge", "start-failed: err=%s detail=\"%s\"",
		    eb_err_name(rv), err.msg);
		node_bridge_close(n, cb, rv);
		return 0;
	}
	n->cluster.self.bridge_port = eb_bridge_port(n->bridge);
	eb__node_complete(n, cb, 0);
	return 0;
}

void
eb__node_bridge_stop(eb_node *n, eb__node_done_cb cb)
{
	if (n->bridge == NULL) {
		eb__node_complete(n, cb, 0);
		return;
	}
	node_bridge_close(n, cb, 0);
}
