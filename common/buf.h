/*
 * A growable byte buffer with a read offset, used for socket input. Data is
 * appended at the end and consumed from the front; the unread part is moved
 * to the front only when that avoids growing. The owner bounds its size.
 */
#ifndef EB_COMMON_BUF_H
#define EB_COMMON_BUF_H

#include <stddef.h>
#include <string.h>

typedef struct eb__buf {
	char  *data; /* owned */
	size_t off;  /* first unread byte */
	size_t len;  /* end of data */
	size_t cap;
} eb__buf;

void eb__buf_init(eb__buf *b);
void eb__buf_free(eb__buf *b);
/* Makes room for at least n more bytes after len and returns it. */
char *eb__buf_reserve(eb__buf *b, size_t n);
/* The same, growing to at most upto bytes in all when that holds n more
 * (upto 0: no hint): for a buffer whose final size is known. */
char *eb__buf_reserve_upto(eb__buf *b, size_t n, size_t upto);
void  eb__buf_consume(eb__buf *b, size_t n);
/* Appends n bytes. Inline: the frame writers append a field at a time,
 * and the room is usually there already. */
static inline void
eb__buf_append(eb__buf *b, const void *p, size_t n)
{
	char *dst = b->cap - b->len >= n ? b->data + b->len
	                                 : eb__buf_reserve_upto(b, n, 0);

	if (n > 0) {
		memcpy(dst, p, n);
	}
	b->len += n;
}
static inline size_t
eb__buf_avail(const eb__buf *b)
{
	return b->len - b->off;
}
static inline const char *
eb__buf_head(const eb__buf *b)
{
	return b->data + b->off;
}

#endif
