/* Id-keyed intrusive hash map; see imap.h. */
#include "common/imap.h"

#include <stdlib.h>

#include "common/alloc.h"

#define IMAP_MIN_BUCKETS 16u

static uint32_t
imap_index(const eb__imap *m, uint64_t id)
{
	return (uint32_t) ((id * 0x9e3779b97f4a7c15ull) >> m->shift);
}

void
eb__imap_init(eb__imap *m)
{
	m->buckets = NULL;
	m->nbuckets = 0;
	m->shift = 64;
	m->count = 0;
}

void
eb__imap_free(eb__imap *m)
{
	free(m->buckets);
	eb__imap_init(m);
}

eb__ient *
eb__imap_get(const eb__imap *m, uint64_t id)
{
	eb__ient *e;

	if (m->nbuckets == 0) {
		return NULL;
	}
	for (e = m->buckets[imap_index(m, id)]; e != NULL; e = e->next) {
		if (e->id == id) {
			return e;
		}
	}
	return NULL;
}

static void
imap_resize(eb__imap *m, uint32_t n, uint32_t shift)
{
	eb__ient **old = m->buckets;
	uint32_t   on = m->nbuckets;
	uint32_t   i;

	m->buckets = eb__calloc(n, sizeof(eb__ient *));
	m->nbuckets = n;
	m->shift = shift;
	for (i = 0; i < on; i++) {
		eb__ient *e = old[i];

		while (e != NULL) {
			eb__ient *next = e->next;
			uint32_t  b = imap_index(m, e->id);

			e->next = m->buckets[b];
			m->buckets[b] = e;
			e = next;
		}
	}
	free(old);
}

void
eb__imap_put(eb__imap *m, eb__ient *e)
{
	uint32_t b;

	if (m->nbuckets == 0) {
		imap_resize(m, IMAP_MIN_BUCKETS, 60);
	} else if (m->count >= m->nbuckets) {
		imap_resize(m, m->nbuckets * 2, m->shift - 1);
	}
	b = imap_index(m, e->id);
	e->next = m->buckets[b];
	m->buckets[b] = e;
	m->count++;
}

void
eb__imap_del(eb__imap *m, eb__ient *e)
{
	eb__ient **pp = &m->buckets[imap_index(m, e->id)];

	while (*pp != NULL && *pp != e) {
		pp = &(*pp)->next;
	}
	if (*pp == e) {
		*pp = e->next;
		e->next = NULL;
		m->count--;
	}
}
