/*
 * eb_shared internals shared by shared.c (the object, the session, the
 * lease and the locks) and data.c (counters and ids).
 * Every ZooKeeper completion carries a live id (zk.h eb__zk_live_add) of
 * the object it belongs to, never a pointer: the object may be gone.
 */
#ifndef EB_SHARED_SHARED_INT_H
#define EB_SHARED_SHARED_INT_H

#include <stdint.h>

#include <uv.h>

#include <ebnode/shared.h>

#include "common/list.h"
#include "common/vec.h"
#include "zk/zk.h"

#define EB__SHARED_NAME_MAX 200
#define EB__SHARED_PATH_MAX 700

struct eb_shared {
	uv_loop_t  *loop;
	eb_cluster *c;  /* borrowed */
	eb_zk      *zk; /* the cluster's session (borrowed) */
	char       *root;
	uint32_t    tick_ms; /* ZooKeeper tickTime for the lease (0: unknown) */
	uint64_t    live;
	int         closing;
	int         closed;
	int         open_timers; /* still to close at eb_shared_close */
	uv_timer_t  heartbeat;   /* lease renewal while locks are held */
	uv_timer_t  lease;       /* the earliest lapse of a held lock */
	uv_timer_t  deadline;    /* the earliest acquire timeout */
	uv_timer_t  defer;       /* id requests served from the block */
	uint32_t    lease_ms;    /* 0: no safe lease (locks refused) */
	uint32_t    heartbeat_ms;
	uint64_t    renewed_ms; /* send time of the last committed renewal */
	eb_list     locks;      /* of eb_lock (every state) */
	eb_list     ops;        /* of eb__counter_op in flight */
	eb__vec     orphans;    /* of char * "dir\nprefix": nodes to delete */
	uint64_t    tag;        /* lock node name tags */
	/* Ids: the current block [id_next, id_end) and the waiting
	 * requests (eb__id_req *). */
	uint64_t           id_next, id_end;
	int                id_fetching;
	eb__vec            id_reqs;
	eb_shared_stats    st;
	eb_shared_close_cb close_cb;
	void              *close_arg;
};

typedef struct eb__counter_op eb__counter_op;
typedef void (*eb__counter_done)(
    eb_shared *s, eb__counter_op *op, int status, int64_t value, int ok);

/* For unit tests over the in-memory ZooKeeper: an eb_shared on a bare
 * session (no cluster), whose session events the test passes in. */
eb_shared *eb__shared_new_zk(
    uv_loop_t *loop, eb_zk *zk, const char *root, uint32_t tick_ms);
void eb__shared_session_event(eb_shared *s, eb_zk_event ev);

/* 1 when name is a valid lock or counter name. */
int eb__shared_name_ok(const char *name);
/* Counters (data.c). kind: 'g' get, 'a' add, 'c' cas. */
int eb__counter_start(eb_shared *s, const char *path, int kind, int64_t a,
    int64_t b, eb__counter_done done, eb_counter_cb cb, void *arg);
/* Completes every op in flight with EB_ECANCELED (close). */
void eb__counter_cancel_all(eb_shared *s);
void eb__id_cancel_all(eb_shared *s);
void eb__id_defer_cb(uv_timer_t *t);

#endif
