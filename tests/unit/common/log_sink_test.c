/*
 * The built-in log sinks (common/log_sink.c): the journal's native protocol
 * against a datagram socket of the test's own standing in for journald
 * (every field, the binary form for a value with a newline), the fallback
 * when no journal listens, and AUTO choosing stderr when stderr is not the
 * journal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <uv.h>

#include <ebnode/log.h>

#include "tests/harness/th.h"

typedef struct journal {
	char path[108];
	int  fd;
} journal;

static void
journal_bind(journal *j)
{
	struct sockaddr_un a;

	(void) snprintf(j->path, sizeof(j->path), "/tmp/eb-journal-%ld.sock",
	    (long) getpid());
	(void) unlink(j->path);
	j->fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	assert_true(j->fd >= 0);
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	memcpy(a.sun_path, j->path, strlen(j->path) + 1);
	assert_int_equal(bind(j->fd, (struct sockaddr *) &a, sizeof(a)), 0);
}

static void
journal_close(journal *j)
{
	(void) close(j->fd);
	(void) unlink(j->path);
}

/* One entry (sent before the call, so recv does not block). */
static size_t
journal_recv(journal *j, char *buf, size_t size)
{
	ssize_t n = recv(j->fd, buf, size - 1, MSG_DONTWAIT);

	assert_true(n > 0);
	buf[n] = '\0';
	return (size_t) n;
}

/* 1 when the entry has the text field NAME=value as a whole line. */
static int
has_field(const char *entry, size_t len, const char *field)
{
	size_t      fl = strlen(field);
	const char *p = entry;

	while (p < entry + len) {
		const char *nl = memchr(p, '\n', (size_t) (entry + len - p));
		size_t      l =
                    nl != NULL ? (size_t) (nl - p) : (size_t) (entry + len - p);

		if (l == fl && memcmp(p, field, fl) == 0) {
			return 1;
		}
		p += l + 1;
	}
	return 0;
}

static void
test_journal_fields(void **state)
{
	journal          j;
	char             e[4096];
	size_t           n;
	eb_log_sink_kind used = EB_LOG_SINK_AUTO;

	(void) state;
	journal_bind(&j);
	assert_int_equal(
	    eb_log_sink_open(EB_LOG_SINK_JOURNALD, "n-2", j.path, &used), 0);
	assert_int_equal(used, EB_LOG_SINK_JOURNALD);

	EB_LOG_WARN("bridge", "frame-too-big: peer=%s len=%d", "1.2.3.4:5", 9);
	n = journal_recv(&j, e, sizeof(e));
	assert_true(has_field(
	    e, n, "MESSAGE=WARN bridge: frame-too-big: peer=1.2.3.4:5 len=9"));
	assert_true(has_field(e, n, "PRIORITY=4"));
	assert_true(has_field(e, n, "SYSLOG_IDENTIFIER=ebnode"));
	assert_true(has_field(e, n, "EB_MODULE=bridge"));
	assert_true(has_field(e, n, "EB_EVENT=frame-too-big"));
	assert_true(has_field(e, n, "EB_NODE=n-2"));

	/* An event without key=values: the slug is the rest of the line. */
	EB_LOG_ERR("node", "stopped");
	n = journal_recv(&j, e, sizeof(e));
	assert_true(has_field(e, n, "PRIORITY=3"));
	assert_true(has_field(e, n, "EB_EVENT=stopped"));

	/* A newline inside the line is escaped by eb_log_write, so MESSAGE
	 * stays a text field. */
	EB_LOG_NOTICE("conf", "odd: v=%s", "a\nb");
	n = journal_recv(&j, e, sizeof(e));
	assert_true(has_field(e, n, "MESSAGE=NOTICE conf: odd: v=a\\nb"));
	eb_log_sink_close();
	journal_close(&j);
}

/* 1 when the n bytes of e contain the k bytes of want (memmem is GNU). */
static int
contains(const char *e, size_t n, const void *want, size_t k)
{
	size_t i;

	for (i = 0; i + k <= n; i++) {
		if (memcmp(e + i, want, k) == 0) {
			return 1;
		}
	}
	return 0;
}

static void
test_journal_binary_node(void **state)
{
	journal                    j;
	char                       e[4096];
	size_t                     n;
	static const unsigned char want[] = { 'E', 'B', '_', 'N', 'O', 'D', 'E',
		'\n', 3, 0, 0, 0, 0, 0, 0, 0, 'a', '\n', 'b', '\n' };

	(void) state;
	journal_bind(&j);
	assert_int_equal(
	    eb_log_sink_open(EB_LOG_SINK_JOURNALD, "a\nb", j.path, NULL), 0);
	EB_LOG_INFO("node", "started");
	n = journal_recv(&j, e, sizeof(e));
	/* binary form: name, newline, 64-bit LE length, value, newline */
	assert_true(contains(e, n, want, sizeof(want)));
	eb_log_sink_close();
	journal_close(&j);
}

static void
test_journal_missing(void **state)
{
	eb_log_sink_kind used = EB_LOG_SINK_JOURNALD;

	(void) state;
	assert_int_equal(eb_log_sink_open(EB_LOG_SINK_JOURNALD, "n",
	                     "/nonexistent/journal.sock", &used),
	    UV_ENOENT);
	assert_int_equal(used, EB_LOG_SINK_STDERR);
	eb_log_sink_close();
}

static void
test_auto_is_stderr_off_journal(void **state)
{
	eb_log_sink_kind used = EB_LOG_SINK_AUTO;

	(void) state;
	/* Not stderr's device:inode: whatever stderr is here, it is not this.
	 */
	assert_int_equal(setenv("JOURNAL_STREAM", "0:0", 1), 0);
	assert_int_equal(
	    eb_log_sink_open(EB_LOG_SINK_AUTO, "n", NULL, &used), 0);
	assert_int_equal(used, EB_LOG_SINK_STDERR);
	eb_log_sink_close();
	assert_int_equal(unsetenv("JOURNAL_STREAM"), 0);
	assert_int_equal(
	    eb_log_sink_open(EB_LOG_SINK_AUTO, "n", NULL, &used), 0);
	assert_int_equal(used, EB_LOG_SINK_STDERR);
	eb_log_sink_close();
}

int
main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_journal_fields),
		cmocka_unit_test(test_journal_binary_node),
		cmocka_unit_test(test_journal_missing),
		cmocka_unit_test(test_auto_is_stderr_off_journal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
