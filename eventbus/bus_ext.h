/*
 * One more kind of remote node for the bus (issue 26: Vert.x cluster
 * members, vertx/): the narrow interface through which a module outside
 * eventbus/ adds nodes the bus routes to like its linked ebnode peers,
 * without touching the hot path. Implemented by eventbus/vertx_route.c,
 * which wraps the remote seam of eb_bus_cluster_attach(): nodes whose id
 * has EB__BUS_EXT_NODE set go to the ext ops, every other node to the
 * links as before; the interest of the ext nodes lives in the same
 * per-address tables (remote.c), so the bus's round robin, publish
 * fan-out, NO_HANDLERS and pending-request bookkeeping apply unchanged.
 *
 * Loop thread only. Strings are borrowed for each call.
 */
#ifndef EB_EVENTBUS_BUS_EXT_H
#define EB_EVENTBUS_BUS_EXT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <ebnode/bus.h>

/* Set in every ext node id; the low bits are the ext module's. */
#define EB__BUS_EXT_NODE 0x80000000u

/* ebnode's own addresses (EB_INGRESS_LEADER_ADDRESS): they belong to one
 * ebnode cluster and never cross to ext nodes, which may be another
 * cluster's nodes. Their interest is not reported to the ext ops, an ext
 * node's interest in them is ignored, and an ext node's message to one
 * is answered NO_HANDLERS. */
#define EB__BUS_OWN_PREFIX     "__ebnode."
#define EB__BUS_OWN_PREFIX_LEN 9u

enum { EB__BUS_EXT_SEND = 1, EB__BUS_EXT_PUBLISH = 2, EB__BUS_EXT_REPLY = 3 };

typedef struct eb__bus_ext_ops {
	/* Delivers msg to node (kind EB__BUS_EXT_*; for a reply,
	 * eb_bus_msg_address(msg) is the requester's reply address). 0 or a
	 * negative error: the bus fails or drops, as for a link. */
	int (*forward)(void *ctx, uint32_t node, eb_bus_msg *msg, int kind);
	/* Answers node's request (reply_address) with a failure. */
	int (*fail)(void *ctx, uint32_t node, const char *reply_address,
	    int status, eb_bus_failure_type type, int code,
	    const char *message);
	/* The node's name (borrowed) or NULL. */
	const char *(*peer_name)(void *ctx, uint32_t node);
	/* This node's clustered handler count of address is count now. */
	void (*interest)(void *ctx, const char *address, uint32_t count);
} eb__bus_ext_ops;

/* Installs ops over the links' remote seam (eb_bus_cluster_attach must
 * have run). 0, UV_EINVAL (no links attached) or UV_EBUSY. The counts
 * already registered are reported through ops->interest at once. */
int eb__bus_ext_attach(eb_bus *bus, const eb__bus_ext_ops *ops, void *ctx);
/* Removes the ext nodes (their interest, their pending requests fail with
 * EB_ELINKDOWN) and the ops. */
void eb__bus_ext_detach(eb_bus *bus);

/* node (EB__BUS_EXT_NODE set) handles address count times now. */
void eb__bus_ext_interest(
    eb_bus *bus, const char *address, uint32_t node, uint32_t count);
/* node is unreachable: its interest is forgotten and the requests in
 * flight to it fail now with EB_ELINKDOWN and text. */
void eb__bus_ext_node_down(eb_bus *bus, uint32_t node, const char *text);

/* A message from node for this node's consumers: body is JSON text,
 * headers an object (held). reply (NULL or "": none) is node's reply
 * address; a request nobody here takes is answered NO_HANDLERS. */
void eb__bus_ext_deliver(eb_bus *bus, uint32_t node, const char *address,
    const char *reply, int publish, const char *body, size_t body_len,
    json_t *headers);
/* A reply from node to this node's request reply_address (own: node's
 * reply address when it asks back). 0, or UV_ENOENT when no request waits
 * (timed out meanwhile). */
int eb__bus_ext_reply(eb_bus *bus, uint32_t node, const char *reply_address,
    const char *own, const char *body, size_t body_len, json_t *headers);
/* A failure for this node's request reply_address. 0 or UV_ENOENT. */
int eb__bus_ext_failed(eb_bus *bus, const char *reply_address, int status,
    eb_bus_failure_type type, int code, const char *message);
/* A request from this node to one ext node (not round robin): the bus's
 * pending-request bookkeeping applies (timeout_ms, 0: the bus default;
 * the node's reply or failure resolves it; eb__bus_ext_node_down fails
 * it). body is JSON text, headers an object or NULL. cb runs exactly once,
 * from the bus, also when the forward fails at once. 0, or UV_EINVAL (no
 * ext ops, not an ext node, no cb). */
int eb__bus_ext_request(eb_bus *bus, uint32_t node, const char *address,
    const char *body, size_t body_len, const json_t *headers,
    uint64_t timeout_ms, eb_bus_reply_cb cb, void *arg);
/* 1 when reply_address is a request of this node still waiting. */
int eb__bus_ext_pending(eb_bus *bus, const char *reply_address);

#endif
