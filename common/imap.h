/*
 * An intrusive hash map keyed by 64-bit ids that this process assigns (the
 * bus's request and receipt ids, counted up from 1): chained, power-of-two
 * buckets, load factor <= 1, Fibonacci hashing (the id times 2^64/phi, the
 * top bits), which spreads consecutive ids evenly. A peer can only look ids
 * up, never choose the ones stored, so no keyed hash is needed: lookups stay
 * O(1) whatever it asks (common/hmap.h is the map for peer-chosen string
 * keys). The map owns only its bucket array. Loop thread only.
 */
#ifndef EB_COMMON_IMAP_H
#define EB_COMMON_IMAP_H

#include <stdint.h>

typedef struct eb__ient {
	struct eb__ient *next;
	uint64_t         id;
} eb__ient;

typedef struct eb__imap {
	eb__ient **buckets; /* owned */
	uint32_t   nbuckets;
	uint32_t   shift; /* 64 - log2(nbuckets) */
	uint32_t   count;
} eb__imap;

void      eb__imap_init(eb__imap *m);
void      eb__imap_free(eb__imap *m); /* the bucket array only */
eb__ient *eb__imap_get(const eb__imap *m, uint64_t id);
/* e->id must be set and not present already. */
void eb__imap_put(eb__imap *m, eb__ient *e);
/* e must be in the map. */
void eb__imap_del(eb__imap *m, eb__ient *e);

#endif
