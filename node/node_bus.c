/*
 * Wiring of the event bus and the node links into the node (contract in
 * node_int.h).
 *
 * Start: the bus from conf->bus and the node id (eb__node_bus_opts).
 * Clustered (a ZooKeeper connect string is set) also a link manager from
 * conf->link, the cluster.* keys (eb__node_link_opts), attached
 * to the bus and listening, so that n->cluster_port is known before the
 * cluster step advertises it in the member znode. Standalone nodes have no
 * links (cluster_port 0).
 *
 * Members: node_cluster.c calls eb__node_bus_members() on every child-cache
 * event; the link manager is reconciled with the cache: every member with a
 * cluster port becomes a peer (host/port updated), and a peer the cache no
 * longer lists is removed, unless it is only known from its own inbound
 * link and that link is up (membership may lag behind the peer). A member
 * that disappears while another member of the same node id remains (a
 * re-registration after session expiry) keeps its link.
 *
 * Stop (last step): the links close, then the bus; cb after both.
 * Loop thread only.
 */
#include <stdlib.h>
#include <string.h>

#include <ebnode/bus.h>
#include <ebnode/link.h>
#include <ebnode/log.h>

#include "cluster/childcache.h"
#include "common/alloc.h"
#include "node/node_int.h"

typedef struct node_bus_close {
	eb_node         *n;
	eb__node_done_cb cb;
	int              pending; /* close callbacks still to come */
	int              status;  /* for cb: 0 (stop) or the start error */
} node_bus_close;

static void node_bus_close_all(eb_node *n, eb__node_done_cb cb, int status);

static int
links_new(eb_node *n)
{
	const eb_conf *c = n->conf;
	eb_link_opts   lo;
	eb_errbuf      e;
	int            rv;

	eb__node_link_opts(c, &lo);
	if (lo.dead_ms <= lo.heartbeat_ms) {
		/* A link must survive at least a couple of heartbeats. */
		EB_LOG_WARN("node",
		    "link-timeout-raised: link_timeout_ms=%u heartbeat_ms=%u "
		    "using=%u",
		    lo.dead_ms, lo.heartbeat_ms, lo.heartbeat_ms * 3);
		lo.dead_ms = lo.heartbeat_ms * 3;
	}
	rv = eb_link_mgr_new(n->loop, &lo, &n->links, &e);
	if (rv != 0) {
		EB_LOG_ERR("node", "links-failed: err=%s detail=%s",
		    eb_err_name(rv), e.msg);
		n->links = NULL;
		return rv;
	}
	if ((rv = eb_bus_cluster_attach(n->bus, n->links)) != 0 ||
	    (rv = eb_link_mgr_start(n->links)) != 0) {
		EB_LOG_ERR("node", "links-failed: listen=%s port=%d err=%s",
		    lo.host, lo.port, eb_err_name(rv));
		return rv;
	}
	n->cluster_port = eb_link_mgr_port(n->links);
	return 0;
}

int
eb__node_bus_start(eb_node *n, eb__node_done_cb cb)
{
	eb_bus_opts o;
	int         rv;

	eb__node_bus_opts(n->conf, &o);
	rv = eb_bus_new(n->loop, &o, &n->bus);
	if (rv != 0) {
		EB_LOG_ERR("node", "bus-start-failed: err=%s", eb_err_name(rv));
		n->bus = NULL;
		return rv;
	}
	if (n->conf->cluster.connect[0] != '\0' && (rv = links_new(n)) != 0) {
		/* A failed start holds nothing: close what exists, then
		 * report (on a later turn, from the close callbacks). */
		n->cluster_port = 0;
		node_bus_close_all(n, cb, rv);
		return 0;
	}
	eb__node_complete(n, cb, 0);
	return 0;
}

/* ---- membership -> peers ---- */

/* Two live members with one node id and different addresses are two
 * processes configured with the same node.id: links (keyed by node id)
 * would reach only one of them. Say so. (One id with one address is a
 * re-registration after a session expiry: the newest member wins.) */
static void
members_check_one(const eb_childcache *cc, size_t i)
{
	const eb_member *a = eb__childcache_at(cc, i);
	size_t           j;

	for (j = i + 1; j < eb__childcache_count(cc); j++) {
		const eb_member *b = eb__childcache_at(cc, j);

		if (strcmp(a->node_id, b->node_id) != 0 ||
		    strcmp(a->address, b->address) == 0) {
			continue;
		}
		EB_LOG_ERR("node", "duplicate-node-id: id=%s addresses=%s,%s",
		    a->node_id, a->address, b->address);
	}
}

static void
members_check_ids(const eb_childcache *cc)
{
	size_t i;

	for (i = 0; i < eb__childcache_count(cc); i++) {
		members_check_one(cc, i);
	}
}

void
eb__node_bus_members(eb_node *n, const eb_childcache *cc)
{
	size_t        count = eb__childcache_count(cc);
	eb_link_peer *peers;
	size_t        i;

	if (n->links == NULL) {
		return;
	}
	members_check_ids(cc);
	/* In sequence order: for one node id the newest member wins. */
	peers = eb__calloc(count + 1, sizeof(*peers));
	for (i = 0; i < count; i++) {
		const eb_member *m = eb__childcache_at(cc, i);

		peers[i].node_id = m->node_id;
		peers[i].host = m->host;
		peers[i].port = m->cluster_port;
	}
	(void) eb_link_mgr_set_peers(n->links, peers, count);
	free(peers);
}

/* ---- stop ---- */

static void
stop_step_done(node_bus_close *nc)
{
	eb_node         *n = nc->n;
	eb__node_done_cb cb = nc->cb;

	int status = nc->status;

	if (--nc->pending > 0) {
		return;
	}
	free(nc);
	cb(n, status);
}

static void
links_closed_cb(eb_link_mgr *m, void *arg)
{
	node_bus_close *nc = arg;

	(void) m;
	nc->n->links = NULL;
	stop_step_done(nc);
}

static void
node_bus_closed_cb(eb_bus *bus, void *arg)
{
	node_bus_close *nc = arg;

	(void) bus;
	nc->n->bus = NULL;
	stop_step_done(nc);
}

static void
node_bus_close_all(eb_node *n, eb__node_done_cb cb, int status)
{
	node_bus_close *nc = eb__calloc(1, sizeof(*nc));

	nc->n = n;
	nc->cb = cb;
	nc->status = status;
	nc->pending = (n->bus != NULL) + (n->links != NULL);
	/* Links first: peers see this node's interest vanish at once. */
	if (n->links != NULL) {
		eb_link_mgr_close(n->links, links_closed_cb, nc);
	}
	if (n->bus != NULL) {
		eb_bus_close(n->bus, node_bus_closed_cb, nc);
	}
}

void
eb__node_bus_stop(eb_node *n, eb__node_done_cb cb)
{
	if (n->bus == NULL && n->links == NULL) {
		eb__node_complete(n, cb, 0);
		return;
	}
	node_bus_close_all(n, cb, 0);
}
