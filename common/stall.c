/* Stall detection for silence sweeps (stall.h). */
#include "common/stall.h"

bool
eb__stall_skip(eb__stall *s, uint64_t now_ms, uint64_t period_ms)
{
	uint64_t slack =
	    period_ms > EB__STALL_MIN_MS ? period_ms : EB__STALL_MIN_MS;
	uint64_t gap =
	    s->last_ms != 0 && now_ms > s->last_ms ? now_ms - s->last_ms : 0;
	bool skip = false;

	s->last_ms = now_ms;
	s->gap_ms = gap;
	if (gap > period_ms + slack) {
		s->stalls++;
		if (gap > s->max_ms) {
			s->max_ms = gap;
		}
		skip = !s->skipped;
	}
	s->skipped = skip;
	return skip;
}
