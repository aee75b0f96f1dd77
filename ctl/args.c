/* ebctl command-line parsing; see ctl.h. Pure: no I/O besides getenv. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "ctl/ctl.h"

static const struct {
	const char *name;
	ctl_cmd     cmd;
	int         min_pos; /* positional arguments after the command */
	int         max_pos;
} g_cmds[] = {
	{ "send", CTL_SEND, 1, 2 },
	{ "publish", CTL_PUBLISH, 1, 2 },
	{ "request", CTL_REQUEST, 1, 2 },
	{ "listen", CTL_LISTEN, 1, 1 },
	{ "nodes", CTL_NODES, 0, 0 },
	{ "leader", CTL_LEADER, 0, 0 },
	{ "health", CTL_HEALTH, 0, 0 },
	{ "release", CTL_RELEASE, 0, 0 },
	{ "lock", CTL_LOCK, 1, 1 },
	{ "counter", CTL_COUNTER, 1, 4 },
	{ "id", CTL_ID, 0, 1 },
	{ "help", CTL_HELP, 0, 1 },
	{ "version", CTL_VERSION, 0, 0 },
};

#define NCMDS (sizeof(g_cmds) / sizeof(g_cmds[0]))

void
eb__ctl_usage(FILE *out)
{
	(void) fprintf(out,
	    "Usage: ebctl [options] COMMAND [arguments]\n"
	    "\n"
	    "Bridge commands (--bridge HOST:PORT, default %s):\n"
	    "  send ADDRESS [BODY]      point-to-point send (no reply)\n"
	    "  publish ADDRESS [BODY]   publish to every consumer\n"
	    "  request ADDRESS [BODY]   send and print the reply body\n"
	    "  listen ADDRESS           register and print messages\n"
	    "  lock NAME                take a cluster lock, print its token,\n"
	    "                           hold it until stdin closes, release\n"
	    "  counter NAME [get|increment|add N|cas EXPECT UPDATE|delete]\n"
	    "  id [COUNT]               cluster-unique ids\n"
	    "Admin commands (--admin HOST:PORT, default %s):\n"
	    "  nodes                    cluster members\n"
	    "  leader                   the current leader\n"
	    "  health                   node health (exit 1 if unhealthy)\n"
	    "  release                  ask the leader to step down\n"
	    "Cluster configuration (ZooKeeper; ebctl config --help):\n"
	    "  config get|set FILE|diff FILE|history|rollback VERSION\n"
	    "\n"
	    "BODY is JSON text ('{\"a\":1}', '\"a string\"', 42); '-' reads "
	    "it from stdin.\n"
	    "\n"
	    "Options:\n"
	    "  --bridge HOST:PORT   bridge endpoint (env EBCTL_BRIDGE)\n"
	    "  --admin HOST:PORT    admin endpoint (env EBCTL_ADMIN)\n"
	    "  --token T            admin bearer token (env EBCTL_TOKEN)\n"
	    "  -H, --header K=V     message header (repeatable)\n"
	    "  --timeout DUR        wait at most DUR (ms, or 500ms, 5s; "
	    "default 5s;\n"
	    "                       listen: stop after DUR, default never)\n"
	    "  -n, --count N        listen: exit after N messages\n"
	    "  --json               machine-readable output\n"
	    "  --raw                listen, request: each frame as the bytes "
	    "that came\n"
	    "  --tls                TLS to the bridge\n"
	    "  --ca FILE            CA certificates to verify the bridge "
	    "(implies --tls)\n"
	    "  --cert FILE --key FILE  client certificate\n"
	    "  --servername NAME    name to verify (default: the host)\n"
	    "  --insecure           TLS without verifying the bridge\n"
	    "  -h, --help           this help;  -V, --version\n"
	    "\n"
	    "Exit codes: 0 ok, 1 failure (connection, timeout, err frame, "
	    "HTTP error), 2 usage.\n",
	    CTL_DEFAULT_BRIDGE, CTL_DEFAULT_ADMIN);
}

const char *
eb__ctl_cmd_name(ctl_cmd cmd)
{
	size_t i;

	for (i = 0; i < NCMDS; i++) {
		if (g_cmds[i].cmd == cmd) {
			return g_cmds[i].name;
		}
	}
	return "?";
}

static int usage_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
usage_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void) vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return CTL_EXIT_USAGE;
}

int
eb__ctl_endpoint_parse(const char *s, ctl_endpoint *ep)
{
	const char *colon;
	const char *h = s;
	size_t      hl;
	int64_t     port;

	if (s == NULL) {
		return -1;
	}
	colon = strrchr(s, ':');
	if (colon == NULL) {
		return -1;
	}
	hl = (size_t) (colon - s);
	if (hl >= 2 && s[0] == '[' && s[hl - 1] == ']') {
		h = s + 1; /* [v6]:port */
		hl -= 2;
	} else if (memchr(s, ':', hl) != NULL) {
		return -1; /* a bare IPv6 address needs brackets */
	}
	if (hl >= CTL_HOST_MAX ||
	    eb__parse_i64(colon + 1, 1, 65535, &port) != 0) {
		return -1;
	}
	if (hl == 0) {
		(void) snprintf(ep->host, sizeof(ep->host), "127.0.0.1");
	} else {
		memcpy(ep->host, h, hl);
		ep->host[hl] = '\0';
	}
	ep->port = (int) port;
	return 0;
}

json_t *
eb__ctl_body_parse(const char *text, char *err, size_t errlen)
{
	json_error_t je;
	json_t      *j;

	j = json_loads(text, JSON_DECODE_ANY, &je);
	if (j == NULL) {
		(void) snprintf(err, errlen,
		    "body is not valid JSON (%s at column %d); quote text as "
		    "'\"text\"'",
		    je.text, je.column);
	}
	return j;
}

/* "250", "250ms", "5s" -> milliseconds in [1, 24 h]. */
static int
parse_duration_ms(const char *s, int *ms)
{
	char    buf[32];
	size_t  n = strlen(s);
	int64_t mult = 1;
	int64_t v;

	if (n == 0 || n >= sizeof(buf)) {
		return -1;
	}
	memcpy(buf, s, n + 1);
	if (n > 2 && strcmp(buf + n - 2, "ms") == 0) {
		buf[n - 2] = '\0';
	} else if (n > 1 && buf[n - 1] == 's') {
		buf[n - 1] = '\0';
		mult = 1000;
	}
	if (eb__parse_i64(buf, 1, 86400000 / mult, &v) != 0) {
		return -1;
	}
	*ms = (int) (v * mult);
	return 0;
}

static int
add_header(ctl_args *a, const char *kv, char *err, size_t errlen)
{
	const char *eq = strchr(kv, '=');
	char       *key;

	if (eq == NULL || eq == kv) {
		return usage_err(
		    err, errlen, "header must be KEY=VALUE: %s", kv);
	}
	key = strndup(kv, (size_t) (eq - kv));
	if (key == NULL) {
		return usage_err(err, errlen, "out of memory");
	}
	json_object_set_new(a->headers, key, json_string(eq + 1));
	free(key);
	return CTL_EXIT_OK;
}

/* Options that take a value. Returns 1 if name is one, after storing. */
static int
value_opt(ctl_args *a, const char *name, const char *val, char *err,
    size_t errlen, int *rv)
{
	int64_t n;

	*rv = CTL_EXIT_OK;
	if (strcmp(name, "--bridge") == 0 || strcmp(name, "--admin") == 0) {
		ctl_endpoint *ep = name[2] == 'b' ? &a->bridge : &a->admin;

		if (eb__ctl_endpoint_parse(val, ep) != 0) {
			*rv = usage_err(err, errlen,
			    "%s: expected HOST:PORT, got '%s'", name, val);
		}
	} else if (strcmp(name, "--token") == 0) {
		a->token = val;
	} else if (strcmp(name, "--ca") == 0) {
		a->ca = val;
		a->tls = 1;
	} else if (strcmp(name, "--cert") == 0) {
		a->cert = val;
		a->tls = 1;
	} else if (strcmp(name, "--key") == 0) {
		a->key = val;
		a->tls = 1;
	} else if (strcmp(name, "--servername") == 0) {
		a->servername = val;
	} else if (strcmp(name, "--timeout") == 0) {
		if (parse_duration_ms(val, &a->timeout_ms) != 0) {
			*rv = usage_err(err, errlen,
			    "--timeout: expected a duration like 500ms or 5s, "
			    "got '%s'",
			    val);
		}
		a->timeout_set = 1;
	} else if (strcmp(name, "-n") == 0 || strcmp(name, "--count") == 0) {
		if (eb__parse_i64(val, 1, INT64_MAX, &n) != 0) {
			*rv = usage_err(err, errlen,
			    "--count: expected a positive integer, got '%s'",
			    val);
		}
		a->count = (uint64_t) n;
	} else if (strcmp(name, "-H") == 0 || strcmp(name, "--header") == 0) {
		*rv = add_header(a, val, err, errlen);
	} else {
		return 0;
	}
	return 1;
}

static int
flag_opt(ctl_args *a, const char *name)
{
	if (strcmp(name, "--json") == 0) {
		a->json = 1;
	} else if (strcmp(name, "--raw") == 0) {
		a->raw = 1;
	} else if (strcmp(name, "--tls") == 0) {
		a->tls = 1;
	} else if (strcmp(name, "--insecure") == 0) {
		a->insecure = 1;
		a->tls = 1;
	} else if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0) {
		a->cmd = CTL_HELP;
	} else if (strcmp(name, "-V") == 0 || strcmp(name, "--version") == 0) {
		a->cmd = CTL_VERSION;
	} else {
		return 0;
	}
	return 1;
}

static void
set_defaults(ctl_args *a)
{
	const char *env;

	memset(a, 0, sizeof(*a));
	a->headers = json_object();
	a->timeout_ms = CTL_DEFAULT_TIMEOUT;
	(void) eb__ctl_endpoint_parse(CTL_DEFAULT_BRIDGE, &a->bridge);
	(void) eb__ctl_endpoint_parse(CTL_DEFAULT_ADMIN, &a->admin);
	if ((env = getenv("EBCTL_BRIDGE")) != NULL && env[0] != '\0') {
		(void) eb__ctl_endpoint_parse(env, &a->bridge);
	}
	if ((env = getenv("EBCTL_ADMIN")) != NULL && env[0] != '\0') {
		(void) eb__ctl_endpoint_parse(env, &a->admin);
	}
	if ((env = getenv("EBCTL_TOKEN")) != NULL && env[0] != '\0') {
		a->token = env;
	}
}

/* Checks the positional arguments against the command. */
static int
check_command(ctl_args *a, char **pos, int npos, char *err, size_t errlen)
{
	size_t i;
	int    k = -1;

	if (a->cmd == CTL_HELP || a->cmd == CTL_VERSION) {
		return CTL_EXIT_OK;
	}
	if (npos == 0) {
		return usage_err(err, errlen, "no command given");
	}
	for (i = 0; i < NCMDS; i++) {
		if (strcmp(pos[0], g_cmds[i].name) == 0) {
			k = (int) i;
		}
	}
	if (k < 0) {
		return usage_err(err, errlen, "unknown command '%s'", pos[0]);
	}
	a->cmd = g_cmds[k].cmd;
	if (npos - 1 < g_cmds[k].min_pos || npos - 1 > g_cmds[k].max_pos) {
		return usage_err(err, errlen,
		    "%s: wrong number of arguments (see ebctl --help)", pos[0]);
	}
	if (a->cmd == CTL_HELP || a->cmd == CTL_VERSION) {
		return CTL_EXIT_OK;
	}
	if (a->cmd == CTL_LOCK || a->cmd == CTL_COUNTER || a->cmd == CTL_ID) {
		for (a->npos = 0; a->npos < npos - 1 && a->npos < 4;
		     a->npos++) {
			a->pos[a->npos] = pos[a->npos + 1];
		}
		return CTL_EXIT_OK;
	}
	if (npos > 1) {
		a->address = pos[1];
		if (a->address[0] == '\0') {
			return usage_err(
			    err, errlen, "%s: empty address", pos[0]);
		}
	}
	if (npos > 2) {
		a->body_text = pos[2];
		if (strcmp(pos[2], "-") != 0 &&
		    (a->body = eb__ctl_body_parse(pos[2], err, errlen)) ==
		        NULL) {
			return CTL_EXIT_USAGE;
		}
	}
	if (a->count > 0 && a->cmd != CTL_LISTEN) {
		return usage_err(err, errlen, "--count is only for listen");
	}
	if ((a->cert == NULL) != (a->key == NULL)) {
		return usage_err(err, errlen, "--cert and --key go together");
	}
	return CTL_EXIT_OK;
}

int
eb__ctl_args_parse(int argc, char **argv, ctl_args *a, char *err, size_t errlen)
{
	char **pos = calloc((size_t) argc + 1, sizeof(*pos));
	int    npos = 0;
	int    i;
	int    rv = CTL_EXIT_OK;
	int    only_pos = 0;

	set_defaults(a);
	err[0] = '\0';
	if (pos == NULL) {
		return usage_err(err, errlen, "out of memory");
	}
	for (i = 1; i < argc && rv == CTL_EXIT_OK; i++) {
		char       *arg = argv[i];
		char        name[64];
		const char *val = NULL;
		char       *eq;

		if (only_pos || arg[0] != '-' || strcmp(arg, "-") == 0) {
			pos[npos++] = arg; /* "-" is the stdin body */
			continue;
		}
		if (strcmp(arg, "--") == 0) {
			only_pos = 1;
			continue;
		}
		/* --name=value */
		(void) snprintf(name, sizeof(name), "%s", arg);
		if (strncmp(arg, "--", 2) == 0 &&
		    (eq = strchr(name, '=')) != NULL) {
			*eq = '\0';
			val = arg + (eq - name) + 1;
		}
		if (val == NULL && flag_opt(a, name)) {
			continue;
		}
		if (val == NULL && i + 1 < argc) {
			val = argv[i + 1];
			if (value_opt(a, name, val, err, errlen, &rv)) {
				i++;
				continue;
			}
		} else if (val != NULL &&
		           value_opt(a, name, val, err, errlen, &rv)) {
			continue;
		}
		if (value_opt(a, name, "", err, errlen, &rv)) {
			rv = usage_err(err, errlen, "%s needs a value", name);
		} else {
			rv = usage_err(err, errlen, "unknown option '%s'", arg);
		}
	}
	if (rv == CTL_EXIT_OK) {
		rv = check_command(a, pos, npos, err, errlen);
	}
	free(pos);
	return rv;
}

void
eb__ctl_args_free(ctl_args *a)
{
	json_decref(a->body);
	json_decref(a->headers);
	a->body = NULL;
	a->headers = NULL;
}
