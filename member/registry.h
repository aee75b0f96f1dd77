/*
 * Membership: this node's member znode and address claim (DESIGN.md
 * "ZooKeeper layout", correctness rules 1, 2, 7 and 8).
 *
 *   <root>/addresses/<percent-encoded address>  EPHEMERAL {"attempt","node_id"}
 *   <root>/members/m-<attempt-uuid>-<seq10>     EPHEMERAL_SEQUENTIAL
 *       {"address","node_id","host","cluster_port","bridge_port",
 *        "admin_port","version","started_ms","eligible",
 *        "link_min","link_max"}
 *
 * Registration is one eb__zk_multi creating both nodes (after ensuring the
 * parents), so two nodes racing for one address cannot both get in: the
 * loser's multi fails on the claim and creates nothing (rule 1). The loser
 * reads the claim and fails with EB_EDUPADDR naming the holder.
 *
 * A multi whose reply is lost to a connection loss may have been applied.
 * After the reconnect (same session) the registry reads the claim: if it is
 * owned by this session and carries this attempt's uuid, it adopts the
 * member whose name carries the uuid (Curator's protected mode); if the
 * claim is absent it retries with a new attempt (rule 2). If the session
 * expired meanwhile, the server removed whatever was applied and a fresh
 * registration follows.
 *
 * A claim held by another session with our own node_id is taken for our
 * previous (crashed) process: the registry waits for it to disappear,
 * bounded by dup_wait_ms (default: session timeout + 1 s), before calling
 * it a duplicate (rule 2).
 *
 * Our member deleted or overwritten by someone else (a data watch on it,
 * armed by the read that confirms each registration, which also checks
 * that the data is still exactly ours): REREGISTERING at once, then a new
 * member. An overwritten member is ours still (our session owns it) and is
 * deleted first; the address claim is kept when it is still ours (same
 * session), re-created when gone, and a claim taken by another session
 * goes the duplicate path (rule 7: FAILED/EB_EDUPADDR).
 *
 * Session expiry: LOST, then on the new session a full re-registration,
 * all or nothing; if the address was taken meanwhile FAILED/EB_EDUPADDR
 * (rule 7: the owner must fail loudly). eb__registry_leave() deletes the
 * member and the claim in one multi (rule 8). eb__registry_rejoin() moves
 * this node to the back of the member order: one multi deletes the member,
 * creates a new one under a new attempt and updates the claim.
 *
 * Session events must be forwarded by the owner of the eb__zk
 * (eb__registry_session_event). Loop thread only. The zk is borrowed and
 * must outlive the registry; strings of opts are copied.
 */
#ifndef EB_MEMBER_REGISTRY_H
#define EB_MEMBER_REGISTRY_H

#include <stdint.h>

#include <uv.h>

#include "zk/zk.h"

typedef struct eb__registry eb__registry; /* opaque */

typedef enum eb__registry_event {
	EB_REGISTRY_REGISTERED = 1,   /* member+claim exist in this session
	                                 (first time, re-registered, rejoined,
	                                 or re-confirmed after a reconnect) */
	EB_REGISTRY_LOST = 2,         /* session expired: our nodes are gone;
	                                 re-registration follows */
	EB_REGISTRY_FAILED = 3,       /* fatal; status says why. EB_EDUPADDR:
	                                 eb__registry_holder() names the holder */
	EB_REGISTRY_LEFT = 4,         /* eb__registry_leave() finished */
	EB_REGISTRY_REREGISTERING = 5 /* our member was deleted or
	                                 overwritten from outside: leadership
	                                 must end now; REGISTERED (new
	                                 member) or FAILED follows */
} eb__registry_event;

typedef struct eb__registry_opts {
	const char *root;    /* "/ebnode/<cluster>", no trailing '/' */
	const char *address; /* the node address (claimed) */
	const char *node_id;
	const char *host;
	int         cluster_port;
	int         bridge_port;
	int         admin_port;
	const char *version;
	/* The link protocol range the node speaks (written as "link_min",
	 * "link_max"; 0, 0: not written). */
	int      link_min;
	int      link_max;
	int      eligible;    /* may lead (written as "eligible") */
	uint32_t dup_wait_ms; /* 0: session timeout + 1000 */
} eb__registry_opts;

typedef void (*eb__registry_cb)(
    eb__registry *r, eb__registry_event ev, int status, void *arg);
typedef void (*eb__registry_close_cb)(eb__registry *r, void *arg);

void eb__registry_opts_init(eb__registry_opts *opts);
/* No I/O, no callbacks until start. 0 or UV_EINVAL (missing fields). */
int eb__registry_new(uv_loop_t *loop, eb__zk *zk, const eb__registry_opts *opts,
    eb__registry_cb cb, void *arg, eb__registry **rp);
/* Registers as soon as the session is connected (now or later). */
int  eb__registry_start(eb__registry *r);
void eb__registry_session_event(eb__registry *r, eb__zk_event ev);
/* Graceful leave: LEFT follows exactly once (0 or the multi's error). */
int eb__registry_leave(eb__registry *r);
/* Step to the back: REGISTERED follows with the new member (or FAILED).
 * EB_EZKINVALIDSTATE unless registered. */
int eb__registry_rejoin(eb__registry *r);
/* Exactly once; no callback after it; cb on a later turn. */
void eb__registry_close(eb__registry *r, eb__registry_close_cb cb, void *arg);

int eb__registry_is_registered(const eb__registry *r);
/* 1 between REREGISTERING and the next REGISTERED (or FAILED). */
int eb__registry_reregistering(const eb__registry *r);
/* Valid while registered (NULL/0 otherwise). */
const char *eb__registry_member_name(const eb__registry *r);
const char *eb__registry_member_path(const eb__registry *r);
int64_t     eb__registry_member_seq(const eb__registry *r);
int64_t     eb__registry_member_czxid(const eb__registry *r);
const char *eb__registry_members_path(const eb__registry *r);
const char *eb__registry_root(const eb__registry *r);
/* After FAILED/EB_EDUPADDR: "node_id=<id> attempt=<uuid> session=0x<id>". */
const char *eb__registry_holder(const eb__registry *r);

#endif
