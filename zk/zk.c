/*
 * The real eb__zk backend: libzookeeper_st (3.8) driven from the libuv loop.
 *
 * Shape. One zk_real per eb__zk owns the loop handles (a uv_timer for
 * zookeeper_interest's timeout, a uv_timer for local session loss, a deferred
 * call queue, and at most one uv_poll on the client's socket). One zk_conn per
 * zhandle_t (one session) owns the requests and watches issued on it. A
 * session that ends (expiry, auth failure, eb__zk_close) is "retired": the
 * loop stops touching its handle, fails what is still pending, and hands
 * zookeeper_close() to the libuv threadpool, because on a live connection it
 * flushes a close request and can block for seconds (DESIGN.md). The
 * zk_conn, its requests and watches are freed on the loop after the worker is
 * done, so a completion the library calls from zookeeper_close() in the
 * worker only reads the conn's `retired` flag (written before uv_queue_work,
 * which orders it) and returns.
 *
 * Driving (STYLE B5 snippet 4): every call into the library that may run
 * callbacks or touch the socket (zookeeper_process, zookeeper_interest) is
 * preceded by stopping the poll. The poll is re-created whenever the client
 * is not in CONNECTED state or was not when the poll was made: fd numbers are
 * reused across reconnects, so the fd number alone cannot tell a new socket.
 * With fd == -1 only the timer is armed. ZooKeeper callbacks run only inside
 * those two calls, so they all run on the loop; nothing is closed or re-made
 * inside them: session death is acted on from a deferred call.
 *
 * Session events: CONNECTED (new session), SUSPENDED (CONNECTING after a loss),
 * RECONNECTED (same session back), EXPIRED (then a new session; CONNECTED
 * follows), AUTH_FAILED (no new session). A SUSPENDED session that has not
 * come back within the negotiated session timeout is treated as expired
 * locally: the server has expired it by then, and the C client would only
 * learn so after reaching a server again.
 *
 * This file holds the session, the driving and the lifecycle; requests,
 * completions and watches are in zk/zk_req.c, the shared structures in
 * zk/zk_real.h.
 *
 * Loop thread only, except the completion/watcher functions, which may run in
 * the close worker for a retired conn and then return at once.
 */
#include "zk/zk.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <zookeeper/zookeeper.h>

#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/defer.h"
#include "common/list.h"
#include "common/util.h"
#include "zk/zk_int.h"
#include "zk/zk_ops.h"
#include "zk/zk_real.h"

/* Re-resolve host names at most this often. */
#define ZK_RESOLVE_DELAY_MS 30000
/* Timer floor after a failed interest call (no busy loop on refusals). */
#define ZK_ERR_RETRY_MS 50

static _Thread_local int zk_in_worker; /* log callback: drop, not loop */

static void schedule_dead(struct zk_real *r);
static void maybe_finish(struct zk_real *r);

/* ---- logging ------------------------------------------------------------ */

/*
 * ZooKeeper's lines look like "<time>:<pid>(<tid>):ZOO_INFO@func@line: msg".
 * The client logs every failed connection attempt as ZOO_ERROR; those are
 * expected during failover, so its levels are shifted down one step and our
 * own session events (zk_core.c) carry the decisions.
 */
static void
zk_log_cb(const char *message)
{
	const char  *lvl = strstr(message, ":ZOO_");
	const char  *rest;
	eb_log_level level = EB_LOG_LEVEL_DEBUG;
	size_t       n;

	if (zk_in_worker || message == NULL) {
		return; /* the log sink is loop-thread only */
	}
	rest = message;
	if (lvl != NULL) {
		lvl += 5;
		if (strncmp(lvl, "ERROR@", 6) == 0) {
			level = EB_LOG_LEVEL_NOTICE;
		} else if (strncmp(lvl, "WARN@", 5) == 0) {
			level = EB_LOG_LEVEL_INFO;
		}
		rest = strchr(lvl, '@') != NULL ? strchr(lvl, '@') + 1 : lvl;
	}
	if (level > eb_log_get_level()) {
		return;
	}
	n = strlen(rest);
	while (n > 0 && (rest[n - 1] == '\n' || rest[n - 1] == '\r')) {
		n--;
	}
	EB_LOG_RL_AT(level, "zk", "client: %.*s", (int) n, rest);
}

static void
zk_set_lib_log_level(void)
{
	switch (eb_log_get_level()) {
	case EB_LOG_LEVEL_DEBUG:
		zoo_set_debug_level(ZOO_LOG_LEVEL_INFO);
		break;
	case EB_LOG_LEVEL_INFO:
		zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
		break;
	default:
		zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
		break;
	}
}
/* ---- session helpers ---------------------------------------------------- */

static struct zk_conn *
conn_of(const void *data)
{
	union {
		const void     *c;
		struct zk_conn *conn;
	} u;

	u.c = data;
	return u.conn;
}

/* ---- the poll and the timers ------------------------------------------- */

static void
poll_close_cb(uv_handle_t *h)
{
	struct zk_real *r = h->data;

	free(h);
	r->open_handles--;
	maybe_finish(r);
}

static void
poll_drop(struct zk_real *r)
{
	if (r->poll != NULL) {
		uv_close((uv_handle_t *) r->poll, poll_close_cb);
		r->poll = NULL;
		r->poll_fd = -1;
	}
}

static void
lib_process(struct zk_real *r, int zevents)
{
	struct zk_conn *conn = r->conn;

	if (r->poll != NULL) {
		(void) uv_poll_stop(r->poll); /* first, always */
	}
	if (conn == NULL || conn->retired || conn->dead || r->zk->closing) {
		return; /* the pending retire/close step takes over */
	}
	r->in_lib = 1;
	(void) zookeeper_process(conn->zh, zevents); /* results: callbacks */
	r->in_lib = 0;
	eb__zkr_drive(r);
}

static void
poll_cb(uv_poll_t *h, int status, int events)
{
	struct zk_real *r = h->data;
	int             zevents = 0;

	if (status < 0) {
		/* Let the client find the socket error itself. */
		zevents = ZOOKEEPER_READ | ZOOKEEPER_WRITE;
	} else {
		zevents |= (events & UV_READABLE) ? ZOOKEEPER_READ : 0;
		zevents |= (events & UV_WRITABLE) ? ZOOKEEPER_WRITE : 0;
	}
	lib_process(r, zevents);
}

static void
timer_cb(uv_timer_t *h)
{
	lib_process(h->data, 0);
}

/* A new uv_poll on fd; 0 or the libuv error (then only the timer drives). */
static int
poll_new(struct zk_real *r, int fd, int state)
{
	int rv;

	r->poll = eb__malloc(sizeof(*r->poll));
	rv = uv_poll_init(r->zk->loop, r->poll, fd);
	if (rv != 0) {
		EB_LOG_WARN("zk", "poll-init-failed: fd=%d err=%s", fd,
		    eb_err_name(rv));
		free(r->poll);
		r->poll = NULL;
		return rv;
	}
	r->open_handles++;
	r->poll->data = r;
	r->poll_fd = fd;
	r->poll_state = state;
	r->poll_generation++;
	return 0;
}

/* Makes the poll match (fd, interest); see the file comment for when a new
 * uv_poll is made. */
static void
poll_update(struct zk_real *r, int fd, int interest)
{
	int state = zoo_state(r->conn->zh);
	int events = 0;

	if (fd == -1) {
		poll_drop(r);
		return;
	}
	if (r->poll == NULL || fd != r->poll_fd ||
	    state != ZOO_CONNECTED_STATE ||
	    r->poll_state != ZOO_CONNECTED_STATE) {
		poll_drop(r);
		if (poll_new(r, fd, state) != 0) {
			return;
		}
	}
	events |= (interest & ZOOKEEPER_READ) ? UV_READABLE : 0;
	events |= (interest & ZOOKEEPER_WRITE) ? UV_WRITABLE : 0;
	if (events != 0) {
		(void) uv_poll_start(r->poll, events, poll_cb);
	} else {
		(void) uv_poll_stop(r->poll);
	}
}

/* Asks the client what to wait for and arms the poll and the timer. */
void
eb__zkr_drive(struct zk_real *r)
{
	struct zk_conn *conn = r->conn;
	struct timeval  tv = { 0, 0 };
	int             fd = -1;
	int             interest = 0;
	int             rc;
	uint64_t        ms;

	if (conn == NULL || conn->retired || r->zk->closing || r->in_lib) {
		return; /* in_lib: the caller drives when the library returns */
	}
	if (r->poll != NULL) {
		(void) uv_poll_stop(r->poll);
	}
	/* interest may time out a connection or open a new one, and run
	 * callbacks (connection loss) while doing so. */
	r->in_lib = 1;
	rc = zookeeper_interest(conn->zh, &fd, &interest, &tv);
	r->in_lib = 0;
	if (r->zk->closing || r->conn != conn) {
		return;
	}
	if (is_unrecoverable(conn->zh) == ZINVALIDSTATE || conn->dead) {
		if (!conn->dead) {
			conn->dead =
			    zoo_state(conn->zh) == ZOO_AUTH_FAILED_STATE
			        ? ZK_DEAD_AUTH
			        : ZK_DEAD_EXPIRED;
		}
		(void) uv_timer_stop(&r->timer);
		poll_drop(r);
		schedule_dead(r);
		return;
	}
	poll_update(r, fd, interest);
	ms = (uint64_t) tv.tv_sec * 1000u +
	     ((uint64_t) tv.tv_usec + 999u) / 1000u;
	if (rc != ZOK && ms < ZK_ERR_RETRY_MS) {
		ms = ZK_ERR_RETRY_MS; /* no busy loop on a refused connect */
	}
	(void) uv_timer_start(&r->timer, timer_cb, ms != 0 ? ms : 1, 0);
}

/* ---- session ------------------------------------------------------------ */

static void
lost_timer_cb(uv_timer_t *h)
{
	struct zk_real *r = h->data;
	struct zk_conn *conn = r->conn;

	if (conn == NULL || conn->connected || conn->dead || r->zk->closing) {
		return;
	}
	EB_LOG_NOTICE("zk",
	    "session-lost-locally: session=0x%llx suspended_ms=%u",
	    (unsigned long long) r->zk->session_id, r->zk->timeout_ms);
	conn->dead = ZK_DEAD_EXPIRED;
	(void) uv_timer_stop(&r->timer);
	poll_drop(r);
	schedule_dead(r);
}

static void
session_connected(struct zk_conn *conn)
{
	struct zk_real   *r = conn->r;
	const clientid_t *cid = zoo_client_id(conn->zh);
	int64_t           sid = cid != NULL ? cid->client_id : 0;
	int               t = zoo_recv_timeout(conn->zh);
	eb__zk_event      ev;

	(void) uv_timer_stop(&r->lost_timer);
	if (t > 0) {
		r->zk->timeout_ms = (uint32_t) t;
	}
	if (conn->connected) {
		return;
	}
	conn->connected = 1;
	ev = conn->had_session ? EB_ZK_EV_RECONNECTED : EB_ZK_EV_CONNECTED;
	conn->had_session = 1;
	eb__zk_emit(r->zk, ev, sid);
}

static void
session_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	struct zk_conn *conn = ctx;
	struct zk_real *r;

	(void) zh;
	(void) path;
	if (conn->retired || type != ZOO_SESSION_EVENT) {
		return;
	}
	r = conn->r;
	if (r->zk->closing) {
		return;
	}
	if (state == ZOO_CONNECTED_STATE) {
		session_connected(conn);
	} else if (state == ZOO_CONNECTING_STATE) {
		if (conn->connected) {
			conn->connected = 0;
			(void) uv_timer_start(&r->lost_timer, lost_timer_cb,
			    r->zk->timeout_ms, 0);
			eb__zk_emit(
			    r->zk, EB_ZK_EV_SUSPENDED, r->zk->session_id);
		}
	} else if (state == ZOO_EXPIRED_SESSION_STATE) {
		conn->connected = 0;
		conn->dead = ZK_DEAD_EXPIRED;
		schedule_dead(r);
	} else if (state == ZOO_AUTH_FAILED_STATE) {
		conn->connected = 0;
		conn->dead = ZK_DEAD_AUTH;
		schedule_dead(r);
	}
}

static void
auth_cb(int rc, const void *data)
{
	struct zk_conn *conn = conn_of(data);

	if (conn->retired || rc == ZOK || conn->r->zk->closing) {
		return;
	}
	EB_LOG_ERR("zk", "auth-failed: scheme=%s rc=%s", conn->r->scheme,
	    eb__zk_rc_name(rc));
	if (rc == ZAUTHFAILED) {
		conn->dead = ZK_DEAD_AUTH;
		schedule_dead(conn->r);
	}
}

/* A new handle (new session); no I/O until eb__zkr_drive(). */
static int
conn_open(struct zk_real *r)
{
	struct zk_conn *conn = eb__calloc(1, sizeof(*conn));
	int             rc;

	conn->r = r;
	eb__list_init(&conn->reqs);
	eb__list_init(&conn->watches);
	errno = 0;
	conn->zh = zookeeper_init2(r->hosts, session_watcher,
	    (int) r->zk->timeout_ms, NULL, conn, 0, zk_log_cb);
	if (conn->zh == NULL) {
		int err = errno;

		free(conn);
		EB_LOG_ERR(
		    "zk", "init-failed: connect=%s errno=%d", r->hosts, err);
		return err == EINVAL || err == 0 ? EB_EZKBADARGS : -err;
	}
	(void) zoo_set_servers_resolution_delay(conn->zh, ZK_RESOLVE_DELAY_MS);
	if (r->scheme != NULL) {
		rc = zoo_add_auth(conn->zh, r->scheme, r->cred,
		    (int) strlen(r->cred), auth_cb, conn);
		if (rc != ZOK) {
			(void) zookeeper_close(conn->zh); /* no I/O yet */
			free(conn);
			return eb__err_from_zk(rc);
		}
	}
	r->conn = conn;
	return 0;
}

static void
retire_work_cb(uv_work_t *w)
{
	struct zk_conn *conn = w->data;

	zk_in_worker = 1;
	(void) zookeeper_close(conn->zh); /* may block: threadpool */
	zk_in_worker = 0;
}

static void
retire_after_cb(uv_work_t *w, int status)
{
	struct zk_conn *conn = w->data;
	struct zk_real *r = conn->r;
	eb__list       *it;
	eb__list       *tmp;

	(void) status;
	/* The handle is gone: nothing can call into these any more. */
	EB_LIST_FOREACH (it, tmp, &conn->reqs) {
		eb__zkr_req_free(EB_CONTAINER_OF(it, struct zk_req, link));
	}
	EB_LIST_FOREACH (it, tmp, &conn->watches) {
		eb__zkr_watch_free(EB_CONTAINER_OF(it, struct zk_watch, link));
	}
	free(conn);
	r->retiring--;
	maybe_finish(r);
}

/*
 * Ends the current session's handle: the loop lets go of it, every pending
 * request fails with status, and zookeeper_close runs in the threadpool.
 * Never called from inside a ZooKeeper callback.
 */
static void
conn_retire(struct zk_real *r, int status)
{
	struct zk_conn *conn = r->conn;
	eb__list       *it;
	eb__list       *tmp;

	r->conn = NULL;
	conn->retired = 1;
	poll_drop(r);
	(void) uv_timer_stop(&r->timer);
	(void) uv_timer_stop(&r->lost_timer);
	conn->work.data = conn;
	if (uv_queue_work(r->zk->loop, &conn->work, retire_work_cb,
	        retire_after_cb) != 0) {
		/* Cannot happen with valid arguments; close here rather than
		 * leak the session. */
		retire_work_cb(&conn->work);
		conn->work.data = conn;
		r->retiring++;
		retire_after_cb(&conn->work, 0);
		return;
	}
	r->retiring++;
	/* The requests stay linked (the worker's completions may still see
	 * them); the owner hears about each one now, exactly once. */
	EB_LIST_FOREACH (it, tmp, &conn->reqs) {
		struct zk_req *q = EB_CONTAINER_OF(it, struct zk_req, link);

		if (!q->delivered) {
			eb__zkr_req_fail(q, status);
		}
	}
}

static void
dead_step(void *arg)
{
	struct zk_real *r = arg;
	struct zk_conn *conn = r->conn;
	int64_t         old = r->zk->session_id;
	int             rv;

	r->dead_scheduled = 0;
	if (r->zk->closing || conn == NULL || !conn->dead) {
		return;
	}
	if (conn->dead == ZK_DEAD_AUTH) {
		r->auth_failed = 1;
		conn_retire(r, EB_EZKAUTH);
		eb__zk_emit(r->zk, EB_ZK_EV_AUTH_FAILED, old);
		return;
	}
	conn_retire(r, EB_EZKEXPIRED);
	if (r->zk->closing) {
		return; /* a failed request's callback closed us */
	}
	rv = conn_open(r);
	eb__zk_emit(r->zk, EB_ZK_EV_EXPIRED, old);
	if (rv != 0) {
		/* Only bad arguments or memory make init fail, and both were
		 * fine for the first session; report it loudly. */
		EB_LOG_ERR("zk", "new-session-failed: err=%s", eb_err_name(rv));
		return;
	}
	eb__zkr_drive(r);
}

static void
schedule_dead(struct zk_real *r)
{
	if (!r->dead_scheduled) {
		r->dead_scheduled = 1;
		eb__defer(&r->dq, dead_step, r); /* a fresh loop turn */
	}
}

/* ---- lifecycle ---------------------------------------------------------- */

static int
real_start(eb__zk *zk)
{
	struct zk_real *r = zk->impl;
	int             rv;

	zk_set_lib_log_level();
	if ((rv = conn_open(r)) != 0) {
		return rv;
	}
	EB_LOG_INFO("zk", "session-start: connect=%s timeout_ms=%u auth=%s",
	    r->hosts, zk->timeout_ms, r->scheme != NULL ? r->scheme : "none");
	eb__zkr_drive(r);
	return 0;
}

static void
handle_close_cb(uv_handle_t *h)
{
	struct zk_real *r = h->data;

	r->open_handles--;
	maybe_finish(r);
}

static void
dq_closed_cb(eb__deferq *q)
{
	struct zk_real *r = EB_CONTAINER_OF(q, struct zk_real, dq);

	r->open_handles--;
	maybe_finish(r);
}

/* Frees everything once the handles are closed and no worker runs. */
static void
maybe_finish(struct zk_real *r)
{
	eb__zk *zk = r->zk;

	if (!r->finishing || r->retiring > 0 || r->open_handles > 0) {
		return;
	}
	free(r->hosts);
	free(r->scheme);
	free(r->cred);
	free(r);
	eb__zk_closed(zk);
}

static void
close_step(void *arg)
{
	struct zk_real *r = arg;

	if (r->conn != NULL) {
		conn_retire(r, EB_ECANCELED);
	}
	poll_drop(r);
	r->finishing = 1;
	uv_close((uv_handle_t *) &r->timer, handle_close_cb);
	uv_close((uv_handle_t *) &r->lost_timer, handle_close_cb);
	/* This step runs from the queue's idle callback; the queue tolerates
	 * being closed from inside it. */
	eb__deferq_close(&r->dq, dq_closed_cb);
}

static void
real_close(eb__zk *zk)
{
	struct zk_real *r = zk->impl;

	/* Never close the handle here: we may be inside a ZooKeeper
	 * callback. The next loop turn does it. */
	if (r->poll != NULL) {
		(void) uv_poll_stop(r->poll);
	}
	(void) uv_timer_stop(&r->timer);
	(void) uv_timer_stop(&r->lost_timer);
	eb__defer(&r->dq, close_step, r);
}

static const eb__zk_ops zk_real_ops = {
	.start = real_start,
	.close = real_close,
	.create = eb__zkr_create,
	.delete_node = eb__zkr_delete,
	.exists = eb__zkr_exists,
	.get = eb__zkr_get,
	.get_children = eb__zkr_get_children,
	.set = eb__zkr_set,
	.multi = eb__zkr_multi,
};

static int
real_opts_check(const eb__zk_opts *opts)
{
	if (opts == NULL || opts->connect == NULL || opts->connect[0] == '\0') {
		return EB_ECONF;
	}
	if (opts->auth_scheme != NULL &&
	    (opts->auth_credentials == NULL || opts->auth_scheme[0] == '\0')) {
		return EB_ECONF;
	}
	if (opts->acl == EB_ZK_ACL_CREATOR && opts->auth_scheme == NULL) {
		return EB_ECONF; /* "creator" means nothing without an id */
	}
	if (opts->acl != EB_ZK_ACL_OPEN && opts->acl != EB_ZK_ACL_CREATOR) {
		return EB_ECONF;
	}
	if (opts->session_timeout_ms > INT_MAX) {
		return EB_ECONF;
	}
	return 0;
}

int
eb__zk_new(uv_loop_t *loop, const eb__zk_opts *opts, eb__zk_event_cb on_event,
    void *arg, eb__zk **zkp)
{
	struct zk_real *r;
	eb__zk         *zk;
	int             rv;

	if ((rv = real_opts_check(opts)) != 0) {
		return rv;
	}
	r = eb__calloc(1, sizeof(*r));
	r->hosts = eb__strdup(opts->connect);
	r->scheme =
	    opts->auth_scheme != NULL ? eb__strdup(opts->auth_scheme) : NULL;
	r->cred = opts->auth_credentials != NULL
	              ? eb__strdup(opts->auth_credentials)
	              : NULL;
	r->acl = opts->acl;
	r->creator_acl[0].perms = ZOO_PERM_ALL;
	r->creator_acl[0].id = ZOO_AUTH_IDS;
	r->creator_acl[1].perms = ZOO_PERM_READ;
	r->creator_acl[1].id = ZOO_ANYONE_ID_UNSAFE;
	r->creator_aclv.count = 2;
	r->creator_aclv.data = r->creator_acl;
	r->poll_fd = -1;
	rv = eb__zk_new_with_ops(loop, &zk_real_ops, r,
	    opts->session_timeout_ms, on_event, arg, &zk);
	if (rv != 0) {
		free(r->hosts);
		free(r->scheme);
		free(r->cred);
		free(r);
		return rv;
	}
	r->zk = zk;
	if (opts->max_request_bytes != 0) {
		zk->max_request = opts->max_request_bytes;
	}
	/* The client prepends the chroot ("h:p/chroot") to every path it
	 * sends: the size estimates count it. */
	if (strchr(opts->connect, '/') != NULL) {
		zk->chroot_len = strlen(strchr(opts->connect, '/'));
	}
	/* Handles last: nothing above can fail after them. */
	(void) uv_timer_init(loop, &r->timer);
	(void) uv_timer_init(loop, &r->lost_timer);
	(void) eb__deferq_init(loop, &r->dq);
	r->timer.data = r;
	r->lost_timer.data = r;
	r->open_handles = 3;
	*zkp = zk;
	return 0;
}

int
eb__zk_connected_port(const eb__zk *zk)
{
	struct zk_real         *r;
	struct sockaddr_storage ss;
	socklen_t               len = sizeof(ss);

	if (zk->ops != &zk_real_ops) {
		return 0;
	}
	r = zk->impl;
	if (r->conn == NULL || !r->conn->connected ||
	    zookeeper_get_connected_host(
	        r->conn->zh, (struct sockaddr *) &ss, &len) == NULL) {
		return 0;
	}
	if (ss.ss_family == AF_INET) {
		return ntohs(((struct sockaddr_in *) &ss)->sin_port);
	}
	if (ss.ss_family == AF_INET6) {
		return ntohs(((struct sockaddr_in6 *) &ss)->sin6_port);
	}
	return 0;
}

uint64_t
eb__zk_poll_generation(const eb__zk *zk)
{
	if (zk->ops != &zk_real_ops) {
		return 0;
	}
	return ((const struct zk_real *) zk->impl)->poll_generation;
}
