/*
 * bus_bench: node-to-node event bus throughput over a real node link.
 *
 * Two nodes, each with its own bus, link manager, loop and thread (as two
 * processes would have), linked over TCP on 127.0.0.1. Node a sends to
 * consumers on node b:
 *   send     fire-and-forget sends, at most --window unconsumed at a time
 *   request  requests answered by b, --window outstanding at a time
 * Bodies are 100-byte JSON objects. Each mode runs --runs times; the line
 * printed per mode gives every run and the median (messages per second).
 *
 *   bus_bench [--n 200000] [--window 2000] [--runs 5] [--mode all|send|request]
 *             [--tls ca.pem cert.pem key.pem]
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <uv.h>

#include <ebnode/bus.h>
#include <ebnode/link.h>
#include <ebnode/log.h>

typedef struct bnode {
	uv_loop_t        loop;
	eb_bus          *bus;
	eb_link_mgr     *mgr;
	eb_bus_consumer *sink;
	eb_bus_consumer *echo;
	const char      *id;
} bnode;

static struct {
	long        n;
	long        window;
	int         runs;
	const char *mode;
	const char *tls[3];
} cfg = { 200000, 2000, 5, "all", { NULL, NULL, NULL } };

static atomic_long b_received; /* sink deliveries on node b */
static atomic_int  b_port;
static atomic_int  b_stop;
static uv_async_t  b_wake;
static bnode       nb;
static uv_sem_t    b_ready;

static void
node_init(bnode *n, const char *id)
{
	eb_bus_opts  bo;
	eb_link_opts lo;
	eb_errbuf    e;

	n->id = id;
	(void) uv_loop_init(&n->loop);
	eb_bus_opts_init(&bo);
	bo.node_id = id;
	bo.consumer_queue_max = 1000000;
	if (eb_bus_new(&n->loop, &bo, &n->bus) != 0) {
		abort();
	}
	eb_link_opts_init(&lo);
	lo.node_id = id;
	lo.tls_ca_file = cfg.tls[0];
	lo.tls_cert_file = cfg.tls[1];
	lo.tls_key_file = cfg.tls[2];
	if (eb_link_mgr_new(&n->loop, &lo, &n->mgr, &e) != 0) {
		(void) fprintf(stderr, "link: %s\n", e.msg);
		exit(1);
	}
	(void) eb_bus_cluster_attach(n->bus, n->mgr);
	if (eb_link_mgr_start(n->mgr) != 0) {
		abort();
	}
}

static void
sink_fn(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	(void) c;
	(void) msg;
	(void) arg;
	atomic_fetch_add_explicit(&b_received, 1, memory_order_relaxed);
}

static void
echo_fn(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	(void) c;
	(void) arg;
	/* A null-bodied answer: the 100-byte body travels one way. */
	(void) eb_bus_msg_reply(msg, NULL, NULL, NULL, NULL, NULL);
}

static void
noop_close_cb(uv_handle_t *h)
{
	(void) h;
}

static void
b_wake_cb(uv_async_t *a)
{
	if (atomic_load(&b_stop)) {
		eb_bus_consumer_close(nb.sink);
		eb_bus_consumer_close(nb.echo);
		eb_bus_close(nb.bus, NULL, NULL);
		eb_link_mgr_close(nb.mgr, NULL, NULL);
		uv_close((uv_handle_t *) a, noop_close_cb);
	}
}

static void
b_thread(void *arg)
{
	(void) arg;
	node_init(&nb, "node-b");
	(void) eb_bus_consumer_new(
	    nb.bus, "bench.sink", 0, sink_fn, NULL, &nb.sink);
	(void) eb_bus_consumer_new(
	    nb.bus, "bench.echo", 0, echo_fn, NULL, &nb.echo);
	(void) uv_async_init(&nb.loop, &b_wake, b_wake_cb);
	atomic_store(&b_port, eb_link_mgr_port(nb.mgr));
	uv_sem_post(&b_ready);
	(void) uv_run(&nb.loop, UV_RUN_DEFAULT);
	(void) uv_loop_close(&nb.loop);
}

/* ---- node a: the driver ---- */

static bnode     na;
static json_t   *body;
static long      sent;
static long      replies;
static long      base;
static int       done;
static uv_idle_t driver;

static void
make_body(void)
{
	char   pad[128];
	size_t len;
	char  *enc;

	memset(pad, 'x', sizeof(pad));
	pad[sizeof(pad) - 1] = '\0';
	body = json_pack("{s:i,s:s}", "seq", 1000000, "pad", pad);
	/* Trim the pad until the encoding is exactly 100 bytes. */
	for (;;) {
		enc = json_dumps(body, JSON_COMPACT);
		len = strlen(enc);
		free(enc);
		if (len <= 100) {
			break;
		}
		pad[strlen(pad) - (len - 100 < strlen(pad) ? len - 100 : 1)] =
		    '\0';
		json_object_set_new(body, "pad", json_string(pad));
	}
}

static void
send_idle_cb(uv_idle_t *h)
{
	long got =
	    atomic_load_explicit(&b_received, memory_order_relaxed) - base;

	while (sent < cfg.n && sent - got < cfg.window) {
		if (eb_bus_send(na.bus, "bench.sink", body, NULL, NULL) != 0) {
			(void) fprintf(stderr, "send failed\n");
			exit(1);
		}
		sent++;
	}
	if (got >= cfg.n) {
		done = 1;
		(void) uv_idle_stop(h);
	}
}

static void reply_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg);

static void
request_one(void)
{
	if (eb_bus_request(
	        na.bus, "bench.echo", body, NULL, NULL, reply_cb, NULL) != 0) {
		(void) fprintf(stderr, "request failed\n");
		exit(1);
	}
	sent++;
}

static void
reply_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg)
{
	(void) bus;
	(void) reply;
	(void) arg;
	if (status != 0) {
		(void) fprintf(stderr, "request: %s\n", failure->message);
		exit(1);
	}
	replies++;
	if (sent < cfg.n) {
		request_one();
	}
	if (replies >= cfg.n) {
		done = 1;
	}
}

static double
run_once(int request)
{
	uint64_t t0;

	sent = replies = 0;
	done = 0;
	base = atomic_load(&b_received);
	t0 = uv_hrtime();
	if (request) {
		for (long i = 0; i < cfg.window && i < cfg.n; i++) {
			request_one();
		}
	} else {
		(void) uv_idle_start(&driver, send_idle_cb);
	}
	while (!done) {
		(void) uv_run(&na.loop, UV_RUN_ONCE);
	}
	return (double) cfg.n / ((double) (uv_hrtime() - t0) / 1e9);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a;
	double y = *(const double *) b;

	return x < y ? -1 : x > y;
}

static void
run_mode(int request)
{
	double *r = calloc((size_t) cfg.runs, sizeof(*r));
	double  sorted[64];

	(void) printf("%-8s n=%ld window=%ld body=100B tls=%s runs:",
	    request ? "request" : "send", cfg.n, cfg.window,
	    cfg.tls[0] != NULL ? "yes" : "no");
	for (int i = 0; i < cfg.runs; i++) {
		r[i] = run_once(request);
		(void) printf(" %.0f", r[i]);
		(void) fflush(stdout);
	}
	memcpy(sorted, r, sizeof(double) * (size_t) cfg.runs);
	qsort(sorted, (size_t) cfg.runs, sizeof(double), cmp_double);
	(void) printf(" | median %.0f msg/s\n", sorted[cfg.runs / 2]);
	free(r);
}

static void
parse_args(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--n") == 0 && i + 1 < argc) {
			cfg.n = strtol(argv[++i], NULL, 10);
		} else if (strcmp(argv[i], "--window") == 0 && i + 1 < argc) {
			cfg.window = strtol(argv[++i], NULL, 10);
		} else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
			cfg.runs = (int) strtol(argv[++i], NULL, 10);
		} else if (strcmp(argv[i], "--mode") == 0 && i + 1 < argc) {
			cfg.mode = argv[++i];
		} else if (strcmp(argv[i], "--tls") == 0 && i + 3 < argc) {
			cfg.tls[0] = argv[++i];
			cfg.tls[1] = argv[++i];
			cfg.tls[2] = argv[++i];
		} else {
			(void) fprintf(stderr,
			    "usage: %s [--n N] [--window W] [--runs R] "
			    "[--mode all|send|request] [--tls ca cert key]\n",
			    argv[0]);
			exit(2);
		}
	}
	if (cfg.n <= 0 || cfg.window <= 0 || cfg.runs <= 0 || cfg.runs > 64) {
		(void) fprintf(stderr, "bad arguments\n");
		exit(2);
	}
}

static int
linked(void)
{
	return eb_link_mgr_peer_up(na.mgr, "node-b");
}

int
main(int argc, char **argv)
{
	uv_thread_t tb;
	uint64_t    t0;

	parse_args(argc, argv);
	(void) signal(SIGPIPE, SIG_IGN); /* libuv writes with write(2) */
	eb_log_set_level(EB_LOG_LEVEL_WARN);
	make_body();
	(void) uv_sem_init(&b_ready, 0);
	(void) uv_thread_create(&tb, b_thread, NULL);
	uv_sem_wait(&b_ready);
	node_init(&na, "node-a");
	(void) uv_idle_init(&na.loop, &driver);
	(void) eb_link_mgr_peer_add(
	    na.mgr, "node-b", "127.0.0.1", atomic_load(&b_port));
	t0 = uv_hrtime();
	/* Wait for the link and for b's interest to arrive. */
	while (!linked() || eb_bus_send(na.bus, "bench.sink", NULL, NULL,
	                        NULL) == EB_ENOHANDLERS) {
		(void) uv_run(&na.loop, UV_RUN_ONCE);
		if (uv_hrtime() - t0 > 5000000000ull) {
			(void) fprintf(stderr, "no link to node-b\n");
			return 1;
		}
	}
	while (atomic_load(&b_received) < 1) {
		(void) uv_run(&na.loop, UV_RUN_NOWAIT);
	}
	EB_LOG_NOTICE(
	    "bench", "linked: node=node-b port=%d", atomic_load(&b_port));
	if (strcmp(cfg.mode, "request") != 0) {
		run_mode(0);
	}
	if (strcmp(cfg.mode, "send") != 0) {
		run_mode(1);
	}
	atomic_store(&b_stop, 1);
	(void) uv_async_send(&b_wake);
	(void) uv_thread_join(&tb);
	uv_close((uv_handle_t *) &driver, noop_close_cb);
	eb_bus_close(na.bus, NULL, NULL);
	eb_link_mgr_close(na.mgr, NULL, NULL);
	(void) uv_run(&na.loop, UV_RUN_DEFAULT);
	(void) uv_loop_close(&na.loop);
	json_decref(body);
	return 0;
}
