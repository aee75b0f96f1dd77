/*
 * Decimal text of a uint64_t without printf: ids and stamps are formatted
 * for every message (reply addresses, receipt keys, ingress stamps), and
 * vfprintf showed in the profiles (docs/PERFORMANCE.md, issue 17).
 */
#ifndef EB_COMMON_DEC_H
#define EB_COMMON_DEC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Room for any uint64_t and the NUL. */
#define EB_DEC_MAX 21

/* Writes v's digits and a NUL at dst (EB_DEC_MAX bytes of room); returns
 * the number of digits. */
static inline size_t
eb__dec_u64(char *dst, uint64_t v)
{
	char   tmp[EB_DEC_MAX];
	size_t n = 0;

	do {
		tmp[n++] = (char) ('0' + (int) (v % 10u));
		v /= 10u;
	} while (v != 0);
	for (size_t i = 0; i < n; i++) {
		dst[i] = tmp[n - 1 - i];
	}
	dst[n] = '\0';
	return n;
}

#endif
