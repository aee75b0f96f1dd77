/*
 * Consumers: registration, round-robin choice, the bounded per-consumer
 * queue and delivery from the bus's idle handle.
 *
 * Delivery is never re-entrant: a send only queues, and handlers run from
 * the idle callback. One turn delivers at most what each ready consumer had
 * queued when the turn began (capped), so a handler that sends to itself
 * cannot starve I/O. Per consumer the queue is FIFO, which gives the order
 * guarantee (one sender, one handler: send order).
 *
 * Overflow (queue_max reached): the message is not queued; a request is
 * failed at once (ERROR, EB_EFULL, "consumer queue full"), anything else is
 * dropped and counted in `dropped`. The first overflow of an episode is
 * logged; the episode ends when the queue has drained to half the limit
 * (a queue hovering at the limit would otherwise log every other drop).
 *
 * Loop thread only.
 */
#include <stdlib.h>

#include <ebnode/log.h>

#include "common/alloc.h"
#include "eventbus/eventbus_int.h"

/* Deliveries per consumer per loop turn. */
#define DELIVER_BUDGET 256u

static eb__bus_qent *
qent_get(eb_bus *bus)
{
	eb_list *it = eb_list_first(&bus->qfree);

	if (it == NULL) {
		return eb__malloc(sizeof(eb__bus_qent));
	}
	eb_list_remove(it);
	bus->nqfree--;
	return EB_CONTAINER_OF(it, eb__bus_qent, link);
}

/* q must be off any queue (or on one that is being discarded). */
static void
qent_put(eb_bus *bus, eb__bus_qent *q)
{
	if (bus->nqfree >= EB__BUS_QFREE || bus->shut) {
		free(q);
		return;
	}
	eb_list_insert_tail(&bus->qfree, &q->link);
	bus->nqfree++;
}

void
eb__bus_qent_pool_free(eb_bus *bus)
{
	eb_list *it;

	while ((it = eb_list_first(&bus->qfree)) != NULL) {
		eb_list_remove(it);
		free(EB_CONTAINER_OF(it, eb__bus_qent, link));
	}
	bus->nqfree = 0;
}

int
eb_bus_consumer_new(eb_bus *bus, const char *address, int local_only,
    eb_bus_handler_fn fn, void *arg, eb_bus_consumer **cp)
{
	eb_bus_consumer *c;
	eb__bus_addr    *a;

	if (bus == NULL || address == NULL || address[0] == '\0' ||
	    fn == NULL || cp == NULL) {
		return UV_EINVAL;
	}
	if (bus->closing) {
		return EB_ECLOSED;
	}
	a = eb__bus_addr_get(bus, address);
	c = eb__calloc(1, sizeof(*c));
	c->bus = bus;
	c->addr = a;
	c->address = eb__strdup(address);
	c->fn = fn;
	c->arg = arg;
	c->local_only = local_only != 0;
	eb_list_init(&c->queue);
	eb_list_init(&c->ready_link);
	eb_list_insert_tail(&a->consumers, &c->link);
	a->n_local++;
	if (c->local_only) {
		a->n_local_only++;
	} else if (bus->rops != NULL) {
		bus->rops->interest(
		    bus->rctx, address, a->n_local - a->n_local_only);
	}
	eb__bus_watch_notify(bus, a);
	*cp = c;
	return 0;
}

const char *
eb_bus_consumer_address(const eb_bus_consumer *c)
{
	return c->address;
}

void
eb__bus_consumer_free(eb_bus_consumer *c)
{
	eb_list *it;
	eb_list *tmp;

	/* c goes with its queue: the entries are relinked or freed. */
	EB_LIST_FOREACH (it, tmp, &c->queue) {
		eb__bus_qent *q = EB_CONTAINER_OF(it, eb__bus_qent, link);

		if (q->rc != NULL) {
			eb__bus_rcpt_unit_done(
			    c->bus, q->rc, EB_ECANCELED, "event bus closed");
		}
		eb_bus_msg_release(q->msg);
		qent_put(c->bus, q);
	}
	eb_list_remove(&c->ready_link);
	free(c->address);
	free(c);
}

static void
consumer_flush(eb_bus *bus, eb_bus_consumer *c, eb__bus_addr *a)
{
	eb_list *it;
	eb_list *tmp;

	/* Queued requests are answered as if the consumer had never been
	 * there; everything else is dropped and counted. */
	EB_LIST_FOREACH (it, tmp, &c->queue) {
		eb__bus_qent *q = EB_CONTAINER_OF(it, eb__bus_qent, link);
		eb_bus_msg   *m = q->msg;

		eb_list_remove(it);
		c->qlen--;
		if (q->rc != NULL) {
			eb__bus_rcpt_unit_done(bus, q->rc, EB_ENOHANDLERS,
			    "consumer closed before delivery");
		}
		if (m->reply_address != NULL && !m->answered) {
			eb__bus_answer_fail(bus, m, EB_ENOHANDLERS,
			    EB_BUS_NO_HANDLERS, -1, NULL);
		} else {
			a->c.dropped++;
			bus->totals.dropped++;
		}
		eb_bus_msg_release(m);
		qent_put(bus, q);
	}
}

void
eb_bus_consumer_close(eb_bus_consumer *c)
{
	eb_bus       *bus;
	eb__bus_addr *a;

	if (c == NULL || c->closed) {
		return;
	}
	bus = c->bus;
	if (bus->shut) {
		return; /* the bus owns and frees it now */
	}
	a = c->addr;
	c->closed = 1;
	c->addr = NULL;
	eb_list_remove(&c->link);
	eb_list_remove(&c->ready_link);
	a->n_local--;
	if (c->local_only) {
		a->n_local_only--;
	} else if (bus->rops != NULL) {
		bus->rops->interest(
		    bus->rctx, a->address, a->n_local - a->n_local_only);
	}
	eb__bus_watch_notify(bus, a);
	consumer_flush(bus, c, a);
	eb__bus_addr_maybe_free(bus, a);
	if (!c->in_handler) {
		eb__bus_consumer_free(c);
	}
}

void
eb_bus_consumer_undelivered(eb_bus_consumer *c, int status)
{
	if (c != NULL && c->in_handler) {
		c->undelivered = status < 0 ? status : EB_ECANCELED;
	}
}

eb_bus_consumer *
eb__bus_consumer_pick(eb__bus_addr *a, int remote_sender)
{
	eb_list *it;

	/* Round robin by rotation: the chosen consumer moves to the tail. */
	for (it = a->consumers.next; it != &a->consumers; it = it->next) {
		eb_bus_consumer *c = EB_CONTAINER_OF(it, eb_bus_consumer, link);

		if (remote_sender && c->local_only) {
			continue;
		}
		eb_list_remove(it);
		eb_list_insert_tail(&a->consumers, it);
		return c;
	}
	return NULL;
}

static int
consumer_overflow(eb_bus_consumer *c)
{
	eb_bus *bus = c->bus;
	char    q[EB_LOG_QUOTE_MAX];

	c->addr->c.dropped++;
	bus->totals.dropped++;
	if (!c->overflowing) {
		c->overflowing = 1; /* once per episode */
		EB_LOG_WARN("eventbus",
		    "consumer-queue-full: address=%s max=%u",
		    eb_log_quote(q, sizeof(q), c->address), bus->queue_max);
	}
	return EB_EFULL;
}

int
eb__bus_consumer_push(eb_bus_consumer *c, eb_bus_msg *msg, eb__bus_rcpt *rc)
{
	eb_bus       *bus = c->bus;
	eb__bus_qent *q;

	if (c->qlen >= bus->queue_max) {
		if (rc != NULL) {
			eb__bus_rcpt_add_done(
			    bus, rc, EB_EFULL, "consumer queue full");
		}
		return consumer_overflow(c);
	}
	q = qent_get(bus);
	q->msg = eb_bus_msg_hold(msg);
	q->rc = rc;
	if (rc != NULL) {
		rc->targets++;
		rc->pending++;
	}
	eb_list_insert_tail(&c->queue, &q->link);
	if (c->qlen++ == 0) {
		eb_list_insert_tail(&bus->ready, &c->ready_link);
		eb__bus_wake(bus);
	}
	return 0;
}

static void
consumer_deliver_one(eb_bus *bus, eb_bus_consumer *c)
{
	eb_list      *it = c->queue.next; /* non-empty: the caller checked */
	eb__bus_qent *q = EB_CONTAINER_OF(it, eb__bus_qent, link);
	eb_bus_msg   *m = q->msg;

	eb__bus_rcpt *rc = q->rc;

	eb_list_remove(it);
	qent_put(bus, q);
	c->qlen--;
	if (c->qlen <= bus->queue_max / 2) {
		c->overflowing = 0; /* hysteresis: not one line per drop */
	}
	/* The fence may have risen while the message waited (rule 6). */
	if (eb__bus_fence_stale(bus, m->epoch)) {
		c->addr->c.dropped++;
		if (m->reply_address != NULL && !m->answered) {
			eb__bus_answer_fail(bus, m, EB_EFENCED, EB_BUS_ERROR,
			    -1, eb_strerror(EB_EFENCED));
		}
		if (rc != NULL) {
			eb__bus_rcpt_unit_done(bus, rc, EB_EFENCED, NULL);
		}
		eb_bus_msg_release(m);
		return;
	}
	c->addr->c.received++;
	bus->totals.received++;
	c->in_handler = 1;
	c->undelivered = 0;
	c->fn(c, m, c->arg);
	c->in_handler = 0;
	/* Handed to the consumer: the receipt's "delivered", unless the
	 * handler said it could not take it (eb_bus_consumer_undelivered). */
	if (c->undelivered != 0) {
		if (c->addr != NULL) {
			c->addr->c.dropped++;
		}
		bus->totals.dropped++;
	}
	if (rc != NULL) {
		eb__bus_rcpt_unit_done(bus, rc, c->undelivered,
		    c->undelivered != 0 ? "the consumer could not take it"
		                        : NULL);
	}
	eb_bus_msg_release(m);
}

void
eb__bus_deliver_ready(eb_bus *bus)
{
	eb_list  batch;
	eb_list *it;

	if (eb_list_empty(&bus->ready)) {
		return;
	}
	/* Take the ready list: consumers that become ready during this turn
	 * wait for the next one. */
	batch.next = bus->ready.next;
	batch.prev = bus->ready.prev;
	batch.next->prev = &batch;
	batch.prev->next = &batch;
	eb_list_init(&bus->ready);
	while ((it = eb_list_first(&batch)) != NULL && !bus->closing) {
		eb_bus_consumer *c =
		    EB_CONTAINER_OF(it, eb_bus_consumer, ready_link);
		uint32_t n =
		    c->qlen < DELIVER_BUDGET ? c->qlen : DELIVER_BUDGET;

		eb_list_remove(it);
		while (n-- > 0 && !c->closed && c->qlen > 0 && !bus->closing) {
			consumer_deliver_one(bus, c);
		}
		if (c->closed) {
			eb__bus_consumer_free(c); /* closed by its handler */
		} else if (c->qlen > 0 && eb_list_empty(&c->ready_link)) {
			eb_list_insert_tail(&bus->ready, &c->ready_link);
		}
	}
	/* A close from a handler stops the turn: hand the rest back. */
	while ((it = eb_list_first(&batch)) != NULL) {
		eb_list_remove(it);
		eb_list_insert_tail(&bus->ready, it);
	}
}
