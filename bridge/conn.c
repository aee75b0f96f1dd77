/*
 * A bridge connection's lifecycle and the state it owns: creation (common
 * to accepted and detached connections), close, the teardown of what it
 * owns (consumers, replies, attached requests, its places on the bridge's
 * lists, its share of the input budget), the free after its socket handle
 * closed, the bridge-event hook and the per-connection log budget.
 *
 * Invariants: a connection on b->conns is not closing; once closing it has
 * no consumers, no replies and no attached requests, nothing pending in
 * c->out, is on none of the bridge's lists (conns, fresh, paused, blocked,
 * pending_out), counts nothing in the input budget, and it is freed when
 * its socket handle has closed (eb__bconn_free). This file calls no other
 * file of the bridge (bridge_int.h), so every level may close.
 *
 * Threads: loop thread only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/err.h>
#include <ebnode/log.h>

#include "bridge/bridge_int.h"
#include "bridge/bridge_obs.h"
#include "common/alloc.h"
#include "common/util.h"

/* Per-frame log lines (malformed, denied, auth) per connection, so that a
 * hostile client cannot flood the log; the rest are only counted. */
#define BCONN_LOG_BUDGET 16u

eb__bconn *
eb__bconn_from_link(eb__list *l)
{
	return EB_CONTAINER_OF(l, eb__bconn, link);
}

eb__bconn *
eb__bconn_from_pause_link(eb__list *l)
{
	return EB_CONTAINER_OF(l, eb__bconn, pause_link);
}

eb__bconn *
eb__bconn_from_out_link(eb__list *l)
{
	return EB_CONTAINER_OF(l, eb__bconn, out_link);
}

eb__stream *
eb__bconn_stream(eb__bconn *c)
{
	return &c->stream;
}

eb__bconn *
eb__bconn_new(eb_bridge *b, int fresh)
{
	eb__bconn *c = eb__calloc(1, sizeof(*c));

	c->b = b;
	c->id = ++b->next_conn_id;
	eb__list_init(&c->link);
	if (fresh) {
		eb__list_insert_tail(&b->fresh, &c->fresh_link);
		c->fresh = 1;
	} else {
		eb__list_init(&c->fresh_link);
	}
	eb__list_init(&c->pause_link);
	eb__list_init(&c->out_link);
	eb__buf_init(&c->out);
	eb__list_init(&c->consumers);
	eb__list_init(&c->replies);
	eb__list_init(&c->reqs);
	c->log_left = BCONN_LOG_BUDGET;
	eb__frame_dec_init(&c->dec, b->opts.max_frame_bytes);
	c->started_ms = eb__mono_ms();
	c->active_ms = c->started_ms;
	b->stats.conns_open++;
	b->stats.conns_total++;
	eb__list_insert_tail(&b->conns, &c->link);
	return c;
}

void
eb__bconn_free(eb__bconn *c)
{
	eb__frame_dec_free(&c->dec);
	eb__buf_free(&c->out);
	eb__hmap_free(&c->cmap); /* empty since close */
	eb__hmap_free(&c->rmap);
	free(c);
}

int
eb__bconn_hook(eb__bconn *c, eb_bridge_event_type t, const eb__bframe *f)
{
	eb_bridge      *b = c->b;
	eb_bridge_event ev;

	if (b->hook == NULL) {
		return 0;
	}
	memset(&ev, 0, sizeof(ev));
	ev.type = t;
	ev.conn_id = c->id;
	ev.peer = c->peer;
	ev.tls = c->stream.tls != NULL;
	if (f != NULL) {
		ev.address = f->address;
		ev.frame = f->root;
	}
	return b->hook(&ev, b->hook_arg) != 0;
}

int
eb__bconn_log_ok(eb__bconn *c)
{
	if (c->log_left == 0) {
		return 0;
	}
	if (--c->log_left == 0) {
		EB_LOG_INFO("bridge",
		    "log-suppressed: peer=%s: further per-frame events of this "
		    "connection are only counted",
		    c->peer);
		return 0;
	}
	return 1;
}

void
eb__bconn_info(const eb__bconn *c, uint64_t now, eb_bridge_conn_info *info)
{
	memset(info, 0, sizeof(*info));
	info->id = c->id;
	info->peer = c->peer;
	info->tls = c->stream.tls != NULL;
	info->age_ms = now - c->started_ms;
	info->frames_in = c->frames_in;
	info->frames_out = c->frames_out;
	info->queued_bytes =
	    eb__stream_backlog(&c->stream) + eb__buf_avail(&c->out);
	info->consumers = c->n_consumers;
	info->pending_replies = c->n_replies;
}

void
eb__bconn_in_account(eb__bconn *c)
{
	eb_bridge *b = c->b;
	size_t     now = c->closing ? 0 : c->dec.in.cap + c->layer_held;

	eb__budget_adjust(&b->input, c->in_acct, now);
	b->stats.input_bytes = b->input.used;
	c->in_acct = now;
}

void
eb__bconn_unfresh(eb__bconn *c)
{
	if (c->fresh) {
		c->fresh = 0;
		eb__list_remove(&c->fresh_link);
	}
}

void
eb__bconn_out_unlist(eb__bconn *c)
{
	if (c->out_listed) {
		c->out_listed = 0;
		eb__list_remove(&c->out_link);
	}
}

void
eb__bconn_unblock(eb__bconn *c)
{
	c->blocked = 0;
	free(c->blocked_on);
	c->blocked_on = NULL;
	c->b->stats.conns_blocked--;
	eb__list_remove(&c->pause_link);
}

void
eb__bconsumer_free(eb__bconn *c, eb__bconsumer *k)
{
	eb__list_remove(&k->link);
	eb__hmap_del(&c->cmap, &k->hnode);
	c->n_consumers--;
	c->b->stats.consumers--;
	eb_bus_consumer_close(k->bc);
	free(k->address);
	free(k);
}

void
eb__breply_free(eb__bconn *c, eb__breply *r)
{
	eb__list_remove(&r->link);
	eb__hmap_del(&c->rmap, &r->hnode);
	c->n_replies--;
	eb_bus_msg_release(r->msg);
	free(r->address);
	free(r);
}

/* Closing: c leaves the flow-control lists and counts. */
static void
conn_flow_close(eb__bconn *c)
{
	if (c->blocked) {
		eb__bconn_unblock(c); /* closing: not back on b->paused */
	}
	free(c->blocked_on); /* set by a frame, not yet blocked on */
	c->blocked_on = NULL;
	if (c->parked) {
		c->b->stats.consumers_parked--;
		c->parked = 0;
	}
	if (c->paused) {
		c->paused = 0;
		eb__list_remove(&c->pause_link);
	}
}

/* Consumers go first so that nothing more is delivered; requests in
 * flight are detached (their bus callbacks free them). */
static void
conn_release(eb__bconn *c)
{
	eb__list *it;
	eb__list *tmp;

	EB_LIST_FOREACH (it, tmp, &c->consumers) {
		eb__bconsumer_free(c, EB_CONTAINER_OF(it, eb__bconsumer, link));
	}
	EB_LIST_FOREACH (it, tmp, &c->replies) {
		eb__breply_free(c, EB_CONTAINER_OF(it, eb__breply, link));
	}
	EB_LIST_FOREACH (it, tmp, &c->reqs) {
		eb__breq *r = EB_CONTAINER_OF(it, eb__breq, link);

		eb__list_remove(&r->link); /* req_free's remove is a no-op */
		r->c = NULL;
	}
	c->b->stats.requests_in_flight -= c->n_reqs;
	c->n_reqs = 0;
}

void
eb__bconn_close(eb__bconn *c, const char *reason)
{
	eb_bridge *b = c->b;
	eb__obs_it it;

	if (c->closing) {
		return;
	}
	/* What was gathered goes out first (an err frame before an auth
	 * close, frames before a hook's close); a failure changes nothing. */
	eb__bconn_out_unlist(c);
	if (eb__buf_avail(&c->out) > 0 && !c->stream.closing) {
		(void) c->stream.ops->write(&c->stream, &c->out);
	}
	c->closing = 1;
	eb__list_remove(&c->link);
	eb__bconn_unfresh(c);
	/* The input buffer goes now, not when the handle has closed: the
	 * budget closes connections to free memory at once, many per loop
	 * turn. While a frame borrowed from it is handled, read.c frees it
	 * afterwards. */
	if (!c->processing) {
		eb__frame_dec_free(&c->dec);
	}
	eb__bconn_in_account(c);
	conn_flow_close(c);
	b->stats.conns_open--;
	conn_release(c);
	(void) eb__bconn_hook(c, EB_BRIDGE_EV_SOCKET_CLOSED, NULL);
	EB__OBS_EACH(&b->closed_obs, it)
	{
		((eb__bridge_conn_closed_cb) it.fn)(b, c->id, it.arg);
	}
	EB_LOG_RL_INFO("bridge",
	    "conn-closed: peer=%s id=%llu reason=%s frames_in=%llu "
	    "frames_out=%llu",
	    c->peer, (unsigned long long) c->id, reason,
	    (unsigned long long) c->frames_in,
	    (unsigned long long) c->frames_out);
	c->stream.ops->close(&c->stream);
}
