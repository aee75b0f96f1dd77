/*
 * Observers of bridge connections for node-side services (shared data's
 * lock service releases the locks of a client whose connection closed).
 * Called once per connection, after its SOCKET_CLOSED hook, on the loop;
 * any number of observers. Requests from a bridge client to an address
 * starting with EB__BRIDGE_RESERVED_PREFIX carry the header
 * EB__BRIDGE_CONN_HEADER = the connection id in decimal (the client's own
 * value of that header is replaced), so that such a service knows which
 * connection asked.
 */
#ifndef EB_BRIDGE_BRIDGE_OBS_H
#define EB_BRIDGE_BRIDGE_OBS_H

#include <stdint.h>

#include <ebnode/bridge.h>

#define EB__BRIDGE_RESERVED_PREFIX "ebnode."
#define EB__BRIDGE_CONN_HEADER     "ebnode.conn"

typedef void (*eb__bridge_conn_closed_cb)(
    eb_bridge *b, uint64_t conn_id, void *arg);

void eb__bridge_on_conn_closed(
    eb_bridge *b, eb__bridge_conn_closed_cb cb, void *arg);
int eb__bridge_off_conn_closed(
    eb_bridge *b, eb__bridge_conn_closed_cb cb, void *arg);

#endif
