/*
 * libFuzzer target for common/jsonscan.h: on every input the scanner's
 * decision (and, for a string, its unescaped bytes) must agree with jansson
 * (tests/harness/jsonref.h: the three things jansson refuses although RFC
 * 8259 allows them excepted). The first byte picks the nesting bound
 * (1..64), so the depth rule is fuzzed too; the rest is the text.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/harness/jsonref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[256];

	if (size == 0) {
		return 0;
	}
	if (eb__jsonref_check((const char *) data + 1, size - 1,
	        1 + data[0] % 64, NULL, why, sizeof(why)) != 0) {
		(void) fprintf(stderr, "jsonscan_fuzz: %s\n", why);
		abort();
	}
	return 0;
}
