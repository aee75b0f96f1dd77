/*
 * Crafts strings that all have the same 32-bit FNV-1a hash (the hash
 * common/hmap.c used before it was keyed), for the hash-flooding test and
 * bench. FNV-1a is a byte-at-a-time state machine, so two blocks that
 * collide from the same state keep colliding under any common suffix:
 * stage s finds, by the birthday bound (2^18 random 6-byte blocks, about 8
 * expected 32-bit collisions), two blocks A_s != B_s with equal state from
 * the state left by stage s-1. Any choice of A or B per stage gives the
 * same hash: 17 stages, 2^17 = 131 072 strings of 102 bytes (Joux
 * multicollisions). Deterministic (fixed PRNG seed). Header-only.
 */
#ifndef EB_BENCH_FNV_CRAFT_H
#define EB_BENCH_FNV_CRAFT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FNV_CRAFT_STAGES 17
#define FNV_CRAFT_BLOCK  6
#define FNV_CRAFT_LEN    (FNV_CRAFT_STAGES * FNV_CRAFT_BLOCK)

static inline uint32_t
fnv_craft_step(uint32_t h, const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char) p[i];
		h *= 16777619u;
	}
	return h;
}

static inline uint32_t
fnv_craft_hash(const char *s)
{
	return fnv_craft_step(2166136261u, s, strlen(s));
}

typedef struct fnv_craft_cand {
	uint32_t h;
	char     b[FNV_CRAFT_BLOCK];
} fnv_craft_cand;

static inline int
fnv_craft_cmp(const void *a, const void *b)
{
	uint32_t x = ((const fnv_craft_cand *) a)->h;
	uint32_t y = ((const fnv_craft_cand *) b)->h;

	return x < y ? -1 : x > y;
}

static inline uint64_t
fnv_craft_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * Fills blocks[s][0..1] (two colliding blocks per stage); 0, or -1 when a
 * stage found no collision (does not happen with the fixed seed).
 */
static inline int
fnv_craft_blocks(char blocks[FNV_CRAFT_STAGES][2][FNV_CRAFT_BLOCK])
{
	static const char alpha[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	enum { K = 1 << 18 };
	fnv_craft_cand *c = malloc(sizeof(*c) * K);
	uint64_t        seed = 0x9e3779b97f4a7c15ull;
	uint32_t        state = 2166136261u;
	int             s, i, j, found;

	if (c == NULL) {
		return -1;
	}
	for (s = 0; s < FNV_CRAFT_STAGES; s++) {
		for (i = 0; i < K; i++) {
			for (j = 0; j < FNV_CRAFT_BLOCK; j++) {
				c[i].b[j] = alpha[fnv_craft_rand(&seed) % 36];
			}
			c[i].h = fnv_craft_step(state, c[i].b, FNV_CRAFT_BLOCK);
		}
		qsort(c, K, sizeof(*c), fnv_craft_cmp);
		found = 0;
		for (i = 1; i < K && !found; i++) {
			if (c[i].h == c[i - 1].h &&
			    memcmp(c[i].b, c[i - 1].b, FNV_CRAFT_BLOCK) != 0) {
				memcpy(
				    blocks[s][0], c[i - 1].b, FNV_CRAFT_BLOCK);
				memcpy(blocks[s][1], c[i].b, FNV_CRAFT_BLOCK);
				state = c[i].h;
				found = 1;
			}
		}
		if (!found) {
			free(c);
			return -1;
		}
	}
	free(c);
	return 0;
}

/* The i-th crafted string (i < 2^17) into out (FNV_CRAFT_LEN + 1 bytes). */
static inline void
fnv_craft_key(
    char blocks[FNV_CRAFT_STAGES][2][FNV_CRAFT_BLOCK], uint32_t i, char *out)
{
	int s;

	for (s = 0; s < FNV_CRAFT_STAGES; s++) {
		memcpy(out + s * FNV_CRAFT_BLOCK, blocks[s][(i >> s) & 1u],
		    FNV_CRAFT_BLOCK);
	}
	out[FNV_CRAFT_LEN] = '\0';
}

#endif
