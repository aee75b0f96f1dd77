/*
 * ebctl: a command-line client for ebnode (or any Vert.x TCP event-bus
 * bridge) and ebnode's admin endpoint. See `ebctl --help` and docs/EBCTL.md.
 *
 * send/publish get no answer from a bridge, so ebctl follows the frame with
 * a ping: the bridge handles one socket's frames in order, so an err frame
 * caused by the send (access_denied, ...) arrives before the pong, and the
 * pong proves the frame was processed.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ebnode/version.h>

#include "common/util.h"
#include "ctl/ctl.h"

#define ERRLEN      512
#define CTL_PING_MS 5000 /* listen: ping when idle this long */

static int fail(const ctl_args *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
fail(const ctl_args *a, const char *fmt, ...)
{
	va_list ap;

	(void) fprintf(stderr, "ebctl: %s: ", eb__ctl_cmd_name(a->cmd));
	va_start(ap, fmt);
	(void) vfprintf(stderr, fmt, ap);
	va_end(ap);
	(void) fputc('\n', stderr);
	return CTL_EXIT_FAIL;
}

/* The message body: parsed argument, stdin for "-", or null. */
static json_t *
load_body(const ctl_args *a, char *err, size_t errlen)
{
	json_error_t je;
	json_t      *j;

	if (a->body_text == NULL) {
		return json_null();
	}
	if (strcmp(a->body_text, "-") != 0) {
		return json_incref(a->body);
	}
	j = json_loadf(stdin, JSON_DECODE_ANY, &je);
	if (j == NULL) {
		(void) snprintf(
		    err, errlen, "stdin is not valid JSON: %s", je.text);
	}
	return j;
}

static json_t *
message_frame(const ctl_args *a, const char *type, json_t *body)
{
	json_t *f = json_pack("{s:s,s:s}", "type", type, "address", a->address);

	if (json_object_size(a->headers) > 0) {
		json_object_set(f, "headers", a->headers);
	}
	json_object_set(f, "body", body);
	return f;
}

static int
is_type(const json_t *f, const char *type)
{
	const char *t = json_string_value(json_object_get(f, "type"));

	return t != NULL && strcmp(t, type) == 0;
}

/* Sends a ping and waits for the pong; an address-less err frame first
 * means the previous frame was refused. Messages that arrive meanwhile go
 * to on_msg (if set). */
static int
await_pong(
    const ctl_args *a, ctl_conn *c, void (*on_msg)(json_t *, void *), void *arg)
{
	char    err[ERRLEN];
	char    text[ERRLEN];
	json_t *ping = json_pack("{s:s}", "type", "ping");
	json_t *f;
	int     rv;

	rv = eb__ctl_send_frame(c, ping, a->timeout_ms, err, sizeof(err));
	json_decref(ping);
	if (rv != 0) {
		return fail(a, "%s", err);
	}
	for (;;) {
		rv = eb__ctl_recv_frame(c, a->timeout_ms, &f, err, sizeof(err));
		if (rv == 1) {
			return fail(a, "no answer from the bridge within %d ms",
			    a->timeout_ms);
		}
		if (rv < 0) {
			return fail(a, "%s", err);
		}
		if (is_type(f, "pong")) {
			json_decref(f);
			return CTL_EXIT_OK;
		}
		if (is_type(f, "err")) {
			eb__ctl_format_err(f, text, sizeof(text));
			json_decref(f);
			return fail(a, "refused by the bridge: %s", text);
		}
		if (on_msg != NULL && is_type(f, "message")) {
			on_msg(f, arg);
		}
		json_decref(f);
	}
}

static ctl_conn *
connect_bridge(const ctl_args *a)
{
	char      err[ERRLEN];
	ctl_conn *c = eb__ctl_connect(a, err, sizeof(err));

	if (c == NULL) {
		(void) fail(a, "%s", err);
	}
	return c;
}

static int
cmd_send(const ctl_args *a, const char *type)
{
	char      err[ERRLEN];
	json_t   *body;
	json_t   *f;
	ctl_conn *c;
	int       rv;

	if ((body = load_body(a, err, sizeof(err))) == NULL) {
		(void) fprintf(stderr, "ebctl: %s\n", err);
		return CTL_EXIT_USAGE;
	}
	if ((c = connect_bridge(a)) == NULL) {
		json_decref(body);
		return CTL_EXIT_FAIL;
	}
	f = message_frame(a, type, body);
	rv = eb__ctl_send_frame(c, f, a->timeout_ms, err, sizeof(err));
	json_decref(f);
	json_decref(body);
	rv = rv != 0 ? fail(a, "%s", err) : await_pong(a, c, NULL, NULL);
	if (rv == CTL_EXIT_OK && a->json) {
		printf("{\"ok\":true,\"type\":\"%s\"}\n", type);
	}
	eb__ctl_close(c);
	return rv;
}

static int
request_wait(const ctl_args *a, ctl_conn *c, const char *reply_to)
{
	char        err[ERRLEN];
	char        text[ERRLEN];
	json_t     *f;
	const char *addr;
	int         rv;
	/* The bridge times out at a->timeout_ms (header); give it a moment
	 * more so that its TIMEOUT err frame wins over ours. */
	int wait_ms = a->timeout_ms + 1000;

	for (;;) {
		rv = eb__ctl_recv_frame(c, wait_ms, &f, err, sizeof(err));
		if (rv == 1) {
			return fail(a, "no reply within %d ms", wait_ms);
		}
		if (rv < 0) {
			return fail(a, "%s", err);
		}
		addr = json_string_value(json_object_get(f, "address"));
		if (is_type(f, "err") &&
		    (addr == NULL || strcmp(addr, reply_to) == 0)) {
			eb__ctl_format_err(f, text, sizeof(text));
			json_decref(f);
			return fail(a, "%s", text);
		}
		if (is_type(f, "message") && addr != NULL &&
		    strcmp(addr, reply_to) == 0) {
			const char *raw;
			size_t      rlen;

			raw = eb__ctl_last_frame(c, &rlen);
			eb__ctl_print_reply(
			    stdout, raw, rlen, eb__ctl_out_mode(a));
			json_decref(f);
			return CTL_EXIT_OK;
		}
		json_decref(f);
	}
}

static int
cmd_request(const ctl_args *a)
{
	char      err[ERRLEN];
	char      reply_to[64];
	char      uuid[EB_UUID_STRLEN + 1];
	json_t   *body;
	json_t   *f;
	ctl_conn *c;
	int       rv;

	if ((body = load_body(a, err, sizeof(err))) == NULL) {
		(void) fprintf(stderr, "ebctl: %s\n", err);
		return CTL_EXIT_USAGE;
	}
	if ((c = connect_bridge(a)) == NULL) {
		json_decref(body);
		return CTL_EXIT_FAIL;
	}
	if (eb__uuid(uuid) != 0) {
		(void) snprintf(uuid, sizeof(uuid), "%d", (int) getpid());
	}
	(void) snprintf(reply_to, sizeof(reply_to), "ebctl.%s", uuid);
	f = message_frame(a, "send", body);
	json_object_set_new(f, "replyAddress", json_string(reply_to));
	if (json_object_get(a->headers, "timeout") == NULL) {
		json_t *h = json_object_get(f, "headers");

		if (h == NULL) {
			json_object_set_new(f, "headers", json_object());
			h = json_object_get(f, "headers");
		} else {
			h = json_copy(h);
			json_object_set_new(f, "headers", h);
		}
		json_object_set_new(h, "timeout", json_integer(a->timeout_ms));
	}
	rv = eb__ctl_send_frame(c, f, a->timeout_ms, err, sizeof(err));
	json_decref(f);
	json_decref(body);
	rv = rv != 0 ? fail(a, "%s", err) : request_wait(a, c, reply_to);
	eb__ctl_close(c);
	return rv;
}

typedef struct listen_state {
	const ctl_args *a;
	ctl_conn       *c;
	uint64_t        seen;
} listen_state;

static void
listen_on_msg(json_t *f, void *arg)
{
	listen_state *ls = arg;
	const char   *addr = json_string_value(json_object_get(f, "address"));
	const char   *raw;
	size_t        rlen;

	if (addr == NULL || strcmp(addr, ls->a->address) != 0 ||
	    (ls->a->count > 0 && ls->seen >= ls->a->count)) {
		return;
	}
	raw = eb__ctl_last_frame(ls->c, &rlen);
	eb__ctl_print_message(stdout, raw, rlen, eb__ctl_out_mode(ls->a));
	(void) fflush(stdout);
	ls->seen++;
}

/* Sends a ping (keeps the connection alive through idle timeouts, like
 * the Vert.x clients do every 5 s); the pong is ignored. */
static int
listen_ping(const ctl_args *a, ctl_conn *c)
{
	char    err[ERRLEN];
	json_t *ping = json_pack("{s:s}", "type", "ping");
	int rv = eb__ctl_send_frame(c, ping, a->timeout_ms, err, sizeof(err));

	json_decref(ping);
	return rv != 0 ? fail(a, "%s", err) : CTL_EXIT_OK;
}

static int
listen_loop(const ctl_args *a, ctl_conn *c, listen_state *ls)
{
	char     err[ERRLEN];
	char     text[ERRLEN];
	uint64_t deadline =
	    a->timeout_set ? eb__mono_ms() + (uint64_t) a->timeout_ms : 0;
	uint64_t now;
	uint64_t wait;
	json_t  *f;
	int      rv;

	while (a->count == 0 || ls->seen < a->count) {
		now = eb__mono_ms();
		if (deadline != 0 && now >= deadline) {
			break;
		}
		wait = deadline != 0 && deadline - now < CTL_PING_MS
		           ? deadline - now
		           : CTL_PING_MS;
		rv = eb__ctl_recv_frame(c, (int) wait, &f, err, sizeof(err));
		if (rv == 1) {
			if (listen_ping(a, c) != CTL_EXIT_OK) {
				return CTL_EXIT_FAIL;
			}
			continue; /* the loop head checks the deadline */
		}
		if (rv < 0) {
			return fail(a, "%s", err);
		}
		if (is_type(f, "err")) {
			eb__ctl_format_err(f, text, sizeof(text));
			json_decref(f);
			return fail(a, "%s", text);
		}
		if (is_type(f, "message")) {
			listen_on_msg(f, ls);
		}
		json_decref(f);
	}
	if (a->count > 0 && ls->seen < a->count) {
		char detail[64];

		(void) snprintf(detail, sizeof(detail), "%llu of %llu",
		    (unsigned long long) ls->seen,
		    (unsigned long long) a->count);
		return fail(a, "timed out after %s messages", detail);
	}
	return CTL_EXIT_OK;
}

static int
cmd_listen(const ctl_args *a)
{
	char         err[ERRLEN];
	json_t      *f;
	ctl_conn    *c;
	listen_state ls = { a, NULL, 0 };
	int          rv;

	if ((c = connect_bridge(a)) == NULL) {
		return CTL_EXIT_FAIL;
	}
	ls.c = c;
	f = json_pack("{s:s,s:s}", "type", "register", "address", a->address);
	if (json_object_size(a->headers) > 0) {
		json_object_set(f, "headers", a->headers);
	}
	rv = eb__ctl_send_frame(c, f, a->timeout_ms, err, sizeof(err));
	json_decref(f);
	if (rv != 0) {
		rv = fail(a, "%s", err);
	} else if ((rv = await_pong(a, c, listen_on_msg, &ls)) == CTL_EXIT_OK) {
		rv = listen_loop(a, c, &ls);
	}
	eb__ctl_close(c);
	return rv;
}

static int
http_status_fail(const ctl_args *a, const ctl_http_resp *r, json_t *j)
{
	const char *msg = NULL;
	char        detail[ERRLEN];

	if (json_is_object(j)) {
		msg = json_string_value(json_object_get(j, "error"));
		if (msg == NULL) {
			msg = json_string_value(json_object_get(j, "message"));
		}
		if (msg == NULL) {
			msg = json_string_value(json_object_get(j, "reason"));
		}
	}
	(void) snprintf(detail, sizeof(detail), "HTTP %d%s%s%s", r->status,
	    r->status == 401 || r->status == 403 ? " (check --token)" : "",
	    msg != NULL ? ": " : "", msg != NULL ? msg : "");
	return fail(a, "%s", detail);
}

static int
cmd_admin(const ctl_args *a)
{
	char          err[ERRLEN];
	ctl_http_resp r;
	json_t       *j;
	const char   *path;
	int           rv = CTL_EXIT_OK;

	path = a->cmd == CTL_NODES    ? "/nodes"
	       : a->cmd == CTL_LEADER ? "/leader"
	       : a->cmd == CTL_HEALTH ? "/health"
	                              : "/leader/release";
	if (eb__ctl_http(&a->admin, a->cmd == CTL_RELEASE ? "POST" : "GET",
	        path, a->token, a->timeout_ms, &r, err, sizeof(err)) != 0) {
		return fail(a, "%s", err);
	}
	j = json_loadb(r.body, r.body_len, JSON_DECODE_ANY, NULL);
	if (r.status == 503 && a->cmd == CTL_HEALTH && json_is_object(j)) {
		/* Unhealthy is an answer, not an error: print it, exit 1. */
		eb__ctl_print_object(stdout, j, a->json);
		rv = CTL_EXIT_FAIL;
	} else if (r.status < 200 || r.status > 299) {
		rv = http_status_fail(a, &r, j);
	} else if (j == NULL) {
		if (a->cmd == CTL_RELEASE && r.body_len == 0) {
			printf(a->json ? "{\"ok\":true}\n" : "released\n");
		} else {
			rv = fail(a, "response is not JSON: %.200s", r.body);
		}
	} else if (a->cmd == CTL_NODES) {
		eb__ctl_print_nodes(stdout, j, a->json);
	} else {
		eb__ctl_print_object(stdout, j, a->json);
	}
	json_decref(j);
	eb__ctl_http_resp_free(&r);
	return rv;
}

int
main(int argc, char **argv)
{
	ctl_args a;
	char     err[ERRLEN];
	int      rv;

	(void) signal(SIGPIPE, SIG_IGN);
	if (argc >= 2 && strcmp(argv[1], "config") == 0) {
		return eb__ctl_config_main(argc - 1, argv + 1);
	}
	rv = eb__ctl_args_parse(argc, argv, &a, err, sizeof(err));
	if (rv != CTL_EXIT_OK) {
		(void) fprintf(stderr, "ebctl: %s\nTry 'ebctl --help'.\n", err);
		eb__ctl_args_free(&a);
		return rv;
	}
	switch (a.cmd) {
	case CTL_HELP:
		eb__ctl_usage(stdout);
		break;
	case CTL_VERSION:
		printf("ebctl %s\n", EB_VERSION_STRING);
		break;
	case CTL_SEND:
		rv = cmd_send(&a, "send");
		break;
	case CTL_PUBLISH:
		rv = cmd_send(&a, "publish");
		break;
	case CTL_REQUEST:
		rv = cmd_request(&a);
		break;
	case CTL_LISTEN:
		rv = cmd_listen(&a);
		break;
	case CTL_LOCK:
	case CTL_COUNTER:
	case CTL_ID:
		rv = eb__ctl_cmd_shared(&a);
		break;
	default:
		rv = cmd_admin(&a);
		break;
	}
	eb__ctl_args_free(&a);
	return rv;
}
