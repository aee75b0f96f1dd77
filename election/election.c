/*
 * Leader election; see include/ebnode/election.h.
 *
 * One check = list the members (no watch: the child cache owns the child
 * watch; the election must not wake on every membership change), find our
 * own member and the nearest lower-sequence eligible member:
 *   - none: we are the lowest. Verify our member (exists: owned by this
 *     session), record <root>/leader with a multi that checks our member,
 *     then elected(czxid);
 *   - one: exists-watch it. Its deletion (and only that) starts the next
 *     check, on this one node.
 * Only valid members count (eb__member_load: member name, EPHEMERAL, a
 * member record; the rule the child cache applies too). What a lower
 * member is -- a candidate (valid, eligible), valid but ineligible, or
 * ignored (invalid or unreadable) -- is read from its data once and kept
 * in a hash by name (no fixed size: thousands of members are fine) for as
 * long as the session lasts; the read arms a watch (data watch, or an
 * exists watch for a child we may not read) whose firing forgets the
 * entry and re-checks, so a damaged child is re-read only when it changes
 * and never polled. Lower members are examined nearest first and read in
 * rounds of 1, 2, 4 .. EL_FETCH_WINDOW, so a node normally reads (and
 * watches) just its predecessor however many members there are -- no
 * herd -- and the ignored ones below it once.
 *
 * Checks never overlap: a trigger during a check sets "again". Completions
 * carry {live id, generation}; a session or registration change bumps the
 * generation and drops whatever is in flight.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <ebnode/election.h>
#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/hmap.h"
#include "common/lease.h"
#include "common/list.h"
#include "common/util.h"
#include "election/election_owner.h"
#include "member/member.h"
#include "member/registry.h"
#include "zk/zk.h"

/* Lower members read in parallel per round of a check. */
#define EL_FETCH_WINDOW 32

typedef enum el_kind {
	EL_K_CANDIDATE = 1, /* valid and eligible: can lead */
	EL_K_INELIGIBLE,    /* valid, "eligible": false */
	EL_K_IGNORED        /* invalid or unreadable */
} el_kind;

/* The data version of a member as the registry creates it (cluster/
 * registry.c never sets a member's data): the renewal's check expects it,
 * so an overwrite from outside (version bump) fails the renewal. */
#define EL_MEMBER_VERSION 0

typedef struct el_known {
	eb__hent hent; /* key: name */
	char    *name; /* owned */
	el_kind  kind;
	int      seen;
} el_known;

/* A lower member of the last listing. */
typedef struct el_cand {
	char   *name; /* owned */
	int64_t seq;
} el_cand;

struct eb_election {
	uv_loop_t             *loop; /* borrowed */
	eb__zk                *zk;   /* borrowed, NULL: standalone */
	eb__registry          *reg;  /* borrowed, NULL: standalone */
	uv_timer_t             heartbeat;
	uv_timer_t             lease;
	uv_timer_t             defer; /* standalone elect, lease revoke */
	int                    open_handles;
	uint64_t               id;
	uint64_t               gen;
	int                    eligible;
	uint32_t               lease_ms;     /* effective; 0: not planned */
	uint32_t               heartbeat_ms; /* effective */
	uint32_t               opt_lease_ms; /* as configured (0: derive) */
	uint32_t               opt_heartbeat_ms;
	uint32_t               tick_ms;     /* ZooKeeper tickTime; 0: unknown */
	uint32_t               planned_for; /* session timeout of the plan */
	int                    lease_err;   /* EB_ECONF: unsafe, never lead */
	uint64_t               renewed_ms;  /* send time, last quorum renewal */
	int                    started;
	int                    stopped;
	int                    closing;
	int                    leader;
	int                    checking;
	int                    again;
	int64_t                epoch;
	unsigned               checks;
	char                  *member_name; /* owned */
	char                  *member_path; /* owned */
	int64_t                member_czxid;
	char                  *pred_path; /* owned: the watched predecessor */
	char                  *node_id;   /* owned */
	char                  *address;   /* owned */
	eb__hmap               known;     /* name -> el_known (owned) */
	int64_t                known_session;
	el_cand               *cands; /* owned: lower members, nearest first */
	size_t                 ncands;
	int                    fetching;
	int                    fetch_lost;
	int                    window; /* reads per round: 1, 2, 4 .. */
	eb_election_elected_cb elected_cb;
	eb_election_revoked_cb revoked_cb;
	void                  *arg;
	eb_election_close_cb   close_cb;
	void                  *close_arg;
};

typedef struct el_req {
	eb__zk  *zk; /* borrowed: the session of the live id */
	uint64_t id;
	uint64_t gen;
	uint64_t send_ms; /* taken before the request is queued: never late */
	char     name[64];
} el_req;

static void el_check(eb_election *e, const char *trigger);
static void known_forget_path(eb_election *e, const char *path);

static el_req *
req_new(eb_election *e, const char *name)
{
	el_req *q = eb__calloc(1, sizeof(*q));

	q->zk = e->zk;
	q->id = e->id;
	q->gen = e->gen;
	q->send_ms = eb__mono_ms();
	if (name != NULL) {
		(void) snprintf(q->name, sizeof(q->name), "%s", name);
	}
	return q;
}

static eb_election *
req_election(const el_req *q)
{
	eb_election *e = eb__zk_live_get(q->zk, q->id);

	if (e == NULL || e->closing || e->stopped || e->gen != q->gen) {
		return NULL;
	}
	return e;
}

/* ---- leadership transitions ---- */

static void
revoke(eb_election *e, const char *reason)
{
	if (!e->leader) {
		return;
	}
	e->leader = 0;
	(void) uv_timer_stop(&e->heartbeat);
	(void) uv_timer_stop(&e->lease);
	EB_LOG_NOTICE("election", "revoked: reason=%s epoch=%lld node=%s",
	    reason, (long long) e->epoch, e->node_id);
	if (e->revoked_cb != NULL && !e->closing) {
		e->revoked_cb(e, reason, e->arg);
	}
}

static void lease_arm(eb_election *e);
static void heartbeat_cb(uv_timer_t *t);

/* renewed_ms: the send time of the quorum-committed multi that recorded
 * <root>/leader (it checked our member): the lease's first base. */
static void
become_leader(eb_election *e, int64_t epoch, uint64_t renewed_ms)
{
	if (e->leader) {
		return;
	}
	if (e->zk != NULL && e->lease_err != 0) {
		return; /* unsafe lease: logged when planned; never lead */
	}
	e->leader = 1;
	e->epoch = epoch;
	EB_LOG_NOTICE("election", "elected: epoch=%lld node=%s member=%s",
	    (long long) epoch, e->node_id,
	    e->member_name != NULL ? e->member_name : "-");
	if (e->zk != NULL) {
		if (renewed_ms > e->renewed_ms) {
			e->renewed_ms = renewed_ms;
		}
		lease_arm(e);
		(void) uv_timer_start(&e->heartbeat, heartbeat_cb,
		    e->heartbeat_ms, e->heartbeat_ms);
	}
	if (e->elected_cb != NULL && !e->closing) {
		e->elected_cb(e, epoch, e->arg);
	}
}

/* ---- the lease (rule 5; docs/CLUSTER.md "The lease") ---- */

/*
 * Computes lease and heartbeat from the session timeout the server
 * negotiated (zk.c takes it from zoo_recv_timeout() on connect). Once per
 * timeout value; an unsafe combination is logged once and blocks leading.
 */
static int
lease_plan(eb_election *e)
{
	uint32_t      t = eb__zk_session_timeout_ms(e->zk);
	eb_lease_plan p;
	const char   *key = "";

	if (t == e->planned_for) {
		return e->lease_err;
	}
	e->planned_for = t;
	e->lease_err = eb__lease_plan(
	    t, e->tick_ms, e->opt_heartbeat_ms, e->opt_lease_ms, &p, &key);
	if (e->lease_err != 0) {
		e->lease_ms = 0;
		e->heartbeat_ms = p.heartbeat_ms;
		EB_LOG_ERR("election",
		    "lease-unsafe: key=%s session_ms=%u tick_ms=%u%s "
		    "heartbeat_ms=%u margin_ms=%u bound_ms=%lld lease_ms=%u "
		    "min_ms=%u (the lease must be <= bound, >= min and > "
		    "heartbeat; this node will not lead)",
		    key, t, p.tick_ms, p.tick_assumed ? "(assumed)" : "",
		    p.heartbeat_ms, p.margin_ms, (long long) p.bound_ms,
		    e->opt_lease_ms, EB_LEASE_MIN_MS);
		revoke(e, "lease-unsafe");
		return e->lease_err;
	}
	e->lease_ms = p.lease_ms;
	e->heartbeat_ms = p.heartbeat_ms;
	EB_LOG_INFO("election",
	    "lease: session_ms=%u tick_ms=%u%s heartbeat_ms=%u margin_ms=%u "
	    "lease_ms=%u",
	    t, p.tick_ms, p.tick_assumed ? "(assumed)" : "", p.heartbeat_ms,
	    p.margin_ms, p.lease_ms);
	return 0;
}

static int
lease_valid(const eb_election *e)
{
	if (e->zk == NULL) {
		return 1;
	}
	if (eb__zk_get_state(e->zk) != EB_ZK_STATE_CONNECTED ||
	    e->lease_err != 0 || e->lease_ms == 0) {
		return 0;
	}
	/* Only quorum-confirmed renewals count; reads a partitioned follower
	 * still answers (eb__zk_last_ok_send_ms) do not. */
	return e->renewed_ms != 0 &&
	       eb__mono_ms() - e->renewed_ms < e->lease_ms;
}

static void
lease_revoke_cb(uv_timer_t *t)
{
	eb_election *e = t->data;

	if (e->leader && !lease_valid(e)) {
		revoke(e, "lease-expired");
		/* Re-check once ZooKeeper answers again (the list is held
		 * until then); a fresh check re-elects us if still lowest. */
		el_check(e, "lease-expired");
	}
}

static void
lease_timer_cb(uv_timer_t *t)
{
	eb_election *e = t->data;

	if (!e->leader) {
		return;
	}
	if (!lease_valid(e)) {
		lease_revoke_cb(t);
		return;
	}
	lease_arm(e);
}

/* Arms the lease timer for the moment the lease would lapse. */
static void
lease_arm(eb_election *e)
{
	uint64_t now = eb__mono_ms();
	uint64_t due = e->renewed_ms + e->lease_ms;

	(void) uv_timer_start(
	    &e->lease, lease_timer_cb, due > now ? due - now + 1 : 1, 0);
}

static void
renew_cb(eb__zk *zk, int status, const eb__zk_op_result *res, size_t count,
    void *arg)
{
	el_req      *q = arg;
	eb_election *e = req_election(q);
	uint64_t     sent = q->send_ms;

	(void) zk;
	(void) res;
	(void) count;
	free(q);
	if (e == NULL) {
		return;
	}
	if (!e->leader) {
		return;
	}
	if (status == EB_EZKNONODE || status == EB_EZKBADVERSION) {
		/* Deleted, or overwritten from outside: whatever the member
		 * says now is not what we registered. */
		EB_LOG_WARN("election", "own-member-changed: member=%s err=%s",
		    e->member_name, eb_err_name(status));
		revoke(e, "member-gone");
		el_check(e, "member-gone");
		return;
	}
	if (status != 0) {
		return; /* loss/timeout: the lease runs out on its own */
	}
	/* Committed by the quorum: the session was alive there after
	 * `sent`. Completions arrive in send order; never move back. */
	if (sent > e->renewed_ms) {
		e->renewed_ms = sent;
	}
	lease_arm(e);
}

/*
 * The renewal: a multi with one check op on our member (a write: a follower
 * forwards it to the quorum leader, which proposes and commits it through a
 * majority; docs/CLUSTER.md). Sent every heartbeat_ms even while earlier
 * ones are pending: the bound relies on this session sending a request at
 * least every heartbeat (the quorum learns of the session only through the
 * follower's touches of requests it received).
 */
static void
heartbeat_cb(uv_timer_t *t)
{
	eb_election *e = t->data;
	eb__zk_op    op;
	el_req      *q;

	if (!e->leader || e->member_path == NULL) {
		return;
	}
	memset(&op, 0, sizeof(op));
	op.type = EB_ZK_OP_CHECK;
	op.path = e->member_path;
	op.version = EL_MEMBER_VERSION;
	q = req_new(e, NULL);
	if (eb__zk_multi(e->zk, &op, 1, renew_cb, q) != 0) {
		free(q);
	}
}

/* ---- recording <root>/leader, then elected ---- */

static int write_leader(eb_election *e, int create);

static void
leader_multi_cb(eb__zk *zk, int status, const eb__zk_op_result *res,
    size_t count, void *arg)
{
	el_req      *q = arg;
	eb_election *e = req_election(q);
	int          create = q->name[0] == 'c';
	uint64_t     sent = q->send_ms; /* the lease's first base */

	(void) zk;
	free(q);
	if (e == NULL) {
		return;
	}
	e->checking = 0;
	if (status == 0) {
		become_leader(e, e->member_czxid, sent);
	} else if (count == 2 && res[0].status == 0 &&
	           ((!create && res[1].status == EB_EZKNONODE) ||
	               (create && res[1].status == EB_EZKNODEEXISTS))) {
		/* <root>/leader absent (first leader) or created meanwhile. */
		e->checking = 1;
		if (write_leader(e, !create) != 0) {
			e->checking = 0;
		}
		return;
	} else {
		EB_LOG_WARN("election", "leader-record-failed: err=%s",
		    eb_err_name(status));
	}
	if (e->again) {
		e->again = 0;
		el_check(e, "again");
	}
}

static int
write_leader(eb_election *e, int create)
{
	char      path[1024];
	char     *data;
	json_t   *o;
	eb__zk_op ops[2];
	el_req   *q;
	int       rv;

	(void) snprintf(
	    path, sizeof(path), "%s/leader", eb__registry_root(e->reg));
	o = json_pack("{s:I, s:s, s:s}", "epoch", (json_int_t) e->member_czxid,
	    "node_id", e->node_id, "address", e->address);
	data = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	memset(ops, 0, sizeof(ops));
	ops[0].type = EB_ZK_OP_CHECK;
	ops[0].path = e->member_path;
	ops[0].version = -1;
	ops[1].type = create ? EB_ZK_OP_CREATE : EB_ZK_OP_SET;
	ops[1].path = path;
	ops[1].data = data;
	ops[1].len = strlen(data);
	ops[1].version = -1;
	q = req_new(e, create ? "c" : "s");
	rv = eb__zk_multi(e->zk, ops, 2, leader_multi_cb, q);
	free(data);
	if (rv != 0) {
		free(q);
	}
	return rv;
}

static void
verify_cb(eb__zk *zk, int status, const eb__zk_stat *st, void *arg)
{
	el_req      *q = arg;
	eb_election *e = req_election(q);

	(void) zk;
	free(q);
	if (e == NULL) {
		return;
	}
	if (status == 0 && st->ephemeral_owner == eb__zk_session_id(e->zk)) {
		e->member_czxid = st->czxid;
		if (write_leader(e, 0) == 0) {
			return; /* still checking */
		}
	} else if (status == 0 || status == EB_EZKNONODE) {
		EB_LOG_WARN("election", "own-member-invalid: member=%s err=%s",
		    e->member_name, eb_err_name(status));
	}
	e->checking = 0;
	if (e->again) {
		e->again = 0;
		el_check(e, "again");
	}
}

/* ---- watching the predecessor ---- */

static void
pred_watch_cb(eb__zk *zk, eb__zk_watch_type type, const char *path, void *arg)
{
	eb_election *e = eb__zk_live_get(zk, eb__zk_live_id(arg));

	(void) zk;
	if (e == NULL || e->closing || e->stopped || e->pred_path == NULL ||
	    path == NULL || strcmp(path, e->pred_path) != 0) {
		return; /* a watch on an old predecessor */
	}
	if (type == EB_ZK_WATCH_DELETED || type == EB_ZK_WATCH_NOT_WATCHING) {
		EB_LOG_INFO("election", "predecessor-deleted: pred=%s", path);
		el_check(e, "predecessor-deleted");
	} else if (type == EB_ZK_WATCH_CHANGED) {
		/* Overwritten: it may no longer be a valid member. What we
		 * knew is forgotten (member_watch_cb) and read again. */
		EB_LOG_INFO("election", "predecessor-changed: pred=%s", path);
		known_forget_path(e, path);
		el_check(e, "predecessor-changed");
	}
}

static void
pred_exists_cb(eb__zk *zk, int status, const eb__zk_stat *st, void *arg)
{
	el_req      *q = arg;
	eb_election *e = req_election(q);

	(void) zk;
	(void) st;
	free(q);
	if (e == NULL) {
		return;
	}
	e->checking = 0;
	if (status == EB_EZKNONODE) {
		e->again = 1; /* gone between the list and the exists */
	}
	if (e->again) {
		e->again = 0;
		el_check(e, "again");
	}
}

/* ---- what the lower members are ---- */

static el_known *
known_find(eb_election *e, const char *name)
{
	eb__hent *h = eb__hmap_get(&e->known, name);

	return h != NULL ? EB_CONTAINER_OF(h, el_known, hent) : NULL;
}

static void
known_forget(eb_election *e, el_known *k)
{
	eb__hmap_del(&e->known, &k->hent);
	free(k->name);
	free(k);
}

static void
known_add(eb_election *e, const char *name, el_kind kind)
{
	el_known *k = known_find(e, name);

	if (k == NULL) {
		k = eb__calloc(1, sizeof(*k));
		k->name = eb__strdup(name);
		k->hent.key = k->name;
		eb__hmap_put(&e->known, &k->hent);
	}
	k->kind = kind;
	k->seen = 1;
}

/* Drops the entries the last listing did not show (seen == 0), or all. */
static void
known_prune(eb_election *e, int all)
{
	uint32_t i;

	for (i = 0; i < e->known.nbuckets; i++) {
		eb__hent *h = e->known.buckets[i];

		while (h != NULL) {
			el_known *k = EB_CONTAINER_OF(h, el_known, hent);

			h = h->next;
			if (all || !k->seen) {
				known_forget(e, k);
			} else {
				k->seen = 0;
			}
		}
	}
}

static void
cands_free(eb_election *e)
{
	size_t i;

	for (i = 0; i < e->ncands; i++) {
		free(e->cands[i].name);
	}
	free(e->cands);
	e->cands = NULL;
	e->ncands = 0;
}

static void el_walk(eb_election *e);

static void
known_forget_path(eb_election *e, const char *path)
{
	const char *slash = strrchr(path, '/');
	el_known   *k = known_find(e, slash != NULL ? slash + 1 : path);

	if (k != NULL) {
		known_forget(e, k);
	}
}

/* A watched lower member changed or went: what we knew of it is stale. */
static void
member_watch_cb(eb__zk *zk, eb__zk_watch_type type, const char *path, void *arg)
{
	eb_election *e = eb__zk_live_get(zk, eb__zk_live_id(arg));

	(void) zk;
	(void) type;
	if (e == NULL || e->closing || e->stopped || path == NULL) {
		return;
	}
	known_forget_path(e, path);
	if (e->pred_path != NULL) {
		const char *slash = strrchr(path, '/');
		const char *pslash = strrchr(e->pred_path, '/');
		int64_t     seq;
		int64_t     pseq;

		/* The predecessor's own watch re-checks for it, and members
		 * below it do not matter to us (no herd when an old read's
		 * watch fires on many nodes). */
		if (strcmp(path, e->pred_path) == 0 ||
		    (slash != NULL && pslash != NULL &&
		        eb__member_parse_name(slash + 1, &seq, NULL) == 0 &&
		        eb__member_parse_name(pslash + 1, &pseq, NULL) == 0 &&
		        seq < pseq)) {
			return;
		}
	}
	el_check(e, "member-changed");
}

static void
unreadable_exists_cb(eb__zk *zk, int status, const eb__zk_stat *st, void *arg)
{
	el_req      *q = arg;
	eb_election *e = req_election(q);
	el_known    *k;

	(void) zk;
	(void) st;
	if (e != NULL && status == EB_EZKNONODE &&
	    (k = known_find(e, q->name)) != NULL) {
		known_forget(e, k);
		el_check(e, "member-changed");
	}
	free(q);
}

/* Records what one lower member is, from its get. */
static void
fetch_result(eb_election *e, const char *name, int status, const char *data,
    size_t len, const eb__zk_stat *st)
{
	eb__member  m;
	const char *why;
	char        path[1024];
	el_req     *q;

	if (status == 0) {
		why = eb__member_load(&m, name, data, len, st->czxid,
		    st->ephemeral_owner, st->version);
		if (why == NULL) {
			known_add(e, name,
			    m.eligible ? EL_K_CANDIDATE : EL_K_INELIGIBLE);
			eb__member_free(&m);
			return;
		}
		/* The child cache logs it (WARN, once); here it only does
		 * not count. */
		EB_LOG_INFO("election", "member-ignored: member=%s reason=%s",
		    name, why);
		known_add(e, name, EL_K_IGNORED);
		return;
	}
	if (status == EB_EZKNONODE) {
		known_add(e, name, EL_K_IGNORED); /* gone: cannot lead */
		return;
	}
	if (eb__zk_status_transient(status)) {
		e->fetch_lost = 1; /* the reconnect re-checks */
		return;
	}
	/* Unreadable (ACL): ignored until it changes. exists needs no READ
	 * permission and arms the watch that tells us. */
	EB_LOG_INFO("election",
	    "member-ignored: member=%s reason=unreadable "
	    "err=%s",
	    name, eb_err_name(status));
	known_add(e, name, EL_K_IGNORED);
	(void) snprintf(path, sizeof(path), "%s/%s",
	    eb__registry_members_path(e->reg), name);
	q = req_new(e, name);
	if (eb__zk_exists(e->zk, path, member_watch_cb, eb__zk_live_arg(e->id),
	        unreadable_exists_cb, q) != 0) {
		free(q);
	}
}

static void
fetch_cb(eb__zk *zk, int status, const char *data, size_t len,
    const eb__zk_stat *st, void *arg)
{
	el_req      *q = arg;
	eb_election *e = req_election(q);

	(void) zk;
	if (e == NULL) {
		free(q);
		return;
	}
	fetch_result(e, q->name, status, data, len, st);
	free(q);
	if (--e->fetching > 0) {
		return;
	}
	if (e->fetch_lost) {
		e->checking = 0; /* loss: the reconnect re-checks */
		e->fetch_lost = 0;
		return;
	}
	if (e->again) {
		e->again = 0;
		e->checking = 0;
		el_check(e, "again");
		return;
	}
	/* The same listing, now with more known. The nearest lower member
	 * was not a candidate: read further ones in wider rounds. */
	if (e->window < EL_FETCH_WINDOW) {
		e->window *= 2;
	}
	el_walk(e);
}

/* ---- the check ---- */

static int
fetch_one(eb_election *e, const char *name)
{
	char    path[1024];
	el_req *q = req_new(e, name);

	(void) snprintf(path, sizeof(path), "%s/%s",
	    eb__registry_members_path(e->reg), name);
	if (eb__zk_get(e->zk, path, member_watch_cb, eb__zk_live_arg(e->id),
	        fetch_cb, q) != 0) {
		free(q);
		return -1;
	}
	e->fetching++;
	return 0;
}

/* Finds the nearest lower candidate of the last listing (nearest first).
 * Returns 1 with *pred (NULL: none, we are the lowest valid eligible
 * member), or 0 when some lower member nearer than any known candidate is
 * still unknown: up to EL_FETCH_WINDOW reads were issued and their
 * completion walks again. */
static int
find_pred(eb_election *e, const char **pred)
{
	size_t i;

	*pred = NULL;
	e->fetching = 0;
	e->fetch_lost = 0;
	for (i = 0; i < e->ncands; i++) {
		el_known *k = known_find(e, e->cands[i].name);

		if (k == NULL) {
			if (fetch_one(e, e->cands[i].name) != 0) {
				e->fetch_lost = 1;
			}
			if (e->fetching >= e->window) {
				break;
			}
			continue;
		}
		if (k->kind == EL_K_CANDIDATE) {
			*pred = e->cands[i].name;
			break;
		}
	}
	if (e->fetching > 0) {
		*pred = NULL;
		return 0;
	}
	return !e->fetch_lost;
}

static void
decide(eb_election *e, const char *pred)
{
	char    path[1024];
	el_req *q;

	free(e->pred_path);
	e->pred_path = NULL;
	if (pred == NULL) {
		/* Lowest eligible: verify our member before leading. */
		if (e->leader) {
			e->checking = 0;
			return;
		}
		q = req_new(e, NULL);
		if (eb__zk_exists(
		        e->zk, e->member_path, NULL, NULL, verify_cb, q) != 0) {
			free(q);
			e->checking = 0;
		}
		return;
	}
	if (e->leader) {
		revoke(e, "not-lowest");
	}
	(void) snprintf(path, sizeof(path), "%s/%s",
	    eb__registry_members_path(e->reg), pred);
	e->pred_path = eb__strdup(path);
	EB_LOG_INFO(
	    "election", "watching: pred=%s self=%s", pred, e->member_name);
	q = req_new(e, NULL);
	if (eb__zk_exists(e->zk, path, pred_watch_cb, eb__zk_live_arg(e->id),
	        pred_exists_cb, q) != 0) {
		free(q);
		e->checking = 0;
	}
}

static void
el_walk(eb_election *e)
{
	const char *pred;

	if (find_pred(e, &pred)) {
		decide(e, pred);
	} else if (e->fetching == 0) {
		e->checking = 0; /* could not even ask: the reconnect does */
	}
	/* else: the reads walk again when they are all back */
}

static int
cand_cmp(const void *a, const void *b)
{
	const el_cand *x = a;
	const el_cand *y = b;

	return x->seq > y->seq ? -1 : (x->seq < y->seq ? 1 : 0);
}

static void
list_cb(
    eb__zk *zk, int status, const char *const *names, size_t count, void *arg)
{
	el_req      *q = arg;
	eb_election *e = req_election(q);
	int64_t      own;
	int64_t      seq;
	size_t       i;
	int          own_found = 0;

	(void) zk;
	free(q);
	if (e == NULL) {
		return;
	}
	if (status != 0) {
		e->checking = 0; /* loss: the reconnect re-checks */
		return;
	}
	if (e->known_session != eb__zk_session_id(e->zk)) {
		/* A new session dropped every watch behind what we knew. */
		known_prune(e, 1);
		e->known_session = eb__zk_session_id(e->zk);
	}
	own = eb__registry_member_seq(e->reg);
	cands_free(e);
	e->cands = eb__calloc(count + 1, sizeof(*e->cands));
	for (i = 0; i < count; i++) {
		el_known *k = known_find(e, names[i]);

		if (k != NULL) {
			k->seen = 1;
		}
		if (eb__member_parse_name(names[i], &seq, NULL) != 0) {
			continue; /* foreign names never count */
		}
		own_found |= strcmp(names[i], e->member_name) == 0;
		if (seq < own) {
			e->cands[e->ncands].name = eb__strdup(names[i]);
			e->cands[e->ncands].seq = seq;
			e->ncands++;
		}
	}
	known_prune(e, 0);
	if (!own_found) {
		/* The registry's watch on our member re-registers us. */
		EB_LOG_WARN("election", "own-member-missing: member=%s",
		    e->member_name);
		revoke(e, "member-gone");
		e->checking = 0;
		return;
	}
	qsort(e->cands, e->ncands, sizeof(*e->cands), cand_cmp);
	e->window = 1; /* normally the nearest lower member is the one */
	el_walk(e);
}

static void
el_check(eb_election *e, const char *trigger)
{
	el_req *q;

	if (e->closing || e->stopped || !e->started || e->zk == NULL ||
	    !e->eligible || e->member_path == NULL ||
	    eb__zk_get_state(e->zk) != EB_ZK_STATE_CONNECTED) {
		return;
	}
	if (lease_plan(e) != 0) {
		return; /* no safe lease with this session: never lead */
	}
	if (e->checking) {
		e->again = 1;
		return;
	}
	e->checking = 1;
	e->checks++;
	EB_LOG_INFO(
	    "election", "check: trigger=%s member=%s", trigger, e->member_name);
	q = req_new(e, NULL);
	if (eb__zk_get_children(e->zk, eb__registry_members_path(e->reg), NULL,
	        NULL, list_cb, q) != 0) {
		free(q);
		e->checking = 0;
	}
}

/* ---- plumbing ---- */

static void
set_member(eb_election *e)
{
	const char *name = eb__registry_member_name(e->reg);
	const char *path = eb__registry_member_path(e->reg);

	free(e->member_name);
	free(e->member_path);
	e->member_name = name != NULL ? eb__strdup(name) : NULL;
	e->member_path = path != NULL ? eb__strdup(path) : NULL;
	e->member_czxid = eb__registry_member_czxid(e->reg);
}

void
eb__election_registry_event(eb_election *e, eb__registry_event ev)
{
	if (e->closing || e->zk == NULL) {
		return;
	}
	e->gen++;
	e->checking = 0;
	e->again = 0;
	e->fetching = 0;
	if (ev == EB_REGISTRY_REGISTERED) {
		int same = e->member_name != NULL &&
		           eb__registry_member_name(e->reg) != NULL &&
		           strcmp(e->member_name,
		               eb__registry_member_name(e->reg)) == 0;

		if (!same) {
			revoke(e, "member-gone");
		}
		set_member(e);
		el_check(e, "registered");
		return;
	}
	revoke(e, ev == EB_REGISTRY_LOST ? "zk-expired" : "member-gone");
	free(e->member_name);
	free(e->member_path);
	e->member_name = NULL;
	e->member_path = NULL;
}

void
eb__election_session_event(eb_election *e, eb__zk_event ev)
{
	if (e->closing || e->zk == NULL) {
		return;
	}
	switch (ev) {
	case EB_ZK_EV_SUSPENDED:
		/* Rule 5: stop leader work at once, before the server can
		 * expire the session and elect someone else. */
		revoke(e, "zk-suspended");
		break;
	case EB_ZK_EV_RECONNECTED:
		e->gen++;
		e->checking = 0;
		e->again = 0;
		(void) lease_plan(e); /* the server may negotiate anew */
		el_check(e, "reconnected");
		break;
	case EB_ZK_EV_EXPIRED:
	case EB_ZK_EV_AUTH_FAILED:
		e->gen++;
		revoke(e, "zk-expired");
		e->renewed_ms = 0; /* nothing of that session counts */
		break;
	case EB_ZK_EV_CONNECTED:
		/* A new session: plan its lease now (the owner may stop the
		 * node on an unsafe one); the registry re-registers and then
		 * tells us. */
		e->renewed_ms = 0;
		(void) lease_plan(e);
		break;
	}
}

void
eb__election_set_identity(
    eb_election *e, const char *node_id, const char *address)
{
	free(e->node_id);
	free(e->address);
	e->node_id = eb__strdup(node_id != NULL ? node_id : "");
	e->address = eb__strdup(address != NULL ? address : "");
}

void
eb_election_opts_init(eb_election_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->eligible = 1;
}

int
eb__election_new(uv_loop_t *loop, eb__zk *zk, eb__registry *reg,
    const eb_election_opts *opts, eb_election_elected_cb elected,
    eb_election_revoked_cb revoked, void *arg, eb_election **ep)
{
	eb_election     *e;
	eb_election_opts defaults;

	if (loop == NULL || (zk == NULL) != (reg == NULL)) {
		return UV_EINVAL;
	}
	if (opts == NULL) {
		eb_election_opts_init(&defaults);
		opts = &defaults;
	}
	e = eb__calloc(1, sizeof(*e));
	e->loop = loop;
	e->zk = zk;
	e->reg = reg;
	e->eligible = opts->eligible;
	e->elected_cb = elected;
	e->revoked_cb = revoked;
	e->arg = arg;
	/* Lease and heartbeat are planned from the negotiated session
	 * timeout when the session connects (lease_plan). */
	e->opt_lease_ms = opts->lease_ms;
	e->opt_heartbeat_ms = opts->heartbeat_ms;
	e->tick_ms = opts->zk_tick_ms;
	eb__hmap_init(&e->known);
	e->node_id = eb__strdup("");
	e->address = eb__strdup("");
	(void) uv_timer_init(loop, &e->heartbeat);
	(void) uv_timer_init(loop, &e->lease);
	(void) uv_timer_init(loop, &e->defer);
	e->heartbeat.data = e;
	e->lease.data = e;
	e->defer.data = e;
	e->open_handles = 3;
	e->id = e->zk != NULL ? eb__zk_live_add(e->zk, e) : 0;
	*ep = e;
	return 0;
}

static void
standalone_cb(uv_timer_t *t)
{
	eb_election *e = t->data;

	if (!e->stopped && !e->closing) {
		become_leader(e, 1, 0);
	}
}

int
eb__election_start(eb_election *e)
{
	EB_ASSERT(!e->closing); /* start after close */
	if (e->closing) {
		return EB_ECLOSED;
	}
	if (e->started) {
		return EB_EZKINVALIDSTATE;
	}
	e->started = 1;
	if (e->zk == NULL) {
		(void) uv_timer_start(&e->defer, standalone_cb, 0, 0);
		return 0;
	}
	if (eb__registry_is_registered(e->reg)) {
		set_member(e);
		el_check(e, "start");
	}
	return 0;
}

int
eb_election_is_leader(eb_election *e)
{
	if (!e->leader) {
		return 0;
	}
	if (!lease_valid(e)) {
		/* Revoke on a fresh turn: the caller is in the middle of
		 * leader work and must not see callbacks from here. */
		(void) uv_timer_start(&e->defer, lease_revoke_cb, 0, 0);
		return 0;
	}
	return 1;
}

int
eb__election_lease_error(const eb_election *e)
{
	return e->zk != NULL ? e->lease_err : 0;
}

uint32_t
eb__election_lease_ms(const eb_election *e)
{
	return e->lease_ms;
}

uint32_t
eb__election_heartbeat_ms(const eb_election *e)
{
	return e->heartbeat_ms;
}

int64_t
eb_election_epoch(const eb_election *e)
{
	return e->epoch;
}

unsigned
eb_election_checks(const eb_election *e)
{
	return e->checks;
}

int
eb_election_step_down(eb_election *e)
{
	int rv;

	if (!e->leader || e->closing || e->stopped) {
		return EB_ENOTLEADER;
	}
	revoke(e, "step-down");
	if (e->zk == NULL) {
		/* Standalone: nobody else can lead; take it back later. */
		(void) uv_timer_start(&e->defer, standalone_cb, 0, 0);
		return 0;
	}
	e->gen++;
	e->checking = 0;
	rv = eb__registry_rejoin(e->reg);
	if (rv != 0) {
		EB_LOG_WARN(
		    "election", "rejoin-failed: err=%s", eb_err_name(rv));
		el_check(e, "rejoin-failed");
	}
	return 0;
}

void
eb_election_stop(eb_election *e)
{
	if (e->stopped) {
		return;
	}
	revoke(e, "shutdown");
	e->stopped = 1;
	e->gen++;
	(void) uv_timer_stop(&e->heartbeat);
	(void) uv_timer_stop(&e->lease);
	(void) uv_timer_stop(&e->defer);
}

static void
election_closed_cb(uv_handle_t *h)
{
	eb_election *e = h->data;

	if (--e->open_handles > 0) {
		return;
	}
	if (e->close_cb != NULL) {
		e->close_cb(e, e->close_arg);
	}
	free(e->member_name);
	free(e->member_path);
	free(e->pred_path);
	free(e->node_id);
	free(e->address);
	known_prune(e, 1);
	eb__hmap_free(&e->known);
	cands_free(e);
	free(e);
}

void
eb_election_close(eb_election *e, eb_election_close_cb cb, void *arg)
{
	EB_ASSERT(!e->closing); /* close is exactly once */
	e->closing = 1;
	e->stopped = 1;
	e->close_cb = cb;
	e->close_arg = arg;
	if (e->zk != NULL) {
		eb__zk_live_del(e->zk, e->id);
	}
	uv_close((uv_handle_t *) &e->heartbeat, election_closed_cb);
	uv_close((uv_handle_t *) &e->lease, election_closed_cb);
	uv_close((uv_handle_t *) &e->defer, election_closed_cb);
}
