/*
 * Leader-routed ingress (DESIGN.md "Leader-routed ingress").
 *
 * Every node runs an ingress object with two parts:
 *
 * - the gateway: a local-only consumer on the ingress address (default
 *   "external.ingress"). Whatever a bridge client or an embedded bus client
 *   sends, publishes or requests to the ingress address on this node lands
 *   here. The gateway forwards it as a request to the internal leader address
 *   (EB_INGRESS_LEADER_ADDRESS), which only the current leader consumes. While
 *   no leader is reachable it holds messages in a bounded FIFO (hold_max
 *   messages, hold_ms each) and flushes them in order when one appears. What
 *   overflows or expires is failed back to a requester (RECIPIENT_FAILURE,
 *   code 503) or, for a fire-and-forget send, counted and logged. A forwarded
 *   message whose leader fails before answering (link lost, leadership lost)
 *   is retried once (at-least-once for requests and sends).
 *
 * - the router: while this node leads (eb_ingress_lead()), a consumer on the
 *   leader address. Before each message it checks the leadership lease
 *   (is_leader callback); it stamps the message with the headers
 *   ebnode.epoch, ebnode.seq (per epoch, from 1, no gaps among routed
 *   messages) and ebnode.entry (the node where it entered), routes it by the
 *   configured rules (or hands it to a custom handler installed with
 *   eb_ingress_set_handler()) and answers the gateway with an acknowledgement
 *   {"status":"ok","epoch":E,"seq":S,"to":A} or a failure. The rules route
 *   with eb_bus_send_confirmed()/eb_bus_publish_confirmed() stamped with the
 *   epoch (fenced at every receiver) and acknowledge only from the receipt:
 *   ok means handed to a consumer (send: one, publish: every target); a
 *   failed send without a key (EB_INGRESS_HDR_MSGID) is routed once more
 *   to another handler, else failed with EB_INGRESS_UNCONFIRMED naming the
 *   stamp; a keyed one is never routed to another node, and its retry is
 *   deduplicated on the consumer's node. The gateway refuses an ack
 *   whose epoch is below its bus's fence (routes once more, then
 *   EB_INGRESS_FENCED_ACK).
 *
 * Threads: loop thread only. Ownership: the bus is borrowed and must outlive
 * the ingress; options are copied.
 */
#ifndef EBNODE_INGRESS_H
#define EBNODE_INGRESS_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include <ebnode/api.h>
#include <ebnode/bus.h>
#include <ebnode/err.h>

#define EB_INGRESS_LEADER_ADDRESS "__ebnode.ingress.leader"
#define EB_INGRESS_HDR_EPOCH      "ebnode.epoch"
#define EB_INGRESS_HDR_SEQ        "ebnode.seq"
#define EB_INGRESS_HDR_ENTRY      "ebnode.entry"
/* The configuration version the message was routed by (when non-zero). */
#define EB_INGRESS_HDR_CONFIG "ebnode.config"
/*
 * A client's idempotency key (docs/INGRESS.md "Safe retries"): a string of
 * at most EB_INGRESS_MSGID_MAX bytes (longer: EB_INGRESS_BAD_MSGID). A
 * keyed send goes to the node chosen by rendezvous hashing of the key over
 * the nodes with handlers of its target, is never routed to another node
 * after a failed receipt, and is delivered there at most once within the
 * bus's dedup window: a retry of a delivered one is answered
 * {"status":"duplicate","epoch":E,"seq":S,"to":T,"original_epoch":E0,
 * "original_seq":S0}.
 */
#define EB_INGRESS_HDR_MSGID EB_BUS_DEDUP_HEADER
#define EB_INGRESS_MSGID_MAX EB_BUS_DEDUP_KEY_MAX

typedef struct eb_ingress eb_ingress; /* opaque */

/* Failure codes the ingress answers with (failureType RECIPIENT_FAILURE). */
typedef enum eb_ingress_code {
	EB_INGRESS_BAD_MSGID = 400,    /* ebnode.msgid over its bound */
	EB_INGRESS_NO_ROUTE = 404,     /* no rule matched, no default route */
	EB_INGRESS_NO_TARGET = 502,    /* the route's target has no handlers */
	EB_INGRESS_UNCONFIRMED = 508,  /* routed, delivery not confirmed */
	EB_INGRESS_FENCED_ACK = 409,   /* ack from a superseded epoch */
	EB_INGRESS_NOT_LEADER = 503,   /* lease lost; the gateway retries */
	EB_INGRESS_HOLD_TIMEOUT = 504, /* no leader within hold_ms */
	EB_INGRESS_HOLD_FULL = 507,    /* hold queue full */
	EB_INGRESS_CLOSING = 599       /* the node is shutting down */
} eb_ingress_code;

typedef enum eb_ingress_match {
	EB_INGRESS_MATCH_EQUALS = 0,
	EB_INGRESS_MATCH_PREFIX = 1,
	EB_INGRESS_MATCH_REGEX = 2 /* POSIX extended, whole string */
} eb_ingress_match;

/* A routing rule: header or (top-level body) field, compared with value. */
typedef struct eb_ingress_route {
	const char      *header; /* exactly one of header, field */
	const char      *field;
	const char      *value;
	const char      *to; /* target address */
	eb_ingress_match match;
	int              publish; /* 0: send, 1: publish */
} eb_ingress_route;

typedef struct eb_ingress_opts {
	const char *address;    /* default "external.ingress" */
	uint32_t    hold_max;   /* default 1000; 0: never hold */
	uint64_t    hold_ms;    /* default 5000 */
	uint64_t    timeout_ms; /* forward timeout, 0: bus default */
	/*
	 * 0 (default): the leader acknowledges each routed request itself.
	 * 1: a request routed by send is forwarded to the target as a request
	 *    and the target's reply (or failure) goes back to the sender.
	 */
	int relay_replies;
	/*
	 * For this long after it starts leading (default 1000 ms), the router
	 * lets a message whose target has no handler yet wait (in order, at
	 * most hold_max) instead of failing it with 502: right after a
	 * failover the links and the target's interest may still be on their
	 * way. 0: fail at once.
	 */
	uint64_t                warmup_ms;
	const eb_ingress_route *routes; /* copied */
	size_t                  route_count;
	const eb_ingress_route *default_route; /* NULL: none; copied */
} eb_ingress_opts;

/* The failure text of EB_INGRESS_NOT_LEADER (the gateway retries it). */
#define EB_INGRESS_NOT_LEADER_TEXT "ebnode: this node is not the ingress leader"

/* The stamp of one routed message, borrowed for the handler call. */
typedef struct eb_ingress_stamp {
	uint64_t    epoch;
	uint64_t    seq;
	const char *entry_node;
} eb_ingress_stamp;

/*
 * A custom router (embedders): called on the leader for every ingress message
 * instead of the rules. msg (borrowed; hold it to keep it) carries the stamp
 * headers and always expects a reply: answer with eb_ingress_ack() or
 * eb_bus_msg_fail().
 */
typedef void (*eb_ingress_handler_fn)(
    eb_ingress *in, eb_bus_msg *msg, const eb_ingress_stamp *stamp, void *arg);
/* The leadership lease check (rule 5): non-zero while leadership is valid. */
typedef int (*eb_ingress_leader_fn)(void *arg);

typedef struct eb_ingress_stats {
	uint64_t received;  /* entered through this node's gateway */
	uint64_t forwarded; /* sent to a leader (retries included) */
	uint64_t acked;     /* acknowledged by a leader */
	uint64_t held;      /* had to wait for a leader */
	uint64_t holding;   /* waiting now */
	uint64_t retried;
	uint64_t failed;   /* answered with a failure */
	uint64_t dropped;  /* fire-and-forget sends that could not be routed */
	uint64_t routed;   /* routed by this node as leader */
	uint64_t unrouted; /* no rule matched / no handler for the target */
	uint64_t leader_epochs; /* times this node started leading */
	uint64_t delivered;     /* routed here and confirmed (acknowledged) */
	uint64_t undelivered;   /* routed here, not confirmed: failed */
	uint64_t rerouted;      /* sends routed again after a failed receipt */
	uint64_t fenced_acks;   /* acks below this node's fence, refused */
	/* Flow control: forwards awaiting their acknowledgement, arrivals
	 * waiting for the window, and times the ingress address was made
	 * busy (the bridges stopped reading) for it. */
	uint64_t inflight;
	uint64_t backlog;
	uint64_t pressed;
	/* Safe retries: keyed messages routed here, and those answered as
	 * duplicates (their target's node had delivered the key already). */
	uint64_t keyed;
	uint64_t duplicates;
} eb_ingress_stats;

EB_API void eb_ingress_opts_init(eb_ingress_opts *opts);
/* Validates (regexes) and copies. No I/O. 0 or EB_ECONF with detail. */
EB_API int  eb_ingress_new(uv_loop_t *loop, eb_bus *bus,
     const eb_ingress_opts *opts, eb_errbuf *err, eb_ingress **inp);
EB_API void eb_ingress_set_handler(
    eb_ingress *in, eb_ingress_handler_fn fn, void *arg);
EB_API void eb_ingress_set_leader_check(
    eb_ingress *in, eb_ingress_leader_fn fn, void *arg);
/* Registers the gateway. */
EB_API int eb_ingress_start(eb_ingress *in);
/* Starts routing as leader of epoch (registers the leader consumer). */
EB_API int eb_ingress_lead(eb_ingress *in, uint64_t epoch);
/* Stops routing at once (unregisters the leader consumer). Idempotent. */
EB_API void eb_ingress_unlead(eb_ingress *in);
EB_API int  eb_ingress_is_leading(const eb_ingress *in);
/* The bus's handler count for the leader address may have changed: flush
 * held messages if a leader is reachable now. */
EB_API void eb_ingress_kick(eb_ingress *in);
/* Acknowledges msg with its stamp (for custom handlers). */
EB_API int eb_ingress_ack(
    eb_bus_msg *msg, const eb_ingress_stamp *stamp, const char *to);
EB_API void eb_ingress_stats_get(const eb_ingress *in, eb_ingress_stats *out);

/*
 * Replaces the routes, the default route, the hold bounds (hold_max,
 * hold_ms) and the acknowledgement mode (relay_replies) of opts at once;
 * the other fields of opts are ignored. The router runs on the loop thread,
 * so the swap falls between two messages: each message is routed entirely
 * by one table, and every message routed after the call carries
 * version (when non-zero) in the EB_INGRESS_HDR_CONFIG header. A send
 * routed once more after a failed receipt keeps its first target. Returns
 * 0, or EB_ECONF with detail (nothing changed).
 */
EB_API int eb_ingress_reconfigure(eb_ingress *in, const eb_ingress_opts *opts,
    uint64_t version, eb_errbuf *err);
/* The version of the table in force (0: as created, unversioned). */
EB_API uint64_t eb_ingress_config_version(const eb_ingress *in);

typedef void (*eb_ingress_close_cb)(eb_ingress *in, void *arg);
/* Exactly once. Held messages are failed (requests) or counted (sends);
 * routed messages awaiting their delivery receipt are answered from it first
 * (bounded by the bus's receipt timeout), then cb runs. */
EB_API void eb_ingress_close(eb_ingress *in, eb_ingress_close_cb cb, void *arg);

#endif
