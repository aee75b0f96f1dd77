/*
 * ebbench: a load generator for any server that speaks the Vert.x TCP
 * event-bus bridge framing (ebnode's bridge, Vert.x itself, ebbaseline).
 *
 *   rr      request/reply, one request in flight per connection
 *   pipe    request/reply, --depth requests in flight per connection
 *   fire    fire-and-forget sends from --connections senders, confirmed by
 *           one counting consumer connection registered on the address;
 *           at most --depth sends unconfirmed at any time (the window)
 *   egress  server -> client: one driver connection publishes to the address
 *           that --connections sink connections registered; rate counts
 *           deliveries, window --depth publishes
 *
 * Against a bridge, rr/pipe need something that replies: --responder runs
 * one on its own thread (registers --address, answers every request).
 * Against ebbaseline the server echoes. Latency is send-to-reply for rr/pipe
 * and send-to-delivery for fire/egress (the body carries the send time).
 * With --server-pid, the server's CPU time per operation (utime+stime) over
 * the measured interval and its RSS / peak RSS are reported.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "bench/bench.h"
#include "bench/bench_tls.h"
#include "bench/proc.h"
#include "common/alloc.h"

#define BODY_OVERHEAD 31 /* {"t":"<16 hex>","p":""} */

static bench      g_b;
static bench_proc g_proc_ready;
static bench_proc g_proc_start;
static bench_proc g_proc_end;
static int        g_proc_ok;
static bench_proc g_proc_settled; /* --settle: after the connections closed */
static int        g_settled_ok;
static bench_proc g_self_start; /* ebbench itself, responder included */
static bench_proc g_self_end;

static void
usage(FILE *out)
{
	(void) fprintf(out,
	    "Usage: ebbench --port P [options]\n"
	    "  -m, --mode rr|pipe|fire|egress  (default rr)\n"
	    "      --host H            server address (default 127.0.0.1)\n"
	    "  -p, --port P            server port (required)\n"
	    "  -c, --connections N     measured connections (default 1)\n"
	    "  -b, --body BYTES        JSON body size (default 100)\n"
	    "  -d, --duration SEC      measured time (default 5)\n"
	    "  -n, --count N           total operations instead of a "
	    "duration\n"
	    "                          (with -d too: whichever comes first)\n"
	    "      --depth N           pipe: in flight per connection (16);\n"
	    "                          fire/egress: unconfirmed window "
	    "(1000)\n"
	    "      --warmup SEC        not measured (default 0.5)\n"
	    "      --drain SEC         wait for stragglers (default 10)\n"
	    "  -a, --address A         event-bus address (default "
	    "bench.echo)\n"
	    "      --responder         rr/pipe: run a replying client "
	    "(bridges)\n"
	    "      --server-pid PID    report server CPU/op and RSS\n"
	    "      --sink-noread       fire/egress: consumers never read\n"
	    "      --sink-port P       fire: the consumer's bridge port, "
	    "rr/pipe:\n"
	    "                          the --responder's (default -p)\n"
	    "      --sink-address A    fire: the consumer's address (-a)\n"
	    "      --settle SEC        then close, wait, report server RSS\n"
	    "      --tls               TLS (no verification unless --ca)\n"
	    "      --ca FILE           verify the server (implies --tls)\n"
	    "      --cert F --key F    client certificate (implies --tls)\n"
	    "      --label TEXT        copied into the JSON output\n"
	    "      --json              one JSON object instead of a table\n");
}

static int
parse_num(const char *s, double min, double max, double *out)
{
	char  *end;
	double v;

	if (s == NULL || *s == '\0') {
		return -1;
	}
	v = strtod(s, &end);
	if (*end != '\0' || v < min || v > max) {
		return -1;
	}
	*out = v;
	return 0;
}

static int
parse_mode(const char *s, bench_mode *m)
{
	static const char *names[] = { "rr", "pipe", "fire", "egress" };
	int                i;

	for (i = 0; i < 4; i++) {
		if (s != NULL && strcmp(s, names[i]) == 0) {
			*m = (bench_mode) i;
			return 0;
		}
	}
	return -1;
}

static const char *
mode_name(bench_mode m)
{
	static const char *names[] = { "rr", "pipe", "fire", "egress" };

	return names[m];
}

/* A TCP port 1..65535 from the whole of s; -1 otherwise. */
static int
port_parse(const char *s)
{
	char *end = NULL;
	long  v;

	if (s == NULL || *s == '\0') {
		return -1;
	}
	v = strtol(s, &end, 10);
	return *end == '\0' && v > 0 && v <= 65535 ? (int) v : -1;
}

static int
is_opt(const char *a, const char *s, const char *l)
{
	return (s != NULL && strcmp(a, s) == 0) || strcmp(a, l) == 0;
}

/* Options with a numeric value: 1 if a is one (bad set when val is
 * invalid). */
static int
value_opt(bench_opts *o, const char *a, const char *val, int *bad)
{
	double v = 0;

	if (is_opt(a, "-m", "--mode")) {
		*bad = parse_mode(val, &o->mode);
	} else if (is_opt(a, "-p", "--port")) {
		*bad = parse_num(val, 1, 65535, &v);
		o->port = (int) v;
	} else if (is_opt(a, "-c", "--connections")) {
		*bad = parse_num(val, 1, 10000, &v);
		o->connections = (int) v;
	} else if (is_opt(a, "-b", "--body")) {
		*bad = parse_num(val, 0, 8e6, &v);
		o->body = (size_t) v;
	} else if (is_opt(a, "-d", "--duration")) {
		*bad = parse_num(val, 0.01, 86400, &o->duration_s);
		o->duration_set = 1;
	} else if (is_opt(a, "-n", "--count")) {
		*bad = parse_num(val, 1, 1e12, &v);
		o->count = (uint64_t) v;
	} else if (is_opt(a, NULL, "--depth")) {
		*bad = parse_num(val, 1, 1e9, &v);
		o->depth = (uint32_t) v;
	} else if (is_opt(a, NULL, "--warmup")) {
		*bad = parse_num(val, 0, 3600, &o->warmup_s);
	} else if (is_opt(a, NULL, "--drain")) {
		*bad = parse_num(val, 0, 3600, &o->drain_s);
	} else if (is_opt(a, NULL, "--server-pid")) {
		*bad = parse_num(val, 1, 4194304, &v);
		o->server_pid = (int) v;
	} else if (is_opt(a, NULL, "--settle")) {
		*bad = parse_num(val, 0, 3600, &o->settle_s);
	} else {
		return 0;
	}
	return 1;
}

/* Options with a text value: 1 if a is one. */
static int
text_opt(bench_opts *o, const char *a, const char *val, int *bad)
{
	*bad = val == NULL;
	if (is_opt(a, NULL, "--host")) {
		o->host = val;
	} else if (is_opt(a, "-a", "--address")) {
		/* The address is put into JSON text unescaped. */
		*bad = val == NULL || strchr(val, '"') != NULL ||
		       strchr(val, '\\') != NULL;
		o->address = val;
	} else if (is_opt(a, NULL, "--sink-address")) {
		*bad = val == NULL || strchr(val, '"') != NULL ||
		       strchr(val, '\\') != NULL;
		o->sink_address = val;
	} else if (is_opt(a, NULL, "--sink-port")) {
		o->sink_port = port_parse(val);
		*bad = o->sink_port <= 0;
	} else if (is_opt(a, NULL, "--ca")) {
		o->ca = val;
		o->tls = 1;
	} else if (is_opt(a, NULL, "--cert")) {
		o->cert = val;
		o->tls = 1;
	} else if (is_opt(a, NULL, "--key")) {
		o->key = val;
		o->tls = 1;
	} else if (is_opt(a, NULL, "--label")) {
		o->label = val;
	} else {
		*bad = 0;
		return 0;
	}
	return 1;
}

static void
set_defaults(bench_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->host = "127.0.0.1";
	o->port = -1;
	o->connections = 1;
	o->body = 100;
	o->duration_s = 5;
	o->warmup_s = 0.5;
	o->drain_s = 10;
	o->address = "bench.echo";
	o->label = "";
}

/* Returns 0, or 2 after printing a usage error. */
static int
parse_args(int argc, char **argv, bench_opts *o)
{
	int i;
	int bad;

	set_defaults(o);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;

		bad = 0;
		if (is_opt(a, "-h", "--help")) {
			usage(stdout);
			exit(0);
		} else if (is_opt(a, NULL, "--json")) {
			o->json = 1;
		} else if (is_opt(a, NULL, "--responder")) {
			o->responder = 1;
		} else if (is_opt(a, NULL, "--tls")) {
			o->tls = 1;
		} else if (is_opt(a, NULL, "--sink-noread")) {
			o->sink_noread = 1;
		} else if (value_opt(o, a, val, &bad) ||
		           text_opt(o, a, val, &bad)) {
			i++;
		} else {
			(void) fprintf(
			    stderr, "ebbench: unknown option: %s\n", a);
			return 2;
		}
		if (bad) {
			(void) fprintf(stderr,
			    "ebbench: bad or missing value for %s\n", a);
			return 2;
		}
	}
	if (o->port < 0) {
		(void) fprintf(stderr, "ebbench: --port is required\n");
		return 2;
	}
	if ((o->cert == NULL) != (o->key == NULL)) {
		(void) fprintf(
		    stderr, "ebbench: --cert and --key go together\n");
		return 2;
	}
	if (o->depth == 0) {
		o->depth = o->mode == BENCH_PIPE ? 16 : 1000;
	}
	if (o->mode == BENCH_RR) {
		o->depth = 1;
	}
	if (o->mode == BENCH_PIPE && o->depth > 1000000) {
		(void) fprintf(
		    stderr, "ebbench: pipe --depth is at most 1e6\n");
		return 2;
	}
	if (o->count > 0) {
		o->warmup_s = 0; /* a fixed count is measured whole */
	}
	return 0;
}

void
bench_fail(bench *b, const char *fmt, ...)
{
	va_list ap;

	if (b->done) {
		return;
	}
	(void) fprintf(stderr, "ebbench: ");
	va_start(ap, fmt);
	(void) vfprintf(stderr, fmt, ap);
	va_end(ap);
	(void) fputc('\n', stderr);
	b->failed = 1;
	b->done = 1;
	bench_close_all(b->loop);
}

static uint64_t
expected_completions(const bench *b)
{
	return b->o.mode == BENCH_EGRESS ? b->sent * (uint64_t) b->nsinks
	                                 : b->sent;
}

static void
settle_timer_cb(uv_timer_t *t)
{
	bench *b = t->data;

	g_settled_ok = bench_proc_read(b->o.server_pid, &g_proc_settled) == 0;
	bench_close_all(b->loop);
}

static void
finish(bench *b)
{
	if (b->done) {
		return;
	}
	b->done = 1;
	(void) bench_proc_read((int) getpid(), &g_self_end);
	if (b->o.server_pid > 0) {
		g_proc_ok = g_proc_ok &&
		            bench_proc_read(b->o.server_pid, &g_proc_end) == 0;
	}
	if (b->o.server_pid > 0 && b->o.settle_s > 0) {
		/* Does the server give the memory back once we are gone? */
		bench_close_conns(b);
		(void) uv_timer_start(&b->timer, settle_timer_cb,
		    (uint64_t) (b->o.settle_s * 1000), 0);
		return;
	}
	bench_close_all(b->loop);
}

static void
drain_timer_cb(uv_timer_t *t)
{
	finish(t->data);
}

static void
stop_sending(bench *b)
{
	if (b->stopping) {
		return;
	}
	b->stopping = 1;
	if (b->completed >= expected_completions(b)) {
		finish(b);
		return;
	}
	uv_timer_start(
	    &b->timer, drain_timer_cb, (uint64_t) (b->o.drain_s * 1000), 0);
}

static void
stop_timer_cb(uv_timer_t *t)
{
	stop_sending(t->data);
}

static void
start_measuring(bench *b)
{
	int i;

	b->warm = 1;
	b->t_start = uv_hrtime();
	b->t_last = b->t_start;
	b->completed_at_start = b->completed;
	b->sent_at_start = b->sent;
	bench_hist_reset(&b->hist);
	(void) bench_proc_read((int) getpid(), &g_self_start);
	if (b->o.server_pid > 0) {
		g_proc_ok =
		    bench_proc_read(b->o.server_pid, &g_proc_start) == 0;
	}
	/* With --count, an explicit --duration is an upper bound (a server
	 * that stops reading must not hang the run). */
	if (b->o.count == 0 || b->o.duration_set) {
		(void) uv_timer_start(&b->timer, stop_timer_cb,
		    (uint64_t) (b->o.duration_s * 1000), 0);
	}
	for (i = 0; i < b->nconns; i++) {
		bench_pump(&b->conns[i]);
		bench_conn_flush(&b->conns[i]);
	}
}

static void
warm_timer_cb(uv_timer_t *t)
{
	start_measuring(t->data);
}

void
bench_on_ready(bench *b)
{
	int i;

	if (b->o.server_pid > 0 &&
	    bench_proc_read(b->o.server_pid, &g_proc_ready) != 0) {
		bench_fail(b, "cannot read /proc/%d", b->o.server_pid);
		return;
	}
	if (b->o.warmup_s > 0) {
		uv_timer_start(&b->timer, warm_timer_cb,
		    (uint64_t) (b->o.warmup_s * 1000), 0);
		for (i = 0; i < b->nconns; i++) {
			bench_pump(&b->conns[i]);
			bench_conn_flush(&b->conns[i]);
		}
		return;
	}
	start_measuring(b);
}

void
bench_on_complete(bench *b, uint64_t t0)
{
	uint64_t now = uv_hrtime();

	b->completed++;
	b->t_last = now;
	if (b->warm && t0 != 0 && t0 <= now) {
		bench_hist_record(&b->hist, now - t0);
	}
	if (b->stopping && b->completed >= expected_completions(b)) {
		finish(b);
	}
}

static int
may_send(bench *b)
{
	if (b->stopping || b->done || b->nready < b->nconns) {
		return 0;
	}
	if (b->o.count > 0 && b->sent >= b->o.count) {
		stop_sending(b);
		return 0;
	}
	return 1;
}

void
bench_pump(bench_conn *c)
{
	bench   *b = c->b;
	unsigned burst = 0;

	switch (c->role) {
	case ROLE_REQ:
		while (c->inflight < b->o.depth && may_send(b)) {
			bench_conn_send(c);
		}
		break;
	case ROLE_SENDER:
		/* Bursts of 64 so that several senders share the window. */
		while (burst++ < 64 && b->sent - b->completed < b->o.depth &&
		       may_send(b)) {
			bench_conn_send(c);
		}
		break;
	case ROLE_DRIVER:
		while (burst++ < 64 &&
		       expected_completions(b) - b->completed <
		           (uint64_t) b->o.depth * (uint64_t) b->nsinks &&
		       may_send(b)) {
			bench_conn_send(c);
		}
		break;
	default:
		break;
	}
}

static void
assign_roles(bench *b)
{
	const bench_opts *o = &b->o;
	int               i;

	b->nconns = o->connections;
	if (o->mode == BENCH_FIRE || o->mode == BENCH_EGRESS) {
		b->nconns++;
	}
	b->conns = eb__calloc((size_t) b->nconns, sizeof(*b->conns));
	for (i = 0; i < b->nconns; i++) {
		bench_conn *c = &b->conns[i];

		c->b = b;
		c->id = i;
		switch (o->mode) {
		case BENCH_RR:
		case BENCH_PIPE:
			c->role = ROLE_REQ;
			c->nts = o->depth * 2;
			c->ts = eb__calloc(c->nts, sizeof(*c->ts));
			break;
		case BENCH_FIRE:
			c->role = i == 0 ? ROLE_SINK : ROLE_SENDER;
			break;
		case BENCH_EGRESS:
			c->role = i == 0 ? ROLE_DRIVER : ROLE_SINK;
			break;
		}
		if (c->role == ROLE_SINK) {
			b->nsinks++;
		}
	}
}

typedef struct bench_result {
	uint64_t ops;
	double   secs;
	double   rate;
	uint64_t lost;
	double   cpu_us_per_op;
	double   cpu_s;
	double   client_cpu_us_per_op;
} bench_result;

static void
compute(const bench *b, bench_result *r)
{
	uint64_t expect = expected_completions(b);

	memset(r, 0, sizeof(*r));
	r->ops = b->completed - b->completed_at_start;
	r->secs = (double) (b->t_last - b->t_start) / 1e9;
	r->rate = r->secs > 0 ? (double) r->ops / r->secs : 0;
	r->lost = expect > b->completed ? expect - b->completed : 0;
	if (r->ops > 0) {
		r->client_cpu_us_per_op =
		    (double) (g_self_end.cpu_us - g_self_start.cpu_us) /
		    (double) r->ops;
	}
	if (g_proc_ok && r->ops > 0) {
		r->cpu_s =
		    (double) (g_proc_end.cpu_us - g_proc_start.cpu_us) / 1e6;
		r->cpu_us_per_op = r->cpu_s * 1e6 / (double) r->ops;
	}
}

static double
q_us(const bench *b, double q)
{
	return (double) bench_hist_quantile(&b->hist, q) / 1e3;
}

/* [[quantile, µs], ...] from p0 to max, for latency-percentile plots. */
static json_t *
percentiles(const bench *b)
{
	static const double qs[] = { 0.0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99,
		0.995, 0.999, 0.9995, 0.9999, 1.0 };
	json_t             *a = json_array();
	size_t              i;

	for (i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		(void) json_array_append_new(
		    a, json_pack("[f,f]", qs[i], q_us(b, qs[i])));
	}
	return a;
}

static void
report_json(const bench *b, const bench_result *r, uint64_t resp_replies)
{
	json_t *j;
	json_t *srv;
	char   *s;

	j = json_pack("{s:s,s:s,s:s,s:i,s:i,s:I,s:I,s:I,s:I,s:f,s:f,s:I,s:I,"
	              "s:I}",
	    "label", b->o.label, "mode", mode_name(b->o.mode), "host",
	    b->o.host, "port", b->o.port, "connections", b->o.connections,
	    "body_bytes", (json_int_t) b->o.body, "depth",
	    (json_int_t) b->o.depth, "sent",
	    (json_int_t) (b->sent - b->sent_at_start), "ops",
	    (json_int_t) r->ops, "seconds", r->secs, "rate_per_s", r->rate,
	    "errors", (json_int_t) b->errors, "lost", (json_int_t) r->lost,
	    "responder_replies", (json_int_t) resp_replies);
	json_object_set_new(
	    j, "client_cpu_us_per_op", json_real(r->client_cpu_us_per_op));
	json_object_set_new(j, "latency_us",
	    json_pack("{s:f,s:f,s:f,s:f,s:f,s:f}", "p50", q_us(b, 0.50), "p99",
	        q_us(b, 0.99), "p999", q_us(b, 0.999), "max",
	        (double) b->hist.max / 1e3, "mean",
	        b->hist.count
	            ? (double) b->hist.sum / (double) b->hist.count / 1e3
	            : 0.0,
	        "samples", (double) b->hist.count));
	json_object_set_new(j, "percentiles_us", percentiles(b));
	if (b->o.server_pid > 0 && g_proc_ok) {
		srv = json_pack("{s:i,s:f,s:f,s:I,s:I,s:I}", "pid",
		    b->o.server_pid, "cpu_s", r->cpu_s, "cpu_us_per_op",
		    r->cpu_us_per_op, "rss_kb_ready",
		    (json_int_t) g_proc_ready.rss_kb, "rss_kb_end",
		    (json_int_t) g_proc_end.rss_kb, "hwm_kb",
		    (json_int_t) g_proc_end.hwm_kb);
		if (g_settled_ok) {
			json_object_set_new(srv, "rss_kb_settled",
			    json_integer((json_int_t) g_proc_settled.rss_kb));
		}
		json_object_set_new(j, "server", srv);
	}
	s = json_dumps(j, JSON_COMPACT);
	printf("%s\n", s);
	free(s);
	json_decref(j);
}

static void
report_table(const bench *b, const bench_result *r)
{
	printf("ebbench %s %s:%d conns=%d body=%zuB depth=%u%s%s\n",
	    mode_name(b->o.mode), b->o.host, b->o.port, b->o.connections,
	    b->o.body, b->o.depth, b->o.label[0] ? " label=" : "", b->o.label);
	printf("  ops        %llu in %.2f s = %.0f /s\n",
	    (unsigned long long) r->ops, r->secs, r->rate);
	printf("  latency us p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n",
	    q_us(b, 0.50), q_us(b, 0.99), q_us(b, 0.999),
	    (double) b->hist.max / 1e3);
	printf("  client     cpu %.3f us/op (ebbench itself)\n",
	    r->client_cpu_us_per_op);
	printf("  errors     %llu  lost %llu\n", (unsigned long long) b->errors,
	    (unsigned long long) r->lost);
	if (b->o.server_pid > 0 && g_proc_ok) {
		printf("  server     pid %d: cpu %.3f us/op (%.2f s), rss %llu "
		       "kB (ready %llu kB, peak %llu kB)\n",
		    b->o.server_pid, r->cpu_us_per_op, r->cpu_s,
		    (unsigned long long) g_proc_end.rss_kb,
		    (unsigned long long) g_proc_ready.rss_kb,
		    (unsigned long long) g_proc_end.hwm_kb);
	}
	if (g_settled_ok) {
		printf("  settled    server rss %llu kB %.1f s after closing\n",
		    (unsigned long long) g_proc_settled.rss_kb, b->o.settle_s);
	}
	if (b->first_err[0] != '\0') {
		printf("  first err  %s\n", b->first_err);
	}
}

static void
bench_setup(bench *b)
{
	b->loop = uv_default_loop();
	b->padlen = b->o.body > BODY_OVERHEAD ? b->o.body - BODY_OVERHEAD : 0;
	b->pad = eb__malloc(b->padlen + 1);
	memset(b->pad, 'x', b->padlen);
	b->pad[b->padlen] = '\0';
	bench_hist_reset(&b->hist);
	(void) uv_timer_init(b->loop, &b->timer);
	b->timer.data = b;
	assign_roles(b);
}

static void
bench_teardown(bench *b)
{
	int i;

	for (i = 0; i < b->nconns; i++) {
		eb__frame_dec_free(&b->conns[i].dec);
		eb__buf_free(&b->conns[i].out);
		free(b->conns[i].ts);
		bench_tls_conn_free(&b->conns[i]);
	}
	bench_tls_free();
	free(b->conns);
	free(b->pad);
	(void) uv_loop_close(b->loop);
}

int
main(int argc, char **argv)
{
	bench           *b = &g_b;
	bench_responder *resp = NULL;
	bench_result     r = { 0 };
	uint64_t         replies = 0;
	int              rv;

	if ((rv = parse_args(argc, argv, &b->o)) != 0) {
		usage(stderr);
		return rv;
	}
	(void) signal(SIGPIPE, SIG_IGN);
	if (bench_tls_init(&b->o) != 0) {
		bench_tls_free();
		return 1;
	}
	bench_setup(b);
	if (b->o.responder &&
	    (b->o.mode == BENCH_RR || b->o.mode == BENCH_PIPE)) {
		if (bench_responder_start(&b->o, &resp) != 0) {
			(void) fprintf(
			    stderr, "ebbench: responder failed to start\n");
			bench_responder_stop(resp, NULL);
			return 1;
		}
	}
	if ((rv = bench_conns_start(b)) != 0) {
		bench_fail(b, "connect: %s", uv_strerror(rv));
	}
	(void) uv_run(b->loop, UV_RUN_DEFAULT);
	if (resp != NULL) {
		bench_responder_stop(resp, &replies);
	}
	if (!b->failed) {
		compute(b, &r);
		if (b->o.json) {
			report_json(b, &r, replies);
		} else {
			report_table(b, &r);
		}
	}
	bench_teardown(b);
	if (b->failed) {
		return 1;
	}
	return r.lost > 0 ? 3 : 0;
}
