/*
 * Deduplication of keyed deliveries on the consumer's node (issue 23, docs/
 * INGRESS.md "Safe retries").
 *
 * A message stamped with a leader epoch, delivered with a receipt (a
 * confirmed send/publish) and carrying the header EB_BUS_DEDUP_HEADER is
 * admitted here before it is queued for this node's consumers. The table
 * maps (address, key) to the stamp of the first delivery, (epoch, the
 * EB_BUS_DEDUP_SEQ_HEADER header). A key is *pending* from its first
 * arrival until a consumer's handler was called with it (then it is
 * *done*, stamped with that time) or its delivery failed (then it is
 * forgotten: nothing was handed over, a retry must be delivered).
 *
 * Invariants:
 * - Only a message actually handed to a consumer makes a key done; a second
 *   arrival of a done key within window_ms is never queued (EB_EDUPLICATE,
 *   with the first stamp); a second arrival of a pending key is refused
 *   (EB_EKEYBUSY): its outcome is not known yet.
 * - bus->dedup.order holds every key: done keys in the order they were
 *   handed over (so oldest first), pending ones where they arrived. At
 *   most max keys: the oldest is evicted first (counted).
 * - A pending key and its tracker point at each other (k->rc, rc->dkey);
 *   whichever goes first clears the other's pointer.
 *
 * Memory: one eb__bus_dkey (its struct plus "<address length>:<address>
 * <key>" and a NUL, the key at most EB_BUS_DEDUP_KEY_MAX bytes) per key,
 * at most max of them, plus the map's bucket array (one pointer per key).
 *
 * Loop thread only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "eventbus/eventbus_int.h"

struct eb__bus_dkey {
	eb__hent      hent;
	eb__list      link;  /* bus->dedup.order */
	uint64_t      at_ms; /* done: handed over; pending: arrival */
	uint64_t      epoch; /* the first delivery's stamp */
	uint64_t      seq;
	eb__bus_rcpt *rc; /* pending: the first arrival's tracker (borrowed) */
	int           done;
	char          key[]; /* "<alen>:<address><key>" */
};

void
eb__bus_dedup_init(eb_bus *bus, uint64_t window_ms, uint32_t max)
{
	eb__hmap_init(&bus->dedup.map);
	eb__list_init(&bus->dedup.order);
	bus->dedup.window_ms = window_ms;
	bus->dedup.max = max;
}

static void
dkey_free(eb_bus *bus, eb__bus_dkey *k)
{
	if (k->rc != NULL) {
		k->rc->dkey = NULL;
	}
	eb__hmap_del(&bus->dedup.map, &k->hent);
	eb__list_remove(&k->link);
	free(k);
}

void
eb__bus_dedup_free(eb_bus *bus)
{
	eb__list *it;

	while ((it = eb__list_first(&bus->dedup.order)) != NULL) {
		dkey_free(bus, EB_CONTAINER_OF(it, eb__bus_dkey, link));
	}
	eb__hmap_free(&bus->dedup.map);
}

/* Forgets done keys older than the window (oldest first). */
static void
dedup_expire(eb_bus *bus, uint64_t now)
{
	eb__list *it;
	eb__list *tmp;

	EB_LIST_FOREACH (it, tmp, &bus->dedup.order) {
		eb__bus_dkey *k = EB_CONTAINER_OF(it, eb__bus_dkey, link);

		if (now - k->at_ms < bus->dedup.window_ms) {
			break; /* everything behind it is younger */
		}
		if (k->done) {
			dkey_free(bus, k);
		}
	}
}

/* The map key of (address, key) in buf, or NULL when it does not fit. */
static char *
dedup_key(
    char *buf, size_t size, const char *address, const char *key, size_t klen)
{
	size_t alen = strlen(address);
	int    n = snprintf(buf, size, "%zu:", alen);

	if (n < 0 || (size_t) n + alen + klen + 1 > size) {
		return NULL;
	}
	memcpy(buf + n, address, alen);
	memcpy(buf + n + alen, key, klen);
	buf[(size_t) n + alen + klen] = '\0';
	return buf;
}

/* The key msg carries, NULL when none this table can hold: over the bound
 * (the ingress refuses those) or with a NUL is delivered as without one. */
static const char *
msg_key(const eb_bus_msg *msg, size_t *klen)
{
	const json_t *h;
	const char   *key;

	if (!eb__bus_msg_may_have_header(msg, EB_BUS_DEDUP_HEADER)) {
		return NULL; /* kept as bytes, and surely without one */
	}
	h = json_object_get(eb_bus_msg_headers(msg), EB_BUS_DEDUP_HEADER);

	if (!json_is_string(h)) {
		return NULL;
	}
	key = json_string_value(h);
	*klen = json_string_length(h);
	if (*klen == 0 || *klen > EB_BUS_DEDUP_KEY_MAX ||
	    memchr(key, '\0', *klen) != NULL) {
		return NULL;
	}
	return key;
}

/* A new pending key mk for msg, made room for at the bound. */
static void
dkey_add(eb_bus *bus, const char *mk, const eb_bus_msg *msg, eb__bus_rcpt *rc,
    uint64_t now)
{
	size_t        need = strlen(mk) + 1;
	const json_t *h;
	eb__list     *it;
	eb__bus_dkey *k;

	while (bus->dedup.map.count >= bus->dedup.max &&
	       (it = eb__list_first(&bus->dedup.order)) != NULL) {
		dkey_free(bus, EB_CONTAINER_OF(it, eb__bus_dkey, link));
		bus->dedup.evicted++;
	}
	k = eb__calloc(1, sizeof(*k) + need);
	memcpy(k->key, mk, need);
	k->hent.key = k->key;
	k->at_ms = now;
	k->epoch = msg->epoch;
	h = json_object_get(eb_bus_msg_headers(msg), EB_BUS_DEDUP_SEQ_HEADER);
	k->seq =
	    json_is_string(h) ? strtoull(json_string_value(h), NULL, 10) : 0;
	k->rc = rc;
	rc->dkey = k;
	eb__hmap_put(&bus->dedup.map, &k->hent);
	eb__list_insert_tail(&bus->dedup.order, &k->link);
}

int
eb__bus_dedup_admit(eb_bus *bus, eb_bus_msg *msg, eb__bus_rcpt *rc)
{
	const char   *key;
	size_t        klen = 0;
	char          stack[512];
	char         *heap = NULL;
	char         *mk;
	size_t        need;
	eb__hent     *e;
	eb__bus_dkey *k;
	uint64_t      now;
	int           rv = 0;

	if (bus->dedup.max == 0 || rc == NULL || msg->epoch == 0 ||
	    rc->dkey != NULL || (key = msg_key(msg, &klen)) == NULL) {
		return 0;
	}
	mk = dedup_key(stack, sizeof(stack), msg->address, key, klen);
	if (mk == NULL) {
		need = strlen(msg->address) + klen + 24;
		heap = eb__malloc(need);
		mk = dedup_key(heap, need, msg->address, key, klen);
	}
	now = uv_now(bus->loop);
	dedup_expire(bus, now);
	e = eb__hmap_get(&bus->dedup.map, mk);
	if (e == NULL) {
		dkey_add(bus, mk, msg, rc, now);
	} else if (!(k = EB_CONTAINER_OF(e, eb__bus_dkey, hent))->done) {
		bus->dedup.busy++;
		rv = EB_EKEYBUSY;
	} else {
		bus->dedup.duplicates++;
		if (rc->orig_epoch == 0) {
			rc->orig_epoch = k->epoch;
			rc->orig_seq = k->seq;
		}
		rv = EB_EDUPLICATE;
	}
	free(heap);
	return rv;
}

void
eb__bus_dedup_handed(eb_bus *bus, eb__bus_rcpt *rc)
{
	eb__bus_dkey *k = rc->dkey;

	if (k == NULL) {
		return;
	}
	k->done = 1;
	k->rc = NULL;
	rc->dkey = NULL;
	k->at_ms = uv_now(bus->loop);
	eb__list_remove(&k->link);
	eb__list_insert_tail(&bus->dedup.order, &k->link);
}

void
eb__bus_dedup_release(eb_bus *bus, eb__bus_rcpt *rc)
{
	if (rc->dkey != NULL) {
		dkey_free(bus, rc->dkey); /* never handed over: forget it */
	}
}

void
eb_bus_dedup_stats_get(eb_bus *bus, eb_bus_dedup_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (bus == NULL) {
		return;
	}
	out->keys = bus->dedup.map.count;
	out->duplicates = bus->dedup.duplicates;
	out->evicted = bus->dedup.evicted;
	out->busy = bus->dedup.busy;
}
