/*
 * Permitted lists (perm.c): the compiled inbound and outbound lists of the
 * bridge. A separate header only because struct eb_bridge
 * (bridge/bridge_state.h) holds two of them by value; the bridge's files
 * reach it through bridge/bridge_int.h.
 *
 * Ownership: a list owns its entries (addresses and compiled regexes) until
 * eb__perm_free(). Threads: loop thread only.
 */
#ifndef EB_BRIDGE_PERM_H
#define EB_BRIDGE_PERM_H

#include <regex.h>
#include <stddef.h>

#include <ebnode/bridge.h>
#include <ebnode/err.h>

typedef struct eb__perm_entry {
	char   *address; /* owned, or NULL */
	regex_t re;
	int     has_re;
} eb__perm_entry;

typedef struct eb__perm_list {
	eb__perm_entry *v; /* owned */
	size_t          n;
} eb__perm_list;

/* Copies and compiles; 0 or EB_ECONF (bad regex, detail in err). */
int  eb__perm_init(eb__perm_list *l, const eb_bridge_permitted *v, size_t n,
     const char *what, eb_errbuf *err);
void eb__perm_free(eb__perm_list *l);
/* 1 when address matches an entry (first match wins), else 0. */
int eb__perm_allows(const eb__perm_list *l, const char *address);

#endif
