/*
 * The confirmed sends with encoded headers (eb_bus_send_confirmed_enc,
 * eb_bus_publish_confirmed_enc) without the check of the headers, for a
 * caller that wrote them itself (issue 25: the check was about 880
 * instructions of the leader's 8 000 per ingress message). Not public API:
 * the node hands these to the ingress router (eb__ingress_set_enc_sends in
 * ingress/ingress_ext.h), which writes its stamped headers from a header
 * object as a compact object of strings with distinct keys and uses the
 * checked calls for the rare headers it cannot vouch for. Bytes that are
 * not such an object would reach the receivers as they are: any other
 * caller uses the public, checked calls.
 *
 * Loop thread only; the same arguments, results and callbacks as the
 * public calls, but for UV_EINVAL on bad headers (only NULL ones).
 */
#ifndef EB_EVENTBUS_BUS_TRUSTED_H
#define EB_EVENTBUS_BUS_TRUSTED_H

#include <stddef.h>

#include <ebnode/bus.h>

int eb__bus_send_confirmed_enc_trusted(eb_bus *bus, const char *address,
    const char *body, size_t body_len, const char *headers_json,
    size_t headers_len, const eb_bus_send_opts *opts, eb_bus_receipt_cb cb,
    void *arg);
int eb__bus_publish_confirmed_enc_trusted(eb_bus *bus, const char *address,
    const char *body, size_t body_len, const char *headers_json,
    size_t headers_len, const eb_bus_send_opts *opts, eb_bus_receipt_cb cb,
    void *arg);

#endif
