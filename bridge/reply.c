/*
 * Answers to a bridge client that are not bus messages, and the bus
 * messages the client may answer: the replies map (a server->client
 * request's reply address -> the message, one-shot, expiring after
 * bridge.reply_ttl_ms) and the err, failure and pong frames.
 *
 * Invariants: c->rmap and c->replies hold the same entries, the list
 * oldest first (one TTL for all, so expiry stops at the first live one);
 * each entry holds one reference on its message until it is answered,
 * expires or the connection closes (conn.c).
 *
 * Threads: loop thread only.
 */
#include <stddef.h>

#include <ebnode/log.h>

#include "bridge/bridge_int.h"
#include "common/alloc.h"
#include "common/util.h"

eb__breply *
eb__breply_find(eb__bconn *c, const char *address)
{
	eb__hent *n = eb__hmap_get(&c->rmap, address);

	return n != NULL ? EB_CONTAINER_OF(n, eb__breply, hnode) : NULL;
}

void
eb__breply_add(eb__bconn *c, const char *address, eb_bus_msg *msg)
{
	eb__breply *r = eb__breply_find(c, address);

	if (r != NULL) {
		eb__breply_free(c, r);
	}
	r = eb__calloc(1, sizeof(*r));
	r->address = eb__strdup(address);
	r->msg = eb_bus_msg_hold(msg);
	r->expires_ms = eb__mono_ms() + c->b->opts.reply_ttl_ms;
	eb__list_insert_tail(&c->replies, &r->link);
	r->hnode.key = r->address;
	eb__hmap_put(&c->rmap, &r->hnode);
	c->n_replies++;
}

void
eb__breply_expire(eb__bconn *c, uint64_t now)
{
	eb__list *it;
	eb__list *tmp;

	/* Oldest first and one TTL for all: stop at the first live entry. */
	EB_LIST_FOREACH (it, tmp, &c->replies) {
		eb__breply *r = EB_CONTAINER_OF(it, eb__breply, link);

		if (now < r->expires_ms) {
			break;
		}
		eb__breply_free(c, r);
	}
}

/* An err (message non-NULL) or pong frame (message NULL). */
static void
conn_short_frame(eb__bconn *c, const char *message)
{
	size_t   mark;
	eb__buf *out = eb__bconn_out_begin(c, &mark);

	if (out == NULL) {
		return;
	}
	if (message != NULL) {
		eb__bout_err_buf(out, message);
		(void) eb__bconn_out_end(c, mark, EB_BRIDGE_OUT_ERR);
	} else {
		eb__bout_pong_buf(out);
		(void) eb__bconn_out_end(c, mark, EB_BRIDGE_OUT_PONG);
	}
}

void
eb__bconn_err(eb__bconn *c, const char *message)
{
	conn_short_frame(c, message);
}

void
eb__bconn_pong(eb__bconn *c)
{
	conn_short_frame(c, NULL);
}

void
eb__bconn_denied(eb__bconn *c, const char *what, const char *address)
{
	char q[EB_LOG_QUOTE_MAX];

	c->b->stats.denied++;
	if (eb__bconn_log_ok(c)) {
		EB_LOG_INFO("bridge", "access-denied: peer=%s op=%s address=%s",
		    c->peer, what, eb_log_quote(q, sizeof(q), address));
	}
	eb__bconn_err(c, "access_denied");
}

void
eb__bconn_failure(eb__bconn *c, const char *token, const char *source, int code,
    const char *type, const char *message)
{
	size_t   mark;
	eb__buf *out = eb__bconn_out_begin(c, &mark);

	if (out != NULL) {
		eb__bout_failure_buf(out, token, source, code, type, message);
		(void) eb__bconn_out_end(c, mark, EB_BRIDGE_OUT_ERR);
	}
}
