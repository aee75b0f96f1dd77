/*
 * Consumers: registration, round-robin choice, the bounded per-consumer
 * queue and delivery from the bus's idle handle.
 *
 * Delivery is never re-entrant: a send only queues, and handlers run from
 * the idle callback. One turn runs at most what was due when the turn began
 * (capped), so a handler that sends to itself cannot starve I/O. Per
 * consumer the queue is FIFO, and deliveries and reply callbacks run from
 * one bus-wide queue in arrival order (bus->turn.fifo), which gives the order
 * guarantee: one sender, one handler: send order, replies included.
 *
 * Flow control (pressure.c): past half of queue_max the consumer is busy
 * and so is its address, until a quarter; a paused consumer's entries
 * stay in its queue, off bus->turn.fifo.
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

/* Deliveries and reply callbacks per loop turn (bus->turn.fifo). */
#define TURN_BUDGET 4096u

static eb__bus_qent *
qent_get(eb_bus *bus)
{
	eb__bus_qent *q =
	    eb__spare_get(&bus->turn.qspare, sizeof(eb__bus_qent));

	eb__list_init(&q->turn.link);
	return q;
}

/* q must be off any queue (or on one that is being discarded). */
static void
qent_put(eb_bus *bus, eb__bus_qent *q)
{
	eb__list_remove(&q->turn.link); /* off bus->turn.fifo */
	if (bus->life.shut) {
		free(q);
		return;
	}
	eb__spare_put(&bus->turn.qspare, q, EB__BUS_QFREE);
}

void
eb__bus_qent_pool_free(eb_bus *bus)
{
	eb__spare_free(&bus->turn.qspare);
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
	if (bus->life.closing) {
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
	eb__list_init(&c->queue);
	eb__list_insert_tail(&a->consumers, &c->link);
	a->n_local++;
	if (c->local_only) {
		a->n_local_only++;
	} else if (bus->remote.ops != NULL) {
		bus->remote.ops->interest(
		    bus->remote.ctx, address, a->n_local - a->n_local_only);
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
	eb__list *it;

	/* c goes with its queue: the entries are relinked or freed. */
	while ((it = eb__list_first(&c->queue)) != NULL) {
		eb__bus_qent *q = EB_CONTAINER_OF(it, eb__bus_qent, link);

		eb__list_remove(it);
		if (q->rc != NULL) {
			eb__bus_rcpt_unit_done(
			    c->bus, q->rc, EB_ECANCELED, "event bus closed");
		}
		eb_bus_msg_release(q->msg);
		qent_put(c->bus, q);
	}
	free(c->address);
	free(c);
}

static void
consumer_flush(eb_bus *bus, eb_bus_consumer *c, eb__bus_addr *a)
{
	eb__list *it;
	eb__list *tmp;

	/* Queued requests are answered as if the consumer had never been
	 * there; everything else is dropped and counted. */
	EB_LIST_FOREACH (it, tmp, &c->queue) {
		eb__bus_qent *q = EB_CONTAINER_OF(it, eb__bus_qent, link);
		eb_bus_msg   *m = q->msg;

		eb__list_remove(it);
		c->qlen--;
		c->qbytes -= m->body_len;
		if (q->rc != NULL) {
			eb__bus_rcpt_unit_done(bus, q->rc, EB_ENOHANDLERS,
			    "consumer closed before delivery");
		}
		if (m->reply_address != NULL && !m->answered) {
			eb__bus_answer_fail(bus, m, EB_ENOHANDLERS,
			    EB_BUS_NO_HANDLERS, -1, NULL);
		} else {
			a->c.dropped++;
			bus->stats.totals.dropped++;
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
	if (bus->life.shut) {
		return; /* the bus owns and frees it now */
	}
	a = c->addr;
	c->closed = 1;
	c->addr = NULL;
	eb__list_remove(&c->link);
	a->n_local--;
	if (c->local_only) {
		a->n_local_only--;
	} else if (bus->remote.ops != NULL) {
		bus->remote.ops->interest(
		    bus->remote.ctx, a->address, a->n_local - a->n_local_only);
	}
	eb__bus_watch_notify(bus, a);
	consumer_flush(bus, c, a);
	if (c->busy) {
		c->busy = 0;
		a->n_busy--;
		eb__bus_pressure_update(bus, a);
	}
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
	eb__list *it;

	/* Round robin by rotation: the chosen consumer moves to the tail. */
	for (it = a->consumers.next; it != &a->consumers; it = it->next) {
		eb_bus_consumer *c = EB_CONTAINER_OF(it, eb_bus_consumer, link);

		if (remote_sender && c->local_only) {
			continue;
		}
		eb__list_remove(it);
		eb__list_insert_tail(&a->consumers, it);
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
	bus->stats.totals.dropped++;
	if (!c->overflowing) {
		c->overflowing = 1; /* once per episode */
		EB_LOG_WARN("eventbus",
		    "consumer-queue-full: address=%s max=%u",
		    eb_log_quote(q, sizeof(q), c->address),
		    bus->flow.queue_max);
	}
	return EB_EFULL;
}

int
eb__bus_consumer_push(eb_bus_consumer *c, eb_bus_msg *msg, eb__bus_rcpt *rc)
{
	eb_bus       *bus = c->bus;
	eb__bus_qent *q;
	uint64_t      max = bus->flow.queue_max;

	if (bus->flow.push_grace) {
		max *= EB__BUS_GRACE;
	}
	if (c->qlen >= max) {
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
	q->turn.c = c;
	eb__list_insert_tail(&c->queue, &q->link);
	c->qlen++;
	c->qbytes += msg->body_len;
	if (!c->paused) { /* else it waits off the fifo for the resume */
		eb__list_insert_tail(&bus->turn.fifo, &q->turn.link);
		eb__bus_wake(bus);
	}
	eb__bus_consumer_level(bus, c);
	return 0;
}

static void
consumer_deliver_one(eb_bus *bus, eb_bus_consumer *c)
{
	eb__list     *it = eb__list_first(&c->queue);
	eb__bus_qent *q;
	eb_bus_msg   *m;
	eb__bus_rcpt *rc;

	if (it == NULL) {
		return; /* the caller checked; the fifo named this entry */
	}
	q = EB_CONTAINER_OF(it, eb__bus_qent, link);
	m = q->msg;
	rc = q->rc;
	eb__list_remove(it);
	qent_put(bus, q);
	c->qlen--;
	c->qbytes -= m->body_len;
	if (c->qlen <= bus->flow.queue_max / 2) {
		c->overflowing = 0; /* hysteresis: not one line per drop */
	}
	eb__bus_consumer_level(bus, c);
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
	bus->stats.totals.received++;
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
		bus->stats.totals.dropped++;
	}
	if (rc != NULL) {
		eb__bus_rcpt_unit_done(bus, rc, c->undelivered,
		    c->undelivered != 0 ? "the consumer could not take it"
		                        : NULL);
	}
	eb_bus_msg_release(m);
}

/*
 * One loop turn: runs what is due on bus->turn.fifo in arrival order, up to
 * what was there when the turn began (a handler that sends to itself, or a
 * reply that sends again, waits for the next turn: I/O is not starved) and
 * at most TURN_BUDGET items.
 */
void
eb__bus_run_turn(eb_bus *bus)
{
	eb__bus_turn *mark = &bus->turn.mark;
	eb__list     *it;
	uint32_t      n = 0;

	if (eb__list_empty(&bus->turn.fifo)) {
		return;
	}
	mark->c = NULL;
	eb__list_insert_tail(&bus->turn.fifo, &mark->link);
	while (!bus->life.closing && n++ < TURN_BUDGET &&
	       (it = eb__list_first(&bus->turn.fifo)) != NULL &&
	       it != &mark->link) {
		eb__bus_turn    *t = EB_CONTAINER_OF(it, eb__bus_turn, link);
		eb_bus_consumer *c = t->c;

		if (c == NULL) {
			eb__bus_req_run(
			    bus, EB_CONTAINER_OF(t, eb__bus_req, turn));
			continue;
		}
		/* Per consumer the queue is FIFO and so is bus->turn.fifo: the
		 * entry is the head of its consumer's queue. Off the fifo
		 * first, so the loop always moves on (qent_put removes it
		 * again, harmlessly). */
		eb__list_remove(it);
		consumer_deliver_one(bus, c);
		if (c->closed) {
			eb__bus_consumer_free(c); /* closed by its handler */
		}
	}
	eb__list_remove(&mark->link);
}
