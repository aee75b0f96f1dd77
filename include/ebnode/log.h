/*
 * Logging. One line per event, in the form
 *
 *     LEVEL module: event-slug: key=value key=value
 *
 * e.g. "WARN bridge: frame-too-big: peer=127.0.0.1:4711 len=5242880
 * max=1048576". The macros check the level before evaluating their arguments.
 * The default sink writes to stderr with a wall-clock timestamp prefix
 * (microseconds since the Unix epoch), which integration tests use to order
 * events across processes. Loop thread only; the sink is process-global.
 */
#ifndef EBNODE_LOG_H
#define EBNODE_LOG_H

#include <stdarg.h>
#include <stddef.h>

#include <ebnode/api.h>

typedef enum eb_log_level {
	EB_LOG_LEVEL_ERR = 0,
	EB_LOG_LEVEL_WARN = 1,
	EB_LOG_LEVEL_NOTICE = 2,
	EB_LOG_LEVEL_INFO = 3,
	EB_LOG_LEVEL_DEBUG = 4
} eb_log_level;

/* The sink receives the complete line without a trailing newline. */
typedef void (*eb_log_sink_fn)(eb_log_level level, const char *line, void *arg);

EB_API void eb_log_set_sink(eb_log_sink_fn fn, void *arg); /* NULL: stderr */

/*
 * The built-in sinks (ebnode's log.sink). Each gets the same line.
 *   STDERR   "<seconds.micros> LINE" on stderr (the default);
 *   JOURNALD the systemd journal's native protocol: one datagram per line to
 *            journal_socket (NULL: /run/systemd/journal/socket) with
 *            MESSAGE=LINE, PRIORITY (syslog level), SYSLOG_IDENTIFIER=ebnode
 *            and the structured fields EB_MODULE, EB_EVENT (the slug before
 *            the first ':') and EB_NODE (node, omitted when NULL). A line
 *            the journal does not take goes to stderr instead;
 *   SYSLOG   syslog(3), facility daemon, ident "ebnode", with the pid;
 *   AUTO     JOURNALD when stderr is the journal (systemd sets
 *            $JOURNAL_STREAM to stderr's device:inode), else STDERR.
 */
typedef enum eb_log_sink_kind {
	EB_LOG_SINK_AUTO = 0,
	EB_LOG_SINK_STDERR = 1,
	EB_LOG_SINK_JOURNALD = 2,
	EB_LOG_SINK_SYSLOG = 3
} eb_log_sink_kind;

/*
 * Replaces the sink with a built-in one (closing the previous built-in
 * one). Returns 0, or a negative UV_* error when the journal socket cannot
 * be opened (the sink is then stderr). *used (may be NULL) gets the kind in
 * effect, never AUTO.
 */
EB_API int eb_log_sink_open(eb_log_sink_kind kind, const char *node,
    const char *journal_socket, eb_log_sink_kind *used);
/* Back to the stderr sink; frees what eb_log_sink_open took. */
EB_API void         eb_log_sink_close(void);
EB_API void         eb_log_set_level(eb_log_level level);
EB_API eb_log_level eb_log_get_level(void);
/* Parses "err|warn|notice|info|debug"; returns 0 or EB_ECONF. */
EB_API int         eb_log_level_parse(const char *s, eb_log_level *out);
EB_API const char *eb_log_level_name(eb_log_level level);

/*
 * Every line is one event: eb_log_write escapes control characters (a
 * newline becomes the two characters \n, other bytes below 0x20 and 0x7f
 * become \xHH) in the formatted line, so no argument can start a forged
 * line. Values that a client or peer chose (addresses, paths, node ids read
 * from ZooKeeper, frame fields) must in addition be logged through
 * eb_log_quote, so that they cannot forge key=value fields within the line.
 */
EB_API void eb_log_write(eb_log_level level, const char *module,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Room for a quoted value: at most EB_LOG_QUOTE_MAX - 1 bytes. */
#define EB_LOG_QUOTE_MAX 256

/*
 * Writes s (NULL: the text null, unquoted) into buf as a double-quoted
 * string: '"' and '\\' are escaped with a backslash, control characters
 * and 0x7f as \n, \r, \t or \xHH. A value that does not fit ends in
 * "..." inside the quotes. size must be at least 8. Returns buf, so it can
 * be a printf argument: EB_LOG_WARN("m", "x: address=%s",
 * eb_log_quote(q, sizeof(q), address)).
 */
EB_API const char *eb_log_quote(char *buf, size_t size, const char *s);
/* The same for len bytes of s, which need not be NUL-terminated. */
EB_API const char *eb_log_quote_n(
    char *buf, size_t size, const char *s, size_t len);

#define EB_LOG_AT(lvl, module, ...)                                 \
	do {                                                        \
		if ((lvl) <= eb_log_get_level()) {                  \
			eb_log_write((lvl), (module), __VA_ARGS__); \
		}                                                   \
	} while (0)

#define EB_LOG_ERR(module, ...) EB_LOG_AT(EB_LOG_LEVEL_ERR, module, __VA_ARGS__)
#define EB_LOG_WARN(module, ...) \
	EB_LOG_AT(EB_LOG_LEVEL_WARN, module, __VA_ARGS__)
#define EB_LOG_NOTICE(module, ...) \
	EB_LOG_AT(EB_LOG_LEVEL_NOTICE, module, __VA_ARGS__)
#define EB_LOG_INFO(module, ...) \
	EB_LOG_AT(EB_LOG_LEVEL_INFO, module, __VA_ARGS__)
#define EB_LOG_DEBUG(module, ...) \
	EB_LOG_AT(EB_LOG_LEVEL_DEBUG, module, __VA_ARGS__)

/*
 * Rate-limited logging per event key (the call site): in each window of
 * EB_LOG_RL_WINDOW_MS the first EB_LOG_RL_BURST lines are written, the
 * rest only counted. Once the window is over, one summary
 * "log-suppressed: event=<slug> suppressed=N window_ms=W" (slug: fmt up to
 * its first ':'; W: from the window's start to the summary) is written
 * before the next log line of any event, rate-limited or not, or of this
 * event, whichever comes first; no timer is involved, so a process that logs
 * nothing more after a flood writes its summary with its next line (at the
 * latest the stop lines). For events a peer or an outage can repeat without
 * bound. A key must have static storage (the macros' per-site struct): a
 * key with suppressed lines is linked on a process-wide list until its
 * summary. Loop thread only, like the rest of logging.
 */
#define EB_LOG_RL_BURST     3u
#define EB_LOG_RL_WINDOW_MS 5000u

typedef struct eb_log_rl {
	unsigned long long window_ms; /* start of the window; 0: none yet */
	unsigned long long suppressed;
	unsigned           written;
	/* While suppressed > 0: on the list of summaries due, with what the
	 * summary needs (module and fmt are the call site's literals). */
	struct eb_log_rl *next_due;
	const char       *module;
	const char       *fmt;
	eb_log_level      level;
} eb_log_rl;

/* 1 when the line may be written now (after a summary, if one is due). */
EB_API int eb_log_rl_admit(
    eb_log_rl *rl, eb_log_level level, const char *module, const char *fmt);

#define EB_LOG_RL_AT(lvl, module, ...)                                 \
	do {                                                           \
		static eb_log_rl eb_log_rl_site_;                      \
		if ((lvl) <= eb_log_get_level() &&                     \
		    eb_log_rl_admit(&eb_log_rl_site_, (lvl), (module), \
		        EB__LOG_FMT(__VA_ARGS__, ""))) {               \
			eb_log_write((lvl), (module), __VA_ARGS__);    \
		}                                                      \
	} while (0)
#define EB__LOG_FMT(fmt, ...) (fmt)

#define EB_LOG_RL_WARN(module, ...) \
	EB_LOG_RL_AT(EB_LOG_LEVEL_WARN, module, __VA_ARGS__)
#define EB_LOG_RL_NOTICE(module, ...) \
	EB_LOG_RL_AT(EB_LOG_LEVEL_NOTICE, module, __VA_ARGS__)
#define EB_LOG_RL_INFO(module, ...) \
	EB_LOG_RL_AT(EB_LOG_LEVEL_INFO, module, __VA_ARGS__)
#define EB_LOG_RL_ERR(module, ...) \
	EB_LOG_RL_AT(EB_LOG_LEVEL_ERR, module, __VA_ARGS__)

#endif
