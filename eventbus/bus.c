/*
 * The bus object: construction, close, the idle handle that runs handlers
 * and reply callbacks, and routing of send, publish and request.
 *
 * Routing: a send (or request) picks one handler in the cluster, weighted
 * by handler count per node: the cursor a->rr runs over all handlers (local
 * ones first, then each interested node's count), so N sends to H handlers
 * reach each handler N/H +- 1 times. A local pick rotates the address's
 * consumer list; a remote pick is forwarded and the remote node rotates its
 * own. A publish queues one copy per local consumer and forwards one per
 * interested node. Without a remote seam (standalone) only local consumers
 * exist.
 *
 * Close: eb_bus_close() marks the bus closing (API calls then return
 * EB_ECLOSED; a second close is a programming error, EB_ASSERT); on the
 * next idle turn pending requests fail with
 * EB_ECANCELED exactly once, held messages are detached, the handles close
 * and the close callback runs last; then everything is freed.
 *
 * Loop thread only.
 */
#include <stdlib.h>
#include <string.h>

#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/util.h"
#include "eventbus/bus_direct.h"
#include "eventbus/bus_trusted.h"
#include "eventbus/eventbus_int.h"

const char *
eb_bus_failure_name(eb_bus_failure_type t)
{
	switch (t) {
	case EB_BUS_TIMEOUT:
		return "TIMEOUT";
	case EB_BUS_NO_HANDLERS:
		return "NO_HANDLERS";
	case EB_BUS_RECIPIENT_FAILURE:
		return "RECIPIENT_FAILURE";
	case EB_BUS_ERROR:
	default:
		return "ERROR";
	}
}

void
eb_bus_opts_init(eb_bus_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->request_timeout_ms = 30000;
	opts->consumer_queue_max = 10000;
	opts->receipt_timeout_ms = 5000;
	opts->max_pending_requests = 131072;
	opts->max_request_timeout_ms = 300000;
	opts->dedup_window_ms = 600000;
	opts->dedup_max_keys = 65536;
}

void
eb_bus_send_opts_init(eb_bus_send_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
}

static void bus_idle_cb(uv_idle_t *h);

int
eb_bus_new(uv_loop_t *loop, const eb_bus_opts *opts, eb_bus **busp)
{
	eb_bus_opts def;
	eb_bus     *bus;
	char        uuid[EB_UUID_STRLEN + 1];
	int         rv;

	if (loop == NULL || busp == NULL) {
		return UV_EINVAL;
	}
	if (opts == NULL) {
		eb_bus_opts_init(&def);
		opts = &def;
	}
	if (opts->request_timeout_ms == 0 || opts->consumer_queue_max == 0 ||
	    opts->receipt_timeout_ms == 0 || opts->max_pending_requests == 0 ||
	    opts->max_request_timeout_ms == 0) {
		return UV_EINVAL;
	}
	if (opts->node_id == NULL && (rv = eb__uuid(uuid)) != 0) {
		return rv;
	}
	bus = eb__calloc(1, sizeof(*bus));
	bus->loop = loop;
	bus->node_id = eb__strdup(opts->node_id != NULL ? opts->node_id : uuid);
	bus->req.timeout_ms = opts->request_timeout_ms;
	bus->flow.queue_max = opts->consumer_queue_max;
	bus->flow.q_high =
	    bus->flow.queue_max / 2 > 0 ? bus->flow.queue_max / 2 : 1;
	bus->flow.q_low = bus->flow.q_high / 2;
	bus->rcpt.timeout_ms = opts->receipt_timeout_ms;
	bus->req.max = opts->max_pending_requests;
	bus->req.max_timeout_ms = opts->max_request_timeout_ms;
	bus->msg.empty_headers = json_object();
	eb__hmap_init(&bus->addr.map);
	eb__imap_init(&bus->req.map);
	eb__list_init(&bus->req.deadlines);
	eb__list_init(&bus->req.ordered);
	eb__list_init(&bus->req.resolved);
	eb__list_init(&bus->turn.fifo);
	eb__list_init(&bus->msg.reply_msgs);
	eb__obs_init(&bus->addr.watchers);
	eb__obs_init(&bus->flow.observers);
	/* Both inits cannot fail on a live loop; they are the last steps. */
	(void) uv_idle_init(loop, &bus->turn.idle);
	(void) uv_timer_init(loop, &bus->req.timer);
	bus->turn.idle.data = bus;
	bus->req.timer.data = bus;
	eb__bus_rcpt_init(bus);
	eb__bus_dedup_init(bus, opts->dedup_window_ms, opts->dedup_max_keys);
	*busp = bus;
	return 0;
}

const char *
eb_bus_node_id(const eb_bus *bus)
{
	return bus->node_id;
}

void
eb__bus_wake(eb_bus *bus)
{
	if (!bus->turn.idle_active && !bus->life.shut) {
		bus->turn.idle_active = 1;
		(void) uv_idle_start(&bus->turn.idle, bus_idle_cb);
	}
}

static void
bus_free(eb_bus *bus)
{
	eb__bus_addr_free_all(bus);
	eb__bus_remote_free(bus);    /* after the records that point into it */
	eb__bus_qent_pool_free(bus); /* after the consumers gave theirs back */
	eb__bus_req_pool_free(bus);  /* after the last request was freed */
	json_decref(bus->msg.empty_headers); /* held messages keep their ref */
	eb__imap_free(&bus->req.map);
	eb__bus_rcpt_free_all(bus);
	eb__bus_dedup_free(bus);
	eb__obs_free(&bus->addr.watchers);
	eb__obs_free(&bus->flow.observers);
	free(bus->direct.address);
	free(bus->node_id);
	free(bus);
}

static void
bus_handle_closed_cb(uv_handle_t *h)
{
	eb_bus *bus = h->data;

	EB_ASSERT(bus->life.shut && bus->life.open_handles > 0);
	if (--bus->life.open_handles > 0) {
		return;
	}
	if (bus->life.close_cb != NULL) {
		bus->life.close_cb(bus, bus->life.close_arg);
	}
	bus_free(bus); /* nothing may touch bus after this line */
}

static void
bus_shutdown(eb_bus *bus)
{
	eb__list *it;

	EB_ASSERT(bus->life.closing && !bus->life.shut);
	bus->life.shut = 1;
	eb__bus_remote_detach(bus);
	(void) uv_idle_stop(&bus->turn.idle);
	(void) uv_timer_stop(&bus->req.timer);
	eb__bus_req_cancel_all(bus);
	eb__bus_rcpt_cancel_all(bus);
	/* Held messages outlive the bus: cut their way back to it. */
	while ((it = eb__list_first(&bus->msg.reply_msgs)) != NULL) {
		eb__bus_msg_detach(EB_CONTAINER_OF(it, eb_bus_msg, bus_link));
	}
	bus->life.open_handles = 3;
	uv_close((uv_handle_t *) &bus->turn.idle, bus_handle_closed_cb);
	uv_close((uv_handle_t *) &bus->req.timer, bus_handle_closed_cb);
	uv_close((uv_handle_t *) &bus->rcpt.timer, bus_handle_closed_cb);
}

void
eb_bus_close(eb_bus *bus, eb_bus_close_cb cb, void *arg)
{
	EB_ASSERT(!bus->life.closing);
	bus->life.closing = 1;
	bus->life.close_cb = cb;
	bus->life.close_arg = arg;
	bus->turn.idle_active = 1;
	(void) uv_idle_start(&bus->turn.idle, bus_idle_cb);
}

static void
bus_idle_cb(uv_idle_t *h)
{
	eb_bus *bus = h->data;

	bus->life.draining = 1;
	if (!bus->life.closing) {
		eb__bus_rcpt_run_done(bus);
	}
	if (!bus->life.closing) {
		/* Replies and deliveries together, in arrival order. */
		eb__bus_run_turn(bus);
	}
	bus->life.draining = 0;
	if (bus->life.closing) {
		bus_shutdown(bus);
		return;
	}
	if (eb__list_empty(&bus->turn.fifo) &&
	    eb__list_empty(&bus->rcpt.done)) {
		bus->turn.idle_active = 0;
		(void) uv_idle_stop(&bus->turn.idle);
	}
}

static int
route_check(eb_bus *bus, const char *address)
{
	if (bus == NULL || address == NULL || address[0] == '\0') {
		return UV_EINVAL;
	}
	return bus->life.closing ? EB_ECLOSED : 0;
}

/*
 * Picks the target of a point-to-point message: *cp a local consumer, or
 * *nodep a peer. Returns 0, or EB_ENOHANDLERS.
 */
static int
route_pick(eb_bus *bus, eb__bus_addr *a, int local_only, eb_bus_consumer **cp,
    uint32_t *nodep)
{
	uint64_t total;
	uint64_t i;

	*cp = NULL;
	*nodep = 0;
	if (a == NULL) {
		return EB_ENOHANDLERS;
	}
	total = a->n_local;
	if (!local_only && bus->remote.ops != NULL) {
		total += a->n_remote;
	}
	if (total == 0) {
		return EB_ENOHANDLERS;
	}
	i = a->rr++ % total;
	if (i < a->n_local) {
		*cp = eb__bus_consumer_pick(a, 0);
		return 0;
	}
	if (bus->remote.ops == NULL) {
		return EB_ENOHANDLERS; /* not reached: total counts local only
		                        */
	}
	*nodep = bus->remote.ops->pick(bus->remote.ctx, a, i - a->n_local);
	return *nodep != 0 ? 0 : EB_ENOHANDLERS;
}

/* Queues or forwards msg to its one target. 0, EB_ENOHANDLERS, EB_EFULL or
 * a link error. */
static int
route_send(eb_bus *bus, eb__bus_addr *a, eb_bus_msg *msg, int local_only,
    eb__bus_req *r)
{
	eb_bus_consumer *c;
	uint32_t         node;
	int              rv;

	if ((rv = route_pick(bus, a, local_only, &c, &node)) != 0) {
		return rv;
	}
	if (c != NULL) {
		return eb__bus_consumer_push(c, msg, NULL);
	}
	if (r != NULL) {
		r->node = node; /* fails at once if that link drops */
	}
	return bus->remote.ops->forward(
	    bus->remote.ctx, node, msg, EB__BUS_FWD_SEND, 0);
}

static int
send_prepare(eb_bus *bus, const char *address, const eb__bus_body *body,
    const json_t *headers, int is_send, eb_bus_msg **msgp)
{
	int rv;

	if ((rv = route_check(bus, address)) != 0) {
		return rv;
	}
	return eb__bus_msg_make(
	    address, body, headers, bus->msg.empty_headers, is_send, msgp);
}

/*
 * Like send_prepare for a send or request to one handler, and *ap the
 * address's record (NULL: none): where every handler is on another node,
 * the message is only written to a link before the call returns, so *msgp
 * may be a view of the caller's bytes (eb__bus_msg_point; issue 25: no
 * allocation and no copy of the body). End it with eb__bus_msg_done().
 */
static int
point_prepare(eb_bus *bus, const char *address, const eb__bus_body *body,
    const json_t *headers, const eb_bus_send_opts *opts, eb__bus_addr **ap,
    eb_bus_msg *view, eb_bus_msg **msgp)
{
	eb__bus_addr *a;
	int           rv;

	if ((rv = route_check(bus, address)) != 0) {
		return rv;
	}
	a = *ap = eb__bus_addr_find(bus, address);
	return eb__bus_msg_point(view,
	    a != NULL && a->n_local == 0 && bus->remote.ops != NULL &&
	        (opts == NULL || !opts->local_only),
	    address, body, headers, bus->msg.empty_headers, msgp);
}

static int
bus_send(eb_bus *bus, const char *address, const eb__bus_body *body,
    const json_t *headers, const eb_bus_send_opts *opts)
{
	eb_bus_msg   *msg;
	eb_bus_msg    view;
	eb__bus_addr *a;
	int           rv;

	rv = point_prepare(bus, address, body, headers, opts, &a, &view, &msg);
	if (rv != 0) {
		return rv;
	}
	msg->epoch = opts != NULL ? opts->epoch : 0;
	if (eb__bus_fence_stale(bus, msg->epoch)) {
		eb__bus_msg_done(msg);
		return EB_EFENCED;
	}
	rv = route_send(bus, a, msg, opts != NULL && opts->local_only, NULL);
	eb__bus_msg_done(msg);
	if (rv == EB_ENOHANDLERS) {
		bus->stats.no_handlers++;
		return rv;
	}
	bus->stats.totals.sent++;
	a->c.sent++;
	if (rv != 0 && rv != EB_EFULL) {
		/* The chosen peer's link failed under us: counted, like an
		 * overflow; the selector skips it from now on. */
		bus->stats.totals.dropped++;
		a->c.dropped++;
	}
	return rv;
}

int
eb_bus_send(eb_bus *bus, const char *address, const json_t *body,
    const json_t *headers, const eb_bus_send_opts *opts)
{
	eb__bus_body b = { body, NULL, 0, 0, NULL, 0 };

	return bus_send(bus, address, &b, headers, opts);
}

int
eb_bus_send_raw(eb_bus *bus, const char *address, const char *body,
    size_t body_len, const json_t *headers, const eb_bus_send_opts *opts)
{
	eb__bus_body b = eb__bus_raw_body(body, body_len, opts);

	return bus_send(bus, address, &b, headers, opts);
}

struct publish_ctx {
	eb_bus     *bus;
	eb_bus_msg *msg;
};

static void
publish_node_cb(void *fnarg, uint32_t node)
{
	struct publish_ctx *p = fnarg;

	if (p->bus->remote.ops->forward(p->bus->remote.ctx, node, p->msg,
	        EB__BUS_FWD_PUBLISH, 0) != 0) {
		p->bus->stats.totals.dropped++;
	}
}

static int
bus_publish(eb_bus *bus, const char *address, const eb__bus_body *body,
    const json_t *headers, const eb_bus_send_opts *opts)
{
	eb_bus_msg   *msg;
	eb__bus_addr *a;
	eb__list     *it;
	int           rv;

	if ((rv = send_prepare(bus, address, body, headers, 0, &msg)) != 0) {
		return rv;
	}
	msg->epoch = opts != NULL ? opts->epoch : 0;
	if (eb__bus_fence_stale(bus, msg->epoch)) {
		eb_bus_msg_release(msg);
		return EB_EFENCED;
	}
	bus->stats.totals.published++;
	a = eb__bus_addr_find(bus, address);
	if (a != NULL) {
		a->c.published++;
		for (it = a->consumers.next; it != &a->consumers;
		     it = it->next) {
			/* Overflow is counted per consumer in push. */
			(void) eb__bus_consumer_push(
			    EB_CONTAINER_OF(it, eb_bus_consumer, link), msg,
			    NULL);
		}
		if (bus->remote.ops != NULL && a->n_remote > 0 &&
		    !(opts != NULL && opts->local_only)) {
			struct publish_ctx p = { bus, msg };

			bus->remote.ops->each_node(
			    bus->remote.ctx, a, publish_node_cb, &p);
		}
	}
	eb_bus_msg_release(msg);
	return 0;
}

int
eb_bus_publish(eb_bus *bus, const char *address, const json_t *body,
    const json_t *headers, const eb_bus_send_opts *opts)
{
	eb__bus_body b = { body, NULL, 0, 0, NULL, 0 };

	return bus_publish(bus, address, &b, headers, opts);
}

int
eb_bus_publish_raw(eb_bus *bus, const char *address, const char *body,
    size_t body_len, const json_t *headers, const eb_bus_send_opts *opts)
{
	eb__bus_body b = eb__bus_raw_body(body, body_len, opts);

	return bus_publish(bus, address, &b, headers, opts);
}

void
eb__bus_direct_set(
    eb_bus *bus, const char *address, eb__bus_direct_fn fn, void *ctx)
{
	free(bus->direct.address);
	bus->direct.address = fn != NULL ? eb__strdup(address) : NULL;
	bus->direct.fn = fn;
	bus->direct.ctx = fn != NULL ? ctx : NULL;
}

/* 1 when the taker of the address (bus_direct.h) took the request: only
 * where it changes nothing a requester sees (no fencing stamp, and a
 * timeout the taker counts itself rather than a deadline); else 0, nothing
 * done. */
static int
direct_take(eb_bus *bus, eb__bus_addr *a, const char *address, eb_bus_msg *msg,
    const eb_bus_send_opts *opts, eb_bus_reply_cb cb, void *arg)
{
	eb_bus_consumer *c;

	if (strcmp(address, bus->direct.address) != 0 ||
	    (opts != NULL && (opts->epoch != 0 || opts->deadline_ms != 0))) {
		return 0;
	}
	if (a == NULL || a->n_local != 1 || a->n_remote != 0) {
		return 0;
	}
	c = EB_CONTAINER_OF(a->consumers.next, eb_bus_consumer, link);
	/* Nothing of an earlier sender waits for it, and it is not running:
	 * no message is overtaken, no handler re-entered. */
	if (c->qlen != 0 || c->paused || c->in_handler || c->closed ||
	    !bus->direct.fn(bus->direct.ctx, msg,
	        eb__bus_req_timeout(bus, opts != NULL ? opts->timeout_ms : 0),
	        cb, arg)) {
		return 0;
	}
	bus->stats.totals.sent++;
	a->c.sent++;
	bus->stats.totals.received++;
	a->c.received++;
	return 1;
}

static int
bus_request(eb_bus *bus, const char *address, const eb__bus_body *body,
    const json_t *headers, const eb_bus_send_opts *opts, eb_bus_reply_cb cb,
    void *arg)
{
	eb_bus_msg   *msg;
	eb_bus_msg    view;
	eb__bus_addr *a;
	eb__bus_req  *r;
	int           rv;

	if (cb == NULL) {
		return UV_EINVAL;
	}
	rv = point_prepare(bus, address, body, headers, opts, &a, &view, &msg);
	if (rv != 0) {
		return rv;
	}
	if (bus->direct.fn != NULL && !msg->view) {
		if (direct_take(bus, a, address, msg, opts, cb, arg)) {
			eb_bus_msg_release(msg);
			return 0;
		}
		/* The taker may have sent (and so changed the table). */
		a = eb__bus_addr_find(bus, address);
	}
	r = eb__bus_req_new(bus, address, opts != NULL ? opts->timeout_ms : 0,
	    opts != NULL ? opts->deadline_ms : 0, cb, arg);
	if (r->resolved) { /* refused at the cap: failed, nothing sent */
		eb__bus_msg_done(msg);
		return 0;
	}
	if (msg->view) {
		/* Borrowed: r outlives the view (resolved on a later turn). */
		msg->reply_address = r->reply_address;
	} else {
		eb__bus_msg_set_reply(bus, msg, r->reply_address, 0);
	}
	msg->epoch = opts != NULL ? opts->epoch : 0;
	if (eb__bus_fence_stale(bus, msg->epoch)) {
		eb__bus_answer_fail(bus, msg, EB_EFENCED, EB_BUS_ERROR, -1,
		    eb_strerror(EB_EFENCED));
		eb__bus_msg_done(msg);
		return 0;
	}
	rv = route_send(bus, a, msg, opts != NULL && opts->local_only, r);
	eb__bus_msg_done(msg);
	if (rv == EB_ENOHANDLERS) {
		bus->stats.no_handlers++;
		eb__bus_req_fail_no_handlers(bus, r);
		return 0;
	}
	bus->stats.totals.sent++;
	a->c.sent++;
	if (rv == EB_EFULL) {
		eb__bus_req_fail(
		    bus, r, EB_EFULL, EB_BUS_ERROR, -1, "consumer queue full");
	} else if (rv != 0) {
		eb__bus_req_fail(bus, r, rv, EB_BUS_ERROR, -1, eb_strerror(rv));
	}
	return 0;
}

int
eb_bus_request(eb_bus *bus, const char *address, const json_t *body,
    const json_t *headers, const eb_bus_send_opts *opts, eb_bus_reply_cb cb,
    void *arg)
{
	eb__bus_body b = { body, NULL, 0, 0, NULL, 0 };

	return bus_request(bus, address, &b, headers, opts, cb, arg);
}

int
eb_bus_request_raw(eb_bus *bus, const char *address, const char *body,
    size_t body_len, const json_t *headers, const eb_bus_send_opts *opts,
    eb_bus_reply_cb cb, void *arg)
{
	eb__bus_body b = eb__bus_raw_body(body, body_len, opts);

	return bus_request(bus, address, &b, headers, opts, cb, arg);
}

void
eb__bus_deliver_remote(
    eb_bus *bus, eb_bus_msg *msg, int publish, eb__bus_rcpt *rc)
{
	eb__bus_addr    *a = eb__bus_addr_find(bus, msg->address);
	eb_bus_consumer *c;
	eb__list        *it;
	int              rv;

	/* A keyed message this node delivered already is not delivered
	 * again (dedup.c); its receipt says so. */
	if (a != NULL && rc != NULL &&
	    (rv = eb__bus_dedup_admit(bus, msg, rc)) != 0) {
		eb__bus_rcpt_add_done(bus, rc, rv, NULL);
		return;
	}
	if (publish) {
		if (a == NULL) {
			return;
		}
		for (it = a->consumers.next; it != &a->consumers;
		     it = it->next) {
			c = EB_CONTAINER_OF(it, eb_bus_consumer, link);
			if (!c->local_only) {
				(void) eb__bus_consumer_push(c, msg, rc);
			}
		}
		return;
	}
	c = a != NULL ? eb__bus_consumer_pick(a, 1) : NULL;
	/* Sent before the peer heard our PRESSURE: within the grace. */
	bus->flow.push_grace = c != NULL && rc == NULL &&
	                       msg->reply_address == NULL && a->local_busy_told;
	rv = c != NULL ? eb__bus_consumer_push(c, msg, rc) : EB_ENOHANDLERS;
	bus->flow.push_grace = 0;
	if (rv == EB_ENOHANDLERS && rc != NULL) {
		eb__bus_rcpt_fail(rc, rv, NULL);
	}
	if (rv == 0 || msg->reply_address == NULL) {
		if (rv == EB_ENOHANDLERS) {
			bus->stats.totals
			    .dropped++; /* unregistered meanwhile */
		}
		return;
	}
	/* A request this node cannot take: answer at once (Vert.x would
	 * let it time out). */
	if (rv == EB_ENOHANDLERS) {
		eb__bus_answer_fail(bus, msg, rv, EB_BUS_NO_HANDLERS, -1, NULL);
	} else {
		eb__bus_answer_fail(
		    bus, msg, rv, EB_BUS_ERROR, -1, "consumer queue full");
	}
}

/* ---- confirmed send and publish (receipt.c tracks the outcome) ---- */

struct node_find {
	eb_bus     *bus;
	const char *name;
	uint32_t    node;
};

static void
node_find_cb(void *fnarg, uint32_t node)
{
	struct node_find *f = fnarg;
	const char       *name =
	    f->bus->remote.ops->peer_name(f->bus->remote.ctx, node);

	if (f->node == 0 && name != NULL && strcmp(name, f->name) == 0) {
		f->node = node;
	}
}

/* The target on the node named node_id (eb_bus_send_opts.node): a local
 * consumer or that peer. 0 or EB_ENOHANDLERS. */
static int
route_pick_node(eb_bus *bus, eb__bus_addr *a, const char *node_id,
    int local_only, eb_bus_consumer **cp, uint32_t *nodep)
{
	*cp = NULL;
	*nodep = 0;
	if (a == NULL) {
		return EB_ENOHANDLERS;
	}
	if (strcmp(node_id, bus->node_id) == 0) {
		/* The consumers other nodes know of (not local-only), as
		 * eb_bus_handler_nodes counts them. */
		*cp = eb__bus_consumer_pick(a, 1);
		return *cp != NULL ? 0 : EB_ENOHANDLERS;
	}
	if (!local_only && bus->remote.ops != NULL && a->n_remote > 0) {
		struct node_find f = { bus, node_id, 0 };

		bus->remote.ops->each_node(
		    bus->remote.ctx, a, node_find_cb, &f);
		*nodep = f.node;
	}
	return *nodep != 0 ? 0 : EB_ENOHANDLERS;
}

static void
confirmed_send(eb_bus *bus, eb__bus_addr *a, eb_bus_msg *msg, int local_only,
    const char *node_id, eb__bus_rcpt *rc)
{
	eb_bus_consumer *c;
	uint32_t         node;
	char             why[300];
	int              rv;

	rv = node_id != NULL
	         ? route_pick_node(bus, a, node_id, local_only, &c, &node)
	         : route_pick(bus, a, local_only, &c, &node);
	if (rv != 0) {
		bus->stats.no_handlers++;
		(void) snprintf(why, sizeof(why), "No handlers for address %s",
		    msg->address);
		eb__bus_rcpt_fail(rc, EB_ENOHANDLERS, why);
		return;
	}
	bus->stats.totals.sent++;
	a->c.sent++;
	if (c != NULL) {
		/* Delivered here: this node dedups it too (dedup.c). */
		if ((rv = eb__bus_dedup_admit(bus, msg, rc)) != 0) {
			eb__bus_rcpt_add_done(bus, rc, rv, NULL);
			return;
		}
		(void) eb__bus_consumer_push(c, msg, rc);
	} else {
		eb__bus_rcpt_forward(bus, rc, node, msg, EB__BUS_FWD_SEND);
	}
}

struct confirmed_pub {
	eb_bus       *bus;
	eb_bus_msg   *msg;
	eb__bus_rcpt *rc;
};

static void
confirmed_pub_node_cb(void *fnarg, uint32_t node)
{
	struct confirmed_pub *p = fnarg;

	eb__bus_rcpt_forward(p->bus, p->rc, node, p->msg, EB__BUS_FWD_PUBLISH);
}

static void
confirmed_publish(eb_bus *bus, eb__bus_addr *a, eb_bus_msg *msg, int local_only,
    eb__bus_rcpt *rc)
{
	eb__list *it;
	char      why[300];
	int       rv = 0;

	bus->stats.totals.published++;
	if (a != NULL) {
		a->c.published++;
		/* The local consumers are one node: deduplicated together. */
		if (a->n_local > 0 &&
		    (rv = eb__bus_dedup_admit(bus, msg, rc)) != 0) {
			eb__bus_rcpt_add_done(bus, rc, rv, NULL);
		}
		for (it = a->consumers.next; rv == 0 && it != &a->consumers;
		     it = it->next) {
			(void) eb__bus_consumer_push(
			    EB_CONTAINER_OF(it, eb_bus_consumer, link), msg,
			    rc);
		}
		if (bus->remote.ops != NULL && a->n_remote > 0 && !local_only) {
			struct confirmed_pub p = { bus, msg, rc };

			bus->remote.ops->each_node(
			    bus->remote.ctx, a, confirmed_pub_node_cb, &p);
		}
	}
	if (rc->targets == 0) {
		(void) snprintf(why, sizeof(why), "No handlers for address %s",
		    msg->address);
		eb__bus_rcpt_fail(rc, EB_ENOHANDLERS, why);
	}
}

static int
bus_confirmed(eb_bus *bus, const char *address, const eb__bus_body *b,
    const json_t *headers, const eb_bus_send_opts *opts, int publish,
    eb_bus_receipt_cb cb, void *arg)
{
	eb_bus_msg   *msg;
	eb_bus_msg    view;
	eb__bus_addr *a = NULL;
	eb__bus_rcpt *rc;
	int           local_only = opts != NULL && opts->local_only;
	int           rv;

	if (cb == NULL) {
		return UV_EINVAL;
	}
	if (publish) {
		rv = send_prepare(bus, address, b, headers, 0, &msg);
	} else {
		rv = point_prepare(
		    bus, address, b, headers, opts, &a, &view, &msg);
	}
	if (rv != 0) {
		return rv;
	}
	msg->epoch = opts != NULL ? opts->epoch : 0;
	rc = eb__bus_rcpt_new(bus, cb, arg);
	if (opts != NULL && opts->receipt_timeout_ms != 0) {
		rc->timeout_ms = opts->receipt_timeout_ms;
	}
	if (eb__bus_fence_stale(bus, msg->epoch)) {
		eb__bus_rcpt_fail(rc, EB_EFENCED, NULL);
	} else if (publish) {
		confirmed_publish(
		    bus, eb__bus_addr_find(bus, address), msg, local_only, rc);
	} else {
		confirmed_send(bus, a, msg, local_only,
		    opts != NULL ? opts->node : NULL, rc);
	}
	eb__bus_msg_done(msg);
	eb__bus_rcpt_seal(bus, rc);
	return 0;
}

int
eb_bus_send_confirmed(eb_bus *bus, const char *address, const json_t *body,
    const json_t *headers, const eb_bus_send_opts *opts, eb_bus_receipt_cb cb,
    void *arg)
{
	eb__bus_body b = { body, NULL, 0, 0, NULL, 0 };

	return bus_confirmed(bus, address, &b, headers, opts, 0, cb, arg);
}

int
eb_bus_publish_confirmed(eb_bus *bus, const char *address, const json_t *body,
    const json_t *headers, const eb_bus_send_opts *opts, eb_bus_receipt_cb cb,
    void *arg)
{
	eb__bus_body b = { body, NULL, 0, 0, NULL, 0 };

	return bus_confirmed(bus, address, &b, headers, opts, 1, cb, arg);
}

int
eb_bus_send_confirmed_raw(eb_bus *bus, const char *address, const char *body,
    size_t body_len, const json_t *headers, const eb_bus_send_opts *opts,
    eb_bus_receipt_cb cb, void *arg)
{
	eb__bus_body b = eb__bus_raw_body(body, body_len, opts);

	return bus_confirmed(bus, address, &b, headers, opts, 0, cb, arg);
}

/* The _raw body with encoded headers; UV_EINVAL when they are not an object
 * of strings with distinct keys (checked unless trusted: bus_trusted.h). */
static int
bus_confirmed_enc(eb_bus *bus, const char *address, const char *body,
    size_t body_len, const char *hdr, size_t hdr_len,
    const eb_bus_send_opts *opts, int publish, int trusted,
    eb_bus_receipt_cb cb, void *arg)
{
	eb__bus_body b = eb__bus_raw_body(body, body_len, opts);

	if (hdr == NULL ||
	    (!trusted && eb__bus_headers_enc_check(hdr, hdr_len) != 0)) {
		return UV_EINVAL;
	}
	b.hdr_enc = hdr;
	b.hdr_enc_len = hdr_len;
	return bus_confirmed(bus, address, &b, NULL, opts, publish, cb, arg);
}

int
eb_bus_send_confirmed_enc(eb_bus *bus, const char *address, const char *body,
    size_t body_len, const char *headers_json, size_t headers_len,
    const eb_bus_send_opts *opts, eb_bus_receipt_cb cb, void *arg)
{
	return bus_confirmed_enc(bus, address, body, body_len, headers_json,
	    headers_len, opts, 0, 0, cb, arg);
}

int
eb_bus_publish_confirmed_enc(eb_bus *bus, const char *address, const char *body,
    size_t body_len, const char *headers_json, size_t headers_len,
    const eb_bus_send_opts *opts, eb_bus_receipt_cb cb, void *arg)
{
	return bus_confirmed_enc(bus, address, body, body_len, headers_json,
	    headers_len, opts, 1, 0, cb, arg);
}

int
eb__bus_send_confirmed_enc_trusted(eb_bus *bus, const char *address,
    const char *body, size_t body_len, const char *headers_json,
    size_t headers_len, const eb_bus_send_opts *opts, eb_bus_receipt_cb cb,
    void *arg)
{
	return bus_confirmed_enc(bus, address, body, body_len, headers_json,
	    headers_len, opts, 0, 1, cb, arg);
}

int
eb__bus_publish_confirmed_enc_trusted(eb_bus *bus, const char *address,
    const char *body, size_t body_len, const char *headers_json,
    size_t headers_len, const eb_bus_send_opts *opts, eb_bus_receipt_cb cb,
    void *arg)
{
	return bus_confirmed_enc(bus, address, body, body_len, headers_json,
	    headers_len, opts, 1, 1, cb, arg);
}

int
eb_bus_publish_confirmed_raw(eb_bus *bus, const char *address, const char *body,
    size_t body_len, const json_t *headers, const eb_bus_send_opts *opts,
    eb_bus_receipt_cb cb, void *arg)
{
	eb__bus_body b = eb__bus_raw_body(body, body_len, opts);

	return bus_confirmed(bus, address, &b, headers, opts, 1, cb, arg);
}

struct node_names {
	eb_bus      *bus;
	const char **ids;
	size_t       max;
	size_t       n;
};

static void
node_names_cb(void *fnarg, uint32_t node)
{
	struct node_names *f = fnarg;
	const char        *name =
	    f->bus->remote.ops->peer_name(f->bus->remote.ctx, node);

	if (name != NULL) {
		if (f->n < f->max) {
			f->ids[f->n] = name;
		}
		f->n++;
	}
}

size_t
eb_bus_handler_nodes(
    eb_bus *bus, const char *address, const char **ids, size_t max)
{
	eb__bus_addr     *a = eb__bus_addr_find(bus, address);
	struct node_names f = { bus, ids, max, 0 };

	if (a == NULL) {
		return 0;
	}
	/* Local-only consumers are left out: every node must see the same
	 * set (the ingress hashes keys over it). */
	if (a->n_local > a->n_local_only) {
		if (f.n < max) {
			ids[f.n] = bus->node_id;
		}
		f.n++;
	}
	if (bus->remote.ops != NULL && a->n_remote > 0) {
		bus->remote.ops->each_node(
		    bus->remote.ctx, a, node_names_cb, &f);
	}
	return f.n;
}
