/*
 * Flow control (docs/BUS.md "Flow control"): consumer queue watermarks,
 * explicit holds, the busy state per address and its observers, and
 * parked (paused) consumers.
 *
 * A consumer is busy from qlen >= q_high (half the queue bound) until
 * qlen <= q_low (a quarter), or from EB__BUS_BUSY_BYTES of bodies queued
 * until a quarter of that: the hysteresis keeps producers from flapping.
 * An address is busy while any of its local consumers is busy or a
 * component holds it (eb_bus_pressure_set), while a peer said (a PRESSURE
 * link frame, remote.c) that its consumers of it are busy, or while the
 * link to a peer with consumers of it is congested (remote.c). Observers hear
 * every change of that aggregate. Loop thread only.
 */
#include <ebnode/bus.h>

#include "common/assert.h"
#include "eventbus/eventbus_int.h"

void
eb__bus_pressure_update(eb_bus *bus, eb__bus_addr *a)
{
	int busy = a->n_busy > 0 || a->held_busy || a->n_remote_busy > 0 ||
	           a->n_remote_cong > 0;
	int        local = a->n_busy > 0;
	eb__obs_it it;

	/* Peers hear about the local consumers only (a hold is local, and a
	 * peer's own pressure is its own to tell). */
	if (local != a->local_busy_told && bus->remote.ops != NULL &&
	    bus->remote.ops->pressure != NULL && !bus->life.closing) {
		a->local_busy_told = local;
		bus->remote.ops->pressure(bus->remote.ctx, a->address, local);
	}
	if (busy == a->busy) {
		return;
	}
	a->busy = busy;
	if (busy) {
		bus->flow.busy_episodes++;
		bus->flow.busy_addrs++;
	} else {
		bus->flow.busy_addrs--;
	}
	if (bus->life.closing) {
		return;
	}
	EB__OBS_EACH(&bus->flow.observers, it)
	{
		((eb_bus_pressure_fn) it.fn)(bus, a->address, busy, it.arg);
	}
}

void
eb__bus_consumer_level(eb_bus *bus, eb_bus_consumer *c)
{
	eb__bus_addr *a = c->addr;

	if (a == NULL) {
		return; /* closed: consumer_flush settled it */
	}
	if (!c->busy &&
	    (c->qlen >= bus->flow.q_high || c->qbytes >= EB__BUS_BUSY_BYTES)) {
		c->busy = 1;
		a->n_busy++;
		eb__bus_pressure_update(bus, a);
	} else if (c->busy && c->qlen <= bus->flow.q_low &&
	           c->qbytes <= EB__BUS_BUSY_BYTES / 4) {
		c->busy = 0;
		a->n_busy--;
		eb__bus_pressure_update(bus, a);
	}
}

int
eb_bus_address_busy(eb_bus *bus, const char *address)
{
	const eb__bus_addr *a;

	/* Asked after every frame a bridge client sends: most of the time
	 * nothing is busy, and then no lookup is needed (issue 25). */
	if (bus->flow.busy_addrs == 0) {
		return 0;
	}
	a = eb__bus_addr_find(bus, address);
	return a != NULL && a->busy;
}

void
eb_bus_pressure_set(eb_bus *bus, const char *address, int busy)
{
	eb__bus_addr *a;

	if (bus->life.closing) {
		return;
	}
	if (!busy) {
		a = eb__bus_addr_find(bus, address);
		if (a == NULL || !a->held_busy) {
			return;
		}
		a->held_busy = 0;
		eb__bus_pressure_update(bus, a);
		eb__bus_addr_maybe_free(bus, a);
		return;
	}
	a = eb__bus_addr_get(bus, address);
	a->held_busy = 1;
	eb__bus_pressure_update(bus, a);
}

void
eb_bus_pressure_watch(eb_bus *bus, eb_bus_pressure_fn fn, void *arg)
{
	EB_ASSERT(fn != NULL);
	EB_ASSERT(!bus->life.closing); /* no watch after eb_bus_close */
	eb__obs_add(&bus->flow.observers, (eb__obs_fn) fn, arg);
}

int
eb_bus_pressure_unwatch(eb_bus *bus, eb_bus_pressure_fn fn, void *arg)
{
	return eb__obs_remove(&bus->flow.observers, (eb__obs_fn) fn, arg) == 0
	           ? 0
	           : UV_ENOENT;
}

uint64_t
eb_bus_busy_episodes(const eb_bus *bus)
{
	return bus->flow.busy_episodes;
}

void
eb_bus_consumer_pause(eb_bus_consumer *c)
{
	eb__list *it;

	EB_ASSERT(c != NULL && !c->closed); /* use after close */
	if (c->paused) {
		return;
	}
	c->paused = 1;
	/* Off bus->turn.fifo: the turn does not see them until resumed. */
	for (it = c->queue.next; it != &c->queue; it = it->next) {
		eb__bus_qent *q = EB_CONTAINER_OF(it, eb__bus_qent, link);

		eb__list_remove(&q->turn.link);
	}
}

void
eb_bus_consumer_resume(eb_bus_consumer *c)
{
	eb__list *it;

	EB_ASSERT(c != NULL && !c->closed); /* use after close */
	if (!c->paused) {
		return;
	}
	c->paused = 0;
	for (it = c->queue.next; it != &c->queue; it = it->next) {
		eb__bus_qent *q = EB_CONTAINER_OF(it, eb__bus_qent, link);

		eb__list_insert_tail(&c->bus->turn.fifo, &q->turn.link);
	}
	if (!eb__list_empty(&c->queue)) {
		eb__bus_wake(c->bus);
	}
}
