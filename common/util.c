/* Clocks, ids, number parsing, files and addresses; see util.h. */
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uv.h>

#include <ebnode/err.h>

#include "common/alloc.h"

uint64_t
eb__mono_ms(void)
{
	return uv_hrtime() / 1000000u;
}

uint64_t
eb__wall_ms(void)
{
	struct timespec ts;

	(void) clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t) ts.tv_sec * 1000u + (uint64_t) ts.tv_nsec / 1000000u;
}

int
eb__uuid(char out[EB_UUID_STRLEN + 1])
{
	unsigned char b[16];
	int           rv;

	rv = uv_random(NULL, NULL, b, sizeof(b), 0, NULL);
	if (rv != 0) {
		return rv;
	}
	b[6] = (unsigned char) ((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char) ((b[8] & 0x3f) | 0x80);
	(void) snprintf(out, EB_UUID_STRLEN + 1,
	    "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%"
	    "02x",
	    b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
	    b[11], b[12], b[13], b[14], b[15]);
	return 0;
}

int
eb__parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
	char     *end = NULL;
	long long v;

	if (s == NULL || *s == '\0') {
		return EB_ECONF;
	}
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || end == NULL || *end != '\0' || v < min || v > max) {
		return EB_ECONF;
	}
	*out = (int64_t) v;
	return 0;
}

int
eb__hex4(const unsigned char *p, uint32_t *out)
{
	uint32_t v = 0;
	int      i;

	for (i = 0; i < 4; i++) {
		unsigned c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9') {
			v |= c - '0';
		} else if (c >= 'a' && c <= 'f') {
			v |= c - 'a' + 10;
		} else if (c >= 'A' && c <= 'F') {
			v |= c - 'A' + 10;
		} else {
			return 0;
		}
	}
	*out = v;
	return 1;
}

void
eb__fmt_hostport(char *out, size_t size, const char *host, int port)
{
	if (port <= 0) {
		(void) snprintf(out, size, "-");
	} else {
		(void) snprintf(out, size,
		    strchr(host, ':') != NULL ? "[%s]:%d" : "%s:%d", host,
		    port);
	}
}

int
eb__read_file(const char *path, size_t max, char **out, size_t *len)
{
	FILE  *f = fopen(path, "rb");
	char  *buf = NULL;
	size_t n = 0, cap = 0, got;
	int    saved;

	if (f == NULL) {
		return -errno;
	}
	do {
		if (cap - n < 4096) {
			cap = cap != 0 ? cap * 2 : 8192;
			buf = eb__realloc(buf, cap + 1);
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
	} while (got > 0 && n <= max);
	saved = ferror(f) ? errno : 0;
	(void) fclose(f);
	if (saved != 0 || n > max) {
		free(buf);
		return saved != 0 ? -saved : UV_EFBIG;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

int
eb__ip_addr(const char *host, int port, struct sockaddr_storage *ss)
{
	if (uv_ip4_addr(host, port, (struct sockaddr_in *) ss) == 0) {
		return 0;
	}
	return uv_ip6_addr(host, port, (struct sockaddr_in6 *) ss);
}
