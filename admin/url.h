/*
 * URL query helpers for admin routes (url.c).
 */
#ifndef EB_ADMIN_URL_H
#define EB_ADMIN_URL_H

#include <stddef.h>

/* Percent-decodes s[0..len) ('+' is a space) into out (NUL-terminated).
 * 0, or -1 for a bad escape, an embedded NUL or no room (out needs
 * len + 1 bytes at most). */
int eb__url_decode(const char *s, size_t len, char *out, size_t cap);

#endif
