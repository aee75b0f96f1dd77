/* Unit tests for common/spare.h: at most max blocks are kept, the last one
 * kept is the first taken, a taken block is a block that was put, and
 * eb__spare_free empties the list (under ASan or TSan nothing is kept). */
#include <stdlib.h>
#include <string.h>

#include "common/spare.h"
#include "tests/harness/th.h"

enum { BLOCK = 48, MAX = 8, N = 12 };

static void
test_keep_take_free(void **state)
{
	eb__spare s = { NULL, 0 };
	void     *b[N];
#ifndef EB__SPARE_OFF
	void *got;
#endif
	int i;

	(void) state;
	assert_null(eb__spare_take(&s));
	for (i = 0; i < N; i++) {
		b[i] = malloc(BLOCK);
		assert_non_null(b[i]);
		memset(b[i], i, BLOCK);
	}
	for (i = 0; i < N; i++) {
		eb__spare_put(&s, b[i], MAX); /* the last N - MAX are freed */
	}
#ifdef EB__SPARE_OFF
	assert_int_equal(s.n, 0);
	assert_null(eb__spare_take(&s));
#else
	assert_int_equal(s.n, MAX);
	/* Last in, first out; only the link word was written. */
	got = eb__spare_take(&s);
	assert_ptr_equal(got, b[MAX - 1]);
	assert_int_equal(((unsigned char *) got)[BLOCK - 1], MAX - 1);
	assert_int_equal(s.n, MAX - 1);
	eb__spare_put(&s, got, MAX);
	assert_int_equal(s.n, MAX);
	for (i = MAX - 1; i >= 0; i--) {
		assert_ptr_equal(eb__spare_take(&s), b[i]);
	}
	assert_null(eb__spare_take(&s));
	assert_int_equal(s.n, 0);
	for (i = 0; i < MAX; i++) {
		eb__spare_put(&s, b[i], MAX);
	}
	assert_int_equal(s.n, MAX);
#endif
	eb__spare_free(&s);
	assert_int_equal(s.n, 0);
	assert_null(s.head);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keep_take_free),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
