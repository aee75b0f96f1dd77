/*
 * A log-linear latency histogram (HDR-style): 32 linear sub-buckets per power
 * of two, so every recorded value is known to within about 3%. Values are
 * nanoseconds; the range is 0 .. 2^40 ns (about 18 minutes), larger values
 * land in the last bucket. Fixed size, no allocation. One thread.
 */
#ifndef EB_BENCH_HIST_H
#define EB_BENCH_HIST_H

#include <stdint.h>

#define BENCH_HIST_SUB     32u
#define BENCH_HIST_BUCKETS (BENCH_HIST_SUB * 36u)

typedef struct bench_hist {
	uint64_t count;
	uint64_t sum;
	uint64_t max;
	uint64_t min;
	uint64_t b[BENCH_HIST_BUCKETS];
} bench_hist;

void bench_hist_reset(bench_hist *h);
void bench_hist_record(bench_hist *h, uint64_t v);
/* Adds every value of src into dst. */
void bench_hist_merge(bench_hist *dst, const bench_hist *src);
/* The value at quantile q (0..1): the upper bound of its bucket, capped at
 * max. 0 when empty. */
uint64_t bench_hist_quantile(const bench_hist *h, double q);

#endif
