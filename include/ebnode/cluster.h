/*
 * The cluster: one object that owns this node's ZooKeeper session, its
 * member registration (an ephemeral-sequential member znode under
 * <root>/members, the address claim that refuses a duplicate node address),
 * the child cache of every member, and the leader election
 * (ebnode/election.h), and that tells observers about two things:
 *
 *   members     the whole member list, in member (sequence) order, on every
 *               change of the cache;
 *   leadership  whether this node leads and with which epoch (the fencing
 *               token, DESIGN rule 6), and which member leads as far as
 *               this node knows, on every change.
 *
 * It fans the session events out to the election, the registry and the
 * cache in the order the correctness rules need (a suspended leader is
 * revoked before anything else happens, rule 5). With an empty connect
 * string it runs standalone: the node is its own leader with epoch 1.
 *
 * An embedder builds a clustered bus from the public headers alone: an
 * eb_bus, an eb_link_mgr attached to it (eb_bus_cluster_attach), and an
 * eb_cluster whose members observer feeds eb_link_mgr_set_peers and whose
 * leadership observer raises the bus fence (eb_bus_fence_raise); see
 * examples/embed_cluster.c.
 *
 * Lifecycle (libuv style): new (no I/O) -> start -> [stop] -> close. start
 * completes once through its callback: 0 when the member is registered, or
 * an error (EB_EDUPADDR: the address is held by another live node;
 * EB_ECONF: the negotiated session timeout leaves no safe leader lease;
 * EB_ETIMEDOUT: no registration within 2 x session timeout + 15 s;
 * EB_ECANCELED: stopped or closed while starting). stop revokes leadership
 * synchronously, then deletes the member and claim in one multi (bounded,
 * 3 s) and completes through its callback. close is allowed at any time,
 * exactly once; no callback of any kind runs after it except its own.
 * A second close, or start after close, is a programming error (EB_ASSERT).
 *
 * Observers may be added before start and at any time; any number of them
 * (no cap). They run on the loop, synchronously from the event that caused
 * them; a revoke reaches the leadership observers before anything else is
 * done with the event. Threads: loop thread only. Ownership: strings in
 * opts are copied by eb_cluster_new; strings handed to observers are
 * borrowed for the call.
 */
#ifndef EBNODE_CLUSTER_H
#define EBNODE_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include <ebnode/api.h>
#include <ebnode/election.h>
#include <ebnode/err.h>

typedef struct eb_cluster eb_cluster; /* opaque */

/* The ACL of the znodes this node creates. */
typedef enum eb_cluster_acl {
	EB_CLUSTER_ACL_OPEN = 0,   /* world:anyone all */
	EB_CLUSTER_ACL_CREATOR = 1 /* auth (creator) all; needs digest auth */
} eb_cluster_acl;

/*
 * zookeeper.max_request_bytes (docs/ZOOKEEPER.md "Request sizes"): the
 * default stays 48575 bytes below the server's default jute.maxbuffer
 * (1048575); the floor keeps room for a configuration center write of a
 * realistic configuration (and its history copy); the ceiling is a sanity
 * bound (a server with jute.maxbuffer raised that far is unusual).
 */
#define EB_CLUSTER_MAX_REQUEST_DEFAULT 1000000u
#define EB_CLUSTER_MAX_REQUEST_MIN     65536u
#define EB_CLUSTER_MAX_REQUEST_MAX     104857600u

typedef struct eb_cluster_opts {
	/* ZooKeeper. */
	const char *connect; /* "h1:p1,h2:p2"; NULL or "":
	                        standalone */
	const char    *root; /* "/ebnode/<cluster>", no trailing '/' */
	uint32_t       session_timeout_ms; /* requested; default 10000 */
	const char    *auth_scheme;        /* NULL/"" or "digest" */
	const char    *auth_credentials;   /* "user:password" for digest */
	eb_cluster_acl acl;
	/* Bound on one ZooKeeper request's serialized size; a bigger one is
	 * refused locally (EB_EZKTOOBIG), never sent. Default 1000000. */
	size_t max_request_bytes;
	/* This member, as its member znode advertises it. */
	const char *node_id;      /* required; unique in the cluster */
	const char *address;      /* required; the claimed node address */
	const char *host;         /* advertised host, default "127.0.0.1" */
	int         cluster_port; /* node links; 0: none */
	int         bridge_port;  /* 0: no bridge */
	int         admin_port;   /* 0: no admin endpoint */
	const char *version;      /* written into the member data */
	/* The election: eligible (may lead) and the lease (ebnode/election.h,
	 * docs/CLUSTER.md "The lease"). election.zk_tick_ms is the ensemble's
	 * tickTime (0: unknown). */
	eb_election_opts election;
	/* The link protocol range written into the member data (0, 0: none;
	 * default EB_LINK_PROTOCOL_MIN..EB_LINK_PROTOCOL_VERSION, what an
	 * eb_link_mgr with default options speaks; at the end: appended in
	 * 0.2.0). */
	int link_min;
	int link_max;
} eb_cluster_opts;

/* One member as the child cache shows it. */
typedef struct eb_cluster_member {
	const char *name;    /* member znode name ("m-0000000007") */
	const char *node_id; /* "" when the member data carries none */
	const char *address;
	const char *host;
	int         cluster_port; /* 0: not linkable */
	int         bridge_port;
	int         admin_port;
	const char *version;
	int64_t     seq;       /* sequence suffix: member order */
	int64_t     czxid;     /* the epoch it would lead with */
	uint64_t    joined_ms; /* "started_ms" of the member data; 0: none */
	int         eligible;
	int         self; /* this node's own member */
	/* Its link protocol range; 0, 0: the record has none (a release
	 * before versioned links). At the end: appended in 0.2.0. */
	int link_min;
	int link_max;
} eb_cluster_member;

typedef struct eb_cluster_leadership {
	int     leader;       /* this node leads now */
	int64_t epoch;        /* this node's epoch while it leads, else the last
	                         one (0: never led) */
	int known;            /* a leader is known (below); 0 during a hand-over
	                         or without a session */
	int64_t leader_epoch; /* the known leader's epoch; while none is known,
	                         the epoch of the member the cache shows as
	                         leader (the fence, rule 6), 0: none */
	const char *leader_node_id; /* the known leader; NULL unless known */
	const char *leader_address;
	const char *reason; /* on a revoke: why ("zk-suspended", ...); else
	                       NULL */
} eb_cluster_leadership;

typedef void (*eb_cluster_start_cb)(eb_cluster *c, int status, void *arg);
typedef void (*eb_cluster_stop_cb)(eb_cluster *c, void *arg);
typedef void (*eb_cluster_close_cb)(eb_cluster *c, void *arg);
typedef void (*eb_cluster_members_cb)(
    eb_cluster *c, const eb_cluster_member *members, size_t n, void *arg);
typedef void (*eb_cluster_leadership_cb)(
    eb_cluster *c, const eb_cluster_leadership *l, void *arg);
/* An unrecoverable run-time error after a successful start: the address
 * was taken while the session was re-created (EB_EDUPADDR, rule 7),
 * authentication failed (EB_EZKAUTH), or a renegotiated session timeout
 * leaves no safe lease (EB_ECONF). The owner should stop the node. */
typedef void (*eb_cluster_fail_cb)(eb_cluster *c, int err, void *arg);

EB_API void eb_cluster_opts_init(eb_cluster_opts *opts);
/* No I/O and no callbacks. UV_EINVAL (detail in err) for missing or bad
 * options. */
EB_API int eb_cluster_new(uv_loop_t *loop, const eb_cluster_opts *opts,
    eb_cluster **cp, eb_errbuf *err);
/* Connects and registers; cb(c, status) exactly once on a later turn. */
EB_API int eb_cluster_start(eb_cluster *c, eb_cluster_start_cb cb, void *arg);
/* Graceful leave after a successful start: cb exactly once, later turn. */
EB_API void eb_cluster_stop(eb_cluster *c, eb_cluster_stop_cb cb, void *arg);
/* Exactly once; cb on a later turn; nothing else is called after it. */
EB_API void eb_cluster_close(eb_cluster *c, eb_cluster_close_cb cb, void *arg);

/*
 * The leave drain: a graceful stop stops the election first (the revoke
 * reaches the observers), then, while pending(arg) > 0 and for at most
 * max_ms, keeps the member registered before it leaves. Peers cut their
 * links to a member that left, so what this node sent with a receipt
 * still to come (a leader's routed ingress) would fail as "link lost"
 * although it was delivered. pending is polled every few milliseconds;
 * one hook, NULL removes it. docs/CLUSTER.md "The cluster object".
 */
typedef uint32_t (*eb_cluster_pending_cb)(void *arg);
EB_API void eb_cluster_set_drain(
    eb_cluster *c, eb_cluster_pending_cb pending, void *arg, uint32_t max_ms);

/* Observers: any number; remove returns 0 or -1 when not found. */
EB_API void eb_cluster_on_members(
    eb_cluster *c, eb_cluster_members_cb cb, void *arg);
EB_API int eb_cluster_off_members(
    eb_cluster *c, eb_cluster_members_cb cb, void *arg);
EB_API void eb_cluster_on_leadership(
    eb_cluster *c, eb_cluster_leadership_cb cb, void *arg);
EB_API int eb_cluster_off_leadership(
    eb_cluster *c, eb_cluster_leadership_cb cb, void *arg);
EB_API void eb_cluster_on_fail(eb_cluster *c, eb_cluster_fail_cb cb, void *arg);

/* Leadership now (the election lease is checked at this call). */
EB_API int     eb_cluster_is_leader(eb_cluster *c);
EB_API int64_t eb_cluster_epoch(const eb_cluster *c);
/* The current leadership view (strings borrowed until the next event). */
EB_API void eb_cluster_leadership_get(
    eb_cluster *c, eb_cluster_leadership *out);
/* The current member list (borrowed until the next event that changes
 * it); *n set. */
EB_API const eb_cluster_member *eb_cluster_members(eb_cluster *c, size_t *n);
/* Step down: 0, EB_ENOTLEADER, or EB_ECLOSED when not running. */
EB_API int eb_cluster_step_down(eb_cluster *c);
/* 1 when registered with a live session (or standalone and running); else
 * 0 with a short static reason. */
EB_API int eb_cluster_health(eb_cluster *c, const char **reason);

typedef struct eb_cluster_stats {
	/* "standalone", "connecting", "connected", "suspended", "closed".
	 * Static string. */
	const char *zk_state;
	int64_t     zk_session_id;   /* 0: none */
	uint32_t    members;         /* in the member cache (standalone: 1) */
	uint32_t    members_invalid; /* children ignored: not valid members */
	uint64_t    zk_requests;     /* requests sent to ZooKeeper */
	uint64_t    zk_too_big; /* refused: above zookeeper.max_request_bytes */
	uint64_t    leads;      /* times this node was elected */
	uint64_t    leader_changes; /* times the known leader changed */
	/* ZooKeeper session events seen. */
	uint64_t zk_connected, zk_suspended, zk_reconnected, zk_expired,
	    zk_auth_failed;
} eb_cluster_stats;
EB_API void eb_cluster_stats_get(eb_cluster *c, eb_cluster_stats *out);

/*
 * The configuration center (docs/CONFIG.md "Cluster configuration"):
 * <root>/config, read with a data watch and re-read on every change and
 * every (re)connect. Its version is the znode's data version + 1 (1 after
 * the create, +1 per write); 0: no <root>/config. The bytes are not
 * validated here: the owner (node/) validates and applies them.
 * Config observers run on the loop whenever the version read changes;
 * data (NUL-terminated, len bytes; NULL for version 0) is borrowed for the
 * call. Standalone, or before start, nothing is read.
 */
#define EB_CLUSTER_CONFIG_HISTORY 20 /* versions kept in config-history */
typedef void (*eb_cluster_config_cb)(
    eb_cluster *c, int64_t version, const char *data, size_t len, void *arg);
EB_API void eb_cluster_on_config(
    eb_cluster *c, eb_cluster_config_cb cb, void *arg);
EB_API int eb_cluster_off_config(
    eb_cluster *c, eb_cluster_config_cb cb, void *arg);
/* The last version read (0: none) and its bytes (borrowed until the next
 * change; NULL when none). */
EB_API int64_t eb_cluster_config_get(
    eb_cluster *c, const char **data, size_t *len);

/* Writes go through ebctl (`ebctl config set`), as compare-and-set with
 * history in <root>/config-history: docs/CONFIG.md. */

#endif
