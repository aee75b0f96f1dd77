/*
 * The bus step (node_int.h): the event bus, and when clustered (a
 * ZooKeeper connect string is set) a link manager attached to it and
 * listening, so that the cluster step can advertise its port;
 * node_cluster.c feeds it the member list. Stop (last step): the links
 * close, then the bus. Loop thread only.
 */
#include <ebnode/bus.h>
#include <ebnode/link.h>
#include <ebnode/log.h>

#include "node/node_int.h"

static void
links_closed_cb(eb_link_mgr *m, void *arg)
{
	eb__steps_wait *w = arg;

	(void) m;
	EB__NODE(w->s)->links = NULL;
	eb__steps_wait_done(w);
}

static void
bus_closed_cb(eb_bus *bus, void *arg)
{
	eb__steps_wait *w = arg;

	(void) bus;
	EB__NODE(w->s)->bus = NULL;
	eb__steps_wait_done(w);
}

static void
bus_close_all(eb__node *n, eb__steps_done_cb cb, int status)
{
	eb__steps_wait *w = eb__steps_wait_new(
	    &n->steps, cb, status, (n->bus != NULL) + (n->links != NULL));

	/* Links first: peers see this node's interest vanish at once. */
	if (n->links != NULL) {
		eb_link_mgr_close(n->links, links_closed_cb, w);
	}
	if (n->bus != NULL) {
		eb_bus_close(n->bus, bus_closed_cb, w);
	}
}

static int
links_new(eb__node *n)
{
	const eb__conf *c = n->conf;
	eb_link_opts    lo;
	eb_errbuf       e;
	int             rv;

	eb__node_link_opts(c, &lo);
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
	n->cluster.self.cluster_port = eb_link_mgr_port(n->links);
	return 0;
}

int
eb__node_bus_start(eb__steps *s, eb__steps_done_cb cb)
{
	eb__node   *n = EB__NODE(s);
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
		bus_close_all(n, cb, rv);
		return 0;
	}
	eb__steps_complete(&n->steps, cb, 0);
	return 0;
}

void
eb__node_bus_stop(eb__steps *s, eb__steps_done_cb cb)
{
	eb__node *n = EB__NODE(s);

	bus_close_all(n, cb, 0);
}
