/*
 * libFuzzer target: the configuration loader. The input is a config file
 * (comment stripping, the position index scanner, jansson, the schema walk,
 * the cross-key rules and the error formatting all run on it); its first
 * line, if it starts with "#set ", is also used as one --set argument.
 * Nothing may crash, leak or read out of bounds; an error must be a
 * non-empty message and a success must survive eb__conf_to_json().
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "conf/conf.h"

/* libFuzzer's names. */
/* NOLINTNEXTLINE(readability-identifier-naming) */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* NOLINTNEXTLINE(readability-identifier-naming) */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const env[] = { NULL };
	eb__conf_sources         src;
	eb__conf                *c = NULL;
	eb_errbuf                e;
	const char              *set = NULL;
	char                    *line = NULL;
	const char              *text = (const char *) data;
	const char              *nl;

	memset(&src, 0, sizeof(src));
	if (size > 5 && memcmp(data, "#set ", 5) == 0 &&
	    (nl = memchr(data, '\n', size)) != NULL) {
		size_t n = (size_t) (nl - text) - 5;

		line = malloc(n + 1);
		if (line == NULL) {
			return 0;
		}
		memcpy(line, text + 5, n);
		line[n] = '\0';
		set = line;
		size -= (size_t) (nl - text) + 1;
		text = nl + 1;
	}
	src.file = "fuzz.json";
	src.text = text;
	src.text_len = size;
	src.env = env;
	src.sets = &set;
	src.n_sets = set != NULL ? 1 : 0;
	e.msg[0] = '\0';
	if (eb__conf_load(&src, &c, &e) != 0) {
		if (e.msg[0] == '\0' || c != NULL) {
			abort();
		}
	} else {
		json_t *j = eb__conf_to_json(c, true);

		if (j == NULL) {
			abort();
		}
		json_decref(j);
		eb__conf_free(c);
	}
	free(line);
	return 0;
}
