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
 * Eligibility of a member is read once from its data (it never changes for
 * a member name) and kept in a small name -> eligible table.
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

#include "cluster/member.h"
#include "cluster/registry.h"
#include "cluster/zk.h"
#include "common/alloc.h"
#include "common/util.h"
#include "election/election_int.h"

#define EL_MAX_KNOWN 256

typedef struct el_known {
	char name[64];
	int  eligible;
	int  seen;
} el_known;

struct eb_election {
	uv_loop_t             *loop; /* borrowed */
	eb_zk                 *zk;   /* borrowed, NULL: standalone */
	eb_registry           *reg;  /* borrowed, NULL: standalone */
	uv_timer_t             heartbeat;
	uv_timer_t             lease;
	uv_timer_t             defer; /* standalone elect, lease revoke */
	int                    open_handles;
	uint64_t               id;
	uint64_t               gen;
	int                    eligible;
	uint32_t               lease_ms;
	uint32_t               heartbeat_ms;
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
	el_known              *known;     /* owned array */
	size_t                 nknown;
	int                    fetching;
	eb_election_elected_cb elected_cb;
	eb_election_revoked_cb revoked_cb;
	void                  *arg;
	eb_election_close_cb   close_cb;
	void                  *close_arg;
};

typedef struct el_req {
	uint64_t id;
	uint64_t gen;
	char     name[64];
} el_req;

static void el_check(eb_election *e, const char *trigger);

static el_req *
req_new(eb_election *e, const char *name)
{
	el_req *q = eb__calloc(1, sizeof(*q));

	q->id = e->id;
	q->gen = e->gen;
	if (name != NULL) {
		(void) snprintf(q->name, sizeof(q->name), "%s", name);
	}
	return q;
}

static eb_election *
req_election(const el_req *q)
{
	eb_election *e = eb__live_get(q->id);

	if (e == NULL || e->closing || e->stopped || e->gen != q->gen) {
		return NULL;
	}
	return e;
}

static uint32_t
session_timeout(const eb_election *e)
{
	return e->zk != NULL ? eb_zk_session_timeout_ms(e->zk) : 10000u;
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

static void
become_leader(eb_election *e, int64_t epoch)
{
	if (e->leader) {
		return;
	}
	e->leader = 1;
	e->epoch = epoch;
	EB_LOG_NOTICE("election", "elected: epoch=%lld node=%s member=%s",
	    (long long) epoch, e->node_id,
	    e->member_name != NULL ? e->member_name : "-");
	if (e->zk != NULL) {
		lease_arm(e);
		(void) uv_timer_start(&e->heartbeat, heartbeat_cb,
		    e->heartbeat_ms, e->heartbeat_ms);
	}
	if (e->elected_cb != NULL && !e->closing) {
		e->elected_cb(e, epoch, e->arg);
	}
}

/* ---- the lease (rule 5) ---- */

static int
lease_valid(const eb_election *e)
{
	uint64_t last;

	if (e->zk == NULL) {
		return 1;
	}
	if (eb_zk_get_state(e->zk) != EB_ZK_STATE_CONNECTED) {
		return 0;
	}
	last = eb_zk_last_ok_send_ms(e->zk);
	return last != 0 && eb__mono_ms() - last < e->lease_ms;
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
	uint64_t last = eb_zk_last_ok_send_ms(e->zk);
	uint64_t now = eb__mono_ms();
	uint64_t due = last + e->lease_ms;

	(void) uv_timer_start(
	    &e->lease, lease_timer_cb, due > now ? due - now + 1 : 1, 0);
}

static void
heartbeat_stat_cb(eb_zk *zk, int status, const eb_zk_stat *st, void *arg)
{
	el_req      *q = arg;
	eb_election *e = req_election(q);

	(void) zk;
	free(q);
	if (e == NULL || !e->leader) {
		return;
	}
	if (status == EB_EZKNONODE ||
	    (status == 0 && st->ephemeral_owner != eb_zk_session_id(e->zk))) {
		revoke(e, "member-gone");
		return;
	}
	if (status == 0) {
		lease_arm(e);
	}
}

static void
heartbeat_cb(uv_timer_t *t)
{
	eb_election *e = t->data;
	el_req      *q;

	if (!e->leader || e->member_path == NULL) {
		return;
	}
	q = req_new(e, NULL);
	if (eb_zk_exists(
	        e->zk, e->member_path, NULL, NULL, heartbeat_stat_cb, q) != 0) {
		free(q);
	}
}

/* ---- recording <root>/leader, then elected ---- */

static int write_leader(eb_election *e, int create);

static void
leader_multi_cb(
    eb_zk *zk, int status, const eb_zk_op_result *res, size_t count, void *arg)
{
	el_req      *q = arg;
	eb_election *e = req_election(q);
	int          create = q->name[0] == 'c';

	(void) zk;
	free(q);
	if (e == NULL) {
		return;
	}
	e->checking = 0;
	if (status == 0) {
		become_leader(e, e->member_czxid);
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
	char     path[1024];
	char    *data;
	json_t  *o;
	eb_zk_op ops[2];
	el_req  *q;
	int      rv;

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
	rv = eb_zk_multi(e->zk, ops, 2, leader_multi_cb, q);
	free(data);
	if (rv != 0) {
		free(q);
	}
	return rv;
}

static void
verify_cb(eb_zk *zk, int status, const eb_zk_stat *st, void *arg)
{
	el_req      *q = arg;
	eb_election *e = req_election(q);

	(void) zk;
	free(q);
	if (e == NULL) {
		return;
	}
	if (status == 0 && st->ephemeral_owner == eb_zk_session_id(e->zk)) {
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
pred_watch_cb(eb_zk *zk, eb_zk_watch_type type, const char *path, void *arg)
{
	eb_election *e = eb__live_get(eb__live_id(arg));

	(void) zk;
	if (e == NULL || e->closing || e->stopped || e->pred_path == NULL ||
	    path == NULL || strcmp(path, e->pred_path) != 0) {
		return; /* a watch on an old predecessor */
	}
	if (type == EB_ZK_WATCH_DELETED || type == EB_ZK_WATCH_NOT_WATCHING) {
		EB_LOG_INFO("election", "predecessor-deleted: pred=%s", path);
		el_check(e, "predecessor-deleted");
	}
}

static void
pred_exists_cb(eb_zk *zk, int status, const eb_zk_stat *st, void *arg)
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

/* ---- eligibility of lower members ---- */

static el_known *
known_find(eb_election *e, const char *name)
{
	size_t i;

	for (i = 0; i < e->nknown; i++) {
		if (strcmp(e->known[i].name, name) == 0) {
			return &e->known[i];
		}
	}
	return NULL;
}

static void
known_add(eb_election *e, const char *name, int eligible)
{
	el_known *k = known_find(e, name);

	if (k == NULL) {
		if (e->nknown == EL_MAX_KNOWN) {
			e->nknown = 0; /* cheap reset; it refills on demand */
		}
		k = &e->known[e->nknown++];
		(void) snprintf(k->name, sizeof(k->name), "%s", name);
	}
	k->eligible = eligible;
}

static void
known_prune(eb_election *e)
{
	size_t i = 0;

	while (i < e->nknown) {
		if (!e->known[i].seen) {
			e->known[i] = e->known[--e->nknown];
		} else {
			e->known[i].seen = 0;
			i++;
		}
	}
}

static void
fetch_cb(eb_zk *zk, int status, const char *data, size_t len,
    const eb_zk_stat *st, void *arg)
{
	el_req      *q = arg;
	eb_election *e = req_election(q);
	eb_member    m;

	(void) zk;
	if (e == NULL) {
		free(q);
		return;
	}
	if (status == 0 && eb__member_init(&m, q->name, data, len, st->czxid,
	                       st->ephemeral_owner, st->version) == 0) {
		known_add(e, q->name, m.eligible);
		eb__member_free(&m);
	} else if (status == EB_EZKNONODE) {
		known_add(e, q->name, 0); /* gone: cannot lead */
	}
	free(q);
	if (--e->fetching == 0) {
		e->checking = 0;
		el_check(e, "eligibility");
	}
}

/* ---- the check ---- */

typedef struct el_cand {
	const char *name;
	int64_t     seq;
} el_cand;

/* Finds the nearest lower eligible member. Returns 1 with *pred (NULL:
 * none, we are lowest), or 0 when eligibility of some lower member is
 * unknown (fetches were issued). */
static int
find_pred(
    eb_election *e, const el_cand *c, size_t n, int64_t own, const char **pred)
{
	const char *best = NULL;
	int64_t     best_seq = -1;
	size_t      i;
	el_req     *q;
	char        path[1024];

	e->fetching = 0;
	for (i = 0; i < n; i++) {
		el_known *k;

		if (c[i].seq >= own) {
			continue;
		}
		k = known_find(e, c[i].name);
		if (k == NULL) {
			(void) snprintf(path, sizeof(path), "%s/%s",
			    eb__registry_members_path(e->reg), c[i].name);
			q = req_new(e, c[i].name);
			if (eb_zk_get(e->zk, path, NULL, NULL, fetch_cb, q) ==
			    0) {
				e->fetching++;
			} else {
				free(q);
			}
			continue;
		}
		if (k->eligible && c[i].seq > best_seq) {
			best = c[i].name;
			best_seq = c[i].seq;
		}
	}
	*pred = best;
	return e->fetching == 0;
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
		if (eb_zk_exists(
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
	if (eb_zk_exists(e->zk, path, pred_watch_cb, eb__live_arg(e->id),
	        pred_exists_cb, q) != 0) {
		free(q);
		e->checking = 0;
	}
}

static void
list_cb(
    eb_zk *zk, int status, const char *const *names, size_t count, void *arg)
{
	el_req      *q = arg;
	eb_election *e = req_election(q);
	el_cand     *c;
	size_t       n = 0;
	size_t       i;
	int          own_found = 0;
	const char  *pred = NULL;

	(void) zk;
	free(q);
	if (e == NULL) {
		return;
	}
	if (status != 0) {
		e->checking = 0; /* loss: the reconnect re-checks */
		return;
	}
	c = eb__calloc(count + 1, sizeof(*c));
	for (i = 0; i < count; i++) {
		el_known *k;

		if (eb__member_parse_name(names[i], &c[n].seq, NULL) != 0) {
			continue;
		}
		c[n].name = names[i];
		own_found |= strcmp(names[i], e->member_name) == 0;
		k = known_find(e, names[i]);
		if (k != NULL) {
			k->seen = 1;
		}
		n++;
	}
	known_prune(e);
	if (!own_found) {
		EB_LOG_WARN("election", "own-member-missing: member=%s",
		    e->member_name);
		revoke(e, "member-gone");
		e->checking = 0;
		free(c);
		return;
	}
	if (find_pred(e, c, n, eb__registry_member_seq(e->reg), &pred)) {
		decide(e, pred);
	}
	/* else: the eligibility fetches re-run the check */
	free(c);
}

static void
el_check(eb_election *e, const char *trigger)
{
	el_req *q;

	if (e->closing || e->stopped || !e->started || e->zk == NULL ||
	    !e->eligible || e->member_path == NULL ||
	    eb_zk_get_state(e->zk) != EB_ZK_STATE_CONNECTED) {
		return;
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
	if (eb_zk_get_children(e->zk, eb__registry_members_path(e->reg), NULL,
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
eb__election_registry_event(eb_election *e, eb_registry_event ev)
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
eb__election_session_event(eb_election *e, eb_zk_event ev)
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
		el_check(e, "reconnected");
		break;
	case EB_ZK_EV_EXPIRED:
	case EB_ZK_EV_AUTH_FAILED:
		e->gen++;
		revoke(e, "zk-expired");
		break;
	case EB_ZK_EV_CONNECTED:
		/* The registry re-registers and then tells us. */
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
eb__election_new(uv_loop_t *loop, eb_zk *zk, eb_registry *reg,
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
	e->lease_ms =
	    opts->lease_ms != 0 ? opts->lease_ms : session_timeout(e) / 2;
	e->heartbeat_ms = opts->heartbeat_ms != 0 ? opts->heartbeat_ms
	                                          : session_timeout(e) / 4;
	e->known = eb__calloc(EL_MAX_KNOWN, sizeof(*e->known));
	e->node_id = eb__strdup("");
	e->address = eb__strdup("");
	(void) uv_timer_init(loop, &e->heartbeat);
	(void) uv_timer_init(loop, &e->lease);
	(void) uv_timer_init(loop, &e->defer);
	e->heartbeat.data = e;
	e->lease.data = e;
	e->defer.data = e;
	e->open_handles = 3;
	e->id = eb__live_add(e);
	*ep = e;
	return 0;
}

static void
standalone_cb(uv_timer_t *t)
{
	eb_election *e = t->data;

	if (!e->stopped && !e->closing) {
		become_leader(e, 1);
	}
}

int
eb__election_start(eb_election *e)
{
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
	free(e->known);
	free(e);
}

void
eb_election_close(eb_election *e, eb_election_close_cb cb, void *arg)
{
	e->closing = 1;
	e->stopped = 1;
	e->close_cb = cb;
	e->close_arg = arg;
	eb__live_del(e->id);
	uv_close((uv_handle_t *) &e->heartbeat, election_closed_cb);
	uv_close((uv_handle_t *) &e->lease, election_closed_cb);
	uv_close((uv_handle_t *) &e->defer, election_closed_cb);
}
