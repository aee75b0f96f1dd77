/*
 * The backend seam behind eb__zk (STYLE B9): zk/ code and its owners call
 * only the eb__zk_* functions of zk.h; those check the common state and
 * dispatch to an ops table. Two backends exist:
 *   - the real one over libzookeeper_st driven from the loop (zk/zk.c);
 *   - an in-memory fake for deterministic unit tests (tests/harness/fakezk.c).
 *
 * Contract for a backend:
 *   - every op returns 0 and then calls its callback exactly once on a later
 *     loop turn (never from inside the op), or returns an EB_E* code and never
 *     calls it; statuses are EB_E* codes, never raw ZooKeeper codes;
 *   - watch callbacks get node events only, never session events;
 *   - session changes are reported with eb__zk_emit(), which keeps state,
 *     session_id and timeout_ms in the common struct and calls the owner;
 *   - close() fails pending ops with EB_ECANCELED, releases the backend's
 *     handles without blocking the loop and then calls eb__zk_closed() once,
 *     on a later loop turn;
 *   - last_ok_send_ms is updated by the backend (eb__zk_note_ok()).
 * Loop thread only.
 */
#ifndef EB_ZK_ZK_OPS_H
#define EB_ZK_ZK_OPS_H

#include "common/list.h"
#include "common/vec.h"
#include "zk/zk.h"

typedef struct eb__zk_ops {
	int (*start)(eb__zk *zk);
	void (*close)(eb__zk *zk);
	int (*create)(eb__zk *zk, const char *path, const char *data,
	    size_t len, int flags, eb__zk_create_cb cb, void *arg);
	int (*delete_node)(eb__zk *zk, const char *path, int32_t version,
	    eb__zk_void_cb cb, void *arg);
	int (*exists)(eb__zk *zk, const char *path, eb__zk_watch_cb watch,
	    void *watch_arg, eb__zk_stat_cb cb, void *arg);
	int (*get)(eb__zk *zk, const char *path, eb__zk_watch_cb watch,
	    void *watch_arg, eb__zk_data_cb cb, void *arg);
	int (*get_children)(eb__zk *zk, const char *path, eb__zk_watch_cb watch,
	    void *watch_arg, eb__zk_children_cb cb, void *arg);
	int (*set)(eb__zk *zk, const char *path, const char *data, size_t len,
	    int32_t version, eb__zk_stat_cb cb, void *arg);
	int (*multi)(eb__zk *zk, const eb__zk_op *ops, size_t count,
	    eb__zk_multi_cb cb, void *arg);
} eb__zk_ops;

/* One slot of the live-id table (eb__zk_live_add). */
typedef struct eb__zk_live_slot {
	void    *obj;       /* NULL: free */
	uint32_t gen;       /* bumped on every delete */
	uint32_t next_free; /* free list: next free slot + 1; 0: end */
} eb__zk_live_slot;

struct eb__zk {
	uv_loop_t        *loop; /* borrowed */
	const eb__zk_ops *ops;  /* borrowed (static table) */
	void             *impl; /* backend state, owned by the backend */
	eb__zk_event_cb   on_event;
	void             *event_arg;
	eb__zk_state      state;
	int64_t           session_id;
	uint32_t          timeout_ms;
	uint64_t          last_ok_send_ms;
	uint64_t          requests;    /* dispatched to the backend */
	uint64_t          too_big;     /* refused with EB_EZKTOOBIG */
	size_t            max_request; /* eb__zk_max_request() */
	size_t          chroot_len; /* prepended to every path by the client */
	int             started;
	int             closing;
	eb__zk_close_cb close_cb;
	void           *close_arg;
	eb__vec         live;      /* of eb__zk_live_slot (eb__zk_live_add) */
	uint32_t        live_free; /* first free slot + 1; 0: none */
	/* The request window (zk_window.c): 0, or the most requests in
	 * flight; the rest wait in held (zk_window.c). */
	size_t   window;
	size_t   in_flight; /* tracked: sent while window != 0 */
	eb__list held;
	size_t   n_held;
	int      pumping;
};

/* One request as the caller made it (zk_window.c), with borrowed fields
 * (a held request keeps a copy). */
typedef enum eb__zkw_kind {
	EB__ZKW_CREATE,
	EB__ZKW_DELETE,
	EB__ZKW_EXISTS,
	EB__ZKW_GET,
	EB__ZKW_CHILDREN,
	EB__ZKW_SET,
	EB__ZKW_MULTI
} eb__zkw_kind;

union eb__zkw_cb {
	eb__zk_create_cb   create;
	eb__zk_void_cb     void_;
	eb__zk_stat_cb     stat; /* exists, set */
	eb__zk_data_cb     data;
	eb__zk_children_cb children;
	eb__zk_multi_cb    multi;
};

struct eb__zkw_call {
	eb__zkw_kind     kind;
	const char      *path; /* every kind but multi */
	const char      *data; /* create, set */
	size_t           len;
	int              flags;   /* create */
	int32_t          version; /* delete, set */
	eb__zk_watch_cb  watch;   /* exists, get, children */
	void            *watch_arg;
	union eb__zkw_cb cb;
	void            *arg;
	const eb__zk_op *ops; /* multi */
	size_t           count;
};

/* Sends c now, or holds a copy of it until the window has room (ahead: never
 * held). 0 (the callback will come) or the backend's error (it will not).
 * Counts what it sends in zk->requests. */
int eb__zkw_submit(eb__zk *zk, const struct eb__zkw_call *c, int ahead);
/* At close: every held request completes with EB_ECANCELED. */
void eb__zkw_cancel_held(eb__zk *zk);
/* The callback of a multi of count ops that failed as a whole (never
 * sent, lost, canceled): one result per op, each with status. */
void eb__zk_multi_fail(
    eb__zk *zk, eb__zk_multi_cb cb, void *arg, size_t count, int status);

/* Allocates the common part around a backend; used by eb__zk_new() and by
 * the fake. impl is handed over to the backend's close(). */
int eb__zk_new_with_ops(uv_loop_t *loop, const eb__zk_ops *ops, void *impl,
    uint32_t timeout_ms, eb__zk_event_cb on_event, void *arg, eb__zk **zkp);
/* Backend -> common: a session event; updates state and calls the owner. */
void eb__zk_emit(eb__zk *zk, eb__zk_event ev, int64_t session_id);
/* Backend -> common: a request sent at send_ms succeeded. */
void eb__zk_note_ok(eb__zk *zk, uint64_t send_ms);
/* Backend -> common: the backend has closed; calls the owner's close cb and
 * frees zk. */
void eb__zk_closed(eb__zk *zk);

#endif
