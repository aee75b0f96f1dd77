/*
 * The address table: a string-keyed intrusive hash map and the per-address
 * records (local consumers, remote interest, counters), plus the statistics
 * iteration of the public API. A memo of the last few records found
 * (eb__bus_addrs.memo) answers repeated lookups of one message's path
 * without hashing; it only ever holds records of the map, and a record
 * leaves it before it is freed. Loop thread only.
 */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "eventbus/eventbus_int.h"

eb__bus_addr *
eb__bus_addr_find(eb_bus *bus, const char *address)
{
	eb__bus_addrs *t = &bus->addr;
	size_t         n = strlen(address);
	eb__bus_addr  *a;
	eb__hent      *e;
	uint32_t       i;

	/* The memo first: it holds only records of the map, compared whole,
	 * so a hit is what the map would return. A miss costs a few length
	 * compares, whatever the address (peer-chosen ones included). */
	for (i = 0; i < EB__BUS_ADDR_MEMO; i++) {
		a = t->memo[i];
		if (a != NULL && a->address_len == n &&
		    memcmp(a->address, address, n) == 0) {
			return a;
		}
	}
	e = eb__hmap_get(&t->map, address);
	if (e == NULL) {
		return NULL;
	}
	a = EB_CONTAINER_OF(e, eb__bus_addr, hent);
	t->memo[t->memo_next++ % EB__BUS_ADDR_MEMO] = a;
	return a;
}

eb__bus_addr *
eb__bus_addr_get(eb_bus *bus, const char *address)
{
	eb__bus_addr *a = eb__bus_addr_find(bus, address);

	if (a != NULL) {
		return a;
	}
	a = eb__calloc(1, sizeof(*a));
	a->address = eb__strdup(address);
	a->address_len = strlen(address);
	a->hent.key = a->address;
	eb__list_init(&a->consumers);
	eb__hmap_put(&bus->addr.map, &a->hent);
	return a;
}

static void
addr_free(eb_bus *bus, eb__bus_addr *a)
{
	uint32_t i;

	for (i = 0; i < EB__BUS_ADDR_MEMO; i++) {
		if (bus->addr.memo[i] == a) {
			bus->addr.memo[i] = NULL;
		}
	}
	if (bus->remote.ops != NULL && a->remote != NULL) {
		bus->remote.ops->addr_free(bus->remote.ctx, a);
	}
	if (a->busy) {
		bus->flow.busy_addrs--; /* at close: busy to the end */
	}
	free(a->address);
	free(a);
}

void
eb__bus_addr_maybe_free(eb_bus *bus, eb__bus_addr *a)
{
	/* Counters go with the record: an address nobody handles anywhere
	 * costs nothing, so random addresses cannot grow the table. */
	if (a->n_local > 0 || a->n_remote > 0 || a->remote != NULL ||
	    a->held_busy) {
		return;
	}
	eb__hmap_del(&bus->addr.map, &a->hent);
	addr_free(bus, a);
}

void
eb__bus_addr_free_all(eb_bus *bus)
{
	uint32_t i;

	for (i = 0; i < bus->addr.map.nbuckets; i++) {
		eb__hent *e = bus->addr.map.buckets[i];

		while (e != NULL) {
			eb__hent     *next = e->next;
			eb__bus_addr *a =
			    EB_CONTAINER_OF(e, eb__bus_addr, hent);
			eb__list *it;

			while ((it = eb__list_first(&a->consumers)) != NULL) {
				eb_bus_consumer *c =
				    EB_CONTAINER_OF(it, eb_bus_consumer, link);

				eb__list_remove(it);
				eb__bus_consumer_free(c);
			}
			addr_free(bus, a);
			e = next;
		}
	}
	EB_ASSERT(bus->flow.busy_addrs == 0); /* counted exactly */
	eb__hmap_free(&bus->addr.map);
}

static void
stats_fill(eb_bus_addr_stats *s, const eb__bus_counters *c)
{
	s->sent = c->sent;
	s->published = c->published;
	s->received = c->received;
	s->replied = c->replied;
	s->failed = c->failed;
	s->dropped = c->dropped;
}

void
eb_bus_stats_foreach(eb_bus *bus, eb_bus_stats_fn fn, void *arg)
{
	uint32_t i;

	for (i = 0; i < bus->addr.map.nbuckets; i++) {
		eb__hent *e;

		for (e = bus->addr.map.buckets[i]; e != NULL; e = e->next) {
			eb__bus_addr *a =
			    EB_CONTAINER_OF(e, eb__bus_addr, hent);
			eb_bus_addr_stats s;

			memset(&s, 0, sizeof(s));
			s.address = a->address;
			s.handlers = a->n_local;
			s.local_only_handlers = a->n_local_only;
			s.remote_handlers = a->n_remote;
			s.remote_nodes = a->n_remote_nodes;
			stats_fill(&s, &a->c);
			fn(&s, arg);
		}
	}
}

void
eb_bus_stats_totals(eb_bus *bus, eb_bus_totals *out)
{
	memset(out, 0, sizeof(*out));
	out->addresses = bus->addr.map.count;
	out->pending_requests = bus->req.map.count;
	out->no_handlers = bus->stats.no_handlers;
	out->sent = bus->stats.totals.sent;
	out->published = bus->stats.totals.published;
	out->received = bus->stats.totals.received;
	out->replied = bus->stats.totals.replied;
	out->failed = bus->stats.totals.failed;
	out->dropped = bus->stats.totals.dropped;
	out->fenced = bus->fence.rejected;
	out->pending_receipts = bus->rcpt.n_open;
	out->receipt_failures = bus->rcpt.failures;
	out->requests_refused = bus->req.refused;
}
