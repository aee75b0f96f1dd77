/*
 * ebnode as a member of a Vert.x 4.5 cluster (issue 26, docs/VERTX.md): the
 * options of the `vertx` configuration section. Like bridge.h this header
 * describes a part that lives only inside the daemon; it is not installed
 * with libebnode.
 *
 * Ownership: the strings are borrowed by whoever the opts are handed to;
 * conf/ owns the ones it loads. Any thread (plain data).
 */
#ifndef EBNODE_VERTX_H
#define EBNODE_VERTX_H

#include <stddef.h>
#include <stdint.h>

#include <ebnode/api.h>

/* Defaults (docs/CONFIG.md "vertx"). */
#define EB_VERTX_ROOT              "io.vertx"
#define EB_VERTX_MAX_FRAME         (16u * 1024 * 1024)
#define EB_VERTX_WRITE_QUEUE_BYTES ((size_t) 16 * 1024 * 1024)
#define EB_VERTX_CONNECT_MS        5000u
#define EB_VERTX_PING_MS           20000u
#define EB_VERTX_DRAIN_MS          500u
#define EB_VERTX_ENGINE_INGRESS    "EXTERNAL_EVENT_INGRESS"

typedef struct eb_vertx_opts {
	/* ZooKeeper namespace of the Vert.x cluster (vertx-zookeeper's
	 * rootPath), without a leading '/': "io.vertx". */
	const char *root;
	/* Address the cluster server listens on and advertises in NodeInfo
	 * (a numeric IP: the JVMs connect to it). */
	const char *cluster_host;
	int cluster_port; /* 0: any free port, the bound one advertised */
	/* The Vert.x node id; NULL: the module draws a random UUID when it
	 * starts (what Java does). Never holds '/'. */
	const char *node_id;
	uint32_t    max_frame_bytes;   /* largest cluster frame accepted */
	size_t      write_queue_bytes; /* per peer; beyond: closed, failed */
	uint32_t    connect_timeout_ms;
	uint32_t    ping_interval_ms; /* 0: no pings */
	uint32_t    ping_timeout_ms;
	uint32_t    drain_ms; /* graceful leave: subs gone, still serving */
	/* The Java engine's election (docs/VERTX.md section 7): its root
	 * under `root` ("/engine"; NULL: not a participant), this node's
	 * engine address (NULL: node.address) and the ingress address the
	 * leader consumes. */
	const char *engine_root;
	const char *engine_address;
	const char *engine_ingress;
	/* The ebnode cluster this node belongs to (its ZooKeeper root;
	 * NULL: none), announced in NodeInfo metadata. The Vert.x nodes
	 * that announce the same one are this node's ebnode peers, reached
	 * over ebnode's own links: their registrations are not routed to
	 * over Vert.x (docs/VERTX.md section 6). */
	const char *ebnode_cluster;
} eb_vertx_opts;

/* Fills the defaults above (root EB_VERTX_ROOT, host 127.0.0.1, port 0,
 * no node id). */
EB_API void eb_vertx_opts_init(eb_vertx_opts *opts);

#endif
