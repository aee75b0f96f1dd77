/*
 * The admin HTTP/1.1 server (admin.h): routes and metric collectors
 * registered by the modules that own the data, GET /metrics built in.
 *
 * Bounded everywhere: at most ADMIN_MAX_CONNS connections, a request head
 * of at most 8 KiB and a body of at most 64 KiB (413), one request at a
 * time per connection (a pipelined request, at most one 4 KiB read, is held
 * with reading stopped until the answer before it is written). The bytes
 * a client makes a connection hold beyond its fixed struct (the body, the
 * held read) are charged to the node-wide input budget (opts.budget) before
 * they are buffered: a request that does not fit gets 503 input_budget and
 * the connection is closed.
 * Each request has a deadline (opts.request_timeout_ms) counted from the
 * moment the connection is ready for it (accept, or the end of the
 * previous response), never reset by a byte, so a client trickling bytes
 * cannot hold a slot; and when all slots are taken, the connection whose
 * request started first and is not being answered is closed for the new
 * one (when every connection is being answered, the new one gets 503), so
 * slow clients cannot lock /health out.
 * Malformed requests get 400 and the connection is closed; keep-alive is
 * honoured otherwise. With a token, every route but the open ones
 * (eb__admin_route_open) requires "Authorization: Bearer <token>" (401
 * otherwise; compared in constant time).
 *
 * Browsers: a state-changing request (any method but GET, HEAD, OPTIONS)
 * from a page of another origin is refused (403 cross_site) whether or
 * not a token is set: its Origin must be ours ("http://" + Host) or a
 * configured one, its Sec-Fetch-Site same-origin or none (a configured
 * origin excepted), and without a token it must carry EB_ADMIN_CSRF_HEADER,
 * a header a page cannot send to another origin without a CORS preflight,
 * which is approved for configured origins only. CORS on GET answers: the
 * configured origins (echoed), or "*" when a token is set (every data
 * route then needs it, and no ambient credential is used); no CORS header
 * otherwise. An asynchronous route's connection waits for
 * eb__admin_answer() within its deadline. Loop thread only.
 */
#include "admin/admin.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/buf.h"
#include "common/list.h"
#include "common/vec.h"
#include "http/origin.h"
#include "http/reader.h"
#include "http/response.h"

#define ADMIN_MAX_CONNS 64
#define ADMIN_MAX_HEAD  8192u
#define ADMIN_MAX_BODY  65536u
#define ADMIN_MAX_URL   EB__HTTP_URL_MAX
#define ADMIN_MAX_HDRS  100u
#define ADMIN_CORS_MAX  (EB_ADMIN_ORIGIN_MAX + 192u)

#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

typedef struct admin_route {
	char                   *method; /* owned */
	char                   *path;   /* owned */
	eb__admin_handler       fn;     /* NULL for an asynchronous route */
	eb__admin_async_handler afn;    /* NULL for a synchronous one */
	void                   *arg;
	int                     open; /* served without the token */
} admin_route;

typedef struct admin_collector {
	eb__admin_collector fn;
	void               *arg;
} admin_collector;

typedef struct admin_conn admin_conn;

struct eb__admin {
	uv_loop_t         *loop; /* borrowed */
	uv_tcp_t           listener;
	eb__list           conns;
	int                nconns;
	int                open; /* handles whose close is pending */
	int                started;
	int                closing;
	eb__admin_close_cb close_cb;
	void              *close_arg;
	char              *listen;     /* owned */
	int                port;       /* to bind (0: any) */
	char              *token;      /* owned, NULL: no auth */
	uint64_t           request_ms; /* per-request deadline */
	eb__vec            routes;     /* of admin_route */
	eb__vec            collectors; /* of admin_collector */
	eb__http_origins   origins;    /* admin.cors_origins */
	eb__budget        *budget;     /* borrowed, NULL: none */
	uint64_t           next_wait;  /* the last asynchronous request id */
};

typedef struct admin_write {
	uv_write_t  req;
	admin_conn *c;
	eb__buf     buf; /* owned */
	int         close_after;
} admin_write;

struct admin_conn {
	eb__list        link;
	eb__admin      *a; /* borrowed */
	uv_tcp_t        tcp;
	uv_timer_t      idle;
	int             open; /* handles whose close is pending */
	int             closing;
	int             writing;      /* a response is being written */
	uint64_t        req_start_ms; /* the current request's start */
	eb__http_reader rd;           /* the request (http/reader.h) */
	char           *body;         /* owned */
	size_t          body_len;
	int             refused; /* the body did not fit the budget */
	/* An asynchronous route's answer is awaited (eb__admin_answer): its
	 * id, keep-alive and CORS headers. */
	int      waiting;
	uint64_t wait_id;
	int      wait_keep;
	char     cors[ADMIN_CORS_MAX];
	/* Bytes of the next request that came before this answer's write
	 * completed (owned; at most one read): reading stops until then. */
	char  *held;
	size_t held_len;
	/* Bytes charged to a->budget: body_len + held_len. */
	size_t charged;
};

static void conn_close(admin_conn *c);
static void conn_uncharge(admin_conn *c, size_t n);
static void idle_cb(uv_timer_t *t);
static void conn_feed(admin_conn *c, const char *data, size_t len);
static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf);

/* ---- responses ---- */

void
eb__admin_reply_json(eb__admin_resp *rs, int status, json_t *v)
{
	char *s =
	    v != NULL ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;

	free(rs->body);
	if (s == NULL) {
		/* A handler bug (a failed json_pack): answer, never crash. */
		status = 500;
		s = eb__strdup("{\"error\":\"internal\"}");
	}
	rs->status = status;
	rs->content_type = "application/json";
	rs->body_len = s != NULL ? strlen(s) : 0;
	rs->body = s;
}

void
eb__admin_reply_error(
    eb__admin_resp *rs, int status, const char *code, const char *msg)
{
	json_t *o = json_pack("{s:s, s:s}", "error", code, "message", msg);

	eb__admin_reply_json(rs, status, o);
	json_decref(o);
}

void
eb__admin_reply_text(eb__admin_resp *rs, int status, const char *content_type,
    const char *body, size_t len)
{
	free(rs->body);
	rs->status = status;
	rs->content_type = content_type;
	rs->body = eb__malloc(len + 1);
	memcpy(rs->body, body, len);
	rs->body[len] = '\0';
	rs->body_len = len;
}

static void
write_cb(uv_write_t *req, int status)
{
	admin_write *w = (admin_write *) req;
	admin_conn  *c = w->c;

	c->writing = 0;
	eb__buf_free(&w->buf);
	if (status != 0 || w->close_after) {
		conn_close(c);
	} else if (!c->closing) {
		/* Keep-alive: the next request's deadline starts now. */
		c->req_start_ms = uv_now(c->tcp.loop);
		(void) uv_timer_start(&c->idle, idle_cb, c->a->request_ms, 0);
		if (c->held != NULL) {
			char  *held = c->held;
			size_t len = c->held_len;

			/* The client sent its next request before this
			 * callback ran (it runs on a later loop phase than
			 * the kernel took the answer): serve it now. */
			c->held = NULL;
			c->held_len = 0;
			conn_uncharge(c, len); /* parsed now, freed below */
			if (uv_read_start((uv_stream_t *) &c->tcp, alloc_cb,
			        read_cb) != 0) {
				conn_close(c);
			} else {
				conn_feed(c, held, len);
			}
			free(held);
		}
	}
	free(w);
}

static void
conn_send(admin_conn *c, const eb__admin_resp *rs, int keep_alive,
    const char *extra_headers)
{
	admin_write       *w;
	uv_buf_t           b;
	eb__http_resp_head h = {
		.status = rs->status,
		.content_type = rs->content_type,
		.cache_control = "no-store",
		.connection = keep_alive ? "keep-alive" : "close",
		.extra = extra_headers,
	};

	EB_ASSERT(!c->closing && !c->writing);
	w = eb__calloc(1, sizeof(*w));
	w->c = c;
	w->close_after = !keep_alive;
	eb__buf_init(&w->buf);
	eb__http_response_write(&w->buf, &h, rs->body, rs->body_len, 0);
	b = uv_buf_init(w->buf.data, (unsigned) eb__buf_avail(&w->buf));
	c->writing = 1;
	if (uv_write(&w->req, (uv_stream_t *) &c->tcp, &b, 1, write_cb) != 0) {
		c->writing = 0;
		eb__buf_free(&w->buf);
		free(w);
		conn_close(c);
	}
}

static void
send_error(admin_conn *c, int status, const char *code, const char *msg,
    int keep_alive, const char *cors)
{
	eb__admin_resp rs;
	char           hdrs[ADMIN_CORS_MAX + 32];

	memset(&rs, 0, sizeof(rs));
	eb__admin_reply_error(&rs, status, code, msg);
	(void) snprintf(hdrs, sizeof(hdrs), "%s%s",
	    status == 401 ? "WWW-Authenticate: Bearer\r\n" : "",
	    cors != NULL ? cors : "");
	conn_send(c, &rs, keep_alive, hdrs);
	free(rs.body);
}

/* ---- GET /metrics ---- */

static void
metrics_route(const eb__admin_req *rq, eb__admin_resp *rs, void *arg)
{
	eb__admin *adm = arg;
	eb__prom   w;
	size_t     i;

	(void) rq;
	eb__prom_init(&w);
	for (i = 0; i < adm->collectors.len; i++) {
		const admin_collector *c = eb__vec_at(&adm->collectors, i);

		c->fn(&w, c->arg);
	}
	eb__admin_reply_text(
	    rs, 200, PROM_CONTENT_TYPE, eb__prom_data(&w), eb__prom_len(&w));
	eb__prom_free(&w);
}

/* ---- request dispatch ---- */

/* Constant-time comparison of the bearer token. */
static int
token_ok(const eb__admin *a, const char *auth, size_t len)
{
	static const char prefix[] = "Bearer ";
	size_t            tl;
	size_t            i;
	unsigned char     diff = 0;

	if (a->token == NULL) {
		return 1;
	}
	if (len < sizeof(prefix) - 1 ||
	    strncasecmp(auth, prefix, sizeof(prefix) - 1) != 0) {
		return 0;
	}
	auth += sizeof(prefix) - 1;
	len -= sizeof(prefix) - 1;
	tl = strlen(a->token);
	if (len != tl) {
		return 0;
	}
	for (i = 0; i < tl; i++) {
		diff |= (unsigned char) (auth[i] ^ a->token[i]);
	}
	return diff == 0;
}

/* 1 when the first route for method and path is open (no token). */
static int
route_open(const eb__admin *a, const char *method, const char *path)
{
	size_t i;

	for (i = 0; i < a->routes.len; i++) {
		const admin_route *r = eb__vec_at(&a->routes, i);

		if (strcmp(r->path, path) == 0 &&
		    strcmp(r->method, method) == 0) {
			return r->open;
		}
	}
	return 0;
}

/* 1 when a route for method and path exists. */
static int
route_exists(const eb__admin *a, const char *method, const char *path)
{
	size_t i;

	for (i = 0; i < a->routes.len; i++) {
		const admin_route *r = eb__vec_at(&a->routes, i);

		if (strcmp(r->path, path) == 0 &&
		    strcmp(r->method, method) == 0) {
			return 1;
		}
	}
	return 0;
}

/* 1 for the methods that change nothing (GET, HEAD, OPTIONS). */
static int
method_safe(const char *method)
{
	return strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0 ||
	       strcmp(method, "OPTIONS") == 0;
}

/* 1 when a route on path has a method that changes state. */
static int
route_writable(const eb__admin *a, const char *path)
{
	size_t i;

	for (i = 0; i < a->routes.len; i++) {
		const admin_route *r = eb__vec_at(&a->routes, i);

		if (strcmp(r->path, path) == 0 && !method_safe(r->method)) {
			return 1;
		}
	}
	return 0;
}

/* Runs the route for rq's path and method. Without an answer, rs gets
 * 500 (the route set none), 405 (known path, other method) or 404. 1 when
 * the route is asynchronous: c waits for eb__admin_answer() (which may
 * have come already) and rs is unused. */
static int
route_run(admin_conn *c, const eb__admin_req *rq, eb__admin_resp *rs)
{
	const eb__vec *routes = &c->a->routes;
	int            path_known = 0;
	size_t         i;

	for (i = 0; i < routes->len; i++) {
		const admin_route *r = eb__vec_at(routes, i);

		if (strcmp(r->path, rq->path) != 0) {
			continue;
		}
		path_known = 1;
		if (strcmp(r->method, rq->method) != 0) {
			continue;
		}
		if (r->afn != NULL) {
			c->waiting = 1;
			c->wait_id = ++c->a->next_wait;
			r->afn(c->a, rq, c->wait_id, r->arg);
			return 1;
		}
		r->fn(rq, rs, r->arg);
		break;
	}
	if (rs->status != 0) {
		return 0;
	}
	if (i < routes->len) {
		eb__admin_reply_error(rs, 500, "internal", "no response");
	} else if (path_known) {
		eb__admin_reply_error(rs, 405, "method_not_allowed",
		    "method not allowed for this path");
	} else {
		eb__admin_reply_error(rs, 404, "not_found", "no such route");
	}
	return 0;
}

/* ---- browsers: origins, CORS, cross-site writes ---- */

/* 1 when the request's Origin is one of admin.cors_origins. */
static int
origin_configured(const admin_conn *c)
{
	return eb__http_origin_configured(&c->rd.browser, &c->a->origins);
}

/* The CORS header lines of an answer to c's GET or preflight (origin.h). */
static void
cors_headers(const admin_conn *c, char *out, size_t n)
{
	eb__http_cors(
	    &c->rd.browser, &c->a->origins, c->a->token != NULL, out, n);
}

/*
 * OPTIONS: a CORS preflight. Approved (204) for a GET route when CORS
 * applies (above), and for a state-changing route only from a configured
 * origin; from any other Origin it is refused (403), so the browser never
 * sends the actual request. 0 when this was no preflight (no Origin, or
 * no route on the path): the request is routed as any other.
 */
static int
preflight(admin_conn *c, const char *path, int keep)
{
	eb__admin_resp rs;
	char           cors[ADMIN_CORS_MAX];
	char           hdrs[ADMIN_CORS_MAX + 192];
	int            get = route_exists(c->a, "GET", path);
	int            write = route_writable(c->a, path);

	if (!c->rd.browser.origin.seen || (!get && !write)) {
		return 0;
	}
	cors_headers(c, cors, sizeof(cors));
	if (cors[0] == '\0' || (!get && !origin_configured(c))) {
		send_error(c, 403, "cors_refused",
		    "CORS is not allowed for this origin", keep, NULL);
		return 1;
	}
	(void) snprintf(hdrs, sizeof(hdrs),
	    "%sAccess-Control-Allow-Methods: %s\r\n"
	    "Access-Control-Allow-Headers: Authorization%s\r\n"
	    "Access-Control-Max-Age: 600\r\n",
	    cors, origin_configured(c) ? "GET, POST, PUT, DELETE" : "GET",
	    origin_configured(c) ? ", Content-Type, " EB_ADMIN_CSRF_HEADER
	                         : "");
	memset(&rs, 0, sizeof(rs));
	eb__admin_reply_text(&rs, 204, "text/plain", "", 0);
	conn_send(c, &rs, keep, hdrs);
	free(rs.body);
	return 1;
}

/* The checks before the route: cross-site writes (403), then the token
 * (401). 0 when the request may be routed (else it was answered). */
static int
admit(admin_conn *c, const char *method, const char *path, int keep,
    const char *cors)
{
	char        q[EB_LOG_QUOTE_MAX];
	const char *why = NULL;

	if (!method_safe(method) &&
	    (why = eb__http_cross_site(&c->rd.browser, &c->a->origins,
	         c->a->token != NULL)) != NULL) {
		EB_LOG_RL_NOTICE("admin",
		    "cross-site-refused: method=%s path=%s origin=%s", method,
		    eb_log_quote(q, sizeof(q), path),
		    c->rd.browser.origin.seen ? "foreign" : "none");
		send_error(c, 403, "cross_site", why, keep, NULL);
		return -1;
	}
	if (!route_open(c->a, method, path) &&
	    !token_ok(c->a, c->rd.auth, c->rd.auth_len)) {
		EB_LOG_WARN("admin", "unauthorized: path=%s",
		    eb_log_quote(q, sizeof(q), path));
		send_error(c, 401, "unauthorized", "missing or wrong token",
		    keep, strcmp(method, "GET") == 0 ? cors : NULL);
		return -1;
	}
	return 0;
}

static void
dispatch(admin_conn *c)
{
	eb__admin_req  rq;
	eb__admin_resp rs;
	char           path[ADMIN_MAX_URL + 1];
	char           query[ADMIN_MAX_URL + 1];
	char           q[EB_LOG_QUOTE_MAX];
	const char    *method = eb__http_reader_method(&c->rd);
	int            keep = eb__http_reader_keep_alive(&c->rd);
	int            get = strcmp(method, "GET") == 0;

	memset(&rs, 0, sizeof(rs));
	if (c->rd.auth_over) {
		/* An Authorization value longer than any token. */
		send_error(
		    c, 413, "too_large", "request head too large", 0, NULL);
		return;
	}
	if (eb__http_reader_target(&c->rd, path, query) != 0) {
		send_error(
		    c, 400, "bad_request", "malformed request target", 0, NULL);
		return;
	}
	if (strcmp(method, "OPTIONS") == 0 && preflight(c, path, keep)) {
		return;
	}
	cors_headers(c, c->cors, sizeof(c->cors));
	if (!get) {
		c->cors[0] = '\0'; /* CORS for reads only */
	}
	if (admit(c, method, path, keep, c->cors) != 0) {
		return;
	}
	rq.method = method;
	rq.path = path;
	rq.query = query;
	rq.body = c->body != NULL ? c->body : "";
	rq.body_len = c->body_len;
	c->wait_keep = keep;
	if (route_run(c, &rq, &rs)) {
		return; /* eb__admin_answer() sends the response */
	}
	EB_LOG_DEBUG("admin", "request: method=%s path=%s status=%d", method,
	    eb_log_quote(q, sizeof(q), path), rs.status);
	conn_send(c, &rs, keep, c->cors);
	free(rs.body);
}

/* ---- the input budget ---- */

/* Charges n more bytes of this connection to the node-wide budget: 0, or
 * UV_ENOBUFS (nothing charged). */
static int
conn_charge(admin_conn *c, size_t n)
{
	if (c->a->budget != NULL && eb__budget_charge(c->a->budget, n) != 0) {
		return UV_ENOBUFS;
	}
	c->charged += n;
	return 0;
}

static void
conn_uncharge(admin_conn *c, size_t n)
{
	EB_ASSERT(n <= c->charged);
	c->charged -= n;
	if (c->a->budget != NULL) {
		eb__budget_release(c->a->budget, n);
	}
}

static void
conn_body_free(admin_conn *c)
{
	conn_uncharge(c, c->body_len);
	free(c->body);
	c->body = NULL;
	c->body_len = 0;
}

/* ---- the request body (http/reader.h) ---- */

/* Keeps body bytes, charged to the input budget before they are kept. */
static int
body_cb(eb__http_reader *r, const char *at, size_t len, void *arg)
{
	admin_conn *c = arg;

	(void) r;
	if (conn_charge(c, len) != 0) {
		c->refused = 1;
		return 1;
	}
	c->body = eb__realloc(c->body, c->body_len + len + 1);
	memcpy(c->body + c->body_len, at, len);
	c->body_len += len;
	c->body[c->body_len] = '\0';
	return 0;
}

/* ---- connections ---- */

static void
admin_free(eb__admin *a)
{
	size_t i;

	for (i = 0; i < a->routes.len; i++) {
		admin_route *r = eb__vec_at(&a->routes, i);

		free(r->method);
		free(r->path);
	}
	eb__vec_free(&a->routes);
	eb__vec_free(&a->collectors);
	eb__http_origins_free(&a->origins);
	free(a->listen);
	free(a->token);
	free(a);
}

/* One handle (the listener, or a connection's last) finished closing. */
static void
admin_release(eb__admin *a)
{
	EB_ASSERT(a->open > 0);
	if (--a->open == 0) {
		eb__admin_close_cb cb = a->close_cb;
		void              *arg = a->close_arg;

		EB_ASSERT(a->closing);
		admin_free(a);
		if (cb != NULL) {
			cb(arg);
		}
	}
}

static void
conn_handle_closed_cb(uv_handle_t *h)
{
	admin_conn *c = h->data;
	eb__admin  *a = c->a;

	EB_ASSERT(c->closing && c->open > 0);
	if (--c->open > 0) {
		return;
	}
	conn_body_free(c);
	if (c->held != NULL) {
		conn_uncharge(c, c->held_len);
		free(c->held);
	}
	EB_ASSERT(c->charged == 0);
	free(c);
	admin_release(a);
}

static void
conn_close(admin_conn *c)
{
	if (c->closing) {
		return;
	}
	c->closing = 1;
	eb__list_remove(&c->link);
	c->a->nconns--;
	uv_close((uv_handle_t *) &c->tcp, conn_handle_closed_cb);
	uv_close((uv_handle_t *) &c->idle, conn_handle_closed_cb);
}

static void
idle_cb(uv_timer_t *t)
{
	conn_close(t->data);
}

static void
alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void) h;
	(void) suggested;
	buf->base = eb__malloc(4096);
	buf->len = 4096;
}

/* Keeps len bytes of the next request until the current answer has been
 * written, and stops reading meanwhile (so at most one read is held). */
static void
conn_hold(admin_conn *c, const char *data, size_t len)
{
	if (c->held != NULL) {
		conn_close(c); /* cannot happen: reading was stopped */
		return;
	}
	if (conn_charge(c, len) != 0) {
		conn_close(c); /* the node's input budget is full */
		return;
	}
	c->held = eb__malloc(len);
	memcpy(c->held, data, len);
	c->held_len = len;
	(void) uv_read_stop((uv_stream_t *) &c->tcp);
}

/* Parses data: a complete request is dispatched (one at a time: bytes
 * after it are held until its answer is written), a bad or oversized one
 * answered 400 or 413 (closing). */
static void
conn_feed(admin_conn *c, const char *data, size_t len)
{
	size_t          done = 0;
	eb__http_result res;

	res = eb__http_reader_feed(&c->rd, data, len, &done);
	switch (res) {
	case EB_HTTP_RREFUSED:
		EB_LOG_RL_WARN("admin", "input-budget-refused: body_bytes=%zu",
		    c->body_len);
		send_error(c, 503, "input_budget",
		    "the node's input budget is full", 0, NULL);
		break;
	case EB_HTTP_RBODY:
		send_error(
		    c, 413, "too_large", "request body too large", 0, NULL);
		break;
	case EB_HTTP_RHEAD:
		send_error(
		    c, 413, "too_large", "request head too large", 0, NULL);
		break;
	case EB_HTTP_RBAD:
		EB_LOG_DEBUG("admin", "bad-request: err=%s",
		    eb__http_reader_error(&c->rd));
		send_error(
		    c, 400, "bad_request", "malformed HTTP request", 0, NULL);
		break;
	case EB_HTTP_RREQUEST:
		if (done < len) {
			conn_hold(c, data + done, len - done);
		}
		dispatch(c);
		/* The body was borrowed by the route for its call. */
		conn_body_free(c);
		break;
	default:
		break;
	}
}

static void
read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	admin_conn *c = s->data;

	if (nread < 0 || c->closing) {
		/* EOF or error. */
		free(buf->base);
		if (nread < 0) {
			conn_close(c);
		}
		return;
	}
	if (nread > 0 && (c->writing || c->waiting)) {
		/* The next request while this one is being answered: its
		 * write callback has not run yet, or an asynchronous route
		 * has not answered. Held, not parsed, until the answer is
		 * written. */
		conn_hold(c, buf->base, (size_t) nread);
	} else if (nread > 0) {
		conn_feed(c, buf->base, (size_t) nread);
	}
	free(buf->base);
}

static void
free_handle_cb(uv_handle_t *h)
{
	free(h);
}

static void
refuse_write_cb(uv_write_t *req, int status)
{
	(void) status;
	uv_close((uv_handle_t *) req->handle, free_handle_cb);
	free(req);
}

/*
 * All slots taken: closes the connection whose request started first among
 * those not being answered (a slow or idle client), logged rate-limited.
 */
static void
evict_oldest(eb__admin *a)
{
	admin_conn *old = NULL;
	eb__list   *it;

	for (it = a->conns.next; it != &a->conns; it = it->next) {
		admin_conn *c = EB_CONTAINER_OF(it, admin_conn, link);

		if (!c->writing && !c->waiting &&
		    (old == NULL || c->req_start_ms < old->req_start_ms)) {
			old = c;
		}
	}
	if (old != NULL) {
		EB_LOG_RL_NOTICE("admin", "conn-evicted: age_ms=%llu open=%d",
		    (unsigned long long) (uv_now(old->tcp.loop) -
		                          old->req_start_ms),
		    a->nconns);
		conn_close(old);
	}
}

static void
connection_cb(uv_stream_t *server, int status)
{
	eb__admin      *a = server->data;
	admin_conn     *c;
	eb__http_limits lim = {
		.max_url = ADMIN_MAX_URL,
		.max_head = ADMIN_MAX_HEAD,
		.max_headers = ADMIN_MAX_HDRS,
		.max_body = ADMIN_MAX_BODY,
	};
	static char busy[] =
	    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: "
	    "application/json\r\nContent-Length: 23\r\nConnection: "
	    "close\r\n\r\n{\"error\":\"too_many\"}\n\n\n";

	if (status != 0 || a->closing) {
		return;
	}
	if (a->nconns >= ADMIN_MAX_CONNS) {
		evict_oldest(a);
	}
	if (a->nconns >= ADMIN_MAX_CONNS) {
		uv_tcp_t   *t = eb__malloc(sizeof(*t));
		uv_write_t *w = eb__malloc(sizeof(*w));
		uv_buf_t    b = uv_buf_init(busy, sizeof(busy) - 1);

		(void) uv_tcp_init(server->loop, t);
		if (uv_accept(server, (uv_stream_t *) t) != 0 ||
		    uv_write(w, (uv_stream_t *) t, &b, 1, refuse_write_cb) !=
		        0) {
			free(w);
			uv_close((uv_handle_t *) t, free_handle_cb);
		}
		return;
	}
	c = eb__calloc(1, sizeof(*c));
	c->a = a;
	(void) uv_tcp_init(server->loop, &c->tcp);
	(void) uv_timer_init(server->loop, &c->idle);
	c->tcp.data = c;
	c->idle.data = c;
	c->open = 2;
	a->open++;
	a->nconns++;
	eb__list_insert_tail(&a->conns, &c->link);
	eb__http_reader_init(&c->rd, &lim, body_cb, c);
	if (uv_accept(server, (uv_stream_t *) &c->tcp) != 0 ||
	    uv_read_start((uv_stream_t *) &c->tcp, alloc_cb, read_cb) != 0) {
		conn_close(c);
		return;
	}
	c->req_start_ms = uv_now(server->loop);
	(void) uv_timer_start(&c->idle, idle_cb, a->request_ms, 0);
}

/* ---- lifecycle ---- */

void
eb__admin_opts_init(eb__admin_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->listen = "127.0.0.1";
	o->request_timeout_ms = 10000;
}

int
eb__admin_new(uv_loop_t *loop, const eb__admin_opts *o, eb__admin **out)
{
	eb__admin       *a;
	eb__http_origins origins;
	char             why[128];

	if (loop == NULL || o == NULL || o->listen == NULL || out == NULL ||
	    o->port < 0 || o->port > 65535 || o->request_timeout_ms == 0) {
		return UV_EINVAL;
	}
	if (eb__http_origins_parse(
	        o->cors_origins, &origins, why, sizeof(why)) != 0) {
		return UV_EINVAL;
	}
	a = eb__calloc(1, sizeof(*a));
	a->origins = origins;
	a->budget = o->budget;
	a->loop = loop;
	a->listen = eb__strdup(o->listen);
	a->port = o->port;
	a->request_ms = o->request_timeout_ms;
	a->token = o->token != NULL && o->token[0] != '\0'
	               ? eb__strdup(o->token)
	               : NULL;
	eb__list_init(&a->conns);
	eb__vec_init(&a->routes, sizeof(admin_route));
	eb__vec_init(&a->collectors, sizeof(admin_collector));
	(void) uv_tcp_init(loop, &a->listener);
	a->listener.data = a;
	a->open = 1;
	eb__admin_route(a, "GET", "/metrics", metrics_route, a);
	*out = a;
	return 0;
}

void
eb__admin_route(eb__admin *adm, const char *method, const char *path,
    eb__admin_handler handler, void *arg)
{
	admin_route *r;

	EB_ASSERT(!adm->closing);
	EB_ASSERT(handler != NULL);
	r = eb__vec_push(&adm->routes);
	r->method = eb__strdup(method);
	r->path = eb__strdup(path);
	r->fn = handler;
	r->afn = NULL;
	r->arg = arg;
	r->open = 0;
}

/* Sends nothing: the asynchronous routes' placeholder for fn. */
static void
async_placeholder(const eb__admin_req *rq, eb__admin_resp *rs, void *arg)
{
	(void) rq;
	(void) rs;
	(void) arg;
}

void
eb__admin_route_async(eb__admin *adm, const char *method, const char *path,
    eb__admin_async_handler handler, void *arg)
{
	admin_route *r;

	EB_ASSERT(handler != NULL);
	eb__admin_route(adm, method, path, async_placeholder, arg);
	r = eb__vec_at(&adm->routes, adm->routes.len - 1);
	r->afn = handler;
}

int
eb__admin_answer(eb__admin *adm, uint64_t id, const eb__admin_resp *rs)
{
	eb__list *it;

	for (it = adm->conns.next; it != &adm->conns; it = it->next) {
		admin_conn *c = EB_CONTAINER_OF(it, admin_conn, link);

		if (c->waiting && c->wait_id == id && !c->closing) {
			c->waiting = 0;
			c->wait_id = 0;
			conn_send(c, rs, c->wait_keep, c->cors);
			return 0;
		}
	}
	return UV_ENOENT;
}

int
eb__admin_origins_check(const char *list, char *why, size_t why_len)
{
	return eb__http_origins_check(list, why, why_len);
}

char *
eb__admin_metrics_text(eb__admin *adm, size_t *len)
{
	eb__admin_resp rs;

	memset(&rs, 0, sizeof(rs));
	metrics_route(NULL, &rs, adm);
	*len = rs.body_len;
	return rs.body;
}

void
eb__admin_route_open(eb__admin *adm, const char *method, const char *path,
    eb__admin_handler handler, void *arg)
{
	admin_route *r;

	eb__admin_route(adm, method, path, handler, arg);
	r = eb__vec_at(&adm->routes, adm->routes.len - 1);
	r->open = 1;
}

void
eb__admin_on_metrics(eb__admin *adm, eb__admin_collector collector, void *arg)
{
	admin_collector *c;

	EB_ASSERT(!adm->closing);
	EB_ASSERT(collector != NULL);
	c = eb__vec_push(&adm->collectors);
	c->fn = collector;
	c->arg = arg;
}

int
eb__admin_start(eb__admin *adm)
{
	struct sockaddr_storage ss;
	struct sockaddr_storage bound;
	int                     len = sizeof(bound);
	int                     rv;

	EB_ASSERT(!adm->closing);
	EB_ASSERT(!adm->started);
	adm->started = 1;
	if (uv_ip4_addr(adm->listen, adm->port, (struct sockaddr_in *) &ss) !=
	        0 &&
	    (rv = uv_ip6_addr(
	         adm->listen, adm->port, (struct sockaddr_in6 *) &ss)) != 0) {
		return rv;
	}
	if ((rv = uv_tcp_bind(&adm->listener, (struct sockaddr *) &ss, 0)) !=
	        0 ||
	    (rv = uv_listen(
	         (uv_stream_t *) &adm->listener, 64, connection_cb)) != 0 ||
	    (rv = uv_tcp_getsockname(
	         &adm->listener, (struct sockaddr *) &bound, &len)) != 0) {
		return rv;
	}
	return ntohs(((struct sockaddr_in *) &bound)->sin_port);
}

static void
listener_closed_cb(uv_handle_t *h)
{
	admin_release(h->data);
}

void
eb__admin_close(eb__admin *adm, eb__admin_close_cb cb, void *arg)
{
	eb__list *it;
	eb__list *tmp;

	EB_ASSERT(!adm->closing);
	adm->closing = 1;
	adm->close_cb = cb;
	adm->close_arg = arg;
	EB_LIST_FOREACH (it, tmp, &adm->conns) {
		conn_close(EB_CONTAINER_OF(it, admin_conn, link));
	}
	uv_close((uv_handle_t *) &adm->listener, listener_closed_cb);
}
