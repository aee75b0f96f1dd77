/* /proc readers; see proc.h. */
#include "bench/proc.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int
read_cpu(int pid, uint64_t *cpu_us)
{
	char               path[64];
	char               line[1024];
	FILE              *f;
	char              *p;
	unsigned long long ut = 0;
	unsigned long long st = 0;
	long               hz = sysconf(_SC_CLK_TCK);

	(void) snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if ((f = fopen(path, "r")) == NULL) {
		return -1;
	}
	p = fgets(line, sizeof(line), f);
	(void) fclose(f);
	/* The command name (field 2) may contain spaces: start after ')'. */
	if (p == NULL || (p = strrchr(line, ')')) == NULL) {
		return -1;
	}
	/* After ")": state(3) ... utime(14) stime(15). */
	if (sscanf(p + 1,
	        " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
	        &st) != 2 ||
	    hz <= 0) {
		return -1;
	}
	*cpu_us = (uint64_t) (ut + st) * 1000000u / (uint64_t) hz;
	return 0;
}

int
bench_proc_read(int pid, bench_proc *out)
{
	char               path[64];
	char               line[256];
	FILE              *f;
	unsigned long long v;

	memset(out, 0, sizeof(*out));
	if (read_cpu(pid, &out->cpu_us) != 0) {
		return -1;
	}
	(void) snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if ((f = fopen(path, "r")) == NULL) {
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "VmRSS: %llu", &v) == 1) {
			out->rss_kb = v;
		} else if (sscanf(line, "VmHWM: %llu", &v) == 1) {
			out->hwm_kb = v;
		}
	}
	(void) fclose(f);
	return 0;
}
