/*
 * hmap_bench: registration and lookup time of 100 000 addresses crafted to
 * collide under FNV-1a (bench/fnv_craft.h) against 100 000 random
 * addresses of the same length, in common/hmap (keyed SipHash-1-3). Prints
 * the median of 7 runs of each and their ratio; exits 1 when the ratio is
 * above 2 (the issue-11 bound).
 *
 *   build/dev/bench/hmap_bench
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/fnv_craft.h"
#include "common/hmap.h"

#define N    100000
#define RUNS 7

static double
now_s(void)
{
	struct timespec ts;

	(void) clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *) a;
	double y = *(const double *) b;

	return x < y ? -1 : x > y;
}

/* Inserts all keys, then looks each up twice; seconds. */
static double
run(eb__hent *ents, const char *keys)
{
	eb__hmap m;
	double   t0 = now_s();
	int      i;
	int      r;

	eb__hmap_init(&m);
	for (i = 0; i < N; i++) {
		ents[i].key = keys + (size_t) i * (FNV_CRAFT_LEN + 1);
		eb__hmap_put(&m, &ents[i]);
	}
	for (r = 0; r < 2; r++) {
		for (i = 0; i < N; i++) {
			if (eb__hmap_get(&m, ents[i].key) != &ents[i]) {
				(void) fprintf(stderr, "lookup failed\n");
				exit(2);
			}
		}
	}
	t0 = now_s() - t0;
	eb__hmap_free(&m);
	return t0;
}

int
main(void)
{
	static char       blocks[FNV_CRAFT_STAGES][2][FNV_CRAFT_BLOCK];
	static const char alpha[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	size_t            ks = FNV_CRAFT_LEN + 1;
	char             *crafted = malloc((size_t) N * ks);
	char             *random = malloc((size_t) N * ks);
	eb__hent         *ents = calloc(N, sizeof(*ents));
	double            tc[RUNS];
	double            tr[RUNS];
	uint64_t          seed = 12345;
	int               i;
	int               j;
	double            ratio;

	if (crafted == NULL || random == NULL || ents == NULL ||
	    fnv_craft_blocks(blocks) != 0) {
		free(ents);
		free(random);
		free(crafted);
		return 2;
	}
	for (i = 0; i < N; i++) {
		fnv_craft_key(blocks, (uint32_t) i, crafted + (size_t) i * ks);
		for (j = 0; j < FNV_CRAFT_LEN; j++) {
			random[(size_t) i * ks + (size_t) j] =
			    alpha[fnv_craft_rand(&seed) % 36];
		}
		random[(size_t) i * ks + (size_t) FNV_CRAFT_LEN] = '\0';
	}
	for (i = 0; i < RUNS; i++) { /* interleaved: same machine noise */
		tc[i] = run(ents, crafted);
		tr[i] = run(ents, random);
	}
	qsort(tc, RUNS, sizeof(double), cmp_d);
	qsort(tr, RUNS, sizeof(double), cmp_d);
	ratio = tc[RUNS / 2] / tr[RUNS / 2];
	printf("hmap_bench: %d keys of %d bytes, put + 2 gets each, median of "
	       "%d: crafted (one FNV-1a hash) %.2f ms, random %.2f ms, ratio "
	       "%.2f\n",
	    N, FNV_CRAFT_LEN, RUNS, tc[RUNS / 2] * 1e3, tr[RUNS / 2] * 1e3,
	    ratio);
	free(ents);
	free(random);
	free(crafted);
	return ratio <= 2.0 ? 0 : 1;
}
