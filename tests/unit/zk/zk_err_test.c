/* eb__err_from_zk: every ZooKeeper 3.8 code maps to 0 or an EB_EZK* code. */
#include <string.h>

#include <uv.h>
#include <zookeeper/zookeeper.h>

#include <ebnode/err.h>

#include "tests/harness/th.h"
#include "zk/zk_int.h"

struct row {
	int         zrc;
	int         eb;
	const char *name;
};

#define ROW(z, e)        \
	{                \
		z, e, #z \
	}

static const struct row rows[] = {
	ROW(ZOK, 0),
	ROW(ZSYSTEMERROR, EB_EZKSYSTEM),
	ROW(ZRUNTIMEINCONSISTENCY, EB_EZKRUNTIME),
	ROW(ZDATAINCONSISTENCY, EB_EZKRUNTIME),
	ROW(ZCONNECTIONLOSS, EB_EZKLOSS),
	ROW(ZMARSHALLINGERROR, EB_EZKMARSHALL),
	ROW(ZUNIMPLEMENTED, EB_EZKSYSTEM),
	ROW(ZOPERATIONTIMEOUT, EB_EZKOPTIMEOUT),
	ROW(ZBADARGUMENTS, EB_EZKBADARGS),
	ROW(ZINVALIDSTATE, EB_EZKINVALIDSTATE),
	ROW(ZNEWCONFIGNOQUORUM, EB_EZKSYSTEM),
	ROW(ZRECONFIGINPROGRESS, EB_EZKSYSTEM),
	ROW(ZSSLCONNECTIONERROR, EB_EZKLOSS),
	ROW(ZAPIERROR, EB_EZKSYSTEM),
	ROW(ZNONODE, EB_EZKNONODE),
	ROW(ZNOAUTH, EB_EZKNOAUTH),
	ROW(ZBADVERSION, EB_EZKBADVERSION),
	ROW(ZNOCHILDRENFOREPHEMERALS, EB_EZKEPHEMERALCHILD),
	ROW(ZNODEEXISTS, EB_EZKNODEEXISTS),
	ROW(ZNOTEMPTY, EB_EZKNOTEMPTY),
	ROW(ZSESSIONEXPIRED, EB_EZKEXPIRED),
	ROW(ZINVALIDCALLBACK, EB_EZKBADARGS),
	ROW(ZINVALIDACL, EB_EZKBADARGS),
	ROW(ZAUTHFAILED, EB_EZKAUTH),
	ROW(ZCLOSING, EB_EZKCLOSING),
	ROW(ZNOTHING, EB_EZKNOTHING),
	ROW(ZSESSIONMOVED, EB_EZKLOSS),
	ROW(ZNOTREADONLY, EB_EZKSYSTEM),
	ROW(ZEPHEMERALONLOCALSESSION, EB_EZKSYSTEM),
	ROW(ZNOWATCHER, EB_EZKBADARGS),
	ROW(ZRECONFIGDISABLED, EB_EZKSYSTEM),
	ROW(ZSESSIONCLOSEDREQUIRESASLAUTH, EB_EZKAUTH),
	ROW(ZTHROTTLEDOP, EB_EZKLOSS),
};

static void
test_every_code(void **state)
{
	size_t i;

	(void) state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int eb = eb__err_from_zk(rows[i].zrc);

		if (eb != rows[i].eb) {
			fail_msg("%s -> %s, want %s", rows[i].name,
			    eb_err_name(eb), eb_err_name(rows[i].eb));
		}
		assert_string_equal(eb__zk_rc_name(rows[i].zrc), rows[i].name);
		/* Every failure is a project code, never a libuv/errno one. */
		if (rows[i].zrc != ZOK) {
			assert_true(eb <= -20000 && eb >= -20999);
			assert_string_not_equal(
			    eb_err_name(eb), eb_err_name(EB_EUNKNOWN));
		}
	}
}

static void
test_system_error_is_not_eperm(void **state)
{
	(void) state;
	/* The collision the translation exists for. */
	assert_int_equal(ZSYSTEMERROR, UV_EPERM);
	assert_int_not_equal(eb__err_from_zk(ZSYSTEMERROR), UV_EPERM);
	assert_int_equal(eb__err_from_zk(ZSYSTEMERROR), EB_EZKSYSTEM);
}

static void
test_unknown_codes(void **state)
{
	static const int unknown[] = { -10, -11, -12, -16, -99, -104, -109,
		-122, -125, -126, -128, -1000, 1, 42 };
	size_t           i;

	(void) state;
	for (i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		assert_int_equal(eb__err_from_zk(unknown[i]), EB_EZKSYSTEM);
		assert_string_equal(eb__zk_rc_name(unknown[i]), "Z?");
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_code),
		cmocka_unit_test(test_system_error_is_not_eperm),
		cmocka_unit_test(test_unknown_codes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
