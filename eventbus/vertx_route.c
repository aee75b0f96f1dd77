/*
 * Ext nodes (bus_ext.h; issue 26: Vert.x cluster members) as one more kind
 * of remote destination. The links' seam (remote.c) stays the bus's remote
 * context; this file swaps in a copy of its ops table in which forward,
 * fail, peer_name and interest send ext nodes (EB__BUS_EXT_NODE set) to
 * the ext ops and everything else to the links. The ext nodes' handler
 * counts go into remote.c's per-address tables (eb__bus_remote_interest),
 * so route_pick, publish, NO_HANDLERS and the pending requests' node field
 * treat them as peers: no change to the hot path.
 *
 * Invariants: bus->remote.ext is set exactly while the swapped table is
 * installed; detach restores the links' table, forgets every ext node's
 * interest and fails their pending requests, and must run before the bus
 * closes (the node stops the vertx part first). Loop thread only; the
 * state is owned by the bus from attach to detach.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include <ebnode/err.h>

#include "common/alloc.h"
#include "common/vec.h"
#include "eventbus/bus_ext.h"
#include "eventbus/eventbus_int.h"

typedef struct ext_state {
	const eb__bus_ext_ops    *ops;
	void                     *ctx;
	const eb__bus_remote_ops *inner; /* the links' */
	eb__bus_remote_ops        wrap;
} ext_state;

/* 1 for ebnode's own addresses (EB__BUS_OWN_PREFIX). */
static int
own_address(const char *address)
{
	return strncmp(address, EB__BUS_OWN_PREFIX, EB__BUS_OWN_PREFIX_LEN) ==
	       0;
}

static ext_state *
ext_of(void *remote_ctx)
{
	return eb__bus_remote_bus(remote_ctx)->remote.ext;
}

static int
w_forward(void *ctx, uint32_t node, eb_bus_msg *msg, int kind, uint64_t rid)
{
	ext_state *st = ext_of(ctx);

	if ((node & EB__BUS_EXT_NODE) == 0) {
		return st->inner->forward(ctx, node, msg, kind, rid);
	}
	if (rid != 0) {
		return EB_EPROTO; /* Vert.x has no delivery receipts */
	}
	return st->ops->forward(st->ctx, node, msg, kind);
}

static int
w_fail(void *ctx, uint32_t node, const char *reply_address, int status,
    eb_bus_failure_type type, int code, const char *message)
{
	ext_state *st = ext_of(ctx);

	if ((node & EB__BUS_EXT_NODE) == 0) {
		return st->inner->fail(
		    ctx, node, reply_address, status, type, code, message);
	}
	return st->ops->fail(
	    st->ctx, node, reply_address, status, type, code, message);
}

static const char *
w_peer_name(void *ctx, uint32_t node)
{
	ext_state *st = ext_of(ctx);

	if ((node & EB__BUS_EXT_NODE) == 0) {
		return st->inner->peer_name(ctx, node);
	}
	return st->ops->peer_name(st->ctx, node);
}

static void
w_interest(void *ctx, const char *address, uint32_t count)
{
	ext_state *st = ext_of(ctx);

	st->inner->interest(ctx, address, count);
	if (!own_address(address)) {
		st->ops->interest(st->ctx, address, count);
	}
}

int
eb__bus_ext_attach(eb_bus *bus, const eb__bus_ext_ops *ops, void *ctx)
{
	ext_state *st;

	if (bus == NULL || ops == NULL || bus->remote.ops == NULL) {
		return UV_EINVAL;
	}
	if (bus->remote.ext != NULL) {
		return UV_EBUSY;
	}
	st = eb__calloc(1, sizeof(*st));
	st->ops = ops;
	st->ctx = ctx;
	st->inner = bus->remote.ops;
	st->wrap = *st->inner;
	st->wrap.forward = w_forward;
	st->wrap.fail = w_fail;
	st->wrap.peer_name = w_peer_name;
	st->wrap.interest = w_interest;
	bus->remote.ext = st;
	bus->remote.ops = &st->wrap;
	/* The consumers registered before: advertise them now. */
	for (size_t i = 0; i < bus->addr.map.nbuckets; i++) {
		for (eb__hent *e = bus->addr.map.buckets[i]; e != NULL;
		     e = e->next) {
			eb__bus_addr *a =
			    EB_CONTAINER_OF(e, eb__bus_addr, hent);

			if (a->n_local > a->n_local_only &&
			    !own_address(a->address)) {
				ops->interest(ctx, a->address,
				    a->n_local - a->n_local_only);
			}
		}
	}
	return 0;
}

static void
collect_cb(void *arg, uint32_t node)
{
	if ((node & EB__BUS_EXT_NODE) != 0) {
		*(uint32_t *) eb__vec_push(arg) = node;
	}
}

/* Forgets node's interest in a (node 0: every ext node's); a may be
 * freed by the last removal. nodes is scratch space. */
static void
forget_addr(eb_bus *bus, eb__bus_addr *a, uint32_t node, eb__vec *nodes)
{
	eb__vec_clear(nodes);
	bus->remote.ops->each_node(bus->remote.ctx, a, collect_cb, nodes);
	/* a stays while another node's entry is left: only the last call
	 * may free it */
	for (size_t k = 0; k < nodes->len; k++) {
		uint32_t n = *(uint32_t *) eb__vec_at(nodes, k);

		if (node == 0 || n == node) {
			eb__bus_remote_interest(bus, a, n, 0);
		}
	}
}

/* Forgets node's interest everywhere (node 0: every ext node's). */
static void
forget(eb_bus *bus, uint32_t node)
{
	eb__vec nodes;

	eb__vec_init(&nodes, sizeof(uint32_t));
	for (size_t i = 0; i < bus->addr.map.nbuckets; i++) {
		eb__hent *e = bus->addr.map.buckets[i];

		while (e != NULL) {
			eb__hent     *next = e->next; /* a may go */
			eb__bus_addr *a =
			    EB_CONTAINER_OF(e, eb__bus_addr, hent);

			if (a->remote != NULL) {
				forget_addr(bus, a, node, &nodes);
			}
			e = next;
		}
	}
	eb__vec_free(&nodes);
}

/* Fails the requests in flight to node (0: to any ext node). */
static void
fail_pending(eb_bus *bus, uint32_t node, const char *text)
{
	eb__list *it;
	eb__list *tmp;

	EB_LIST_FOREACH (it, tmp, &bus->req.deadlines) {
		eb__bus_req *r = EB_CONTAINER_OF(it, eb__bus_req, link);

		if ((node == 0 && (r->node & EB__BUS_EXT_NODE) != 0) ||
		    (node != 0 && r->node == node)) {
			eb__bus_req_fail(
			    bus, r, EB_ELINKDOWN, EB_BUS_ERROR, -1, text);
		}
	}
}

void
eb__bus_ext_node_down(eb_bus *bus, uint32_t node, const char *text)
{
	if (bus->remote.ext == NULL || (node & EB__BUS_EXT_NODE) == 0) {
		return;
	}
	forget(bus, node);
	fail_pending(bus, node, text);
}

void
eb__bus_ext_detach(eb_bus *bus)
{
	ext_state *st = bus->remote.ext;

	if (st == NULL) {
		return;
	}
	forget(bus, 0);
	fail_pending(bus, 0, "Vert.x cluster membership stopped");
	bus->remote.ops = st->inner;
	bus->remote.ext = NULL;
	free(st);
}

void
eb__bus_ext_interest(
    eb_bus *bus, const char *address, uint32_t node, uint32_t count)
{
	eb__bus_addr *a;

	if (bus->remote.ext == NULL || (node & EB__BUS_EXT_NODE) == 0 ||
	    bus->life.closing || own_address(address)) {
		return;
	}
	a = count > 0 ? eb__bus_addr_get(bus, address)
	              : eb__bus_addr_find(bus, address);
	if (a != NULL) {
		eb__bus_remote_interest(bus, a, node, count);
	}
}

void
eb__bus_ext_deliver(eb_bus *bus, uint32_t node, const char *address,
    const char *reply, int publish, const char *body, size_t body_len,
    json_t *headers)
{
	eb_bus_msg *m;

	if (bus->remote.ext == NULL || bus->life.closing) {
		return;
	}
	m = eb__bus_msg_from_bytes(address, body, body_len, headers, !publish);
	if (!publish && reply != NULL && reply[0] != '\0') {
		eb__bus_msg_set_reply(bus, m, reply, node);
	}
	if (own_address(address)) {
		/* not to be taken from outside the cluster: nobody here */
		if (!publish && eb_bus_msg_reply_address(m) != NULL) {
			eb__bus_answer_fail(bus, m, EB_ENOHANDLERS,
			    EB_BUS_NO_HANDLERS, -1, NULL);
		} else {
			bus->stats.totals.dropped++;
		}
	} else {
		eb__bus_deliver_remote(bus, m, publish, NULL);
	}
	eb_bus_msg_release(m);
	eb__bus_wake(bus);
}

int
eb__bus_ext_reply(eb_bus *bus, uint32_t node, const char *reply_address,
    const char *own, const char *body, size_t body_len, json_t *headers)
{
	eb__bus_req *r = eb__bus_req_find(bus, reply_address);
	eb_bus_msg  *m;

	if (r == NULL) {
		bus->stats.totals.dropped++; /* timed out meanwhile */
		return UV_ENOENT;
	}
	m = eb__bus_msg_from_bytes(reply_address, body, body_len, headers, 1);
	if (own != NULL && own[0] != '\0') {
		eb__bus_msg_set_reply(bus, m, own, node);
	}
	eb__bus_req_reply(bus, r, m);
	eb_bus_msg_release(m);
	return 0;
}

int
eb__bus_ext_failed(eb_bus *bus, const char *reply_address, int status,
    eb_bus_failure_type type, int code, const char *message)
{
	eb__bus_req *r = eb__bus_req_find(bus, reply_address);

	if (r == NULL) {
		bus->stats.totals.dropped++;
		return UV_ENOENT;
	}
	eb__bus_req_fail(bus, r, status, type, code, message);
	return 0;
}

int
eb__bus_ext_request(eb_bus *bus, uint32_t node, const char *address,
    const char *body, size_t body_len, const json_t *headers,
    uint64_t timeout_ms, eb_bus_reply_cb cb, void *arg)
{
	ext_state   *st = bus->remote.ext;
	json_t      *h;
	eb_bus_msg  *m;
	eb__bus_req *r;
	int          rv;

	if (st == NULL || (node & EB__BUS_EXT_NODE) == 0 || cb == NULL ||
	    bus->life.closing) {
		return UV_EINVAL;
	}
	r = eb__bus_req_new(bus, address, timeout_ms, 0, cb, arg);
	if (r->resolved) {
		return 0; /* refused at the cap: failed, nothing sent */
	}
	h = headers != NULL ? json_deep_copy(headers) : json_object();
	m = eb__bus_msg_from_bytes(address, body, body_len, h, 1);
	json_decref(h);
	eb__bus_msg_set_reply(bus, m, r->reply_address, 0);
	r->node = node; /* fails at once if that node goes down */
	rv = st->ops->forward(st->ctx, node, m, EB__BUS_EXT_SEND);
	eb_bus_msg_release(m);
	if (rv != 0) {
		eb__bus_req_fail(bus, r, rv, EB_BUS_ERROR, -1, eb_strerror(rv));
	}
	return 0;
}

int
eb__bus_ext_pending(eb_bus *bus, const char *reply_address)
{
	return eb__bus_req_find(bus, reply_address) != NULL;
}
