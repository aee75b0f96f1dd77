/* Allocation wrappers that abort on exhaustion; see alloc.h. */
#include "common/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/log.h>

static void
oom(size_t n)
{
	EB_LOG_ERR("common", "out-of-memory: bytes=%zu", n);
	abort();
}

void *
eb__malloc(size_t n)
{
	void *p = malloc(n == 0 ? 1 : n);

	if (p == NULL) {
		oom(n);
	}
	return p;
}

void *
eb__calloc(size_t count, size_t size)
{
	void *p = calloc(count == 0 ? 1 : count, size == 0 ? 1 : size);

	if (p == NULL) {
		oom(count * size);
	}
	return p;
}

void *
eb__realloc(void *p, size_t n)
{
	void *q = realloc(p, n == 0 ? 1 : n);

	if (q == NULL) {
		oom(n);
	}
	return q;
}

char *
eb__strdup(const char *s)
{
	return eb__memdup(s, strlen(s) + 1);
}

char *
eb__strndup(const char *s, size_t n)
{
	char *p = eb__malloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

void *
eb__memdup(const void *p, size_t n)
{
	void *q = eb__malloc(n);

	if (n > 0) {
		memcpy(q, p, n);
	}
	return q;
}
