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

static void
web_metrics(eb__prom *w, void *arg)
{
	eb_web_stats st;
	const char  *sockjs[] = { "transport", "sockjs", NULL };
	const char  *raw[] = { "transport", "websocket", NULL };
	const char  *xhr[] = { "transport", "xhr", NULL };

	eb_web_stats_get(arg, &st);
	eb__prom_one(w, "ebnode_web_sessions", "gauge",
	    "Open browser bridge WebSockets (SockJS and raw).", st.sessions);
	eb__prom_family(w, "ebnode_web_sessions_total", "counter",
	    "Browser bridge sessions opened, by transport.");
	eb__prom_u64(w, "ebnode_web_sessions_total", sockjs, st.sockjs_opened);
	eb__prom_u64(w, "ebnode_web_sessions_total", raw, st.raw_opened);
	eb__prom_u64(w, "ebnode_web_sessions_total", xhr, st.xhr_opened);
	eb__prom_one(w, "ebnode_web_xhr_sessions", "gauge",
	    "Open SockJS xhr/xhr_streaming sessions.", st.xhr_sessions);
	eb__prom_one(w, "ebnode_web_xhr_evicted_total", "counter",
	    "SockJS xhr sessions without a receiving request closed at "
	    "bridge.max_connections to make room for a new session.",
	    st.xhr_evicted);
	eb__prom_one(w, "ebnode_web_http_requests_total", "counter",
	    "HTTP request heads parsed on the web port.", st.http_requests);
	eb__prom_one(w, "ebnode_web_http_rejected_total", "counter",
	    "HTTP requests answered 4xx on the web port.", st.http_rejected);
	eb__prom_one(w, "ebnode_web_messages_in_total", "counter",
	    "WebSocket messages received from browser clients.",
	    st.ws_messages_in);
	eb__prom_one(w, "ebnode_web_heartbeats_total", "counter",
	    "SockJS heartbeats and WebSocket pings sent.", st.heartbeats);
}

void
eb__web_admin_register(eb__admin *adm, eb_web *w)
{
	if (w != NULL) {
		eb__admin_on_metrics(adm, web_metrics, w);
	}
}
