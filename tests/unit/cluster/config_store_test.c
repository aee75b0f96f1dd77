/*
 * <root>/config writes and history (cluster/config.c) on the in-memory
 * ZooKeeper: compare-and-set with the version (create at 0, conflict on a
 * stale version, also after an external write such as zkCli's), a history
 * copy per write, trimmed to EB_CLUSTER_CONFIG_HISTORY in the same multi
 * (so already when the write is answered, and a backlog in one write), read
 * oldest first; a configuration too long for one request with its history
 * copy is refused before anything is sent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster_int.h"
#include "tests/harness/fakezk.h"
#include "tests/harness/th.h"

#define ROOT "/ebnode/t"

static fakezk_server *srv;
static int            connected;
static int            done;
static int            status;
static int64_t        version;
static size_t         n_hist;
static int64_t        first_hist, last_hist;
static char           last_data[64];

static void
event_cb(eb__zk *zk, eb__zk_event ev, void *arg)
{
	(void) zk;
	(void) arg;
	if (ev == EB_ZK_EV_CONNECTED) {
		connected = 1;
	}
}

static void
written_cb(int st, int64_t v, void *arg)
{
	(void) arg;
	status = st;
	version = v;
	done = 1;
}

static void
history_cb(int st, const eb__config_version *v, size_t n, void *arg)
{
	(void) arg;
	status = st;
	n_hist = n;
	first_hist = n > 0 ? v[0].version : 0;
	last_hist = n > 0 ? v[n - 1].version : 0;
	(void) snprintf(
	    last_data, sizeof(last_data), "%s", n > 0 ? v[n - 1].data : "");
	done = 1;
}

static int
write_cfg(th_loop *t, eb__zk *zk, const char *data, int64_t expected)
{
	done = 0;
	assert_int_equal(eb__config_write(zk, ROOT, data, strlen(data),
	                     expected, written_cb, NULL),
	    0);
	assert_int_equal(th_run_until(t, th_flag_set, &done, 2000), 0);
	return status;
}

static void
zk_closed_cb(eb__zk *zk, void *arg)
{
	(void) zk;
	(*(int *) arg)++;
}

static void
test_cas_and_history(void **state)
{
	th_loop    *t = *state;
	eb__zk     *zk;
	eb__zk_stat st;
	char        buf[64], data[32];
	int         i, closed = 0;

	srv = fakezk_server_new(&t->loop);
	assert_int_equal(fakezk_client_new(srv, 400, event_cb, NULL, &zk), 0);
	assert_int_equal(eb__zk_start(zk), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &connected, 2000), 0);

	/* Create at 0; a second create conflicts. */
	assert_int_equal(write_cfg(t, zk, "{\"a\":1}", 0), 0);
	assert_int_equal(version, 1);
	assert_int_equal(
	    fakezk_get(srv, ROOT "/config", buf, sizeof(buf), &st), 0);
	assert_string_equal(buf, "{\"a\":1}");
	assert_int_equal(st.version, 0); /* version 1 = data version + 1 */
	assert_true(fakezk_exists(srv, ROOT "/config-history/v-0000000001"));
	assert_int_equal(write_cfg(t, zk, "{\"a\":2}", 0), EB_EZKBADVERSION);

	/* Set at 1 -> 2; a stale version conflicts and writes nothing. */
	assert_int_equal(write_cfg(t, zk, "{\"a\":2}", 1), 0);
	assert_int_equal(version, 2);
	assert_int_equal(write_cfg(t, zk, "{\"a\":3}", 1), EB_EZKBADVERSION);
	assert_false(fakezk_exists(srv, ROOT "/config-history/v-0000000003"));

	/* An external write (zkCli) moves the version: the next CAS at the
	 * old one conflicts; at the new one it succeeds. */
	assert_int_equal(fakezk_set(srv, ROOT "/config", "{\"x\":1}"), 0);
	assert_int_equal(write_cfg(t, zk, "{\"a\":3}", 2), EB_EZKBADVERSION);
	assert_int_equal(write_cfg(t, zk, "{\"a\":4}", 3), 0);
	assert_int_equal(version, 4);

	/* History trimmed to the last EB_CLUSTER_CONFIG_HISTORY, by the
	 * write itself: the count is right when each write is answered
	 * (a writer such as ebctl exits then). */
	for (i = 0; i < 25; i++) {
		(void) snprintf(data, sizeof(data), "{\"i\":%d}", i);
		assert_int_equal(write_cfg(t, zk, data, version), 0);
		assert_true(fakezk_child_count(srv, ROOT "/config-history") <=
		            EB_CLUSTER_CONFIG_HISTORY);
	}
	assert_int_equal(version, 29);
	assert_int_equal(fakezk_child_count(srv, ROOT "/config-history"),
	    EB_CLUSTER_CONFIG_HISTORY);
	done = 0;
	assert_int_equal(eb__config_history(zk, ROOT, history_cb, NULL), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &done, 2000), 0);
	assert_int_equal(status, 0);
	assert_int_equal(n_hist, EB_CLUSTER_CONFIG_HISTORY);
	assert_int_equal(first_hist, 29 - EB_CLUSTER_CONFIG_HISTORY + 1);
	assert_int_equal(last_hist, 29);
	assert_string_equal(last_data, "{\"i\":24}");

	eb__zk_close(zk, zk_closed_cb, &closed);
	assert_int_equal(th_run_until(t, th_flag_set, &closed, 2000), 0);
	fakezk_server_close_run(srv, t);
}

/* A backlog left behind goes in the next write (56 entries were found:
 * the old trim ran after the answer, when ebctl had exited). */
static void
test_history_backlog(void **state)
{
	th_loop *t = *state;
	eb__zk  *zk;
	char     buf[64];
	int      i, closed = 0;

	srv = fakezk_server_new(&t->loop);
	assert_int_equal(fakezk_client_new(srv, 400, event_cb, NULL, &zk), 0);
	connected = 0;
	assert_int_equal(eb__zk_start(zk), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &connected, 2000), 0);
	assert_int_equal(write_cfg(t, zk, "{\"a\":1}", 0), 0);
	/* Versions 2..56 written, and their history never trimmed. */
	for (i = 2; i <= 56; i++) {
		assert_int_equal(fakezk_set(srv, ROOT "/config", "{}"), 0);
		(void) snprintf(
		    buf, sizeof(buf), ROOT "/config-history/v-%010d", i);
		assert_int_equal(fakezk_put(srv, buf, "{}", 0), 0);
	}
	assert_int_equal(fakezk_child_count(srv, ROOT "/config-history"), 56);
	assert_int_equal(write_cfg(t, zk, "{\"b\":1}", 56), 0);
	assert_int_equal(version, 57);
	assert_int_equal(fakezk_child_count(srv, ROOT "/config-history"),
	    EB_CLUSTER_CONFIG_HISTORY);
	assert_true(fakezk_exists(srv, ROOT "/config-history/v-0000000057"));
	assert_true(fakezk_exists(srv, ROOT "/config-history/v-0000000038"));
	assert_false(fakezk_exists(srv, ROOT "/config-history/v-0000000037"));
	assert_false(fakezk_exists(srv, ROOT "/config-history/v-0000000001"));
	eb__zk_close(zk, zk_closed_cb, &closed);
	assert_int_equal(th_run_until(t, th_flag_set, &closed, 2000), 0);
	fakezk_server_close_run(srv, t);
}

/* The bytes go twice into one request: the longest configuration is
 * half the bound less the paths and headers, and one byte more is refused
 * in the call, nothing written. */
static void
test_size_bound(void **state)
{
	th_loop *t = *state;
	eb__zk  *zk;
	char    *big;
	size_t   max;
	int      closed = 0;

	srv = fakezk_server_new(&t->loop);
	assert_int_equal(fakezk_client_new(srv, 400, event_cb, NULL, &zk), 0);
	connected = 0;
	assert_int_equal(eb__zk_start(zk), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &connected, 2000), 0);
	max = eb__config_max_bytes(zk, ROOT);
	assert_true(max > 499000 && max < 500000);
	big = malloc(669000 + 1);
	assert_non_null(big);
	memset(big, ' ', 669000);
	big[0] = '{';
	big[669000 - 1] = '}';
	big[669000] = '\0';
	/* The 669 KB configuration: refused before anything is sent. */
	assert_int_equal(
	    eb__config_write(zk, ROOT, big, 669000, 0, written_cb, NULL),
	    EB_EZKTOOBIG);
	assert_int_equal(
	    eb__config_write(zk, ROOT, big, max + 1, 0, written_cb, NULL),
	    EB_EZKTOOBIG);
	assert_int_equal(fakezk_requests(zk), 0);
	/* At the bound: written, with its history copy. */
	big[max - 1] = '}';
	done = 0;
	assert_int_equal(
	    eb__config_write(zk, ROOT, big, max, 0, written_cb, NULL), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &done, 2000), 0);
	assert_int_equal(status, 0);
	assert_true(fakezk_exists(srv, ROOT "/config-history/v-0000000001"));
	free(big);
	eb__zk_close(zk, zk_closed_cb, &closed);
	assert_int_equal(th_run_until(t, th_flag_set, &closed, 2000), 0);
	fakezk_server_close_run(srv, t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_cas_and_history, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_history_backlog, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_size_bound, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
