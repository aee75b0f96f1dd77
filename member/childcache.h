/*
 * A cache of the children of one znode (<root>/members), with their data,
 * kept current by one-shot watches: the equivalent of Curator's
 * PathChildrenCache without its races.
 *
 *   - initial load: list the children (arming the child watch), then get
 *     each child's data (arming a data watch);
 *   - the child watch is re-armed from every list completion; a child
 *     event re-lists (one list at a time; events during a list coalesce
 *     into one more list);
 *   - added/removed/updated events carry the parsed member (eb__member);
 *   - every reconnect re-lists (events may have been missed); a new
 *     session rebuilds: re-list and re-get everything, then diff against
 *     the cache so that only real changes are reported;
 *   - a child that vanishes between the list and its get is dropped
 *     silently (it was never reported as added).
 *
 * Members are kept ordered by the sequence suffix (rule 3). Only valid
 * members are visible (eb__member_invalid_reason, the rule the election
 * applies too): a child with a foreign name, a persistent child, one with
 * data that is not a member record, or one this session may not read is
 * ignored -- logged once, counted (eb__childcache_ignored), never reported
 * and never a leader -- and read again only when it changes or on a new
 * session (no polling: an unreadable child costs nothing while it stays
 * as it is). A visible member overwritten with invalid data is REMOVED.
 * Session events must be
 * forwarded by the zk owner. Loop thread only; zk is borrowed and must
 * outlive the cache. Members passed to the callback and returned by the
 * accessors are borrowed until the next loop turn that changes the cache.
 */
#ifndef EB_MEMBER_CHILDCACHE_H
#define EB_MEMBER_CHILDCACHE_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "member/member.h"
#include "zk/zk.h"

typedef struct eb__childcache eb__childcache; /* opaque */

typedef enum eb__childcache_event {
	EB_CC_ADDED = 1,
	EB_CC_REMOVED = 2,
	EB_CC_UPDATED = 3,
	EB_CC_SYNCED = 4 /* a listing and all its gets completed; m NULL */
} eb__childcache_event;

typedef void (*eb__childcache_cb)(
    eb__childcache *c, eb__childcache_event ev, const eb__member *m, void *arg);
typedef void (*eb__childcache_close_cb)(eb__childcache *c, void *arg);

/* No I/O until start. 0 or UV_EINVAL. */
int eb__childcache_new(uv_loop_t *loop, eb__zk *zk, const char *path,
    eb__childcache_cb cb, void *arg, eb__childcache **cp);
/* Loads as soon as the session is connected (now or later). */
int  eb__childcache_start(eb__childcache *c);
void eb__childcache_session_event(eb__childcache *c, eb__zk_event ev);
/* Exactly once; no callback after it; cb on a later turn. */
void eb__childcache_close(
    eb__childcache *c, eb__childcache_close_cb cb, void *arg);

/* Loaded members, in sequence order. */
size_t            eb__childcache_count(const eb__childcache *c);
const eb__member *eb__childcache_at(const eb__childcache *c, size_t i);
/* Children currently ignored (not valid members); the
 * ebnode_members_invalid gauge. */
size_t eb__childcache_ignored(const eb__childcache *c);
/*
 * The leader as the cache sees it: the lowest-sequence valid member that
 * is eligible, or NULL. eb__childcache_leader_epoch() is its czxid (the
 * leader epoch of rule 6), 0 when none: what a receiver compares routed
 * messages' epochs against (fencing). Both are O(members).
 */
const eb__member *eb__childcache_leader(const eb__childcache *c);
int64_t           eb__childcache_leader_epoch(const eb__childcache *c);
/* 1 once a complete listing has been loaded in the current session. */
int eb__childcache_synced(const eb__childcache *c);
/* Lists issued so far (tests: re-list on reconnect). */
unsigned eb__childcache_lists(const eb__childcache *c);

#endif
