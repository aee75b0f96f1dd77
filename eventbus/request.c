/*
 * Requests and replies: the pending-request table (keyed by reply address),
 * capped node-wide (eb_bus_opts.max_pending_requests), the deadlines behind
 * one timer (a list for those that come in order, O(1); a min-heap for the
 * others, O(log n); timeouts clamped to eb_bus_opts.max_request_timeout_ms),
 * resolution (reply, failure, timeout, cancel; exactly once) and
 * eb_bus_msg_reply()/eb_bus_msg_fail().
 *
 * A resolved request leaves the table at once, so a second or late reply
 * finds nothing (counted as dropped); its callback runs from the idle
 * handle, never from inside the call that resolved it.
 *
 * Loop thread only.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/dec.h"
#include "eventbus/eventbus_int.h"

/* ---- the deadline heap ---- */

static int
heap_less(const eb__bus_req *a, const eb__bus_req *b)
{
	return a->deadline < b->deadline ||
	       (a->deadline == b->deadline && a->seq < b->seq);
}

static void
heap_set(eb__bus_reqheap *h, size_t i, eb__bus_req *r)
{
	h->v[i] = r;
	r->hidx = i;
}

/* Moves the request at i towards the root while it beats its parent. */
static void
heap_up(eb__bus_reqheap *h, size_t i)
{
	eb__bus_req *r = h->v[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!heap_less(r, h->v[parent])) {
			break;
		}
		heap_set(h, i, h->v[parent]);
		i = parent;
	}
	heap_set(h, i, r);
}

/* Moves the request at i towards the leaves while a child beats it. */
static void
heap_down(eb__bus_reqheap *h, size_t i)
{
	eb__bus_req *r = h->v[i];

	for (;;) {
		size_t l = 2 * i + 1;
		size_t m;

		if (l >= h->n) {
			break;
		}
		m = l + 1 < h->n && heap_less(h->v[l + 1], h->v[l]) ? l + 1 : l;
		if (!heap_less(h->v[m], r)) {
			break;
		}
		heap_set(h, i, h->v[m]);
		i = m;
	}
	heap_set(h, i, r);
}

void
eb__bus_reqheap_push(eb__bus_reqheap *h, eb__bus_req *r)
{
	if (h->n == h->cap) {
		h->cap = h->cap == 0 ? 64 : h->cap * 2;
		h->v = eb__realloc(h->v, h->cap * sizeof(eb__bus_req *));
	}
	heap_set(h, h->n++, r);
	heap_up(h, h->n - 1);
}

void
eb__bus_reqheap_remove(eb__bus_reqheap *h, eb__bus_req *r)
{
	size_t       i = r->hidx;
	eb__bus_req *last;

	if (i >= h->n || h->v[i] != r) {
		abort(); /* a programmer error: r is not in this heap */
	}
	last = h->v[--h->n];
	if (last != r) {
		/* The last one fills the hole; it may belong above or below. */
		heap_set(h, i, last);
		if (i > 0 && heap_less(last, h->v[(i - 1) / 2])) {
			heap_up(h, i);
		} else {
			heap_down(h, i);
		}
	}
	/* Give memory back after a burst (the cap bounds the peak). */
	if (h->cap > 64 && h->n < h->cap / 4) {
		h->cap /= 2;
		h->v = eb__realloc(h->v, h->cap * sizeof(eb__bus_req *));
	}
}

eb__bus_req *
eb__bus_reqheap_min(const eb__bus_reqheap *h)
{
	return h->n > 0 ? h->v[0] : NULL;
}

void
eb__bus_reqheap_free(eb__bus_reqheap *h)
{
	free(h->v);
	h->v = NULL;
	h->n = 0;
	h->cap = 0;
}

/*
 * ---- the deadlines: an ordered list and the heap ----
 *
 * A request whose deadline is no earlier than the last one's on
 * bus->req.ordered goes to that list's tail, in and out in O(1): with one
 * timeout for all (the ingress gateway's forwards), every request does, and
 * they are mostly answered in the order they were made (issue 25: the
 * heap's removal of its first entry was 150 instructions per message on the
 * follower). Any other goes to the heap. The first deadline is the earlier
 * of the two firsts.
 */
static void
deadline_add(eb_bus *bus, eb__bus_req *r)
{
	eb__list *last = bus->req.ordered.prev;

	if (eb__list_empty(&bus->req.ordered) ||
	    !heap_less(r, EB_CONTAINER_OF(last, eb__bus_req, olink))) {
		r->hidx = EB__REQ_ORDERED;
		eb__list_insert_tail(&bus->req.ordered, &r->olink);
	} else {
		eb__bus_reqheap_push(&bus->req.heap, r);
	}
}

static void
deadline_del(eb_bus *bus, eb__bus_req *r)
{
	if (r->hidx == EB__REQ_ORDERED) {
		eb__list_remove(&r->olink);
	} else {
		eb__bus_reqheap_remove(&bus->req.heap, r);
	}
}

static eb__bus_req *
deadline_first(eb_bus *bus)
{
	eb__bus_req *h = eb__bus_reqheap_min(&bus->req.heap);
	eb__bus_req *o;

	if (eb__list_empty(&bus->req.ordered)) {
		return h;
	}
	o = EB_CONTAINER_OF(bus->req.ordered.next, eb__bus_req, olink);
	return h != NULL && heap_less(h, o) ? h : o;
}

/* ---- requests ---- */

/* Fails r at once: the node already has max_reqs requests pending. r is
 * in neither the map nor the heap, and holds nothing beyond its one
 * allocation (a flood of refusals costs one small struct each until the
 * idle turn calls them back). */
static void
req_refuse(eb_bus *bus, eb__bus_req *r)
{
	bus->req.refused++;
	EB_LOG_RL_WARN("eventbus",
	    "requests-refused: pending=%u max=%u total=%" PRIu64,
	    bus->req.map.count, bus->req.max, bus->req.refused);
	if (bus->req.refuse_text[0] == '\0') {
		(void) snprintf(bus->req.refuse_text,
		    sizeof(bus->req.refuse_text),
		    "too_many_requests: %u requests already pending on this "
		    "node",
		    bus->req.max);
	}
	r->resolved = 1;
	r->status = EB_EFULL;
	r->failure.type = EB_BUS_ERROR;
	r->failure.code = -1;
	r->failure.message = bus->req.refuse_text; /* r->fmsg stays NULL */
	bus->stats.totals.failed++;
	eb__list_insert_tail(&bus->req.resolved, &r->link);
	eb__list_insert_tail(
	    &bus->turn.fifo, &r->turn.link); /* callback order */
	eb__bus_wake(bus);
}

/* A request with room for an address of an bytes (its NUL included): a
 * kept block when it fits one. */
static eb__bus_req *
req_alloc(eb_bus *bus, size_t an)
{
	if (an > EB__BUS_REQ_ADDR) {
		return eb__malloc(sizeof(eb__bus_req) + an);
	}
	return eb__spare_get(
	    &bus->req.spare, sizeof(eb__bus_req) + EB__BUS_REQ_ADDR);
}

/* Frees r's allocation (the address is in it), or keeps it for the next
 * request when it has the kept blocks' size. */
static void
req_release(eb_bus *bus, eb__bus_req *r)
{
	if (strlen(r->address) >= EB__BUS_REQ_ADDR || bus->life.shut) {
		free(r);
		return;
	}
	eb__spare_put(&bus->req.spare, r, EB__BUS_REQ_SPARE);
}

void
eb__bus_req_pool_free(eb_bus *bus)
{
	eb__spare_free(&bus->req.spare);
}

uint64_t
eb__bus_req_timeout(const eb_bus *bus, uint64_t timeout_ms)
{
	uint64_t t = timeout_ms != 0 ? timeout_ms : bus->req.timeout_ms;

	/* A client's timeout is not a reason to hold memory for ever, nor to
	 * overflow a deadline. */
	return t < bus->req.max_timeout_ms ? t : bus->req.max_timeout_ms;
}

eb__bus_req *
eb__bus_req_new(eb_bus *bus, const char *address, uint64_t timeout_ms,
    uint64_t deadline_ms, eb_bus_reply_cb cb, void *arg)
{
	size_t       an = strlen(address) + 1;
	eb__bus_req *r = req_alloc(bus, an);

	/* One allocation: the request, then the address (also kept by a
	 * refused one: it costs nothing more). */
	memset(r, 0, sizeof(*r));
	r->address = (char *) (r + 1);
	memcpy(r->address, address, an);
	eb__list_init(&r->turn.link);
	/* Prefix (15) + at most 20 digits fit EB_BUS_REPLY_ADDR_MAX. */
	memcpy(r->reply_address, EB_BUS_REPLY_PREFIX,
	    sizeof(EB_BUS_REPLY_PREFIX) - 1);
	(void) eb__dec_u64(r->reply_address + sizeof(EB_BUS_REPLY_PREFIX) - 1,
	    ++bus->req.next_id);
	r->seq = bus->req.next_id;
	r->ient.id = r->seq;
	r->cb = cb;
	r->arg = arg;
	if (bus->req.map.count >= bus->req.max) {
		/* The callers see r->resolved and send nothing. */
		req_refuse(bus, r);
		return r;
	}
	if (deadline_ms != 0) {
		/* The caller read the clock. The loop time, up to a turn
		 * old, serves only for the clamp (earlier, never later) and
		 * for the timeout's text when the caller names no timeout. */
		uint64_t now = uv_now(bus->loop);
		uint64_t cap = now + bus->req.max_timeout_ms;

		r->deadline = deadline_ms < cap ? deadline_ms : cap;
		if (timeout_ms != 0) {
			r->timeout_ms = eb__bus_req_timeout(bus, timeout_ms);
		} else {
			r->timeout_ms =
			    r->deadline > now ? r->deadline - now : 0;
		}
	} else {
		r->timeout_ms = eb__bus_req_timeout(bus, timeout_ms);
		/* The loop time may be a whole turn old: a timeout counts
		 * from when the request was made. */
		uv_update_time(bus->loop);
		r->deadline = uv_now(bus->loop) + r->timeout_ms;
	}
	eb__imap_put(&bus->req.map, &r->ient);
	eb__list_insert_tail(&bus->req.deadlines, &r->link);
	deadline_add(bus, r);
	if (deadline_first(bus) == r) {
		eb__bus_timer_update(bus);
	}
	return r;
}

eb__bus_req *
eb__bus_req_find(eb_bus *bus, const char *reply_address)
{
	static const size_t plen = sizeof(EB_BUS_REPLY_PREFIX) - 1;
	const char         *p = reply_address;
	uint64_t            id = 0;
	eb__ient           *e;
	eb__bus_req        *r;

	/* The bus's reply addresses are the prefix and the id in decimal
	 * (eb__bus_req_new): the id is the key, and the whole address must
	 * match (a leading zero or a sign spells no request). */
	if (strncmp(p, EB_BUS_REPLY_PREFIX, plen) != 0) {
		return NULL;
	}
	for (p += plen; *p >= '0' && *p <= '9'; p++) {
		if (id > (UINT64_MAX - 9) / 10) {
			return NULL; /* more digits than any id has */
		}
		id = id * 10 + (uint64_t) (*p - '0');
	}
	if (*p != '\0' || (e = eb__imap_get(&bus->req.map, id)) == NULL) {
		return NULL;
	}
	r = EB_CONTAINER_OF(e, eb__bus_req, ient);
	return strcmp(r->reply_address, reply_address) == 0 ? r : NULL;
}

static void
req_resolve(eb_bus *bus, eb__bus_req *r)
{
	int was_first = deadline_first(bus) == r;

	r->resolved = 1;
	eb__imap_del(&bus->req.map, &r->ient);
	deadline_del(bus, r);
	eb__list_remove(&r->link);
	eb__list_insert_tail(&bus->req.resolved, &r->link);
	eb__list_insert_tail(&bus->turn.fifo, &r->turn.link);
	/* The timer stays armed for r's deadline when others wait: theirs
	 * are later, so it fires early, finds nothing due and re-arms
	 * (timer_cb). Re-arming for every answer in order cost a libuv
	 * timer stop and start per request (issue 25). Stopped when nothing
	 * waits, so that an idle bus does not keep the loop alive. */
	if (was_first && deadline_first(bus) == NULL) {
		eb__bus_timer_update(bus);
	}
	eb__bus_wake(bus);
}

void
eb__bus_req_reply(eb_bus *bus, eb__bus_req *r, eb_bus_msg *reply)
{
	if (r->resolved) {
		return;
	}
	r->status = 0;
	r->reply = eb_bus_msg_hold(reply);
	req_resolve(bus, r);
}

void
eb__bus_req_fail(eb_bus *bus, eb__bus_req *r, int status,
    eb_bus_failure_type type, int code, const char *message)
{
	eb__bus_addr *a;

	if (r->resolved) {
		return;
	}
	r->status = status;
	r->failure.type = type;
	r->failure.code = code;
	r->fmsg = eb__strdup(message != NULL ? message : "");
	r->failure.message = r->fmsg;
	if (status != EB_ERECIPIENT) {
		/* A recipient's fail() was counted where it was called. */
		bus->stats.totals.failed++;
		if ((a = eb__bus_addr_find(bus, r->address)) != NULL) {
			a->c.failed++;
		}
	}
	req_resolve(bus, r);
}

void
eb__bus_req_fail_no_handlers(eb_bus *bus, eb__bus_req *r)
{
	char *text = NULL;
	int   n;

	n = snprintf(NULL, 0, "No handlers for address %s", r->address);
	text = eb__malloc((size_t) n + 1);
	(void) snprintf(
	    text, (size_t) n + 1, "No handlers for address %s", r->address);
	eb__bus_req_fail(bus, r, EB_ENOHANDLERS, EB_BUS_NO_HANDLERS, -1, text);
	free(text);
}

static void
req_free(eb_bus *bus, eb__bus_req *r)
{
	eb__list_remove(&r->turn.link);
	eb_bus_msg_release(r->reply);
	free(r->fmsg);
	req_release(bus, r);
}

void
eb__bus_req_run(eb_bus *bus, eb__bus_req *r)
{
	eb__list_remove(&r->link); /* off bus->req.resolved */
	eb__list_remove(&r->turn.link);
	r->cb(bus, r->status, r->reply, r->status == 0 ? NULL : &r->failure,
	    r->arg);
	req_free(bus, r);
}

void
eb__bus_req_cancel_all(eb_bus *bus)
{
	static const eb_bus_failure canceled = { EB_BUS_ERROR, -1,
		"event bus closed" };
	eb__list                   *it;

	/* Everything not yet called back, resolved or not, gets ECANCELED
	 * exactly once; the bus refuses new requests by now. */
	while ((it = eb__list_first(&bus->req.deadlines)) != NULL) {
		eb__bus_req *r = EB_CONTAINER_OF(it, eb__bus_req, link);

		eb__list_remove(it);
		eb__imap_del(&bus->req.map, &r->ient);
		eb__list_insert_tail(&bus->req.resolved, it);
	}
	eb__bus_reqheap_free(&bus->req.heap);
	eb__list_init(&bus->req.ordered); /* all of them just left it */
	while ((it = eb__list_first(&bus->req.resolved)) != NULL) {
		eb__bus_req *r = EB_CONTAINER_OF(it, eb__bus_req, link);

		eb__list_remove(it);
		r->cb(bus, EB_ECANCELED, NULL, &canceled, r->arg);
		req_free(bus, r);
	}
}

static void
timer_cb(uv_timer_t *t)
{
	eb_bus      *bus = t->data;
	uint64_t     now = uv_now(bus->loop);
	eb__bus_req *r;

	while ((r = deadline_first(bus)) != NULL) {
		char *text;
		int   n;

		if (r->deadline > now) {
			break;
		}
		n = snprintf(NULL, 0,
		    "Timed out after waiting %" PRIu64
		    "(ms) for a reply. address: %s, repliedAddress: %s",
		    r->timeout_ms, r->reply_address, r->address);
		text = eb__malloc((size_t) n + 1);
		(void) snprintf(text, (size_t) n + 1,
		    "Timed out after waiting %" PRIu64
		    "(ms) for a reply. address: %s, repliedAddress: %s",
		    r->timeout_ms, r->reply_address, r->address);
		eb__bus_req_fail(bus, r, EB_ETIMEOUT, EB_BUS_TIMEOUT, -1, text);
		free(text);
	}
	eb__bus_timer_update(bus);
}

void
eb__bus_timer_update(eb_bus *bus)
{
	eb__bus_req *r = deadline_first(bus);
	uint64_t     now;

	if (bus->life.shut) {
		return;
	}
	if (r == NULL) {
		(void) uv_timer_stop(&bus->req.timer);
		return;
	}
	now = uv_now(bus->loop);
	(void) uv_timer_start(&bus->req.timer, timer_cb,
	    r->deadline > now ? r->deadline - now : 0, 0);
}

void
eb__bus_answer_fail(eb_bus *bus, eb_bus_msg *msg, int status,
    eb_bus_failure_type type, int code, const char *message)
{
	eb__bus_req *r;
	char        *text = NULL;
	int          n;

	msg->answered = 1;
	if (type == EB_BUS_NO_HANDLERS && message == NULL) {
		n = snprintf(
		    NULL, 0, "No handlers for address %s", msg->address);
		text = eb__malloc((size_t) n + 1);
		(void) snprintf(text, (size_t) n + 1,
		    "No handlers for address %s", msg->address);
		message = text;
	}
	if (msg->origin != 0) {
		if (bus->remote.ops == NULL ||
		    bus->remote.ops->fail(bus->remote.ctx, msg->origin,
		        msg->reply_address, status, type, code, message) != 0) {
			/* The requester's link is gone. */
			bus->stats.totals.dropped++;
		}
	} else if ((r = eb__bus_req_find(bus, msg->reply_address)) != NULL) {
		eb__bus_req_fail(bus, r, status, type, code, message);
	} else {
		bus->stats.totals
		    .dropped++; /* timed out or canceled meanwhile */
	}
	free(text);
}

static int
msg_answer_check(const eb_bus_msg *msg)
{
	if (msg == NULL) {
		return UV_EINVAL;
	}
	if (msg->reply_address == NULL || msg->answered) {
		return EB_EPROTO;
	}
	if (msg->bus == NULL || msg->bus->life.closing) {
		return EB_ECLOSED;
	}
	return 0;
}

static void
count_answer(eb_bus *bus, const eb_bus_msg *msg, int failed)
{
	eb__bus_addr *a = eb__bus_addr_find(bus, msg->address);

	if (failed) {
		bus->stats.totals.failed++;
	} else {
		bus->stats.totals.replied++;
	}
	if (a != NULL) {
		if (failed) {
			a->c.failed++;
		} else {
			a->c.replied++;
		}
	}
}

static int
msg_reply(eb_bus_msg *msg, const eb__bus_body *body, const json_t *headers,
    const eb_bus_send_opts *opts, eb_bus_reply_cb cb, void *arg)
{
	eb_bus      *bus;
	eb_bus_msg  *reply;
	eb_bus_msg   view;
	eb__bus_req *r;
	int          rv;

	if ((rv = msg_answer_check(msg)) != 0) {
		return rv;
	}
	bus = msg->bus;
	/* Without a callback, to a requester on another node, the reply is
	 * only written to its link: it may be a view of the caller's bytes
	 * (issue 25: the leader's acknowledgements). */
	rv = eb__bus_msg_point(&view, cb == NULL && msg->origin != 0,
	    msg->reply_address, body, headers, bus->msg.empty_headers, &reply);
	if (rv != 0) {
		return rv;
	}
	if (cb != NULL) {
		/* Reply-to-reply: the reply is itself a request, answerable
		 * by whoever receives it, wherever that is. */
		r = eb__bus_req_new(bus, msg->reply_address,
		    opts != NULL ? opts->timeout_ms : 0,
		    opts != NULL ? opts->deadline_ms : 0, cb, arg);
		if (!r->resolved) {
			eb__bus_msg_set_reply(bus, reply, r->reply_address, 0);
			r->node = msg->origin;
		}
		/* Refused at the cap: cb gets too_many_requests, and the
		 * reply still goes, as one that expects no answer. */
	}
	msg->answered = 1;
	count_answer(bus, msg, 0);
	if (msg->origin != 0) {
		if (bus->remote.ops == NULL ||
		    bus->remote.ops->forward(bus->remote.ctx, msg->origin,
		        reply, EB__BUS_FWD_REPLY, 0) != 0) {
			bus->stats.totals.dropped++;
		}
	} else if ((r = eb__bus_req_find(bus, msg->reply_address)) != NULL) {
		eb__bus_req_reply(bus, r, reply);
	} else {
		bus->stats.totals.dropped++; /* the requester gave up */
	}
	eb__bus_msg_done(reply);
	return 0;
}

int
eb_bus_msg_reply(eb_bus_msg *msg, const json_t *body, const json_t *headers,
    const eb_bus_send_opts *opts, eb_bus_reply_cb cb, void *arg)
{
	eb__bus_body b = { body, NULL, 0, 0, NULL, 0 };

	return msg_reply(msg, &b, headers, opts, cb, arg);
}

int
eb_bus_msg_reply_raw(eb_bus_msg *msg, const char *body, size_t body_len,
    const json_t *headers, const eb_bus_send_opts *opts, eb_bus_reply_cb cb,
    void *arg)
{
	eb__bus_body b = eb__bus_raw_body(body, body_len, opts);

	return msg_reply(msg, &b, headers, opts, cb, arg);
}

int
eb_bus_msg_reply_with(eb_bus_msg *msg, eb_bus_msg *reply)
{
	eb_bus      *bus;
	eb__bus_req *r;
	size_t       len;
	const char  *body;
	int          rv;

	if (reply == NULL) {
		return UV_EINVAL;
	}
	if ((rv = msg_answer_check(msg)) != 0) {
		return rv;
	}
	if (msg->origin != 0 || !eb__bus_msg_is_plain(reply)) {
		/* To another node (a frame addressed to msg's requester), or
		 * a reply that is not a plain one: a copy. */
		body = eb_bus_msg_body_bytes(reply, &len);
		return eb_bus_msg_reply_raw(msg, body, len,
		    eb_bus_msg_headers(reply), NULL, NULL, NULL);
	}
	/* The requester is here and only reads the reply (its body,
	 * headers, that it expects no answer): reply itself will do, held
	 * by the request, without making another message (issue 25). */
	bus = msg->bus;
	msg->answered = 1;
	count_answer(bus, msg, 0);
	if ((r = eb__bus_req_find(bus, msg->reply_address)) != NULL) {
		eb__bus_req_reply(bus, r, reply);
	} else {
		bus->stats.totals.dropped++; /* the requester gave up */
	}
	return 0;
}

int
eb_bus_msg_fail(eb_bus_msg *msg, int code, const char *message)
{
	int rv;

	if ((rv = msg_answer_check(msg)) != 0) {
		return rv;
	}
	count_answer(msg->bus, msg, 1);
	eb__bus_answer_fail(msg->bus, msg, EB_ERECIPIENT,
	    EB_BUS_RECIPIENT_FAILURE, code, message != NULL ? message : "");
	return 0;
}
