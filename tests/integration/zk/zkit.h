/*
 * Helpers for the ZooKeeper integration tests (tests/integration/zk): the
 * fixture contract (EB_ZK_CONNECT_FILE, EB_ZK_FIXTURE_DIR,
 * EB_ZK_FIXTURE_SCRIPT), a session-event recorder, synchronous-looking
 * wrappers that run the loop until one eb__zk callback arrives (bounded), a
 * fixture-script runner that keeps the loop turning, and a loop-stall meter.
 * Loop thread only; every wait is bounded and fails the test on timeout.
 */
#ifndef EB_TEST_ZKIT_H
#define EB_TEST_ZKIT_H

#include <stddef.h>
#include <stdint.h>

#include "tests/harness/th.h"
#include "zk/zk.h"

#define ZKIT_MAX_EVENTS 32

typedef struct zkit_events {
	eb__zk_event ev[ZKIT_MAX_EVENTS];
	int64_t  sid[ZKIT_MAX_EVENTS]; /* eb__zk_session_id() at the event */
	uint64_t at_ms[ZKIT_MAX_EVENTS];
	int      n;
} zkit_events;

/* eb__zk_event_cb recording into a zkit_events (arg). */
void zkit_on_event(eb__zk *zk, eb__zk_event ev, void *arg);
/* Waits until the recorder holds at least n events; 0 or -1. */
int zkit_wait_events(th_loop *t, zkit_events *e, int n, uint64_t timeout_ms);

/* The first line of a file (malloc'd, no newline) or NULL. */
char *zkit_read_line(const char *path);
/* The connect string of the fixture (EB_ZK_CONNECT_FILE); fails the test
 * when the fixture is missing. malloc'd. */
char *zkit_connect(void);
/* cmocka group hooks: the setup reads the fixture's connect string into
 * zkit_connect_str (owned here), the teardown frees it. */
extern char *zkit_connect_str;
int          zkit_group_setup(void **state);
int          zkit_group_teardown(void **state);
/* The port of a connect string's last "host:port" (0: none). */
int zkit_port_of(const char *connect);
/* "/ebtest-zk/<uuid>" into buf. */
void zkit_unique_root(char *buf, size_t len);

/* New + start; waits for CONNECTED (fails the test otherwise). */
eb__zk *zkit_open(
    th_loop *t, const char *connect, uint32_t timeout_ms, zkit_events *e);
/* Close and wait for the close callback (fails the test otherwise). */
void zkit_close(th_loop *t, eb__zk *zk);

/* Synchronous-looking operations: each returns the callback's status. */
typedef struct zkit_res {
	int         done;
	int         status;
	char        path[512];
	char        data[512];
	size_t      len;
	int         has_data;
	eb__zk_stat stat;
	int         has_stat;
	char        names[64][128];
	size_t      count;
} zkit_res;

int zkit_create(th_loop *t, eb__zk *zk, const char *path, const char *data,
    int flags, zkit_res *r);
int zkit_delete(th_loop *t, eb__zk *zk, const char *path, int32_t version);
int zkit_exists(th_loop *t, eb__zk *zk, const char *path, eb__zk_watch_cb w,
    void *warg, zkit_res *r);
int zkit_get(th_loop *t, eb__zk *zk, const char *path, eb__zk_watch_cb w,
    void *warg, zkit_res *r);
int zkit_children(th_loop *t, eb__zk *zk, const char *path, eb__zk_watch_cb w,
    void *warg, zkit_res *r);
int zkit_set(th_loop *t, eb__zk *zk, const char *path, const char *data,
    int32_t version, zkit_res *r);
int zkit_ensure(th_loop *t, eb__zk *zk, const char *path);

/* A one-shot watch recorder. */
typedef struct zkit_watch {
	int               fired;
	eb__zk_watch_type type;
	char              path[512];
} zkit_watch;
void zkit_on_watch(
    eb__zk *zk, eb__zk_watch_type type, const char *path, void *arg);

/*
 * Runs the fixture script (EB_ZK_FIXTURE_SCRIPT) with args[0..] (e.g.
 * {"restart", dir, NULL}) as a child process while the loop keeps running;
 * returns its exit status, or -1 on timeout (the child is killed).
 * If started != NULL, *started is set once spawned; the caller may pass a
 * predicate through th_run_until meanwhile via zkit_script_start/_wait.
 */
typedef struct zkit_proc {
	uv_process_t proc;
	int          exited;
	int64_t      status;
} zkit_proc;
void zkit_script_start(th_loop *t, zkit_proc *p, const char *const *args);
int  zkit_script_wait(th_loop *t, zkit_proc *p, uint64_t timeout_ms);

/* Measures the longest gap between 5 ms timer ticks: a blocked loop shows up
 * as a long gap. */
typedef struct zkit_meter {
	uv_timer_t timer;
	uint64_t   last_ns;
	uint64_t   max_gap_ns;
	uint64_t   ticks;
} zkit_meter;
void zkit_meter_start(th_loop *t, zkit_meter *m);
/* Closes the timer: run the loop before m goes out of scope. */
void zkit_meter_stop(zkit_meter *m);

#endif
