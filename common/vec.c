/* The growable array (common/vec.h). */
#include "common/vec.h"

#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

void
eb__vec_init(eb__vec *v, size_t esize)
{
	EB_ASSERT(esize > 0);
	v->data = NULL;
	v->len = 0;
	v->cap = 0;
	v->esize = esize;
}

void
eb__vec_free(eb__vec *v)
{
	free(v->data);
	v->data = NULL;
	v->len = 0;
	v->cap = 0;
}

void
eb__vec_reserve(eb__vec *v, size_t n)
{
	size_t cap = v->cap != 0 ? v->cap : 8;

	if (n <= v->cap) {
		return;
	}
	while (cap < n) {
		EB_ASSERT(cap <= ((size_t) -1) / 2 / v->esize);
		cap *= 2;
	}
	v->data = eb__realloc(v->data, cap * v->esize);
	v->cap = cap;
}

void *
eb__vec_push(eb__vec *v)
{
	void *e;

	eb__vec_reserve(v, v->len + 1);
	e = (char *) v->data + v->len * v->esize;
	memset(e, 0, v->esize);
	v->len++;
	return e;
}

void
eb__vec_swap_remove(eb__vec *v, size_t i)
{
	EB_ASSERT(i < v->len);
	v->len--;
	if (i != v->len) {
		memcpy((char *) v->data + i * v->esize,
		    (char *) v->data + v->len * v->esize, v->esize);
	}
}

void
eb__vec_remove(eb__vec *v, size_t i)
{
	EB_ASSERT(i < v->len);
	memmove((char *) v->data + i * v->esize,
	    (char *) v->data + (i + 1) * v->esize, (v->len - i - 1) * v->esize);
	v->len--;
}

void
eb__vec_sort(eb__vec *v, int (*cmp)(const void *, const void *))
{
	if (v->len > 1) {
		qsort(v->data, v->len, v->esize, cmp);
	}
}

void *
eb__vec_steal(eb__vec *v)
{
	void *p = v->data;

	v->data = NULL;
	v->len = 0;
	v->cap = 0;
	return p;
}
