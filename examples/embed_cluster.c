/*
 * Embedding a clustered event bus: two nodes in one process, built from
 * the public headers alone. Each node is an eb_bus, an eb_link_mgr attached
 * to it (eb_bus_cluster_attach) and an eb_cluster whose members observer
 * feeds the links (eb_link_mgr_set_peers) and whose leadership observer
 * raises the bus fence (eb_bus_fence_raise). Node A serves "greeter"; node
 * B sends it requests until one is answered over the node link, then the
 * program prints the leader and leaves the cluster.
 *
 *   embed_cluster <zookeeper connect string>
 *
 * Exits 0 on success, 1 on any failure or after 30 s.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>
#include <uv.h>

#include <ebnode/bus.h>
#include <ebnode/cluster.h>
#include <ebnode/link.h>

#define NODES 2

struct node {
	struct app  *app;
	const char  *id;
	char         address[64];
	eb_bus      *bus;
	eb_link_mgr *links;
	eb_cluster  *cluster;
	int          started;
};

struct app {
	uv_loop_t        loop;
	uv_timer_t       tick;  /* retries and progress */
	uv_timer_t       limit; /* the whole run */
	struct node      nodes[NODES];
	eb_bus_consumer *greeter;
	int              started;
	int              replied;
	int              in_flight;
	int              done;
	int              failed;
};

/* ---- the cluster feeds the bus ---- */

static void
members_cb(eb_cluster *c, const eb_cluster_member *ms, size_t n, void *arg)
{
	struct node *node = arg;
	eb_link_peer peers[16];
	size_t       i;

	(void) c;
	for (i = 0; i < n && i < 16; i++) {
		peers[i].node_id = ms[i].node_id;
		peers[i].host = ms[i].host;
		peers[i].port = ms[i].cluster_port;
	}
	(void) eb_link_mgr_set_peers(node->links, peers, i);
}

static void
leadership_cb(eb_cluster *c, const eb_cluster_leadership *l, void *arg)
{
	struct node *node = arg;

	(void) c;
	/* Messages stamped by a superseded leader are refused from now on. */
	if (l->leader && l->epoch > 0) {
		eb_bus_fence_raise(node->bus, (uint64_t) l->epoch);
	}
	if (l->leader_epoch > 0) {
		eb_bus_fence_raise(node->bus, (uint64_t) l->leader_epoch);
	}
}

/* ---- the request/reply ---- */

static void
greeter_fn(eb_bus_consumer *c, eb_bus_msg *msg, void *arg)
{
	const json_t *name = json_object_get(eb_bus_msg_body(msg), "name");
	json_t       *reply;

	(void) c;
	(void) arg;
	reply = json_pack("{s:s+}", "greeting", "hello ",
	    json_is_string(name) ? json_string_value(name) : "?");
	(void) eb_bus_msg_reply(msg, reply, NULL, NULL, NULL, NULL);
	json_decref(reply);
}

static void
reply_cb(eb_bus *bus, int status, eb_bus_msg *reply,
    const eb_bus_failure *failure, void *arg)
{
	struct app   *app = arg;
	const json_t *g;

	(void) bus;
	(void) failure;
	app->in_flight = 0;
	if (status != 0) {
		return; /* not linked yet: the tick sends again */
	}
	g = json_object_get(eb_bus_msg_body(reply), "greeting");
	if (!json_is_string(g) ||
	    strcmp(json_string_value(g), "hello b") != 0) {
		(void) fprintf(stderr, "unexpected reply: %s\n",
		    eb_bus_msg_body_bytes(reply, NULL));
		app->failed = 1;
		return;
	}
	(void) printf("reply over the node link: %s\n",
	    eb_bus_msg_body_bytes(reply, NULL));
	app->replied = 1;
}

/* ---- shutdown ---- */

static void
cluster_closed_cb(eb_cluster *c, void *arg)
{
	(void) c;
	(void) arg;
}

static void
cluster_stopped_cb(eb_cluster *c, void *arg)
{
	struct node *node = arg;

	eb_cluster_close(c, cluster_closed_cb, NULL);
	eb_link_mgr_close(node->links, NULL, NULL);
	eb_bus_close(node->bus, NULL, NULL);
}

static void
shutdown_all(struct app *app)
{
	int i;

	if (app->done) {
		return;
	}
	app->done = 1;
	uv_close((uv_handle_t *) &app->tick, NULL);
	uv_close((uv_handle_t *) &app->limit, NULL);
	if (app->greeter != NULL) {
		eb_bus_consumer_close(app->greeter);
	}
	for (i = 0; i < NODES; i++) {
		struct node *node = &app->nodes[i];

		if (node->started) {
			/* Leave: a leader hands over at once. */
			eb_cluster_stop(
			    node->cluster, cluster_stopped_cb, node);
			continue;
		}
		if (node->cluster != NULL) {
			eb_cluster_close(
			    node->cluster, cluster_closed_cb, NULL);
		}
		if (node->links != NULL) {
			eb_link_mgr_close(node->links, NULL, NULL);
		}
		if (node->bus != NULL) {
			eb_bus_close(node->bus, NULL, NULL);
		}
	}
}

static void
limit_cb(uv_timer_t *t)
{
	struct app *app = t->data;

	(void) fprintf(stderr, "embed_cluster: no reply within the limit\n");
	app->failed = 1;
	shutdown_all(app);
}

static void
tick_cb(uv_timer_t *t)
{
	struct app           *app = t->data;
	eb_cluster_leadership l;
	eb_bus_send_opts      so;
	json_t               *body;

	if (app->failed) {
		shutdown_all(app);
		return;
	}
	if (app->started < NODES) {
		return;
	}
	if (!app->replied) {
		if (!app->in_flight) {
			body = json_pack("{s:s}", "name", "b");
			eb_bus_send_opts_init(&so);
			so.timeout_ms = 1000;
			app->in_flight = 1;
			if (eb_bus_request(app->nodes[1].bus, "greeter", body,
			        NULL, &so, reply_cb, app) != 0) {
				app->in_flight = 0;
			}
			json_decref(body);
		}
		return;
	}
	eb_cluster_leadership_get(app->nodes[0].cluster, &l);
	if (!l.known) {
		return; /* the leader record is on its way */
	}
	(void) printf("leader: %s (epoch %lld)\n", l.leader_node_id,
	    (long long) l.leader_epoch);
	shutdown_all(app);
}

static void
started_cb(eb_cluster *c, int status, void *arg)
{
	struct node *node = arg;

	(void) c;
	if (status != 0) {
		(void) fprintf(stderr, "%s: cluster start: %s\n", node->id,
		    eb_strerror(status));
		node->app->failed = 1;
		return;
	}
	node->started = 1;
	node->app->started++;
	(void) printf("%s: member of the cluster\n", node->id);
}

static int
node_new(
    struct app *app, struct node *node, const char *connect, const char *root)
{
	eb_bus_opts     bo;
	eb_link_opts    lo;
	eb_cluster_opts co;
	eb_errbuf       err;
	int             rv;

	node->app = app;
	eb_bus_opts_init(&bo);
	bo.node_id = node->id;
	if ((rv = eb_bus_new(&app->loop, &bo, &node->bus)) != 0) {
		node->bus = NULL;
		return rv;
	}
	eb_link_opts_init(&lo);
	lo.node_id = node->id;
	lo.port = 0; /* any free port */
	if ((rv = eb_link_mgr_new(&app->loop, &lo, &node->links, &err)) != 0) {
		node->links = NULL;
		return rv;
	}
	if ((rv = eb_bus_cluster_attach(node->bus, node->links)) != 0 ||
	    (rv = eb_link_mgr_start(node->links)) != 0) {
		return rv;
	}
	(void) snprintf(node->address, sizeof(node->address), "127.0.0.1:%d",
	    eb_link_mgr_port(node->links));
	eb_cluster_opts_init(&co);
	co.connect = connect;
	co.root = root;
	co.node_id = node->id;
	co.address = node->address;
	co.cluster_port = eb_link_mgr_port(node->links);
	co.version = "embed_cluster";
	if ((rv = eb_cluster_new(&app->loop, &co, &node->cluster, &err)) != 0) {
		node->cluster = NULL;
		(void) fprintf(stderr, "eb_cluster_new: %s\n", err.msg);
		return rv;
	}
	eb_cluster_on_members(node->cluster, members_cb, node);
	eb_cluster_on_leadership(node->cluster, leadership_cb, node);
	if ((rv = eb_cluster_start(node->cluster, started_cb, node)) != 0) {
		/* Failed and closed quietly: only its close remains. */
		return rv;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static struct app app;
	char              root[128];
	int               i;
	int               rv;

	if (argc != 2 || argv[1][0] == '\0') {
		(void) fprintf(stderr, "usage: embed_cluster <zk-connect>\n");
		return 1;
	}
	(void) uv_loop_init(&app.loop);
	/* A fresh cluster root for this run. */
	(void) snprintf(root, sizeof(root), "/ebnode-example/%lld-%lu",
	    (long long) uv_os_getpid(), (unsigned long) uv_hrtime());
	app.nodes[0].id = "a";
	app.nodes[1].id = "b";
	(void) uv_timer_init(&app.loop, &app.tick);
	(void) uv_timer_init(&app.loop, &app.limit);
	app.tick.data = &app;
	app.limit.data = &app;
	(void) uv_timer_start(&app.tick, tick_cb, 100, 100);
	(void) uv_timer_start(&app.limit, limit_cb, 30000, 0);
	for (i = 0; i < NODES; i++) {
		if ((rv = node_new(&app, &app.nodes[i], argv[1], root)) != 0) {
			(void) fprintf(stderr, "%s: %s\n", app.nodes[i].id,
			    eb_strerror(rv));
			app.failed = 1;
		}
	}
	if (app.nodes[0].bus != NULL) {
		(void) eb_bus_consumer_new(app.nodes[0].bus, "greeter", 0,
		    greeter_fn, &app, &app.greeter);
	}
	(void) uv_run(&app.loop, UV_RUN_DEFAULT);
	rv = uv_loop_close(&app.loop);
	if (rv != 0) {
		(void) fprintf(stderr, "embed_cluster: loop not empty\n");
	}
	return rv == 0 && app.replied && !app.failed ? 0 : 1;
}
