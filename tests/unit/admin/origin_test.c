/* Unit tests for admin.cors_origins (admin/origin.h): the lists accepted
 * (separators, schemes, ports, IPv6), every malformed origin refused with a
 * reason, the bound on their number and length, and exact matching. */
#include <stdio.h>
#include <string.h>

#include "admin/origin.h"
#include "tests/harness/th.h"

static void
test_parse_and_match(void **state)
{
	eb__admin_origins o;
	char              why[160];

	(void) state;
	assert_int_equal(
	    eb__admin_origins_parse(NULL, &o, why, sizeof(why)), 0);
	assert_int_equal(o.n, 0);
	assert_int_equal(
	    eb__admin_origins_parse(" ,, ", &o, why, sizeof(why)), 0);
	assert_int_equal(o.n, 0);
	assert_int_equal(
	    eb__admin_origins_parse("http://a.example, https://b.example:8443\t"
	                            "http://[::1]:7100,http://127.0.0.1",
	        &o, why, sizeof(why)),
	    0);
	assert_int_equal(o.n, 4);
	assert_true(eb__admin_origins_has(&o, "http://a.example", 16));
	assert_true(eb__admin_origins_has(&o, "http://[::1]:7100", 17));
	assert_false(eb__admin_origins_has(&o, "http://a.example:80", 19));
	assert_false(eb__admin_origins_has(&o, "https://a.example", 17));
	assert_false(eb__admin_origins_has(&o, "http://a.exampl", 15));
	eb__admin_origins_free(&o);
	assert_int_equal(o.n, 0);
}

static void
test_refused(void **state)
{
	static const char *const bad[] = { "*", "null", "a.example", "http://",
		"https://", "ftp://a.example", "http://a.example/",
		"http://a.example/x",
		"http://a.example:", "http://a.example:1x",
		"http://a.example:123456", "http://a_b.example", "http://[::1",
		"http://*.example", "http://a.example, *" };
	eb__admin_origins        o;
	char                     why[160];
	char                     many[2048];
	size_t                   used;
	char                     longest[400];
	size_t                   i;

	(void) state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		assert_int_equal(
		    eb__admin_origins_check(bad[i], why, sizeof(why)), -1);
		assert_non_null(strstr(why, "not an origin"));
	}
	used = 0;
	for (i = 0; i <= EB_ADMIN_MAX_ORIGINS; i++) {
		int n = snprintf(
		    many + used, sizeof(many) - used, "http://h%zu ", i);

		assert_true(n > 0 && (size_t) n < sizeof(many) - used);
		used += (size_t) n;
	}
	assert_int_equal(
	    eb__admin_origins_parse(many, &o, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "more than"));
	assert_int_equal(o.n, 0);
	memset(longest, 'a', sizeof(longest));
	memcpy(longest, "http://", 7);
	longest[EB_ADMIN_ORIGIN_MAX + 1] = '\0';
	assert_int_equal(
	    eb__admin_origins_check(longest, why, sizeof(why)), -1);
	longest[EB_ADMIN_ORIGIN_MAX] = '\0';
	assert_int_equal(eb__admin_origins_check(longest, why, sizeof(why)), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_and_match),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
