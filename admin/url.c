/*
 * Percent-decoding of query values (url.h).
 */
#include "admin/url.h"

static int
hexval(char c)
{
	if (c >= '0' && c <= '9') {
		return c - '0';
	}
	if (c >= 'a' && c <= 'f') {
		return c - 'a' + 10;
	}
	if (c >= 'A' && c <= 'F') {
		return c - 'A' + 10;
	}
	return -1;
}

int
eb__url_decode(const char *s, size_t len, char *out, size_t cap)
{
	size_t i;
	size_t o = 0;

	for (i = 0; i < len; i++) {
		char c = s[i];

		if (c == '%') {
			int hi = i + 2 < len ? hexval(s[i + 1]) : -1;
			int lo = i + 2 < len ? hexval(s[i + 2]) : -1;

			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
				return -1;
			}
			c = (char) (hi * 16 + lo);
			i += 2;
		} else if (c == '+') {
			c = ' ';
		}
		if (o + 1 >= cap) {
			return -1;
		}
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}
