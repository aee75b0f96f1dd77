/* Unit tests for admin/origin.h: admin.cors_origins (the lists accepted:
 * separators, schemes, ports, IPv6; every malformed origin refused with a
 * reason; the bound on their number and length; exact matching), and the
 * browser decisions: which writes are cross-site (a table of header sets,
 * with and without a token and a configured origin), the CORS headers,
 * values split in pieces and overlong values. */
#include <stdio.h>
#include <string.h>

#include "http/origin.h"
#include "tests/harness/th.h"

static void
test_parse_and_match(void **state)
{
	eb__http_origins o;
	char             why[160];

	(void) state;
	assert_int_equal(eb__http_origins_parse(NULL, &o, why, sizeof(why)), 0);
	assert_int_equal(o.n, 0);
	assert_int_equal(
	    eb__http_origins_parse(" ,, ", &o, why, sizeof(why)), 0);
	assert_int_equal(o.n, 0);
	assert_int_equal(
	    eb__http_origins_parse("http://a.example, https://b.example:8443\t"
	                           "http://[::1]:7100,http://127.0.0.1",
	        &o, why, sizeof(why)),
	    0);
	assert_int_equal(o.n, 4);
	assert_true(eb__http_origins_has(&o, "http://a.example", 16));
	assert_true(eb__http_origins_has(&o, "http://[::1]:7100", 17));
	assert_false(eb__http_origins_has(&o, "http://a.example:80", 19));
	assert_false(eb__http_origins_has(&o, "https://a.example", 17));
	assert_false(eb__http_origins_has(&o, "http://a.exampl", 15));
	eb__http_origins_free(&o);
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
	eb__http_origins         o;
	char                     why[160];
	char                     many[2048];
	size_t                   used;
	char                     longest[400];
	size_t                   i;

	(void) state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		assert_int_equal(
		    eb__http_origins_check(bad[i], why, sizeof(why)), -1);
		assert_non_null(strstr(why, "not an origin"));
	}
	used = 0;
	for (i = 0; i <= EB_HTTP_MAX_ORIGINS; i++) {
		int n = snprintf(
		    many + used, sizeof(many) - used, "http://h%zu ", i);

		assert_true(n > 0 && (size_t) n < sizeof(many) - used);
		used += (size_t) n;
	}
	assert_int_equal(
	    eb__http_origins_parse(many, &o, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "more than"));
	assert_int_equal(o.n, 0);
	memset(longest, 'a', sizeof(longest));
	memcpy(longest, "http://", 7);
	longest[EB_HTTP_ORIGIN_MAX + 1] = '\0';
	assert_int_equal(eb__http_origins_check(longest, why, sizeof(why)), -1);
	longest[EB_HTTP_ORIGIN_MAX] = '\0';
	assert_int_equal(eb__http_origins_check(longest, why, sizeof(why)), 0);
}

/* A browser header set: NULL leaves a header out. */
static void
browser(eb__http_browser *b, const char *origin, const char *site,
    const char *host, const char *csrf)
{
	memset(b, 0, sizeof(*b));
	if (origin != NULL) {
		eb__http_hdr_append(&b->origin, origin, strlen(origin));
	}
	if (site != NULL) {
		eb__http_hdr_append(&b->site, site, strlen(site));
	}
	if (host != NULL) {
		eb__http_hdr_append(&b->host, host, strlen(host));
	}
	if (csrf != NULL) {
		eb__http_hdr_append(&b->csrf, csrf, strlen(csrf));
	}
}

static void
test_cross_site(void **state)
{
	static const struct {
		const char *origin, *site, *host, *csrf;
		int         token;
		int         refused;
	} cases[] = {
		/* the request, with and without the token */
		{ "http://evil.example", "cross-site", "h:1", NULL, 0, 1 },
		{ "http://evil.example", "cross-site", "h:1", NULL, 1, 1 },
		{ "http://evil.example", NULL, "h:1", "1", 0, 1 },
		{ NULL, "cross-site", "h:1", "1", 0, 1 },
		{ NULL, "same-site", "h:1", "1", 0, 1 },
		{ "null", NULL, "h:1", "1", 0, 1 },
		{ "http://h:12", NULL, "h:1", "1", 0, 1 },
		{ "https://h:1", NULL, "h:1", "1", 0, 1 },
		{ "http://h:1", NULL, NULL, "1", 0, 1 }, /* no Host: foreign */
		{ NULL, NULL, "h:1", NULL, 0, 1 },       /* no CSRF header */
		{ NULL, NULL, "h:1", "", 0, 1 },
		/* allowed */
		{ NULL, NULL, "h:1", "1", 0, 0 },
		{ NULL, NULL, "h:1", NULL, 1, 0 },
		{ "http://H:1", "same-origin", "h:1", "1", 0, 0 },
		{ NULL, "none", "h:1", "1", 0, 0 },
		{ "http://good.example", "cross-site", "h:1", "1", 0, 0 },
		{ "http://good.example", "cross-site", "h:1", NULL, 1, 0 },
		{ "http://good.example", "cross-site", "h:1", NULL, 0, 1 },
	};
	eb__http_origins o;
	eb__http_browser b;
	char             why[160];
	size_t           i;

	(void) state;
	assert_int_equal(
	    eb__http_origins_parse("http://good.example", &o, why, sizeof(why)),
	    0);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *r;

		browser(&b, cases[i].origin, cases[i].site, cases[i].host,
		    cases[i].csrf);
		r = eb__http_cross_site(&b, &o, cases[i].token);
		if ((r != NULL) != cases[i].refused) {
			fail_msg("case %zu: %s", i, r != NULL ? r : "allowed");
		}
	}
	eb__http_origins_free(&o);
}

static void
test_cors_and_pieces(void **state)
{
	eb__http_origins o;
	eb__http_browser b;
	char             out[400];
	char             why[160];
	char             big[300];

	(void) state;
	assert_int_equal(
	    eb__http_origins_parse("http://good.example", &o, why, sizeof(why)),
	    0);
	browser(&b, "http://evil.example", NULL, "h:1", NULL);
	eb__http_cors(&b, &o, 0, out, sizeof(out));
	assert_string_equal(out, "");
	eb__http_cors(&b, &o, 1, out, sizeof(out));
	assert_string_equal(out, "Access-Control-Allow-Origin: *\r\n");
	/* The value in two pieces, as it may arrive across reads. */
	browser(&b, NULL, NULL, "h:1", NULL);
	eb__http_hdr_append(&b.origin, "http://good", 11);
	eb__http_hdr_append(&b.origin, ".example", 8);
	eb__http_cors(&b, &o, 0, out, sizeof(out));
	assert_string_equal(out, "Access-Control-Allow-Origin: "
	                         "http://good.example\r\nVary: Origin\r\n");
	assert_true(eb__http_origin_configured(&b, &o));
	/* Overlong: kept as over, matching nothing, still foreign. */
	memset(big, 'a', sizeof(big));
	memset(&b, 0, sizeof(b));
	eb__http_hdr_append(&b.origin, big, sizeof(big));
	assert_true(b.origin.seen && b.origin.over);
	assert_false(eb__http_origin_configured(&b, &o));
	assert_non_null(eb__http_cross_site(&b, &o, 1));
	eb__http_origins_free(&o);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_and_match),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_cross_site),
		cmocka_unit_test(test_cors_and_pieces),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
