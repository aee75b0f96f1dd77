/*
 * ebbaseline: the simplest length-prefixed relay/echo server on libuv, the
 * physical reference for the bridge framing on this machine. ebbench drives
 * it exactly like a bridge; docs/PERFORMANCE.md documents what it does and,
 * above all, what it does not do.
 *
 * Per frame (a big-endian 32-bit length, then the payload) it looks only at
 * the first bytes of the payload, never parses JSON:
 *   1. payload == {"type":"ping"}            -> answers {"type":"pong"};
 *   2. payload starts {"type":"register"     -> the connection becomes a sink;
 *   3. frame from a sink                      -> if requests are waiting
 *                                                (see 4), forwarded to the
 *                                                oldest one's connection (a
 *                                                reply), else dropped;
 *   4. any sink connected                     -> forwarded verbatim to every
 *                                                sink (relay: fire/egress);
 *                                                if the payload contains
 *                                                "replyAddress", the sender
 *                                                is queued (FIFO) for the
 *                                                reply (relayed rr/pipe);
 *   5. otherwise                              -> echoed verbatim (rr/pipe).
 * Rule 3/4 is request/reply through a responder with the same socket hops
 * as a bridge (client -> server -> responder -> server -> client); it
 * assumes one responder answering in order, which ebbench's does.
 *
 * The relay chain (issue 25: the physical reference of ingress through a
 * follower) chains three processes, each started before the one that
 * connects to it:
 *   consumer's node  ebbaseline --receipt: rule 4 plus, for every frame
 *                    relayed to the sinks, a receipt back to the sender,
 *                    {"type":"send","address":"<replyAddress>"} (the
 *                    token copied by a substring scan);
 *   leader, entry    ebbaseline --next H:P: one connection to the next hop
 *                    (opened before READY); every frame from any other
 *                    connection goes up it verbatim and its sender is
 *                    queued (FIFO); every frame coming back down it goes
 *                    to the oldest queued sender.
 * client -> entry -> leader -> consumer's node -> consumer (a sink), the
 * receipt back to the leader, the answer (the receipt, forwarded) back
 * through the entry to the client: every hop of ingress, framing and
 * forwarding only. FIFO is exact because every hop is one ordered stream.
 * The output of one read callback is gathered per destination and written
 * with one uv_write. There is no backpressure, no write-queue bound, no
 * permissions, no addressing: it is a floor, not a server.
 *
 * Usage: ebbaseline [--host H] [--port P] [--next H:P | --receipt];
 * prints "READY bridge=H:P" on stdout once listening (and, with --next,
 * connected) and runs until SIGINT/SIGTERM. One thread, one loop.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "bench/scan.h"
#include "common/alloc.h"
#include "common/buf.h"
#include "common/frame.h"
#include "common/list.h"

#define BASE_MAX_FRAME (16u * 1024u * 1024u)
#define BASE_PING      "{\"type\":\"ping\"}"
#define BASE_PONG      "{\"type\":\"pong\"}"
#define BASE_REGISTER  "{\"type\":\"register\""
#define BASE_REPLY_KEY "\"replyAddress\":\""
#define BASE_TOKEN_MAX 256

typedef struct base_conn {
	uv_tcp_t          tcp;
	eb__list          link; /* in base_server.conns */
	eb__frame_dec     dec;
	eb__buf           out;      /* gathered output of the current read */
	int               sink;     /* registered: receives relayed frames */
	int               queued;   /* on the flush list of this read */
	int               upstream; /* --next: the connection to the next hop */
	struct base_conn *next_flush;
} base_conn;

typedef struct base_wreq {
	uv_write_t req;
	char      *data; /* owned */
} base_wreq;

/* One requester awaiting a reply (NULL once it closed). */
typedef struct base_waiter {
	base_conn *conn;
} base_waiter;

typedef struct base_server {
	uv_loop_t   *loop;
	uv_tcp_t     listener;
	uv_signal_t  sigint;
	uv_signal_t  sigterm;
	eb__list     conns;
	int          nsinks;
	base_conn   *flush_head; /* destinations touched by the current read */
	base_waiter *waiting;    /* FIFO ring of requesters awaiting replies */
	size_t       wcap;
	size_t       whead;
	size_t       wlen;
	int          receipt; /* --receipt: the consumer's node */
	base_conn   *up;      /* --next: the next hop (NULL until connected) */
	uv_connect_t up_req;
	const char  *listen_name; /* printed in READY */
	int          listen_port;
	int          failed; /* the exit status: 1 if the next hop failed */
} base_server;

static base_server g_srv;

static void
conn_closed_cb(uv_handle_t *h)
{
	base_conn *c = h->data;

	eb__frame_dec_free(&c->dec);
	eb__buf_free(&c->out);
	free(c);
}

static void
conn_close(base_conn *c)
{
	if (uv_is_closing((uv_handle_t *) &c->tcp)) {
		return;
	}
	if (c->sink) {
		g_srv.nsinks--;
	}
	if (c == g_srv.up) {
		g_srv.up = NULL;
	}
	/* Replies for a closed requester are dropped, not misdelivered. */
	for (size_t i = 0; i < g_srv.wlen; i++) {
		size_t k = (g_srv.whead + i) % g_srv.wcap;

		if (g_srv.waiting[k].conn == c) {
			g_srv.waiting[k].conn = NULL;
		}
	}
	eb__list_remove(&c->link);
	uv_close((uv_handle_t *) &c->tcp, conn_closed_cb);
}

static void
write_cb(uv_write_t *req, int status)
{
	base_wreq *w = (base_wreq *) req;

	(void) status; /* a failed write shows up as a read error */
	free(w->data);
	free(w);
}

static void
out_append(base_conn *dst, const char *payload, uint32_t len)
{
	unsigned char hdr[EB_FRAME_HDR];

	eb__frame_put_len(hdr, len);
	eb__buf_append(&dst->out, hdr, sizeof(hdr));
	eb__buf_append(&dst->out, payload, len);
	if (!dst->queued) {
		dst->queued = 1;
		dst->next_flush = g_srv.flush_head;
		g_srv.flush_head = dst;
	}
}

static void
flush_all(void)
{
	base_conn *c;
	base_wreq *w;
	uv_buf_t   b;

	while ((c = g_srv.flush_head) != NULL) {
		g_srv.flush_head = c->next_flush;
		c->queued = 0;
		if (eb__buf_avail(&c->out) == 0) {
			continue;
		}
		w = eb__malloc(sizeof(*w));
		w->data =
		    eb__memdup(eb__buf_head(&c->out), eb__buf_avail(&c->out));
		b = uv_buf_init(w->data, (unsigned int) eb__buf_avail(&c->out));
		eb__buf_consume(&c->out, eb__buf_avail(&c->out));
		if (uv_write(&w->req, (uv_stream_t *) &c->tcp, &b, 1,
		        write_cb) != 0) {
			free(w->data);
			free(w);
		}
	}
}

static void
waiting_push(base_conn *c)
{
	size_t       i;
	size_t       ncap;
	base_waiter *nw;

	if (g_srv.wlen == g_srv.wcap) {
		ncap = g_srv.wcap ? g_srv.wcap * 2 : 64;
		nw = eb__malloc(ncap * sizeof(*nw));
		for (i = 0; i < g_srv.wlen; i++) {
			nw[i] = g_srv.waiting[(g_srv.whead + i) % g_srv.wcap];
		}
		free(g_srv.waiting);
		g_srv.waiting = nw;
		g_srv.wcap = ncap;
		g_srv.whead = 0;
	}
	g_srv.waiting[(g_srv.whead + g_srv.wlen++) % g_srv.wcap].conn = c;
}

static base_conn *
waiting_pop(void)
{
	base_conn *c = g_srv.waiting[g_srv.whead].conn;

	g_srv.whead = (g_srv.whead + 1) % g_srv.wcap;
	g_srv.wlen--;
	return c;
}

/* --receipt: {"type":"send","address":"<the request's replyAddress>"}
 * back to the sender (nothing if the request has none). */
static void
send_receipt(base_conn *c, const char *p, uint32_t n)
{
	const char *ra =
	    bench_memmem(p, n, BASE_REPLY_KEY, sizeof(BASE_REPLY_KEY) - 1);
	const char *end = p + n;
	const char *q;
	char        r[BASE_TOKEN_MAX + 64];
	int         k;

	if (ra == NULL) {
		return;
	}
	ra += sizeof(BASE_REPLY_KEY) - 1;
	for (q = ra; q < end && *q != '"'; q++) {
	}
	if (q == end || q - ra > BASE_TOKEN_MAX) {
		return;
	}
	k = snprintf(r, sizeof(r), "{\"type\":\"send\",\"address\":\"%.*s\"}",
	    (int) (q - ra), ra);
	out_append(c, r, (uint32_t) k);
}

static void
handle_frame(base_conn *c, const char *p, uint32_t n)
{
	eb__list  *it;
	eb__list  *tmp;
	base_conn *d;

	if (n == sizeof(BASE_PING) - 1 && memcmp(p, BASE_PING, n) == 0) {
		out_append(c, BASE_PONG, sizeof(BASE_PONG) - 1);
		return;
	}
	if (n >= sizeof(BASE_REGISTER) - 1 &&
	    memcmp(p, BASE_REGISTER, sizeof(BASE_REGISTER) - 1) == 0) {
		if (!c->sink) {
			c->sink = 1;
			g_srv.nsinks++;
		}
		return;
	}
	if (c->sink || c->upstream) {
		if (g_srv.wlen > 0 && (d = waiting_pop()) != NULL) {
			out_append(d, p, n);
		}
		return;
	}
	if (g_srv.up != NULL) {
		waiting_push(c);
		out_append(g_srv.up, p, n);
		return;
	}
	if (g_srv.receipt && g_srv.nsinks > 0) {
		send_receipt(c, p, n);
	}
	if (g_srv.nsinks == 0) {
		out_append(c, p, n);
		return;
	}
	/* A substring search: the baseline never parses JSON. */
	if (bench_memmem(p, n, "\"replyAddress\"", 14) != NULL) {
		waiting_push(c);
	}
	EB_LIST_FOREACH (it, tmp, &g_srv.conns) {
		d = EB_CONTAINER_OF(it, base_conn, link);
		if (d->sink) {
			out_append(d, p, n);
		}
	}
}

static void
alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	base_conn *c = h->data;

	(void) hint;
	buf->base = eb__buf_reserve(&c->dec.in, 65536);
	buf->len = 65536;
}

static void
read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	base_conn  *c = s->data;
	const char *p;
	uint32_t    n;
	int         rv;

	(void) buf;
	if (nread < 0) {
		conn_close(c);
		return;
	}
	/* The read landed in the decoder's own buffer (alloc_cb). */
	c->dec.in.len += (size_t) nread;
	while ((rv = eb__frame_dec_next(&c->dec, &p, &n)) == 0) {
		handle_frame(c, p, n);
	}
	flush_all();
	if (rv != UV_EAGAIN) {
		(void) fprintf(
		    stderr, "ebbaseline: bad frame length, closing\n");
		conn_close(c);
	}
}

static void close_walk_cb(uv_handle_t *h, void *arg);

static base_conn *
conn_new(void)
{
	base_conn *c = eb__calloc(1, sizeof(*c));

	eb__frame_dec_init(&c->dec, BASE_MAX_FRAME);
	eb__buf_init(&c->out);
	uv_tcp_init(g_srv.loop, &c->tcp);
	c->tcp.data = c;
	return c;
}

static void
conn_start(base_conn *c)
{
	(void) uv_tcp_nodelay(&c->tcp, 1);
	eb__list_insert_tail(&g_srv.conns, &c->link);
	(void) uv_read_start((uv_stream_t *) &c->tcp, alloc_cb, read_cb);
}

static void
connection_cb(uv_stream_t *server, int status)
{
	base_conn *c;

	if (status != 0) {
		return;
	}
	c = conn_new();
	if (uv_accept(server, (uv_stream_t *) &c->tcp) != 0) {
		uv_close((uv_handle_t *) &c->tcp, conn_closed_cb);
		return;
	}
	conn_start(c);
}

static void
print_ready(void)
{
	printf("READY bridge=%s:%d\n", g_srv.listen_name, g_srv.listen_port);
	(void) fflush(stdout);
}

/* --next: the next hop is connected; READY only now (the chain's
 * processes start one after the other, each waiting for this line). */
static void
up_connect_cb(uv_connect_t *req, int status)
{
	base_conn *c = req->data;

	if (status != 0) {
		(void) fprintf(stderr, "ebbaseline: connect to next hop: %s\n",
		    uv_strerror(status));
		g_srv.failed = 1;
		uv_close((uv_handle_t *) &c->tcp, conn_closed_cb);
		uv_walk(g_srv.loop, close_walk_cb, NULL);
		return;
	}
	c->upstream = 1;
	g_srv.up = c;
	conn_start(c);
	print_ready();
}

static void
close_walk_cb(uv_handle_t *h, void *arg)
{
	(void) arg;
	if (uv_is_closing(h)) {
		return;
	}
	if (h->type == UV_TCP && h != (uv_handle_t *) &g_srv.listener) {
		conn_close(h->data);
		return;
	}
	uv_close(h, NULL);
}

static void
signal_cb(uv_signal_t *sig, int signum)
{
	(void) signum;
	uv_walk(sig->loop, close_walk_cb, NULL);
}

static int
parse_args(
    int argc, char **argv, const char **host, int *port, const char **next)
{
	int   i;
	char *end;
	long  v;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--host") == 0 && i + 1 < argc) {
			*host = argv[++i];
		} else if (strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
			v = strtol(argv[++i], &end, 10);
			if (*end != '\0' || v < 0 || v > 65535) {
				return -1;
			}
			*port = (int) v;
		} else if (strcmp(argv[i], "--next") == 0 && i + 1 < argc) {
			*next = argv[++i];
		} else if (strcmp(argv[i], "--receipt") == 0) {
			g_srv.receipt = 1;
		} else {
			return -1;
		}
	}
	return *next != NULL && g_srv.receipt ? -1 : 0;
}

/* "H:P" -> an IPv4 address; 0 or a negative uv error. */
static int
parse_hostport(const char *hp, struct sockaddr_in *sa)
{
	const char *colon = strrchr(hp, ':');
	char        host[64];
	char       *end;
	long        v;

	if (colon == NULL || (size_t) (colon - hp) >= sizeof(host)) {
		return UV_EINVAL;
	}
	memcpy(host, hp, (size_t) (colon - hp));
	host[colon - hp] = '\0';
	v = strtol(colon + 1, &end, 10);
	if (*end != '\0' || v <= 0 || v > 65535) {
		return UV_EINVAL;
	}
	return uv_ip4_addr(host, (int) v, sa);
}

int
main(int argc, char **argv)
{
	const char        *host = "127.0.0.1";
	const char        *next = NULL;
	int                port = 0;
	struct sockaddr_in sa;
	struct sockaddr_in nsa;
	struct sockaddr_in bound;
	int                len = sizeof(bound);
	char               name[64];
	base_conn         *up;
	int                rv;

	if (parse_args(argc, argv, &host, &port, &next) != 0) {
		(void) fprintf(stderr,
		    "usage: ebbaseline [--host H] [--port P] "
		    "[--next H:P | --receipt]\n");
		return 2;
	}
	if (next != NULL && (rv = parse_hostport(next, &nsa)) != 0) {
		(void) fprintf(stderr, "ebbaseline: bad --next %s: %s\n", next,
		    uv_strerror(rv));
		return 2;
	}
	(void) signal(SIGPIPE, SIG_IGN);
	g_srv.loop = uv_default_loop();
	eb__list_init(&g_srv.conns);
	if ((rv = uv_ip4_addr(host, port, &sa)) != 0) {
		(void) fprintf(stderr, "ebbaseline: bad host %s: %s\n", host,
		    uv_strerror(rv));
		return 1;
	}
	uv_tcp_init(g_srv.loop, &g_srv.listener);
	if ((rv = uv_tcp_bind(&g_srv.listener, (struct sockaddr *) &sa, 0)) !=
	        0 ||
	    (rv = uv_listen(
	         (uv_stream_t *) &g_srv.listener, 1024, connection_cb)) != 0) {
		(void) fprintf(stderr, "ebbaseline: listen %s:%d: %s\n", host,
		    port, uv_strerror(rv));
		return 1;
	}
	uv_tcp_getsockname(&g_srv.listener, (struct sockaddr *) &bound, &len);
	uv_ip4_name(&bound, name, sizeof(name));
	g_srv.listen_name = name;
	g_srv.listen_port = ntohs(bound.sin_port);
	uv_signal_init(g_srv.loop, &g_srv.sigint);
	uv_signal_init(g_srv.loop, &g_srv.sigterm);
	uv_signal_start(&g_srv.sigint, signal_cb, SIGINT);
	uv_signal_start(&g_srv.sigterm, signal_cb, SIGTERM);
	if (next != NULL) {
		up = conn_new();
		g_srv.up_req.data = up;
		if ((rv = uv_tcp_connect(&g_srv.up_req, &up->tcp,
		         (const struct sockaddr *) &nsa, up_connect_cb)) != 0) {
			(void) fprintf(stderr, "ebbaseline: connect %s: %s\n",
			    next, uv_strerror(rv));
			return 1;
		}
	} else {
		print_ready();
	}
	uv_run(g_srv.loop, UV_RUN_DEFAULT);
	(void) uv_loop_close(g_srv.loop);
	free(g_srv.waiting);
	return g_srv.failed;
}
