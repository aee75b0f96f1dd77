/*
 * Messages: allocation, the refcount, lazy body parsing and the accessors.
 * A message keeps its body as the compact JSON encoding; eb_bus_msg_body()
 * parses it on first use, so a message that is only forwarded is never
 * parsed. Loop thread only.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/jsonscan.h"
#include "common/jsonstr.h"
#include "eventbus/eventbus_int.h"

/* Raw UTF-8, '/' unescaped, key order kept: the bridge's encoding. */
#define BODY_FLAGS (JSON_COMPACT | JSON_ENCODE_ANY)

int
eb__bus_headers_check(const json_t *headers)
{
	const char *k;
	json_t     *v;
	json_t     *h;

	if (headers == NULL) {
		return 0;
	}
	if (!json_is_object(headers)) {
		return UV_EINVAL;
	}
	h = eb__json_unconst(headers); /* json_object_foreach only reads */
	json_object_foreach(h, k, v)
	{
		if (!json_is_string(v)) {
			return UV_EINVAL;
		}
	}
	return 0;
}

/* Small objects have their keys compared pairwise; larger ones and any
 * escape (two spellings of one key; an unpaired surrogate, valid JSON text
 * that jansson, and so the receiving node, refuses) go through jansson. */
#define ENC_KEYS_MAX 16

/* One "key":"value" member; its key in *k, *kn; *esc when either string
 * has an escape. */
static int
enc_member(eb__jscan *s, const char **k, size_t *kn, int *esc)
{
	int kesc;

	const char *v;
	size_t      vn;
	int         vesc;

	eb__jscan_ws(s);
	if (!eb__jscan_string(s, k, kn, &kesc)) {
		return 0;
	}
	eb__jscan_ws(s);
	if (!eb__jscan_ch(s, ':')) {
		return 0;
	}
	eb__jscan_ws(s);
	if (s->p >= s->end || *s->p != '"') {
		return 0; /* header values are strings */
	}
	if (!eb__jscan_string(s, &v, &vn, &vesc)) {
		return 0;
	}
	*esc = kesc || vesc;
	eb__jscan_ws(s);
	return 1;
}

/* Checked by jansson: escaped keys or many of them. */
static int
enc_check_slow(const char *p, size_t n)
{
	json_error_t jerr;
	json_t      *h =
	    json_loadb(p, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	int rv = h != NULL ? eb__bus_headers_check(h) : UV_EINVAL;

	json_decref(h);
	return rv;
}

/* 1 when the key k[n] repeats one of k[0..n). */
static int
enc_repeated(const char *const *k, const size_t *len, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (len[i] == len[n] && memcmp(k[i], k[n], len[i]) == 0) {
			return 1;
		}
	}
	return 0;
}

/* The members after '{' up to and past '}': 0, UV_EINVAL, or 1 when
 * jansson must decide. */
static int
enc_members(eb__jscan *s)
{
	const char *keys[ENC_KEYS_MAX];
	size_t      lens[ENC_KEYS_MAX];
	size_t      nk = 0;
	int         esc;

	eb__jscan_ws(s);
	if (eb__jscan_ch(s, '}')) {
		return 0;
	}
	do {
		if (!enc_member(s, &keys[nk], &lens[nk], &esc)) {
			return UV_EINVAL;
		}
		if (esc || nk + 1 == ENC_KEYS_MAX) {
			return 1;
		}
		if (enc_repeated(keys, lens, nk)) {
			return UV_EINVAL;
		}
		nk++;
	} while (eb__jscan_ch(s, ','));
	return eb__jscan_ch(s, '}') ? 0 : UV_EINVAL;
}

int
eb__bus_headers_enc_check(const char *p, size_t n)
{
	eb__jscan s;
	int       rv;

	eb__jscan_init(&s, p, n, 1);
	eb__jscan_ws(&s);
	if (!eb__jscan_ch(&s, '{')) {
		return UV_EINVAL;
	}
	if ((rv = enc_members(&s)) == 1) {
		return enc_check_slow(p, n);
	}
	eb__jscan_ws(&s);
	return rv == 0 && s.p == s.end ? 0 : UV_EINVAL;
}

/* The body of every null-bodied message (never written to). */
static char null_body[] = "null";

/*
 * Freed messages that fit MSG_BLOCK bytes are kept for the next ones, per
 * thread (a message is made and freed on its bus's loop thread), at most
 * MSG_POOL_MAX of them (128 KiB): a forwarded ingress message makes and
 * frees several messages on every node, and the allocator's own per-size
 * caches are too small for 64 in flight. The blocks of a thread that ends
 * are freed by the key's destructor.
 */
#define MSG_BLOCK 512u
/* Off under the sanitizers: each message its own allocation, so that a use
 * after free or an overrun is seen, not hidden by a reused block. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MSG_POOL_MAX 0u
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define MSG_POOL_MAX 0u
#endif
#endif
#ifndef MSG_POOL_MAX
#define MSG_POOL_MAX 256u
#endif

typedef struct msg_pool {
	void    *head; /* a free block's first word links the next */
	unsigned n;
	int      keyed; /* registered with pool_key in this thread */
} msg_pool;

static __thread msg_pool tl_pool;
static pthread_key_t     pool_key;
static pthread_once_t    pool_once = PTHREAD_ONCE_INIT;

static void
pool_drain(void *arg)
{
	msg_pool *p = arg;
	void     *next;

	while (p->head != NULL) {
		memcpy(&next, p->head, sizeof(next));
		free(p->head);
		p->head = next;
	}
	p->n = 0;
}

static void
pool_key_make(void)
{
	(void) pthread_key_create(&pool_key, pool_drain);
}

static void *
pool_take(void)
{
	void *b = tl_pool.head;

	if (b == NULL) {
		return eb__malloc(MSG_BLOCK);
	}
	memcpy(&tl_pool.head, b, sizeof(void *));
	tl_pool.n--;
	return b;
}

static void
pool_give(void *b)
{
	if (tl_pool.n >= MSG_POOL_MAX) {
		free(b);
		return;
	}
	if (!tl_pool.keyed) {
		(void) pthread_once(&pool_once, pool_key_make);
		(void) pthread_setspecific(pool_key, &tl_pool);
		tl_pool.keyed = 1;
	}
	memcpy(b, &tl_pool.head, sizeof(void *));
	tl_pool.head = b;
	tl_pool.n++;
}

/* One allocation: the struct, the address, then body_len + 1 bytes for an
 * inline body. */
static eb_bus_msg *
msg_alloc(const char *address, int is_send, size_t body_len)
{
	size_t      alen = strlen(address) + 1;
	size_t      total = sizeof(eb_bus_msg) + alen + body_len + 1;
	int         pooled = MSG_POOL_MAX > 0 && total <= MSG_BLOCK;
	eb_bus_msg *m = pooled ? pool_take() : eb__malloc(total);

	memset(m, 0, sizeof(*m));
	m->pooled = pooled;
	m->refs = 1;
	m->is_send = is_send;
	m->address = (char *) (m + 1);
	memcpy(m->address, address, alen);
	m->body = m->address + alen; /* the body's place (msg_set_body) */
	eb__list_init(&m->bus_link);
	return m;
}

/* The body bytes (or the shared null body) into m. */
static void
msg_set_body(eb_bus_msg *m, const char *body, size_t body_len)
{
	if (body_len == 4 && memcmp(body, "null", 4) == 0) {
		m->body = null_body;
		m->body_parsed = 1; /* body_json stays NULL */
	} else {
		/* m->body is still its place in m's allocation (msg_alloc). */
		memcpy(m->body, body, body_len);
		m->body[body_len] = '\0';
		m->body_inline = 1;
	}
	m->body_len = body_len;
}

static int
msg_set_headers(eb_bus_msg *m, const json_t *headers, json_t *empty, int share)
{
	if (headers == NULL || json_object_size(headers) == 0) {
		m->headers = json_incref(empty); /* shared, never modified */
	} else if (share) {
		/* The caller promised it stays unmodified: hold, not copy. */
		m->headers = json_incref(eb__json_unconst(headers));
	} else if ((m->headers = json_deep_copy(headers)) == NULL) {
		return UV_ENOMEM;
	}
	return 0;
}

int
eb__bus_msg_new(const char *address, const json_t *body, const json_t *headers,
    json_t *empty, int is_send, eb_bus_msg **msgp)
{
	eb_bus_msg *m;
	char       *enc = NULL;
	int         rv;

	if ((rv = eb__bus_headers_check(headers)) != 0) {
		return rv;
	}
	if (body != NULL && !json_is_null(body)) {
		enc = json_dumps(body, BODY_FLAGS);
		if (enc == NULL) {
			return UV_EINVAL; /* e.g. a NaN real or bad UTF-8 */
		}
	}
	m = msg_alloc(address, is_send, 0);
	if (enc != NULL) {
		m->body = enc;
		m->body_len = strlen(enc);
	} else {
		m->body = null_body;
		m->body_len = 4;
		m->body_parsed = 1; /* body_json stays NULL */
	}
	if (msg_set_headers(m, headers, empty, 0) != 0) {
		eb_bus_msg_release(m);
		return UV_ENOMEM;
	}
	*msgp = m;
	return 0;
}

int
eb__bus_msg_make(const char *address, const eb__bus_body *body,
    const json_t *headers, json_t *empty, int is_send, eb_bus_msg **msgp)
{
	const char *raw = body->raw;
	size_t      len = body->raw_len;
	eb_bus_msg *m;
	int         rv;

	if (raw == NULL) {
		/* share_headers applies to raw bodies only (the _raw API). */
		return eb__bus_msg_new(
		    address, body->json, headers, empty, is_send, msgp);
	}
	if ((rv = eb__bus_headers_check(headers)) != 0) {
		return rv;
	}
	if (len == 0) {
		raw = null_body;
		len = 4;
	}
	if (body->hdr_enc != NULL) {
		/* Checked by the caller (eb__bus_headers_enc_check): kept as
		 * bytes after the body, parsed only if someone reads them. */
		m = msg_alloc(address, is_send, len + 1 + body->hdr_enc_len);
		m->hdr_enc = m->body + len + 1; /* before msg_set_body */
		msg_set_body(m, raw, len);
		memcpy(m->hdr_enc, body->hdr_enc, body->hdr_enc_len);
		m->hdr_enc[body->hdr_enc_len] = '\0';
		m->hdr_enc_len = body->hdr_enc_len;
		m->hdr_plain = -1; /* not judged yet */
		*msgp = m;
		return 0;
	}
	m = msg_alloc(address, is_send, len);
	msg_set_body(m, raw, len);
	if (msg_set_headers(m, headers, empty, body->share_headers) != 0) {
		eb_bus_msg_release(m);
		return UV_ENOMEM;
	}
	*msgp = m;
	return 0;
}

/* s without its const, for a view's borrowed strings (never written
 * through: a view is only read). */
static char *
str_unconst(const char *s)
{
	char *m;

	memcpy(&m, &s, sizeof(char *));
	return m;
}

/* A view (eb__bus_msg_point) of the raw body and the headers. */
static int
msg_view(eb_bus_msg *v, const char *address, const eb__bus_body *body,
    const json_t *headers, json_t *empty)
{
	int rv;

	if (body->hdr_enc == NULL &&
	    (rv = eb__bus_headers_check(headers)) != 0) {
		return rv;
	}
	memset(v, 0, sizeof(*v));
	v->refs = 1;
	v->view = 1;
	v->is_send = 1;
	v->address = str_unconst(address);
	eb__list_init(&v->bus_link);
	if (body->raw_len == 0 ||
	    (body->raw_len == 4 && memcmp(body->raw, "null", 4) == 0)) {
		v->body = null_body;
		v->body_len = 4;
		v->body_parsed = 1; /* body_json stays NULL */
	} else {
		v->body = str_unconst(body->raw);
		v->body_len = body->raw_len;
	}
	if (body->hdr_enc != NULL) {
		/* headers stays NULL until someone reads them (then owned) */
		v->hdr_enc = str_unconst(body->hdr_enc);
		v->hdr_enc_len = body->hdr_enc_len;
		v->hdr_plain = -1;
	} else {
		v->headers = headers == NULL || json_object_size(headers) == 0
		                 ? empty
		                 : eb__json_unconst(headers);
	}
	return 0;
}

int
eb__bus_msg_point(eb_bus_msg *v, int to_peer, const char *address,
    const eb__bus_body *body, const json_t *headers, json_t *empty,
    eb_bus_msg **msgp)
{
	if (to_peer && body->raw != NULL &&
	    (body->hdr_enc != NULL || body->share_headers || headers == NULL ||
	        json_object_size(headers) == 0)) {
		*msgp = v;
		return msg_view(v, address, body, headers, empty);
	}
	return eb__bus_msg_make(address, body, headers, empty, 1, msgp);
}

void
eb__bus_msg_done(eb_bus_msg *msg)
{
	if (!msg->view) {
		eb_bus_msg_release(msg);
		return;
	}
	/* Borrowed: address, body, reply address, headers given as an
	 * object. Owned: what was parsed on demand. */
	EB_ASSERT(msg->refs == 1 && msg->bus == NULL);
	if (msg->hdr_enc != NULL) {
		json_decref(msg->headers);
	}
	json_decref(msg->body_json);
}

eb_bus_msg *
eb__bus_msg_from_bytes(const char *address, const char *body, size_t body_len,
    json_t *headers, int is_send)
{
	eb_bus_msg *m = msg_alloc(address, is_send, body_len);

	msg_set_body(m, body, body_len);
	m->headers = json_incref(headers);
	return m;
}

eb_bus_msg *
eb__bus_msg_from_plain(const char *address, const char *body, size_t body_len,
    const char *hdr, size_t hdr_len, int is_send)
{
	eb_bus_msg *m = msg_alloc(address, is_send, body_len + 1 + hdr_len);

	m->hdr_enc = m->body + body_len + 1; /* before msg_set_body */
	msg_set_body(m, body, body_len);
	memcpy(m->hdr_enc, hdr, hdr_len);
	m->hdr_enc[hdr_len] = '\0';
	m->hdr_enc_len = hdr_len;
	m->hdr_plain = 1;
	return m;
}

int
eb__bus_msg_may_have_header(const eb_bus_msg *msg, const char *key)
{
	char   pat[160];
	size_t n = strlen(key);

	if (msg->headers != NULL || msg->hdr_plain != 1 ||
	    n + 4 > sizeof(pat)) {
		return 1;
	}
	/* In a plain object a '"' only delimits, so "key": appears exactly
	 * where that key is. */
	pat[0] = '"';
	memcpy(pat + 1, key, n);
	pat[n + 1] = '"';
	pat[n + 2] = ':';
	pat[n + 3] = '\0';
	/* Plain bytes hold no NUL: hdr_enc is one C string. */
	return strstr(msg->hdr_enc, pat) != NULL;
}

const char *
eb_bus_msg_headers_enc(const eb_bus_msg *msg, size_t *len)
{
	eb_bus_msg *m;

	if (msg->hdr_enc == NULL) {
		return NULL;
	}
	if (msg->hdr_plain < 0) {
		/* Given by a sender (eb_bus_send_confirmed_enc): judged once.
		 */
		memcpy(&m, &msg, sizeof(eb_bus_msg *));
		m->hdr_plain =
		    eb__jsonstr_plain_object_check(m->hdr_enc, m->hdr_enc_len);
	}
	if (!msg->hdr_plain) {
		return NULL;
	}
	*len = msg->hdr_enc_len;
	return msg->hdr_enc;
}

void
eb__bus_msg_set_reply(
    eb_bus *bus, eb_bus_msg *msg, const char *reply_address, uint32_t origin)
{
	size_t n = strlen(reply_address) + 1;

	/* The bus's own reply addresses (and most clients') fit inline. */
	if (n <= sizeof(msg->reply_inline)) {
		memcpy(msg->reply_inline, reply_address, n);
		msg->reply_address = msg->reply_inline;
	} else {
		msg->reply_address = eb__strdup(reply_address);
	}
	msg->origin = origin;
	msg->bus = bus;
	eb__list_insert_tail(&bus->msg.reply_msgs, &msg->bus_link);
}

void
eb__bus_msg_detach(eb_bus_msg *msg)
{
	eb__list_remove(&msg->bus_link);
	msg->bus = NULL;
}

const char *
eb_bus_msg_address(const eb_bus_msg *msg)
{
	return msg->address;
}

const char *
eb_bus_msg_reply_address(const eb_bus_msg *msg)
{
	return msg->reply_address;
}

int
eb_bus_msg_is_send(const eb_bus_msg *msg)
{
	return msg->is_send;
}

const json_t *
eb_bus_msg_headers(const eb_bus_msg *msg)
{
	eb_bus_msg  *m;
	json_error_t jerr;

	if (msg->headers != NULL) {
		return msg->headers;
	}
	/* Encoded headers, parsed on first use (checked when the message
	 * was made, so this cannot fail but for memory). The message is
	 * the caller's to read; only the cache changes. */
	memcpy(&m, &msg, sizeof(eb_bus_msg *));
	m->headers = eb__jsonstr_parse_plain_object(m->hdr_enc, m->hdr_enc_len);
	if (m->headers == NULL) {
		m->headers = json_loadb(m->hdr_enc, m->hdr_enc_len,
		    JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	}
	if (m->headers == NULL) {
		m->headers = json_object();
	}
	return m->headers;
}

eb_bus_msg *
eb_bus_msg_plain(eb_bus_msg *msg)
{
	const char *body;
	size_t      len;

	if (eb__bus_msg_is_plain(msg)) {
		return eb_bus_msg_hold(msg);
	}
	body = eb_bus_msg_body_bytes(msg, &len);
	(void) eb_bus_msg_headers(msg); /* parsed if kept as bytes */
	return eb__bus_msg_from_bytes(msg->address, body, len, msg->headers, 1);
}

const json_t *
eb_bus_msg_body(eb_bus_msg *msg)
{
	json_error_t jerr;

	if (!msg->body_parsed) {
		/* The bytes are valid JSON (json_dumps here, or a client's
		 * text checked by the bridge's scanner), but jansson cannot
		 * hold all of it (an integer past 64 bits, an unpaired
		 * surrogate): then the body reads as null for an in-node
		 * handler, which answers that it cannot read it. The bytes
		 * themselves travel on untouched. */
		msg->body_json = json_loadb(msg->body, msg->body_len,
		    JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
		msg->body_parsed = 1;
		if (json_is_null(msg->body_json)) {
			json_decref(msg->body_json);
			msg->body_json = NULL;
		}
	}
	return msg->body_json;
}

const char *
eb_bus_msg_body_bytes(const eb_bus_msg *msg, size_t *len)
{
	if (len != NULL) {
		*len = msg->body_len;
	}
	return msg->body;
}

eb_bus_msg *
eb_bus_msg_hold(eb_bus_msg *msg)
{
	EB_ASSERT(!msg->view); /* a view is gone when its call returns */
	msg->refs++;
	return msg;
}

void
eb_bus_msg_release(eb_bus_msg *msg)
{
	if (msg == NULL || --msg->refs > 0) {
		return;
	}
	EB_ASSERT(!msg->view); /* eb__bus_msg_done ends a view */
	if (msg->bus != NULL) {
		eb__bus_msg_detach(msg);
	}
	if (msg->reply_address != msg->reply_inline) {
		free(msg->reply_address);
	}
	json_decref(msg->headers);
	if (msg->body != null_body && !msg->body_inline) {
		free(msg->body);
	}
	json_decref(msg->body_json);
	if (msg->pooled) {
		pool_give(msg);
	} else {
		free(msg);
	}
}
