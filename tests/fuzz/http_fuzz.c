/*
 * libFuzzer target: the http/ parsers. The input is fed, in chunks whose
 * sizes come from the input itself, to the request reader (small bounds,
 * a body callback that counts) with pipelined requests fed again from
 * where the last one stopped, as the servers do; and the same bytes to
 * the client's response parser. Nothing may crash, leak or read out of
 * bounds; the reader must never take more bytes than it was given, keep a
 * target or a body over its bounds, or leave a captured header without its
 * NUL.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/client.h"
#include "http/reader.h"

/* libFuzzer's names. */
/* NOLINTNEXTLINE(readability-identifier-naming) */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
count_cb(eb__http_reader *r, const char *at, size_t n, void *arg)
{
	size_t *body = arg;

	(void) r;
	(void) at;
	*body += n;
	return *body > 100000 ? 1 : 0;
}

static void
check_hdr(const eb__http_hdr *h)
{
	if (h->len > EB__HTTP_HDR_MAX || h->v[h->len] != '\0') {
		abort();
	}
}

static void
check_request(const eb__http_reader *r, size_t body, size_t max_body)
{
	char path[EB__HTTP_URL_MAX + 1];
	char query[EB__HTTP_URL_MAX + 1];

	if (r->url_len > r->lim.max_url || strlen(r->url) != r->url_len ||
	    body > max_body) {
		abort();
	}
	check_hdr(&r->browser.origin);
	check_hdr(&r->browser.host);
	check_hdr(&r->upgrade);
	check_hdr(&r->ws_key);
	if (r->auth_len > r->lim.max_auth) {
		abort();
	}
	(void) eb__http_reader_target(r, path, query);
	(void) eb__http_reader_method(r);
	(void) eb__http_reader_keep_alive(r);
}

/* The next chunk size from the input's first byte (1..64). */
static size_t
chunk_of(const uint8_t *data, size_t size)
{
	return size == 0 ? 1 : (size_t) (data[0] % 64) + 1;
}

static void
fuzz_reader(const char *p, size_t n, size_t step)
{
	static const eb__http_limits lim = {
		.max_url = 256,
		.max_head = 1024,
		.max_headers = 16,
		.max_body = 4096,
		.max_auth = 64,
	};
	eb__http_reader r;
	size_t          body = 0;

	eb__http_reader_init(&r, &lim, count_cb, &body);
	while (n > 0) {
		size_t          k = step < n ? step : n;
		size_t          used = 0;
		eb__http_result res = eb__http_reader_feed(&r, p, k, &used);

		if (used > k) {
			abort();
		}
		if (res < 0) {
			(void) eb__http_result_status(res);
			break; /* answered and closed */
		}
		if (res == EB_HTTP_RCOMPLETE) {
			check_request(&r, body, lim.max_body);
			body = 0;
		} else if (used != k) {
			abort(); /* a partial request is always taken whole */
		}
		p += used;
		n -= used;
	}
	eb__http_reader_free(&r);
}

static void
fuzz_client(const char *p, size_t n, size_t step)
{
	eb__http_resp_parser rp;
	eb__http_result      res = EB_HTTP_RMORE;

	eb__http_resp_parser_init(&rp, 1024, 4096);
	while (n > 0 && res == EB_HTTP_RMORE) {
		size_t k = step < n ? step : n;

		res = eb__http_resp_parser_feed(&rp, p, k);
		p += k;
		n -= k;
	}
	if (res == EB_HTTP_RMORE) {
		res = eb__http_resp_parser_eof(&rp);
	}
	if (eb__buf_avail(&rp.body) > 4096 ||
	    (res == EB_HTTP_RCOMPLETE && rp.status < 100)) {
		abort();
	}
	eb__http_resp_parser_free(&rp);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t step = chunk_of(data, size);

	if (size > 0) {
		data++;
		size--;
	}
	fuzz_reader((const char *) data, size, step);
	fuzz_client((const char *) data, size, step);
	return 0;
}
