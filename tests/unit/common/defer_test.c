/* Unit tests for deferred calls: never synchronous, FIFO, cancel, close. */
#include "common/defer.h"
#include "tests/harness/th.h"

static int order[8];
static int n_calls;

static void
record_cb(void *arg)
{
	order[n_calls++] = *(int *) arg;
}

static int closed;

static void
closed_cb(eb__deferq *q)
{
	(void) q;
	closed++;
}

static void
test_fifo_and_not_synchronous(void **state)
{
	th_loop   *t = *state;
	eb__deferq q;
	int        a = 1;
	int        b = 2;
	int        c = 3;

	n_calls = 0;
	closed = 0;
	assert_int_equal(eb__deferq_init(&t->loop, &q), 0);
	eb__defer(&q, record_cb, &a);
	eb__defer(&q, record_cb, &b);
	eb__defer(&q, record_cb, &c);
	assert_int_equal(eb__defer_cancel(&q, &b), 1);
	assert_int_equal(n_calls, 0); /* never from inside the call */
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(n_calls, 2);
	assert_int_equal(order[0], 1);
	assert_int_equal(order[1], 3);
	eb__deferq_close(&q, closed_cb);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(closed, 1);
}

static void
test_close_drops_pending(void **state)
{
	th_loop   *t = *state;
	eb__deferq q;
	int        a = 1;

	n_calls = 0;
	closed = 0;
	assert_int_equal(eb__deferq_init(&t->loop, &q), 0);
	eb__defer(&q, record_cb, &a);
	eb__deferq_close(&q, closed_cb);
	assert_int_equal(th_loop_run(t), 0);
	assert_int_equal(n_calls, 0);
	assert_int_equal(closed, 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_fifo_and_not_synchronous, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_close_drops_pending, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
