/*
 * Shared data over the cluster (docs/SHARED.md): distributed locks with
 * fencing tokens, linearizable counters and cluster-unique ids, all kept in
 * ZooKeeper under the cluster's root and created with a ZooKeeper session
 * of their own (same ensemble, timeout and credentials as the cluster's,
 * but a separate connection), so that what a node holds dies with that
 * session and nothing clients do with shared data can suspend or expire
 * the session that holds membership and leadership.
 *
 * Locks: the ZooKeeper lock recipe. A waiter creates an ephemeral-sequential
 * child <root>/locks/<name>/l-<seq> and watches only its predecessor (no
 * herd). The holder is the lowest child; its token is that child's czxid,
 * which strictly increases from one holder of a lock to the next (fencing:
 * a resource rejects a token lower than the highest it has seen). A holder
 * loses the lock, and its revoked callback runs synchronously, when the
 * ZooKeeper connection is SUSPENDED ("zk-suspended"), when the session
 * expires ("zk-expired"), when the lease lapses ("lease-expired") or when
 * its node disappears ("lock-gone"), exactly as leadership does
 * (ebnode/election.h): while it holds locks the node renews a lease every
 * heartbeat with quorum-committed multis (a check of each held lock node,
 * split into chunks under the ZooKeeper request limit), and eb_lock_held() is
 * true only while now - (send time of the last renewal) < lease, lease =
 * session - tick/2 - heartbeat - margin (common/lease.h). A revoked holder's
 * node is deleted as soon as the session allows, so the next waiter goes ahead.
 *
 * Counters: <root>/counters/<name> holds the value as decimal text. Every
 * operation is linearizable: updates are versioned setData in a
 * compare-and-set loop, a read is confirmed by a quorum-committed check of
 * the version it read. A counter that does not exist reads 0.
 *
 * Ids: 64-bit, unique in the cluster (for one root), never 0. A node takes
 * blocks of EB_SHARED_ID_BLOCK consecutive ids from the counter
 * <root>/ids (one compare-and-set per block) and hands them out in order.
 * Order: ids from one node strictly increase in the order it hands them
 * out; ids from different nodes carry no order (a node may hand out ids
 * of an older block after another node handed out larger ones).
 *
 * Threads: loop thread only. Callbacks run on the loop, never from inside
 * the call; a call returning non-zero calls nothing. Names: 1..200
 * characters of [A-Za-z0-9._-]. Lifecycle: new -> close (exactly once;
 * pending operations complete with EB_ECANCELED before its callback; held
 * locks are deleted best-effort).
 */
#ifndef EBNODE_SHARED_H
#define EBNODE_SHARED_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include <ebnode/api.h>
#include <ebnode/cluster.h>
#include <ebnode/err.h>

#define EB_SHARED_ID_BLOCK 1000

/* Default caps (eb_shared_opts, docs/SHARED.md "Caps"). */
#define EB_SHARED_MAX_LOCKS_PER_CONN 256
#define EB_SHARED_MAX_LOCKS_PER_NODE 4096
#define EB_SHARED_MAX_WAITS_PER_NODE 2048
#define EB_SHARED_MAX_COUNTERS       10000

/*
 * Caps; beyond them a call fails with EB_EFULL (the bus services answer
 * 429). 0: no cap.
 */
typedef struct eb_shared_opts {
	uint32_t max_locks_per_conn; /* held + waited for, per owner tag */
	uint32_t max_locks_per_node; /* held + waited for on this node */
	/* Waited for on this node: each waiter holds a watch, and the C
	 * client re-sends all of a session's watches in one request when it
	 * reconnects (not split): 2048 paths of 200-character names stay far
	 * under the ZooKeeper request limit. */
	uint32_t max_waits_per_node;
	uint32_t max_counters; /* counter names in the cluster (root) */
} eb_shared_opts;

typedef struct eb_shared eb_shared; /* opaque */
typedef struct eb_lock   eb_lock;   /* one acquisition, opaque */

typedef void (*eb_shared_close_cb)(eb_shared *s, void *arg);

/*
 * status 0: lk holds the lock with token. Else lk is gone (freed after the
 * call): EB_ETIMEOUT (not acquired in time), UV_EBUSY (try: held by
 * someone else), EB_EZKLOSS (the session was suspended or expired while
 * waiting), EB_ECANCELED (released before acquired, or closed), or a
 * ZooKeeper error.
 */
typedef void (*eb_lock_cb)(eb_lock *lk, int status, int64_t token, void *arg);
/* The lock was lost (reason above); lk is freed after the call. */
typedef void (*eb_lock_revoked_cb)(eb_lock *lk, const char *reason, void *arg);

/* Counter results: value is the counter after the operation (get: its
 * value; cas: the value found, which equals update when ok). */
typedef void (*eb_counter_cb)(
    eb_shared *s, int status, int64_t value, int ok, void *arg);
/* status 0: ids[0..count) (borrowed for the call), in the order this node
 * hands them out. */
typedef void (*eb_id_cb)(
    eb_shared *s, int status, const uint64_t *ids, size_t count, void *arg);

typedef struct eb_shared_stats {
	uint64_t locks_held;      /* now */
	uint64_t locks_waiting;   /* now */
	uint64_t acquisitions;    /* total */
	uint64_t revocations;     /* total */
	uint64_t timeouts;        /* acquires that timed out or found it busy */
	uint64_t counter_ops;     /* completed counter operations */
	uint64_t counter_retries; /* compare-and-set retries (contention) */
	uint64_t ids;             /* ids handed out */
	uint64_t id_blocks;       /* blocks taken */
	uint64_t refused;         /* calls refused by a cap (EB_EFULL) */
	uint64_t renewals;        /* lease renewal multis sent (chunks) */
	uint64_t deletes_pending; /* lock nodes still to delete (now) */
	uint64_t counters_deleted;
	int      zk_state;       /* own session: eb__zk_state (0 connecting, 1
	                            connected, 2 suspended, 3 closed) */
	uint64_t zk_expiries;    /* own session expiries */
	uint64_t zk_suspensions; /* own session connection losses */
} eb_shared_stats;

EB_API void eb_shared_opts_init(eb_shared_opts *opts);
/* Needs a clustered cluster (UV_EINVAL standalone), started or not: opens
 * its own ZooKeeper session with the cluster's settings (connecting in the
 * background: until it is connected, calls fail with EB_EZKLOSS). opts
 * NULL: the defaults. */
EB_API int eb_shared_new(
    uv_loop_t *loop, eb_cluster *c, const eb_shared_opts *opts, eb_shared **sp);
EB_API void eb_shared_close(eb_shared *s, eb_shared_close_cb cb, void *arg);
EB_API void eb_shared_stats_get(const eb_shared *s, eb_shared_stats *out);

/*
 * Acquires name. timeout_ms 0: try once (UV_EBUSY when held); < 0: wait
 * without bound. owner is a tag for eb_shared_release_owner (0: none).
 * cb once; revoked at most once, only after cb reported 0.
 */
EB_API int eb_lock_acquire(eb_shared *s, const char *name, int64_t timeout_ms,
    uint64_t owner, eb_lock_cb cb, eb_lock_revoked_cb revoked, void *arg,
    eb_lock **lkp);
/* Releases (or abandons a pending acquire: its cb gets EB_ECANCELED). lk is
 * freed; no revoked callback after this. */
EB_API void eb_lock_release(eb_lock *lk);
/* Held right now (the lease checked at this call). */
EB_API int         eb_lock_held(eb_lock *lk);
EB_API int64_t     eb_lock_token(const eb_lock *lk);
EB_API const char *eb_lock_name(const eb_lock *lk);
EB_API uint64_t    eb_lock_owner(const eb_lock *lk);
/* Releases every lock (held or pending) tagged owner; returns how many. */
EB_API size_t eb_shared_release_owner(eb_shared *s, uint64_t owner);
/* The held lock of owner with this name and token, or NULL. */
EB_API eb_lock *eb_shared_find_lock(
    eb_shared *s, uint64_t owner, const char *name, int64_t token);

EB_API int eb_counter_get(
    eb_shared *s, const char *name, eb_counter_cb cb, void *arg);
EB_API int eb_counter_add(
    eb_shared *s, const char *name, int64_t delta, eb_counter_cb cb, void *arg);
EB_API int eb_counter_cas(eb_shared *s, const char *name, int64_t expect,
    int64_t update, eb_counter_cb cb, void *arg);
/* Deletes the counter (it reads 0 again afterwards): ok 1 when it existed,
 * 0 when it did not; value is the value it had. */
EB_API int eb_counter_delete(
    eb_shared *s, const char *name, eb_counter_cb cb, void *arg);

/* count 1..EB_SHARED_ID_BLOCK. */
EB_API int eb_id_next(eb_shared *s, size_t count, eb_id_cb cb, void *arg);

/*
 * The bus services (docs/SHARED.md): node-local consumers at
 * EB_SHARED_LOCK_ADDRESS, EB_SHARED_COUNTER_ADDRESS and
 * EB_SHARED_ID_ADDRESS answering JSON requests. A lock taken through them
 * belongs to the sender named by the EB_SHARED_CONN_HEADER header (the
 * bridge stamps it on requests from its clients to "ebnode." addresses);
 * eb_shared_service_conn_closed releases that sender's locks. Close the
 * service before the shared object; closing releases its locks.
 */
#define EB_SHARED_LOCK_ADDRESS    "ebnode.lock"
#define EB_SHARED_COUNTER_ADDRESS "ebnode.counter"
#define EB_SHARED_ID_ADDRESS      "ebnode.id"
#define EB_SHARED_CONN_HEADER     "ebnode.conn"

typedef struct eb_shared_service eb_shared_service; /* opaque */
struct eb_bus;
EB_API int eb_shared_service_new(
    eb_shared *s, struct eb_bus *bus, eb_shared_service **out);
EB_API void eb_shared_service_close(eb_shared_service *svc);
/* Releases (or abandons) every lock of that sender; returns how many. */
EB_API size_t eb_shared_service_conn_closed(
    eb_shared_service *svc, uint64_t conn_id);

#endif
