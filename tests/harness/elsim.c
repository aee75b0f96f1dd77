/* A simulated cluster node for the election tests; see elsim.h. */
#include "tests/harness/elsim.h"

#include <stdio.h>
#include <string.h>

#include "election/election_owner.h"

static void
sim_event_cb(eb__zk *zk, eb__zk_event ev, void *arg)
{
	elsim *s = arg;

	(void) zk;
	if (s->reg == NULL) {
		return;
	}
	eb__election_session_event(s->el, ev);
	eb__registry_session_event(s->reg, ev);
}

static void
sim_reg_cb(eb__registry *r, eb__registry_event ev, int status, void *arg)
{
	elsim *s = arg;

	(void) status;
	if (ev == EB_REGISTRY_REGISTERED) {
		s->registered++;
	} else if (ev == EB_REGISTRY_FAILED) {
		s->failed++;
	} else if (ev == EB_REGISTRY_REREGISTERING) {
		s->rereg++;
		s->rereg_state_ok = eb__registry_reregistering(r) &&
		                    !eb__registry_is_registered(r) &&
		                    eb__registry_member_name(r) == NULL;
	}
	eb__election_registry_event(s->el, ev);
}

void
elsim_elected_cb(eb_election *e, int64_t epoch, void *arg)
{
	elsim *s = arg;

	(void) e;
	s->elected++;
	s->leader = 1;
	s->epoch = epoch;
}

void
elsim_revoked_cb(eb_election *e, const char *reason, void *arg)
{
	elsim *s = arg;

	(void) e;
	s->revoked++;
	s->leader = 0;
	(void) snprintf(s->reason, sizeof(s->reason), "%s", reason);
}

void
elsim_open(elsim *s, uv_loop_t *loop, fakezk_server *srv, int i, int eligible,
    uint32_t timeout_ms, const eb_election_opts *eo)
{
	eb__registry_opts o;
	eb_election_opts  e;
	char              addr[32];

	memset(s, 0, sizeof(*s));
	(void) snprintf(s->id, sizeof(s->id), "n%d", i);
	(void) snprintf(addr, sizeof(addr), "addr-%d", i);
	assert_int_equal(
	    fakezk_client_new(srv, timeout_ms, sim_event_cb, s, &s->zk), 0);
	eb__registry_opts_init(&o);
	o.root = "/ebnode/e";
	o.node_id = s->id;
	o.address = addr;
	o.eligible = eligible;
	assert_int_equal(
	    eb__registry_new(loop, s->zk, &o, sim_reg_cb, s, &s->reg), 0);
	if (eo != NULL) {
		e = *eo;
	} else {
		eb_election_opts_init(&e);
	}
	e.eligible = eligible;
	assert_int_equal(eb__election_new(loop, s->zk, s->reg, &e,
	                     elsim_elected_cb, elsim_revoked_cb, s, &s->el),
	    0);
	eb__election_set_identity(s->el, s->id, addr);
	assert_int_equal(eb__zk_start(s->zk), 0);
	assert_int_equal(eb__registry_start(s->reg), 0);
	assert_int_equal(eb__election_start(s->el), 0);
	s->open = 1;
}

void
elsim_el_closed_cb(eb_election *e, void *arg)
{
	(void) e;
	((elsim *) arg)->closed++;
}

static void
sim_reg_closed_cb(eb__registry *r, void *arg)
{
	(void) r;
	((elsim *) arg)->closed++;
}

static void
sim_zk_closed_cb(eb__zk *zk, void *arg)
{
	(void) zk;
	((elsim *) arg)->closed++;
}

void
elsim_close_begin(elsim *s)
{
	if (!s->open) {
		return;
	}
	s->open = 0;
	eb_election_close(s->el, elsim_el_closed_cb, s);
	eb__registry_close(s->reg, sim_reg_closed_cb, s);
	s->reg = NULL;
	eb__zk_close(s->zk, sim_zk_closed_cb, s);
}

int
elsim_closed_pred(void *arg)
{
	return ((elsim *) arg)->closed == 3;
}

int
elsim_registered_pred(void *arg)
{
	return ((elsim *) arg)->registered > 0;
}
