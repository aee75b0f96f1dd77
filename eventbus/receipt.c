/*
 * Delivery receipts and the fence (DESIGN rule 6, "An acknowledgement means
 * delivered").
 *
 * A confirmed send/publish makes a tracker (eb__bus_rcpt) whose units are
 * its targets: a local consumer's queue entry (done when the consumer's
 * handler has been called with the message, failed when the entry is
 * dropped: queue full, consumer closed, fenced, bus closed) or a remote node
 * (a runit awaiting that node's RECEIPT frame, failed at once when the link
 * drops and after receipt_timeout_ms without a receipt). A node that
 * receives a confirmed message makes a receiver-side tracker over its own
 * consumers and sends its outcome back as the RECEIPT. Nothing is dropped
 * without an outcome: every unit ends exactly once.
 *
 * A target that had already delivered a message with the same key (dedup.c)
 * ends its unit with EB_EDUPLICATE: counted in duplicates, not a failure; a
 * tracker none of whose targets delivered it but some had it already
 * completes with EB_EDUPLICATE and the first delivery's stamp (a remote
 * node sends it as the RECEIPT's trailer).
 *
 * The fence is the highest leader epoch this bus has seen (raised by the
 * node from its member cache and by every stamped message accepted); a
 * stamped message below it never reaches a consumer.
 *
 * Loop thread only.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/dec.h"
#include "eventbus/eventbus_int.h"

static void rtimer_cb(uv_timer_t *t);

void
eb__bus_rcpt_init(eb_bus *bus)
{
	eb__list_init(&bus->rcpt.open);
	eb__list_init(&bus->rcpt.done);
	eb__list_init(&bus->rcpt.runits);
	eb__imap_init(&bus->rcpt.runit_map);
	(void) uv_timer_init(bus->loop, &bus->rcpt.timer);
	bus->rcpt.timer.data = bus;
}

void
eb_bus_fence_raise(eb_bus *bus, uint64_t epoch)
{
	if (epoch > bus->fence.epoch) {
		EB_LOG_INFO("eventbus",
		    "fence-raised: epoch=%" PRIu64 " previous=%" PRIu64, epoch,
		    bus->fence.epoch);
		bus->fence.epoch = epoch;
	}
}

uint64_t
eb_bus_fence(const eb_bus *bus)
{
	return bus->fence.epoch;
}

int
eb__bus_fence_stale(eb_bus *bus, uint64_t epoch)
{
	if (epoch == 0 || epoch >= bus->fence.epoch) {
		return 0;
	}
	/* First and every 1000th: an overlap produces bursts. */
	if (bus->fence.rejected++ % 1000 == 0) {
		EB_LOG_WARN("eventbus",
		    "fenced: epoch=%" PRIu64 " fence=%" PRIu64
		    " total=%" PRIu64,
		    epoch, bus->fence.epoch, bus->fence.rejected);
	}
	return 1;
}

eb__bus_rcpt *
eb__bus_rcpt_new(eb_bus *bus, eb_bus_receipt_cb cb, void *arg)
{
	eb__bus_rcpt *rc = eb__spare_get(&bus->rcpt.spare_rc, sizeof(*rc));

	memset(rc, 0, sizeof(*rc));
	rc->cb = cb;
	rc->arg = arg;
	rc->timeout_ms = bus->rcpt.timeout_ms;
	eb__list_insert_tail(&bus->rcpt.open, &rc->link);
	if (cb != NULL) {
		bus->rcpt.n_open++;
	}
	return rc;
}

static void
rcpt_free(eb_bus *bus, eb__bus_rcpt *rc)
{
	free(rc->reason);
	if (bus->life.shut) {
		free(rc);
	} else {
		eb__spare_put(&bus->rcpt.spare_rc, rc, EB__BUS_RCPT_SPARE);
	}
}

/* Records the first failure (later ones only count as undelivered). */
static void
rcpt_note(eb__bus_rcpt *rc, int status, const char *reason)
{
	if (rc->status == 0) {
		rc->status = status;
		rc->reason =
		    eb__strdup(reason != NULL ? reason : eb_strerror(status));
	}
}

void
eb__bus_rcpt_fail(eb__bus_rcpt *rc, int status, const char *reason)
{
	rcpt_note(rc, status, reason);
}

static void
rcpt_maybe_complete(eb_bus *bus, eb__bus_rcpt *rc)
{
	if (!rc->sealed || rc->pending > 0 || rc->complete) {
		return;
	}
	rc->complete = 1;
	eb__list_remove(&rc->link);
	eb__bus_dedup_release(bus, rc);
	if (rc->status == 0 && rc->delivered == 0) {
		/* Every target had it already, or nobody to confirm. */
		rcpt_note(rc,
		    rc->duplicates > 0 ? EB_EDUPLICATE : EB_ENOHANDLERS, NULL);
	}
	if (rc->cb != NULL) {
		if (rc->status != 0 && rc->status != EB_EDUPLICATE) {
			bus->rcpt.failures++;
		}
		/* Never from inside the call that completed it. */
		eb__list_insert_tail(&bus->rcpt.done, &rc->link);
		eb__bus_wake(bus);
		return;
	}
	if (rc->peer != 0 && bus->remote.ops != NULL && !bus->life.shut) {
		/* A lost receipt is the sender's timeout or link loss. */
		(void) bus->remote.ops->receipt(bus->remote.ctx, rc->peer,
		    rc->peer_id, rc->status, rc->delivered, rc->targets,
		    rc->orig_epoch, rc->orig_seq);
	}
	rcpt_free(bus, rc);
}

void
eb__bus_rcpt_seal(eb_bus *bus, eb__bus_rcpt *rc)
{
	rc->sealed = 1;
	rcpt_maybe_complete(bus, rc);
}

void
eb__bus_rcpt_unit_done(
    eb_bus *bus, eb__bus_rcpt *rc, int status, const char *reason)
{
	rc->pending--;
	if (status == 0) {
		rc->delivered++;
		eb__bus_dedup_handed(bus, rc);
	} else if (status == EB_EDUPLICATE) {
		rc->duplicates++; /* delivered before: not a failure */
	} else {
		rcpt_note(rc, status, reason);
	}
	rcpt_maybe_complete(bus, rc);
}

void
eb__bus_rcpt_add_done(
    eb_bus *bus, eb__bus_rcpt *rc, int status, const char *reason)
{
	rc->targets++;
	rc->pending++;
	eb__bus_rcpt_unit_done(bus, rc, status, reason);
}

/* ---- remote units ---- */

static void
rtimer_arm(eb_bus *bus)
{
	eb__list      *it = eb__list_first(&bus->rcpt.runits);
	uint64_t       now = uv_now(bus->loop);
	eb__bus_runit *u;

	if (it == NULL || bus->life.shut) {
		(void) uv_timer_stop(&bus->rcpt.timer);
		return;
	}
	u = EB_CONTAINER_OF(it, eb__bus_runit, link);
	(void) uv_timer_start(&bus->rcpt.timer, rtimer_cb,
	    u->deadline > now ? u->deadline - now : 0, 0);
}

static void
runit_insert(eb_bus *bus, eb__bus_runit *u)
{
	eb__list *it = bus->rcpt.runits.prev;

	/* Deadlines are mostly increasing (one default timeout): walk back
	 * from the tail. */
	while (
	    it != &bus->rcpt.runits &&
	    EB_CONTAINER_OF(it, eb__bus_runit, link)->deadline > u->deadline) {
		it = it->prev;
	}
	eb__list_insert_head(it, &u->link); /* after it */
	eb__imap_put(&bus->rcpt.runit_map, &u->ient);
	if (bus->rcpt.runits.next == &u->link) {
		rtimer_arm(bus);
	}
}

/* Takes u out of the map and the deadline list and frees it; returns its
 * tracker. */
static eb__bus_rcpt *
runit_take(eb_bus *bus, eb__bus_runit *u)
{
	eb__bus_rcpt *rc = u->rc;

	eb__imap_del(&bus->rcpt.runit_map, &u->ient);
	eb__list_remove(&u->link);
	if (bus->life.shut) {
		free(u);
	} else {
		eb__spare_put(&bus->rcpt.spare_unit, u, EB__BUS_RCPT_SPARE);
	}
	return rc;
}

/* head, the peer's node id (or "(peer N)"), tail. */
static void
peer_text(eb_bus *bus, uint32_t node, const char *head, const char *tail,
    char *text, size_t size)
{
	const char *name = bus->remote.ops->peer_name(bus->remote.ctx, node);
	char        id[32];

	if (name == NULL) {
		(void) snprintf(id, sizeof(id), "(peer %u)", node);
		name = id;
	}
	(void) snprintf(text, size, "%s%s%s", head, name, tail);
}

void
eb__bus_rcpt_forward(
    eb_bus *bus, eb__bus_rcpt *rc, uint32_t node, eb_bus_msg *msg, int kind)
{
	eb__bus_runit *u;
	uint64_t       id = ++bus->rcpt.next_id;
	char           text[160];
	int            rv;

	rc->targets++;
	rv = bus->remote.ops->forward(bus->remote.ctx, node, msg, kind, id);
	if (rv != 0) {
		if (rv == EB_ELINKDOWN) {
			peer_text(bus, node, "Link to node ", " lost", text,
			    sizeof(text));
		}
		rcpt_note(rc, rv, rv == EB_ELINKDOWN ? text : NULL);
		return;
	}
	u = eb__spare_get(&bus->rcpt.spare_unit, sizeof(*u));
	memset(u, 0, sizeof(*u));
	u->ient.id = id;
	u->peer = node;
	u->rc = rc;
	u->deadline = uv_now(bus->loop) + rc->timeout_ms;
	rc->pending++;
	runit_insert(bus, u);
}

void
eb__bus_rcpt_remote(eb_bus *bus, uint32_t peer, uint64_t id, int status,
    uint32_t delivered, uint32_t targets, uint64_t orig_epoch,
    uint64_t orig_seq)
{
	char           text[200];
	eb__ient      *e = eb__imap_get(&bus->rcpt.runit_map, id);
	eb__bus_runit *u =
	    e != NULL ? EB_CONTAINER_OF(e, eb__bus_runit, ient) : NULL;
	int first;

	if (u == NULL || u->peer != peer) {
		bus->stats.totals.dropped++; /* timed out meanwhile */
		return;
	}
	first = bus->rcpt.runits.next == &u->link;
	if (status == EB_EDUPLICATE && u->rc->orig_epoch == 0) {
		u->rc->orig_epoch = orig_epoch;
		u->rc->orig_seq = orig_seq;
	}
	if (status != 0 && status != EB_EDUPLICATE) {
		char tail[120];

		(void) snprintf(tail, sizeof(tail), ": %s (%u of %u consumers)",
		    eb_strerror(status), delivered, targets);
		peer_text(bus, peer, "node ", tail, text, sizeof(text));
	}
	eb__bus_rcpt_unit_done(bus, runit_take(bus, u), status,
	    status != 0 && status != EB_EDUPLICATE ? text : NULL);
	/* As for requests (request.c req_resolve): the timer stays armed for
	 * u's deadline while later ones wait, fires early once and re-arms
	 * (rtimer_cb), instead of a stop and start per receipt in order. */
	if (first && eb__list_first(&bus->rcpt.runits) == NULL) {
		rtimer_arm(bus);
	}
}

void
eb__bus_rcpt_peer_down(eb_bus *bus, uint32_t peer, const char *text)
{
	eb__list *it;
	eb__list *tmp;

	EB_LIST_FOREACH (it, tmp, &bus->rcpt.runits) {
		eb__bus_runit *u = EB_CONTAINER_OF(it, eb__bus_runit, link);

		if (u->peer == peer) {
			eb__bus_rcpt_unit_done(
			    bus, runit_take(bus, u), EB_ELINKDOWN, text);
			/* unit_done never touches runits: tmp stays valid. */
		}
	}
	rtimer_arm(bus);
}

static void
rtimer_cb(uv_timer_t *t)
{
	eb_bus   *bus = t->data;
	uint64_t  now = uv_now(bus->loop);
	eb__list *it;
	char      text[120];

	while ((it = eb__list_first(&bus->rcpt.runits)) != NULL) {
		eb__bus_runit *u = EB_CONTAINER_OF(it, eb__bus_runit, link);
		eb__bus_rcpt  *rc;

		if (u->deadline > now) {
			break;
		}
		rc = runit_take(bus, u);
		(void) snprintf(text, sizeof(text),
		    "no delivery receipt within %" PRIu64 " ms",
		    rc->timeout_ms);
		eb__bus_rcpt_unit_done(bus, rc, EB_ETIMEOUT, text);
	}
	rtimer_arm(bus);
}

/* ---- callbacks ---- */

static void
rcpt_call(eb_bus *bus, eb__bus_rcpt *rc)
{
	eb_bus_receipt r;

	r.targets = rc->targets;
	r.delivered = rc->delivered;
	r.reason = rc->status != 0 ? rc->reason : NULL;
	r.duplicates = rc->duplicates;
	r.orig_epoch = rc->orig_epoch;
	r.orig_seq = rc->orig_seq;
	bus->rcpt.n_open--;
	rc->cb(bus, rc->status, &r, rc->arg);
}

void
eb__bus_rcpt_run_done(eb_bus *bus)
{
	eb__list *it;

	while (!bus->life.closing &&
	       (it = eb__list_first(&bus->rcpt.done)) != NULL) {
		eb__bus_rcpt *rc = EB_CONTAINER_OF(it, eb__bus_rcpt, link);

		eb__list_remove(it);
		rcpt_call(bus, rc);
		rcpt_free(bus, rc);
	}
}

void
eb__bus_rcpt_cancel_all(eb_bus *bus)
{
	eb__list *it;
	eb__list *tmp;

	(void) uv_timer_stop(&bus->rcpt.timer);
	/* Awaited receipts end now; that may complete trackers. */
	while ((it = eb__list_first(&bus->rcpt.runits)) != NULL) {
		eb__bus_rcpt_unit_done(bus,
		    runit_take(bus, EB_CONTAINER_OF(it, eb__bus_runit, link)),
		    EB_ECANCELED, "event bus closed");
	}
	while ((it = eb__list_first(&bus->rcpt.done)) != NULL) {
		eb__bus_rcpt *rc = EB_CONTAINER_OF(it, eb__bus_rcpt, link);

		eb__list_remove(it);
		rcpt_call(bus, rc);
		rcpt_free(bus, rc);
	}
	/* Trackers still waiting for queued deliveries: their senders hear
	 * EB_ECANCELED now; the trackers are freed (orphaned) when the
	 * consumers release their queues. */
	EB_LIST_FOREACH (it, tmp, &bus->rcpt.open) {
		eb__bus_rcpt *rc = EB_CONTAINER_OF(it, eb__bus_rcpt, link);

		rc->peer = 0;
		if (rc->cb != NULL) {
			eb_bus_receipt r = { rc->targets, rc->delivered,
				"event bus closed", rc->duplicates, 0, 0 };

			bus->rcpt.n_open--;
			rc->cb(bus, EB_ECANCELED, &r, rc->arg);
			rc->cb = NULL;
		}
	}
}

void
eb__bus_rcpt_free_all(eb_bus *bus)
{
	eb__imap_free(&bus->rcpt.runit_map);
	eb__spare_free(&bus->rcpt.spare_rc);
	eb__spare_free(&bus->rcpt.spare_unit);
}
