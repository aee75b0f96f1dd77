/*
 * ZooKeeper return codes -> EB_E* codes (zk_int.h). The single boundary
 * where raw ZooKeeper codes are translated; ZSYSTEMERROR (-1) must never be
 * mistaken for -EPERM, so nothing passes through unchanged.
 */
#include <stddef.h>

#include <zookeeper/zookeeper.h>

#include <ebnode/err.h>

#include "zk/zk_int.h"

/* One row per ZooKeeper 3.8 code: the code, its name, our code. */
#define EB_ZK_RC_MAP(XX)                                   \
	XX(ZOK, 0)                                         \
	XX(ZSYSTEMERROR, EB_EZKSYSTEM)                     \
	XX(ZRUNTIMEINCONSISTENCY, EB_EZKRUNTIME)           \
	XX(ZDATAINCONSISTENCY, EB_EZKRUNTIME)              \
	XX(ZCONNECTIONLOSS, EB_EZKLOSS)                    \
	XX(ZMARSHALLINGERROR, EB_EZKMARSHALL)              \
	XX(ZUNIMPLEMENTED, EB_EZKSYSTEM)                   \
	XX(ZOPERATIONTIMEOUT, EB_EZKOPTIMEOUT)             \
	XX(ZBADARGUMENTS, EB_EZKBADARGS)                   \
	XX(ZINVALIDSTATE, EB_EZKINVALIDSTATE)              \
	XX(ZNEWCONFIGNOQUORUM, EB_EZKSYSTEM)               \
	XX(ZRECONFIGINPROGRESS, EB_EZKSYSTEM)              \
	XX(ZSSLCONNECTIONERROR, EB_EZKLOSS)                \
	XX(ZAPIERROR, EB_EZKSYSTEM)                        \
	XX(ZNONODE, EB_EZKNONODE)                          \
	XX(ZNOAUTH, EB_EZKNOAUTH)                          \
	XX(ZBADVERSION, EB_EZKBADVERSION)                  \
	XX(ZNOCHILDRENFOREPHEMERALS, EB_EZKEPHEMERALCHILD) \
	XX(ZNODEEXISTS, EB_EZKNODEEXISTS)                  \
	XX(ZNOTEMPTY, EB_EZKNOTEMPTY)                      \
	XX(ZSESSIONEXPIRED, EB_EZKEXPIRED)                 \
	XX(ZINVALIDCALLBACK, EB_EZKBADARGS)                \
	XX(ZINVALIDACL, EB_EZKBADARGS)                     \
	XX(ZAUTHFAILED, EB_EZKAUTH)                        \
	XX(ZCLOSING, EB_EZKCLOSING)                        \
	XX(ZNOTHING, EB_EZKNOTHING)                        \
	XX(ZSESSIONMOVED, EB_EZKLOSS)                      \
	XX(ZNOTREADONLY, EB_EZKSYSTEM)                     \
	XX(ZEPHEMERALONLOCALSESSION, EB_EZKSYSTEM)         \
	XX(ZNOWATCHER, EB_EZKBADARGS)                      \
	XX(ZRECONFIGDISABLED, EB_EZKSYSTEM)                \
	XX(ZSESSIONCLOSEDREQUIRESASLAUTH, EB_EZKAUTH)      \
	XX(ZTHROTTLEDOP, EB_EZKLOSS)

struct zk_rc_row {
	int         zrc;
	int         eb;
	const char *name;
};

static const struct zk_rc_row zk_rc_rows[] = {
#define XX(code, eb) { code, eb, #code },
	EB_ZK_RC_MAP(XX)
#undef XX
};

static const struct zk_rc_row *
zk_rc_find(int zrc)
{
	size_t i;

	for (i = 0; i < sizeof(zk_rc_rows) / sizeof(zk_rc_rows[0]); i++) {
		if (zk_rc_rows[i].zrc == zrc) {
			return &zk_rc_rows[i];
		}
	}
	return NULL;
}

int
eb__err_from_zk(int zrc)
{
	const struct zk_rc_row *row = zk_rc_find(zrc);

	/* A code newer than this table is a failure, never a pass-through:
	 * a raw negative ZooKeeper code would read as an errno. */
	return row != NULL ? row->eb : EB_EZKSYSTEM;
}

const char *
eb__zk_rc_name(int zrc)
{
	const struct zk_rc_row *row = zk_rc_find(zrc);

	return row != NULL ? row->name : "Z?";
}
