/*
 * ebctl internals: command-line parsing (args.c), output formatting (out.c),
 * blocking bridge connections with optional TLS (net.c) and a minimal
 * HTTP/1.1 client for the admin endpoint (http.c). ebctl.c runs the
 * commands. A CLI, so everything blocks, with a deadline on every wait.
 *
 * Exit codes: 0 success, 1 failure (connection, timeout, err frame, HTTP
 * error, unhealthy node), 2 usage error.
 */
#ifndef EB_CTL_CTL_H
#define EB_CTL_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#define CTL_EXIT_OK    0
#define CTL_EXIT_FAIL  1
#define CTL_EXIT_USAGE 2

#define CTL_DEFAULT_BRIDGE  "127.0.0.1:7000"
#define CTL_DEFAULT_ADMIN   "127.0.0.1:7100"
#define CTL_DEFAULT_TIMEOUT 5000 /* ms */
#define CTL_HOST_MAX        256

typedef enum ctl_cmd {
	CTL_NONE,
	CTL_SEND,
	CTL_PUBLISH,
	CTL_REQUEST,
	CTL_LISTEN,
	CTL_NODES,
	CTL_LEADER,
	CTL_HEALTH,
	CTL_RELEASE,
	CTL_LOCK, /* shared data (ctl/shared.c) */
	CTL_COUNTER,
	CTL_ID,
	CTL_HELP,
	CTL_VERSION
} ctl_cmd;

typedef struct ctl_endpoint {
	char host[CTL_HOST_MAX];
	int  port;
} ctl_endpoint;

typedef struct ctl_args {
	ctl_cmd      cmd;
	ctl_endpoint bridge;
	ctl_endpoint admin;
	const char  *token; /* borrowed from argv/environment */
	int          tls;
	int          insecure; /* TLS without peer verification */
	const char  *ca;
	const char  *cert;
	const char  *key;
	const char  *servername; /* TLS name to verify, default: host */
	int          json;
	int          raw; /* --raw: frames printed as the bytes that came */
	int          timeout_ms; /* request/connect/pong wait */
	int          timeout_set;
	uint64_t     count; /* listen: exit after N messages (0: no limit) */
	const char  *address;
	const char  *body_text; /* JSON text, "-" for stdin, NULL: no body */
	json_t      *body;      /* owned; parsed body_text (not for "-") */
	json_t      *headers;   /* owned; object of -H k=v, never NULL */
	const char  *pos[4];    /* lock, counter, id: the arguments after the
	                           command (borrowed from argv) */
	int npos;
} ctl_args;

/*
 * Parses argv (options may come before or after the command). Returns
 * CTL_EXIT_OK, or CTL_EXIT_USAGE with a message in err. Defaults come from
 * EBCTL_BRIDGE, EBCTL_ADMIN and EBCTL_TOKEN when set. a must be freed with
 * eb__ctl_args_free() in both cases.
 */
int eb__ctl_args_parse(
    int argc, char **argv, ctl_args *a, char *err, size_t errlen);
void eb__ctl_args_free(ctl_args *a);
/* "host:port", "[v6]:port" or ":port" (127.0.0.1). 0 or -1. */
int eb__ctl_endpoint_parse(const char *s, ctl_endpoint *ep);
/* Parses JSON text of any type (object, string, number...). NULL and a
 * message in err when invalid. */
json_t     *eb__ctl_body_parse(const char *text, char *err, size_t errlen);
const char *eb__ctl_cmd_name(ctl_cmd cmd);
void        eb__ctl_usage(FILE *out);

/* ---- output (out.c): every function writes complete lines to out ------ */

/*
 * Frames are printed from their payload p[0..n) as it came from the bridge:
 * bodies keep the tokens they arrived with (0.1 stays 0.1, 1e-07 stays
 * 1e-07, escapes stay). mode: CTL_OUT_TEXT, CTL_OUT_JSON (--json) or
 * CTL_OUT_RAW (--raw: the payload's bytes and a newline, nothing else).
 * A payload that is not a JSON object prints nothing.
 */
enum { CTL_OUT_TEXT = 0, CTL_OUT_JSON = 1, CTL_OUT_RAW = 2 };
/* A delivered message frame: one line, "address  k=v ...  body" (the body
 * without the whitespace between its tokens), or with --json the frame as
 * one line, likewise. */
void eb__ctl_print_message(FILE *out, const char *p, size_t n, int mode);
/* A request's reply: the body (a string as its text, other values as they
 * arrived, whitespace and all), or with --json {"address","headers","body"}
 * on one line. */
void eb__ctl_print_reply(FILE *out, const char *p, size_t n, int mode);
/* The output mode of a: CTL_OUT_RAW, CTL_OUT_JSON or CTL_OUT_TEXT. */
int eb__ctl_out_mode(const ctl_args *a);
/* frame.c: a frame payload for dispatch: a new json_t (its body as
 * jansson reads it, null where it cannot), and the body's bytes as they
 * came in *body (NULL: none or null). NULL when p is not a JSON object. */
json_t *eb__ctl_frame_read(
    const char *p, size_t n, const char **body, size_t *blen);
/* An err frame as one human-readable line (no newline at the end) into
 * buf: "NO_HANDLERS (-1): No handlers for address x" / "access_denied". */
void eb__ctl_format_err(json_t *frame, char *buf, size_t len);
/* GET /nodes: a table of the "nodes" array (known columns first, then any
 * extra scalar fields), other top-level fields as "key: value" lines. */
void eb__ctl_print_nodes(FILE *out, json_t *resp, int json);
/* Any JSON object as aligned "key: value" lines (or compact JSON). */
void eb__ctl_print_object(FILE *out, json_t *obj, int json);
/* A scalar as table text: strings raw, true/false as yes/no, null as "-",
 * others compact JSON. Returns a malloc'd string. */
char *eb__ctl_cell(json_t *v);

/* ---- bridge connections (net.c) ----------------------------------------- */

/* Polls fd for events until deadline (eb__mono_ms; 0: no limit): 1 ready, 0
 * timeout, -1 error. */
int eb__ctl_wait_fd(int fd, short events, uint64_t deadline);
/* A non-blocking TCP connection to ep, trying every resolved address until
 * deadline: the fd, or -1 with err. Used by the bridge and admin clients. */
int eb__ctl_tcp_connect(
    const ctl_endpoint *ep, uint64_t deadline, char *err, size_t errlen);

typedef struct ctl_conn ctl_conn;

/* Connects (and handshakes) within timeout_ms. NULL and err on failure. */
ctl_conn *eb__ctl_connect(const ctl_args *a, char *err, size_t errlen);
void      eb__ctl_close(ctl_conn *c);
/* 0 or -1 with err. */
int eb__ctl_send_frame(
    ctl_conn *c, const json_t *frame, int timeout_ms, char *err, size_t errlen);
/*
 * Waits up to timeout_ms (< 0: forever) for the next frame. Returns 0 and a
 * new reference in *out, 1 on timeout, -1 on error or close (err set).
 * Frames that are not JSON objects are skipped.
 */
int eb__ctl_recv_frame(
    ctl_conn *c, int timeout_ms, json_t **out, char *err, size_t errlen);
/* The payload of the frame the last eb__ctl_recv_frame() returned, as it
 * came (what ebctl prints bodies from); valid until the next call. */
const char *eb__ctl_last_frame(const ctl_conn *c, size_t *len);

/* ---- ebctl config (config_cmd.c) --------------------------------------- */

/* argv[0] is "config": the whole subcommand; returns the exit code (3: a
 * compare-and-set conflict). */
int eb__ctl_config_main(int argc, char **argv);

/* ---- admin HTTP (http.c) ------------------------------------------------ */

typedef struct ctl_http_resp {
	int    status;
	char  *body; /* owned, NUL-terminated */
	size_t body_len;
} ctl_http_resp;

/* One request with "Connection: close" and an optional bearer token.
 * 0, or -1 with err (connect, timeout, malformed response). */
int eb__ctl_http(const ctl_endpoint *ep, const char *method, const char *path,
    const char *token, int timeout_ms, ctl_http_resp *resp, char *err,
    size_t errlen);
/* Parses a complete HTTP/1.x response (pure; chunked bodies allowed). 0,
 * 1 if incomplete, -1 if malformed. */
int  eb__ctl_http_parse(const char *data, size_t n, ctl_http_resp *resp);
void eb__ctl_http_resp_free(ctl_http_resp *resp);

/* lock NAME, counter NAME [OP [ARGS]], id [COUNT] (ctl/shared.c): bus
 * requests to ebnode.lock, ebnode.counter, ebnode.id (docs/SHARED.md). */
int eb__ctl_cmd_shared(const ctl_args *a);

#endif
