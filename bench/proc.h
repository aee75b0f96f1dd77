/*
 * Reading another process's CPU time and memory from /proc (Linux only):
 * utime+stime from /proc/<pid>/stat, VmRSS and VmHWM from /proc/<pid>/status.
 */
#ifndef EB_BENCH_PROC_H
#define EB_BENCH_PROC_H

#include <stdint.h>

typedef struct bench_proc {
	uint64_t cpu_us; /* utime + stime, all threads */
	uint64_t rss_kb; /* VmRSS */
	uint64_t hwm_kb; /* VmHWM: peak RSS */
} bench_proc;

/* 0, or -1 when the process is gone or /proc cannot be read. */
int bench_proc_read(int pid, bench_proc *out);

#endif
