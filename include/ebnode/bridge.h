/*
 * The TCP event-bus bridge: a server on the node's loop that speaks the
 * Vert.x 4.x TCP EventBus Bridge wire protocol (BRIDGE-PROTOCOL.md), plain or
 * TLS, and turns client frames into calls on an eb_bus. Where Vert.x wedges
 * or grows without bound the bridge answers and stays bounded (unknown_type,
 * maximum frame size, bounded write queue, idle timeout, connection limit).
 *
 * Threads: loop thread only.
 *
 * Ownership: eb_bridge_new() copies everything it keeps from the options
 * (strings, permitted lists); the bus is borrowed and must outlive the bridge
 * (close the bridge first, then the bus).
 */
#ifndef EBNODE_BRIDGE_H
#define EBNODE_BRIDGE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include <ebnode/api.h>
#include <ebnode/bus.h>
#include <ebnode/err.h>

typedef struct eb_bridge eb_bridge; /* opaque */

/* bridge.max_json_depth: the default and the largest value. */
#define EB_BRIDGE_DEFAULT_JSON_DEPTH 1000
#define EB_BRIDGE_MAX_JSON_DEPTH     2048

/*
 * One permitted entry (Vert.x PermittedOptions). address set: exact match;
 * else address_regex set: POSIX extended regex matched against the whole
 * address (anchored at both ends); both NULL ({}): matches every address.
 */
typedef struct eb_bridge_permitted {
	const char *address;       /* borrowed by opts */
	const char *address_regex; /* borrowed by opts */
} eb_bridge_permitted;

typedef enum eb_bridge_client_auth {
	EB_BRIDGE_CLIENT_AUTH_NONE = 0,     /* SSL_VERIFY_NONE */
	EB_BRIDGE_CLIENT_AUTH_REQUEST = 1,  /* verify a certificate if sent */
	EB_BRIDGE_CLIENT_AUTH_REQUIRED = 2, /* and fail without one */
} eb_bridge_client_auth;

typedef enum eb_bridge_auth_mode {
	EB_BRIDGE_AUTH_OFF = 0,   /* no token */
	EB_BRIDGE_AUTH_EVERY = 1, /* headers.token on every frame but ping */
	EB_BRIDGE_AUTH_FIRST = 2, /* on the first non-ping frame; else close */
} eb_bridge_auth_mode;

typedef struct eb_bridge_opts {
	const char *host;            /* listen address, default "127.0.0.1" */
	int         port;            /* 0: pick one, see eb_bridge_port() */
	int         backlog;         /* default 128 */
	uint32_t    max_frame_bytes; /* inbound payload cap, 1 MiB */
	/* JSON nesting a frame may have, its own object included: 1000
	 * (Jackson's default in Vert.x 4.5), at most 2048. */
	uint32_t max_json_depth;
	size_t   write_queue_max_bytes; /* per connection, default 4 MiB */
	uint64_t idle_timeout_ms;       /* 0: none (default) */
	uint32_t max_connections;       /* default 1024; extra refused */
	uint64_t reply_ttl_ms; /* pending server->client reply, 30000 */
	/* Deadlines against slow or silent clients (0: off). */
	uint64_t frame_timeout_ms;       /* a started frame completes, 30000 */
	uint64_t first_frame_timeout_ms; /* the first frame, 10000 */
	uint64_t tls_handshake_timeout_ms; /* 10000 */
	/* Input memory: node-wide bytes of bridge input buffers (partial
	 * and not yet handled frames), default 32 MiB; beyond it the
	 * connections holding the largest buffers are closed. */
	size_t   input_budget_bytes;
	uint32_t max_consumers_per_conn; /* default 1024 */
	uint32_t max_requests_per_conn;  /* replies awaited, default 1024 */
	uint32_t max_requests; /* the same over all connections, 65536 */
	uint64_t max_request_timeout_ms; /* headers.timeout clamp, 300000 */

	/* Permitted lists (copied). An empty list denies everything. */
	const eb_bridge_permitted *inbound; /* send/publish */
	size_t                     inbound_count;
	const eb_bridge_permitted *outbound; /* register/unregister */
	size_t                     outbound_count;

	/* TLS: enabled when tls_cert is non-NULL (PEM files). */
	const char           *tls_cert;
	const char           *tls_key;
	const char           *tls_ca; /* verify client certificates */
	eb_bridge_client_auth tls_client_auth;

	/* Token authentication on headers.token; the token is never logged. */
	eb_bridge_auth_mode auth_mode;
	const char         *auth_token;
} eb_bridge_opts;

EB_API void eb_bridge_opts_init(eb_bridge_opts *opts);

/*
 * Validates and copies the options, compiles the regexes and loads the TLS
 * material. No I/O, no callbacks. Returns 0, EB_ECONF (bad option or regex)
 * or EB_ETLS (certificate/key/CA), with detail in err when non-NULL.
 */
EB_API int eb_bridge_new(uv_loop_t *loop, eb_bus *bus,
    const eb_bridge_opts *opts, eb_errbuf *err, eb_bridge **bridgep);
/* Binds and listens. Returns 0 or a libuv error (UV_EADDRINUSE...). */
EB_API int eb_bridge_start(eb_bridge *b, eb_errbuf *err);
/* The bound port after a successful start, else 0. */
EB_API int eb_bridge_port(const eb_bridge *b);

typedef void (*eb_bridge_close_cb)(eb_bridge *b, void *arg);
/*
 * Exactly once, also after a failed start. Stops listening, closes every
 * connection (their consumers are unregistered at once) and runs cb on a later
 * tick, after every handle has closed; the bridge is freed after cb returns.
 */
EB_API void eb_bridge_close(eb_bridge *b, eb_bridge_close_cb cb, void *arg);

/* Frame types counted per direction. */
typedef enum eb_bridge_frame_kind {
	EB_BRIDGE_IN_SEND = 0,
	EB_BRIDGE_IN_PUBLISH,
	EB_BRIDGE_IN_REGISTER,
	EB_BRIDGE_IN_UNREGISTER,
	EB_BRIDGE_IN_PING,
	EB_BRIDGE_IN_UNKNOWN,   /* unknown or missing type */
	EB_BRIDGE_IN_MALFORMED, /* not JSON or not an object (skipped) */
	EB_BRIDGE_IN_KINDS
} eb_bridge_frame_kind;

typedef enum eb_bridge_out_kind {
	EB_BRIDGE_OUT_MESSAGE = 0,
	EB_BRIDGE_OUT_ERR,
	EB_BRIDGE_OUT_PONG,
	EB_BRIDGE_OUT_KINDS
} eb_bridge_out_kind;

/* Counters since eb_bridge_new(). */
typedef struct eb_bridge_stats {
	uint64_t conns_open;
	uint64_t conns_total;       /* accepted */
	uint64_t conns_refused;     /* over max_connections */
	uint64_t conns_closed_slow; /* write queue over its bound */
	uint64_t conns_closed_idle;
	uint64_t conns_closed_frame;   /* oversize or negative length */
	uint64_t conns_closed_timeout; /* frame, first-frame, TLS deadline */
	uint64_t conns_closed_memory;  /* over input_budget_bytes */
	uint64_t conns_evicted;        /* at max_connections, for a new one */
	uint64_t consumers_refused;    /* over max_consumers_per_conn */
	uint64_t requests_refused;     /* over max_requests_per_conn */
	uint64_t input_bytes;          /* current input buffers, all conns */
	uint64_t requests_in_flight;   /* client requests awaiting a reply */
	uint64_t frames_in[EB_BRIDGE_IN_KINDS];
	uint64_t frames_out[EB_BRIDGE_OUT_KINDS];
	uint64_t denied;      /* access_denied answers (permissions) */
	uint64_t auth_failed; /* access_denied answers (token) */
	uint64_t tls_failed;  /* handshake or record errors */
	uint64_t errors;      /* err frames sent, all kinds */
	uint64_t consumers;   /* current registrations, all connections */
	/* Flow control: connections not reading now because their target
	 * address is busy, and how often one stopped; deliveries parked
	 * because a client's socket is behind, and how often. */
	uint64_t conns_blocked;
	uint64_t blocked_total;
	uint64_t consumers_parked;
	uint64_t parked_total;
} eb_bridge_stats;

EB_API void eb_bridge_stats_get(const eb_bridge *b, eb_bridge_stats *out);
EB_API const char *eb_bridge_in_kind_name(eb_bridge_frame_kind k);
EB_API const char *eb_bridge_out_kind_name(eb_bridge_out_kind k);

/* A snapshot of one connection, borrowed for the iterator callback. */
typedef struct eb_bridge_conn_info {
	uint64_t    id;
	const char *peer; /* "host:port" */
	int         tls;
	uint64_t    age_ms;
	uint64_t    frames_in;
	uint64_t    frames_out;
	size_t      queued_bytes; /* written, not yet sent */
	size_t      consumers;
	size_t      pending_replies;
} eb_bridge_conn_info;

/* Calls fn for every open connection, in accept order; fn must not close
 * the bridge. Returns the number of connections visited. */
EB_API size_t eb_bridge_conn_foreach(const eb_bridge *b,
    void (*fn)(const eb_bridge_conn_info *info, void *arg), void *arg);

/*
 * Bridge-event hook (Vert.x BridgeEvent, section 9 of BRIDGE-PROTOCOL.md).
 * One synchronous hook per bridge, called on the loop:
 *   SOCKET_CREATED  after accept (TLS: before the handshake);
 *   SEND, PUBLISH, REGISTER, UNREGISTER, SOCKET_PING  once per client frame
 *                   of that type, after token authentication and before the
 *                   address and permission checks (address may be NULL);
 *   REGISTERED      after the consumer exists (not for a duplicate
 *                   register, which is a no-op);
 *   SOCKET_CLOSED   once per connection, after its consumers are gone.
 * Return 0 to proceed. Non-zero blocks a frame event: the client gets
 * {"type":"err","message":"blocked by bridgeEvent handler"} (as Vert.x sends
 * it); the return value of other events is ignored. Replies from a client
 * (a send to a pending reply address) are SEND events too.
 * The hook may send on the bus and may close connections with
 * eb_bridge_conn_close(), but must not close the bridge.
 */
typedef enum eb_bridge_event_type {
	EB_BRIDGE_EV_SOCKET_CREATED = 0,
	EB_BRIDGE_EV_SOCKET_CLOSED,
	EB_BRIDGE_EV_SOCKET_PING,
	EB_BRIDGE_EV_SEND,
	EB_BRIDGE_EV_PUBLISH,
	EB_BRIDGE_EV_REGISTER,
	EB_BRIDGE_EV_REGISTERED,
	EB_BRIDGE_EV_UNREGISTER
} eb_bridge_event_type;

/* Everything borrowed for the duration of the hook call. */
typedef struct eb_bridge_event {
	eb_bridge_event_type type;
	uint64_t             conn_id;
	const char          *peer;    /* "host:port" */
	int                  tls;     /* the connection is TLS */
	const char          *address; /* frame events: NULL if missing */
	const json_t        *frame;   /* frame events: the client's frame */
} eb_bridge_event;

typedef int (*eb_bridge_hook_fn)(const eb_bridge_event *ev, void *arg);
/* Installs (fn non-NULL) or removes the hook. */
EB_API void eb_bridge_set_hook(eb_bridge *b, eb_bridge_hook_fn fn, void *arg);
EB_API const char *eb_bridge_event_name(eb_bridge_event_type t);

/* Closes the connection with that id (as the peer going away would).
 * Returns 0 or UV_ENOENT. */
EB_API int eb_bridge_conn_close(eb_bridge *b, uint64_t conn_id);

/*
 * Replaces the inbound and outbound permitted lists at once (the lists are
 * copied and compiled first; on an error nothing changes: EB_ECONF with
 * detail). Connections stay open: every frame checked after the call is
 * checked against the new lists; consumers registered before it stay.
 */
EB_API int eb_bridge_set_permitted(eb_bridge *b,
    const eb_bridge_permitted *inbound, size_t inbound_count,
    const eb_bridge_permitted *outbound, size_t outbound_count, eb_errbuf *err);

#endif
