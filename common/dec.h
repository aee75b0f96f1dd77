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
 * the number of digits. The length first (compares), then two digits per
 * division from the end (issue 25: a digit per division cost about 100
 * instructions for a 6-digit id, and every message formats several). */
static inline size_t
eb__dec_u64(char *dst, uint64_t v)
{
	static const char     pairs[] = "00010203040506070809"
	                                "10111213141516171819"
	                                "20212223242526272829"
	                                "30313233343536373839"
	                                "40414243444546474849"
	                                "50515253545556575859"
	                                "60616263646566676869"
	                                "70717273747576777879"
	                                "80818283848586878889"
	                                "90919293949596979899";
	static const uint64_t pow10[19] = { 10u, 100u, 1000u, 10000u, 100000u,
		1000000u, 10000000u, 100000000u, 1000000000u, 10000000000u,
		100000000000u, 1000000000000u, 10000000000000u,
		100000000000000u, 1000000000000000u, 10000000000000000u,
		100000000000000000u, 1000000000000000000u,
		10000000000000000000u };
	size_t                n = 1;
	char                 *d;

	while (n < 20 && v >= pow10[n - 1]) {
		n++;
	}
	d = dst + n;
	*d = '\0';
	while (v >= 100u) {
		size_t i = (size_t) (v % 100u) * 2;

		v /= 100u;
		*--d = pairs[i + 1];
		*--d = pairs[i];
	}
	if (v >= 10u) {
		*--d = pairs[(size_t) v * 2 + 1];
		*--d = pairs[(size_t) v * 2];
	} else {
		*--d = (char) ('0' + (int) v);
	}
	return n;
}

#endif
