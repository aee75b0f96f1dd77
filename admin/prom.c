/*
 * The Prometheus text writer (prom.h): names are written as given, label
 * values are escaped (backslash, double quote, newline) and HELP text too
 * (backslash and newline only), as format 0.0.4 requires.
 */
#include "admin/prom.h"

#include <stdio.h>
#include <string.h>

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
