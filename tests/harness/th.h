/*
 * Test harness for cmocka tests: a private loop per test, a watchdog that
 * stops a hung test, helpers to run the loop until a condition holds (bounded)
 * and a teardown that fails on leaked handles.
 *
 *   static const struct CMUnitTest tests[] = {
 *       cmocka_unit_test_setup_teardown(test_x, th_setup, th_teardown),
 *   };
 *
 * The watchdog is 5 s x EB_TEST_TIMEOUT_MULTIPLIER (environment) unless a test
 * changes it with th_watchdog_ms() before running the loop.
 */
#ifndef EB_TEST_TH_H
#define EB_TEST_TH_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <uv.h>

typedef struct th_loop {
	uv_loop_t  loop;
	uv_timer_t watchdog;
	int        fired; /* the watchdog stopped the loop */
} th_loop;

int th_setup(void **state);
int th_teardown(void **state);
/* Rearms the watchdog (multiplied by EB_TEST_TIMEOUT_MULTIPLIER). */
void th_watchdog_ms(th_loop *t, uint64_t ms);
/* Runs the loop until it has nothing left to do: 0, or -1 if the watchdog
 * fired. */
int th_loop_run(th_loop *t);
/*
 * Runs the loop until pred(arg) is true or timeout_ms passed: 0 when the
 * predicate holds, -1 on timeout. The predicate is checked after every loop
 * iteration; a timer guarantees the loop wakes at the deadline.
 */
int th_run_until(
    th_loop *t, int (*pred)(void *arg), void *arg, uint64_t timeout_ms);
/* Convenience predicate: *(int *) arg != 0. */
int th_flag_set(void *arg);
/* The test timeout multiplier from the environment (>= 1). */
uint64_t th_timeout_multiplier(void);
/* The path of a file of the "certs" fixture ($EB_CERTS_DIR/name; the test
 * fails without EB_CERTS_DIR). Eight rotating static buffers. */
const char *th_cert(const char *name);
/* Runs fn(arg) in a forked child and returns 1 when it aborted (an
 * EB_ASSERT failed), else 0. fn must use its own loop, never the test's:
 * a forked child shares the parent's epoll set. */
int th_expect_abort(void (*fn)(const void *arg), const void *arg);
/* Prints every open handle of the loop to stderr; returns their count. */
int th_dump_handles(uv_loop_t *loop);

#endif
