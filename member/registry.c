/*
 * Membership (see registry.h): the registration state machine.
 *
 *   IDLE --start/connected--> ENSURE (parents) --> CREATING (multi)
 *   CREATING --ok--> STAT (czxid of the member) --> REGISTERED
 *   CREATING --claim exists--> CLAIM (read the holder) --> FAILED (dup)
 *                                                     \-> STALE (wait) ->
 * CREATING CREATING --connection loss--> AMBIGUOUS --reconnected--> RESOLVE
 *   RESOLVE --our claim--> ADOPT (find member by uuid) --> STAT
 *   RESOLVE --no claim--> CREATING (new attempt)
 *   REGISTERED --rejoin--> REJOINING (multi) --> STAT
 *   any --expired--> LOST --connected--> ENSURE
 *   REGISTERED --leave--> LEAVING (multi) --> LEFT
 *
 * Every completion carries a req {live id, generation}: a completion from
 * before a session change (generation bump) or after close finds nothing
 * and is dropped.
 */
#include "member/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/util.h"
#include "member/member.h"

#define REG_MAX_RETRIES   8
#define REG_DUP_MARGIN_MS 1000u

typedef enum reg_state {
	R_IDLE = 0,
	R_ENSURE,
	R_CREATING,
	R_CLAIM,
	R_STALE,
	R_AMBIGUOUS,
	R_RESOLVE,
	R_ADOPT,
	R_STAT,
	R_REGISTERED,
	R_REJOINING,
	R_LOST,
	R_LEAVING,
	R_LEFT,
	R_FAILED,
	R_RECLAIM /* our member was deleted/overwritten: re-registering */
} reg_state;

struct eb__registry {
	uv_loop_t            *loop; /* borrowed */
	eb__zk               *zk;   /* borrowed */
	uv_timer_t            timer;
	uint64_t              id;
	uint64_t              gen;
	reg_state             state;
	int                   started;
	int                   closing;
	int                   retries;
	int                   ambiguous_rejoin;
	int                   reregistering; /* member lost; until REGISTERED */
	eb__registry_cb       cb;
	void                 *arg;
	eb__registry_close_cb close_cb;
	void                 *close_arg;
	/* owned copies of the options */
	char    *root;
	char    *address;
	char    *node_id;
	char    *host;
	char    *version;
	int      link_min, link_max;
	int      cluster_port;
	int      bridge_port;
	int      admin_port;
	int      eligible;
	uint32_t dup_wait_ms;
	char    *members_path; /* <root>/members */
	char    *claim_path;   /* <root>/addresses/<enc> */
	char     attempt[EB_UUID_STRLEN + 1];
	char     old_attempt[EB_UUID_STRLEN + 1];
	char    *member_name; /* owned, NULL unless known */
	char    *member_path; /* owned */
	char    *dead_member; /* owned: our overwritten member, to delete */
	int64_t  member_seq;
	int64_t  member_czxid;
	uint64_t stale_deadline; /* mono ms; 0: not waiting */
	char     holder[192];
	uint64_t started_ms;
};

typedef struct reg_req {
	eb__zk  *zk; /* borrowed: the session of the live id */
	uint64_t id;
	uint64_t gen;
} reg_req;

static void reg_begin(eb__registry *r);
static void reg_create(eb__registry *r);
static void reg_fail(eb__registry *r, int status);

static const char *
state_name(reg_state s)
{
	static const char *const names[] = { "idle", "ensure", "creating",
		"claim", "stale", "ambiguous", "resolve", "adopt", "stat",
		"registered", "rejoining", "lost", "leaving", "left", "failed",
		"reclaim" };

	return (unsigned) s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

static reg_req *
req_new(eb__registry *r)
{
	reg_req *q = eb__malloc(sizeof(*q));

	q->zk = r->zk;
	q->id = r->id;
	q->gen = r->gen;
	return q;
}

/* The registry a completion belongs to, or NULL when stale; frees q. */
static eb__registry *
req_take(void *arg)
{
	reg_req      *q = arg;
	eb__registry *r = eb__zk_live_get(q->zk, q->id);

	if (r != NULL && (r->closing || r->gen != q->gen)) {
		r = NULL;
	}
	free(q);
	return r;
}

static void
emit(eb__registry *r, eb__registry_event ev, int status)
{
	if (!r->closing && r->cb != NULL) {
		r->cb(r, ev, status, r->arg);
	}
}

static void
clear_member(eb__registry *r)
{
	free(r->member_name);
	free(r->member_path);
	r->member_name = NULL;
	r->member_path = NULL;
	r->member_seq = 0;
	r->member_czxid = 0;
}

static int
is_loss(int status)
{
	return status == EB_EZKLOSS || status == EB_EZKOPTIMEOUT ||
	       status == EB_EZKNOTHING;
}

/* Statuses that mean "the session machinery will drive us": nothing to do
 * here (expiry, close). */
static int
is_session_gone(int status)
{
	return status == EB_EZKEXPIRED || status == EB_ECANCELED ||
	       status == EB_ECLOSED || status == EB_EZKINVALIDSTATE ||
	       status == EB_EZKCLOSING;
}

static char *
member_json(eb__registry *r)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:s, s:I, s:b}",
	    "address", r->address, "node_id", r->node_id, "host", r->host,
	    "cluster_port", r->cluster_port, "bridge_port", r->bridge_port,
	    "admin_port", r->admin_port, "version", r->version, "started_ms",
	    (json_int_t) r->started_ms, "eligible", r->eligible);
	char   *s;

	/* Extra keys: releases before versioned links ignore them. */
	if (r->link_min > 0 && r->link_max >= r->link_min &&
	    r->link_max <= 65535) {
		(void) json_object_set_new(
		    o, "link_min", json_integer(r->link_min));
		(void) json_object_set_new(
		    o, "link_max", json_integer(r->link_max));
	}
	s = json_dumps(o, JSON_COMPACT);

	json_decref(o);
	return s;
}

static char *
claim_json(eb__registry *r)
{
	json_t *o = json_pack(
	    "{s:s, s:s}", "attempt", r->attempt, "node_id", r->node_id);
	char *s = json_dumps(o, JSON_COMPACT);

	json_decref(o);
	return s;
}

/* Retries a step later (transient error): every 200 ms, bounded. */
static void
retry_cb(uv_timer_t *t)
{
	eb__registry *r = t->data;

	if (r->state == R_STALE) {
		r->gen++;
		reg_fail(r, EB_EDUPADDR);
		return;
	}
	reg_begin(r);
}

static void
retry_later(eb__registry *r, int status)
{
	if (++r->retries > REG_MAX_RETRIES) {
		reg_fail(r, status);
		return;
	}
	EB_LOG_WARN("registry", "retry: state=%s err=%s attempt=%d",
	    state_name(r->state), eb_err_name(status), r->retries);
	r->state = R_IDLE;
	(void) uv_timer_start(&r->timer, retry_cb, 200, 0);
}

static void
reg_fail(eb__registry *r, int status)
{
	r->state = R_FAILED;
	(void) uv_timer_stop(&r->timer);
	if (status == EB_EDUPADDR) {
		EB_LOG_ERR("registry",
		    "duplicate-address: address=%s holder: %s", r->address,
		    r->holder);
	} else {
		EB_LOG_ERR("registry", "failed: address=%s err=%s", r->address,
		    eb_err_name(status));
	}
	emit(r, EB_REGISTRY_FAILED, status);
}

/* Arrives in AMBIGUOUS (or a paused step) after a connection loss: wait
 * for the reconnect unless it already happened. */
static void
on_loss(eb__registry *r, reg_state resume)
{
	r->state = resume;
	if (eb__zk_get_state(r->zk) == EB_ZK_STATE_CONNECTED) {
		eb__registry_session_event(r, EB_ZK_EV_RECONNECTED);
	}
}

/* A failed step: after a connection loss wait in resume for the reconnect
 * (the step may have been applied: never retry blindly, rule 2); without a
 * session do nothing (the session event decides); else retry, bounded. */
static void
step_failed(eb__registry *r, int status, reg_state resume)
{
	if (is_loss(status)) {
		on_loss(r, resume);
	} else if (!is_session_gone(status)) {
		retry_later(r, status);
	}
}

/* ---- registered: read the member (czxid, owner, data) and watch it ---- */

static void
registered(eb__registry *r)
{
	r->state = R_REGISTERED;
	r->retries = 0;
	r->reregistering = 0;
	EB_LOG_NOTICE("registry",
	    "registered: member=%s seq=%lld czxid=%lld session=0x%llx "
	    "address=%s",
	    r->member_name, (long long) r->member_seq,
	    (long long) r->member_czxid,
	    (unsigned long long) eb__zk_session_id(r->zk), r->address);
	emit(r, EB_REGISTRY_REGISTERED, 0);
}

static void reclaim(eb__registry *r);
static void do_stat(eb__registry *r);

/*
 * Our member was deleted or overwritten by someone else (the watch armed
 * by the read in do_stat, or that read itself). Leadership must end at
 * once (REREGISTERING: the election revokes), and the node must not stay
 * invisible: re-register with a new member, keeping the address claim if
 * it is still ours. An overwritten member is still ours (our session owns
 * it) and may name another node: it is deleted first so that nobody takes
 * it for a member.
 */
static void
member_lost(eb__registry *r, int overwritten)
{
	EB_LOG_WARN("registry", "member-%s: member=%s address=%s",
	    overwritten ? "overwritten" : "deleted", r->member_name,
	    r->address);
	free(r->dead_member);
	r->dead_member = overwritten ? eb__strdup(r->member_path) : NULL;
	clear_member(r);
	r->gen++; /* whatever is in flight no longer counts */
	r->state = R_RECLAIM;
	r->reregistering = 1;
	emit(r, EB_REGISTRY_REREGISTERING, 0);
	if (!r->closing && r->state == R_RECLAIM) {
		reclaim(r);
	}
}

static void
member_watch_cb(eb__zk *zk, eb__zk_watch_type type, const char *path, void *arg)
{
	eb__registry *r = eb__zk_live_get(zk, eb__zk_live_id(arg));

	(void) zk;
	/* Only the current member of a settled registration: our own rejoin
	 * and leave delete members too, and old members' watches fire late
	 * (they name another path then). */
	if (r == NULL || r->closing || r->state != R_REGISTERED ||
	    path == NULL || r->member_path == NULL ||
	    strcmp(path, r->member_path) != 0) {
		return;
	}
	if (type == EB_ZK_WATCH_DELETED) {
		member_lost(r, 0);
	} else if (type == EB_ZK_WATCH_CHANGED) {
		member_lost(r, 1);
	} else if (type == EB_ZK_WATCH_NOT_WATCHING) {
		do_stat(r); /* re-arm; the read re-verifies */
	}
}

/* 1 when data is exactly the record this registry writes. */
static int
member_data_ours(eb__registry *r, const char *data, size_t len)
{
	char *mine = member_json(r);
	int   same = strlen(mine) == len && memcmp(mine, data, len) == 0;

	free(mine);
	return same;
}

static void
stat_cb(eb__zk *zk, int status, const char *data, size_t len,
    const eb__zk_stat *st, void *arg)
{
	eb__registry *r = req_take(arg);

	(void) zk;
	if (r == NULL) {
		return;
	}
	if (status == 0 && st->ephemeral_owner == eb__zk_session_id(r->zk)) {
		if (!member_data_ours(r, data, len)) {
			/* Overwritten before our watch was armed. */
			member_lost(r, 1);
			return;
		}
		r->member_czxid = st->czxid;
		registered(r);
		return;
	}
	if (is_loss(status)) {
		on_loss(r, R_AMBIGUOUS);
		return;
	}
	if (is_session_gone(status)) {
		return;
	}
	/* Gone or not ours: register again from scratch. */
	EB_LOG_WARN("registry", "member-vanished: member=%s err=%s",
	    r->member_name, eb_err_name(status));
	clear_member(r);
	retry_later(r, status != 0 ? status : EB_EZKRUNTIME);
}

static void
set_member(eb__registry *r, const char *name)
{
	char   path[1024];
	size_t n;

	clear_member(r);
	n = strlen(name);
	if (strrchr(name, '/') != NULL) {
		name = strrchr(name, '/') + 1;
		n = strlen(name);
	}
	r->member_name = eb__strndup(name, n);
	(void) snprintf(
	    path, sizeof(path), "%s/%s", r->members_path, r->member_name);
	r->member_path = eb__strdup(path);
	if (eb__member_parse_name(r->member_name, &r->member_seq, NULL) != 0) {
		r->member_seq = -1;
	}
}

static void
do_stat(eb__registry *r)
{
	reg_req *q = req_new(r);
	int      rv;

	r->state = R_STAT;
	rv = eb__zk_get(r->zk, r->member_path, member_watch_cb,
	    eb__zk_live_arg(r->id), stat_cb, q);
	if (rv != 0) {
		free(q);
		retry_later(r, rv);
	}
}

/* ---- creating: the one multi ---- */

static void create_cb(eb__zk *zk, int status, const eb__zk_op_result *res,
    size_t count, void *arg);

static void claim_read(eb__registry *r);

/*
 * The one multi that makes a member: the claim (created, or, when
 * claim_version >= 0, the claim we still own pointed at the new attempt,
 * guarded by its version) and the member under a new attempt id; cb gets
 * the result.
 */
static void
claim_and_member(eb__registry *r, int32_t claim_version, eb__zk_multi_cb cb)
{
	char      member_prefix[1024];
	char     *member;
	char     *claim;
	eb__zk_op ops[2];
	reg_req  *q;
	int       rv;

	if (eb__uuid(r->attempt) != 0) {
		reg_fail(r, UV_EIO);
		return;
	}
	(void) snprintf(member_prefix, sizeof(member_prefix), "%s/m-%s-",
	    r->members_path, r->attempt);
	member = member_json(r);
	claim = claim_json(r);
	memset(ops, 0, sizeof(ops));
	ops[0].path = r->claim_path;
	ops[0].data = claim;
	ops[0].len = strlen(claim);
	if (claim_version >= 0) {
		ops[0].type = EB_ZK_OP_SET;
		ops[0].version = claim_version;
	} else {
		ops[0].type = EB_ZK_OP_CREATE;
		ops[0].flags = EB_ZK_EPHEMERAL;
	}
	ops[1].type = EB_ZK_OP_CREATE;
	ops[1].path = member_prefix;
	ops[1].data = member;
	ops[1].len = strlen(member);
	ops[1].flags = EB_ZK_EPHEMERAL | EB_ZK_SEQUENTIAL;
	q = req_new(r);
	rv = eb__zk_multi(r->zk, ops, 2, cb, q);
	free(member);
	free(claim);
	if (rv != 0) {
		free(q);
		retry_later(r, rv);
	}
}

static void
reg_create(eb__registry *r)
{
	r->state = R_CREATING;
	claim_and_member(r, -1, create_cb);
}

/*
 * The common part of the create and the rejoin completions, which differ
 * only in data (the number of ops, the log word, the ambiguous-rejoin mark):
 * the member was made, the outcome is ambiguous (the multi may have been
 * applied: resolve, never retry blindly, rule 2), or the session is gone.
 * 1 when handled.
 */
static int
member_multi_done(eb__registry *r, int status, const eb__zk_op_result *res,
    size_t count, size_t nops, int rejoin)
{
	if (status == 0 && count == nops && res[1].path != NULL) {
		set_member(r, res[1].path);
		do_stat(r);
		return 1;
	}
	if (is_loss(status)) {
		EB_LOG_WARN("registry", "ambiguous-%s: attempt=%s err=%s",
		    rejoin ? "rejoin" : "create", r->attempt,
		    eb_err_name(status));
		if (rejoin) {
			r->ambiguous_rejoin = 1;
		}
		on_loss(r, R_AMBIGUOUS);
		return 1;
	}
	return is_session_gone(status);
}

static void
create_cb(eb__zk *zk, int status, const eb__zk_op_result *res, size_t count,
    void *arg)
{
	eb__registry *r = req_take(arg);

	(void) zk;
	if (r == NULL || member_multi_done(r, status, res, count, 2, 0)) {
		return;
	}
	if (status == EB_EZKNODEEXISTS && count >= 1 &&
	    res[0].status == EB_EZKNODEEXISTS) {
		claim_read(r);
		return;
	}
	if (status == EB_EZKNONODE) {
		/* A parent vanished (someone removed the root): again. */
		retry_later(r, status);
		return;
	}
	retry_later(r, status);
}

/* ---- the claim exists: ours (ambiguous), a stale one of ours, or a
 * duplicate ---- */

static void claim_data_cb(eb__zk *zk, int status, const char *data, size_t len,
    const eb__zk_stat *st, void *arg);

static void
claim_read(eb__registry *r)
{
	reg_req *q = req_new(r);
	int      rv;

	if (r->state != R_RESOLVE) {
		r->state = R_CLAIM;
	}
	rv = eb__zk_get(r->zk, r->claim_path, NULL, NULL, claim_data_cb, q);
	if (rv != 0) {
		free(q);
		retry_later(r, rv);
	}
}

static void adopt(eb__registry *r, const char *attempt);
static void stale_wait(eb__registry *r);

/* Arms the bounded wait for our previous session's claim (once per
 * registration: the deadline is cleared by a new session). */
static void
stale_arm(eb__registry *r)
{
	if (r->stale_deadline != 0) {
		return;
	}
	r->stale_deadline = eb__mono_ms() + r->dup_wait_ms;
	EB_LOG_NOTICE("registry", "stale-claim-wait: address=%s %s wait_ms=%u",
	    r->address, r->holder, r->dup_wait_ms);
}

static void
claim_decide(
    eb__registry *r, const char *attempt, const char *node_id, int64_t owner)
{
	char qn[96];
	char qa[56];

	/* node_id and attempt were read from ZooKeeper: quoted for logs. */
	(void) snprintf(r->holder, sizeof(r->holder),
	    "node_id=%s attempt=%s session=0x%llx",
	    eb_log_quote(qn, sizeof(qn), node_id),
	    eb_log_quote(qa, sizeof(qa), attempt), (unsigned long long) owner);
	if (owner == eb__zk_session_id(r->zk)) {
		/* Ours in this session: a multi that was applied although
		 * we saw a loss. Adopt whatever attempt it carries. */
		adopt(r, attempt);
		return;
	}
	if (strcmp(node_id, r->node_id) == 0) {
		/* Our node_id in another session: our previous process, whose
		 * session has not expired yet. Wait for it, bounded. */
		stale_arm(r);
		stale_wait(r);
		return;
	}
	reg_fail(r, EB_EDUPADDR);
}

static void
claim_data_cb(eb__zk *zk, int status, const char *data, size_t len,
    const eb__zk_stat *st, void *arg)
{
	eb__registry *r = req_take(arg);
	json_t       *o;
	const char   *attempt;
	const char   *node_id;

	(void) zk;
	if (r == NULL) {
		return;
	}
	if (status == EB_EZKNONODE) {
		/* Not applied (resolve), or the holder left meanwhile. */
		reg_create(r);
		return;
	}
	if (is_loss(status)) {
		on_loss(r, r->state == R_RESOLVE ? R_AMBIGUOUS : R_IDLE);
		return;
	}
	if (status != 0) {
		if (!is_session_gone(status)) {
			retry_later(r, status);
		}
		return;
	}
	o = json_loadb(data, len, 0, NULL);
	attempt = json_string_value(json_object_get(o, "attempt"));
	node_id = json_string_value(json_object_get(o, "node_id"));
	claim_decide(r, attempt != NULL ? attempt : "?",
	    node_id != NULL ? node_id : "?", st->ephemeral_owner);
	json_decref(o);
}

/* ---- waiting for our previous session's claim to go ---- */

static void
stale_watch_cb(eb__zk *zk, eb__zk_watch_type type, const char *path, void *arg)
{
	eb__registry *r = eb__zk_live_get(zk, eb__zk_live_id(arg));

	(void) zk;
	(void) path;
	if (r == NULL || r->closing || r->state != R_STALE ||
	    type != EB_ZK_WATCH_DELETED) {
		return;
	}
	EB_LOG_NOTICE("registry", "stale-claim-gone: address=%s", r->address);
	(void) uv_timer_stop(&r->timer);
	r->gen++; /* the exists completion of this wait no longer counts */
	reg_create(r);
}

static void
stale_exists_cb(eb__zk *zk, int status, const eb__zk_stat *st, void *arg)
{
	eb__registry *r = req_take(arg);

	(void) zk;
	(void) st;
	if (r == NULL || r->state != R_STALE) {
		return;
	}
	if (status == EB_EZKNONODE) {
		(void) uv_timer_stop(&r->timer);
		r->gen++;
		reg_create(r);
		return;
	}
	if (status != 0 && !is_session_gone(status) && !is_loss(status)) {
		retry_later(r, status);
	}
	/* status 0: the watch is armed; the deadline timer runs. */
}

static void
stale_wait(eb__registry *r)
{
	uint64_t now = eb__mono_ms();
	reg_req *q;
	int      rv;

	if (now >= r->stale_deadline) {
		reg_fail(r, EB_EDUPADDR);
		return;
	}
	r->state = R_STALE;
	(void) uv_timer_start(&r->timer, retry_cb, r->stale_deadline - now, 0);
	q = req_new(r);
	rv = eb__zk_exists(r->zk, r->claim_path, stale_watch_cb,
	    eb__zk_live_arg(r->id), stale_exists_cb, q);
	if (rv != 0) {
		free(q);
		retry_later(r, rv);
	}
}

/* ---- adopting our own member after an ambiguous create ---- */

typedef struct adopt_req {
	reg_req q;
	char    attempt[EB_UUID_STRLEN + 1];
} adopt_req;

static void
claim_deleted_cb(eb__zk *zk, int status, void *arg)
{
	eb__registry *r = req_take(arg);

	(void) zk;
	if (r == NULL) {
		return;
	}
	if (status == 0 || status == EB_EZKNONODE) {
		reg_create(r);
	} else if (!is_session_gone(status)) {
		retry_later(r, status);
	}
}

/* The index of the member name that carries attempt, or count if none. */
static size_t
adopt_find(const char *const *names, size_t count, const char *attempt)
{
	char    uuid[37];
	int64_t seq;
	size_t  i;

	for (i = 0; i < count; i++) {
		if (eb__member_parse_name(names[i], &seq, uuid) == 0 &&
		    strcmp(uuid, attempt) == 0) {
			return i;
		}
	}
	return count;
}

static void
adopt_children_cb(
    eb__zk *zk, int status, const char *const *names, size_t count, void *arg)
{
	adopt_req    *a = arg;
	char          attempt[EB_UUID_STRLEN + 1];
	eb__registry *r;
	reg_req      *q;
	size_t        i;

	memcpy(attempt, a->attempt, sizeof(attempt));
	r = req_take(eb__memdup(&a->q, sizeof(a->q)));
	free(a);
	(void) zk;
	if (r == NULL) {
		return;
	}
	if (status != 0) {
		step_failed(r, status, R_AMBIGUOUS);
		return;
	}
	i = adopt_find(names, count, attempt);
	if (i < count) {
		EB_LOG_NOTICE("registry", "adopted: member=%s attempt=%s",
		    names[i], attempt);
		memcpy(r->attempt, attempt, sizeof(r->attempt));
		set_member(r, names[i]);
		do_stat(r);
		return;
	}
	/* A claim without its member cannot come from one multi; drop it and
	 * register again rather than keep a half registration. */
	EB_LOG_WARN("registry", "orphan-claim: attempt=%s", attempt);
	q = req_new(r);
	if (eb__zk_delete(r->zk, r->claim_path, -1, claim_deleted_cb, q) != 0) {
		free(q);
		retry_later(r, EB_EZKRUNTIME);
	}
}

static void
adopt(eb__registry *r, const char *attempt)
{
	adopt_req *a = eb__calloc(1, sizeof(*a));
	int        rv;

	a->q.zk = r->zk;
	a->q.id = r->id;
	a->q.gen = r->gen;
	(void) snprintf(a->attempt, sizeof(a->attempt), "%s", attempt);
	r->state = R_ADOPT;
	rv = eb__zk_get_children(
	    r->zk, r->members_path, NULL, NULL, adopt_children_cb, a);
	if (rv != 0) {
		free(a);
		retry_later(r, rv);
	}
}

/* ---- ensure the parents, then create ---- */

static void
ensure_cb(eb__zk *zk, int status, void *arg)
{
	eb__registry *r = req_take(arg);
	char          path[1024];
	reg_req      *q;
	const char   *slash;

	(void) zk;
	if (r == NULL) {
		return;
	}
	if (status != 0) {
		step_failed(r, status, R_IDLE);
		return;
	}
	if (r->state == R_ENSURE) {
		/* members done; now the addresses parent */
		slash = strrchr(r->claim_path, '/');
		(void) snprintf(path, sizeof(path), "%.*s",
		    (int) (slash - r->claim_path), r->claim_path);
		r->state = R_CREATING; /* marks "second ensure" */
		q = req_new(r);
		if (eb__zk_ensure_path(r->zk, path, ensure_cb, q) != 0) {
			free(q);
			retry_later(r, EB_EZKINVALIDSTATE);
		}
		return;
	}
	reg_create(r);
}

static void
reg_begin(eb__registry *r)
{
	reg_req *q;
	int      rv;

	if (r->closing || r->state == R_FAILED || r->state == R_LEFT ||
	    r->state == R_LEAVING) {
		return;
	}
	if (eb__zk_get_state(r->zk) != EB_ZK_STATE_CONNECTED) {
		r->state = R_IDLE; /* the next CONNECTED/RECONNECTED resumes */
		return;
	}
	r->gen++;
	clear_member(r);
	r->state = R_ENSURE;
	q = req_new(r);
	rv = eb__zk_ensure_path(r->zk, r->members_path, ensure_cb, q);
	if (rv != 0) {
		free(q);
		retry_later(r, rv);
	}
}

/* ---- resolve after an ambiguous create or rejoin ---- */

static void
resolve(eb__registry *r)
{
	r->gen++;
	if (r->ambiguous_rejoin) {
		/* The rejoin multi deleted the old member, created the new
		 * one and rewrote the claim, or did nothing: the claim tells
		 * which attempt is current. */
		r->ambiguous_rejoin = 0;
	}
	r->state = R_RESOLVE;
	claim_read(r);
}

/* ---- re-registration after our member was deleted or overwritten ---- */

static void
reclaim_multi_cb(eb__zk *zk, int status, const eb__zk_op_result *res,
    size_t count, void *arg)
{
	eb__registry *r = req_take(arg);

	(void) zk;
	if (r == NULL) {
		return;
	}
	if (status == 0 && count == 2 && res[1].path != NULL) {
		set_member(r, res[1].path);
		do_stat(r);
		return;
	}
	if (is_loss(status)) {
		/* Applied or not: the claim's attempt tells (rule 2). */
		EB_LOG_WARN("registry", "ambiguous-create: attempt=%s err=%s",
		    r->attempt, eb_err_name(status));
		on_loss(r, R_AMBIGUOUS);
		return;
	}
	if (!is_session_gone(status)) {
		/* The claim changed under us: look again, bounded. */
		retry_later(r, status);
	}
}

static void
reclaim_claim_cb(eb__zk *zk, int status, const eb__zk_stat *st, void *arg)
{
	eb__registry *r = req_take(arg);

	(void) zk;
	if (r == NULL) {
		return;
	}
	if (status == 0 && st->ephemeral_owner == eb__zk_session_id(r->zk)) {
		/* Keep our claim: point it at a new attempt. */
		claim_and_member(r, st->version, reclaim_multi_cb);
	} else if (status == 0) {
		/* Taken by another session: the claim path decides (our
		 * previous process: wait; anyone else: fail loudly, rule
		 * 7). */
		claim_read(r);
	} else if (status == EB_EZKNONODE) {
		reg_create(r); /* claim and member anew, atomically */
	} else {
		step_failed(r, status, R_IDLE);
	}
}

static void
reclaim_check_claim(eb__registry *r)
{
	reg_req *q = req_new(r);

	if (eb__zk_exists(
	        r->zk, r->claim_path, NULL, NULL, reclaim_claim_cb, q) != 0) {
		free(q);
		retry_later(r, EB_EZKINVALIDSTATE);
	}
}

static void
dead_deleted_cb(eb__zk *zk, int status, void *arg)
{
	eb__registry *r = req_take(arg);

	(void) zk;
	if (r == NULL) {
		return;
	}
	if (status == 0 || status == EB_EZKNONODE) {
		free(r->dead_member);
		r->dead_member = NULL;
		reclaim_check_claim(r);
	} else {
		step_failed(r, status, R_IDLE); /* the reconnect starts over */
	}
}

static void
reclaim(eb__registry *r)
{
	reg_req *q;

	if (eb__zk_get_state(r->zk) != EB_ZK_STATE_CONNECTED) {
		r->state = R_IDLE; /* the reconnect registers again */
		return;
	}
	r->state = R_RECLAIM;
	if (r->dead_member == NULL) {
		reclaim_check_claim(r);
		return;
	}
	q = req_new(r);
	if (eb__zk_delete(r->zk, r->dead_member, -1, dead_deleted_cb, q) != 0) {
		free(q);
		retry_later(r, EB_EZKINVALIDSTATE);
	}
}

/* ---- rejoin (step to the back) ---- */

static void
rejoin_cb(eb__zk *zk, int status, const eb__zk_op_result *res, size_t count,
    void *arg)
{
	eb__registry *r = req_take(arg);

	(void) zk;
	if (r == NULL || member_multi_done(r, status, res, count, 3, 1)) {
		return;
	}
	/* Nothing applied: our old member may be gone; register again. */
	memcpy(r->attempt, r->old_attempt, sizeof(r->attempt));
	retry_later(r, status);
}

int
eb__registry_rejoin(eb__registry *r)
{
	char      member_prefix[1024];
	char     *member;
	char     *claim;
	eb__zk_op ops[3];
	reg_req  *q;
	int       rv;

	if (r->closing || r->state != R_REGISTERED) {
		return EB_EZKINVALIDSTATE;
	}
	memcpy(r->old_attempt, r->attempt, sizeof(r->old_attempt));
	rv = eb__uuid(r->attempt);
	if (rv != 0) {
		return rv;
	}
	(void) snprintf(member_prefix, sizeof(member_prefix), "%s/m-%s-",
	    r->members_path, r->attempt);
	member = member_json(r);
	claim = claim_json(r);
	memset(ops, 0, sizeof(ops));
	ops[0].type = EB_ZK_OP_DELETE;
	ops[0].path = r->member_path;
	ops[0].version = -1;
	ops[1].type = EB_ZK_OP_CREATE;
	ops[1].path = member_prefix;
	ops[1].data = member;
	ops[1].len = strlen(member);
	ops[1].flags = EB_ZK_EPHEMERAL | EB_ZK_SEQUENTIAL;
	ops[2].type = EB_ZK_OP_SET;
	ops[2].path = r->claim_path;
	ops[2].data = claim;
	ops[2].len = strlen(claim);
	ops[2].version = -1;
	q = req_new(r);
	rv = eb__zk_multi(r->zk, ops, 3, rejoin_cb, q);
	free(member);
	free(claim);
	if (rv != 0) {
		free(q);
		memcpy(r->attempt, r->old_attempt, sizeof(r->attempt));
		return rv;
	}
	EB_LOG_NOTICE("registry", "rejoin: old=%s attempt=%s", r->member_name,
	    r->attempt);
	r->state = R_REJOINING;
	return 0;
}

/* ---- leave ---- */

static void
left(eb__registry *r, int status)
{
	(void) uv_timer_stop(&r->timer);
	r->state = R_LEFT;
	r->gen++;
	clear_member(r);
	EB_LOG_NOTICE("registry", "left: address=%s err=%s", r->address,
	    eb_err_name(status));
	emit(r, EB_REGISTRY_LEFT, status);
}

static void
leave_cb(eb__zk *zk, int status, const eb__zk_op_result *res, size_t count,
    void *arg)
{
	eb__registry *r = req_take(arg);

	(void) zk;
	(void) res;
	(void) count;
	if (r == NULL) {
		return;
	}
	left(r, status);
}

static void
left_deferred_cb(uv_timer_t *t)
{
	left(t->data, 0);
}

int
eb__registry_leave(eb__registry *r)
{
	eb__zk_op ops[2];
	reg_req  *q;
	int       rv;

	if (r->closing || r->state == R_LEAVING || r->state == R_LEFT) {
		return EB_EZKINVALIDSTATE;
	}
	r->gen++; /* whatever is in flight no longer counts */
	(void) uv_timer_stop(&r->timer);
	if (r->state != R_REGISTERED ||
	    eb__zk_get_state(r->zk) != EB_ZK_STATE_CONNECTED) {
		/* Nothing (certain) to delete: closing the session removes
		 * any ephemeral we may have. */
		r->state = R_LEAVING;
		(void) uv_timer_start(&r->timer, left_deferred_cb, 0, 0);
		return 0;
	}
	memset(ops, 0, sizeof(ops));
	ops[0].type = EB_ZK_OP_DELETE;
	ops[0].path = r->member_path;
	ops[0].version = -1;
	ops[1].type = EB_ZK_OP_DELETE;
	ops[1].path = r->claim_path;
	ops[1].version = -1;
	q = req_new(r);
	rv = eb__zk_multi(r->zk, ops, 2, leave_cb, q);
	if (rv != 0) {
		free(q);
		return rv;
	}
	r->state = R_LEAVING;
	return 0;
}

/* ---- session events ---- */

/* The session expired or its authentication failed: whatever we held in
 * it is gone. */
static void
session_lost(eb__registry *r, eb__zk_event ev)
{
	int was = r->state == R_REGISTERED;

	r->gen++;
	(void) uv_timer_stop(&r->timer);
	if (r->state == R_LEAVING) {
		left(r, 0);
		return;
	}
	clear_member(r);
	r->state = R_LOST;
	EB_LOG_WARN(
	    "registry", "lost: address=%s was_registered=%d", r->address, was);
	if (ev == EB_ZK_EV_AUTH_FAILED) {
		reg_fail(r, EB_EZKAUTH);
		return;
	}
	emit(r, EB_REGISTRY_LOST, EB_EZKEXPIRED);
}

void
eb__registry_session_event(eb__registry *r, eb__zk_event ev)
{
	if (r->closing || !r->started || r->state == R_FAILED ||
	    r->state == R_LEFT) {
		return;
	}
	switch (ev) {
	case EB_ZK_EV_CONNECTED:
		/* A new session: nothing of the old one exists any more. */
		if (r->state == R_LEAVING) {
			left(r, 0);
			return;
		}
		r->retries = 0;
		r->stale_deadline = 0;
		(void) uv_timer_stop(&r->timer);
		reg_begin(r);
		break;
	case EB_ZK_EV_RECONNECTED:
		if (r->state == R_AMBIGUOUS) {
			resolve(r);
		} else if (r->state == R_IDLE) {
			reg_begin(r);
		}
		break;
	case EB_ZK_EV_EXPIRED:
	case EB_ZK_EV_AUTH_FAILED:
		session_lost(r, ev);
		break;
	case EB_ZK_EV_SUSPENDED:
		break;
	}
}

/* ---- lifecycle ---- */

void
eb__registry_opts_init(eb__registry_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->root = "/ebnode/default";
	opts->version = "0";
	opts->eligible = 1;
}

static char *
dup_or_empty(const char *s)
{
	return eb__strdup(s != NULL ? s : "");
}

int
eb__registry_new(uv_loop_t *loop, eb__zk *zk, const eb__registry_opts *opts,
    eb__registry_cb cb, void *arg, eb__registry **rp)
{
	eb__registry *r;
	char          path[1024];
	char         *enc;
	int           rv;

	if (loop == NULL || zk == NULL || opts == NULL || opts->root == NULL ||
	    opts->root[0] != '/' || opts->address == NULL ||
	    opts->address[0] == '\0' || opts->node_id == NULL ||
	    opts->node_id[0] == '\0' || strlen(opts->root) > 512 ||
	    strlen(opts->address) > 160) {
		return UV_EINVAL;
	}
	r = eb__calloc(1, sizeof(*r));
	r->loop = loop;
	r->zk = zk;
	r->cb = cb;
	r->arg = arg;
	r->root = eb__strdup(opts->root);
	r->address = eb__strdup(opts->address);
	r->node_id = eb__strdup(opts->node_id);
	r->host = dup_or_empty(opts->host);
	r->version = dup_or_empty(opts->version);
	r->link_min = opts->link_min;
	r->link_max = opts->link_max;
	r->cluster_port = opts->cluster_port;
	r->bridge_port = opts->bridge_port;
	r->admin_port = opts->admin_port;
	r->eligible = opts->eligible;
	r->dup_wait_ms =
	    opts->dup_wait_ms != 0
	        ? opts->dup_wait_ms
	        : eb__zk_session_timeout_ms(zk) + REG_DUP_MARGIN_MS;
	r->started_ms = eb__wall_ms();
	(void) snprintf(path, sizeof(path), "%s/members", r->root);
	r->members_path = eb__strdup(path);
	enc = eb__member_encode_address(r->address);
	(void) snprintf(path, sizeof(path), "%s/addresses/%s", r->root, enc);
	free(enc);
	r->claim_path = eb__strdup(path);
	rv = uv_timer_init(loop, &r->timer);
	if (rv != 0) {
		/* Nothing to close: the timer failed to initialise. */
		free(r->root);
		free(r->address);
		free(r->node_id);
		free(r->host);
		free(r->version);
		free(r->members_path);
		free(r->claim_path);
		free(r);
		return rv;
	}
	r->timer.data = r;
	r->id = r->zk != NULL ? eb__zk_live_add(r->zk, r) : 0;
	*rp = r;
	return 0;
}

int
eb__registry_start(eb__registry *r)
{
	EB_ASSERT(!r->closing); /* start after close */
	if (r->closing) {
		return EB_ECLOSED;
	}
	if (r->started) {
		return EB_EZKINVALIDSTATE;
	}
	r->started = 1;
	reg_begin(r);
	return 0;
}

static void
registry_closed_cb(uv_handle_t *h)
{
	eb__registry *r = h->data;

	if (r->close_cb != NULL) {
		r->close_cb(r, r->close_arg);
	}
	clear_member(r);
	free(r->dead_member);
	free(r->root);
	free(r->address);
	free(r->node_id);
	free(r->host);
	free(r->version);
	free(r->members_path);
	free(r->claim_path);
	free(r);
}

void
eb__registry_close(eb__registry *r, eb__registry_close_cb cb, void *arg)
{
	EB_ASSERT(!r->closing); /* close is exactly once */
	r->closing = 1;
	r->close_cb = cb;
	r->close_arg = arg;
	if (r->zk != NULL) {
		eb__zk_live_del(r->zk, r->id);
	}
	uv_close((uv_handle_t *) &r->timer, registry_closed_cb);
}

int
eb__registry_is_registered(const eb__registry *r)
{
	return r->state == R_REGISTERED;
}

int
eb__registry_reregistering(const eb__registry *r)
{
	return r->reregistering && r->state != R_REGISTERED &&
	       r->state != R_FAILED && r->state != R_LEFT;
}

const char *
eb__registry_member_name(const eb__registry *r)
{
	return r->state == R_REGISTERED ? r->member_name : NULL;
}

const char *
eb__registry_member_path(const eb__registry *r)
{
	return r->state == R_REGISTERED ? r->member_path : NULL;
}

int64_t
eb__registry_member_seq(const eb__registry *r)
{
	return r->state == R_REGISTERED ? r->member_seq : 0;
}

int64_t
eb__registry_member_czxid(const eb__registry *r)
{
	return r->state == R_REGISTERED ? r->member_czxid : 0;
}

const char *
eb__registry_members_path(const eb__registry *r)
{
	return r->members_path;
}

const char *
eb__registry_root(const eb__registry *r)
{
	return r->root;
}

const char *
eb__registry_holder(const eb__registry *r)
{
	return r->holder;
}
