/*
 * The admin endpoint's configured origins (admin.cors_origins; origin.c):
 * a fixed array of at most EB_ADMIN_MAX_ORIGINS owned strings. Loop thread
 * only.
 */
#ifndef EB_ADMIN_ORIGIN_H
#define EB_ADMIN_ORIGIN_H

#include <stddef.h>

#include "admin/admin.h"

typedef struct eb__admin_origins {
	char  *v[EB_ADMIN_MAX_ORIGINS]; /* owned */
	size_t n;
} eb__admin_origins;

/* Parses list (NULL or "": none; origins separated by spaces or commas)
 * into o: 0, or -1 with the reason in why (o is then empty). */
int eb__admin_origins_parse(
    const char *list, eb__admin_origins *o, char *why, size_t why_len);
void eb__admin_origins_free(eb__admin_origins *o);
/* 1 when origin (len bytes) is one of o, exactly. */
int eb__admin_origins_has(
    const eb__admin_origins *o, const char *origin, size_t len);

#endif
