/*
 * Allocation wrappers. ebnode treats memory exhaustion like redis does: it is
 * not a recoverable condition for a small daemon, so these log and abort
 * instead of returning NULL. Peer-controlled sizes are bounded before they get
 * here (frame decoder, write queues), so a peer cannot trigger the abort.
 */
#ifndef EB_COMMON_ALLOC_H
#define EB_COMMON_ALLOC_H

#include <stddef.h>

void *eb__malloc(size_t n);
void *eb__calloc(size_t count, size_t size);
void *eb__realloc(void *p, size_t n);
char *eb__strdup(const char *s);
char *eb__strndup(const char *s, size_t n);
void *eb__memdup(const void *p, size_t n);

#endif
