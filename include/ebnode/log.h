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

EB_API void eb_log_write(eb_log_level level, const char *module,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

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
