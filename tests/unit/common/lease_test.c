/*
 * The leader lease bound (common/lease.c): every row of the table in
 * docs/CLUSTER.md "The lease", and the refusals with the key they blame.
 */
#include <stddef.h>
#include <string.h>

#include <ebnode/err.h>

#include "common/lease.h"
#include "tests/harness/th.h"

typedef struct row {
	uint32_t    session, tick, heartbeat, lease; /* inputs; 0: derive */
	uint32_t    want_h, want_margin, want_lease; /* 0 want_lease: refused */
	const char *want_key;
} row;

static const row table[] = {
	/* docs/CLUSTER.md, top to bottom */
	{ 1000, 0, 0, 0, 250, 50, 450, NULL },
	{ 1000, 200, 0, 0, 250, 50, 600, NULL },
	{ 2000, 0, 0, 0, 500, 100, 900, NULL },
	{ 2000, 500, 0, 0, 500, 100, 1150, NULL },
	{ 2000, 1000, 0, 0, 500, 100, 900, NULL },
	{ 4000, 500, 0, 0, 1000, 200, 2550, NULL },
	{ 4000, 2000, 0, 0, 1000, 200, 1800, NULL },
	{ 10000, 0, 0, 0, 2500, 500, 4500, NULL },
	{ 10000, 2000, 0, 0, 2500, 500, 6000, NULL },
	{ 20000, 2000, 0, 0, 5000, 1000, 13000, NULL },
	{ 40000, 2000, 0, 0, 10000, 2000, 27000, NULL },
	{ 200, 100, 0, 0, 50, 50, 0, "zookeeper.tick_ms" },
	/* refusals and who is blamed */
	{ 200, 0, 0, 0, 50, 50, 0, "zookeeper.session_timeout_ms" },
	{ 1000, 0, 600, 0, 600, 50, 0, "election.heartbeat_ms" },
	{ 10000, 0, 0, 5000, 2500, 500, 0, "election.lease_ms" },
	{ 10000, 0, 0, 2000, 2500, 500, 0, "election.lease_ms" },
	{ 10000, 0, 3000, 2800, 3000, 500, 0, "election.heartbeat_ms" },
	{ 10000, 0, 0, 99, 2500, 500, 0, "election.lease_ms" },
	/* an operator lease at or below the bound is kept */
	{ 2000, 500, 0, 1150, 500, 100, 1150, NULL },
	{ 2000, 500, 0, 600, 500, 100, 600, NULL },
};

static void
test_table(void **state)
{
	size_t i;

	(void) state;
	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		const row    *r = &table[i];
		eb_lease_plan p;
		const char   *key = NULL;
		int           rv = eb__lease_plan(
		              r->session, r->tick, r->heartbeat, r->lease, &p, &key);

		print_message("row %zu: session %u tick %u -> %d %s\n", i,
		    r->session, r->tick, rv, key != NULL ? key : "-");
		assert_int_equal(p.heartbeat_ms, r->want_h);
		assert_int_equal(p.margin_ms, r->want_margin);
		assert_int_equal(p.tick_assumed, r->tick == 0);
		if (r->want_key == NULL) {
			assert_int_equal(rv, 0);
			assert_int_equal(p.lease_ms, r->want_lease);
			assert_null(key);
		} else {
			assert_int_equal(rv, EB_ECONF);
			assert_int_equal(p.lease_ms, 0);
			assert_non_null(key);
			assert_string_equal(key, r->want_key);
		}
	}
}

int
main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
