/* Unit tests for common/dec.h: eb__dec_u64 writes what printf's %llu
 * writes, at every number of digits, both sides of each power of ten, and
 * for random values. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dec.h"
#include "tests/harness/th.h"

static void
check(uint64_t v)
{
	char   want[32];
	char   got[EB_DEC_MAX + 1];
	size_t n;

	(void) snprintf(want, sizeof(want), "%" PRIu64, v);
	memset(got, 'x', sizeof(got));
	n = eb__dec_u64(got, v);
	assert_int_equal(n, strlen(want));
	assert_string_equal(got, want);
	assert_true(got[EB_DEC_MAX] == 'x'); /* nothing past its room */
}

static void
test_powers_of_ten(void **state)
{
	uint64_t p = 1;
	int      i;

	(void) state;
	check(0);
	check(UINT64_MAX);
	check(UINT64_MAX - 1);
	for (i = 0; i < 20; i++) {
		check(p);
		check(p - 1);
		check(p + 1);
		check(p * 9 + (p - 1)); /* all nines with one digit more */
		if (i < 19) {
			p *= 10;
		}
	}
}

static void
test_small_and_random(void **state)
{
	uint64_t v;
	int      i;

	(void) state;
	for (v = 0; v < 100000; v++) {
		check(v);
	}
	srand(25);
	for (i = 0; i < 100000; i++) {
		v = (uint64_t) rand() << 42 ^ (uint64_t) rand() << 21 ^
		    (uint64_t) rand();
		check(v >> (rand() % 64));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_powers_of_ten),
		cmocka_unit_test(test_small_and_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
