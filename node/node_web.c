/*
 * The browser front (web/): SockJS and WebSocket on its own port
 * (conf->web, web.enabled), a front of the node's TCP bridge, so browser
 * clients share the bridge's permitted lists, token, TLS and bounds. Part
 * of the bridge step (node_bridge.c): opened once the bridge listens,
 * closed before it. web.enabled without bridge.enabled is a start error.
 */
#include <ebnode/log.h>
#include <ebnode/web.h>

#include "common/assert.h"
#include "node/node_int.h"

static void
node_web_closed_cb(eb_web *w, void *arg)
{
	eb__node_wait *wt = arg;

	(void) w;
	wt->n->web = NULL;
	eb__node_wait_done(wt);
}

static void
node_web_close(eb_node *n, eb__node_done_cb cb)
{
	eb_web_close(
	    n->web, node_web_closed_cb, eb__node_wait_new(n, cb, 0, 1));
}

int
eb__node_web_open(eb_node *n)
{
	eb_web_opts o;
	eb_errbuf   err = { { 0 } };
	int         rv;

	if (!n->conf->web_enabled) {
		return 0;
	}
	if (n->bridge == NULL) {
		EB_LOG_ERR("web", "start-failed: web.enabled needs "
		                  "bridge.enabled");
		return EB_ECONF;
	}
	eb__node_web_opts(n->conf, &o);
	if ((rv = eb_web_new(n->loop, n->bridge, &o, &err, &n->web)) != 0) {
		n->web = NULL;
	} else if ((rv = eb_web_start(n->web, &err)) != 0) {
		node_web_close(n, NULL); /* the bridge closes after it */
	}
	if (rv != 0) {
		EB_LOG_ERR("web", "start-failed: err=%s detail=\"%s\"",
		    eb_err_name(rv), err.msg);
		return rv;
	}
	return 0;
}

void
eb__node_web_stop(eb_node *n, eb__node_done_cb cb)
{
	EB_ASSERT(n->web != NULL);
	node_web_close(n, cb);
}
