/*
 * Wiring of leader-routed ingress into the node (contract in node_int.h).
 *
 * Start (after the bus, before the bridge and the cluster): the ingress
 * object from conf->ingress (an eb_ingress_opts with its routes,
 * eb__node_ingress_opts), its gateway registered on the bus, the
 * election's lease check as its leader check; the cluster wiring's
 * leadership observer calls eb__node_ingress_leadership, which starts
 * routing when this node is elected and stops it synchronously when
 * leadership is revoked (rule 5) or released on shutdown (rule 8).
 * Standalone nodes are elected with epoch 1 by the cluster step.
 *
 * Stop: routing stops, held messages are failed back to their senders
 * (never dropped silently), then the ingress closes.
 * Loop thread only.
 */
#include <stdlib.h>
#include <string.h>

#include <ebnode/ingress.h>
#include <ebnode/log.h>

#include "common/alloc.h"
#include "node/node_int.h"

struct eb__node_ingress {
	eb_ingress      *in; /* owned */
	eb_node         *n;  /* borrowed */
	eb__node_done_cb stop_cb;
};

static int
leader_check_cb(void *arg)
{
	return eb__cluster_view_is_leader(arg) ? 1 : 0;
}

void
eb__node_ingress_leadership(eb_node *n, bool leader, int64_t epoch)
{
	eb_ingress *in = eb__node_ingress(n);
	int         rv;

	if (in == NULL) {
		return;
	}
	if (!leader) {
		eb_ingress_unlead(in);
		return;
	}
	rv = eb_ingress_lead(in, (uint64_t) epoch);
	if (rv != 0) {
		EB_LOG_ERR("node", "ingress-lead-failed: epoch=%lld err=%s",
		    (long long) epoch, eb_err_name(rv));
	}
}

int
eb__node_ingress_start(eb_node *n, eb__node_done_cb cb)
{
	struct eb__node_ingress *ni;
	eb_ingress_opts          o;
	eb_errbuf                e;
	int                      rv;

	eb__node_ingress_opts(n->conf, &o);
	ni = eb__calloc(1, sizeof(*ni));
	ni->n = n;
	rv = eb_ingress_new(n->loop, n->bus, &o, &e, &ni->in);
	if (rv != 0) {
		EB_LOG_ERR("node", "ingress-failed: err=%s detail=\"%s\"",
		    eb_err_name(rv), e.msg);
		free(ni);
		return rv;
	}
	eb_ingress_set_leader_check(ni->in, leader_check_cb, &n->cluster);
	if ((rv = eb_ingress_start(ni->in)) != 0) {
		eb_ingress_close(ni->in, NULL, NULL);
		free(ni);
		return rv;
	}
	n->ingress = ni;
	eb__node_complete(n, cb, 0);
	return 0;
}

static void
ingress_closed_cb(eb_ingress *in, void *arg)
{
	struct eb__node_ingress *ni = arg;
	eb_node                 *n = ni->n;
	eb__node_done_cb         cb = ni->stop_cb;

	(void) in;
	n->ingress = NULL;
	free(ni);
	cb(n, 0);
}

void
eb__node_ingress_stop(eb_node *n, eb__node_done_cb cb)
{
	struct eb__node_ingress *ni = n->ingress;
	eb_ingress              *in = ni->in;

	ni->stop_cb = cb;
	ni->in = NULL; /* eb__node_ingress_leadership does nothing from now */
	eb_ingress_close(in, ingress_closed_cb, ni);
}

eb_ingress *
eb__node_ingress(eb_node *n)
{
	return n->ingress != NULL ? n->ingress->in : NULL;
}
