/*
 * ebnode: the daemon's entry point. Parses the command line (conf/cli.h),
 * loads the configuration (defaults < file < EBNODE_* environment < --set
 * flags) and runs the node on one libuv loop. The only place that calls
 * exit().
 *
 * Exit codes: 0 ok; 1 other fatal error; 2 usage or configuration error
 * (one line on stderr: the configuration error text); 3 the node address is
 * already registered in the cluster.
 */
#include <stdio.h>
#include <stdlib.h>

#include <uv.h>

#include <ebnode/eb.h>

#include "conf/cli.h"
#include "conf/conf.h"
#include "node/node_int.h"

static int
run_loop(const eb__conf *conf, const eb__conf_sources *src)
{
	uv_loop_t loop;
	eb__node *n = NULL;
	int       rv, code;

	if ((rv = uv_loop_init(&loop)) != 0) {
		(void) fprintf(
		    stderr, "ebnode: uv_loop_init: %s\n", uv_strerror(rv));
		return EB_NODE_EXIT_FATAL;
	}
	if ((rv = eb__node_new(&loop, conf, &n)) != 0) {
		(void) fprintf(stderr, "ebnode: %s\n", eb_strerror(rv));
		(void) uv_loop_close(&loop);
		return EB_NODE_EXIT_FATAL;
	}
	n->src = src; /* SIGHUP and the cluster configuration rebuild */
	code = eb__node_run(n);
	if (n->forced) {
		/* Handles are still open: leave without tearing them down. */
		(void) fflush(stdout);
		(void) fflush(stderr);
		_Exit(code);
	}
	eb__node_free(n);
	if (uv_loop_close(&loop) != 0) {
		(void) fprintf(stderr, "ebnode: handles left open at exit\n");
	}
	return code;
}

static int
run_node(const eb__conf *conf, const eb__conf_sources *src)
{
	int rv, code;

	/* The sink first, so that every line of the run goes where log.sink
	 * says; a journal that cannot be reached leaves stderr, said once. */
	if ((rv = eb_log_sink_open((eb_log_sink_kind) conf->log.sink,
	         conf->cluster.node_id, conf->log.journal_socket, NULL)) != 0) {
		char q[EB_LOG_QUOTE_MAX];

		EB_LOG_WARN("node",
		    "log-sink-unavailable: sink=journald "
		    "socket=%s err=%s fallback=stderr",
		    eb_log_quote(q, sizeof(q), conf->log.journal_socket),
		    eb_err_name(rv));
	}
	code = run_loop(conf, src);
	eb_log_sink_close();
	return code;
}

int
main(int argc, char **argv)
{
	eb__conf_cli c;
	eb__conf    *conf = NULL;
	int          code = eb__conf_cli_prepare(argc, argv, &c, &conf);

	if (code < 0) {
		code = run_node(conf, &c.src);
	}
	eb__conf_cli_free(&c); /* after the run: the node re-reads c.src */
	eb__conf_free(conf);
	exit(code);
}
