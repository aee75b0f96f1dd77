/*
 * A writer for the Prometheus text exposition format 0.0.4 (prom.c), used
 * by the metric collectors that GET /metrics runs (admin.h).
 *
 * A family opens with eb__prom_family() ("# HELP" and "# TYPE") and its
 * samples follow it at once: every family is one contiguous group, and a
 * series appears at most once. Label values and HELP text are escaped as
 * the format requires. Labels are a NULL-terminated list of name, value
 * pairs, or NULL for none:
 *
 *   const char *l[] = { "kind", "sent", NULL };
 *   eb__prom_family(w, "ebnode_bus_messages_all_total", "counter", "...");
 *   eb__prom_u64(w, "ebnode_bus_messages_all_total", l, 42);
 */
#ifndef EB_ADMIN_PROM_H
#define EB_ADMIN_PROM_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

typedef struct eb__prom {
	eb__buf b;
} eb__prom;

void eb__prom_init(eb__prom *w);
void eb__prom_free(eb__prom *w);
/* The text written so far (not NUL-terminated) and its length. */
const char *eb__prom_data(eb__prom *w);
size_t      eb__prom_len(eb__prom *w);

/* "# HELP name help" and "# TYPE name type". */
void eb__prom_family(
    eb__prom *w, const char *name, const char *type, const char *help);
/* name{labels} v, v as an unsigned integer or as "%.9g". */
void eb__prom_u64(
    eb__prom *w, const char *name, const char *const *labels, uint64_t v);
void eb__prom_f64(
    eb__prom *w, const char *name, const char *const *labels, double v);
/* One family with a single unlabelled sample. */
void eb__prom_one(eb__prom *w, const char *name, const char *type,
    const char *help, uint64_t v);

#endif
