/* Unit tests for the Prometheus text writer (admin/prom.h): HELP/TYPE
 * lines, label value and HELP escaping, u64 and f64 samples, and the
 * table writers (one struct, field sets, rows, samples only, fields of
 * every size and doubles, the histogram). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "admin/prom.h"
#include "tests/harness/th.h"

/* w's text as a NUL-terminated string (static buffer). */
static const char *
text(eb__prom *w)
{
	static char s[4096];

	assert_true(eb__prom_len(w) < sizeof(s));
	memcpy(s, eb__prom_data(w), eb__prom_len(w));
	s[eb__prom_len(w)] = '\0';
	return s;
}

static void
test_family_lines(void **state)
{
	eb__prom w;

	(void) state;
	eb__prom_init(&w);
	eb__prom_family(&w, "ebnode_x_total", "counter", "Things counted.");
	assert_string_equal(text(&w), "# HELP ebnode_x_total Things counted.\n"
	                              "# TYPE ebnode_x_total counter\n");
	eb__prom_free(&w);
}

static void
test_help_escaping(void **state)
{
	eb__prom w;

	(void) state;
	eb__prom_init(&w);
	/* HELP escapes backslash and newline, never the double quote. */
	eb__prom_family(&w, "g", "gauge", "a\\b\nc \"q\"");
	assert_string_equal(
	    text(&w), "# HELP g a\\\\b\\nc \"q\"\n# TYPE g gauge\n");
	eb__prom_free(&w);
}

static void
test_label_escaping(void **state)
{
	eb__prom    w;
	const char *l[] = { "address", "a\"b\\c\nd", "kind", "sent", NULL };

	(void) state;
	eb__prom_init(&w);
	eb__prom_u64(&w, "m", l, 7);
	assert_string_equal(
	    text(&w), "m{address=\"a\\\"b\\\\c\\nd\",kind=\"sent\"} 7\n");
	eb__prom_free(&w);
}

static void
test_samples(void **state)
{
	eb__prom    w;
	const char *none[] = { NULL };
	const char *le[] = { "le", "+Inf", NULL };

	(void) state;
	eb__prom_init(&w);
	eb__prom_u64(&w, "a", NULL, UINT64_MAX);
	eb__prom_u64(&w, "b", none, 0);
	eb__prom_f64(&w, "c", NULL, 1.5);
	eb__prom_f64(&w, "d", le, 0.000123456789012);
	eb__prom_f64(&w, "e", NULL, 0.0);
	assert_string_equal(text(&w), "a 18446744073709551615\n"
	                              "b 0\n"
	                              "c 1.5\n"
	                              "d{le=\"+Inf\"} 0.000123456789\n"
	                              "e 0\n");
	eb__prom_free(&w);
}

static void
test_one(void **state)
{
	eb__prom w;

	(void) state;
	eb__prom_init(&w);
	eb__prom_one(&w, "ebnode_up", "gauge", "Up.", 1);
	assert_string_equal(text(&w), "# HELP ebnode_up Up.\n"
	                              "# TYPE ebnode_up gauge\n"
	                              "ebnode_up 1\n");
	eb__prom_free(&w);
}

/* ---- tables ---- */

typedef struct src {
	uint64_t a;
	uint32_t b;
	int      up;
	bool     flag;
	uint16_t small;
	uint8_t  tiny;
	double   secs;
	uint64_t kinds[2];
} src;

static const eb__prom_field kinds[] = {
	{ "sent", EB__PROM_AT(src, kinds[0]) },
	{ "got", EB__PROM_AT(src, kinds[1]) },
};

static const eb__prom_desc fams[] = {
	EB__PROM_ONE("t_a_total", "counter", "A.", EB__PROM_AT(src, a)),
	EB__PROM_SET("t_kinds_total", "counter", "By kind.", "kind", kinds),
	EB__PROM_ONE("t_b", "gauge", "B.", EB__PROM_AT(src, b)),
	EB__PROM_ONE("t_up", "gauge", "Up.", EB__PROM_AT(src, up)),
	EB__PROM_ONE("t_flag", "gauge", "Flag.", EB__PROM_AT(src, flag)),
	EB__PROM_ONE("t_small", "gauge", "Small.", EB__PROM_AT(src, small)),
	EB__PROM_ONE("t_tiny", "gauge", "Tiny.", EB__PROM_AT(src, tiny)),
	EB__PROM_ONE("t_secs", "gauge", "Secs.", EB__PROM_AT_F64(src, secs)),
};

static void
test_write_table(void **state)
{
	eb__prom w;
	src s = { UINT64_MAX, 4000000000U, 1, true, 65535, 200, 2.5, { 3, 4 } };

	(void) state;
	eb__prom_init(&w);
	eb__prom_write(&w, fams, EB__PROM_LEN(fams), &s);
	assert_string_equal(text(&w),
	    "# HELP t_a_total A.\n# TYPE t_a_total counter\n"
	    "t_a_total 18446744073709551615\n"
	    "# HELP t_kinds_total By kind.\n# TYPE t_kinds_total counter\n"
	    "t_kinds_total{kind=\"sent\"} 3\n"
	    "t_kinds_total{kind=\"got\"} 4\n"
	    "# HELP t_b B.\n# TYPE t_b gauge\nt_b 4000000000\n"
	    "# HELP t_up Up.\n# TYPE t_up gauge\nt_up 1\n"
	    "# HELP t_flag Flag.\n# TYPE t_flag gauge\nt_flag 1\n"
	    "# HELP t_small Small.\n# TYPE t_small gauge\nt_small 65535\n"
	    "# HELP t_tiny Tiny.\n# TYPE t_tiny gauge\nt_tiny 200\n"
	    "# HELP t_secs Secs.\n# TYPE t_secs gauge\nt_secs 2.5\n");
	eb__prom_free(&w);
}

static void
test_fields_only(void **state)
{
	eb__prom w;
	src      s = { 0, 0, 0, false, 0, 0, 0.0, { 7, 0 } };

	(void) state;
	eb__prom_init(&w);
	eb__prom_fields(
	    &w, "t_errors_total", "type", kinds, EB__PROM_LEN(kinds), &s);
	assert_string_equal(text(&w), "t_errors_total{type=\"sent\"} 7\n"
	                              "t_errors_total{type=\"got\"} 0\n");
	eb__prom_free(&w);
}

typedef struct row {
	const char *peer;
	uint64_t    up;
	uint64_t    kinds[2];
} row;

static const eb__prom_field row_kinds[] = {
	{ "in", EB__PROM_AT(row, kinds[0]) },
	{ "out", EB__PROM_AT(row, kinds[1]) },
};

static const eb__prom_desc row_fams[] = {
	EB__PROM_ONE("t_link_up", "gauge", "Up.", EB__PROM_AT(row, up)),
	EB__PROM_SET(
	    "t_frames_total", "counter", "Frames.", "direction", row_kinds),
};

static void
test_write_rows(void **state)
{
	eb__prom w;
	row      rs[] = { { "a\"1", 1, { 10, 11 } }, { "b", 0, { 20, 21 } } };
	eb__prom_rows r = { "peer", offsetof(row, peer), rs, sizeof(rs[0]), 2 };

	(void) state;
	eb__prom_init(&w);
	eb__prom_write_rows(&w, row_fams, EB__PROM_LEN(row_fams), &r);
	/* Each family once, over all rows (one contiguous group); the row's
	 * label first, escaped like any label value. */
	assert_string_equal(text(&w),
	    "# HELP t_link_up Up.\n# TYPE t_link_up gauge\n"
	    "t_link_up{peer=\"a\\\"1\"} 1\n"
	    "t_link_up{peer=\"b\"} 0\n"
	    "# HELP t_frames_total Frames.\n# TYPE t_frames_total counter\n"
	    "t_frames_total{peer=\"a\\\"1\",direction=\"in\"} 10\n"
	    "t_frames_total{peer=\"a\\\"1\",direction=\"out\"} 11\n"
	    "t_frames_total{peer=\"b\",direction=\"in\"} 20\n"
	    "t_frames_total{peer=\"b\",direction=\"out\"} 21\n");
	eb__prom_free(&w);

	/* No rows: the headers alone. */
	r.n = 0;
	r.base = NULL;
	eb__prom_init(&w);
	eb__prom_write_rows(&w, row_fams, EB__PROM_LEN(row_fams), &r);
	assert_string_equal(text(&w),
	    "# HELP t_link_up Up.\n# TYPE t_link_up gauge\n"
	    "# HELP t_frames_total Frames.\n# TYPE t_frames_total counter\n");
	eb__prom_free(&w);
}

static void
test_hist(void **state)
{
	eb__prom    w;
	eb__hist    h;
	const char *t;
	char        line[128];
	size_t      i;

	(void) state;
	eb__hist_init(&h);
	eb__hist_record_ns(&h, 1500000000ULL); /* 1.5 s */
	eb__prom_init(&w);
	eb__prom_hist(&w, "t_seconds", "Latency.", &h);
	t = text(&w);
	assert_non_null(
	    strstr(t, "# HELP t_seconds Latency.\n# TYPE t_seconds histogram\n"
	              "t_seconds_bucket{le=\""));
	for (i = 0; i < EB__HIST_BUCKETS; i++) {
		(void) snprintf(line, sizeof(line),
		    "t_seconds_bucket{le=\"%s\"} %llu\n",
		    eb__hist_bound_label(i),
		    (unsigned long long) eb__hist_cumulative(&h, i));
		assert_non_null(strstr(t, line));
	}
	assert_non_null(strstr(t, "t_seconds_bucket{le=\"+Inf\"} 1\n"
	                          "t_seconds_sum 1.5\n"
	                          "t_seconds_count 1\n"));
	eb__prom_free(&w);

	/* Without a histogram: every count 0. */
	eb__prom_init(&w);
	eb__prom_hist(&w, "t_seconds", "Latency.", NULL);
	t = text(&w);
	assert_non_null(strstr(t, "t_seconds_bucket{le=\"+Inf\"} 0\n"
	                          "t_seconds_sum 0\n"
	                          "t_seconds_count 0\n"));
	assert_null(strstr(t, "} 1\n"));
	eb__prom_free(&w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_family_lines),
		cmocka_unit_test(test_help_escaping),
		cmocka_unit_test(test_label_escaping),
		cmocka_unit_test(test_samples),
		cmocka_unit_test(test_one),
		cmocka_unit_test(test_write_table),
		cmocka_unit_test(test_fields_only),
		cmocka_unit_test(test_write_rows),
		cmocka_unit_test(test_hist),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
