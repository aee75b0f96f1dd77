/*
 * Unit tests for the configuration loader: every error message is asserted
 * in full (origin, key path, text), plus defaults, comments, environment and
 * --set overrides and their precedence.
 *
 * The tests chdir into a private temp dir and write "ebnode.json" there, so
 * messages read "ebnode.json:LINE:COL: ...".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include <ebnode/err.h>

#include "conf/conf.h"
#include "conf/conf_int.h"
#include "tests/harness/th.h"

static char tmpdir[64];
static char olddir[4096];

static int
group_setup(void **state)
{
	(void) state;
	(void) snprintf(tmpdir, sizeof(tmpdir), "/tmp/ebconf-test-XXXXXX");
	if (mkdtemp(tmpdir) == NULL || getcwd(olddir, sizeof(olddir)) == NULL ||
	    chdir(tmpdir) != 0) {
		return -1;
	}
	return 0;
}

static int
group_teardown(void **state)
{
	(void) state;
	(void) unlink("ebnode.json");
	if (chdir(olddir) != 0) {
		return -1;
	}
	return rmdir(tmpdir);
}

static void
write_file(const char *text)
{
	FILE *f = fopen("ebnode.json", "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static const char *const no_env[] = { NULL };

/* Loads text (NULL: no file) + env + sets; returns the rv. */
static int
load(const char *text, const char *const *env, const char *const *sets,
    size_t n_sets, eb__conf **c, eb_errbuf *e)
{
	eb__conf_sources src;

	memset(&src, 0, sizeof(src));
	if (text != NULL) {
		write_file(text);
		src.file = "ebnode.json";
	}
	src.env = env != NULL ? env : no_env;
	src.sets = sets;
	src.n_sets = n_sets;
	e->msg[0] = '\0';
	*c = NULL;
	return eb__conf_load(&src, c, e);
}

static void
expect_err(const char *text, const char *const *env, const char *const *sets,
    size_t n_sets, const char *msg)
{
	eb__conf *c;
	eb_errbuf e;

	assert_int_equal(load(text, env, sets, n_sets, &c, &e), EB_ECONF);
	assert_null(c);
	assert_string_equal(e.msg, msg);
}

static eb__conf *
expect_ok(const char *text, const char *const *env, const char *const *sets,
    size_t n_sets)
{
	eb__conf *c;
	eb_errbuf e;
	int       rv = load(text, env, sets, n_sets, &c, &e);

	if (rv != 0) {
		fail_msg("unexpected error: %s", e.msg);
	}
	assert_non_null(c);
	return c;
}

/* ---- bad input: exact messages ----------------------------------------- */

static void
test_err_out_of_range(void **state)
{
	(void) state;
	expect_err("{\n  \"bridge\": {\n    \"port\": 70000\n  }\n}\n", NULL,
	    NULL, 0,
	    "ebnode.json:3:13: bridge.port: expected an integer in 0..65535, "
	    "got 70000");
}

static void
test_err_unknown_key(void **state)
{
	(void) state;
	expect_err("{\"bridge\": {\"prot\": 1}}", NULL, NULL, 0,
	    "ebnode.json:1:13: bridge.prot: unknown key");
	expect_err("{\n  \"brige\": {}\n}", NULL, NULL, 0,
	    "ebnode.json:2:3: brige: unknown key");
	/* A dotted key is not a path; a control character stays on one line. */
	expect_err("{\"bridge.port\": 1}", NULL, NULL, 0,
	    "ebnode.json:1:2: bridge.port: unknown key");
	expect_err("{\"a\\nb\": 1}", NULL, NULL, 0,
	    "ebnode.json:1:2: a?b: unknown key");
	/* Escaped keys are found at their own position. */
	expect_err("{\"bridge\": {\"p\\u00f6rt\": 1, \"\\ud83d\\ude00\": 2}}",
	    NULL, NULL, 0, "ebnode.json:1:13: bridge.p\xc3\xb6rt: unknown key");
	expect_err("{\"bridge\": {\"\\ud83d\\ude00\": 2}}", NULL, NULL, 0,
	    "ebnode.json:1:13: bridge.\xf0\x9f\x98\x80: unknown key");
}

static void
test_err_wrong_type(void **state)
{
	(void) state;
	expect_err("{\"admin\": {\"enabled\": \"yes\"}}", NULL, NULL, 0,
	    "ebnode.json:1:23: admin.enabled: expected true or false, got "
	    "\"yes\"");
	expect_err("{\"bus\": {\"request_timeout_ms\": 1.5}}", NULL, NULL, 0,
	    "ebnode.json:1:32: bus.request_timeout_ms: expected an integer in "
	    "1..3600000, got 1.5");
	expect_err("{\"bridge\": 5}", NULL, NULL, 0,
	    "ebnode.json:1:12: bridge: expected an object, got 5");
	expect_err("[1]", NULL, NULL, 0,
	    "ebnode.json:1:1: expected an object, got [1]");
}

static void
test_err_duplicate_key(void **state)
{
	(void) state;
	expect_err("{\"admin\": {\"port\": 1,\n           \"port\": 2}}", NULL,
	    NULL, 0, "ebnode.json:2:12: admin.port: duplicate key");
}

static void
test_err_syntax(void **state)
{
	(void) state;
	expect_err("{\"admin\": {\"port\": 1,}}", NULL, NULL, 0,
	    "ebnode.json:1:22: syntax error after admin.port: string or '}' "
	    "expected near '}'");
	expect_err("", NULL, NULL, 0,
	    "ebnode.json:1:1: syntax error: '[' or '{' expected near end of "
	    "file");
}

static void
test_err_missing_file(void **state)
{
	eb__conf_sources src;
	eb__conf        *c = NULL;
	eb_errbuf        e;

	(void) state;
	memset(&src, 0, sizeof(src));
	src.file = "missing.json";
	assert_int_equal(eb__conf_load(&src, &c, &e), EB_ECONF);
	assert_null(c);
	assert_string_equal(
	    e.msg, "missing.json: cannot open: No such file or directory");
}

static void
test_err_in_memory_text(void **state)
{
	static const char text[] = "{\"bridge\": {\"port\": -5}}";
	eb__conf_sources  src;
	eb__conf         *c = NULL;
	eb_errbuf         e;

	(void) state;
	memset(&src, 0, sizeof(src));
	src.file = "mem.json"; /* the name only: nothing is read */
	src.text = text;
	src.text_len = sizeof(text) - 1;
	assert_int_equal(eb__conf_load(&src, &c, &e), EB_ECONF);
	assert_null(c);
	assert_string_equal(e.msg,
	    "mem.json:1:21: bridge.port: expected an integer in 0..65535, got "
	    "-5");
}

static void
test_err_bad_enum(void **state)
{
	(void) state;
	expect_err("{\"bridge\": {\"tls\": {\"client_auth\": \"maybe\"}}}",
	    NULL, NULL, 0,
	    "ebnode.json:1:36: bridge.tls.client_auth: expected one of "
	    "none|request|required, got \"maybe\"");
	expect_err("{\"log\": {\"level\": 3}}", NULL, NULL, 0,
	    "ebnode.json:1:19: log.level: expected one of "
	    "err|warn|notice|info|debug, got 3");
	expect_err("{\"zookeeper\": {\"auth\": {\"scheme\": \"sasl\"}}}", NULL,
	    NULL, 0,
	    "ebnode.json:1:35: zookeeper.auth.scheme: expected one of "
	    "\"\"|digest, got \"sasl\"");
}

static void
test_err_bad_regex(void **state)
{
	char msg[256];

	(void) state;
	/* glibc's regerror text for an unmatched bracket. */
	(void) snprintf(msg, sizeof(msg),
	    "ebnode.json:4:35: ingress.routes[0].regex: invalid regular "
	    "expression \"([a-z\": %s",
	    "Unmatched [, [^, [:, [., or [=");
	expect_err("{\n"
	           "  \"ingress\": {\n"
	           "    \"routes\": [\n"
	           "      {\"header\": \"kind\", \"regex\": \"([a-z\", \"to\": "
	           "\"x\"}\n"
	           "    ]\n"
	           "  }\n"
	           "}\n",
	    NULL, NULL, 0, msg);
	expect_err(
	    "{\"bridge\": {\"inbound\": [{}, {\"addressRegex\": \"a(\"}]}}",
	    NULL, NULL, 0,
	    "ebnode.json:1:46: bridge.inbound[1].addressRegex: invalid regular "
	    "expression \"a(\": Unmatched ( or \\(");
}

static void
test_err_route_shape(void **state)
{
	(void) state;
	expect_err("{\"ingress\": {\"routes\": [{\"field\": \"k\", \"equals\": "
	           "\"v\"}]}}",
	    NULL, NULL, 0,
	    "ebnode.json:1:25: ingress.routes[0]: missing required key \"to\"");
	expect_err("{\"ingress\": {\"routes\": [{\"field\": \"k\", \"header\": "
	           "\"h\", \"equals\": \"v\", \"to\": \"t\"}]}}",
	    NULL, NULL, 0,
	    "ebnode.json:1:25: ingress.routes[0]: expected exactly one of "
	    "\"header\" or \"field\"");
	expect_err("{\"ingress\": {\"routes\": [{\"field\": \"k\", \"to\": "
	           "\"t\"}]}}",
	    NULL, NULL, 0,
	    "ebnode.json:1:25: ingress.routes[0]: expected exactly one of "
	    "\"equals\", \"prefix\" or \"regex\"");
	expect_err("{\"ingress\": {\"routes\": [{\"field\": \"k\", \"prefix\": "
	           "\"p\", \"to\": \"t\", \"mode\": \"broadcast\"}]}}",
	    NULL, NULL, 0,
	    "ebnode.json:1:74: ingress.routes[0].mode: expected one of "
	    "send|publish, got \"broadcast\"");
	expect_err("{\"ingress\": {\"default_route\": {\"to\": "
	           "\"external.ingress\"}}}",
	    NULL, NULL, 0,
	    "ebnode.json:1:31: ingress.default_route: routes back to "
	    "ingress.address \"external.ingress\"");
}

static void
test_err_combos(void **state)
{
	const char *sets[] = { "cluster.tls.ca=/ca.pem" };
	const char *env[] = { "EBNODE_ZOOKEEPER_ACL=creator", NULL };
	const char *s_port[] = { "bridge.port=7100" };
	const char *s_digest[] = { "zookeeper.auth.scheme=digest",
		"zookeeper.auth.credentials=nocolon" };

	(void) state;
	expect_err("{\"bridge\": {\"tls\": {\"cert\": \"/c.pem\"}}}", NULL,
	    NULL, 0,
	    "ebnode.json:1:29: bridge.tls.cert: requires bridge.tls.key");
	expect_err(NULL, NULL, sets, 1,
	    "--set cluster.tls.ca: cluster.tls.cert, cluster.tls.key and "
	    "cluster.tls.ca must be set together");
	expect_err(NULL, env, NULL, 0,
	    "environment EBNODE_ZOOKEEPER_ACL: zookeeper.acl: \"creator\" "
	    "requires zookeeper.auth.scheme \"digest\"");
	expect_err("{\"admin\": {\"port\": 7000}}", NULL, NULL, 0,
	    "ebnode.json:1:20: admin.port: same as bridge.port (7000)");
	/* The key that was set is blamed, not the default it collides with. */
	expect_err(NULL, NULL, s_port, 1,
	    "--set bridge.port: same as admin.port (7100)");
	expect_err(NULL, NULL, s_digest, 1,
	    "--set zookeeper.auth.scheme: \"digest\" requires "
	    "zookeeper.auth.credentials \"user:password\"");
	expect_err(NULL, NULL, s_digest, 2,
	    "--set zookeeper.auth.credentials: expected \"user:password\"");
}

/* A dead-link timeout not above the heartbeat: 0.1.0 refused it, the
 * releases before raised it to 3 heartbeats; so does this one, with a
 * warning (docs/UPGRADING.md, "Configuration"). */
static void
test_link_timeout_raised(void **state)
{
	eb__conf *c;

	(void) state;
	c = expect_ok("{\"cluster\": {\"heartbeat_ms\": 5000}}", NULL, NULL, 0);
	assert_int_equal(c->link.dead_ms, 15000);
	eb__conf_free(c);
	c = expect_ok(
	    "{\"cluster\": {\"link_timeout_ms\": 1000}}", NULL, NULL, 0);
	assert_int_equal(c->link.heartbeat_ms, 1000);
	assert_int_equal(c->link.dead_ms, 3000);
	eb__conf_free(c);
	/* Above the heartbeat: as set. */
	c = expect_ok("{\"cluster\": {\"heartbeat_ms\": 200, "
	              "\"link_timeout_ms\": 1000}}",
	    NULL, NULL, 0);
	assert_int_equal(c->link.dead_ms, 1000);
	eb__conf_free(c);
}

/* "optional": unknown keys at or under a listed path are skipped (a newer
 * release's keys survive a rollback); anything else unknown is refused. */
static void
test_optional_keys(void **state)
{
	eb__conf *c;

	(void) state;
	c = expect_ok("{\"optional\": [\"vertx\", \"ingress.future\"], "
	              "\"vertx\": {\"port\": 1}, "
	              "\"ingress\": {\"future\": 2, \"hold_ms\": 777}}",
	    NULL, NULL, 0);
	assert_int_equal(c->ingress.hold_ms, 777);
	eb__conf_free(c);
	/* "ingress.future" does not cover "ingress.futures". */
	expect_err("{\"optional\": [\"ingress.future\"], "
	           "\"ingress\": {\"futures\": 1}}",
	    NULL, NULL, 0, "ebnode.json:1:46: ingress.futures: unknown key");
	expect_err("{\"optional\": [\"vertx\"], \"web2\": {}}", NULL, NULL, 0,
	    "ebnode.json:1:25: web2: unknown key");
	expect_err("{\"optional\": \"vertx\"}", NULL, NULL, 0,
	    "ebnode.json:1:2: optional: expected an array of key paths");
	expect_err("{\"optional\": [\"\"]}", NULL, NULL, 0,
	    "ebnode.json:1:2: optional: expected an array of key paths, "
	    "element 0 is not one");
	/* A known key listed is read as usual. */
	c = expect_ok("{\"optional\": [\"bridge.port\"], "
	              "\"bridge\": {\"port\": 7001}}",
	    NULL, NULL, 0);
	assert_int_equal(c->bridge.port, 7001);
	eb__conf_free(c);
}

/* The vertx section (docs/VERTX.md): defaults, a generated UUID node id,
 * and its rules, each naming the place and the key. */
static void
test_vertx(void **state)
{
	eb__conf   *c = expect_ok(NULL, NULL, NULL, 0);
	eb__conf   *d;
	char        keys[100];
	const char *on[] = { "zookeeper.connect=127.0.0.1:2181",
		"vertx.enabled=true", "vertx.node_id=n1" };

	(void) state;
	assert_false(c->vertx_enabled);
	assert_string_equal(c->vertx.root, "io.vertx");
	assert_string_equal(c->vertx.cluster_host, "127.0.0.1");
	assert_int_equal(c->vertx.cluster_port, 0);
	assert_int_equal(c->vertx.max_frame_bytes, 16777216);
	assert_int_equal(c->vertx.drain_ms, 500);
	/* unset: drawn by the vertx module at start, so that a reload sees
	 * no changed static key */
	assert_null(c->vertx.node_id);
	d = expect_ok(NULL, NULL, NULL, 0);
	assert_int_equal(eb__conf_static_changes(c, d, keys, sizeof(keys)), 0);
	eb__conf_free(d);
	eb__conf_free(c);
	c = expect_ok(NULL, NULL, on, 3);
	assert_true(c->vertx_enabled);
	assert_string_equal(c->vertx.node_id, "n1");
	eb__conf_free(c);
	expect_err("{\"vertx\": {\"root\": \"/io.vertx\"}}", NULL, NULL, 0,
	    "ebnode.json:1:20: vertx.root: expected a ZooKeeper path without "
	    "the leading \"/\" (vertx-zookeeper's rootPath, e.g. "
	    "\"io.vertx\"), at most 200 characters, got \"/io.vertx\"");
	expect_err("{\"vertx\": {\"root\": \"a/../b\"}}", NULL, NULL, 0,
	    "ebnode.json:1:20: vertx.root: expected a ZooKeeper path without "
	    "the leading \"/\" (vertx-zookeeper's rootPath, e.g. "
	    "\"io.vertx\"), at most 200 characters, got \"a/../b\"");
	expect_err("{\"vertx\": {\"node_id\": \"a/b\"}}", NULL, NULL, 0,
	    "ebnode.json:1:23: vertx.node_id: expected at most 128 printable "
	    "ASCII characters without \"/\" (a UUID, as Vert.x uses), got "
	    "\"a/b\"");
	expect_err("{\"vertx\": {\"cluster_host\": \"localhost\"}}", NULL, NULL,
	    0,
	    "ebnode.json:1:28: vertx.cluster_host: expected a numeric IPv4 or "
	    "IPv6 address (the JVMs dial it), got \"localhost\"");
	expect_err("{\"vertx\": {\"enabled\": true}}", NULL, NULL, 0,
	    "ebnode.json:1:23: vertx.enabled: needs zookeeper.connect (a "
	    "Vert.x cluster lives in ZooKeeper)");
	expect_err("{\"vertx\": {\"engine_root\": \"engine\"}}", NULL, NULL, 0,
	    "ebnode.json:1:27: vertx.engine_root: expected the Java engine's "
	    "root, a ZooKeeper path that starts with \"/\" (under "
	    "vertx.root), at most 200 characters, got \"engine\"");
	expect_err("{\"vertx\": {\"max_frame_bytes\": 10}}", NULL, NULL, 0,
	    "ebnode.json:1:31: vertx.max_frame_bytes: expected an integer in "
	    "64..2147483647, got 10");
}

/* zookeeper.connect as the ZooKeeper C client takes it (conf/zkhosts.c):
 * each value below passed --check before and failed at start or never
 * connected. */
static void
test_err_zk_connect(void **state)
{
	static const struct {
		const char *value;
		const char *why;
	} bad[] = {
		{ ",", "\",\": empty entry; expected "
		       "host:port[,host:port...][/chroot]" },
		{ ",,,", "\",,,\": empty entry; expected "
		         "host:port[,host:port...][/chroot]" },
		{ "zk1:2181,,zk2:2181", "\"zk1:2181,,zk2:2181\": empty entry; "
		                        "expected "
		                        "host:port[,host:port...][/chroot]" },
		{ "zk1:2181,", "\"zk1:2181,\": empty entry; expected "
		               "host:port[,host:port...][/chroot]" },
		{ " ", "\" \": white space is not allowed" },
		{ "zk:2181 ", "\"zk:2181 \": white space is not allowed" },
		{ ":", "\":\": port not in 1..65535" },
		{ "a", "\"a\": expected host:port" },
		{ "127.0.0.1:0", "\"127.0.0.1:0\": port not in 1..65535" },
		{ "127.0.0.1:99999", "\"127.0.0.1:99999\": port not in "
		                     "1..65535" },
		{ "127.0.0.1:", "\"127.0.0.1:\": port not in 1..65535" },
		{ "zk:+21", "\"zk:+21\": port not in 1..65535" },
		{ "zk1:2181,zk2", "\"zk2\": expected host:port" },
		{ "[::1]:2181", "\"[::1]:2181\": the ZooKeeper client takes no "
		                "[brackets]; write an IPv6 address bare, as in "
		                "::1:2181" },
		{ ":2181", "\":2181\": host is not a DNS name, IPv4 or IPv6 "
		           "address" },
		{ "1.2.3.256:2181", "\"1.2.3.256:2181\": host is not a DNS "
		                    "name, IPv4 or IPv6 address" },
		{ "::g:2181", "\"::g:2181\": host is not a DNS name, IPv4 or "
		              "IPv6 address" },
		{ "-zk:2181", "\"-zk:2181\": host is not a DNS name, IPv4 or "
		              "IPv6 address" },
		{ "zk..a:2181", "\"zk..a:2181\": host is not a DNS name, IPv4 "
		                "or IPv6 address" },
		{ "zk$:2181", "\"zk$:2181\": host is not a DNS name, IPv4 or "
		              "IPv6 address" },
		{ "zk:2181/a/", "chroot \"/a/\": expected a path that starts "
		                "with \"/\" and does not end with \"/\"" },
	};
	static const char *const good[] = { "127.0.0.1:2181", "::1:2181",
		"zk-1.example.com.:2181,zk_2:65535,10.0.0.3:1/app", "zk:2181/",
		"fe80::1:2181" };
	char                     set[128], msg[256];
	const char              *sets[1] = { set };
	size_t                   i;
	eb__conf                *c;

	(void) state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		(void) snprintf(
		    set, sizeof(set), "zookeeper.connect=%s", bad[i].value);
		(void) snprintf(msg, sizeof(msg), "--set zookeeper.connect: %s",
		    bad[i].why);
		expect_err(NULL, NULL, sets, 1, msg);
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		(void) snprintf(
		    set, sizeof(set), "zookeeper.connect=%s", good[i]);
		c = expect_ok(NULL, NULL, sets, 1);
		eb__conf_free(c);
	}
	/* In a file: file:line:col and the key, like every other error. */
	expect_err("{\n  \"zookeeper\": {\n    \"connect\": "
	           "\"127.0.0.1:99999\"\n  }\n}\n",
	    NULL, NULL, 0,
	    "ebnode.json:3:16: zookeeper.connect: \"127.0.0.1:99999\": port "
	    "not in 1..65535");
}

/* election.heartbeat_ms: 0 (auto) or at least 100 ms, standalone too;
 * zookeeper.max_request_bytes: 65536..104857600, default 1000000. */
static void
test_err_zk_floors(void **state)
{
	const char *hb1[] = { "election.heartbeat_ms=1" };
	const char *hb99[] = { "zookeeper.connect=zk:2181",
		"election.heartbeat_ms=99" };
	const char *hb100[] = { "election.heartbeat_ms=100" };
	const char *small[] = { "zookeeper.max_request_bytes=65535" };
	const char *big[] = { "zookeeper.max_request_bytes=104857601" };
	const char *lo[] = { "zookeeper.max_request_bytes=65536" };
	eb__conf   *c;

	(void) state;
	expect_err(NULL, NULL, hb1, 1,
	    "--set election.heartbeat_ms: 0 (session timeout / 4) or at "
	    "least 100 ms: each heartbeat is a ZooKeeper write, got 1");
	expect_err(NULL, NULL, hb99, 2,
	    "--set election.heartbeat_ms: 0 (session timeout / 4) or at "
	    "least 100 ms: each heartbeat is a ZooKeeper write, got 99");
	c = expect_ok(NULL, NULL, hb100, 1);
	assert_int_equal(c->cluster.election.heartbeat_ms, 100);
	assert_int_equal(c->cluster.max_request_bytes, 1000000);
	eb__conf_free(c);
	expect_err(NULL, NULL, small, 1,
	    "--set zookeeper.max_request_bytes: expected an integer in "
	    "65536..104857600, got 65535");
	expect_err(NULL, NULL, big, 1,
	    "--set zookeeper.max_request_bytes: expected an integer in "
	    "65536..104857600, got 104857601");
	c = expect_ok(NULL, NULL, lo, 1);
	assert_int_equal(c->cluster.max_request_bytes, 65536);
	eb__conf_free(c);
}

/* The leader lease rule (docs/CLUSTER.md "The lease"): decided from the
 * configured session timeout, blaming the key to change. */
static void
test_err_lease(void **state)
{
	const char *hb[] = { "zookeeper.connect=zk:2181",
		"zookeeper.session_timeout_ms=1000",
		"election.heartbeat_ms=600" };
	const char *lease[] = { "zookeeper.connect=zk:2181",
		"election.lease_ms=5000" };
	const char *tick[] = { "zookeeper.connect=zk:2181",
		"zookeeper.session_timeout_ms=1000", "zookeeper.tick_ms=2000" };
	const char *ok[] = { "zookeeper.tick_ms=500",
		"zookeeper.session_timeout_ms=2000", "election.lease_ms=1150",
		"zookeeper.connect=zk:2181" };
	eb__conf   *c;

	(void) state;
	expect_err(NULL, NULL, hb, 3,
	    "--set election.heartbeat_ms: unsafe leader lease: session 1000 "
	    "- tick/2 250? - heartbeat 600 - margin 50 = 100 ms; lease 100 "
	    "must be <= that, >= 100 and > heartbeat");
	expect_err(NULL, NULL, lease, 2,
	    "--set election.lease_ms: unsafe leader lease: session 10000 - "
	    "tick/2 2500? - heartbeat 2500 - margin 500 = 4500 ms; lease "
	    "5000 must be <= that, >= 100 and > heartbeat");
	expect_err(NULL, NULL, tick, 3,
	    "--set zookeeper.tick_ms: unsafe leader lease: session 1000 - "
	    "tick/2 1000 - heartbeat 250 - margin 50 = -300 ms; lease -300 "
	    "must be <= that, >= 100 and > heartbeat");
	/* The bound itself is accepted (2000 - 250 - 500 - 100). */
	c = expect_ok(NULL, NULL, ok, 4);
	assert_int_equal(c->cluster.election.zk_tick_ms, 500);
	assert_int_equal(c->cluster.election.lease_ms, 1150);
	eb__conf_free(c);
	/* Standalone has no lease: nothing to refuse. */
	c = expect_ok(NULL, NULL, hb + 1, 2);
	assert_int_equal(c->cluster.election.heartbeat_ms, 600);
	assert_int_equal(c->cluster.election.lease_ms, 0);
	eb__conf_free(c);
}

static void
test_err_env(void **state)
{
	const char *env1[] = { "EBNODE_BRIDGE_PORT=abc", NULL };
	const char *env2[] = { "EBNODE_ZOOKEEPER_ROOT=/a/", NULL };
	const char *env3[] = { "EBNODE_BRIDGE_OUTBOUND=[{\"x\": 1}]", NULL };
	const char *env4[] = { "EBNODE_NODE_ELIGIBLE=maybe", NULL };

	(void) state;
	expect_err(NULL, env1, NULL, 0,
	    "environment EBNODE_BRIDGE_PORT: bridge.port: expected an integer "
	    "in 0..65535, got \"abc\"");
	expect_err(NULL, env2, NULL, 0,
	    "environment EBNODE_ZOOKEEPER_ROOT: zookeeper.root: expected a "
	    "path that starts with \"/\" and does not end with \"/\", got "
	    "\"/a/\"");
	expect_err(NULL, env3, NULL, 0,
	    "environment EBNODE_BRIDGE_OUTBOUND: bridge.outbound[0].x: "
	    "unknown key");
	expect_err(NULL, env4, NULL, 0,
	    "environment EBNODE_NODE_ELIGIBLE: node.eligible: expected true "
	    "or false, got \"maybe\"");
}

static void
test_err_flags(void **state)
{
	const char *s1[] = { "bridge.port=70000" };
	const char *s2[] = { "bridge.prot=1" };
	const char *s3[] = { "bridge.port" };
	const char *s4[] = { "bridge={}" };
	const char *s5[] = { "ingress.routes=[{\"header\": " };

	(void) state;
	expect_err(NULL, NULL, s1, 1,
	    "--set bridge.port: expected an integer in 0..65535, got 70000");
	expect_err(NULL, NULL, s2, 1, "--set bridge.prot: unknown key");
	expect_err(NULL, NULL, s3, 1, "--set bridge.port: expected KEY=VALUE");
	expect_err(NULL, NULL, s4, 1,
	    "--set bridge: a section, not a key: set its keys one by one");
	expect_err(NULL, NULL, s5, 1,
	    "--set ingress.routes: invalid JSON at column 12: unexpected "
	    "token near end of file");
}

static void
test_err_comments_and_columns(void **state)
{
	(void) state;
	expect_err("{ /* never closed", NULL, NULL, 0,
	    "ebnode.json:1:3: unterminated comment");
	/* A multi-byte character counts as one column. */
	expect_err("{\"node\": {\"id\": \"\xc3\xa9\", \"host\": 5}}", NULL,
	    NULL, 0, "ebnode.json:1:30: node.host: expected a string, got 5");
	/* Comments before a value do not shift its position. */
	expect_err("{ // c1\n  /* c2 */ \"cluster\": {\"port\": -1}}", NULL,
	    NULL, 0,
	    "ebnode.json:2:32: cluster.port: expected an integer in 0..65535, "
	    "got -1");
	expect_err("{\"node\": {\"id\": \"\"}}", NULL, NULL, 0,
	    "ebnode.json:1:17: node.id: expected a non-empty string, got \"\"");
}

/* ---- good input --------------------------------------------------------- */

static void
test_defaults(void **state)
{
	eb__conf *c = expect_ok(NULL, NULL, NULL, 0);

	(void) state;
	assert_int_equal(c->bridge.port, 7000);
	assert_int_equal(c->admin.port, 7100);
	assert_int_equal(c->link.port, 0);
	assert_int_equal(c->log.level, 3);
	assert_true(c->cluster.election.eligible);
	assert_true(c->bridge_enabled);
	assert_string_equal(c->cluster.connect, "");
	assert_string_equal(c->cluster.root, "/ebnode/default");
	assert_int_equal(c->cluster.session_timeout_ms, 10000);
	assert_int_equal(c->cluster.election.zk_tick_ms, 0);
	assert_int_equal(c->cluster.election.heartbeat_ms, 0);
	assert_int_equal(c->cluster.election.lease_ms, 0);
	assert_int_equal(c->bridge.max_frame_bytes, 1048576);
	assert_int_equal(c->bridge.write_queue_max_bytes, 4194304);
	assert_int_equal(c->bus.request_timeout_ms, 30000);
	assert_int_equal(c->ingress.hold_max, 1000);
	/* No token: authentication off (the mode "every" applies with one). */
	assert_int_equal(c->bridge.auth_mode, EB_BRIDGE_AUTH_OFF);
	assert_int_equal(strncmp(c->cluster.address, "ebnode-", 7), 0);
	assert_string_equal(c->cluster.node_id, c->cluster.address);
	/* inbound absent: the ingress address only. */
	assert_int_equal(c->bridge.inbound_count, 1);
	assert_string_equal(c->bridge.inbound[0].address, "external.ingress");
	assert_null(c->bridge.inbound[0].address_regex);
	assert_int_equal(c->bridge.outbound_count, 0);
	assert_int_equal(c->ingress.route_count, 0);
	assert_null(c->ingress.default_route);
	eb__conf_free(c);
}

static void
test_comments_and_values(void **state)
{
	eb__conf *c = expect_ok(
	    "// leading comment\n"
	    "{\n"
	    "  /* block\n     comment */\n"
	    "  \"node\": {\"address\": \"http://a/*b*/\"}, // trailing\n"
	    "  \"ingress\": {\n"
	    "    \"address\": \"in\",\n"
	    "    \"routes\": [\n"
	    "      {\"header\": \"kind\", \"equals\": \"order\", \"to\": "
	    "\"orders\"},\n"
	    "      {\"field\": \"type\", \"regex\": \"^a.*\", \"to\": \"as\", "
	    "\"mode\": \"publish\"}\n"
	    "    ],\n"
	    "    \"default_route\": {\"to\": \"rest\"}\n"
	    "  },\n"
	    "  \"bridge\": {\"outbound\": [{\"addressRegex\": \"out\\\\..+\"}, "
	    "{}]}\n"
	    "}\n",
	    NULL, NULL, 0);

	(void) state;
	assert_string_equal(c->cluster.address, "http://a/*b*/");
	assert_string_equal(c->cluster.node_id, "http://a/*b*/");
	assert_int_equal(c->ingress.route_count, 2);
	assert_string_equal(c->ingress.routes[0].header, "kind");
	assert_int_equal(c->ingress.routes[0].match, EB_INGRESS_MATCH_EQUALS);
	assert_string_equal(c->ingress.routes[0].value, "order");
	assert_int_equal(c->ingress.routes[0].publish, 0 /* send */);
	assert_string_equal(c->ingress.routes[1].field, "type");
	assert_int_equal(c->ingress.routes[1].match, EB_INGRESS_MATCH_REGEX);
	assert_string_equal(c->ingress.routes[1].value, "^a.*");
	assert_int_equal(c->ingress.routes[1].publish, 1 /* publish */);
	assert_non_null(c->ingress.default_route);
	assert_string_equal(c->ingress.default_route->to, "rest");
	assert_int_equal(c->ingress.default_route->publish, 0 /* send */);
	/* inbound absent: follows ingress.address */
	assert_int_equal(c->bridge.inbound_count, 1);
	assert_string_equal(c->bridge.inbound[0].address, "in");
	assert_int_equal(c->bridge.outbound_count, 2);
	assert_string_equal(c->bridge.outbound[0].address_regex, "out\\..+");
	assert_null(c->bridge.outbound[1].address);
	assert_null(c->bridge.outbound[1].address_regex);
	eb__conf_free(c);
}

static void
test_precedence(void **state)
{
	const char *file =
	    "{\"bridge\": {\"port\": 1, \"listen\": \"0.0.0.0\"}, "
	    "\"admin\": {\"port\": 11}}";
	const char *env[] = { "EBNODE_BIN=/x/ebnode", "EBNODE_BRIDGE_PORT=2",
		"EBNODE_ADMIN_PORT=12", "EBNODE_UNRELATED=1", NULL };
	const char *sets[] = { "bridge.port=3", "bridge.port=4" };
	eb__conf   *c;

	(void) state;
	c = expect_ok(file, NULL, NULL, 0);
	assert_int_equal(c->bridge.port, 1);
	eb__conf_free(c);
	c = expect_ok(file, env, NULL, 0);
	assert_int_equal(c->bridge.port, 2);
	assert_int_equal(c->admin.port, 12);
	assert_string_equal(c->bridge.host, "0.0.0.0"); /* file kept */
	eb__conf_free(c);
	c = expect_ok(file, env, sets, 2);
	assert_int_equal(c->bridge.port, 4); /* the last flag wins */
	assert_int_equal(c->admin.port, 12);
	eb__conf_free(c);
}

static void
test_env_and_flag_types(void **state)
{
	static const char routes[] =
	    "EBNODE_INGRESS_ROUTES=[{\"field\": \"k\", "
	    "\"prefix\": \"p\", \"to\": \"t\", "
	    "\"mode\": \"publish\"}]";
	const char *env[] = { routes, "EBNODE_NODE_ELIGIBLE=false",
		"EBNODE_LOG_LEVEL=debug", "EBNODE_ZOOKEEPER_AUTH_SCHEME=digest",
		"EBNODE_ZOOKEEPER_AUTH_CREDENTIALS=u:p", NULL };
	const char *sets[] = { "bridge.enabled=off", "node.id=n-1",
		"ingress.default_route={\"to\": \"d\", \"mode\": \"publish\"}",
		"bridge.inbound=[]", "zookeeper.acl=creator" };
	eb__conf   *c = expect_ok(NULL, env, sets, 5);

	(void) state;
	assert_int_equal(c->ingress.route_count, 1);
	assert_int_equal(c->ingress.routes[0].match, EB_INGRESS_MATCH_PREFIX);
	assert_string_equal(c->ingress.routes[0].value, "p");
	assert_int_equal(c->ingress.routes[0].publish, 1 /* publish */);
	assert_false(c->cluster.election.eligible);
	assert_int_equal(c->log.level, 4);
	assert_false(c->bridge_enabled);
	assert_string_equal(c->cluster.node_id, "n-1");
	assert_int_equal(strncmp(c->cluster.address, "ebnode-", 7), 0);
	assert_string_equal(c->ingress.default_route->to, "d");
	assert_int_equal(c->ingress.default_route->publish, 1 /* publish */);
	assert_int_equal(c->bridge.inbound_count, 0); /* explicit: deny all */
	assert_string_equal(c->cluster.auth_scheme, "digest");
	assert_int_equal(c->cluster.acl, EB_CLUSTER_ACL_CREATOR);
	eb__conf_free(c);
}

static void
test_to_json_round_trip(void **state)
{
	const char *sets[] = { "bridge.auth.token=s3cret",
		"ingress.routes=[{\"header\": \"h\", \"equals\": \"v\", "
		"\"to\": \"t\"}]" };
	eb__conf   *c = expect_ok(NULL, NULL, sets, 2), *c2;
	json_t     *j, *j2;
	char       *text;

	(void) state;
	j = eb__conf_to_json(c, false);
	assert_string_equal(
	    json_string_value(json_object_get(
	        json_object_get(json_object_get(j, "bridge"), "auth"),
	        "token")),
	    "<redacted>");
	json_decref(j);
	/* With secrets: printing and loading again gives the same config. */
	j = eb__conf_to_json(c, true);
	text = json_dumps(j, JSON_INDENT(2));
	assert_non_null(text);
	c2 = expect_ok(text, NULL, NULL, 0);
	j2 = eb__conf_to_json(c2, true);
	assert_true(json_equal(j, j2));
	free(text);
	json_decref(j);
	json_decref(j2);
	eb__conf_free(c);
	eb__conf_free(c2);
}

static void
test_env_names(void **state)
{
	char   a[128], b[128];
	size_t i, k;

	(void) state;
	assert_int_equal(
	    eb__conf_env_name("bridge.tls.client_auth", a, 128), 0);
	assert_string_equal(a, "EBNODE_BRIDGE_TLS_CLIENT_AUTH");
	assert_int_equal(eb__conf_env_name("bridge.port", a, 8), EB_ECONF);
	/* No two keys share an environment variable. */
	for (i = 0; i < eb__conf_schema_len; i++) {
		assert_int_equal(
		    eb__conf_env_name(eb__conf_schema[i].path, a, 128), 0);
		for (k = i + 1; k < eb__conf_schema_len; k++) {
			assert_int_equal(
			    eb__conf_env_name(eb__conf_schema[k].path, b, 128),
			    0);
			assert_string_not_equal(a, b);
		}
	}
}

/* ---- the cluster layer (dynamic keys) ------------------------------------ */

static int
load_cluster(const char *file, const char *cluster, eb__conf **c, eb_errbuf *e)
{
	eb__conf_sources src;

	memset(&src, 0, sizeof(src));
	write_file(file);
	src.file = "ebnode.json";
	src.env = no_env;
	src.cluster_text = cluster;
	src.cluster_len = strlen(cluster);
	src.cluster_name = "/r/config v3";
	e->msg[0] = '\0';
	*c = NULL;
	return eb__conf_load(&src, c, e);
}

static int
load_cluster_ok(const char *file, const char *cluster, eb__conf **c)
{
	eb_errbuf e;
	int       rv = load_cluster(file, cluster, c, &e);

	if (rv != 0) {
		fail_msg("unexpected error: %s", e.msg);
	}
	return rv;
}

static void
test_cluster_layer(void **state)
{
	static const char ok_text[] = "{\"log\":{\"level\":\"debug\"}}";
	static const char bad_text[] = "{\"log\":{\"level\":\"loud\"}}";
	static const char file[] =
	    "{\"log\": {\"level\": \"warn\"}, \"bridge\": {\"port\": 7001},\n"
	    " \"ingress\": {\"routes\": [{\"field\": \"k\", \"equals\": "
	    "\"v\", \"to\": \"t0\"}]}}";
	eb__conf *c;
	eb_errbuf e;
	json_t   *d;

	(void) state;
	/* Cluster > file for dynamic keys; the rest stays local. */
	assert_int_equal(load_cluster_ok(file,
	                     "{\"ingress\": {\"routes\": [{\"field\": \"k\", "
	                     "\"equals\": \"v\", \"to\": \"t1\"}], "
	                     "\"hold_ms\": 7}}",
	                     &c),
	    0);
	assert_string_equal(c->ingress.routes[0].to, "t1");
	assert_int_equal(c->ingress.hold_ms, 7);
	assert_int_equal(c->bridge.port, 7001);
	assert_int_equal(c->log.level, EB_LOG_LEVEL_WARN);
	d = eb__conf_dynamic_to_json(c);
	assert_string_equal(json_string_value(json_object_get(
	                        json_object_get(d, "ingress.routes"), "from")),
	    "cluster");
	assert_string_equal(json_string_value(json_object_get(
	                        json_object_get(d, "log.level"), "from")),
	    "file");
	assert_string_equal(
	    json_string_value(json_object_get(
	        json_object_get(d, "ingress.hold_max"), "from")),
	    "default");
	assert_null(json_object_get(d, "bridge.port")); /* static */
	/* Exactly the keys docs/CONFIG.md marks dynamic. */
	{
		static const char *const dyn[] = { "log.level",
			"ingress.hold_max", "ingress.hold_ms", "ingress.ack",
			"ingress.routes", "ingress.default_route",
			"bridge.inbound", "bridge.outbound" };
		size_t                   i;

		assert_int_equal(json_object_size(d), 8);
		for (i = 0; i < 8; i++) {
			assert_non_null(json_object_get(d, dyn[i]));
			assert_true(eb__conf_key_dynamic(dyn[i]));
		}
	}
	json_decref(d);
	eb__conf_free(c);

	/* Static keys, bad values and cross-key rules: the same messages,
	 * named by the cluster source and its positions. */
	assert_int_equal(
	    load_cluster(file, "{\"bridge\": {\"port\": 1}}", &c, &e),
	    EB_ECONF);
	assert_null(c);
	assert_string_equal(e.msg,
	    "/r/config v3:1:13: bridge.port: a static key: set it in each "
	    "node's own configuration");
	assert_int_equal(load_cluster(file,
	                     "{\"ingress\":{\"routes\":[{\"field\":\"k\","
	                     "\"equals\":\"x\"}]}}",
	                     &c, &e),
	    EB_ECONF);
	assert_string_equal(e.msg,
	    "/r/config v3:1:23: ingress.routes[0]: missing required key "
	    "\"to\"");
	assert_int_equal(load_cluster(file,
	                     "{\"ingress\":{\"default_route\":{\"to\":"
	                     "\"external.ingress\"}}}",
	                     &c, &e),
	    EB_ECONF);
	assert_string_equal(e.msg,
	    "/r/config v3:1:29: ingress.default_route: routes back to "
	    "ingress.address \"external.ingress\"");
	assert_int_equal(load_cluster(file, "[1]", &c, &e), EB_ECONF);

	assert_int_equal(
	    eb__conf_check_dynamic(ok_text, strlen(ok_text), "f.json", &e), 0);
	assert_int_equal(
	    eb__conf_check_dynamic(bad_text, strlen(bad_text), "f.json", &e),
	    EB_ECONF);
	assert_string_equal(e.msg, "f.json:1:17: log.level: expected one of "
	                           "err|warn|notice|info|debug, got \"loud\"");
	assert_true(eb__conf_key_dynamic("bridge.outbound"));
	assert_true(eb__conf_key_dynamic("ingress.ack"));
	assert_false(eb__conf_key_dynamic("bridge.port"));
	assert_false(eb__conf_key_dynamic("ingress.address"));
}

static void
test_static_changes(void **state)
{
	eb__conf *a, *b;
	char      keys[100];

	(void) state;
	a = expect_ok("{\"bridge\": {\"port\": 7001}}", NULL, NULL, 0);
	assert_int_equal(load_cluster_ok("{\"bridge\": {\"port\": 7002}, "
	                                 "\"admin\": {\"port\": 7101}}",
	                     "{\"log\": {\"level\": \"debug\"}}", &b),
	    0);
	assert_int_equal(eb__conf_static_changes(a, b, keys, sizeof(keys)), 2);
	assert_string_equal(keys, "bridge.port,admin.port");
	eb__conf_free(a);
	eb__conf_free(b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cluster_layer),
		cmocka_unit_test(test_static_changes),
		cmocka_unit_test(test_err_out_of_range),
		cmocka_unit_test(test_err_unknown_key),
		cmocka_unit_test(test_err_wrong_type),
		cmocka_unit_test(test_err_duplicate_key),
		cmocka_unit_test(test_err_syntax),
		cmocka_unit_test(test_err_missing_file),
		cmocka_unit_test(test_err_in_memory_text),
		cmocka_unit_test(test_err_bad_enum),
		cmocka_unit_test(test_err_bad_regex),
		cmocka_unit_test(test_err_route_shape),
		cmocka_unit_test(test_err_combos),
		cmocka_unit_test(test_vertx),
		cmocka_unit_test(test_err_lease),
		cmocka_unit_test(test_link_timeout_raised),
		cmocka_unit_test(test_optional_keys),
		cmocka_unit_test(test_err_zk_connect),
		cmocka_unit_test(test_err_zk_floors),
		cmocka_unit_test(test_err_env),
		cmocka_unit_test(test_err_flags),
		cmocka_unit_test(test_err_comments_and_columns),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_comments_and_values),
		cmocka_unit_test(test_precedence),
		cmocka_unit_test(test_env_and_flag_types),
		cmocka_unit_test(test_to_json_round_trip),
		cmocka_unit_test(test_env_names),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
