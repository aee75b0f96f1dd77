/*
 * The bridge step (node_int.h): the TCP event-bus bridge on the node's bus
 * (its bound port in n->cluster.self), with its browser front (node_web.c:
 * opened once the bridge listens, closed before it). Loop thread only.
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
	if ((rv = eb__node_web_open(n)) != 0) {
		node_bridge_close(n, cb, rv);
		return 0;
	}
	eb__node_complete(n, cb, 0);
	return 0;
}

/* The browser front is closed: now the bridge under it. */
static void
node_bridge_web_stopped(eb_node *n, int status)
{
	eb__node_done_cb cb = n->web_cb;

	(void) status;
	n->web_cb = NULL;
	node_bridge_close(n, cb, 0);
}

void
eb__node_bridge_stop(eb_node *n, eb__node_done_cb cb)
{
	if (n->web != NULL) {
		n->web_cb = cb;
		eb__node_web_stop(n, node_bridge_web_stopped);
		return;
	}
	if (n->bridge == NULL) {
		eb__node_complete(n, cb, 0);
		return;
	}
	node_bridge_close(n, cb, 0);
}
