/*
 * Clustered delivery: the bus's remote seam (eb__bus_remote_ops) over node
 * links (link/link.h). The only file of eventbus/ that knows clusters.
 *
 * Interest: each address record holds, in a->remote, the handler count of
 * every peer that advertised it. On link up each side sends its whole table
 * (non-local-only handler counts), then one INTEREST entry per change; on
 * link down the peer's entries go at once, and requests in flight to it
 * fail (ERROR, EB_ELINKDOWN) instead of waiting for their timeout.
 *
 * Frames (types >= EB_LINK_FRAME_USER, big-endian, str16 = u16 len+bytes,
 * bytes32 = u32 len+bytes):
 *   MSG      u8 kind (1 send, 2 publish), str16 address, str16 reply address
 *            ("" = none), bytes32 headers JSON, bytes32 body JSON
 *   REPLY    str16 requester's reply address, str16 own reply address
 *            ("" = none), bytes32 headers, bytes32 body
 *   FAIL     str16 requester's reply address, u8 type, u32 code, u32
 *            status (both two's complement), bytes32 message
 *   INTEREST u32 n, n x (str16 address, u32 handler count; 0 = none)
 *   MSG2     u8 kind, u64 epoch (0: none), u64 receipt id (0: none), then
 *            as MSG from the address on: a message with a fencing stamp
 *            and/or a receipt request (u64 = two u32, high first)
 *   RECEIPT  u64 id, u32 status (0: handed to every consumer), u32
 *            consumers handed to, u32 consumers tried; for status
 *            EB_EDUPLICATE a trailer u64 epoch, u64 seq: the stamp of the
 *            first delivery of the same key (older peers ignore trailing
 *            bytes; one without it reads as stamp 0)
 *   PRESSURE u32 n, n x (str16 address, u8 busy): flow control; the
 *            sender's local consumers of address are over their high
 *            watermark (1) or back under the low one (0). The receiver
 *            treats the address as busy while any peer says so (its
 *            bridges stop reading for it); a link down or the peer's
 *            interest gone clears it. Sent on change, and on link up for
 *            every busy address (protocol version 3).
 * Bodies travel as the bytes the sender encoded; nobody re-parses them on
 * the way.
 *
 * Threads: loop thread only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/link.h>
#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/frame.h"
#include "common/jsonstr.h"
#include "common/vec.h"
#include "eventbus/eventbus_int.h"
#include "link/link.h"

enum {
	FRAME_MSG = EB_LINK_FRAME_USER,
	FRAME_REPLY = EB_LINK_FRAME_USER + 1,
	FRAME_FAIL = EB_LINK_FRAME_USER + 2,
	FRAME_INTEREST = EB_LINK_FRAME_USER + 3,
	FRAME_MSG2 = EB_LINK_FRAME_USER + 4,
	FRAME_RECEIPT = EB_LINK_FRAME_USER + 5,
	FRAME_PRESSURE = EB_LINK_FRAME_USER + 6
};

/* Keep full-table frames well below any sane max_frame_bytes. */
#define INTEREST_FRAME_SOFT_MAX ((size_t) 256 * 1024)

typedef struct remote_entry {
	uint32_t peer;
	uint32_t count;
	int      busy;      /* the peer's PRESSURE for this address */
	int      congested; /* the link to the peer is congested */
} remote_entry;

typedef struct addr_remote {
	uint32_t     n;
	uint32_t     cap;
	remote_entry v[]; /* peers with count > 0 */
} addr_remote;

/* A peer whose link is up, by id, for messages naming it after it went. */
typedef struct up_peer {
	eb__list link;
	uint32_t id;
	char    *node_id;   /* owned */
	int      congested; /* its link's write queue is past the watermark */
} up_peer;

/* Headers up to this size are remembered for the next message. */
#define HDR_CACHE_MAX 512u

typedef struct bus_remote {
	eb_bus      *bus;   /* borrowed */
	eb_link_mgr *mgr;   /* borrowed; NULL once it detached */
	eb__list     peers; /* of up_peer, owned */
	/* The last headers decoded and their bytes (owned): consecutive
	 * messages often carry the same headers (every ingress forward from
	 * one node: {"ebnode.entry": its id}), shared like empty_headers
	 * (message headers are never modified) instead of parsed again. */
	char   *hdr_bytes;
	size_t  hdr_len;
	json_t *hdr;
	/* The last headers that missed that cache: plain headers are kept
	 * as bytes (parsed only if read: new stamped ingress headers in every
	 * message), unless they repeat the last miss, which then goes into
	 * the cache above instead. */
	char   miss_bytes[HDR_CACHE_MAX];
	size_t miss_len;
	/* The last headers object encoded (held) and its encoding: a shared
	 * object (eb_bus_send_opts.share_headers, e.g. every ingress forward
	 * of one node) is encoded once. */
	json_t *enc_hdr;
	char    enc_bytes[HDR_CACHE_MAX];
	size_t  enc_len;
} bus_remote;

/* ---- per-address interest ---- */

/* A peer's advertised handler count is bounded: the sums stay far from
 * uint32 overflow whatever a (buggy) peer sends. */
#define INTEREST_COUNT_MAX 1000000u

/* Whether the link to peer is congested (st->peers is short). */
static int
peer_congested(eb_bus *bus, uint32_t peer)
{
	bus_remote *st = bus->remote.ctx;
	eb__list   *it;

	for (it = st->peers.next; it != &st->peers; it = it->next) {
		up_peer *u = EB_CONTAINER_OF(it, up_peer, link);

		if (u->id == peer) {
			return u->congested;
		}
	}
	return 0;
}

/* Adds an entry for peer to a's interest array (growing it). */
static void
interest_add(eb__bus_addr *a, uint32_t peer, uint32_t count, int congested)
{
	addr_remote *r = a->remote;

	if (r == NULL || r->n == r->cap) {
		uint32_t cap = r == NULL ? 4 : r->cap * 2;

		r = eb__realloc(r, sizeof(*r) + cap * sizeof(r->v[0]));
		if (a->remote == NULL) {
			r->n = 0;
		}
		r->cap = cap;
		a->remote = r;
	}
	r->v[r->n].peer = peer;
	r->v[r->n].count = count;
	r->v[r->n].busy = 0;
	r->v[r->n].congested = congested;
	r->n++;
	a->n_remote_cong += congested ? 1 : 0;
	a->n_remote += count;
	a->n_remote_nodes++;
}

static void
interest_set(eb_bus *bus, eb__bus_addr *a, uint32_t peer, uint32_t count)
{
	addr_remote *r = a->remote;
	uint32_t     before = a->n_remote;
	uint32_t     i;

	if (count > INTEREST_COUNT_MAX) {
		count = INTEREST_COUNT_MAX;
	}
	for (i = 0; r != NULL && i < r->n; i++) {
		if (r->v[i].peer == peer) {
			break;
		}
	}
	if (r != NULL && i < r->n) {
		a->n_remote -= r->v[i].count;
		if (count == 0) {
			if (r->v[i].busy) {
				a->n_remote_busy--; /* gone with its interest */
			}
			if (r->v[i].congested) {
				a->n_remote_cong--;
			}
			r->v[i] = r->v[--r->n];
			a->n_remote_nodes--;
		} else {
			r->v[i].count = count;
			a->n_remote += count;
		}
	} else if (count > 0) {
		interest_add(a, peer, count, peer_congested(bus, peer));
	}
	r = a->remote; /* may have moved (grown) */
	if (r != NULL && r->n == 0) {
		free(r);
		a->remote = NULL;
	}
	if (a->n_remote != before) {
		eb__bus_watch_notify(bus, a);
	}
	eb__bus_pressure_update(bus, a);
	eb__bus_addr_maybe_free(bus, a);
}

/* A peer's PRESSURE for a (it must have interest in it; else ignored). */
static void
pressure_set(eb_bus *bus, eb__bus_addr *a, uint32_t peer, int busy)
{
	addr_remote  *r = a->remote;
	remote_entry *e = NULL;
	uint32_t      i;

	for (i = 0; r != NULL && i < r->n && e == NULL; i++) {
		if (r->v[i].peer == peer) {
			e = &r->v[i];
		}
	}
	if (e == NULL || e->busy == busy) {
		return;
	}
	e->busy = busy;
	if (busy) {
		a->n_remote_busy++;
	} else {
		a->n_remote_busy--;
	}
	eb__bus_pressure_update(bus, a);
}

/* ---- frame writers ---- */

static void
put_body(eb__buf *b, const eb_bus_msg *msg)
{
	eb__link_put_bytes32(b, msg->body, msg->body_len);
}

static void
put_msg_parts(bus_remote *st, eb__buf *b, const eb_bus_msg *msg)
{
	size_t at;
	size_t n;

	if (msg->hdr_enc != NULL) {
		/* Encoded by the sender (the ingress router's stamps). */
		eb__link_put_bytes32(b, msg->hdr_enc, msg->hdr_enc_len);
	} else if (json_object_size(msg->headers) == 0) {
		eb__link_put_bytes32(b, "{}", 2); /* the common case */
	} else if (msg->headers == st->enc_hdr) {
		/* Message headers are never modified: the same object, the
		 * same bytes. */
		eb__link_put_bytes32(b, st->enc_bytes, st->enc_len);
	} else {
		/* Written in place, then the length before it. Offsets from
		 * off: a reserve may compact the buffer. */
		at = eb__buf_avail(b);
		eb__link_put_u32(b, 0);
		if (eb__jsonstr_put_object(b, msg->headers) != 0) {
			/* Headers are checked objects of strings: never. */
			eb__buf_append(b, "{}", 2);
		}
		n = eb__buf_avail(b) - at - 4;
		eb__frame_put_len(
		    (unsigned char *) b->data + b->off + at, (uint32_t) n);
		if (n <= HDR_CACHE_MAX) {
			json_decref(st->enc_hdr);
			st->enc_hdr = json_incref(msg->headers);
			memcpy(st->enc_bytes, b->data + b->off + at + 4, n);
			st->enc_len = n;
		}
	}
	put_body(b, msg);
}

static void
put_u64(eb__buf *b, uint64_t v)
{
	eb__link_put_u32(b, (uint32_t) (v >> 32));
	eb__link_put_u32(b, (uint32_t) v);
}

static uint64_t
get_u64(eb__link_rd *r)
{
	uint64_t hi = eb__link_get_u32(r);

	return hi << 32 | eb__link_get_u32(r);
}

static int
remote_forward(
    void *ctx, uint32_t node, eb_bus_msg *msg, int kind, uint64_t rid)
{
	bus_remote *st = ctx;
	const char *ra = msg->reply_address != NULL ? msg->reply_address : "";
	size_t      alen = strlen(msg->address);
	size_t      rlen = strlen(ra);
	eb__buf    *b;

	if (alen > UINT16_MAX || rlen > UINT16_MAX) {
		return UV_EINVAL; /* not routable between nodes */
	}
	if (st->mgr == NULL) {
		return EB_ELINKDOWN;
	}
	if (kind == EB__BUS_FWD_REPLY) {
		b = eb__link_frame_begin(st->mgr, node, FRAME_REPLY);
	} else if (rid != 0 || msg->epoch != 0) {
		b = eb__link_frame_begin(st->mgr, node, FRAME_MSG2);
	} else {
		b = eb__link_frame_begin(st->mgr, node, FRAME_MSG);
	}
	if (b == NULL) {
		return EB_ELINKDOWN;
	}
	if (kind != EB__BUS_FWD_REPLY) {
		eb__link_put_u8(b, kind == EB__BUS_FWD_PUBLISH ? 2 : 1);
		if (rid != 0 || msg->epoch != 0) {
			put_u64(b, msg->epoch);
			put_u64(b, rid);
		}
	}
	/* For a reply, msg->address is the requester's reply address. */
	(void) eb__link_put_str16(b, msg->address, alen);
	(void) eb__link_put_str16(b, ra, rlen);
	put_msg_parts(st, b, msg);
	return eb__link_frame_end(st->mgr, node);
}

static int
remote_fail(void *ctx, uint32_t node, const char *reply_address, int status,
    eb_bus_failure_type type, int code, const char *message)
{
	bus_remote *st = ctx;
	eb__buf    *b;

	if (strlen(reply_address) > UINT16_MAX) {
		return UV_EINVAL;
	}
	if (st->mgr == NULL ||
	    (b = eb__link_frame_begin(st->mgr, node, FRAME_FAIL)) == NULL) {
		return EB_ELINKDOWN;
	}
	(void) eb__link_put_str16(b, reply_address, strlen(reply_address));
	eb__link_put_u8(b, (uint8_t) type);
	eb__link_put_u32(b, (uint32_t) code);
	eb__link_put_u32(b, (uint32_t) status);
	eb__link_put_bytes32(b, message, strlen(message));
	return eb__link_frame_end(st->mgr, node);
}

static int
remote_receipt(void *ctx, uint32_t node, uint64_t id, int status,
    uint32_t delivered, uint32_t targets, uint64_t orig_epoch,
    uint64_t orig_seq)
{
	bus_remote *st = ctx;
	eb__buf    *b;

	if (st->mgr == NULL ||
	    (b = eb__link_frame_begin(st->mgr, node, FRAME_RECEIPT)) == NULL) {
		return EB_ELINKDOWN;
	}
	put_u64(b, id);
	eb__link_put_u32(b, (uint32_t) status);
	eb__link_put_u32(b, delivered);
	eb__link_put_u32(b, targets);
	if (status == EB_EDUPLICATE) {
		put_u64(b, orig_epoch);
		put_u64(b, orig_seq);
	}
	return eb__link_frame_end(st->mgr, node);
}

static const char *
remote_peer_name(void *ctx, uint32_t node)
{
	bus_remote *st = ctx;
	eb__list   *it;

	for (it = st->peers.next; it != &st->peers; it = it->next) {
		up_peer *u = EB_CONTAINER_OF(it, up_peer, link);

		if (u->id == node) {
			return u->node_id;
		}
	}
	return NULL;
}

static void remote_interest(void *ctx, const char *address, uint32_t count);

static uint32_t
remote_pick(void *ctx, eb__bus_addr *a, uint64_t index)
{
	const addr_remote *r = a->remote;
	uint32_t           i;

	(void) ctx;
	for (i = 0; r != NULL && i < r->n; i++) {
		if (index < r->v[i].count) {
			return r->v[i].peer;
		}
		index -= r->v[i].count;
	}
	return 0;
}

static void
remote_each_node(void *ctx, eb__bus_addr         *a,
    void (*fn)(void *fnarg, uint32_t node), void *fnarg)
{
	const addr_remote *r = a->remote;
	uint32_t           i;

	(void) ctx;
	for (i = 0; r != NULL && i < r->n; i++) {
		fn(fnarg, r->v[i].peer);
	}
}

static void
remote_addr_free(void *ctx, eb__bus_addr *a)
{
	(void) ctx;
	free(a->remote);
	a->remote = NULL;
}

static void remote_pressure(void *ctx, const char *address, int busy);

static const eb__bus_remote_ops remote_ops = {
	.interest = remote_interest,
	.pressure = remote_pressure,
	.forward = remote_forward,
	.receipt = remote_receipt,
	.peer_name = remote_peer_name,
	.fail = remote_fail,
	.pick = remote_pick,
	.each_node = remote_each_node,
	.addr_free = remote_addr_free,
};

/* ---- interest out ---- */

struct interest_one {
	bus_remote *st;
	const char *address;
	uint32_t    count;
};

static void
interest_one_cb(void *arg, uint32_t peer)
{
	struct interest_one *io = arg;
	eb__buf             *b;

	b = eb__link_frame_begin(io->st->mgr, peer, FRAME_INTEREST);
	if (b == NULL) {
		return;
	}
	eb__link_put_u32(b, 1);
	(void) eb__link_put_str16(b, io->address, strlen(io->address));
	eb__link_put_u32(b, io->count);
	(void) eb__link_frame_end(io->st->mgr, peer);
}

static void
remote_interest(void *ctx, const char *address, uint32_t count)
{
	bus_remote         *st = ctx;
	struct interest_one io = { st, address, count };

	if (st->mgr != NULL && strlen(address) <= UINT16_MAX) {
		eb__link_foreach_up(st->mgr, interest_one_cb, &io);
	}
}

/* ---- pressure out ---- */

struct pressure_one {
	bus_remote *st;
	const char *address;
	int         busy;
};

static void
pressure_one_cb(void *arg, uint32_t peer)
{
	struct pressure_one *po = arg;
	eb__buf             *b;

	b = eb__link_frame_begin(po->st->mgr, peer, FRAME_PRESSURE);
	if (b == NULL) {
		return;
	}
	eb__link_put_u32(b, 1);
	(void) eb__link_put_str16(b, po->address, strlen(po->address));
	eb__link_put_u8(b, (uint8_t) (po->busy != 0));
	(void) eb__link_frame_end(po->st->mgr, peer);
}

static void
remote_pressure(void *ctx, const char *address, int busy)
{
	bus_remote         *st = ctx;
	struct pressure_one po = { st, address, busy };

	if (st->mgr != NULL && strlen(address) <= UINT16_MAX) {
		eb__link_foreach_up(st->mgr, pressure_one_cb, &po);
	}
}

/* Tells a peer whose link just came up every address busy here. */
static void
pressure_full(bus_remote *st, uint32_t peer)
{
	eb_bus             *bus = st->bus;
	struct pressure_one po = { st, NULL, 1 };
	uint32_t            i;
	eb__hent           *e;

	for (i = 0; i < bus->addr.map.nbuckets; i++) {
		for (e = bus->addr.map.buckets[i]; e != NULL; e = e->next) {
			const eb__bus_addr *a =
			    EB_CONTAINER_OF(e, eb__bus_addr, hent);

			if (a->local_busy_told &&
			    strlen(a->address) <= UINT16_MAX) {
				po.address = a->address;
				pressure_one_cb(&po, peer);
			}
		}
	}
}

/* Sends the whole table to a peer whose link just came up, in frames of
 * bounded size. */
struct full_table {
	bus_remote *st;
	uint32_t    peer;
	eb__buf    *b;         /* the frame being filled, NULL: none */
	size_t      count_off; /* where its entry count goes */
	uint32_t    n;         /* entries in it */
};

static void
full_table_flush(struct full_table *ft)
{
	if (ft->b != NULL) {
		eb__frame_put_len(
		    (unsigned char *) ft->b->data + ft->count_off, ft->n);
		(void) eb__link_frame_end(ft->st->mgr, ft->peer);
		ft->b = NULL;
	}
}

/* Adds one address to the table frame; 0, or -1 when the link is gone. */
static int
full_table_add(struct full_table *ft, const eb__bus_addr *a)
{
	uint32_t cnt = a->n_local - a->n_local_only;
	size_t   alen = strlen(a->address);

	if (cnt == 0 || alen > UINT16_MAX) {
		return 0;
	}
	if (ft->b == NULL) {
		ft->b =
		    eb__link_frame_begin(ft->st->mgr, ft->peer, FRAME_INTEREST);
		if (ft->b == NULL) {
			return -1;
		}
		ft->count_off = ft->b->len;
		eb__link_put_u32(ft->b, 0);
		ft->n = 0;
	}
	(void) eb__link_put_str16(ft->b, a->address, alen);
	eb__link_put_u32(ft->b, cnt);
	ft->n++;
	if (ft->b->len - ft->count_off > INTEREST_FRAME_SOFT_MAX) {
		full_table_flush(ft);
	}
	return 0;
}

/* Sends the whole table to a peer whose link just came up, in frames of
 * bounded size. */
static void
interest_full(bus_remote *st, uint32_t peer)
{
	eb_bus           *bus = st->bus;
	struct full_table ft = { st, peer, NULL, 0, 0 };
	uint32_t          i;
	eb__hent         *e;

	for (i = 0; i < bus->addr.map.nbuckets; i++) {
		for (e = bus->addr.map.buckets[i]; e != NULL; e = e->next) {
			if (full_table_add(&ft,
			        EB_CONTAINER_OF(e, eb__bus_addr, hent)) != 0) {
				return;
			}
		}
	}
	full_table_flush(&ft);
}

/* ---- link events ---- */

static void
link_up_cb(void *ctx, uint32_t peer, const char *node_id)
{
	bus_remote *st = ctx;
	up_peer    *u = eb__calloc(1, sizeof(*u));

	EB_LOG_DEBUG("eventbus", "peer-up: node=%s id=%u", node_id, peer);
	u->id = peer;
	u->node_id = eb__strdup(node_id);
	eb__list_insert_tail(&st->peers, &u->link);
	interest_full(st, peer);
	pressure_full(st, peer);
}

/* Removes peer from the up list and writes the failure text naming it. */
static void
up_peer_forget(bus_remote *st, uint32_t peer, char *text, size_t size)
{
	eb__list *it;
	eb__list *tmp;

	(void) snprintf(text, size, "Link to node (peer %u) lost", peer);
	EB_LIST_FOREACH (it, tmp, &st->peers) {
		up_peer *u = EB_CONTAINER_OF(it, up_peer, link);

		if (u->id == peer) {
			(void) snprintf(
			    text, size, "Link to node %s lost", u->node_id);
			eb__list_remove(it);
			free(u->node_id);
			free(u);
		}
	}
}

static void
link_down_cb(void *ctx, uint32_t peer)
{
	bus_remote *st = ctx;
	eb_bus     *bus = st->bus;
	eb__list   *it;
	eb__list   *tmp;
	uint32_t    i;
	char        text[160];

	/* Forget the peer's interest: the selector skips it from now on. */
	for (i = 0; i < bus->addr.map.nbuckets; i++) {
		eb__hent *e = bus->addr.map.buckets[i];

		while (e != NULL) {
			eb__hent     *next = e->next;
			eb__bus_addr *a =
			    EB_CONTAINER_OF(e, eb__bus_addr, hent);

			if (a->remote != NULL) {
				interest_set(bus, a, peer, 0);
			}
			e = next;
		}
	}
	/* Requests in flight to it fail now, not at their timeout, and so
	 * do the confirmed messages it has not confirmed yet. */
	up_peer_forget(st, peer, text, sizeof(text));
	eb__bus_rcpt_peer_down(bus, peer, text);
	EB_LIST_FOREACH (it, tmp, &bus->req.deadlines) {
		eb__bus_req *r = EB_CONTAINER_OF(it, eb__bus_req, link);

		if (r->node == peer) {
			eb__bus_req_fail(
			    bus, r, EB_ELINKDOWN, EB_BUS_ERROR, -1, text);
		}
	}
}

/* Marks peer's entry in a congested or not: 1 if that changed. */
static int
entry_congested(eb__bus_addr *a, uint32_t peer, int on)
{
	addr_remote *r = a->remote;
	uint32_t     k;

	for (k = 0; r != NULL && k < r->n; k++) {
		if (r->v[k].peer == peer && r->v[k].congested != on) {
			r->v[k].congested = on;
			if (on) {
				a->n_remote_cong++;
			} else {
				a->n_remote_cong--;
			}
			return 1;
		}
	}
	return 0;
}

/* Tells the pressure observers about the addresses named in changed (of
 * char *, freed), those that still exist. */
static void
pressure_tell(eb_bus *bus, eb__vec *changed)
{
	size_t i;

	for (i = 0; i < changed->len; i++) {
		char         *name = *(char **) eb__vec_at(changed, i);
		eb__bus_addr *a = eb__bus_addr_find(bus, name);

		if (a != NULL) {
			eb__bus_pressure_update(bus, a);
		}
		free(name);
	}
	eb__vec_free(changed);
}

/* The link to peer is congested (or not any more): every address with
 * consumers there is busy while it is, so the bridges feeding them stop
 * reading before more than the link's bound is in flight (docs/BUS.md). */
static void
link_congested_cb(void *ctx, uint32_t peer, int on)
{
	bus_remote *st = ctx;
	eb_bus     *bus = st->bus;
	eb__list   *it;
	eb__vec     changed; /* of char *, owned: the addresses to tell */
	uint32_t    i;

	for (it = st->peers.next; it != &st->peers; it = it->next) {
		up_peer *u = EB_CONTAINER_OF(it, up_peer, link);

		u->congested = u->id == peer ? on : u->congested;
	}
	/* Count first, tell after: an observer may change the table. */
	eb__vec_init(&changed, sizeof(char *));
	for (i = 0; i < bus->addr.map.nbuckets; i++) {
		eb__hent *e;

		for (e = bus->addr.map.buckets[i]; e != NULL; e = e->next) {
			eb__bus_addr *a =
			    EB_CONTAINER_OF(e, eb__bus_addr, hent);

			if (entry_congested(a, peer, on)) {
				*(char **) eb__vec_push(&changed) =
				    eb__strdup(a->address);
			}
		}
	}
	pressure_tell(bus, &changed);
}

static void
link_detach_cb(void *ctx)
{
	bus_remote *st = ctx;

	st->mgr = NULL;
}

/* ---- frames in ---- */

static char *
rd_strdup(eb__link_rd *r)
{
	size_t      n;
	const char *p = eb__link_get_str16(r, &n);

	return r->bad || memchr(p, '\0', n) != NULL ? NULL : eb__strndup(p, n);
}

/* A string read from a frame, on the stack when it is short (addresses
 * and reply addresses of the message path, read for every message). */
typedef struct rd_str {
	char *s; /* buf, the heap, or NULL: a bad frame or a NUL byte */
	char  buf[128];
} rd_str;

static char *
rd_str_take(eb__link_rd *r, rd_str *out)
{
	size_t      n;
	const char *p = eb__link_get_str16(r, &n);

	if (r->bad || memchr(p, '\0', n) != NULL) {
		out->s = NULL;
	} else if (n < sizeof(out->buf)) {
		memcpy(out->buf, p, n);
		out->buf[n] = '\0';
		out->s = out->buf;
	} else {
		out->s = eb__strndup(p, n);
	}
	return out->s;
}

static void
rd_str_free(rd_str *s)
{
	if (s->s != s->buf) {
		free(s->s);
	}
}

/* 1 when the headers p[0..n) are kept as bytes (see miss_bytes). */
static int
hdr_as_bytes(bus_remote *st, const char *p, size_t n)
{
	if ((n == 2 && memcmp(p, "{}", 2) == 0) ||
	    (st->hdr != NULL && n == st->hdr_len &&
	        memcmp(p, st->hdr_bytes, n) == 0)) {
		return 0;
	}
	if (n <= HDR_CACHE_MAX) {
		if (n == st->miss_len && memcmp(p, st->miss_bytes, n) == 0) {
			return 0; /* repeated: parse once and share */
		}
		memcpy(st->miss_bytes, p, n);
		st->miss_len = n;
	}
	return eb__jsonstr_plain_object_check(p, n);
}

static json_t *
rd_headers(bus_remote *st, const char *p, size_t n)
{
	json_error_t jerr;
	json_t      *h;

	if (n == 2 && memcmp(p, "{}", 2) == 0) {
		return json_incref(st->bus->msg.empty_headers);
	}
	if (st->hdr != NULL && n == st->hdr_len &&
	    memcmp(p, st->hdr_bytes, n) == 0) {
		return json_incref(st->hdr);
	}
	/* The compact ASCII form a node writes (e.g. stamped ingress
	 * headers, new in every message) without jansson's parser; anything
	 * else through it. */
	if ((h = eb__jsonstr_parse_plain_object(p, n)) == NULL) {
		h = json_loadb(
		    p, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	}
	if (h != NULL && eb__bus_headers_check(h) != 0) {
		json_decref(h);
		h = NULL;
	}
	if (h != NULL && n <= HDR_CACHE_MAX) {
		json_decref(st->hdr);
		st->hdr_bytes = eb__realloc(st->hdr_bytes, n);
		memcpy(st->hdr_bytes, p, n);
		st->hdr_len = n;
		st->hdr = json_incref(h);
	}
	return h;
}

/* Reads headers and body and makes the message; NULL on a bad frame. */
static eb_bus_msg *
rd_msg(bus_remote *st, eb__link_rd *r, const char *address, int is_send)
{
	size_t      hn;
	const char *hp = eb__link_get_bytes32(r, &hn);
	size_t      blen;
	const char *body = eb__link_get_bytes32(r, &blen);
	json_t     *h;
	eb_bus_msg *m;

	if (r->bad || blen == 0) {
		return NULL;
	}
	if (hdr_as_bytes(st, hp, hn)) {
		return eb__bus_msg_from_plain(
		    address, body, blen, hp, hn, is_send);
	}
	if ((h = rd_headers(st, hp, hn)) == NULL) {
		return NULL;
	}
	m = eb__bus_msg_from_bytes(address, body, blen, h, is_send);
	json_decref(h);
	return m;
}

/*
 * A stamped or confirmed message (MSG2): the fence first (rule 6), then
 * delivery with a receiver-side tracker whose outcome is the RECEIPT.
 */
static void
msg2_deliver(
    bus_remote *st, uint32_t peer, eb_bus_msg *m, int publish, uint64_t rid)
{
	eb_bus       *bus = st->bus;
	eb__bus_rcpt *rc;

	if (eb__bus_fence_stale(bus, m->epoch)) {
		if (m->reply_address != NULL) {
			eb__bus_answer_fail(bus, m, EB_EFENCED, EB_BUS_ERROR,
			    -1, eb_strerror(EB_EFENCED));
		}
		if (rid != 0) {
			(void) remote_receipt(
			    st, peer, rid, EB_EFENCED, 0, 0, 0, 0);
		}
		return;
	}
	eb_bus_fence_raise(bus, m->epoch);
	if (rid == 0) {
		eb__bus_deliver_remote(bus, m, publish, NULL);
		return;
	}
	rc = eb__bus_rcpt_new(bus, NULL, NULL);
	rc->peer = peer;
	rc->peer_id = rid;
	eb__bus_deliver_remote(bus, m, publish, rc);
	eb__bus_rcpt_seal(bus, rc);
}

static int
on_msg(bus_remote *st, uint32_t peer, eb__link_rd *r, int v2)
{
	uint8_t     kind = eb__link_get_u8(r);
	uint64_t    epoch = v2 ? get_u64(r) : 0;
	uint64_t    rid = v2 ? get_u64(r) : 0;
	rd_str      as;
	rd_str      rs;
	char       *address = rd_str_take(r, &as);
	char       *reply = rd_str_take(r, &rs);
	eb_bus_msg *m = NULL;

	if (address != NULL && reply != NULL && (kind == 1 || kind == 2)) {
		m = rd_msg(st, r, address, kind == 1);
	}
	if (m != NULL) {
		if (reply[0] != '\0' && kind == 1) {
			eb__bus_msg_set_reply(st->bus, m, reply, peer);
		}
		m->epoch = epoch;
		if (v2) {
			msg2_deliver(st, peer, m, kind == 2, rid);
		} else {
			eb__bus_deliver_remote(st->bus, m, kind == 2, NULL);
		}
		eb_bus_msg_release(m);
	}
	rd_str_free(&as);
	rd_str_free(&rs);
	return m != NULL ? 0 : EB_EPROTO;
}

static int
on_reply(bus_remote *st, uint32_t peer, eb__link_rd *r)
{
	rd_str       ts;
	rd_str       os;
	char        *target = rd_str_take(r, &ts);
	char        *own = rd_str_take(r, &os);
	eb_bus_msg  *m = NULL;
	eb__bus_req *req;

	if (target != NULL && own != NULL) {
		m = rd_msg(st, r, target, 1);
	}
	if (m != NULL) {
		if ((req = eb__bus_req_find(st->bus, target)) == NULL) {
			st->bus->stats.totals
			    .dropped++; /* timed out meanwhile */
		} else {
			if (own[0] != '\0') {
				eb__bus_msg_set_reply(st->bus, m, own, peer);
			}
			eb__bus_req_reply(st->bus, req, m);
		}
		eb_bus_msg_release(m);
	}
	rd_str_free(&ts);
	rd_str_free(&os);
	return m != NULL ? 0 : EB_EPROTO;
}

static int
on_fail(bus_remote *st, eb__link_rd *r)
{
	char        *target = rd_strdup(r);
	uint8_t      type = eb__link_get_u8(r);
	int32_t      code = (int32_t) eb__link_get_u32(r);
	int32_t      status = (int32_t) eb__link_get_u32(r);
	size_t       n;
	const char  *p = eb__link_get_bytes32(r, &n);
	char        *text;
	eb__bus_req *req;

	if (target == NULL || r->bad || type > EB_BUS_ERROR || status >= 0) {
		free(target);
		return EB_EPROTO;
	}
	if ((req = eb__bus_req_find(st->bus, target)) != NULL) {
		text = eb__strndup(p, n);
		eb__bus_req_fail(st->bus, req, status,
		    (eb_bus_failure_type) type, code, text);
		free(text);
	} else {
		st->bus->stats.totals.dropped++;
	}
	free(target);
	return 0;
}

static int
on_receipt(bus_remote *st, uint32_t peer, eb__link_rd *r)
{
	uint64_t id = get_u64(r);
	int32_t  status = (int32_t) eb__link_get_u32(r);
	uint32_t delivered = eb__link_get_u32(r);
	uint32_t targets = eb__link_get_u32(r);
	uint64_t orig_epoch = 0;
	uint64_t orig_seq = 0;

	if (r->bad || id == 0 || status > 0) {
		return EB_EPROTO;
	}
	if (status == EB_EDUPLICATE && r->n >= 16) {
		orig_epoch = get_u64(r);
		orig_seq = get_u64(r);
	}
	eb__bus_rcpt_remote(st->bus, peer, id, status, delivered, targets,
	    orig_epoch, orig_seq);
	return 0;
}

static int
on_interest(bus_remote *st, uint32_t peer, eb__link_rd *r)
{
	uint32_t n = eb__link_get_u32(r);
	uint32_t i;

	for (i = 0; i < n && !r->bad; i++) {
		char    *address = rd_strdup(r);
		uint32_t count = eb__link_get_u32(r);

		if (address == NULL || r->bad) {
			free(address);
			return EB_EPROTO;
		}
		if (count > 0) {
			interest_set(st->bus,
			    eb__bus_addr_get(st->bus, address), peer, count);
		} else {
			eb__bus_addr *a = eb__bus_addr_find(st->bus, address);

			if (a != NULL) {
				interest_set(st->bus, a, peer, 0);
			}
		}
		free(address);
	}
	return r->bad ? EB_EPROTO : 0;
}

static int
on_pressure(bus_remote *st, uint32_t peer, eb__link_rd *r)
{
	uint32_t n = eb__link_get_u32(r);
	uint32_t i;

	for (i = 0; i < n && !r->bad; i++) {
		char         *address = rd_strdup(r);
		uint8_t       busy = eb__link_get_u8(r);
		eb__bus_addr *a;

		if (address == NULL || r->bad || busy > 1) {
			free(address);
			return EB_EPROTO;
		}
		a = eb__bus_addr_find(st->bus, address);
		if (a != NULL) {
			pressure_set(st->bus, a, peer, busy);
		}
		free(address);
	}
	return r->bad ? EB_EPROTO : 0;
}

static void
link_frame_cb(void *ctx, uint32_t peer, uint8_t type, const char *p, size_t n)
{
	bus_remote *st = ctx;
	eb__link_rd r = { p, n, 0 };
	int         rv;

	if (st->bus->life.closing) {
		return;
	}
	switch (type) {
	case FRAME_MSG:
		rv = on_msg(st, peer, &r, 0);
		break;
	case FRAME_MSG2:
		rv = on_msg(st, peer, &r, 1);
		break;
	case FRAME_RECEIPT:
		rv = on_receipt(st, peer, &r);
		break;
	case FRAME_REPLY:
		rv = on_reply(st, peer, &r);
		break;
	case FRAME_FAIL:
		rv = on_fail(st, &r);
		break;
	case FRAME_INTEREST:
		rv = on_interest(st, peer, &r);
		break;
	case FRAME_PRESSURE:
		rv = on_pressure(st, peer, &r);
		break;
	default:
		rv = EB_EPROTO; /* a newer peer: ignore what we do not know */
		break;
	}
	if (rv != 0) {
		EB_LOG_WARN("eventbus",
		    "bad-link-frame: peer=%u type=%u len=%zu", peer, type, n);
	}
}

static const eb__link_handler link_handler = {
	.up = link_up_cb,
	.down = link_down_cb,
	.frame = link_frame_cb,
	.detach = link_detach_cb,
	.congested = link_congested_cb,
};

/* ---- for vertx_route.c (bus_ext.h) ---- */

eb_bus *
eb__bus_remote_bus(void *ctx)
{
	return ((bus_remote *) ctx)->bus;
}

void
eb__bus_remote_interest(
    eb_bus *bus, eb__bus_addr *a, uint32_t peer, uint32_t count)
{
	interest_set(bus, a, peer, count);
}

/* ---- attach / detach ---- */

int
eb_bus_cluster_attach(eb_bus *bus, eb_link_mgr *links)
{
	bus_remote *st;

	if (bus == NULL || links == NULL) {
		return UV_EINVAL;
	}
	if (bus->life.closing) {
		return EB_ECLOSED;
	}
	if (bus->remote.ops != NULL) {
		return UV_EBUSY;
	}
	st = eb__calloc(1, sizeof(*st));
	st->bus = bus;
	st->mgr = links;
	eb__list_init(&st->peers);
	bus->remote.ops = &remote_ops;
	bus->remote.ctx = st;
	eb__link_mgr_set_handler(links, &link_handler, st);
	return 0;
}

void
eb__bus_remote_detach(eb_bus *bus)
{
	bus_remote *st = bus->remote.ctx;

	if (st != NULL && st->mgr != NULL) {
		eb__link_mgr_set_handler(st->mgr, NULL, NULL);
		st->mgr = NULL;
	}
}

void
eb__bus_remote_free(eb_bus *bus)
{
	bus_remote *st = bus->remote.ctx;
	eb__list   *it;
	eb__list   *tmp;

	if (st != NULL) {
		EB_LIST_FOREACH (it, tmp, &st->peers) {
			up_peer *u = EB_CONTAINER_OF(it, up_peer, link);

			free(u->node_id);
			free(u);
		}
	}
	if (st != NULL) {
		json_decref(st->hdr);
		free(st->hdr_bytes);
		json_decref(st->enc_hdr);
	}
	free(st);
	bus->remote.ctx = NULL;
	bus->remote.ops = NULL;
}
