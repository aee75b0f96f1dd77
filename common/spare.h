/*
 * Spare blocks of one size, kept by their owner for its next allocations
 * instead of a free and a malloc per object (issue 25: the bus makes and
 * frees requests and receipt trackers for every message). A block on the
 * list links the next through its first word; at most max blocks are
 * kept. Under AddressSanitizer or ThreadSanitizer nothing is kept, so that
 * each object stays its own allocation and a use after free is seen.
 *
 * Not thread-safe: the owner's thread only (the bus: its loop thread). The
 * list owns the blocks on it; eb__spare_free frees them.
 */
#ifndef EB_COMMON_SPARE_H
#define EB_COMMON_SPARE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define EB__SPARE_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define EB__SPARE_OFF 1
#endif
#endif

typedef struct eb__spare {
	void    *head; /* owned: the first kept block */
	uint32_t n;    /* blocks kept */
} eb__spare;

/* A kept block (its bytes as the last owner left them), or NULL. */
static inline void *
eb__spare_take(eb__spare *s)
{
	void *b = s->head;

	if (b != NULL) {
		memcpy(&s->head, b, sizeof(void *));
		s->n--;
	}
	return b;
}

/* A kept block, else a new one of size bytes (the list's block size):
 * its bytes undefined either way. */
static inline void *
eb__spare_get(eb__spare *s, size_t size)
{
	void *b = eb__spare_take(s);

	return b != NULL ? b : eb__malloc(size);
}

/* Keeps b (a block of the list's size, at least a pointer wide) when fewer
 * than max are kept, else frees it. */
static inline void
eb__spare_put(eb__spare *s, void *b, uint32_t max)
{
#ifdef EB__SPARE_OFF
	(void) s;
	(void) max;
	free(b);
#else
	if (s->n >= max) {
		free(b);
		return;
	}
	memcpy(b, &s->head, sizeof(void *));
	s->head = b;
	s->n++;
#endif
}

/* Frees every kept block. */
static inline void
eb__spare_free(eb__spare *s)
{
	void *b;

	while ((b = eb__spare_take(s)) != NULL) {
		free(b);
	}
}

#endif
