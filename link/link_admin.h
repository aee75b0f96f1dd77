/*
 * The node links on the admin server (link_admin.c): the per-peer metric
 * families ebnode_link_up, ebnode_link_ups_total, ebnode_link_frames_total,
 * ebnode_link_bytes_total, ebnode_link_queued_bytes, ebnode_link_version,
 * and per reason ebnode_link_down and ebnode_link_down_total. Kept out of
 * eb_link (library eb_link_admin) so that libebnode does not carry the
 * HTTP server. Loop thread only.
 */
#ifndef EB_LINK_LINK_ADMIN_H
#define EB_LINK_LINK_ADMIN_H

#include <ebnode/link.h>

#include "admin/admin.h"

/* Registers the link collector. m is borrowed and must outlive adm; NULL
 * (no links, a standalone node): the families are empty. */
void eb__link_admin_register(eb__admin *adm, eb_link_mgr *m);

#endif
