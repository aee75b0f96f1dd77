/* Unit tests for ebctl's HTTP response parsing (ctl/http.c). */
#include <string.h>

#include "ctl/ctl.h"
#include "tests/harness/th.h"

static int
parse_str(const char *s, ctl_http_resp *r)
{
	return eb__ctl_http_parse(s, strlen(s), r);
}

static void
test_content_length(void **state)
{
	ctl_http_resp r;

	(void) state;
	assert_int_equal(parse_str("HTTP/1.1 200 OK\r\nContent-Type: "
	                           "application/json\r\nContent-Length: "
	                           "11\r\n\r\n{\"a\":true}\n",
	                     &r),
	    0);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, 11);
	assert_string_equal(r.body, "{\"a\":true}\n");
	eb__ctl_http_resp_free(&r);
	assert_null(r.body);
}

static void
test_chunked_and_status(void **state)
{
	ctl_http_resp r;

	(void) state;
	assert_int_equal(parse_str("HTTP/1.1 503 Service Unavailable\r\n"
	                           "Transfer-Encoding: chunked\r\n\r\n"
	                           "4\r\n{\"s\"\r\n5\r\n:\"x\"}\r\n0\r\n\r\n",
	                     &r),
	    0);
	assert_int_equal(r.status, 503);
	assert_string_equal(r.body, "{\"s\":\"x\"}");
	eb__ctl_http_resp_free(&r);
}

static void
test_empty_body(void **state)
{
	ctl_http_resp r;

	(void) state;
	assert_int_equal(parse_str("HTTP/1.1 204 No Content\r\n\r\n", &r), 0);
	assert_int_equal(r.status, 204);
	assert_int_equal(r.body_len, 0);
	assert_string_equal(r.body, "");
	eb__ctl_http_resp_free(&r);
}

static void
test_incomplete_and_malformed(void **state)
{
	ctl_http_resp r;

	(void) state;
	assert_int_equal(parse_str("HTTP/1.1 200 OK\r\nContent-Length: "
	                           "10\r\n\r\n{\"a\"",
	                     &r),
	    1);
	assert_int_equal(parse_str("HTTP/1.1 200 OK\r\nContent-Le", &r), 1);
	assert_int_equal(parse_str("", &r), 1);
	assert_int_equal(parse_str("garbage\r\n\r\n", &r), -1);
	assert_int_equal(parse_str("HTTP/1.1 abc OK\r\n\r\n", &r), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_content_length),
		cmocka_unit_test(test_chunked_and_status),
		cmocka_unit_test(test_empty_body),
		cmocka_unit_test(test_incomplete_and_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
