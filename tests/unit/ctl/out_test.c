/* Unit tests for ebctl output formatting (ctl/out.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"
#include "tests/harness/th.h"

typedef struct capture {
	FILE  *f;
	char  *buf;
	size_t len;
} capture;

static void
cap_open(capture *c)
{
	c->buf = NULL;
	c->len = 0;
	c->f = open_memstream(&c->buf, &c->len);
	assert_non_null(c->f);
}

/* Closes the stream; the text stays in c->buf until cap_free. */
static const char *
cap_text(capture *c)
{
	(void) fclose(c->f);
	c->f = NULL;
	return c->buf;
}

static void
cap_free(capture *c)
{
	free(c->buf);
}

static json_t *
jparse(const char *text)
{
	json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);

	assert_non_null(j);
	return j;
}

static void
test_cells(void **state)
{
	const char *in[] = { "null", "true", "false", "42", "\"s\"",
		"{\"a\":1}", "1.5" };
	const char *want[] = { "-", "yes", "no", "42", "s", "{\"a\":1}",
		"1.5" };
	size_t      i;

	(void) state;
	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		json_t *j = jparse(in[i]);
		char   *c = eb__ctl_cell(j);

		assert_string_equal(c, want[i]);
		free(c);
		json_decref(j);
	}
	{
		char *c = eb__ctl_cell(NULL);

		assert_string_equal(c, "-");
		free(c);
	}
}

static void
test_format_err(void **state)
{
	json_t *e1 =
	    jparse("{\"type\":\"err\",\"address\":\"r\",\"sourceAddress\":"
	           "\"x\",\"failureCode\":-1,\"failureType\":"
	           "\"NO_HANDLERS\",\"message\":\"No handlers for address "
	           "x\"}");
	json_t *e2 = jparse("{\"type\":\"err\",\"message\":\"access_denied\"}");
	json_t *e3 = jparse("{\"type\":\"err\"}");
	char    buf[256];

	(void) state;
	eb__ctl_format_err(e1, buf, sizeof(buf));
	assert_string_equal(buf, "NO_HANDLERS (-1): No handlers for address x");
	eb__ctl_format_err(e2, buf, sizeof(buf));
	assert_string_equal(buf, "access_denied");
	eb__ctl_format_err(e3, buf, sizeof(buf));
	assert_string_equal(buf, "err frame");
	json_decref(e1);
	json_decref(e2);
	json_decref(e3);
}

#define PR_MSG(c, text, mode) \
	eb__ctl_print_message((c).f, text, sizeof(text) - 1, mode)
#define PR_REPLY(c, text, mode) \
	eb__ctl_print_reply((c).f, text, sizeof(text) - 1, mode)

static void
test_message_lines(void **state)
{
	static const char m[] =
	    "{\"type\":\"message\",\"address\":\"a.b\",\"headers\":"
	    "{\"k\":\"v\",\"n\":\"2\"},\"body\":{\"x\":[1]},\"send\":true}";
	static const char p[] = "{\"type\":\"message\",\"address\":\"a.b\","
	                        "\"headers\":{},\"send\":false}";
	/* As Python's client writes a body: tokens stay as they came. */
	static const char e[] =
	    "{\"type\":\"message\",\"address\":\"o\",\"headers\":{},\"body\":"
	    "{\"a\": 0.1, \"b\": 1e-07, \"c\": 10000000000.0, \"e\": "
	    "\"\\u00e9\", \"n\": 12345678901234567890},\"send\":true}";
	capture c;

	(void) state;
	cap_open(&c);
	PR_MSG(c, m, CTL_OUT_TEXT);
	PR_MSG(c, p, CTL_OUT_TEXT);
	PR_MSG(c, e, CTL_OUT_TEXT);
	PR_MSG(c, "not json", CTL_OUT_TEXT);
	assert_string_equal(cap_text(&c),
	    "a.b  k=v n=2  {\"x\":[1]}\n"
	    "a.b  null  (publish)\n"
	    "o  {\"a\":0.1,\"b\":1e-07,\"c\":10000000000.0,\"e\":\"\\u00e9\","
	    "\"n\":12345678901234567890}\n");
	cap_free(&c);
	cap_open(&c);
	PR_MSG(c, m, CTL_OUT_JSON);
	PR_MSG(c, e, CTL_OUT_JSON);
	assert_string_equal(cap_text(&c),
	    "{\"type\":\"message\",\"address\":\"a.b\",\"headers\":{\"k\":"
	    "\"v\",\"n\":\"2\"},\"body\":{\"x\":[1]},\"send\":true}\n"
	    "{\"type\":\"message\",\"address\":\"o\",\"headers\":{},\"body\":"
	    "{\"a\":0.1,\"b\":1e-07,\"c\":10000000000.0,\"e\":\"\\u00e9\","
	    "\"n\":12345678901234567890},\"send\":true}\n");
	cap_free(&c);
	cap_open(&c);
	PR_MSG(c, e, CTL_OUT_RAW);
	assert_string_equal(cap_text(&c),
	    "" /* the bytes, unchanged */
	    "{\"type\":\"message\",\"address\":"
	    "\"o\",\"headers\":{},\"body\":{\"a\": "
	    "0.1, \"b\": 1e-07, \"c\": "
	    "10000000000.0, \"e\": \"\\u00e9\", "
	    "\"n\": 12345678901234567890},"
	    "\"send\":true}\n");
	cap_free(&c);
}

static void
test_reply(void **state)
{
	static const char obj[] =
	    "{\"type\":\"message\",\"address\":\"ebctl.1\","
	    "\"headers\":{\"h\":\"1\"},\"body\":{\"a\": 0.1,\n \"b\": [1]}}";
	static const char str[] =
	    "{\"type\":\"message\",\"address\":\"r\",\"body\":\"h\\u00e9\"}";
	static const char none[] = "{\"type\":\"message\",\"address\":\"r\"}";
	capture           c;

	(void) state;
	cap_open(&c);
	PR_REPLY(c, obj, CTL_OUT_TEXT);
	PR_REPLY(c, str, CTL_OUT_TEXT);
	PR_REPLY(c, none, CTL_OUT_TEXT);
	assert_string_equal(
	    cap_text(&c), "{\"a\": 0.1,\n \"b\": [1]}\nh\xc3\xa9\nnull\n");
	cap_free(&c);
	cap_open(&c);
	PR_REPLY(c, obj, CTL_OUT_JSON);
	PR_REPLY(c, none, CTL_OUT_JSON);
	assert_string_equal(cap_text(&c),
	    "{\"address\":\"ebctl.1\",\"headers\":{\"h\":\"1\"},\"body\":"
	    "{\"a\":0.1,\"b\":[1]}}\n"
	    "{\"address\":\"r\",\"headers\":{},\"body\":null}\n");
	cap_free(&c);
}

static void
test_nodes_table(void **state)
{
	json_t *r =
	    jparse("{\"nodes\":[{\"node_id\":\"n1\",\"host\":\"h\","
	           "\"bridge_port\":7001,\"leader\":true,\"self\":false,"
	           "\"joined_ms\":0,\"rack\":\"r1\"},{\"node_id\":\"node-22\","
	           "\"host\":\"h2\",\"leader\":false,\"extra\":[1]}],"
	           "\"epoch\":4}");
	capture c;

	(void) state;
	cap_open(&c);
	eb__ctl_print_nodes(c.f, r, 0);
	/* Known columns in their order (only those present), then unknown
	 * ones in first-seen order; missing cells are "-". */
	assert_string_equal(cap_text(&c),
	    "epoch: 4\n"
	    "NODE     HOST  BRIDGE  JOINED  LEADER  SELF  RACK  EXTRA\n"
	    "n1       h     7001    0       yes     no    r1    -\n"
	    "node-22  h2    -       -       no      -     -     [1]\n");
	cap_free(&c);
	cap_open(&c);
	eb__ctl_print_nodes(c.f, r, 1);
	assert_non_null(strstr(cap_text(&c), "\"epoch\":4"));
	cap_free(&c);
	json_decref(r);
}

static void
test_nodes_edge_cases(void **state)
{
	json_t *arr =
	    jparse("[{\"node_id\":\"a\",\"joined_ms\":1763730000000}]");
	json_t *empty = jparse("{\"nodes\":[]}");
	json_t *odd = jparse("{\"members\":3}");
	capture c;

	(void) state;
	cap_open(&c);
	eb__ctl_print_nodes(c.f, arr, 0); /* a bare array is accepted */
	eb__ctl_print_nodes(c.f, empty, 0);
	eb__ctl_print_nodes(c.f, odd, 0);
	assert_string_equal(cap_text(&c), "NODE  JOINED\n"
	                                  "a     2025-11-21T13:00:00Z\n"
	                                  "(no nodes)\n"
	                                  "members: 3\n"
	                                  "(no nodes)\n");
	cap_free(&c);
	json_decref(arr);
	json_decref(empty);
	json_decref(odd);
}

static void
test_object(void **state)
{
	json_t *o = jparse("{\"node_id\":\"n1\",\"epoch\":7,\"ok\":true,"
	                   "\"why\":null}");
	json_t *s = jparse("\"plain\"");
	capture c;

	(void) state;
	cap_open(&c);
	eb__ctl_print_object(c.f, o, 0);
	eb__ctl_print_object(c.f, s, 0);
	assert_string_equal(cap_text(&c), "node_id: n1\n"
	                                  "epoch:   7\n"
	                                  "ok:      yes\n"
	                                  "why:     -\n"
	                                  "\"plain\"\n");
	cap_free(&c);
	cap_open(&c);
	eb__ctl_print_object(c.f, o, 1);
	assert_string_equal(cap_text(&c),
	    "{\"node_id\":\"n1\",\"epoch\":7,\"ok\":true,\"why\":null}\n");
	cap_free(&c);
	json_decref(o);
	json_decref(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cells),
		cmocka_unit_test(test_format_err),
		cmocka_unit_test(test_message_lines),
		cmocka_unit_test(test_reply),
		cmocka_unit_test(test_nodes_table),
		cmocka_unit_test(test_nodes_edge_cases),
		cmocka_unit_test(test_object),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
