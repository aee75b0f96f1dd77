/*
 * The dynamic configuration (dynamic.h). A configuration that loads is
 * applied in one loop turn (between two messages) by the owner's callback;
 * one that does not is refused as a whole.
 */
#include "conf/dynamic.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/log.h>

#include "admin/prom.h"
#include "common/alloc.h"
#include "common/assert.h"
#include "common/util.h"

/* The local file is read again on SIGHUP: the same bound as at start. */
#define CONF_DYN_MAX_FILE (16u << 20)

struct eb__conf_dyn {
	const eb__conf         *start; /* borrowed */
	const eb__conf_sources *src;   /* borrowed; NULL: none */
	eb__conf_apply_cb       apply;
	void                   *arg;
	const char            **degraded; /* published refusal reason */
	eb__conf               *applied;  /* owned; NULL: start */
	int64_t                 version;  /* cluster version applied; 0: none */
	char  *text; /* owned: that version's bytes; NULL: none */
	size_t len;
	/* The local file as last loaded (start, SIGHUP). NULL: no file, or
	 * not read (then the file is read at each rebuild). */
	char       *file_text;
	size_t      file_len;
	uint64_t    applied_ms; /* wall clock (ms) of the last apply */
	uint64_t    applies;
	uint64_t    rejected;
	int64_t     rejected_version; /* the last refused cluster version */
	char        reason[EB_ERRBUF_SIZE + 64]; /* "": not degraded */
	uint64_t    reloads;                     /* SIGHUP reloads applied */
	uv_signal_t sighup;
	eb_cluster *cluster; /* followed while running */
	bool        running;
	bool        closing; /* the SIGHUP handle is closing */
};

eb__conf_dyn *
eb__conf_dyn_new(const eb__conf *start, const eb__conf_sources *src,
    eb__conf_apply_cb apply, void *arg, const char **degraded)
{
	eb__conf_dyn *d = eb__calloc(1, sizeof(*d));

	d->start = start;
	d->src = src;
	d->apply = apply;
	d->arg = arg;
	d->degraded = degraded;
	return d;
}

const eb__conf *
eb__conf_dyn_current(const eb__conf_dyn *d)
{
	return d->applied != NULL ? d->applied : d->start;
}

int64_t
eb__conf_dyn_version(const eb__conf_dyn *d)
{
	return d->version;
}

/* Whether the local sources name a file to read (not given as text). */
static bool
has_file(const eb__conf_dyn *d)
{
	return d->src != NULL && d->src->file != NULL && d->src->text == NULL;
}

/* A configuration was refused: the previous one stays. */
static void
refused(eb__conf_dyn *d, int64_t version, int from_cluster, const char *what,
    const char *why)
{
	char q[EB_LOG_QUOTE_MAX];

	d->rejected++;
	if (from_cluster) {
		d->rejected_version = version;
	}
	(void) snprintf(
	    d->reason, sizeof(d->reason), "config %s refused: %s", what, why);
	*d->degraded = d->reason;
	EB_LOG_ERR("config",
	    "rejected: source=%s version=%" PRId64 " kept=%" PRId64
	    " reason=%s",
	    what, version, d->version, eb_log_quote(q, sizeof(q), why));
}

/* c (owned from here) was applied, built with text (NULL: none). */
static void
applied(eb__conf_dyn *d, eb__conf *c, int64_t version, const char *text,
    size_t len, const char *what)
{
	eb__conf_free(d->applied);
	d->applied = c;
	if (text != d->text) {
		free(d->text);
		d->text = NULL;
		d->len = 0;
		if (text != NULL) {
			d->text = eb__malloc(len + 1);
			memcpy(d->text, text, len);
			d->text[len] = '\0';
			d->len = len;
		}
	}
	d->version = version;
	d->applied_ms = eb__wall_ms();
	d->applies++;
	d->reason[0] = '\0';
	*d->degraded = NULL;
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
rebuild_with(eb__conf_dyn *d, const char *file_text, size_t file_len,
    int64_t version, const char *text, size_t len, const char *what)
{
	eb__conf_sources src;
	eb__conf        *c = NULL;
	eb_errbuf        err;
	char             name[128], statics[200];
	int              rv;

	memset(&src, 0, sizeof(src));
	if (d->src != NULL) {
		src = *d->src;
	}
	if (file_text != NULL && has_file(d)) {
		src.text = file_text;
		src.text_len = file_len;
	}
	(void) snprintf(name, sizeof(name), "%s/config v%" PRId64,
	    d->start->cluster.root, version);
	src.cluster_text = text;
	src.cluster_len = len;
	src.cluster_name = name;
	err.msg[0] = '\0';
	rv = eb__conf_load(&src, &c, &err);
	if (rv == 0 && strcmp(what, "local") == 0 &&
	    eb__conf_static_changes(d->start, c, statics, sizeof(statics)) >
	        0) {
		EB_LOG_WARN("config",
		    "static-keys-changed: keys=%s (kept until a restart)",
		    statics);
	}
	if (rv == 0) {
		rv = d->apply(d->arg, c, version, &err);
	}
	if (rv != 0) {
		refused(d, version, text != NULL, what, err.msg);
		eb__conf_free(c);
		return rv;
	}
	applied(d, c, version, text, len, what);
	return 0;
}

int
eb__conf_dyn_cluster(
    eb__conf_dyn *d, int64_t version, const char *text, size_t len)
{
	return rebuild_with(
	    d, d->file_text, d->file_len, version, text, len, "cluster");
}

static void
sighup_cb(uv_signal_t *h, int signum)
{
	eb__conf_dyn *d = h->data;
	char         *file = NULL;
	size_t        flen = 0;

	(void) signum;
	EB_LOG_NOTICE("config", "reload: signal=SIGHUP");
	if (has_file(d) &&
	    eb__read_file(d->src->file, CONF_DYN_MAX_FILE, &file, &flen) != 0) {
		/* Let the load say why (cannot open ...), as at the start. */
		file = NULL;
	}
	if (rebuild_with(d, file, flen, d->version, d->text, d->len, "local") ==
	    0) {
		d->reloads++;
		if (file != NULL) {
			free(d->file_text);
			d->file_text = file;
			d->file_len = flen;
			file = NULL;
		}
	}
	free(file);
}

static void
config_cb(
    eb_cluster *c, int64_t version, const char *data, size_t len, void *arg)
{
	(void) c;
	(void) eb__conf_dyn_cluster(
	    arg, version, version > 0 ? data : NULL, len);
}

void
eb__conf_dyn_start(eb__conf_dyn *d, uv_loop_t *loop, eb_cluster *c)
{
	const char *data = NULL;
	size_t      len = 0;
	int64_t     version;

	EB_ASSERT(!d->running && !d->closing);
	if (has_file(d) && d->file_text == NULL &&
	    eb__read_file(d->src->file, CONF_DYN_MAX_FILE, &d->file_text,
	        &d->file_len) != 0) {
		d->file_text = NULL; /* read at each rebuild instead */
	}
	(void) uv_signal_init(loop, &d->sighup);
	d->sighup.data = d;
	(void) uv_signal_start(&d->sighup, sighup_cb, SIGHUP);
	d->running = true;
	d->cluster = c;
	eb_cluster_on_config(c, config_cb, d);
	/* What was read before the cluster finished starting. */
	version = eb_cluster_config_get(c, &data, &len);
	if (version > 0) {
		(void) eb__conf_dyn_cluster(d, version, data, len);
	}
}

static void
sighup_closed_cb(uv_handle_t *h)
{
	eb__conf_dyn *d = h->data;

	d->closing = false;
}

void
eb__conf_dyn_stop(eb__conf_dyn *d)
{
	if (!d->running) {
		return;
	}
	(void) eb_cluster_off_config(d->cluster, config_cb, d);
	d->cluster = NULL;
	d->running = false;
	d->closing = true;
	uv_close((uv_handle_t *) &d->sighup, sighup_closed_cb);
}

void
eb__conf_dyn_free(eb__conf_dyn *d)
{
	if (d == NULL) {
		return;
	}
	EB_ASSERT(!d->running && !d->closing);
	eb__conf_free(d->applied);
	free(d->text);
	free(d->file_text);
	free(d);
}

/* ---- GET /config and the metrics ---- */

static void
route_config(const eb__admin_req *rq, eb__admin_resp *rs, void *arg)
{
	eb__conf_dyn *d = arg;
	json_t       *o;

	(void) rq;
	o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:o, s:o}", "node_id",
	    d->start->cluster.node_id, "version", (json_int_t) d->version,
	    "applied_at_ms", (json_int_t) d->applied_ms, "applies",
	    (json_int_t) d->applies, "rejected", (json_int_t) d->rejected,
	    "reloads", (json_int_t) d->reloads, "error",
	    d->reason[0] != '\0' ? json_string(d->reason) : json_null(), "keys",
	    eb__conf_dynamic_to_json(eb__conf_dyn_current(d)));
	(void) json_object_set_new(
	    o, "static", eb__conf_keys_to_json(d->start, false));
	if (d->rejected_version != 0) {
		(void) json_object_set_new(o, "rejected_version",
		    json_integer((json_int_t) d->rejected_version));
	}
	eb__admin_reply_json(rs, 200, o);
	json_decref(o);
}

static const eb__prom_desc config_families[] = {
	EB__PROM_ONE("ebnode_config_version", "gauge",
	    "The cluster configuration version applied (0: none).",
	    EB__PROM_AT(eb__conf_dyn, version)),
	EB__PROM_ONE("ebnode_config_rejected_total", "counter",
	    "Configurations refused (cluster versions and local reloads).",
	    EB__PROM_AT(eb__conf_dyn, rejected)),
};

static void
config_metrics(eb__prom *w, void *arg)
{
	eb__prom_write(w, config_families, EB__PROM_LEN(config_families), arg);
}

void
eb__conf_dyn_admin_register(eb__admin *adm, eb__conf_dyn *d)
{
	eb__admin_route(adm, "GET", "/config", route_config, d);
	eb__admin_on_metrics(adm, config_metrics, d);
}
