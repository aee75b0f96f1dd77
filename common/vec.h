/*
 * A growable array of fixed-size elements (one helper instead of a
 * cap-doubling loop in every module). Elements are stored inline and may
 * move when the array grows: keep indices, not pointers, across a push.
 *
 *   eb__vec v;
 *   eb__vec_init(&v, sizeof(row));
 *   row *r = eb__vec_push(&v);   (zeroed)
 *   ...
 *   for (i = 0; i < v.len; i++) { row *x = eb__vec_at(&v, i); }
 *   eb__vec_free(&v);
 *
 * Allocation failure aborts, as with every eb__malloc (common/alloc.h).
 */
#ifndef EB_COMMON_VEC_H
#define EB_COMMON_VEC_H

#include <stddef.h>

#include "common/assert.h"

typedef struct eb__vec {
	void  *data; /* owned; NULL while empty and never grown */
	size_t len;  /* elements in use */
	size_t cap;  /* elements allocated */
	size_t esize;
} eb__vec;

void eb__vec_init(eb__vec *v, size_t esize);
void eb__vec_free(eb__vec *v);
/* Makes room for at least n elements in all. */
void eb__vec_reserve(eb__vec *v, size_t n);
/* Appends one zeroed element and returns it. */
void *eb__vec_push(eb__vec *v);
/* Removes element i, moving the last element into its place (O(1)). */
void eb__vec_swap_remove(eb__vec *v, size_t i);
/* Removes element i, keeping the order of the rest (O(n)). */
void eb__vec_remove(eb__vec *v, size_t i);
/* Sorts the elements with qsort's comparison. */
void eb__vec_sort(eb__vec *v, int (*cmp)(const void *, const void *));
/* Hands the storage to the caller (free() it) and leaves v empty. */
void *eb__vec_steal(eb__vec *v);

static inline void *
eb__vec_at(const eb__vec *v, size_t i)
{
	EB_ASSERT(i < v->len);
	return (char *) v->data + i * v->esize;
}

static inline void
eb__vec_clear(eb__vec *v)
{
	v->len = 0;
}

#endif
