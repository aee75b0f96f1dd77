/* Unit tests for the error table and the log line format. */
#include <string.h>

#include <uv.h>

#include <ebnode/err.h>
#include <ebnode/log.h>

#include "tests/harness/th.h"

static void
test_project_codes(void **state)
{
	(void) state;
	assert_string_equal(eb_err_name(EB_EFRAME), "EB_EFRAME");
	assert_string_equal(
	    eb_strerror(EB_EFRAME), "malformed or oversized frame");
	assert_string_equal(eb_err_name(EB_EZKEXPIRED), "EB_EZKEXPIRED");
	assert_string_equal(eb_strerror(0), "success");
}

static void
test_libuv_codes_pass_through(void **state)
{
	(void) state;
	assert_string_equal(eb_err_name(UV_ECONNRESET), "ECONNRESET");
	assert_string_equal(
	    eb_strerror(UV_ECONNRESET), uv_strerror(UV_ECONNRESET));
	assert_string_equal(eb_err_name(-29999), "EB_EUNKNOWN");
}

static void
test_errf(void **state)
{
	eb_errbuf e;

	(void) state;
	assert_int_equal(eb_errf(&e, EB_ECONF, "bad %s", "key"), EB_ECONF);
	assert_string_equal(e.msg, "bad key");
	assert_int_equal(eb_errf(NULL, EB_ECONF, "x"), EB_ECONF);
}

static char last_line[512];

static void
capture_sink(eb_log_level level, const char *line, void *arg)
{
	(void) level;
	(void) arg;
	(void) snprintf(last_line, sizeof(last_line), "%s", line);
}

static int evaluated;

static int
side_effect(void)
{
	evaluated++;
	return 1;
}

static void
test_log_format_and_level(void **state)
{
	(void) state;
	eb_log_set_sink(capture_sink, NULL);
	eb_log_set_level(EB_LOG_LEVEL_INFO);
	EB_LOG_WARN("bridge", "frame-too-big: peer=%s len=%d", "1.2.3.4:5", 9);
	assert_string_equal(
	    last_line, "WARN bridge: frame-too-big: peer=1.2.3.4:5 len=9");
	/* Below the level: arguments are not even evaluated. */
	EB_LOG_DEBUG("bridge", "x=%d", side_effect());
	assert_int_equal(evaluated, 0);
	eb_log_set_sink(NULL, NULL);
}

static void
test_level_parse(void **state)
{
	eb_log_level l;

	(void) state;
	assert_int_equal(eb_log_level_parse("debug", &l), 0);
	assert_int_equal(l, EB_LOG_LEVEL_DEBUG);
	assert_int_equal(eb_log_level_parse("WARN", &l), 0);
	assert_int_equal(l, EB_LOG_LEVEL_WARN);
	assert_int_equal(eb_log_level_parse("loud", &l), EB_ECONF);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_project_codes),
		cmocka_unit_test(test_libuv_codes_pass_through),
		cmocka_unit_test(test_errf),
		cmocka_unit_test(test_log_format_and_level),
		cmocka_unit_test(test_level_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
