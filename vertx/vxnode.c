/*
 * This node in a Vert.x cluster: the glue between the membership
 * (member.c), the transport (net.c) and the bus (eventbus/bus_ext.h); see
 * vxnode.h. Invariants:
 *   - Vert.x node i of `peers` is the bus's ext node EB__BUS_EXT_NODE |
 *     (i + 1); entries are never removed while the node lives (ids stay
 *     valid for the bus's pending requests);
 *   - the bus's counts for an address are recomputed from the member's
 *     registrations whenever they change (report()): this node excluded
 *     (its own consumers are local to the bus), a node whose connection
 *     failed counted as 0 until the retry timer or a frame from it says
 *     otherwise, and every node counted as 0 until it can answer us
 *     (routable(): it sent us a frame, or the join grace passed);
 *   - this node's subscription znodes for an address follow the bus's
 *     clustered handler count for it (interest), one znode per handler;
 *   - with ingress_local, the bus's count of the engine ingress address is
 *     0 for every Vert.x node: the local gateway is its only consumer
 *     here, and it forwards to the engine leader (ingress_route());
 *   - on_route is called whenever an input of ingress_route() changed:
 *     the engine leader, the registrations of the engine ingress address,
 *     a member's NodeInfo, a peer's connection.
 * Loop thread only; everything here is owned by the node.
 */
#include "vertx/vxnode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/list.h"
#include "common/util.h"
#include "common/vec.h"
#include "eventbus/bus_ext.h"
#include "vertx/engine.h"
#include "vertx/member.h"
#include "vertx/net.h"
#include "vertx/wire.h"

/* What a member's NodeInfo said (seen_cb). */
enum { VP_UNREAD = 0, VP_PEER = 1, VP_SIBLING = 2 };

typedef struct vpeer {
	char *id;    /* owned */
	int   down;  /* its connection failed: no traffic until retried */
	int   knows; /* it sent us a frame: it can answer us */
	int   info;  /* VP_*: unread, a Vert.x peer, a node of our cluster */
} vpeer;

/*
 * A JVM answers a node only once its membership cache holds that node's
 * NodeInfo ("Not a member of the cluster" otherwise), and it drops the
 * answer silently: a request sent right after this node registered can
 * be lost. So the JVMs are offered to the bus (and to the engine ingress
 * route) only when they can answer: a JVM that has sent us a frame, or
 * every member once our NodeInfo has existed this long.
 */
#define EB__VX_JOIN_GRACE_MS 1000u

/* A request from a Vert.x node to the engine ingress address, handed to
 * this node's own bus as a local request (the ingress gateway is a
 * local-only consumer); the answer goes back to the sender. */
typedef struct proxy {
	eb__list            link; /* v->proxies */
	struct eb__vx_node *v;    /* NULL once the node closed */
	char               *sender;
	char               *reply; /* NULL: a plain send */
} proxy;

/* The failure code of an abandoned engine ingress request (the ingress's
 * own code for a node that shuts down). */
#define EB_VX_CLOSING_CODE 599

typedef struct own {
	char   *address; /* owned */
	eb__vec seqs;    /* uint64_t: one subscription znode each */
} own;

struct eb__vx_node {
	uv_loop_t     *loop;
	eb_bus        *bus; /* borrowed */
	eb_vertx_opts  o;   /* strings point at the copies below */
	char          *root;
	char          *host;
	char          *engine_path;    /* NULL: not a participant */
	char          *engine_address; /* owned copies */
	char          *engine_ingress;
	char          *cluster; /* owned: our ebnode cluster, or NULL */
	eb__vx_engine *engine;
	int            engine_leading;
	/* Closing after leading: the election child is gone, the ingress
	 * subscription (engine_seq) stays until a successor registers or the
	 * drain ends, and what still arrives is forwarded to the successor. */
	int      engine_handover;
	uint64_t engine_seq;    /* its subscription while leading */
	char    *engine_leader; /* owned; NULL: not known */
	int      ingress_local;
	int      last_route; /* logged when it changes */
	char     last_jvm[EB_UUID_STRLEN + 64];
	void (*route_cb)(void *arg);
	void                *route_arg;
	eb__list             proxies;
	eb__vx_node_fail_cb  fail_cb;
	void                *fail_arg;
	char                 id[EB_UUID_STRLEN + 64];
	eb__zk_opts          zo; /* strings borrowed until start */
	eb__zk              *zk;
	eb__vx_member       *m;
	eb__vx_net          *net;
	eb__vec              peers; /* vpeer */
	eb__vec              owns;  /* own */
	uv_timer_t           timer; /* retry of down peers, then the drain */
	uv_timer_t           grace; /* EB__VX_JOIN_GRACE_MS after registering */
	int                  known; /* the grace after our NodeInfo passed */
	int                  registered_seen; /* our NodeInfo read back */
	int                  attached;
	int                  started;
	int                  closing;
	int                  pending; /* closes awaited */
	eb__vx_node_close_cb close_cb;
	void                *close_arg;
};

/* ---- node ids ---- */

static uint32_t
node_of(eb__vx_node *v, const char *id)
{
	vpeer *p;

	for (size_t i = 0; i < v->peers.len; i++) {
		p = eb__vec_at(&v->peers, i);
		if (strcmp(p->id, id) == 0) {
			return EB__BUS_EXT_NODE | (uint32_t) (i + 1);
		}
	}
	p = eb__vec_push(&v->peers);
	p->id = eb__strdup(id);
	return EB__BUS_EXT_NODE | (uint32_t) v->peers.len;
}

static vpeer *
peer_of(const eb__vx_node *v, uint32_t node)
{
	uint32_t i = node & ~EB__BUS_EXT_NODE;

	if ((node & EB__BUS_EXT_NODE) == 0 || i == 0 || i > v->peers.len) {
		return NULL;
	}
	return eb__vec_at(&v->peers, i - 1);
}

static void route_changed(eb__vx_node *v);

/* 1 when p may be addressed: its NodeInfo was read (it says where it
 * listens), it is not one of our ebnode cluster's nodes (reached over
 * ebnode's links: over both, a publish would arrive twice), its
 * connection is not down, and it can answer us (EB__VX_JOIN_GRACE_MS). */
static int
routable(const eb__vx_node *v, const vpeer *p)
{
	return !p->down && (v->known || p->knows) && p->info == VP_PEER;
}
/* ---- the engine ingress route (docs/VERTX.md section 7) ---- */

/* Who registered the engine ingress address, this node aside: *ebnode
 * set when an ebnode node did, *jvm the one JVM that did (NULL: none).
 * -1 while the registrations are loading or when two JVMs did. */
static int
ingress_registrants(eb__vx_node *v, int *ebnode, const char **jvm)
{
	const char *const *ids;
	size_t             n = 0;
	int                kind;

	*ebnode = 0;
	*jvm = NULL;
	if (eb__vx_member_subs(v->m, v->engine_ingress, &ids, &n) != 0) {
		return -1;
	}
	for (size_t k = 0; k < n; k++) {
		if (strcmp(ids[k], v->id) == 0) {
			continue;
		}
		kind = eb__vx_member_peer_kind(v->m, ids[k]);
		if (kind == EB_VX_PEER_EBNODE) {
			*ebnode = 1;
		} else if (kind == EB_VX_PEER_JVM && *jvm != NULL &&
		           strcmp(*jvm, ids[k]) != 0) {
			return -1; /* two JVMs consume it */
		} else if (kind == EB_VX_PEER_JVM) {
			*jvm = ids[k];
		}
	}
	return 0;
}

static int
ingress_route(eb__vx_node *v, uint32_t *node)
{
	const char *jvm = NULL;
	int         ebnode = 0;

	if (v->engine_path == NULL || !v->attached || v->engine_leading) {
		return EB_VX_ROUTE_OWN;
	}
	if (!v->closing && v->engine_leader == NULL) {
		return EB_VX_ROUTE_WAIT;
	}
	if (!v->closing &&
	    eb__vx_member_engine_is_ebnode(v->m, v->engine_leader)) {
		return EB_VX_ROUTE_OWN;
	}
	if (ingress_registrants(v, &ebnode, &jvm) != 0) {
		return EB_VX_ROUTE_WAIT;
	}
	/* Closing, the election is left: the successor is whoever
	 * registers the ingress address (an ebnode node: its router). */
	if (v->closing && ebnode) {
		return EB_VX_ROUTE_OWN;
	}
	if (jvm == NULL) {
		return EB_VX_ROUTE_WAIT;
	}
	*node = node_of(v, jvm);
	return routable(v, peer_of(v, *node)) ? EB_VX_ROUTE_JVM
	                                      : EB_VX_ROUTE_WAIT;
}

/* An input of ingress_route() changed: log a new route, tell the owner. */
static void
route_changed(eb__vx_node *v)
{
	static const char *const names[] = { "own", "jvm", "wait" };
	uint32_t                 node = 0;
	int                      r;
	const char              *jvm = "-";
	if (v->engine_path == NULL) {
		return;
	}
	r = ingress_route(v, &node);
	if (r == EB_VX_ROUTE_JVM) {
		jvm = peer_of(v, node)->id;
	}
	if (r != v->last_route || strcmp(jvm, v->last_jvm) != 0) {
		v->last_route = r;
		(void) snprintf(v->last_jvm, sizeof(v->last_jvm), "%s", jvm);
		EB_LOG_NOTICE("vertx",
		    "engine-ingress-route: via=%s leader=%s node_id=%s",
		    names[r], v->engine_leader != NULL ? v->engine_leader : "-",
		    jvm);
	}
	if (v->route_cb != NULL) {
		v->route_cb(v->route_arg);
	}
}

int
eb__vx_node_ingress_route(eb__vx_node *v, uint32_t *node)
{
	return ingress_route(v, node);
}

int
eb__vx_node_ingress_forward(eb__vx_node *v, const char *body, size_t len,
    const json_t *headers, uint64_t timeout_ms, eb_bus_reply_cb cb, void *arg)
{
	uint32_t node = 0;

	if (ingress_route(v, &node) != EB_VX_ROUTE_JVM) {
		return EB_ENOHANDLERS;
	}
	return eb__bus_ext_request(v->bus, node, v->engine_ingress, body, len,
	    headers, timeout_ms, cb, arg);
}

void
eb__vx_node_on_route(eb__vx_node *v, void (*cb)(void *arg), void *arg)
{
	v->route_cb = cb;
	v->route_arg = arg;
}

void
eb__vx_node_ingress_local(eb__vx_node *v, int on)
{
	EB_ASSERT(!v->started);
	v->ingress_local = on != 0;
}

/* A successor registered the engine ingress address: this closing
 * node's subscription goes (what the JVMs still route here is forwarded
 * to the successor until the drain ends). */
static void
handover_check(eb__vx_node *v, const char *const *ids, size_t n)
{
	size_t k = 0;

	if (!v->closing || !v->engine_handover) {
		return;
	}
	while (k < n && strcmp(ids[k], v->id) == 0) {
		k++;
	}
	if (k == n) {
		return; /* nobody else yet */
	}
	v->engine_handover = 0;
	(void) eb__vx_member_sub_del(v->m, v->engine_ingress, v->engine_seq);
	EB_LOG_NOTICE("vertx", "engine-handover: successor=%s", ids[k]);
}

/* ---- the bus's counts ---- */
static void
report(const char *address, void *arg)
{
	eb__vx_node       *v = arg;
	const char *const *ids;
	size_t             n = 0;
	uint32_t          *counts;
	int                engine = strcmp(address, v->engine_ingress) == 0;
	int                local = engine && v->ingress_local;

	if (!v->attached || eb__vx_member_subs(v->m, address, &ids, &n) != 0) {
		return;
	}
	for (size_t k = 0; k < n; k++) {
		if (strcmp(ids[k], v->id) != 0) {
			(void) node_of(v, ids[k]); /* known from here on */
		}
	}
	counts = eb__calloc(v->peers.len + 1, sizeof(*counts));
	for (size_t k = 0; k < n; k++) {
		if (strcmp(ids[k], v->id) != 0 && !local) {
			counts[node_of(v, ids[k]) & ~EB__BUS_EXT_NODE]++;
		}
	}
	for (size_t i = 0; i < v->peers.len; i++) {
		vpeer *p = eb__vec_at(&v->peers, i);

		eb__bus_ext_interest(v->bus, address,
		    EB__BUS_EXT_NODE | (uint32_t) (i + 1),
		    routable(v, p) ? counts[i + 1] : 0);
	}
	free(counts);
	if (engine) {
		handover_check(v, ids, n);
		route_changed(v);
	}
}

static void
ready_cb(const char *address, void *arg)
{
	report(address, arg);
}

/* The JVMs have had time to learn our NodeInfo. */
static void
grace_cb(uv_timer_t *t)
{
	eb__vx_node *v = t->data;

	v->known = 1;
	EB_LOG_INFO("vertx", "vertx-join-grace-passed: after_ms=%u",
	    EB__VX_JOIN_GRACE_MS);
	if (v->attached) {
		eb__vx_member_each_addr(v->m, report, v);
		route_changed(v);
	}
}

/* A member's NodeInfo (its metadata) was read. */
static void
seen_cb(const char *node_id, void *arg)
{
	eb__vx_node *v = arg;
	int          self = strcmp(node_id, v->id) == 0;

	if (v->attached && !v->closing && self && !v->registered_seen) {
		/* our NodeInfo is there: the JVMs' caches follow */
		v->registered_seen = 1;
		(void) uv_timer_start(
		    &v->grace, grace_cb, EB__VX_JOIN_GRACE_MS, 0);
	}
	if (v->attached && !self) {
		/* where it listens and what it is: routable() may change */
		vpeer *p = peer_of(v, node_of(v, node_id));

		p->info =
		    eb__vx_member_peer_in_cluster(v->m, node_id, v->cluster)
		        ? VP_SIBLING
		        : VP_PEER;
		eb__vx_member_each_addr(v->m, report, v);
	}
	if (v->attached) {
		route_changed(v);
	}
}

static int send_to(eb__vx_node *v, const char *node_id, eb__buf *b);

/* Down peers get a ping: a connection that comes up (up_cb) puts the peer
 * back into routing; one that fails keeps it out, with no request lost on
 * the way. */
static void
retry_cb(uv_timer_t *t)
{
	eb__vx_node *v = t->data;
	eb__buf      b;

	eb__buf_init(&b);
	for (size_t i = 0; i < v->peers.len; i++) {
		vpeer *p = eb__vec_at(&v->peers, i);

		if (p->down && eb__vx_encode_ping(&b, p->id) == 0) {
			(void) send_to(v, p->id, &b);
		}
		b.off = b.len = 0;
	}
	eb__buf_free(&b);
}

static void
up_cb(eb__vx_net *n, const char *node_id, void *arg)
{
	eb__vx_node *v = arg;
	vpeer       *p = peer_of(v, node_of(v, node_id));

	(void) n;
	if (v->attached && p->down) {
		p->down = 0;
		eb__vx_member_each_addr(v->m, report, v);
		route_changed(v);
	}
}

static void
peer_down(eb__vx_node *v, const char *id, const char *text)
{
	uint32_t node = node_of(v, id);
	vpeer   *p = peer_of(v, node);

	p->down = 1;
	eb__bus_ext_node_down(v->bus, node, text);
	route_changed(v);
}

static void
gone_cb(const char *node_id, void *arg)
{
	eb__vx_node *v = arg;
	char         text[200];

	if (!v->attached) {
		return;
	}
	eb__vx_net_drop(v->net, node_id);
	peer_of(v, node_of(v, node_id))->info = VP_UNREAD;
	(void) snprintf(text, sizeof(text), "Vert.x node %.64s left", node_id);
	peer_down(v, node_id, text);
}

static void
down_cb(eb__vx_net *n, const char *node_id, int err, void *arg)
{
	eb__vx_node *v = arg;
	char         text[200];

	(void) n;
	if (!v->attached) {
		return;
	}
	(void) snprintf(text, sizeof(text),
	    "Connection to Vert.x node %.64s lost: %s", node_id,
	    eb_strerror(err));
	peer_down(v, node_id, text);
}

/* ---- to Vert.x ---- */

/* Sends one whole frame in b to node_id. */
static int
send_to(eb__vx_node *v, const char *node_id, eb__buf *b)
{
	const char *host;
	int         port;
	int         rv = eb__vx_member_peer(v->m, node_id, &host, &port);

	if (rv != 0) {
		b->off = b->len = 0;
		return EB_ELINKDOWN;
	}
	return eb__vx_net_send(v->net, node_id, host, port, b);
}

static int
x_forward(void *ctx, uint32_t node, eb_bus_msg *msg, int kind)
{
	eb__vx_node *v = ctx;
	vpeer       *p = peer_of(v, node);
	size_t       len = 0;
	const char  *body = eb_bus_msg_body_bytes(msg, &len);
	eb__vx_out o = { eb_bus_msg_address(msg), eb_bus_msg_reply_address(msg),
		v->id, kind == EB__BUS_EXT_PUBLISH, eb_bus_msg_headers(msg),
		body, len };
	eb__buf    b;
	int        rv;

	if (p == NULL || p->down) {
		return EB_ELINKDOWN;
	}
	eb__buf_init(&b);
	rv = eb__vx_encode(&b, &o);
	if (rv == 0) {
		rv = send_to(v, p->id, &b);
	}
	eb__buf_free(&b);
	return rv;
}

static int
x_fail(void *ctx, uint32_t node, const char *reply_address, int status,
    eb_bus_failure_type type, int code, const char *message)
{
	eb__vx_node *v = ctx;
	vpeer       *p = peer_of(v, node);
	eb__buf      b;
	int          rv;

	(void) status;
	if (p == NULL) {
		return EB_ELINKDOWN;
	}
	eb__buf_init(&b);
	rv = eb__vx_encode_failure(
	    &b, reply_address, v->id, (int) type, code, message);
	if (rv == 0) {
		rv = send_to(v, p->id, &b);
	}
	eb__buf_free(&b);
	return rv;
}

static const char *
x_peer_name(void *ctx, uint32_t node)
{
	const vpeer *p = peer_of(ctx, node);

	return p != NULL ? p->id : NULL;
}

static own *
own_find(eb__vx_node *v, const char *address)
{
	for (size_t i = 0; i < v->owns.len; i++) {
		own *o = eb__vec_at(&v->owns, i);

		if (strcmp(o->address, address) == 0) {
			return o;
		}
	}
	return NULL;
}

/* This node's handlers of address: one znode each. */
static void
x_interest(void *ctx, const char *address, uint32_t count)
{
	eb__vx_node *v = ctx;
	own         *o = own_find(v, address);
	uint64_t     seq;

	if (v->closing) {
		return; /* leaving: the znodes are being deleted */
	}
	if (o == NULL) {
		if (count == 0) {
			return;
		}
		o = eb__vec_push(&v->owns);
		o->address = eb__strdup(address);
		eb__vec_init(&o->seqs, sizeof(uint64_t));
	}
	while (o->seqs.len < count &&
	       eb__vx_member_sub_add(v->m, address, &seq) == 0) {
		*(uint64_t *) eb__vec_push(&o->seqs) = seq;
	}
	while (o->seqs.len > count) {
		seq = *(uint64_t *) eb__vec_at(&o->seqs, o->seqs.len - 1);
		(void) eb__vx_member_sub_del(v->m, address, seq);
		o->seqs.len--;
	}
}

static const eb__bus_ext_ops ext_ops = {
	.forward = x_forward,
	.fail = x_fail,
	.peer_name = x_peer_name,
	.interest = x_interest,
};

/* ---- from Vert.x ---- */

static int engine_ingress(eb__vx_node *v, const eb__vx_frame *f,
    const char *address, const char *reply, const char *body, size_t len,
    const json_t *h);

static char *
span_dup(const eb__vx_span *s)
{
	return eb__strndup(s->p, s->n);
}

/* An ERROR failure back to the sender of f, as a JVM answers a frame it
 * cannot read. */
static void
answer_error(eb__vx_node *v, const eb__vx_frame *f, const char *why)
{
	char   *reply = span_dup(&f->reply);
	char   *sender = span_dup(&f->sender);
	eb__buf b;

	eb__buf_init(&b);
	if (f->reply.n > 0 && eb__vx_encode_failure(&b, reply, v->id,
	                          EB_VX_FAIL_ERROR, -1, why) == 0) {
		(void) send_to(v, sender, &b);
	}
	eb__buf_free(&b);
	free(reply);
	free(sender);
}

static int
failure_status(int type)
{
	switch (type) {
	case EB_VX_FAIL_TIMEOUT:
		return EB_ETIMEOUT;
	case EB_VX_FAIL_NO_HANDLERS:
		return EB_ENOHANDLERS;
	case EB_VX_FAIL_RECIPIENT:
		return EB_ERECIPIENT;
	default:
		return EB_EPROTO;
	}
}

/* A reply or failure for a request of this node (address is its reply
 * address). */
static void
on_reply(eb__vx_node *v, uint32_t node, const eb__vx_frame *f,
    const char *address, const char *own_reply)
{
	eb__vx_failure fail;
	eb_errbuf      e = { { 0 } };
	eb__buf        js;
	json_t        *h = NULL;
	int            err = 0;
	int            rv;
	char          *msg;

	eb__buf_init(&js);
	rv = eb__vx_body_json(f, &js, &fail, &e);
	if (rv == EB_ERECIPIENT) {
		msg = fail.has_message ? span_dup(&fail.message) : NULL;
		(void) eb__bus_ext_failed(v->bus, address,
		    failure_status(fail.type),
		    fail.type <= EB_VX_FAIL_ERROR
		        ? (eb_bus_failure_type) fail.type
		        : EB_BUS_ERROR,
		    fail.code, msg);
		free(msg);
	} else if (rv != 0 || (h = eb__vx_headers_json(f, &err)) == NULL) {
		(void) eb__bus_ext_failed(v->bus, address, EB_EPROTO,
		    EB_BUS_ERROR, -1, rv != 0 ? e.msg : "bad reply headers");
	} else {
		(void) eb__bus_ext_reply(v->bus, node, address, own_reply,
		    eb__buf_head(&js), eb__buf_avail(&js), h);
	}
	json_decref(h);
	eb__buf_free(&js);
}

static void
on_message(eb__vx_node *v, uint32_t node, const eb__vx_frame *f,
    const char *address, const char *reply)
{
	eb__vx_failure fail;
	eb_errbuf      e = { { 0 } };
	eb__buf        js;
	json_t        *h = NULL;
	int            err = 0;
	int            rv;
	char           q[128];

	eb__buf_init(&js);
	rv = eb__vx_body_json(f, &js, &fail, &e);
	if (rv == 0 && (h = eb__vx_headers_json(f, &err)) != NULL) {
		if (!engine_ingress(v, f, address, reply, eb__buf_head(&js),
		        eb__buf_avail(&js), h)) {
			eb__bus_ext_deliver(v->bus, node, address, reply,
			    f->publish, eb__buf_head(&js), eb__buf_avail(&js),
			    h);
		}
	} else if (rv != EB_ERECIPIENT) {
		/* a body this node cannot map: the sender hears why */
		EB_LOG_RL_WARN("vertx", "frame-refused: address=%s detail=%s",
		    eb_log_quote(q, sizeof(q), address),
		    rv != 0 ? e.msg : "bad headers");
		answer_error(v, f, rv != 0 ? e.msg : "bad headers");
	} /* else: a failure for a request that gave up meanwhile */
	json_decref(h);
	eb__buf_free(&js);
}

static void
frame_cb(eb__vx_net *n, int status, const eb__vx_frame *f, const char *why,
    void *arg)
{
	eb__vx_node *v = arg;
	char        *sender;
	char        *address;
	char        *reply;
	uint32_t     node;
	vpeer       *p;

	(void) n;
	if (!v->attached) {
		return; /* still served during the drain */
	}
	if (status != 0) {
		answer_error(v, f, why);
		return;
	}
	sender = span_dup(&f->sender);
	address = span_dup(&f->address);
	reply = span_dup(&f->reply);
	node = node_of(v, sender);
	p = peer_of(v, node);
	if (!p->knows) {
		/* it reached us, so it knows our NodeInfo */
		p->knows = 1;
		if (!v->known) {
			eb__vx_member_each_addr(v->m, report, v);
			route_changed(v);
		}
	}
	if (p->down) {
		/* it talks to us: worth trying again */
		p->down = 0;
		eb__vx_member_each_addr(v->m, report, v);
		route_changed(v);
	}
	if (!f->publish && eb__bus_ext_pending(v->bus, address)) {
		on_reply(v, node, f, address, reply);
	} else {
		on_message(v, node, f, address, reply);
	}
	free(sender);
	free(address);
	free(reply);
}

/* ---- the engine's ingress (docs/VERTX.md section 7) ---- */

static void
proxy_free(proxy *p)
{
	eb__list_remove(&p->link);
	free(p->sender);
	free(p->reply);
	free(p);
}

static void
proxy_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg)
{
	proxy       *p = arg;
	eb__vx_node *v = p->v;
	eb__buf      b;
	size_t       len = 0;
	const char  *body;

	(void) bus;
	if (v == NULL || p->reply == NULL) {
		proxy_free(p);
		return;
	}
	eb__buf_init(&b);
	if (status == 0 && reply != NULL) {
		eb__vx_out o = { p->reply, eb_bus_msg_reply_address(reply),
			v->id, 0, eb_bus_msg_headers(reply), NULL, 0 };

		body = eb_bus_msg_body_bytes(reply, &len);
		o.body = body;
		o.body_len = len;
		(void) eb__vx_encode(&b, &o);
	} else {
		(void) eb__vx_encode_failure(&b, p->reply, v->id,
		    failure != NULL ? (int) failure->type : EB_VX_FAIL_ERROR,
		    failure != NULL ? failure->code : -1,
		    failure != NULL && failure->message != NULL
		        ? failure->message
		        : eb_strerror(status));
	}
	if (eb__buf_avail(&b) > 0) {
		(void) send_to(v, p->sender, &b);
	}
	eb__buf_free(&b);
	proxy_free(p);
}

/* 1 when f was the engine ingress and was handed to the local bus. */
static int
engine_ingress(eb__vx_node *v, const eb__vx_frame *f, const char *address,
    const char *reply, const char *body, size_t len, const json_t *h)
{
	proxy *p;
	int    rv;
	if ((!v->engine_leading && !v->engine_handover) || f->publish ||
	    strcmp(address, v->engine_ingress) != 0) {
		return 0;
	}
	p = eb__calloc(1, sizeof(*p));
	p->v = v;
	p->sender = eb__strndup(f->sender.p, f->sender.n);
	p->reply = reply[0] != '\0' ? eb__strdup(reply) : NULL;
	eb__list_insert_tail(&v->proxies, &p->link);
	rv = eb_bus_request_raw(
	    v->bus, address, body, len, h, NULL, proxy_cb, p);
	if (rv != 0) {
		eb_bus_failure fl = { EB_BUS_ERROR, -1, eb_strerror(rv) };

		proxy_cb(v->bus, rv, NULL, &fl, p);
	}
	return 1;
}

static void
engine_cb(eb__vx_engine_event ev, const char *detail, void *arg)
{
	eb__vx_node *v = arg;
	int          leading = ev == EB_VX_ENGINE_LEADER;

	if (ev == EB_VX_ENGINE_DUPLICATE) {
		if (v->fail_cb != NULL) {
			v->fail_cb(v, EB_EDUPADDR, v->fail_arg);
		}
		return;
	}
	if (ev == EB_VX_ENGINE_REGISTERED || v->closing) {
		return;
	}
	free(v->engine_leader);
	v->engine_leader = strcmp(detail, "-") != 0 ? eb__strdup(detail) : NULL;
	if (leading == v->engine_leading) {
		route_changed(v);
		return;
	}
	v->engine_leading = leading;
	if (leading) {
		/* Java bridges' ingress reaches this node from here on */
		(void) eb__vx_member_sub_add(
		    v->m, v->engine_ingress, &v->engine_seq);
	} else {
		(void) eb__vx_member_sub_del(
		    v->m, v->engine_ingress, v->engine_seq);
	}
	route_changed(v);
}

/* ---- lifecycle ---- */

static void
zk_event_cb(eb__zk *zk, eb__zk_event ev, void *arg)
{
	eb__vx_node *v = arg;
	(void) zk;
	if (ev == EB_ZK_EV_EXPIRED && !v->closing) {
		/* our NodeInfo went: the JVMs forget us, and learn us again
		 * after the new session's registration */
		v->known = 0;
		v->registered_seen = 0;
		(void) uv_timer_stop(&v->grace);
		for (size_t i = 0; i < v->peers.len; i++) {
			((vpeer *) eb__vec_at(&v->peers, i))->knows = 0;
		}
		if (v->attached) {
			eb__vx_member_each_addr(v->m, report, v);
		}
	}
	if (v->m != NULL && !v->closing) {
		eb__vx_member_session_event(v->m, ev);
	}
	if (v->engine != NULL && !v->closing) {
		eb__vx_engine_session_event(v->engine, ev);
	}
}

int
eb__vx_node_new(uv_loop_t *loop, eb_bus *bus, const eb_vertx_opts *opts,
    const eb__zk_opts *zo, eb__vx_node **vp)
{
	eb__vx_node *v;

	if (loop == NULL || bus == NULL || opts == NULL || zo == NULL ||
	    opts->root == NULL || opts->cluster_host == NULL) {
		return UV_EINVAL;
	}
	v = eb__calloc(1, sizeof(*v));
	v->loop = loop;
	v->bus = bus;
	v->o = *opts;
	v->root = eb__strdup(opts->root);
	v->host = eb__strdup(opts->cluster_host);
	v->o.root = v->root;
	v->o.cluster_host = v->host;
	v->zo = *zo;
	if (opts->node_id != NULL) {
		(void) snprintf(v->id, sizeof(v->id), "%s", opts->node_id);
	} else if (eb__uuid(v->id) != 0) {
		free(v->root);
		free(v->host);
		free(v);
		return UV_EINVAL;
	}
	v->o.node_id = v->id;
	if (opts->engine_root != NULL && opts->engine_address != NULL) {
		size_t n = strlen(v->root) + strlen(opts->engine_root) + 2;

		v->engine_path = eb__malloc(n);
		(void) snprintf(
		    v->engine_path, n, "/%s%s", v->root, opts->engine_root);
		v->engine_address = eb__strdup(opts->engine_address);
	}
	v->engine_ingress =
	    eb__strdup(opts->engine_ingress != NULL ? opts->engine_ingress
	                                            : EB_VERTX_ENGINE_INGRESS);
	v->cluster = opts->ebnode_cluster != NULL
	                 ? eb__strdup(opts->ebnode_cluster)
	                 : NULL;
	v->o.ebnode_cluster = v->cluster;
	eb__list_init(&v->proxies);
	eb__vec_init(&v->peers, sizeof(vpeer));
	eb__vec_init(&v->owns, sizeof(own));
	(void) uv_timer_init(loop, &v->timer);
	v->timer.data = v;
	(void) uv_timer_init(loop, &v->grace);
	v->grace.data = v;
	*vp = v;
	return 0;
}

int
eb__vx_node_start(eb__vx_node *v, eb_errbuf *e)
{
	eb__vx_net_cfg nc = { v->host, v->o.cluster_port, v->o.max_frame_bytes,
		v->o.write_queue_bytes, v->o.connect_timeout_ms,
		v->o.ping_interval_ms, v->o.ping_timeout_ms, frame_cb, down_cb,
		v, up_cb };
	eb__vx_member_cfg mc = { v->root, v->id, v->host, 0, gone_cb, ready_cb,
		v, NULL, seen_cb };
	json_t           *meta;
	char             *meta_text;
	int               rv;

	EB_ASSERT(!v->closing && !v->started);
	v->started = 1;
	if ((rv = eb__vx_net_new(v->loop, &nc, &v->net)) != 0 ||
	    (rv = eb__vx_net_start(v->net, e)) != 0) {
		return rv;
	}
	mc.port = eb__vx_net_port(v->net);
	/* The marker that tells ebnode nodes from JVMs (NodeInfo metadata,
	 * which Vert.x keeps for applications): the gateways of the other
	 * ebnode nodes read who leads the engine from it, and the nodes of
	 * our own ebnode cluster that they reach us over ebnode's links. */
	meta = json_pack("{s:{}}", "ebnode");
	if (v->engine_address != NULL) {
		(void) json_object_set_new(json_object_get(meta, "ebnode"),
		    "engine_address", json_string(v->engine_address));
	}
	if (v->cluster != NULL) {
		(void) json_object_set_new(json_object_get(meta, "ebnode"),
		    "cluster", json_string(v->cluster));
	}
	meta_text = json_dumps(meta, JSON_COMPACT);
	json_decref(meta);
	mc.metadata = meta_text;
	if ((rv = eb__zk_new(v->loop, &v->zo, zk_event_cb, v, &v->zk)) != 0) {
		return eb_errf(
		    e, rv, "vertx: ZooKeeper session: %s", eb_strerror(rv));
	}
	rv = eb__vx_member_new(v->loop, v->zk, &mc, &v->m);
	free(meta_text); /* copied */
	if (rv != 0 || (rv = eb__zk_start(v->zk)) != 0 ||
	    (rv = eb__vx_member_start(v->m)) != 0) {
		return eb_errf(e, rv, "vertx: membership: %s", eb_strerror(rv));
	}
	eb__vx_member_watch_all(v->m);
	if ((rv = eb__bus_ext_attach(v->bus, &ext_ops, v)) != 0) {
		return eb_errf(e, rv,
		    "vertx: the bus has no cluster links to extend (%s)",
		    eb_strerror(rv));
	}
	v->attached = 1;
	if (v->engine_path != NULL &&
	    ((rv = eb__vx_engine_new(v->loop, v->zk, v->engine_path,
	          v->engine_address, engine_cb, v, &v->engine)) != 0 ||
	        (rv = eb__vx_engine_start(v->engine)) != 0)) {
		return eb_errf(
		    e, rv, "vertx: engine election: %s", eb_strerror(rv));
	}
	if (v->o.connect_timeout_ms > 0) {
		(void) uv_timer_start(&v->timer, retry_cb,
		    v->o.connect_timeout_ms, v->o.connect_timeout_ms);
	}
	EB_LOG_NOTICE("vertx",
	    "vertx-started: node_id=%s host=%s port=%d root=/%s", v->id,
	    v->host, mc.port, v->root);
	return 0;
}

const char *
eb__vx_node_id(const eb__vx_node *v)
{
	return v->id;
}

void
eb__vx_node_on_fail(eb__vx_node *v, eb__vx_node_fail_cb cb, void *arg)
{
	v->fail_cb = cb;
	v->fail_arg = arg;
}

int
eb__vx_node_port(const eb__vx_node *v)
{
	return v->net != NULL ? eb__vx_net_port(v->net) : 0;
}

static void
node_free(eb__vx_node *v)
{
	for (size_t i = 0; i < v->peers.len; i++) {
		free(((vpeer *) eb__vec_at(&v->peers, i))->id);
	}
	for (size_t i = 0; i < v->owns.len; i++) {
		own *o = eb__vec_at(&v->owns, i);

		free(o->address);
		eb__vec_free(&o->seqs);
	}
	eb__vec_free(&v->peers);
	eb__vec_free(&v->owns);
	/* proxies still waiting for the bus: their callback frees them */
	while (!eb__list_empty(&v->proxies)) {
		proxy *p =
		    EB_CONTAINER_OF(eb__list_first(&v->proxies), proxy, link);

		p->v = NULL;
		eb__list_remove(&p->link);
		eb__list_init(&p->link);
	}
	free(v->engine_path);
	free(v->engine_leader);
	free(v->engine_address);
	free(v->cluster);
	free(v->engine_ingress);
	free(v->root);
	free(v->host);
	free(v);
}

static void
part_closed(eb__vx_node *v)
{
	if (--v->pending == 0) {
		if (v->close_cb != NULL) {
			v->close_cb(v, v->close_arg);
		}
		node_free(v);
	}
}

static void
member_closed_cb(eb__vx_member *m, void *arg)
{
	(void) m;
	part_closed(arg);
}

static void
engine_closed_cb(eb__vx_engine *e, void *arg)
{
	(void) e;
	part_closed(arg);
}

static void
zk_closed_cb(eb__zk *zk, void *arg)
{
	(void) zk;
	part_closed(arg);
}

static void
net_closed_cb(eb__vx_net *n, void *arg)
{
	(void) n;
	part_closed(arg);
}

static void
timer_closed_cb(uv_handle_t *h)
{
	part_closed(h->data);
}

/* Engine ingress requests from JVMs still waiting for the bus at the
 * end of the drain (e.g. held for the next ebnode leader): their senders
 * get a failure now instead of waiting for their timeout; the bus's
 * callback only frees them later. */
static void
proxies_abandon(eb__vx_node *v)
{
	eb__buf b;

	eb__buf_init(&b);
	while (!eb__list_empty(&v->proxies)) {
		proxy *p =
		    EB_CONTAINER_OF(eb__list_first(&v->proxies), proxy, link);

		if (p->reply != NULL &&
		    eb__vx_encode_failure(&b, p->reply, v->id,
		        EB_VX_FAIL_RECIPIENT, EB_VX_CLOSING_CODE,
		        "ebnode: node shutting down") == 0) {
			(void) send_to(v, p->sender, &b);
		}
		b.off = b.len = 0;
		p->v = NULL;
		eb__list_remove(&p->link);
		eb__list_init(&p->link);
	}
	eb__buf_free(&b);
}

/* After the drain: the session (the NodeInfo goes at once), then the
 * sockets. */
static void
drained_cb(uv_timer_t *t)
{
	eb__vx_node *v = t->data;

	proxies_abandon(v);
	if (v->attached) {
		/* The bus forgets the Vert.x nodes (their pending requests
		 * fail with EB_ELINKDOWN). */
		eb__bus_ext_detach(v->bus);
		v->attached = 0;
	} /* v->pending counts the timer (from close on) and the engine, which
	   * closed at the start */
	if (v->m != NULL) {
		v->pending++;
		eb__vx_member_close(v->m, member_closed_cb, v);
	}
	if (v->zk != NULL) {
		v->pending++;
		eb__zk_close(v->zk, zk_closed_cb, v);
	}
	if (v->net != NULL) {
		v->pending++;
		eb__vx_net_close(v->net, net_closed_cb, v);
	}
	v->pending++;
	uv_close((uv_handle_t *) &v->grace, timer_closed_cb);
	uv_close((uv_handle_t *) &v->timer, timer_closed_cb);
}

void
eb__vx_node_close(eb__vx_node *v, eb__vx_node_close_cb cb, void *arg)
{
	EB_ASSERT(!v->closing); /* close is exactly once */
	v->closing = 1;
	v->close_cb = cb;
	v->close_arg =
	    arg; /* The JVMs stop routing here once the subscription znodes are
	          * gone; what they routed before still arrives during the drain
	          * and is served. The engine child goes at once (a hand-over):
	          * the successor is elected during the drain, and the ingress
	          * subscription of a leader stays until that successor
	          * registers (handover_check), so the JVMs always find a
	          * consumer. */
	if (v->engine_leading && v->m != NULL) {
		v->engine_handover = 1;
		v->engine_leading = 0;
	}
	v->pending = 1; /* the timer, closed after the drain */
	if (v->engine != NULL) {
		v->pending++;
		eb__vx_engine_close(v->engine, engine_closed_cb, v);
		v->engine = NULL;
	}
	for (size_t i = 0; v->m != NULL && i < v->owns.len; i++) {
		own *o = eb__vec_at(&v->owns, i);

		for (size_t k = 0; k < o->seqs.len; k++) {
			(void) eb__vx_member_sub_del(v->m, o->address,
			    *(uint64_t *) eb__vec_at(&o->seqs, k));
		}
		o->seqs.len = 0;
	}
	(void) uv_timer_stop(&v->timer);
	(void) uv_timer_start(&v->timer, drained_cb,
	    v->started && v->m != NULL ? v->o.drain_ms : 0, 0);
}
