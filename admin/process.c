/*
 * The process metric families (eb__admin_process_metrics, admin.h), read
 * from libuv at each scrape, and the ebnode_errors_total row writer.
 */
#include <uv.h>

#include "admin/admin.h"
#include "common/util.h"

void
eb__admin_process_metrics(eb__prom *w, void *arg)
{
	const uint64_t *start_ms = arg;
	size_t          rss = 0;
	uv_rusage_t     ru;
	double          cpu = 0.0;

	(void) uv_resident_set_memory(&rss);
	if (uv_getrusage(&ru) == 0) {
		cpu =
		    (double) ru.ru_utime.tv_sec + (double) ru.ru_stime.tv_sec +
		    (double) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	}
	eb__prom_one(w, "ebnode_process_resident_memory_bytes", "gauge",
	    "Resident set size of the ebnode process.", (uint64_t) rss);
	eb__prom_family(w, "ebnode_process_cpu_seconds_total", "counter",
	    "User and system CPU time of the ebnode process.");
	eb__prom_f64(w, "ebnode_process_cpu_seconds_total", NULL, cpu);
	eb__prom_family(w, "ebnode_uptime_seconds", "gauge",
	    "Seconds since this node started.");
	eb__prom_f64(w, "ebnode_uptime_seconds", NULL,
	    (double) (eb__mono_ms() - *start_ms) / 1000.0);
}

void
eb__admin_error_row(eb__prom *w, const char *type, uint64_t v)
{
	const char *l[] = { "type", type, NULL };

	eb__prom_u64(w, "ebnode_errors_total", l, v);
}
