/*
 * Permitted lists (Vert.x PermittedOptions): exact addresses, whole-string
 * regexes and match-all entries. Regexes are POSIX extended (regcomp with
 * REG_EXTENDED | REG_NOSUB), anchored by wrapping them in ^(...)$, so that a
 * match means the whole address matched as with Java's Pattern.matches().
 * The dialect differs from Java: no \w \d \s shorthands inside brackets, no
 * lazy quantifiers, no lookaround (docs/BRIDGE.md).
 */
#include "bridge/perm.h"

#include <stdlib.h>
#include <string.h>

#include <ebnode/err.h>

#include "common/alloc.h"

void
eb__perm_free(eb__perm_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->v[i].address);
		if (l->v[i].has_re) {
			regfree(&l->v[i].re);
		}
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static int
perm_compile(eb__perm_entry *e, const char *src, const char *what, size_t idx,
    eb_errbuf *err)
{
	size_t n = strlen(src);
	char  *anchored = eb__malloc(n + 5);
	char   msg[128];
	int    rc;

	anchored[0] = '^';
	anchored[1] = '(';
	memcpy(anchored + 2, src, n);
	anchored[n + 2] = ')';
	anchored[n + 3] = '$';
	anchored[n + 4] = '\0';
	rc = regcomp(&e->re, anchored, REG_EXTENDED | REG_NOSUB);
	free(anchored);
	if (rc != 0) {
		(void) regerror(rc, &e->re, msg, sizeof(msg));
		return eb_errf(err, EB_ECONF,
		    "bridge.%s[%zu].addressRegex: %s: \"%s\"", what, idx, msg,
		    src);
	}
	e->has_re = 1;
	return 0;
}

int
eb__perm_init(eb__perm_list *l, const eb_bridge_permitted *v, size_t n,
    const char *what, eb_errbuf *err)
{
	size_t i;
	int    rv;

	l->v = n > 0 ? eb__calloc(n, sizeof(*l->v)) : NULL;
	l->n = 0;
	for (i = 0; i < n; i++) {
		eb__perm_entry *e = &l->v[i];

		l->n = i + 1; /* so that free() sees this entry */
		if (v[i].address != NULL) {
			/* Vert.x ignores the regex when both are set. */
			e->address = eb__strdup(v[i].address);
		} else if (v[i].address_regex != NULL) {
			rv = perm_compile(e, v[i].address_regex, what, i, err);
			if (rv != 0) {
				eb__perm_free(l);
				return rv;
			}
		}
	}
	return 0;
}

int
eb__perm_allows(const eb__perm_list *l, const char *address)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		const eb__perm_entry *e = &l->v[i];

		if (e->address != NULL) {
			if (strcmp(e->address, address) == 0) {
				return 1;
			}
		} else if (e->has_re) {
			if (regexec(&e->re, address, 0, NULL, 0) == 0) {
				return 1;
			}
		} else {
			return 1; /* {} permits everything */
		}
	}
	return 0;
}
