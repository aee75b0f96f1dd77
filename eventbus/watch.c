/*
 * Reachable handler counts and their observer (eb_bus_handler_count,
 * eb_bus_set_watch): what the ingress gateway uses to know whether a leader
 * is reachable and when one becomes reachable. Loop thread only.
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
eb_bus_set_watch(eb_bus *bus, eb_bus_watch_fn fn, void *arg)
{
	bus->watch_fn = fn;
	bus->watch_arg = arg;
}

void
eb__bus_watch_notify(eb_bus *bus, const eb__bus_addr *a)
{
	if (bus->watch_fn != NULL && !bus->closing) {
		bus->watch_fn(bus, a->address, reachable(a), bus->watch_arg);
	}
}
