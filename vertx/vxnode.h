/*
 * This ebnode node as one node of a Vert.x 4.5 cluster (docs/VERTX.md): a
 * ZooKeeper session of its own (the cluster's settings), the membership
 * (member.c), the transport (net.c) and the routing between them and the
 * bus (eventbus/bus_ext.h): Vert.x nodes are ext nodes of the bus, so a
 * bridge client's send, request or publish reaches Java consumers as it
 * reaches other ebnode nodes, and frames from Java reach the bus's
 * consumers (bridge clients included); replies and failures go back to the
 * sender node, NO_HANDLERS included.
 *
 * A Vert.x node is offered to the bus only once it can answer this node
 * (it sent us a frame, or our NodeInfo has existed for a grace period: a
 * JVM drops its answers to a node its membership cache does not hold yet).
 *
 * Lifecycle: new (no I/O) -> start -> close(cb). close leaves gracefully:
 * the subscriptions are deleted (an engine leader's election child at
 * once, its ingress subscription when a successor has registered), the
 * node keeps serving for drain_ms, then the session closes (the NodeInfo
 * disappears at once) and the sockets close. The bus must outlive the
 * node (close it first).
 * Loop thread only.
 */
#ifndef EB_VERTX_VXNODE_H
#define EB_VERTX_VXNODE_H

#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include <ebnode/bus.h>
#include <ebnode/err.h>
#include <ebnode/vertx.h>

#include "zk/zk.h"

typedef struct eb__vx_node eb__vx_node; /* opaque */
typedef void (*eb__vx_node_close_cb)(eb__vx_node *v, void *arg);
/* An unrecoverable error while running (EB_EDUPADDR: the engine address is
 * taken in the Java engine's election). */
typedef void (*eb__vx_node_fail_cb)(eb__vx_node *v, int err, void *arg);

/* opts and zo are copied (zo's strings borrowed until start). 0 or
 * UV_EINVAL. */
int eb__vx_node_new(uv_loop_t *loop, eb_bus *bus, const eb_vertx_opts *opts,
    const eb__zk_opts *zo, eb__vx_node **vp);
/* Listens, opens the session, registers, attaches to the bus (the links
 * must be attached: eb_bus_cluster_attach). 0 or an error (detail in e);
 * close it either way. */
int eb__vx_node_start(eb__vx_node *v, eb_errbuf *e);
/* Set before start; cb may be NULL. */
void eb__vx_node_on_fail(eb__vx_node *v, eb__vx_node_fail_cb cb, void *arg);
/* The Vert.x node id and the bound cluster port (after start). */
const char *eb__vx_node_id(const eb__vx_node *v);
int         eb__vx_node_port(const eb__vx_node *v);
/*
 * The engine's ingress as seen from this node's gateway (migration mode,
 * docs/VERTX.md section 7): who routes what enters on this node now.
 *   OWN:  not in migration mode, or the engine leader is an ebnode node
 *         (this one or another: its NodeInfo metadata advertises the
 *         leader's engine address): ebnode's own router;
 *   JVM:  the leader is not an ebnode node and exactly one JVM consumes
 *         the engine ingress address (*node: its bus ext node id);
 *   WAIT: the leader is unknown, its consumer is not there yet, or two
 *         JVMs consume the address (a revoked leader still registered).
 */
enum { EB_VX_ROUTE_OWN = 0, EB_VX_ROUTE_JVM = 1, EB_VX_ROUTE_WAIT = 2 };
int eb__vx_node_ingress_route(eb__vx_node *v, uint32_t *node);
/* A request to the JVM that routes now (eb__bus_ext_request to its engine
 * ingress consumer): 0 and cb once later, or EB_ENOHANDLERS when route()
 * is no longer JVM (no cb). */
int eb__vx_node_ingress_forward(eb__vx_node *v, const char *body, size_t len,
    const json_t *headers, uint64_t timeout_ms, eb_bus_reply_cb cb, void *arg);
/* The route may have changed (a later call of route() may differ); cb
 * may be NULL. */
void eb__vx_node_on_route(eb__vx_node *v, void (*cb)(void *arg), void *arg);
/* Set before start: this node's own consumer of the engine ingress address
 * (the ingress gateway, set to the same address) is its only entry point:
 * the JVMs' registrations of that address are not offered to the bus's
 * round robin (the gateway forwards to the leader itself). */
void eb__vx_node_ingress_local(eb__vx_node *v, int on);

/* Exactly once; cb on a later turn, after the drain. */
void eb__vx_node_close(eb__vx_node *v, eb__vx_node_close_cb cb, void *arg);

#endif
