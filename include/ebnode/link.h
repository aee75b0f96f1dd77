/*
 * Node links: one logical TCP (optionally mutual-TLS) link from this node to
 * every peer it knows about, carrying length-prefixed binary frames. The
 * event bus runs its clustered routing over them (eb_bus_cluster_attach in
 * bus.h); membership (which peers exist, where) comes from outside, e.g. the
 * ZooKeeper child cache, through eb_link_mgr_peer_add/_peer_remove.
 *
 * One link per node pair: only the node with the lower node id (strcmp)
 * dials; the other accepts. So simultaneous connects cannot happen, and a
 * new inbound connection from a peer replaces an older one (the dialer only
 * dials when it has no link). Each side opens with a hello (protocol
 * version, node id, cluster name, and since versioned links the range of
 * protocol versions it speaks); the pair links at the highest version both
 * speak, and a pair with none in common (version skew) or another cluster
 * name does not link. Member records carry the range too
 * (eb_link_peer.proto_min/max), so the dialer knows it before connecting.
 * Heartbeats every heartbeat_ms; a link with no input for dead_ms is closed.
 * The dialer reconnects with capped, jittered exponential back-off.
 *
 * Threads: loop thread only. Ownership: strings passed in are copied.
 */
#ifndef EBNODE_LINK_H
#define EBNODE_LINK_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include <ebnode/api.h>
#include <ebnode/err.h>

/* The link protocol versions this build speaks: EB_LINK_PROTOCOL_MIN ..
 * EB_LINK_PROTOCOL_VERSION (the highest). docs/UPGRADING.md says when
 * they change. A node whose member record shows no range (a release before
 * versioned links) speaks exactly EB_LINK_PROTOCOL_LEGACY. */
#define EB_LINK_PROTOCOL_VERSION 3
#define EB_LINK_PROTOCOL_MIN     3
#define EB_LINK_PROTOCOL_LEGACY  3

typedef struct eb_link_mgr eb_link_mgr; /* opaque */

typedef struct eb_link_opts {
	const char *node_id;      /* required; unique in the cluster */
	const char *cluster_name; /* default "ebnode"; must match peers */
	const char *host;         /* listen address, default "127.0.0.1" */
	int         port;         /* 0: pick one, see eb_link_mgr_port() */
	uint32_t    heartbeat_ms; /* default 1000 */
	uint32_t    dead_ms;      /* no input for this long: down; 3500 */
	uint32_t    connect_timeout_ms; /* TCP connect + hello, 3000 */
	uint32_t    backoff_min_ms;     /* first reconnect delay, 50 */
	uint32_t    backoff_max_ms;     /* cap, 5000 */
	uint32_t    max_frame_bytes;    /* default 16 MiB */
	uint64_t    max_out_bytes; /* queued per link, default 64 MiB: close */
	uint32_t    max_pending_inbound; /* accepted, no hello yet; 64 */
	/* Mutual TLS (all three set) with a private CA: both sides present a
	 * certificate signed by ca_file and verify the other's. */
	const char *tls_ca_file;
	const char *tls_cert_file;
	const char *tls_key_file;
	/* The range of link protocol versions announced and accepted:
	 * default EB_LINK_PROTOCOL_MIN .. EB_LINK_PROTOCOL_VERSION. A
	 * narrower or other range is for tests of the negotiation (a node
	 * that pretends to be another release); 1 <= min <= max. */
	uint16_t proto_min;
	uint16_t proto_max;
} eb_link_opts;

typedef void (*eb_link_mgr_close_cb)(eb_link_mgr *mgr, void *arg);

EB_API void eb_link_opts_init(eb_link_opts *opts);
/* No I/O and no callbacks. EB_ETLS (detail in err) when the TLS files do
 * not load; UV_EINVAL for a missing node id. */
EB_API int eb_link_mgr_new(uv_loop_t *loop, const eb_link_opts *opts,
    eb_link_mgr **mgrp, eb_errbuf *err);
/* Binds and listens. 0 or a libuv error (e.g. UV_EADDRINUSE). Never after
 * close (an assertion). */
EB_API int eb_link_mgr_start(eb_link_mgr *mgr);
/* The bound port after start (useful with port 0), else 0. */
EB_API int eb_link_mgr_port(const eb_link_mgr *mgr);
/* Exactly once (a second close is an assertion failure); links close
 * (peers see them drop), cb on a later tick. */
EB_API void eb_link_mgr_close(
    eb_link_mgr *mgr, eb_link_mgr_close_cb cb, void *arg);

/*
 * A peer to keep a link to (again: updates host/port; its link protocol
 * range stays what eb_link_mgr_peer_add_range last said, none for a new
 * peer). Ignored for our own node id. Returns 0, UV_EINVAL, or EB_ECLOSED.
 */
EB_API int eb_link_mgr_peer_add(
    eb_link_mgr *mgr, const char *node_id, const char *host, int port);
/* As eb_link_mgr_peer_add, with the peer's link protocol range from its
 * member record (0, 0: the record has none: a release before versioned
 * links, which speaks exactly EB_LINK_PROTOCOL_LEGACY). A peer with no
 * version in common is not dialed: its link is down for reason "version".
 * With a membership list: this for each member first, then
 * eb_link_mgr_set_peers (which removes the others). */
EB_API int eb_link_mgr_peer_add_range(eb_link_mgr *mgr, const char *node_id,
    const char *host, int port, int proto_min, int proto_max);
/* Drops the peer and its link (the bus forgets its interest at once). */
EB_API int eb_link_mgr_peer_remove(eb_link_mgr *mgr, const char *node_id);
/* One peer of eb_link_mgr_set_peers. */
typedef struct eb_link_peer {
	const char *node_id;
	const char *host;
	int         port;
} eb_link_peer;
/*
 * Reconciles the peers with a membership list (the whole list, e.g. every
 * member the cluster shows): adds or updates each listed peer (entries
 * with an empty node id or host, or port <= 0, are skipped; for one node id
 * the last entry wins) and removes every known peer that is not listed,
 * except one that is known only from its live inbound link (it dialed us
 * before the membership caught up). 0, or EB_ECLOSED.
 */
EB_API int eb_link_mgr_set_peers(
    eb_link_mgr *mgr, const eb_link_peer *peers, size_t n);
/* 1 when the link to node_id is up (hello exchanged), else 0. */
EB_API int eb_link_mgr_peer_up(const eb_link_mgr *mgr, const char *node_id);

/* Counters for the admin endpoint and metrics. */
typedef struct eb_link_peer_stats {
	const char *node_id; /* borrowed for the callback */
	const char *host;    /* NULL: known only from its inbound link */
	int         port;
	int         up;
	int         dialer; /* this node dials it */
	uint64_t    frames_out, frames_in, bytes_out, bytes_in;
	uint64_t    ups;         /* times the link came up */
	uint64_t    queued;      /* bytes waiting to be written */
	uint64_t    congestions; /* times the link became congested */
	int         version;     /* the protocol version of the up link, 0 */
	int         proto_min;   /* the range of its member record; 0, 0: */
	int         proto_max;   /* none (or not known from a record) */
	/* Why its link is down, when this node knows (NULL: up, or no
	 * reason yet): "version" (no protocol version in common), "tls"
	 * (the TLS handshake failed), "unreachable" (dials fail). */
	const char *down_reason;
	uint64_t    down_since_ms; /* loop ms the reason was set, 0 */
} eb_link_peer_stats;

typedef void (*eb_link_stats_fn)(const eb_link_peer_stats *s, void *arg);
EB_API void eb_link_mgr_stats_foreach(
    eb_link_mgr *mgr, eb_link_stats_fn fn, void *arg);

/* The reasons a link can be down (eb_link_peer_stats.down_reason). */
typedef enum eb_link_down_reason {
	EB_LINK_DOWN_NONE = 0,
	EB_LINK_DOWN_VERSION = 1,
	EB_LINK_DOWN_TLS = 2,
	EB_LINK_DOWN_UNREACHABLE = 3,
	EB_LINK_DOWN_REASONS = 4
} eb_link_down_reason;
/* "version", "tls", "unreachable", or NULL for EB_LINK_DOWN_NONE. */
EB_API const char *eb_link_down_reason_name(eb_link_down_reason r);

/*
 * Whether every member peer is linked, for /health: 0 when it is, else
 * the number of member peers whose link is down for a reason that counts
 * (version skew or TLS at once; unreachable once it lasted dead_ms: a
 * restart of the peer is not an outage), with a line naming the first in
 * buf ("link-down: node=n3 reason=version peer=3..3 self=4..4").
 */
EB_API int eb_link_mgr_degraded(const eb_link_mgr *mgr, char *buf, size_t size);
/* Times a member peer's link went down for reason r (r <
 * EB_LINK_DOWN_REASONS, else 0). */
EB_API uint64_t eb_link_mgr_down_total(
    const eb_link_mgr *mgr, eb_link_down_reason r);
/* The range this manager speaks. */
EB_API void eb_link_mgr_protocols(
    const eb_link_mgr *mgr, int *proto_min, int *proto_max);

#endif
