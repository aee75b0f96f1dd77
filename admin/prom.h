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
 *
 * Collectors declare their families as tables instead (eb__prom_desc):
 * name, type, HELP and where each sample's value lies in a source struct
 * (an offsetof, eb__prom_field), written by eb__prom_write (one struct),
 * eb__prom_write_rows (one struct per row, each family once over all
 * rows) or eb__prom_fields (samples of a family whose header is written
 * elsewhere). A field set gives one family one sample per label value:
 *
 *   static const eb__prom_field kinds[] = {
 *           { "sent", EB__PROM_AT(eb_bus_totals, sent) },
 *           { "published", EB__PROM_AT(eb_bus_totals, published) },
 *   };
 *   static const eb__prom_desc fams[] = {
 *           EB__PROM_SET("ebnode_bus_messages_all_total", "counter",
 *               "Bus messages of every address, by kind.", "kind", kinds),
 *           EB__PROM_ONE("ebnode_bus_addresses", "gauge", "Addresses.",
 *               EB__PROM_AT(eb_bus_totals, addresses)),
 *   };
 *   eb__prom_write(w, fams, EB__PROM_LEN(fams), &totals);
 *
 * A value the stats struct does not hold as such (a sum, a flag, a value
 * from elsewhere) is computed into a small struct of the collector's own
 * first, so that every family stays one table row. Loop thread only (the
 * writer is not shared); tables are static and constant.
 */
#ifndef EB_ADMIN_PROM_H
#define EB_ADMIN_PROM_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/hist.h"

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

/* ---- families as tables ---- */

/* Where a sample's value lies in a source struct: at off, size bytes, an
 * unsigned integer (1, 2, 4 or 8 bytes; a non-negative int or a bool
 * too) or, with f64, a double. label is the value of the family's label
 * in a field set (eb__prom_desc.label), NULL for an unlabelled sample. */
typedef struct eb__prom_field {
	const char *label;
	size_t      off;
	size_t      size;
	int         f64;
} eb__prom_field;

/* off, size and f64 of member (nested: "s.sent", "frames[2]") of type. */
#define EB__PROM_AT(type, member) \
	offsetof(type, member), sizeof(((type *) 0)->member), 0
#define EB__PROM_AT_F64(type, member) offsetof(type, member), sizeof(double), 1
#define EB__PROM_LEN(a)               (sizeof(a) / sizeof((a)[0]))

/* One family: one unlabelled sample read at one (fields NULL), or one
 * sample per field, labelled label="fields[i].label", in table order. */
typedef struct eb__prom_desc {
	const char           *name;
	const char           *type; /* "counter", "gauge" */
	const char           *help;
	eb__prom_field        one;
	const char           *label;
	const eb__prom_field *fields; /* static, nfields of them, or NULL */
	size_t                nfields;
} eb__prom_desc;

/* A family of one sample, at: EB__PROM_AT(type, member) or
 * EB__PROM_AT_F64(type, member). */
#define EB__PROM_ONE(name, type, help, at)                          \
	{                                                           \
		(name), (type), (help), { NULL, at }, NULL, NULL, 0 \
	}
/* A family of one sample per field of the static array fields. */
#define EB__PROM_SET(name, type, help, label, fields)                         \
	{                                                                     \
		(name), (type), (help), { NULL, 0, 0, 0 }, (label), (fields), \
		    EB__PROM_LEN(fields)                                      \
	}

/* Writes the n families of d in order, each "# HELP", "# TYPE" and its
 * samples, every value read from src. */
void eb__prom_write(
    eb__prom *w, const eb__prom_desc *d, size_t n, const void *src);

/* Samples only, one per field: name{label="f[i].label"} read from src
 * (for a family whose header another writer wrote). */
void eb__prom_fields(eb__prom *w, const char *name, const char *label,
    const eb__prom_field *f, size_t n, const void *src);

/* Rows of one kind (a peer, an address): n rows of stride bytes from
 * base, each labelled label="<the const char * at label_off in the
 * row>"; the fields of a family read their values from the row. */
typedef struct eb__prom_rows {
	const char *label;
	size_t      label_off;
	const void *base; /* borrowed; NULL when n is 0 */
	size_t      stride;
	size_t      n;
} eb__prom_rows;

/* Writes the n families of d, each once over every row (the format wants
 * each family one contiguous group): the header, then for each row in
 * order its sample(s), the row's label first. */
void eb__prom_write_rows(
    eb__prom *w, const eb__prom_desc *d, size_t n, const eb__prom_rows *r);

/* A histogram family from h (NULL: every count 0): name_bucket{le=...}
 * cumulative over h's buckets, name_sum in seconds, name_count. */
void eb__prom_hist(
    eb__prom *w, const char *name, const char *help, const eb__hist *h);

#endif
