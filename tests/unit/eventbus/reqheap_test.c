/* Unit test of the pending requests' deadline heap (request.c): random
 * insert, remove and expire order against a reference (a linear scan for
 * the smallest (deadline, seq)), with the heap property and every index
 * back-pointer checked as it goes; and the pending table's lookup by reply
 * address (only the exact address finds its request). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventbus/eventbus_int.h"
#include "tests/harness/th.h"
#include "tests/unit/eventbus/bus_th.h"

#define N_REQS 512
#define N_OPS  50000
#define N_BIG  8192

static uint64_t rng_state;

/* xorshift64*: a fixed seed makes every run the same sequence. */
static uint64_t
rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static int
before(const eb__bus_req *a, const eb__bus_req *b)
{
	return a->deadline < b->deadline ||
	       (a->deadline == b->deadline && a->seq < b->seq);
}

/* The reference: the smallest of the requests marked in. */
static eb__bus_req *
ref_min(eb__bus_req *reqs, const int *in)
{
	eb__bus_req *m = NULL;
	size_t       i;

	for (i = 0; i < N_REQS; i++) {
		if (in[i] && (m == NULL || before(&reqs[i], m))) {
			m = &reqs[i];
		}
	}
	return m;
}

static void
check_shape(const eb__bus_reqheap *h)
{
	size_t i;

	for (i = 0; i < h->n; i++) {
		assert_int_equal(h->v[i]->hidx, i);
		if (i > 0) {
			assert_false(before(h->v[i], h->v[(i - 1) / 2]));
		}
	}
}

/* The heap under test and the reference set it must match. */
typedef struct model {
	eb__bus_req    *reqs;
	int            *in; /* in[i]: reqs[i] is in the heap */
	eb__bus_reqheap h;
	size_t          n_in;
	uint64_t        seq;
	int             pushes, removes, pops;
} model;

static void
model_take(model *md, eb__bus_req *r)
{
	eb__bus_reqheap_remove(&md->h, r);
	md->in[r - md->reqs] = 0;
	md->n_in--;
}

/* One random operation: push (half), remove from the middle (30%) or
 * expire the first (20%). */
static void
model_step(model *md)
{
	size_t   i = (size_t) (rng() % N_REQS);
	uint64_t kind = rng() % 10;

	if (kind >= 5 && kind < 8 && md->n_in > 0) {
		/* Remove: the next member from a random place. */
		while (!md->in[i]) {
			i = (i + 1) % N_REQS;
		}
	}
	if (!md->in[i] && kind < 5) {
		/* Few distinct deadlines, so ties (broken by seq) are
		 * common. */
		md->reqs[i].deadline = rng() % 64;
		md->reqs[i].seq = ++md->seq;
		eb__bus_reqheap_push(&md->h, &md->reqs[i]);
		md->in[i] = 1;
		md->n_in++;
		md->pushes++;
	} else if (md->in[i] && kind < 8) {
		model_take(md, &md->reqs[i]);
		md->removes++;
	} else if (md->n_in > 0) {
		/* Expire: the first deadline goes, as in timer_cb. */
		eb__bus_req *m = eb__bus_reqheap_min(&md->h);

		assert_ptr_equal(m, ref_min(md->reqs, md->in));
		model_take(md, m);
		md->pops++;
	}
}

static void
test_heap_random(void **state)
{
	model        md;
	eb__bus_req *prev = NULL;
	eb__bus_req *m;
	int          op;

	(void) state;
	memset(&md, 0, sizeof(md));
	md.reqs = calloc(N_REQS, sizeof(*md.reqs));
	md.in = calloc(N_REQS, sizeof(*md.in));
	rng_state = 0x9e3779b97f4a7c15ULL;
	for (op = 0; op < N_OPS; op++) {
		model_step(&md);
		assert_int_equal(md.h.n, md.n_in);
		assert_ptr_equal(eb__bus_reqheap_min(&md.h),
		    md.n_in > 0 ? ref_min(md.reqs, md.in) : NULL);
		if (op % 1000 == 0) {
			check_shape(&md.h);
		}
	}
	/* Drain in order: increasing (deadline, seq). */
	check_shape(&md.h);
	while ((m = eb__bus_reqheap_min(&md.h)) != NULL) {
		assert_ptr_equal(m, ref_min(md.reqs, md.in));
		if (prev != NULL) {
			assert_true(before(prev, m));
		}
		model_take(&md, m);
		prev = m;
	}
	print_message(
	    "pushes=%d removes=%d pops=%d\n", md.pushes, md.removes, md.pops);
	assert_true(md.pushes > 10000 && md.removes > 5000 && md.pops > 5000);
	/* The array shrank back after the drain. */
	assert_true(md.h.cap <= 64);
	eb__bus_reqheap_free(&md.h);
	free(md.in);
	free(md.reqs);
}

static void
test_heap_sorted_and_reversed(void **state)
{
	eb__bus_req    *reqs = calloc(N_BIG, sizeof(*reqs));
	eb__bus_reqheap h;
	size_t          i;

	(void) state;
	memset(&h, 0, sizeof(h));
	/* Descending deadlines: every push climbs to the root. */
	for (i = 0; i < N_BIG; i++) {
		reqs[i].deadline = N_BIG - i;
		reqs[i].seq = i + 1;
		eb__bus_reqheap_push(&h, &reqs[i]);
		assert_ptr_equal(eb__bus_reqheap_min(&h), &reqs[i]);
	}
	check_shape(&h);
	/* Remove from the middle outward, then drain. */
	for (i = N_BIG / 4; i < N_BIG / 2; i++) {
		eb__bus_reqheap_remove(&h, &reqs[i]);
	}
	check_shape(&h);
	assert_ptr_equal(eb__bus_reqheap_min(&h), &reqs[N_BIG - 1]);
	eb__bus_reqheap_free(&h);
	assert_int_equal(h.n, 0);
	assert_null(eb__bus_reqheap_min(&h));
	free(reqs);
}

/* The reply address a consumer saw, for test_req_find_exact. */
static char seen_reply[64];

static void
keep_reply_cb(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	(void) c;
	(void) arg;
	(void) snprintf(seen_reply, sizeof(seen_reply), "%s",
	    eb_bus_msg_reply_address(msg));
}

static void
ignore_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg)
{
	(void) bus;
	(void) status;
	(void) reply;
	(void) failure;
	(*(int *) arg)++;
}

static int
seen_set(void *arg)
{
	(void) arg;
	return seen_reply[0] != '\0';
}

/* The table is keyed by the id in the address; any other spelling of that
 * id (a leading zero, a suffix, a sign, too many digits) finds nothing. */
static void
test_req_find_exact(void **state)
{
	th_loop         *t = *state;
	eb_bus          *bus = bus_open(t, 60000, 0);
	eb_bus_consumer *c;
	char             alt[96];
	const char      *id;
	int              calls = 0;

	seen_reply[0] = '\0';
	assert_int_equal(
	    eb_bus_consumer_new(bus, "svc", 0, keep_reply_cb, NULL, &c), 0);
	assert_int_equal(
	    eb_bus_request(bus, "svc", NULL, NULL, NULL, ignore_cb, &calls), 0);
	assert_int_equal(th_run_until(t, seen_set, NULL, 2000), 0);
	assert_non_null(eb__bus_req_find(bus, seen_reply));
	id = seen_reply + sizeof(EB_BUS_REPLY_PREFIX) - 1;
	(void) snprintf(alt, sizeof(alt), "%s0%s", EB_BUS_REPLY_PREFIX, id);
	assert_null(eb__bus_req_find(bus, alt));
	(void) snprintf(alt, sizeof(alt), "%sx", seen_reply);
	assert_null(eb__bus_req_find(bus, alt));
	(void) snprintf(alt, sizeof(alt), "%s-%s", EB_BUS_REPLY_PREFIX, id);
	assert_null(eb__bus_req_find(bus, alt));
	(void) snprintf(alt, sizeof(alt), "%s184467440737095516170%s",
	    EB_BUS_REPLY_PREFIX, id);
	assert_null(eb__bus_req_find(bus, alt));
	assert_null(eb__bus_req_find(bus, EB_BUS_REPLY_PREFIX));
	assert_null(eb__bus_req_find(bus, id));
	assert_null(eb__bus_req_find(bus, ""));
	bus_shut(t, bus);
	assert_int_equal(calls, 1); /* canceled at close */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_heap_random),
		cmocka_unit_test(test_heap_sorted_and_reversed),
		cmocka_unit_test_setup_teardown(
		    test_req_find_exact, th_setup, th_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
