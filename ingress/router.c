/*
 * The ingress router: the leader's consumer on the leader address. It checks
 * the leadership lease before each message (rule 5), stamps the message with
 * epoch, per-epoch sequence and entry node (rule 6), routes it by the rules
 * or hands it to a custom handler, and acknowledges it.
 *
 * An acknowledgement means delivered: a routed message goes out as a
 * confirmed send/publish stamped with the epoch (eb_bus_send_confirmed, the
 * fence travels in the link frame), and the gateway is answered only from
 * the receipt: ok when the target's node confirmed that a consumer was
 * handed the message. A failed send is routed once more (same stamp) when
 * another handler is reachable and this node still leads; otherwise, and
 * for publish, the answer is a failure saying why (and, for publish, how
 * many targets confirmed).
 *
 * Safe retries (docs/INGRESS.md): a send keyed by the header ebnode.msgid
 * goes to the node that rendezvous hashing of the key picks among the nodes
 * with handlers of its target (eb__ingress_rendezvous: every leader picks
 * the same node while that set is unchanged), is never routed to another
 * node after a failed receipt (that would deliver twice), and a receipt
 * that says the node delivered the key before (EB_EDUPLICATE) is answered
 * as a duplicate with the first delivery's stamp; the consumer's node keeps
 * the keys (eventbus/dedup.c).
 *
 * Sequence numbers are taken when a message is routed (its target had a
 * handler), and each taken number is answered exactly once: acknowledged or
 * failed. So the sequences of one epoch have no gaps among routed messages;
 * among *acknowledged* ones a gap is a routed message whose delivery was not
 * confirmed (its sender got a failure; it may still have been delivered).
 * Loop thread only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/ingress.h>
#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/dec.h"
#include "common/jsonstr.h"
#include "ingress/ingress_int.h"

static void
rule_free(eb__ingress_rule *r)
{
	free(r->header);
	free(r->field);
	free(r->value);
	free(r->to);
	if (r->has_re) {
		regfree(&r->re);
	}
	memset(r, 0, sizeof(*r)); /* freeing twice is harmless */
}

void
eb__ingress_rules_free(eb_ingress *in)
{
	size_t i;

	for (i = 0; i < in->rule_count; i++) {
		rule_free(&in->rules[i]);
	}
	free(in->rules);
	in->rules = NULL;
	in->rule_count = 0;
	if (in->default_rule != NULL) {
		rule_free(in->default_rule);
		free(in->default_rule);
		in->default_rule = NULL;
	}
}

static char *
dup_or_null(const char *s)
{
	return s != NULL ? eb__strdup(s) : NULL;
}

static int
rule_copy(eb__ingress_rule *dst, const eb_ingress_route *src, int is_default,
    size_t index, eb_errbuf *err)
{
	char   anchored[1024];
	size_t n;

	memset(dst, 0, sizeof(*dst));
	if (src->to == NULL || src->to[0] == '\0') {
		return eb_errf(
		    err, EB_ECONF, "ingress route %zu: missing \"to\"", index);
	}
	if (!is_default) {
		if ((src->header == NULL) == (src->field == NULL)) {
			return eb_errf(err, EB_ECONF,
			    "ingress route %zu: exactly one of header, field",
			    index);
		}
		if (src->value == NULL) {
			return eb_errf(err, EB_ECONF,
			    "ingress route %zu: missing match value", index);
		}
	}
	dst->header = dup_or_null(src->header);
	dst->field = dup_or_null(src->field);
	dst->value = dup_or_null(src->value);
	dst->to = eb__strdup(src->to);
	dst->match = src->match;
	dst->publish = src->publish != 0;
	if (!is_default && src->match == EB_INGRESS_MATCH_REGEX) {
		n = strlen(src->value);
		if (n + 5 > sizeof(anchored)) {
			rule_free(dst);
			return eb_errf(err, EB_ECONF,
			    "ingress route %zu: regex too long", index);
		}
		/* Whole-string match, like the bridge's permitted lists. */
		(void) snprintf(
		    anchored, sizeof(anchored), "^(%s)$", src->value);
		if (regcomp(&dst->re, anchored, REG_EXTENDED | REG_NOSUB) !=
		    0) {
			rule_free(dst);
			return eb_errf(err, EB_ECONF,
			    "ingress route %zu: invalid regex \"%s\"", index,
			    src->value);
		}
		dst->has_re = 1;
	}
	return 0;
}

int
eb__ingress_rules_copy(
    eb_ingress *in, const eb_ingress_opts *opts, eb_errbuf *err)
{
	size_t i;
	int    rv;

	in->rules = eb__calloc(opts->route_count, sizeof(*in->rules));
	for (i = 0; i < opts->route_count; i++) {
		rv = rule_copy(&in->rules[i], &opts->routes[i], 0, i, err);
		if (rv != 0) {
			eb__ingress_rules_free(in);
			return rv;
		}
		in->rule_count = i + 1;
	}
	if (opts->default_route != NULL) {
		in->default_rule = eb__calloc(1, sizeof(*in->default_rule));
		rv =
		    rule_copy(in->default_rule, opts->default_route, 1, 0, err);
		if (rv != 0) {
			free(in->default_rule);
			in->default_rule = NULL;
			eb__ingress_rules_free(in);
			return rv;
		}
	}
	return 0;
}

/*
 * The text a rule looks at, NULL when absent or not a string, integer or
 * boolean. A body field is read from the body's bytes (field.c): nothing
 * else of the body is parsed, and the text is kept in c for the next rule
 * on the same field, so each field is extracted once per message.
 */
typedef struct subject_cache {
	const char *field; /* the rule's field name, NULL: nothing cached */
	const char *text;
	char       *heap; /* owned: a long decoded string */
	char        tmp[64];
} subject_cache;

static const char *
rule_subject(const eb__ingress_rule *r, eb_bus_msg *msg, subject_cache *c)
{
	const json_t          *v;
	const char            *body;
	size_t                 len;
	eb__ingress_field_kind kind;

	if (r->header != NULL) {
		/* Headers are strings (eb__bus_headers_check). */
		v = json_object_get(eb_bus_msg_headers(msg), r->header);
		return json_is_string(v) ? json_string_value(v) : NULL;
	}
	if (c->field != NULL && strcmp(c->field, r->field) == 0) {
		return c->text;
	}
	free(c->heap);
	body = eb_bus_msg_body_bytes(msg, &len);
	c->field = r->field;
	c->text = eb__ingress_field(
	    body, len, r->field, &kind, c->tmp, sizeof(c->tmp), &c->heap);
	return c->text;
}

static const eb__ingress_rule *
route_pick(eb_ingress *in, eb_bus_msg *msg)
{
	subject_cache           c = { NULL, NULL, NULL, { 0 } };
	const eb__ingress_rule *found = in->default_rule;
	const char             *s;
	size_t                  i;

	for (i = 0; i < in->rule_count; i++) {
		const eb__ingress_rule *r = &in->rules[i];
		int                     hit = 0;

		s = rule_subject(r, msg, &c);
		if (s == NULL) {
			continue;
		}
		switch (r->match) {
		case EB_INGRESS_MATCH_EQUALS:
			hit = strcmp(s, r->value) == 0;
			break;
		case EB_INGRESS_MATCH_PREFIX:
			hit = strncmp(s, r->value, strlen(r->value)) == 0;
			break;
		case EB_INGRESS_MATCH_REGEX:
			hit = regexec(&r->re, s, 0, NULL, 0) == 0;
			break;
		}
		if (hit) {
			found = r;
			break;
		}
	}
	free(c.heap);
	return found;
}

/* 1 when s needs no escaping inside a JSON string. */
static int
json_plain(const char *s)
{
	for (; *s != '\0'; s++) {
		if ((unsigned char) *s < 0x20 || *s == '"' || *s == '\\') {
			return 0;
		}
	}
	return 1;
}

int
eb_ingress_ack(eb_bus_msg *msg, const eb_ingress_stamp *stamp, const char *to)
{
	char    buf[256];
	json_t *ack;
	size_t  n;
	int     rv;

	if (eb_bus_msg_reply_address(msg) == NULL) {
		return 0; /* nobody asked */
	}
	/* From a template: the bytes jansson would write for the same object
	 * (compact, this key order), without building one. */
	if ((to == NULL || (json_plain(to) && strlen(to) < sizeof(buf) - 80)) &&
	    stamp->epoch <= (uint64_t) INT64_MAX &&
	    stamp->seq <= (uint64_t) INT64_MAX) {
		static const char h1[] = "{\"status\":\"ok\",\"epoch\":";
		static const char h2[] = ",\"seq\":";
		static const char h3[] = ",\"to\":\"";
		char             *p = buf;

		memcpy(p, h1, sizeof(h1) - 1);
		p += sizeof(h1) - 1;
		p += eb__dec_u64(p, stamp->epoch);
		memcpy(p, h2, sizeof(h2) - 1);
		p += sizeof(h2) - 1;
		p += eb__dec_u64(p, stamp->seq);
		if (to != NULL) {
			n = strlen(to);
			memcpy(p, h3, sizeof(h3) - 1);
			p += sizeof(h3) - 1;
			memcpy(p, to, n);
			p += n;
			*p++ = '"';
		}
		*p++ = '}';
		return eb_bus_msg_reply_raw(
		    msg, buf, (size_t) (p - buf), NULL, NULL, NULL, NULL);
	}
	ack = json_pack("{s:s,s:I,s:I}", "status", "ok", "epoch",
	    (json_int_t) stamp->epoch, "seq", (json_int_t) stamp->seq);
	if (to != NULL) {
		(void) json_object_set_new(ack, "to", json_string(to));
	}
	rv = eb_bus_msg_reply(msg, ack, NULL, NULL, NULL, NULL);
	json_decref(ack);
	return rv;
}

/* The answer to a retry its target's node had delivered already: like the
 * ack (epoch is this leader's, for the gateway's fence), plus the stamp of
 * the first delivery. */
static int
ack_duplicate(eb_bus_msg *msg, const eb_ingress_stamp *st, const char *to,
    uint64_t orig_epoch, uint64_t orig_seq)
{
	json_t *ack;
	int     rv;

	if (eb_bus_msg_reply_address(msg) == NULL) {
		return 0;
	}
	ack = json_pack("{s:s,s:I,s:I,s:s,s:I,s:I}", "status", "duplicate",
	    "epoch", (json_int_t) st->epoch, "seq", (json_int_t) st->seq, "to",
	    to, "original_epoch", (json_int_t) orig_epoch, "original_seq",
	    (json_int_t) orig_seq);
	if (ack == NULL) {
		return UV_ENOMEM;
	}
	rv = eb_bus_msg_reply(msg, ack, NULL, NULL, NULL, NULL);
	json_decref(ack);
	return rv;
}

/* 64-bit FNV-1a over len bytes, continuing from h. */
static uint64_t
fnv1a(uint64_t h, const char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char) p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* splitmix64's finalizer: every input bit reaches every output bit. */
static uint64_t
mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t
eb__ingress_rendezvous_weight(const char *key, size_t klen, const char *node)
{
	uint64_t h = fnv1a(0xcbf29ce484222325ULL, key, klen);

	h = fnv1a(h, "\xff", 1); /* never part of UTF-8 text */
	return mix64(fnv1a(h, node, strlen(node)));
}

const char *
eb__ingress_rendezvous(
    const char *key, size_t klen, const char *const *nodes, size_t n)
{
	const char *best = NULL;
	uint64_t    best_w = 0;
	size_t      i;

	for (i = 0; i < n; i++) {
		uint64_t w = eb__ingress_rendezvous_weight(key, klen, nodes[i]);

		/* Ties (never seen in practice) go to the smaller id, so the
		 * order of nodes does not matter. */
		if (best == NULL || w > best_w ||
		    (w == best_w && strcmp(nodes[i], best) < 0)) {
			best = nodes[i];
			best_w = w;
		}
	}
	return best;
}

/* The stamp header keys, in the order a stamp appends them. */
enum { STAMP_EPOCH, STAMP_SEQ, STAMP_ENTRY, STAMP_CONFIG, STAMP_N };

static const char *const stamp_keys[STAMP_N] = { EB_INGRESS_HDR_EPOCH,
	EB_INGRESS_HDR_SEQ, EB_INGRESS_HDR_ENTRY, EB_INGRESS_HDR_CONFIG };

static int
stamp_key(const char *k)
{
	int i;

	if (strncmp(k, "ebnode.", 7) != 0) {
		return -1;
	}
	for (i = 0; i < STAMP_N; i++) {
		if (strcmp(k, stamp_keys[i]) == 0) {
			return i;
		}
	}
	return -1;
}

/* One stamp member, its key the constant of stamp i (the key the message
 * had is equal to it). The keys and the numbers (epoch, sequence, config
 * version) need no escape, so they skip the check of every byte; the
 * entry node came with the message and is checked (issue 25). */
static void
stamp_put(eb__buf *out, int first, int i, const char *v, size_t vn)
{
	static const size_t klen[STAMP_N] = { sizeof(EB_INGRESS_HDR_EPOCH) - 1,
		sizeof(EB_INGRESS_HDR_SEQ) - 1,
		sizeof(EB_INGRESS_HDR_ENTRY) - 1,
		sizeof(EB_INGRESS_HDR_CONFIG) - 1 };

	if (i == STAMP_ENTRY) {
		eb__jsonstr_put_member(
		    out, first, stamp_keys[i], klen[i], v, vn);
	} else {
		eb__jsonstr_put_plain_member(
		    out, first, stamp_keys[i], klen[i], v, vn);
	}
}

/*
 * The stamped headers, encoded into out (emptied first): the message's own
 * headers in their order, a stamp key among them taking the stamp's value
 * in place, then the stamps not yet written (epoch, sequence, entry node,
 * config version when there is one). The same bytes as copying the object,
 * setting the four keys and encoding it, without building the object.
 * Returns 1 when they are surely an object of strings with distinct keys
 * (the send need not check them: in->send_enc), 0 when a key holds a NUL
 * byte, where its encoding is cut and may repeat another key.
 */
static int
stamped_headers(const eb_ingress *in, eb_bus_msg *msg,
    const eb_ingress_stamp *st, eb__buf *out)
{
	json_t     *h = eb__json_unconst(eb_bus_msg_headers(msg));
	char        num[STAMP_N][24];
	const char *val[STAMP_N];
	size_t      len[STAMP_N];
	int         done[STAMP_N] = { 0, 0, 0, in->config_version == 0 };
	int         first = 1;
	int         trusted = 1;
	int         i;
	void       *it;

	len[STAMP_EPOCH] = eb__dec_u64(num[STAMP_EPOCH], st->epoch);
	len[STAMP_SEQ] = eb__dec_u64(num[STAMP_SEQ], st->seq);
	len[STAMP_CONFIG] = eb__dec_u64(num[STAMP_CONFIG], in->config_version);
	val[STAMP_EPOCH] = num[STAMP_EPOCH];
	val[STAMP_SEQ] = num[STAMP_SEQ];
	val[STAMP_CONFIG] = num[STAMP_CONFIG];
	val[STAMP_ENTRY] = st->entry_node;
	len[STAMP_ENTRY] = strlen(st->entry_node);
	out->off = out->len = 0;
	eb__buf_append(out, "{", 1);
	for (it = json_object_iter(h); it != NULL;
	     it = json_object_iter_next(h, it)) {
		const char   *k = json_object_iter_key(it);
		const json_t *v = json_object_iter_value(it);
		size_t        kn = strlen(k);

		if (kn != json_object_iter_key_len(it)) {
			trusted = 0; /* a NUL byte in the key */
		}
		i = stamp_key(k);
		if (i >= 0 && !done[i]) {
			stamp_put(out, first, i, val[i], len[i]);
			done[i] = 1;
		} else {
			/* Not a stamp (or the config key, no version). */
			eb__jsonstr_put_member(out, first, k, kn,
			    json_string_value(v), json_string_length(v));
		}
		first = 0;
	}
	for (i = 0; i < STAMP_N; i++) {
		if (!done[i]) {
			stamp_put(out, first, i, val[i], len[i]);
			first = 0;
		}
	}
	eb__buf_append(out, "}", 1);
	return trusted;
}

static void
relay_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg)
{
	eb_bus_msg *msg = arg;

	(void) bus;
	if (status == 0) {
		(void) eb_bus_msg_reply_with(msg, reply);
	} else {
		(void) eb_bus_msg_fail(msg,
		    failure != NULL ? failure->code : -1,
		    failure != NULL ? failure->message : eb_strerror(status));
	}
	eb_bus_msg_release(msg);
}

/* Forwards a request to the target and relays its answer. 0 when sent. */
static int
relay(eb_ingress *in, const eb__ingress_rule *r, eb_bus_msg *msg,
    const eb__buf *hdr)
{
	eb_bus_send_opts o;
	char             why[300];
	int              rv = EB_ENOHANDLERS;
	json_error_t     jerr;
	json_t          *headers = json_loadb(
	             eb__buf_head(hdr), eb__buf_avail(hdr), JSON_ALLOW_NUL, &jerr);

	eb_bus_send_opts_init(&o);
	o.epoch = in->epoch; /* fenced at the receiver (rule 6) */
	o.share_headers = 1; /* the stamped headers are never modified */
	if (eb_bus_handler_count(in->bus, r->to) > 0) {
		size_t      len;
		const char *body = eb_bus_msg_body_bytes(msg, &len);

		rv = eb_bus_request_raw(in->bus, r->to, body, len, headers, &o,
		    relay_cb, eb_bus_msg_hold(msg));
		if (rv != 0) {
			eb_bus_msg_release(msg);
		}
	}
	json_decref(headers);
	if (rv != 0) {
		in->st.unrouted++;
		(void) snprintf(
		    why, sizeof(why), "No handlers for address %s", r->to);
		(void) eb_bus_msg_fail(msg, EB_INGRESS_NO_TARGET, why);
	}
	return rv;
}

/* One routed message awaiting its receipt (in->routing). */
typedef struct route_ctx {
	eb__list         link;
	eb_ingress      *in;  /* borrowed: its close waits for the receipt */
	eb_bus_msg      *msg; /* held: the gateway's request */
	eb_ingress_stamp st;
	char            *entry; /* in the allocation: st.entry_node */
	char            *to;    /* in the allocation */
	char            *hdr;   /* in the allocation: the stamped headers */
	size_t           hdr_len;
	char            *node; /* owned: a keyed send's node, else NULL */
	int              publish;
	int              retried;
	int              keyed;   /* ebnode.msgid: never routed elsewhere */
	int              trusted; /* hdr needs no check (stamped_headers) */
	int              kept;    /* EB__INGRESS_ROUTE_STRS of strings: spare */
} route_ctx;

static void route_receipt_cb(
    eb_bus *bus, int status, const eb_bus_receipt *rcpt, void *arg);

static int
route_confirmed(eb_ingress *in, route_ctx *x)
{
	eb_bus_send_opts        o;
	size_t                  len;
	const char             *body = eb_bus_msg_body_bytes(x->msg, &len);
	eb__ingress_enc_send_fn send;

	eb_bus_send_opts_init(&o);
	o.epoch = x->st.epoch; /* fenced at every receiver (rule 6) */
	o.node = x->node;      /* a keyed send: its one node */
	/* The bytes that arrived, never re-encoded; the stamped headers as
	 * encoded once (a retry sends the same), checked by the bus unless
	 * stamped_headers vouched for them. */
	if (x->publish) {
		send =
		    x->trusted ? in->publish_enc : eb_bus_publish_confirmed_enc;
	} else {
		send = x->trusted ? in->send_enc : eb_bus_send_confirmed_enc;
	}
	return send(in->bus, x->to, body, len, x->hdr, x->hdr_len, &o,
	    route_receipt_cb, x);
}

static void
route_ctx_free(eb_ingress *in, route_ctx *x)
{
	eb__list_remove(&x->link);
	eb_bus_msg_release(x->msg);
	free(x->node);
	if (x->kept) {
		eb__spare_put(&in->route_spare, x, EB__INGRESS_ROUTE_SPARE);
	} else {
		free(x);
	}
}

/* x is answered: free it; a closing ingress finishes with the last one. */
static void
route_done(eb_ingress *in, route_ctx *x)
{
	route_ctx_free(in, x);
	if (in->closing && eb__list_empty(&in->routing)) {
		eb__ingress_close_finish(in);
	}
}

static int leading_now(eb_ingress *in);

/* A failed send may go to another handler once: the failed peer's interest
 * is gone after a link loss; a timeout or a full queue may pick another. */
static int
route_retryable(eb_ingress *in, const route_ctx *x, int status)
{
	return !x->publish && !x->retried && !x->keyed &&
	       status != EB_EFENCED && status != EB_ECANCELED &&
	       leading_now(in) && eb_bus_handler_count(in->bus, x->to) > 0;
}

/*
 * A routed message whose delivery was not confirmed. Its sequence number was
 * taken: the failure names the stamp, so that a checker can tell this gap
 * among delivered sequences from a lost message.
 */
static void
route_fail(eb_ingress *in, route_ctx *x, int status, const eb_bus_receipt *r)
{
	char        why[600];
	const char *reason =
	    r != NULL && r->reason != NULL ? r->reason : eb_strerror(status);

	in->st.undelivered++;
	if (x->publish) {
		(void) snprintf(why, sizeof(why),
		    "ebnode: publish to %s not confirmed (epoch %llu, seq "
		    "%llu): "
		    "confirmed by %u of %u targets (%s); it may have been "
		    "delivered in part",
		    x->to, (unsigned long long) x->st.epoch,
		    (unsigned long long) x->st.seq,
		    r != NULL ? r->delivered : 0, r != NULL ? r->targets : 0,
		    reason);
	} else {
		(void) snprintf(why, sizeof(why),
		    "ebnode: delivery to %s not confirmed (epoch %llu, seq "
		    "%llu): %s; it may have been delivered",
		    x->to, (unsigned long long) x->st.epoch,
		    (unsigned long long) x->st.seq, reason);
	}
	(void) eb_bus_msg_fail(x->msg, EB_INGRESS_UNCONFIRMED, why);
}

static void
route_receipt_cb(eb_bus *bus, int status, const eb_bus_receipt *rcpt, void *arg)
{
	route_ctx  *x = arg;
	eb_ingress *in = x->in;

	(void) bus;
	if (status == 0) {
		in->st.delivered++;
		(void) eb_ingress_ack(x->msg, &x->st, x->to);
		route_done(in, x);
		return;
	}
	if (status == EB_EDUPLICATE) {
		/* Its node delivered the key before: success, said so. */
		in->st.duplicates++;
		(void) ack_duplicate(x->msg, &x->st, x->to,
		    rcpt != NULL ? rcpt->orig_epoch : 0,
		    rcpt != NULL ? rcpt->orig_seq : 0);
		route_done(in, x);
		return;
	}
	if (route_retryable(in, x, status)) {
		x->retried = 1;
		in->st.rerouted++;
		EB_LOG_DEBUG("ingress", "reroute: epoch=%llu seq=%llu err=%s",
		    (unsigned long long) x->st.epoch,
		    (unsigned long long) x->st.seq, eb_err_name(status));
		if (route_confirmed(in, x) == 0) {
			return;
		}
	}
	route_fail(in, x, status, rcpt);
	route_done(in, x);
}

/* Routes msg (stamped headers) by send or publish with a receipt; the
 * answer comes from route_receipt_cb. trusted: what stamped_headers said of
 * hdr. key: msg's ebnode.msgid header (a checked string) or NULL, as
 * route_one read it. 0, or an error (not routed). */
static int
route_start(eb_ingress *in, const eb__ingress_rule *r, eb_bus_msg *msg,
    const eb_ingress_stamp *st, const eb__buf *hdr, int trusted,
    const json_t *key)
{
	size_t      ent = strlen(st->entry_node) + 1;
	size_t      to = strlen(r->to) + 1;
	size_t      hn = eb__buf_avail(hdr);
	const char *node = NULL;
	route_ctx  *x;
	int         rv;

	if (key != NULL && !r->publish) {
		/* Every leader picks the same node for this key while the
		 * nodes with handlers are the same (all of them, in any
		 * order). */
		const char  *few[16];
		const char **ids = few;
		size_t       n = eb_bus_handler_nodes(in->bus, r->to, few, 16);

		if (n > 16) {
			ids = eb__calloc(n, sizeof(*ids));
			n = eb_bus_handler_nodes(in->bus, r->to, ids, n);
		}
		node = eb__ingress_rendezvous(
		    json_string_value(key), json_string_length(key), ids, n);
		if (ids != few) {
			free(ids); /* node points into the bus, not ids */
		}
		if (node == NULL) {
			return EB_ENOHANDLERS;
		}
	}
	/* One allocation: the context, then its three strings; one of the
	 * kept blocks when they fit. */
	if (ent + to + hn + 1 <= EB__INGRESS_ROUTE_STRS) {
		x = eb__spare_get(
		    &in->route_spare, sizeof(*x) + EB__INGRESS_ROUTE_STRS);
		memset(x, 0, sizeof(*x));
		x->kept = 1;
	} else {
		x = eb__malloc(sizeof(*x) + ent + to + hn + 1);
		memset(x, 0, sizeof(*x));
	}
	x->in = in;
	x->msg = eb_bus_msg_hold(msg);
	x->st = *st;
	x->entry = (char *) (x + 1);
	memcpy(x->entry, st->entry_node, ent);
	x->st.entry_node = x->entry;
	x->to = x->entry + ent;
	memcpy(x->to, r->to, to);
	x->hdr = x->to + to;
	memcpy(x->hdr, eb__buf_head(hdr), hn);
	x->hdr[hn] = '\0';
	x->hdr_len = hn;
	x->publish = r->publish;
	x->keyed = key != NULL;
	x->trusted = trusted;
	x->node = dup_or_null(node);
	eb__list_insert_tail(&in->routing, &x->link);
	if ((rv = route_confirmed(in, x)) != 0) {
		route_ctx_free(in, x);
	}
	return rv;
}

/*
 * Routes one message as leader. Returns 1 when it must wait instead (warm-up:
 * its target has no handler yet and may_wait), else 0: it was answered.
 */
static int
route_one(eb_ingress *in, eb_bus_msg *msg, int may_wait)
{
	const eb__ingress_rule *r;
	eb_ingress_stamp        st;
	const json_t           *entry;
	const json_t           *msgid;
	char                    why[300];
	int                     trusted;
	int                     rv;

	entry = json_object_get(eb_bus_msg_headers(msg), EB_INGRESS_HDR_ENTRY);
	st.epoch = in->epoch;
	st.seq = in->next_seq;
	st.entry_node = json_is_string(entry) ? json_string_value(entry)
	                                      : eb_bus_node_id(in->bus);
	if (in->handler != NULL) {
		in->next_seq++;
		in->st.routed++;
		in->handler(in, msg, &st, in->handler_arg);
		return 0;
	}
	msgid = json_object_get(eb_bus_msg_headers(msg), EB_INGRESS_HDR_MSGID);
	if (msgid != NULL &&
	    (!json_is_string(msgid) || json_string_length(msgid) == 0 ||
	        json_string_length(msgid) > EB_INGRESS_MSGID_MAX)) {
		in->st.unrouted++;
		(void) eb_bus_msg_fail(msg, EB_INGRESS_BAD_MSGID,
		    json_is_string(msgid) && json_string_length(msgid) == 0
		        ? "ebnode: ebnode.msgid is empty"
		        : "ebnode: ebnode.msgid longer than 128 bytes");
		return 0;
	}
	r = route_pick(in, msg);
	if (r == NULL) {
		in->st.unrouted++;
		(void) eb_bus_msg_fail(msg, EB_INGRESS_NO_ROUTE,
		    "ebnode: no ingress route matches the message");
		return 0;
	}
	if (may_wait && uv_now(in->loop) - in->lead_ms < in->warmup_ms &&
	    eb_bus_handler_count(in->bus, r->to) == 0) {
		return 1;
	}
	trusted = stamped_headers(in, msg, &st, &in->stamp_buf);
	if (in->relay_replies && !r->publish &&
	    eb_bus_msg_reply_address(msg) != NULL) {
		rv = relay(in, r, msg, &in->stamp_buf);
		if (rv == 0) {
			in->next_seq++;
			in->st.routed++;
		}
		return 0;
	}
	rv = eb_bus_handler_count(in->bus, r->to) > 0
	         ? route_start(in, r, msg, &st, &in->stamp_buf, trusted, msgid)
	         : EB_ENOHANDLERS;
	if (in->stamp_buf.cap > 65536) {
		eb__buf_free(&in->stamp_buf); /* a rare big one: not kept */
	}
	if (rv != 0) {
		/* Not routed: the sequence number is not used. */
		in->st.unrouted++;
		(void) snprintf(
		    why, sizeof(why), "No handlers for address %s", r->to);
		(void) eb_bus_msg_fail(msg, EB_INGRESS_NO_TARGET, why);
		return 0;
	}
	/* Routed: the number is taken; the receipt answers the sender. */
	in->next_seq++;
	in->st.routed++;
	if (msgid != NULL) {
		in->st.keyed++;
	}
	return 0;
}

static int
leading_now(eb_ingress *in)
{
	return in->leader != NULL &&
	       (in->is_leader == NULL || in->is_leader(in->is_leader_arg));
}

static void
wait_push(eb_ingress *in, eb_bus_msg *msg)
{
	eb__ingress_held *w = eb__ingress_held_new(in);

	EB_ASSERT(!in->closing);
	w->msg = eb_bus_msg_hold(msg);
	w->in = in;
	eb__list_insert_tail(&in->waiting, &w->link);
	in->n_waiting++;
	eb_ingress_kick(in); /* arms the timer for the end of the warm-up */
}

static void
wait_pop(eb_ingress *in, eb__ingress_held *w)
{
	eb__list_remove(&w->link);
	in->n_waiting--;
	eb__ingress_held_free(in, w);
}

void
eb__ingress_router_drain(eb_ingress *in)
{
	eb__list *it;

	while ((it = eb__list_first(&in->waiting)) != NULL) {
		eb__ingress_held *w =
		    EB_CONTAINER_OF(it, eb__ingress_held, link);

		if (!leading_now(in)) {
			eb__ingress_router_release(in);
			return;
		}
		if (route_one(in, w->msg, 1)) {
			return; /* still warming up and still no target */
		}
		wait_pop(in, w);
	}
}

void
eb__ingress_router_release(eb_ingress *in)
{
	eb__list *it;

	while ((it = eb__list_first(&in->waiting)) != NULL) {
		eb__ingress_held *w =
		    EB_CONTAINER_OF(it, eb__ingress_held, link);

		(void) eb_bus_msg_fail(
		    w->msg, EB_INGRESS_NOT_LEADER, EB_INGRESS_NOT_LEADER_TEXT);
		wait_pop(in, w);
	}
}

uint64_t
eb__ingress_router_deadline(const eb_ingress *in)
{
	return eb__list_empty(&in->waiting) ? UINT64_MAX
	                                    : in->lead_ms + in->warmup_ms;
}

void
eb__ingress_router_cb(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	eb_ingress *in = arg;

	(void) c;
	EB_ASSERT(!in->closing); /* the leader consumer closed with it */
	if (!leading_now(in)) {
		/* Never act on stale leadership: the gateway retries once. */
		(void) eb_bus_msg_fail(
		    msg, EB_INGRESS_NOT_LEADER, EB_INGRESS_NOT_LEADER_TEXT);
		return;
	}
	/* Behind waiting messages, to keep the order they arrived in. */
	if (!eb__list_empty(&in->waiting) && in->n_waiting < in->hold_max) {
		wait_push(in, msg);
		eb__ingress_router_drain(in);
		return;
	}
	if (route_one(in, msg, in->n_waiting < in->hold_max)) {
		wait_push(in, msg);
	}
}

int
eb_ingress_reconfigure(eb_ingress *in, const eb_ingress_opts *opts,
    uint64_t version, eb_errbuf *err)
{
	eb__ingress_rule *old_rules = in->rules,
	                 *old_default = in->default_rule;
	size_t old_count = in->rule_count;
	int    rv;

	EB_ASSERT(!in->closing);
	in->rules = NULL;
	in->rule_count = 0;
	in->default_rule = NULL;
	if ((rv = eb__ingress_rules_copy(in, opts, err)) != 0) {
		in->rules = old_rules;
		in->rule_count = old_count;
		in->default_rule = old_default;
		return rv;
	}
	/* The new table is in place: free the old one (routed messages
	 * hold copies of their targets, never a rule). */
	{
		eb__ingress_rule *new_rules = in->rules,
		                 *new_default = in->default_rule;
		size_t new_count = in->rule_count;

		in->rules = old_rules;
		in->rule_count = old_count;
		in->default_rule = old_default;
		eb__ingress_rules_free(in);
		in->rules = new_rules;
		in->rule_count = new_count;
		in->default_rule = new_default;
	}
	in->hold_max = opts->hold_max;
	in->hold_ms = opts->hold_ms;
	in->relay_replies = opts->relay_replies != 0;
	in->config_version = version;
	eb_ingress_kick(in); /* new hold bounds: re-arm the hold timer */
	return 0;
}

uint64_t
eb_ingress_config_version(const eb_ingress *in)
{
	return in->config_version;
}
