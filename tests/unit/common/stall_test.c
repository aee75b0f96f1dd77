/* Unit tests for stall detection (common/stall.h). */
#include "common/stall.h"
#include "tests/harness/th.h"

static void
test_regular_ticks_never_skip(void **state)
{
	eb__stall s = { 0 };
	uint64_t  t;

	(void) state;
	/* On time, and late by up to max(period, 500 ms): no stall. */
	for (t = 1000; t < 20000; t += 250) {
		assert_false(eb__stall_skip(&s, t, 250));
	}
	assert_false(eb__stall_skip(&s, t - 250 + 250 + 500, 250));
	assert_int_equal(s.stalls, 0);
}

static void
test_stall_skips_one_sweep(void **state)
{
	eb__stall s = { 0 };

	(void) state;
	assert_false(eb__stall_skip(&s, 1000, 250));
	/* Frozen for 5 s: this sweep gives no verdict... */
	assert_true(eb__stall_skip(&s, 6000, 250));
	assert_int_equal(s.gap_ms, 5000);
	/* ...the next one, on time, does. */
	assert_false(eb__stall_skip(&s, 6250, 250));
	assert_int_equal(s.stalls, 1);
	assert_int_equal(s.max_ms, 5000);
	/* A long period: the slack is the period itself. */
	assert_false(eb__stall_skip(&s, 6250 + 1000 + 999, 1000));
	assert_true(eb__stall_skip(&s, 8249 + 2001 + 1, 1000));
}

static void
test_late_every_turn_still_judges(void **state)
{
	eb__stall s = { 0 };
	uint64_t  t = 1000;
	int       i, skipped = 0;

	(void) state;
	(void) eb__stall_skip(&s, t, 100);
	for (i = 0; i < 10; i++) {
		t += 2000; /* every sweep 2 s late */
		skipped += eb__stall_skip(&s, t, 100) ? 1 : 0;
	}
	assert_int_equal(skipped, 5); /* every other one */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_regular_ticks_never_skip),
		cmocka_unit_test(test_stall_skips_one_sweep),
		cmocka_unit_test(test_late_every_turn_still_judges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
