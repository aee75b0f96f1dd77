/*
 * Unit tests of shared data (shared/) over the in-memory ZooKeeper
 * (tests/harness/fakezk.h): two simulated nodes, each an eb_shared on its
 * own session. The lock hand-over and tokens, revocation inside the
 * SUSPENDED event, revocation when the lease lapses while reads still
 * work, the revoked holder's node deleted on reconnection, try/timeout,
 * counters under contention, ids; a lock node whose delete is refused
 * (not a connection problem) retried until gone and the lock's directory
 * removed; the caps on locks and counter names; counter delete; renewal
 * chunks under the request limit; the renewal ahead of client work.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/shared_int.h"
#include "tests/harness/fakezk.h"
#include "tests/harness/th.h"

#define ROOT "/eb"

static fakezk_server *srv;

typedef struct snode {
	eb__zk    *zk;
	eb_shared *s;
	int        events;
	int        suspended;
	int        revoked_in_event; /* revocations seen inside an event */
	int        closed;
} snode;

typedef struct lk_obs {
	snode      *n;
	eb_lock    *lk;
	int         done;
	int         status;
	int64_t     token;
	int         revoked;
	const char *reason;
} lk_obs;

static lk_obs *g_watch; /* the holder whose revocation inside an event is
                           counted */

static void
ev_cb(eb__zk *zk, eb__zk_event ev, void *arg)
{
	snode *n = arg;
	int    before = g_watch != NULL ? g_watch->revoked : 0;

	(void) zk;
	n->events++;
	if (ev == EB_ZK_EV_SUSPENDED) {
		n->suspended++;
	}
	if (n->s != NULL) {
		eb__shared_session_event(n->s, ev);
	}
	if (g_watch != NULL && g_watch->n == n && g_watch->revoked > before) {
		n->revoked_in_event++;
	}
}

static int
connected(void *arg)
{
	return eb__zk_get_state(((snode *) arg)->zk) == EB_ZK_STATE_CONNECTED;
}

static void
sn_open(th_loop *t, snode *n)
{
	memset(n, 0, sizeof(*n));
	assert_int_equal(fakezk_client_new(srv, 2000, ev_cb, n, &n->zk), 0);
	assert_int_equal(eb__zk_start(n->zk), 0);
	assert_int_equal(th_run_until(t, connected, n, 5000), 0);
	n->s = eb__shared_new_zk(&t->loop, n->zk, ROOT, 0, NULL);
}

static void
sn_open_opts(th_loop *t, snode *n, const eb_shared_opts *o)
{
	sn_open(t, n);
	eb_shared_close(n->s, NULL, NULL);
	n->s = eb__shared_new_zk(&t->loop, n->zk, ROOT, 0, o);
}

static void
sh_closed_cb(eb_shared *s, void *arg)
{
	(void) s;
	((snode *) arg)->closed++;
}

static void
zk_closed_cb(eb__zk *zk, void *arg)
{
	(void) zk;
	((snode *) arg)->closed++;
}

static int
closed2(void *arg)
{
	return ((snode *) arg)->closed == 2;
}

static void
sn_close(th_loop *t, snode *n)
{
	eb_shared_close(n->s, sh_closed_cb, n);
	n->s = NULL;
	eb__zk_close(n->zk, zk_closed_cb, n);
	assert_int_equal(th_run_until(t, closed2, n, 5000), 0);
}

static void
lk_cb(eb_lock *lk, int status, int64_t token, void *arg)
{
	lk_obs *o = arg;

	(void) lk;
	o->done = 1;
	o->status = status;
	o->token = token;
	if (status != 0) {
		o->lk = NULL;
	}
}

static void
lk_revoked_cb(eb_lock *lk, const char *reason, void *arg)
{
	lk_obs *o = arg;

	(void) lk;
	o->revoked++;
	o->reason = reason;
	o->lk = NULL;
}

static int
obs_done(void *arg)
{
	return ((lk_obs *) arg)->done;
}

static int
obs_revoked(void *arg)
{
	return ((lk_obs *) arg)->revoked > 0;
}

static void
acquire(snode *n, const char *name, int64_t timeout, lk_obs *o)
{
	memset(o, 0, sizeof(*o));
	o->n = n;
	assert_int_equal(eb_lock_acquire(n->s, name, timeout, 7, lk_cb,
	                     lk_revoked_cb, o, &o->lk),
	    0);
}

static int
setup(void **state)
{
	th_loop *t;

	th_setup(state);
	t = *state;
	srv = fakezk_server_new(&t->loop);
	return 0;
}

static int
teardown(void **state)
{
	fakezk_server_close_run(srv, *state);
	srv = NULL;
	return th_teardown(state);
}

static int
child_count_zero(void *arg)
{
	(void) arg;
	return fakezk_child_count(srv, ROOT "/locks/x") == 0;
}

static void
test_handover_tokens(void **state)
{
	th_loop        *t = *state;
	snode           a, b;
	lk_obs          oa, ob, oc;
	eb_shared_stats st;

	sn_open(t, &a);
	sn_open(t, &b);
	acquire(&a, "x", -1, &oa);
	assert_int_equal(th_run_until(t, obs_done, &oa, 5000), 0);
	assert_int_equal(oa.status, 0);
	assert_true(oa.token > 0);
	assert_true(eb_lock_held(oa.lk));
	acquire(&b, "x", 5000, &ob);
	acquire(&b, "x", 5000, &oc); /* waits behind ob, not behind oa */
	(void) th_run_until(t, obs_done, &ob, 200);
	assert_false(ob.done);
	eb_shared_stats_get(b.s, &st);
	assert_int_equal(st.locks_waiting, 2);
	assert_int_equal(st.locks_held, 0);
	eb_lock_release(oa.lk);
	assert_int_equal(th_run_until(t, obs_done, &ob, 5000), 0);
	assert_int_equal(ob.status, 0);
	assert_true(ob.token > oa.token);
	assert_false(oc.done);
	eb_lock_release(ob.lk);
	assert_int_equal(th_run_until(t, obs_done, &oc, 5000), 0);
	assert_true(oc.token > ob.token);
	assert_int_equal(eb_shared_release_owner(b.s, 7), 1);
	assert_int_equal(th_run_until(t, child_count_zero, NULL, 5000), 0);
	sn_close(t, &a);
	sn_close(t, &b);
}

static void
test_suspend_revokes_in_event(void **state)
{
	th_loop *t = *state;
	snode    a, b;
	lk_obs   oa, ob;

	sn_open(t, &a);
	sn_open(t, &b);
	acquire(&a, "x", -1, &oa);
	assert_int_equal(th_run_until(t, obs_done, &oa, 5000), 0);
	acquire(&b, "x", -1, &ob);
	g_watch = &oa;
	fakezk_disconnect(a.zk);
	assert_int_equal(th_run_until(t, obs_revoked, &oa, 5000), 0);
	assert_string_equal(oa.reason, "zk-suspended");
	assert_int_equal(a.revoked_in_event, 1); /* inside the event */
	g_watch = NULL;
	/* The session lives: nobody else holds it until the revoked
	 * holder's node is gone, which happens on reconnection. */
	(void) th_run_until(t, obs_done, &ob, 200);
	assert_false(ob.done);
	fakezk_reconnect(a.zk);
	assert_int_equal(th_run_until(t, obs_done, &ob, 5000), 0);
	assert_int_equal(ob.status, 0);
	assert_true(ob.token > oa.token);
	eb_lock_release(ob.lk);
	assert_int_equal(th_run_until(t, child_count_zero, NULL, 5000), 0);
	sn_close(t, &a);
	sn_close(t, &b);
}

static void
test_lease_lapses(void **state)
{
	th_loop        *t = *state;
	snode           a;
	lk_obs          oa;
	eb_shared_stats st;

	sn_open(t, &a);
	acquire(&a, "x", -1, &oa);
	assert_int_equal(th_run_until(t, obs_done, &oa, 5000), 0);
	/* Reads still answered, writes never committed (a follower cut off
	 * from the quorum): the renewals stop, the lease runs out. */
	fakezk_stall_writes(a.zk, 1);
	assert_int_equal(th_run_until(t, obs_revoked, &oa, 5000), 0);
	assert_string_equal(oa.reason, "lease-expired");
	assert_int_equal(a.suspended, 0);
	eb_shared_stats_get(a.s, &st);
	assert_int_equal(st.revocations, 1);
	assert_int_equal(st.locks_held, 0);
	fakezk_stall_writes(a.zk, 0);
	sn_close(t, &a);
}

static void
test_try_and_timeout(void **state)
{
	th_loop *t = *state;
	snode    a, b;
	lk_obs   oa, ob;

	sn_open(t, &a);
	sn_open(t, &b);
	acquire(&a, "x", -1, &oa);
	assert_int_equal(th_run_until(t, obs_done, &oa, 5000), 0);
	acquire(&b, "x", 0, &ob);
	assert_int_equal(th_run_until(t, obs_done, &ob, 5000), 0);
	assert_int_equal(ob.status, UV_EBUSY);
	acquire(&b, "x", 100, &ob);
	assert_int_equal(th_run_until(t, obs_done, &ob, 5000), 0);
	assert_int_equal(ob.status, EB_ETIMEOUT);
	assert_int_equal(
	    eb_lock_acquire(b.s, "a/b", -1, 0, lk_cb, NULL, &ob, NULL),
	    UV_EINVAL);
	eb_lock_release(oa.lk);
	assert_int_equal(th_run_until(t, child_count_zero, NULL, 5000), 0);
	sn_close(t, &a);
	sn_close(t, &b);
}

typedef struct ctr {
	snode  *n;
	int     left;
	int     done;
	int     status;
	int64_t value;
	int     ok;
} ctr;

static void
ctr_cb(eb_shared *s, int status, int64_t value, int ok, void *arg)
{
	ctr *c = arg;

	c->status = status;
	c->value = value;
	c->ok = ok;
	if (status == 0 && --c->left > 0) {
		assert_int_equal(eb_counter_add(s, "c", 1, ctr_cb, c), 0);
		return;
	}
	c->done = 1;
}

static int
ctr_done(void *arg)
{
	return ((ctr *) arg)->done;
}

static int
both_done(void *arg)
{
	ctr *c = arg;

	return c[0].done && c[1].done;
}

static void
test_counters(void **state)
{
	th_loop        *t = *state;
	snode           a, b;
	ctr             c[2] = { { .left = 200 }, { .left = 200 } };
	ctr             g = { .left = 1 };
	eb_shared_stats sa, sb;

	sn_open(t, &a);
	sn_open(t, &b);
	assert_int_equal(eb_counter_add(a.s, "c", 1, ctr_cb, &c[0]), 0);
	assert_int_equal(eb_counter_add(b.s, "c", 1, ctr_cb, &c[1]), 0);
	assert_int_equal(th_run_until(t, both_done, c, 10000), 0);
	assert_int_equal(c[0].status, 0);
	assert_int_equal(c[1].status, 0);
	assert_int_equal(eb_counter_get(a.s, "c", ctr_cb, &g), 0);
	assert_int_equal(th_run_until(t, ctr_done, &g, 5000), 0);
	assert_int_equal(g.value, 400);
	eb_shared_stats_get(a.s, &sa);
	eb_shared_stats_get(b.s, &sb);
	assert_true(sa.counter_retries + sb.counter_retries > 0);
	memset(&g, 0, sizeof(g));
	g.left = 1;
	assert_int_equal(eb_counter_cas(b.s, "c", 3, 9, ctr_cb, &g), 0);
	assert_int_equal(th_run_until(t, ctr_done, &g, 5000), 0);
	assert_int_equal(g.ok, 0);
	assert_int_equal(g.value, 400);
	memset(&g, 0, sizeof(g));
	g.left = 1;
	assert_int_equal(eb_counter_cas(b.s, "c", 400, 9, ctr_cb, &g), 0);
	assert_int_equal(th_run_until(t, ctr_done, &g, 5000), 0);
	assert_int_equal(g.ok, 1);
	assert_int_equal(g.value, 9);
	memset(&g, 0, sizeof(g));
	g.left = 1;
	assert_int_equal(eb_counter_get(a.s, "fresh", ctr_cb, &g), 0);
	assert_int_equal(th_run_until(t, ctr_done, &g, 5000), 0);
	assert_int_equal(g.value, 0);
	sn_close(t, &a);
	sn_close(t, &b);
}

typedef struct idc {
	uint64_t ids[3000];
	size_t   n;
	int      left;
} idc;

static void
id_cb(eb_shared *s, int status, const uint64_t *ids, size_t count, void *arg)
{
	idc *c = arg;

	assert_int_equal(status, 0);
	memcpy(c->ids + c->n, ids, count * sizeof(*ids));
	c->n += count;
	if (--c->left > 0) {
		assert_int_equal(eb_id_next(s, 700, id_cb, c), 0);
	}
}

static int
ids_done(void *arg)
{
	idc *c = arg;

	return c[0].left == 0 && c[1].left == 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

static void
test_ids(void **state)
{
	th_loop  *t = *state;
	snode     a, b;
	idc      *c = calloc(2, sizeof(*c));
	uint64_t *all;
	size_t    i, k;

	sn_open(t, &a);
	sn_open(t, &b);
	c[0].left = c[1].left = 4;
	assert_int_equal(eb_id_next(a.s, 700, id_cb, &c[0]), 0);
	assert_int_equal(eb_id_next(b.s, 700, id_cb, &c[1]), 0);
	assert_int_equal(th_run_until(t, ids_done, c, 10000), 0);
	all = calloc(c[0].n + c[1].n, sizeof(*all));
	for (k = 0; k < 2; k++) {
		for (i = 1; i < c[k].n; i++) {
			assert_true(c[k].ids[i] > c[k].ids[i - 1]);
		}
	}
	memcpy(all, c[0].ids, c[0].n * sizeof(*all));
	memcpy(all + c[0].n, c[1].ids, c[1].n * sizeof(*all));
	qsort(all, c[0].n + c[1].n, sizeof(*all), cmp_u64);
	for (i = 1; i < c[0].n + c[1].n; i++) {
		assert_true(all[i] != all[i - 1]);
	}
	assert_true(all[0] > 0);
	free(all);
	free(c);
	sn_close(t, &a);
	sn_close(t, &b);
}

static int
dir_gone(void *arg)
{
	(void) arg;
	return !fakezk_exists(srv, ROOT "/locks/x");
}

static void
test_delete_refused_retried(void **state)
{
	th_loop        *t = *state;
	snode           a, b;
	lk_obs          oa, ob;
	eb_shared_stats st;

	sn_open(t, &a);
	sn_open(t, &b);
	acquire(&a, "x", -1, &oa);
	assert_int_equal(th_run_until(t, obs_done, &oa, 5000), 0);
	acquire(&b, "x", -1, &ob);
	(void) th_run_until(t, obs_done, &ob, 100);
	assert_false(ob.done);
	/* The release's delete is refused for a reason that is not the
	 * connection (an ACL): retried with back-off all the same. */
	fakezk_fail_next(a.zk, EB_EZKNOAUTH);
	eb_lock_release(oa.lk);
	(void) th_run_until(t, obs_done, &ob, 20);
	eb_shared_stats_get(a.s, &st);
	assert_int_equal(st.deletes_pending, 1);
	assert_int_equal(th_run_until(t, obs_done, &ob, 5000), 0);
	assert_int_equal(ob.status, 0);
	assert_true(ob.token > oa.token);
	eb_shared_stats_get(a.s, &st);
	assert_int_equal(st.deletes_pending, 0);
	/* The last node of the lock goes with its directory. */
	eb_lock_release(ob.lk);
	assert_int_equal(th_run_until(t, dir_gone, NULL, 5000), 0);
	sn_close(t, &a);
	sn_close(t, &b);
}

static void
test_lock_caps(void **state)
{
	th_loop        *t = *state;
	snode           a;
	lk_obs          o[4];
	eb_shared_opts  opts;
	eb_shared_stats st;

	memset(o, 0, sizeof(o));
	eb_shared_opts_init(&opts);
	opts.max_locks_per_conn = 2;
	opts.max_locks_per_node = 3;
	sn_open_opts(t, &a, &opts);
	acquire(&a, "a", -1, &o[0]);
	acquire(&a, "b", -1, &o[1]);
	assert_int_equal(th_run_until(t, obs_done, &o[0], 5000), 0);
	assert_int_equal(th_run_until(t, obs_done, &o[1], 5000), 0);
	assert_int_equal(
	    eb_lock_acquire(a.s, "c", -1, 7, lk_cb, NULL, &o[2], NULL),
	    EB_EFULL); /* owner 7's cap */
	assert_int_equal(
	    eb_lock_acquire(a.s, "c", -1, 8, lk_cb, NULL, &o[2], &o[2].lk), 0);
	assert_int_equal(
	    eb_lock_acquire(a.s, "d", -1, 9, lk_cb, NULL, &o[3], NULL),
	    EB_EFULL); /* the node's cap */
	assert_int_equal(th_run_until(t, obs_done, &o[2], 5000), 0);
	eb_shared_stats_get(a.s, &st);
	assert_int_equal(st.refused, 2);
	eb_lock_release(o[2].lk);
	memset(&o[2], 0, sizeof(o[2]));
	assert_int_equal(
	    eb_lock_acquire(a.s, "d", -1, 9, lk_cb, NULL, &o[3], &o[3].lk), 0);
	/* Waiters have a cap of their own: "d" waits (its create is in
	 * flight), so no second waiter. */
	opts.max_locks_per_node = 0;
	opts.max_waits_per_node = 1;
	a.s->o = opts;
	assert_int_equal(
	    eb_lock_acquire(a.s, "e", -1, 10, lk_cb, NULL, &o[2], NULL),
	    EB_EFULL);
	assert_int_equal(th_run_until(t, obs_done, &o[3], 5000), 0);
	assert_int_equal(
	    eb_lock_acquire(a.s, "e", -1, 10, lk_cb, NULL, &o[2], &o[2].lk), 0);
	assert_int_equal(th_run_until(t, obs_done, &o[2], 5000), 0);
	assert_int_equal(o[2].status, 0);
	sn_close(t, &a);
}

static void
ctr_once(snode *n, int kind, const char *name, ctr *g)
{
	memset(g, 0, sizeof(*g));
	g->left = 1;
	if (kind == 'd') {
		assert_int_equal(eb_counter_delete(n->s, name, ctr_cb, g), 0);
	} else {
		assert_int_equal(eb_counter_add(n->s, name, 5, ctr_cb, g), 0);
	}
}

static void
test_counter_cap_and_delete(void **state)
{
	th_loop       *t = *state;
	snode          a;
	ctr            g;
	eb_shared_opts opts;

	eb_shared_opts_init(&opts);
	opts.max_counters = 2;
	sn_open_opts(t, &a, &opts);
	ctr_once(&a, 'a', "c1", &g);
	assert_int_equal(th_run_until(t, ctr_done, &g, 5000), 0);
	ctr_once(&a, 'a', "c2", &g);
	assert_int_equal(th_run_until(t, ctr_done, &g, 5000), 0);
	ctr_once(&a, 'a', "c3", &g);
	assert_int_equal(th_run_until(t, ctr_done, &g, 5000), 0);
	assert_int_equal(g.status, EB_EFULL);
	ctr_once(&a, 'a', "c1", &g); /* an existing name is no new one */
	assert_int_equal(th_run_until(t, ctr_done, &g, 5000), 0);
	assert_int_equal(g.status, 0);
	assert_int_equal(g.value, 10);
	ctr_once(&a, 'd', "c1", &g);
	assert_int_equal(th_run_until(t, ctr_done, &g, 5000), 0);
	assert_int_equal(g.status, 0);
	assert_int_equal(g.ok, 1);
	assert_int_equal(g.value, 10);
	assert_false(fakezk_exists(srv, ROOT "/counters/c1"));
	ctr_once(&a, 'd', "c1", &g); /* gone: nothing to delete */
	assert_int_equal(th_run_until(t, ctr_done, &g, 5000), 0);
	assert_int_equal(g.status, 0);
	assert_int_equal(g.ok, 0);
	ctr_once(&a, 'a', "c3", &g); /* room again */
	assert_int_equal(th_run_until(t, ctr_done, &g, 5000), 0);
	assert_int_equal(g.status, 0);
	assert_int_equal(g.value, 5);
	sn_close(t, &a);
}

static void
test_renewal_chunks(void **state)
{
	th_loop *t = *state;
	snode    a;
	enum { N = 5000 };
	eb__zk_op *ops = calloc(N, sizeof(*ops));
	char(*paths)[300] = calloc(N, sizeof(*paths));
	size_t i, k, chunks = 0;

	sn_open(t, &a);
	for (i = 0; i < N; i++) {
		/* A lock node of a 200-character name. */
		(void) snprintf(paths[i], sizeof(paths[i]),
		    "/ebtest/0123456789abcdef0123456789abcdef/locks/%0200zu/"
		    "l-123456789abcdefx%zu-%010zu",
		    i, i, i);
		ops[i].type = EB_ZK_OP_CHECK;
		ops[i].path = paths[i];
	}
	/* One multi of all would be over the limit. */
	assert_true(
	    eb__zk_multi_bytes(a.zk, ops, N) > eb__zk_max_request(a.zk));
	for (i = 0; i < N; i += k) {
		k = eb__shared_chunk(a.zk, ops + i, N - i);
		assert_true(k > 0);
		assert_true(eb__zk_multi_bytes(a.zk, ops + i, k) <=
		            eb__zk_max_request(a.zk));
		/* maximal: one more would not fit */
		if (i + k < N) {
			assert_true(eb__zk_multi_bytes(a.zk, ops + i, k + 1) >
			            eb__zk_max_request(a.zk));
		}
		chunks++;
	}
	assert_true(chunks >= 2);
	free(ops);
	free(paths);
	sn_close(t, &a);
}

typedef struct many {
	int done;
	int failed;
} many;

static void
many_cb(eb_shared *s, int status, int64_t value, int ok, void *arg)
{
	many *m = arg;

	(void) s;
	(void) value;
	(void) ok;
	m->done++;
	if (status != 0) {
		m->failed++;
	}
}

static uint64_t renewals0;

static int
renewal_sent(void *arg)
{
	eb_shared_stats st;

	eb_shared_stats_get(arg, &st);
	return st.renewals > renewals0;
}

static int
many_done(void *arg)
{
	return ((many *) arg)->done == 400;
}

/* Client work fills the session's window while the server is slow; the
 * lease renewal is sent at once, ahead of the requests held back, so it
 * waits at the server behind EB__SHARED_ZK_WINDOW requests at most
 * (docs/SHARED.md "Client work and the lease"). Then everything completes
 * and the lock was never revoked. */
static void
test_renewal_ahead_of_client_work(void **state)
{
	th_loop          *t = *state;
	snode             a;
	lk_obs            oa;
	many              m = { 0, 0 };
	eb__shared_window w;
	eb_shared_stats   st;
	char              name[16];
	int               i;

	sn_open(t, &a);
	acquire(&a, "x", -1, &oa);
	assert_int_equal(th_run_until(t, obs_done, &oa, 5000), 0);
	assert_int_equal(oa.status, 0);
	fakezk_stall(a.zk, 1);
	eb_shared_stats_get(a.s, &st);
	renewals0 = st.renewals;
	for (i = 0; i < 400; i++) {
		(void) snprintf(name, sizeof(name), "n%d", i);
		assert_int_equal(eb_counter_add(a.s, name, 1, many_cb, &m), 0);
	}
	eb__shared_window_get(a.s, &w);
	assert_int_equal(w.in_flight, EB__SHARED_ZK_WINDOW);
	assert_int_equal(w.held, 400 - EB__SHARED_ZK_WINDOW);
	/* The next heartbeat: its renewal is in flight at once. */
	assert_int_equal(th_run_until(t, renewal_sent, a.s, 5000), 0);
	eb__shared_window_get(a.s, &w);
	assert_int_equal(w.in_flight, EB__SHARED_ZK_WINDOW + 1);
	assert_int_equal(w.held, 400 - EB__SHARED_ZK_WINDOW);
	fakezk_stall(a.zk, 0);
	assert_int_equal(th_run_until(t, many_done, &m, 10000), 0);
	assert_int_equal(m.failed, 0);
	assert_int_equal(oa.revoked, 0);
	assert_true(eb_lock_held(oa.lk));
	eb__shared_window_get(a.s, &w);
	assert_int_equal(w.held, 0);
	eb_lock_release(oa.lk);
	sn_close(t, &a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_handover_tokens, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_suspend_revokes_in_event, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_lease_lapses, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_try_and_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_counters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ids, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_delete_refused_retried, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_lock_caps, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_counter_cap_and_delete, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_renewal_chunks, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_renewal_ahead_of_client_work, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
