/* /proc readers; see proc.h. */
#include "bench/proc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Parses the unsigned decimal at *p and advances *p past it. -1 if none. */
static int
take_u64(const char **p, uint64_t *out)
{
	char              *end;
	unsigned long long v;

	while (**p == ' ') {
		(*p)++;
	}
	errno = 0;
	v = strtoull(*p, &end, 10);
	if (end == *p || errno != 0) {
		return -1;
	}
	*p = end;
	*out = (uint64_t) v;
	return 0;
}

/* Skips n space-separated fields. */
static void
skip_fields(const char **p, int n)
{
	while (n-- > 0) {
		while (**p == ' ') {
			(*p)++;
		}
		while (**p != ' ' && **p != '\0') {
			(*p)++;
		}
	}
}

static int
read_cpu(int pid, uint64_t *cpu_us)
{
	char        path[64];
	char        line[1024];
	FILE       *f;
	const char *p;
	uint64_t    ut;
	uint64_t    st;
	long        hz = sysconf(_SC_CLK_TCK);

	(void) snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if ((f = fopen(path, "r")) == NULL) {
		return -1;
	}
	p = fgets(line, sizeof(line), f);
	(void) fclose(f);
	/* The command name (field 2) may contain spaces: start after ')'. */
	if (p == NULL || (p = strrchr(line, ')')) == NULL || hz <= 0) {
		return -1;
	}
	p++;
	/* After ")": state(3) ppid ... cmajflt(13), then utime(14) stime(15).
	 */
	skip_fields(&p, 11);
	if (take_u64(&p, &ut) != 0 || take_u64(&p, &st) != 0) {
		return -1;
	}
	*cpu_us = (ut + st) * 1000000u / (uint64_t) hz;
	return 0;
}

int
bench_proc_read(int pid, bench_proc *out)
{
	char        path[64];
	char        line[256];
	FILE       *f;
	const char *p;

	memset(out, 0, sizeof(*out));
	if (read_cpu(pid, &out->cpu_us) != 0) {
		return -1;
	}
	(void) snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if ((f = fopen(path, "r")) == NULL) {
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "VmRSS:", 6) == 0) {
			p = line + 6;
			(void) take_u64(&p, &out->rss_kb);
		} else if (strncmp(line, "VmHWM:", 6) == 0) {
			p = line + 6;
			(void) take_u64(&p, &out->hwm_kb);
		}
	}
	(void) fclose(f);
	return 0;
}
