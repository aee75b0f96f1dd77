/*
 * The bridge on the admin server (bridge_admin.c): GET /bridge (counters
 * and the connection list as JSON) and the bridge metric families
 * (ebnode_bridge_*). Loop thread only.
 */
#ifndef EB_BRIDGE_BRIDGE_ADMIN_H
#define EB_BRIDGE_BRIDGE_ADMIN_H

#include <stdbool.h>

#include <ebnode/bridge.h>

#include "admin/admin.h"
#include "common/budget.h"

/* What /bridge shows besides the bridge's own counters. */
typedef struct eb__bridge_admin {
	eb_bridge *bridge; /* borrowed; NULL: disabled (zeros) */
	int        port;   /* bound port (0: disabled) */
	bool       tls;    /* TLS configured */
} eb__bridge_admin;

/* Registers GET /bridge and the bridge collector. ctx is borrowed and must
 * outlive adm. */
void eb__bridge_admin_register(eb__admin *adm, eb__bridge_admin *ctx);
/* The node-wide input budget (common/budget.h), owned by b, for the other
 * servers that buffer client input (the admin server's opts.budget). */
eb__budget *eb__bridge_budget(eb_bridge *b);
/* The bridge's rows of ebnode_errors_total (b NULL: zeros). */
void eb__bridge_admin_errors(eb__prom *w, eb_bridge *b);

#endif
