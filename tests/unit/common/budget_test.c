/* Unit tests for the node-wide input budget (common/budget.h). */
#include <uv.h>

#include "common/budget.h"
#include "tests/harness/th.h"

typedef struct reclaimer {
	int    calls;
	size_t held; /* what the owner's holders count */
	size_t give; /* what a reclaim gives back */
} reclaimer;

static void
reclaim_cb(eb__budget *bg, void *arg)
{
	reclaimer *r = arg;

	r->calls++;
	eb__budget_adjust(bg, r->held, r->held - r->give);
	r->held -= r->give;
	r->give = 0;
}

static void
test_holders_counted_never_refused(void **state)
{
	eb__budget bg;

	(void) state;
	eb__budget_init(&bg, 100, NULL, NULL);
	eb__budget_adjust(&bg, 0, 60);
	assert_false(eb__budget_over(&bg));
	eb__budget_adjust(&bg, 0, 60); /* a second holder: over */
	assert_int_equal(bg.used, 120);
	assert_true(eb__budget_over(&bg));
	eb__budget_adjust(&bg, 60, 0); /* the owner closed one */
	assert_false(eb__budget_over(&bg));
	assert_int_equal(bg.used, 60);
}

static void
test_charge_refused_after_reclaim(void **state)
{
	reclaimer  r = { 0, 80, 30 };
	eb__budget bg;

	(void) state;
	eb__budget_init(&bg, 100, reclaim_cb, &r);
	eb__budget_adjust(&bg, 0, r.held);
	/* 40 does not fit in 20: the reclaim gives 30 back, then it fits. */
	assert_int_equal(eb__budget_charge(&bg, 40), 0);
	assert_int_equal(r.calls, 1);
	assert_int_equal(bg.used, 90);
	assert_int_equal(bg.external, 40);
	/* 20 more does not fit and nothing can be reclaimed: refused,
	 * nothing counted. */
	assert_int_equal(eb__budget_charge(&bg, 20), UV_ENOBUFS);
	assert_int_equal(r.calls, 2);
	assert_int_equal(bg.used, 90);
	assert_int_equal(eb__budget_charge(&bg, 10), 0); /* exactly full */
	assert_false(eb__budget_over(&bg));
	eb__budget_release(&bg, 50);
	assert_int_equal(bg.used, 50);
	assert_int_equal(bg.external, 0);
}

static void
test_unbounded_counts(void **state)
{
	eb__budget bg;

	(void) state;
	eb__budget_init(&bg, 0, NULL, NULL);
	assert_int_equal(eb__budget_charge(&bg, (size_t) 1 << 40), 0);
	eb__budget_adjust(&bg, 0, 5);
	assert_false(eb__budget_over(&bg));
	assert_int_equal(bg.used, ((size_t) 1 << 40) + 5);
	eb__budget_release(&bg, (size_t) 1 << 40);
	assert_int_equal(bg.used, 5);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_holders_counted_never_refused),
		cmocka_unit_test(test_charge_refused_after_reclaim),
		cmocka_unit_test(test_unbounded_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
