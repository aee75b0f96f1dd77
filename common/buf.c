/* Growable input buffer; see buf.h. */
#include "common/buf.h"

#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

void
eb__buf_init(eb__buf *b)
{
	b->data = NULL;
	b->off = 0;
	b->len = 0;
	b->cap = 0;
}

void
eb__buf_free(eb__buf *b)
{
	free(b->data);
	eb__buf_init(b);
}

char *
eb__buf_reserve(eb__buf *b, size_t n)
{
	return eb__buf_reserve_upto(b, n, 0);
}

char *
eb__buf_reserve_upto(eb__buf *b, size_t n, size_t upto)
{
	size_t unread = b->len - b->off;
	size_t want;

	if (b->cap - b->len >= n) {
		return b->data + b->len;
	}
	/* Compact first: reading usually leaves little unread data behind. */
	if (b->off > 0) {
		if (unread > 0) {
			memmove(b->data, b->data + b->off, unread);
		}
		b->off = 0;
		b->len = unread;
		if (b->cap - b->len >= n) {
			return b->data + b->len;
		}
	}
	want = b->cap == 0 ? 4096 : b->cap;
	while (want - b->len < n) {
		want *= 2;
	}
	/* Doubling would overshoot what the caller knows it will need:
	 * take exactly that (still at least what is needed now). */
	if (upto > 0 && want > upto) {
		want = upto > b->len + n ? upto : b->len + n;
	}
	b->data = eb__realloc(b->data, want);
	b->cap = want;
	return b->data + b->len;
}

void
eb__buf_consume(eb__buf *b, size_t n)
{
	b->off += n;
	if (b->off >= b->len) {
		b->off = 0;
		b->len = 0;
	}
}
