/*
 * Delivery to a bridge client: its consumers on the bus (one per address,
 * created by a register frame) and the answers to its requests in flight,
 * each encoded as a message or failure frame on the connection's output.
 *
 * Invariants: c->cmap and c->consumers hold the same consumers; a consumer
 * never outlives its connection (conn.c closes them first on close). A
 * request stays attached (c->reqs, counted in c->n_reqs and the bridge's
 * requests_in_flight) until its bus callback runs; when the connection
 * closes first the request is detached (r->c NULL) and its callback only
 * frees it. A message queued on the output counts as delivered for a
 * receipt; one that could not be queued is reported undelivered.
 *
 * Threads: loop thread only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/err.h>

#include "bridge/bridge_int.h"
#include "common/alloc.h"
#include "common/util.h"

/* 0 when the frame is queued on the connection's output, else -1. */
static int
conn_message(eb__bconn *c, const char *address, eb_bus_msg *msg)
{
	const char *ra = eb_bus_msg_reply_address(msg);
	const char *body;
	size_t      body_len = 0;
	const char *hdr;
	size_t      hdr_len = 0;
	size_t      mark;
	eb__buf    *out;

	if (ra != NULL) {
		eb__breply_add(c, ra, msg);
	}
	out = eb__bconn_out_begin(c, &mark);
	if (out == NULL) {
		return -1;
	}
	body = eb_bus_msg_body_bytes(msg, &body_len);
	if ((hdr = eb_bus_msg_headers_enc(msg, &hdr_len)) != NULL) {
		/* Kept as their bytes, copied as they are (not parsed). */
		eb__bout_message_enc(out, address, ra, hdr, hdr_len, body,
		    body_len, eb_bus_msg_is_send(msg));
	} else {
		eb__bout_message_buf(out, address, ra, eb_bus_msg_headers(msg),
		    body, body_len, eb_bus_msg_is_send(msg));
	}
	return eb__bconn_out_end(c, mark, EB_BRIDGE_OUT_MESSAGE);
}

static void
consumer_cb(eb_bus_consumer *bc, eb_bus_msg *msg, void *arg)
{
	eb__bconsumer *k = arg;

	/* Queued on the socket's output is "delivered" for a receipt; a
	 * closing or over-full connection must say it did not take it. */
	if (k->c->closing || conn_message(k->c, k->address, msg) != 0) {
		eb_bus_consumer_undelivered(bc, EB_ECLOSED);
		return;
	}
	eb__bconn_park_check(k->c);
}

eb__bconsumer *
eb__bconsumer_find(eb__bconn *c, const char *address)
{
	eb__hent *n = eb__hmap_get(&c->cmap, address);

	return n != NULL ? EB_CONTAINER_OF(n, eb__bconsumer, hnode) : NULL;
}

int
eb__bconsumer_add(eb__bconn *c, const char *address)
{
	eb__bconsumer *k = eb__calloc(1, sizeof(*k));
	int            rv;

	k->c = c;
	k->address = eb__strdup(address);
	rv = eb_bus_consumer_new(c->b->bus, address, 0, consumer_cb, k, &k->bc);
	if (rv != 0) {
		free(k->address);
		free(k);
		return rv;
	}
	eb__list_insert_tail(&c->consumers, &k->link);
	k->hnode.key = k->address;
	eb__hmap_put(&c->cmap, &k->hnode);
	c->n_consumers++;
	c->b->stats.consumers++;
	return 0;
}

static void
req_free(eb__breq *r)
{
	eb__list_remove(&r->link);
	if (r->c == NULL) {
		free(r); /* its strings are in the same allocation */
		return;
	}
	r->c->n_reqs--;
	r->c->b->stats.requests_in_flight--;
	/* Only while its connection is open: the bridge is still there, and
	 * frees the kept blocks after its last connection. */
	if (r->kept) {
		eb__spare_put(&r->c->b->breq_spare, r, EB__BREQ_SPARE);
	} else {
		free(r);
	}
}

void
eb__breq_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg)
{
	eb__breq  *r = arg;
	eb__bconn *c = r->c;

	(void) bus;
	if (c == NULL || c->closing) {
		req_free(r); /* the client is gone: drop the answer */
		return;
	}
	if (status == 0 && reply != NULL) {
		(void) conn_message(c, r->token, reply);
	} else if (failure != NULL) {
		eb__bconn_failure(c, r->token, r->source, failure->code,
		    eb_bus_failure_name(failure->type), failure->message);
	} else {
		eb__bconn_failure(c, r->token, r->source, -1,
		    eb_bus_failure_name(EB_BUS_ERROR), eb_strerror(status));
	}
	req_free(r);
}

eb__breq *
eb__breq_new(eb__bconn *c, const char *token, const char *source)
{
	/* One allocation: the request, then its two strings. */
	size_t    tn = strlen(token) + 1;
	size_t    sn = strlen(source) + 1;
	int       kept = tn + sn <= EB__BREQ_STRS;
	eb__breq *r =
	    kept ? eb__spare_get(&c->b->breq_spare, sizeof(*r) + EB__BREQ_STRS)
	         : eb__malloc(sizeof(*r) + tn + sn);

	memset(r, 0, sizeof(*r));
	r->kept = kept;
	r->c = c;
	r->token = (char *) (r + 1);
	memcpy(r->token, token, tn);
	r->source = r->token + tn;
	memcpy(r->source, source, sn);
	eb__list_insert_tail(&c->reqs, &r->link);
	c->n_reqs++;
	c->b->stats.requests_in_flight++;
	return r;
}

void
eb__breq_refused(eb__bconn *c, eb__breq *r, int rv)
{
	char msg[600];

	if (rv == EB_ENOHANDLERS) {
		(void) snprintf(
		    msg, sizeof(msg), "No handlers for address %s", r->source);
		eb__bconn_failure(c, r->token, r->source, -1,
		    eb_bus_failure_name(EB_BUS_NO_HANDLERS), msg);
	} else {
		eb__bconn_failure(c, r->token, r->source, -1,
		    eb_bus_failure_name(EB_BUS_ERROR), eb_strerror(rv));
	}
	req_free(r);
}
