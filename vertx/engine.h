/*
 * Taking part in the Java engine's own election (issue 26, part B; the
 * engine's rules, reproduced by ../shared/vertx45 EngineServer): under
 * <root>/<engine_root> every engine node owns one EPHEMERAL_SEQUENTIAL
 * child "engine-%010d" whose data is its engine address; the node whose
 * address is the data of the lowest child leads. Before creating its child
 * a node refuses to start when a child already holds its address
 * (duplicate). This node plays by the same rules: the duplicate check, its
 * child, and the leader computed on every child change.
 *
 * It only elects: the owner (vxnode.c) gets the leadership and the
 * leader's address through the callback, and consumes
 * EXTERNAL_EVENT_INGRESS while leading or forwards to a leading JVM
 * (docs/VERTX.md section 7). A new session (after expiry) registers
 * again (the Java engine does not; docs/VERTX.md says so).
 *
 * Session events must be forwarded by the zk's owner. Loop thread only;
 * zk is borrowed and must outlive the engine; strings are copied.
 */
#ifndef EB_VERTX_ENGINE_H
#define EB_VERTX_ENGINE_H

#include <uv.h>

#include "zk/zk.h"

typedef struct eb__vx_engine eb__vx_engine; /* opaque */

typedef enum eb__vx_engine_event {
	EB_VX_ENGINE_REGISTERED = 1, /* our child exists (path) */
	EB_VX_ENGINE_LEADER = 2,     /* the lowest child's data is ours */
	EB_VX_ENGINE_FOLLOWER = 3,   /* another address leads (leader) */
	EB_VX_ENGINE_DUPLICATE = 4   /* our address is taken: not joined */
} eb__vx_engine_event;

/* detail: our child's path (REGISTERED), the leader's address (LEADER,
 * FOLLOWER), the child holding our address (DUPLICATE). Borrowed. */
typedef void (*eb__vx_engine_cb)(
    eb__vx_engine_event ev, const char *detail, void *arg);
typedef void (*eb__vx_engine_close_cb)(eb__vx_engine *e, void *arg);

/* path: the engine root, absolute ("/io.vertx/engine"). 0 or UV_EINVAL. */
int  eb__vx_engine_new(uv_loop_t *loop, eb__zk *zk, const char *path,
     const char *address, eb__vx_engine_cb cb, void *arg, eb__vx_engine **ep);
int  eb__vx_engine_start(eb__vx_engine *e);
void eb__vx_engine_session_event(eb__vx_engine *e, eb__zk_event ev);
/* 1 while this node leads. */
int eb__vx_engine_leading(const eb__vx_engine *e);
/* Exactly once; cb on a later turn. The child goes with the session (or
 * is deleted now when the session is up). */
void eb__vx_engine_close(
    eb__vx_engine *e, eb__vx_engine_close_cb cb, void *arg);

#endif
