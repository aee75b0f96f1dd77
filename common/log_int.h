/* Logging internals shared by log.c and log_sink.c. */
#ifndef EB_COMMON_LOG_INT_H
#define EB_COMMON_LOG_INT_H

#include <ebnode/log.h>

/* The default sink: "<seconds.micros> LINE\n" to stderr, one write(2). */
void eb__log_stderr_sink(eb_log_level level, const char *line, void *arg);

#endif
