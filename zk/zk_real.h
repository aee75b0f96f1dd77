/*
 * Internals of the real eb__zk backend (zk/zk.c: session, driving,
 * lifecycle; zk/zk_req.c: requests, completions, watches). Not for any
 * other file. See zk/zk.c for the design; loop thread only, except that
 * completion and watcher functions may run in the close worker for a retired
 * conn and then must return without touching anything but that flag.
 *
 * Ownership: zk_real owns its loop handles and the current zk_conn; a
 * zk_conn owns its zhandle_t, its requests (conn->reqs) and watches
 * (conn->watches) until retire_after_cb frees them on the loop.
 */
#ifndef EB_ZK_ZK_REAL_H
#define EB_ZK_ZK_REAL_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>
#include <zookeeper/zookeeper.h>

#include "common/defer.h"
#include "common/list.h"
#include "zk/zk.h"

enum zk_dead { ZK_ALIVE = 0, ZK_DEAD_EXPIRED = 1, ZK_DEAD_AUTH = 2 };

enum zk_req_kind {
	ZK_REQ_CREATE,
	ZK_REQ_VOID,
	ZK_REQ_STAT,
	ZK_REQ_DATA,
	ZK_REQ_CHILDREN,
	ZK_REQ_MULTI
};

struct zk_real;
struct zk_conn;

struct zk_watch {
	eb__list        link; /* in conn->watches */
	struct zk_conn *conn; /* borrowed */
	eb__zk_watch_cb cb;
	void           *arg;
};

struct zk_req {
	eb__list         link; /* in conn->reqs */
	struct zk_conn  *conn; /* borrowed */
	enum zk_req_kind kind;
	union {
		eb__zk_create_cb   create;
		eb__zk_void_cb     void_;
		eb__zk_stat_cb     stat;
		eb__zk_data_cb     data;
		eb__zk_children_cb children;
		eb__zk_multi_cb    multi;
	} cb;
	void            *arg;
	uint64_t         send_ms;
	int              delivered; /* the owner's callback has run */
	struct zk_watch *watch;     /* owned until the server registers it */
	/* multi only, all owned: */
	size_t           count;
	zoo_op_t        *ops;
	zoo_op_result_t *results;
	char           **paths;
	struct Stat     *stats;
};

struct zk_conn {
	struct zk_real *r;  /* borrowed */
	zhandle_t      *zh; /* owned; closed by the retire worker */
	eb__list        reqs;
	eb__list        watches;
	int             retired;     /* no callback may touch the loop */
	int             connected;   /* in CONNECTED state now */
	int             had_session; /* CONNECTED was seen once */
	enum zk_dead    dead;
	uv_work_t       work;
};

struct zk_real {
	eb__zk           *zk; /* borrowed: the common part owns us */
	char             *hosts;
	char             *scheme; /* NULL: no authentication */
	char             *cred;
	eb__zk_acl        acl;
	struct ACL        creator_acl[2];
	struct ACL_vector creator_aclv;
	struct zk_conn   *conn; /* current session; NULL after auth failure */
	uv_poll_t        *poll; /* owned; NULL when fd == -1 */
	int               poll_fd;
	int               poll_state; /* zoo_state() when the poll was made */
	uint64_t          poll_generation;
	uv_timer_t        timer;      /* zookeeper_interest's timeout */
	uv_timer_t        lost_timer; /* local expiry while SUSPENDED */
	eb__deferq        dq;
	int               in_lib; /* inside zookeeper_process/interest */
	int               dead_scheduled;
	int               auth_failed;
	int               retiring; /* conns in the close worker */
	int               open_handles;
	int               finishing;
};

/* zk.c: asks the client what to wait for and arms the poll and timer; a
 * no-op while inside the library (the caller drives afterwards). */
void eb__zkr_drive(struct zk_real *r);

/* zk_req.c */
/* Calls the owner's callback of q with status (no payload), once. */
void eb__zkr_req_fail(struct zk_req *q, int status);
/* Unlinks and frees q (not its watch). */
void eb__zkr_req_free(struct zk_req *q);
/* Unlinks and frees w. */
void eb__zkr_watch_free(struct zk_watch *w);
/* The backend operations of the eb__zk_ops table. */
int eb__zkr_create(eb__zk *zk, const char *path, const char *data, size_t len,
    int flags, eb__zk_create_cb cb, void *arg);
int eb__zkr_delete(eb__zk *zk, const char *path, int32_t version,
    eb__zk_void_cb cb, void *arg);
int eb__zkr_exists(eb__zk *zk, const char *path, eb__zk_watch_cb watch,
    void *watch_arg, eb__zk_stat_cb cb, void *arg);
int eb__zkr_get(eb__zk *zk, const char *path, eb__zk_watch_cb watch,
    void *watch_arg, eb__zk_data_cb cb, void *arg);
int eb__zkr_get_children(eb__zk *zk, const char *path, eb__zk_watch_cb watch,
    void *watch_arg, eb__zk_children_cb cb, void *arg);
int eb__zkr_set(eb__zk *zk, const char *path, const char *data, size_t len,
    int32_t version, eb__zk_stat_cb cb, void *arg);
int eb__zkr_multi(eb__zk *zk, const eb__zk_op *ops, size_t count,
    eb__zk_multi_cb cb, void *arg);

#endif
