/*
 * An intrusive hash map from C strings to elements that embed an
 * eb__smap_node (chained, power-of-two buckets, grows at load 1). The map
 * never owns keys or elements: each node points at its element's own key,
 * which must stay unchanged while the node is in the map. Used for a
 * connection's consumers and pending replies, so that lookups stay O(1)
 * whatever a client registers or is sent.
 *
 * Threads: loop thread only.
 */
#ifndef EB_BRIDGE_SMAP_H
#define EB_BRIDGE_SMAP_H

#include <stddef.h>

typedef struct eb__smap_node {
	struct eb__smap_node *next;
	const char           *key; /* borrowed from the element */
	size_t                hash;
} eb__smap_node;

typedef struct eb__smap {
	eb__smap_node **buckets;  /* owned (the array, not the nodes) */
	size_t          nbuckets; /* 0 or a power of two */
	size_t          n;
} eb__smap;

void eb__smap_init(eb__smap *m);
/* Frees the bucket array; the elements are the caller's. */
void eb__smap_free(eb__smap *m);
/* The node with key, or NULL. */
eb__smap_node *eb__smap_get(const eb__smap *m, const char *key);
/* Inserts node under key (which must not be in the map yet). */
void eb__smap_put(eb__smap *m, eb__smap_node *node, const char *key);
/* Removes node (which must be in the map). */
void eb__smap_del(eb__smap *m, eb__smap_node *node);

#endif
