/*
 * The run of plain bytes at the start of a JSON string's body: the one
 * scan behind the RFC 8259 scanner's strings (common/jsonscan.c) and the
 * plain header check (common/jsonstr.c), which used to carry a copy each
 * (issue 25).
 *
 * eb__json_plain_run(p, end, del) returns a position r in [p, end] such
 * that no byte of [p, r) stops a run, where the stop bytes are '"', '\\',
 * the controls (< 0x20) and every byte >= 0x80, plus 0x7f when del is
 * non-zero. When r < end it is either the first stop byte (16 bytes at a
 * time with SSE2, 8 at a time word by word on a little-endian machine) or
 * a little before it (a big-endian machine, or fewer than 8 bytes left):
 * the caller's byte loop goes on from r. It reads only [p, end).
 *
 * Pure, any thread. Inline: del is a constant at each call, so each caller
 * gets its own loop without a test per word.
 */
#ifndef EB_COMMON_JSONRUN_H
#define EB_COMMON_JSONRUN_H

#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define EB__JRUN_ONES  0x0101010101010101u
#define EB__JRUN_HIGHS 0x8080808080808080u

static inline const unsigned char *
eb__json_plain_run(const unsigned char *p, const unsigned char *end, int del)
{
	uint64_t w;
	uint64_t q;
	uint64_t b;
	uint64_t m;

#if defined(__SSE2__)
	while (end - p >= 16) {
		__m128i v = _mm_loadu_si128((const __m128i *) (const void *) p);
		/* Signed bytes: < 0x20 is a control or >= 0x80. */
		__m128i s = _mm_or_si128(
		    _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
		        _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
		    _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));
		unsigned bits;

		if (del) {
			s = _mm_or_si128(
			    s, _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)));
		}
		bits = (unsigned) _mm_movemask_epi8(s);
		if (bits != 0) {
			return p + __builtin_ctz(bits);
		}
		p += 16;
	}
#endif
	while (end - p >= 8) {
		memcpy(&w, p, 8);
		q = w ^ (EB__JRUN_ONES * '"');
		b = w ^ (EB__JRUN_ONES * '\\');
		/* Per byte: < 0x20, == '"', == '\\', >= 0x80 (and == 0x7f,
		 * whose + 1 sets the high bit). A borrow or carry only follows
		 * a byte that matched, so the lowest flag is exact. */
		m = ((w - EB__JRUN_ONES * 0x20u) & ~w) |
		    ((q - EB__JRUN_ONES) & ~q) | ((b - EB__JRUN_ONES) & ~b) | w;
		if (del) {
			m |= w + EB__JRUN_ONES;
		}
		m &= EB__JRUN_HIGHS;
		if (m != 0) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			p += (unsigned) __builtin_ctzll(m) >> 3;
#endif
			break;
		}
		p += 8;
	}
	return p;
}

#endif
