/*
 * The node link manager: options, the listener, the peer table, dialing
 * with capped jittered back-off, the tick timer, coalesced output and the
 * upper-layer interface (link/link.h). Connection I/O is link_conn.c.
 *
 * One link per node pair: only the node whose id is lower (strcmp) dials.
 * An inbound hello from a lower id is accepted even for a peer we have not
 * been told about yet (membership may lag); it becomes a peer without an
 * address. An inbound connection from a peer that already has a link
 * replaces it: the dialer only dials when it has none, so the old one is
 * dead from the dialer's side.
 *
 * Threads: loop thread only.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/log.h>

#include "common/alloc.h"
#include "link/link_int.h"

void
eb_link_opts_init(eb_link_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->cluster_name = "ebnode";
	o->host = "127.0.0.1";
	o->heartbeat_ms = 1000;
	o->dead_ms = 3500;
	o->connect_timeout_ms = 3000;
	o->backoff_min_ms = 50;
	o->backoff_max_ms = 5000;
	o->max_frame_bytes = (uint32_t) 16 * 1024 * 1024;
	o->max_out_bytes = (uint64_t) 64 * 1024 * 1024;
	o->max_pending_inbound = 64;
	o->proto_min = EB_LINK_PROTOCOL_MIN;
	o->proto_max = EB_LINK_PROTOCOL_VERSION;
}

static uint32_t
clamp_u32(uint32_t v, uint32_t lo, uint32_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static int
mgr_opts_check(const eb_link_opts *o, eb_errbuf *err)
{
	int tls = (o->tls_ca_file != NULL) + (o->tls_cert_file != NULL) +
	          (o->tls_key_file != NULL);

	if (o->node_id == NULL || o->node_id[0] == '\0' ||
	    strlen(o->node_id) > 1024) {
		return eb_errf(err, UV_EINVAL, "link: node_id missing");
	}
	if (o->cluster_name == NULL || o->host == NULL || o->port < 0 ||
	    o->port > 65535 || o->heartbeat_ms == 0 ||
	    o->dead_ms <= o->heartbeat_ms || o->backoff_min_ms == 0 ||
	    o->backoff_max_ms < o->backoff_min_ms ||
	    o->max_frame_bytes < 1024 || o->connect_timeout_ms == 0 ||
	    o->proto_min == 0 || o->proto_max < o->proto_min) {
		return eb_errf(err, UV_EINVAL, "link: invalid options");
	}
	if (tls != 0 && tls != 3) {
		return eb_errf(err, UV_EINVAL,
		    "link: TLS needs tls_ca_file, tls_cert_file and "
		    "tls_key_file together");
	}
	return 0;
}

int
eb_link_mgr_new(
    uv_loop_t *loop, const eb_link_opts *o, eb_link_mgr **mgrp, eb_errbuf *err)
{
	eb_link_mgr *m;
	eb__tls_ctx *tls = NULL;
	int          rv;

	if (loop == NULL || o == NULL || mgrp == NULL) {
		return UV_EINVAL;
	}
	if ((rv = mgr_opts_check(o, err)) != 0) {
		return rv;
	}
	if (o->tls_ca_file != NULL &&
	    (rv = eb__link_tls_ctx_new(o, &tls, err)) != 0) {
		return rv;
	}
	m = eb__calloc(1, sizeof(*m));
	m->loop = loop;
	m->node_id = eb__strdup(o->node_id);
	m->cluster = eb__strdup(o->cluster_name);
	m->host = eb__strdup(o->host);
	m->port = o->port;
	m->heartbeat_ms = o->heartbeat_ms;
	m->dead_ms = o->dead_ms;
	m->connect_timeout_ms = o->connect_timeout_ms;
	m->backoff_min_ms = o->backoff_min_ms;
	m->backoff_max_ms = o->backoff_max_ms;
	/* One tick serves heartbeats, timeouts and reconnects. */
	m->tick_ms = clamp_u32(o->heartbeat_ms / 4 < o->backoff_min_ms / 2
	                           ? o->heartbeat_ms / 4
	                           : o->backoff_min_ms / 2,
	    5, 100);
	m->max_frame = o->max_frame_bytes;
	m->max_out = o->max_out_bytes;
	m->max_pending =
	    o->max_pending_inbound != 0 ? o->max_pending_inbound : 64;
	m->proto_min = o->proto_min;
	m->proto_max = o->proto_max;
	m->tls_ctx = tls;
	m->next_peer_id = 1;
	eb__list_init(&m->peers);
	eb__list_init(&m->conns);
	eb__list_init(&m->dirty);
	eb__list_init(&m->resolving);
	(void) uv_tcp_init(loop, &m->listener);
	(void) uv_timer_init(loop, &m->timer);
	(void) uv_idle_init(loop, &m->idle);
	(void) uv_prepare_init(loop, &m->prep);
	m->listener.data = m;
	m->timer.data = m;
	m->idle.data = m;
	m->prep.data = m;
	*mgrp = m;
	return 0;
}

int
eb_link_mgr_port(const eb_link_mgr *m)
{
	return m->bound_port;
}

void
eb__link_mgr_set_handler(eb_link_mgr *m, const eb__link_handler *h, void *ctx)
{
	m->h = h;
	m->hctx = ctx;
}

/* ---- peers ---- */

link_peer *
eb__link_peer_find(eb_link_mgr *m, const char *node_id)
{
	eb__list *it;

	for (it = m->peers.next; it != &m->peers; it = it->next) {
		link_peer *p = EB_CONTAINER_OF(it, link_peer, link);

		if (strcmp(p->node_id, node_id) == 0) {
			return p;
		}
	}
	return NULL;
}

link_peer *
eb__link_peer_by_id(eb_link_mgr *m, uint32_t id)
{
	eb__list *it;

	for (it = m->peers.next; it != &m->peers; it = it->next) {
		link_peer *p = EB_CONTAINER_OF(it, link_peer, link);

		if (p->id == id) {
			return p;
		}
	}
	return NULL;
}

link_peer *
eb__link_peer_new(eb_link_mgr *m, const char *node_id)
{
	link_peer *p = eb__calloc(1, sizeof(*p));

	p->id = m->next_peer_id++;
	p->node_id = eb__strdup(node_id);
	p->dialer = strcmp(m->node_id, node_id) < 0;
	eb__list_insert_tail(&m->peers, &p->link);
	return p;
}

static void
peer_dial_addr(eb_link_mgr *m, link_peer *p, const struct sockaddr *sa)
{
	link_conn *c;
	int        rv;

	c = eb__link_conn_new(m, 1);
	c->peer = p;
	p->dialing = c;
	(void) snprintf(
	    c->peer_addr, sizeof(c->peer_addr), "%s:%d", p->host, p->port);
	rv = eb__link_conn_dial(c, sa);
	if (rv != 0) {
		EB_LOG_DEBUG("link", "connect-failed: peer=%s err=%s",
		    c->peer_addr, eb_err_name(rv));
		eb__link_conn_close(c, NULL);
	}
}

struct link_resolve {
	uv_getaddrinfo_t req;
	eb__list         link; /* in m->resolving */
	eb_link_mgr     *m;
	uint32_t         peer; /* an id: the peer may be gone by the answer */
	char            *host; /* owned: the name that was looked up */
};

static void
peer_resolved_cb(uv_getaddrinfo_t *req, int status, struct addrinfo *ai)
{
	struct link_resolve *r = (struct link_resolve *) req;
	eb_link_mgr         *m = r->m;
	link_peer           *p = eb__link_peer_by_id(m, r->peer);

	eb__list_remove(&r->link);
	if (p != NULL) {
		p->resolving = 0;
	}
	if (m->closing || p == NULL || strcmp(p->host, r->host) != 0 ||
	    p->conn != NULL || p->dialing != NULL) {
		/* Too late, or the address changed meanwhile (the tick dials
		 * the new one). */
	} else if (status != 0 || ai == NULL) {
		EB_LOG_WARN("link", "resolve-failed: node=%s host=%s err=%s",
		    p->node_id, p->host, eb_err_name(status));
		p->attempts++;
		p->retry_at = uv_now(m->loop) + m->backoff_max_ms;
	} else {
		struct sockaddr_storage sa;
		const struct addrinfo  *pick = ai;
		uint32_t                n = 0;
		uint32_t                i;

		/* A name with several addresses (e.g. ::1 and 127.0.0.1):
		 * each failed attempt tries the next one. */
		for (pick = ai; pick != NULL; pick = pick->ai_next) {
			n++;
		}
		pick = ai;
		for (i = 0; i < p->attempts % n; i++) {
			pick = pick->ai_next;
		}
		memcpy(&sa, pick->ai_addr, pick->ai_addrlen);
		if (sa.ss_family == AF_INET6) {
			((struct sockaddr_in6 *) &sa)->sin6_port =
			    htons((uint16_t) p->port);
		} else {
			((struct sockaddr_in *) &sa)->sin_port =
			    htons((uint16_t) p->port);
		}
		peer_dial_addr(m, p, (const struct sockaddr *) &sa);
	}
	uv_freeaddrinfo(ai);
	free(r->host);
	free(r);
	eb__link_mgr_conn_gone(m); /* a close may be waiting for us */
}

static void
peer_dial(eb_link_mgr *m, link_peer *p)
{
	struct sockaddr_storage sa;
	struct addrinfo         hints;
	struct link_resolve    *r;
	int                     rv;

	rv = uv_ip4_addr(p->host, p->port, (struct sockaddr_in *) &sa);
	if (rv != 0) {
		rv = uv_ip6_addr(p->host, p->port, (struct sockaddr_in6 *) &sa);
	}
	if (rv == 0) {
		peer_dial_addr(m, p, (const struct sockaddr *) &sa);
		return;
	}
	if (p->resolving) {
		return;
	}
	/* A host name: resolve it on the threadpool, then dial. */
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	r = eb__calloc(1, sizeof(*r));
	r->m = m;
	r->peer = p->id;
	r->host = eb__strdup(p->host);
	rv = uv_getaddrinfo(
	    m->loop, &r->req, peer_resolved_cb, p->host, NULL, &hints);
	if (rv != 0) {
		EB_LOG_WARN("link", "resolve-failed: node=%s host=%s err=%s",
		    p->node_id, p->host, eb_err_name(rv));
		p->retry_at = uv_now(m->loop) + m->backoff_max_ms;
		free(r->host);
		free(r);
		return;
	}
	p->resolving = 1;
	eb__list_insert_tail(&m->resolving, &r->link);
}

static void
peer_maybe_dial(eb_link_mgr *m, link_peer *p, uint64_t now)
{
	/* No version in common with its record: dialing cannot link (the
	 * record changes when the peer restarts as another release). */
	if (p->dialer && p->host != NULL && p->conn == NULL &&
	    p->dialing == NULL && now >= p->retry_at && !m->closing &&
	    m->listening && eb__link_version_for(m, p) != 0) {
		peer_dial(m, p);
	}
}

void
eb__link_peer_up(eb_link_mgr *m, link_peer *p, link_conn *c)
{
	link_conn *old = p->conn;

	if (old != NULL && old != c) {
		EB_LOG_INFO("link", "link-replaced: node=%s", p->node_id);
		eb__link_conn_close(old, NULL); /* reports down first */
	}
	if (p->dialing == c) {
		p->dialing = NULL;
	}
	p->conn = c;
	p->attempts = 0;
	p->ups++;
	p->version = c->version;
	eb__link_peer_set_down(m, p, EB_LINK_DOWN_NONE);
	/* Fixed buffers (no autotuning): what is in flight to a peer stays
	 * bounded (link.h). */
	{
		int sz = EB__LINK_SOCKET_BUFFER;

		(void) uv_send_buffer_size((uv_handle_t *) &c->s.tcp, &sz);
		sz = EB__LINK_SOCKET_BUFFER;
		(void) uv_recv_buffer_size((uv_handle_t *) &c->s.tcp, &sz);
	}
	EB_LOG_INFO("link", "link-up: node=%s peer=%s dir=%s version=%u",
	    p->node_id, c->peer_addr, c->outbound ? "out" : "in", c->version);
	if (m->h != NULL) {
		m->h->up(m->hctx, p->id, p->node_id);
	}
}

uint64_t
eb__link_backoff_ms(const eb_link_mgr *m, uint32_t attempts)
{
	uint64_t d = m->backoff_min_ms;
	uint32_t i;

	for (i = 1; i < attempts && d < m->backoff_max_ms; i++) {
		d *= 2;
	}
	if (d > m->backoff_max_ms) {
		d = m->backoff_max_ms;
	}
	/* Jitter in [d/2, d]: peers that lost each other together do not
	 * reconnect in lockstep. */
	return d / 2 + (uint64_t) rand() % (d / 2 + 1);
}

void
eb__link_peer_lost(eb_link_mgr *m, link_peer *p, link_conn *c)
{
	if (p->dialing == c) {
		p->dialing = NULL;
		eb__link_peer_set_down(m, p,
		    c->fail != EB_LINK_DOWN_NONE ? c->fail
		                                 : EB_LINK_DOWN_UNREACHABLE);
		p->attempts++;
		p->retry_at =
		    uv_now(m->loop) + eb__link_backoff_ms(m, p->attempts);
	}
	if (p->conn == c) {
		p->conn = NULL;
		p->version = 0;
		EB_LOG_INFO("link", "link-down: node=%s", p->node_id);
		if (m->h != NULL) {
			m->h->down(m->hctx, p->id);
		}
		/* Reconnect soon, but not in a tight loop with a peer that
		 * accepts and drops us at once. */
		p->attempts++;
		p->retry_at =
		    uv_now(m->loop) + eb__link_backoff_ms(m, p->attempts);
	}
}

/* keep_range: the caller says nothing about the range (peer_add). */
static int
peer_add(eb_link_mgr *m, const char *node_id, const char *host, int port,
    int keep_range, int proto_min, int proto_max)
{
	link_peer *p;

	if (node_id == NULL || host == NULL || port <= 0 || port > 65535) {
		return UV_EINVAL;
	}
	if (m->closing) {
		return EB_ECLOSED;
	}
	if (strcmp(node_id, m->node_id) == 0) {
		return 0;
	}
	if ((p = eb__link_peer_find(m, node_id)) == NULL) {
		p = eb__link_peer_new(m, node_id);
	}
	if (p->host == NULL || strcmp(p->host, host) != 0 || p->port != port) {
		free(p->host);
		p->host = eb__strdup(host);
		p->port = port;
		p->retry_at = 0; /* a new address: try at once */
	}
	if (!keep_range &&
	    (p->rec_min != proto_min || p->rec_max != proto_max)) {
		p->rec_min = (uint16_t) proto_min;
		p->rec_max = (uint16_t) proto_max;
		p->retry_at = 0; /* another release: try at once */
	}
	eb__link_peer_check_range(m, p);
	peer_maybe_dial(m, p, uv_now(m->loop));
	return 0;
}

int
eb_link_mgr_peer_add(
    eb_link_mgr *m, const char *node_id, const char *host, int port)
{
	return peer_add(m, node_id, host, port, 1, 0, 0);
}

int
eb_link_mgr_peer_add_range(eb_link_mgr *m, const char *node_id,
    const char *host, int port, int proto_min, int proto_max)
{
	if (proto_min < 0 || proto_max < proto_min || proto_max > 65535 ||
	    (proto_min == 0) != (proto_max == 0)) {
		return UV_EINVAL;
	}
	return peer_add(m, node_id, host, port, 0, proto_min, proto_max);
}

static void
peer_free(eb_link_mgr *m, link_peer *p)
{
	eb__list *it;

	/* Close its connections first (reporting down), then cut their back
	 * pointers so that their close callbacks do not touch p. */
	if (p->conn != NULL) {
		eb__link_conn_close(p->conn, NULL);
	}
	if (p->dialing != NULL) {
		eb__link_conn_close(p->dialing, NULL);
	}
	for (it = m->conns.next; it != &m->conns; it = it->next) {
		link_conn *c = EB_CONTAINER_OF(it, link_conn, link);

		if (c->peer == p) {
			c->peer = NULL;
		}
	}
	eb__list_remove(&p->link);
	free(p->node_id);
	free(p->host);
	free(p);
}

int
eb_link_mgr_peer_remove(eb_link_mgr *m, const char *node_id)
{
	link_peer *p;

	if (node_id == NULL) {
		return UV_EINVAL;
	}
	if ((p = eb__link_peer_find(m, node_id)) == NULL) {
		return 0;
	}
	EB_LOG_INFO("link", "peer-removed: node=%s", node_id);
	peer_free(m, p);
	return 0;
}

static int
listed(const eb_link_peer *peers, size_t n, const char *node_id)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (peers[i].node_id != NULL &&
		    strcmp(peers[i].node_id, node_id) == 0 &&
		    peers[i].host != NULL && peers[i].host[0] != '\0' &&
		    peers[i].port > 0) {
			return 1;
		}
	}
	return 0;
}

int
eb_link_mgr_set_peers(eb_link_mgr *m, const eb_link_peer *peers, size_t n)
{
	eb__list *it;
	eb__list *tmp;
	size_t    i;

	if (m->closing) {
		return EB_ECLOSED;
	}
	for (i = 0; i < n; i++) {
		const eb_link_peer *p = &peers[i];

		if (p->node_id == NULL || p->node_id[0] == '\0' ||
		    p->host == NULL || p->host[0] == '\0' || p->port <= 0) {
			continue; /* not linkable (e.g. an older version) */
		}
		(void) eb_link_mgr_peer_add(m, p->node_id, p->host, p->port);
	}
	EB_LIST_FOREACH (it, tmp, &m->peers) {
		link_peer *p = EB_CONTAINER_OF(it, link_peer, link);

		if (listed(peers, n, p->node_id) ||
		    (p->host == NULL && p->conn != NULL)) {
			continue; /* it dialed us; membership will catch up */
		}
		EB_LOG_INFO("link", "peer-removed: node=%s", p->node_id);
		peer_free(m, p);
	}
	return 0;
}

int
eb_link_mgr_peer_up(const eb_link_mgr *m, const char *node_id)
{
	const eb__list *it;

	for (it = m->peers.next; it != &m->peers; it = it->next) {
		const link_peer *p =
		    (const link_peer *) (const void *) ((const char *) it -
		                                        offsetof(
		                                            link_peer, link));

		if (strcmp(p->node_id, node_id) == 0) {
			return p->conn != NULL;
		}
	}
	return 0;
}

const char *
eb__link_peer_node_id(eb_link_mgr *m, uint32_t peer)
{
	link_peer *p = eb__link_peer_by_id(m, peer);

	return p != NULL && p->conn != NULL ? p->node_id : NULL;
}

unsigned
eb__link_peer_version(eb_link_mgr *m, uint32_t peer)
{
	link_peer *p = eb__link_peer_by_id(m, peer);

	return p != NULL && p->conn != NULL ? p->version : 0;
}

void
eb__link_foreach_up(
    eb_link_mgr *m, void (*fn)(void *arg, uint32_t peer), void *arg)
{
	eb__list *it;
	eb__list *tmp;

	EB_LIST_FOREACH (it, tmp, &m->peers) {
		link_peer *p = EB_CONTAINER_OF(it, link_peer, link);

		if (p->conn != NULL) {
			fn(arg, p->id);
		}
	}
}

void
eb_link_mgr_stats_foreach(eb_link_mgr *m, eb_link_stats_fn fn, void *arg)
{
	eb__list *it;

	for (it = m->peers.next; it != &m->peers; it = it->next) {
		link_peer         *p = EB_CONTAINER_OF(it, link_peer, link);
		eb_link_peer_stats s;

		memset(&s, 0, sizeof(s));
		s.node_id = p->node_id;
		s.host = p->host;
		s.port = p->port;
		s.up = p->conn != NULL;
		s.dialer = p->dialer;
		s.frames_out = p->frames_out;
		s.frames_in = p->frames_in;
		s.bytes_out = p->bytes_out;
		s.bytes_in = p->bytes_in;
		s.ups = p->ups;
		s.congestions = p->congestions;
		s.version = p->conn != NULL ? p->version : 0;
		s.proto_min = p->rec_min;
		s.proto_max = p->rec_max;
		s.down_reason =
		    eb_link_down_reason_name((eb_link_down_reason) p->down);
		s.down_since_ms =
		    p->down != EB_LINK_DOWN_NONE ? p->down_since : 0;
		if (p->conn != NULL) {
			s.queued = eb__link_conn_backlog(p->conn) +
			           eb__buf_avail(&p->conn->out);
		}
		fn(&s, arg);
	}
}

/* ---- frames out ---- */

eb__buf *
eb__link_frame_begin(eb_link_mgr *m, uint32_t peer, uint8_t type)
{
	link_peer *p = eb__link_peer_by_id(m, peer);
	link_conn *c;
	char      *hdr;

	if (p == NULL || (c = p->conn) == NULL || c->doomed ||
	    c->state != LINK_UP) {
		return NULL;
	}
	EB_ASSERT(m->cur == NULL);
	m->cur = c;
	c->frame_off = c->out.len;
	hdr = eb__buf_reserve(&c->out, EB_FRAME_HDR + 1);
	hdr[EB_FRAME_HDR] = (char) type;
	c->out.len += EB_FRAME_HDR + 1;
	return &c->out;
}

int
eb__link_frame_end(eb_link_mgr *m, uint32_t peer)
{
	link_conn *c = m->cur;
	size_t     n;

	(void) peer;
	m->cur = NULL;
	EB_ASSERT(c != NULL);
	n = c->out.len - c->frame_off - EB_FRAME_HDR;
	if (n > m->max_frame) {
		EB_LOG_ERR("link", "frame-too-big: node=%s len=%zu max=%u",
		    c->peer->node_id, n, m->max_frame);
		c->out.len = c->frame_off; /* take it back */
		return EB_ELINKDOWN;
	}
	eb__frame_put_len(
	    (unsigned char *) c->out.data + c->frame_off, (uint32_t) n);
	c->peer->frames_out++;
	c->peer->bytes_out += n + EB_FRAME_HDR;
	if (eb__link_conn_backlog(c) > m->max_out && !c->doomed) {
		/* Bytes the kernel would not take: a peer that does not read.
		 * Cut it off rather than grow. (The frames of one loop turn
		 * are not counted: a burst is not a slow peer.) */
		EB_LOG_WARN("link",
		    "peer-too-slow: node=%s queued=%llu max=%llu",
		    c->peer->node_id,
		    (unsigned long long) eb__link_conn_backlog(c),
		    (unsigned long long) m->max_out);
		c->doomed = 1;
	}
	eb__link_conn_mark_dirty(c);
	return c->doomed ? EB_ELINKDOWN : 0;
}

/* ---- listener, tick, idle ---- */

/* Inbound connections still waiting for their hello. */
static uint32_t
pending_inbound(const eb_link_mgr *m)
{
	const eb__list *it;
	uint32_t        n = 0;

	for (it = m->conns.next; it != &m->conns; it = it->next) {
		const link_conn *c =
		    (const link_conn *) (const void *) ((const char *) it -
		                                        offsetof(
		                                            link_conn, link));

		n += !c->outbound && c->state == LINK_HELLO;
	}
	return n;
}

static void
pending_refuse(eb_link_mgr *m, link_conn *c)
{
	if (!m->pending_full) {
		m->pending_full = 1;
		EB_LOG_WARN("link", "too-many-pending: max=%u", m->max_pending);
	}
	eb__link_conn_close(c, NULL);
}

static void
listener_cb(uv_stream_t *server, int status)
{
	eb_link_mgr *m = server->data;
	link_conn   *c;

	if (status != 0) {
		EB_LOG_WARN(
		    "link", "accept-failed: err=%s", eb_err_name(status));
		return;
	}
	c = eb__link_conn_new(m, 0);
	if (uv_accept(server, (uv_stream_t *) &c->s.tcp) != 0) {
		eb__link_conn_close(c, NULL);
		return;
	}
	/* Bound half-open links (a scan, or a flood): accept and drop what
	 * exceeds the cap, logging once per episode. */
	if (pending_inbound(m) > m->max_pending) {
		pending_refuse(m, c);
		return;
	}
	m->pending_full = 0;
	eb__link_conn_start(c);
}

static void
mgr_tick_cb(uv_timer_t *t)
{
	eb_link_mgr *m = t->data;
	uint64_t     now = uv_now(m->loop);
	eb__list    *it;
	eb__list    *tmp;
	bool         judge = !eb__stall_skip(&m->stall, now, m->tick_ms);

	if (!judge) {
		/* Peers' heartbeats wait in the sockets: read them first. */
		EB_LOG_NOTICE("link",
		    "stall: gap_ms=%llu timeouts deferred by one tick",
		    (unsigned long long) m->stall.gap_ms);
	}
	EB_LIST_FOREACH (it, tmp, &m->conns) {
		eb__link_conn_tick(
		    EB_CONTAINER_OF(it, link_conn, link), now, judge);
	}
	EB_LIST_FOREACH (it, tmp, &m->peers) {
		peer_maybe_dial(m, EB_CONTAINER_OF(it, link_peer, link), now);
	}
}

/* Writes the output of every dirty connection (each in one write). */
static void
mgr_flush(eb_link_mgr *m)
{
	eb__list *it;

	while ((it = eb__list_first(&m->dirty)) != NULL) {
		link_conn *c = EB_CONTAINER_OF(it, link_conn, flush_link);

		eb__list_remove(it);
		if (c->doomed) {
			eb__link_conn_close(c, "queue overflow");
		} else {
			eb__link_conn_flush(c);
		}
	}
	m->flush_active = 0;
	(void) uv_idle_stop(&m->idle);
	(void) uv_prepare_stop(&m->prep);
}

static void
mgr_prep_cb(uv_prepare_t *h)
{
	mgr_flush(h->data);
}

static void
mgr_idle_cb(uv_idle_t *h)
{
	mgr_flush(h->data);
}

void
eb__link_conn_mark_dirty(link_conn *c)
{
	eb_link_mgr *m = c->mgr;

	if (eb__list_empty(&c->flush_link)) {
		eb__list_insert_tail(&m->dirty, &c->flush_link);
	}
	if (!m->flush_active && !m->closing) {
		m->flush_active = 1;
		(void) uv_idle_start(&m->idle, mgr_idle_cb);
		(void) uv_prepare_start(&m->prep, mgr_prep_cb);
	}
}

int
eb_link_mgr_start(eb_link_mgr *m)
{
	struct sockaddr_storage sa;
	int                     len = sizeof(sa);
	int                     rv;

	EB_ASSERT(!m->closing); /* start after close */
	if (m->listening) {
		return 0;
	}
	rv = uv_ip4_addr(m->host, m->port, (struct sockaddr_in *) &sa);
	if (rv != 0) {
		rv = uv_ip6_addr(m->host, m->port, (struct sockaddr_in6 *) &sa);
	}
	if (rv != 0) {
		return rv;
	}
	if ((rv = uv_tcp_bind(
	         &m->listener, (const struct sockaddr *) &sa, 0)) != 0 ||
	    (rv = uv_listen((uv_stream_t *) &m->listener, 128, listener_cb)) !=
	        0) {
		EB_LOG_ERR("link", "listen-failed: host=%s port=%d err=%s",
		    m->host, m->port, eb_err_name(rv));
		return rv;
	}
	(void) uv_tcp_getsockname(&m->listener, (struct sockaddr *) &sa, &len);
	m->bound_port = ntohs(((struct sockaddr_in *) &sa)->sin_port);
	m->listening = 1;
	(void) uv_timer_start(&m->timer, mgr_tick_cb, m->tick_ms, m->tick_ms);
	EB_LOG_INFO("link", "listening: node=%s host=%s port=%d tls=%s",
	    m->node_id, m->host, m->bound_port, m->tls_ctx ? "yes" : "no");
	mgr_tick_cb(&m->timer); /* dial peers added before start */
	return 0;
}

/* ---- close ---- */

static void
mgr_free(eb_link_mgr *m)
{
	eb__list *it;
	eb__list *tmp;

	/* Everything goes: no need to unlink one by one. */
	EB_LIST_FOREACH (it, tmp, &m->peers) {
		link_peer *p = EB_CONTAINER_OF(it, link_peer, link);

		free(p->node_id);
		free(p->host);
		free(p);
	}
	eb__tls_ctx_free(m->tls_ctx);
	free(m->node_id);
	free(m->cluster);
	free(m->host);
	free(m);
}

static void
mgr_handle_closed_cb(uv_handle_t *h)
{
	eb_link_mgr_close_cb cb;
	eb_link_mgr         *m = h->data;
	void                *arg;

	if (--m->open_handles > 0) {
		return;
	}
	if (m->h != NULL && m->h->detach != NULL) {
		m->h->detach(m->hctx);
	}
	cb = m->close_cb;
	arg = m->close_arg;
	if (cb != NULL) {
		cb(m, arg);
	}
	mgr_free(m);
}

void
eb__link_mgr_conn_gone(eb_link_mgr *m)
{
	if (m->closing && eb__list_empty(&m->conns) &&
	    eb__list_empty(&m->resolving) && m->open_handles == 0) {
		m->open_handles = 4;
		uv_close((uv_handle_t *) &m->listener, mgr_handle_closed_cb);
		uv_close((uv_handle_t *) &m->timer, mgr_handle_closed_cb);
		uv_close((uv_handle_t *) &m->idle, mgr_handle_closed_cb);
		uv_close((uv_handle_t *) &m->prep, mgr_handle_closed_cb);
	}
}

void
eb_link_mgr_close(eb_link_mgr *m, eb_link_mgr_close_cb cb, void *arg)
{
	eb__list *it;
	eb__list *tmp;

	EB_ASSERT(!m->closing); /* double close */
	m->closing = 1;
	m->close_cb = cb;
	m->close_arg = arg;
	(void) uv_timer_stop(&m->timer);
	(void) uv_idle_stop(&m->idle);
	(void) uv_prepare_stop(&m->prep);
	m->flush_active = 0;
	/* Connections close first (their down reports run from their close
	 * path), then the manager's own handles. */
	EB_LIST_FOREACH (it, tmp, &m->conns) {
		eb__link_conn_close(EB_CONTAINER_OF(it, link_conn, link), NULL);
	}
	/* Lookups in flight finish (or are canceled) before we free. */
	for (it = m->resolving.next; it != &m->resolving; it = it->next) {
		(void) uv_cancel(
		    (uv_req_t *) &EB_CONTAINER_OF(it, struct link_resolve, link)
		        ->req);
	}
	eb__link_mgr_conn_gone(m);
}
