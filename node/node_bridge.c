/*
 * node wiring for the TCP event-bus bridge: creates the bridge from
 * conf->bridge (an eb_bridge_opts, eb__node_bridge_opts) on the node's bus
 * and loop, starts it (n->bridge_port is the bound port) and closes it on
 * stop.
 *
 * The browser front (node_web.c) belongs to this step: opened once the
 * bridge listens, closed before it.
 *
 * Secure default (conf derives it): bound to loopback, only the ingress
 * address inbound, nothing outbound.
 */
#include <stdlib.h>

#include <ebnode/bridge.h>
#include <ebnode/log.h>

#include "common/alloc.h"
#include "node/node_int.h"

typedef struct node_bridge_closing {
	eb_node         *n;
	eb__node_done_cb cb;
	int              status;
} node_bridge_closing;

static void
node_bridge_closed_cb(eb_bridge *b, void *arg)
{
	node_bridge_closing *nc = arg;
	eb_node             *n = nc->n;
	eb__node_done_cb     cb = nc->cb;
	int                  status = nc->status;

	(void) b;
	free(nc);
	n->bridge = NULL;
	cb(n, status);
}

static void
node_bridge_close(eb_node *n, eb__node_done_cb cb, int status)
{
	node_bridge_closing *nc = eb__malloc(sizeof(*nc));

	nc->n = n;
	nc->cb = cb;
	nc->status = status;
	n->bridge_port = 0;
	eb_bridge_close(n->bridge, node_bridge_closed_cb, nc);
}

int
eb__node_bridge_start(eb_node *n, eb__node_done_cb cb)
{
	eb_bridge_opts o;
	eb_errbuf      err = { { 0 } };
	int            rv;

	if (!n->conf->bridge_enabled) {
		n->bridge_port = 0;
		eb__node_complete(n, cb, 0);
		return 0;
	}
	if (n->bus == NULL) {
		EB_LOG_ERR("bridge", "start-failed: no bus");
		return EB_ECLOSED;
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
	n->bridge_port = eb_bridge_port(n->bridge);
	rv = eb__node_web_open(n);
	if (rv != 0) {
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
	if (n->bridge == NULL) {
		eb__node_complete(n, cb, 0);
		return;
	}
	if (n->web != NULL) {
		n->web_cb = cb;
		eb__node_web_stop(n, node_bridge_web_stopped);
		return;
	}
	node_bridge_close(n, cb, 0);
}
