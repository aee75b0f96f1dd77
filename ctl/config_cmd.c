/*
 * ebctl config: the cluster configuration at <root>/config, spoken to
 * ZooKeeper directly (docs/CONFIG.md "Cluster configuration").
 *
 *   ebctl config [options] get | set FILE | diff FILE | history
 *                          | rollback VERSION
 *
 * set validates FILE with the node's own schema (conf/) first, then writes
 * it with a version check (compare-and-set, cluster/config.c): when another
 * writer changed the configuration since the version it read (or since
 * --expect VERSION), it fails with a conflict (exit 3) and writes nothing.
 * rollback writes the content of a kept version as a new version, the same
 * way. Options: --zk HOSTS (EBCTL_ZK), --root PATH (EBCTL_ZK_ROOT, default
 * /ebnode/default), --zk-auth USER:PASSWORD (EBCTL_ZK_AUTH: digest; the
 * znodes written get the creator ACL, writable only with that credential),
 * --expect VERSION, --timeout MS, --json, --max-request BYTES
 * (EBCTL_ZK_MAX_REQUEST: the nodes' zookeeper.max_request_bytes, default
 * 1000000; ebctl's writes are held to it like the node's).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <uv.h>

#include <ebnode/cluster.h>
#include <ebnode/err.h>
#include <ebnode/log.h>

#include "cluster/cluster_config.h"
#include "common/alloc.h"
#include "common/util.h"
#include "conf/conf.h"
#include "ctl/ctl.h"
#include "zk/zk.h"

#define CFG_EXIT_CONFLICT 3

typedef enum cfg_op { OP_GET, OP_SET, OP_DIFF, OP_HISTORY, OP_ROLLBACK } cfg_op;

typedef struct cfg_run {
	cfg_op      op;
	const char *connect, *root, *auth, *file;
	int64_t     expect; /* -1: the version read */
	int64_t     target; /* rollback */
	int         json;
	int         timeout_ms;
	int64_t     max_request; /* zookeeper.max_request_bytes */
	char       *text; /* set/diff: the file; rollback: the old content */
	size_t      len;
	uv_loop_t   loop;
	uv_timer_t  timer;
	eb__zk     *zk;
	int         rc;
	int         done;
	char        path[512];
} cfg_run;

static uint64_t
wall_ms(void)
{
	struct timespec ts;

	(void) clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t) ts.tv_sec * 1000u + (uint64_t) ts.tv_nsec / 1000000u;
}

static void
finish(cfg_run *r, int rc)
{
	if (r->done) {
		return;
	}
	r->done = 1;
	r->rc = rc;
	(void) uv_timer_stop(&r->timer);
	uv_close((uv_handle_t *) &r->timer, NULL);
	eb__zk_close(r->zk, NULL, NULL);
}

static int fail(cfg_run *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
fail(cfg_run *r, const char *fmt, ...)
{
	va_list ap;

	if (r->done) {
		return CTL_EXIT_FAIL; /* a late completion after the end */
	}
	(void) fprintf(stderr, "ebctl: config: ");
	va_start(ap, fmt);
	(void) vfprintf(stderr, fmt, ap);
	va_end(ap);
	(void) fputc('\n', stderr);
	finish(r, CTL_EXIT_FAIL);
	return CTL_EXIT_FAIL;
}

/* ---- output ---- */

static void
print_config(const char *data, size_t len)
{
	json_t *v = json_loadb(data, len, 0, NULL);
	char   *s;

	if (v == NULL) {
		(void) fwrite(data, 1, len, stdout);
		(void) fputc('\n', stdout);
		return;
	}
	s = json_dumps(v, JSON_INDENT(2) | JSON_SORT_KEYS);
	(void) printf("%s\n", s);
	free(s);
	json_decref(v);
}

/* Leaves of v as "path = value" into o (objects are descended). */
static void
flatten(json_t *o, const char *prefix, json_t *v)
{
	const char *k;
	json_t     *x;
	char        p[512];

	if (!json_is_object(v) || json_object_size(v) == 0) {
		(void) json_object_set(o, prefix, v);
		return;
	}
	json_object_foreach(v, k, x)
	{
		(void) snprintf(p, sizeof(p), "%s%s%s", prefix,
		    prefix[0] != '\0' ? "." : "", k);
		flatten(o, p, x);
	}
}

static int
print_diff(const char *old, size_t olen, const char *new, size_t nlen)
{
	json_t     *a = old != NULL ? json_loadb(old, olen, 0, NULL) : NULL;
	json_t     *b = json_loadb(new, nlen, 0, NULL);
	json_t     *fa = json_object(), *fb = json_object(), *va, *vb;
	const char *k;
	char       *sa, *sb;
	int         n = 0;

	if (a != NULL) {
		flatten(fa, "", a);
	}
	if (b != NULL) {
		flatten(fb, "", b);
	}
	json_object_foreach(fa, k, va)
	{
		vb = json_object_get(fb, k);
		if (vb != NULL && json_equal(va, vb)) {
			continue;
		}
		sa = json_dumps(va, JSON_ENCODE_ANY | JSON_COMPACT);
		(void) printf("- %s: %s\n", k, sa);
		free(sa);
		if (vb != NULL) {
			sb = json_dumps(vb, JSON_ENCODE_ANY | JSON_COMPACT);
			(void) printf("+ %s: %s\n", k, sb);
			free(sb);
		}
		n++;
	}
	json_object_foreach(fb, k, vb)
	{
		if (json_object_get(fa, k) == NULL) {
			sb = json_dumps(vb, JSON_ENCODE_ANY | JSON_COMPACT);
			(void) printf("+ %s: %s\n", k, sb);
			free(sb);
			n++;
		}
	}
	if (n == 0) {
		(void) printf("no changes\n");
	}
	json_decref(a);
	json_decref(b);
	json_decref(fa);
	json_decref(fb);
	return n;
}

/* ---- the operations ---- */

static void
written_cb(int status, int64_t version, void *arg)
{
	cfg_run *r = arg;

	if (status == EB_EZKBADVERSION) {
		(void) fprintf(stderr,
		    "ebctl: config: conflict: %s changed since version %" PRId64
		    " (another writer); nothing written: get it again and "
		    "retry\n",
		    r->path, r->expect);
		finish(r, CFG_EXIT_CONFLICT);
		return;
	}
	if (status != 0) {
		(void) fail(r, "write %s: %s", r->path, eb_strerror(status));
		return;
	}
	if (r->json) {
		(void) printf("{\"version\": %" PRId64
		              ", \"written_at_ms\": %" PRIu64 "}\n",
		    version, wall_ms());
	} else {
		(void) printf("version %" PRId64 " written (%s)\n", version,
		    r->op == OP_ROLLBACK ? "rollback" : "set");
	}
	finish(r, CTL_EXIT_OK);
}

static void
write_now(cfg_run *r, int64_t current)
{
	int rv;

	if (r->expect < 0) {
		r->expect = current;
	}
	if (r->len > eb__config_max_bytes(r->zk, r->root)) {
		(void) fail(r,
		    "%s: %zu bytes, more than the %zu bytes a configuration "
		    "may have: a write carries it twice (the configuration "
		    "and its history copy) in one ZooKeeper request of at "
		    "most zookeeper.max_request_bytes = %zu (--max-request); "
		    "nothing written",
		    r->path, r->len, eb__config_max_bytes(r->zk, r->root),
		    eb__zk_max_request(r->zk));
		return;
	}
	rv = eb__config_write(
	    r->zk, r->root, r->text, r->len, r->expect, written_cb, r);
	if (rv != 0) {
		(void) fail(r, "write %s: %s", r->path, eb_strerror(rv));
	}
}

static void
history_cb(int status, const eb__config_version *v, size_t n, void *arg)
{
	cfg_run *r = arg;
	size_t   i;
	json_t  *a;
	char    *s;

	if (status != 0) {
		(void) fail(r, "history: %s", eb_strerror(status));
		return;
	}
	if (r->op == OP_HISTORY) {
		a = json_array();
		for (i = 0; i < n; i++) {
			json_t *c = json_loadb(v[i].data, v[i].len, 0, NULL);

			if (r->json) {
				(void) json_array_append_new(
				    a, json_pack("{s:I, s:o}", "version",
				           (json_int_t) v[i].version, "config",
				           c != NULL ? c
				                     : json_stringn(v[i].data,
				                           v[i].len)));
				continue;
			}
			s = c != NULL
			        ? json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS)
			        : NULL;
			(void) printf("%-8" PRId64 " %s\n", v[i].version,
			    s != NULL ? s : v[i].data);
			free(s);
			json_decref(c);
		}
		if (r->json) {
			s = json_dumps(a, JSON_INDENT(2));
			(void) printf("%s\n", s);
			free(s);
		}
		json_decref(a);
		finish(r, CTL_EXIT_OK);
		return;
	}
	for (i = 0; i < n; i++) { /* rollback */
		if (v[i].version == r->target) {
			r->text = eb__malloc(v[i].len + 1);
			memcpy(r->text, v[i].data, v[i].len + 1);
			r->len = v[i].len;
			break;
		}
	}
	if (r->text == NULL) {
		(void) fail(r,
		    "rollback: version %" PRId64
		    " is not in the history (ebctl config history)",
		    r->target);
	}
}

static void
get_cb(eb__zk *zk, int status, const char *data, size_t len,
    const eb__zk_stat *st, void *arg)
{
	cfg_run *r = arg;
	int64_t  version = status == 0 ? (int64_t) st->version + 1 : 0;

	(void) zk;
	if (status != 0 && status != EB_EZKNONODE) {
		(void) fail(r, "read %s: %s", r->path, eb_strerror(status));
		return;
	}
	switch (r->op) {
	case OP_GET:
		if (r->json) {
			json_t *c =
			    version > 0 ? json_loadb(data, len, 0, NULL) : NULL;
			json_t *o = json_pack("{s:I, s:o}", "version",
			    (json_int_t) version, "config",
			    c != NULL ? c : json_null());
			char   *s = json_dumps(o, JSON_INDENT(2));

			(void) printf("%s\n", s);
			free(s);
			json_decref(o);
		} else if (version == 0) {
			(void) printf("# version 0: no %s\n", r->path);
		} else {
			(void) printf("# version %" PRId64 "\n", version);
			print_config(data, len);
		}
		finish(r, CTL_EXIT_OK);
		return;
	case OP_DIFF:
		(void) print_diff(
		    version > 0 ? data : NULL, len, r->text, r->len);
		finish(r, CTL_EXIT_OK);
		return;
	default:
		write_now(r, version);
		return;
	}
}

static void
rollback_history_cb(
    int status, const eb__config_version *v, size_t n, void *arg)
{
	cfg_run  *r = arg;
	eb_errbuf err;

	history_cb(status, v, n, arg);
	if (r->done) {
		return;
	}
	if (eb__conf_check_dynamic(r->text, r->len, "rollback", &err) != 0) {
		(void) fail(r, "version %" PRId64 " is not valid now: %s",
		    r->target, err.msg);
		return;
	}
	(void) eb__zk_get(r->zk, r->path, NULL, NULL, get_cb, r);
}

static void
start_op(cfg_run *r)
{
	int rv;

	switch (r->op) {
	case OP_HISTORY:
		rv = eb__config_history(r->zk, r->root, history_cb, r);
		break;
	case OP_ROLLBACK:
		rv = eb__config_history(r->zk, r->root, rollback_history_cb, r);
		break;
	default:
		rv = eb__zk_get(r->zk, r->path, NULL, NULL, get_cb, r);
		break;
	}
	if (rv != 0) {
		(void) fail(r, "%s", eb_strerror(rv));
	}
}

static void
event_cb(eb__zk *zk, eb__zk_event ev, void *arg)
{
	cfg_run *r = arg;

	(void) zk;
	if (r->done) {
		return;
	}
	if (ev == EB_ZK_EV_CONNECTED) {
		start_op(r);
	} else if (ev == EB_ZK_EV_AUTH_FAILED) {
		(void) fail(r, "ZooKeeper refused the credentials (--zk-auth)");
	}
}

static void
timeout_cb(uv_timer_t *t)
{
	cfg_run *r = t->data;

	(void) fail(r, "no answer from ZooKeeper %s within %d ms", r->connect,
	    r->timeout_ms);
}

static int
usage_to(FILE *out, int code)
{
	(void) fprintf(out,
	    "usage: ebctl config [--zk HOSTS] [--root PATH] "
	    "[--zk-auth USER:PASSWORD]\n"
	    "                    [--expect VERSION] [--timeout MS] [--json]\n"
	    "                    [--max-request BYTES]\n"
	    "                    get | set FILE | diff FILE | history | "
	    "rollback VERSION\n"
	    "HOSTS: env EBCTL_ZK (127.0.0.1:2181); PATH: env EBCTL_ZK_ROOT "
	    "(/ebnode/default);\n"
	    "USER:PASSWORD: env EBCTL_ZK_AUTH. Exit 3: conflict (another "
	    "writer first).\n");
	return code;
}

static int
usage(void)
{
	return usage_to(stderr, CTL_EXIT_USAGE);
}

static const char *
env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v != NULL && v[0] != '\0' ? v : dflt;
}

/* A whole decimal number in lo..hi, or -1. */
static int64_t
number(const char *s, int64_t lo, int64_t hi)
{
	char     *end = NULL;
	long long v = strtoll(s, &end, 10);

	return end != s && *end == '\0' && v >= lo && v <= hi ? v : -1;
}

/* One option with a value (argv[*i] and argv[*i + 1]): 1 taken, 0 not an
 * option of ours, -1 a bad value. */
static int
option(int argc, char **argv, int *i, cfg_run *r)
{
	const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;

	if (v == NULL) {
		return 0;
	}
	if (strcmp(a, "--zk") == 0) {
		r->connect = v;
	} else if (strcmp(a, "--root") == 0) {
		r->root = v;
	} else if (strcmp(a, "--zk-auth") == 0) {
		r->auth = v;
	} else if (strcmp(a, "--expect") == 0) {
		r->expect = number(v, 0, INT32_MAX - 1);
		if (r->expect < 0) {
			return -1;
		}
	} else if (strcmp(a, "--max-request") == 0) {
		r->max_request = number(
		    v, EB_CLUSTER_MAX_REQUEST_MIN, EB_CLUSTER_MAX_REQUEST_MAX);
		if (r->max_request < 0) {
			return -1;
		}
	} else if (strcmp(a, "--timeout") == 0) {
		r->timeout_ms = (int) number(v, 1, 3600000);
		if (r->timeout_ms < 0) {
			return -1;
		}
	} else {
		return 0;
	}
	(*i)++;
	return 1;
}

/* --zk as the nodes' zookeeper.connect is checked: a list the ZooKeeper
 * client refuses (or never connects with) is a usage error, not a time-out
 * or an "init-failed" later. */
static int
connect_check(const cfg_run *r)
{
	const char *why;
	char        buf[160];

	why = eb__conf_zk_hosts_problem(
	    r->connect, strcspn(r->connect, "/"), buf, sizeof(buf));
	if (why != NULL) {
		(void) fprintf(stderr, "ebctl: config: --zk: %s\n", why);
		return CTL_EXIT_USAGE;
	}
	return CTL_EXIT_OK;
}

/* The command word and its argument (NULL: none). */
static int
command(cfg_run *r, const char *cmd, const char *arg)
{
	if (cmd == NULL) {
		return usage();
	}
	if (strcmp(cmd, "get") == 0 && arg == NULL) {
		r->op = OP_GET;
	} else if (strcmp(cmd, "history") == 0 && arg == NULL) {
		r->op = OP_HISTORY;
	} else if (strcmp(cmd, "set") == 0 && arg != NULL) {
		r->op = OP_SET;
		r->file = arg;
	} else if (strcmp(cmd, "diff") == 0 && arg != NULL) {
		r->op = OP_DIFF;
		r->file = arg;
	} else if (strcmp(cmd, "rollback") == 0 && arg != NULL) {
		r->op = OP_ROLLBACK;
		r->target = number(arg, 1, INT32_MAX);
		if (r->target <= 0) {
			return usage();
		}
	} else {
		return usage();
	}
	return CTL_EXIT_OK;
}

/* The request bound before --max-request: EBCTL_ZK_MAX_REQUEST or the
 * nodes' default. */
static int
max_request_default(cfg_run *r)
{
	r->max_request = number(env_or("EBCTL_ZK_MAX_REQUEST", "1000000"),
	    EB_CLUSTER_MAX_REQUEST_MIN, EB_CLUSTER_MAX_REQUEST_MAX);
	if (r->max_request < 0) {
		(void) fprintf(stderr,
		    "ebctl: config: EBCTL_ZK_MAX_REQUEST: not a number in "
		    "%u..%u\n",
		    EB_CLUSTER_MAX_REQUEST_MIN, EB_CLUSTER_MAX_REQUEST_MAX);
		return CTL_EXIT_USAGE;
	}
	return CTL_EXIT_OK;
}

static int
parse(int argc, char **argv, cfg_run *r)
{
	int         i, rv;
	const char *cmd = NULL, *arg = NULL;

	r->connect = env_or("EBCTL_ZK", "127.0.0.1:2181");
	r->root = env_or("EBCTL_ZK_ROOT", "/ebnode/default");
	r->auth = env_or("EBCTL_ZK_AUTH", NULL);
	r->expect = -1;
	r->timeout_ms = CTL_DEFAULT_TIMEOUT;
	if ((rv = max_request_default(r)) != CTL_EXIT_OK) {
		return rv;
	}
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--json") == 0) {
			r->json = 1;
			continue;
		}
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			(void) usage_to(stdout, CTL_EXIT_OK);
			return -1; /* done: exit 0 */
		}
		if ((rv = option(argc, argv, &i, r)) != 0) {
			if (rv < 0) {
				return usage();
			}
			continue;
		}
		if (a[0] == '-' || arg != NULL) {
			return usage();
		}
		if (cmd == NULL) {
			cmd = a;
		} else {
			arg = a;
		}
	}
	if ((rv = command(r, cmd, arg)) != CTL_EXIT_OK ||
	    (rv = connect_check(r)) != CTL_EXIT_OK) {
		return rv;
	}
	(void) snprintf(r->path, sizeof(r->path), "%s/config", r->root);
	return CTL_EXIT_OK;
}

int
eb__ctl_config_main(int argc, char **argv)
{
	cfg_run     r;
	eb__zk_opts zo;
	eb_errbuf   err;
	int         rv;

	memset(&r, 0, sizeof(r));
	eb_log_set_level(EB_LOG_LEVEL_WARN); /* no session chatter */
	if ((rv = parse(argc, argv, &r)) != CTL_EXIT_OK) {
		return rv < 0 ? CTL_EXIT_OK : rv;
	}
	if (r.file != NULL) {
		if (eb__read_file(r.file, 16u << 20, &r.text, &r.len) != 0) {
			(void) fprintf(
			    stderr, "ebctl: config: cannot read %s\n", r.file);
			return CTL_EXIT_FAIL;
		}
		/* The node's own schema: the same checks, the same words. */
		if (eb__conf_check_dynamic(r.text, r.len, r.file, &err) != 0) {
			(void) fprintf(
			    stderr, "ebctl: config: invalid: %s\n", err.msg);
			free(r.text);
			return CTL_EXIT_FAIL;
		}
	}
	(void) uv_loop_init(&r.loop);
	eb__zk_opts_init(&zo);
	zo.connect = r.connect;
	zo.max_request_bytes = (size_t) r.max_request;
	if (r.auth != NULL) {
		zo.auth_scheme = "digest";
		zo.auth_credentials = r.auth;
		zo.acl = EB_ZK_ACL_CREATOR;
	}
	if ((rv = eb__zk_new(&r.loop, &zo, event_cb, &r, &r.zk)) != 0 ||
	    (rv = eb__zk_start(r.zk)) != 0) {
		(void) fprintf(stderr, "ebctl: config: ZooKeeper %s: %s\n",
		    r.connect, eb_strerror(rv));
		if (r.zk != NULL) {
			eb__zk_close(r.zk, NULL, NULL);
			(void) uv_run(&r.loop, UV_RUN_DEFAULT);
		}
		(void) uv_loop_close(&r.loop);
		free(r.text);
		return CTL_EXIT_FAIL;
	}
	(void) uv_timer_init(&r.loop, &r.timer);
	r.timer.data = &r;
	(void) uv_timer_start(&r.timer, timeout_cb, (uint64_t) r.timeout_ms, 0);
	(void) uv_run(&r.loop, UV_RUN_DEFAULT);
	(void) uv_loop_close(&r.loop);
	free(r.text);
	return r.rc;
}
