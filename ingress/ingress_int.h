/*
 * Ingress internals shared by gateway.c and router.c. Not installed.
 *
 * Invariants:
 * - A held message (struct held) is on in->held in arrival order, holds a
 *   reference to the original bus message, and is either waiting (no leader
 *   reachable) or nothing: in-flight forwards are not on the list, they live
 *   in their request's callback argument.
 * - A message is answered exactly once: through the bus (its reply
 *   address), or through the requester's callback when the gateway took
 *   the request from the requester itself (eb__ingress_take).
 * - While in->held is non-empty, new arrivals queue behind it, so messages
 *   from this node reach the leader in the order they entered.
 * - in->leader is non-NULL exactly while this node routes as leader.
 * Threads: loop thread only.
 */
#ifndef EB_INGRESS_INT_H
#define EB_INGRESS_INT_H

#include <regex.h>
#include <stdint.h>

#include <ebnode/ingress.h>

#include "common/buf.h"
#include "common/hist.h"
#include "common/list.h"
#include "common/spare.h"
#include "ingress/ingress_ext.h"

typedef struct eb__ingress_rule {
	char            *header; /* owned; NULL for a body field rule */
	char            *field;  /* owned */
	eb_ingress_match match;
	char            *value; /* owned */
	regex_t          re;    /* compiled when match is REGEX */
	int              has_re;
	char            *to; /* owned */
	int              publish;
} eb__ingress_rule;

struct eb_ingress {
	uv_loop_t        *loop; /* borrowed */
	eb_bus           *bus;  /* borrowed */
	char             *address;
	uint32_t          hold_max;
	uint64_t          hold_ms;
	uint64_t          timeout_ms;
	int               relay_replies;
	eb__ingress_rule *rules; /* owned, rule_count entries */
	size_t            rule_count;
	eb__ingress_rule *default_rule;   /* owned or NULL */
	uint64_t          config_version; /* stamped when non-zero */

	eb_bus_consumer *gateway; /* owned registration */
	eb_bus_consumer *leader;  /* owned registration while leading */
	uint64_t         epoch;
	uint64_t         next_seq;
	uint64_t         lead_ms;   /* loop time leadership (re)started */
	uint64_t         warmup_ms; /* see eb_ingress_opts.warmup_ms */
	eb__list         waiting;   /* router: of eb__ingress_held, in order */
	eb__list         routing;   /* router: routed, awaiting the receipt */
	uint32_t         n_waiting;

	eb_ingress_handler_fn handler;
	void                 *handler_arg;
	eb_ingress_leader_fn  is_leader;
	void                 *is_leader_arg;
	/* ingress_ext.h: the external router (NULL: none) */
	const struct eb__ingress_ext_ops *ext;
	void                             *ext_ctx;

	/* Handlers of the leader address that the bus can reach: kept by
	 * the bus watch (ingress.c) from eb_ingress_start on, so that a
	 * forward does not look the address up twice (gateway.c). */
	uint32_t leader_handlers;

	eb__list   held; /* of struct eb__ingress_held, owned */
	uint32_t   n_held;
	uv_timer_t hold_timer;
	int        timer_armed;
	eb__list   inflight; /* of struct eb__ingress_held being forwarded */
	/* Flow control (gateway.c): at most EB__INGRESS_WINDOW forwards in
	 * flight; later arrivals wait in order on backlog, and the ingress
	 * address is busy (eb_bus_pressure_set) while backlog is long. */
	uint32_t            n_inflight;
	eb__list            backlog; /* of struct eb__ingress_held */
	uint32_t            n_backlog;
	int                 pressing;
	int                 closing;
	int                 close_done; /* the timer close has begun */
	eb_ingress_close_cb close_cb;
	void               *close_arg;
	eb_ingress_stats    st;
	char                fenced_why[200]; /* the last fenced ack's text */
	/* {entry: this node}, made once: the headers of every forward whose
	 * message came without headers (most), instead of a copy each. */
	json_t *entry_headers;
	eb__buf stamp_buf; /* the router's scratch: stamped headers */
	/* The router's sends of stamped headers it wrote (ingress_ext.h,
	 * eb__ingress_set_enc_sends); the public checked calls by default. */
	eb__ingress_enc_send_fn send_enc;
	eb__ingress_enc_send_fn publish_enc;
	/* Freed eb__ingress_held blocks kept for the next messages (the
	 * gateway makes one per message), at most EB__INGRESS_HELD_SPARE. */
	eb__spare held_spare;
	/* The router's freed contexts of a routed message, kept likewise
	 * (router.c: those whose strings fit EB__INGRESS_ROUTE_STRS). */
	eb__spare route_spare;
	/* Gateway receipt to the answer (ack or failure), every message. */
	eb__hist latency;
};

typedef enum eb__ingress_field_kind {
	EB__FIELD_NONE = 0, /* absent, not an object, or another kind */
	EB__FIELD_STRING,
	EB__FIELD_INT,
	EB__FIELD_BOOL
} eb__ingress_field_kind;

/*
 * The top-level member key of a body given as its JSON encoding (body,
 * len), as text: a string unescaped, an integer printed as jansson prints
 * it, "true"/"false"; NULL (kind NONE) when absent, the body is no object,
 * or the value is of another kind (a real, null, an array, an object, an
 * integer beyond 64 bits). The last of duplicate keys counts (jansson).
 * The top level is scanned once (nested values are skipped, not parsed),
 * and only the returned value is decoded. tmp (n >= 32 bytes) holds the
 * text when it fits; else *heap does (the caller frees it; NULL otherwise).
 */
const char *eb__ingress_field(const char *body, size_t len, const char *key,
    eb__ingress_field_kind *kind, char *tmp, size_t n, char **heap);

typedef struct eb__ingress_held {
	eb__list    link;     /* in->held or in->inflight */
	eb_bus_msg *msg;      /* held reference to the original message */
	uint64_t    since_ms; /* loop time when it started waiting */
	int         retried;
	uint64_t    recv_ns; /* uv_hrtime() at gateway receipt */
	eb_ingress *in;      /* borrowed; NULL once the ingress closed */
	/* A request taken from its requester (eb__ingress_take): answered
	 * through cb, exactly once, then cb is NULL; msg has no reply
	 * address. The requester gives up at deadline_ms (loop time), after
	 * timeout_ms; the gateway honours that as the bus would. */
	eb_bus_reply_cb cb;
	void           *cb_arg;
	uint64_t        timeout_ms;
	uint64_t        deadline_ms;
} eb__ingress_held;

/* gateway.c */
/* Spare eb__ingress_held blocks an ingress keeps (about 16 KiB). */
#define EB__INGRESS_HELD_SPARE 256u
/* A zeroed eb__ingress_held, from in's spare blocks when there is one. */
eb__ingress_held *eb__ingress_held_new(eb_ingress *in);
/* Releases h's message and keeps h for the next one (or frees it: in is
 * NULL once the ingress closed). */
void eb__ingress_held_free(eb_ingress *in, eb__ingress_held *h);
/* Forwards in flight per gateway: the leader acknowledges only what the
 * target's node confirmed, so acknowledgements are the credits of an
 * end-to-end window, and a target queue holds at most the sum of the
 * gateways' windows. */
#define EB__INGRESS_WINDOW 1024u
/* Backlog watermarks: the ingress address is busy from HIGH to LOW. */
#define EB__INGRESS_BACKLOG_HIGH 2048u
#define EB__INGRESS_BACKLOG_LOW  512u
void eb__ingress_gateway_cb(eb_bus_consumer *c, eb_bus_msg *msg, void *arg);
void eb__ingress_fail_all(eb_ingress *in);
/* The gateway latency histogram (read by ingress_admin.c); borrowed. */
const eb__hist *eb__ingress_latency(const eb_ingress *in);
/* router.c */
/* A kept router context has room for this many bytes of strings (entry
 * node, target address, stamped headers: ~110 for a message without
 * headers of its own); at most EB__INGRESS_ROUTE_SPARE (~100 KiB) kept. */
#define EB__INGRESS_ROUTE_STRS  320u
#define EB__INGRESS_ROUTE_SPARE 256u
void eb__ingress_router_cb(eb_bus_consumer *c, eb_bus_msg *msg, void *arg);
/* Routes what waits for its target (warm-up); fails what waited too long. */
void eb__ingress_router_drain(eb_ingress *in);
/* Fails every waiting message as "not the leader" (the gateway retries). */
void eb__ingress_router_release(eb_ingress *in);
/* ingress.c: the last routed message got its receipt while closing. */
void eb__ingress_close_finish(eb_ingress *in);
/* Loop time when the first waiting message gives up, or UINT64_MAX. */
uint64_t eb__ingress_router_deadline(const eb_ingress *in);
void     eb__ingress_rules_free(eb_ingress *in);
int      eb__ingress_rules_copy(
         eb_ingress *in, const eb_ingress_opts *opts, eb_errbuf *err);

/* router.c: rendezvous (highest random weight) hashing of a key over node
 * ids: the same key and the same set of ids give the same id on every node
 * and in every order; NULL when n is 0. The weight is a fixed function of
 * (key, node), independent of the process. */
uint64_t eb__ingress_rendezvous_weight(
    const char *key, size_t klen, const char *node);
const char *eb__ingress_rendezvous(
    const char *key, size_t klen, const char *const *nodes, size_t n);

#endif
