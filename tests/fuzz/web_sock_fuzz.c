/*
 * libFuzzer target: the web front through a real socket, checking the
 * bounds (issue 22). web_fuzz feeds the layer without a socket, so it
 * cannot see what queues behind one; here each input starts a bus, a
 * bridge and a web front listening on 127.0.0.1 (port 0) on one loop,
 * connects a client socket that never reads (2 KiB receive buffer, 4 KiB
 * send buffer on the node's side),
 * writes the input's bytes to it (amplified: a few bytes can stand for a
 * flood), runs the loop, and after every loop turn asserts:
 *
 *   - the node-wide input budget holds (nothing over
 *     bridge.input_budget_bytes after the turn);
 *   - every open connection's queued output is within
 *     bridge.write_queue_max_bytes (pongs, close frames, HTTP answers
 *     included: the web layer's own output is bounded too);
 *   - every web session holds nothing outside the accounting: its output
 *     and feed buffers are empty, its scratch buffers small, its partial
 *     message within the message bound;
 *   - the bytes the process has allocated (ASan's counter) grew by at most
 *     the budget plus, per open connection, the write bound and a fixed
 *     allowance: so no buffer anywhere grows with the input.
 *
 * Then the client closes, everything closes, and the loop must end (ASan
 * checks for leaks at exit). WEB_SOCK_FUZZ_VERBOSE=1 prints the figures.
 *
 * Input: byte 0 opens the connection (0: a raw WebSocket, 1: a SockJS
 * websocket, 2: one xhr poll, then HTTP; else plain HTTP), then records: a
 * control byte, a length byte and that many data bytes. ctl & 3 is the
 * kind:
 *   0 the data, once
 *   1 the data repeated 64 * (1 + (ctl >> 2)) times (a flood)
 *   2 a masked WebSocket frame of the data: opcode (ctl >> 2) & 15, FIN
 *     set when ctl & 0x40 is clear; ctl & 0x80 repeats it 2048 times (a
 *     ping flood, a flood of fragments)
 *   3 1 + (ctl >> 2) loop turns
 */
#include <errno.h>
#include <netinet/in.h>
#include <sanitizer/allocator_interface.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ebnode/bridge.h>
#include <ebnode/bus.h>
#include <ebnode/log.h>
#include <ebnode/web.h>

#include "bridge/bridge_int.h"
#include "common/assert.h"
#include "tests/fuzz/fz_node.h"
#include "web/web_int.h"

/* libFuzzer's names and signatures. */
/* NOLINTNEXTLINE(readability-identifier-naming) */
int LLVMFuzzerInitialize(int *argc, char ***argv);
/* NOLINTNEXTLINE(readability-identifier-naming) */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX_FRAME   1024u
#define FZ_WRITE_QUEUE 8192u
#define FZ_BUDGET      16384u
#define FZ_SEND_MAX    ((size_t) 4 << 20) /* bytes sent per input */
#define FZ_STALLS      16                 /* loop turns without progress */
/* What one connection may hold besides its counted bytes: the connection
 * and session structures, wslay's context, the HTTP parser, scratch
 * buffers (the layer keeps at most 16 KiB each, see session.c; with these
 * bounds they stay far below). */
#define FZ_CONN_ALLOWANCE ((size_t) 96 << 10)
#define FZ_SLACK          ((size_t) 256 << 10) /* logs, jansson, libuv */
#define FZ_BUF_KEEP       ((size_t) 16384)     /* WEB_BUF_KEEP */

static int      fz_fd = -1;
static int      fz_verbose;
static size_t   fz_base;   /* allocated bytes after setup */
static size_t   fz_peak;   /* the most allocated above fz_base */
static size_t   fz_sent;   /* bytes the client wrote this input */
static int      fz_gone;   /* the node closed the client */
static size_t   fz_queued; /* the most queued on one connection */
static size_t   fz_conns;  /* connections open at the last check */
static uint64_t fz_turns;

/* NOLINTBEGIN(readability-identifier-naming,readability-non-const-parameter) */
int
LLVMFuzzerInitialize(int *argc, char ***argv)
/* NOLINTEND(readability-identifier-naming,readability-non-const-parameter) */
{
	(void) argc;
	(void) argv;
	fz_verbose = getenv("WEB_SOCK_FUZZ_VERBOSE") != NULL;
	/* The node writes to sockets the client closed (ebnode ignores
	 * SIGPIPE too, in node/node.c). */
	(void) signal(SIGPIPE, SIG_IGN);
	eb_log_set_level(fz_verbose ? EB_LOG_LEVEL_NOTICE : EB_LOG_LEVEL_ERR);
	if (uv_loop_init(&fz_loop) != 0) {
		abort();
	}
	return 0;
}

static void
fail(const char *what, size_t got, size_t max)
{
	(void) fprintf(
	    stderr, "web_sock_fuzz: %s: %zu > %zu\n", what, got, max);
	abort();
}

static void
conn_check_cb(const eb_bridge_conn_info *ci, void *arg)
{
	(void) arg;
	fz_conns++;
	if (ci->queued_bytes > fz_queued) {
		fz_queued = ci->queued_bytes;
	}
	if (ci->queued_bytes > FZ_WRITE_QUEUE) {
		fail("queued output over write_queue_max_bytes",
		    ci->queued_bytes, FZ_WRITE_QUEUE);
	}
}

static void
sess_check(const web_sess *ss)
{
	const size_t msg_max = (size_t) FZ_MAX_FRAME * 2u + 64u;

	if (ss->s->closing) {
		return;
	}
	if (eb__buf_avail(&ss->wsout) != 0 || eb__buf_avail(&ss->feed) != 0) {
		fail("web output or feed left pending",
		    eb__buf_avail(&ss->wsout) + eb__buf_avail(&ss->feed), 0);
	}
	if (ss->wsout.cap > FZ_BUF_KEEP || ss->feed.cap > FZ_BUF_KEEP ||
	    ss->msg.cap > FZ_BUF_KEEP || ss->one.cap > FZ_BUF_KEEP) {
		fail("a web scratch buffer kept grown", ss->wsout.cap,
		    FZ_BUF_KEEP);
	}
	if (ss->ws_partial > msg_max) {
		fail("partial message over the message bound", ss->ws_partial,
		    msg_max);
	}
	if (ss->req_started_ms == 0 && ss->body.cap > FZ_BUF_KEEP) {
		fail("a request body kept after its answer", ss->body.cap,
		    FZ_BUF_KEEP);
	}
}

/* The bounds, after a loop turn (see the top comment). */
static void
check(void)
{
	eb__list *it;
	size_t    now = __sanitizer_get_current_allocated_bytes();
	size_t    grown = now > fz_base ? now - fz_base : 0;
	size_t    max;

	if (eb__budget_over(&fz_bridge->input)) {
		fail("input budget", fz_bridge->input.used, FZ_BUDGET);
	}
	fz_conns = 0;
	(void) eb_bridge_conn_foreach(fz_bridge, conn_check_cb, NULL);
	for (it = fz_web->sessions.next; it != &fz_web->sessions;
	     it = it->next) {
		sess_check(EB_CONTAINER_OF(it, web_sess, link));
	}
	max = FZ_SLACK + FZ_BUDGET +
	      (fz_conns + 1) * (FZ_WRITE_QUEUE + FZ_CONN_ALLOWANCE);
	if (grown > fz_peak) {
		fz_peak = grown;
	}
	if (grown > max) {
		fail("allocated bytes grew past the bounds", grown, max);
	}
}

static void
turn(void)
{
	(void) uv_run(&fz_loop, UV_RUN_NOWAIT);
	fz_turns++;
	check();
}

/* Writes p to the client socket as far as the node takes it. */
static void
client_send(const uint8_t *p, size_t n)
{
	int stalls = 0;

	while (n > 0 && !fz_gone && fz_sent < FZ_SEND_MAX) {
		ssize_t k = send(fz_fd, p, n, MSG_NOSIGNAL);

		if (k > 0) {
			p += k;
			n -= (size_t) k;
			fz_sent += (size_t) k;
			stalls = 0;
			continue;
		}
		if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
		    errno != EINTR) {
			fz_gone =
			    1; /* closed by the node (EPIPE, ECONNRESET) */
			return;
		}
		if (++stalls > FZ_STALLS) {
			return; /* the node does not read now (paused) */
		}
		turn();
	}
}

static void
client_send_rep(const uint8_t *p, size_t n, size_t reps)
{
	size_t k;

	for (k = 0; k < reps && !fz_gone && fz_sent < FZ_SEND_MAX; k++) {
		client_send(p, n);
	}
}

/* A masked client frame (mask 0: the payload goes as is). */
static size_t
ws_frame(uint8_t *f, unsigned opcode, int fin, const uint8_t *p, size_t n)
{
	size_t h = 0;

	f[h++] = (uint8_t) ((fin ? 0x80 : 0) | (opcode & 15));
	if (n < 126) {
		f[h++] = (uint8_t) (0x80 | n);
	} else {
		f[h++] = 0x80 | 126;
		f[h++] = (uint8_t) (n >> 8);
		f[h++] = (uint8_t) n;
	}
	memset(f + h, 0, 4);
	h += 4;
	memcpy(f + h, p, n);
	return h + n;
}

static void
record(unsigned ctl, const uint8_t *p, size_t n)
{
	uint8_t f[8 + 256];
	size_t  len;
	int     k;

	switch (ctl & 3) {
	case 0:
		client_send(p, n);
		break;
	case 1:
		client_send_rep(p, n, (size_t) 64 * (1 + (ctl >> 2)));
		break;
	case 2:
		len = ws_frame(f, (ctl >> 2) & 15, (ctl & 0x40) == 0, p, n);
		client_send_rep(f, len, (ctl & 0x80) ? 2048 : 1);
		break;
	default:
		for (k = 0; k <= (int) (ctl >> 2); k++) {
			turn();
		}
		break;
	}
	turn();
}

/* A small kernel send buffer on the node's side too, so that what the
 * node writes queues in the process (where the bounds apply) after a few
 * KiB instead of filling megabytes of socket buffer first. */
static void
server_sndbuf_small(void)
{
	eb__list *it;
	int       snd = 4096;

	for (it = fz_web->sessions.next; it != &fz_web->sessions;
	     it = it->next) {
		web_sess  *ss = EB_CONTAINER_OF(it, web_sess, link);
		uv_os_fd_t fd;

		if (uv_fileno((const uv_handle_t *) &ss->s->tcp, &fd) == 0) {
			(void) setsockopt(
			    fd, SOL_SOCKET, SO_SNDBUF, &snd, sizeof(snd));
		}
	}
}

static void
client_open(unsigned route)
{
	static const char *const heads[] = {
		("GET /eventbus/websocket HTTP/1.1\r\nHost: h\r\n"
		 "Upgrade: websocket\r\nConnection: Upgrade\r\n"
		 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
		 "Sec-WebSocket-Version: 13\r\n\r\n"),
		("GET /eventbus/000/s0/websocket HTTP/1.1\r\nHost: h\r\n"
		 "Upgrade: websocket\r\nConnection: Upgrade\r\n"
		 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
		 "Sec-WebSocket-Version: 13\r\n\r\n"),
		("POST /eventbus/000/s0/xhr HTTP/1.1\r\nHost: h\r\n"
		 "Content-Length: 0\r\n\r\n"),
	};
	struct sockaddr_in sa;
	int                rcv = 2048;
	int                k;

	fz_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (fz_fd < 0) {
		abort();
	}
	(void) setsockopt(fz_fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t) eb_web_port(fz_web));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fz_fd, (struct sockaddr *) &sa, sizeof(sa)) != 0 &&
	    errno != EINPROGRESS) {
		abort();
	}
	for (k = 0; k < 8 && fz_bridge->stats.conns_open == 0; k++) {
		turn(); /* the accept */
	}
	server_sndbuf_small();
	if (route < 3) {
		client_send(
		    (const uint8_t *) heads[route], strlen(heads[route]));
		turn();
	}
}

static void
setup(void)
{
	eb_bus_opts    bo;
	eb_bridge_opts o;
	eb_web_opts    wo;

	eb_bus_opts_init(&bo);
	fz_bridge_opts(&o);
	o.max_frame_bytes = FZ_MAX_FRAME;
	o.write_queue_max_bytes = FZ_WRITE_QUEUE;
	o.input_budget_bytes = FZ_BUDGET;
	o.max_connections = 8;
	fz_bus_bridge_new(&bo, &o, 1);
	eb_web_opts_init(&wo);
	wo.max_header_bytes = 1024;
	fz_web_new(&wo, 1);
	fz_base = __sanitizer_get_current_allocated_bytes();
	fz_peak = 0;
	fz_sent = 0;
	fz_gone = 0;
	fz_queued = 0;
	fz_turns = 0;
}

static void
teardown(void)
{
	eb_bridge_stats st;
	int             k;

	(void) close(fz_fd);
	fz_fd = -1;
	eb__web_xhr_close_all(fz_web);
	for (k = 0; k < 200 && fz_bridge->stats.conns_open > 0; k++) {
		turn(); /* the client's EOF reaches the node */
	}
	eb_bridge_stats_get(fz_bridge, &st);
	if (fz_verbose) {
		(void) fprintf(stderr,
		    "web_sock_fuzz: sent=%zu gone=%d turns=%llu peak=%zu "
		    "max_queued=%zu closed_slow=%llu closed_memory=%llu "
		    "closed_timeout=%llu\n",
		    fz_sent, fz_gone, (unsigned long long) fz_turns, fz_peak,
		    fz_queued, (unsigned long long) st.conns_closed_slow,
		    (unsigned long long) st.conns_closed_memory,
		    (unsigned long long) st.conns_closed_timeout);
	}
	fz_web_close();
	fz_bus_bridge_close();
}

/* NOLINTNEXTLINE(readability-identifier-naming) */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t k = 1;

	if (size < 1) {
		return 0;
	}
	setup();
	client_open(data[0]);
	while (k + 1 < size) {
		unsigned ctl = data[k];
		size_t   n = data[k + 1];

		k += 2;
		if (n > size - k) {
			n = size - k;
		}
		record(ctl, data + k, n);
		k += n;
	}
	turn();
	teardown();
	return 0;
}
