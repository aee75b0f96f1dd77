/*
 * Input from a bridge client: bytes into the connection's frame decoder,
 * complete frames to handlers.c within a per-turn frame budget, pausing
 * and the drain handle that continues paused connections, flow control
 * toward the client (blocked on a busy bus address until the bus's
 * pressure observer says it is not any more), the first-frame and frame
 * deadlines' state, and the input budget after each read.
 *
 * Invariants: a connection is on b->paused while paused and not blocked,
 * on b->blocked while blocked (then also paused: not reading); the drain
 * handle runs while b->paused is non-empty; frame_started_ms is 0 exactly
 * when nothing partial is buffered. A turn never handles more than
 * c->share (EB__BCONN_FRAME_BUDGET ... EB__BCONN_FRAME_BUDGET_MAX) frames of
 * one connection.
 *
 * Threads: loop thread only.
 */
#include <stddef.h>
#include <string.h>

#include <ebnode/log.h>

#include "bridge/bridge_int.h"
#include "common/util.h"

#define CONN_DEC_KEEP ((size_t) 65536)

static void conn_drain(eb__bconn *c);

static void
drain_cb(uv_idle_t *h)
{
	eb_bridge *b = h->data;
	eb__list   batch;
	eb__list  *it;

	/* Each paused connection either stays paused (more frames than its
	 * budget), resumes reading (leaves b->paused) or closes. Its frames
	 * may run hooks that close other paused connections: take the batch
	 * and always its first element (a close unlinks from any list). */
	eb__list_init(&batch);
	if (!eb__list_empty(&b->paused)) {
		batch.next = b->paused.next;
		batch.prev = b->paused.prev;
		batch.next->prev = &batch;
		batch.prev->next = &batch;
		eb__list_init(&b->paused);
	}
	while ((it = eb__list_first(&batch)) != NULL) {
		eb__list_remove(it);
		eb__list_insert_tail(&b->paused, it);
		conn_drain(eb__bconn_from_pause_link(it));
	}
	if (eb__list_empty(&b->paused)) {
		(void) uv_idle_stop(&b->drain);
	}
}

/* Initializes the drain handle if needed and makes it run next turn. */
static void
drain_wake(eb_bridge *b)
{
	if (!b->drain_inited) {
		(void) uv_idle_init(b->loop, &b->drain);
		b->drain.data = b;
		b->drain_inited = 1;
	}
	(void) uv_idle_start(&b->drain, drain_cb);
}

/* handlers.c named a busy address (c->blocked_on): c stops reading and
 * handling until the bus's pressure observer unblocks it. */
static void
conn_block(eb__bconn *c)
{
	eb_bridge *b = c->b;

	if (!b->pressure_watching) {
		b->pressure_watching = 1;
		eb_bus_pressure_watch(b->bus, eb__bridge_pressure_cb, b);
	}
	c->blocked = 1;
	if (c->paused) {
		eb__list_remove(&c->pause_link); /* off b->paused */
	} else {
		c->paused = 1;
		(void) uv_read_stop((uv_stream_t *) &c->stream.tcp);
	}
	eb__list_insert_tail(&b->blocked, &c->pause_link);
	b->stats.conns_blocked++;
	b->stats.blocked_total++;
}

void
eb__bridge_pressure_cb(eb_bus *bus, const char *address, int busy, void *arg)
{
	eb_bridge *b = arg;
	eb__list  *it;
	eb__list  *tmp;

	(void) bus;
	if (busy) {
		return; /* connections see it after their next frame */
	}
	EB_LIST_FOREACH (it, tmp, &b->blocked) {
		eb__bconn *c = eb__bconn_from_pause_link(it);

		if (strcmp(c->blocked_on, address) == 0) {
			/* It drains what it buffered, then reads again. */
			eb__bconn_unblock(c);
			eb__list_insert_tail(&b->paused, &c->pause_link);
			drain_wake(b);
		}
	}
}

/* Negative or oversized length: the stream cannot be resynchronised. */
static void
conn_bad_length(eb__bconn *c)
{
	c->b->stats.conns_closed_frame++;
	EB_LOG_WARN("bridge", "frame-too-big: peer=%s len=%lld max=%u", c->peer,
	    (long long) c->dec.bad_len, c->dec.max_frame);
	eb__bconn_close(c, "bad-frame-length");
}

static void
conn_pause(eb__bconn *c)
{
	if (c->paused) {
		return;
	}
	c->paused = 1;
	(void) uv_read_stop((uv_stream_t *) &c->stream.tcp);
	eb__list_insert_tail(&c->b->paused, &c->pause_link);
	drain_wake(c->b);
}

static void
conn_resume(eb__bconn *c)
{
	int rv;

	c->paused = 0;
	eb__list_remove(&c->pause_link);
	rv = c->stream.ops->start(&c->stream);
	if (rv != 0) {
		eb__bconn_close(c, uv_err_name(rv));
	}
}

/* After a batch of frames: resume or give the buffer back. */
static void
conn_process_done(eb__bconn *c, unsigned handled)
{
	/* A paused connection resumes reading on a turn that found nothing
	 * buffered: one turn then takes at most one budget of its frames
	 * (from the drain or from a read, not both), no more than the bus
	 * delivers per consumer per turn. */
	if (c->paused && !c->blocked && handled == 0) {
		conn_resume(c);
	}
	/* After a big frame, give the buffer back instead of keeping up to
	 * max_frame_bytes per idle connection. */
	if (eb__frame_dec_buffered(&c->dec) == 0 &&
	    c->dec.in.cap > CONN_DEC_KEEP) {
		eb__frame_dec_free(&c->dec);
		eb__frame_dec_init(&c->dec, c->b->opts.max_frame_bytes);
	}
}

/* The next frame: from the input *in[0..*n) where it is while nothing
 * is buffered (no copy, issue 25); once that stops, the rest of the input
 * is buffered (*in NULL) and frames come from the decoder. */
static int
conn_next(
    eb__bconn *c, const char **in, size_t *n, const char **p, uint32_t *len)
{
	if (*in != NULL) {
		if (eb__frame_dec_next_in(&c->dec, in, n, p, len) == 0) {
			return 0;
		}
		eb__frame_dec_feed(&c->dec, *in, *n);
		*in = NULL;
		*n = 0;
	}
	return eb__frame_dec_next(&c->dec, p, len);
}

/* Handles up to c->share frames (EB__BCONN_FRAME_BUDGET when 0): those of
 * the input in[0..n) (NULL: none) and the buffered ones, in order; what is
 * not handled is buffered, unless c closed. */
static void
conn_process(eb__bconn *c, const char *in, size_t n)
{
	unsigned    budget = c->share != 0 ? c->share : EB__BCONN_FRAME_BUDGET;
	unsigned    handled = 0;
	const char *p;
	uint32_t    len;
	int         rv;

	c->processing = 1;
	while (!c->closing && !c->blocked) {
		if (budget-- == 0) {
			/* More than this turn's share: twice as many next
			 * turn, up to the cap (bridge_int.h). */
			c->share = handled * 2 < EB__BCONN_FRAME_BUDGET_MAX
			               ? handled * 2
			               : EB__BCONN_FRAME_BUDGET_MAX;
			c->processing = 0;
			if (in != NULL) {
				eb__frame_dec_feed(&c->dec, in, n);
			}
			conn_pause(c);
			return;
		}
		rv = conn_next(c, &in, &n, &p, &len);
		if (rv == UV_EAGAIN) {
			/* All handled: the next batch starts small. */
			c->share = 0;
			break;
		}
		if (rv != 0) {
			conn_bad_length(c);
			break;
		}
		eb__bconn_frame(c, p, len);
		if (c->blocked_on != NULL && !c->blocked && !c->closing) {
			conn_block(c);
		}
		handled++;
	}
	c->processing = 0;
	if (in != NULL && !c->closing) {
		eb__frame_dec_feed(&c->dec, in, n); /* blocked */
	}
	if (c->closing) {
		eb__frame_dec_free(&c->dec); /* see eb__bconn_close */
		return;
	}
	conn_process_done(c, handled);
}

/* After input was handled: first-frame and frame-deadline state, memory
 * accounting and the budget. c may be closed on return. */
static void
conn_input_done(eb__bconn *c, uint64_t frames_before)
{
	if (c->closing) {
		return;
	}
	if (c->frames_in > 0) {
		eb__bconn_unfresh(c);
	}
	if (eb__frame_dec_buffered(&c->dec) == 0) {
		c->frame_started_ms = 0;
	} else if (c->frame_started_ms == 0 || c->frames_in != frames_before) {
		/* A frame completed: what is left began in this read. */
		c->frame_started_ms = eb__mono_ms();
	}
	eb__bconn_in_account(c);
	eb__bridge_input_budget(c->b);
}

/* Continues a paused connection (drain idle). */
static void
conn_drain(eb__bconn *c)
{
	uint64_t before = c->frames_in;

	conn_process(c, NULL, 0);
	conn_input_done(c, before);
}

void
eb__bconn_read_cb(eb__stream *s, const char *data, size_t n)
{
	eb__bconn *c = s->data;
	uint64_t   before = c->frames_in;

	c->active_ms = eb__mono_ms();
	if (!c->paused) {
		conn_process(c, data, n);
	} else {
		eb__frame_dec_feed(&c->dec, data, n); /* the drain continues */
	}
	conn_input_done(c, before);
}

void
eb__bconn_feed(eb__bconn *c, const char *data, size_t n)
{
	if (!c->closing && n > 0) {
		eb__bconn_read_cb(&c->stream, data, n);
	}
}
