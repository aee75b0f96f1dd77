/*
 * Error codes. Every fallible ebnode function returns 0 or a negative code:
 * either a libuv code (UV_E*, negated errno values, passed through unchanged)
 * or a project code from EB_ERR_MAP in the range -20999..-20000.
 *
 * Foreign codes are translated where they enter: ZooKeeper codes in cluster/
 * (eb__err_from_zk), OpenSSL errors in bridge/ (EB_ETLS), jansson errors to
 * EB_ECONF or EB_EFRAME. Raw ZooKeeper codes never leave cluster/: ZSYSTEMERROR
 * is -1, the same number as -EPERM.
 */
#ifndef EBNODE_ERR_H
#define EBNODE_ERR_H

#include <stddef.h>

#include <ebnode/api.h>

#define EB_ERR_MAP(XX)                                                   \
	XX(EUNKNOWN, -20000, "unknown error")                            \
	XX(ENOHANDLERS, -20001, "no consumer registered for address")    \
	XX(EFRAME, -20002, "malformed or oversized frame")               \
	XX(ECONF, -20003, "invalid configuration")                       \
	XX(ETLS, -20004, "TLS error")                                    \
	XX(ETIMEOUT, -20005, "timed out")                                \
	XX(ECANCELED, -20006, "operation canceled")                      \
	XX(ECLOSED, -20007, "object is closing or closed")               \
	XX(EDENIED, -20008, "access denied")                             \
	XX(EFULL, -20009, "queue full")                                  \
	XX(EZKLOSS, -20010, "ZooKeeper connection lost")                 \
	XX(EZKEXPIRED, -20011, "ZooKeeper session expired")              \
	XX(EZKAUTH, -20012, "ZooKeeper authentication failed")           \
	XX(EZKNONODE, -20013, "ZooKeeper node does not exist")           \
	XX(EZKNODEEXISTS, -20014, "ZooKeeper node already exists")       \
	XX(EZKBADVERSION, -20015, "ZooKeeper version mismatch")          \
	XX(EZKNOTEMPTY, -20016, "ZooKeeper node has children")           \
	XX(EZKNOAUTH, -20017, "ZooKeeper ACL denies the operation")      \
	XX(EZKBADARGS, -20018, "invalid ZooKeeper arguments")            \
	XX(EZKINVALIDSTATE, -20019, "ZooKeeper handle in invalid state") \
	XX(EZKSYSTEM, -20020, "ZooKeeper system or server error")        \
	XX(EZKMARSHALL, -20021, "ZooKeeper (un)marshalling error")       \
	XX(EZKOPTIMEOUT, -20022, "ZooKeeper operation timed out")        \
	XX(EZKEPHEMERALCHILD, -20023,                                    \
	    "ZooKeeper ephemerals cannot have children")                 \
	XX(EZKCLOSING, -20024, "ZooKeeper handle is closing")            \
	XX(EZKNOTHING, -20025, "ZooKeeper server has no response")       \
	XX(EZKRUNTIME, -20026, "ZooKeeper runtime inconsistency")        \
	XX(EZKTOOBIG, -20027,                                            \
	    "ZooKeeper request exceeds zookeeper.max_request_bytes")     \
	XX(EDUPADDR, -20030, "node address already registered")          \
	XX(ENOTLEADER, -20031, "not the leader")                         \
	XX(ENOLEADER, -20032, "no leader known")                         \
	XX(ERECIPIENT, -20033, "recipient failure")                      \
	XX(EPROTO, -20034, "protocol error")                             \
	XX(EAUTH, -20035, "authentication failed")                       \
	XX(ELINKDOWN, -20036, "cluster link down")                       \
	XX(ENOROUTE, -20037, "no route for message")                     \
	XX(EFENCED, -20045, "message from a superseded leader epoch")    \
	XX(EDUPLICATE, -20046,                                           \
	    "duplicate: a message with this key was already delivered")  \
	XX(EKEYBUSY, -20047, "a delivery with this key is still in progress")

enum eb_err {
#define XX(name, val, msg) EB_##name = (val),
	EB_ERR_MAP(XX)
#undef XX
};

/* Human-readable text for any code (project, libuv/errno). Never NULL. */
EB_API const char *eb_strerror(int err);
/* Symbolic name ("EB_EFRAME", "UV_ECONNRESET", ...). Never NULL. */
EB_API const char *eb_err_name(int err);

/* Optional detail buffer that fallible functions fill when non-NULL. */
#define EB_ERRBUF_SIZE 256
typedef struct eb_errbuf {
	char msg[EB_ERRBUF_SIZE];
} eb_errbuf;

/* Formats into e (if non-NULL) and returns err, for `return eb_errf(...)`. */
EB_API int eb_errf(eb_errbuf *e, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
