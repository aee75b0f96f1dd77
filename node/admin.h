/*
 * The admin HTTP endpoint's route interface (admin.c). Adding a route is
 * one line in admin.c's route table plus a handler with this signature,
 * which may live in any node/ wiring file (declare it here):
 *
 *     { "GET", "/metrics", eb__admin_metrics },
 *
 * A handler runs on the loop, synchronously, and fills the response with
 * eb__admin_reply_json() or eb__admin_reply_text(); a handler that sets
 * nothing answers 500. Requests are complete and bounded (method, path
 * without the query string, query, body up to 64 KiB) and already
 * authenticated when admin.token is set. Loop thread only.
 */
#ifndef EB_NODE_ADMIN_H
#define EB_NODE_ADMIN_H

#include <stddef.h>

#include <jansson.h>

#include "node/node_int.h"

typedef struct eb__admin_req {
	const char *method; /* "GET", "POST", ... */
	const char *path;   /* "/nodes" (no query) */
	const char *query;  /* after '?', "" if none */
	const char *body;   /* NUL-terminated, "" if none */
	size_t      body_len;
} eb__admin_req;

typedef struct eb__admin_resp {
	int         status;       /* 0: not set */
	const char *content_type; /* static string */
	char       *body;         /* owned (malloc'd) */
	size_t      body_len;
} eb__admin_resp;

typedef void (*eb__admin_handler)(
    eb_node *n, const eb__admin_req *rq, eb__admin_resp *rs);

/* Serialises v (borrowed) as the response body, application/json. */
void eb__admin_reply_json(eb__admin_resp *rs, int status, json_t *v);
/* {"error": code, "message": msg} with status. */
void eb__admin_reply_error(
    eb__admin_resp *rs, int status, const char *code, const char *msg);
/* A text body (copied), e.g. Prometheus "text/plain; version=0.0.4". */
void eb__admin_reply_text(eb__admin_resp *rs, int status,
    const char *content_type, const char *body, size_t len);

#endif
