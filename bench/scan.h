/*
 * Byte-string search for ebbench and ebbaseline, which look for markers in
 * frames instead of parsing JSON. (POSIX has no memmem; this avoids
 * _GNU_SOURCE.)
 */
#ifndef EB_BENCH_SCAN_H
#define EB_BENCH_SCAN_H

#include <stddef.h>
#include <string.h>

/* The first occurrence of needle[0..k) in p[0..n), or NULL. */
static inline const char *
bench_memmem(const char *p, size_t n, const char *needle, size_t k)
{
	const char *end = p + n;
	const char *q = p;

	if (k == 0 || n < k) {
		return k == 0 ? p : NULL;
	}
	while (
	    (q = memchr(q, needle[0], (size_t) (end - q) - (k - 1))) != NULL) {
		if (memcmp(q, needle, k) == 0) {
			return q;
		}
		if (++q > end - k) {
			break;
		}
	}
	return NULL;
}

#endif
