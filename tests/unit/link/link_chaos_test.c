/*
 * Lifecycle chaos for node links: four managers on one loop; a seeded
 * random mix of peer adds (right and wrong ports, host names), removals,
 * cut connections, frames, and whole managers closed and re-created on new
 * ports. Afterwards every manager is told about every other one and the
 * mesh must converge (all links up, a frame through each). Up/down reports
 * must alternate per peer. Under ASan nothing may leak or be used after
 * free. EB_CHAOS_SEED and EB_CHAOS_STEPS override the defaults.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/link.h>

#include "link/link.h"
#include "link/link_int.h"
#include "tests/harness/th.h"

#define N      4
#define PEERID 8192

static uint64_t rng_state;

static uint32_t
rng(uint32_t n)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t) ((rng_state * 2685821657736338717ull) >> 33) % n;
}

typedef struct cnode {
	eb_link_mgr *mgr;
	char         id[8];
	int          closing;
	int          up[PEERID]; /* per peer id: 1 while reported up */
	int          bad;        /* up twice or down without up */
	int          frames;
} cnode;

static cnode    nodes[N];
static th_loop *loop_t;

static void
up_cb(void *ctx, uint32_t peer, const char *node_id)
{
	cnode *n = ctx;

	(void) node_id;
	if (peer >= PEERID || n->up[peer]) {
		n->bad++;
		return;
	}
	n->up[peer] = 1;
}

static void
down_cb(void *ctx, uint32_t peer)
{
	cnode *n = ctx;

	if (peer >= PEERID || !n->up[peer]) {
		n->bad++;
		return;
	}
	n->up[peer] = 0;
}

static void
frame_cb(void *ctx, uint32_t peer, uint8_t type, const char *p, size_t len)
{
	(void) peer;
	(void) type;
	(void) p;
	(void) len;
	((cnode *) ctx)->frames++;
}

static const eb__link_handler handler = { up_cb, down_cb, frame_cb, NULL,
	NULL };

static int closed_count;

static void
closed_cb(eb_link_mgr *m, void *arg)
{
	(void) m;
	(void) arg;
	closed_count++;
}

static void
node_start(int i)
{
	cnode       *n = &nodes[i];
	eb_link_opts o;

	memset(n, 0, sizeof(*n));
	(void) snprintf(n->id, sizeof(n->id), "n%d", i);
	eb_link_opts_init(&o);
	o.node_id = n->id;
	o.backoff_min_ms = 10;
	o.backoff_max_ms = 80;
	o.heartbeat_ms = 50;
	o.dead_ms = 400;
	o.connect_timeout_ms = 300;
	assert_int_equal(eb_link_mgr_new(&loop_t->loop, &o, &n->mgr, NULL), 0);
	eb__link_mgr_set_handler(n->mgr, &handler, n);
	assert_int_equal(eb_link_mgr_start(n->mgr), 0);
}

static void
node_stop(int i)
{
	cnode *n = &nodes[i];

	/* Its peers see the links drop; it reports its own downs. */
	eb_link_mgr_close(n->mgr, closed_cb, NULL);
	n->mgr = NULL;
}

static void
chaos_op(void)
{
	int      i = (int) rng(N);
	int      j = (int) rng(N);
	cnode   *a = &nodes[i];
	cnode   *b = &nodes[j];
	eb__buf *buf;

	if (a->mgr == NULL) {
		node_start(i);
		return;
	}
	switch (rng(10)) {
	case 0:
	case 1:
	case 2:
		if (b->mgr != NULL) {
			(void) eb_link_mgr_peer_add(a->mgr, b->id,
			    rng(4) == 0 ? "localhost" : "127.0.0.1",
			    eb_link_mgr_port(b->mgr));
		}
		break;
	case 3: {
		/* A wrong port: another chaos node (wrong hello) or port 1
		 * (refused). Never a random port: the machine is shared. */
		cnode *w = &nodes[rng(N)];

		(void) eb_link_mgr_peer_add(a->mgr, b->id, "127.0.0.1",
		    w != b && w->mgr != NULL ? eb_link_mgr_port(w->mgr) : 1);
		break;
	}
	case 4:
		(void) eb_link_mgr_peer_remove(a->mgr, b->id);
		break;
	case 5: {
		link_peer *p = eb__link_peer_find(a->mgr, b->id);

		if (p != NULL && p->conn != NULL) {
			eb__link_conn_close(p->conn, "chaos");
		}
		break;
	}
	case 6:
		if (rng(8) == 0) {
			node_stop(i);
		}
		break;
	default: {
		link_peer *p = eb__link_peer_find(a->mgr, b->id);

		if (p != NULL && (buf = eb__link_frame_begin(a->mgr, p->id,
		                      EB_LINK_FRAME_USER)) != NULL) {
			eb__buf_append(buf, "chaos", 5);
			(void) eb__link_frame_end(a->mgr, p->id);
		}
		break;
	}
	}
}

static int
mesh_up(void *arg)
{
	(void) arg;
	for (int i = 0; i < N; i++) {
		for (int j = 0; j < N; j++) {
			if (i != j &&
			    !eb_link_mgr_peer_up(nodes[i].mgr, nodes[j].id)) {
				return 0;
			}
		}
	}
	return 1;
}

static int
frames_seen(void *arg)
{
	int want = *(int *) arg;

	for (int i = 0; i < N; i++) {
		if (nodes[i].frames < want) {
			return 0;
		}
	}
	return 1;
}

static int
all_closed(void *arg)
{
	return closed_count >= *(int *) arg;
}

/* After the chaos: everyone back, everyone told the truth, all links up. */
static void
converge(th_loop *t)
{
	for (int i = 0; i < N; i++) {
		if (nodes[i].mgr == NULL) {
			node_start(i);
		}
	}
	for (int i = 0; i < N; i++) {
		for (int j = 0; j < N; j++) {
			assert_int_equal(
			    eb_link_mgr_peer_add(nodes[i].mgr, nodes[j].id,
			        "127.0.0.1", eb_link_mgr_port(nodes[j].mgr)),
			    0);
		}
	}
	assert_int_equal(th_run_until(t, mesh_up, NULL, 10000), 0);
}

/* Every node sends one frame to every other node (counters reset). */
static void
send_finals(void)
{
	for (int i = 0; i < N; i++) {
		nodes[i].frames = 0;
		for (int j = 0; j < N; j++) {
			link_peer *p =
			    eb__link_peer_find(nodes[i].mgr, nodes[j].id);
			eb__buf *buf;

			if (i == j) {
				continue;
			}
			assert_non_null(p);
			buf = eb__link_frame_begin(
			    nodes[i].mgr, p->id, EB_LINK_FRAME_USER);
			assert_non_null(buf);
			eb__buf_append(buf, "final", 5);
			assert_int_equal(
			    eb__link_frame_end(nodes[i].mgr, p->id), 0);
		}
	}
}

static void
test_link_chaos(void **state)
{
	th_loop    *t = *state;
	const char *s = getenv("EB_CHAOS_SEED");
	const char *st = getenv("EB_CHAOS_STEPS");
	uint64_t    seed = s != NULL ? strtoull(s, NULL, 10) : 20261121;
	int         steps = st != NULL ? (int) strtol(st, NULL, 10) : 3000;
	int         want;
	int         bad = 0;

	th_watchdog_ms(t, 60000);
	loop_t = t;
	closed_count = 0;
	rng_state = seed != 0 ? seed : 1;
	printf("link chaos: seed=%llu steps=%d\n", (unsigned long long) seed,
	    steps);
	for (int i = 0; i < N; i++) {
		node_start(i);
	}
	for (int i = 0; i < steps; i++) {
		chaos_op();
		if (i % 5 == 0) {
			(void) uv_run(&t->loop, UV_RUN_NOWAIT);
		}
	}
	converge(t);
	send_finals();
	want = N - 1;
	assert_int_equal(th_run_until(t, frames_seen, &want, 5000), 0);
	want = closed_count + N;
	for (int i = 0; i < N; i++) {
		bad += nodes[i].bad;
		node_stop(i);
	}
	assert_int_equal(th_run_until(t, all_closed, &want, 5000), 0);
	assert_int_equal(bad, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_link_chaos, th_setup, th_teardown),
	};

	(void) signal(SIGPIPE, SIG_IGN); /* peers go away mid-write */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
