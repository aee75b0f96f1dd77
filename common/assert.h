/*
 * EB_ASSERT: an invariant check that is always compiled in (release builds
 * too). A failure logs the expression, file and line at ERR on stderr and
 * aborts, so a broken lifecycle (a double close, a start after close, a
 * callback on a closed object) stops at the line that broke it rather than
 * falling through to undefined behaviour or to libuv's own assert.
 *
 * Use it at lifecycle boundaries and for states that only a programming
 * error can reach, never for input a peer or a user controls: those get an
 * error code. The check costs one predictable branch.
 */
#ifndef EB_COMMON_ASSERT_H
#define EB_COMMON_ASSERT_H

#if defined(__GNUC__) || defined(__clang__)
#define EB__NORETURN    __attribute__((noreturn))
#define EB__UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define EB__NORETURN
#define EB__UNLIKELY(x) (x)
#endif

/* Logs "assertion failed: expr (file:line func)" and aborts. */
EB__NORETURN void eb__assert_fail(
    const char *expr, const char *file, int line, const char *func);

#define EB_ASSERT(expr)                                                       \
	do {                                                                  \
		if (EB__UNLIKELY(!(expr))) {                                  \
			eb__assert_fail(#expr, __FILE__, __LINE__, __func__); \
		}                                                             \
	} while (0)

#endif
