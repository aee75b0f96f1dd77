/*
 * The configuration center: <root>/config holds the cluster-wide dynamic
 * configuration (JSON, validated by each node's owner, not here). This part
 * of the cluster reads it with a data watch, again on every change and on
 * every (re)connect, and reports (version, bytes) to the config observers
 * whenever the version changes. The version is the znode's data version
 * plus one: 1 after the create, +1 for every write; 0 means there is no
 * <root>/config (the nodes run with their local configuration only).
 *
 * Writes are compare-and-set: eb__config_write() names the version it
 * replaces and fails with EB_EZKBADVERSION when another writer came first.
 * Each write also creates <root>/config-history/v-<version, 10 digits> with
 * the same bytes in the same multi, and deletes in that multi the entries
 * beyond the last EB_CLUSTER_CONFIG_HISTORY versions (listed just before),
 * so the history is trimmed when the write is answered, also for a writer
 * that exits then (ebctl). Because the bytes go twice into one request, a
 * configuration is at most eb__config_max_bytes(): half of what
 * zookeeper.max_request_bytes leaves after the paths and headers
 * (499864 bytes for the default bound and root); a longer one is refused
 * before anything is sent (EB_EZKTOOBIG). The
 * znodes get the session's ACL (zookeeper.acl "creator": writable only
 * with the cluster's digest credential, readable by all).
 * Threads: loop thread only.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebnode/cluster.h>
#include <ebnode/log.h>

#include "cluster/cluster_int.h"
#include "common/alloc.h"
#include "common/assert.h"
#include "common/obs.h"
#include "common/vec.h"

struct eb__cluster_config {
	eb_cluster *c; /* borrowed: the owner */
	char       *path;
	char       *hist;
	eb__obs     obs;
	int64_t     version; /* last reported; -1: nothing read yet */
	char       *data;    /* owned copy of the last read bytes */
	size_t      len;
};

eb__cluster_config *
eb__cluster_config_new(eb_cluster *c)
{
	eb__cluster_config *cf = eb__calloc(1, sizeof(*cf));
	const char         *root = eb__cluster_root(c);
	size_t              n = strlen(root) + 32;

	cf->c = c;
	cf->path = eb__malloc(n);
	(void) snprintf(cf->path, n, "%s/config", root);
	cf->hist = eb__malloc(n);
	(void) snprintf(cf->hist, n, "%s/config-history", root);
	eb__obs_init(&cf->obs);
	cf->version = -1;
	return cf;
}

void
eb__cluster_config_free(eb__cluster_config *cf)
{
	if (cf == NULL) {
		return;
	}
	eb__obs_free(&cf->obs);
	free(cf->path);
	free(cf->hist);
	free(cf->data);
	free(cf);
}

void
eb_cluster_on_config(eb_cluster *c, eb_cluster_config_cb cb, void *arg)
{
	eb__obs_add(&eb__cluster_config_of(c)->obs, (eb__obs_fn) cb, arg);
}

int
eb_cluster_off_config(eb_cluster *c, eb_cluster_config_cb cb, void *arg)
{
	return eb__obs_remove(
	    &eb__cluster_config_of(c)->obs, (eb__obs_fn) cb, arg);
}

int64_t
eb_cluster_config_get(eb_cluster *c, const char **data, size_t *len)
{
	eb__cluster_config *cf = eb__cluster_config_of(c);

	*data = cf->data;
	*len = cf->len;
	return cf->version < 0 ? 0 : cf->version;
}

/* ---- reading ---- */

static void config_read(eb__cluster_config *cf);

static eb__cluster_config *
live_config(eb__zk *zk, void *arg)
{
	eb_cluster *c = eb__cluster_from_live(zk, arg);

	return c != NULL ? eb__cluster_config_of(c) : NULL;
}

static void
report(eb__cluster_config *cf, int64_t version, const char *data, size_t len)
{
	eb__obs_it it;

	if (version == cf->version && version != 0) {
		return; /* a re-read after a reconnect: nothing new */
	}
	if (version == 0 && cf->version == 0) {
		return;
	}
	free(cf->data);
	cf->data = NULL;
	cf->len = 0;
	if (data != NULL) {
		cf->data = eb__malloc(len + 1);
		memcpy(cf->data, data, len);
		cf->data[len] = '\0';
		cf->len = len;
	}
	cf->version = version;
	EB_LOG_DEBUG(
	    "config", "read: version=%" PRId64 " bytes=%zu", version, len);
	EB__OBS_EACH(&cf->obs, it)
	{
		((eb_cluster_config_cb) it.fn)(
		    cf->c, version, cf->data, cf->len, it.arg);
	}
}

static void
watch_cb(eb__zk *zk, eb__zk_watch_type type, const char *path, void *arg)
{
	eb__cluster_config *cf = live_config(zk, arg);

	(void) type;
	(void) path;
	if (cf != NULL) {
		config_read(cf);
	}
}

static void
exists_cb(eb__zk *zk, int status, const eb__zk_stat *st, void *arg)
{
	eb__cluster_config *cf = live_config(zk, arg);

	(void) st;
	if (cf != NULL && status == 0) {
		config_read(cf); /* created between our get and exists */
	}
}

static void
get_cb(eb__zk *zk, int status, const char *data, size_t len,
    const eb__zk_stat *st, void *arg)
{
	eb__cluster_config *cf = live_config(zk, arg);

	if (cf == NULL) {
		return;
	}
	if (status == EB_EZKNONODE) {
		report(cf, 0, NULL, 0);
		/* A get arms no watch on an absent node; exists does. */
		(void) eb__zk_exists(zk, cf->path, watch_cb,
		    eb__cluster_live_arg(cf->c), exists_cb,
		    eb__cluster_live_arg(cf->c));
		return;
	}
	if (status != 0) {
		return; /* loss: the reconnect reads again */
	}
	report(cf, (int64_t) st->version + 1, data, len);
}

static void
config_read(eb__cluster_config *cf)
{
	eb__zk *zk = eb__cluster_zk(cf->c);

	if (zk == NULL || eb__zk_get_state(zk) != EB_ZK_STATE_CONNECTED) {
		return;
	}
	(void) eb__zk_get(zk, cf->path, watch_cb, eb__cluster_live_arg(cf->c),
	    get_cb, eb__cluster_live_arg(cf->c));
}

void
eb__cluster_config_session_event(eb__cluster_config *cf, eb__zk_event ev)
{
	if (ev == EB_ZK_EV_CONNECTED || ev == EB_ZK_EV_RECONNECTED) {
		config_read(cf);
	}
}

/* ---- writing and history (any session: the node's or ebctl's) ---- */

static void
paths(const char *root, char *cfg, char *hist, size_t n)
{
	(void) snprintf(cfg, n, "%s/config", root);
	(void) snprintf(hist, n, "%s/config-history", root);
}

/* The history entry of version v under hist, into out. */
static void
hist_entry(char *out, size_t n, const char *hist, int64_t v)
{
	(void) snprintf(out, n, "%s/v-%010" PRId64, hist, v);
}

typedef struct set_ctx {
	eb__config_set_cb cb;
	void             *arg;
	char             *data;
	size_t            len;
	int64_t           expected;
	char              path[512];
	char              hist[512];
} set_ctx;

/* A write's own two ops: the config at path replacing version expected
 * (0: created), and its history copy at hpath. */
static void
write_ops(eb__zk_op ops[2], const char *path, const char *hpath,
    const char *data, size_t len, int64_t expected)
{
	memset(ops, 0, 2 * sizeof(*ops));
	if (expected == 0) {
		ops[0].type = EB_ZK_OP_CREATE;
	} else {
		ops[0].type = EB_ZK_OP_SET;
		ops[0].version = (int32_t) (expected - 1);
	}
	ops[0].path = path;
	ops[0].data = data;
	ops[0].len = len;
	ops[1].type = EB_ZK_OP_CREATE;
	ops[1].path = hpath;
	ops[1].data = data;
	ops[1].len = len;
}

size_t
eb__config_max_bytes(const eb__zk *zk, const char *root)
{
	eb__zk_op ops[2];
	char      cfg[512], hist[512], hpath[600];
	size_t    base, max = eb__zk_max_request(zk);

	paths(root, cfg, hist, sizeof(cfg));
	hist_entry(hpath, sizeof(hpath), hist, INT32_MAX);
	/* A create: the larger of the config's two possible ops. */
	write_ops(ops, cfg, hpath, "", 0, 0);
	base = eb__zk_multi_bytes(zk, ops, 2);
	/* Every byte of the configuration is sent twice. */
	return base < max ? (max - base) / 2 : 0;
}

/*
 * History deletes per write. Normally one (a write adds a version and
 * drops the oldest); a backlog (56 entries were found, left by builds
 * that trimmed after the answer) goes in one write up to this many, so one
 * multi stays short; the request bound may stop it earlier.
 */
#define CONFIG_TRIM_MAX 48

static void
set_finish(set_ctx *x, int status)
{
	x->cb(status, status == 0 ? x->expected + 1 : 0, x->arg);
	free(x->data);
	free(x);
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static void
multi_cb(eb__zk *zk, int status, const eb__zk_op_result *results, size_t count,
    void *arg)
{
	set_ctx *x = arg;

	(void) zk;
	(void) results;
	(void) count;
	if (status == EB_EZKNODEEXISTS || status == EB_EZKNONODE) {
		/* created (or deleted, or trimmed) by another writer
		 * meanwhile */
		status = EB_EZKBADVERSION;
	}
	set_finish(x, status);
}

/*
 * The write: the config op, its history copy and, in the same multi, the
 * deletes that leave EB_CLUSTER_CONFIG_HISTORY entries (the oldest first,
 * as many as fit in the request bound; a backlog beyond that shrinks with
 * every write). names are the history's children before the write.
 */
static void
set_write(eb__zk *zk, set_ctx *x, const char *const *names, size_t count)
{
	eb__zk_op   *ops;
	char       **del;
	const char **v;
	char         hpath[600];
	size_t       i, n = 0, nv = 0, ndel, bytes;
	int          rv;

	v = eb__calloc(count + 1, sizeof(*v));
	for (i = 0; i < count; i++) {
		if (strncmp(names[i], "v-", 2) == 0) {
			v[nv++] = names[i];
		}
	}
	qsort((void *) v, nv, sizeof(*v), name_cmp);
	ndel = nv >= EB_CLUSTER_CONFIG_HISTORY
	           ? nv + 1 - EB_CLUSTER_CONFIG_HISTORY
	           : 0;
	if (ndel > CONFIG_TRIM_MAX) {
		ndel = CONFIG_TRIM_MAX; /* the rest goes with the next writes */
	}
	ops = eb__calloc(2 + ndel, sizeof(*ops));
	del = eb__calloc(ndel + 1, sizeof(*del));
	hist_entry(hpath, sizeof(hpath), x->hist, x->expected + 1);
	write_ops(ops, x->path, hpath, x->data, x->len, x->expected);
	bytes = eb__zk_multi_bytes(zk, ops, 2);
	for (i = 0; i < ndel; i++) {
		size_t plen = strlen(x->hist) + strlen(v[i]) + 2;

		del[n] = eb__malloc(plen);
		(void) snprintf(del[n], plen, "%s/%s", x->hist, v[i]);
		ops[2 + n].type = EB_ZK_OP_DELETE;
		ops[2 + n].path = del[n];
		ops[2 + n].version = -1;
		bytes += eb__zk_multi_op_bytes(zk, &ops[2 + n]);
		if (bytes > eb__zk_max_request(zk)) {
			free(del[n]);
			break;
		}
		n++;
	}
	if ((rv = eb__zk_multi(zk, ops, 2 + n, multi_cb, x)) != 0) {
		set_finish(x, rv);
	}
	for (i = 0; i < n; i++) {
		free(del[i]);
	}
	free((void *) del);
	free(ops);
	free((void *) v);
}

static void
hist_list_cb(
    eb__zk *zk, int status, const char *const *names, size_t count, void *arg)
{
	set_ctx *x = arg;

	if (status != 0) {
		set_finish(x, status);
		return;
	}
	set_write(zk, x, names, count);
}

static void
hist_ready_cb(eb__zk *zk, int status, void *arg)
{
	set_ctx *x = arg;
	int      rv;

	if (status != 0) {
		set_finish(x, status);
		return;
	}
	rv = eb__zk_get_children(zk, x->hist, NULL, NULL, hist_list_cb, x);
	if (rv != 0) {
		set_finish(x, rv);
	}
}

int
eb__config_write(eb__zk *zk, const char *root, const char *data, size_t len,
    int64_t expected_version, eb__config_set_cb cb, void *arg)
{
	set_ctx *x;
	int      rv;

	if (expected_version < 0 || expected_version >= INT32_MAX ||
	    strlen(root) > 400) {
		return EB_EZKBADARGS;
	}
	/* Checked before anything is sent: a write that cannot fit in one
	 * request would otherwise fail only at the multi. */
	if (len > eb__config_max_bytes(zk, root)) {
		return EB_EZKTOOBIG;
	}
	x = eb__calloc(1, sizeof(*x));
	x->cb = cb;
	x->arg = arg;
	x->data = eb__malloc(len + 1);
	memcpy(x->data, data, len);
	x->len = len;
	x->expected = expected_version;
	paths(root, x->path, x->hist, sizeof(x->path));
	if ((rv = eb__zk_ensure_path(zk, x->hist, hist_ready_cb, x)) != 0) {
		free(x->data);
		free(x);
		return rv;
	}
	return 0;
}

typedef struct hist_ctx {
	eb__config_history_cb cb;
	void                 *arg;
	char                  hist[512];
	char                **names; /* owned, sorted */
	size_t                n, next;
	eb__vec               got; /* of eb__config_version */
} hist_ctx;

static void
hist_finish(hist_ctx *x, int status)
{
	size_t i;

	x->cb(status, x->got.data, x->got.len, x->arg);
	for (i = 0; i < x->got.len; i++) {
		eb__config_version *v = eb__vec_at(&x->got, i);

		free(v->data);
	}
	eb__vec_free(&x->got);
	for (i = 0; i < x->n; i++) {
		free(x->names[i]);
	}
	free((void *) x->names);
	free(x);
}

static void hist_next(eb__zk *zk, hist_ctx *x);

static void
hist_get_cb(eb__zk *zk, int status, const char *data, size_t len,
    const eb__zk_stat *st, void *arg)
{
	hist_ctx *x = arg;

	(void) st;
	if (status == 0) {
		eb__config_version *v = eb__vec_push(&x->got);

		v->data = eb__malloc(len + 1);
		memcpy(v->data, data, len);
		v->data[len] = '\0';
		v->version = strtoll(x->names[x->next] + 2, NULL, 10);
		v->len = len;
	} else if (status != EB_EZKNONODE) {
		hist_finish(x, status);
		return;
	}
	x->next++;
	hist_next(zk, x);
}

static void
hist_next(eb__zk *zk, hist_ctx *x)
{
	char path[600];
	int  rv;

	if (x->next >= x->n) {
		hist_finish(x, 0);
		return;
	}
	(void) snprintf(
	    path, sizeof(path), "%s/%s", x->hist, x->names[x->next]);
	if ((rv = eb__zk_get(zk, path, NULL, NULL, hist_get_cb, x)) != 0) {
		hist_finish(x, rv);
	}
}

static void
hist_children_cb(
    eb__zk *zk, int status, const char *const *names, size_t count, void *arg)
{
	hist_ctx *x = arg;
	size_t    i;

	if (status == EB_EZKNONODE) {
		hist_finish(x, 0);
		return;
	}
	if (status != 0) {
		hist_finish(x, status);
		return;
	}
	x->names = eb__calloc(count + 1, sizeof(*x->names));
	for (i = 0; i < count; i++) {
		if (strncmp(names[i], "v-", 2) == 0) {
			x->names[x->n++] = eb__strdup(names[i]);
		}
	}
	qsort((void *) x->names, x->n, sizeof(*x->names), name_cmp);
	hist_next(zk, x);
}

int
eb__config_history(
    eb__zk *zk, const char *root, eb__config_history_cb cb, void *arg)
{
	hist_ctx *x;
	char      cfg[512];
	int       rv;

	if (strlen(root) > 400) {
		return EB_EZKBADARGS;
	}
	x = eb__calloc(1, sizeof(*x));
	x->cb = cb;
	x->arg = arg;
	paths(root, cfg, x->hist, sizeof(x->hist));
	eb__vec_init(&x->got, sizeof(eb__config_version));
	rv = eb__zk_get_children(zk, x->hist, NULL, NULL, hist_children_cb, x);
	if (rv != 0) {
		eb__vec_free(&x->got);
		free(x);
	}
	return rv;
}
