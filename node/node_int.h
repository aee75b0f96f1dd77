/*
 * node: the composition root. One struct eb_node per process owns the loop's
 * top-level objects (bus, bridge, ZooKeeper session, membership, election,
 * admin endpoint, ingress router), starts them in order, prints the READY
 * line once every listener is up, and stops them in reverse order on
 * SIGTERM/SIGINT (a second signal forces the exit).
 *
 * Start order: bus (+ node links), ingress, bridge, admin, cluster (the
 * eb_cluster object: ZooKeeper, membership, election). The listeners come
 * first because the member znode advertises their ports, and the ingress
 * before the cluster so that it hears the first election; the cluster step
 * comes last so that a duplicate node address fails the start before READY
 * is printed. Stop order is the reverse: cluster first, so that a leader
 * hands over ingress at once (DESIGN rule 8).
 *
 * Each subsystem's wiring lives in its own file, owned by that subsystem's
 * engineer: node_bus.c, node_bridge.c, node_cluster.c, node_admin.c. Their
 * contract (the eb__node_*_start/stop functions below):
 *
 *   start(n, cb): returns 0 and then calls cb(n, status) exactly once on a
 *     later loop turn (never from inside start; use eb__node_complete()).
 *     status 0: the subsystem runs and holds its resources in n's slots.
 *     status < 0: it did not start and holds nothing (it cleaned up);
 *     EB_EDUPADDR makes ebnode exit with code 3, anything else with 1.
 *     A non-zero return means no callback and nothing held.
 *   stop(n, cb): called only after a successful start, at most once;
 *     closes everything the subsystem holds and then calls cb(n, 0) exactly
 *     once on a later loop turn. Asynchronous work (a leader's hand-over,
 *     draining connections) finishes before cb.
 *
 * A subsystem that hits an unrecoverable error at run time calls
 * eb__node_fail(n, err) instead of exiting.
 *
 * Threads: loop thread only. Ownership: conf is borrowed (main owns it and
 * frees it after the loop ended); the loop is borrowed.
 */
#ifndef EB_NODE_NODE_INT_H
#define EB_NODE_NODE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include <ebnode/bridge.h>
#include <ebnode/bus.h>
#include <ebnode/err.h>

#include "common/defer.h"
#include "conf/conf.h"

typedef struct eb_node eb_node;

/* Completion of a start or stop step; see the contract above. */
typedef void (*eb__node_done_cb)(eb_node *n, int status);

/* Exit codes of ebnode (main.c). */
#define EB_NODE_EXIT_OK      0
#define EB_NODE_EXIT_FATAL   1
#define EB_NODE_EXIT_USAGE   2 /* usage or configuration error */
#define EB_NODE_EXIT_DUPADDR 3 /* node address already in the cluster */

/* Subsystems the node owns; each wiring file defines its own struct. */
struct eb__node_cluster;
struct eb__node_admin;
struct eb__node_ingress;
struct eb__node_shared;

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

	/* Subsystem slots, filled by the wiring files. */
	eb_bus                  *bus;     /* owned, node_bus.c */
	eb_link_mgr             *links;   /* owned, node_bus.c (clustered) */
	eb_bridge               *bridge;  /* owned, node_bridge.c */
	struct eb__node_cluster *cluster; /* owned, node_cluster.c: the
	                                     eb_cluster object */
	struct eb__node_admin   *admin;   /* owned, node_admin.c */
	struct eb__node_ingress *ingress; /* owned, the ingress wiring */
	struct eb__node_shared  *shared;  /* owned, node_shared.c */

	/* Bound ports, set by the start steps; 0: disabled (READY shows -). */
	int admin_port;
	int bridge_port;
	int cluster_port;

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

/*
 * Creates a node (no I/O, no callbacks). conf and loop are borrowed and must
 * outlive it. Returns 0 or a negative error.
 */
int eb__node_new(uv_loop_t *loop, const eb_conf *conf, eb_node **np);
/*
 * Starts the node, runs the loop until the node has stopped (every handle
 * closed, unless n->forced) and returns the process exit code.
 */
int eb__node_run(eb_node *n);
/* Frees the node after eb__node_run() returned (not after a forced exit). */
void eb__node_free(eb_node *n);
/* Maps a start error to an exit code (EB_EDUPADDR -> 3, else 1). */
int eb__node_exit_code(int err);

/* Calls cb(n, status) on a later loop turn (for start/stop steps). */
void eb__node_complete(eb_node *n, eb__node_done_cb cb, int status);
/*
 * An unrecoverable run-time error (e.g. the node address was taken while
 * the session was being re-created): logs it and stops the node
 * gracefully; the process exits with eb__node_exit_code(err).
 */
void eb__node_fail(eb_node *n, int err);
/* Requests a graceful stop (as SIGTERM does); exit code 0. */
void eb__node_shutdown(eb_node *n);

/* ---- subsystem wiring (one file each, owned by that subsystem) -------- */

/*
 * node_opts.c: the opts each subsystem is created with, copied from the
 * section of conf that is that module's own opts struct, plus the run-time
 * fields named there. The start steps below use them.
 */
void eb__node_bus_opts(const eb_conf *c, eb_bus_opts *o);
void eb__node_link_opts(const eb_conf *c, eb_link_opts *o);
void eb__node_bridge_opts(const eb_conf *c, eb_bridge_opts *o);
void eb__node_ingress_opts(const eb_conf *c, eb_ingress_opts *o);
void eb__node_cluster_opts(const eb_conf *c, eb_cluster_opts *o);

/* node_bus.c: the event bus and the node links. */
int  eb__node_bus_start(eb_node *n, eb__node_done_cb cb);
void eb__node_bus_stop(eb_node *n, eb__node_done_cb cb);
/* node_bridge.c: the TCP event-bus bridge (TODO(#5)). */
int  eb__node_bridge_start(eb_node *n, eb__node_done_cb cb);
void eb__node_bridge_stop(eb_node *n, eb__node_done_cb cb);
/* node_ingress.c: leader-routed ingress (gateway + leader router). */
int  eb__node_ingress_start(eb_node *n, eb__node_done_cb cb);
void eb__node_ingress_stop(eb_node *n, eb__node_done_cb cb);
/* The node's ingress object (NULL before the ingress step), for admin. */
struct eb_ingress *eb__node_ingress(eb_node *n);
/* node_admin.c: the admin endpoint (the admin/ server and its routes). */
int  eb__node_admin_start(eb_node *n, eb__node_done_cb cb);
void eb__node_admin_stop(eb_node *n, eb__node_done_cb cb);
/* node_cluster.c: the cluster object (ebnode/cluster.h). */
int  eb__node_cluster_start(eb_node *n, eb__node_done_cb cb);
void eb__node_cluster_stop(eb_node *n, eb__node_done_cb cb);
/* A stop was requested while the cluster step starts (ZooKeeper may be
 * unreachable for its whole bound): finish that start now with
 * EB_ECANCELED, through the same path as its timeout. */
void eb__node_cluster_cancel_start(eb_node *n);

#endif
