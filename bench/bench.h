/*
 * ebbench internals shared by ebbench.c (options, modes, report) and
 * bench_conn.c (connections, frame I/O, the responder thread).
 *
 * One loop thread drives every measured connection; the optional responder
 * (rr/pipe against a bridge) runs its own loop on a second thread and shares
 * nothing with the main loop but its start/stop handshake.
 */
#ifndef EB_BENCH_BENCH_H
#define EB_BENCH_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "bench/hist.h"
#include "common/buf.h"
#include "common/frame.h"

typedef enum bench_mode {
	BENCH_RR,
	BENCH_PIPE,
	BENCH_FIRE,
	BENCH_EGRESS
} bench_mode;

typedef enum bench_role {
	ROLE_REQ,       /* rr/pipe: request, wait for the reply */
	ROLE_SENDER,    /* fire: send without reply */
	ROLE_SINK,      /* fire/egress: registered, counts deliveries */
	ROLE_DRIVER,    /* egress: publishes to the sinks' address */
	ROLE_RESPONDER, /* rr/pipe on a bridge: replies to every request */
} bench_role;

typedef struct bench_opts {
	const char *host;
	int         port;
	bench_mode  mode;
	int         connections;
	size_t      body;
	double      duration_s;
	int         duration_set; /* -d given (bounds a --count run) */
	uint64_t    count;        /* 0: use duration */
	uint32_t    depth; /* in flight per connection (pipe), window (fire) */
	double      warmup_s;
	double      drain_s;
	const char *address;
	/* fire: the counting consumer's bridge port and address (default:
	 * port and address; another node and the route target measure
	 * ingress delivered through a cluster). */
	int         sink_port;
	const char *sink_address;
	int         server_pid;
	int         json;
	int         responder;
	int         sink_noread; /* sinks stop reading after setup */
	double      settle_s;    /* after the run: close, wait, read RSS */
	int         tls;         /* TLS to the server (bench_tls.c) */
	const char *ca;          /* verify the server against it (else none) */
	const char *cert;        /* client certificate and key */
	const char *key;
	const char *label;
} bench_opts;

struct bench;

typedef struct bench_conn {
	uv_tcp_t        tcp;
	uv_connect_t    creq;
	struct bench   *b;
	bench_role      role;
	int             id;
	eb__frame_dec   dec;
	eb__buf         out;
	int             writing;  /* one uv_write in flight at a time */
	int             ready;    /* connected, registered, pong seen */
	uint64_t        inflight; /* rr/pipe requests awaiting a reply */
	uint64_t        seq;
	uint64_t       *ts; /* send times by seq % nts (rr/pipe) */
	uint32_t        nts;
	uint64_t        replies; /* responder: replies sent */
	struct eb__tls *tls;     /* owned, NULL without --tls */
	char           *rawin;   /* owned: ciphertext read buffer */
	int             tls_ready;
} bench_conn;

#define BENCH_TLS_READ 65536

typedef struct bench {
	uv_loop_t  *loop;
	bench_opts  o;
	bench_conn *conns;
	int         nconns;
	int         nready;
	int         nsinks;
	char       *pad; /* body padding, o.body - overhead 'x's */
	size_t      padlen;
	bench_hist  hist;
	uint64_t    sent;      /* requests / sends / publishes issued */
	uint64_t    completed; /* replies (rr/pipe) or deliveries */
	uint64_t    errors;    /* err frames */
	uint64_t    t_start;   /* ns: measuring starts (after warmup) */
	uint64_t    t_last;    /* ns: last completion */
	uint64_t    completed_at_start;
	uint64_t    sent_at_start;
	int         warm;     /* past warmup */
	int         stopping; /* no more sends */
	int         done;
	int         failed;
	uv_timer_t  timer;
	char        first_err[256];
} bench;

/* Starts connecting every connection of b (roles already assigned). */
int bench_conns_start(bench *b);
/* Queues one frame on c and starts a write if none is in flight. */
void bench_conn_send(bench_conn *c);
/* Starts the write of c->out if none is in flight. */
void bench_conn_flush(bench_conn *c);
/* Closes every connection of b (not the timer). */
void bench_close_conns(bench *b);
/* Closes every handle of the loop. */
void bench_close_all(uv_loop_t *loop);

/* Called by bench_conn.c: every connection is ready. */
void bench_on_ready(bench *b);
/* Called by bench_conn.c: a completion (reply or delivery) sent at t0. */
void bench_on_complete(bench *b, uint64_t t0);
/* Called by bench_conn.c: c may send more (write finished or progress). */
void bench_pump(bench_conn *c);
/* Called by bench_conn.c: fatal connection error. */
void bench_fail(bench *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The responder thread (rr/pipe against a bridge): registers o->address and
 * replies to every request. start() returns once it is registered (0) or
 * failed (-1); stop() closes it and joins the thread. */
typedef struct bench_responder bench_responder;
int  bench_responder_start(const bench_opts *o, bench_responder **rp);
void bench_responder_stop(bench_responder *r, uint64_t *replies);

#endif
