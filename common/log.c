/*
 * Logging: level filter, line assembly and the sink. The default sink writes
 * "<seconds.micros> LEVEL module: ..." to stderr, unbuffered, one write(2) per
 * line so that lines of concurrent processes sharing a pipe do not interleave.
 * Process-global state; loop thread only (ebnode has one thread).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <ebnode/err.h>
#include <ebnode/log.h>

static eb_log_level   log_level = EB_LOG_LEVEL_INFO;
static eb_log_sink_fn log_sink;
static void          *log_sink_arg;

static const char *const level_names[] = { "ERR", "WARN", "NOTICE", "INFO",
	"DEBUG" };

void
eb_log_set_sink(eb_log_sink_fn fn, void *arg)
{
	log_sink = fn;
	log_sink_arg = arg;
}

void
eb_log_set_level(eb_log_level level)
{
	log_level = level;
}

eb_log_level
eb_log_get_level(void)
{
	return log_level;
}

const char *
eb_log_level_name(eb_log_level level)
{
	if ((unsigned) level > EB_LOG_LEVEL_DEBUG) {
		return "?";
	}
	return level_names[level];
}

int
eb_log_level_parse(const char *s, eb_log_level *out)
{
	unsigned i;

	for (i = 0; i <= (unsigned) EB_LOG_LEVEL_DEBUG; i++) {
		if (strcasecmp(s, level_names[i]) == 0) {
			*out = (eb_log_level) i;
			return 0;
		}
	}
	if (strcasecmp(s, "error") == 0) {
		*out = EB_LOG_LEVEL_ERR;
		return 0;
	}
	if (strcasecmp(s, "warning") == 0) {
		*out = EB_LOG_LEVEL_WARN;
		return 0;
	}
	return EB_ECONF;
}

static void
stderr_sink(eb_log_level level, const char *line, void *arg)
{
	struct timespec ts;
	char            buf[2048];
	int             n;
	size_t          len;

	(void) level;
	(void) arg;
	(void) clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(buf, sizeof(buf), "%lld.%06ld %s\n", (long long) ts.tv_sec,
	    ts.tv_nsec / 1000, line);
	if (n < 0) {
		return;
	}
	len = (size_t) n < sizeof(buf) ? (size_t) n : sizeof(buf) - 1;
	if ((size_t) n >= sizeof(buf)) {
		buf[len - 1] = '\n'; /* truncated: keep one line per event */
	}
	(void) write(STDERR_FILENO, buf, len);
}

void
eb_log_write(eb_log_level level, const char *module, const char *fmt, ...)
{
	char    line[1536];
	int     n;
	va_list ap;

	n = snprintf(
	    line, sizeof(line), "%s %s: ", eb_log_level_name(level), module);
	if (n < 0 || (size_t) n >= sizeof(line)) {
		return;
	}
	va_start(ap, fmt);
	(void) vsnprintf(line + n, sizeof(line) - (size_t) n, fmt, ap);
	va_end(ap);
	if (log_sink != NULL) {
		log_sink(level, line, log_sink_arg);
	} else {
		stderr_sink(level, line, NULL);
	}
}
