/*
 * A ZooKeeper session driven from the libuv loop (libzookeeper_st), with
 * async wrappers for the operations membership and election need.
 *
 * Threads: loop thread only. Every callback runs on the loop. A call that
 * returns 0 fires its callback exactly once, never from inside the call; a
 * non-zero return means no callback.
 *
 * Codes: statuses are 0 or EB_E* codes (err.h). Raw ZooKeeper codes never
 * leave zk/ (eb__err_from_zk translates them).
 *
 * Session events reach only the owner's event callback; per-path watches get
 * only node events (the wrapper filters ZOO_SESSION_EVENT out of them).
 * Watches are one-shot (ZooKeeper 3.8 C client): re-arm from the completion.
 *
 * The implementation behind eb__zk is an ops table (zk/zk_ops.h): the real
 * libzookeeper backend (zk/zk.c) or the in-memory fake used by
 * deterministic unit tests (tests/harness/fakezk.c).
 */
#ifndef EB_ZK_ZK_H
#define EB_ZK_ZK_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include <ebnode/err.h>

typedef struct eb__zk eb__zk; /* opaque */

typedef enum eb__zk_event {
	EB_ZK_EV_CONNECTED = 1,   /* a new session is established */
	EB_ZK_EV_SUSPENDED = 2,   /* connection lost; session may live */
	EB_ZK_EV_RECONNECTED = 3, /* the same session is back */
	EB_ZK_EV_EXPIRED = 4,     /* session dead; a new one is being made */
	EB_ZK_EV_AUTH_FAILED = 5  /* credentials refused; handle dead */
} eb__zk_event;

typedef enum eb__zk_state {
	EB_ZK_STATE_CONNECTING = 0, /* no session yet, or a new one pending */
	EB_ZK_STATE_CONNECTED = 1,
	EB_ZK_STATE_SUSPENDED = 2,
	EB_ZK_STATE_CLOSED = 3
} eb__zk_state;

typedef enum eb__zk_acl {
	EB_ZK_ACL_OPEN = 0,   /* world:anyone all */
	EB_ZK_ACL_CREATOR = 1 /* auth (creator) all, world read */
} eb__zk_acl;

/*
 * The default bound on one request's serialized size (zookeeper.max_request
 * _bytes, docs/ZOOKEEPER.md "Request sizes"): the server drops the
 * connection of a client whose request exceeds jute.maxbuffer (1048575
 * bytes by default), so ebnode stays 48575 bytes below it; the margin
 * covers what the leader adds when it forwards the transaction to the
 * followers (a header and, for a sequential create, the 10-digit suffix)
 * and the reply of a read of a node written at the bound.
 */
#define EB_ZK_DEFAULT_MAX_REQUEST 1000000u

typedef struct eb__zk_opts {
	const char *connect;            /* "h1:p1,h2:p2"; borrowed until new */
	uint32_t    session_timeout_ms; /* default 10000 */
	const char *auth_scheme;        /* NULL or "digest" */
	const char *auth_credentials;   /* "user:password" for digest */
	eb__zk_acl  acl;                /* ACL for nodes this client creates */
	size_t      max_request_bytes;  /* default EB_ZK_DEFAULT_MAX_REQUEST;
	                                   0: the default */
} eb__zk_opts;

typedef struct eb__zk_stat {
	int64_t czxid;
	int64_t mzxid;
	int64_t ephemeral_owner; /* session id, 0 if persistent */
	int32_t version;
	int32_t cversion;
	int32_t num_children;
	int32_t data_length;
} eb__zk_stat;

/* Node events for one-shot watches. */
typedef enum eb__zk_watch_type {
	EB_ZK_WATCH_CREATED = 1,
	EB_ZK_WATCH_DELETED = 2,
	EB_ZK_WATCH_CHANGED = 3,
	EB_ZK_WATCH_CHILD = 4,
	EB_ZK_WATCH_NOT_WATCHING = 5 /* the server dropped the watch */
} eb__zk_watch_type;

#define EB_ZK_EPHEMERAL  1
#define EB_ZK_SEQUENTIAL 2

typedef void (*eb__zk_event_cb)(eb__zk *zk, eb__zk_event ev, void *arg);
typedef void (*eb__zk_watch_cb)(
    eb__zk *zk, eb__zk_watch_type type, const char *path, void *arg);
typedef void (*eb__zk_void_cb)(eb__zk *zk, int status, void *arg);
typedef void (*eb__zk_create_cb)(
    eb__zk *zk, int status, const char *path, void *arg);
typedef void (*eb__zk_stat_cb)(
    eb__zk *zk, int status, const eb__zk_stat *stat, void *arg);
typedef void (*eb__zk_data_cb)(eb__zk *zk, int status, const char *data,
    size_t len, const eb__zk_stat *stat, void *arg);
typedef void (*eb__zk_children_cb)(
    eb__zk *zk, int status, const char *const *names, size_t count, void *arg);
typedef void (*eb__zk_close_cb)(eb__zk *zk, void *arg);

typedef enum eb__zk_op_type {
	EB_ZK_OP_CREATE = 1,
	EB_ZK_OP_DELETE = 2,
	EB_ZK_OP_SET = 3,
	EB_ZK_OP_CHECK = 4
} eb__zk_op_type;

/* One operation of a multi; every field is borrowed for the call. */
typedef struct eb__zk_op {
	eb__zk_op_type type;
	const char    *path;
	const char    *data; /* create, set */
	size_t         len;
	int            flags;   /* create: EB_ZK_EPHEMERAL | EB_ZK_SEQUENTIAL */
	int32_t        version; /* delete, set, check; -1: any */
} eb__zk_op;

/* Per-op result of a multi; borrowed for the callback. */
typedef struct eb__zk_op_result {
	int         status;
	const char *path; /* create: the created path, else NULL */
} eb__zk_op_result;

/* status: 0 when all committed, else the first failing op's code (and
 * nothing was applied). results has one entry per op in both cases. */
typedef void (*eb__zk_multi_cb)(eb__zk *zk, int status,
    const eb__zk_op_result *results, size_t count, void *arg);

void eb__zk_opts_init(eb__zk_opts *opts);

/* Real backend. No I/O until eb__zk_start(). on_event gets session events. */
int eb__zk_new(uv_loop_t *loop, const eb__zk_opts *opts,
    eb__zk_event_cb on_event, void *arg, eb__zk **zkp);
int eb__zk_start(eb__zk *zk);
/* Exactly once, also after a failed start. Pending operations complete with
 * EB_ECANCELED; the session is closed without blocking the loop; cb runs on
 * a later tick, and zk is freed after it returns. */
void eb__zk_close(eb__zk *zk, eb__zk_close_cb cb, void *arg);

eb__zk_state eb__zk_get_state(const eb__zk *zk);
/* "connecting", "connected", "suspended" or "closed" (anything else):
 * the state as /health and the metrics name it. Static string. */
const char *eb__zk_state_name(eb__zk_state s);
/* The current session id (0 before the first session). */
int64_t eb__zk_session_id(const eb__zk *zk);
/* The negotiated session timeout in ms (the requested one before). */
uint32_t eb__zk_session_timeout_ms(const eb__zk *zk);
/*
 * Monotonic ms (eb__mono_ms) at which the most recent request that then
 * completed successfully was sent; 0 when none yet in this session.
 * Diagnostics only: NOT a lease base (a ZooKeeper follower cut off from the
 * quorum still answers reads; the election renews its lease with a
 * quorum-committed multi, docs/CLUSTER.md "The lease").
 */
uint64_t eb__zk_last_ok_send_ms(const eb__zk *zk);

/* Requests dispatched to the server so far (every operation, each level of
 * eb__zk_ensure_path and each multi counting one): the
 * ebnode_zk_requests_total counter that shows a busy loop. */
uint64_t eb__zk_requests(const eb__zk *zk);
/* 1 when a completion's status says the session or connection is in
 * trouble (loss, timeout, expiry, closing, canceled) rather than anything
 * about the node: the next session event re-drives the caller. */
int eb__zk_status_transient(int status);

/*
 * Request sizes (docs/ZOOKEEPER.md "Request sizes"). Every operation below
 * estimates the bytes the client will write for it (jute encoding: the
 * length prefix, the request header, each path with the session's chroot
 * prepended, data, the ACL, the per-op headers of a multi), an upper bound
 * that never undercounts. One above eb__zk_max_request() is never sent: the
 * call returns EB_EZKTOOBIG (no callback) and logs "request-too-big" with
 * both figures, instead of the server dropping the session's connection.
 */
size_t eb__zk_max_request(const eb__zk *zk);
/* Requests refused with EB_EZKTOOBIG so far. */
uint64_t eb__zk_too_big(const eb__zk *zk);
/* The estimate of op sent alone (EB_ZK_OP_CHECK: as an exists()). */
size_t eb__zk_op_bytes(const eb__zk *zk, const eb__zk_op *op);
/* The estimate of a multi of ops[0..count); each op adds exactly
 * eb__zk_multi_op_bytes(), so a caller can split a long multi. */
size_t eb__zk_multi_bytes(const eb__zk *zk, const eb__zk_op *ops, size_t count);
size_t eb__zk_multi_op_bytes(const eb__zk *zk, const eb__zk_op *op);

int eb__zk_create(eb__zk *zk, const char *path, const char *data, size_t len,
    int flags, eb__zk_create_cb cb, void *arg);
int eb__zk_delete(eb__zk *zk, const char *path, int32_t version,
    eb__zk_void_cb cb, void *arg);
/* watch may be NULL. EB_EZKNONODE status when absent (the watch is still
 * armed then, for creation). */
int eb__zk_exists(eb__zk *zk, const char *path, eb__zk_watch_cb watch,
    void *watch_arg, eb__zk_stat_cb cb, void *arg);
int eb__zk_get(eb__zk *zk, const char *path, eb__zk_watch_cb watch,
    void *watch_arg, eb__zk_data_cb cb, void *arg);
int eb__zk_get_children(eb__zk *zk, const char *path, eb__zk_watch_cb watch,
    void *watch_arg, eb__zk_children_cb cb, void *arg);
int eb__zk_set(eb__zk *zk, const char *path, const char *data, size_t len,
    int32_t version, eb__zk_stat_cb cb, void *arg);
int eb__zk_multi(eb__zk *zk, const eb__zk_op *ops, size_t count,
    eb__zk_multi_cb cb, void *arg);
/* As eb__zk_multi, but never held back by the window (below): for the few
 * requests whose round trip is a lease's margin (a lock renewal). Use it
 * for nothing a client can make many of. */
int eb__zk_multi_ahead(eb__zk *zk, const eb__zk_op *ops, size_t count,
    eb__zk_multi_cb cb, void *arg);
/*
 * The request window (docs/ZOOKEEPER.md "The request window"): with window
 * n > 0, at most n requests of this session are in flight at once; later
 * ones wait in call order (a copy of each: the arguments stay borrowed for
 * the call only) and are sent as earlier ones complete, except those of
 * eb__zk_multi_ahead(), which go at once. The server answers a session's
 * requests in order, so a request sent ahead waits behind at most n others
 * instead of behind everything the session's users asked for. A held
 * request still gets its callback exactly once: with the server's answer,
 * with the error that kept it from being sent when its turn came, or with
 * EB_ECANCELED at close. 0 (the default): no window. Changing it sends
 * what the new window allows.
 */
void eb__zk_set_window(eb__zk *zk, size_t window);
/* Requests of the window in flight, and held back waiting for it. */
void eb__zk_window_stats(const eb__zk *zk, size_t *in_flight, size_t *held);

/* Creates path and its missing parents as persistent nodes (existing ones
 * are fine). */
int eb__zk_ensure_path(
    eb__zk *zk, const char *path, eb__zk_void_cb cb, void *arg);

/*
 * Live ids of the objects that share this session (registry, child cache,
 * election, cluster): a completion or watch carries the id instead of a
 * pointer, because its owner may have been closed and freed before the
 * session answers. The table is the session's own (a slot per object,
 * generation-checked, O(1)); ids are never 0 and never reused while the
 * session lives. Delete at the owner's close (the session must still be
 * open or closing, never freed).
 */
uint64_t eb__zk_live_add(eb__zk *zk, void *obj);
void    *eb__zk_live_get(const eb__zk *zk, uint64_t id); /* NULL when gone */
void     eb__zk_live_del(eb__zk *zk, uint64_t id);

/* The id travels as an opaque callback argument (ZooKeeper and libuv take a
 * void *), and eb__zk_live_id() turns it back; it is never dereferenced, so
 * the pointer's lack of provenance costs nothing. */
static inline void *
eb__zk_live_arg(uint64_t id)
{
	/* NOLINTNEXTLINE(performance-no-int-to-ptr): a token, not an address */
	return (void *) (uintptr_t) id;
}

static inline uint64_t
eb__zk_live_id(void *arg)
{
	return (uint64_t) (uintptr_t) arg;
}

#endif
