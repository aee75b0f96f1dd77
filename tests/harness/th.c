/* cmocka loop harness; see th.h. */
#include "tests/harness/th.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define TH_WATCHDOG_MS 5000u

uint64_t
th_timeout_multiplier(void)
{
	const char   *s = getenv("EB_TEST_TIMEOUT_MULTIPLIER");
	char         *end = NULL;
	unsigned long v;

	if (s == NULL || *s == '\0') {
		return 1;
	}
	v = strtoul(s, &end, 10);
	if (end == NULL || *end != '\0' || v < 1) {
		return 1;
	}
	return v;
}

static void
watchdog_cb(uv_timer_t *h)
{
	th_loop *t = h->data;

	t->fired = 1;
	(void) fprintf(stderr, "th: watchdog fired, stopping the loop\n");
	uv_stop(&t->loop);
}

void
th_watchdog_ms(th_loop *t, uint64_t ms)
{
	(void) uv_timer_start(
	    &t->watchdog, watchdog_cb, ms * th_timeout_multiplier(), 0);
}

int
th_setup(void **state)
{
	th_loop *t = calloc(1, sizeof(*t));

	if (t == NULL || uv_loop_init(&t->loop) != 0) {
		free(t);
		return -1;
	}
	(void) uv_timer_init(&t->loop, &t->watchdog);
	t->watchdog.data = t;
	th_watchdog_ms(t, TH_WATCHDOG_MS);
	uv_unref((uv_handle_t *) &t->watchdog);
	*state = t;
	return 0;
}

static void
dump_cb(uv_handle_t *h, void *arg)
{
	int *n = arg;

	if (uv_is_closing(h)) {
		return;
	}
	(*n)++;
	(void) fprintf(stderr, "th: leaked handle type=%s active=%d\n",
	    uv_handle_type_name(uv_handle_get_type(h)), uv_is_active(h));
}

int
th_dump_handles(uv_loop_t *loop)
{
	int n = 0;

	uv_walk(loop, dump_cb, &n);
	return n;
}

int
th_teardown(void **state)
{
	th_loop *t = *state;
	int      rv;

	uv_close((uv_handle_t *) &t->watchdog, NULL);
	(void) uv_run(&t->loop, UV_RUN_NOWAIT);
	(void) uv_run(&t->loop, UV_RUN_NOWAIT);
	(void) th_dump_handles(&t->loop);
	rv = uv_loop_close(&t->loop);
	free(t);
	*state = NULL;
	/* Teardown failure (a leaked handle) fails the test. */
	assert_int_equal(rv, 0);
	return 0;
}

int
th_loop_run(th_loop *t)
{
	t->fired = 0;
	(void) uv_run(&t->loop, UV_RUN_DEFAULT);
	return t->fired ? -1 : 0;
}

int
th_flag_set(void *arg)
{
	return *(int *) arg != 0;
}

static void
deadline_cb(uv_timer_t *h)
{
	*(int *) h->data = 1;
}

static void
close_free_cb(uv_handle_t *h)
{
	free(h);
}

struct until {
	int (*pred)(void *arg);
	void *arg;
};

/* Runs before the loop blocks: when a callback of this iteration (a timer,
 * say) made the predicate true, stop instead of sleeping until the next
 * event. */
static void
until_prepare_cb(uv_prepare_t *h)
{
	struct until *u = h->data;

	if (u->pred(u->arg)) {
		uv_stop(h->loop);
	}
}

int
th_run_until(th_loop *t, int (*pred)(void *arg), void *arg, uint64_t timeout_ms)
{
	uv_timer_t   *deadline = malloc(sizeof(*deadline));
	uv_prepare_t *check = malloc(sizeof(*check));
	struct until  u = { pred, arg };
	int           expired = 0;
	int           ok;

	if (deadline == NULL || check == NULL) {
		free(deadline);
		free(check);
		return -1;
	}
	(void) uv_timer_init(&t->loop, deadline);
	deadline->data = &expired;
	(void) uv_timer_start(
	    deadline, deadline_cb, timeout_ms * th_timeout_multiplier(), 0);
	(void) uv_prepare_init(&t->loop, check);
	check->data = &u;
	(void) uv_prepare_start(check, until_prepare_cb);
	t->fired = 0;
	while (!(ok = pred(arg)) && !expired && !t->fired) {
		(void) uv_run(&t->loop, UV_RUN_ONCE);
	}
	uv_close((uv_handle_t *) deadline, close_free_cb);
	uv_close((uv_handle_t *) check, close_free_cb);
	return ok ? 0 : -1;
}

const char *
th_cert(const char *name)
{
	const char *dir = getenv("EB_CERTS_DIR");
	static char buf[8][512];
	static int  i;
	char       *out = buf[i++ % 8];

	assert_non_null(dir);
	(void) snprintf(out, sizeof(buf[0]), "%s/%s", dir, name);
	return out;
}

int
th_expect_abort(void (*fn)(const void *arg), const void *arg)
{
	pid_t pid;
	int   status = 0;

	(void) fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		fn(arg);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}
