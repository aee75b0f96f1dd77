/* Small helpers: clocks, random ids, numbers, files, addresses. Loop thread
 * or any thread. */
#ifndef EB_COMMON_UTIL_H
#define EB_COMMON_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define EB_UUID_STRLEN 36

/* Monotonic milliseconds (uv_hrtime based). */
uint64_t eb__mono_ms(void);
/* Wall-clock milliseconds since the Unix epoch. */
uint64_t eb__wall_ms(void);
/* A random (version 4) UUID as 36 lowercase chars plus NUL. 0 or UV error. */
int eb__uuid(char out[EB_UUID_STRLEN + 1]);
/* Reads the 4 hex digits at p (a JSON \uXXXX escape's) into *out: 1, or 0
 * when one is not a hex digit. p must have 4 readable bytes. */
int eb__hex4(const unsigned char *p, uint32_t *out);
/* Parses a whole decimal string into [min,max]. 0 or EB_ECONF. */
int eb__parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);
/* Reads a whole file into *out (NUL-terminated, free() it) and its length
 * into *len: 0, UV_EFBIG when it is larger than max bytes, or the negative
 * errno of the open or read (libuv's error codes on Linux). */
int eb__read_file(const char *path, size_t max, char **out, size_t *len);
/* A numeric IPv4 or IPv6 address and port into *ss: 0 or UV_EINVAL. */
struct sockaddr_storage;
int eb__ip_addr(const char *host, int port, struct sockaddr_storage *ss);
/* "host:port", "[v6]:port" for an IPv6 host, or "-" when port <= 0. */
void eb__fmt_hostport(char *out, size_t size, const char *host, int port);

#endif
