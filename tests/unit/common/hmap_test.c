/* Unit tests for the intrusive string hash map (common/hmap.h), used by the
 * bus and the bridge. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hmap.h"
#include "tests/harness/th.h"

typedef struct item {
	eb__hent node;
	char     key[32];
	int      value;
} item;

#define ITEM_OF(n) ((item *) (void *) ((char *) (n) -offsetof(item, node)))

static void
test_empty(void **state)
{
	eb__hmap m;

	(void) state;
	eb__hmap_init(&m);
	assert_null(eb__hmap_get(&m, "x"));
	eb__hmap_free(&m);
}

static void
test_put_get_del_many(void **state)
{
	enum { N = 5000 };
	item    *v = calloc(N, sizeof(*v));
	eb__hmap m;
	int      i;

	(void) state;
	eb__hmap_init(&m);
	for (i = 0; i < N; i++) {
		(void) snprintf(v[i].key, sizeof(v[i].key), "addr.%d", i);
		v[i].value = i;
		v[i].node.key = v[i].key;
		eb__hmap_put(&m, &v[i].node);
	}
	assert_int_equal(m.count, N);
	assert_true(m.nbuckets >= N);
	for (i = 0; i < N; i++) {
		char      k[32];
		eb__hent *n;

		(void) snprintf(k, sizeof(k), "addr.%d", i);
		n = eb__hmap_get(&m, k);
		assert_non_null(n);
		assert_int_equal(ITEM_OF(n)->value, i);
	}
	assert_null(eb__hmap_get(&m, "addr.-1"));
	assert_null(eb__hmap_get(&m, ""));
	/* Remove the even ones; the odd ones stay findable. */
	for (i = 0; i < N; i += 2) {
		eb__hmap_del(&m, &v[i].node);
	}
	assert_int_equal(m.count, N / 2);
	for (i = 0; i < N; i++) {
		eb__hent *n = eb__hmap_get(&m, v[i].key);

		if (i % 2 == 0) {
			assert_null(n);
		} else {
			assert_ptr_equal(n, &v[i].node);
		}
	}
	eb__hmap_free(&m);
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
