/*
 * The Prometheus text writer (prom.h): names are written as given, label
 * values are escaped (backslash, double quote, newline) and HELP text too
 * (backslash and newline only), as format 0.0.4 requires.
 */
#include "admin/prom.h"

#include <stdio.h>
#include <string.h>

#include "common/assert.h"

void
eb__prom_init(eb__prom *w)
{
	eb__buf_init(&w->b);
}

void
eb__prom_free(eb__prom *w)
{
	eb__buf_free(&w->b);
}

const char *
eb__prom_data(eb__prom *w)
{
	/* A writer nothing was written to has no buffer yet. */
	return eb__buf_avail(&w->b) > 0 ? eb__buf_head(&w->b) : "";
}

size_t
eb__prom_len(eb__prom *w)
{
	return eb__buf_avail(&w->b);
}

static void
prom_write(eb__prom *w, const char *s, size_t n)
{
	eb__buf_append(&w->b, s, n);
}

static void
prom_str(eb__prom *w, const char *s)
{
	prom_write(w, s, strlen(s));
}

/* Escapes for a label value (\\, \", \n) or, with quote 0, for HELP text
 * (\\ and \n only). */
static void
prom_escaped(eb__prom *w, const char *s, int quote)
{
	const char *run = s;

	for (; *s != '\0'; s++) {
		const char *esc = NULL;

		if (*s == '\\') {
			esc = "\\\\";
		} else if (*s == '\n') {
			esc = "\\n";
		} else if (*s == '"' && quote) {
			esc = "\\\"";
		}
		if (esc != NULL) {
			prom_write(w, run, (size_t) (s - run));
			prom_str(w, esc);
			run = s + 1;
		}
	}
	prom_write(w, run, (size_t) (s - run));
}

void
eb__prom_family(
    eb__prom *w, const char *name, const char *type, const char *help)
{
	prom_str(w, "# HELP ");
	prom_str(w, name);
	prom_str(w, " ");
	prom_escaped(w, help, 0);
	prom_str(w, "\n# TYPE ");
	prom_str(w, name);
	prom_str(w, " ");
	prom_str(w, type);
	prom_str(w, "\n");
}

/* name{k="v",...} value, value already formatted. */
static void
prom_sample(
    eb__prom *w, const char *name, const char *const *labels, const char *v)
{
	size_t i;

	prom_str(w, name);
	if (labels != NULL && labels[0] != NULL) {
		prom_str(w, "{");
		for (i = 0; labels[i] != NULL && labels[i + 1] != NULL;
		     i += 2) {
			if (i > 0) {
				prom_str(w, ",");
			}
			prom_str(w, labels[i]);
			prom_str(w, "=\"");
			prom_escaped(w, labels[i + 1], 1);
			prom_str(w, "\"");
		}
		prom_str(w, "}");
	}
	prom_str(w, " ");
	prom_str(w, v);
	prom_str(w, "\n");
}

void
eb__prom_u64(
    eb__prom *w, const char *name, const char *const *labels, uint64_t v)
{
	char s[32];

	(void) snprintf(s, sizeof(s), "%llu", (unsigned long long) v);
	prom_sample(w, name, labels, s);
}

void
eb__prom_f64(eb__prom *w, const char *name, const char *const *labels, double v)
{
	char s[64];

	(void) snprintf(s, sizeof(s), "%.9g", v);
	prom_sample(w, name, labels, s);
}

void
eb__prom_one(eb__prom *w, const char *name, const char *type, const char *help,
    uint64_t v)
{
	eb__prom_family(w, name, type, help);
	eb__prom_u64(w, name, NULL, v);
}

/* ---- families as tables ---- */

/* The value of f in src as a sample of name with labels. */
static void
field_sample(eb__prom *w, const char *name, const char *const *labels,
    const eb__prom_field *f, const void *src)
{
	const unsigned char *p = (const unsigned char *) src + f->off;
	uint64_t             v = 0;

	if (f->f64) {
		double d;

		memcpy(&d, p, sizeof(d));
		eb__prom_f64(w, name, labels, d);
		return;
	}
	if (f->size == sizeof(uint8_t)) {
		uint8_t x;

		memcpy(&x, p, sizeof(x));
		v = x;
	} else if (f->size == sizeof(uint16_t)) {
		uint16_t x;

		memcpy(&x, p, sizeof(x));
		v = x;
	} else if (f->size == sizeof(uint32_t)) {
		uint32_t x;

		memcpy(&x, p, sizeof(x));
		v = x;
	} else {
		memcpy(&v, p, sizeof(v));
	}
	eb__prom_u64(w, name, labels, v);
}

/* The samples of d read from src, after the row label row_label=row_value
 * when row_label is not NULL. */
static void
desc_samples(eb__prom *w, const eb__prom_desc *d, const char *row_label,
    const char *row_value, const void *src)
{
	const char *l[5] = { NULL, NULL, NULL, NULL, NULL };
	size_t      k = 0;
	size_t      i;

	if (row_label != NULL) {
		l[k++] = row_label;
		l[k++] = row_value;
	}
	if (d->fields == NULL) {
		field_sample(w, d->name, l, &d->one, src);
		return;
	}
	for (i = 0; i < d->nfields; i++) {
		l[k] = d->label;
		l[k + 1] = d->fields[i].label;
		field_sample(w, d->name, l, &d->fields[i], src);
	}
}

void
eb__prom_write(eb__prom *w, const eb__prom_desc *d, size_t n, const void *src)
{
	size_t i;

	for (i = 0; i < n; i++) {
		eb__prom_family(w, d[i].name, d[i].type, d[i].help);
		desc_samples(w, &d[i], NULL, NULL, src);
	}
}

void
eb__prom_fields(eb__prom *w, const char *name, const char *label,
    const eb__prom_field *f, size_t n, const void *src)
{
	eb__prom_desc d = { name, NULL, NULL, { NULL, 0, 0, 0 }, label, f, n };

	desc_samples(w, &d, NULL, NULL, src);
}

void
eb__prom_write_rows(
    eb__prom *w, const eb__prom_desc *d, size_t n, const eb__prom_rows *r)
{
	size_t i;
	size_t j;

	for (i = 0; i < n; i++) {
		eb__prom_family(w, d[i].name, d[i].type, d[i].help);
		for (j = 0; j < r->n; j++) {
			const char *row =
			    (const char *) r->base + j * r->stride;
			const char *value;

			memcpy(&value, row + r->label_off, sizeof(value));
			desc_samples(w, &d[i], r->label, value, row);
		}
	}
}

void
eb__prom_hist(
    eb__prom *w, const char *name, const char *help, const eb__hist *h)
{
	char   sub[128];
	size_t i;

	EB_ASSERT(strlen(name) + sizeof("_bucket") <= sizeof(sub));
	eb__prom_family(w, name, "histogram", help);
	(void) snprintf(sub, sizeof(sub), "%s_bucket", name);
	for (i = 0; i < EB__HIST_BUCKETS; i++) {
		const char *l[] = { "le", eb__hist_bound_label(i), NULL };

		eb__prom_u64(
		    w, sub, l, h != NULL ? eb__hist_cumulative(h, i) : 0);
	}
	(void) snprintf(sub, sizeof(sub), "%s_sum", name);
	eb__prom_f64(w, sub, NULL, h != NULL ? eb__hist_sum_seconds(h) : 0.0);
	(void) snprintf(sub, sizeof(sub), "%s_count", name);
	eb__prom_u64(w, sub, NULL, h != NULL ? h->count : 0);
}
