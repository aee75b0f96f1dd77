/* In-process TCP proxy with faults for partition tests; see proxy.h. */
#include "tests/harness/proxy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROXY_READ_BUF 65536

struct chunk {
	struct chunk *next;
	uint64_t      due; /* uv_now() at which it may be written */
	size_t        len;
	char          data[];
};

struct pconn;

/* One direction of a connection: bytes read from `from` go to `to`. */
struct pdir {
	struct pconn *c;
	uv_tcp_t     *from;
	uv_tcp_t     *to;
	struct chunk *head;
	struct chunk *tail;
	uv_timer_t    timer; /* for delayed chunks */
};

struct pconn {
	struct pconn *next;
	struct pconn *prev;
	th_proxy     *p;
	uv_tcp_t      client;
	uv_tcp_t      upstream;
	uv_connect_t  connect_req;
	int           upstream_ok;
	int           closing;
	int           open; /* handles not yet closed */
	struct pdir   up;   /* client -> target */
	struct pdir   down; /* target -> client */
};

struct write_req {
	uv_write_t    req;
	struct chunk *chunk;
};

struct th_proxy {
	uv_loop_t              *loop;
	uv_tcp_t                listener;
	struct sockaddr_storage target;
	int                     port;
	int                     paused;
	int                     cut;
	uint64_t                delay_ms;
	uint64_t                accepted;
	unsigned                active;
	unsigned                live;  /* allocated connections */
	struct pconn            conns; /* list head */
	int                     closing;
	int                     listener_open;
	void (*close_cb)(void *arg);
	void *close_arg;
};

static void proxy_maybe_done(th_proxy *p);

static void
chunks_free(struct pdir *d)
{
	while (d->head != NULL) {
		struct chunk *k = d->head;

		d->head = k->next;
		free(k);
	}
	d->tail = NULL;
}

static void
conn_handle_closed_cb(uv_handle_t *h)
{
	struct pconn *c = h->data;
	th_proxy     *p;

	if (--c->open > 0) {
		return;
	}
	p = c->p;
	chunks_free(&c->up);
	chunks_free(&c->down);
	free(c);
	p->live--;
	proxy_maybe_done(p);
}

static void
conn_close(struct pconn *c)
{
	if (c->closing) {
		return;
	}
	c->closing = 1;
	c->prev->next = c->next;
	c->next->prev = c->prev;
	c->p->active--;
	/* Every handle's data points at c for the close count. */
	c->client.data = c;
	c->upstream.data = c;
	c->up.timer.data = c;
	c->down.timer.data = c;
	uv_close((uv_handle_t *) &c->client, conn_handle_closed_cb);
	uv_close((uv_handle_t *) &c->upstream, conn_handle_closed_cb);
	uv_close((uv_handle_t *) &c->up.timer, conn_handle_closed_cb);
	uv_close((uv_handle_t *) &c->down.timer, conn_handle_closed_cb);
}

static void
write_cb(uv_write_t *req, int status)
{
	struct write_req *w = (struct write_req *) req;

	(void) status; /* a failed write shows up as a read error too */
	free(w->chunk);
	free(w);
}

static void dir_flush(struct pdir *d);

static void
dir_timer_cb(uv_timer_t *t)
{
	dir_flush(t->data);
}

/* Writes every chunk that is due, unless paused; re-arms the timer. */
static void
dir_flush(struct pdir *d)
{
	struct pconn *c = d->c;
	uint64_t      now = uv_now(c->p->loop);

	if (c->closing || c->p->paused || !c->upstream_ok) {
		return;
	}
	while (d->head != NULL && d->head->due <= now) {
		struct chunk     *k = d->head;
		struct write_req *w = malloc(sizeof(*w));
		uv_buf_t          b;

		if (w == NULL) {
			conn_close(c);
			return;
		}
		d->head = k->next;
		if (d->head == NULL) {
			d->tail = NULL;
		}
		w->chunk = k;
		b = uv_buf_init(k->data, (unsigned) k->len);
		if (uv_write(&w->req, (uv_stream_t *) d->to, &b, 1, write_cb) !=
		    0) {
			free(k);
			free(w);
			conn_close(c);
			return;
		}
	}
	if (d->head != NULL) {
		(void) uv_timer_start(
		    &d->timer, dir_timer_cb, d->head->due - now, 0);
	}
}

static void
alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void) h;
	(void) suggested;
	buf->base = malloc(PROXY_READ_BUF);
	buf->len = buf->base != NULL ? PROXY_READ_BUF : 0;
}

static void
read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct pdir  *d = s->data;
	struct pconn *c = d->c;
	struct chunk *k;

	if (nread < 0) {
		free(buf->base);
		conn_close(c); /* EOF or error on either side ends both */
		return;
	}
	if (nread == 0) {
		free(buf->base);
		return;
	}
	k = malloc(sizeof(*k) + (size_t) nread);
	if (k == NULL) {
		free(buf->base);
		conn_close(c);
		return;
	}
	memcpy(k->data, buf->base, (size_t) nread);
	free(buf->base);
	k->len = (size_t) nread;
	k->next = NULL;
	k->due = uv_now(c->p->loop) + c->p->delay_ms;
	if (d->tail != NULL) {
		d->tail->next = k;
	} else {
		d->head = k;
	}
	d->tail = k;
	dir_flush(d);
}

static void
conn_reading(struct pconn *c, int on)
{
	if (c->closing || !c->upstream_ok) {
		return;
	}
	if (on) {
		(void) uv_read_start(
		    (uv_stream_t *) &c->client, alloc_cb, read_cb);
		(void) uv_read_start(
		    (uv_stream_t *) &c->upstream, alloc_cb, read_cb);
		dir_flush(&c->up);
		dir_flush(&c->down);
	} else {
		(void) uv_read_stop((uv_stream_t *) &c->client);
		(void) uv_read_stop((uv_stream_t *) &c->upstream);
	}
}

static void
connect_cb(uv_connect_t *req, int status)
{
	struct pconn *c = req->data;

	if (c->closing) {
		return;
	}
	if (status != 0) {
		conn_close(c);
		return;
	}
	c->upstream_ok = 1;
	conn_reading(c, !c->p->paused);
}

static void
dir_init(struct pconn *c, struct pdir *d, uv_tcp_t *from, uv_tcp_t *to)
{
	d->c = c;
	d->from = from;
	d->to = to;
	d->head = d->tail = NULL;
	(void) uv_timer_init(c->p->loop, &d->timer);
	d->timer.data = d;
	from->data = d;
}

static void
accept_cb(uv_stream_t *server, int status)
{
	th_proxy     *p = server->data;
	struct pconn *c;

	if (status != 0 || p->closing) {
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		return;
	}
	c->p = p;
	(void) uv_tcp_init(p->loop, &c->client);
	(void) uv_tcp_init(p->loop, &c->upstream);
	dir_init(c, &c->up, &c->client, &c->upstream);
	dir_init(c, &c->down, &c->upstream, &c->client);
	c->open = 4;
	c->next = p->conns.next;
	c->prev = &p->conns;
	p->conns.next->prev = c;
	p->conns.next = c;
	p->active++;
	p->live++;
	p->accepted++;
	(void) uv_tcp_nodelay(&c->client, 1);
	(void) uv_tcp_nodelay(&c->upstream, 1);
	if (uv_accept(server, (uv_stream_t *) &c->client) != 0 || p->cut) {
		conn_close(c); /* cut: refuse by closing at once */
		return;
	}
	c->connect_req.data = c;
	if (uv_tcp_connect(&c->connect_req, &c->upstream,
	        (const struct sockaddr *) &p->target, connect_cb) != 0) {
		conn_close(c);
	}
}

int
th_proxy_parse_target(const char *s, char *host, size_t hostlen, int *port)
{
	const char *colon;
	const char *h = s;
	size_t      n;
	char       *end = NULL;
	long        v;

	if (s == NULL || (colon = strrchr(s, ':')) == NULL) {
		return UV_EINVAL;
	}
	n = (size_t) (colon - s);
	if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
		h = s + 1;
		n -= 2;
	}
	if (n == 0 || n >= hostlen) {
		return UV_EINVAL;
	}
	v = strtol(colon + 1, &end, 10);
	if (end == colon + 1 || *end != '\0' || v <= 0 || v > 65535) {
		return UV_EINVAL;
	}
	memcpy(host, h, n);
	host[n] = '\0';
	*port = (int) v;
	return 0;
}

int
th_proxy_new(uv_loop_t *loop, int listen_port, const char *target_host,
    int target_port, th_proxy **out)
{
	th_proxy               *p;
	struct sockaddr_in      addr;
	struct sockaddr_storage name;
	int                     namelen = sizeof(name);
	int                     rv;

	p = calloc(1, sizeof(*p));
	if (p == NULL) {
		return UV_ENOMEM;
	}
	if (uv_ip4_addr(target_host, target_port,
	        (struct sockaddr_in *) &p->target) != 0 &&
	    uv_ip6_addr(target_host, target_port,
	        (struct sockaddr_in6 *) &p->target) != 0) {
		free(p);
		return UV_EINVAL;
	}
	(void) uv_ip4_addr("127.0.0.1", listen_port, &addr);
	p->loop = loop;
	p->conns.next = p->conns.prev = &p->conns;
	(void) uv_tcp_init(loop, &p->listener);
	p->listener.data = p;
	p->listener_open = 1;
	rv = uv_tcp_bind(&p->listener, (const struct sockaddr *) &addr, 0);
	if (rv == 0) {
		rv = uv_listen((uv_stream_t *) &p->listener, 64, accept_cb);
	}
	if (rv == 0) {
		rv = uv_tcp_getsockname(
		    &p->listener, (struct sockaddr *) &name, &namelen);
	}
	if (rv != 0) {
		/* Close the listener; the proxy frees itself once it has. */
		th_proxy_close(p, NULL, NULL);
		return rv;
	}
	p->port = ntohs(((struct sockaddr_in *) &name)->sin_port);
	*out = p;
	return 0;
}

int
th_proxy_port(const th_proxy *p)
{
	return p->port;
}

void
th_proxy_pause(th_proxy *p)
{
	struct pconn *c;

	p->paused = 1;
	for (c = p->conns.next; c != &p->conns; c = c->next) {
		conn_reading(c, 0);
		(void) uv_timer_stop(&c->up.timer);
		(void) uv_timer_stop(&c->down.timer);
	}
}

void
th_proxy_resume(th_proxy *p)
{
	struct pconn *c;

	p->paused = 0;
	for (c = p->conns.next; c != &p->conns; c = c->next) {
		conn_reading(c, 1);
	}
}

void
th_proxy_cut(th_proxy *p)
{
	p->cut = 1;
	while (p->conns.next != &p->conns) {
		conn_close(p->conns.next);
	}
}

void
th_proxy_heal(th_proxy *p)
{
	p->cut = 0;
}

void
th_proxy_delay_ms(th_proxy *p, uint64_t ms)
{
	p->delay_ms = ms;
}

uint64_t
th_proxy_accepted(const th_proxy *p)
{
	return p->accepted;
}

unsigned
th_proxy_active(const th_proxy *p)
{
	return p->active;
}

static void
proxy_maybe_done(th_proxy *p)
{
	/* Connections unlink when their close starts: wait for their frees
	 * (live), not just for an empty list. */
	if (!p->closing || p->listener_open || p->live != 0) {
		return;
	}
	if (p->close_cb != NULL) {
		p->close_cb(p->close_arg);
	}
	free(p);
}

static void
listener_closed_cb(uv_handle_t *h)
{
	th_proxy *p = h->data;

	p->listener_open = 0;
	proxy_maybe_done(p);
}

void
th_proxy_close(th_proxy *p, void (*cb)(void *arg), void *arg)
{
	p->closing = 1;
	p->close_cb = cb;
	p->close_arg = arg;
	th_proxy_cut(p);
	uv_close((uv_handle_t *) &p->listener, listener_closed_cb);
}
