/*
 * A small fixed-bucket latency histogram (Prometheus-style): a static table
 * of upper bounds from 100 us to 30 s plus +Inf, a count per bucket, the
 * total count and the sum. Recording is O(log buckets) with no allocation,
 * so it can sit on a hot path (the ingress gateway records every message).
 *
 * Buckets are stored non-cumulative; eb__hist_cumulative() gives the
 * Prometheus "le" view (observations <= bound, inclusive). The sum is kept
 * in nanoseconds so that it never loses precision to floating point.
 *
 * A plain value type: embed it, eb__hist_init() it, no close. Not
 * thread-safe (loop thread only, like everything that owns one).
 */
#ifndef EB_COMMON_HIST_H
#define EB_COMMON_HIST_H

#include <stddef.h>
#include <stdint.h>

/* Finite bounds; bucket EB__HIST_FINITE is +Inf. */
#define EB__HIST_FINITE  17
#define EB__HIST_BUCKETS (EB__HIST_FINITE + 1)

typedef struct eb__hist {
	uint64_t buckets[EB__HIST_BUCKETS]; /* non-cumulative counts */
	uint64_t count;
	uint64_t sum_ns; /* saturates at UINT64_MAX (584 years) */
} eb__hist;

void eb__hist_init(eb__hist *h);
/* One observation of ns nanoseconds. */
void eb__hist_record_ns(eb__hist *h, uint64_t ns);
/* Upper bound of bucket i in ns (inclusive); UINT64_MAX for +Inf. */
uint64_t eb__hist_bound_ns(size_t i);
/* The bound as Prometheus writes it in le="...": "0.0001" ... "+Inf". */
const char *eb__hist_bound_label(size_t i);
/* Observations <= bound i (i < EB__HIST_BUCKETS); the last equals count. */
uint64_t eb__hist_cumulative(const eb__hist *h, size_t i);
/* The sum in seconds. */
double eb__hist_sum_seconds(const eb__hist *h);
/* An upper estimate of quantile q (0..1): the bound of the bucket holding
 * it; 0 when empty, UINT64_MAX when it falls in +Inf. */
uint64_t eb__hist_quantile_bound_ns(const eb__hist *h, double q);

#endif
