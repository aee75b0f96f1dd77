/*
 * A second router for the gateway (issue 26, docs/VERTX.md section 7):
 * while the Java engine's election is led by a JVM, ingress that enters on
 * an ebnode node is forwarded to that JVM's ingress consumer instead of
 * ebnode's own router. The ingress knows nothing about Vert.x: the owner
 * (node/node_vertx.c) installs these ops, and the gateway asks route()
 * before each forward:
 *   OWN  - ebnode's router, as without the ops (held while no ebnode
 *          leader is reachable);
 *   EXT  - forward() to the external router;
 *   WAIT - nobody known to route: held (hold_ms, hold_max, the usual
 *          explicit failures), flushed by eb_ingress_kick() once route()
 *          says otherwise.
 * A forward that fails because its router went away (link down, no
 * handlers) is retried once through whatever route() says then, as for
 * ebnode's router. Loop thread only; ops and ctx outlive the ingress.
 */
#ifndef EB_INGRESS_INGRESS_EXT_H
#define EB_INGRESS_INGRESS_EXT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <ebnode/bus.h>
#include <ebnode/ingress.h>

typedef enum eb__ingress_route {
	EB__INGRESS_ROUTE_OWN = 0,
	EB__INGRESS_ROUTE_EXT = 1,
	EB__INGRESS_ROUTE_WAIT = 2
} eb__ingress_route;

typedef struct eb__ingress_ext_ops {
	eb__ingress_route (*route)(void *ctx);
	/* A request with body (JSON text) and headers (borrowed) to the
	 * external router: 0 and cb exactly once later (from the bus), or
	 * a negative error and no cb. */
	int (*forward)(void *ctx, const char *body, size_t len,
	    const json_t *headers, uint64_t timeout_ms, eb_bus_reply_cb cb,
	    void *arg);
} eb__ingress_ext_ops;

/* Installs ops (NULL: none, ebnode's router only), at any time before
 * close; forwards in flight keep their callbacks. */
void eb__ingress_set_ext(
    eb_ingress *in, const eb__ingress_ext_ops *ops, void *ctx);

/*
 * The router's confirmed sends with encoded headers: the signature of
 * eb_bus_send_confirmed_enc and eb_bus_publish_confirmed_enc (the calls it
 * uses unless told otherwise). The node installs the bus's unchecked ones
 * (eventbus/bus_trusted.h) for the stamped headers the router writes
 * itself; headers it cannot vouch for (a key with a NUL byte, which its
 * encoding would cut) still go through the public, checked calls. At any
 * time before close; NULL: the public calls.
 */
typedef int (*eb__ingress_enc_send_fn)(eb_bus *bus, const char *address,
    const char *body, size_t body_len, const char *headers_json,
    size_t headers_len, const eb_bus_send_opts *opts, eb_bus_receipt_cb cb,
    void *arg);
void eb__ingress_set_enc_sends(eb_ingress *in, eb__ingress_enc_send_fn send,
    eb__ingress_enc_send_fn publish);

/*
 * The gateway's taker of requests to the ingress address (the signature of
 * eventbus/bus_direct.h's eb__bus_direct_fn; ctx is the eb_ingress): 1 when
 * it forwards msg to the router at once and will answer through cb, as the
 * bus would have answered the requester (within timeout_ms); 0 when it
 * would not forward it at once (no leader reachable, messages waiting
 * before it, the window full, another router, closing), and the request
 * takes the bus's usual way to the gateway. The node installs it.
 */
int eb__ingress_take(void *ctx, eb_bus_msg *msg, uint64_t timeout_ms,
    eb_bus_reply_cb cb, void *arg);

#endif
