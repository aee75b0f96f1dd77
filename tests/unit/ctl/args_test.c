/* Unit tests for ebctl argument parsing (ctl/args.c). */
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"
#include "tests/harness/th.h"

static char g_err[512];

static char *g_argv[32];
static int   g_argc;

/* Parses a NULL-terminated list of arguments after "ebctl". The copies live
 * until the next call, because ctl_args borrows them. */
static int
parse_v(ctl_args *a, const char *const *v)
{
	int i;

	for (i = 0; i < g_argc; i++) {
		free(g_argv[i]);
	}
	g_argv[0] = strdup("ebctl");
	for (g_argc = 1; v[g_argc - 1] != NULL; g_argc++) {
		g_argv[g_argc] = strdup(v[g_argc - 1]);
	}
	g_argv[g_argc] = NULL;
	return eb__ctl_args_parse(g_argc, g_argv, a, g_err, sizeof(g_err));
}

#define PARSE(a, ...) parse_v((a), (const char *const[]){ __VA_ARGS__, NULL })

static int
setup_env(void **state)
{
	(void) state;
	unsetenv("EBCTL_BRIDGE");
	unsetenv("EBCTL_ADMIN");
	unsetenv("EBCTL_TOKEN");
	return 0;
}

static void
test_defaults(void **state)
{
	ctl_args a;

	(void) state;
	assert_int_equal(PARSE(&a, "nodes"), CTL_EXIT_OK);
	assert_int_equal(a.cmd, CTL_NODES);
	assert_string_equal(a.bridge.host, "127.0.0.1");
	assert_int_equal(a.bridge.port, 7000);
	assert_string_equal(a.admin.host, "127.0.0.1");
	assert_int_equal(a.admin.port, 7100);
	assert_int_equal(a.timeout_ms, CTL_DEFAULT_TIMEOUT);
	assert_int_equal(a.timeout_set, 0);
	assert_int_equal(a.json, 0);
	assert_int_equal(a.tls, 0);
	assert_null(a.token);
	assert_null(a.address);
	assert_int_equal(json_object_size(a.headers), 0);
	eb__ctl_args_free(&a);
}

static void
test_options_anywhere(void **state)
{
	ctl_args a;

	(void) state;
	assert_int_equal(PARSE(&a, "--json", "send", "orders.new", "{\"id\":1}",
	                     "--bridge=node1:7001", "-H", "a=b", "--header",
	                     "c=d=e", "--timeout", "2s"),
	    CTL_EXIT_OK);
	assert_int_equal(a.cmd, CTL_SEND);
	assert_int_equal(a.json, 1);
	assert_string_equal(a.address, "orders.new");
	assert_string_equal(a.bridge.host, "node1");
	assert_int_equal(a.bridge.port, 7001);
	assert_int_equal(json_integer_value(json_object_get(a.body, "id")), 1);
	assert_string_equal(
	    json_string_value(json_object_get(a.headers, "a")), "b");
	assert_string_equal(
	    json_string_value(json_object_get(a.headers, "c")), "d=e");
	assert_int_equal(a.timeout_ms, 2000);
	assert_int_equal(a.timeout_set, 1);
	eb__ctl_args_free(&a);
}

static void
test_body_kinds(void **state)
{
	ctl_args a;

	(void) state;
	assert_int_equal(PARSE(&a, "publish", "x", "\"text\""), CTL_EXIT_OK);
	assert_string_equal(json_string_value(a.body), "text");
	eb__ctl_args_free(&a);
	assert_int_equal(PARSE(&a, "request", "x", "42"), CTL_EXIT_OK);
	assert_int_equal(json_integer_value(a.body), 42);
	eb__ctl_args_free(&a);
	assert_int_equal(PARSE(&a, "send", "x", "-"), CTL_EXIT_OK);
	assert_string_equal(a.body_text, "-");
	assert_null(a.body); /* read from stdin at run time */
	eb__ctl_args_free(&a);
	assert_int_equal(PARSE(&a, "send", "x"), CTL_EXIT_OK);
	assert_null(a.body_text);
	eb__ctl_args_free(&a);
	assert_int_equal(PARSE(&a, "send", "x", "{oops"), CTL_EXIT_USAGE);
	assert_non_null(strstr(g_err, "not valid JSON"));
	eb__ctl_args_free(&a);
	/* "--" ends options: an address may start with '-'. */
	assert_int_equal(PARSE(&a, "send", "--", "-odd"), CTL_EXIT_OK);
	assert_string_equal(a.address, "-odd");
	eb__ctl_args_free(&a);
}

static void
test_endpoints(void **state)
{
	ctl_endpoint ep;

	(void) state;
	assert_int_equal(eb__ctl_endpoint_parse("h.example:80", &ep), 0);
	assert_string_equal(ep.host, "h.example");
	assert_int_equal(ep.port, 80);
	assert_int_equal(eb__ctl_endpoint_parse("[::1]:7000", &ep), 0);
	assert_string_equal(ep.host, "::1");
	assert_int_equal(eb__ctl_endpoint_parse(":9", &ep), 0);
	assert_string_equal(ep.host, "127.0.0.1");
	assert_int_equal(ep.port, 9);
	assert_int_equal(eb__ctl_endpoint_parse("host", &ep), -1);
	assert_int_equal(eb__ctl_endpoint_parse("host:0", &ep), -1);
	assert_int_equal(eb__ctl_endpoint_parse("host:65536", &ep), -1);
	assert_int_equal(eb__ctl_endpoint_parse("host:7x", &ep), -1);
	assert_int_equal(eb__ctl_endpoint_parse("::1:80", &ep), -1);
	assert_int_equal(eb__ctl_endpoint_parse(NULL, &ep), -1);
}

static void
test_durations(void **state)
{
	ctl_args a;

	(void) state;
	assert_int_equal(PARSE(&a, "--timeout", "250", "nodes"), CTL_EXIT_OK);
	assert_int_equal(a.timeout_ms, 250);
	eb__ctl_args_free(&a);
	assert_int_equal(PARSE(&a, "--timeout", "250ms", "nodes"), CTL_EXIT_OK);
	assert_int_equal(a.timeout_ms, 250);
	eb__ctl_args_free(&a);
	assert_int_equal(PARSE(&a, "--timeout=3s", "nodes"), CTL_EXIT_OK);
	assert_int_equal(a.timeout_ms, 3000);
	eb__ctl_args_free(&a);
	assert_int_equal(PARSE(&a, "--timeout", "0", "nodes"), CTL_EXIT_USAGE);
	eb__ctl_args_free(&a);
	assert_int_equal(PARSE(&a, "--timeout", "-5", "nodes"), CTL_EXIT_USAGE);
	eb__ctl_args_free(&a);
	assert_int_equal(PARSE(&a, "--timeout", "1h", "nodes"), CTL_EXIT_USAGE);
	eb__ctl_args_free(&a);
}

static void
test_usage_errors(void **state)
{
	ctl_args a;

	(void) state;
	assert_int_equal(
	    parse_v(&a, (const char *const[]){ NULL }), CTL_EXIT_USAGE);
	assert_string_equal(g_err, "no command given");
	eb__ctl_args_free(&a);
	assert_int_equal(PARSE(&a, "listen"), CTL_EXIT_USAGE);
	assert_non_null(strstr(g_err, "wrong number of arguments"));
	eb__ctl_args_free(&a);
	assert_int_equal(PARSE(&a, "listen", "a", "b"), CTL_EXIT_USAGE);
	eb__ctl_args_free(&a);
	assert_int_equal(PARSE(&a, "health", "x"), CTL_EXIT_USAGE);
	eb__ctl_args_free(&a);
	assert_int_equal(PARSE(&a, "nodes", "--bridge"), CTL_EXIT_USAGE);
	assert_string_equal(g_err, "--bridge needs a value");
	eb__ctl_args_free(&a);
	assert_int_equal(PARSE(&a, "nodes", "--what"), CTL_EXIT_USAGE);
	assert_string_equal(g_err, "unknown option '--what'");
	eb__ctl_args_free(&a);
	assert_int_equal(PARSE(&a, "--json=1", "nodes"), CTL_EXIT_USAGE);
	eb__ctl_args_free(&a);
	assert_int_equal(PARSE(&a, "-n", "3", "send", "a"), CTL_EXIT_USAGE);
	assert_string_equal(g_err, "--count is only for listen");
	eb__ctl_args_free(&a);
	assert_int_equal(PARSE(&a, "-n", "0", "listen", "a"), CTL_EXIT_USAGE);
	eb__ctl_args_free(&a);
	assert_int_equal(
	    PARSE(&a, "--key", "k.pem", "send", "a"), CTL_EXIT_USAGE);
	assert_string_equal(g_err, "--cert and --key go together");
	eb__ctl_args_free(&a);
	assert_int_equal(PARSE(&a, "-H", "=v", "send", "a"), CTL_EXIT_USAGE);
	eb__ctl_args_free(&a);
	assert_int_equal(PARSE(&a, "send", ""), CTL_EXIT_USAGE);
	eb__ctl_args_free(&a);
}

static void
test_listen_tls_and_env(void **state)
{
	ctl_args a;

	(void) state;
	setenv("EBCTL_BRIDGE", "envhost:1234", 1);
	setenv("EBCTL_TOKEN", "tok", 1);
	assert_int_equal(PARSE(&a, "listen", "ticks", "-n", "5", "--ca",
	                     "ca.pem", "--cert", "c.pem", "--key", "k.pem"),
	    CTL_EXIT_OK);
	assert_int_equal(a.cmd, CTL_LISTEN);
	assert_int_equal(a.count, 5);
	assert_int_equal(a.tls, 1); /* --ca implies --tls */
	assert_string_equal(a.ca, "ca.pem");
	assert_string_equal(a.bridge.host, "envhost");
	assert_int_equal(a.bridge.port, 1234);
	assert_string_equal(a.token, "tok");
	eb__ctl_args_free(&a);
	/* The command line beats the environment. */
	assert_int_equal(
	    PARSE(&a, "--bridge", "cli:1", "--token", "t2", "listen", "x"),
	    CTL_EXIT_OK);
	assert_string_equal(a.bridge.host, "cli");
	assert_string_equal(a.token, "t2");
	eb__ctl_args_free(&a);
	unsetenv("EBCTL_BRIDGE");
	unsetenv("EBCTL_TOKEN");
}

static void
test_help_version(void **state)
{
	ctl_args a;

	(void) state;
	assert_int_equal(PARSE(&a, "--help"), CTL_EXIT_OK);
	assert_int_equal(a.cmd, CTL_HELP);
	eb__ctl_args_free(&a);
	assert_int_equal(PARSE(&a, "-V"), CTL_EXIT_OK);
	assert_int_equal(a.cmd, CTL_VERSION);
	eb__ctl_args_free(&a);
	assert_string_equal(eb__ctl_cmd_name(CTL_RELEASE), "release");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_defaults, setup_env),
		cmocka_unit_test_setup(test_options_anywhere, setup_env),
		cmocka_unit_test_setup(test_body_kinds, setup_env),
		cmocka_unit_test(test_endpoints),
		cmocka_unit_test_setup(test_durations, setup_env),
		cmocka_unit_test_setup(test_usage_errors, setup_env),
		cmocka_unit_test_setup(test_listen_tls_and_env, setup_env),
		cmocka_unit_test_setup(test_help_version, setup_env),
	};

	int rv = cmocka_run_group_tests(tests, NULL, NULL);
	int i;

	for (i = 0; i < g_argc; i++) {
		free(g_argv[i]);
	}
	return rv;
}
