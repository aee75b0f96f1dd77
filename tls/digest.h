/*
 * Digests and encodings that need OpenSSL, for modules that must not
 * include it: SHA-1 and base64 (the WebSocket handshake's
 * Sec-WebSocket-Accept, RFC 6455 section 4.2.2).
 *
 * Threads: any.
 */
#ifndef EB_TLS_DIGEST_H
#define EB_TLS_DIGEST_H

#include <stddef.h>

#define EB__SHA1_LEN 20

/* The SHA-1 digest of n bytes at p into out. */
void eb__sha1(const void *p, size_t n, unsigned char out[EB__SHA1_LEN]);
/* Standard base64 of n bytes with padding and a NUL; out holds at least
 * 4 * ((n + 2) / 3) + 1 bytes. Returns the length without the NUL. */
size_t eb__base64(const unsigned char *p, size_t n, char *out);

#endif
