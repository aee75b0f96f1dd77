/*
 * Big-endian writers and a bounds-checked reader for link frame bodies
 * (link/link.h). A read past the end sets rd->bad and returns zeros, so
 * a decoder checks once at the end instead of after every field.
 * Pure functions; any thread.
 */
#include <string.h>

#include "link/link.h"

void
eb__link_put_u8(eb__buf *b, uint8_t v)
{
	eb__buf_append(b, &v, 1);
}

void
eb__link_put_u16(eb__buf *b, uint16_t v)
{
	unsigned char x[2] = { (unsigned char) (v >> 8), (unsigned char) v };

	eb__buf_append(b, x, 2);
}

void
eb__link_put_u32(eb__buf *b, uint32_t v)
{
	unsigned char x[4] = { (unsigned char) (v >> 24),
		(unsigned char) (v >> 16), (unsigned char) (v >> 8),
		(unsigned char) v };

	eb__buf_append(b, x, 4);
}

int
eb__link_put_str16(eb__buf *b, const char *s, size_t n)
{
	if (n > UINT16_MAX) {
		return UV_EINVAL;
	}
	eb__link_put_u16(b, (uint16_t) n);
	eb__buf_append(b, s, n);
	return 0;
}

void
eb__link_put_bytes32(eb__buf *b, const char *s, size_t n)
{
	eb__link_put_u32(b, (uint32_t) n);
	eb__buf_append(b, s, n);
}

static const unsigned char *
rd_take(eb__link_rd *r, size_t n)
{
	const unsigned char *p;

	if (r->bad || r->n < n) {
		r->bad = 1;
		return NULL;
	}
	p = (const unsigned char *) r->p;
	r->p += n;
	r->n -= n;
	return p;
}

uint8_t
eb__link_get_u8(eb__link_rd *r)
{
	const unsigned char *p = rd_take(r, 1);

	return p == NULL ? 0 : p[0];
}

uint16_t
eb__link_get_u16(eb__link_rd *r)
{
	const unsigned char *p = rd_take(r, 2);

	return p == NULL ? 0 : (uint16_t) (p[0] << 8 | p[1]);
}

uint32_t
eb__link_get_u32(eb__link_rd *r)
{
	const unsigned char *p = rd_take(r, 4);

	return p == NULL ? 0
	                 : (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 |
	                       (uint32_t) p[2] << 8 | (uint32_t) p[3];
}

const char *
eb__link_get_str16(eb__link_rd *r, size_t *len)
{
	size_t      n = eb__link_get_u16(r);
	const char *p = (const char *) rd_take(r, n);

	*len = p == NULL ? 0 : n;
	return p == NULL ? "" : p;
}

const char *
eb__link_get_bytes32(eb__link_rd *r, size_t *len)
{
	size_t      n = eb__link_get_u32(r);
	const char *p = (const char *) rd_take(r, n);

	*len = p == NULL ? 0 : n;
	return p == NULL ? "" : p;
}
