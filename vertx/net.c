/*
 * The Vert.x cluster transport; see net.h for the contract and the bounds.
 * Invariants:
 *   - a connection is on exactly one list (in or out) until its stream has
 *     closed; `closing` is set before the stream's close and nothing is
 *     written or delivered after it;
 *   - an outgoing connection holds the frames sent before its connect
 *     completed in `pending` (counted against max_out with the stream's
 *     backlog) and writes them at once when it is up;
 *   - one timer (tick) judges every deadline; the net's close waits for
 *     the listener, the timer and every connection's stream.
 * Loop thread only; the net owns the connections and their buffers.
 */
#include "vertx/net.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/frame.h"
#include "common/list.h"
#include "common/util.h"
#include "stream/stream.h"

#define TICK_MIN_MS  20u
#define TICK_MAX_MS  500u
#define PONG_MAX_OUT 65536u /* unread pongs before an inbound peer is cut */

typedef struct conn {
	eb__stream    s; /* first: the stream callbacks get the conn */
	eb__vx_net   *net;
	eb__list      link;
	int           outbound;
	int           up; /* outbound: connected */
	int           closing;
	uint64_t      started;
	uint64_t      ping_due; /* outbound: next ping (0: none) */
	uint64_t      pong_due; /* outbound: a ping waits (0: none) */
	char          node_id[128];
	char          peer[64]; /* host:port for logs */
	eb__frame_dec dec;      /* inbound */
	eb__buf       pending;  /* outbound, before the connect completed */
	int           down_err; /* outbound: reported to on_down */
} conn;

struct eb__vx_net {
	uv_loop_t          *loop;
	eb__vx_net_cfg      cfg;
	char               *host; /* owned */
	uv_tcp_t            listener;
	uv_timer_t          tick;
	eb__list            in;
	eb__list            out;
	eb__vx_net_stats    stats;
	int                 port;
	int                 listening;
	int                 closing;
	int                 handles; /* open handles of the net itself */
	eb__vx_net_close_cb close_cb;
	void               *close_arg;
};

static void conn_close(conn *c, int err, const char *why);

static uint64_t
now_ms(const eb__vx_net *n)
{
	return uv_now(n->loop);
}

static void
maybe_closed(eb__vx_net *n)
{
	if (n->closing && n->handles == 0 && eb__list_empty(&n->in) &&
	    eb__list_empty(&n->out)) {
		if (n->close_cb != NULL) {
			n->close_cb(n, n->close_arg);
		}
		free(n->host);
		free(n);
	}
}

/* ---- connections ---- */

static void conn_read_cb(eb__stream *s, const char *data, size_t len);
static void
conn_error_cb(eb__stream *s, int status)
{
	conn *c = (conn *) s;

	conn_close(c, status, status == UV_EOF ? NULL : "socket-error");
}

static void
conn_closed_cb(eb__stream *s)
{
	conn       *c = (conn *) s;
	eb__vx_net *n = c->net;

	eb__list_remove(&c->link);
	/* Reported once the stream is gone: never from inside a call. */
	if (c->outbound && !n->closing && n->cfg.on_down != NULL) {
		n->cfg.on_down(n, c->node_id, c->down_err, n->cfg.arg);
	}
	eb__frame_dec_free(&c->dec);
	eb__buf_free(&c->pending);
	free(c);
	maybe_closed(n);
}

static const eb__stream_cbs conn_cbs = { conn_read_cb, conn_error_cb,
	conn_closed_cb, NULL, NULL };

static conn *
conn_new(eb__vx_net *n, int outbound)
{
	conn *c = eb__calloc(1, sizeof(*c));

	c->net = n;
	c->outbound = outbound;
	c->started = now_ms(n);
	eb__frame_dec_init(&c->dec, n->cfg.max_frame);
	eb__buf_init(&c->pending);
	(void) uv_tcp_init(n->loop, &c->s.tcp);
	if (outbound) {
		(void) eb__stream_init_client(
		    &c->s, NULL, NULL, 0, &conn_cbs, c);
	} else {
		(void) eb__stream_init(&c->s, NULL, &conn_cbs, c);
	}
	eb__list_insert_tail(outbound ? &n->out : &n->in, &c->link);
	(void) snprintf(c->peer, sizeof(c->peer), "?");
	return c;
}

static void
conn_close(conn *c, int err, const char *why)
{
	char q[160];

	if (c->closing) {
		return;
	}
	c->closing = 1;
	if (why != NULL) {
		EB_LOG_RL_WARN("vertx",
		    "conn-closed: dir=%s node_id=%s peer=%s "
		    "reason=%s err=%s",
		    c->outbound ? "out" : "in",
		    eb_log_quote(q, sizeof(q), c->node_id), c->peer, why,
		    eb_err_name(err));
	}
	c->down_err = err != 0 ? err : UV_EOF;
	c->s.ops->close(&c->s);
}

static size_t
conn_backlog(const conn *c)
{
	return eb__buf_avail(&c->pending) + eb__stream_backlog(&c->s);
}

/* An outgoing connection's write (frames, or a ping). */
static int
conn_write(conn *c, eb__buf *b)
{
	int rv;

	if (!c->up) {
		eb__buf_append(&c->pending, eb__buf_head(b), eb__buf_avail(b));
		b->off = b->len = 0;
		return 0;
	}
	rv = c->s.ops->write(&c->s, b);
	if (rv != 0) {
		conn_close(c, rv, "write-failed");
	}
	return rv;
}

static void
inbound_frame(conn *c, const char *p, uint32_t len)
{
	eb__vx_net  *n = c->net;
	eb__vx_frame f;
	eb_errbuf    e = { { 0 } };
	int          rv = eb__vx_decode(p, len, &f, &e);
	char         pong = 1;
	eb__buf      b;

	if (rv == 0 && f.codec == EB_VX_CODEC_PING) {
		/* exactly one 0x01, unframed, on the same socket */
		n->stats.pings_in++;
		if (eb__stream_backlog(&c->s) > PONG_MAX_OUT) {
			conn_close(c, EB_EFULL, "pongs-unread");
			return;
		}
		eb__buf_init(&b);
		eb__buf_append(&b, &pong, 1);
		if (c->s.ops->write(&c->s, &b) != 0) {
			conn_close(c, UV_EPIPE, "write-failed");
		}
		eb__buf_free(&b);
		return;
	}
	if (rv == EB_EFRAME) {
		n->stats.bad_frames++;
		EB_LOG_RL_WARN("vertx", "bad-frame: peer=%s len=%u detail=%s",
		    c->peer, len, e.msg);
		conn_close(c, rv, NULL);
		return;
	}
	n->stats.frames_in++;
	n->cfg.on_frame(n, rv, &f, e.msg, n->cfg.arg);
}

/* A negative or oversized length: the stream cannot be resynchronised. */
static void
frame_too_big(conn *c, int rv)
{
	eb__vx_net *n = c->net;

	n->stats.bad_frames++;
	EB_LOG_RL_WARN("vertx", "bad-frame: peer=%s len=%lld max=%u", c->peer,
	    (long long) c->dec.bad_len, n->cfg.max_frame);
	conn_close(c, rv, NULL);
}

static void
conn_read_cb(eb__stream *s, const char *data, size_t len)
{
	conn       *c = (conn *) s;
	eb__vx_net *n = c->net;
	const char *p;
	uint32_t    flen;
	int         rv;

	if (c->closing) {
		return;
	}
	if (c->outbound) {
		/* pongs: any byte counts (a JVM server writes nothing else) */
		c->pong_due = 0;
		return;
	}
	eb__frame_dec_feed(&c->dec, data, len);
	while (!c->closing && !n->closing) {
		rv = eb__frame_dec_next(&c->dec, &p, &flen);
		if (rv == UV_EAGAIN) {
			return;
		}
		if (rv != 0) {
			frame_too_big(c, rv);
			return;
		}
		inbound_frame(c, p, flen);
	}
}

static void
peer_name(conn *c)
{
	struct sockaddr_storage ss;
	int                     len = sizeof(ss);
	char                    ip[48] = "?";
	int                     port = 0;

	if (uv_tcp_getpeername(&c->s.tcp, (struct sockaddr *) &ss, &len) != 0) {
		return;
	}
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *) &ss;

		(void) uv_ip4_name(a, ip, sizeof(ip));
		port = ntohs(a->sin_port);
	} else if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a =
		    (const struct sockaddr_in6 *) &ss;

		(void) uv_ip6_name(a, ip, sizeof(ip));
		port = ntohs(a->sin6_port);
	}
	eb__fmt_hostport(c->peer, sizeof(c->peer), ip, port);
}

static void
listener_cb(uv_stream_t *server, int status)
{
	eb__vx_net *n = server->data;
	conn       *c;

	if (status != 0 || n->closing) {
		return;
	}
	c = conn_new(n, 0);
	if (uv_accept(server, (uv_stream_t *) &c->s.tcp) != 0 ||
	    c->s.ops->start(&c->s) != 0) {
		conn_close(c, UV_ECONNABORTED, NULL);
		return;
	}
	peer_name(c);
}

/* ---- outgoing ---- */

static conn *
out_find(const eb__vx_net *n, const char *node_id)
{
	eb__list *it;
	eb__list *tmp;

	EB_LIST_FOREACH (it, tmp, &n->out) {
		conn *c = EB_CONTAINER_OF(it, conn, link);

		if (!c->closing && strcmp(c->node_id, node_id) == 0) {
			return c;
		}
	}
	return NULL;
}

static void
dial_cb(eb__stream *s, int status)
{
	conn       *c = (conn *) s;
	eb__vx_net *n = c->net;

	if (status == UV_ECANCELED || c->closing) {
		return;
	}
	if (status != 0 || c->s.ops->start(&c->s) != 0) {
		n->stats.connect_failed++;
		conn_close(c, status != 0 ? status : UV_ECONNABORTED,
		    "connect-failed");
		return;
	}
	c->up = 1;
	if (n->cfg.ping_interval_ms > 0) {
		c->ping_due = now_ms(n) + n->cfg.ping_interval_ms;
	}
	if (eb__buf_avail(&c->pending) > 0) {
		(void) conn_write(c, &c->pending);
	}
	if (!c->closing && n->cfg.on_up != NULL) {
		n->cfg.on_up(n, c->node_id, n->cfg.arg);
	}
}

int
eb__vx_net_send(eb__vx_net *n, const char *node_id, const char *host, int port,
    eb__buf *frames)
{
	conn                   *c = out_find(n, node_id);
	struct sockaddr_storage ss;
	int                     rv;

	EB_ASSERT(!n->closing);
	if (c == NULL) {
		if (eb__ip_addr(host, port, &ss) != 0 ||
		    strlen(node_id) >= sizeof(c->node_id)) {
			frames->off = frames->len = 0;
			return UV_EINVAL;
		}
		c = conn_new(n, 1);
		(void) snprintf(c->node_id, sizeof(c->node_id), "%s", node_id);
		eb__fmt_hostport(c->peer, sizeof(c->peer), host, port);
		rv = eb__stream_connect(
		    &c->s, (const struct sockaddr *) &ss, dial_cb);
		if (rv != 0) {
			n->stats.connect_failed++;
			frames->off = frames->len = 0;
			conn_close(c, rv, "connect-failed");
			return 0; /* on_down reports it */
		}
	}
	n->stats.frames_out++;
	if (conn_backlog(c) + eb__buf_avail(frames) > n->cfg.max_out) {
		n->stats.slow_closed++;
		frames->off = frames->len = 0;
		conn_close(c, EB_EFULL, "peer-too-slow");
		return EB_EFULL;
	}
	(void) conn_write(c, frames); /* a failure is on_down's */
	return 0;
}

void
eb__vx_net_drop(eb__vx_net *n, const char *node_id)
{
	conn *c = out_find(n, node_id);

	if (c != NULL) {
		conn_close(c, EB_ENOROUTE, "member-left");
	}
}

/* ---- deadlines ---- */

static void
out_tick(conn *c, uint64_t now)
{
	eb__vx_net *n = c->net;
	eb__buf     b;

	if (!c->up) {
		if (now - c->started >= n->cfg.connect_timeout_ms) {
			n->stats.connect_failed++;
			conn_close(c, EB_ETIMEOUT, "connect-timeout");
		}
		return;
	}
	if (c->pong_due != 0 && now >= c->pong_due) {
		n->stats.pong_timeouts++;
		conn_close(c, EB_ETIMEOUT, "no-pong");
		return;
	}
	if (conn_backlog(c) > n->cfg.max_out) {
		n->stats.slow_closed++;
		conn_close(c, EB_EFULL, "peer-too-slow");
		return;
	}
	if (c->ping_due != 0 && now >= c->ping_due && c->pong_due == 0) {
		eb__buf_init(&b);
		(void) eb__vx_encode_ping(&b, c->node_id);
		n->stats.pings_out++;
		c->pong_due = now + n->cfg.ping_timeout_ms;
		c->ping_due = now + n->cfg.ping_interval_ms;
		(void) conn_write(c, &b);
		eb__buf_free(&b);
	}
}

static void
tick_cb(uv_timer_t *t)
{
	eb__vx_net *n = t->data;
	uint64_t    now = now_ms(n);
	eb__list   *it;
	eb__list   *tmp;

	EB_LIST_FOREACH (it, tmp, &n->out) {
		conn *c = EB_CONTAINER_OF(it, conn, link);

		if (!c->closing) {
			out_tick(c, now);
		}
	}
}

/* ---- the net ---- */

int
eb__vx_net_new(uv_loop_t *loop, const eb__vx_net_cfg *cfg, eb__vx_net **np)
{
	eb__vx_net *n;

	if (loop == NULL || cfg == NULL || cfg->host == NULL ||
	    cfg->on_frame == NULL || cfg->max_frame < 64 ||
	    cfg->connect_timeout_ms == 0 || cfg->ping_timeout_ms == 0 ||
	    cfg->port < 0 || cfg->port > 65535) {
		return UV_EINVAL;
	}
	n = eb__calloc(1, sizeof(*n));
	n->loop = loop;
	n->cfg = *cfg;
	n->host = eb__strdup(cfg->host);
	n->cfg.host = n->host;
	eb__list_init(&n->in);
	eb__list_init(&n->out);
	*np = n;
	return 0;
}

static uint64_t
tick_ms(const eb__vx_net *n)
{
	uint32_t t = n->cfg.connect_timeout_ms;

	if (n->cfg.ping_interval_ms > 0 && n->cfg.ping_interval_ms < t) {
		t = n->cfg.ping_interval_ms;
	}
	if (n->cfg.ping_timeout_ms < t) {
		t = n->cfg.ping_timeout_ms;
	}
	t /= 4;
	return t < TICK_MIN_MS   ? TICK_MIN_MS
	       : t > TICK_MAX_MS ? TICK_MAX_MS
	                         : t;
}

int
eb__vx_net_start(eb__vx_net *n, eb_errbuf *e)
{
	struct sockaddr_storage ss;
	int                     len = sizeof(ss);
	int                     rv;

	EB_ASSERT(!n->closing && !n->listening);
	rv = eb__ip_addr(n->host, n->cfg.port, &ss);
	if (rv != 0) {
		return eb_errf(
		    e, rv, "vertx.cluster_host %s is not numeric", n->host);
	}
	(void) uv_tcp_init(n->loop, &n->listener);
	(void) uv_timer_init(n->loop, &n->tick);
	n->listener.data = n;
	n->tick.data = n;
	n->handles = 2;
	n->listening = 1;
	rv = uv_tcp_bind(&n->listener, (const struct sockaddr *) &ss, 0);
	if (rv == 0) {
		rv = uv_listen((uv_stream_t *) &n->listener, 128, listener_cb);
	}
	if (rv == 0) {
		rv = uv_tcp_getsockname(
		    &n->listener, (struct sockaddr *) &ss, &len);
	}
	if (rv != 0) {
		return eb_errf(e, rv, "vertx cluster server on %s:%d: %s",
		    n->host, n->cfg.port, uv_strerror(rv));
	}
	n->port = ntohs(ss.ss_family == AF_INET6
	                    ? ((struct sockaddr_in6 *) &ss)->sin6_port
	                    : ((struct sockaddr_in *) &ss)->sin_port);
	(void) uv_timer_start(&n->tick, tick_cb, tick_ms(n), tick_ms(n));
	EB_LOG_INFO(
	    "vertx", "cluster-listening: host=%s port=%d", n->host, n->port);
	return 0;
}

int
eb__vx_net_port(const eb__vx_net *n)
{
	return n->port;
}

static void
handle_closed_cb(uv_handle_t *h)
{
	eb__vx_net *n = h->data;

	n->handles--;
	maybe_closed(n);
}

void
eb__vx_net_close(eb__vx_net *n, eb__vx_net_close_cb cb, void *arg)
{
	eb__list *it;
	eb__list *tmp;

	EB_ASSERT(!n->closing); /* close is exactly once */
	n->closing = 1;
	n->close_cb = cb;
	n->close_arg = arg;
	EB_LIST_FOREACH (it, tmp, &n->in) {
		conn_close(EB_CONTAINER_OF(it, conn, link), 0, NULL);
	}
	EB_LIST_FOREACH (it, tmp, &n->out) {
		conn_close(EB_CONTAINER_OF(it, conn, link), 0, NULL);
	}
	if (n->listening) {
		uv_close((uv_handle_t *) &n->listener, handle_closed_cb);
		uv_close((uv_handle_t *) &n->tick, handle_closed_cb);
		return;
	}
	/* never started: a timer only to call back on a later turn */
	(void) uv_timer_init(n->loop, &n->tick);
	n->tick.data = n;
	n->handles = 1;
	uv_close((uv_handle_t *) &n->tick, handle_closed_cb);
}

void
eb__vx_net_get_stats(const eb__vx_net *n, eb__vx_net_stats *out)
{
	const eb__list *it;

	*out = n->stats;
	out->inbound = 0;
	out->outbound = 0;
	for (it = n->in.next; it != &n->in; it = it->next) {
		out->inbound++;
	}
	for (it = n->out.next; it != &n->out; it = it->next) {
		out->outbound++;
	}
}
