/* Unit tests for http/reader.h and http/response.h: the captured headers
 * (also when names and values arrive in pieces), the limits (431 for the
 * target, the head and the header count, 413 for the body and its
 * Content-Length, 400 for garbage), pipelined requests held behind a
 * complete one, keep-alive, the body callback and its refusal, the
 * response head and the status table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "http/reader.h"
#include "http/response.h"
#include "tests/harness/th.h"

typedef struct body_sink {
	char   b[256];
	size_t len;
	int    refuse; /* refuse once this many bytes are kept */
} body_sink;

static int
sink_cb(eb__http_reader *r, const char *at, size_t n, void *arg)
{
	body_sink *s = arg;

	(void) r;
	if (s->refuse != 0 && s->len + n > (size_t) s->refuse) {
		return 1;
	}
	assert_true(s->len + n < sizeof(s->b));
	memcpy(s->b + s->len, at, n);
	s->len += n;
	s->b[s->len] = '\0';
	return 0;
}

static const eb__http_limits lim = {
	.max_url = 64,
	.max_head = 512,
	.max_headers = 8,
	.max_body = 100,
	.max_auth = 32,
};

/* Frees r (all zero bytes at first) and sets it up again. */
static void
reset(eb__http_reader *r, const eb__http_limits *l, eb__http_body_cb cb,
    void *arg)
{
	eb__http_reader_free(r);
	eb__http_reader_init(r, l, cb, arg);
}

static eb__http_result
feed_str(eb__http_reader *r, const char *s, size_t *used)
{
	return eb__http_reader_feed(r, s, strlen(s), used);
}

static void
test_headers_captured(void **state)
{
	static const char req[] =
	    "POST /nodes?x=1 HTTP/1.1\r\nHost: h:1\r\nOrigin: http://h:1\r\n"
	    "sec-fetch-site: same-origin\r\nX-Ebnode-Admin: 1\r\n"
	    "Authorization: Bearer tok\r\nUpgrade: websocket\r\n"
	    "Sec-WebSocket-Key: k==\r\nContent-Length: 5\r\n\r\nhello";
	eb__http_reader r;
	body_sink       sink = { .len = 0 };
	char            path[EB__HTTP_URL_MAX + 1];
	char            query[EB__HTTP_URL_MAX + 1];
	size_t          used;
	size_t          i;

	(void) state;
	memset(&r, 0, sizeof(r));
	/* Byte by byte: names and values come in pieces. */
	reset(&r, &lim, sink_cb, &sink);
	for (i = 0; i + 1 < sizeof(req) - 1; i++) {
		assert_int_equal(
		    eb__http_reader_feed(&r, req + i, 1, &used), EB_HTTP_RMORE);
		assert_int_equal(used, 1);
		assert_true(r.started_ms != 0);
	}
	assert_int_equal(
	    eb__http_reader_feed(&r, req + i, 1, &used), EB_HTTP_RCOMPLETE);
	assert_int_equal(r.started_ms, 0);
	assert_string_equal(eb__http_reader_method(&r), "POST");
	assert_true(eb__http_reader_method_is(&r, "POST"));
	assert_string_equal(eb__http_reader_url(&r), "/nodes?x=1");
	assert_int_equal(eb__http_reader_target(&r, path, query), 0);
	assert_string_equal(path, "/nodes");
	assert_string_equal(query, "x=1");
	assert_string_equal(r.browser.host.v, "h:1");
	assert_string_equal(r.browser.origin.v, "http://h:1");
	assert_string_equal(r.browser.site.v, "same-origin");
	assert_string_equal(r.browser.csrf.v, "1");
	assert_string_equal(r.auth, "Bearer tok");
	assert_string_equal(r.upgrade.v, "websocket");
	assert_string_equal(r.ws_key.v, "k==");
	assert_false(r.ws_version.seen);
	assert_int_equal(eb__http_reader_content_length(&r), 5);
	assert_string_equal(sink.b, "hello");
	assert_true(eb__http_reader_keep_alive(&r));
	eb__http_reader_free(&r);
}

static void
test_limits(void **state)
{
	eb__http_reader r;
	char            big[700];
	size_t          used;
	int             i;

	(void) state;
	memset(&r, 0, sizeof(r));
	/* The target. */
	reset(&r, &lim, NULL, NULL);
	(void) snprintf(big, sizeof(big), "GET /%0*d HTTP/1.1\r\n\r\n", 80, 0);
	assert_int_equal(feed_str(&r, big, &used), EB_HTTP_RHEAD);
	assert_int_equal(eb__http_result_status(EB_HTTP_RHEAD), 431);
	/* The head bytes. */
	reset(&r, &lim, NULL, NULL);
	(void) snprintf(
	    big, sizeof(big), "GET / HTTP/1.1\r\nX-A: %0*d\r\n\r\n", 600, 0);
	assert_int_equal(feed_str(&r, big, &used), EB_HTTP_RHEAD);
	/* The header count: 8 pass, 9 do not. */
	for (i = 8; i <= 9; i++) {
		char req[512];
		int  n = snprintf(req, sizeof(req), "GET / HTTP/1.1\r\n");
		int  k;

		for (k = 0; k < i; k++) {
			n += snprintf(req + n, sizeof(req) - (size_t) n,
			    "X-%d: v\r\n", k);
		}
		(void) snprintf(req + n, sizeof(req) - (size_t) n, "\r\n");
		reset(&r, &lim, NULL, NULL);
		assert_int_equal(feed_str(&r, req, &used),
		    i == 8 ? EB_HTTP_RCOMPLETE : EB_HTTP_RHEAD);
	}
	/* The declared body, refused before a byte of it. */
	reset(&r, &lim, NULL, NULL);
	assert_int_equal(
	    feed_str(
	        &r, "POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", &used),
	    EB_HTTP_RBODY);
	assert_int_equal(eb__http_result_status(EB_HTTP_RBODY), 413);
	/* A chunked body over the bound. */
	reset(&r, &lim, NULL, NULL);
	(void) snprintf(big, sizeof(big),
	    "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n%0*d"
	    "\r\n0\r\n\r\n",
	    101, 0);
	assert_int_equal(feed_str(&r, big, &used), EB_HTTP_RBODY);
	/* Garbage. */
	reset(&r, &lim, NULL, NULL);
	assert_int_equal(
	    feed_str(&r, "\x01\x02 not http\r\n\r\n", &used), EB_HTTP_RBAD);
	assert_int_equal(eb__http_result_status(EB_HTTP_RBAD), 400);
	assert_string_not_equal(eb__http_reader_error(&r), "HPE_OK");
	eb__http_reader_free(&r);
}

static void
test_overlong_value_marked(void **state)
{
	eb__http_reader r;
	char            req[800];
	eb__http_limits l = lim;
	size_t          used;

	(void) state;
	memset(&r, 0, sizeof(r));
	l.max_head = 2000;
	reset(&r, &l, NULL, NULL);
	(void) snprintf(req, sizeof(req),
	    "GET / HTTP/1.1\r\nOrigin: http://%0*d\r\n\r\n", 300, 0);
	assert_int_equal(feed_str(&r, req, &used), EB_HTTP_RCOMPLETE);
	assert_true(r.browser.origin.seen);
	assert_true(r.browser.origin.over);
	/* Authorization over its bound (32 here) is marked, not kept. */
	reset(&r, &l, NULL, NULL);
	assert_int_equal(feed_str(&r,
	                     "GET / HTTP/1.1\r\nAuthorization: Bearer "
	                     "0123456789012345678901234567890\r\n\r\n",
	                     &used),
	    EB_HTTP_RCOMPLETE);
	assert_true(r.auth_over);
	assert_int_equal(r.auth_len, 0);
	eb__http_reader_free(&r);
}

static void
test_pipelined_and_keep_alive(void **state)
{
	static const char two[] =
	    "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
	    "POST /b HTTP/1.1\r\nContent-Length: 3\r\nConnection: close\r\n"
	    "\r\nxyz";
	eb__http_reader r;
	body_sink       sink = { .len = 0 };
	size_t          used;
	size_t          first;

	(void) state;
	memset(&r, 0, sizeof(r));
	reset(&r, &lim, sink_cb, &sink);
	assert_int_equal(feed_str(&r, two, &used), EB_HTTP_RCOMPLETE);
	/* Stopped after the first: the second is left to the caller. */
	first = strlen("GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
	assert_int_equal(used, first);
	assert_string_equal(eb__http_reader_url(&r), "/a");
	assert_true(eb__http_reader_keep_alive(&r));
	assert_int_equal(sink.len, 0);
	assert_int_equal(eb__http_reader_feed(
	                     &r, two + first, sizeof(two) - 1 - first, &used),
	    EB_HTTP_RCOMPLETE);
	assert_int_equal(used, sizeof(two) - 1 - first);
	assert_string_equal(eb__http_reader_url(&r), "/b");
	assert_false(r.browser.host.seen); /* per request */
	assert_false(eb__http_reader_keep_alive(&r));
	assert_string_equal(sink.b, "xyz");
	/* HTTP/1.0 closes unless asked. */
	reset(&r, &lim, NULL, NULL);
	assert_int_equal(
	    feed_str(&r, "GET / HTTP/1.0\r\n\r\n", &used), EB_HTTP_RCOMPLETE);
	assert_false(eb__http_reader_keep_alive(&r));
	eb__http_reader_free(&r);
}

static void
test_trailers_not_headers(void **state)
{
	static const char req[] =
	    "POST /t HTTP/1.1\r\nOrigin: http://good\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n"
	    "Origin: http://evil\r\nAuthorization: Bearer x\r\n\r\n";
	eb__http_reader r;
	body_sink       sink = { .len = 0 };
	size_t          used;

	(void) state;
	memset(&r, 0, sizeof(r));
	reset(&r, &lim, sink_cb, &sink);
	assert_int_equal(feed_str(&r, req, &used), EB_HTTP_RCOMPLETE);
	assert_string_equal(r.browser.origin.v, "http://good");
	assert_int_equal(r.auth_len, 0);
	assert_string_equal(sink.b, "abc");
	assert_int_equal(eb__http_reader_content_length(&r), UINT64_MAX);
	eb__http_reader_free(&r);
}

static void
test_body_refused(void **state)
{
	eb__http_reader r;
	body_sink       sink = { .refuse = 2 };
	size_t          used;

	(void) state;
	memset(&r, 0, sizeof(r));
	reset(&r, &lim, sink_cb, &sink);
	assert_int_equal(
	    feed_str(
	        &r, "POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nabcd", &used),
	    EB_HTTP_RREFUSED);
	assert_int_equal(sink.len, 0);
	eb__http_reader_free(&r);
}

static void
test_response_head(void **state)
{
	eb__buf            b;
	eb__http_resp_head h = {
		.status = 431,
		.content_type = "text/plain",
		.connection = "close",
		.extra = "X-A: 1\r\n",
	};
	static const char want[] =
	    "HTTP/1.1 431 Request Header Fields Too Large\r\n"
	    "Content-Type: text/plain\r\nContent-Length: 2\r\n"
	    "Connection: close\r\nX-A: 1\r\n\r\nno";
	char cors[128];

	(void) state;
	eb__buf_init(&b);
	eb__http_response_write(&b, &h, "no", 2, 0);
	assert_int_equal(eb__buf_avail(&b), sizeof(want) - 1);
	assert_memory_equal(eb__buf_head(&b), want, sizeof(want) - 1);
	/* HEAD: the length, never the body. */
	b.off = b.len = 0;
	eb__http_response_write(&b, &h, "no", 2, 1);
	assert_int_equal(eb__buf_avail(&b), sizeof(want) - 3);
	/* Chunked: no length. */
	b.off = b.len = 0;
	h.status = 200;
	h.chunked = 1;
	h.extra = NULL;
	h.connection = NULL;
	eb__http_head_write(&b, &h);
	eb__buf_append(&b, "", 1);
	assert_string_equal(eb__buf_head(&b),
	    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n");
	eb__buf_free(&b);
	assert_string_equal(eb__http_status_text(413), "Payload Too Large");
	assert_string_equal(eb__http_status_text(299), "Internal Server Error");
	eb__http_cors_echo("http://a", cors, sizeof(cors));
	assert_non_null(strstr(cors, "Access-Control-Allow-Origin: http://a"));
	eb__http_cors_echo(NULL, cors, sizeof(cors));
	assert_non_null(strstr(cors, "Access-Control-Allow-Origin: *\r\n"));
	eb__http_cors_echo("http://a", cors, 8);
	assert_string_equal(cors, "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_headers_captured),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_overlong_value_marked),
		cmocka_unit_test(test_pipelined_and_keep_alive),
		cmocka_unit_test(test_trailers_not_headers),
		cmocka_unit_test(test_body_refused),
		cmocka_unit_test(test_response_head),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
