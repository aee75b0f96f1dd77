/*
 * admin: the HTTP/1.1 endpoint for operational endpoints (admin.c), an
 * http/ server (http/server.h) with admin's options, token and GET
 * /metrics. It knows nothing of the node: the modules that own the data
 * register their routes and metric collectors on it.
 *
 *   eb__admin_opts o;
 *   eb__admin_opts_init(&o);                 (then listen, port, token...)
 *   eb__admin_new(loop, &o, &adm);
 *   eb__admin_route(adm, "GET", "/nodes", nodes_cb, ctx);
 *   eb__admin_on_metrics(adm, bus_metrics_cb, bus);
 *   port = eb__admin_start(adm);              (bound port, or < 0)
 *   ...
 *   eb__admin_close(adm, closed_cb, arg);     (frees adm, then closed_cb)
 *
 * GET /metrics is built in: it runs every collector in the order they
 * were added into one Prometheus text body (prom.h).
 *
 * A handler runs on the loop, synchronously, and fills the response with
 * eb__admin_reply_json(), eb__admin_reply_error() or eb__admin_reply_text();
 * a handler that sets nothing answers 500. Requests are complete and
 * bounded (method, path without the query string, query, body up to
 * 64 KiB) and already authenticated when a token is set (but on open
 * routes). Unknown paths get
 * 404, known paths with another method 405. An asynchronous route
 * (eb__admin_route_async) answers later with eb__admin_answer().
 *
 * Browsers (docs/ADMIN.md, "Browsers and other origins"): a request with
 * any method but GET, HEAD and OPTIONS is refused with 403 (before the
 * token check) when its Origin is neither this endpoint's own
 * ("http://" + Host) nor one of opts.cors_origins, or when its
 * Sec-Fetch-Site is "cross-site" or "same-site" (a configured origin
 * excepted); without a token it must also carry the header
 * EB_ADMIN_CSRF_HEADER, which a page can only send cross-origin after a
 * CORS preflight that the server approves for configured origins only.
 * CORS: GET answers carry Access-Control-Allow-Origin for a configured
 * origin (echoed) or, with a token set, "*"; never otherwise.
 *
 * Lifecycle: routes and collectors may be added until close; start at most
 * once; close exactly once (EB_ASSERT). Loop thread only.
 */
#ifndef EB_ADMIN_ADMIN_H
#define EB_ADMIN_ADMIN_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "admin/prom.h"
#include "common/budget.h"
#include "http/server.h"

typedef struct eb__admin eb__admin;

typedef struct eb__admin_opts {
	const char *listen;             /* host to bind (copied) */
	int         port;               /* 0: any free port */
	const char *token;              /* NULL or "": no auth (copied) */
	uint64_t    request_timeout_ms; /* per-request deadline */
	/* NULL or "": none; else origins ("http://host:port", scheme and
	 * host, no path) separated by spaces or commas, that may read with
	 * CORS and write (copied; eb__admin_origins_check). */
	const char *cors_origins;
	/* NULL: none. The node-wide input budget (common/budget.h, owned by
	 * the bridge, borrowed: it must outlive the admin server): request
	 * bodies and held pipelined bytes are charged to it before they are
	 * buffered; a request that does not fit is answered 503. */
	eb__budget *budget;
} eb__admin_opts;

/* The header a state-changing request needs without a token (any
 * non-empty value; ebctl sends it). */
#define EB_ADMIN_CSRF_HEADER "X-Ebnode-Admin"
/* At most this many cors_origins, each at most EB_ADMIN_ORIGIN_MAX bytes. */
#define EB_ADMIN_MAX_ORIGINS 16
#define EB_ADMIN_ORIGIN_MAX  255

/* A request and a response of the http/ server (http/server.h): method,
 * path (no query), query ("" if none), body (NUL-terminated, "" if none)
 * and body_len; status (0: not set), content_type (a static string), body
 * (owned, malloc'd) and body_len. */
typedef eb__http_req  eb__admin_req;
typedef eb__http_resp eb__admin_resp;

typedef void (*eb__admin_handler)(
    const eb__admin_req *rq, eb__admin_resp *rs, void *arg);
/* An asynchronous route: answer id later (or now) with eb__admin_answer().
 * rq is borrowed for the call. */
typedef void (*eb__admin_async_handler)(
    eb__admin *adm, const eb__admin_req *rq, uint64_t id, void *arg);
/* Writes metric families into w (GET /metrics). */
typedef void (*eb__admin_collector)(eb__prom *w, void *arg);
typedef void (*eb__admin_close_cb)(void *arg);

/* listen "127.0.0.1", port 0, no token, 10 s per request. */
void eb__admin_opts_init(eb__admin_opts *o);
/* Creates a server (no I/O yet). 0 or a negative error. */
int eb__admin_new(uv_loop_t *loop, const eb__admin_opts *o, eb__admin **out);
/* Serves method path with handler(rq, rs, arg); arg is borrowed and must
 * outlive the server. A later route for the same method and path is never
 * reached. */
void eb__admin_route(eb__admin *adm, const char *method, const char *path,
    eb__admin_handler handler, void *arg);
/* The same, but served without the token: only for what reveals nothing
 * by itself (the dashboard page, whose data requests carry the token). */
void eb__admin_route_open(eb__admin *adm, const char *method, const char *path,
    eb__admin_handler handler, void *arg);
/* Serves method path (with the token, as eb__admin_route) with an
 * asynchronous handler. The connection waits for the answer within its
 * request deadline (admin.request_timeout_ms); it is not evicted for a
 * new connection meanwhile. */
void eb__admin_route_async(eb__admin *adm, const char *method, const char *path,
    eb__admin_async_handler handler, void *arg);
/* Answers the asynchronous request id with rs (borrowed; the body is
 * copied). 0, or UV_ENOENT when the request is gone (its connection hit
 * its deadline or closed, or the server is closing). */
int eb__admin_answer(eb__admin *adm, uint64_t id, const eb__admin_resp *rs);
/* The GET /metrics body: every collector's families (malloc'd, *len its
 * length, NUL-terminated). */
char *eb__admin_metrics_text(eb__admin *adm, size_t *len);
/* Checks an admin.cors_origins value: 0, or -1 with the reason in why. */
int eb__admin_origins_check(const char *list, char *why, size_t why_len);
/* Adds a metrics collector; GET /metrics calls them in this order. */
void eb__admin_on_metrics(
    eb__admin *adm, eb__admin_collector collector, void *arg);
/* Binds and listens: the bound port (> 0), or a negative error (then close
 * the server). */
int eb__admin_start(eb__admin *adm);
/* Closes every connection and the listener, frees adm and then calls
 * cb(arg) (cb may be NULL), always on a later loop turn. */
void eb__admin_close(eb__admin *adm, eb__admin_close_cb cb, void *arg);

/* A collector for the process families (resident memory, CPU time, and
 * uptime since *arg, a const uint64_t of eb__mono_ms()). */
void eb__admin_process_metrics(eb__prom *w, void *arg);
/* ebnode_errors_total{type}, errors by type across modules: the node
 * opens the family (eb__admin_errors_family), then each module that
 * counts errors writes its rows, one per field of f read from src. */
void eb__admin_errors_family(eb__prom *w);
void eb__admin_error_rows(
    eb__prom *w, const eb__prom_field *f, size_t n, const void *src);

/* Serialises v (borrowed) as the response body, application/json. */
void eb__admin_reply_json(eb__admin_resp *rs, int status, json_t *v);
/* {"error": code, "message": msg} with status. */
void eb__admin_reply_error(
    eb__admin_resp *rs, int status, const char *code, const char *msg);
/* A text body (copied), e.g. Prometheus "text/plain; version=0.0.4". */
void eb__admin_reply_text(eb__admin_resp *rs, int status,
    const char *content_type, const char *body, size_t len);

#endif
