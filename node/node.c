/*
 * The node's lifecycle (node_int.h, docs/NODE.md): its step table walked
 * by eb__steps (common/steps.h) in both directions, the READY line, the
 * signals, the bounded stop and the exit code. After the last stop the
 * node's own handles close and the loop ends by itself. Loop thread only.
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

/* In start order (docs/NODE.md says why); cancel cuts a start in flight
 * short when a stop is requested. */
static const eb__step node_steps[] = {
	{ "bus", eb__node_bus_start, eb__node_bus_stop, NULL },
	{ "ingress", eb__node_ingress_start, eb__node_ingress_stop, NULL },
	{ "bridge", eb__node_bridge_start, eb__node_bridge_stop, NULL },
	{ "admin", eb__node_admin_start, eb__node_admin_stop, NULL },
	{ "cluster", eb__node_cluster_start, eb__node_cluster_stop,
	    eb__node_cluster_cancel_start },
};

static int
exit_code(int err)
{
	return err == 0             ? EB_NODE_EXIT_OK
	       : err == EB_EDUPADDR ? EB_NODE_EXIT_DUPADDR
	                            : EB_NODE_EXIT_FATAL;
}

static void
print_ready(eb__node *n)
{
	const eb__conf *c = n->conf;
	char            admin[300], bridge[300], cluster[300];

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
steps_up(eb__steps *s)
{
	print_ready(EB__NODE(s));
}

static void
steps_failed(eb__steps *s, const eb__step *step, int err)
{
	(void) step;
	EB__NODE(s)->exit_code = exit_code(err);
}

static void
start_first(void *arg)
{
	eb__steps_start(&((eb__node *) arg)->steps);
}

static void
handle_closed_cb(uv_handle_t *h)
{
	eb__node *n = h->data;

	n->open_handles--;
}

static void
defer_closed_cb(eb__deferq *q)
{
	eb__node *n = EB_CONTAINER_OF(q, eb__node, defer);

	n->open_handles--;
}

/* Every subsystem is down: close the node's own handles; the loop ends. */
static void
steps_down(eb__steps *s)
{
	eb__node *n = EB__NODE(s);

	EB_LOG_NOTICE("node", "stopped: exit_code=%d", n->exit_code);
	uv_close((uv_handle_t *) &n->sigterm, handle_closed_cb);
	uv_close((uv_handle_t *) &n->sigint, handle_closed_cb);
	uv_close((uv_handle_t *) &n->stop_timer, handle_closed_cb);
	eb__deferq_close(&n->defer, defer_closed_cb);
}

/* Leaves without a graceful stop: main exits with 1 at once. */
static void
force_exit(eb__node *n)
{
	n->exit_code = EB_NODE_EXIT_FATAL;
	n->forced = true;
	uv_stop(n->loop);
}

static void
stop_timer_cb(uv_timer_t *t)
{
	eb__node *n = t->data;

	EB_LOG_ERR("node", "stop-timeout: after_ms=%d step=%s",
	    NODE_STOP_TIMEOUT_MS, eb__steps_current(&n->steps));
	force_exit(n);
}

/* The walk back begins: bounded. */
static void
steps_stopping(eb__steps *s)
{
	eb__node *n = EB__NODE(s);

	(void) uv_timer_start(
	    &n->stop_timer, stop_timer_cb, NODE_STOP_TIMEOUT_MS, 0);
	uv_unref((uv_handle_t *) &n->stop_timer);
}

static const eb__steps_cbs node_steps_cbs = { steps_up, steps_failed,
	steps_stopping, steps_down };

int
eb__node_new(uv_loop_t *loop, const eb__conf *conf, eb__node **np)
{
	eb__node *n = eb__calloc(1, sizeof(*n));

	n->loop = loop;
	n->conf = conf;
	n->steps.table = node_steps;
	n->steps.count = sizeof(node_steps) / sizeof(node_steps[0]);
	n->steps.cbs = &node_steps_cbs;
	n->steps.defer = &n->defer;
	n->steps.log = "node";
	eb__node_cluster_opts(conf, &n->cluster.self);
	*np = n;
	return 0;
}

void
eb__node_free(eb__node *n)
{
	eb__conf_dyn_free(n->config);
	free(n);
}

void
eb__node_shutdown(eb__node *n)
{
	eb__steps_stop(&n->steps);
}

void
eb__node_fail(eb__node *n, int err)
{
	EB_LOG_ERR(
	    "node", "fatal: err=%s (%s)", eb_err_name(err), eb_strerror(err));
	if (n->exit_code == EB_NODE_EXIT_OK) {
		n->exit_code = exit_code(err);
	}
	eb__steps_stop(&n->steps);
}

static void
signal_cb(uv_signal_t *h, int signum)
{
	eb__node *n = h->data;

	n->signals++;
	if (n->signals > 1) {
		/* The operator insists: leave without a graceful stop. */
		EB_LOG_WARN("node", "forced-exit: signal=%d", signum);
		force_exit(n);
		return;
	}
	EB_LOG_NOTICE("node", "stop-requested: signal=%s",
	    signum == SIGTERM ? "SIGTERM" : "SIGINT");
	eb__steps_stop(&n->steps);
}

int
eb__node_run(eb__node *n)
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
