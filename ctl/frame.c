/*
 * A frame from the bridge as ebctl reads it: jansson reads the envelope
 * (type, address, headers...) for dispatch, but never the body, whose bytes
 * ebctl prints as they arrived (issue 23: `0.1` stays `0.1`). The body's
 * span is found by the RFC 8259 scanner (common/jsonscan.h) and replaced by
 * null in the copy jansson reads, so a body jansson cannot hold (an integer
 * past 64 bits, an unpaired surrogate) does not lose the frame; the body is
 * then read on its own for the commands that use its value, and stays null
 * where jansson cannot hold it.
 */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/jsonscan.h"
#include "ctl/ctl.h"

/* The span of the top-level "body" (the last one, as jansson keeps it);
 * 0, or -1 when p is not a JSON object. */
static int
body_span(const char *p, size_t n, const char **body, size_t *blen)
{
	eb__jscan            s;
	const char          *k;
	size_t               kl;
	int                  esc;
	const unsigned char *v;

	*body = NULL;
	*blen = 0;
	eb__jscan_init(&s, p, n, 2048);
	eb__jscan_ws(&s);
	if (!eb__jscan_ch(&s, '{')) {
		return -1;
	}
	eb__jscan_ws(&s);
	if (!eb__jscan_ch(&s, '}')) {
		for (;;) {
			if (!eb__jscan_string(&s, &k, &kl, &esc)) {
				return -1;
			}
			eb__jscan_ws(&s);
			if (!eb__jscan_ch(&s, ':')) {
				return -1;
			}
			eb__jscan_ws(&s);
			v = s.p;
			if (!eb__jscan_value(&s, 1)) {
				return -1;
			}
			if (!esc && kl == 4 && memcmp(k, "body", 4) == 0) {
				*body = (const char *) v;
				*blen = (size_t) (s.p - v);
			}
			eb__jscan_ws(&s);
			if (eb__jscan_ch(&s, '}')) {
				break;
			}
			if (!eb__jscan_ch(&s, ',')) {
				return -1;
			}
			eb__jscan_ws(&s);
		}
	}
	eb__jscan_ws(&s);
	return s.p == s.end ? 0 : -1;
}

json_t *
eb__ctl_frame_read(const char *p, size_t n, const char **body, size_t *blen)
{
	json_t *j;
	char   *copy;
	size_t  head;

	if (body_span(p, n, body, blen) != 0) {
		return NULL;
	}
	if (*body == NULL) {
		j = json_loadb(p, n, JSON_ALLOW_NUL, NULL);
	} else {
		head = (size_t) (*body - p);
		copy = eb__malloc(n - *blen + 4);
		memcpy(copy, p, head);
		memcpy(copy + head, "null", 4);
		memcpy(copy + head + 4, *body + *blen, n - head - *blen);
		j = json_loadb(copy, n - *blen + 4, JSON_ALLOW_NUL, NULL);
		free(copy);
		if (*blen == 4 && memcmp(*body, "null", 4) == 0) {
			*body = NULL;
			*blen = 0;
		}
	}
	if (!json_is_object(j)) {
		json_decref(j);
		return NULL;
	}
	if (*body != NULL) {
		/* For the commands that read a value (shared data answers);
		 * what jansson cannot hold stays null, and printing uses the
		 * bytes. */
		(void) json_object_set_new(j, "body",
		    json_loadb(
		        *body, *blen, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL));
	}
	return j;
}
