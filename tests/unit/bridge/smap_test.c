/* Unit tests for the bridge's intrusive string hash map. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/smap.h"
#include "tests/harness/th.h"

typedef struct item {
	eb__smap_node node;
	char          key[32];
	int           value;
} item;

#define ITEM_OF(n) ((item *) (void *) ((char *) (n) -offsetof(item, node)))

static void
test_empty(void **state)
{
	eb__smap m;

	(void) state;
	eb__smap_init(&m);
	assert_null(eb__smap_get(&m, "x"));
	eb__smap_free(&m);
}

static void
test_put_get_del_many(void **state)
{
	enum { N = 5000 };
	item    *v = calloc(N, sizeof(*v));
	eb__smap m;
	int      i;

	(void) state;
	eb__smap_init(&m);
	for (i = 0; i < N; i++) {
		(void) snprintf(v[i].key, sizeof(v[i].key), "addr.%d", i);
		v[i].value = i;
		eb__smap_put(&m, &v[i].node, v[i].key);
	}
	assert_int_equal(m.n, N);
	assert_true(m.nbuckets >= N);
	for (i = 0; i < N; i++) {
		char           k[32];
		eb__smap_node *n;

		(void) snprintf(k, sizeof(k), "addr.%d", i);
		n = eb__smap_get(&m, k);
		assert_non_null(n);
		assert_int_equal(ITEM_OF(n)->value, i);
	}
	assert_null(eb__smap_get(&m, "addr.-1"));
	assert_null(eb__smap_get(&m, ""));
	/* Remove the even ones; the odd ones stay findable. */
	for (i = 0; i < N; i += 2) {
		eb__smap_del(&m, &v[i].node);
	}
	assert_int_equal(m.n, N / 2);
	for (i = 0; i < N; i++) {
		eb__smap_node *n = eb__smap_get(&m, v[i].key);

		if (i % 2 == 0) {
			assert_null(n);
		} else {
			assert_ptr_equal(n, &v[i].node);
		}
	}
	eb__smap_free(&m);
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
