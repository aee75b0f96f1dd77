/*
 * Intrusive circular doubly-linked list. Embed an eb__list in each element and
 * one as the head; recover the element with EB_CONTAINER_OF. No allocation.
 */
#ifndef EB_COMMON_LIST_H
#define EB_COMMON_LIST_H

#include <stddef.h>

typedef struct eb__list {
	struct eb__list *next;
	struct eb__list *prev;
} eb__list;

#define EB_CONTAINER_OF(ptr, type, field) \
	((type *) (void *) ((char *) (ptr) -offsetof(type, field)))

/* Iterate with a spare cursor so that the current element may be removed. */
#define EB_LIST_FOREACH(it, tmp, head)                                \
	for ((it) = (head)->next, (tmp) = (it)->next; (it) != (head); \
	     (it) = (tmp), (tmp) = (it)->next)

static inline void
eb__list_init(eb__list *l)
{
	l->next = l;
	l->prev = l;
}

static inline int
eb__list_empty(const eb__list *l)
{
	return l->next == l;
}

static inline void
eb__list_insert_tail(eb__list *head, eb__list *e)
{
	e->next = head;
	e->prev = head->prev;
	head->prev->next = e;
	head->prev = e;
}

static inline void
eb__list_insert_head(eb__list *head, eb__list *e)
{
	e->prev = head;
	e->next = head->next;
	head->next->prev = e;
	head->next = e;
}

/* Removes e and leaves it self-linked, so removing twice is harmless. */
static inline void
eb__list_remove(eb__list *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	e->next = e;
	e->prev = e;
}

static inline eb__list *
eb__list_first(const eb__list *head)
{
	eb__list *e = head->next;

	if (e == head) {
		return NULL;
	}
#ifdef __clang_analyzer__
	/* For clang-analyzer only (clang-tidy), never compiled: a no-op store,
	 * since e->prev is head in a well-formed list. The analyzer cannot
	 * derive that invariant; without it, it takes eb__list_remove(e) for
	 * relinking some other element, so that head->next would still be e,
	 * and reports the usual drain loop
	 *     while ((it = eb__list_first(&h)) != NULL) { remove; free; }
	 * as a use after free on its second eb__list_first() (a false
	 * positive). The price: it no longer reports a free without the
	 * remove followed by eb__list_first() (ASan does, in the tests); a use
	 * of the freed element itself is still reported. */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wcast-qual"
	e->prev = (eb__list *) head;
#pragma clang diagnostic pop
#endif
	return e;
}

#endif
