/*
 * The dashboard's cluster view (cview.c): GET /cluster/metrics on the
 * admin endpoint answers the /metrics text of this node and of every other
 * member, which this node gathers itself over the node links: a bus
 * request to each member's internal address EB_WEB_CVIEW_PREFIX + node id,
 * answered there by the member's own cluster view from its admin
 * collectors. So the dashboard page talks only to the node that served it,
 * and the admin token never leaves that node: nothing is sent to a host or
 * port a member record names.
 *
 * Bounds: one bus request per other member (at most EB_WEB_CVIEW_MAX_PEERS)
 * with timeout_ms each, at most EB_WEB_CVIEW_MAX_GATHERS views in flight
 * (beyond: 503 busy); the admin connection waits within its own request
 * deadline. A request to the internal address from a bridge client (its
 * bridge stamps EB__BRIDGE_CONN_HEADER on "ebnode." addresses) is refused.
 *
 * Lifecycle: new, start (after the admin server and the bus exist), then
 * release before the admin server closes; the view is freed when the last
 * gather in flight has ended (the bus answers every request, at the latest
 * with EB_ECANCELED when it closes). Loop thread only.
 */
#ifndef EB_WEB_CVIEW_H
#define EB_WEB_CVIEW_H

#include <stddef.h>
#include <stdint.h>

#include <ebnode/bus.h>

#include "admin/admin.h"

#define EB_WEB_CVIEW_PREFIX      "ebnode.admin.metrics."
#define EB_WEB_CVIEW_MAX_PEERS   64
#define EB_WEB_CVIEW_MAX_GATHERS 8

typedef struct eb__web_cview eb__web_cview;

/* Fills ids with the node ids of the other members (at most max, borrowed
 * until the call returns) and returns how many. */
typedef size_t (*eb__web_peers_fn)(void *arg, const char **ids, size_t max);

typedef struct eb__web_cview_opts {
	eb_bus          *bus;        /* borrowed, outlives the view's gathers */
	const char      *self_id;    /* this node's id (copied) */
	eb__web_peers_fn peers;      /* NULL: this node only */
	void            *peers_arg;  /* borrowed */
	uint64_t         timeout_ms; /* per member; 0: 1000 */
	int              serve;      /* register the internal address */
} eb__web_cview_opts;

/* No I/O. 0 or UV_EINVAL. */
int eb__web_cview_new(const eb__web_cview_opts *o, eb__web_cview **out);
/* Registers GET /cluster/metrics on adm (borrowed until release) and, with
 * opts.serve, the consumer of this node's internal address. 0 or the bus
 * error (the route is registered either way). */
int eb__web_cview_start(eb__web_cview *v, eb__admin *adm);
/* Closes the consumer and forgets adm: gathers in flight end without an
 * answer. Frees v now, or when the last gather ends. Exactly once. */
void eb__web_cview_release(eb__web_cview *v);

#endif
