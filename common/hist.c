/*
 * Fixed-bucket latency histogram (see hist.h). The bounds follow the
 * usual 1-2.5-5 progression, from 100 us (a loopback round trip through
 * the bus) to 30 s (the bus's default request timeout), so that every
 * answer the gateway can produce lands in a finite bucket.
 */
#include "common/hist.h"

#include <string.h>

#define NS_PER_US 1000ull
#define NS_PER_MS 1000000ull
#define NS_PER_S  1000000000ull

static const struct {
	uint64_t    ns;
	const char *label;
} hist_bounds[EB__HIST_BUCKETS] = {
	{ 100 * NS_PER_US, "0.0001" },
	{ 250 * NS_PER_US, "0.00025" },
	{ 500 * NS_PER_US, "0.0005" },
	{ 1 * NS_PER_MS, "0.001" },
	{ 2500 * NS_PER_US, "0.0025" },
	{ 5 * NS_PER_MS, "0.005" },
	{ 10 * NS_PER_MS, "0.01" },
	{ 25 * NS_PER_MS, "0.025" },
	{ 50 * NS_PER_MS, "0.05" },
	{ 100 * NS_PER_MS, "0.1" },
	{ 250 * NS_PER_MS, "0.25" },
	{ 500 * NS_PER_MS, "0.5" },
	{ 1 * NS_PER_S, "1" },
	{ 2500 * NS_PER_MS, "2.5" },
	{ 5 * NS_PER_S, "5" },
	{ 10 * NS_PER_S, "10" },
	{ 30 * NS_PER_S, "30" },
	{ UINT64_MAX, "+Inf" },
};

void
eb__hist_init(eb__hist *h)
{
	memset(h, 0, sizeof(*h));
}

void
eb__hist_record_ns(eb__hist *h, uint64_t ns)
{
	size_t lo = 0;
	size_t hi = EB__HIST_FINITE; /* +Inf holds everything */

	/* The first bucket whose bound is >= ns (le is inclusive). */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ns <= hist_bounds[mid].ns) {
			hi = mid;
		} else {
			lo = mid + 1;
		}
	}
	h->buckets[lo]++;
	h->count++;
	h->sum_ns = ns > UINT64_MAX - h->sum_ns ? UINT64_MAX : h->sum_ns + ns;
}

uint64_t
eb__hist_bound_ns(size_t i)
{
	return i < EB__HIST_BUCKETS ? hist_bounds[i].ns : UINT64_MAX;
}

const char *
eb__hist_bound_label(size_t i)
{
	return i < EB__HIST_BUCKETS ? hist_bounds[i].label : "+Inf";
}

uint64_t
eb__hist_cumulative(const eb__hist *h, size_t i)
{
	uint64_t n = 0;
	size_t   k;

	for (k = 0; k <= i && k < EB__HIST_BUCKETS; k++) {
		n += h->buckets[k];
	}
	return n;
}

double
eb__hist_sum_seconds(const eb__hist *h)
{
	/* Whole seconds and the remainder separately: exact up to 2^53 s. */
	uint64_t whole = h->sum_ns / NS_PER_S;
	uint64_t frac = h->sum_ns % NS_PER_S;

	return (double) whole + (double) frac / (double) NS_PER_S;
}

uint64_t
eb__hist_quantile_bound_ns(const eb__hist *h, double q)
{
	uint64_t rank;
	uint64_t n = 0;
	size_t   i;

	if (h->count == 0) {
		return 0;
	}
	if (q < 0.0) {
		q = 0.0;
	} else if (q > 1.0) {
		q = 1.0;
	}
	/* The smallest rank r (1-based) with r >= q * count. */
	rank = (uint64_t) (q * (double) h->count);
	if ((double) rank < q * (double) h->count || rank == 0) {
		rank++;
	}
	for (i = 0; i < EB__HIST_BUCKETS; i++) {
		n += h->buckets[i];
		if (n >= rank) {
			return hist_bounds[i].ns;
		}
	}
	return UINT64_MAX;
}
