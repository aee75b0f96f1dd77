/*
 * The bridge step (node_int.h): the TCP event-bus bridge on the node's bus
 * (its bound port in n->cluster.self) and its browser front (web/: SockJS
 * and WebSocket on its own port, web.enabled), whose clients share the
 * bridge's permitted lists, token, TLS and bounds. The front opens once the
 * bridge listens and closes before it; web.enabled without bridge.enabled
 * is a start error. Loop thread only.
 */
#include <ebnode/bridge.h>
#include <ebnode/log.h>
#include <ebnode/web.h>

#include "node/node_int.h"

static void bridge_close(eb__node *n, eb__steps_wait *w);

static void
bridge_closed_cb(eb_bridge *b, void *arg)
{
	eb__steps_wait *w = arg;

	(void) b;
	EB__NODE(w->s)->bridge = NULL;
	eb__steps_wait_done(w);
}

static void
web_closed_cb(eb_web *web, void *arg)
{
	eb__steps_wait *w = arg;

	(void) web;
	EB__NODE(w->s)->web = NULL;
	bridge_close(EB__NODE(w->s), w);
}

/* The browser front first (if open), then the bridge; then w is done. */
static void
bridge_close(eb__node *n, eb__steps_wait *w)
{
	if (n->web != NULL) {
		eb_web_close(n->web, web_closed_cb, w);
		return;
	}
	n->cluster.self.bridge_port = 0;
	eb_bridge_close(n->bridge, bridge_closed_cb, w);
}

/* 0, or an error (logged); what was opened closes with the bridge. */
static int
web_open(eb__node *n)
{
	eb_errbuf err = { { 0 } };
	int       rv;

	if (!n->conf->web_enabled) {
		return 0;
	}
	if (n->bridge == NULL) {
		EB_LOG_ERR("web", "start-failed: web.enabled needs "
		                  "bridge.enabled");
		return EB_ECONF;
	}
	rv = eb_web_new(n->loop, n->bridge, &n->conf->web, &err, &n->web);
	if (rv != 0) {
		n->web = NULL;
	} else {
		rv = eb_web_start(n->web, &err);
	}
	if (rv != 0) {
		EB_LOG_ERR("web", "start-failed: err=%s detail=\"%s\"",
		    eb_err_name(rv), err.msg);
	}
	return rv;
}

int
eb__node_bridge_start(eb__steps *s, eb__steps_done_cb cb)
{
	eb__node *n = EB__NODE(s);
	eb_errbuf err = { { 0 } };
	int       rv;

	if (!n->conf->bridge_enabled) {
		eb__steps_complete(&n->steps, cb, 0);
		return 0;
	}
	rv = eb_bridge_new(n->loop, n->bus, &n->conf->bridge, &err, &n->bridge);
	if (rv != 0) {
		EB_LOG_ERR("bridge", "start-failed: err=%s detail=\"%s\"",
		    eb_err_name(rv), err.msg);
		n->bridge = NULL;
		return rv;
	}
	if ((rv = eb_bridge_start(n->bridge, &err)) != 0) {
		EB_LOG_ERR("bridge", "start-failed: err=%s detail=\"%s\"",
		    eb_err_name(rv), err.msg);
	} else {
		n->cluster.self.bridge_port = eb_bridge_port(n->bridge);
		rv = web_open(n);
	}
	if (rv != 0) {
		bridge_close(n, eb__steps_wait_new(&n->steps, cb, rv, 1));
		return 0;
	}
	eb__steps_complete(&n->steps, cb, 0);
	return 0;
}

void
eb__node_bridge_stop(eb__steps *s, eb__steps_done_cb cb)
{
	eb__node *n = EB__NODE(s);

	if (n->bridge == NULL) {
		eb__steps_complete(&n->steps, cb, 0);
		return;
	}
	bridge_close(n, eb__steps_wait_new(&n->steps, cb, 0, 1));
}
