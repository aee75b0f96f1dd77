/*
 * The admin HTTP/1.1 endpoint (admin.h): an http/ server (http/server.h:
 * connections, limits, deadlines, keep-alive, routes, the browser policy,
 * the input budget) with what is admin's: its options and their defaults,
 * the token policy, GET /metrics built in and the metric collectors
 * registered by the modules that own the data.
 *
 * Bounds (http/server.h): at most ADMIN_MAX_CONNS connections, request
 * heads of at most 8 KiB and bodies of at most 64 KiB (413), one request
 * at a time per connection, a per-request deadline
 * (opts.request_timeout_ms), the node-wide input budget (opts.budget).
 * With a token, every route but the open ones (eb__admin_route_open)
 * requires "Authorization: Bearer <token>" (401 otherwise; compared in
 * constant time). Browsers: http/origin.h, docs/ADMIN.md "Browsers and
 * other origins".
 *
 * Ownership: the admin object owns the server, its token, its collectors
 * and one trampoline per asynchronous route (eb__admin_async_handler
 * receives the eb__admin, the server's handler the server). Loop thread
 * only.
 */
#include "admin/admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/vec.h"
#include "http/origin.h"
#include "http/server.h"

#define ADMIN_MAX_CONNS 64u
#define ADMIN_MAX_HEAD  8192u
#define ADMIN_MAX_HDRS  100u
#define ADMIN_MAX_BODY  65536u

#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

typedef struct admin_collector {
	eb__admin_collector fn;
	void               *arg;
} admin_collector;

/* An asynchronous route: the admin handler and its argument. */
typedef struct admin_async {
	eb__admin              *adm; /* borrowed */
	eb__admin_async_handler fn;
	void                   *arg;
} admin_async;

struct eb__admin {
	eb__http_server   *srv; /* owned */
	int                started;
	int                closing;
	eb__admin_close_cb close_cb;
	void              *close_arg;
	char              *token;      /* owned, NULL: no auth */
	eb__vec            collectors; /* of admin_collector */
	eb__vec            asyncs;     /* of admin_async *, owned */
};

/* ---- responses ---- */

void
eb__admin_reply_json(eb__admin_resp *rs, int status, json_t *v)
{
	eb__http_reply_json(rs, status, v);
}

void
eb__admin_reply_error(
    eb__admin_resp *rs, int status, const char *code, const char *msg)
{
	eb__http_reply_error(rs, status, code, msg);
}

void
eb__admin_reply_text(eb__admin_resp *rs, int status, const char *content_type,
    const char *body, size_t len)
{
	eb__http_reply_text(rs, status, content_type, body, len);
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

/* ---- the token ---- */

/* Constant-time comparison of the bearer token (the server's auth). */
static int
token_ok(const char *auth, size_t len, void *arg)
{
	static const char prefix[] = "Bearer ";
	const eb__admin  *a = arg;
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
	eb__admin           *a;
	eb__http_server_opts so;
	int                  rv;

	if (loop == NULL || o == NULL || o->listen == NULL || out == NULL) {
		return UV_EINVAL;
	}
	a = eb__calloc(1, sizeof(*a));
	eb__http_server_opts_init(&so);
	so.name = "admin";
	so.listen = o->listen;
	so.port = o->port;
	so.request_timeout_ms = o->request_timeout_ms;
	so.cors_origins = o->cors_origins;
	so.budget = o->budget;
	so.max_conns = ADMIN_MAX_CONNS;
	so.max_head = ADMIN_MAX_HEAD;
	so.max_headers = ADMIN_MAX_HDRS;
	so.max_body = ADMIN_MAX_BODY;
	if (o->token != NULL && o->token[0] != '\0') {
		so.auth = token_ok;
		so.auth_arg = a;
	}
	if ((rv = eb__http_server_new(loop, &so, &a->srv)) != 0) {
		free(a);
		return rv;
	}
	a->token = so.auth != NULL ? eb__strdup(o->token) : NULL;
	eb__vec_init(&a->collectors, sizeof(admin_collector));
	eb__vec_init(&a->asyncs, sizeof(admin_async *));
	eb__admin_route(a, "GET", "/metrics", metrics_route, a);
	*out = a;
	return 0;
}

void
eb__admin_route(eb__admin *adm, const char *method, const char *path,
    eb__admin_handler handler, void *arg)
{
	EB_ASSERT(!adm->closing);
	EB_ASSERT(handler != NULL);
	eb__http_server_route(adm->srv, method, path, handler, arg);
}

void
eb__admin_route_open(eb__admin *adm, const char *method, const char *path,
    eb__admin_handler handler, void *arg)
{
	EB_ASSERT(!adm->closing);
	EB_ASSERT(handler != NULL);
	eb__http_server_route_open(adm->srv, method, path, handler, arg);
}

/* The server's asynchronous handler: the admin one, with the admin. */
static void
async_trampoline(
    eb__http_server *srv, const eb__http_req *rq, uint64_t id, void *arg)
{
	const admin_async *t = arg;

	(void) srv;
	t->fn(t->adm, rq, id, t->arg);
}

void
eb__admin_route_async(eb__admin *adm, const char *method, const char *path,
    eb__admin_async_handler handler, void *arg)
{
	admin_async *t;

	EB_ASSERT(!adm->closing);
	EB_ASSERT(handler != NULL);
	t = eb__calloc(1, sizeof(*t));
	t->adm = adm;
	t->fn = handler;
	t->arg = arg;
	*(admin_async **) eb__vec_push(&adm->asyncs) = t;
	eb__http_server_route_async(
	    adm->srv, method, path, async_trampoline, t);
}

int
eb__admin_answer(eb__admin *adm, uint64_t id, const eb__admin_resp *rs)
{
	return eb__http_server_answer(adm->srv, id, rs);
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
	EB_ASSERT(!adm->closing);
	EB_ASSERT(!adm->started);
	adm->started = 1;
	return eb__http_server_start(adm->srv);
}

/* The server closed: the admin object goes, then the owner is told. */
static void
server_closed_cb(void *arg)
{
	eb__admin         *a = arg;
	eb__admin_close_cb cb = a->close_cb;
	void              *cb_arg = a->close_arg;
	size_t             i;

	for (i = 0; i < a->asyncs.len; i++) {
		free(*(admin_async **) eb__vec_at(&a->asyncs, i));
	}
	eb__vec_free(&a->asyncs);
	eb__vec_free(&a->collectors);
	free(a->token);
	free(a);
	if (cb != NULL) {
		cb(cb_arg);
	}
}

void
eb__admin_close(eb__admin *adm, eb__admin_close_cb cb, void *arg)
{
	EB_ASSERT(!adm->closing);
	adm->closing = 1;
	adm->close_cb = cb;
	adm->close_arg = arg;
	eb__http_server_close(adm->srv, server_closed_cb, adm);
}
