/* SHA-1 and base64 over OpenSSL (digest.h). */
#include "tls/digest.h"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include "common/assert.h"

void
eb__sha1(const void *p, size_t n, unsigned char out[EB__SHA1_LEN])
{
	const unsigned char *r = SHA1(p, n, out);

	EB_ASSERT(r != NULL);
}

size_t
eb__base64(const unsigned char *p, size_t n, char *out)
{
	int len;

	EB_ASSERT(n <= 0x3fffffff);
	len = EVP_EncodeBlock((unsigned char *) out, p, (int) n);
	EB_ASSERT(len >= 0);
	return (size_t) len;
}
