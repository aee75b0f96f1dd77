/*
 * One node link connection: frame decoding, the hello exchange, heartbeats
 * and timeouts, coalesced writes and close. The manager (link.c) decides
 * what a connection is for; this file gives its frames to its stream
 * (stream/stream.h: the socket, TLS when configured, the write queue).
 *
 * Wire: every frame is a big-endian u32 length, then a type byte, then the
 * body. Hello (type 1): u16 version, str16 node id, str16 cluster name,
 * then (since versioned links; older nodes ignore trailing bytes) u16 min,
 * u16 max: the range the sender speaks. The dialer sends its hello first,
 * proposing a version; the acceptor answers with the version the pair
 * speaks (link_version.c). Heartbeat (type 2): empty. Types >= 16 go to
 * the upper layer unread.
 *
 * Threads: loop thread only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/log.h>

#include "common/alloc.h"
#include "link/link_int.h"

static void conn_read_cb(eb__stream *s, const char *data, size_t n);
static void conn_error_cb(eb__stream *s, int status);
static void conn_closed_cb(eb__stream *s);
static void conn_written_cb(eb__stream *s);
static void conn_handshake_cb(eb__stream *s);

static const eb__stream_cbs conn_cbs = {
	.read_cb = conn_read_cb,
	.error_cb = conn_error_cb,
	.closed_cb = conn_closed_cb,
	.written_cb = conn_written_cb,
	.handshake_cb = conn_handshake_cb,
};

link_conn *
eb__link_conn_new(eb_link_mgr *m, int outbound)
{
	link_conn *c = eb__calloc(1, sizeof(*c));

	c->mgr = m;
	c->outbound = outbound;
	c->state = outbound ? LINK_CONNECTING : LINK_HELLO;
	c->started = uv_now(m->loop);
	c->last_rx = c->started;
	c->last_tx = c->started;
	eb__frame_dec_init(&c->dec, m->max_frame);
	eb__buf_init(&c->out);
	eb__list_init(&c->flush_link);
	eb__list_insert_tail(&m->conns, &c->link);
	(void) uv_tcp_init(m->loop, &c->s.tcp);
	(void) snprintf(c->peer_addr, sizeof(c->peer_addr), "?");
	/* The dialer is the TLS client. Its peer is verified against the
	 * cluster CA only (no name: node certificates need not name hosts). */
	c->setup_err = outbound
	                   ? eb__stream_init_client(
	                         &c->s, m->tls_ctx, NULL, 0, &conn_cbs, c)
	                   : eb__stream_init(&c->s, m->tls_ctx, &conn_cbs, c);
	if (c->setup_err != 0) {
		EB_LOG_WARN("link", "tls-error: op=new peer=%s detail=%s",
		    c->peer_addr, c->s.tls_err);
	}
	return c;
}

static void
conn_dial_cb(eb__stream *s, int status)
{
	link_conn *c = s->data;

	if (status == UV_ECANCELED) {
		return; /* closed meanwhile */
	}
	if (status != 0) {
		EB_LOG_DEBUG("link", "connect-failed: peer=%s err=%s",
		    c->peer_addr, eb_err_name(status));
		eb__link_conn_close(c, NULL);
		return;
	}
	eb__link_conn_start(c);
}

int
eb__link_conn_dial(link_conn *c, const struct sockaddr *sa)
{
	EB_ASSERT(c->outbound && c->state == LINK_CONNECTING);
	return eb__stream_connect(&c->s, sa, conn_dial_cb);
}

size_t
eb__link_conn_backlog(const link_conn *c)
{
	return eb__stream_backlog(&c->s);
}

static void
conn_closed_cb(eb__stream *s)
{
	link_conn   *c = s->data;
	eb_link_mgr *m = c->mgr;

	EB_ASSERT(c->state == LINK_CLOSING);
	eb__list_remove(&c->link);
	eb__list_remove(&c->flush_link);
	eb__frame_dec_free(&c->dec);
	eb__buf_free(&c->out);
	free(c);
	eb__link_mgr_conn_gone(m);
}

eb_log_level
eb__link_conn_log_level(const link_conn *c)
{
	if (c->outbound && c->state != LINK_UP && c->peer != NULL &&
	    c->peer->attempts > 0) {
		return EB_LOG_LEVEL_DEBUG;
	}
	return EB_LOG_LEVEL_WARN;
}

void
eb__link_conn_close(link_conn *c, const char *why)
{
	if (c->state == LINK_CLOSING) {
		return;
	}
	if (why != NULL && eb__link_conn_log_level(c) <= eb_log_get_level()) {
		eb_log_write(eb__link_conn_log_level(c), "link",
		    "link-closed: node=%s peer=%s reason=%s",
		    c->peer != NULL ? c->peer->node_id : "?", c->peer_addr,
		    why);
	}
	c->state = LINK_CLOSING;
	eb__list_remove(&c->flush_link);
	if (c->peer != NULL) {
		/* Report down now: senders must skip this peer from here on. */
		eb__link_peer_lost(c->mgr, c->peer, c);
	}
	if (c->mgr->cur == c) {
		c->mgr->cur = NULL;
	}
	c->s.ops->close(&c->s);
}

/* Tells the handler when the bytes waiting for the kernel pass the high
 * watermark, and when they are back under the low one (link.h). */
static void
conn_congestion(link_conn *c)
{
	eb_link_mgr *m = c->mgr;
	size_t       q = c->s.tcp.write_queue_size;
	int          on = c->congested ? q > EB__LINK_CONGESTED_LO
	                               : q > EB__LINK_CONGESTED_HI;

	if (on == c->congested || c->state != LINK_UP || c->peer == NULL ||
	    c->peer->conn != c) {
		return;
	}
	c->congested = on;
	c->peer->congestions += on ? 1 : 0;
	EB_LOG_DEBUG("link", "congested: node=%s on=%d queued=%zu",
	    c->peer->node_id, on, q);
	if (m->h != NULL && m->h->congested != NULL) {
		m->h->congested(m->hctx, c->peer->id, on);
	}
}

/* A queued write completed: the congestion may be over. */
static void
conn_written_cb(eb__stream *s)
{
	link_conn *c = s->data;

	if (c->congested) {
		conn_congestion(c);
	}
}

void
eb__link_conn_flush(link_conn *c)
{
	int rv;

	if (eb__buf_avail(&c->out) == 0 || c->state == LINK_CLOSING ||
	    c->state == LINK_CONNECTING) {
		return;
	}
	c->last_tx = uv_now(c->mgr->loop);
	if (c->s.tls != NULL && !c->s.handshake_done) {
		return; /* sent once the handshake completes */
	}
	/* The whole buffer in one write (TLS: one encryption); its memory
	 * stays for the next frames. */
	rv = c->s.ops->write(&c->s, &c->out);
	if (rv == EB_ETLS) {
		eb__link_tls_log(c, "write");
		eb__link_conn_close(c, "TLS write failed");
		return;
	}
	if (rv != 0) {
		eb__link_conn_close(c, eb_err_name(rv));
		return;
	}
	conn_congestion(c);
}

static void
conn_put_frame_hdr(link_conn *c, uint8_t type, size_t *off)
{
	char *h = eb__buf_reserve(&c->out, EB_FRAME_HDR + 1);

	*off = c->out.len;
	h[EB_FRAME_HDR] = (char) type;
	c->out.len += EB_FRAME_HDR + 1;
}

static void
conn_end_frame(link_conn *c, size_t off)
{
	eb__frame_put_len((unsigned char *) c->out.data + off,
	    (uint32_t) (c->out.len - off - EB_FRAME_HDR));
	eb__link_conn_mark_dirty(c);
}

/* version: proposed (dialer) or agreed (acceptor). */
static void
conn_send_hello(link_conn *c, uint16_t version)
{
	eb_link_mgr *m = c->mgr;
	size_t       off;

	conn_put_frame_hdr(c, LINK_FRAME_HELLO, &off);
	eb__link_put_u16(&c->out, version);
	(void) eb__link_put_str16(&c->out, m->node_id, strlen(m->node_id));
	(void) eb__link_put_str16(&c->out, m->cluster, strlen(m->cluster));
	eb__link_put_u16(&c->out, m->proto_min);
	eb__link_put_u16(&c->out, m->proto_max);
	conn_end_frame(c, off);
}

static void
conn_read_cb(eb__stream *s, const char *data, size_t n)
{
	link_conn *c = s->data;
	int        rv;

	c->last_rx = uv_now(c->mgr->loop);
	rv = eb__link_conn_input(c, data, n);
	if (rv != 0 && c->state != LINK_CLOSING) {
		eb__link_conn_close(c, eb_strerror(rv));
	}
}

static void
conn_error_cb(eb__stream *s, int status)
{
	link_conn *c = s->data;

	if (status == EB_ETLS) {
		eb__link_tls_log(c, c->s.handshake_done ? "read" : "handshake");
		c->fail = EB_LINK_DOWN_TLS;
		eb__link_conn_close(c, eb_strerror(status));
		return;
	}
	eb__link_conn_close(c, status == UV_EOF ? NULL : eb_err_name(status));
}

/* TLS is up: the frames queued meanwhile (the hello) can go. */
static void
conn_handshake_cb(eb__stream *s)
{
	eb__link_conn_mark_dirty(s->data);
}

void
eb__link_conn_start(link_conn *c)
{
	struct sockaddr_storage sa;
	int                     len = sizeof(sa);
	char                    ip[48] = "?";
	int                     rv;

	EB_ASSERT(c->state == LINK_CONNECTING || c->state == LINK_HELLO);
	c->state = LINK_HELLO;
	if (!c->outbound &&
	    uv_tcp_getpeername(&c->s.tcp, (struct sockaddr *) &sa, &len) == 0) {
		if (sa.ss_family == AF_INET) {
			(void) uv_ip4_name(
			    (struct sockaddr_in *) &sa, ip, sizeof(ip));
			(void) snprintf(c->peer_addr, sizeof(c->peer_addr),
			    "%s:%d", ip,
			    ntohs(((struct sockaddr_in *) &sa)->sin_port));
		}
	}
	(void) uv_tcp_nodelay(&c->s.tcp, 1);
	if (c->setup_err != 0) {
		c->fail = EB_LINK_DOWN_TLS;
		eb__link_conn_close(c, "TLS setup failed");
		return;
	}
	/* Reads; a TLS client also sends its hello. */
	rv = c->s.ops->start(&c->s);
	if (rv == EB_ETLS) {
		eb__link_tls_log(c, "handshake");
		c->fail = EB_LINK_DOWN_TLS;
		eb__link_conn_close(c, "TLS setup failed");
		return;
	}
	if (rv != 0) {
		eb__link_conn_close(c, "read failed");
		return;
	}
	/* The dialer opens; the acceptor answers the hello it reads. */
	if (c->outbound) {
		c->version = c->peer != NULL
		                 ? eb__link_version_for(c->mgr, c->peer)
		                 : EB_LINK_PROTOCOL_LEGACY;
		conn_send_hello(
		    c, c->version != 0 ? c->version : c->mgr->proto_max);
	}
}

/* The hello of a peer we dialed must name the peer we meant. */
static link_peer *
hello_outbound(link_conn *c, const char *node_id)
{
	if (c->peer == NULL || strcmp(c->peer->node_id, node_id) != 0) {
		char q[EB_LOG_QUOTE_MAX];

		EB_LOG_WARN("link", "hello-wrong-node: peer=%s node=%s",
		    c->peer_addr, eb_log_quote(q, sizeof(q), node_id));
		return NULL;
	}
	return c->peer;
}

/* Only the lower id dials; anything else is a misconfigured or confused
 * peer (or ourselves). A node the membership has not reported yet is
 * accepted: membership may lag behind the peer. */
static link_peer *
hello_inbound(link_conn *c, const char *node_id)
{
	eb_link_mgr *m = c->mgr;
	link_peer   *p;

	if (strcmp(node_id, m->node_id) >= 0) {
		char q[EB_LOG_QUOTE_MAX];

		EB_LOG_WARN("link", "hello-not-dialer: peer=%s node=%s",
		    c->peer_addr, eb_log_quote(q, sizeof(q), node_id));
		return NULL;
	}
	if ((p = eb__link_peer_find(m, node_id)) == NULL) {
		p = eb__link_peer_new(m, node_id);
	}
	c->peer = p;
	return p;
}

/* The version this side links at after the peer's hello (version, and
 * its range when it sent one), or 0: none in common. */
static uint16_t
hello_version(
    link_conn *c, uint16_t version, int ranged, uint16_t pmin, uint16_t pmax)
{
	eb_link_mgr *m = c->mgr;

	if (!c->outbound && ranged) {
		return eb__link_version_pick(m->proto_min, m->proto_max, pmin,
		    pmax); /* ours to choose */
	}
	/* The acceptor's answer, or an old dialer's only version. */
	if (version < m->proto_min || version > m->proto_max ||
	    (ranged && (version < pmin || version > pmax))) {
		return 0;
	}
	return version;
}

/* No version in common: the peer (when known) is down for "version". */
static int
hello_skew(link_conn *c, const char *nid, size_t nid_len, uint16_t version,
    uint16_t pmin, uint16_t pmax)
{
	eb_link_mgr *m = c->mgr;
	char        *node_id = eb__strndup(nid, nid_len);
	link_peer   *p =
            c->peer != NULL ? c->peer : eb__link_peer_find(m, node_id);
	char q[EB_LOG_QUOTE_MAX];

	EB_LOG_WARN("link",
	    "hello-version: peer=%s node=%s version=%u range=%u..%u "
	    "self=%u..%u",
	    c->peer_addr, eb_log_quote(q, sizeof(q), node_id), version, pmin,
	    pmax, m->proto_min, m->proto_max);
	free(node_id);
	c->fail = EB_LINK_DOWN_VERSION;
	if (p != NULL && p->conn == NULL) {
		eb__link_peer_set_down(m, p, EB_LINK_DOWN_VERSION);
	}
	return EB_EPROTO;
}

static int
conn_on_hello(link_conn *c, eb__link_rd *r)
{
	eb_link_mgr *m = c->mgr;
	uint16_t     version = eb__link_get_u16(r);
	size_t       nid_len;
	size_t       cl_len;
	const char  *nid = eb__link_get_str16(r, &nid_len);
	const char  *cl = eb__link_get_str16(r, &cl_len);
	int          ranged = !r->bad && r->n >= 4;
	uint16_t     pmin = ranged ? eb__link_get_u16(r) : version;
	uint16_t     pmax = ranged ? eb__link_get_u16(r) : version;
	uint16_t     agreed;
	char        *node_id;
	link_peer   *p;

	if (r->bad || nid_len == 0) {
		return EB_EPROTO;
	}
	if ((agreed = hello_version(c, version, ranged, pmin, pmax)) == 0) {
		return hello_skew(c, nid, nid_len, version, pmin, pmax);
	}
	if (cl_len != strlen(m->cluster) ||
	    memcmp(cl, m->cluster, cl_len) != 0) {
		char q[EB_LOG_QUOTE_MAX];

		EB_LOG_WARN("link", "hello-cluster: peer=%s cluster=%s want=%s",
		    c->peer_addr, eb_log_quote_n(q, sizeof(q), cl, cl_len),
		    m->cluster);
		return EB_EPROTO;
	}
	node_id = eb__strndup(nid, nid_len);
	p = c->outbound ? hello_outbound(c, node_id)
	                : hello_inbound(c, node_id);
	free(node_id);
	if (p == NULL) {
		return EB_EPROTO;
	}
	c->version = agreed;
	if (!c->outbound) {
		conn_send_hello(c, agreed);
	}
	c->state = LINK_UP;
	eb__link_peer_up(m, p, c);
	return 0;
}

static int
conn_on_frame(link_conn *c, const char *payload, uint32_t len)
{
	eb_link_mgr *m = c->mgr;
	eb__link_rd  r;
	uint8_t      type;

	if (len < 1) {
		return EB_EPROTO;
	}
	type = (uint8_t) payload[0];
	if (c->peer != NULL) {
		c->peer->frames_in++;
		c->peer->bytes_in += len + EB_FRAME_HDR;
	}
	if (type == LINK_FRAME_HEARTBEAT) {
		return 0;
	}
	if (type == LINK_FRAME_HELLO) {
		if (c->state != LINK_HELLO) {
			return EB_EPROTO;
		}
		r.p = payload + 1;
		r.n = len - 1;
		r.bad = 0;
		return conn_on_hello(c, &r);
	}
	if (c->state != LINK_UP || c->peer == NULL ||
	    type < EB_LINK_FRAME_USER) {
		return EB_EPROTO;
	}
	if (m->h != NULL) {
		m->h->frame(m->hctx, c->peer->id, type, payload + 1, len - 1);
	}
	return 0;
}

static int
conn_bad_frame(link_conn *c, int rv)
{
	EB_LOG_WARN("link", "bad-frame: peer=%s len=%lld max=%u", c->peer_addr,
	    (long long) c->dec.bad_len, c->mgr->max_frame);
	return rv;
}

int
eb__link_conn_input(link_conn *c, const char *p, size_t n)
{
	const char *payload;
	uint32_t    len;
	int         rv;

	/* Whole frames where they arrived (each is handled before this
	 * returns); the rest is copied and waits for more input. */
	while (eb__frame_dec_next_in(&c->dec, &p, &n, &payload, &len) == 0) {
		if ((rv = conn_on_frame(c, payload, len)) != 0) {
			return rv;
		}
		if (c->state == LINK_CLOSING) {
			return 0; /* the upper layer closed us */
		}
	}
	eb__frame_dec_feed(&c->dec, p, n);
	for (;;) {
		rv = eb__frame_dec_next(&c->dec, &payload, &len);
		if (rv == UV_EAGAIN) {
			return 0;
		}
		if (rv != 0) {
			return conn_bad_frame(c, rv);
		}
		if ((rv = conn_on_frame(c, payload, len)) != 0) {
			return rv;
		}
		if (c->state == LINK_CLOSING) {
			return 0; /* the upper layer closed us */
		}
	}
}

void
eb__link_conn_tick(link_conn *c, uint64_t now, bool judge)
{
	eb_link_mgr *m = c->mgr;
	size_t       off;

	if (c->state == LINK_CLOSING) {
		return;
	}
	if (c->state != LINK_UP) {
		if (judge && now - c->started >= m->connect_timeout_ms) {
			eb__link_conn_close(c, "connect/hello timeout");
		}
		return;
	}
	if (judge && now - c->last_rx >= m->dead_ms) {
		eb__link_conn_close(c, "heartbeat timeout");
		return;
	}
	if (eb__stream_backlog(&c->s) > m->max_out) {
		eb__link_conn_close(c, "peer too slow");
		return;
	}
	if (now - c->last_tx >= m->heartbeat_ms &&
	    eb__buf_avail(&c->out) == 0) {
		conn_put_frame_hdr(c, LINK_FRAME_HEARTBEAT, &off);
		conn_end_frame(c, off);
		c->last_tx = now;
	}
}
