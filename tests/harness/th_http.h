/*
 * A one-shot HTTP client on a test's loop (th.h), for the unit tests of
 * servers on a real socket (the admin server, the dashboard's cluster
 * view): it connects to 127.0.0.1:port, writes the request bytes once and
 * reads until the server closes the connection. Nothing here parses
 * HTTP beyond the status line and the start of the body.
 *
 * Loop thread only. The th_http belongs to the test (on its stack or
 * heap) and must stay in place until done is set; it owns its handle,
 * which is closed by then (th_teardown finds no handle left).
 */
#ifndef EB_TEST_TH_HTTP_H
#define EB_TEST_TH_HTTP_H

#include <stddef.h>

#include "tests/harness/th.h"

typedef struct th_http {
	uv_tcp_t     tcp;
	uv_connect_t conn;
	uv_write_t   wr;
	char         req[1024];
	char         resp[65536]; /* NUL-terminated */
	size_t       len;
	int          written; /* the request was handed to the kernel */
	int          done;    /* the connection is closed */
} th_http;

/* Clears c and starts sending bytes (a whole request, or anything: the
 * bytes are written as given, at most sizeof(c->req) - 1 of them);
 * c->done is set once the server closed. The loop is not run. */
void th_http_start(th_loop *t, int port, const char *bytes, th_http *c);
/* th_http_start, then runs the loop until done (asserted, 5 s). */
void th_http_run(th_loop *t, int port, const char *bytes, th_http *c);
/* The status code of the answer (the status line is asserted). */
int th_http_status(const th_http *c);
/* The body: what follows the head's blank line (asserted present). */
const char *th_http_body(const th_http *c);

#endif
