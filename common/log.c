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

#include "common/log_int.h"

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

void
eb__log_stderr_sink(eb_log_level level, const char *line, void *arg)
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

/* Room an escape needs: \xHH. */
#define ESC_MAX 4

/* Writes the escape of byte c at out (ESC_MAX bytes of room); returns its
 * length, 0 when c needs none. */
static size_t
escape_byte(unsigned char c, char *out, int quoted)
{
	static const char hex[] = "0123456789abcdef";

	if (quoted && (c == '"' || c == '\\')) {
		out[0] = '\\';
		out[1] = (char) c;
		return 2;
	}
	if (c >= 0x20 && c != 0x7f) {
		return 0;
	}
	out[0] = '\\';
	switch (c) {
	case '\n':
		out[1] = 'n';
		return 2;
	case '\r':
		out[1] = 'r';
		return 2;
	case '\t':
		out[1] = 't';
		return 2;
	default:
		out[1] = 'x';
		out[2] = hex[c >> 4];
		out[3] = hex[c & 0xf];
		return 4;
	}
}

const char *
eb_log_quote_n(char *buf, size_t size, const char *s, size_t len)
{
	/* Room kept for the closing quote, "..." and the NUL. */
	const size_t tail = 5;
	size_t       o = 0;
	size_t       i;

	if (size < 8) {
		if (size > 0) {
			buf[0] = '\0';
		}
		return buf;
	}
	if (s == NULL) {
		(void) snprintf(buf, size, "null");
		return buf;
	}
	buf[o++] = '"';
	for (i = 0; i < len; i++) {
		char   esc[ESC_MAX];
		size_t n = escape_byte((unsigned char) s[i], esc, 1);
		size_t need = n != 0 ? n : 1;

		if (o + need + tail > size) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (n != 0) {
			memcpy(buf + o, esc, n);
		} else {
			buf[o] = s[i];
		}
		o += need;
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

const char *
eb_log_quote(char *buf, size_t size, const char *s)
{
	return eb_log_quote_n(buf, size, s, s != NULL ? strlen(s) : 0);
}

/* Escapes control characters of line in place (up to size bytes in all):
 * one event is always one line. What does not fit is cut. */
static void
escape_line(char *line, size_t size)
{
	char   tmp[1536];
	size_t o = 0;
	size_t i;

	for (i = 0; line[i] != '\0'; i++) {
		if ((unsigned char) line[i] < 0x20 ||
		    (unsigned char) line[i] == 0x7f) {
			break;
		}
	}
	if (line[i] == '\0') {
		return; /* the common case: nothing to escape */
	}
	for (i = 0; line[i] != '\0' && o + ESC_MAX < sizeof(tmp); i++) {
		size_t n = escape_byte((unsigned char) line[i], tmp + o, 0);

		if (n == 0) {
			tmp[o++] = line[i];
		} else {
			o += n;
		}
	}
	tmp[o] = '\0';
	(void) snprintf(line, size, "%s", tmp);
}

static unsigned long long
rl_now_ms(void)
{
	struct timespec ts;

	(void) clock_gettime(CLOCK_MONOTONIC, &ts);
	/* +1: 0 means "no window yet" */
	return (unsigned long long) ts.tv_sec * 1000ull +
	       (unsigned long long) ts.tv_nsec / 1000000ull + 1ull;
}

/* Keys with suppressed lines whose summary is not written yet (static
 * storage, so the pointers stay valid), newest first. */
static eb_log_rl *rl_due;
static int        rl_flushing; /* a summary is being written */

static void
rl_summary(eb_log_rl *rl, unsigned long long now)
{
	const char *colon = strchr(rl->fmt, ':');

	eb_log_write(rl->level, rl->module,
	    "log-suppressed: event=%.*s suppressed=%llu window_ms=%llu",
	    (int) (colon != NULL ? (size_t) (colon - rl->fmt)
	                         : strlen(rl->fmt)),
	    rl->fmt, rl->suppressed, now - rl->window_ms);
	rl->suppressed = 0;
}

/* Writes the summary of every key whose window is over, oldest window
 * first, and takes it off the list. */
static void
rl_flush_due(unsigned long long now)
{
	for (;;) {
		eb_log_rl **pp;
		eb_log_rl **oldest = NULL;
		eb_log_rl  *rl;

		for (pp = &rl_due; *pp != NULL; pp = &(*pp)->next_due) {
			if (now - (*pp)->window_ms >= EB_LOG_RL_WINDOW_MS &&
			    (oldest == NULL ||
			        (*pp)->window_ms < (*oldest)->window_ms)) {
				oldest = pp;
			}
		}
		if (oldest == NULL) {
			return;
		}
		rl = *oldest;
		*oldest = rl->next_due;
		rl->next_due = NULL;
		rl_flushing = 1;
		rl_summary(rl, now);
		rl_flushing = 0;
	}
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
	escape_line(line, sizeof(line));
	/* Summaries of floods that ended go first, in time order. */
	if (rl_due != NULL && !rl_flushing) {
		rl_flush_due(rl_now_ms());
	}
	if (log_sink != NULL) {
		log_sink(level, line, log_sink_arg);
	} else {
		eb__log_stderr_sink(level, line, NULL);
	}
}

int
eb_log_rl_admit(
    eb_log_rl *rl, eb_log_level level, const char *module, const char *fmt)
{
	unsigned long long now = rl_now_ms();

	/* This key's summary, if due, and any other key's. */
	if (rl_due != NULL) {
		rl_flush_due(now);
	}
	if (rl->window_ms == 0 || now - rl->window_ms >= EB_LOG_RL_WINDOW_MS) {
		rl->window_ms = now;
		rl->written = 0;
	}
	if (rl->written < EB_LOG_RL_BURST) {
		rl->written++;
		return 1;
	}
	if (rl->suppressed++ == 0) {
		rl->level = level;
		rl->module = module;
		rl->fmt = fmt;
		rl->next_due = rl_due;
		rl_due = rl;
	}
	return 0;
}
