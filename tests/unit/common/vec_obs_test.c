/* Unit tests for the growable array (common/vec.h) and the observer list
 * (common/obs.h). */
#include <stdint.h>
#include <stdlib.h>

#include "common/obs.h"
#include "common/vec.h"
#include "tests/harness/th.h"

typedef struct row {
	uint64_t a;
	char     pad[13];
} row;

static int
cmp_row(const void *x, const void *y)
{
	const row *p = x;
	const row *q = y;

	return (p->a > q->a) - (p->a < q->a);
}

static void
test_vec_push_remove_sort(void **state)
{
	eb__vec v;
	size_t  i;
	row    *r;

	(void) state;
	eb__vec_init(&v, sizeof(row));
	assert_int_equal(v.len, 0);
	for (i = 0; i < 1000; i++) {
		r = eb__vec_push(&v);
		assert_int_equal(r->a, 0); /* zeroed */
		r->a = 999 - i;
	}
	assert_int_equal(v.len, 1000);
	assert_true(v.cap >= 1000);
	for (i = 0; i < 1000; i++) {
		r = eb__vec_at(&v, i);
		assert_int_equal(r->a, 999 - i);
	}
	eb__vec_sort(&v, cmp_row);
	for (i = 0; i < 1000; i++) {
		r = eb__vec_at(&v, i);
		assert_int_equal(r->a, i);
	}
	eb__vec_remove(&v, 0); /* keeps the order */
	r = eb__vec_at(&v, 0);
	assert_int_equal(r->a, 1);
	r = eb__vec_at(&v, 998);
	assert_int_equal(r->a, 999);
	eb__vec_swap_remove(&v, 0); /* the last moves in */
	r = eb__vec_at(&v, 0);
	assert_int_equal(r->a, 999);
	assert_int_equal(v.len, 998);
	r = eb__vec_steal(&v);
	assert_int_equal(v.len, 0);
	assert_null(v.data);
	free(r);
	eb__vec_free(&v);
}

typedef void (*int_cb)(eb__obs *o, int x, void *arg);

static int g_calls[3];
static int g_ten = 10;

static void cb_c(eb__obs *o, int x, void *arg);

/* Observer 0 removes observer 2 and adds observer 2 again on first call. */
static void
cb_a(eb__obs *o, int x, void *arg)
{
	(void) arg;
	g_calls[0] += x;
	if (g_calls[0] == 1) {
		assert_int_equal(eb__obs_remove(o, (eb__obs_fn) cb_c, NULL), 0);
		eb__obs_add(o, (eb__obs_fn) cb_c, NULL);
	}
}

static void
cb_b(eb__obs *o, int x, void *arg)
{
	(void) o;
	g_calls[1] += x * *(const int *) arg;
}

static void
cb_c(eb__obs *o, int x, void *arg)
{
	(void) o;
	(void) arg;
	g_calls[2] += x;
}

static void
emit(eb__obs *o, int x)
{
	eb__obs_it it;

	EB__OBS_EACH(o, it)
	{
		((int_cb) it.fn)(o, x, it.arg);
	}
}

static void
test_obs_changes_during_emit(void **state)
{
	eb__obs o;

	(void) state;
	eb__obs_init(&o);
	emit(&o, 1); /* empty: nothing happens */
	eb__obs_add(&o, (eb__obs_fn) cb_a, NULL);
	eb__obs_add(&o, (eb__obs_fn) cb_b, &g_ten);
	eb__obs_add(&o, (eb__obs_fn) cb_c, NULL);
	assert_int_equal(eb__obs_count(&o), 3);
	/* First emit: a removes c (not called) and re-adds it (not called
	 * until the next emit). */
	emit(&o, 1);
	assert_int_equal(g_calls[0], 1);
	assert_int_equal(g_calls[1], 10);
	assert_int_equal(g_calls[2], 0);
	assert_int_equal(eb__obs_count(&o), 3);
	assert_int_equal(o.v.len, 3); /* the cleared slot was compacted */
	emit(&o, 1);
	assert_int_equal(g_calls[0], 2);
	assert_int_equal(g_calls[1], 20);
	assert_int_equal(g_calls[2], 1);
	/* Removal by (fn, arg): the wrong arg is not removed. */
	assert_int_equal(eb__obs_remove(&o, (eb__obs_fn) cb_b, NULL), -1);
	assert_int_equal(eb__obs_remove(&o, (eb__obs_fn) cb_b, &g_ten), 0);
	emit(&o, 1);
	assert_int_equal(g_calls[1], 20);
	assert_int_equal(eb__obs_count(&o), 2);
	eb__obs_free(&o);
}

static void
nested_cb(eb__obs *o, int x, void *arg)
{
	(void) arg;
	g_calls[0]++;
	if (x > 0) {
		emit(o, x - 1); /* emits may nest */
	}
}

static void
test_obs_nested(void **state)
{
	eb__obs o;

	(void) state;
	g_calls[0] = 0;
	eb__obs_init(&o);
	eb__obs_add(&o, (eb__obs_fn) nested_cb, NULL);
	emit(&o, 3);
	assert_int_equal(g_calls[0], 4);
	assert_int_equal(o.depth, 0);
	eb__obs_free(&o);
}

int
main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vec_push_remove_sort),
		cmocka_unit_test(test_obs_changes_during_emit),
		cmocka_unit_test(test_obs_nested),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
