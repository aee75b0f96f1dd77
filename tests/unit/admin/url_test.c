/* Unit tests for query value decoding (admin/url.h). */
#include <string.h>

#include "admin/url.h"
#include "tests/harness/th.h"

static int
dec(const char *s, char *out, size_t cap)
{
	return eb__url_decode(s, strlen(s), out, cap);
}

static void
test_plain_and_escapes(void **state)
{
	char out[64];

	(void) state;
	assert_int_equal(dec("orders", out, sizeof(out)), 0);
	assert_string_equal(out, "orders");
	assert_int_equal(dec("a%2Eb%2fc", out, sizeof(out)), 0);
	assert_string_equal(out, "a.b/c");
	assert_int_equal(dec("a+b%20c", out, sizeof(out)), 0);
	assert_string_equal(out, "a b c");
	assert_int_equal(dec("", out, sizeof(out)), 0);
	assert_string_equal(out, "");
	/* Only the length given is decoded. */
	assert_int_equal(eb__url_decode("abc&x", 3, out, sizeof(out)), 0);
	assert_string_equal(out, "abc");
}

static void
test_bad_escapes(void **state)
{
	char out[64];

	(void) state;
	assert_int_equal(dec("%", out, sizeof(out)), -1);
	assert_int_equal(dec("a%4", out, sizeof(out)), -1);
	assert_int_equal(dec("%zz", out, sizeof(out)), -1);
	assert_int_equal(dec("%g1", out, sizeof(out)), -1);
	/* An embedded NUL is refused. */
	assert_int_equal(dec("a%00b", out, sizeof(out)), -1);
}

static void
test_room(void **state)
{
	char out[4];

	(void) state;
	assert_int_equal(dec("abc", out, sizeof(out)), 0);
	assert_string_equal(out, "abc");
	assert_int_equal(dec("abcd", out, sizeof(out)), -1);
	assert_int_equal(dec("%41%42%43", out, sizeof(out)), 0);
	assert_string_equal(out, "ABC");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_and_escapes),
		cmocka_unit_test(test_bad_escapes),
		cmocka_unit_test(test_room),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
