/*
 * Member znodes and small helpers shared by membership (registry.c), the
 * child cache (childcache.c) and the election (election/):
 *
 *   - the member name "m-<attempt-uuid>-<seq10>" and its parts. Members are
 *     ordered by the sequence suffix only (correctness rule 3): the uuid
 *     prefix makes full names sort randomly.
 *   - the member data {"address","node_id","host","cluster_port",
 *     "bridge_port","admin_port","version","started_ms","eligible",
 *     "link_min","link_max"}
 *     parsed into eb__member.
 *   - the percent-encoding of an address into one znode name component.
 *
 * The "live ids" that registry.c and childcache.c hand to ZooKeeper instead
 * of pointers (STYLE B4.5) are the session's, in zk/zk.h (eb__zk_live_*).
 *
 * Loop thread only.
 */
#ifndef EB_MEMBER_MEMBER_H
#define EB_MEMBER_MEMBER_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define EB_MEMBER_PREFIX "m-"

typedef struct eb__member {
	char    *name; /* owned: "m-<uuid>-<seq10>" */
	int64_t  seq;  /* the sequence suffix */
	char     uuid[37];
	int64_t  czxid;   /* creation zxid: the leader epoch (rule 6) */
	int64_t  owner;   /* ephemeral owner session */
	int32_t  version; /* data version */
	char    *node_id; /* owned, "" if absent */
	char    *address; /* owned, "" if absent */
	char    *host;    /* owned, "" if absent */
	int      cluster_port;
	int      bridge_port;
	int      admin_port;
	char    *version_str; /* owned, "" if absent */
	int      link_min;    /* "link_min", "link_max": the link protocol */
	int      link_max;    /* range; 0, 0 if absent or not a valid range */
	uint64_t started_ms;
	int      eligible; /* 1 unless the data says "eligible": false */
	json_t  *data;     /* owned reference: the parsed data (or NULL) */
} eb__member;

/*
 * Parses "m-<uuid>-<seq10>": 0 with seq (and uuid if non-NULL, 37 bytes),
 * or EB_EPROTO for any other name (foreign children are ignored).
 */
int eb__member_parse_name(const char *name, int64_t *seq, char *uuid);

/* Fills m from name, data and stat fields. 0 or EB_EPROTO (bad name). Bad
 * or missing JSON leaves the data fields empty; whether such a member
 * counts is eb__member_invalid_reason()'s decision, not this one's. */
int  eb__member_init(eb__member *m, const char *name, const char *data,
     size_t len, int64_t czxid, int64_t owner, int32_t version);
void eb__member_free(eb__member *m); /* the fields, not m itself */

/*
 * The one validity rule for leadership and the member cache (DESIGN
 * "election over well-formed members only"), shared by election/ and
 * childcache.c so that "who leads" means the same everywhere. A child of
 * <root>/members counts only if
 *   - its name is a member name (eb__member_parse_name),
 *   - it is EPHEMERAL (owner != 0): a persistent child outlives every
 *     session and could block the election forever,
 *   - its data is a member record: a JSON object with non-empty string
 *     "node_id" and "address", ports (when present) integers in 0..65535
 *     and "eligible" (when present) a boolean.
 * Returns NULL when m (filled by eb__member_init) is valid, else a static
 * slug naming the first violated condition ("not-ephemeral", "bad-json",
 * "no-node-id", "no-address", "bad-port", "bad-eligible").
 */
const char *eb__member_invalid_reason(const eb__member *m);

/*
 * eb__member_init followed by eb__member_invalid_reason: NULL with m
 * filled (the caller frees it) when the child is a valid member, else the
 * reason ("bad-name" for a foreign name) with m empty (nothing to free).
 */
const char *eb__member_load(eb__member *m, const char *name, const char *data,
    size_t len, int64_t czxid, int64_t owner, int32_t version);

/* Percent-encodes an address for use as one znode name component
 * (RFC 3986 unreserved characters pass through). Returns a malloc'd
 * string. */
char *eb__member_encode_address(const char *address);

#endif
