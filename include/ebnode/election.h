/*
 * Leader election among the cluster members (DESIGN.md rules 4, 5, 6).
 *
 * The leader is the eligible member with the lowest sequence suffix. Each
 * eligible node watches only its eligible predecessor (an exists watch);
 * when that node is deleted it re-lists and re-checks, so a leader's death
 * wakes exactly one node (no herd effect). Members that joined with
 * "eligible": false in their member data are skipped: they are never
 * leader and never anybody's predecessor.
 *
 * Before acting as leader a node verifies that its own member node exists
 * and is owned by its current session, and records
 * <root>/leader = {"epoch","node_id","address"} with a multi that checks
 * its own member node. The epoch is the czxid of the leader's member znode
 * (rule 6): it only increases from one leader to the next.
 *
 * Leadership is revoked synchronously (the revoked callback runs inside the
 * session event) when the ZooKeeper connection is suspended, and is guarded
 * by a local lease renewed only by quorum-confirmed contact: every
 * heartbeat_ms the leader sends a multi with one check of its own member
 * (version as created), a write that the ZooKeeper quorum must commit; a
 * follower cut off from the quorum cannot answer it, whereas it keeps
 * answering reads. eb_election_is_leader() is true only while
 * now - (send time of the last successful renewal) < lease_ms. The lease is
 * computed from the NEGOTIATED session timeout when the session connects
 * (common/lease.h, docs/CLUSTER.md "The lease"):
 *   lease = session - tick/2 - heartbeat - max(session/20, 50 ms)
 * and a combination that leaves no safe lease is refused: the node logs
 * "ERR election: lease-unsafe: ..." and never leads
 * (eb__election_lease_error() tells the owner, which stops the node).
 * A renewal answered NONODE or BADVERSION (the member was deleted or
 * overwritten from outside) revokes at once ("member-gone").
 *
 * Without ZooKeeper (standalone) the node is its own leader: elected with
 * epoch 1 on a later turn after start.
 *
 * Callbacks run on the loop; elected and revoked alternate strictly
 * (elected, revoked, elected, ...). Loop thread only.
 */
#ifndef EBNODE_ELECTION_H
#define EBNODE_ELECTION_H

#include <stdint.h>

#include <uv.h>

#include <ebnode/api.h>

typedef struct eb_election eb_election; /* opaque */

typedef struct eb_election_opts {
	int      eligible;     /* default 1; 0: member, never leader */
	uint32_t lease_ms;     /* 0: the safe bound; larger is refused */
	uint32_t heartbeat_ms; /* 0: negotiated session timeout / 4 */
	uint32_t zk_tick_ms;   /* ZooKeeper tickTime; 0: unknown (session/2) */
} eb_election_opts;

typedef void (*eb_election_elected_cb)(
    eb_election *e, int64_t epoch, void *arg);
/* reason: "zk-suspended", "zk-expired", "lease-expired", "member-gone",
 * "lease-unsafe" (a renegotiated session timeout leaves no safe lease),
 * "step-down", "shutdown", "not-lowest". Borrowed for the call. */
typedef void (*eb_election_revoked_cb)(
    eb_election *e, const char *reason, void *arg);
typedef void (*eb_election_close_cb)(eb_election *e, void *arg);

EB_API void eb_election_opts_init(eb_election_opts *opts);
/* Leadership right now, with the lease checked at this call. */
EB_API int eb_election_is_leader(eb_election *e);
/* The epoch of the current (or last) leadership of this node; 0 never. */
EB_API int64_t eb_election_epoch(const eb_election *e);
/*
 * Releases leadership and rejoins at the back of the member order (delete
 * and re-create the member under a new attempt; the address claim is
 * kept). 0, or EB_ENOTLEADER when this node is not the leader.
 */
EB_API int eb_election_step_down(eb_election *e);
/* Stops electing; a leader is revoked ("shutdown") synchronously. */
EB_API void eb_election_stop(eb_election *e);
/* Exactly once; no callback after it; cb on a later turn. */
EB_API void eb_election_close(
    eb_election *e, eb_election_close_cb cb, void *arg);
/* How many times this node ran the election check (list + compare). */
EB_API unsigned eb_election_checks(const eb_election *e);

#endif
