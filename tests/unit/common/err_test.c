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

static int  nlines;
static char first_line[256]; /* of the lines since nlines was 0 */

static void
count_sink(eb_log_level level, const char *line, void *arg)
{
	(void) level;
	(void) arg;
	if (nlines++ == 0) {
		(void) snprintf(first_line, sizeof(first_line), "%s", line);
	}
	(void) snprintf(last_line, sizeof(last_line), "%s", line);
}

static void
flood_once(int i)
{
	EB_LOG_RL_WARN("ingress", "hold-expired: count=%d", i);
}

/* Issue 11: a repeated event writes its first EB_LOG_RL_BURST lines per
 * window, then one summary with the count when the next window starts. */
static void
test_log_rate_limited(void **state)
{
	eb_log_rl rl;
	int       i;
	int       admitted = 0;

	(void) state;
	eb_log_set_sink(count_sink, NULL);
	eb_log_set_level(EB_LOG_LEVEL_INFO);
	nlines = 0;
	for (i = 0; i < 1000; i++) {
		flood_once(i);
	}
	assert_int_equal(nlines, (int) EB_LOG_RL_BURST);
	assert_string_equal(last_line, "WARN ingress: hold-expired: count=2");

	memset(&rl, 0, sizeof(rl));
	nlines = 0;
	for (i = 0; i < 10; i++) {
		admitted += eb_log_rl_admit(
		    &rl, EB_LOG_LEVEL_WARN, "zk", "client: %.*s");
	}
	assert_int_equal(admitted, (int) EB_LOG_RL_BURST);
	assert_int_equal(nlines, 0);
	rl.window_ms -= EB_LOG_RL_WINDOW_MS; /* the window has passed */
	assert_int_equal(
	    eb_log_rl_admit(&rl, EB_LOG_LEVEL_WARN, "zk", "client: %.*s"), 1);
	assert_int_equal(nlines, 1);
	assert_non_null(strstr(last_line,
	    "WARN zk: log-suppressed: event=client suppressed=7 window_ms="));
	eb_log_set_sink(NULL, NULL);
}

/* Issue 11: a flood's summary does not wait for the same event to recur:
 * once its window is over, the next line of any other event (rate-limited
 * or not) is preceded by it, and it is written once. */
static void
test_log_rate_limited_flush_on_other_line(void **state)
{
	static eb_log_rl flood;
	static eb_log_rl quiet;
	int              i;

	(void) state;
	eb_log_set_sink(count_sink, NULL);
	eb_log_set_level(EB_LOG_LEVEL_INFO);
	nlines = 0;
	for (i = 0; i < 50; i++) {
		(void) eb_log_rl_admit(
		    &flood, EB_LOG_LEVEL_WARN, "zk", "connect-failed: host=%s");
	}
	EB_LOG_NOTICE("node", "other: n=1");
	assert_int_equal(nlines, 1); /* the window is not over yet */
	assert_string_equal(last_line, "NOTICE node: other: n=1");
	flood.window_ms -= EB_LOG_RL_WINDOW_MS; /* now it is */
	nlines = 0;
	EB_LOG_NOTICE("node", "other: n=2");
	assert_int_equal(nlines, 2);
	assert_non_null(strstr(first_line,
	    "WARN zk: log-suppressed: event=connect-failed suppressed=47 "
	    "window_ms="));
	assert_string_equal(last_line, "NOTICE node: other: n=2");
	/* Written once: neither another line nor the event's return
	 * repeats it. */
	nlines = 0;
	EB_LOG_NOTICE("node", "other: n=3");
	assert_int_equal(eb_log_rl_admit(&flood, EB_LOG_LEVEL_WARN, "zk",
	                     "connect-failed: "),
	    1);
	assert_int_equal(nlines, 1);
	/* A call of another rate-limited key flushes too, even one that is
	 * itself suppressed. */
	for (i = 0; i < 10; i++) {
		(void) eb_log_rl_admit(
		    &flood, EB_LOG_LEVEL_WARN, "zk", "connect-failed: host=%s");
	}
	flood.window_ms -= EB_LOG_RL_WINDOW_MS;
	nlines = 0;
	for (i = 0; i < 4; i++) {
		(void) eb_log_rl_admit(
		    &quiet, EB_LOG_LEVEL_INFO, "ingress", "hold-expired: ");
	}
	assert_int_equal(nlines, 1);
	assert_non_null(strstr(last_line,
	    "WARN zk: log-suppressed: event=connect-failed suppressed=8 "));
	eb_log_set_sink(NULL, NULL);
}

/* Issue 10 item 5: a newline in a logged value cannot start a forged line,
 * and a quoted value cannot forge key=value fields. */
static void
test_log_escapes_control_characters(void **state)
{
	const char *forged = "x\nNOTICE election: elected: epoch=999999 "
	                     "node=forged";

	(void) state;
	eb_log_set_sink(capture_sink, NULL);
	eb_log_set_level(EB_LOG_LEVEL_INFO);
	EB_LOG_WARN("bridge", "access-denied: address=%s", forged);
	assert_null(strchr(last_line, '\n'));
	assert_string_equal(last_line,
	    "WARN bridge: access-denied: address=x\\nNOTICE election: "
	    "elected: epoch=999999 node=forged");
	EB_LOG_WARN("bridge", "x: v=%s", "a\r\tb\x01\x7f");
	assert_string_equal(last_line, "WARN bridge: x: v=a\\r\\tb\\x01\\x7f");
	eb_log_set_sink(NULL, NULL);
}

static void
test_log_quote(void **state)
{
	char q[EB_LOG_QUOTE_MAX];
	char small[12];
	char big[600];

	(void) state;
	assert_string_equal(eb_log_quote(q, sizeof(q), "orders"), "\"orders\"");
	assert_string_equal(
	    eb_log_quote(q, sizeof(q), "a\" b=\\c\n"), "\"a\\\" b=\\\\c\\n\"");
	assert_string_equal(eb_log_quote(q, sizeof(q), NULL), "null");
	assert_string_equal(
	    eb_log_quote_n(q, sizeof(q), "a\0b", 3), "\"a\\x00b\"");
	/* Too long: cut inside the quotes, marked, never past the buffer. */
	assert_string_equal(eb_log_quote(small, sizeof(small), "abcdefghijkl"),
	    "\"abcdef...\"");
	memset(big, '\n', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	(void) eb_log_quote(q, sizeof(q), big);
	assert_true(strlen(q) < sizeof(q));
	assert_null(strchr(q, '\n'));
	assert_string_equal(q + strlen(q) - 4, "...\"");
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
		cmocka_unit_test(test_log_escapes_control_characters),
		cmocka_unit_test(test_log_quote),
		cmocka_unit_test(test_log_rate_limited),
		cmocka_unit_test(test_log_rate_limited_flush_on_other_line),
		cmocka_unit_test(test_level_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
