/*
 * node wiring for the browser bridge (web/): a SockJS and WebSocket front
 * of the node's TCP bridge on its own port (conf->web, web.enabled), so
 * that browser clients share the bridge's permitted lists, token, TLS and
 * bounds. Part of the bridge step (node_bridge.c): opened once the bridge
 * listens, closed before it. web.enabled without bridge.enabled is a start
 * error.
 */
#include <stdlib.h>

#include <ebnode/log.h>
#include <ebnode/web.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "node/node_int.h"

typedef struct node_web_closing {
	eb_node         *n;
	eb__node_done_cb cb;
} node_web_closing;

static void
node_web_closed_cb(eb_web *w, void *arg)
{
	node_web_closing *nc = arg;
	eb_node          *n = nc->n;
	eb__node_done_cb  cb = nc->cb;

	(void) w;
	free(nc);
	n->web = NULL;
	if (cb != NULL) {
		cb(n, 0);
	}
}

static void
node_web_close(eb_node *n, eb__node_done_cb cb)
{
	node_web_closing *nc = eb__malloc(sizeof(*nc));

	nc->n = n;
	nc->cb = cb;
	n->web_port = 0;
	eb_web_close(n->web, node_web_closed_cb, nc);
}

int
eb__node_web_open(eb_node *n)
{
	eb_web_opts o;
	eb_errbuf   err = { { 0 } };
	int         rv;

	n->web_port = 0;
	if (!n->conf->web_enabled) {
		return 0;
	}
	if (n->bridge == NULL) {
		EB_LOG_ERR("web", "start-failed: web.enabled needs "
		                  "bridge.enabled");
		return EB_ECONF;
	}
	eb__node_web_opts(n->conf, &o);
	rv = eb_web_new(n->loop, n->bridge, &o, &err, &n->web);
	if (rv != 0) {
		EB_LOG_ERR("web", "start-failed: err=%s detail=\"%s\"",
		    eb_err_name(rv), err.msg);
		n->web = NULL;
		return rv;
	}
	rv = eb_web_start(n->web, &err);
	if (rv != 0) {
		EB_LOG_ERR("web", "start-failed: err=%s detail=\"%s\"",
		    eb_err_name(rv), err.msg);
		/* Closed on a later turn; the bridge closes after it. */
		node_web_close(n, NULL);
		return rv;
	}
	n->web_port = eb_web_port(n->web);
	return 0;
}

void
eb__node_web_stop(eb_node *n, eb__node_done_cb cb)
{
	EB_ASSERT(n->web != NULL);
	node_web_close(n, cb);
}
