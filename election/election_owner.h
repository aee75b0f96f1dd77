/*
 * The election's interface for the module that owns one, cluster/
 * (eb_cluster constructs it; tests/harness/elsim.c does the same): the
 * construction on top of a ZooKeeper session and the membership registry,
 * and the plumbing of session and registry events, which the zk owner
 * forwards. Everything else of eb_election is public (<ebnode/election.h>);
 * election/ has no private header shared between files (one file).
 * Loop thread only.
 */
#ifndef EB_ELECTION_ELECTION_OWNER_H
#define EB_ELECTION_ELECTION_OWNER_H

#include <ebnode/election.h>

#include "member/registry.h"
#include "zk/zk.h"

/*
 * zk and reg are borrowed and must outlive the election; both NULL means
 * standalone (elected with epoch 1 after start). No I/O until start.
 */
int  eb__election_new(uv_loop_t *loop, eb__zk *zk, eb__registry *reg,
     const eb_election_opts *opts, eb_election_elected_cb elected,
     eb_election_revoked_cb revoked, void *arg, eb_election **ep);
int  eb__election_start(eb_election *e);
void eb__election_session_event(eb_election *e, eb__zk_event ev);
/* The registry reported REGISTERED (new member) or LOST/FAILED. */
void eb__election_registry_event(eb_election *e, eb__registry_event ev);
/*
 * 0 while the lease computed from the current (negotiated) session timeout
 * is safe; EB_ECONF when it is not (logged once as "lease-unsafe", the node
 * never leads then). Evaluated after each session CONNECTED/RECONNECTED.
 */
int eb__election_lease_error(const eb_election *e);
/* The effective lease and heartbeat in ms (0 before the session). */
uint32_t eb__election_lease_ms(const eb_election *e);
uint32_t eb__election_heartbeat_ms(const eb_election *e);
/* The node id recorded in <root>/leader. */
void eb__election_set_identity(
    eb_election *e, const char *node_id, const char *address);

#endif
