/*
 * The bridge server: options, TLS context, the listening socket, accepting
 * connections (the connection limit, evicting a silent one, detached
 * connections), the stream callbacks of every connection, the sweep timer
 * (its verdicts: idle timeout, TLS handshake, first-frame and frame
 * deadlines, stalled parked clients; reply expiry), close, and the
 * read-only views for the node (stats, connection iterator).
 *
 * The server owns the listener and the connection list and calls into
 * connections (bridge_int.h); connections never call back into this file:
 * it learns that a connection's socket is gone from the stream's closed
 * callback it installed (live--), then may finish closing.
 *
 * Invariants: live counts the accepted sockets (connections and refused
 * ones) whose handle has not closed; the close callback runs after every
 * handle of the bridge and every socket has closed, once; the listener
 * accepts nothing once closing. Threads: loop thread only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/bridge.h>
#include <ebnode/log.h>

#include "bridge/bridge_admin.h"
#include "bridge/bridge_int.h"
#include "bridge/bridge_obs.h"
#include "common/alloc.h"
#include "common/assert.h"
#include "common/util.h"

#define BRIDGE_DEFAULT_MAX_FRAME    (1024u * 1024u)
#define BRIDGE_DEFAULT_WRITE_QUEUE  ((size_t) 4 * 1024 * 1024)
#define BRIDGE_DEFAULT_MAX_CONNS    1024u
#define BRIDGE_DEFAULT_REPLY_TTL    30000u
#define BRIDGE_DEFAULT_FRAME_MS     30000u
#define BRIDGE_DEFAULT_FIRST_MS     10000u
#define BRIDGE_DEFAULT_TLS_MS       10000u
#define BRIDGE_DEFAULT_INPUT        ((size_t) 32 * 1024 * 1024)
#define BRIDGE_DEFAULT_CONSUMERS    1024u
#define BRIDGE_DEFAULT_REQUESTS     1024u
#define BRIDGE_DEFAULT_REQUESTS_ALL 65536u
#define BRIDGE_DEFAULT_REQ_MAX_MS   300000u
#define BRIDGE_SWEEP_MAX_MS         1000u
#define BRIDGE_SWEEP_MIN_MS         50u

void
eb_bridge_opts_init(eb_bridge_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->host = "127.0.0.1";
	opts->port = 0;
	opts->backlog = 128;
	opts->max_frame_bytes = BRIDGE_DEFAULT_MAX_FRAME;
	opts->max_json_depth = EB_BRIDGE_DEFAULT_JSON_DEPTH;
	opts->write_queue_max_bytes = BRIDGE_DEFAULT_WRITE_QUEUE;
	opts->idle_timeout_ms = 0;
	opts->max_connections = BRIDGE_DEFAULT_MAX_CONNS;
	opts->reply_ttl_ms = BRIDGE_DEFAULT_REPLY_TTL;
	opts->frame_timeout_ms = BRIDGE_DEFAULT_FRAME_MS;
	opts->first_frame_timeout_ms = BRIDGE_DEFAULT_FIRST_MS;
	opts->tls_handshake_timeout_ms = BRIDGE_DEFAULT_TLS_MS;
	opts->input_budget_bytes = BRIDGE_DEFAULT_INPUT;
	opts->max_consumers_per_conn = BRIDGE_DEFAULT_CONSUMERS;
	opts->max_requests_per_conn = BRIDGE_DEFAULT_REQUESTS;
	opts->max_requests = BRIDGE_DEFAULT_REQUESTS_ALL;
	opts->max_request_timeout_ms = BRIDGE_DEFAULT_REQ_MAX_MS;
	opts->tls_client_auth = EB_BRIDGE_CLIENT_AUTH_NONE;
	opts->auth_mode = EB_BRIDGE_AUTH_OFF;
}

static int
tls_ctx_new(const eb_bridge_opts *o, eb_errbuf *err, eb__tls_ctx **out)
{
	eb__tls_ctx_opts to;
	char             why[sizeof(err->msg)];
	int              rv;

	if (o->tls_key == NULL) {
		return eb_errf(err, EB_ECONF, "bridge tls: cert without key");
	}
	if (o->tls_client_auth != EB_BRIDGE_CLIENT_AUTH_NONE &&
	    o->tls_ca == NULL) {
		return eb_errf(
		    err, EB_ECONF, "bridge tls: client auth needs a CA file");
	}
	memset(&to, 0, sizeof(to));
	to.cert_file = o->tls_cert;
	to.key_file = o->tls_key;
	to.ca_file = o->tls_ca;
	to.verify = o->tls_client_auth == EB_BRIDGE_CLIENT_AUTH_REQUIRED
	                ? EB__TLS_VERIFY_REQUIRE
	            : o->tls_client_auth == EB_BRIDGE_CLIENT_AUTH_REQUEST
	                ? EB__TLS_VERIFY_REQUEST
	                : EB__TLS_VERIFY_NONE;
	to.idle_server = 1;
	rv = eb__tls_ctx_new(&to, out, err);
	if (rv != 0) {
		(void) snprintf(why, sizeof(why), "%s", err->msg);
		rv = eb_errf(err, rv, "bridge tls: %s", why);
	}
	return rv;
}

static int
opts_check(const eb_bridge_opts *o, eb_errbuf *err)
{
	if (o->port < 0 || o->port > 65535) {
		return eb_errf(err, EB_ECONF, "bridge.port out of range");
	}
	if (o->max_frame_bytes < 16 || o->max_frame_bytes > 0x7fffffffu) {
		return eb_errf(err, EB_ECONF,
		    "bridge.max_frame_bytes out of "
		    "range");
	}
	if (o->max_json_depth < 2 ||
	    o->max_json_depth > EB_BRIDGE_MAX_JSON_DEPTH) {
		return eb_errf(err, EB_ECONF,
		    "bridge.max_json_depth out of range (2..%d)",
		    EB_BRIDGE_MAX_JSON_DEPTH);
	}
	if (o->write_queue_max_bytes < 1024) {
		return eb_errf(err, EB_ECONF,
		    "bridge.write_queue_max_bytes "
		    "below 1024");
	}
	if (o->max_connections == 0) {
		return eb_errf(err, EB_ECONF, "bridge.max_connections is 0");
	}
	if (o->auth_mode != EB_BRIDGE_AUTH_OFF &&
	    (o->auth_token == NULL || o->auth_token[0] == '\0')) {
		return eb_errf(err, EB_ECONF, "bridge.auth needs a token");
	}
	return 0;
}

int
eb_bridge_new(uv_loop_t *loop, eb_bus *bus, const eb_bridge_opts *opts,
    eb_errbuf *err, eb_bridge **bridgep)
{
	eb_bridge *b;
	int        rv;

	rv = opts_check(opts, err);
	if (rv != 0) {
		return rv;
	}
	b = eb__calloc(1, sizeof(*b));
	b->loop = loop;
	b->bus = bus;
	b->opts = *opts;
	b->host = eb__strdup(opts->host != NULL ? opts->host : "127.0.0.1");
	b->token = eb__strdup(opts->auth_token != NULL ? opts->auth_token : "");
	b->opts.host = b->host;
	b->opts.auth_token = NULL; /* only b->token holds it */
	/* Paths and lists are used only here; do not keep borrowed ones. */
	b->opts.tls_cert = NULL;
	b->opts.tls_key = NULL;
	b->opts.tls_ca = NULL;
	b->opts.inbound = NULL;
	b->opts.outbound = NULL;
	eb__list_init(&b->conns);
	eb__list_init(&b->paused);
	eb__list_init(&b->blocked);
	eb__list_init(&b->fresh);
	eb__list_init(&b->pending_out);
	eb__obs_init(&b->closed_obs);
	eb__budget_init(
	    &b->input, opts->input_budget_bytes, eb__bridge_input_reclaim, b);
	rv = eb__perm_init(
	    &b->inbound, opts->inbound, opts->inbound_count, "inbound", err);
	if (rv != 0) {
		goto fail;
	}
	rv = eb__perm_init(&b->outbound, opts->outbound, opts->outbound_count,
	    "outbound", err);
	if (rv != 0) {
		goto fail;
	}
	if (opts->tls_cert != NULL) {
		rv = tls_ctx_new(opts, err, &b->tls);
		if (rv != 0) {
			goto fail;
		}
	}
	*bridgep = b;
	return 0;
fail:
	eb__obs_free(&b->closed_obs);
	eb__perm_free(&b->outbound);
	eb__perm_free(&b->inbound);
	free(b->token);
	free(b->host);
	free(b);
	return rv;
}

static void
bridge_free(eb_bridge *b)
{
	eb__spare_free(&b->breq_spare); /* after the last connection */
	eb__obs_free(&b->closed_obs);
	eb__perm_free(&b->outbound);
	eb__perm_free(&b->inbound);
	eb__tls_ctx_free(b->tls); /* accepts NULL */
	free(b->token);
	free(b->host);
	free(b);
}

static void
bridge_maybe_done(eb_bridge *b)
{
	if (!b->closing || b->open_handles > 0 || b->live > 0) {
		return;
	}
	b->close_cb(b, b->close_arg);
	bridge_free(b); /* nothing may touch b after this line */
}

/* A socket's handle closed. */
static void
conn_gone(eb_bridge *b)
{
	b->live--;
	bridge_maybe_done(b);
}

/* ---- accept ---- */

static void
conn_error_cb(eb__stream *s, int status)
{
	eb__bconn *c = s->data;

	if (status == EB_ETLS) {
		c->b->stats.tls_failed++;
		EB_LOG_NOTICE("bridge", "tls-failed: peer=%s reason=%s",
		    c->peer, s->tls_err);
		eb__bconn_close(c, "tls");
		return;
	}
	eb__bconn_close(c, status == UV_EOF ? "eof" : uv_err_name(status));
}

static void
conn_closed_cb(eb__stream *s)
{
	eb__bconn *c = s->data;
	eb_bridge *b = c->b;

	eb__bconn_free(c);
	conn_gone(b);
}

static const eb__stream_cbs conn_cbs = {
	.read_cb = eb__bconn_read_cb,
	.error_cb = conn_error_cb,
	.closed_cb = conn_closed_cb,
	.written_cb = eb__bconn_written_cb,
};

static void
peer_name(uv_tcp_t *tcp, char *out, size_t n)
{
	struct sockaddr_storage ss;
	int                     len = (int) sizeof(ss);
	char                    host[INET6_ADDRSTRLEN] = "?";
	int                     port = 0;

	if (uv_tcp_getpeername(tcp, (struct sockaddr *) &ss, &len) == 0) {
		if (ss.ss_family == AF_INET) {
			const struct sockaddr_in *a = (void *) &ss;

			(void) uv_ip4_name(a, host, sizeof(host));
			port = ntohs(a->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			const struct sockaddr_in6 *a = (void *) &ss;

			(void) uv_ip6_name(a, host, sizeof(host));
			port = ntohs(a->sin6_port);
		}
	}
	/* host:port, [v6]:port */
	(void) snprintf(out, n, strchr(host, ':') != NULL ? "[%s]:%d" : "%s:%d",
	    host, port);
}

static void
refused_closed_cb(uv_handle_t *h)
{
	eb_bridge *b = h->data;

	free(h);
	conn_gone(b);
}

static void
accept_refused(eb_bridge *b, uv_stream_t *listener)
{
	uv_tcp_t *t = eb__malloc(sizeof(*t));

	(void) uv_tcp_init(b->loop, t);
	t->data = b;
	b->live++;
	(void) uv_accept(listener, (uv_stream_t *) t);
	b->stats.conns_refused++;
	EB_LOG_RL_NOTICE("bridge", "conn-refused: open=%llu max=%u",
	    (unsigned long long) b->stats.conns_open, b->opts.max_connections);
	uv_close((uv_handle_t *) t, refused_closed_cb);
}

/*
 * Full, and some connection has not completed a single frame (slowloris, or
 * a client that only connects): the oldest of them makes room, so that
 * idle sockets cannot lock everyone else out. Connections that have spoken
 * are never evicted. 1 when a slot is free now.
 */
static int
conn_make_room(eb_bridge *b)
{
	eb__list  *old = eb__list_first(&b->fresh);
	eb__bconn *c;

	if (old == NULL) {
		return 0;
	}
	c = EB_CONTAINER_OF(old, eb__bconn, fresh_link);
	b->stats.conns_evicted++;
	EB_LOG_RL_NOTICE("bridge",
	    "conn-evicted: peer=%s age_ms=%llu open=%llu max=%u", c->peer,
	    (unsigned long long) (eb__mono_ms() - c->started_ms),
	    (unsigned long long) b->stats.conns_open, b->opts.max_connections);
	eb__bconn_close(c, "evicted-at-limit");
	/* A SOCKET_CLOSED hook may have opened more. */
	return b->stats.conns_open < b->opts.max_connections;
}

/* A new connection with its socket handle initialised (live++) and its
 * stream set up with the connection callbacks (TLS: the bridge's). */
static eb__bconn *
conn_open(eb_bridge *b, int fresh, eb__tls_ctx *tls, int *rv)
{
	eb__bconn *c = eb__bconn_new(b, fresh);

	(void) uv_tcp_init(b->loop, &c->stream.tcp);
	b->live++;
	*rv = eb__stream_init(&c->stream, tls, &conn_cbs, c);
	return c;
}

void
eb__bconn_accept_from(
    eb_bridge *b, uv_stream_t *listener, eb__stream_layer_fn layer, void *arg)
{
	eb__bconn *c;
	int        rv;

	if (b->stats.conns_open >= b->opts.max_connections &&
	    !conn_make_room(b)) {
		accept_refused(b, listener);
		return;
	}
	c = conn_open(b, 1, b->tls, &rv);
	if (rv == 0) {
		rv = uv_accept(listener, (uv_stream_t *) &c->stream.tcp);
	}
	if (rv == 0) {
		(void) uv_tcp_nodelay(&c->stream.tcp, 1);
		peer_name(&c->stream.tcp, c->peer, sizeof(c->peer));
		if (layer != NULL) {
			rv = layer(&c->stream, arg);
		}
	}
	if (rv == 0) {
		rv = c->stream.ops->start(&c->stream);
	}
	if (rv != 0) {
		(void) snprintf(c->peer, sizeof(c->peer), "?");
		eb__bconn_close(c, eb_err_name(rv));
		return;
	}
	EB_LOG_DEBUG("bridge", "conn-open: peer=%s id=%llu tls=%d", c->peer,
	    (unsigned long long) c->id, b->tls != NULL);
	(void) eb__bconn_hook(c, EB_BRIDGE_EV_SOCKET_CREATED, NULL);
}

eb__bconn *
eb__bconn_open_detached(eb_bridge *b)
{
	int        rv;
	eb__bconn *c = conn_open(b, 0, NULL, &rv);

	(void) rv; /* a plain stream's init does not fail */
	(void) snprintf(c->peer, sizeof(c->peer), "detached:%llu",
	    (unsigned long long) c->id);
	eb__stream_make_null(&c->stream);
	return c;
}

static void
listener_cb(uv_stream_t *server, int status)
{
	eb_bridge *b = server->data;

	if (b->closing) {
		return;
	}
	if (status < 0) {
		EB_LOG_WARN(
		    "bridge", "accept-failed: err=%s", uv_err_name(status));
		return;
	}
	eb__bconn_accept_from(b, (uv_stream_t *) &b->listener, NULL, NULL);
}

/* ---- sweep ---- */

/* The deadline c has passed, or NULL; counted (the close follows). */
static const char *
conn_verdict(eb__bconn *c, uint64_t now)
{
	eb_bridge *b = c->b;

	if (b->opts.idle_timeout_ms > 0 &&
	    now - c->active_ms >= b->opts.idle_timeout_ms) {
		b->stats.conns_closed_idle++;
		return "idle";
	}
	if (b->tls != NULL && !c->stream.handshake_done &&
	    b->opts.tls_handshake_timeout_ms > 0 &&
	    now - c->started_ms >= b->opts.tls_handshake_timeout_ms) {
		b->stats.tls_failed++;
		b->stats.conns_closed_timeout++;
		return "tls-handshake-timeout";
	}
	/* Deadlines from a start, never reset by a byte: a client that
	 * trickles bytes cannot hold a connection (slowloris). */
	if (c->fresh && b->opts.first_frame_timeout_ms > 0 &&
	    now - c->started_ms >= b->opts.first_frame_timeout_ms) {
		b->stats.conns_closed_timeout++;
		return "first-frame-timeout";
	}
	if (c->parked && now - c->parked_ms >= EB__BCONN_PARK_STALL_MS) {
		b->stats.conns_closed_slow++;
		EB_LOG_WARN("bridge",
		    "slow-consumer-closed: peer=%s queued=%zu stalled_ms=%llu",
		    c->peer, eb__bconn_out_backlog(c),
		    (unsigned long long) (now - c->parked_ms));
		return "slow-consumer";
	}
	if (c->frame_started_ms != 0 && b->opts.frame_timeout_ms > 0 &&
	    now - c->frame_started_ms >= b->opts.frame_timeout_ms) {
		b->stats.conns_closed_timeout++;
		return "frame-timeout";
	}
	if (c->layer_started_ms != 0 && b->opts.frame_timeout_ms > 0 &&
	    now - c->layer_started_ms >= b->opts.frame_timeout_ms) {
		b->stats.conns_closed_timeout++;
		return "message-timeout";
	}
	return NULL;
}

/* Decides (never closes) whether c must go, and expires its replies. */
static void
conn_sweep(eb__bconn *c, uint64_t now)
{
	if (c->doomed != NULL) {
		return;
	}
	c->doomed = conn_verdict(c, now);
	if (c->doomed == NULL) {
		eb__breply_expire(c, now);
	}
}

/* The first open connection the sweep doomed, or NULL. */
static eb__bconn *
first_doomed(eb_bridge *b)
{
	eb__list *it;

	for (it = b->conns.next; it != &b->conns; it = it->next) {
		if (eb__bconn_from_link(it)->doomed != NULL) {
			return eb__bconn_from_link(it);
		}
	}
	return NULL;
}

static uint64_t sweep_interval(const eb_bridge *b);

static void
sweep_cb(uv_timer_t *t)
{
	eb_bridge *b = t->data;
	uint64_t   now = eb__mono_ms();
	eb__list  *it;
	eb__bconn *c;

	if (eb__stall_skip(&b->sweep_stall, now, sweep_interval(b))) {
		/* Clients' input waits in the sockets: read it first. */
		EB_LOG_NOTICE("bridge",
		    "stall: gap_ms=%llu verdicts deferred by one sweep",
		    (unsigned long long) b->sweep_stall.gap_ms);
		return;
	}
	/* Decide first (nothing closes, no hook runs), then close one at a
	 * time: a close runs the SOCKET_CLOSED hook, which may close other
	 * connections, so the list is searched again after each. */
	for (it = b->conns.next; it != &b->conns; it = it->next) {
		conn_sweep(eb__bconn_from_link(it), now);
	}
	while ((c = first_doomed(b)) != NULL) {
		eb__bconn_close(c, c->doomed);
	}
}

static uint64_t
sweep_min(uint64_t ms, uint64_t timeout)
{
	return timeout > 0 && timeout / 4 < ms ? timeout / 4 : ms;
}

/* A quarter of the shortest bound: each closes at most 25 % late. */
static uint64_t
sweep_interval(const eb_bridge *b)
{
	uint64_t ms = BRIDGE_SWEEP_MAX_MS;

	ms = sweep_min(ms, b->opts.idle_timeout_ms);
	ms = sweep_min(ms, b->opts.frame_timeout_ms);
	ms = sweep_min(ms, b->opts.first_frame_timeout_ms);
	if (b->tls != NULL) {
		ms = sweep_min(ms, b->opts.tls_handshake_timeout_ms);
	}
	return ms < BRIDGE_SWEEP_MIN_MS ? BRIDGE_SWEEP_MIN_MS : ms;
}

int
eb_bridge_start(eb_bridge *b, eb_errbuf *err)
{
	struct sockaddr_storage ss;
	int                     len = (int) sizeof(ss);
	int                     rv;

	EB_ASSERT(!b->closing); /* start after close */
	if (b->started) {
		return eb_errf(err, EB_ECLOSED, "bridge already started");
	}
	rv = eb__ip_addr(b->host, b->opts.port, &ss);
	if (rv != 0) {
		return eb_errf(
		    err, rv, "bridge.host \"%s\": not an IP address", b->host);
	}
	b->started = 1;
	(void) uv_tcp_init(b->loop, &b->listener);
	(void) uv_timer_init(b->loop, &b->sweep);
	b->listener.data = b;
	b->sweep.data = b;
	b->listener_inited = 1;
	rv = uv_tcp_bind(&b->listener, (const struct sockaddr *) &ss, 0);
	if (rv == 0) {
		rv = uv_listen(
		    (uv_stream_t *) &b->listener, b->opts.backlog, listener_cb);
	}
	if (rv != 0) {
		return eb_errf(err, rv, "bridge listen %s:%d: %s", b->host,
		    b->opts.port, uv_strerror(rv));
	}
	if (uv_tcp_getsockname(&b->listener, (struct sockaddr *) &ss, &len) ==
	    0) {
		b->port = ntohs(ss.ss_family == AF_INET6
		                    ? ((struct sockaddr_in6 *) &ss)->sin6_port
		                    : ((struct sockaddr_in *) &ss)->sin_port);
	}
	(void) uv_timer_start(
	    &b->sweep, sweep_cb, sweep_interval(b), sweep_interval(b));
	uv_unref((uv_handle_t *) &b->sweep);
	EB_LOG_INFO("bridge",
	    strchr(b->host, ':') != NULL
	        ? "listening: addr=[%s]:%d tls=%d max_frame=%u"
	        : "listening: addr=%s:%d tls=%d max_frame=%u",
	    b->host, b->port, b->tls != NULL, b->opts.max_frame_bytes);
	return 0;
}

int
eb_bridge_port(const eb_bridge *b)
{
	return b->port;
}

static void
bridge_handle_closed_cb(uv_handle_t *h)
{
	eb_bridge *b = h->data;

	b->open_handles--;
	bridge_maybe_done(b);
}

static void
bridge_close_deferred_cb(uv_timer_t *t)
{
	/* Used only when nothing was started: makes cb run on a later tick. */
	eb_bridge *b = t->data;

	uv_close((uv_handle_t *) t, bridge_handle_closed_cb);
	(void) b;
}

void
eb_bridge_close(eb_bridge *b, eb_bridge_close_cb cb, void *arg)
{
	eb__list *it;

	EB_ASSERT(!b->closing); /* double close */
	b->closing = 1;
	b->close_cb = cb;
	b->close_arg = arg;
	/* Each close unlinks its connection (and a SOCKET_CLOSED hook may
	 * close others): take the first until none is left. */
	while ((it = eb__list_first(&b->conns)) != NULL) {
		eb__bconn_close(eb__bconn_from_link(it), "bridge-closing");
	}
	if (b->pressure_watching) {
		b->pressure_watching = 0;
		(void) eb_bus_pressure_unwatch(
		    b->bus, eb__bridge_pressure_cb, b);
	}
	if (b->drain_inited) {
		b->open_handles++;
		uv_close((uv_handle_t *) &b->drain, bridge_handle_closed_cb);
	}
	if (b->flush_inited) {
		/* Every connection flushed its output when it closed. */
		b->open_handles += 2;
		uv_close(
		    (uv_handle_t *) &b->flush_prep, bridge_handle_closed_cb);
		uv_close(
		    (uv_handle_t *) &b->flush_check, bridge_handle_closed_cb);
	}
	if (b->listener_inited) {
		b->open_handles += 2;
		uv_close((uv_handle_t *) &b->listener, bridge_handle_closed_cb);
		uv_close((uv_handle_t *) &b->sweep, bridge_handle_closed_cb);
		return;
	}
	/* Never started: borrow the sweep timer to reach a later tick. */
	(void) uv_timer_init(b->loop, &b->sweep);
	b->sweep.data = b;
	b->open_handles++;
	(void) uv_timer_start(&b->sweep, bridge_close_deferred_cb, 0, 0);
}

void
eb_bridge_stats_get(const eb_bridge *b, eb_bridge_stats *out)
{
	*out = b->stats;
	out->input_bytes = b->input.used;
}

eb__budget *
eb__bridge_budget(eb_bridge *b)
{
	return &b->input;
}

const char *
eb_bridge_in_kind_name(eb_bridge_frame_kind k)
{
	static const char *const names[EB_BRIDGE_IN_KINDS] = { "send",
		"publish", "register", "unregister", "ping", "unknown",
		"malformed" };

	return (unsigned) k < EB_BRIDGE_IN_KINDS ? names[k] : "?";
}

const char *
eb_bridge_out_kind_name(eb_bridge_out_kind k)
{
	static const char *const names[EB_BRIDGE_OUT_KINDS] = { "message",
		"err", "pong" };

	return (unsigned) k < EB_BRIDGE_OUT_KINDS ? names[k] : "?";
}

size_t
eb_bridge_conn_foreach(const eb_bridge *b,
    void (*fn)(const eb_bridge_conn_info *info, void *arg), void *arg)
{
	eb_bridge_conn_info info;
	uint64_t            now = eb__mono_ms();
	eb__list           *it;
	size_t              n = 0;

	for (it = b->conns.next; it != &b->conns; it = it->next) {
		eb__bconn_info(eb__bconn_from_link(it), now, &info);
		fn(&info, arg);
		n++;
	}
	return n;
}

void
eb__bridge_on_conn_closed(eb_bridge *b, eb__bridge_conn_closed_cb cb, void *arg)
{
	EB_ASSERT(!b->closing);
	eb__obs_add(&b->closed_obs, (eb__obs_fn) cb, arg);
}

int
eb__bridge_off_conn_closed(
    eb_bridge *b, eb__bridge_conn_closed_cb cb, void *arg)
{
	return eb__obs_remove(&b->closed_obs, (eb__obs_fn) cb, arg);
}

void
eb_bridge_set_hook(eb_bridge *b, eb_bridge_hook_fn fn, void *arg)
{
	b->hook = fn;
	b->hook_arg = fn != NULL ? arg : NULL;
}

const char *
eb_bridge_event_name(eb_bridge_event_type t)
{
	static const char *const names[] = { "SOCKET_CREATED", "SOCKET_CLOSED",
		"SOCKET_PING", "SEND", "PUBLISH", "REGISTER", "REGISTERED",
		"UNREGISTER" };

	return (unsigned) t < sizeof(names) / sizeof(names[0]) ? names[t] : "?";
}

int
eb_bridge_conn_close(eb_bridge *b, uint64_t conn_id)
{
	eb__list           *it;
	eb_bridge_conn_info info;
	uint64_t            now = eb__mono_ms();

	for (it = b->conns.next; it != &b->conns; it = it->next) {
		eb__bconn *c = eb__bconn_from_link(it);

		eb__bconn_info(c, now, &info);
		if (info.id == conn_id) {
			eb__bconn_close(c, "closed-by-api");
			return 0;
		}
	}
	return UV_ENOENT;
}

int
eb_bridge_set_permitted(eb_bridge *b, const eb_bridge_permitted *inbound,
    size_t inbound_count, const eb_bridge_permitted *outbound,
    size_t outbound_count, eb_errbuf *err)
{
	eb__perm_list in, out;
	int           rv;

	EB_ASSERT(!b->closing);
	memset(&in, 0, sizeof(in));
	memset(&out, 0, sizeof(out));
	rv = eb__perm_init(&in, inbound, inbound_count, "inbound", err);
	if (rv != 0) {
		return rv;
	}
	rv = eb__perm_init(&out, outbound, outbound_count, "outbound", err);
	if (rv != 0) {
		eb__perm_free(&in);
		return rv;
	}
	eb__perm_free(&b->inbound);
	eb__perm_free(&b->outbound);
	b->inbound = in;
	b->outbound = out;
	return 0;
}
