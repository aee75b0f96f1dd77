/*
 * The bridge's name for common/hmap.h: a connection's consumers and pending
 * replies are kept in string-keyed intrusive maps so that lookups stay O(1)
 * whatever a client registers or is sent. Thin adapters only; the map is
 * the one the bus uses.
 *
 * Threads: loop thread only.
 */
#ifndef EB_BRIDGE_SMAP_H
#define EB_BRIDGE_SMAP_H

#include "common/hmap.h"

typedef eb__hent eb__smap_node;
typedef eb__hmap eb__smap;

static inline void
eb__smap_init(eb__smap *m)
{
	eb__hmap_init(m);
}

/* Frees the bucket array; the elements are the caller's. */
static inline void
eb__smap_free(eb__smap *m)
{
	eb__hmap_free(m);
}

static inline eb__smap_node *
eb__smap_get(const eb__smap *m, const char *key)
{
	return eb__hmap_get(m, key);
}

/* Inserts node under key (which must not be in the map yet); key is
 * borrowed from the element. */
static inline void
eb__smap_put(eb__smap *m, eb__smap_node *node, const char *key)
{
	node->key = key;
	eb__hmap_put(m, node);
}

static inline void
eb__smap_del(eb__smap *m, eb__smap_node *node)
{
	eb__hmap_del(m, node);
}

#endif
