/*
 * fakezk: an in-memory ZooKeeper behind the eb__zk_ops seam (STYLE B9), for
 * deterministic unit tests of membership, the child cache and the election.
 *
 * One fakezk_server holds the tree (persistent, ephemeral and sequential
 * nodes with czxid/mzxid/version/ephemeral owner), the sessions and the
 * one-shot watches. Any number of eb__zk clients (one per simulated node) are
 * attached to it with fakezk_client_new(). Requests and watch events are
 * queued and delivered on later loop turns, in FIFO order, by one uv_idle
 * handle that is active only while the queue is non-empty.
 *
 * Fault injection, per client:
 *   - fakezk_disconnect(): the client loses its connection. It emits
 *     SUSPENDED at once; queued requests complete with EB_EZKLOSS; new ones
 *     fail with EB_EZKLOSS until fakezk_reconnect(). The session lives on.
 *   - fakezk_reconnect(): RECONNECTED when the session is alive, otherwise
 *     EXPIRED followed (one turn later) by CONNECTED with a new session.
 *     Watch events that happened while disconnected are delivered then.
 *   - fakezk_expire(): the server expires the session now (ephemerals are
 *     deleted, watches fire for others). A connected client gets EXPIRED and
 *     then CONNECTED with a new session; a disconnected one on reconnect.
 *   - fakezk_lose_next_reply(): the next request is applied by the server
 *     but its reply is lost: it completes with EB_EZKLOSS and the client is
 *     disconnected (the ambiguous case of correctness rule 2).
 *   - fakezk_stall(): requests and events are held (the server does not
 *     answer, but the TCP connection looks fine): the leader lease case.
 *   - fakezk_stall_writes(): writes (create, delete, set, multi) are held
 *     while reads (exists, get, children) are still answered: a ZooKeeper
 *     follower cut off from the quorum (it serves reads from its own copy,
 *     it cannot commit). More permissive than a real follower, which also
 *     queues this session's later reads behind its pending write: the
 *     harder case for the lease (reads keep succeeding throughout).
 *   - fakezk_server_set_timeout_bounds(): sessions get the requested
 *     timeout clamped to [min, max] (ZooKeeper's negotiation).
 *   - fakezk_kill(): the process dies without closing its session; the
 *     session expires only by fakezk_server_expire_session().
 *   - fakezk_fail_next(): the next request fails with a given code, nothing
 *     applied.
 *   - fakezk_set()/fakezk_del()/fakezk_put(): another client changes the
 *     tree (persistent or foreign-owned nodes, external overwrites);
 *     fakezk_deny_read(): a node this client may not read (ACL).
 *
 * Loop thread only. Not thread-safe. Ownership: the server must outlive its
 * clients; close every client (eb__zk_close) before fakezk_server_close().
 */
#ifndef EB_TEST_FAKEZK_H
#define EB_TEST_FAKEZK_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "tests/harness/th.h"
#include "zk/zk.h"

typedef struct fakezk_server fakezk_server;

fakezk_server *fakezk_server_new(uv_loop_t *loop);
/* Closes the idle handle; cb (may be NULL) runs when it has closed and the
 * server is freed after it. Clients must be closed before. */
void fakezk_server_close(fakezk_server *s, void (*cb)(void *arg), void *arg);
/* Test teardown: closes the server, runs t's loop until it has nothing left
 * and fails the test unless the server's close completed. */
void fakezk_server_close_run(fakezk_server *s, th_loop *t);

/* A client; no session until eb__zk_start() (CONNECTED on a later turn). */
int fakezk_client_new(fakezk_server *s, uint32_t timeout_ms,
    eb__zk_event_cb on_event, void *arg, eb__zk **zkp);

void fakezk_disconnect(eb__zk *zk);
void fakezk_reconnect(eb__zk *zk);
void fakezk_expire(eb__zk *zk);
void fakezk_lose_next_reply(eb__zk *zk);
/* The same, for the next multi only (other requests pass normally). */
void fakezk_lose_next_multi(eb__zk *zk);
/* The next multi fails with status without being applied. */
void fakezk_fail_next_multi(eb__zk *zk, int status);
void fakezk_stall(eb__zk *zk, int on);
void fakezk_stall_writes(eb__zk *zk, int on);
/* Negotiation bounds for sessions created from now on; 0: no bound. */
void fakezk_server_set_timeout_bounds(
    fakezk_server *s, uint32_t min_ms, uint32_t max_ms);
void fakezk_kill(eb__zk *zk);
void fakezk_fail_next(eb__zk *zk, int status);
/* Expires a session by id (e.g. of a killed client). */
void fakezk_server_expire_session(fakezk_server *s, int64_t session_id);

/* Inspection. */
int64_t fakezk_session(const eb__zk *zk); /* the server-side session */
int     fakezk_exists(fakezk_server *s, const char *path);
/* Copies the node's data (NUL-terminated); 0, or -1 when absent. */
int fakezk_get(fakezk_server *s, const char *path, char *buf, size_t cap,
    eb__zk_stat *stat);
/* Number of children of path (0 when absent). */
size_t fakezk_child_count(fakezk_server *s, const char *path);
/* Watch events delivered to this client so far. */
unsigned fakezk_watch_events(const eb__zk *zk);
/* Requests this client has issued so far. */
unsigned fakezk_requests(const eb__zk *zk);
/* Directly creates/deletes a node, as another client would (for tests that
 * need a conflicting node); fires watches. 0 or an EB_EZK* code. */
int fakezk_put(
    fakezk_server *s, const char *path, const char *data, int64_t owner);
int fakezk_del(fakezk_server *s, const char *path);
/* Overwrites a node's data, as another client would (version + 1, data
 * watches fire). 0 or EB_EZKNONODE. */
int fakezk_set(fakezk_server *s, const char *path, const char *data);
/* on: gets of path fail with EB_EZKNOAUTH and arm no watch (an ACL without
 * READ for us); exists still works, as on a real server. */
int fakezk_deny_read(fakezk_server *s, const char *path, int on);

#endif
