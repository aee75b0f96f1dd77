/*
 * eb_shared internals shared by shared.c (the object, the session, the
 * lease and the locks) and data.c (counters and ids).
 * Every ZooKeeper completion carries a live id (zk.h eb__zk_live_add) of
 * the object it belongs to, never a pointer: the object may be gone.
 */
#ifndef EB_SHARED_SHARED_INT_H
#define EB_SHARED_SHARED_INT_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include <ebnode/shared.h>

#include "common/list.h"
#include "common/vec.h"
#include "zk/zk.h"

#define EB__SHARED_NAME_MAX 200
#define EB__SHARED_PATH_MAX 700

/* Back-off of the lock node delete retries (ms): doubles up to the max. */
#define EB__SHARED_RETRY_MIN_MS 100
#define EB__SHARED_RETRY_MAX_MS 5000

struct eb_shared {
	uv_loop_t     *loop;
	eb_cluster    *c;      /* borrowed */
	eb__zk        *zk;     /* own session (owned) or a test's (borrowed) */
	int            own_zk; /* 1: zk is this object's own session */
	eb_shared_opts o;
	char          *root;
	uint32_t       tick_ms; /* ZooKeeper tickTime for the lease (0: none) */
	uint64_t       live;
	int            closing;
	int            closed;
	int            open_handles;    /* still to close at eb_shared_close */
	uv_timer_t     heartbeat;       /* lease renewal while locks are held */
	uv_timer_t     lease;           /* the earliest lapse of a held lock */
	uv_timer_t     deadline;        /* the earliest acquire timeout */
	uv_timer_t     defer;           /* id requests served from the block */
	uv_timer_t     retry;           /* lock node deletes that failed */
	uint32_t       retry_ms;        /* the next retry's back-off */
	size_t         deletes;         /* lock node deletes in flight */
	uint64_t       counter_creates; /* capped counter creates in flight */
	uint64_t       zk_events[6]; /* own session events, by eb__zk_event */
	uint32_t       lease_ms;     /* 0: no safe lease (locks refused) */
	uint32_t       heartbeat_ms;
	uint64_t       renewed_ms; /* send time of the last committed renewal */
	uint64_t       renew_last_ms; /* its round trip */
	uint64_t       renew_max_ms;  /* the slowest renewal's round trip */
	eb__list       locks;         /* of eb_lock (every state) */
	eb__list       ops;           /* of eb__counter_op in flight */
	eb__vec        orphans; /* of char * "dir\nprefix": nodes to delete,
	                           retried until gone or the session ends */
	uint64_t tag;           /* lock node name tags */
	/* Ids: the current block [id_next, id_end) and the waiting
	 * requests (eb__id_req *). */
	uint64_t           id_next, id_end;
	int                id_fetching;
	eb__vec            id_reqs;
	eb_shared_stats    st;
	eb_shared_close_cb close_cb;
	void              *close_arg;
};

/*
 * The request window of the own session (docs/SHARED.md "Client work and
 * the lease"): at most this many lock and counter requests in flight on
 * it; the rest wait in the session (eb__zk_set_window), and the lease
 * renewals go ahead of them, so a renewal waits behind at most this many
 * requests at the server however much the clients ask for.
 */
#define EB__SHARED_ZK_WINDOW 16 /* measured against 8 and 32 there */

/* The window and the renewals' round trips, for the metrics. */
typedef struct eb__shared_window {
	size_t   in_flight;     /* requests of the window in flight */
	size_t   held;          /* waiting for the window */
	uint64_t renew_last_ms; /* the last committed renewal's round trip */
	uint64_t renew_max_ms;  /* the slowest one's */
} eb__shared_window;

void eb__shared_window_get(const eb_shared *s, eb__shared_window *out);

typedef struct eb__counter_op eb__counter_op;
typedef void (*eb__counter_done)(
    eb_shared *s, eb__counter_op *op, int status, int64_t value, int ok);

/* For unit tests over the in-memory ZooKeeper: an eb_shared on a bare
 * session (no cluster), whose session events the test passes in. */
eb_shared *eb__shared_new_zk(uv_loop_t *loop, eb__zk *zk, const char *root,
    uint32_t tick_ms, const eb_shared_opts *opts);
void       eb__shared_session_event(eb_shared *s, eb__zk_event ev);

/* 1 when name is a valid lock or counter name. */
int eb__shared_name_ok(const char *name);
/* Counters (data.c). kind: 'g' get, 'a' add, 'c' cas, 'd' delete. A
 * counter under <root>/counters is capped: its create first checks the
 * parent's numChildren against o.max_counters. */
int eb__counter_start(eb_shared *s, const char *path, int kind, int64_t a,
    int64_t b, eb__counter_done done, eb_counter_cb cb, void *arg);
/* Completes every op in flight with EB_ECANCELED (close). */
void eb__counter_cancel_all(eb_shared *s);
void eb__id_cancel_all(eb_shared *s);
void eb__id_defer_cb(uv_timer_t *t);

/* One renewal chunk: how many of ops[0..n) (from the first) fit one multi
 * under eb__zk_max_request(zk) by eb__zk's own estimate (at least 1 when
 * n > 0: a single check always fits, paths being short). */
size_t eb__shared_chunk(const eb__zk *zk, const eb__zk_op *ops, size_t n);

#endif
