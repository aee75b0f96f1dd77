/*
 * The node's dynamic configuration (node_config.h). Every change builds a
 * whole new eb_conf from the local sources (file < environment < --set)
 * with the cluster configuration on top (dynamic keys only), through the
 * same schema as the start: one source per option, the same messages. A
 * configuration that loads is applied to every subsystem in one loop turn
 * (between two messages); one that does not is refused as a whole.
 */
#include "node/node_config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ebnode/bridge.h>
#include <ebnode/cluster.h>
#include <ebnode/ingress.h>
#include <ebnode/log.h>

#include "admin/prom.h"
#include "common/alloc.h"
#include "common/assert.h"

struct eb__node_config {
	eb_node    *n;       /* borrowed (owns us) */
	eb_cluster *cluster; /* borrowed while the step runs, else NULL */
	eb_conf    *applied; /* owned; NULL: n->conf (the start's) */
	int64_t     version; /* cluster version applied; 0: none */
	char       *text;    /* owned: that version's bytes; NULL: none */
	size_t      len;
	/* The local file as last loaded (start, SIGHUP): a cluster change
	 * rebuilds on this snapshot, so that an edited file takes effect only
	 * with SIGHUP. NULL: no file, or not read (then the file is read). */
	char       *file_text;
	size_t      file_len;
	uint64_t    applied_ms; /* wall clock (ms) of the last apply */
	uint64_t    applies;
	uint64_t    rejected;
	int64_t     rejected_version; /* the last refused cluster version */
	char        reason[EB_ERRBUF_SIZE + 64]; /* "": not degraded */
	uint64_t    reloads;                     /* SIGHUP reloads applied */
	uv_signal_t sighup;
	int         running;
	int         closing; /* the SIGHUP handle is closing */
};

typedef struct eb__node_config node_config;

static node_config *
cfg_get(eb_node *n)
{
	if (n->config == NULL) {
		n->config = eb__calloc(1, sizeof(node_config));
		n->config->n = n;
	}
	return n->config;
}

static uint64_t
wall_ms(void)
{
	struct timespec ts;

	(void) clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t) ts.tv_sec * 1000u + (uint64_t) ts.tv_nsec / 1000000u;
}

static const eb_conf *
current(const node_config *nc)
{
	return nc->applied != NULL ? nc->applied : nc->n->conf;
}

/* Applies the dynamic keys of c to the running subsystems. 0, or an error
 * with detail; then nothing changed: each swap is all or nothing, and when
 * the bridge refuses its lists after the ingress took its table, the
 * ingress gets the table in force back. */
/* Gives the ingress the table in force back (it was accepted before). */
static void
ingress_back(node_config *nc, eb_ingress *in)
{
	eb_ingress_opts io;
	int             rv;

	eb__node_ingress_opts(current(nc), &io);
	rv = eb_ingress_reconfigure(in, &io, (uint64_t) nc->version, NULL);
	EB_ASSERT(rv == 0);
}

static int
apply_conf(node_config *nc, const eb_conf *c, int64_t version, eb_errbuf *err)
{
	eb_node        *n = nc->n;
	eb_ingress     *in = n->ingress;
	eb_ingress_opts io;
	int             rv;

	if (in != NULL) {
		eb__node_ingress_opts(c, &io);
		rv = eb_ingress_reconfigure(in, &io, (uint64_t) version, err);
		if (rv != 0) {
			return rv;
		}
	}
	rv = n->bridge == NULL
	         ? 0
	         : eb_bridge_set_permitted(n->bridge, c->bridge.inbound,
	               c->bridge.inbound_count, c->bridge.outbound,
	               c->bridge.outbound_count, err);
	if (rv != 0) {
		/* conf compiled the same regexes: not expected */
		if (in != NULL) {
			ingress_back(nc, in);
		}
		return rv;
	}
	eb_log_set_level(c->log.level);
	return 0;
}

/* Reads the local file into *out (NUL-terminated); 0 or -1. */
static int
slurp(const char *path, char **out, size_t *outlen)
{
	FILE  *f = fopen(path, "rb");
	char  *buf = NULL;
	size_t n = 0, cap = 0, got;

	if (f == NULL) {
		return -1;
	}
	do {
		if (cap - n < 4096) {
			cap = cap != 0 ? cap * 2 : 8192;
			buf = eb__realloc(buf, cap + 1);
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
	} while (got > 0 && n <= (16u << 20));
	(void) fclose(f);
	buf[n] = '\0';
	*out = buf;
	*outlen = n;
	return 0;
}

/* A configuration was refused: the previous one stays. */
static void
refused(node_config *nc, int64_t version, int from_cluster, const char *what,
    const char *why)
{
	char q[EB_LOG_QUOTE_MAX];

	nc->rejected++;
	if (from_cluster) {
		nc->rejected_version = version;
	}
	(void) snprintf(
	    nc->reason, sizeof(nc->reason), "config %s refused: %s", what, why);
	nc->n->cluster.degraded = nc->reason;
	EB_LOG_ERR("config",
	    "rejected: source=%s version=%" PRId64 " kept=%" PRId64
	    " reason=%s",
	    what, version, nc->version, eb_log_quote(q, sizeof(q), why));
}

/* c (owned from here) was applied, built with text (NULL: none). */
static void
applied(node_config *nc, eb_conf *c, int64_t version, const char *text,
    size_t len, const char *what)
{
	eb_conf_free(nc->applied);
	nc->applied = c;
	if (text != nc->text) {
		free(nc->text);
		nc->text = NULL;
		nc->len = 0;
		if (text != NULL) {
			nc->text = eb__malloc(len + 1);
			memcpy(nc->text, text, len);
			nc->text[len] = '\0';
			nc->len = len;
		}
	}
	nc->version = version;
	nc->applied_ms = wall_ms();
	nc->applies++;
	nc->reason[0] = '\0';
	nc->n->cluster.degraded = NULL;
	EB_LOG_NOTICE(
	    "config", "applied: source=%s version=%" PRId64, what, version);
}

/*
 * Builds the configuration from the local sources (file_text: the file's
 * content to use; NULL: the file as it is now) and the cluster text (text
 * NULL: none), and applies it. what names the change in logs. Returns 0
 * when applied.
 */
static int
rebuild_with(node_config *nc, const char *file_text, size_t file_len,
    int64_t version, const char *text, size_t len, const char *what)
{
	eb_node        *n = nc->n;
	eb_conf_sources src;
	eb_conf        *c = NULL;
	eb_errbuf       err;
	char            name[128], statics[200];
	int             rv;

	memset(&src, 0, sizeof(src));
	if (n->src != NULL) {
		src = *n->src;
	}
	if (file_text != NULL && src.file != NULL && src.text == NULL) {
		src.text = file_text;
		src.text_len = file_len;
	}
	(void) snprintf(name, sizeof(name), "%s/config v%" PRId64,
	    n->conf->cluster.root, version);
	src.cluster_text = text;
	src.cluster_len = len;
	src.cluster_name = name;
	err.msg[0] = '\0';
	rv = eb_conf_load(&src, &c, &err);
	if (rv == 0 && strcmp(what, "local") == 0 &&
	    eb_conf_static_changes(n->conf, c, statics, sizeof(statics)) > 0) {
		EB_LOG_WARN("config",
		    "static-keys-changed: keys=%s (kept until a restart)",
		    statics);
	}
	if (rv == 0) {
		rv = apply_conf(nc, c, version, &err);
	}
	if (rv != 0) {
		refused(nc, version, text != NULL, what, err.msg);
		eb_conf_free(c);
		return rv;
	}
	applied(nc, c, version, text, len, what);
	return 0;
}

static int
rebuild(node_config *nc, int64_t version, const char *text, size_t len,
    const char *what)
{
	return rebuild_with(
	    nc, nc->file_text, nc->file_len, version, text, len, what);
}

static void
config_cb(
    eb_cluster *c, int64_t version, const char *data, size_t len, void *arg)
{
	node_config *nc = arg;

	(void) c;
	(void) rebuild(nc, version, version > 0 ? data : NULL, len, "cluster");
}

static void
sighup_cb(uv_signal_t *h, int signum)
{
	node_config *nc = h->data;

	(void) signum;
	const eb_conf_sources *src = nc->n->src;
	char                  *file = NULL;
	size_t                 flen = 0;

	EB_LOG_NOTICE("config", "reload: signal=SIGHUP");
	if (src != NULL && src->file != NULL && src->text == NULL &&
	    slurp(src->file, &file, &flen) != 0) {
		/* Let the load say why (cannot open ...), as at the start. */
		file = NULL;
	}
	if (rebuild_with(
	        nc, file, flen, nc->version, nc->text, nc->len, "local") == 0) {
		nc->reloads++;
		if (file != NULL) {
			free(nc->file_text);
			nc->file_text = file;
			nc->file_len = flen;
			file = NULL;
		}
	}
	free(file);
}

void
eb__node_config_attach(eb_node *n, eb_cluster *c)
{
	node_config *nc = cfg_get(n);
	const char  *data = NULL;
	size_t       len = 0;
	int64_t      version;

	EB_ASSERT(!nc->running && !nc->closing);
	if (n->src != NULL && n->src->file != NULL && n->src->text == NULL &&
	    nc->file_text == NULL &&
	    slurp(n->src->file, &nc->file_text, &nc->file_len) != 0) {
		nc->file_text = NULL; /* read at each rebuild instead */
	}
	(void) uv_signal_init(n->loop, &nc->sighup);
	nc->sighup.data = nc;
	(void) uv_signal_start(&nc->sighup, sighup_cb, SIGHUP);
	nc->running = 1;
	nc->cluster = c;
	eb_cluster_on_config(c, config_cb, nc);
	/* What was read before the cluster finished starting. */
	version = eb_cluster_config_get(c, &data, &len);
	if (version > 0) {
		(void) rebuild(nc, version, data, len, "cluster");
	}
}

static void
sighup_closed_cb(uv_handle_t *h)
{
	node_config *nc = h->data;

	nc->closing = 0;
}

void
eb__node_config_detach(eb_node *n)
{
	node_config *nc = n->config;

	if (nc == NULL || !nc->running) {
		return;
	}
	(void) eb_cluster_off_config(nc->cluster, config_cb, nc);
	nc->cluster = NULL;
	nc->running = 0;
	nc->closing = 1;
	uv_close((uv_handle_t *) &nc->sighup, sighup_closed_cb);
}

void
eb__node_config_free(eb_node *n)
{
	node_config *nc = n->config;

	if (nc == NULL) {
		return;
	}
	EB_ASSERT(!nc->running && !nc->closing);
	eb_conf_free(nc->applied);
	free(nc->text);
	free(nc->file_text);
	free(nc);
	n->config = NULL;
}

/* ---- GET /config and the metrics ---- */

static void
route_config(const eb__admin_req *rq, eb__admin_resp *rs, void *arg)
{
	eb_node     *n = arg;
	node_config *nc = cfg_get(n);
	json_t      *o;

	(void) rq;
	o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:o, s:o}", "node_id",
	    n->conf->cluster.node_id, "version", (json_int_t) nc->version,
	    "applied_at_ms", (json_int_t) nc->applied_ms, "applies",
	    (json_int_t) nc->applies, "rejected", (json_int_t) nc->rejected,
	    "reloads", (json_int_t) nc->reloads, "error",
	    nc->reason[0] != '\0' ? json_string(nc->reason) : json_null(),
	    "keys", eb_conf_dynamic_to_json(current(nc)));
	(void) json_object_set_new(
	    o, "static", eb_conf_keys_to_json(n->conf, false));
	if (nc->rejected_version != 0) {
		(void) json_object_set_new(o, "rejected_version",
		    json_integer((json_int_t) nc->rejected_version));
	}
	eb__admin_reply_json(rs, 200, o);
	json_decref(o);
}

static void
config_metrics(eb__prom *w, void *arg)
{
	node_config *nc = cfg_get(arg);

	eb__prom_one(w, "ebnode_config_version", "gauge",
	    "The cluster configuration version applied (0: none).",
	    (uint64_t) nc->version);
	eb__prom_one(w, "ebnode_config_rejected_total", "counter",
	    "Configurations refused (cluster versions and local reloads).",
	    nc->rejected);
}

void
eb__node_config_admin_register(eb__admin *adm, eb_node *n)
{
	(void) cfg_get(n);
	eb__admin_route(adm, "GET", "/config", route_config, n);
	eb__admin_on_metrics(adm, config_metrics, n);
}
