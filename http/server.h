/*
 * The HTTP/1.1 server (server.c): a listener and its connections on
 * stream/'s eb__stream (plain TCP), requests read with reader.h and
 * answered with response.h, a route table, the browser policy of origin.h
 * and the node-wide input budget. The admin endpoint (admin/admin.c) is
 * one: it adds its options, its token check (opts.auth), its routes and
 * GET /metrics.
 *
 *   eb__http_server_opts o;
 *   eb__http_server_opts_init(&o);           (then listen, port, auth...)
 *   eb__http_server_new(loop, &o, &srv);
 *   eb__http_server_route(srv, "GET", "/nodes", nodes_cb, ctx);
 *   port = eb__http_server_start(srv);       (bound port, or < 0)
 *   ...
 *   eb__http_server_close(srv, closed_cb, arg);  (frees srv, then cb)
 *
 * Requests: complete and bounded (opts.max_head, max_headers, max_body;
 * over: 413), one at a time per connection (a pipelined request, at most
 * one read, is held with reading stopped until the answer before it is
 * written; its bytes and the body are charged to opts.budget before they
 * are kept, 503 when they do not fit), malformed ones 400 (closing);
 * keep-alive honoured otherwise. Each request has a deadline
 * (opts.request_timeout_ms) counted from the moment the connection is
 * ready for it, never reset by a byte; when opts.max_conns are open, the
 * connection whose request started first and is not being answered is
 * closed for the new one (503 when all are being answered). A handler
 * runs on the loop and fills the response (eb__http_reply_*); one that
 * sets nothing answers 500; unknown paths get 404, known paths with
 * another method 405. An asynchronous route answers later by id
 * (eb__http_server_answer) within the request's deadline; its connection
 * is not evicted meanwhile.
 *
 * Browsers (origin.h; docs/ADMIN.md, "Browsers and other origins"): a
 * request with a method other than GET, HEAD and OPTIONS is refused 403
 * by eb__http_cross_site() before the auth check; OPTIONS with an Origin
 * on a known path is a CORS preflight; GET answers carry the CORS headers
 * of eb__http_cors(). With opts.auth set, every route but the open ones
 * needs auth(Authorization value) to say yes (401 otherwise).
 *
 * Lifecycle: routes may be added until close; start at most once; close
 * exactly once (EB_ASSERT); the close callback runs on a later loop turn
 * after every handle closed. Loop thread only. Log lines use opts.name as
 * their module.
 */
#ifndef EB_HTTP_SERVER_H
#define EB_HTTP_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "common/budget.h"

typedef struct eb__http_server eb__http_server;

typedef struct eb__http_req {
	const char *method; /* "GET", "POST", ... */
	const char *path;   /* "/nodes" (no query) */
	const char *query;  /* after '?', "" if none */
	const char *body;   /* NUL-terminated, "" if none */
	size_t      body_len;
} eb__http_req;

typedef struct eb__http_resp {
	int         status;       /* 0: not set */
	const char *content_type; /* static string */
	char       *body;         /* owned (malloc'd) */
	size_t      body_len;
} eb__http_resp;

typedef void (*eb__http_handler)(
    const eb__http_req *rq, eb__http_resp *rs, void *arg);
/* Answer id later (or now) with eb__http_server_answer(); rq is borrowed
 * for the call. */
typedef void (*eb__http_async_handler)(
    eb__http_server *srv, const eb__http_req *rq, uint64_t id, void *arg);
/* 1 when the Authorization value (len bytes, not NUL-terminated) admits
 * the request. */
typedef int (*eb__http_auth_fn)(const char *auth, size_t len, void *arg);
typedef void (*eb__http_close_cb)(void *arg);

typedef struct eb__http_server_opts {
	const char *name;               /* the log module ("admin") */
	const char *listen;             /* host to bind (copied) */
	int         port;               /* 0: any free port */
	uint64_t    request_timeout_ms; /* per-request deadline */
	/* NULL or "": none; else the origins that may read with CORS and
	 * write (origin.h; copied). */
	const char *cors_origins;
	/* NULL: none. The node-wide input budget (borrowed: it must outlive
	 * the server). */
	eb__budget *budget;
	unsigned    max_conns;
	size_t      max_head;    /* request line + headers */
	size_t      max_headers; /* header lines (0: no bound) */
	size_t      max_body;
	/* NULL: no auth. Else asked for every request on a route that is
	 * not open (auth_arg borrowed). */
	eb__http_auth_fn auth;
	void            *auth_arg;
} eb__http_server_opts;

/* name "http", listen "127.0.0.1", port 0, 10 s per request, 64
 * connections, 8 KiB heads of at most 100 lines, 64 KiB bodies. */
void eb__http_server_opts_init(eb__http_server_opts *o);
/* Creates a server (no I/O yet). 0, or UV_EINVAL (bad options or
 * cors_origins). */
int eb__http_server_new(
    uv_loop_t *loop, const eb__http_server_opts *o, eb__http_server **out);
/* Serves method path with handler(rq, rs, arg); arg is borrowed and must
 * outlive the server. A later route for the same method and path is never
 * reached. */
void eb__http_server_route(eb__http_server *srv, const char *method,
    const char *path, eb__http_handler handler, void *arg);
/* The same, served without auth. */
void eb__http_server_route_open(eb__http_server *srv, const char *method,
    const char *path, eb__http_handler handler, void *arg);
/* The same as eb__http_server_route with an asynchronous handler. */
void eb__http_server_route_async(eb__http_server *srv, const char *method,
    const char *path, eb__http_async_handler handler, void *arg);
/* Answers the asynchronous request id with rs (borrowed; the body is
 * copied). 0, or UV_ENOENT when the request is gone (its connection hit
 * its deadline or closed, or the server is closing). */
int eb__http_server_answer(
    eb__http_server *srv, uint64_t id, const eb__http_resp *rs);
/* Binds and listens: the bound port (> 0), or a negative error (then close
 * the server). */
int eb__http_server_start(eb__http_server *srv);
/* Closes every connection and the listener, frees srv and then calls
 * cb(arg) (cb may be NULL), always on a later loop turn. */
void eb__http_server_close(
    eb__http_server *srv, eb__http_close_cb cb, void *arg);

/* Serialises v (borrowed) as the response body, application/json (500
 * when v is NULL or cannot be serialised). */
void eb__http_reply_json(eb__http_resp *rs, int status, json_t *v);
/* {"error": code, "message": msg} with status. */
void eb__http_reply_error(
    eb__http_resp *rs, int status, const char *code, const char *msg);
/* A text body (copied). */
void eb__http_reply_text(eb__http_resp *rs, int status,
    const char *content_type, const char *body, size_t len);

#endif
