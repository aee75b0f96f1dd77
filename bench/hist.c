/* Log-linear latency histogram; see hist.h. */
#include "bench/hist.h"

#include <string.h>

static unsigned
bucket_of(uint64_t v)
{
	unsigned e = 0;
	unsigned idx;

	if (v < BENCH_HIST_SUB) {
		return (unsigned) v;
	}
	/* Shift v down until it fits the sub-bucket range [32, 64): the shift
	 * count is the exponent, the remaining bits the linear position. */
	while ((v >> e) >= (uint64_t) 2 * BENCH_HIST_SUB) {
		e++;
	}
	idx = (e + 1) * BENCH_HIST_SUB + (unsigned) (v >> e) - BENCH_HIST_SUB;
	return idx < BENCH_HIST_BUCKETS ? idx : BENCH_HIST_BUCKETS - 1;
}

static uint64_t
bucket_upper(unsigned idx)
{
	unsigned e;
	uint64_t sub;

	if (idx < BENCH_HIST_SUB) {
		return idx;
	}
	e = idx / BENCH_HIST_SUB - 1;
	sub = (uint64_t) (idx % BENCH_HIST_SUB) + BENCH_HIST_SUB;
	return ((sub + 1) << e) - 1;
}

void
bench_hist_reset(bench_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

void
bench_hist_record(bench_hist *h, uint64_t v)
{
	h->b[bucket_of(v)]++;
	h->count++;
	h->sum += v;
	if (v > h->max) {
		h->max = v;
	}
	if (v < h->min) {
		h->min = v;
	}
}

void
bench_hist_merge(bench_hist *dst, const bench_hist *src)
{
	unsigned i;

	for (i = 0; i < BENCH_HIST_BUCKETS; i++) {
		dst->b[i] += src->b[i];
	}
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->max > dst->max) {
		dst->max = src->max;
	}
	if (src->min < dst->min) {
		dst->min = src->min;
	}
}

uint64_t
bench_hist_quantile(const bench_hist *h, double q)
{
	uint64_t rank;
	uint64_t seen = 0;
	uint64_t up;
	unsigned i;

	if (h->count == 0) {
		return 0;
	}
	rank = (uint64_t) (q * (double) h->count);
	if (rank >= h->count) {
		rank = h->count - 1;
	}
	for (i = 0; i < BENCH_HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen > rank) {
			up = bucket_upper(i);
			return up < h->max ? up : h->max;
		}
	}
	return h->max;
}
