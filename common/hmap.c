/* String-keyed intrusive hash map; see hmap.h. */
#include "common/hmap.h"

#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

#define HMAP_MIN_BUCKETS 16u

static uint32_t
hmap_hash(const char *s)
{
	/* FNV-1a: short keys, no adversarial flooding concern beyond what a
	 * bounded address count allows. */
	uint32_t h = 2166136261u;

	for (; *s != '\0'; s++) {
		h ^= (unsigned char) *s;
		h *= 16777619u;
	}
	return h;
}

void
eb__hmap_init(eb__hmap *m)
{
	m->buckets = NULL;
	m->nbuckets = 0;
	m->count = 0;
}

void
eb__hmap_free(eb__hmap *m)
{
	free(m->buckets);
	eb__hmap_init(m);
}

eb__hent *
eb__hmap_get(const eb__hmap *m, const char *key)
{
	uint32_t  h;
	eb__hent *e;

	if (m->nbuckets == 0) {
		return NULL;
	}
	h = hmap_hash(key);
	for (e = m->buckets[h & (m->nbuckets - 1)]; e != NULL; e = e->next) {
		if (e->hash == h && strcmp(e->key, key) == 0) {
			return e;
		}
	}
	return NULL;
}

static void
hmap_resize(eb__hmap *m, uint32_t n)
{
	eb__hent **nb = eb__calloc(n, sizeof(eb__hent *));
	uint32_t   i;

	for (i = 0; i < m->nbuckets; i++) {
		eb__hent *e = m->buckets[i];

		while (e != NULL) {
			eb__hent *next = e->next;
			uint32_t  b = e->hash & (n - 1);

			e->next = nb[b];
			nb[b] = e;
			e = next;
		}
	}
	free(m->buckets);
	m->buckets = nb;
	m->nbuckets = n;
}

void
eb__hmap_put(eb__hmap *m, eb__hent *e)
{
	uint32_t b;

	if (m->nbuckets == 0) {
		hmap_resize(m, HMAP_MIN_BUCKETS);
	} else if (m->count >= m->nbuckets) {
		hmap_resize(m, m->nbuckets * 2); /* load factor <= 1 */
	}
	e->hash = hmap_hash(e->key);
	b = e->hash & (m->nbuckets - 1);
	e->next = m->buckets[b];
	m->buckets[b] = e;
	m->count++;
}

void
eb__hmap_del(eb__hmap *m, eb__hent *e)
{
	eb__hent **pp = &m->buckets[e->hash & (m->nbuckets - 1)];

	while (*pp != NULL) {
		if (*pp == e) {
			*pp = e->next;
			e->next = NULL;
			m->count--;
			return;
		}
		pp = &(*pp)->next;
	}
}
