/*
 * The bus on the admin server (bus_admin.c): GET /subscriptions (the
 * address table as JSON) and the bus metric families (ebnode_bus_*).
 * Kept out of eb_eventbus (library eb_bus_admin) so that the embeddable
 * libebnode does not carry the HTTP server. Loop thread only.
 */
#ifndef EB_EVENTBUS_BUS_ADMIN_H
#define EB_EVENTBUS_BUS_ADMIN_H

#include <ebnode/bus.h>

#include "admin/admin.h"

/* At most this many addresses get per-address bus series (the busiest by
 * total messages); ebnode_bus_addresses shows how many exist. */
#define EB__BUS_METRICS_TOP 32

/* Registers GET /subscriptions and the bus collector. bus is borrowed and
 * must outlive adm; NULL (not running): /subscriptions answers 503 and the
 * families show zeros. */
void eb__bus_admin_register(eb__admin *adm, eb_bus *bus);
/* The bus's rows of ebnode_errors_total (bus NULL: zeros). */
void eb__bus_admin_errors(eb__prom *w, eb_bus *bus);

#endif
