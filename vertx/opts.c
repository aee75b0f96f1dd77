/*
 * The defaults of eb_vertx_opts (include/ebnode/vertx.h). Plain data; any
 * thread.
 */
#include <string.h>

#include <ebnode/vertx.h>

void
eb_vertx_opts_init(eb_vertx_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->root = EB_VERTX_ROOT;
	opts->cluster_host = "127.0.0.1";
	opts->cluster_port = 0;
	opts->node_id = NULL;
	opts->max_frame_bytes = EB_VERTX_MAX_FRAME;
	opts->write_queue_bytes = EB_VERTX_WRITE_QUEUE_BYTES;
	opts->connect_timeout_ms = EB_VERTX_CONNECT_MS;
	opts->ping_interval_ms = EB_VERTX_PING_MS;
	opts->ping_timeout_ms = EB_VERTX_PING_MS;
	opts->drain_ms = EB_VERTX_DRAIN_MS;
	opts->engine_root = NULL;
	opts->engine_address = NULL;
	opts->engine_ingress = EB_VERTX_ENGINE_INGRESS;
}
