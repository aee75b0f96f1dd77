/* Intrusive string hash map; see smap.h. */
#include "bridge/smap.h"

#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

#define SMAP_MIN_BUCKETS 16u

/* FNV-1a: short addresses, no adversarial collision resistance needed
 * beyond what chaining and growth give. */
static size_t
smap_hash(const char *s)
{
	size_t h = (size_t) 14695981039346656037ull;

	while (*s != '\0') {
		h ^= (unsigned char) *s++;
		h *= (size_t) 1099511628211ull;
	}
	return h;
}

void
eb__smap_init(eb__smap *m)
{
	m->buckets = NULL;
	m->nbuckets = 0;
	m->n = 0;
}

void
eb__smap_free(eb__smap *m)
{
	free(m->buckets);
	eb__smap_init(m);
}

eb__smap_node *
eb__smap_get(const eb__smap *m, const char *key)
{
	size_t         h;
	eb__smap_node *it;

	if (m->n == 0) {
		return NULL;
	}
	h = smap_hash(key);
	for (it = m->buckets[h & (m->nbuckets - 1)]; it != NULL;
	     it = it->next) {
		if (it->hash == h && strcmp(it->key, key) == 0) {
			return it;
		}
	}
	return NULL;
}

static void
smap_grow(eb__smap *m)
{
	size_t nb = m->nbuckets == 0 ? SMAP_MIN_BUCKETS : m->nbuckets * 2;
	eb__smap_node **v = eb__calloc(nb, sizeof(eb__smap_node *));
	size_t          i;

	for (i = 0; i < m->nbuckets; i++) {
		eb__smap_node *it = m->buckets[i];

		while (it != NULL) {
			eb__smap_node *next = it->next;
			size_t         b = it->hash & (nb - 1);

			it->next = v[b];
			v[b] = it;
			it = next;
		}
	}
	free(m->buckets);
	m->buckets = v;
	m->nbuckets = nb;
}

void
eb__smap_put(eb__smap *m, eb__smap_node *node, const char *key)
{
	size_t b;

	if (m->n >= m->nbuckets) {
		smap_grow(m);
	}
	node->key = key;
	node->hash = smap_hash(key);
	b = node->hash & (m->nbuckets - 1);
	node->next = m->buckets[b];
	m->buckets[b] = node;
	m->n++;
}

void
eb__smap_del(eb__smap *m, eb__smap_node *node)
{
	eb__smap_node **pp = &m->buckets[node->hash & (m->nbuckets - 1)];

	while (*pp != NULL) {
		if (*pp == node) {
			*pp = node->next;
			node->next = NULL;
			m->n--;
			return;
		}
		pp = &(*pp)->next;
	}
}
