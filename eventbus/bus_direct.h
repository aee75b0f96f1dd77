/*
 * Requests a module takes straight from the requester (issue 25): the
 * ingress gateway is one consumer on one address, and every request a
 * bridge client sends it used to cross the bus twice on the entry node (a
 * request to the gateway, then the gateway's own request to the leader),
 * each with its reply address, table entry, deadline, queue entry and
 * loop turn. With a taker installed for that address, bus_request() hands
 * the message and the requester's callback to the taker instead, when
 * doing so changes nothing a requester can see:
 *   - the address has exactly one handler, a local consumer, with nothing
 *     queued, not paused and not running (so no earlier message to it is
 *     overtaken, and the taker is not re-entered from its own handler);
 *   - the request carries no fencing epoch.
 * The taker may still decline (returns 0); the request then takes the
 * usual path, unchanged. A taker that takes it (returns 1) holds msg if it
 * needs it, and must call cb exactly once, later (never from inside the
 * call), as the bus would: 0 and the reply (one that expects no answer:
 * eb_bus_msg_plain), or a status and failure; timeout_ms is the request's
 * timeout as the bus would apply it (the default for 0, clamped). The bus
 * counts the request as sent to and received at the address.
 *
 * Not public API: the node installs the ingress gateway's taker
 * (eb__ingress_take, ingress/ingress_ext.h). Loop thread only.
 */
#ifndef EB_EVENTBUS_BUS_DIRECT_H
#define EB_EVENTBUS_BUS_DIRECT_H

#include <stdint.h>

#include <ebnode/bus.h>

typedef int (*eb__bus_direct_fn)(void *ctx, eb_bus_msg *msg,
    uint64_t timeout_ms, eb_bus_reply_cb cb, void *arg);

/* Installs fn for address (copied), replacing any; fn NULL removes it. */
void eb__bus_direct_set(
    eb_bus *bus, const char *address, eb__bus_direct_fn fn, void *ctx);

#endif
