/* Unit tests for the Prometheus text writer (admin/prom.h): HELP/TYPE
 * lines, label value and HELP escaping, u64 and f64 samples. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "admin/prom.h"
#include "tests/harness/th.h"

/* w's text as a NUL-terminated string (static buffer). */
static const char *
text(eb__prom *w)
{
	static char s[4096];

	assert_true(eb__prom_len(w) < sizeof(s));
	memcpy(s, eb__prom_data(w), eb__prom_len(w));
	s[eb__prom_len(w)] = '\0';
	return s;
}

static void
test_family_lines(void **state)
{
	eb__prom w;

	(void) state;
	eb__prom_init(&w);
	eb__prom_family(&w, "ebnode_x_total", "counter", "Things counted.");
	assert_string_equal(text(&w), "# HELP ebnode_x_total Things counted.\n"
	                              "# TYPE ebnode_x_total counter\n");
	eb__prom_free(&w);
}

static void
test_help_escaping(void **state)
{
	eb__prom w;

	(void) state;
	eb__prom_init(&w);
	/* HELP escapes backslash and newline, never the double quote. */
	eb__prom_family(&w, "g", "gauge", "a\\b\nc \"q\"");
	assert_string_equal(
	    text(&w), "# HELP g a\\\\b\\nc \"q\"\n# TYPE g gauge\n");
	eb__prom_free(&w);
}

static void
test_label_escaping(void **state)
{
	eb__prom    w;
	const char *l[] = { "address", "a\"b\\c\nd", "kind", "sent", NULL };

	(void) state;
	eb__prom_init(&w);
	eb__prom_u64(&w, "m", l, 7);
	assert_string_equal(
	    text(&w), "m{address=\"a\\\"b\\\\c\\nd\",kind=\"sent\"} 7\n");
	eb__prom_free(&w);
}

static void
test_samples(void **state)
{
	eb__prom    w;
	const char *none[] = { NULL };
	const char *le[] = { "le", "+Inf", NULL };

	(void) state;
	eb__prom_init(&w);
	eb__prom_u64(&w, "a", NULL, UINT64_MAX);
	eb__prom_u64(&w, "b", none, 0);
	eb__prom_f64(&w, "c", NULL, 1.5);
	eb__prom_f64(&w, "d", le, 0.000123456789012);
	eb__prom_f64(&w, "e", NULL, 0.0);
	assert_string_equal(text(&w), "a 18446744073709551615\n"
	                              "b 0\n"
	                              "c 1.5\n"
	                              "d{le=\"+Inf\"} 0.000123456789\n"
	                              "e 0\n");
	eb__prom_free(&w);
}

static void
test_one(void **state)
{
	eb__prom w;

	(void) state;
	eb__prom_init(&w);
	eb__prom_one(&w, "ebnode_up", "gauge", "Up.", 1);
	assert_string_equal(text(&w), "# HELP ebnode_up Up.\n"
	                              "# TYPE ebnode_up gauge\n"
	                              "ebnode_up 1\n");
	eb__prom_free(&w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_family_lines),
		cmocka_unit_test(test_help_escaping),
		cmocka_unit_test(test_label_escaping),
		cmocka_unit_test(test_samples),
		cmocka_unit_test(test_one),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
