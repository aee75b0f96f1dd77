/* The dashboard page on the admin endpoint (dashboard.h). */
#include "web/dashboard.h"

#include <stddef.h>

#include "admin/admin.h"

/* dashboard_html.c, generated from dashboard.html at build time. */
extern const unsigned char eb__web_dashboard_html[];
extern const size_t        eb__web_dashboard_html_len;

static void
dashboard_route(const eb__admin_req *rq, eb__admin_resp *rs, void *arg)
{
	(void) rq;
	(void) arg;
	eb__admin_reply_text(rs, 200, "text/html; charset=utf-8",
	    (const char *) eb__web_dashboard_html, eb__web_dashboard_html_len);
}

void
eb__web_dashboard_register(eb__admin *adm)
{
	eb__admin_route_open(adm, "GET", "/", dashboard_route, NULL);
	eb__admin_route_open(adm, "GET", "/dashboard", dashboard_route, NULL);
}
