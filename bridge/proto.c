/*
 * The bridge's frame codec: client frames (JSON objects) to eb__bframe, and
 * the server frames (message, err, pong) with Vert.x's key order, each as one
 * buffer holding the 4-byte length and the compact JSON.
 *
 * Decoding is one pass of the RFC 8259 scanner (common/jsonscan.h) over the
 * whole frame: any JSON a client may write is taken (whitespace anywhere,
 * escapes in keys and values, any key order, unknown keys, repeated keys --
 * the last wins --, numbers of any size and form, \u0000, nesting up to the
 * bridge's max_json_depth), and the body's bytes are kept as they came:
 * nothing is re-encoded (docs/BRIDGE-PROTOCOL.md section 1). What the node
 * must read is decoded from its bytes: type, address, replyAddress, the
 * failure's code and message, and the headers, whose values become strings
 * as Java's toString() prints them (true -> "true", numbers as written,
 * objects and arrays as compact JSON, null dropped). Values of the wrong
 * type never throw: a non-string address or type counts as missing, a
 * non-string replyAddress or a non-object headers is ignored (an empty
 * address counts as missing too). A frame is refused, with the reason in
 * f->err for the err frame, when it is not JSON, not an object, nested too
 * deep, or when a string the node reads as text has no text form (an
 * unpaired surrogate; U+0000 in type, address, replyAddress, message or
 * headers.token, or in a header name).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/err.h>

#include "bridge/bridge_int.h"
#include "common/alloc.h"
#include "common/assert.h"
#include "common/jsonscan.h"
#include "common/jsonstr.h"
#include "common/util.h"

/* ---- decoding: one scan of the envelope (common/jsonscan.h) ---- */

enum { K_TYPE, K_ADDRESS, K_REPLY, K_BODY, K_HEADERS, K_FCODE, K_MESSAGE, K_N };

/* One member value as it stands in the payload. */
typedef struct bspan {
	const char *p; /* NULL: the key is absent; a string: between quotes */
	size_t      n;
	int         kind; /* '"' string, '0' number, else its first byte */
	int         esc;  /* a string with escapes */
} bspan;

/* The envelope key k[0..n), or -1 for one the node ignores (by length
 * first: called for every key of every frame). */
static int
env_key(const char *k, size_t n)
{
#define EB_KEY_IS(lit) (memcmp(k, lit, sizeof(lit) - 1) == 0)
	switch (n) {
	case 4:
		return EB_KEY_IS("type")   ? K_TYPE
		       : EB_KEY_IS("body") ? K_BODY
		                           : -1;
	case 7:
		return EB_KEY_IS("address")   ? K_ADDRESS
		       : EB_KEY_IS("headers") ? K_HEADERS
		       : EB_KEY_IS("message") ? K_MESSAGE
		                              : -1;
	case 11:
		return EB_KEY_IS("failureCode") ? K_FCODE : -1;
	case 12:
		return EB_KEY_IS("replyAddress") ? K_REPLY : -1;
	default:
		return -1;
	}
#undef EB_KEY_IS
}

static eb__bframe_type
frame_type(const char *t, size_t n)
{
	static const struct {
		const char     *name;
		size_t          len;
		eb__bframe_type type;
	} types[] = {
		{ "send", 4, EB__BF_SEND },
		{ "publish", 7, EB__BF_PUBLISH },
		{ "register", 8, EB__BF_REGISTER },
		{ "unregister", 10, EB__BF_UNREGISTER },
		{ "ping", 4, EB__BF_PING },
	};
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (types[i].len == n && types[i].name[0] == t[0] &&
		    memcmp(t, types[i].name, n) == 0) {
			return types[i].type;
		}
	}
	return EB__BF_UNKNOWN; /* Vert.x defaults to "message" */
}

/* Refuses the frame: f->err says why (the err frame's message). */
static int refuse(eb__bframe *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
refuse(eb__bframe *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void) vsnprintf(f->err, sizeof(f->err), fmt, ap);
	va_end(ap);
	return EB_EFRAME;
}

/* The value at s->p into sp (strings: the bytes between the quotes). */
static int
scan_member(eb__jscan *s, int depth, bspan *sp)
{
	const unsigned char *start = s->p;

	if (s->p < s->end && *s->p == '"') {
		sp->kind = '"';
		return eb__jscan_string_quick(s, &sp->p, &sp->n, &sp->esc);
	}
	if (!eb__jscan_value(s, depth)) {
		return 0;
	}
	sp->p = (const char *) start;
	sp->n = (size_t) (s->p - start);
	sp->kind = (*start == '-' || (*start >= '0' && *start <= '9'))
	               ? '0'
	               : (int) *start;
	sp->esc = 0;
	return 1;
}

/* An escaped key decoded into k (cap bytes) for matching; 0 when it
 * cannot be one of ours (too long, or an escape without a text form). */
static size_t
key_text(const char *p, size_t n, char *k, size_t cap)
{
	ptrdiff_t len;

	if (n >= cap || (len = eb__json_unescape(p, n, k)) < 0) {
		return 0;
	}
	k[len] = '\0';
	return (size_t) len;
}

/*
 * The string of sp as text (decoded, NUL-terminated) kept in f->sbuf or a
 * block of its own. NULL with f->err set when it has no text form: an
 * unpaired surrogate, or U+0000 (the node reads these as C strings).
 */
static const char *
text_of(eb__bframe *f, size_t *used, const bspan *sp, const char *what)
{
	char     *dst;
	ptrdiff_t n;

	if (sp->n < sizeof(f->sbuf) - *used) {
		dst = f->sbuf + *used;
	} else {
		EB_ASSERT(f->nowned < sizeof(f->owned) / sizeof(f->owned[0]));
		dst = eb__malloc(sp->n + 1);
		f->owned[f->nowned++] = dst;
	}
	if (sp->esc) {
		n = eb__json_unescape(sp->p, sp->n, dst);
	} else {
		memcpy(dst, sp->p, sp->n);
		n = (ptrdiff_t) sp->n;
	}
	/* Unescaped bytes hold no NUL (the scanner refuses control bytes):
	 * only a decoded \u0000 can. */
	if (n < 0 || (sp->esc && memchr(dst, '\0', (size_t) n) != NULL)) {
		(void) refuse(f, "invalid_frame: %s holds %s", what,
		    n < 0 ? "an unpaired surrogate" : "U+0000");
		return NULL;
	}
	dst[n] = '\0';
	if (dst >= f->sbuf && dst < f->sbuf + sizeof(f->sbuf)) {
		*used += (size_t) n + 1;
	}
	return dst;
}

/* A number's text (at most 63 bytes) NUL-terminated in buf; 0 if longer. */
static int
number_text(const bspan *sp, char *buf, size_t cap)
{
	if (sp->kind != '0' || sp->n >= cap) {
		return 0;
	}
	memcpy(buf, sp->p, sp->n);
	buf[sp->n] = '\0';
	return 1;
}

static int
number_is_integer(const bspan *sp)
{
	return memchr(sp->p, '.', sp->n) == NULL &&
	       memchr(sp->p, 'e', sp->n) == NULL &&
	       memchr(sp->p, 'E', sp->n) == NULL;
}

/* headers.timeout: a positive integer, or a real >= 1 (truncated); an
 * integer past 64 bits is the largest timeout (clamped later to
 * bridge.max_request_timeout_ms). Anything else is not a timeout. */
static void
header_timeout(eb__bframe *f, const bspan *sp)
{
	char               buf[64];
	unsigned long long v;
	double             d;

	f->timeout_ms = 0; /* a repeated key: the last one wins */
	if (sp->kind != '0' || sp->p[0] == '-') {
		return;
	}
	if (number_is_integer(sp)) {
		if (!number_text(sp, buf, sizeof(buf))) {
			f->timeout_ms = UINT64_MAX;
			return;
		}
		errno = 0;
		v = strtoull(buf, NULL, 10);
		if (v > 0) {
			f->timeout_ms = errno == ERANGE ? UINT64_MAX : v;
		}
		return;
	}
	if (number_text(sp, buf, sizeof(buf)) && (d = strtod(buf, NULL)) >= 1 &&
	    d < 9.2e18) {
		f->timeout_ms = (uint64_t) d;
	}
}

/* An object or array as compact text: the whitespace between tokens
 * dropped, everything else (numbers, escapes) as written. */
static json_t *
compact_string(const char *p, size_t n)
{
	char   *out = eb__malloc(n + 1);
	json_t *j = json_stringn(out, eb__json_compact(p, n, out));

	free(out);
	return j;
}

/* A header value as Java's toString() prints it, numbers as written;
 * NULL for JSON null. *bad when a string has no text form. */
static json_t *
header_string(eb__bframe *f, const bspan *sp, const char *key, int *bad)
{
	char     *t;
	ptrdiff_t n;
	json_t   *j;

	switch (sp->kind) {
	case '"':
		t = eb__malloc(sp->n + 1);
		n = sp->esc ? eb__json_unescape(sp->p, sp->n, t)
		            : (memcpy(t, sp->p, sp->n), (ptrdiff_t) sp->n);
		j = n < 0 ? NULL : json_stringn(t, (size_t) n);
		free(t);
		if (j == NULL) {
			*bad = refuse(f,
			    "invalid_frame: header %s holds an unpaired "
			    "surrogate",
			    key);
		}
		return j;
	case 't':
		return json_string("true");
	case 'f':
		return json_string("false");
	case 'n':
		return NULL;
	case '0':
		return json_stringn(sp->p, sp->n);
	default:
		return compact_string(sp->p, sp->n);
	}
}

/* One header: the option keys are consumed, the rest kept as strings;
 * the token's span goes to *tok (decoded once, after the walk: a frame may
 * repeat the key any number of times, and the last one wins). */
static int
header_one(eb__bframe *f, const char *key, const bspan *sp, int strip_token,
    bspan *tok)
{
	json_t *s;
	int     bad = 0;

	if (strcmp(key, "timeout") == 0) {
		header_timeout(f, sp);
		return 0;
	}
	if (strcmp(key, "localOnly") == 0) {
		f->local_only =
		    sp->kind == 't' || (sp->kind == '"' && sp->n == 4 &&
		                           memcmp(sp->p, "true", 4) == 0);
		return 0;
	}
	if (strcmp(key, "codecName") == 0) {
		return 0; /* Vert.x codecs mean nothing here */
	}
	if (strcmp(key, "token") == 0) {
		*tok = *sp;
		if (strip_token) {
			return 0; /* never forwarded */
		}
	}
	s = header_string(f, sp, key, &bad);
	if (s == NULL) {
		if (f->headers !=
		    NULL) { /* null after a value: the last wins */
			(void) json_object_del(f->headers, key);
		}
		return bad;
	}
	if (f->headers == NULL) {
		f->headers = json_object();
	}
	(void) json_object_set_new(f->headers, key, s);
	return 0;
}

/* Walks the headers object (already validated by the envelope scan). */
static int
frame_headers(eb__bframe *f, size_t *used, const bspan *hs, int strip_token)
{
	eb__jscan   s;
	const char *k;
	size_t      kl;
	int         esc;
	bspan       v;
	bspan       tok;
	char       *key;
	ptrdiff_t   n;
	int         rv = 0;

	tok.kind = 0;
	eb__jscan_init(&s, hs->p, hs->n, INT_MAX);
	(void) eb__jscan_ch(&s, '{');
	eb__jscan_ws(&s);
	while (rv == 0 && !eb__jscan_ch(&s, '}')) {
		memset(&v, 0, sizeof(v));
		(void) eb__jscan_string(&s, &k, &kl, &esc);
		eb__jscan_ws(&s);
		(void) eb__jscan_ch(&s, ':');
		eb__jscan_ws(&s);
		(void) scan_member(&s, 0, &v);
		key = eb__malloc(kl + 1);
		n = esc ? eb__json_unescape(k, kl, key)
		        : (memcpy(key, k, kl), (ptrdiff_t) kl);
		if (n < 0 || memchr(key, '\0', (size_t) n) != NULL) {
			rv = refuse(f, "invalid_frame: a header name holds %s",
			    n < 0 ? "an unpaired surrogate" : "U+0000");
		} else {
			key[n] = '\0';
			rv = header_one(f, key, &v, strip_token, &tok);
		}
		free(key);
		eb__jscan_ws(&s);
		(void) eb__jscan_ch(&s, ',');
		eb__jscan_ws(&s);
	}
	if (rv == 0 && tok.kind == '"' &&
	    (f->token = text_of(f, used, &tok, "headers.token")) == NULL) {
		rv = EB_EFRAME;
	}
	return rv;
}

/* failureCode: an int (an integer, or an integral real: Java's getInteger
 * takes any Number); 1 when usable. */
static int
failure_code(const bspan *sp, int *out)
{
	char   buf[64];
	double d;

	if (!number_text(sp, buf, sizeof(buf))) {
		return 0;
	}
	d = strtod(buf, NULL);
	if (!(d >= (double) INT32_MIN && d <= (double) INT32_MAX) ||
	    d != (double) (int) d) {
		return 0;
	}
	*out = (int) d;
	return 1;
}

/* f from the member spans. */
static int
frame_fill(eb__bframe *f, const bspan *v, int strip_token)
{
	size_t      used = 0;
	const char *t;

	f->raw = 1;
	f->type = EB__BF_UNKNOWN;
	if (v[K_TYPE].kind == '"' && !v[K_TYPE].esc) {
		f->type = frame_type(v[K_TYPE].p, v[K_TYPE].n); /* no copy */
	} else if (v[K_TYPE].kind == '"') {
		if ((t = text_of(f, &used, &v[K_TYPE], "type")) == NULL) {
			return EB_EFRAME;
		}
		f->type = frame_type(t, strlen(t));
	}
	/* "" is no address: the bus has no empty address. */
	if (v[K_ADDRESS].kind == '"' && v[K_ADDRESS].n > 0 &&
	    (f->address = text_of(f, &used, &v[K_ADDRESS], "address")) ==
	        NULL) {
		return EB_EFRAME;
	}
	if (v[K_REPLY].kind == '"' &&
	    (f->reply_address =
	            text_of(f, &used, &v[K_REPLY], "replyAddress")) == NULL) {
		return EB_EFRAME;
	}
	if (v[K_BODY].p != NULL && v[K_BODY].kind != 'n') {
		/* As it came, whitespace and all (strings keep their quotes).
		 */
		f->body_raw =
		    v[K_BODY].kind == '"' ? v[K_BODY].p - 1 : v[K_BODY].p;
		f->body_raw_len = v[K_BODY].n + (v[K_BODY].kind == '"' ? 2 : 0);
	}
	if (failure_code(&v[K_FCODE], &f->failure_code)) {
		f->has_failure = 1;
		if (v[K_MESSAGE].kind == '"' &&
		    (f->failure_message = text_of(
		         f, &used, &v[K_MESSAGE], "message")) == NULL) {
			return EB_EFRAME;
		}
	}
	return v[K_HEADERS].kind == '{'
	           ? frame_headers(f, &used, &v[K_HEADERS], strip_token)
	           : 0;
}

/* Every field before sbuf, one by one (a memset of the whole prefix
 * costs a rep stos per frame). */
static void
bframe_reset(eb__bframe *f)
{
	f->root = NULL;
	f->type = EB__BF_UNKNOWN;
	f->address = NULL;
	f->reply_address = NULL;
	f->body = NULL;
	f->raw = 0;
	f->body_raw = NULL;
	f->body_raw_len = 0;
	f->headers = NULL;
	f->token = NULL;
	f->timeout_ms = 0;
	f->local_only = 0;
	f->has_failure = 0;
	f->failure_code = 0;
	f->failure_message = "";
	f->nowned = 0;
}

int
eb__bframe_parse(
    const char *p, size_t n, int strip_token, int max_depth, eb__bframe *f)
{
	eb__jscan   s;
	bspan       v[K_N];
	size_t      i;
	bspan       m;
	const char *k;
	size_t      kl;
	int         esc;
	int         key;
	char        kb[16];

	bframe_reset(f);
	for (i = 0; i < K_N; i++) { /* cheaper than a memset's rep stos */
		v[i].p = NULL;
		v[i].kind = 0;
	}
	eb__jscan_init(&s, p, n, max_depth);
	eb__jscan_ws(&s);
	if (!eb__jscan_ch(&s, '{')) {
		return refuse(f, "invalid_json: %s",
		    n == 0 ? "empty frame" : "not a JSON object");
	}
	eb__jscan_ws(&s);
	if (!eb__jscan_ch(&s, '}')) {
		for (;;) {
			if (!eb__jscan_string_quick(&s, &k, &kl, &esc)) {
				break;
			}
			/* Ours are plain: an escaped key is decoded first. */
			key = esc ? env_key(kb, key_text(k, kl, kb, sizeof(kb)))
			          : env_key(k, kl);
			eb__jscan_ws(&s);
			if (!eb__jscan_ch(&s, ':')) {
				(void) eb__jscan_fail(&s, "expected ':'");
				break;
			}
			eb__jscan_ws(&s);
			/* A repeated key: the last one wins, as in Vert.x. */
			if (!scan_member(&s, 1, key >= 0 ? &v[key] : &m)) {
				break;
			}
			eb__jscan_ws(&s);
			if (eb__jscan_ch(&s, '}')) {
				break;
			}
			if (!eb__jscan_ch(&s, ',')) {
				(void) eb__jscan_fail(
				    &s, "expected ',' or '}'");
				break;
			}
			eb__jscan_ws(&s);
		}
	}
	if (s.why == NULL) {
		eb__jscan_ws(&s);
		if (s.p != s.end) {
			(void) eb__jscan_fail(&s, "bytes after the object");
		}
	}
	if (s.why != NULL) {
		return refuse(f, "invalid_json: %s at byte %zu", s.why,
		    eb__jscan_offset(&s));
	}
	return frame_fill(f, v, strip_token);
}

void
eb__bframe_free(eb__bframe *f)
{
	unsigned i;

	json_decref(f->headers);
	json_decref(f->root);
	for (i = 0; i < f->nowned; i++) {
		free(f->owned[i]);
	}
	bframe_reset(f);
}

/* ---- outgoing ---- */

/* Appends j as one frame (header + compact JSON) to out. */
static void
bout_json(eb__buf *out, json_t *j)
{
	const size_t flags = JSON_COMPACT | JSON_ENCODE_ANY;
	size_t       n = json_dumpb(j, NULL, 0, flags);
	char        *dst = eb__buf_reserve(out, n + EB_FRAME_HDR);

	/* Our own frames are valid UTF-8 objects far below 2 GiB. */
	if (n == 0 || n > INT32_MAX ||
	    json_dumpb(j, dst + EB_FRAME_HDR, n, flags) != n) {
		abort();
	}
	eb__frame_put_len((unsigned char *) dst, (uint32_t) n);
	out->len += n + EB_FRAME_HDR;
	json_decref(j);
}

void
eb__bout_err_buf(eb__buf *out, const char *message)
{
	json_t *j = json_object();

	(void) json_object_set_new(j, "type", json_string("err"));
	(void) json_object_set_new(j, "message", json_string(message));
	bout_json(out, j);
}

void
eb__bout_pong_buf(eb__buf *out)
{
	static const char pong[] = "\0\0\0\x0f{\"type\":\"pong\"}";

	eb__buf_append(out, pong, sizeof(pong) - 1);
}

void
eb__bout_failure_buf(eb__buf *out, const char *token, const char *source,
    int code, const char *type, const char *message)
{
	json_t *j = json_object();

	(void) json_object_set_new(j, "type", json_string("err"));
	(void) json_object_set_new(j, "address", json_string(token));
	(void) json_object_set_new(j, "sourceAddress", json_string(source));
	(void) json_object_set_new(j, "failureCode", json_integer(code));
	(void) json_object_set_new(j, "failureType", json_string(type));
	(void) json_object_set_new(
	    j, "message", json_string(message != NULL ? message : ""));
	bout_json(out, j);
}

/* Appends the compact encoding of j to b. */
static void
sb_json(eb__buf *b, const json_t *j)
{
	const size_t flags = JSON_COMPACT | JSON_ENCODE_ANY;
	size_t       n = json_dumpb(j, NULL, 0, flags);
	char        *dst = eb__buf_reserve(b, n);

	if (json_dumpb(j, dst, n, flags) != n) {
		abort();
	}
	b->len += n;
}

static void
sb_str(eb__buf *b, const char *s)
{
	eb__buf_append(b, s, strlen(s));
}

/* 1 when s is printable ASCII without '"' and '\\': its JSON encoding is
 * the bytes themselves in quotes. */
static int
plain_ascii(const char *s, size_t *n)
{
	const unsigned char *p = (const unsigned char *) s;

	for (; *p != '\0'; p++) {
		if (*p < 0x20 || *p >= 0x7f || *p == '"' || *p == '\\') {
			return 0;
		}
	}
	*n = (size_t) (p - (const unsigned char *) s);
	return 1;
}

static void
sb_string(eb__buf *b, const char *s)
{
	json_t *j;
	size_t  n;
	char   *dst;

	if (plain_ascii(s, &n)) {
		dst = eb__buf_reserve(b, n + 2);
		dst[0] = '"';
		memcpy(dst + 1, s, n);
		dst[n + 1] = '"';
		b->len += n + 2;
		return;
	}
	j = json_string(s);

	if (j == NULL) {
		/* Not UTF-8 (addresses come from JSON, so never). */
		j = json_string("");
	}
	sb_json(b, j);
	json_decref(j);
}

/* Appends s of length n to *dst and advances it. */
static void
put(char **dst, const char *s, size_t n)
{
	memcpy(*dst, s, n);
	*dst += n;
}

#define PUT_LIT(dst, lit) put(dst, lit, sizeof(lit) - 1)

/*
 * The common message frame in one reservation: plain ASCII addresses, the
 * headers' encoding hdr[0..hlen) ("{}" for none). 0 when it does not apply
 * (the general path then runs).
 */
static int
bout_message_plain(eb__buf *b, const char *address, const char *reply_address,
    const char *hdrs, size_t hlen, const char *body_bytes, size_t body_len,
    int send)
{
	static const char pre[] = "{\"type\":\"message\",\"address\":\"";
	static const char mid[] = "\",\"replyAddress\":\"";
	static const char hdr[] = "\",\"headers\":";
	static const char bod[] = ",\"body\":";
	static const char snd[] = ",\"send\":true}";
	static const char pub[] = ",\"send\":false}";
	size_t            alen;
	size_t            rlen = 0;
	size_t            total;
	char             *dst;

	if (!plain_ascii(address, &alen) ||
	    (reply_address != NULL && !plain_ascii(reply_address, &rlen))) {
		return 0;
	}
	if (body_bytes == NULL ||
	    (body_len == 4 && memcmp(body_bytes, "null", 4) == 0)) {
		body_len = 0;
	}
	total = (sizeof(pre) - 1) + alen +
	        (reply_address != NULL ? (sizeof(mid) - 1) + rlen : 0) +
	        (sizeof(hdr) - 1) + hlen +
	        (body_len > 0 ? (sizeof(bod) - 1) : 0) + body_len +
	        (send ? sizeof(snd) : sizeof(pub)) - 1;
	if (total > INT32_MAX) {
		return 0;
	}
	dst = eb__buf_reserve(b, EB_FRAME_HDR + total);
	b->len += EB_FRAME_HDR + total;
	eb__frame_put_len((unsigned char *) dst, (uint32_t) total);
	dst += EB_FRAME_HDR;
	PUT_LIT(&dst, pre);
	put(&dst, address, alen);
	if (reply_address != NULL) {
		PUT_LIT(&dst, mid);
		put(&dst, reply_address, rlen);
	}
	PUT_LIT(&dst, hdr);
	put(&dst, hdrs, hlen);
	if (body_len > 0) {
		PUT_LIT(&dst, bod);
		put(&dst, body_bytes, body_len);
	}
	if (send) {
		PUT_LIT(&dst, snd);
	} else {
		PUT_LIT(&dst, pub);
	}
	return 1;
}

/* The general message frame: headers as an object, or as their encoding
 * hdrs[0..hlen) when hdrs is not NULL. */
static void
bout_message_any(eb__buf *b, const char *address, const char *reply_address,
    const json_t *headers, const char *hdrs, size_t hlen,
    const char *body_bytes, size_t body_len, int send)
{
	size_t start;
	size_t payload;

	/* Offsets from off: a reserve may compact the buffer. */
	start = b->len - b->off;
	eb__buf_append(b, "\0\0\0\0", EB_FRAME_HDR);
	sb_str(b, "{\"type\":\"message\",\"address\":");
	sb_string(b, address);
	if (reply_address != NULL) {
		sb_str(b, ",\"replyAddress\":");
		sb_string(b, reply_address);
	}
	if (hdrs != NULL) {
		sb_str(b, ",\"headers\":");
		eb__buf_append(b, hdrs, hlen);
	} else if (headers != NULL && json_is_object(headers) &&
	           json_object_size(headers) > 0) {
		sb_str(b, ",\"headers\":");
		if (eb__jsonstr_put_object(b, headers) != 0) {
			sb_json(b, headers); /* not all strings */
		}
	} else {
		sb_str(b, ",\"headers\":{}");
	}
	if (body_bytes != NULL && body_len > 0 &&
	    !(body_len == 4 && memcmp(body_bytes, "null", 4) == 0)) {
		sb_str(b, ",\"body\":");
		eb__buf_append(b, body_bytes, body_len);
	}
	sb_str(b, send ? ",\"send\":true}" : ",\"send\":false}");
	payload = b->len - b->off - start - EB_FRAME_HDR;
	eb__frame_put_len(
	    (unsigned char *) b->data + b->off + start, (uint32_t) payload);
}

void
eb__bout_message_buf(eb__buf *b, const char *address, const char *reply_address,
    const json_t *headers, const char *body_bytes, size_t body_len, int send)
{
	if ((headers == NULL || json_object_size(headers) == 0) &&
	    bout_message_plain(b, address, reply_address, "{}", 2, body_bytes,
	        body_len, send)) {
		return;
	}
	bout_message_any(b, address, reply_address, headers, NULL, 0,
	    body_bytes, body_len, send);
}

void
eb__bout_message_enc(eb__buf *b, const char *address, const char *reply_address,
    const char *hdrs, size_t hlen, const char *body_bytes, size_t body_len,
    int send)
{
	if (!bout_message_plain(b, address, reply_address, hdrs, hlen,
	        body_bytes, body_len, send)) {
		bout_message_any(b, address, reply_address, NULL, hdrs, hlen,
		    body_bytes, body_len, send);
	}
}
