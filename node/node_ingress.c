/*
 * The ingress step (node_int.h): leader-routed ingress with the lease
 * check as its leader check. eb__node_ingress_leadership starts routing
 * when this node is elected and stops it synchronously on a revoke (rule
 * 5) or a release (rule 8). The gateway takes requests to the ingress
 * address straight from their senders where it can (bus_direct.h). Stop:
 * the bus stops handing them over, held messages are failed back to their
 * senders, then the ingress closes. Loop thread only.
 */
#include <ebnode/ingress.h>
#include <ebnode/log.h>

#include "eventbus/bus_direct.h"
#include "eventbus/bus_trusted.h"
#include "ingress/ingress_ext.h"
#include "node/node_int.h"

static int
leader_check_cb(void *arg)
{
	return eb__cluster_view_is_leader(arg) ? 1 : 0;
}

void
eb__node_ingress_leadership(eb__node *n, bool leader, int64_t epoch)
{
	int rv;

	if (n->ingress == NULL) {
		return;
	}
	if (!leader) {
		eb_ingress_unlead(n->ingress);
		return;
	}
	rv = eb_ingress_lead(n->ingress, (uint64_t) epoch);
	if (rv != 0) {
		EB_LOG_ERR("node", "ingress-lead-failed: epoch=%lld err=%s",
		    (long long) epoch, eb_err_name(rv));
	}
}

int
eb__node_ingress_start(eb__steps *s, eb__steps_done_cb cb)
{
	eb__node   *n = EB__NODE(s);
	eb_ingress *in;
	eb_errbuf   e;
	int         rv;

	rv = eb_ingress_new(n->loop, n->bus, &n->conf->ingress, &e, &in);
	if (rv != 0) {
		EB_LOG_ERR("node", "ingress-failed: err=%s detail=\"%s\"",
		    eb_err_name(rv), e.msg);
		return rv;
	}
	eb_ingress_set_leader_check(in, leader_check_cb, &n->cluster);
	/* The router's own stamped headers go unchecked (issue 25). */
	eb__ingress_set_enc_sends(in, eb__bus_send_confirmed_enc_trusted,
	    eb__bus_publish_confirmed_enc_trusted);
	if ((rv = eb_ingress_start(in)) != 0) {
		eb_ingress_close(in, NULL, NULL);
		return rv;
	}
	n->ingress = in;
	/* Requests of bridge clients (and any local requester) reach the
	 * gateway without a bus request of their own (issue 25). */
	eb__bus_direct_set(
	    n->bus, n->conf->ingress.address, eb__ingress_take, in);
	eb__steps_complete(&n->steps, cb, 0);
	return 0;
}

static void
ingress_closed_cb(eb_ingress *in, void *arg)
{
	(void) in;
	eb__steps_wait_done(arg);
}

void
eb__node_ingress_stop(eb__steps *s, eb__steps_done_cb cb)
{
	eb__node   *n = EB__NODE(s);
	eb_ingress *in = n->ingress;

	n->ingress = NULL; /* eb__node_ingress_leadership does nothing now */
	eb__bus_direct_set(n->bus, NULL, NULL, NULL);
	eb_ingress_close(
	    in, ingress_closed_cb, eb__steps_wait_new(&n->steps, cb, 0, 1));
}
