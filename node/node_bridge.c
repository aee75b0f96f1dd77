/*
 * node wiring for the TCP event-bus bridge: maps the bridge.* configuration
 * onto eb_bridge_opts, creates the bridge on the node's bus and loop, starts
 * it (n->bridge_port is the bound port) and closes it on stop.
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

static eb_bridge_permitted *
permits(const eb_conf_permit *v, size_t n)
{
	eb_bridge_permitted *out;
	size_t               i;

	if (n == 0) {
		return NULL;
	}
	out = eb__calloc(n, sizeof(*out));
	for (i = 0; i < n; i++) {
		out[i].address = v[i].address;
		out[i].address_regex = v[i].address_regex;
	}
	return out;
}

static const char *
nonempty(const char *s)
{
	return (s != NULL && s[0] != '\0') ? s : NULL;
}

static void
node_bridge_opts(const eb_conf_bridge *c, eb_bridge_opts *o)
{
	eb_bridge_opts_init(o);
	o->host = c->listen;
	o->port = (int) c->port;
	o->max_frame_bytes = (uint32_t) c->max_frame_bytes;
	o->max_connections = (uint32_t) c->max_connections;
	o->write_queue_max_bytes = (size_t) c->write_queue_bytes;
	o->idle_timeout_ms = (uint64_t) c->idle_timeout_ms;
	o->reply_ttl_ms = (uint64_t) c->reply_ttl_ms;
	o->frame_timeout_ms = (uint64_t) c->frame_timeout_ms;
	o->first_frame_timeout_ms = (uint64_t) c->first_frame_timeout_ms;
	o->tls_handshake_timeout_ms = (uint64_t) c->tls_handshake_timeout_ms;
	o->input_budget_bytes = (size_t) c->input_budget_bytes;
	o->max_consumers_per_conn = (uint32_t) c->max_consumers_per_conn;
	o->max_requests_per_conn = (uint32_t) c->max_requests_per_conn;
	o->max_requests = (uint32_t) c->max_requests;
	o->max_request_timeout_ms = (uint64_t) c->max_request_timeout_ms;
	o->tls_cert = nonempty(c->tls_cert);
	o->tls_key = nonempty(c->tls_key);
	o->tls_ca = nonempty(c->tls_ca);
	switch (c->tls_client_auth) {
	case EB_CONF_CLIENT_AUTH_REQUEST:
		o->tls_client_auth = EB_BRIDGE_CLIENT_AUTH_REQUEST;
		break;
	case EB_CONF_CLIENT_AUTH_REQUIRED:
		o->tls_client_auth = EB_BRIDGE_CLIENT_AUTH_REQUIRED;
		break;
	default:
		o->tls_client_auth = EB_BRIDGE_CLIENT_AUTH_NONE;
		break;
	}
	o->auth_token = nonempty(c->auth_token);
	if (o->auth_token == NULL) {
		o->auth_mode = EB_BRIDGE_AUTH_OFF;
	} else if (c->auth_mode == EB_CONF_AUTH_FIRST) {
		o->auth_mode = EB_BRIDGE_AUTH_FIRST;
	} else {
		o->auth_mode = EB_BRIDGE_AUTH_EVERY;
	}
}

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
	const eb_conf_bridge *c = &n->conf->bridge;
	eb_bridge_opts        o;
	eb_bridge_permitted  *in;
	eb_bridge_permitted  *out;
	eb_errbuf             err = { { 0 } };
	int                   rv;

	if (!c->enabled) {
		n->bridge_port = 0;
		eb__node_complete(n, cb, 0);
		return 0;
	}
	if (n->bus == NULL) {
		EB_LOG_ERR("bridge", "start-failed: no bus");
		return EB_ECLOSED;
	}
	node_bridge_opts(c, &o);
	in = permits(c->inbound, c->n_inbound);
	out = permits(c->outbound, c->n_outbound);
	o.inbound = in;
	o.inbound_count = c->n_inbound;
	o.outbound = out;
	o.outbound_count = c->n_outbound;
	rv = eb_bridge_new(n->loop, n->bus, &o, &err, &n->bridge);
	free(in); /* the bridge copied the lists */
	free(out);
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
