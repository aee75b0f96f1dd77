/*
 * ebnode's command line (cli.h). "--opt=value" and "--opt value" are both
 * accepted for options with a value; anything unknown is a usage error.
 */
#include "conf/cli.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <ebnode/version.h>

#include "common/alloc.h"

extern char **environ;

static const char usage_text[] =
    "Usage: ebnode [options]\n"
    "\n"
    "A clustered event-bus node: Vert.x TCP event-bus bridge, ZooKeeper\n"
    "membership and leader election, leader-routed ingress.\n"
    "\n"
    "Options:\n"
    "  -c, --config FILE     configuration file (JSON with comments; also\n"
    "                        $EBNODE_CONFIG), see docs/CONFIG.md\n"
    "  -s, --set KEY=VALUE   override one key, e.g. --set bridge.port=7001\n"
    "                        (repeatable; arrays and objects as JSON)\n"
    "      --check           validate the configuration, print \"config "
    "ok\"\n"
    "      --print-config    print the effective configuration as JSON\n"
    "  -h, --help            show this help and exit\n"
    "  -V, --version         show the version and exit\n"
    "\n"
    "Every key can also be set with an environment variable EBNODE_<KEY>,\n"
    "dots as underscores: EBNODE_BRIDGE_PORT=7001. Precedence: defaults <\n"
    "file < environment < --set.\n"
    "\n"
    "Exit codes: 0 ok, 1 fatal error, 2 usage or configuration error,\n"
    "3 node address already registered in the cluster.\n";

static void
cli_usage(FILE *out)
{
	(void) fputs(usage_text, out);
}

/* The option's value: the rest of "--opt=value", or the next argument.
 * NULL if there is none. */
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

int
eb__conf_cli_parse(int argc, char **argv, eb__conf_cli *c)
{
	const char **sets = eb__calloc((size_t) argc + 1, sizeof(*sets));
	int          i;

	memset(c, 0, sizeof(*c));
	c->sets = sets;
	c->src.sets = sets;
	c->src.env = (const char *const *) environ;
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
				return -1;
			}
			if (a[1] == 'c' || strncmp(a, "--config", 8) == 0) {
				c->src.file = v;
			} else {
				sets[c->src.n_sets++] = v;
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
			return -1;
		}
	}
	if (c->src.file == NULL) {
		c->src.file = getenv("EBNODE_CONFIG");
		if (c->src.file != NULL && c->src.file[0] == '\0') {
			c->src.file = NULL;
		}
	}
	return 0;
}

void
eb__conf_cli_free(eb__conf_cli *c)
{
	free(c->sets);
	c->sets = NULL;
	c->src.sets = NULL;
}

static int
cli_print(const eb__conf *conf)
{
	json_t *j = eb__conf_to_json(conf, false);
	char   *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

	json_decref(j);
	if (s == NULL) {
		return -1;
	}
	(void) printf("%s\n", s);
	free(s);
	return 0;
}

int
eb__conf_cli_prepare(int argc, char **argv, eb__conf_cli *c, eb__conf **conf)
{
	eb_errbuf err;

	*conf = NULL;
	if (eb__conf_cli_parse(argc, argv, c) != 0) {
		return 2;
	}
	if (c->help) {
		cli_usage(stdout);
		return 0;
	}
	if (c->version) {
		/* The highest link protocol, then the range spoken
		 * (docs/UPGRADING.md). */
		(void) printf("ebnode %s (link protocol %d, speaks %d..%d)\n",
		    EB_VERSION_STRING, EB_LINK_PROTOCOL_VERSION,
		    EB_LINK_PROTOCOL_MIN, EB_LINK_PROTOCOL_VERSION);
		return 0;
	}
	err.msg[0] = '\0';
	if (eb__conf_load(&c->src, conf, &err) != 0) {
		(void) fprintf(stderr, "%s\n", err.msg);
		return 2;
	}
	if (c->check) {
		(void) printf("config ok\n");
		return 0;
	}
	if (c->print_config) {
		return cli_print(*conf) == 0 ? 0 : 1;
	}
	return -1;
}
