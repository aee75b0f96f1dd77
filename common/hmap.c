/* String-keyed intrusive hash map; see hmap.h. */
#include "common/hmap.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"

#define HMAP_MIN_BUCKETS 16u

static inline uint64_t
rotl(uint64_t x, unsigned b)
{
	return (x << b) | (x >> (64u - b));
}

/* One round on the state held in four locals (not an array), inlined so
 * that the state stays in registers: the map hashes every key several times
 * per message. */
static inline __attribute__((always_inline)) void
sip_round(uint64_t *v0, uint64_t *v1, uint64_t *v2, uint64_t *v3)
{
	*v0 += *v1;
	*v1 = rotl(*v1, 13) ^ *v0;
	*v0 = rotl(*v0, 32);
	*v2 += *v3;
	*v3 = rotl(*v3, 16) ^ *v2;
	*v0 += *v3;
	*v3 = rotl(*v3, 21) ^ *v0;
	*v2 += *v1;
	*v1 = rotl(*v1, 17) ^ *v2;
	*v2 = rotl(*v2, 32);
}

static inline uint64_t
le64(const unsigned char *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
#else
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < 8; i++) {
		v |= (uint64_t) p[i] << (8 * i);
	}
	return v;
#endif
}

/* The last block: the len & 7 remaining bytes, the length's low byte on top. */
static inline uint64_t
sip_tail(const unsigned char *p, size_t len)
{
	uint64_t m = (uint64_t) (len & 0xffu) << 56;
	unsigned r;

	for (r = 0; r < (len & 7u); r++) {
		m |= (uint64_t) p[r] << (8 * r);
	}
	return m;
}

static inline __attribute__((always_inline)) uint64_t
sip_core(uint64_t k0, uint64_t k1, const unsigned char *p, size_t len,
    unsigned c, unsigned d)
{
	uint64_t v0 = 0x736f6d6570736575ull ^ k0;
	uint64_t v1 = 0x646f72616e646f6dull ^ k1;
	uint64_t v2 = 0x6c7967656e657261ull ^ k0;
	uint64_t v3 = 0x7465646279746573ull ^ k1;
	uint64_t m;
	size_t   i;
	unsigned r;

	for (i = 0; i + 8 <= len; i += 8) {
		m = le64(p + i);
		v3 ^= m;
		for (r = 0; r < c; r++) {
			sip_round(&v0, &v1, &v2, &v3);
		}
		v0 ^= m;
	}
	m = sip_tail(p + i, len);
	v3 ^= m;
	for (r = 0; r < c; r++) {
		sip_round(&v0, &v1, &v2, &v3);
	}
	v0 ^= m;
	v2 ^= 0xffu;
	for (r = 0; r < d; r++) {
		sip_round(&v0, &v1, &v2, &v3);
	}
	return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t
eb__siphash(const unsigned char key[16], const void *data, size_t len,
    unsigned c, unsigned d)
{
	return sip_core(le64(key), le64(key + 8), data, len, c, d);
}

uint64_t
eb__siphash13(const unsigned char key[16], const void *data, size_t len)
{
	return sip_core(le64(key), le64(key + 8), data, len, 1, 3);
}

static unsigned char  hmap_key[16];
static pthread_once_t hmap_once = PTHREAD_ONCE_INIT;

/* The per-process seed, drawn once from the kernel. Without getrandom (or
 * /dev/urandom) it falls back to time, pid and an address: weaker, but
 * still not known to a remote peer in advance. */
static void
hmap_seed(void)
{
	size_t   got = 0;
	ssize_t  n;
	uint64_t mix[2];
	FILE    *f;

	while (got < sizeof(hmap_key)) {
		n = getrandom(hmap_key + got, sizeof(hmap_key) - got, 0);
		if (n <= 0) {
			break;
		}
		got += (size_t) n;
	}
	if (got < sizeof(hmap_key) && (f = fopen("/dev/urandom", "rb"))) {
		got = fread(hmap_key, 1, sizeof(hmap_key), f);
		(void) fclose(f);
	}
	if (got < sizeof(hmap_key)) {
		struct timespec ts;

		(void) clock_gettime(CLOCK_MONOTONIC, &ts);
		mix[0] = (uint64_t) ts.tv_nsec ^ ((uint64_t) getpid() << 32);
		mix[1] = (uint64_t) (uintptr_t) &mix ^ (uint64_t) time(NULL);
		memcpy(hmap_key, mix, sizeof(hmap_key));
	}
}

uint32_t
eb__hmap_hash(const char *s)
{
	/* Once per process: maps of several loops (threads) share it. */
	(void) pthread_once(&hmap_once, hmap_seed);
	/* SipHash-1-3: the rounds Python, Rust and Ruby use for their
	 * tables; fast on short keys. Bucket index: the low bits. */
	return (uint32_t) eb__siphash13(hmap_key, s, strlen(s));
}

void
eb__hmap_init(eb__hmap *m)
{
	m->buckets = NULL;
	m->nbuckets = 0;
	m->count = 0;
}

void
eb__hmap_free(eb__hmap *m)
{
	free(m->buckets);
	eb__hmap_init(m);
}

eb__hent *
eb__hmap_get(const eb__hmap *m, const char *key)
{
	uint32_t  h;
	eb__hent *e;

	if (m->nbuckets == 0) {
		return NULL;
	}
	h = eb__hmap_hash(key);
	for (e = m->buckets[h & (m->nbuckets - 1)]; e != NULL; e = e->next) {
		if (e->hash == h && strcmp(e->key, key) == 0) {
			return e;
		}
	}
	return NULL;
}

static void
hmap_resize(eb__hmap *m, uint32_t n)
{
	eb__hent **nb = eb__calloc(n, sizeof(eb__hent *));
	uint32_t   i;

	for (i = 0; i < m->nbuckets; i++) {
		eb__hent *e = m->buckets[i];

		while (e != NULL) {
			eb__hent *next = e->next;
			uint32_t  b = e->hash & (n - 1);

			e->next = nb[b];
			nb[b] = e;
			e = next;
		}
	}
	free(m->buckets);
	m->buckets = nb;
	m->nbuckets = n;
}

void
eb__hmap_put(eb__hmap *m, eb__hent *e)
{
	uint32_t b;

	if (m->nbuckets == 0) {
		hmap_resize(m, HMAP_MIN_BUCKETS);
	} else if (m->count >= m->nbuckets) {
		hmap_resize(m, m->nbuckets * 2); /* load factor <= 1 */
	}
	e->hash = eb__hmap_hash(e->key);
	b = e->hash & (m->nbuckets - 1);
	e->next = m->buckets[b];
	m->buckets[b] = e;
	m->count++;
}

void
eb__hmap_del(eb__hmap *m, eb__hent *e)
{
	eb__hent **pp = &m->buckets[e->hash & (m->nbuckets - 1)];

	while (*pp != NULL) {
		if (*pp == e) {
			*pp = e->next;
			e->next = NULL;
			m->count--;
			return;
		}
		pp = &(*pp)->next;
	}
}
