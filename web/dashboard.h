/*
 * The web front on the admin endpoint: its metrics, and the cluster
 * dashboard: one hand-written page (web/dashboard.html,
 * compiled in) served by the admin endpoint at GET / without the token;
 * the page polls /nodes, /leader and /metrics with the token taken from
 * its URL fragment (#token=...), so the data stays behind admin.token.
 *
 * Threads: loop thread only.
 */
#ifndef EB_WEB_DASHBOARD_H
#define EB_WEB_DASHBOARD_H

#include <ebnode/web.h>

#include "admin/admin.h"

/* Registers GET / (and GET /dashboard) on adm. */
void eb__web_dashboard_register(eb__admin *adm);
/* Registers the ebnode_web_* metric families of w (NULL: none); w must
 * outlive adm. */
void eb__web_admin_register(eb__admin *adm, eb_web *w);

#endif
