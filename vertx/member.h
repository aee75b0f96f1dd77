/*
 * This node as a Vert.x 4.5 cluster member in ZooKeeper (docs/VERTX.md
 * "Membership"), under <root> = "/" + vertx.root:
 *
 *   <root>/cluster/nodes/<nodeId>                  EPHEMERAL  NodeInfo
 *   <root>/__vertx.subs/<address>/<nodeId>-<seq>   EPHEMERAL  RegistrationInfo
 *
 * The member writes its NodeInfo (host, port, and the metadata given in
 * the cfg: ebnode marks its nodes {"ebnode":{"engine_address":A}}) and one
 * subscription znode per local consumer (eb__vx_member_sub_add; one per
 * registration, so a node with two consumers of an address gets twice the
 * share of sends, as a JVM does), deletes it on unregister, and keeps two
 * caches current with one-shot watches:
 *   - the members: the children of <root>/cluster/nodes and each one's
 *     NodeInfo (a JVM first writes its id there, then the NodeInfo: such a
 *     node is "not ready" until a data watch brings the real value);
 *   - per address, loaded on first use, the node ids of its registrations
 *     (taken from the child names <nodeId>-<seq>: in ZooKeeper localOnly
 *     is always 0, so the data adds nothing).
 * A new session (after expiry) re-creates the node and every subscription
 * with the same node id and sequence numbers, and reloads both caches.
 *
 * Session events must be forwarded by the zk's owner. Loop thread only. zk
 * is borrowed and must outlive the member; strings are copied. Ids and
 * lists returned are borrowed until the next loop turn.
 */
#ifndef EB_VERTX_MEMBER_H
#define EB_VERTX_MEMBER_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "common/buf.h"
#include "zk/zk.h"

typedef struct eb__vx_member eb__vx_member; /* opaque */

/* A member left (its znode is gone, or the member closed): the transport
 * drops its connection. node_id is borrowed for the call. */
typedef void (*eb__vx_member_gone_cb)(const char *node_id, void *arg);
/* The registrations of an address were (re)loaded; ask again. */
typedef void (*eb__vx_member_ready_cb)(const char *address, void *arg);
/* A member's NodeInfo was read (it is ready). node_id borrowed. */
typedef void (*eb__vx_member_seen_cb)(const char *node_id, void *arg);
typedef void (*eb__vx_member_close_cb)(eb__vx_member *m, void *arg);

typedef struct eb__vx_member_cfg {
	const char            *root;    /* "io.vertx" (no leading '/') */
	const char            *node_id; /* this node's id (a UUID) */
	const char            *host;    /* advertised cluster host */
	int                    port;    /* advertised cluster port */
	eb__vx_member_gone_cb  on_gone; /* may be NULL */
	eb__vx_member_ready_cb on_ready;
	void                  *arg;
	/* The NodeInfo metadata, a JSON object's text; NULL: none. */
	const char           *metadata;
	eb__vx_member_seen_cb on_seen; /* may be NULL */
} eb__vx_member_cfg;

/* No I/O until start. 0 or UV_EINVAL (a missing field, '/' in the id). */
int eb__vx_member_new(uv_loop_t *loop, eb__zk *zk, const eb__vx_member_cfg *cfg,
    eb__vx_member **mp);
/* Registers as soon as the session is connected (now or later). */
int  eb__vx_member_start(eb__vx_member *m);
void eb__vx_member_session_event(eb__vx_member *m, eb__zk_event ev);
/* Exactly once; no callback after it; cb on a later turn. The znodes are
 * left to the session (its close deletes them at once). */
void eb__vx_member_close(
    eb__vx_member *m, eb__vx_member_close_cb cb, void *arg);

/* Mirrors every address under __vertx.subs (as a JVM's TreeCache does),
 * not only those asked for: on_ready(address) after each (re)load, also
 * when an address disappears (then it reads as empty). The bus needs the
 * counts before it routes a send. */
void eb__vx_member_watch_all(eb__vx_member *m);

/* Calls fn for every address known (loaded or being loaded). */
void eb__vx_member_each_addr(
    eb__vx_member *m, void (*fn)(const char *address, void *arg), void *arg);

/* 1 when this node's NodeInfo exists in the current session. */
int eb__vx_member_registered(const eb__vx_member *m);

/* Advertises one consumer of address; *seq identifies it for sub_del.
 * UV_EINVAL for an address ZooKeeper or vertx-zookeeper cannot hold
 * ('/', ".", "..", control characters, empty). Created now or when the
 * session is back. */
int eb__vx_member_sub_add(eb__vx_member *m, const char *address, uint64_t *seq);
/* Withdraws it (deletes its znode). 0, or UV_ENOENT for an unknown one. */
int eb__vx_member_sub_del(eb__vx_member *m, const char *address, uint64_t seq);
/* Subscriptions of this node now (those being created included). */
size_t eb__vx_member_sub_count(const eb__vx_member *m);

/*
 * The registrations of address: 0 and ids[0..*n) (one node id per
 * registration, this node's included; borrowed), or UV_EAGAIN while the
 * address is being loaded: on_ready(address) follows once it is. A
 * listing that failed for a transient reason is retried on the next
 * session event; the address then reads as empty in between.
 */
int eb__vx_member_subs(
    eb__vx_member *m, const char *address, const char *const **ids, size_t *n);

/* A member's advertised host and port: 0, EB_ENOROUTE when node_id is not
 * a member, UV_EAGAIN when its NodeInfo is not there yet. */
int eb__vx_member_peer(
    const eb__vx_member *m, const char *node_id, const char **host, int *port);
/* Members known now (this node included once registered). */
size_t eb__vx_member_peer_count(const eb__vx_member *m);

/* What a member is, by its NodeInfo metadata (this node included). */
enum {
	EB_VX_PEER_UNKNOWN = 0, /* not a member, or NodeInfo not read yet */
	EB_VX_PEER_JVM = 1,     /* no ebnode marker: a JVM */
	EB_VX_PEER_EBNODE = 2
};
int eb__vx_member_peer_kind(const eb__vx_member *m, const char *node_id);
/* 1 when a member's metadata marks it an ebnode node of the ebnode
 * cluster named cluster (NULL: never). */
int eb__vx_member_peer_in_cluster(
    const eb__vx_member *m, const char *node_id, const char *cluster);
/* 1 when a member's metadata marks it an ebnode node that advertises
 * engine as its engine address (this node included). */
int eb__vx_member_engine_is_ebnode(const eb__vx_member *m, const char *engine);

/* The binary forms (docs/VERTX.md "Membership"), appended to out. */
void eb__vx_nodeinfo_put(eb__buf *out, const char *host, int port);
/* With metadata (a JSON object's text; NULL: none). */
void eb__vx_nodeinfo_put_meta(
    eb__buf *out, const char *host, int port, const char *meta);
void eb__vx_reginfo_put(eb__buf *out, const char *node_id, uint64_t seq);
/* Parses a NodeInfo: 0 with host copied into host[cap] and *port, or
 * EB_EFRAME (e.g. a JVM's transient nodeId-as-data). */
int eb__vx_nodeinfo_parse(
    const char *p, size_t n, char *host, size_t cap, int *port);

#endif
