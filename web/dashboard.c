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

#define WS(m) EB__PROM_AT(eb_web_stats, m)

static const eb__prom_field transports[] = {
	{ "sockjs", WS(sockjs_opened) },
	{ "websocket", WS(raw_opened) },
	{ "xhr", WS(xhr_opened) },
};

static const eb__prom_desc families[] = {
	EB__PROM_ONE("ebnode_web_sessions", "gauge",
	    "Open browser bridge WebSockets (SockJS and raw).", WS(sessions)),
	EB__PROM_SET("ebnode_web_sessions_total", "counter",
	    "Browser bridge sessions opened, by transport.", "transport",
	    transports),
	EB__PROM_ONE("ebnode_web_xhr_sessions", "gauge",
	    "Open SockJS xhr/xhr_streaming sessions.", WS(xhr_sessions)),
	EB__PROM_ONE("ebnode_web_xhr_evicted_total", "counter",
	    "SockJS xhr sessions without a receiving request closed at "
	    "bridge.max_connections to make room for a new session.",
	    WS(xhr_evicted)),
	EB__PROM_ONE("ebnode_web_http_requests_total", "counter",
	    "HTTP request heads parsed on the web port.", WS(http_requests)),
	EB__PROM_ONE("ebnode_web_http_rejected_total", "counter",
	    "HTTP requests answered 4xx on the web port.", WS(http_rejected)),
	EB__PROM_ONE("ebnode_web_messages_in_total", "counter",
	    "WebSocket messages received from browser clients.",
	    WS(ws_messages_in)),
	EB__PROM_ONE("ebnode_web_heartbeats_total", "counter",
	    "SockJS heartbeats and WebSocket pings sent.", WS(heartbeats)),
};

static void
web_metrics(eb__prom *w, void *arg)
{
	eb_web_stats st;

	eb_web_stats_get(arg, &st);
	eb__prom_write(w, families, EB__PROM_LEN(families), &st);
}

void
eb__web_admin_register(eb__admin *adm, eb_web *w)
{
	if (w != NULL) {
		eb__admin_on_metrics(adm, web_metrics, w);
	}
}
