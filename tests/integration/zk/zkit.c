/* Helpers for the ZooKeeper integration tests; see zkit.h. */
#include "tests/integration/zk/zkit.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

void
zkit_on_event(eb__zk *zk, eb__zk_event ev, void *arg)
{
	zkit_events *e = arg;

	if (e->n >= ZKIT_MAX_EVENTS) {
		fail_msg("too many session events");
	}
	e->ev[e->n] = ev;
	e->sid[e->n] = eb__zk_session_id(zk);
	e->at_ms[e->n] = eb__mono_ms();
	e->n++;
	(void) fprintf(stderr, "zkit: event %d sid=0x%llx\n", (int) ev,
	    (unsigned long long) eb__zk_session_id(zk));
}

struct count_pred {
	const int *n;
	int        want;
};

static int
count_reached(void *arg)
{
	struct count_pred *c = arg;

	return *c->n >= c->want;
}

int
zkit_wait_events(th_loop *t, zkit_events *e, int n, uint64_t timeout_ms)
{
	struct count_pred c = { &e->n, n };

	return th_run_until(t, count_reached, &c, timeout_ms);
}

char *
zkit_read_line(const char *path)
{
	FILE  *f = fopen(path, "r");
	char   buf[1024];
	size_t n;

	if (f == NULL) {
		return NULL;
	}
	if (fgets(buf, sizeof(buf), f) == NULL) {
		(void) fclose(f);
		return NULL;
	}
	(void) fclose(f);
	n = strlen(buf);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) {
		buf[--n] = '\0';
	}
	return n > 0 ? strdup(buf) : NULL;
}

char *
zkit_connect(void)
{
	const char *f = getenv("EB_ZK_CONNECT_FILE");
	char       *s;

	if (f == NULL) {
		fail_msg(
		    "EB_ZK_CONNECT_FILE not set: the test needs a ZooKeeper "
		    "fixture (FIXTURES_REQUIRED)");
	}
	s = zkit_read_line(f);
	if (s == NULL) {
		fail_msg("cannot read %s", f);
	}
	return s;
}

char *zkit_connect_str;

int
zkit_group_setup(void **state)
{
	(void) state;
	zkit_connect_str = zkit_connect();
	return 0;
}

int
zkit_group_teardown(void **state)
{
	(void) state;
	free(zkit_connect_str);
	zkit_connect_str = NULL;
	return 0;
}

int
zkit_port_of(const char *connect)
{
	const char *c = strrchr(connect, ':');

	return c != NULL ? (int) strtol(c + 1, NULL, 10) : 0;
}

void
zkit_unique_root(char *buf, size_t len)
{
	char id[EB_UUID_STRLEN + 1];

	assert_int_equal(eb__uuid(id), 0);
	(void) snprintf(buf, len, "/ebtest-zk/%s", id);
}

eb__zk *
zkit_open(th_loop *t, const char *connect, uint32_t timeout_ms, zkit_events *e)
{
	eb__zk_opts o;
	eb__zk     *zk = NULL;
	int         n0 = e->n;

	eb__zk_opts_init(&o);
	o.connect = connect;
	o.session_timeout_ms = timeout_ms;
	assert_int_equal(eb__zk_new(&t->loop, &o, zkit_on_event, e, &zk), 0);
	assert_int_equal(eb__zk_start(zk), 0);
	assert_int_equal(zkit_wait_events(t, e, n0 + 1, 20000), 0);
	assert_int_equal(e->ev[n0], EB_ZK_EV_CONNECTED);
	assert_int_equal(eb__zk_get_state(zk), EB_ZK_STATE_CONNECTED);
	assert_true(eb__zk_session_id(zk) != 0);
	return zk;
}

static void
close_cb(eb__zk *zk, void *arg)
{
	(void) zk;
	(*(int *) arg)++;
}

void
zkit_close(th_loop *t, eb__zk *zk)
{
	int closed = 0;

	eb__zk_close(zk, close_cb, &closed);
	assert_int_equal(closed, 0);
	assert_int_equal(th_run_until(t, th_flag_set, &closed, 15000), 0);
	assert_int_equal(closed, 1);
}

static void
res_create_cb(eb__zk *zk, int status, const char *path, void *arg)
{
	zkit_res *r = arg;

	(void) zk;
	if (r->done++) {
		fail_msg("create callback twice");
	}
	r->status = status;
	if (path != NULL) {
		(void) snprintf(r->path, sizeof(r->path), "%s", path);
	}
}

static void
res_void_cb(eb__zk *zk, int status, void *arg)
{
	zkit_res *r = arg;

	(void) zk;
	if (r->done++) {
		fail_msg("callback twice");
	}
	r->status = status;
}

static void
res_stat_cb(eb__zk *zk, int status, const eb__zk_stat *stat, void *arg)
{
	zkit_res *r = arg;

	(void) zk;
	if (r->done++) {
		fail_msg("stat callback twice");
	}
	r->status = status;
	if (stat != NULL) {
		r->stat = *stat;
		r->has_stat = 1;
	}
}

static void
res_data_cb(eb__zk *zk, int status, const char *data, size_t len,
    const eb__zk_stat *stat, void *arg)
{
	zkit_res *r = arg;

	(void) zk;
	if (r->done++) {
		fail_msg("data callback twice");
	}
	r->status = status;
	if (data != NULL) {
		assert_true(len < sizeof(r->data));
		memcpy(r->data, data, len);
		r->data[len] = '\0';
		r->has_data = 1;
	}
	r->len = len;
	if (stat != NULL) {
		r->stat = *stat;
		r->has_stat = 1;
	}
}

static void
res_children_cb(
    eb__zk *zk, int status, const char *const *names, size_t count, void *arg)
{
	zkit_res *r = arg;
	size_t    i;

	(void) zk;
	if (r->done++) {
		fail_msg("children callback twice");
	}
	r->status = status;
	r->count = count;
	for (i = 0; i < count && i < 64; i++) {
		(void) snprintf(
		    r->names[i], sizeof(r->names[i]), "%s", names[i]);
	}
}

static int
res_wait(th_loop *t, zkit_res *r, int rv)
{
	assert_int_equal(rv, 0);
	assert_int_equal(th_run_until(t, th_flag_set, &r->done, 15000), 0);
	return r->status;
}

int
zkit_create(th_loop *t, eb__zk *zk, const char *path, const char *data,
    int flags, zkit_res *r)
{
	memset(r, 0, sizeof(*r));
	return res_wait(t, r,
	    eb__zk_create(zk, path, data, data != NULL ? strlen(data) : 0,
	        flags, res_create_cb, r));
}

int
zkit_delete(th_loop *t, eb__zk *zk, const char *path, int32_t version)
{
	zkit_res r;

	memset(&r, 0, sizeof(r));
	return res_wait(
	    t, &r, eb__zk_delete(zk, path, version, res_void_cb, &r));
}

int
zkit_exists(th_loop *t, eb__zk *zk, const char *path, eb__zk_watch_cb w,
    void *warg, zkit_res *r)
{
	memset(r, 0, sizeof(*r));
	return res_wait(t, r, eb__zk_exists(zk, path, w, warg, res_stat_cb, r));
}

int
zkit_get(th_loop *t, eb__zk *zk, const char *path, eb__zk_watch_cb w,
    void *warg, zkit_res *r)
{
	memset(r, 0, sizeof(*r));
	return res_wait(t, r, eb__zk_get(zk, path, w, warg, res_data_cb, r));
}

int
zkit_children(th_loop *t, eb__zk *zk, const char *path, eb__zk_watch_cb w,
    void *warg, zkit_res *r)
{
	memset(r, 0, sizeof(*r));
	return res_wait(
	    t, r, eb__zk_get_children(zk, path, w, warg, res_children_cb, r));
}

int
zkit_set(th_loop *t, eb__zk *zk, const char *path, const char *data,
    int32_t version, zkit_res *r)
{
	memset(r, 0, sizeof(*r));
	return res_wait(t, r,
	    eb__zk_set(zk, path, data, strlen(data), version, res_stat_cb, r));
}

int
zkit_ensure(th_loop *t, eb__zk *zk, const char *path)
{
	zkit_res r;

	memset(&r, 0, sizeof(r));
	return res_wait(t, &r, eb__zk_ensure_path(zk, path, res_void_cb, &r));
}

void
zkit_on_watch(eb__zk *zk, eb__zk_watch_type type, const char *path, void *arg)
{
	zkit_watch *w = arg;

	(void) zk;
	w->fired++;
	w->type = type;
	(void) snprintf(w->path, sizeof(w->path), "%s", path);
}

static void
proc_exit_cb(uv_process_t *p, int64_t status, int sig)
{
	zkit_proc *z = p->data;

	z->exited = 1;
	z->status = sig != 0 ? 128 + sig : status;
	uv_close((uv_handle_t *) p, NULL);
}

/* uv_process_options_t wants char **; libuv does not write to them. */
static char *
unconst(const char *s)
{
	union {
		const char *c;
		char       *m;
	} u;

	u.c = s;
	return u.m;
}

void
zkit_script_start(th_loop *t, zkit_proc *p, const char *const *args)
{
	const char          *script = getenv("EB_ZK_FIXTURE_SCRIPT");
	char                *argv[8];
	uv_process_options_t o;
	uv_stdio_container_t io[3];
	int                  i;

	if (script == NULL) {
		fail_msg("EB_ZK_FIXTURE_SCRIPT not set");
	}
	memset(p, 0, sizeof(*p));
	memset(&o, 0, sizeof(o));
	argv[0] = unconst(script);
	for (i = 0; args[i] != NULL && i < 6; i++) {
		argv[i + 1] = unconst(args[i]);
	}
	argv[i + 1] = NULL;
	io[0].flags = UV_IGNORE;
	io[1].flags = UV_INHERIT_FD;
	io[1].data.fd = 2; /* script chatter goes to the test log */
	io[2].flags = UV_INHERIT_FD;
	io[2].data.fd = 2;
	o.file = script;
	o.args = argv;
	o.stdio = io;
	o.stdio_count = 3;
	o.exit_cb = proc_exit_cb;
	p->proc.data = p;
	assert_int_equal(uv_spawn(&t->loop, &p->proc, &o), 0);
}

int
zkit_script_wait(th_loop *t, zkit_proc *p, uint64_t timeout_ms)
{
	if (th_run_until(t, th_flag_set, &p->exited, timeout_ms) != 0) {
		(void) uv_process_kill(&p->proc, SIGKILL);
		(void) th_run_until(t, th_flag_set, &p->exited, 5000);
		return -1;
	}
	return (int) p->status;
}

static void
meter_cb(uv_timer_t *h)
{
	zkit_meter *m = h->data;
	uint64_t    now = uv_hrtime();

	if (m->last_ns != 0 && now - m->last_ns > m->max_gap_ns) {
		m->max_gap_ns = now - m->last_ns;
	}
	m->last_ns = now;
	m->ticks++;
}

void
zkit_meter_start(th_loop *t, zkit_meter *m)
{
	memset(m, 0, sizeof(*m));
	(void) uv_timer_init(&t->loop, &m->timer);
	m->timer.data = m;
	m->last_ns = uv_hrtime();
	(void) uv_timer_start(&m->timer, meter_cb, 5, 5);
}

void
zkit_meter_stop(zkit_meter *m)
{
	meter_cb(&m->timer); /* count the gap up to now */
	uv_close((uv_handle_t *) &m->timer, NULL);
}
