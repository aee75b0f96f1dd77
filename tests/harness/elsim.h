/*
 * One simulated cluster node for the election unit tests: a fake ZooKeeper
 * session (fakezk.h), a registry and an election wired as eb_cluster wires
 * them (session events to the election first, then the registry; registry
 * events to the election), with counters of what happened.
 * Loop thread only.
 */
#ifndef EB_TESTS_HARNESS_ELSIM_H
#define EB_TESTS_HARNESS_ELSIM_H

#include <stdint.h>

#include <ebnode/election.h>

#include "member/registry.h"
#include "tests/harness/fakezk.h"

typedef struct elsim {
	eb__zk       *zk;
	eb__registry *reg;
	eb_election  *el;
	int           registered;
	int           failed;
	int           rereg;
	int           rereg_state_ok; /* what /health reads, at the event */
	int           elected;
	int           revoked;
	int           leader;
	int64_t       epoch;
	char          reason[32];
	int           closed; /* close callbacks seen (3: all) */
	int           open;
	char          id[16];
} elsim;

/*
 * Opens node i ("n<i>", address "addr-<i>") on srv and starts it. eo: the
 * election options (NULL: defaults); eligible overrides eo->eligible.
 */
void elsim_open(elsim *s, uv_loop_t *loop, fakezk_server *srv, int i,
    int eligible, uint32_t timeout_ms, const eb_election_opts *eo);
/* Starts closing an open node (its session closes: its ephemerals go);
 * elsim_closed_pred tells when all three parts have closed. */
void elsim_close_begin(elsim *s);
int  elsim_closed_pred(void *arg);
int  elsim_registered_pred(void *arg);
/* The election callbacks (arg: the elsim), for an election made by hand. */
void elsim_elected_cb(eb_election *e, int64_t epoch, void *arg);
void elsim_revoked_cb(eb_election *e, const char *reason, void *arg);
void elsim_el_closed_cb(eb_election *e, void *arg);

#endif
