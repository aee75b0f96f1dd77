/* Unit tests for the intrusive string hash map (common/hmap.h), used by the
 * bus and the bridge. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/fnv_craft.h"
#include "common/hmap.h"
#include "tests/harness/th.h"

typedef struct item {
	eb__hent node;
	char     key[32];
	int      value;
} item;

#define ITEM_OF(n) ((item *) (void *) ((char *) (n) -offsetof(item, node)))

static void
test_empty(void **state)
{
	eb__hmap m;

	(void) state;
	eb__hmap_init(&m);
	assert_null(eb__hmap_get(&m, "x"));
	eb__hmap_free(&m);
}

static void
test_put_get_del_many(void **state)
{
	enum { N = 5000 };
	item    *v = calloc(N, sizeof(*v));
	eb__hmap m;
	int      i;

	(void) state;
	eb__hmap_init(&m);
	for (i = 0; i < N; i++) {
		(void) snprintf(v[i].key, sizeof(v[i].key), "addr.%d", i);
		v[i].value = i;
		v[i].node.key = v[i].key;
		eb__hmap_put(&m, &v[i].node);
	}
	assert_int_equal(m.count, N);
	assert_true(m.nbuckets >= N);
	for (i = 0; i < N; i++) {
		char      k[32];
		eb__hent *n;

		(void) snprintf(k, sizeof(k), "addr.%d", i);
		n = eb__hmap_get(&m, k);
		assert_non_null(n);
		assert_int_equal(ITEM_OF(n)->value, i);
	}
	assert_null(eb__hmap_get(&m, "addr.-1"));
	assert_null(eb__hmap_get(&m, ""));
	/* Remove the even ones; the odd ones stay findable. */
	for (i = 0; i < N; i += 2) {
		eb__hmap_del(&m, &v[i].node);
	}
	assert_int_equal(m.count, N / 2);
	for (i = 0; i < N; i++) {
		eb__hent *n = eb__hmap_get(&m, v[i].key);

		if (i % 2 == 0) {
			assert_null(n);
		} else {
			assert_ptr_equal(n, &v[i].node);
		}
	}
	eb__hmap_free(&m);
	free(v);
}

/* The reference vectors of the SipHash paper (appendix A): key 00..0f,
 * messages 00, 01, ... of length 0 and 15. */
static void
test_siphash_vectors(void **state)
{
	unsigned char key[16];
	unsigned char msg[64];
	unsigned      i;

	(void) state;
	for (i = 0; i < 16; i++) {
		key[i] = (unsigned char) i;
	}
	for (i = 0; i < sizeof(msg); i++) {
		msg[i] = (unsigned char) i;
	}
	assert_true(eb__siphash(key, msg, 0, 2, 4) == 0x726fdb47dd0e0e31ull);
	assert_true(eb__siphash(key, msg, 15, 2, 4) == 0xa129ca6149be45e5ull);
	assert_true(eb__siphash(key, msg, 8, 2, 4) == 0x93f5f5799a932462ull);
	assert_true(eb__siphash(key, msg, 63, 2, 4) == 0x958a324ceb064572ull);
}

/* SipHash as the paper writes it (state as an array, bytes loaded one by
 * one), independent of the unrolled code the map uses. */
static uint64_t
ref_rotl(uint64_t x, unsigned b)
{
	return (x << b) | (x >> (64u - b));
}

static void
ref_round(uint64_t v[4])
{
	v[0] += v[1];
	v[1] = ref_rotl(v[1], 13) ^ v[0];
	v[0] = ref_rotl(v[0], 32);
	v[2] += v[3];
	v[3] = ref_rotl(v[3], 16) ^ v[2];
	v[0] += v[3];
	v[3] = ref_rotl(v[3], 21) ^ v[0];
	v[2] += v[1];
	v[1] = ref_rotl(v[1], 17) ^ v[2];
	v[2] = ref_rotl(v[2], 32);
}

static uint64_t
ref_word(const unsigned char *p, size_t n)
{
	uint64_t w = 0;
	size_t   i;

	for (i = 0; i < n; i++) {
		w |= (uint64_t) p[i] << (8 * i);
	}
	return w;
}

static uint64_t
ref_sip13(const unsigned char key[16], const unsigned char *p, size_t len)
{
	uint64_t k0 = ref_word(key, 8), k1 = ref_word(key + 8, 8);
	uint64_t v[4] = { 0x736f6d6570736575ull ^ k0,
		0x646f72616e646f6dull ^ k1, 0x6c7967656e657261ull ^ k0,
		0x7465646279746573ull ^ k1 };
	size_t   i;
	uint64_t m;

	for (i = 0; i + 8 <= len; i += 8) {
		m = ref_word(p + i, 8);
		v[3] ^= m;
		ref_round(v);
		v[0] ^= m;
	}
	m = ref_word(p + i, len - i) | ((uint64_t) (len & 0xffu) << 56);
	v[3] ^= m;
	ref_round(v);
	v[0] ^= m;
	v[2] ^= 0xffu;
	ref_round(v);
	ref_round(v);
	ref_round(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

/* The map's unrolled SipHash-1-3 against the reference, every length and
 * alignment up to 64 bytes. */
static void
test_siphash13_matches_reference(void **state)
{
	unsigned char key[16];
	unsigned char msg[72];
	size_t        len;
	size_t        off;

	(void) state;
	for (len = 0; len < sizeof(key); len++) {
		key[len] = (unsigned char) (len * 7 + 3);
	}
	for (len = 0; len < sizeof(msg); len++) {
		msg[len] = (unsigned char) (len * 13 + 1);
	}
	for (off = 0; off < 8; off++) {
		for (len = 0; len + off <= 64; len++) {
			assert_true(eb__siphash13(key, msg + off, len) ==
			            ref_sip13(key, msg + off, len));
			assert_true(eb__siphash(key, msg + off, len, 1, 3) ==
			            ref_sip13(key, msg + off, len));
		}
	}
}

/*
 * 100 000 addresses crafted to share one FNV-1a hash (one bucket chain of
 * 100 000 under the old unkeyed hash): under the keyed hash they spread
 * like random keys. Bounds the longest chain (expected about 8 at load
 * factor <= 1; 32 would be a broken hash or seed).
 */
static void
test_crafted_fnv_collisions_spread(void **state)
{
	enum { N = 100000 };
	static char blocks[FNV_CRAFT_STAGES][2][FNV_CRAFT_BLOCK];
	item       *v = calloc(N, sizeof(*v) + (size_t) FNV_CRAFT_LEN + 1);
	char       *keys = (char *) (v + N);
	eb__hmap    m;
	uint32_t    i;
	uint32_t    b;
	uint32_t    longest = 0;
	uint32_t    fnv0;

	(void) state;
	assert_int_equal(fnv_craft_blocks(blocks), 0);
	eb__hmap_init(&m);
	for (i = 0; i < N; i++) {
		char *k = keys + (size_t) i * (FNV_CRAFT_LEN + 1);

		fnv_craft_key(blocks, i, k);
		if (i == 0) {
			fnv0 = fnv_craft_hash(k);
		}
		/* The attack is real: one FNV-1a hash for all. */
		assert_true(fnv_craft_hash(k) == fnv0);
		v[i].node.key = k;
		v[i].value = (int) i;
		eb__hmap_put(&m, &v[i].node);
	}
	for (b = 0; b < m.nbuckets; b++) {
		uint32_t  n = 0;
		eb__hent *e;

		for (e = m.buckets[b]; e != NULL; e = e->next) {
			n++;
		}
		longest = n > longest ? n : longest;
	}
	(void) fprintf(stderr,
	    "hmap: %d crafted keys, %u buckets, longest "
	    "chain %u\n",
	    N, m.nbuckets, longest);
	assert_true(longest <= 32);
	for (i = 0; i < N; i++) {
		eb__hent *n = eb__hmap_get(&m, v[i].node.key);

		assert_ptr_equal(n, &v[i].node);
	}
	eb__hmap_free(&m);
	free(v);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_put_get_del_many),
		cmocka_unit_test(test_siphash_vectors),
		cmocka_unit_test(test_siphash13_matches_reference),
		cmocka_unit_test(test_crafted_fnv_collisions_spread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
