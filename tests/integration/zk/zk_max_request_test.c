/*
 * it.zk.max_request: zookeeper.max_request_bytes against the real ZooKeeper
 * fixture (shared `zk`, default jute.maxbuffer 1048575).
 *   - the estimate never undercounts: with the bound set to the server's own
 *     limit, a create and a multi estimated at exactly that limit are
 *     accepted;
 *   - its slack is known: a create with the open ACL is 45 bytes below its
 *     estimate, to the byte (limit + 45 taken, limit + 46 dropped);
 *   - at the default bound a request estimated at the bound is sent and one
 *     byte more (create, set, a multi) is refused in the call with
 *     EB_EZKTOOBIG, and the session never notices: no session event, the
 *     same session id, the next request answered;
 *   - the control: the same multi with the check out of the way (the bound
 *     raised far above the server's, as every build before the check) makes
 *     the server drop the connection (EB_EZKLOSS, SUSPENDED): the failure the
 *     bound exists for.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/log.h>

#include "tests/harness/th.h"
#include "tests/integration/zk/zkit.h"
#include "zk/zk.h"

/* The server's default jute.maxbuffer: the largest length it reads. Our
 * estimate also counts the 4-byte length prefix itself. */
#define SERVER_MAX   1048575u
#define SERVER_BOUND (SERVER_MAX + 4u)
#define BIG          600000u

/* The "request-too-big" lines logged (the rest goes to stderr). */
static char too_big_line[512];
static int  too_big_lines;

static void
log_sink(eb_log_level level, const char *line, void *arg)
{
	(void) arg;
	if (strstr(line, "request-too-big") != NULL) {
		too_big_lines++;
		assert_int_equal(level, EB_LOG_LEVEL_WARN);
		(void) snprintf(too_big_line, sizeof(too_big_line), "%s", line);
	}
	(void) fprintf(stderr, "%s\n", line);
}

static eb__zk *
open_bounded(th_loop *t, size_t max_request, zkit_events *e)
{
	eb__zk_opts o;
	eb__zk     *zk = NULL;

	eb__zk_opts_init(&o);
	o.connect = zkit_connect_str;
	o.session_timeout_ms = 10000;
	o.max_request_bytes = max_request;
	assert_int_equal(eb__zk_new(&t->loop, &o, zkit_on_event, e, &zk), 0);
	assert_int_equal(eb__zk_start(zk), 0);
	assert_int_equal(zkit_wait_events(t, e, e->n + 1, 20000), 0);
	assert_int_equal(e->ev[e->n - 1], EB_ZK_EV_CONNECTED);
	assert_int_equal(eb__zk_max_request(zk), max_request);
	return zk;
}

/* A NUL-terminated string of n bytes (malloc'd). */
static char *
filler(size_t n)
{
	char *s = malloc(n + 1);

	assert_non_null(s);
	memset(s, 'z', n);
	s[n] = '\0';
	return s;
}

/* The data length that makes a create of path estimate exactly `bytes`. */
static size_t
fit_create(eb__zk *zk, const char *path, size_t bytes)
{
	eb__zk_op op = { .type = EB_ZK_OP_CREATE, .path = path, .data = "" };
	size_t    base = eb__zk_op_bytes(zk, &op);

	assert_true(base < bytes);
	return bytes - base;
}

struct multi_res {
	int done;
	int status;
};

static void
multi_cb(
    eb__zk *zk, int status, const eb__zk_op_result *res, size_t n, void *arg)
{
	struct multi_res *m = arg;

	(void) zk;
	(void) res;
	(void) n;
	m->done++;
	m->status = status;
}

static void
never_create_cb(eb__zk *zk, int status, const char *path, void *arg)
{
	(void) zk;
	(void) status;
	(void) path;
	(void) arg;
	fail_msg("a refused request called back");
}

static void
never_stat_cb(eb__zk *zk, int status, const eb__zk_stat *st, void *arg)
{
	(void) zk;
	(void) status;
	(void) st;
	(void) arg;
	fail_msg("a refused request called back");
}

static void
cleanup(th_loop *t, eb__zk *zk, const char *root, const char *const *names)
{
	char p[256];

	for (; *names != NULL; names++) {
		(void) snprintf(p, sizeof(p), "%s/%s", root, *names);
		(void) zkit_delete(t, zk, p, -1);
	}
	(void) zkit_delete(t, zk, root, -1);
}

static void
test_estimate_never_undercounts(void **state)
{
	th_loop          *t = *state;
	zkit_events       e = { .n = 0 };
	zkit_res          r;
	char              root[128], big[192], m[192];
	const char *const names[] = { "big", "m", NULL };
	struct multi_res  mr = { 0, 0 };
	eb__zk_op         ops[2];
	eb__zk           *zk;
	char             *data;
	size_t            n, len;

	th_watchdog_ms(t, 60000);
	zkit_unique_root(root, sizeof(root));
	(void) snprintf(big, sizeof(big), "%s/big", root);
	(void) snprintf(m, sizeof(m), "%s/m", root);
	zk = open_bounded(t, SERVER_BOUND, &e);
	assert_int_equal(zkit_ensure(t, zk, root), 0);
	n = fit_create(zk, big, SERVER_BOUND);
	data = filler(n);
	/* Estimated at the server's limit: the real request is not above it,
	 * so the server takes it. */
	memset(&r, 0, sizeof(r));
	assert_int_equal(zkit_create(t, zk, big, data, 0, &r), 0);
	memset(&r, 0, sizeof(r));
	assert_int_equal(zkit_exists(t, zk, big, NULL, NULL, &r), 0);
	assert_int_equal(r.stat.data_length, (int32_t) n);
	/* The same for a multi (a set and a create) at the server's limit. */
	memset(ops, 0, sizeof(ops));
	ops[0] = (eb__zk_op){
		.type = EB_ZK_OP_SET, .path = big, .data = data, .version = -1
	};
	ops[1] = (eb__zk_op){ .type = EB_ZK_OP_CREATE, .path = m, .data = "" };
	len = SERVER_BOUND - eb__zk_multi_bytes(zk, ops, 2);
	assert_true(len <= n);
	ops[0].len = len;
	assert_int_equal(eb__zk_multi_bytes(zk, ops, 2), SERVER_BOUND);
	assert_int_equal(eb__zk_multi(zk, ops, 2, multi_cb, &mr), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &mr.done, 15000), 0);
	assert_int_equal(mr.status, 0);
	assert_int_equal(e.n, 1); /* CONNECTED only */
	(void) fprintf(stderr,
	    "max_request: create of %zu data bytes and a multi setting %zu, "
	    "both estimated at %u, accepted\n",
	    n, len, SERVER_BOUND);
	cleanup(t, zk, root, names);
	free(data);
	zkit_close(t, zk);
}

/* The estimate's slack, pinned against the server: a create with the open
 * ACL is estimated 45 bytes above its real size (ACL allowance 64 for 27,
 * 8 for a TTL not sent), so estimated at the server's limit + 45 it is
 * exactly at the limit and taken, and one byte more is refused by the
 * server (the connection dropped). */
static void
test_estimate_slack(void **state)
{
	th_loop          *t = *state;
	zkit_events       e = { .n = 0 };
	zkit_res          r;
	char              root[128], p1[192], p2[192];
	const char *const names[] = { "p1", "p2", NULL };
	eb__zk           *zk;
	char             *data;
	size_t            n;

	th_watchdog_ms(t, 60000);
	zkit_unique_root(root, sizeof(root));
	(void) snprintf(p1, sizeof(p1), "%s/p1", root);
	(void) snprintf(p2, sizeof(p2), "%s/p2", root);
	zk = open_bounded(t, 100u << 20, &e);
	assert_int_equal(zkit_ensure(t, zk, root), 0);
	n = fit_create(zk, p1, SERVER_BOUND + 45);
	data = filler(n + 1);
	data[n] = '\0';
	assert_int_equal(zkit_create(t, zk, p1, data, 0, &r), 0);
	assert_int_equal(e.n, 1);
	data[n] = 'z';
	assert_int_equal(zkit_create(t, zk, p2, data, 0, &r), EB_EZKLOSS);
	assert_int_equal(zkit_wait_events(t, &e, 3, 20000), 0);
	assert_int_equal(e.ev[1], EB_ZK_EV_SUSPENDED);
	assert_int_equal(e.ev[2], EB_ZK_EV_RECONNECTED);
	cleanup(t, zk, root, names);
	free(data);
	zkit_close(t, zk);
}

static void
test_refused_locally_session_untouched(void **state)
{
	th_loop          *t = *state;
	zkit_events       e = { .n = 0 };
	zkit_res          r;
	struct multi_res  m = { 0, 0 };
	char              root[128], a[192], b[192];
	const char *const names[] = { "a", "b", NULL };
	eb__zk           *zk;
	eb__zk_op         ops[2], set;
	char             *data;
	size_t            n, nset;
	int64_t           sid;

	th_watchdog_ms(t, 60000);
	zkit_unique_root(root, sizeof(root));
	(void) snprintf(a, sizeof(a), "%s/a", root);
	(void) snprintf(b, sizeof(b), "%s/b", root);
	zk = open_bounded(t, EB_ZK_DEFAULT_MAX_REQUEST, &e);
	sid = eb__zk_session_id(zk);
	assert_int_equal(zkit_ensure(t, zk, root), 0);
	assert_int_equal(zkit_create(t, zk, b, "", 0, &r), 0);
	n = fit_create(zk, a, EB_ZK_DEFAULT_MAX_REQUEST);
	data = filler(n + 128);
	data[n + 1] = '\0';
	/* One byte over: refused in the call, nothing sent, one line with
	 * both figures. */
	too_big_lines = 0;
	eb_log_set_sink(log_sink, NULL);
	assert_int_equal(
	    eb__zk_create(zk, a, data, n + 1, 0, never_create_cb, NULL),
	    EB_EZKTOOBIG);
	eb_log_set_sink(NULL, NULL);
	assert_int_equal(too_big_lines, 1);
	assert_non_null(strstr(
	    too_big_line, "zk: request-too-big: op=create path=/ebtest-zk/"));
	assert_non_null(
	    strstr(too_big_line, "bytes=1000001 max_request_bytes=1000000"));
	assert_string_equal(eb_strerror(EB_EZKTOOBIG),
	    "ZooKeeper request exceeds zookeeper.max_request_bytes");
	/* At the bound: sent and taken. */
	data[n] = '\0';
	memset(&r, 0, sizeof(r));
	assert_int_equal(zkit_create(t, zk, a, data, 0, &r), 0);
	/* A set of the same node one byte over the bound. */
	set = (eb__zk_op){ .type = EB_ZK_OP_SET, .path = a, .data = data };
	nset = EB_ZK_DEFAULT_MAX_REQUEST - eb__zk_op_bytes(zk, &set) + 1;
	assert_true(nset < n + 128);
	assert_int_equal(eb__zk_set(zk, a, data, nset, -1, never_stat_cb, NULL),
	    EB_EZKTOOBIG);
	/* A multi of two writes that each fit but not together. */
	memset(ops, 0, sizeof(ops));
	ops[0] = (eb__zk_op){ .type = EB_ZK_OP_SET,
		.path = a,
		.data = data,
		.len = BIG,
		.version = -1 };
	ops[1] = ops[0];
	ops[1].path = b;
	assert_true(eb__zk_multi_bytes(zk, ops, 2) > EB_ZK_DEFAULT_MAX_REQUEST);
	assert_int_equal(eb__zk_multi(zk, ops, 2, multi_cb, &m), EB_EZKTOOBIG);
	assert_int_equal(eb__zk_too_big(zk), 3);
	/* The session never noticed: the next request is answered, on the
	 * same session, with no event in between. */
	memset(&r, 0, sizeof(r));
	assert_int_equal(zkit_exists(t, zk, a, NULL, NULL, &r), 0);
	assert_int_equal(r.stat.data_length, (int32_t) n);
	ops[0].len = 1000;
	ops[1].len = 1000;
	assert_int_equal(eb__zk_multi(zk, ops, 2, multi_cb, &m), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &m.done, 10000), 0);
	assert_int_equal(m.status, 0);
	assert_int_equal(m.done, 1);
	assert_int_equal(e.n, 1); /* CONNECTED only */
	assert_int_equal(eb__zk_get_state(zk), EB_ZK_STATE_CONNECTED);
	assert_true(eb__zk_session_id(zk) == sid);
	cleanup(t, zk, root, names);
	free(data);
	zkit_close(t, zk);
}

static void
test_unchecked_multi_drops_connection(void **state)
{
	th_loop          *t = *state;
	zkit_events       e = { .n = 0 };
	zkit_res          r;
	struct multi_res  m = { 0, 0 };
	char              root[128], a[192], b[192];
	const char *const names[] = { "a", "b", NULL };
	eb__zk           *zk;
	eb__zk_op         ops[2];
	char             *data = filler(BIG);

	th_watchdog_ms(t, 60000);
	zkit_unique_root(root, sizeof(root));
	(void) snprintf(a, sizeof(a), "%s/a", root);
	(void) snprintf(b, sizeof(b), "%s/b", root);
	/* The bound far above the server's: no local check, as before. */
	zk = open_bounded(t, 100u << 20, &e);
	assert_int_equal(zkit_ensure(t, zk, root), 0);
	assert_int_equal(zkit_create(t, zk, a, "", 0, &r), 0);
	assert_int_equal(zkit_create(t, zk, b, "", 0, &r), 0);
	memset(ops, 0, sizeof(ops));
	ops[0] = (eb__zk_op){ .type = EB_ZK_OP_SET,
		.path = a,
		.data = data,
		.len = BIG,
		.version = -1 };
	ops[1] = ops[0];
	ops[1].path = b;
	assert_int_equal(eb__zk_multi(zk, ops, 2, multi_cb, &m), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &m.done, 20000), 0);
	/* The server closed the connection: the whole session suspended. */
	assert_int_equal(m.status, EB_EZKLOSS);
	assert_int_equal(zkit_wait_events(t, &e, 2, 20000), 0);
	assert_int_equal(e.ev[1], EB_ZK_EV_SUSPENDED);
	(void) fprintf(stderr,
	    "max_request: unchecked multi of %zu bytes: status %s, "
	    "session suspended\n",
	    eb__zk_multi_bytes(zk, ops, 2), eb_err_name(m.status));
	/* Back on the same session before cleaning up. */
	assert_int_equal(zkit_wait_events(t, &e, 3, 20000), 0);
	assert_int_equal(e.ev[2], EB_ZK_EV_RECONNECTED);
	cleanup(t, zk, root, names);
	free(data);
	zkit_close(t, zk);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_estimate_never_undercounts, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_estimate_slack, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_refused_locally_session_untouched, th_setup,
		    th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_unchecked_multi_drops_connection, th_setup,
		    th_teardown),
	};

	return cmocka_run_group_tests(
	    tests, zkit_group_setup, zkit_group_teardown);
}
