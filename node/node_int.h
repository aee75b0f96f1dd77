/*
 * node: the composition root. One struct eb__node per process owns the loop's
 * top-level objects, starts them in order (node.c's step table: bus and
 * node links, ingress, bridge, admin, cluster; docs/NODE.md says why),
 * prints the READY line once every listener is up, and stops them in
 * reverse order on SIGTERM/SIGINT (a second signal forces the exit).
 *
 * Each subsystem's wiring lives in its own file; the eb__node_*_start/stop
 * functions below are eb__steps steps (common/steps.h has their contract;
 * a start that fails with EB_EDUPADDR exits with 3, any other with 1), and
 * reach the node with EB__NODE(s).
 *
 * A subsystem that hits an unrecoverable error at run time calls
 * eb__node_fail(n, err). Loop thread only; conf and loop are borrowed.
 */
#ifndef EB_NODE_NODE_INT_H
#define EB_NODE_NODE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include <ebnode/bridge.h>
#include <ebnode/bus.h>
#include <ebnode/err.h>

#include "bridge/bridge_admin.h"
#include "cluster/cluster_admin.h"
#include "common/defer.h"
#include "common/list.h"
#include "common/steps.h"
#include "conf/dynamic.h"
#include "ingress/ingress_admin.h"
#include "shared/host.h"

typedef struct eb__node eb__node;

/* The node whose step this is. */
#define EB__NODE(s) EB_CONTAINER_OF((s), eb__node, steps)

/* Exit codes of ebnode (main.c). */
#define EB_NODE_EXIT_OK      0
#define EB_NODE_EXIT_FATAL   1
#define EB_NODE_EXIT_USAGE   2 /* usage or configuration error */
#define EB_NODE_EXIT_DUPADDR 3 /* node address already in the cluster */

struct eb__node {
	uv_loop_t      *loop;  /* borrowed */
	const eb__conf *conf;  /* borrowed */
	eb__deferq      defer; /* node-level deferred calls */

	/* Subsystems, owned, filled by the wiring files. */
	eb_bus           *bus;     /* node_bus.c */
	eb_link_mgr      *links;   /* node_bus.c (clustered only) */
	eb_ingress       *ingress; /* node_ingress.c */
	eb_bridge        *bridge;  /* node_bridge.c */
	struct eb_web    *web;     /* node_bridge.c */
	eb__admin        *admin;   /* node_admin.c, and what it reads: */
	eb__bridge_admin  bridge_admin;
	eb__ingress_admin ingress_admin;
	/* node_admin.c: the dashboard's cluster view (web/cview.h). */
	struct eb__web_cview *cview;
	/* node_cluster.c: the eb_cluster object and what the admin routes
	 * read (cluster/cluster_admin.h). cluster.self holds the ports the
	 * start steps bound, which the member data advertises (0: disabled;
	 * READY shows -). */
	eb__cluster_view    cluster;
	bool                cluster_starting; /* eb_cluster_start pending */
	bool                cluster_leader;   /* as last told to the ingress */
	eb__steps_done_cb   cluster_cb;       /* the start or stop step */
	eb__conf_dyn       *config;           /* node_config.c */
	eb__shared_host    *shared;           /* node_cluster.c */
	struct eb__vx_node *vertx;            /* node_vertx.c (issue 26) */
	/* The local sources conf was loaded from (main.c; NULL: none), for
	 * the dynamic configuration's rebuilds (node_config.c). */
	const eb__conf_sources *src;

	/* Lifecycle (node.c only). */
	eb__steps   steps;
	int         exit_code;
	int         signals;  /* SIGTERM/SIGINT received */
	bool        forced;   /* second signal: main exits without cleanup */
	uint64_t    start_ms; /* monotonic, for the READY log line */
	uv_signal_t sigterm;
	uv_signal_t sigint;
	uv_timer_t  stop_timer; /* bounds a graceful stop */
	int         open_handles;
};

/* No I/O, no callbacks; 0 or a negative error. */
int eb__node_new(uv_loop_t *loop, const eb__conf *conf, eb__node **np);
/* Starts the node, runs the loop until it has stopped (every handle
 * closed, unless n->forced) and returns the process exit code. */
int eb__node_run(eb__node *n);
/* After eb__node_run() returned (not after a forced exit). */
void eb__node_free(eb__node *n);

/* An unrecoverable run-time error: logs it and stops the node gracefully;
 * the process exits with 3 for EB_EDUPADDR, else 1. */
void eb__node_fail(eb__node *n, int err);
/* Requests a graceful stop (as SIGTERM does); exit code 0. */
void eb__node_shutdown(eb__node *n);

/* node_opts.c: the opts of bus, links and cluster, their conf section
 * plus the run-time fields named there (the other subsystems take their
 * section as it is). */
void eb__node_bus_opts(const eb__conf *c, eb_bus_opts *o);
void eb__node_link_opts(const eb__conf *c, eb_link_opts *o);
/* The link protocol range this node announces and speaks: the build's
 * (EB_LINK_PROTOCOL_MIN..EB_LINK_PROTOCOL_VERSION), unless the test-only
 * environment variable EBNODE_TEST_LINK_PROTOCOLS="min..max" names
 * another (tests of the negotiation and of /health; docs/UPGRADING.md). */
void eb__node_link_range(int *proto_min, int *proto_max);
void eb__node_cluster_opts(const eb__conf *c, eb_cluster_opts *o);

/* The steps, in start order (node.c). */
int  eb__node_bus_start(eb__steps *s, eb__steps_done_cb cb);
void eb__node_bus_stop(eb__steps *s, eb__steps_done_cb cb);
int  eb__node_ingress_start(eb__steps *s, eb__steps_done_cb cb);
void eb__node_ingress_stop(eb__steps *s, eb__steps_done_cb cb);
int  eb__node_bridge_start(eb__steps *s, eb__steps_done_cb cb);
void eb__node_bridge_stop(eb__steps *s, eb__steps_done_cb cb);
int  eb__node_admin_start(eb__steps *s, eb__steps_done_cb cb);
void eb__node_admin_stop(eb__steps *s, eb__steps_done_cb cb);
int  eb__node_cluster_start(eb__steps *s, eb__steps_done_cb cb);
void eb__node_cluster_stop(eb__steps *s, eb__steps_done_cb cb);
/* node_vertx.c (issue 26), run by the cluster step: joins the Vert.x
 * cluster once this node's cluster runs (vertx.enabled; 0 otherwise);
 * on an error n->vertx may be set, and eb__node_vertx_down closes it.
 * down closes it (the drain included) and then calls done(n, status),
 * at once when there is nothing to close. */
int  eb__node_vertx_up(eb__node *n);
void eb__node_vertx_down(
    eb__node *n, void (*done)(eb__node *n, int status), int status);
/* A stop requested while the cluster step starts (ZooKeeper may be
 * unreachable for its whole bound) completes that start at once with
 * EB_ECANCELED, through the same path as its timeout. */
void eb__node_cluster_cancel_start(eb__steps *s);
/* Leadership changed (node_cluster.c): ingress routing starts or stops at
 * once. */
void eb__node_ingress_leadership(eb__node *n, bool leader, int64_t epoch);
/* node_config.c: the dynamic configuration applied to the subsystems
 * (created on first use; the cluster step starts and stops it). */
eb__conf_dyn *eb__node_config(eb__node *n);

#endif
