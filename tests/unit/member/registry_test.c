/*
 * Membership (member/registry.c) against the in-memory ZooKeeper: the one
 * multi, duplicate addresses, ambiguous creates (rule 2), the stale claim of
 * a previous process, expiry (rule 7), leave (rule 8) and rejoin.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "member/member.h"
#include "member/registry.h"
#include "tests/harness/fakezk.h"
#include "tests/harness/th.h"

#define ROOT    "/ebnode/t"
#define MEMBERS ROOT "/members"
#define CLAIM   ROOT "/addresses/a%3A1"

typedef struct rnode {
	eb__zk       *zk;
	eb__registry *reg;
	int           registered;
	int           lost;
	int           failed;
	int           left;
	int           rereg;
	int           status;
	int           closed;
} rnode;

static fakezk_server *srv;

static void
rn_event_cb(eb__zk *zk, eb__zk_event ev, void *arg)
{
	rnode *n = arg;

	(void) zk;
	if (n->reg != NULL) {
		eb__registry_session_event(n->reg, ev);
	}
}

static void
rn_reg_cb(eb__registry *r, eb__registry_event ev, int status, void *arg)
{
	rnode *n = arg;

	(void) r;
	n->status = status;
	switch (ev) {
	case EB_REGISTRY_REGISTERED:
		n->registered++;
		break;
	case EB_REGISTRY_LOST:
		n->lost++;
		break;
	case EB_REGISTRY_FAILED:
		n->failed++;
		break;
	case EB_REGISTRY_LEFT:
		n->left++;
		break;
	case EB_REGISTRY_REREGISTERING:
		n->rereg++;
		break;
	}
}

static void
rn_open(th_loop *t, rnode *n, const char *node_id, const char *address,
    uint32_t dup_wait_ms)
{
	eb__registry_opts o;

	memset(n, 0, sizeof(*n));
	assert_int_equal(
	    fakezk_client_new(srv, 400, rn_event_cb, n, &n->zk), 0);
	eb__registry_opts_init(&o);
	o.root = ROOT;
	o.node_id = node_id;
	o.address = address;
	o.host = "127.0.0.1";
	o.bridge_port = 7000;
	o.dup_wait_ms = dup_wait_ms;
	assert_int_equal(
	    eb__registry_new(&t->loop, n->zk, &o, rn_reg_cb, n, &n->reg), 0);
	assert_int_equal(eb__zk_start(n->zk), 0);
	assert_int_equal(eb__registry_start(n->reg), 0);
}

static void
rn_reg_closed_cb(eb__registry *r, void *arg)
{
	(void) r;
	((rnode *) arg)->closed++;
}

static void
rn_zk_closed_cb(eb__zk *zk, void *arg)
{
	(void) zk;
	((rnode *) arg)->closed++;
}

static void
rn_close(rnode *n)
{
	eb__registry_close(n->reg, rn_reg_closed_cb, n);
	eb__zk_close(n->zk, rn_zk_closed_cb, n);
	n->reg = NULL;
}

static int
setup(void **state)
{
	th_loop *t;

	assert_int_equal(th_setup(state), 0);
	t = *state;
	srv = fakezk_server_new(&t->loop);
	return 0;
}

static int
teardown(void **state)
{
	th_loop *t = *state;

	fakezk_server_close_run(srv, t);
	return th_teardown(state);
}

static int
registered_pred(void *arg)
{
	rnode *n = arg;

	return n->registered > 0 || n->failed > 0;
}

static int
failed_pred(void *arg)
{
	return ((rnode *) arg)->failed > 0;
}

static int
both_done_pred(void *arg)
{
	rnode *n = arg;

	return (n[0].registered > 0 || n[0].failed > 0) &&
	       (n[1].registered > 0 || n[1].failed > 0);
}

static int
closed_pred(void *arg)
{
	return ((rnode *) arg)->closed == 2;
}

static void
close_all(th_loop *t, rnode *n, size_t count)
{
	size_t i;

	for (i = 0; i < count; i++) {
		if (n[i].reg != NULL) {
			rn_close(&n[i]);
		}
	}
	for (i = 0; i < count; i++) {
		assert_int_equal(th_run_until(t, closed_pred, &n[i], 2000), 0);
	}
}

/* ---- tests ---- */

static void
test_register(void **state)
{
	th_loop    *t = *state;
	rnode       n;
	char        buf[512];
	eb__zk_stat claim;
	eb__zk_stat member;
	json_t     *o;

	rn_open(t, &n, "id-1", "a:1", 0);
	assert_int_equal(th_run_until(t, registered_pred, &n, 2000), 0);
	assert_int_equal(n.registered, 1);
	assert_true(eb__registry_is_registered(n.reg));
	assert_int_equal(fakezk_child_count(srv, MEMBERS), 1);
	/* The claim is ephemeral, names us and this attempt. */
	assert_int_equal(fakezk_get(srv, CLAIM, buf, sizeof(buf), &claim), 0);
	assert_int_equal(claim.ephemeral_owner, fakezk_session(n.zk));
	o = json_loads(buf, 0, NULL);
	assert_string_equal(
	    json_string_value(json_object_get(o, "node_id")), "id-1");
	assert_non_null(strstr(eb__registry_member_name(n.reg),
	    json_string_value(json_object_get(o, "attempt"))));
	json_decref(o);
	/* The member: same multi (same czxid), data as documented. */
	assert_int_equal(fakezk_get(srv, eb__registry_member_path(n.reg), buf,
	                     sizeof(buf), &member),
	    0);
	assert_int_equal(member.czxid, claim.czxid);
	assert_int_equal(eb__registry_member_czxid(n.reg), member.czxid);
	o = json_loads(buf, 0, NULL);
	assert_string_equal(
	    json_string_value(json_object_get(o, "address")), "a:1");
	assert_string_equal(
	    json_string_value(json_object_get(o, "host")), "127.0.0.1");
	assert_int_equal(
	    json_integer_value(json_object_get(o, "bridge_port")), 7000);
	assert_true(json_is_true(json_object_get(o, "eligible")));
	assert_true(json_integer_value(json_object_get(o, "started_ms")) > 0);
	json_decref(o);
	close_all(t, &n, 1);
	/* A graceful close of the session removes the ephemerals. */
	assert_int_equal(fakezk_child_count(srv, MEMBERS), 0);
}

static void
test_duplicate(void **state)
{
	th_loop *t = *state;
	rnode    n[2];
	int      winner;

	rn_open(t, &n[0], "id-1", "a:1", 0);
	rn_open(t, &n[1], "id-2", "a:1", 0);
	assert_int_equal(th_run_until(t, both_done_pred, n, 2000), 0);
	assert_int_equal(n[0].registered + n[1].registered, 1);
	assert_int_equal(n[0].failed + n[1].failed, 1);
	winner = n[0].registered ? 0 : 1;
	assert_int_equal(n[1 - winner].status, EB_EDUPADDR);
	assert_non_null(strstr(eb__registry_holder(n[1 - winner].reg),
	    winner == 0 ? "node_id=\"id-1\"" : "node_id=\"id-2\""));
	/* The loser's multi created nothing. */
	assert_int_equal(fakezk_child_count(srv, MEMBERS), 1);
	close_all(t, n, 2);
}

static void
test_ambiguous_applied(void **state)
{
	th_loop *t = *state;
	rnode    n;
	char     buf[256];
	json_t  *o;

	rn_open(t, &n, "id-1", "a:1", 0);
	fakezk_lose_next_multi(n.zk);
	/* The multi is applied, its reply lost: no registration yet. */
	assert_int_equal(th_run_until(t, th_flag_set, &n.registered, 100), -1);
	assert_int_equal(fakezk_child_count(srv, MEMBERS), 1);
	fakezk_reconnect(n.zk);
	assert_int_equal(th_run_until(t, registered_pred, &n, 2000), 0);
	assert_int_equal(n.registered, 1);
	/* Adopted, not created twice: one member, the claim's attempt. */
	assert_int_equal(fakezk_child_count(srv, MEMBERS), 1);
	assert_int_equal(fakezk_get(srv, CLAIM, buf, sizeof(buf), NULL), 0);
	o = json_loads(buf, 0, NULL);
	assert_non_null(strstr(eb__registry_member_name(n.reg),
	    json_string_value(json_object_get(o, "attempt"))));
	json_decref(o);
	assert_true(fakezk_exists(srv, eb__registry_member_path(n.reg)));
	close_all(t, &n, 1);
}

static void
test_ambiguous_not_applied(void **state)
{
	th_loop *t = *state;
	rnode    n;

	rn_open(t, &n, "id-1", "a:1", 0);
	fakezk_fail_next_multi(n.zk, EB_EZKLOSS);
	assert_int_equal(th_run_until(t, registered_pred, &n, 2000), 0);
	assert_int_equal(n.registered, 1);
	assert_int_equal(fakezk_child_count(srv, MEMBERS), 1);
	close_all(t, &n, 1);
}

static void
expire_cb(uv_timer_t *h)
{
	fakezk_server_expire_session(srv, *(int64_t *) h->data);
}

static void
test_stale_claim_waits(void **state)
{
	th_loop   *t = *state;
	rnode      n[2];
	uv_timer_t timer;
	int64_t    old;

	rn_open(t, &n[0], "id-1", "a:1", 0);
	assert_int_equal(th_run_until(t, registered_pred, &n[0], 2000), 0);
	/* The process dies; its session lives on for a while. */
	old = fakezk_session(n[0].zk);
	fakezk_kill(n[0].zk);
	rn_open(t, &n[1], "id-1", "a:1", 3000);
	(void) uv_timer_init(&t->loop, &timer);
	timer.data = &old;
	(void) uv_timer_start(&timer, expire_cb, 150, 0);
	assert_int_equal(th_run_until(t, registered_pred, &n[1], 3000), 0);
	assert_int_equal(n[1].registered, 1);
	assert_int_equal(n[1].failed, 0);
	uv_close((uv_handle_t *) &timer, NULL);
	assert_int_equal(fakezk_child_count(srv, MEMBERS), 1);
	close_all(t, n, 2);
}

static void
test_stale_claim_bounded(void **state)
{
	th_loop *t = *state;
	rnode    n[2];

	rn_open(t, &n[0], "id-1", "a:1", 0);
	assert_int_equal(th_run_until(t, registered_pred, &n[0], 2000), 0);
	fakezk_kill(n[0].zk);
	rn_open(t, &n[1], "id-1", "a:1", 200);
	assert_int_equal(th_run_until(t, registered_pred, &n[1], 3000), 0);
	assert_int_equal(n[1].failed, 1);
	assert_int_equal(n[1].status, EB_EDUPADDR);
	close_all(t, n, 2);
}

static int
reregistered_pred(void *arg)
{
	rnode *n = arg;

	return n->registered >= 2 || n->failed > 0;
}

static void
test_expiry_reregisters(void **state)
{
	th_loop *t = *state;
	rnode    n;
	int64_t  czxid;
	char     old[128];

	rn_open(t, &n, "id-1", "a:1", 0);
	assert_int_equal(th_run_until(t, registered_pred, &n, 2000), 0);
	czxid = eb__registry_member_czxid(n.reg);
	(void) snprintf(
	    old, sizeof(old), "%s", eb__registry_member_path(n.reg));
	fakezk_expire(n.zk);
	assert_int_equal(th_run_until(t, reregistered_pred, &n, 2000), 0);
	assert_int_equal(n.lost, 1);
	assert_int_equal(n.registered, 2);
	assert_true(eb__registry_member_czxid(n.reg) > czxid);
	assert_false(fakezk_exists(srv, old));
	assert_int_equal(fakezk_child_count(srv, MEMBERS), 1);
	assert_true(fakezk_exists(srv, CLAIM));
	close_all(t, &n, 1);
}

static void
test_expiry_address_taken(void **state)
{
	th_loop *t = *state;
	rnode    n[2];

	rn_open(t, &n[0], "id-1", "a:1", 0);
	assert_int_equal(th_run_until(t, registered_pred, &n[0], 2000), 0);
	fakezk_disconnect(n[0].zk);
	fakezk_server_expire_session(srv, fakezk_session(n[0].zk));
	rn_open(t, &n[1], "id-2", "a:1", 0);
	assert_int_equal(th_run_until(t, registered_pred, &n[1], 2000), 0);
	assert_int_equal(n[1].registered, 1);
	fakezk_reconnect(n[0].zk);
	assert_int_equal(th_run_until(t, reregistered_pred, n, 2000), 0);
	assert_int_equal(n[0].lost, 1);
	assert_int_equal(n[0].failed, 1);
	assert_int_equal(n[0].status, EB_EDUPADDR);
	assert_int_equal(fakezk_child_count(srv, MEMBERS), 1);
	close_all(t, n, 2);
}

static void
test_leave(void **state)
{
	th_loop *t = *state;
	rnode    n;

	rn_open(t, &n, "id-1", "a:1", 0);
	assert_int_equal(th_run_until(t, registered_pred, &n, 2000), 0);
	assert_int_equal(eb__registry_leave(n.reg), 0);
	assert_int_equal(th_run_until(t, th_flag_set, &n.left, 2000), 0);
	assert_int_equal(n.status, 0);
	/* Deleted by the multi, while the session is still open. */
	assert_int_equal(fakezk_child_count(srv, MEMBERS), 0);
	assert_false(fakezk_exists(srv, CLAIM));
	assert_int_equal(eb__zk_get_state(n.zk), EB_ZK_STATE_CONNECTED);
	close_all(t, &n, 1);
}

static void
test_rejoin(void **state)
{
	th_loop *t = *state;
	rnode    n;
	int64_t  seq;
	char     old[128];
	char     buf[256];

	rn_open(t, &n, "id-1", "a:1", 0);
	assert_int_equal(th_run_until(t, registered_pred, &n, 2000), 0);
	seq = eb__registry_member_seq(n.reg);
	(void) snprintf(
	    old, sizeof(old), "%s", eb__registry_member_path(n.reg));
	assert_int_equal(eb__registry_rejoin(n.reg), 0);
	assert_int_equal(th_run_until(t, reregistered_pred, &n, 2000), 0);
	assert_int_equal(n.registered, 2);
	assert_true(eb__registry_member_seq(n.reg) > seq);
	assert_false(fakezk_exists(srv, old));
	assert_int_equal(fakezk_child_count(srv, MEMBERS), 1);
	/* The claim was kept and names the new attempt. */
	assert_int_equal(fakezk_get(srv, CLAIM, buf, sizeof(buf), NULL), 0);
	{
		json_t *o = json_loads(buf, 0, NULL);

		assert_non_null(strstr(eb__registry_member_name(n.reg),
		    json_string_value(json_object_get(o, "attempt"))));
		json_decref(o);
	}
	close_all(t, &n, 1);
}

/* The member and the claim deleted from outside: REREGISTERING at once,
 * then a new member and a new claim (nobody else holds the address). */
static void
test_member_and_claim_deleted(void **state)
{
	th_loop *t = *state;
	rnode    n;
	char     old[128];
	char     buf[256];
	json_t  *o;

	rn_open(t, &n, "id-1", "a:1", 0);
	assert_int_equal(th_run_until(t, registered_pred, &n, 2000), 0);
	(void) snprintf(
	    old, sizeof(old), "%s", eb__registry_member_path(n.reg));
	assert_int_equal(fakezk_del(srv, CLAIM), 0);
	assert_int_equal(fakezk_del(srv, old), 0);
	assert_int_equal(th_run_until(t, reregistered_pred, &n, 2000), 0);
	assert_int_equal(n.rereg, 1);
	assert_int_equal(n.registered, 2);
	assert_int_equal(n.failed, 0);
	assert_false(fakezk_exists(srv, old));
	assert_int_equal(fakezk_child_count(srv, MEMBERS), 1);
	assert_int_equal(fakezk_get(srv, CLAIM, buf, sizeof(buf), NULL), 0);
	o = json_loads(buf, 0, NULL);
	assert_non_null(strstr(eb__registry_member_name(n.reg),
	    json_string_value(json_object_get(o, "attempt"))));
	json_decref(o);
	close_all(t, &n, 1);
}

/* The member deleted and the address claimed by another node meanwhile:
 * FAILED/EB_EDUPADDR (rule 7), never a silent half registration. */
static void
test_member_deleted_claim_taken(void **state)
{
	th_loop *t = *state;
	rnode    n;
	char     old[128];

	rn_open(t, &n, "id-1", "a:1", 0);
	assert_int_equal(th_run_until(t, registered_pred, &n, 2000), 0);
	(void) snprintf(
	    old, sizeof(old), "%s", eb__registry_member_path(n.reg));
	assert_int_equal(fakezk_del(srv, CLAIM), 0);
	assert_int_equal(
	    fakezk_put(srv, CLAIM, "{\"attempt\":\"x\",\"node_id\":\"thief\"}",
	        0x4242),
	    0);
	assert_int_equal(fakezk_del(srv, old), 0);
	assert_int_equal(th_run_until(t, failed_pred, &n, 2000), 0);
	assert_int_equal(n.rereg, 1);
	assert_int_equal(n.status, EB_EDUPADDR);
	assert_non_null(
	    strstr(eb__registry_holder(n.reg), "node_id=\"thief\""));
	assert_false(eb__registry_reregistering(n.reg));
	close_all(t, &n, 1);
}

static void
test_encode_and_parse(void **state)
{
	char   *s;
	int64_t seq;
	char    uuid[37];

	(void) state;
	s = eb__member_encode_address("host:7/a b");
	assert_string_equal(s, "host%3A7%2Fa%20b");
	free(s);
	assert_int_equal(
	    eb__member_parse_name(
	        "m-0123456789abcdef0123456789abcdef0123-0000000042", &seq,
	        uuid),
	    0);
	assert_int_equal(seq, 42);
	assert_string_equal(uuid, "0123456789abcdef0123456789abcdef0123");
	assert_int_equal(
	    eb__member_parse_name("leader", &seq, NULL), EB_EPROTO);
	assert_int_equal(eb__member_parse_name("m-x-1", &seq, NULL), EB_EPROTO);
}

int
main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode_and_parse),
		cmocka_unit_test_setup_teardown(test_register, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_duplicate, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_ambiguous_applied, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_ambiguous_not_applied, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_stale_claim_waits, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_stale_claim_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_expiry_reregisters, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_expiry_address_taken, setup, teardown),
		cmocka_unit_test_setup_teardown(test_leave, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rejoin, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_member_and_claim_deleted, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_member_deleted_claim_taken, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
