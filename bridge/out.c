/*
 * Writing to a bridge client: the connection's output buffer, coalesced
 * flushes, the write-queue bound (slow consumers) and parking the
 * connection's bus consumers while the client reads slower than its
 * messages come.
 *
 * Writes are coalesced (redis handleClientsWithPendingWrites): every frame
 * is encoded straight into the connection's output buffer (c->out, header
 * and payload contiguous, frames back to back) and the connection goes on
 * b->pending_out; the bridge's prepare/check handles flush each pending
 * connection once per loop phase, one write for all its frames. The
 * slow-reader bound counts the bytes the kernel has not taken: libuv's
 * write queue plus c->out.
 *
 * Invariants: a connection is on b->pending_out exactly while out_listed,
 * and only while not closing; the flush handles are active only while
 * b->pending_out may be non-empty (server.c closes them). Nothing is
 * appended to c->out once c is closing.
 *
 * Threads: loop thread only.
 */
#include <stddef.h>

#include <ebnode/err.h>
#include <ebnode/log.h>

#include "bridge/bridge_int.h"
#include "common/util.h"

/* Output gathered beyond this is written at once rather than at the end of
 * the loop phase; a bigger output buffer is given back after a flush. */
#define CONN_OUT_FLUSH_AT ((size_t) 65536)
#define CONN_OUT_KEEP     ((size_t) 262144)

void
eb__bconn_flush(eb__bconn *c)
{
	int rv;

	eb__bconn_out_unlist(c);
	if (c->closing || eb__buf_avail(&c->out) == 0) {
		return;
	}
	rv = c->stream.ops->write(&c->stream, &c->out);
	if (c->out.cap > CONN_OUT_KEEP) {
		eb__buf_free(&c->out);
	}
	if (rv != 0) {
		eb__bconn_close(c, eb_err_name(rv));
		return;
	}
	c->active_ms = eb__mono_ms();
	if (c->parked) {
		/* the kernel may have taken it all */
		eb__bconn_written_cb(&c->stream);
	}
}

static void
flush_all(eb_bridge *b)
{
	eb__list *it;

	/* A flush may close its connection (and hooks others), which may
	 * list more output: always take the first until none is left. */
	while ((it = eb__list_first(&b->pending_out)) != NULL) {
		eb__bconn_flush(eb__bconn_from_out_link(it));
	}
	b->flush_active = 0;
	(void) uv_prepare_stop(&b->flush_prep);
	(void) uv_check_stop(&b->flush_check);
}

static void
flush_prep_cb(uv_prepare_t *h)
{
	flush_all(h->data);
}

static void
flush_check_cb(uv_check_t *h)
{
	flush_all(h->data);
}

/* Initializes the flush handles if needed and starts them. */
static void
flush_wake(eb_bridge *b)
{
	if (b->flush_active || b->closing) {
		return;
	}
	if (!b->flush_inited) {
		(void) uv_prepare_init(b->loop, &b->flush_prep);
		(void) uv_check_init(b->loop, &b->flush_check);
		b->flush_prep.data = b;
		b->flush_check.data = b;
		b->flush_inited = 1;
	}
	b->flush_active = 1;
	(void) uv_prepare_start(&b->flush_prep, flush_prep_cb);
	(void) uv_check_start(&b->flush_check, flush_check_cb);
}

eb__buf *
eb__bconn_out_begin(eb__bconn *c, size_t *mark)
{
	if (c->closing) {
		return NULL;
	}
	*mark = eb__buf_avail(&c->out);
	return &c->out;
}

/* Over bridge.write_queue_max_bytes (queued: what the kernel has not
 * taken, frame: what was about to be added, 0 for a layer's output):
 * closes c as a slow consumer (redis client-output-buffer-limit). */
static void
conn_slow(eb__bconn *c, size_t queued, size_t frame)
{
	eb_bridge *b = c->b;

	b->stats.conns_closed_slow++;
	if (frame > 0) {
		EB_LOG_WARN("bridge",
		    "slow-consumer-closed: peer=%s queued=%zu frame=%zu "
		    "max=%zu",
		    c->peer, queued, frame, b->opts.write_queue_max_bytes);
	} else {
		EB_LOG_WARN("bridge",
		    "slow-consumer-closed: peer=%s queued=%zu max=%zu", c->peer,
		    queued, b->opts.write_queue_max_bytes);
	}
	eb__bconn_close(c, "slow-consumer");
}

int
eb__bconn_out_end(eb__bconn *c, size_t mark, eb_bridge_out_kind kind)
{
	eb_bridge *b = c->b;
	size_t     len = eb__buf_avail(&c->out) - mark;
	size_t     backlog = eb__stream_backlog(&c->stream) + mark;

	if (backlog + len > b->opts.write_queue_max_bytes) {
		/* The client does not read: bound its memory instead of
		 * queueing forever. */
		c->out.len = c->out.off + mark; /* this frame is not sent */
		conn_slow(c, backlog, len);
		return -1;
	}
	c->frames_out++;
	b->stats.frames_out[kind]++;
	if (kind == EB_BRIDGE_OUT_ERR) {
		b->stats.errors++;
	}
	if (mark + len >= CONN_OUT_FLUSH_AT ||
	    c->stream.ops == &eb__stream_null_ops) {
		/* Big enough to write now; a detached connection (fuzzer,
		 * tests) discards at once, whether the loop runs or not. */
		eb__bconn_flush(c);
		return 0;
	}
	if (!c->out_listed) {
		c->out_listed = 1;
		eb__list_insert_tail(&b->pending_out, &c->out_link);
		flush_wake(b);
	}
	return 0;
}

int
eb__bconn_out_check(eb__bconn *c, size_t pending)
{
	size_t queued = eb__stream_backlog(&c->stream) + pending;

	if (c->closing || queued <= c->b->opts.write_queue_max_bytes) {
		return 0;
	}
	conn_slow(c, queued, 0);
	return 1;
}

/*
 * Flow control toward a client that reads slower than its messages come:
 * past half of write_queue_max_bytes queued (gathered or refused by the
 * kernel), the connection's bus consumers are paused, so their messages
 * wait in the bus's bounded queues (whose watermarks push back on the
 * producers) instead of closing the client as too slow; below an eighth
 * they resume. A client that reads nothing for EB__BCONN_PARK_STALL_MS
 * while parked is closed as a slow consumer by the sweep (its parked
 * messages are dropped and counted, as for any closed consumer), so it
 * cannot hold its producers forever. Only plain and TLS sockets (a layered
 * transport reports no completed writes).
 */
size_t
eb__bconn_out_backlog(eb__bconn *c)
{
	return eb__stream_backlog(&c->stream) + eb__buf_avail(&c->out);
}

static void
conn_park_set(eb__bconn *c, int park)
{
	eb__list *it;

	c->parked = park;
	for (it = c->consumers.next; it != &c->consumers; it = it->next) {
		eb__bconsumer *k = EB_CONTAINER_OF(it, eb__bconsumer, link);

		if (park) {
			eb_bus_consumer_pause(k->bc);
		} else {
			eb_bus_consumer_resume(k->bc);
		}
	}
	if (park) {
		c->parked_ms = eb__mono_ms();
		c->b->stats.consumers_parked++;
		c->b->stats.parked_total++;
	} else {
		c->b->stats.consumers_parked--;
	}
}

void
eb__bconn_park_check(eb__bconn *c)
{
	if (c->parked || c->closing || c->stream.layer != NULL ||
	    c->stream.ops == &eb__stream_null_ops) {
		return;
	}
	if (eb__bconn_out_backlog(c) >= c->b->opts.write_queue_max_bytes / 2) {
		conn_park_set(c, 1);
	}
}

void
eb__bconn_written_cb(eb__stream *s)
{
	eb__bconn *c = s->data;

	if (!c->parked || c->closing) {
		return;
	}
	c->parked_ms = eb__mono_ms(); /* progress: the client reads */
	if (eb__bconn_out_backlog(c) <= c->b->opts.write_queue_max_bytes / 8) {
		conn_park_set(c, 0);
	}
}
