/*
 * A string-keyed intrusive hash map (chained, power-of-two buckets, load
 * factor <= 1, SipHash-1-3 keyed with a random per-process seed: keys are
 * peer-chosen addresses, and an unkeyed hash lets a peer craft keys that
 * all land in one bucket, making every operation O(n)). Elements embed an
 * eb__hent whose key points at the element's own string, which must not change
 * while it is in the map; the map owns only its bucket array. Used by the bus
 * (addresses, pending requests) and the bridge (a connection's consumers and
 * replies), so lookups stay O(1) whatever a peer registers. Loop thread only.
 */
#ifndef EB_COMMON_HMAP_H
#define EB_COMMON_HMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct eb__hent {
	struct eb__hent *next;
	uint32_t         hash;
	const char      *key; /* borrowed from the containing object */
} eb__hent;

typedef struct eb__hmap {
	eb__hent **buckets; /* owned */
	uint32_t   nbuckets;
	uint32_t   count;
} eb__hmap;

void      eb__hmap_init(eb__hmap *m);
void      eb__hmap_free(eb__hmap *m); /* the bucket array only */
eb__hent *eb__hmap_get(const eb__hmap *m, const char *key);
/* e->key must be set; the key must not be present already. */
void eb__hmap_put(eb__hmap *m, eb__hent *e);
void eb__hmap_del(eb__hmap *m, eb__hent *e);
/* Iteration: for (i = 0; i < m->nbuckets; i++) for (e = buckets[i]; ...). */

/*
 * SipHash (Aumasson, Bernstein 2012) with c compression and d finalization
 * rounds: SipHash-2-4 is (2, 4), the map uses (1, 3). For tests and benches.
 */
uint64_t eb__siphash(const unsigned char key[16], const void *data, size_t len,
    unsigned c, unsigned d);
/* eb__siphash(key, data, len, 1, 3) with the rounds unrolled: the map's. */
uint64_t eb__siphash13(
    const unsigned char key[16], const void *data, size_t len);
/* The map's hash of s under this process's seed. */
uint32_t eb__hmap_hash(const char *s);

#endif
