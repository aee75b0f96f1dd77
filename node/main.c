/*
 * ebnode: the daemon's entry point. Parses the command line, loads the
 * configuration (defaults < file < EBNODE_* environment < --set flags) and
 * runs the node on one libuv loop. The only place that calls exit().
 *
 * Exit codes: 0 ok; 1 other fatal error; 2 usage or configuration error
 * (one line on stderr: the configuration error text); 3 the node address is
 * already registered in the cluster.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <uv.h>

#include <ebnode/eb.h>

#include "common/alloc.h"
#include "conf/conf.h"
#include "node/node_int.h"

extern char **environ;

typedef struct cli {
	const char  *config; /* -c FILE, else $EBNODE_CONFIG, else none */
	const char **sets;   /* -s KEY=VALUE, in order (owned array) */
	size_t       n_sets;
	bool         check;
	bool         print_config;
	bool         help;
	bool         version;
} cli;

static void
usage(FILE *out)
{
	(void) fprintf(out,
	    "Usage: ebnode [options]\n"
	    "\n"
	    "A clustered event-bus node: Vert.x TCP event-bus bridge, "
	    "ZooKeeper\n"
	    "membership and leader election, leader-routed ingress.\n"
	    "\n"
	    "Options:\n"
	    "  -c, --config FILE     configuration file (JSON with comments; "
	    "also\n"
	    "                        $EBNODE_CONFIG), see docs/CONFIG.md\n"
	    "  -s, --set KEY=VALUE   override one key, e.g. --set "
	    "bridge.port=7001\n"
	    "                        (repeatable; arrays and objects as "
	    "JSON)\n"
	    "      --check           validate the configuration, print "
	    "\"config ok\"\n"
	    "      --print-config    print the effective configuration as "
	    "JSON\n"
	    "  -h, --help            show this help and exit\n"
	    "  -V, --version         show the version and exit\n"
	    "\n"
	    "Every key can also be set with an environment variable "
	    "EBNODE_<KEY>,\n"
	    "dots as underscores: EBNODE_BRIDGE_PORT=7001. Precedence: "
	    "defaults <\n"
	    "file < environment < --set.\n"
	    "\n"
	    "Exit codes: 0 ok, 1 fatal error, 2 usage or configuration "
	    "error,\n"
	    "3 node address already registered in the cluster.\n");
}

/*
 * Returns the option's value: the rest of "--opt=value", or the next
 * argument. NULL if there is none.
 */
static const char *
opt_value(int argc, char **argv, int *i, const char *arg, size_t optlen)
{
	if (arg[optlen] == '=') {
		return arg + optlen + 1;
	}
	if (*i + 1 < argc) {
		return argv[++*i];
	}
	return NULL;
}

static bool
is_opt(const char *arg, const char *s, const char *l, size_t *optlen)
{
	size_t n = strlen(l);

	if (s != NULL && strcmp(arg, s) == 0) {
		*optlen = strlen(s);
		return true;
	}
	if (strncmp(arg, l, n) == 0 && (arg[n] == '\0' || arg[n] == '=')) {
		*optlen = n;
		return true;
	}
	return false;
}

/* 0, or 2 after printing one usage line to stderr. */
static int
parse_args(int argc, char **argv, cli *c)
{
	int i;

	memset(c, 0, sizeof(*c));
	c->sets = eb__calloc((size_t) argc + 1, sizeof(*c->sets));
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		size_t      ol = 0;

		if (is_opt(a, "-c", "--config", &ol) ||
		    is_opt(a, "-s", "--set", &ol)) {
			if ((v = opt_value(argc, argv, &i, a, ol)) == NULL) {
				(void) fprintf(stderr,
				    "ebnode: option %s needs a value (see "
				    "--help)\n",
				    a);
				return EB_NODE_EXIT_USAGE;
			}
			if (a[1] == 'c' || strncmp(a, "--config", 8) == 0) {
				c->config = v;
			} else {
				c->sets[c->n_sets++] = v;
			}
		} else if (strcmp(a, "--check") == 0) {
			c->check = true;
		} else if (strcmp(a, "--print-config") == 0) {
			c->print_config = true;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			c->help = true;
		} else if (strcmp(a, "-V") == 0 ||
		           strcmp(a, "--version") == 0) {
			c->version = true;
		} else {
			(void) fprintf(stderr,
			    "ebnode: unknown argument: %s (see --help)\n", a);
			return EB_NODE_EXIT_USAGE;
		}
	}
	if (c->config == NULL) {
		c->config = getenv("EBNODE_CONFIG");
		if (c->config != NULL && c->config[0] == '\0') {
			c->config = NULL;
		}
	}
	return 0;
}

static int
print_config(const eb_conf *conf)
{
	json_t *j = eb_conf_to_json(conf, false);
	char   *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

	json_decref(j);
	if (s == NULL) {
		return EB_NODE_EXIT_FATAL;
	}
	(void) printf("%s\n", s);
	free(s);
	return EB_NODE_EXIT_OK;
}

static int run_loop(const eb_conf *conf, const eb_conf_sources *src);

static int
run_node(const eb_conf *conf, const eb_conf_sources *src)
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

static int
run_loop(const eb_conf *conf, const eb_conf_sources *src)
{
	uv_loop_t loop;
	eb_node  *n = NULL;
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

int
main(int argc, char **argv)
{
	cli             c;
	eb_conf_sources src;
	eb_conf        *conf = NULL;
	eb_errbuf       err;
	int             code;

	if ((code = parse_args(argc, argv, &c)) != 0) {
		free(c.sets);
		exit(code);
	}
	if (c.help || c.version) {
		if (c.help) {
			usage(stdout);
		} else {
			(void) printf("ebnode %s (link protocol %d)\n",
			    EB_VERSION_STRING, EB_LINK_PROTOCOL_VERSION);
		}
		free(c.sets);
		exit(EB_NODE_EXIT_OK);
	}
	memset(&src, 0, sizeof(src));
	src.file = c.config;
	src.env = (const char *const *) environ;
	src.sets = c.sets;
	src.n_sets = c.n_sets;
	err.msg[0] = '\0';
	if (eb_conf_load(&src, &conf, &err) != 0) {
		(void) fprintf(stderr, "%s\n", err.msg);
		free(c.sets);
		exit(EB_NODE_EXIT_USAGE);
	}
	if (c.check) {
		(void) printf("config ok\n");
		code = EB_NODE_EXIT_OK;
	} else if (c.print_config) {
		code = print_config(conf);
	} else {
		code = run_node(conf, &src);
	}
	free(c.sets);
	eb_conf_free(conf);
	exit(code);
}
