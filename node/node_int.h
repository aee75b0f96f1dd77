/*
 * node: the composition root. One struct eb_node per process owns the loop's
 * top-level objects, starts them in order (node.c's step table: bus and
 * node links, ingress, bridge, admin, cluster; docs/NODE.md says why),
 * prints the READY line once every listener is up, and stops them in
 * reverse order on SIGTERM/SIGINT (a second signal forces the exit).
 *
 * Each subsystem's wiring lives in its own file; their contract (the
 * eb__node_*_start/stop functions below):
 *
 *   start(n, cb): returns 0 and then calls cb(n, status) exactly once on a
 *     later loop turn (eb__node_complete). status 0: the subsystem runs and
 *     holds its resources in n's slots; status < 0: it holds nothing
 *     (EB_EDUPADDR: exit code 3, anything else 1). A non-zero return means
 *     no callback and nothing held.
 *   stop(n, cb): only after a successful start, at most once; closes what
 *     the subsystem holds, then cb(n, 0) exactly once on a later turn.
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
#include "conf/dynamic.h"
#include "ingress/ingress_admin.h"
#include "shared/host.h"

typedef struct eb_node eb_node;

/* Completion of a start or stop step (the contract above). */
typedef void (*eb__node_done_cb)(eb_node *n, int status);

/* Exit codes of ebnode (main.c). */
#define EB_NODE_EXIT_OK      0
#define EB_NODE_EXIT_FATAL   1
#define EB_NODE_EXIT_USAGE   2 /* usage or configuration error */
#define EB_NODE_EXIT_DUPADDR 3 /* node address already in the cluster */

enum eb__node_phase {
	EB__NODE_NEW = 0,
	EB__NODE_STARTING,
	EB__NODE_RUNNING,
	EB__NODE_STOPPING,
	EB__NODE_DONE
};

struct eb_node {
	uv_loop_t     *loop;  /* borrowed */
	const eb_conf *conf;  /* borrowed */
	eb__deferq     defer; /* node-level deferred calls */

	/* Subsystems, owned, filled by the wiring files. */
	eb_bus           *bus;     /* node_bus.c */
	eb_link_mgr      *links;   /* node_bus.c (clustered only) */
	eb_ingress       *ingress; /* node_ingress.c */
	eb_bridge        *bridge;  /* node_bridge.c */
	struct eb_web    *web;     /* node_bridge.c */
	eb__admin        *admin;   /* node_admin.c, and what it reads: */
	eb__bridge_admin  bridge_admin;
	eb__ingress_admin ingress_admin;
	/* node_cluster.c: the eb_cluster object and what the admin routes
	 * read (cluster/cluster_admin.h). cluster.self holds the ports the
	 * start steps bound, which the member data advertises (0: disabled;
	 * READY shows -). */
	eb__cluster_view cluster;
	bool             cluster_starting; /* eb_cluster_start pending */
	bool             cluster_leader;   /* as last told to the ingress */
	eb__node_done_cb cluster_cb;       /* the start or stop step */
	eb__conf_dyn    *config;           /* node_config.c */
	eb__shared_host *shared;           /* node_cluster.c */
	/* The local sources conf was loaded from (main.c; NULL: none), for
	 * the dynamic configuration's rebuilds (node_config.c). */
	const eb_conf_sources *src;

	/* Lifecycle (node.c only). */
	int         phase;     /* enum eb__node_phase */
	unsigned    started;   /* number of steps started */
	bool        step_busy; /* a start or stop step is in flight */
	bool        stop_requested;
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
int eb__node_new(uv_loop_t *loop, const eb_conf *conf, eb_node **np);
/* Starts the node, runs the loop until it has stopped (every handle
 * closed, unless n->forced) and returns the process exit code. */
int eb__node_run(eb_node *n);
/* After eb__node_run() returned (not after a forced exit). */
void eb__node_free(eb_node *n);

/* Calls cb(n, status) on a later loop turn (for start/stop steps). */
void eb__node_complete(eb_node *n, eb__node_done_cb cb, int status);
/* Waits for `pending` close callbacks of a step, each of which calls
 * eb__node_wait_done; the last one frees it and calls cb(n, status)
 * (cb NULL: nothing). */
typedef struct eb__node_wait {
	eb_node         *n;
	eb__node_done_cb cb;
	int              status;
	int              pending;
} eb__node_wait;
eb__node_wait *eb__node_wait_new(
    eb_node *n, eb__node_done_cb cb, int status, int pending);
void eb__node_wait_done(eb__node_wait *w);
/* An unrecoverable run-time error: logs it and stops the node gracefully;
 * the process exits with 3 for EB_EDUPADDR, else 1. */
void eb__node_fail(eb_node *n, int err);
/* Requests a graceful stop (as SIGTERM does); exit code 0. */
void eb__node_shutdown(eb_node *n);

/* node_opts.c: each subsystem's opts, its conf section (the module's own
 * opts struct) plus the run-time fields named there. */
void eb__node_bus_opts(const eb_conf *c, eb_bus_opts *o);
void eb__node_link_opts(const eb_conf *c, eb_link_opts *o);
void eb__node_bridge_opts(const eb_conf *c, eb_bridge_opts *o);
void eb__node_ingress_opts(const eb_conf *c, eb_ingress_opts *o);
void eb__node_cluster_opts(const eb_conf *c, eb_cluster_opts *o);
void eb__node_admin_opts(const eb_conf *c, eb__admin_opts *o);
void eb__node_web_opts(const eb_conf *c, eb_web_opts *o);

/* The steps, in start order (node.c). */
int  eb__node_bus_start(eb_node *n, eb__node_done_cb cb);
void eb__node_bus_stop(eb_node *n, eb__node_done_cb cb);
int  eb__node_ingress_start(eb_node *n, eb__node_done_cb cb);
void eb__node_ingress_stop(eb_node *n, eb__node_done_cb cb);
int  eb__node_bridge_start(eb_node *n, eb__node_done_cb cb);
void eb__node_bridge_stop(eb_node *n, eb__node_done_cb cb);
int  eb__node_admin_start(eb_node *n, eb__node_done_cb cb);
void eb__node_admin_stop(eb_node *n, eb__node_done_cb cb);
int  eb__node_cluster_start(eb_node *n, eb__node_done_cb cb);
void eb__node_cluster_stop(eb_node *n, eb__node_done_cb cb);
/* A stop requested while the cluster step starts (ZooKeeper may be
 * unreachable for its whole bound) completes that start at once with
 * EB_ECANCELED, through the same path as its timeout. */
void eb__node_cluster_cancel_start(eb_node *n);
/* Leadership changed (node_cluster.c): ingress routing starts or stops at
 * once. */
void eb__node_ingress_leadership(eb_node *n, bool leader, int64_t epoch);
/* node_config.c: the dynamic configuration applied to the subsystems
 * (created on first use; the cluster step starts and stops it). */
eb__conf_dyn *eb__node_config(eb_node *n);

#endif
