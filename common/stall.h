/*
 * Stall detection for sweeps that judge peers by their silence.
 *
 * When this process stops running for a while (SIGSTOP, a VM pause, swap,
 * a starved CPU), the first loop iteration after it runs the timers before
 * it polls for I/O: a sweep would then see every peer and client silent
 * for the whole stall, although what they sent is waiting in the socket
 * buffers, and would close healthy connections (a client parked as a slow
 * consumer, a node link by its heartbeat timeout). A sweep that calls
 * eb__stall_skip() first and gives no silence verdict when it returns
 * true lets the loop read that input before the next sweep judges.
 *
 * A stall is a gap between two calls longer than the sweep's period plus
 * max(period, EB__STALL_MIN_MS). At most one sweep in a row is skipped, so
 * a loop that is late on every turn still judges every other sweep.
 * Safety deadlines (the leader lease, lock leases) must never use this:
 * they have to lapse during a stall. Loop thread only.
 */
#ifndef EB_COMMON_STALL_H
#define EB_COMMON_STALL_H

#include <stdbool.h>
#include <stdint.h>

#define EB__STALL_MIN_MS 500u

typedef struct eb__stall {
	uint64_t last_ms; /* the previous call (0: none yet) */
	bool     skipped; /* the previous call skipped */
	uint64_t stalls;  /* stalls seen (for logs and tests) */
	uint64_t max_ms;  /* the longest gap seen */
	uint64_t gap_ms;  /* the gap before this call */
} eb__stall;

/* now_ms: the sweep's clock (monotonic ms); period_ms: its interval. True:
 * this sweep follows a stall and gives no silence verdict. */
bool eb__stall_skip(eb__stall *s, uint64_t now_ms, uint64_t period_ms);

#endif
