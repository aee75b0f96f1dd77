/* Unit tests for the bridge permitted lists (exact, whole-string regex, {}). */
#include <stdlib.h>
#include <string.h>

#include <ebnode/err.h>

#include "bridge/bridge_int.h"
#include "tests/harness/th.h"

static void
test_empty_denies(void **state)
{
	eb__perm_list l;

	(void) state;
	assert_int_equal(eb__perm_init(&l, NULL, 0, "inbound", NULL), 0);
	assert_int_equal(eb__perm_allows(&l, "hello"), 0);
	assert_int_equal(eb__perm_allows(&l, ""), 0);
	eb__perm_free(&l);
}

static void
test_exact_and_regex(void **state)
{
	const eb_bridge_permitted v[] = {
		{ "hello", NULL }, { NULL, "sample\\..*" },
		{ "exact", "ignored.*" }, /* address wins, as in Vert.x */
	};
	eb__perm_list l;

	(void) state;
	assert_int_equal(eb__perm_init(&l, v, 3, "inbound", NULL), 0);
	assert_int_equal(eb__perm_allows(&l, "hello"), 1);
	assert_int_equal(eb__perm_allows(&l, "hello2"), 0);
	assert_int_equal(eb__perm_allows(&l, "xhello"), 0);
	assert_int_equal(eb__perm_allows(&l, "sample.clock"), 1);
	assert_int_equal(eb__perm_allows(&l, "sample."), 1);
	/* Whole-string: a match inside the address is not enough. */
	assert_int_equal(eb__perm_allows(&l, "my.sample.clock"), 0);
	assert_int_equal(eb__perm_allows(&l, "sampleXclock"), 0);
	assert_int_equal(eb__perm_allows(&l, "exact"), 1);
	assert_int_equal(eb__perm_allows(&l, "ignored.x"), 0);
	eb__perm_free(&l);
}

static void
test_alternation_anchored(void **state)
{
	/* ^(a|b)$ and not ^a|b$: "ab" and "xb" must not match. */
	const eb_bridge_permitted v[] = { { NULL, "a|b" } };
	eb__perm_list             l;

	(void) state;
	assert_int_equal(eb__perm_init(&l, v, 1, "outbound", NULL), 0);
	assert_int_equal(eb__perm_allows(&l, "a"), 1);
	assert_int_equal(eb__perm_allows(&l, "b"), 1);
	assert_int_equal(eb__perm_allows(&l, "ab"), 0);
	assert_int_equal(eb__perm_allows(&l, "xb"), 0);
	assert_int_equal(eb__perm_allows(&l, "ax"), 0);
	eb__perm_free(&l);
}

static void
test_match_all(void **state)
{
	const eb_bridge_permitted v[] = { { "x", NULL }, { NULL, NULL } };
	eb__perm_list             l;

	(void) state;
	assert_int_equal(eb__perm_init(&l, v, 2, "inbound", NULL), 0);
	assert_int_equal(eb__perm_allows(&l, "anything"), 1);
	assert_int_equal(eb__perm_allows(&l, ""), 1);
	eb__perm_free(&l);
}

static void
test_bad_regex(void **state)
{
	const eb_bridge_permitted v[] = { { "ok", NULL }, { NULL, "a(b" } };
	eb__perm_list             l;
	eb_errbuf                 err;

	(void) state;
	memset(&err, 0, sizeof(err));
	assert_int_equal(eb__perm_init(&l, v, 2, "inbound", &err), EB_ECONF);
	assert_non_null(strstr(err.msg, "bridge.inbound[1].addressRegex"));
	assert_null(l.v);
	assert_int_equal(l.n, 0);
}

static void
test_java_dialect(void **state)
{
	/* The Python client suite's Java regex does not compile as POSIX
	 * (\w is not a class in brackets: the range w-_ is reversed)... */
	const eb_bridge_permitted java[] = { { NULL, "[\\w-_ ]*" } };
	/* ...its POSIX spelling does, with the same meaning. */
	const eb_bridge_permitted posix[] = { { NULL, "[[:alnum:]_ -]*" } };
	eb__perm_list             l;

	(void) state;
	assert_int_equal(eb__perm_init(&l, java, 1, "inbound", NULL), EB_ECONF);
	assert_int_equal(eb__perm_init(&l, posix, 1, "inbound", NULL), 0);
	assert_int_equal(eb__perm_allows(&l, "echo-back two_2"), 1);
	assert_int_equal(eb__perm_allows(&l, ""), 1);
	assert_int_equal(eb__perm_allows(&l, "#-Bad_Address$"), 0);
	eb__perm_free(&l);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_denies),
		cmocka_unit_test(test_exact_and_regex),
		cmocka_unit_test(test_alternation_anchored),
		cmocka_unit_test(test_match_all),
		cmocka_unit_test(test_bad_regex),
		cmocka_unit_test(test_java_dialect),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
