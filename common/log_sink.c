/*
 * The built-in log sinks besides stderr: the systemd journal and syslog
 * (include/ebnode/log.h, eb_log_sink_open). Loop thread only, like the rest
 * of logging; the state is process-global because the sink is.
 *
 * The journal is spoken natively (one AF_UNIX datagram per entry of
 * KEY=value lines, systemd's "Native Journal Protocol") rather than through
 * libsystemd's sd_journal_send: no new library for the daemon or for
 * embedders of libebnode, and the socket path is a parameter, so a test can
 * stand in for journald with a socket of its own and check every field.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include <uv.h>

#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/log_int.h"

#define JOURNAL_SOCKET_DEFAULT "/run/systemd/journal/socket"
/* Fields per entry: MESSAGE, PRIORITY, SYSLOG_IDENTIFIER, EB_MODULE,
 * EB_EVENT, EB_NODE; each is up to 5 iovecs (binary form: name, \n,
 * length, value, \n). */
#define JOURNAL_FIELDS  6
#define JOURNAL_IOV_MAX ((size_t) JOURNAL_FIELDS * 5u)

static struct {
	eb_log_sink_kind   kind;
	int                fd; /* journal datagram socket; -1: none */
	struct sockaddr_un addr;
	socklen_t          addr_len;
	char              *node;
} sink = { EB_LOG_SINK_STDERR, -1, { 0 }, 0, NULL };

/* syslog(3) / journal PRIORITY of a level: err=3 .. debug=7. */
static int
syslog_priority(eb_log_level level)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO,
		LOG_DEBUG };

	return (unsigned) level <= EB_LOG_LEVEL_DEBUG ? prio[level] : LOG_INFO;
}

typedef struct jentry {
	struct iovec iov[JOURNAL_IOV_MAX];
	uint64_t     lens[JOURNAL_FIELDS];
	size_t       n_iov;
	size_t       n_fields;
} jentry;

static void
jentry_iov(jentry *e, const void *p, size_t len)
{
	/* iovec is not const-correct; sendmsg only reads. */
	union {
		const void *c;
		void       *m;
	} u;

	if (e->n_iov == JOURNAL_IOV_MAX) {
		return; /* cannot happen: six fields at most, sized for */
	}
	u.c = p;
	e->iov[e->n_iov].iov_base = u.m;
	e->iov[e->n_iov].iov_len = len;
	e->n_iov++;
}

/* Adds NAME=value. A value with a newline (a node id may have one) uses the
 * protocol's binary form: NAME\n, 64-bit little-endian length, value, \n. */
static void
jentry_add(jentry *e, const char *name, const char *value, size_t len)
{
	if (memchr(value, '\n', len) == NULL) {
		jentry_iov(e, name, strlen(name));
		jentry_iov(e, "=", 1);
		jentry_iov(e, value, len);
		jentry_iov(e, "\n", 1);
		return;
	}
	{
		uint64_t *le = &e->lens[e->n_fields];
		uint8_t  *b = (uint8_t *) le;
		unsigned  i;

		for (i = 0; i < 8; i++) {
			b[i] = (uint8_t) ((uint64_t) len >> (8 * i));
		}
		jentry_iov(e, name, strlen(name));
		jentry_iov(e, "\n", 1);
		jentry_iov(e, le, 8);
		jentry_iov(e, value, len);
	}
	jentry_iov(e, "\n", 1);
	e->n_fields++;
}

/*
 * The line is "LEVEL module: event-slug: rest" (eb_log_write builds its
 * head), so module and event are cut from it rather than passed along:
 * the sink interface stays one line, as for every other sink.
 */
static void
journal_sink(eb_log_level level, const char *line, void *arg)
{
	char          prio[2];
	const char   *module = strchr(line, ' ');
	const char   *module_end = NULL;
	const char   *event = NULL;
	size_t        event_len = 0;
	jentry        e;
	struct msghdr mh;

	(void) arg;
	memset(&e, 0, sizeof(e));
	prio[0] = (char) ('0' + syslog_priority(level));
	prio[1] = '\0';
	jentry_add(&e, "MESSAGE", line, strlen(line));
	jentry_add(&e, "PRIORITY", prio, 1);
	jentry_add(&e, "SYSLOG_IDENTIFIER", "ebnode", 6);
	if (module != NULL) {
		module++;
		module_end = strstr(module, ": ");
	}
	if (module_end != NULL) {
		jentry_add(
		    &e, "EB_MODULE", module, (size_t) (module_end - module));
		event = module_end + 2;
		event_len = strcspn(event, ":");
		if (event_len > 0) {
			jentry_add(&e, "EB_EVENT", event, event_len);
		}
	}
	if (sink.node != NULL) {
		jentry_add(&e, "EB_NODE", sink.node, strlen(sink.node));
	}
	memset(&mh, 0, sizeof(mh));
	mh.msg_name = &sink.addr;
	mh.msg_namelen = sink.addr_len;
	mh.msg_iov = e.iov;
	mh.msg_iovlen = e.n_iov;
	if (sendmsg(sink.fd, &mh, MSG_NOSIGNAL) < 0) {
		/* journald gone or its queue full: keep the line on stderr */
		eb__log_stderr_sink(level, line, NULL);
	}
}

static void
syslog_sink(eb_log_level level, const char *line, void *arg)
{
	(void) arg;
	syslog(syslog_priority(level), "%s", line);
}

/* Is stderr the journal? systemd sets JOURNAL_STREAM=<dev>:<ino> of the
 * stream it connected; a redirected stderr no longer matches. */
static int
stderr_is_journal(void)
{
	const char        *js = getenv("JOURNAL_STREAM");
	char              *end;
	unsigned long long dev, ino;
	struct stat        st;

	if (js == NULL) {
		return 0;
	}
	errno = 0;
	dev = strtoull(js, &end, 10);
	if (end == js || *end != ':' || errno != 0) {
		return 0;
	}
	js = end + 1;
	ino = strtoull(js, &end, 10);
	if (end == js || *end != '\0' || errno != 0) {
		return 0;
	}
	if (fstat(STDERR_FILENO, &st) != 0) {
		return 0;
	}
	return (unsigned long long) st.st_dev == dev &&
	       (unsigned long long) st.st_ino == ino;
}

static int
journal_open(const char *path)
{
	size_t len;
	int    fd;

	if (path == NULL || path[0] == '\0') {
		path = JOURNAL_SOCKET_DEFAULT;
	}
	len = strlen(path);
	if (len >= sizeof(sink.addr.sun_path)) {
		return UV_ENAMETOOLONG;
	}
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		return uv_translate_sys_error(errno);
	}
	memset(&sink.addr, 0, sizeof(sink.addr));
	sink.addr.sun_family = AF_UNIX;
	memcpy(sink.addr.sun_path, path, len);
	sink.addr_len =
	    (socklen_t) (offsetof(struct sockaddr_un, sun_path) + len + 1);
	/* connect only checks that the journal is there; every send still
	 * names it, so a restarted journald is found again. */
	if (connect(fd, (struct sockaddr *) &sink.addr, sink.addr_len) != 0) {
		int rv = uv_translate_sys_error(errno);

		(void) close(fd);
		return rv;
	}
	sink.fd = fd;
	return 0;
}

void
eb_log_sink_close(void)
{
	eb_log_set_sink(NULL, NULL);
	if (sink.fd >= 0) {
		(void) close(sink.fd);
		sink.fd = -1;
	}
	if (sink.kind == EB_LOG_SINK_SYSLOG) {
		closelog();
	}
	free(sink.node);
	sink.node = NULL;
	sink.kind = EB_LOG_SINK_STDERR;
}

int
eb_log_sink_open(eb_log_sink_kind kind, const char *node,
    const char *journal_socket, eb_log_sink_kind *used)
{
	int rv = 0;

	eb_log_sink_close();
	if (kind == EB_LOG_SINK_AUTO) {
		kind = stderr_is_journal() ? EB_LOG_SINK_JOURNALD
		                           : EB_LOG_SINK_STDERR;
	}
	switch (kind) {
	case EB_LOG_SINK_JOURNALD:
		if ((rv = journal_open(journal_socket)) != 0) {
			kind = EB_LOG_SINK_STDERR;
			break;
		}
		sink.node = node != NULL ? eb__strdup(node) : NULL;
		eb_log_set_sink(journal_sink, NULL);
		break;
	case EB_LOG_SINK_SYSLOG:
		openlog("ebnode", LOG_PID | LOG_NDELAY, LOG_DAEMON);
		eb_log_set_sink(syslog_sink, NULL);
		break;
	default:
		kind = EB_LOG_SINK_STDERR;
		break;
	}
	sink.kind = kind;
	if (used != NULL) {
		*used = kind;
	}
	return rv;
}
