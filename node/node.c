/*
 * The node's lifecycle (node_int.h, docs/NODE.md). A step table drives both
 * directions; exactly one step is in flight at a time (step_busy); a stop
 * requested while a start step runs is acted on when that step completes
 * (or is canceled), so no subsystem is ever stopped half-started. After
 * the last stop the node's own handles close and the loop ends by itself.
 * Loop thread only.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/log.h>
#include <ebnode/version.h>

#include "common/alloc.h"
#include "common/util.h"
#include "node/node_int.h"

/* A graceful stop longer than this is cut short (exit code 1). */
#define NODE_STOP_TIMEOUT_MS 30000

/* cancel (NULL: the step starts promptly) cuts a start in flight short
 * when a stop is requested: it completes with EB_ECANCELED. */
static const struct node_step {
	const char *name;
	int (*start)(eb_node *n, eb__node_done_cb cb);
	void (*stop)(eb_node *n, eb__node_done_cb cb);
	void (*cancel)(eb_node *n);
} node_steps[] = {
	{ "bus", eb__node_bus_start, eb__node_bus_stop, NULL },
	{ "ingress", eb__node_ingress_start, eb__node_ingress_stop, NULL },
	{ "bridge", eb__node_bridge_start, eb__node_bridge_stop, NULL },
	{ "admin", eb__node_admin_start, eb__node_admin_stop, NULL },
	{ "cluster", eb__node_cluster_start, eb__node_cluster_stop,
	    eb__node_cluster_cancel_start },
};
#define NODE_NSTEPS (sizeof(node_steps) / sizeof(node_steps[0]))

static void start_next(eb_node *n);
static void stop_next(eb_node *n);
static void begin_stop(eb_node *n);

eb__node_wait *
eb__node_wait_new(eb_node *n, eb__node_done_cb cb, int status, int pending)
{
	eb__node_wait *w = eb__malloc(sizeof(*w));

	w->n = n;
	w->cb = cb;
	w->status = status;
	w->pending = pending;
	return w;
}

void
eb__node_wait_done(eb__node_wait *w)
{
	eb__node_wait c = *w;

	if (--w->pending > 0) {
		return;
	}
	free(w);
	if (c.cb != NULL) {
		c.cb(c.n, c.status);
	}
}

static void
completion_run(void *arg)
{
	eb__node_wait_done(arg);
}

void
eb__node_complete(eb_node *n, eb__node_done_cb cb, int status)
{
	eb__defer(
	    &n->defer, completion_run, eb__node_wait_new(n, cb, status, 1));
}

static int
exit_code(int err)
{
	return err == 0             ? EB_NODE_EXIT_OK
	       : err == EB_EDUPADDR ? EB_NODE_EXIT_DUPADDR
	                            : EB_NODE_EXIT_FATAL;
}

int
eb__node_new(uv_loop_t *loop, const eb_conf *conf, eb_node **np)
{
	eb_node *n = eb__calloc(1, sizeof(*n));

	n->loop = loop;
	n->conf = conf;
	eb__node_cluster_opts(conf, &n->cluster.self);
	*np = n;
	return 0;
}

void
eb__node_free(eb_node *n)
{
	eb__conf_dyn_free(n->config);
	free(n);
}

static void
print_ready(eb_node *n)
{
	const eb_conf *c = n->conf;
	char           admin[300], bridge[300], cluster[300];

	eb__fmt_hostport(
	    admin, sizeof(admin), c->admin.listen, n->cluster.self.admin_port);
	eb__fmt_hostport(bridge, sizeof(bridge), c->bridge.host,
	    n->cluster.self.bridge_port);
	eb__fmt_hostport(cluster, sizeof(cluster), c->link.host,
	    n->cluster.self.cluster_port);
	/* The one line on stdout: tests and supervisors wait for it. */
	(void) printf("READY admin=%s bridge=%s cluster=%s node=%s\n", admin,
	    bridge, cluster, c->cluster.node_id);
	(void) fflush(stdout);
	EB_LOG_NOTICE("node",
	    "ready: node=%s address=%s admin=%s bridge=%s cluster=%s "
	    "mode=%s startup_ms=%llu",
	    c->cluster.node_id, c->cluster.address, admin, bridge, cluster,
	    c->cluster.connect[0] != '\0' ? "clustered" : "standalone",
	    (unsigned long long) (eb__mono_ms() - n->start_ms));
}

static void
start_failed(eb_node *n, const struct node_step *s, int err)
{
	EB_LOG_ERR("node", "start-failed: step=%s err=%s (%s)", s->name,
	    eb_err_name(err), eb_strerror(err));
	n->exit_code = exit_code(err);
	begin_stop(n);
}

static void
start_done_cb(eb_node *n, int status)
{
	const struct node_step *s = &node_steps[n->started];

	n->step_busy = false;
	if (status == EB_ECANCELED && n->stop_requested) {
		/* Canceled for the requested stop: not a failure. */
		EB_LOG_NOTICE("node", "start-canceled: step=%s", s->name);
		begin_stop(n);
		return;
	}
	if (status != 0) {
		start_failed(n, s, status);
		return;
	}
	EB_LOG_DEBUG("node", "started: step=%s", s->name);
	n->started++;
	start_next(n);
}

static void
start_next(eb_node *n)
{
	const struct node_step *s;
	int                     rv;

	if (n->stop_requested) {
		begin_stop(n);
		return;
	}
	if (n->started == NODE_NSTEPS) {
		n->phase = EB__NODE_RUNNING;
		print_ready(n);
		return;
	}
	s = &node_steps[n->started];
	n->step_busy = true;
	if ((rv = s->start(n, start_done_cb)) != 0) {
		n->step_busy = false;
		start_failed(n, s, rv);
	}
}

static void
start_first(void *arg)
{
	eb_node *n = arg;

	n->phase = EB__NODE_STARTING;
	start_next(n);
}

static void
handle_closed_cb(uv_handle_t *h)
{
	eb_node *n = h->data;

	n->open_handles--;
}

static void
defer_closed_cb(eb__deferq *q)
{
	eb_node *n = EB_CONTAINER_OF(q, eb_node, defer);

	n->open_handles--;
	n->phase = EB__NODE_DONE;
}

/* Every subsystem is down: close the node's own handles; the loop ends. */
static void
close_own_handles(eb_node *n)
{
	EB_LOG_NOTICE("node", "stopped: exit_code=%d", n->exit_code);
	uv_close((uv_handle_t *) &n->sigterm, handle_closed_cb);
	uv_close((uv_handle_t *) &n->sigint, handle_closed_cb);
	uv_close((uv_handle_t *) &n->stop_timer, handle_closed_cb);
	eb__deferq_close(&n->defer, defer_closed_cb);
}

static void
stop_done_cb(eb_node *n, int status)
{
	n->step_busy = false;
	if (status != 0) {
		EB_LOG_WARN("node", "stop-failed: step=%s err=%s",
		    node_steps[n->started].name, eb_err_name(status));
	}
	stop_next(n);
}

static void
stop_next(eb_node *n)
{
	if (n->started == 0) {
		close_own_handles(n);
		return;
	}
	n->started--;
	n->step_busy = true;
	EB_LOG_DEBUG("node", "stopping: step=%s", node_steps[n->started].name);
	node_steps[n->started].stop(n, stop_done_cb);
}

/* Leaves without a graceful stop: main exits with 1 at once. */
static void
force_exit(eb_node *n)
{
	n->exit_code = EB_NODE_EXIT_FATAL;
	n->forced = true;
	uv_stop(n->loop);
}

static void
stop_timer_cb(uv_timer_t *t)
{
	eb_node *n = t->data;

	EB_LOG_ERR("node", "stop-timeout: after_ms=%d step=%s",
	    NODE_STOP_TIMEOUT_MS, node_steps[n->started].name);
	force_exit(n);
}

/* Starts the reverse walk, unless a start step is still in flight. */
static void
begin_stop(eb_node *n)
{
	n->stop_requested = true;
	if (n->phase == EB__NODE_STARTING && n->step_busy &&
	    node_steps[n->started].cancel != NULL) {
		/* Prompt stop in every phase of start: the step completes
		 * (canceled) and start_done_cb calls us again. */
		node_steps[n->started].cancel(n);
		return;
	}
	if (n->phase == EB__NODE_STOPPING || n->phase == EB__NODE_DONE ||
	    n->step_busy) {
		return; /* in progress, or start_done_cb will call us */
	}
	n->phase = EB__NODE_STOPPING;
	EB_LOG_NOTICE("node", "stopping: started_steps=%u", n->started);
	(void) uv_timer_start(
	    &n->stop_timer, stop_timer_cb, NODE_STOP_TIMEOUT_MS, 0);
	uv_unref((uv_handle_t *) &n->stop_timer);
	stop_next(n);
}

void
eb__node_shutdown(eb_node *n)
{
	begin_stop(n);
}

void
eb__node_fail(eb_node *n, int err)
{
	EB_LOG_ERR(
	    "node", "fatal: err=%s (%s)", eb_err_name(err), eb_strerror(err));
	if (n->exit_code == EB_NODE_EXIT_OK) {
		n->exit_code = exit_code(err);
	}
	begin_stop(n);
}

static void
signal_cb(uv_signal_t *h, int signum)
{
	eb_node *n = h->data;

	n->signals++;
	if (n->signals > 1) {
		/* The operator insists: leave without a graceful stop. */
		EB_LOG_WARN("node", "forced-exit: signal=%d", signum);
		force_exit(n);
		return;
	}
	EB_LOG_NOTICE("node", "stop-requested: signal=%s",
	    signum == SIGTERM ? "SIGTERM" : "SIGINT");
	begin_stop(n);
}

int
eb__node_run(eb_node *n)
{
	struct sigaction sa;
	int              rv;

	/* Writes to a closed socket must fail with EPIPE, not kill us. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	(void) sigemptyset(&sa.sa_mask);
	(void) sigaction(SIGPIPE, &sa, NULL);
	eb_log_set_level((eb_log_level) n->conf->log.level);
	n->start_ms = eb__mono_ms();

	if ((rv = eb__deferq_init(n->loop, &n->defer)) != 0) {
		EB_LOG_ERR("node", "init-failed: err=%s", eb_err_name(rv));
		return EB_NODE_EXIT_FATAL;
	}
	n->open_handles = 4;
	(void) uv_signal_init(n->loop, &n->sigterm);
	(void) uv_signal_init(n->loop, &n->sigint);
	(void) uv_timer_init(n->loop, &n->stop_timer);
	n->sigterm.data = n;
	n->sigint.data = n;
	n->stop_timer.data = n;
	(void) uv_signal_start(&n->sigterm, signal_cb, SIGTERM);
	(void) uv_signal_start(&n->sigint, signal_cb, SIGINT);

	EB_LOG_INFO("node",
	    "starting: version=%s node=%s address=%s zookeeper=%s",
	    EB_VERSION_STRING, n->conf->cluster.node_id,
	    n->conf->cluster.address,
	    n->conf->cluster.connect[0] != '\0' ? n->conf->cluster.connect
	                                        : "-");
	eb__defer(&n->defer, start_first, n);
	(void) uv_run(n->loop, UV_RUN_DEFAULT);
	if (!n->forced && n->open_handles != 0) {
		EB_LOG_ERR("node", "loop-ended-early: open_handles=%d",
		    n->open_handles);
		return EB_NODE_EXIT_FATAL;
	}
	return n->exit_code;
}
