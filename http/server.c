/*
 * The HTTP/1.1 server (server.h), moved here from admin/admin.c so that
 * the node has one: a libuv listener, connections on eb__stream (plain
 * TCP), the request reader, the response writer, the route table and the
 * browser policy.
 *
 * Bounded everywhere: at most opts.max_conns connections, request heads,
 * header counts and bodies bounded by the reader (413), one request at a
 * time per connection (a pipelined request, at most one read, is held with
 * reading stopped until the answer before it is written). The bytes a
 * client makes a connection hold beyond its fixed struct (the body, the
 * held read) are charged to the node-wide input budget (opts.budget)
 * before they are kept: a request that does not fit gets 503 input_budget
 * and the connection is closed. Each request has a deadline counted from
 * the moment the connection is ready for it (accept, or the end of the
 * previous response), never reset by a byte, so a client trickling bytes
 * cannot hold a slot; and when all slots are taken, the connection whose
 * request started first and is not being answered is closed for the new
 * one (when every connection is being answered, the new one gets 503), so
 * slow clients cannot lock /health out.
 *
 * An answer is written with the stream's write (what the kernel does not
 * take at once is queued); it is complete when nothing is queued any
 * more, which is noticed on a later loop turn (the connection's timer, or
 * the stream's written_cb), never inside the route that answered, so a
 * held request is never dispatched from inside another one. Ownership:
 * the server owns its connections, routes and origins; each connection's
 * stream and timer are closed (counted) before it is freed. Loop thread
 * only.
 */
#include "http/server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/buf.h"
#include "common/list.h"
#include "common/vec.h"
#include "http/origin.h"
#include "http/reader.h"
#include "http/response.h"
#include "stream/stream.h"

#define SERVER_CORS_MAX (EB_HTTP_ORIGIN_MAX + 192u)

typedef struct srv_route {
	char                  *method; /* owned */
	char                  *path;   /* owned */
	eb__http_handler       fn;     /* NULL for an asynchronous route */
	eb__http_async_handler afn;    /* NULL for a synchronous one */
	void                  *arg;
	int                    open; /* served without auth */
} srv_route;

typedef struct srv_conn srv_conn;

struct eb__http_server {
	uv_loop_t        *loop; /* borrowed */
	uv_tcp_t          listener;
	eb__list          conns;
	unsigned          nconns;
	int               open; /* handles whose close is pending */
	int               started;
	int               closing;
	eb__http_close_cb close_cb;
	void             *close_arg;
	char             *name;   /* owned: the log module */
	char             *listen; /* owned */
	int               port;   /* to bind (0: any) */
	uint64_t          request_ms;
	unsigned          max_conns;
	eb__http_limits   lim;
	eb__http_auth_fn  auth; /* NULL: none */
	void             *auth_arg;
	eb__vec           routes;    /* of srv_route */
	eb__http_origins  origins;   /* opts.cors_origins */
	eb__budget       *budget;    /* borrowed, NULL: none */
	uint64_t          next_wait; /* the last asynchronous request id */
};

struct srv_conn {
	eb__list         link;
	eb__http_server *srv; /* borrowed */
	eb__stream       s;
	uv_timer_t       timer; /* the request deadline; a written answer */
	int              open;  /* handles whose close is pending */
	int              closing;
	int              writing;      /* an answer is being written */
	int              close_after;  /* ... and then the connection closes */
	uint64_t         req_start_ms; /* the current request's start */
	eb__http_reader  rd;
	char            *body; /* owned */
	size_t           body_len;
	int              refused; /* the body did not fit the budget */
	/* An asynchronous route's answer is awaited: its id, keep-alive and
	 * CORS headers. */
	int      waiting;
	uint64_t wait_id;
	int      wait_keep;
	char     cors[SERVER_CORS_MAX];
	/* Bytes of the next request that came before this answer was
	 * written (owned; at most one read): reading stops until then. */
	char  *held;
	size_t held_len;
	/* Bytes charged to srv->budget: body_len + held_len. */
	size_t  charged;
	eb__buf out; /* the answer being written (scratch) */
};

static void conn_close(srv_conn *c);
static void conn_uncharge(srv_conn *c, size_t n);
static void deadline_cb(uv_timer_t *t);
static void conn_feed(srv_conn *c, const char *data, size_t len);

/* ---- responses ---- */

void
eb__http_reply_json(eb__http_resp *rs, int status, json_t *v)
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
eb__http_reply_error(
    eb__http_resp *rs, int status, const char *code, const char *msg)
{
	json_t *o = json_pack("{s:s, s:s}", "error", code, "message", msg);

	eb__http_reply_json(rs, status, o);
	json_decref(o);
}

void
eb__http_reply_text(eb__http_resp *rs, int status, const char *content_type,
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

/* The answer is in the kernel: close, or wait for the next request (its
 * deadline starts now) and serve what was held meanwhile. */
static void
write_done(srv_conn *c)
{
	char  *held = c->held;
	size_t len = c->held_len;

	c->writing = 0;
	if (c->close_after) {
		conn_close(c);
		return;
	}
	c->req_start_ms = uv_now(c->srv->loop);
	(void) uv_timer_start(&c->timer, deadline_cb, c->srv->request_ms, 0);
	if (held == NULL) {
		return;
	}
	/* The client sent its next request before the answer was written:
	 * serve it now. */
	c->held = NULL;
	c->held_len = 0;
	conn_uncharge(c, len); /* parsed now, freed below */
	if (eb__stream_read_start(&c->s) != 0) {
		conn_close(c);
	} else {
		conn_feed(c, held, len);
	}
	free(held);
}

/* The timer with the answer written at once (a later turn). */
static void
written_now_cb(uv_timer_t *t)
{
	srv_conn *c = t->data;

	if (!c->closing && c->writing) {
		write_done(c);
	}
}

/* The stream's queued write completed. */
static void
stream_written_cb(eb__stream *s)
{
	srv_conn *c = s->data;

	if (!c->closing && c->writing && eb__stream_backlog(s) == 0) {
		write_done(c);
	}
}

static void
conn_send(srv_conn *c, const eb__http_resp *rs, int keep_alive,
    const char *extra_headers)
{
	eb__http_resp_head h = {
		.status = rs->status,
		.content_type = rs->content_type,
		.cache_control = "no-store",
		.connection = keep_alive ? "keep-alive" : "close",
		.extra = extra_headers,
	};

	EB_ASSERT(!c->closing && !c->writing);
	/* The request's deadline keeps running until the answer is in the
	 * kernel: a client that does not read it is closed by then. */
	c->writing = 1;
	c->close_after = !keep_alive;
	eb__http_response_write(&c->out, &h, rs->body, rs->body_len, 0);
	if (c->s.ops->write(&c->s, &c->out) != 0) {
		conn_close(c);
		return;
	}
	if (c->out.cap > 65536) {
		eb__buf_free(&c->out); /* a big answer's buffer goes */
	}
	if (eb__stream_backlog(&c->s) == 0) {
		/* All taken at once: done on a later turn. */
		(void) uv_timer_start(&c->timer, written_now_cb, 0, 0);
	}
}

static void
send_error(srv_conn *c, int status, const char *code, const char *msg,
    int keep_alive, const char *cors)
{
	eb__http_resp rs;
	char          hdrs[SERVER_CORS_MAX + 32];

	memset(&rs, 0, sizeof(rs));
	eb__http_reply_error(&rs, status, code, msg);
	(void) snprintf(hdrs, sizeof(hdrs), "%s%s",
	    status == 401 ? "WWW-Authenticate: Bearer\r\n" : "",
	    cors != NULL ? cors : "");
	conn_send(c, &rs, keep_alive, hdrs);
	free(rs.body);
}

/* ---- routes ---- */

/* The first route for method and path, or NULL. */
static const srv_route *
route_find(const eb__http_server *srv, const char *method, const char *path)
{
	size_t i;

	for (i = 0; i < srv->routes.len; i++) {
		const srv_route *r = eb__vec_at(&srv->routes, i);

		if (strcmp(r->path, path) == 0 &&
		    strcmp(r->method, method) == 0) {
			return r;
		}
	}
	return NULL;
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
route_writable(const eb__http_server *srv, const char *path)
{
	size_t i;

	for (i = 0; i < srv->routes.len; i++) {
		const srv_route *r = eb__vec_at(&srv->routes, i);

		if (strcmp(r->path, path) == 0 && !method_safe(r->method)) {
			return 1;
		}
	}
	return 0;
}

/* Runs the route for rq's path and method. Without an answer, rs gets
 * 500 (the route set none), 405 (known path, other method) or 404. 1 when
 * the route is asynchronous: c waits for eb__http_server_answer() (which
 * may have come already) and rs is unused. */
static int
route_run(srv_conn *c, const eb__http_req *rq, eb__http_resp *rs)
{
	const eb__vec *routes = &c->srv->routes;
	int            path_known = 0;
	size_t         i;

	for (i = 0; i < routes->len; i++) {
		const srv_route *r = eb__vec_at(routes, i);

		if (strcmp(r->path, rq->path) != 0) {
			continue;
		}
		path_known = 1;
		if (strcmp(r->method, rq->method) != 0) {
			continue;
		}
		if (r->afn != NULL) {
			c->waiting = 1;
			c->wait_id = ++c->srv->next_wait;
			r->afn(c->srv, rq, c->wait_id, r->arg);
			return 1;
		}
		r->fn(rq, rs, r->arg);
		break;
	}
	if (rs->status != 0) {
		return 0;
	}
	if (i < routes->len) {
		eb__http_reply_error(rs, 500, "internal", "no response");
	} else if (path_known) {
		eb__http_reply_error(rs, 405, "method_not_allowed",
		    "method not allowed for this path");
	} else {
		eb__http_reply_error(rs, 404, "not_found", "no such route");
	}
	return 0;
}

/* ---- browsers: origins, CORS, cross-site writes ---- */

static int
origin_configured(const srv_conn *c)
{
	return eb__http_origin_configured(&c->rd.browser, &c->srv->origins);
}

/* The CORS header lines of an answer to c's GET or preflight (origin.h). */
static void
cors_headers(const srv_conn *c, char *out, size_t n)
{
	eb__http_cors(
	    &c->rd.browser, &c->srv->origins, c->srv->auth != NULL, out, n);
}

/*
 * OPTIONS: a CORS preflight. Approved (204) for a GET route when CORS
 * applies, and for a state-changing route only from a configured origin;
 * from any other Origin it is refused (403), so the browser never sends
 * the actual request. 0 when this was no preflight (no Origin, or no
 * route on the path): the request is routed as any other.
 */
static int
preflight(srv_conn *c, const char *path, int keep)
{
	eb__http_resp rs;
	char          cors[SERVER_CORS_MAX];
	char          hdrs[SERVER_CORS_MAX + 192];
	int           get = route_find(c->srv, "GET", path) != NULL;
	int           write = route_writable(c->srv, path);

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
	    origin_configured(c) ? ", Content-Type, " EB_HTTP_CSRF_HEADER : "");
	memset(&rs, 0, sizeof(rs));
	eb__http_reply_text(&rs, 204, "text/plain", "", 0);
	conn_send(c, &rs, keep, hdrs);
	free(rs.body);
	return 1;
}

/* The checks before the route: cross-site writes (403), then auth (401).
 * 0 when the request may be routed (else it was answered). */
static int
admit(srv_conn *c, const char *method, const char *path, int keep,
    const char *cors)
{
	eb__http_server *srv = c->srv;
	const srv_route *r = route_find(srv, method, path);
	char             q[EB_LOG_QUOTE_MAX];
	const char      *why = NULL;

	if (!method_safe(method) &&
	    (why = eb__http_cross_site(
	         &c->rd.browser, &srv->origins, srv->auth != NULL)) != NULL) {
		EB_LOG_RL_NOTICE(srv->name,
		    "cross-site-refused: method=%s path=%s origin=%s", method,
		    eb_log_quote(q, sizeof(q), path),
		    c->rd.browser.origin.seen ? "foreign" : "none");
		send_error(c, 403, "cross_site", why, keep, NULL);
		return -1;
	}
	if (srv->auth != NULL && (r == NULL || !r->open) &&
	    !srv->auth(c->rd.auth, c->rd.auth_len, srv->auth_arg)) {
		EB_LOG_WARN(srv->name, "unauthorized: path=%s",
		    eb_log_quote(q, sizeof(q), path));
		send_error(c, 401, "unauthorized", "missing or wrong token",
		    keep, strcmp(method, "GET") == 0 ? cors : NULL);
		return -1;
	}
	return 0;
}

static void
dispatch(srv_conn *c)
{
	eb__http_req  rq;
	eb__http_resp rs;
	char          path[EB__HTTP_URL_MAX + 1];
	char          query[EB__HTTP_URL_MAX + 1];
	char          q[EB_LOG_QUOTE_MAX];
	const char   *method = eb__http_reader_method(&c->rd);
	int           keep = eb__http_reader_keep_alive(&c->rd);

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
	if (strcmp(method, "GET") != 0) {
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
		return; /* eb__http_server_answer() sends the response */
	}
	EB_LOG_DEBUG(c->srv->name, "request: method=%s path=%s status=%d",
	    method, eb_log_quote(q, sizeof(q), path), rs.status);
	conn_send(c, &rs, keep, c->cors);
	free(rs.body);
}

/* ---- the input budget ---- */

/* Charges n more bytes of this connection to the node-wide budget: 0, or
 * UV_ENOBUFS (nothing charged). */
static int
conn_charge(srv_conn *c, size_t n)
{
	if (c->srv->budget != NULL &&
	    eb__budget_charge(c->srv->budget, n) != 0) {
		return UV_ENOBUFS;
	}
	c->charged += n;
	return 0;
}

static void
conn_uncharge(srv_conn *c, size_t n)
{
	EB_ASSERT(n <= c->charged);
	c->charged -= n;
	if (c->srv->budget != NULL) {
		eb__budget_release(c->srv->budget, n);
	}
}

static void
conn_body_free(srv_conn *c)
{
	conn_uncharge(c, c->body_len);
	free(c->body);
	c->body = NULL;
	c->body_len = 0;
}

/* Keeps body bytes, charged to the input budget before they are kept. */
static int
body_cb(eb__http_reader *r, const char *at, size_t len, void *arg)
{
	srv_conn *c = arg;

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
server_free(eb__http_server *srv)
{
	size_t i;

	for (i = 0; i < srv->routes.len; i++) {
		srv_route *r = eb__vec_at(&srv->routes, i);

		free(r->method);
		free(r->path);
	}
	eb__vec_free(&srv->routes);
	eb__http_origins_free(&srv->origins);
	free(srv->name);
	free(srv->listen);
	free(srv);
}

/* One handle (the listener, or a connection's last) finished closing. */
static void
server_release(eb__http_server *srv)
{
	EB_ASSERT(srv->open > 0);
	if (--srv->open == 0) {
		eb__http_close_cb cb = srv->close_cb;
		void             *arg = srv->close_arg;

		EB_ASSERT(srv->closing);
		server_free(srv);
		if (cb != NULL) {
			cb(arg);
		}
	}
}

static void
conn_release(srv_conn *c)
{
	eb__http_server *srv = c->srv;

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
	eb__buf_free(&c->out);
	eb__http_reader_free(&c->rd);
	free(c);
	server_release(srv);
}

static void
stream_closed_cb(eb__stream *s)
{
	conn_release(s->data);
}

static void
timer_closed_cb(uv_handle_t *h)
{
	conn_release(h->data);
}

static void
conn_close(srv_conn *c)
{
	if (c->closing) {
		return;
	}
	c->closing = 1;
	eb__list_remove(&c->link);
	c->srv->nconns--;
	c->s.ops->close(&c->s);
	uv_close((uv_handle_t *) &c->timer, timer_closed_cb);
}

static void
deadline_cb(uv_timer_t *t)
{
	conn_close(t->data);
}

static void
stream_error_cb(eb__stream *s, int status)
{
	(void) status; /* EOF or a socket error */
	conn_close(s->data);
}

/* Keeps len bytes of the next request until the current answer has been
 * written, and stops reading meanwhile (so at most one read is held). */
static void
conn_hold(srv_conn *c, const char *data, size_t len)
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
	(void) uv_read_stop((uv_stream_t *) &c->s.tcp);
}

/* Parses data: a complete request is dispatched (one at a time: bytes
 * after it are held until its answer is written), a bad or oversized one
 * answered 400, 413 or 503 (closing). */
static void
conn_feed(srv_conn *c, const char *data, size_t len)
{
	size_t          done = 0;
	eb__http_result res = eb__http_reader_feed(&c->rd, data, len, &done);

	switch (res) {
	case EB_HTTP_RREFUSED:
		EB_LOG_RL_WARN(c->srv->name,
		    "input-budget-refused: body_bytes=%zu", c->body_len);
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
		EB_LOG_DEBUG(c->srv->name, "bad-request: err=%s",
		    eb__http_reader_error(&c->rd));
		send_error(
		    c, 400, "bad_request", "malformed HTTP request", 0, NULL);
		break;
	case EB_HTTP_RCOMPLETE:
		if (done < len) {
			conn_hold(c, data + done, len - done);
		}
		if (!c->closing) {
			dispatch(c);
		}
		/* The body was borrowed by the route for its call. */
		conn_body_free(c);
		break;
	default:
		break;
	}
}

static void
stream_read_cb(eb__stream *s, const char *data, size_t n)
{
	srv_conn *c = s->data;

	if (c->closing) {
		return;
	}
	if (c->writing || c->waiting) {
		/* The next request while this one is being answered: held,
		 * not parsed, until the answer is written. */
		conn_hold(c, data, n);
	} else {
		conn_feed(c, data, n);
	}
}

static const eb__stream_cbs conn_cbs = {
	.read_cb = stream_read_cb,
	.error_cb = stream_error_cb,
	.closed_cb = stream_closed_cb,
	.written_cb = stream_written_cb,
};

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
evict_oldest(eb__http_server *srv)
{
	srv_conn *old = NULL;
	eb__list *it;

	for (it = srv->conns.next; it != &srv->conns; it = it->next) {
		srv_conn *c = EB_CONTAINER_OF(it, srv_conn, link);

		if (!c->writing && !c->waiting &&
		    (old == NULL || c->req_start_ms < old->req_start_ms)) {
			old = c;
		}
	}
	if (old != NULL) {
		EB_LOG_RL_NOTICE(srv->name, "conn-evicted: age_ms=%llu open=%u",
		    (unsigned long long) (uv_now(srv->loop) -
		                          old->req_start_ms),
		    srv->nconns);
		conn_close(old);
	}
}

/* Every slot is being answered: 503 and close, on a bare handle. */
static void
refuse_busy(uv_stream_t *server)
{
	static char busy[] =
	    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: "
	    "application/json\r\nContent-Length: 23\r\nConnection: "
	    "close\r\n\r\n{\"error\":\"too_many\"}\n\n\n";
	uv_tcp_t   *t = eb__malloc(sizeof(*t));
	uv_write_t *w = eb__malloc(sizeof(*w));
	uv_buf_t    b = uv_buf_init(busy, sizeof(busy) - 1);

	(void) uv_tcp_init(server->loop, t);
	if (uv_accept(server, (uv_stream_t *) t) != 0 ||
	    uv_write(w, (uv_stream_t *) t, &b, 1, refuse_write_cb) != 0) {
		free(w);
		uv_close((uv_handle_t *) t, free_handle_cb);
	}
}

static void
connection_cb(uv_stream_t *server, int status)
{
	eb__http_server *srv = server->data;
	srv_conn        *c;

	if (status != 0 || srv->closing) {
		return;
	}
	if (srv->nconns >= srv->max_conns) {
		evict_oldest(srv);
	}
	if (srv->nconns >= srv->max_conns) {
		refuse_busy(server);
		return;
	}
	c = eb__calloc(1, sizeof(*c));
	c->srv = srv;
	eb__buf_init(&c->out);
	(void) uv_tcp_init(server->loop, &c->s.tcp);
	(void) uv_timer_init(server->loop, &c->timer);
	c->timer.data = c;
	c->open = 2;
	srv->open++;
	srv->nconns++;
	eb__list_insert_tail(&srv->conns, &c->link);
	eb__http_reader_init(&c->rd, &srv->lim, body_cb, c);
	(void) eb__stream_init(&c->s, NULL, &conn_cbs, c); /* plain TCP */
	if (uv_accept(server, (uv_stream_t *) &c->s.tcp) != 0 ||
	    c->s.ops->start(&c->s) != 0) {
		conn_close(c);
		return;
	}
	c->req_start_ms = uv_now(server->loop);
	(void) uv_timer_start(&c->timer, deadline_cb, srv->request_ms, 0);
}

/* ---- lifecycle ---- */

void
eb__http_server_opts_init(eb__http_server_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->name = "http";
	o->listen = "127.0.0.1";
	o->request_timeout_ms = 10000;
	o->max_conns = 64;
	o->max_head = 8192;
	o->max_headers = 100;
	o->max_body = 65536;
}

int
eb__http_server_new(
    uv_loop_t *loop, const eb__http_server_opts *o, eb__http_server **out)
{
	eb__http_server *srv;
	eb__http_origins origins;
	char             why[128];

	if (loop == NULL || o == NULL || o->listen == NULL || out == NULL ||
	    o->name == NULL || o->port < 0 || o->port > 65535 ||
	    o->request_timeout_ms == 0 || o->max_conns == 0 ||
	    o->max_head == 0 || o->max_body == 0) {
		return UV_EINVAL;
	}
	if (eb__http_origins_parse(
	        o->cors_origins, &origins, why, sizeof(why)) != 0) {
		return UV_EINVAL;
	}
	srv = eb__calloc(1, sizeof(*srv));
	srv->origins = origins;
	srv->budget = o->budget;
	srv->loop = loop;
	srv->name = eb__strdup(o->name);
	srv->listen = eb__strdup(o->listen);
	srv->port = o->port;
	srv->request_ms = o->request_timeout_ms;
	srv->max_conns = o->max_conns;
	srv->lim.max_url = EB__HTTP_URL_MAX;
	srv->lim.max_head = o->max_head;
	srv->lim.max_headers = o->max_headers;
	srv->lim.max_body = o->max_body;
	/* Kept with or without auth: a longer value is 413 either way. */
	srv->lim.max_auth = EB__HTTP_AUTH_MAX;
	srv->auth = o->auth;
	srv->auth_arg = o->auth_arg;
	eb__list_init(&srv->conns);
	eb__vec_init(&srv->routes, sizeof(srv_route));
	(void) uv_tcp_init(loop, &srv->listener);
	srv->listener.data = srv;
	srv->open = 1;
	*out = srv;
	return 0;
}

static srv_route *
route_add(eb__http_server *srv, const char *method, const char *path, void *arg)
{
	srv_route *r;

	EB_ASSERT(!srv->closing);
	r = eb__vec_push(&srv->routes);
	r->method = eb__strdup(method);
	r->path = eb__strdup(path);
	r->fn = NULL;
	r->afn = NULL;
	r->arg = arg;
	r->open = 0;
	return r;
}

void
eb__http_server_route(eb__http_server *srv, const char *method,
    const char *path, eb__http_handler handler, void *arg)
{
	EB_ASSERT(handler != NULL);
	route_add(srv, method, path, arg)->fn = handler;
}

void
eb__http_server_route_open(eb__http_server *srv, const char *method,
    const char *path, eb__http_handler handler, void *arg)
{
	srv_route *r;

	EB_ASSERT(handler != NULL);
	r = route_add(srv, method, path, arg);
	r->fn = handler;
	r->open = 1;
}

void
eb__http_server_route_async(eb__http_server *srv, const char *method,
    const char *path, eb__http_async_handler handler, void *arg)
{
	EB_ASSERT(handler != NULL);
	route_add(srv, method, path, arg)->afn = handler;
}

int
eb__http_server_answer(
    eb__http_server *srv, uint64_t id, const eb__http_resp *rs)
{
	eb__list *it;

	for (it = srv->conns.next; it != &srv->conns; it = it->next) {
		srv_conn *c = EB_CONTAINER_OF(it, srv_conn, link);

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
eb__http_server_start(eb__http_server *srv)
{
	struct sockaddr_storage ss;
	struct sockaddr_storage bound;
	int                     len = sizeof(bound);
	int                     rv;

	EB_ASSERT(!srv->closing);
	EB_ASSERT(!srv->started);
	srv->started = 1;
	if (uv_ip4_addr(srv->listen, srv->port, (struct sockaddr_in *) &ss) !=
	        0 &&
	    (rv = uv_ip6_addr(
	         srv->listen, srv->port, (struct sockaddr_in6 *) &ss)) != 0) {
		return rv;
	}
	if ((rv = uv_tcp_bind(&srv->listener, (struct sockaddr *) &ss, 0)) !=
	        0 ||
	    (rv = uv_listen(
	         (uv_stream_t *) &srv->listener, 64, connection_cb)) != 0 ||
	    (rv = uv_tcp_getsockname(
	         &srv->listener, (struct sockaddr *) &bound, &len)) != 0) {
		return rv;
	}
	return ntohs(((struct sockaddr_in *) &bound)->sin_port);
}

static void
listener_closed_cb(uv_handle_t *h)
{
	server_release(h->data);
}

void
eb__http_server_close(eb__http_server *srv, eb__http_close_cb cb, void *arg)
{
	eb__list *it;
	eb__list *tmp;

	EB_ASSERT(!srv->closing);
	srv->closing = 1;
	srv->close_cb = cb;
	srv->close_arg = arg;
	EB_LIST_FOREACH (it, tmp, &srv->conns) {
		conn_close(EB_CONTAINER_OF(it, srv_conn, link));
	}
	uv_close((uv_handle_t *) &srv->listener, listener_closed_cb);
}
