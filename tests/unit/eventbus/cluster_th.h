/*
 * Shared helpers for the clustered bus tests: n buses, each with a link
 * manager, all linked on the test's loop over 127.0.0.1, and waits on the
 * interest one bus has learned from its peers. Header-only (static).
 */
#ifndef EB_TEST_CLUSTER_TH_H
#define EB_TEST_CLUSTER_TH_H

#include <stdio.h>

#include <ebnode/bus.h>
#include <ebnode/link.h>

#include "tests/unit/eventbus/bus_th.h"

typedef struct cnode {
	eb_bus      *bus;
	eb_link_mgr *mgr;
	char         id[16];
	int          mgr_closed;
} cnode;

static int n_bus_closed;

static __attribute__((unused)) void
cbus_closed_cb(eb_bus *bus, void *arg)
{
	(void) bus;
	(void) arg;
	n_bus_closed++;
}

static __attribute__((unused)) void
cmgr_closed_cb(eb_link_mgr *m, void *arg)
{
	(void) m;
	((cnode *) arg)->mgr_closed = 1;
}

struct all_up {
	cnode *n;
	int    count;
};

static __attribute__((unused)) int
all_up_pred(void *arg)
{
	struct all_up *u = arg;

	for (int i = 0; i < u->count; i++) {
		for (int j = 0; j < u->count; j++) {
			if (i != j &&
			    !eb_link_mgr_peer_up(u->n[i].mgr, u->n[j].id)) {
				return 0;
			}
		}
	}
	return 1;
}

static __attribute__((unused)) void
cluster_open(th_loop *t, cnode *n, int count, uint32_t queue_max)
{
	for (int i = 0; i < count; i++) {
		eb_bus_opts  bo;
		eb_link_opts lo;

		memset(&n[i], 0, sizeof(n[i]));
		(void) snprintf(n[i].id, sizeof(n[i].id), "node-%c", 'a' + i);
		eb_bus_opts_init(&bo);
		bo.node_id = n[i].id;
		if (queue_max != 0) {
			bo.consumer_queue_max = queue_max;
		}
		assert_int_equal(eb_bus_new(&t->loop, &bo, &n[i].bus), 0);
		eb_link_opts_init(&lo);
		lo.node_id = n[i].id;
		assert_int_equal(
		    eb_link_mgr_new(&t->loop, &lo, &n[i].mgr, NULL), 0);
		assert_int_equal(eb_bus_cluster_attach(n[i].bus, n[i].mgr), 0);
		assert_int_equal(
		    eb_bus_cluster_attach(n[i].bus, n[i].mgr), UV_EBUSY);
		assert_int_equal(eb_link_mgr_start(n[i].mgr), 0);
	}
	for (int i = 0; i < count; i++) {
		for (int j = 0; j < count; j++) {
			assert_int_equal(
			    eb_link_mgr_peer_add(n[i].mgr, n[j].id, "127.0.0.1",
			        eb_link_mgr_port(n[j].mgr)),
			    0);
		}
	}
	struct all_up u = { n, count };
	assert_int_equal(th_run_until(t, all_up_pred, &u, 3000), 0);
}

static __attribute__((unused)) int
cluster_closed_pred(void *arg)
{
	struct all_up *u = arg;

	for (int i = 0; i < u->count; i++) {
		if (!u->n[i].mgr_closed) {
			return 0;
		}
	}
	return n_bus_closed == u->count;
}

static __attribute__((unused)) void
cluster_close(th_loop *t, cnode *n, int count)
{
	struct all_up u = { n, count };

	n_bus_closed = 0;
	for (int i = 0; i < count; i++) {
		eb_bus_close(n[i].bus, cbus_closed_cb, NULL);
		if (!n[i].mgr_closed) {
			eb_link_mgr_close(n[i].mgr, cmgr_closed_cb, &n[i]);
		}
	}
	assert_int_equal(th_run_until(t, cluster_closed_pred, &u, 3000), 0);
}

struct remote_seen {
	const char *address;
	uint32_t    remote_handlers;
	uint32_t    remote_nodes;
};

static __attribute__((unused)) void
remote_stats_cb(const eb_bus_addr_stats *s, void *arg)
{
	struct remote_seen *r = arg;

	if (strcmp(s->address, r->address) == 0) {
		r->remote_handlers = s->remote_handlers;
		r->remote_nodes = s->remote_nodes;
	}
}

static __attribute__((unused)) uint32_t
remote_handlers(eb_bus *bus, const char *address)
{
	struct remote_seen r = { address, 0, 0 };

	eb_bus_stats_foreach(bus, remote_stats_cb, &r);
	return r.remote_handlers;
}

struct wait_remote {
	eb_bus     *bus;
	const char *address;
	uint32_t    want;
};

static __attribute__((unused)) int
remote_pred(void *arg)
{
	struct wait_remote *w = arg;

	return remote_handlers(w->bus, w->address) == w->want;
}

static __attribute__((unused)) void
wait_remote(th_loop *t, eb_bus *bus, const char *address, uint32_t want)
{
	struct wait_remote w = { bus, address, want };

	assert_int_equal(th_run_until(t, remote_pred, &w, 2000), 0);
}

#endif
