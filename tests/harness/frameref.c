/*
 * The differential check of the bridge's frame parser (frameref.h).
 */
#include "tests/harness/frameref.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bridge/bridge_int.h"
#include "common/jsonstr.h"
#include "tests/harness/jsonref.h"

/* The reference's reading of a frame (jansson values, borrowed). */
typedef struct ref {
	const json_t *type;
	const json_t *address;
	const json_t *reply;
	const json_t *body;
	const json_t *headers;
	const json_t *fcode;
	const json_t *message;
} ref;

static int differ(char *why, size_t why_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
differ(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void) vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
	return -1;
}

/* A string value as the parser reads text: NULL when not a string. */
static const char *
ref_str(const json_t *v)
{
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static int
has_nul(const json_t *v)
{
	return json_is_string(v) &&
	       strlen(json_string_value(v)) != json_string_length(v);
}

static int
same(const char *a, const char *b)
{
	return (a == NULL && b == NULL) ||
	       (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* The reference's type: the frame_type table. */
static eb__bframe_type
ref_type(const json_t *t)
{
	static const char *const names[] = { "send", "publish", "register",
		"unregister", "ping" };
	size_t                   i;

	for (i = 0; json_is_string(t) && i < 5; i++) {
		if (strcmp(json_string_value(t), names[i]) == 0) {
			return (eb__bframe_type) i;
		}
	}
	return EB__BF_UNKNOWN;
}

/* One header value of the parser (a string) against the reference's. */
static int
header_ok(const json_t *mine, const json_t *want)
{
	json_t *parsed;
	int     eq;

	if (!json_is_string(mine)) {
		return 0;
	}
	if (json_is_string(want)) {
		return json_equal(mine, want);
	}
	if (json_is_true(want) || json_is_false(want)) {
		return strcmp(json_string_value(mine),
		           json_is_true(want) ? "true" : "false") == 0;
	}
	/* A number, object or array: its text parses to the same value. */
	parsed = json_loadb(json_string_value(mine), json_string_length(mine),
	    JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	eq = parsed != NULL && json_equal(parsed, want);
	json_decref(parsed);
	return eq;
}

/* The headers: option keys, the token and the stringified rest. */
static int
headers_ok(
    const eb__bframe *g, const json_t *h, int strip, char *why, size_t why_len)
{
	json_t     *m = NULL;
	void       *it;
	size_t      kept = 0;
	const char *key;
	json_t     *v;
	json_t     *mine;

	m = eb__json_unconst(h);
	for (it = json_object_iter(m); it != NULL;
	     it = json_object_iter_next(m, it)) {
		key = json_object_iter_key(it);
		v = json_object_iter_value(it);
		if (strcmp(key, "timeout") == 0 ||
		    strcmp(key, "localOnly") == 0 ||
		    strcmp(key, "codecName") == 0 ||
		    (strip && strcmp(key, "token") == 0) || json_is_null(v)) {
			continue;
		}
		kept++;
		mine = g->headers != NULL ? json_object_get(g->headers, key)
		                          : NULL;
		if (!header_ok(mine, v)) {
			return differ(why, why_len, "header %s differs", key);
		}
	}
	if ((g->headers != NULL ? json_object_size(g->headers) : 0) != kept) {
		return differ(why, why_len, "%zu headers, reference %zu",
		    g->headers != NULL ? json_object_size(g->headers) : 0,
		    kept);
	}
	return 0;
}

/* The option headers the parser reads. */
static int
options_ok(const eb__bframe *g, const json_t *h, char *why, size_t why_len)
{
	json_t  *m = NULL;
	json_t  *t;
	json_t  *l;
	uint64_t tmo = 0;
	int      local;

	m = eb__json_unconst(h);
	t = json_is_object(m) ? json_object_get(m, "timeout") : NULL;
	l = json_is_object(m) ? json_object_get(m, "localOnly") : NULL;
	if (json_is_integer(t) && json_integer_value(t) > 0) {
		tmo = (uint64_t) json_integer_value(t);
	} else if (json_is_real(t) && json_real_value(t) >= 1 &&
	           json_real_value(t) < 9.2e18) {
		tmo = (uint64_t) json_real_value(t);
	}
	local =
	    json_is_true(l) ||
	    (json_is_string(l) && strcmp(json_string_value(l), "true") == 0);
	if (g->timeout_ms != tmo || g->local_only != local) {
		return differ(why, why_len,
		    "timeout %llu / localOnly %d, reference %llu / %d",
		    (unsigned long long) g->timeout_ms, g->local_only,
		    (unsigned long long) tmo, local);
	}
	t = json_is_object(m) ? json_object_get(m, "token") : NULL;
	if (!same(g->token, ref_str(t))) {
		return differ(why, why_len, "token differs");
	}
	return 0;
}

static int
failure_ok(const eb__bframe *g, const ref *r, char *why, size_t why_len)
{
	double d = 0;
	int    has = 0;

	if (json_is_integer(r->fcode)) {
		has = json_integer_value(r->fcode) >= INT32_MIN &&
		      json_integer_value(r->fcode) <= INT32_MAX;
		d = (double) json_integer_value(r->fcode);
	} else if (json_is_real(r->fcode)) {
		d = json_real_value(r->fcode);
		has = d >= (double) INT32_MIN && d <= (double) INT32_MAX &&
		      d == (double) (int) d;
	}
	if (g->has_failure != has || (has && g->failure_code != (int) d) ||
	    (has &&
	        !same(g->failure_message,
	            ref_str(r->message) != NULL ? ref_str(r->message) : ""))) {
		return differ(why, why_len, "failure fields differ");
	}
	return 0;
}

static int
body_ok(const eb__bframe *g, const char *p, size_t n, const json_t *body,
    char *why, size_t why_len)
{
	json_t *b;
	int     eq;

	if (body == NULL || json_is_null(body)) {
		return g->body_raw == NULL
		           ? 0
		           : differ(why, why_len, "a body where none is");
	}
	if (g->body_raw == NULL || g->body_raw < p ||
	    g->body_raw + g->body_raw_len > p + n) {
		return differ(why, why_len, "the body is not a payload span");
	}
	b = json_loadb(g->body_raw, g->body_raw_len,
	    JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	eq = b != NULL && json_equal(b, body);
	json_decref(b);
	return eq ? 0
	          : differ(why, why_len, "body bytes [%.*s] differ",
	                (int) g->body_raw_len, g->body_raw);
}

/* Both took the frame: every field must agree. */
static int
fields_ok(const eb__bframe *g, const char *p, size_t n, const ref *r, int strip,
    char *why, size_t why_len)
{
	const char *addr = ref_str(r->address);

	if (addr != NULL && addr[0] == '\0') {
		addr = NULL;
	}
	if (g->type != ref_type(r->type) || !same(g->address, addr) ||
	    !same(g->reply_address, ref_str(r->reply))) {
		return differ(why, why_len, "type, address or replyAddress");
	}
	if (options_ok(g, r->headers, why, why_len) != 0 ||
	    failure_ok(g, r, why, why_len) != 0 ||
	    body_ok(g, p, n, r->body, why, why_len) != 0) {
		return -1;
	}
	if (json_is_object(r->headers)) {
		return headers_ok(g, r->headers, strip, why, why_len);
	}
	return g->headers == NULL ? 0
	                          : differ(why, why_len, "headers from none");
}

/* A refusal the reference cannot make: U+0000 where the parser reads text,
 * or a NUL byte in the payload (jansson stops reading there). */
static int
refusal_allowed(const char *p, size_t n, const ref *r, const char *err)
{
	json_t *m = NULL;
	void   *it;
	int     nul_key = 0;

	if (memchr(p, '\0', n) != NULL) {
		return 1;
	}
	if (strstr(err, "U+0000") == NULL) {
		return 0;
	}
	m = eb__json_unconst(r->headers);
	for (it = json_is_object(m) ? json_object_iter(m) : NULL; it != NULL;
	     it = json_object_iter_next(m, it)) {
		nul_key |= strlen(json_object_iter_key(it)) !=
		           json_object_iter_key_len(it);
	}
	return nul_key || has_nul(r->type) || has_nul(r->address) ||
	       has_nul(r->reply) || has_nul(r->message) ||
	       (json_is_object(m) && has_nul(json_object_get(m, "token")));
}

static int
compare(const char *p, size_t n, int strip, int max_depth, eb__bframe *g,
    int rv, json_t *root, char *why, size_t why_len)
{
	ref r;

	if (!json_is_object(root)) {
		return rv != 0 ? 0 : differ(why, why_len, "took a non-object");
	}
	memset(&r, 0, sizeof(r));
	r.type = json_object_get(root, "type");
	r.address = json_object_get(root, "address");
	r.reply = json_object_get(root, "replyAddress");
	r.body = json_object_get(root, "body");
	r.headers = json_object_get(root, "headers");
	r.fcode = json_object_get(root, "failureCode");
	r.message = json_object_get(root, "message");
	if (eb__jsonref_depth(root) > max_depth) {
		return rv != 0 && strstr(g->err, "nested too deep") != NULL
		           ? 0
		           : differ(why, why_len, "depth %d > %d not refused",
		                 eb__jsonref_depth(root), max_depth);
	}
	if (rv != 0) {
		return refusal_allowed(p, n, &r, g->err)
		           ? 0
		           : differ(why, why_len,
		                 "refused (%s), jansson took it", g->err);
	}
	return fields_ok(g, p, n, &r, strip, why, why_len) == 0 ? 1 : -1;
}

int
eb__frameref_check(const char *p, size_t n, int strip_token, int max_depth,
    char *why, size_t why_len)
{
	eb__bframe   g;
	json_error_t jerr;
	json_t      *root;
	int          rv;
	int          out;

	rv = eb__bframe_parse(p, n, strip_token, max_depth, &g);
	if (rv != 0 && strncmp(g.err, "invalid_", 8) != 0) {
		out = differ(
		    why, why_len, "refused without a reason: [%s]", g.err);
	} else if ((root = json_loadb(p, n, JSON_ALLOW_NUL, &jerr)) == NULL) {
		/* Taken although jansson refuses: only for what RFC 8259
		 * allows and jansson cannot hold. */
		out = rv != 0 ? 0
		      : eb__jsonref_known_refusal(jerr.text)
		          ? 1
		          : differ(why, why_len, "took it, jansson: %s",
		                jerr.text);
	} else {
		out = compare(
		    p, n, strip_token, max_depth, &g, rv, root, why, why_len);
		json_decref(root);
	}
	eb__bframe_free(&g);
	return out;
}
