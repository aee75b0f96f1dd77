/*
 * The process metric families (eb__admin_process_metrics, admin.h), read
 * from libuv at each scrape, and the ebnode_errors_total family the
 * modules write their rows into. Loop thread only.
 */
#include <uv.h>

#include "admin/admin.h"
#include "common/util.h"

/* What the process table reads, gathered at each scrape. */
typedef struct process_vals {
	uint64_t rss;    /* bytes */
	double   cpu;    /* user + system seconds */
	double   uptime; /* seconds */
} process_vals;

static const eb__prom_desc families[] = {
	EB__PROM_ONE("ebnode_process_resident_memory_bytes", "gauge",
	    "Resident set size of the ebnode process.",
	    EB__PROM_AT(process_vals, rss)),
	EB__PROM_ONE("ebnode_process_cpu_seconds_total", "counter",
	    "User and system CPU time of the ebnode process.",
	    EB__PROM_AT_F64(process_vals, cpu)),
	EB__PROM_ONE("ebnode_uptime_seconds", "gauge",
	    "Seconds since this node started.",
	    EB__PROM_AT_F64(process_vals, uptime)),
};

void
eb__admin_process_metrics(eb__prom *w, void *arg)
{
	const uint64_t *start_ms = arg;
	size_t          rss = 0;
	uv_rusage_t     ru;
	process_vals    v = { 0, 0.0, 0.0 };

	(void) uv_resident_set_memory(&rss);
	v.rss = (uint64_t) rss;
	if (uv_getrusage(&ru) == 0) {
		v.cpu =
		    (double) ru.ru_utime.tv_sec + (double) ru.ru_stime.tv_sec +
		    (double) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	}
	v.uptime = (double) (eb__mono_ms() - *start_ms) / 1000.0;
	eb__prom_write(w, families, EB__PROM_LEN(families), &v);
}

#define ERRORS "ebnode_errors_total"

void
eb__admin_errors_family(eb__prom *w)
{
	eb__prom_family(w, ERRORS, "counter",
	    "Errors by type (each also counted in its own family).");
}

void
eb__admin_error_rows(
    eb__prom *w, const eb__prom_field *f, size_t n, const void *src)
{
	eb__prom_fields(w, ERRORS, "type", f, n, src);
}
