/* Unit tests for the lifecycle walk (common/steps.h) on its own: order,
 * a failure in the middle, a stop while a step without cancel is starting,
 * a stop before the start, cancel called once, a step's wait for two close
 * callbacks, and the node-independent hooks. unit.node.lifecycle_test runs
 * the node's own table over it. */
#include <stdio.h>
#include <string.h>

#include <ebnode/err.h>
#include <ebnode/log.h>

#include "common/steps.h"
#include "tests/harness/th.h"

enum mode { OK = 0, FAIL_NOW, FAIL_LATER, HOLD, WAIT2 };

typedef struct fixture {
	eb__steps         s;
	eb__deferq        defer;
	int               start_mode[3];
	char              ev[256];
	eb__steps_done_cb held; /* a HOLD step's callback */
	int               holding, cancels, up, failed_err, stopping, down;
} fixture;

static fixture *
fx_of(eb__steps *s)
{
	return (fixture *) (void *) s; /* s is the first member */
}

static void
rec(fixture *f, const char *what, size_t k)
{
	size_t n = strlen(f->ev);

	(void) snprintf(
	    f->ev + n, sizeof(f->ev) - n, "%s%s%zu", n > 0 ? " " : "", what, k);
}

static void
wait_one(void *arg)
{
	eb__steps_wait_done(arg);
}

static int
step_start(eb__steps *s, eb__steps_done_cb cb, size_t k)
{
	fixture        *f = fx_of(s);
	eb__steps_wait *w;

	rec(f, "start", k);
	switch (f->start_mode[k]) {
	case FAIL_NOW:
		return UV_EINVAL;
	case FAIL_LATER:
		eb__steps_complete(s, cb, UV_ENOMEM);
		return 0;
	case HOLD:
		f->held = cb;
		f->holding = 1;
		return 0;
	case WAIT2:
		/* Two close callbacks on later turns; the second completes. */
		w = eb__steps_wait_new(s, cb, 0, 2);
		eb__defer(&f->defer, wait_one, w);
		eb__defer(&f->defer, wait_one, w);
		return 0;
	default:
		eb__steps_complete(s, cb, 0);
		return 0;
	}
}

static void
step_stop(eb__steps *s, eb__steps_done_cb cb, size_t k)
{
	rec(fx_of(s), "stop", k);
	eb__steps_complete(s, cb, 0);
}

#define STEP_FNS(k)                                             \
	static int start##k(eb__steps *s, eb__steps_done_cb cb) \
	{                                                       \
		return step_start(s, cb, k);                    \
	}                                                       \
	static void stop##k(eb__steps *s, eb__steps_done_cb cb) \
	{                                                       \
		step_stop(s, cb, k);                            \
	}
STEP_FNS(0)
STEP_FNS(1)
STEP_FNS(2)

static void
cancel1(eb__steps *s)
{
	fixture          *f = fx_of(s);
	eb__steps_done_cb cb = f->held;

	f->cancels++;
	f->held = NULL;
	eb__steps_complete(s, cb, EB_ECANCELED);
}

static void
on_up(eb__steps *s)
{
	fx_of(s)->up++;
}
static void
on_failed(eb__steps *s, const eb__step *step, int err)
{
	(void) step;
	fx_of(s)->failed_err = err;
}
static void
on_stopping(eb__steps *s)
{
	fx_of(s)->stopping++;
}
static void
on_down(eb__steps *s)
{
	fixture *f = fx_of(s);

	f->down++;
	eb__deferq_close(&f->defer, NULL);
}

static const eb__steps_cbs cbs = { on_up, on_failed, on_stopping, on_down };

static void
fx_init(th_loop *t, fixture *f, const eb__step *table)
{
	memset(f, 0, sizeof(*f));
	assert_int_equal(eb__deferq_init(&t->loop, &f->defer), 0);
	f->s.table = table;
	f->s.count = 3;
	f->s.cbs = &cbs;
	f->s.defer = &f->defer;
	f->s.log = "test";
}

static const eb__step plain[] = { { "s0", start0, stop0, NULL },
	{ "s1", start1, stop1, NULL }, { "s2", start2, stop2, NULL } };
static const eb__step with_cancel[] = { { "s0", start0, stop0, NULL },
	{ "s1", start1, stop1, cancel1 }, { "s2", start2, stop2, NULL } };

static void
test_order_and_wait(void **state)
{
	th_loop *t = *state;
	fixture  f;

	fx_init(t, &f, plain);
	f.start_mode[1] = WAIT2;
	eb__steps_start(&f.s);
	assert_int_equal(th_run_until(t, th_flag_set, &f.up, 2000), 0);
	assert_int_equal(f.s.phase, EB__STEPS_RUNNING);
	assert_int_equal(f.s.started, 3);
	eb__steps_stop(&f.s);
	eb__steps_stop(&f.s); /* twice: idempotent */
	assert_int_equal(th_loop_run(t), 0);
	assert_string_equal(f.ev, "start0 start1 start2 stop2 stop1 stop0");
	assert_int_equal(f.stopping, 1);
	assert_int_equal(f.down, 1);
	assert_int_equal(f.s.phase, EB__STEPS_DONE);
}

static void
test_failures_walk_back(void **state)
{
	th_loop *t = *state;
	fixture  f;

	fx_init(t, &f, plain);
	f.start_mode[2] = FAIL_LATER;
	eb__steps_start(&f.s);
	assert_int_equal(th_loop_run(t), 0);
	assert_string_equal(f.ev, "start0 start1 start2 stop1 stop0");
	assert_int_equal(f.failed_err, UV_ENOMEM);
	assert_int_equal(f.up, 0);
	assert_int_equal(f.down, 1);

	fx_init(t, &f, plain);
	f.start_mode[1] = FAIL_NOW; /* no callback: nothing to stop of it */
	eb__steps_start(&f.s);
	assert_int_equal(th_loop_run(t), 0);
	assert_string_equal(f.ev, "start0 start1 stop0");
	assert_int_equal(f.failed_err, UV_EINVAL);
	assert_int_equal(f.down, 1);
}

static void
release_cb(uv_timer_t *h)
{
	fixture          *f = h->data;
	eb__steps_done_cb cb = f->held;

	f->held = NULL;
	cb(&f->s, 0);
	uv_close((uv_handle_t *) h, NULL);
}

/* Without cancel, a stop waits for the start in flight, which then stops
 * too; with cancel, the start is cut short (once) and not stopped. */
static void
test_stop_while_starting(void **state)
{
	th_loop   *t = *state;
	fixture    f;
	uv_timer_t timer;

	fx_init(t, &f, plain);
	f.start_mode[1] = HOLD;
	eb__steps_start(&f.s);
	assert_int_equal(th_run_until(t, th_flag_set, &f.holding, 2000), 0);
	eb__steps_stop(&f.s);
	assert_int_equal(f.stopping, 0); /* waits for the step */
	assert_int_equal(uv_timer_init(&t->loop, &timer), 0);
	timer.data = &f;
	assert_int_equal(uv_timer_start(&timer, release_cb, 20, 0), 0);
	assert_int_equal(th_loop_run(t), 0);
	assert_string_equal(f.ev, "start0 start1 stop1 stop0");
	assert_int_equal(f.failed_err, 0);

	fx_init(t, &f, with_cancel);
	f.start_mode[1] = HOLD;
	eb__steps_start(&f.s);
	assert_int_equal(th_run_until(t, th_flag_set, &f.holding, 2000), 0);
	eb__steps_stop(&f.s);
	eb__steps_stop(&f.s);
	assert_int_equal(th_loop_run(t), 0);
	assert_string_equal(f.ev, "start0 start1 stop0");
	assert_int_equal(f.cancels, 1);
	assert_int_equal(f.failed_err, 0); /* canceled is not failed */
	assert_int_equal(f.down, 1);
}

static void
test_stop_before_start(void **state)
{
	th_loop *t = *state;
	fixture  f;

	fx_init(t, &f, plain);
	eb__steps_stop(&f.s);
	assert_int_equal(f.down, 1);
	eb__steps_start(&f.s); /* nothing: already done */
	assert_int_equal(th_loop_run(t), 0);
	assert_string_equal(f.ev, "");
	assert_int_equal(f.s.phase, EB__STEPS_DONE);
	assert_string_equal(eb__steps_current(&f.s), "s0");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_order_and_wait, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_failures_walk_back, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_stop_while_starting, th_setup, th_teardown),
		cmocka_unit_test_setup_teardown(
		    test_stop_before_start, th_setup, th_teardown),
	};

	eb_log_set_level(EB_LOG_LEVEL_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
