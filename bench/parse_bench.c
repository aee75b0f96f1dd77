/*
 * parse_bench: the bridge's frame parser (bridge/proto.c) on three frames a
 * client sends -- a compact send with headers, a compact publish without
 * headers, and the frame Python's client writes (", " and ": ", escapes)
 * -- in nanoseconds per parse (median of --runs runs of --n parses each).
 * For instruction counts, which a noisy machine does not move, run it
 * under `valgrind --tool=callgrind` with a small --n (docs/PERFORMANCE.md,
 * issue 23).
 *
 *   parse_bench [--n 1000000] [--runs 5]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bridge/bridge_int.h"

static const char *const frames[] = {
	("{\"type\":\"send\",\"address\":\"external.ingress\",\"replyAddress\":"
	 "\"r1\",\"headers\":{\"kind\":\"order\"},\"body\":{\"id\":12345,"
	 "\"name\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\",\"qty\":3,"
	 "\"price\":12.5,\"tags\":[\"a\",\"b\"]}}"),
	("{\"type\":\"publish\",\"address\":\"bench.fire\",\"body\":{\"t\":"
	 "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	 "xxx"
	 "xxxxxxxxxxxx\"}}"),
	("{\"type\": \"send\", \"address\": \"orders\", \"body\": {\"a\": 0.1, "
	 "\"b\": 1e-07, \"c\": 10000000000.0, \"e\": \"\\u00e9\"}}"),
};
static const char *const names[] = { "compact+headers", "compact",
	"python-client" };

static double
now_ns(void)
{
	struct timespec t;

	(void) clock_gettime(CLOCK_MONOTONIC, &t);
	return (double) t.tv_sec * 1e9 + (double) t.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a;
	double y = *(const double *) b;

	return (x > y) - (x < y);
}

/* Times frame k: the median ns per parse of runs runs of n parses. */
static int
bench_frame(size_t k, long n, int runs)
{
	size_t     len = strlen(frames[k]);
	double     ns[64];
	eb__bframe f;
	long       j;
	int        r;

	for (r = 0; r < runs; r++) {
		double t0 = now_ns();

		for (j = 0; j < n; j++) {
			if (eb__bframe_parse(frames[k], len, 0, 1000, &f) !=
			    0) {
				(void) fprintf(stderr, "refused: %s\n", f.err);
				return 1;
			}
			eb__bframe_free(&f);
		}
		ns[r] = (now_ns() - t0) / (double) n;
	}
	qsort(ns, (size_t) runs, sizeof(ns[0]), cmp_double);
	(void) printf("%-16s %4zu bytes  median %.1f ns/parse\n", names[k], len,
	    ns[runs / 2]);
	return 0;
}

int
main(int argc, char **argv)
{
	long   n = 1000000;
	int    runs = 5;
	size_t k;
	int    i;

	for (i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--n") == 0) {
			n = strtol(argv[i + 1], NULL, 10);
		} else if (strcmp(argv[i], "--runs") == 0) {
			runs = (int) strtol(argv[i + 1], NULL, 10);
		}
	}
	if (n < 1 || runs < 1 || runs > 64) {
		(void) fprintf(
		    stderr, "usage: parse_bench [--n N] [--runs R<=64]\n");
		return 2;
	}
	for (k = 0; k < sizeof(frames) / sizeof(frames[0]); k++) {
		if (bench_frame(k, n, runs) != 0) {
			return 1;
		}
	}
	return 0;
}
