/* Unit tests for the id-keyed intrusive hash map (common/imap.h), the bus's
 * request and receipt tables. */
#include <stdlib.h>

#include "common/imap.h"
#include "tests/harness/th.h"

#define N 100000u

static void
test_empty(void **state)
{
	eb__imap m;
	eb__ient e = { NULL, 1 };

	(void) state;
	eb__imap_init(&m);
	assert_null(eb__imap_get(&m, 1));
	eb__imap_put(&m, &e);
	assert_ptr_equal(eb__imap_get(&m, 1), &e);
	assert_null(eb__imap_get(&m, 0));
	assert_null(eb__imap_get(&m, UINT64_MAX));
	eb__imap_del(&m, &e);
	assert_null(eb__imap_get(&m, 1));
	assert_int_equal(m.count, 0);
	eb__imap_free(&m);
}

/* Consecutive ids (as the bus assigns them), a sliding window of them
 * (requests answered in order while new ones come), and ids far apart:
 * every one found, none found twice, the chains short. */
static void
test_put_get_del_many(void **state)
{
	eb__ient *v = calloc(N, sizeof(*v));
	eb__imap  m;
	uint32_t  i;
	uint32_t  b;
	uint32_t  longest = 0;

	(void) state;
	assert_non_null(v);
	eb__imap_init(&m);
	for (i = 0; i < N; i++) {
		v[i].id = i < N / 2 ? (uint64_t) i + 1
		                    : ((uint64_t) i << 40) ^ 0xfeedull;
		eb__imap_put(&m, &v[i]);
	}
	assert_int_equal(m.count, N);
	for (b = 0; b < m.nbuckets; b++) {
		uint32_t  len = 0;
		eb__ient *e;

		for (e = m.buckets[b]; e != NULL; e = e->next) {
			len++;
		}
		longest = len > longest ? len : longest;
	}
	assert_true(longest <= 16);
	for (i = 0; i < N; i++) {
		assert_ptr_equal(eb__imap_get(&m, v[i].id), &v[i]);
	}
	assert_null(eb__imap_get(&m, (uint64_t) N * 7 + 3));
	for (i = 0; i < N; i += 2) {
		eb__imap_del(&m, &v[i]);
	}
	assert_int_equal(m.count, N / 2);
	for (i = 0; i < N; i++) {
		assert_ptr_equal(
		    eb__imap_get(&m, v[i].id), i % 2 == 0 ? NULL : &v[i]);
	}
	eb__imap_free(&m);
	free(v);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_put_get_del_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
