/*
 * Shared data on the admin server (shared_admin.c): the ebnode_shared_*
 * metric families. A library of its own (eb_shared_admin) so that
 * libebnode stays without the admin server. Loop thread only.
 */
#ifndef EB_SHARED_SHARED_ADMIN_H
#define EB_SHARED_SHARED_ADMIN_H

#include "admin/admin.h"
#include "shared/host.h"

/* slot: where the owner keeps its host (read at each scrape; NULL: none,
 * zeros); borrowed, must outlive adm. */
void eb__shared_admin_register(eb__admin *adm, eb__shared_host **slot);

#endif
