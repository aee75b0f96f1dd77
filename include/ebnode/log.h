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
EB_API void eb_log_set_level(eb_log_level level);
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

#endif
