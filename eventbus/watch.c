/*
 * Reachable handler counts and their observers (eb_bus_handler_count,
 * eb_bus_watch_add/remove): what the ingress gateway uses to know whether a
 * leader is reachable and when one becomes reachable. Loop thread only.
 */
#include <ebnode/bus.h>

#include "eventbus/eventbus_int.h"

static uint32_t
reachable(const eb__bus_addr *a)
{
	return a->n_local + a->n_remote;
}

uint32_t
eb_bus_handler_count(eb_bus *bus, const char *address)
{
	const eb__bus_addr *a = eb__bus_addr_find(bus, address);

	return a != NULL ? reachable(a) : 0;
}

void
eb_bus_watch_add(eb_bus *bus, eb_bus_watch_fn fn, void *arg)
{
	EB_ASSERT(fn != NULL);
	EB_ASSERT(!bus->life.closing); /* no watch after eb_bus_close */
	eb__obs_add(&bus->addr.watchers, (eb__obs_fn) fn, arg);
}

int
eb_bus_watch_remove(eb_bus *bus, eb_bus_watch_fn fn, void *arg)
{
	return eb__obs_remove(&bus->addr.watchers, (eb__obs_fn) fn, arg) == 0
	           ? 0
	           : UV_ENOENT;
}

void
eb__bus_watch_notify(eb_bus *bus, const eb__bus_addr *a)
{
	eb__obs_it it;
	uint32_t   count;

	if (bus->life.closing || eb__obs_count(&bus->addr.watchers) == 0) {
		return;
	}
	count = reachable(a);
	EB__OBS_EACH(&bus->addr.watchers, it)
	{
		((eb_bus_watch_fn) it.fn)(bus, a->address, count, it.arg);
	}
}
