/*
 * Shared data on the admin server (shared_admin.c): the ebnode_shared_*
 * metric families and the "shared_zk" state of /health. A library of its own
 * (eb_shared_admin) so that libebnode stays without the admin server. Loop
 * thread only.
 */
#ifndef EB_SHARED_SHARED_ADMIN_H
#define EB_SHARED_SHARED_ADMIN_H

#include "admin/admin.h"
#include "shared/host.h"

/* The state of shared data's own ZooKeeper session for /health: "none"
 * (standalone or stopped), "connecting", "connected", "suspended",
 * "closed". slot: an eb__shared_host ** as below. */
const char *eb__shared_admin_zk_state(void *slot);
/* slot: where the owner keeps its host (read at each scrape; NULL: none,
 * zeros); borrowed, must outlive adm. */
void eb__shared_admin_register(eb__admin *adm, eb__shared_host **slot);

#endif
