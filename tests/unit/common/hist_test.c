/* Unit tests for the fixed-bucket latency histogram (common/hist.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hist.h"
#include "tests/harness/th.h"

#define US 1000ull
#define MS 1000000ull
#define S  1000000000ull

static void
test_empty(void **state)
{
	eb__hist h;
	size_t   i;

	(void) state;
	eb__hist_init(&h);
	assert_int_equal(h.count, 0);
	assert_int_equal(h.sum_ns, 0);
	for (i = 0; i < EB__HIST_BUCKETS; i++) {
		assert_int_equal(eb__hist_cumulative(&h, i), 0);
	}
	assert_true(eb__hist_sum_seconds(&h) == 0.0);
	assert_int_equal(eb__hist_quantile_bound_ns(&h, 0.99), 0);
}

static void
test_bounds_table(void **state)
{
	size_t i;

	(void) state;
	/* Strictly increasing, +Inf last, labels agree with the values. */
	for (i = 1; i < EB__HIST_BUCKETS; i++) {
		assert_true(eb__hist_bound_ns(i - 1) < eb__hist_bound_ns(i));
	}
	assert_int_equal(eb__hist_bound_ns(EB__HIST_FINITE), UINT64_MAX);
	assert_string_equal(eb__hist_bound_label(EB__HIST_FINITE), "+Inf");
	for (i = 0; i < EB__HIST_FINITE; i++) {
		double s = strtod(eb__hist_bound_label(i), NULL);
		double ns = s * 1e9;
		double d = ns - (double) eb__hist_bound_ns(i);

		assert_true(d < 1.0 && d > -1.0);
	}
	assert_string_equal(eb__hist_bound_label(0), "0.0001");
	assert_string_equal(eb__hist_bound_label(EB__HIST_FINITE - 1), "30");
	/* Out of range asks are answered, never read past the table. */
	assert_string_equal(eb__hist_bound_label(1000), "+Inf");
	assert_int_equal(eb__hist_bound_ns(1000), UINT64_MAX);
}

/* Index of the bucket holding one observation of ns. */
static size_t
bucket_of(uint64_t ns)
{
	eb__hist h;
	size_t   i;

	eb__hist_init(&h);
	eb__hist_record_ns(&h, ns);
	for (i = 0; i < EB__HIST_BUCKETS; i++) {
		if (h.buckets[i] != 0) {
			assert_int_equal(h.buckets[i], 1);
			return i;
		}
	}
	fail_msg(
	    "observation of %llu ns went nowhere", (unsigned long long) ns);
	return 0;
}

static void
test_le_is_inclusive(void **state)
{
	size_t i;

	(void) state;
	assert_int_equal(bucket_of(0), 0);
	assert_int_equal(bucket_of(100 * US), 0);     /* on the bound */
	assert_int_equal(bucket_of(100 * US + 1), 1); /* just above */
	assert_int_equal(bucket_of(1 * MS), 3);
	assert_int_equal(bucket_of(30 * S), EB__HIST_FINITE - 1);
	assert_int_equal(bucket_of(30 * S + 1), EB__HIST_FINITE); /* +Inf */
	assert_int_equal(bucket_of(UINT64_MAX), EB__HIST_FINITE);
	/* Every bound lands in its own bucket, one above in the next. */
	for (i = 0; i < EB__HIST_FINITE; i++) {
		assert_int_equal(bucket_of(eb__hist_bound_ns(i)), i);
		assert_int_equal(bucket_of(eb__hist_bound_ns(i) + 1), i + 1);
	}
}

static void
test_cumulative_and_sum(void **state)
{
	eb__hist h;
	size_t   i;

	(void) state;
	eb__hist_init(&h);
	eb__hist_record_ns(&h, 50 * US);  /* bucket 0 */
	eb__hist_record_ns(&h, 700 * US); /* 0.001 */
	eb__hist_record_ns(&h, 700 * US);
	eb__hist_record_ns(&h, 2 * S);  /* 2.5 */
	eb__hist_record_ns(&h, 60 * S); /* +Inf */
	assert_int_equal(h.count, 5);
	assert_int_equal(h.sum_ns, 50 * US + 1400 * US + 62 * S);
	assert_true(eb__hist_sum_seconds(&h) > 62.00144 &&
	            eb__hist_sum_seconds(&h) < 62.00146);
	assert_int_equal(eb__hist_cumulative(&h, 0), 1);
	assert_int_equal(eb__hist_cumulative(&h, 2), 1);
	assert_int_equal(eb__hist_cumulative(&h, 3), 3);
	assert_int_equal(eb__hist_cumulative(&h, 12), 3); /* le=1 */
	assert_int_equal(eb__hist_cumulative(&h, 13), 4); /* le=2.5 */
	assert_int_equal(eb__hist_cumulative(&h, EB__HIST_FINITE - 1), 4);
	assert_int_equal(eb__hist_cumulative(&h, EB__HIST_FINITE), 5);
	/* Monotonic, and +Inf equals the count (the Prometheus rule). */
	for (i = 1; i < EB__HIST_BUCKETS; i++) {
		assert_true(eb__hist_cumulative(&h, i) >=
		            eb__hist_cumulative(&h, i - 1));
	}
	assert_int_equal(
	    eb__hist_cumulative(&h, EB__HIST_BUCKETS - 1), h.count);
}

static void
test_sum_saturates(void **state)
{
	eb__hist h;

	(void) state;
	eb__hist_init(&h);
	eb__hist_record_ns(&h, UINT64_MAX - 5);
	eb__hist_record_ns(&h, 10);
	assert_int_equal(h.sum_ns, UINT64_MAX);
	assert_int_equal(h.count, 2);
}

static void
test_quantiles(void **state)
{
	eb__hist h;
	int      i;

	(void) state;
	eb__hist_init(&h);
	for (i = 0; i < 99; i++) {
		eb__hist_record_ns(&h, 200 * US); /* le=0.00025 */
	}
	eb__hist_record_ns(&h, 3 * S); /* le=5 */
	assert_int_equal(eb__hist_quantile_bound_ns(&h, 0.0), 250 * US);
	assert_int_equal(eb__hist_quantile_bound_ns(&h, 0.5), 250 * US);
	assert_int_equal(eb__hist_quantile_bound_ns(&h, 0.99), 250 * US);
	assert_int_equal(eb__hist_quantile_bound_ns(&h, 0.991), 5 * S);
	assert_int_equal(eb__hist_quantile_bound_ns(&h, 1.0), 5 * S);
	assert_int_equal(eb__hist_quantile_bound_ns(&h, 7.0), 5 * S);
	eb__hist_record_ns(&h, 31 * S);
	assert_int_equal(eb__hist_quantile_bound_ns(&h, 1.0), UINT64_MAX);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_bounds_table),
		cmocka_unit_test(test_le_is_inclusive),
		cmocka_unit_test(test_cumulative_and_sum),
		cmocka_unit_test(test_sum_saturates),
		cmocka_unit_test(test_quantiles),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
