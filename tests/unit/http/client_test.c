/* Unit tests for http/client.h: the request writer (its lines, no header
 * injection) and the response parser fed in every split, over its head and
 * body bounds, with a chunked body, a body ended by EOF, a response cut
 * short and garbage. */
#include <string.h>

#include "common/buf.h"
#include "http/client.h"
#include "tests/harness/th.h"

static void
test_request_write(void **state)
{
	eb__buf             b;
	eb__http_client_req rq = {
		.method = "POST",
		.target = "/leader/release",
		.host = "127.0.0.1:8080",
		.extra = "X-Ebnode-Admin: 1\r\n",
		.body = "{}",
		.body_len = 2,
	};
	static const char want[] =
	    "POST /leader/release HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
	    "Connection: close\r\nContent-Length: 2\r\nX-Ebnode-Admin: 1\r\n"
	    "\r\n{}";

	(void) state;
	eb__buf_init(&b);
	assert_int_equal(eb__http_request_write(&b, &rq), 0);
	assert_int_equal(eb__buf_avail(&b), sizeof(want) - 1);
	assert_memory_equal(eb__buf_head(&b), want, sizeof(want) - 1);
	b.off = b.len = 0;
	rq.target = "/x\r\nEvil: 1";
	assert_int_equal(eb__http_request_write(&b, &rq), UV_EINVAL);
	rq.target = "/x y";
	assert_int_equal(eb__http_request_write(&b, &rq), UV_EINVAL);
	rq.target = "/x";
	rq.host = "";
	assert_int_equal(eb__http_request_write(&b, &rq), UV_EINVAL);
	assert_int_equal(eb__buf_avail(&b), 0);
	eb__buf_free(&b);
}

static void
test_split_input(void **state)
{
	static const char resp[] =
	    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n5\r\n:true\r\n"
	    "1\r\n}\r\n0\r\n\r\n";
	size_t cut;

	(void) state;
	/* Every split in two, and byte by byte. */
	for (cut = 0; cut <= sizeof(resp) - 1; cut++) {
		eb__http_resp_parser p;
		eb__http_result      r1;
		eb__http_result      r2;

		eb__http_resp_parser_init(&p, 1024, 1024);
		r1 = eb__http_resp_parser_feed(&p, resp, cut);
		assert_int_equal(r1, cut == sizeof(resp) - 1 ? EB_HTTP_RCOMPLETE
		                                             : EB_HTTP_RMORE);
		r2 = eb__http_resp_parser_feed(
		    &p, resp + cut, sizeof(resp) - 1 - cut);
		assert_int_equal(r2, EB_HTTP_RCOMPLETE);
		assert_int_equal(p.status, 200);
		assert_int_equal(eb__buf_avail(&p.body), 10);
		assert_memory_equal(eb__buf_head(&p.body), "{\"a\":true}", 10);
		eb__http_resp_parser_free(&p);
	}
}

static void
test_over_limits(void **state)
{
	eb__http_resp_parser p;
	char                 big[300];

	(void) state;
	/* The head. */
	eb__http_resp_parser_init(&p, 64, 1024);
	memset(big, 'a', sizeof(big));
	assert_int_equal(
	    eb__http_resp_parser_feed(&p, "HTTP/1.1 200 OK\r\nX-Long: ", 25),
	    EB_HTTP_RMORE);
	assert_int_equal(
	    eb__http_resp_parser_feed(&p, big, sizeof(big)), EB_HTTP_RHEAD);
	/* Sticky. */
	assert_int_equal(
	    eb__http_resp_parser_feed(&p, "\r\n\r\n", 4), EB_HTTP_RHEAD);
	eb__http_resp_parser_free(&p);
	/* A declared body over the bound: refused before it comes. */
	eb__http_resp_parser_init(&p, 1024, 16);
	assert_int_equal(
	    eb__http_resp_parser_feed(
	        &p, "HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n", 39),
	    EB_HTTP_RBODY);
	eb__http_resp_parser_free(&p);
	/* A body without a length, over the bound as it comes. */
	eb__http_resp_parser_init(&p, 1024, 16);
	assert_int_equal(
	    eb__http_resp_parser_feed(
	        &p, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", 38),
	    EB_HTTP_RMORE);
	assert_int_equal(eb__http_resp_parser_feed(&p, big, 16), EB_HTTP_RMORE);
	assert_int_equal(eb__http_resp_parser_feed(&p, big, 1), EB_HTTP_RBODY);
	assert_int_equal(eb__buf_avail(&p.body), 16);
	eb__http_resp_parser_free(&p);
}

static void
test_eof_and_garbage(void **state)
{
	eb__http_resp_parser p;

	(void) state;
	/* A body ended by the close. */
	eb__http_resp_parser_init(&p, 1024, 1024);
	assert_int_equal(
	    eb__http_resp_parser_feed(
	        &p, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nab", 40),
	    EB_HTTP_RMORE);
	assert_int_equal(eb__http_resp_parser_eof(&p), EB_HTTP_RCOMPLETE);
	assert_int_equal(p.status, 200);
	assert_int_equal(eb__buf_avail(&p.body), 2);
	eb__http_resp_parser_free(&p);
	/* Cut short: the length said more. */
	eb__http_resp_parser_init(&p, 1024, 1024);
	assert_int_equal(
	    eb__http_resp_parser_feed(
	        &p, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", 40),
	    EB_HTTP_RMORE);
	assert_int_equal(eb__http_resp_parser_eof(&p), EB_HTTP_RBAD);
	eb__http_resp_parser_free(&p);
	/* Nothing at all. */
	eb__http_resp_parser_init(&p, 1024, 1024);
	assert_int_equal(eb__http_resp_parser_eof(&p), EB_HTTP_RBAD);
	eb__http_resp_parser_free(&p);
	/* Garbage. */
	eb__http_resp_parser_init(&p, 1024, 1024);
	assert_int_equal(
	    eb__http_resp_parser_feed(&p, "garbage\r\n\r\n", 11), EB_HTTP_RBAD);
	eb__http_resp_parser_free(&p);
	/* A status code of two digits (http_fuzz found it complete at EOF
	 * with status 20), and one of four. */
	eb__http_resp_parser_init(&p, 1024, 1024);
	assert_int_equal(
	    eb__http_resp_parser_feed(&p, "HTTP/1.1 20 O\r\n\r\nx", 20),
	    EB_HTTP_RBAD);
	assert_int_equal(eb__http_resp_parser_eof(&p), EB_HTTP_RBAD);
	eb__http_resp_parser_free(&p);
	eb__http_resp_parser_init(&p, 1024, 1024);
	assert_int_equal(
	    eb__http_resp_parser_feed(&p, "HTTP/1.1 2000 O\r\n\r\n", 21),
	    EB_HTTP_RBAD);
	eb__http_resp_parser_free(&p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_write),
		cmocka_unit_test(test_split_input),
		cmocka_unit_test(test_over_limits),
		cmocka_unit_test(test_eof_and_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
