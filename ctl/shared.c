/*
 * ebctl lock | counter | id: requests to the shared-data bus services
 * (docs/SHARED.md) over the bridge. The bridge must permit ebnode.lock,
 * ebnode.counter and ebnode.id inbound (off by default).
 *
 *   lock NAME      acquire (waiting up to --timeout), print "token=<t>",
 *                  hold the lock until stdin closes, release, print
 *                  "released". The lock is also released if ebctl dies
 *                  (its bridge connection closes).
 *   counter NAME [get | increment | add N | cas EXPECT UPDATE | delete]
 *                  (default get) prints the value ("ok=true|false" too for
 *                  cas; exit 1 when a cas did not match).
 *   id [COUNT]     prints COUNT (default 1) ids, one a line.
 * --json prints the reply bodies instead.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "ctl/ctl.h"

#define ERRLEN 512

static int
sfail(const ctl_args *a, const char *what, const char *detail)
{
	(void) fprintf(stderr, "ebctl: %s: %s%s\n", eb__ctl_cmd_name(a->cmd),
	    what, detail);
	return CTL_EXIT_FAIL;
}

/* One request (body: a new reference, consumed): 0 and the reply body (new
 * reference) in *out, or an exit code after printing why. */
static int
request(const ctl_args *a, ctl_conn *c, const char *address, json_t *body,
    int wait_ms, json_t **out)
{
	static unsigned seq;
	char            err[ERRLEN], text[ERRLEN], ra[64];
	json_t         *f, *h = json_deep_copy(a->headers);
	const char     *addr;
	int             rv;

	(void) snprintf(ra, sizeof(ra), "ebctl.%d.%u", (int) getpid(), ++seq);
	if (json_object_get(h, "timeout") == NULL) {
		(void) json_object_set_new(h, "timeout", json_integer(wait_ms));
	}
	/* Both h and body are stolen by the frame ("o"). */
	f = json_pack("{s:s, s:s, s:s, s:o, s:o}", "type", "send", "address",
	    address, "replyAddress", ra, "headers", h, "body", body);
	rv = eb__ctl_send_frame(c, f, a->timeout_ms, err, sizeof(err));
	json_decref(f);
	if (rv != 0) {
		return sfail(a, err, "");
	}
	for (;;) {
		rv =
		    eb__ctl_recv_frame(c, wait_ms + 1000, &f, err, sizeof(err));
		if (rv == 1) {
			return sfail(a, "no reply in time", "");
		}
		if (rv < 0) {
			return sfail(a, err, "");
		}
		addr = json_string_value(json_object_get(f, "address"));
		if (addr == NULL || strcmp(addr, ra) != 0) {
			const char *t =
			    json_string_value(json_object_get(f, "type"));

			if (t != NULL && strcmp(t, "err") == 0 &&
			    addr == NULL) {
				eb__ctl_format_err(f, text, sizeof(text));
				json_decref(f);
				return sfail(a, text, "");
			}
			json_decref(f);
			continue;
		}
		if (json_object_get(f, "failureCode") != NULL ||
		    strcmp(json_string_value(json_object_get(f, "type")),
		        "err") == 0) {
			eb__ctl_format_err(f, text, sizeof(text));
			json_decref(f);
			return sfail(a, text, "");
		}
		*out = json_incref(json_object_get(f, "body"));
		json_decref(f);
		return 0;
	}
}

static int
parse_i64(const char *s, json_int_t *v)
{
	char     *end = NULL;
	long long x = strtoll(s, &end, 10);

	if (end == s || *end != '\0') {
		return -1;
	}
	*v = (json_int_t) x;
	return 0;
}

static int
cmd_lock(const ctl_args *a, ctl_conn *c)
{
	json_t    *r = NULL, *rr = NULL;
	json_int_t tok;
	char       buf[256];
	int        rv;

	rv = request(a, c, "ebnode.lock",
	    json_pack("{s:s, s:s, s:i}", "op", "acquire", "name", a->pos[0],
	        "timeout_ms", a->timeout_ms),
	    a->timeout_ms + 1000, &r);
	if (rv != 0) {
		return rv;
	}
	tok = json_integer_value(json_object_get(r, "token"));
	if (a->json) {
		eb__ctl_print_object(stdout, r, 1);
	} else {
		(void) printf("token=%" JSON_INTEGER_FORMAT "\n", tok);
	}
	(void) fflush(stdout);
	json_decref(r);
	while (fgets(buf, sizeof(buf), stdin) != NULL) {
		/* held until stdin closes */
	}
	rv = request(a, c, "ebnode.lock",
	    json_pack("{s:s, s:s, s:I}", "op", "release", "name", a->pos[0],
	        "token", tok),
	    a->timeout_ms, &rr);
	if (rv != 0) {
		return rv;
	}
	if (a->json) {
		eb__ctl_print_object(stdout, rr, 1);
	} else {
		(void) printf("released\n");
	}
	json_decref(rr);
	return CTL_EXIT_OK;
}

static int
cmd_counter(const ctl_args *a, ctl_conn *c)
{
	const char *op = a->npos > 1 ? a->pos[1] : "get";
	json_t     *body = json_pack("{s:s, s:s}", "op", op, "name", a->pos[0]);
	json_t     *r = NULL;
	json_int_t  x, y;
	int         rv, want = 0;

	if (strcmp(op, "add") == 0) {
		want = 1;
	} else if (strcmp(op, "cas") == 0) {
		want = 2;
	}
	if (a->npos != 2 + want && !(a->npos == 1 && want == 0)) {
		json_decref(body);
		(void) fprintf(stderr, "ebctl: counter: usage: counter NAME "
		                       "[get|increment|add N|cas EXPECT "
		                       "UPDATE|delete]\n");
		return CTL_EXIT_USAGE;
	}
	if (want >= 1) {
		if (parse_i64(a->pos[2], &x) != 0 ||
		    (want == 2 && parse_i64(a->pos[3], &y) != 0)) {
			json_decref(body);
			(void) fprintf(
			    stderr, "ebctl: counter: numbers expected\n");
			return CTL_EXIT_USAGE;
		}
		if (want == 1) {
			(void) json_object_set_new(
			    body, "delta", json_integer(x));
		} else {
			(void) json_object_set_new(
			    body, "expect", json_integer(x));
			(void) json_object_set_new(
			    body, "update", json_integer(y));
		}
	}
	rv = request(a, c, "ebnode.counter", body, a->timeout_ms, &r);
	if (rv != 0) {
		return rv;
	}
	if (a->json) {
		eb__ctl_print_object(stdout, r, 1);
	} else if (strcmp(op, "delete") == 0) {
		(void) printf("deleted=%s\n",
		    json_is_true(json_object_get(r, "deleted")) ? "true"
		                                                : "false");
	} else {
		(void) printf("%" JSON_INTEGER_FORMAT "\n",
		    json_integer_value(json_object_get(r, "value")));
		if (want == 2) {
			(void) printf("ok=%s\n",
			    json_is_true(json_object_get(r, "ok")) ? "true"
			                                           : "false");
		}
	}
	rv = want == 2 && !json_is_true(json_object_get(r, "ok"))
	         ? CTL_EXIT_FAIL
	         : CTL_EXIT_OK;
	json_decref(r);
	return rv;
}

static int
cmd_id(const ctl_args *a, ctl_conn *c)
{
	json_int_t n = 1;
	json_t    *r = NULL;
	size_t     i;
	int        rv;

	if (a->npos == 1 && (parse_i64(a->pos[0], &n) != 0 || n < 1)) {
		(void) fprintf(stderr, "ebctl: id: COUNT must be >= 1\n");
		return CTL_EXIT_USAGE;
	}
	rv = request(a, c, "ebnode.id", json_pack("{s:I}", "count", n),
	    a->timeout_ms, &r);
	if (rv != 0) {
		return rv;
	}
	if (a->json) {
		eb__ctl_print_object(stdout, r, 1);
	} else {
		for (i = 0; i < json_array_size(json_object_get(r, "ids"));
		     i++) {
			(void) printf("%" JSON_INTEGER_FORMAT "\n",
			    json_integer_value(
			        json_array_get(json_object_get(r, "ids"), i)));
		}
	}
	json_decref(r);
	return CTL_EXIT_OK;
}

int
eb__ctl_cmd_shared(const ctl_args *a)
{
	char      err[ERRLEN];
	ctl_conn *c = eb__ctl_connect(a, err, sizeof(err));
	int       rv;

	if (c == NULL) {
		return sfail(a, err, "");
	}
	switch (a->cmd) {
	case CTL_LOCK:
		rv = cmd_lock(a, c);
		break;
	case CTL_COUNTER:
		rv = cmd_counter(a, c);
		break;
	default:
		rv = cmd_id(a, c);
		break;
	}
	eb__ctl_close(c);
	return rv;
}
