/* The node-wide input budget (budget.h). */
#include "common/budget.h"

#include <uv.h>

#include "common/assert.h"

void
eb__budget_init(
    eb__budget *bg, size_t limit, eb__budget_reclaim_fn fn, void *arg)
{
	bg->limit = limit;
	bg->used = 0;
	bg->external = 0;
	bg->reclaim = fn;
	bg->reclaim_arg = arg;
}

void
eb__budget_adjust(eb__budget *bg, size_t was, size_t now)
{
	EB_ASSERT(bg->used >= was);
	bg->used = bg->used - was + now;
}

int
eb__budget_over(const eb__budget *bg)
{
	return bg->limit != 0 && bg->used > bg->limit;
}

static int
budget_fits(const eb__budget *bg, size_t n)
{
	return bg->limit == 0 ||
	       (bg->used <= bg->limit && n <= bg->limit - bg->used);
}

int
eb__budget_charge(eb__budget *bg, size_t n)
{
	if (!budget_fits(bg, n) && bg->reclaim != NULL) {
		bg->reclaim(bg, bg->reclaim_arg);
	}
	if (!budget_fits(bg, n)) {
		return UV_ENOBUFS;
	}
	bg->used += n;
	bg->external += n;
	return 0;
}

void
eb__budget_release(eb__budget *bg, size_t n)
{
	EB_ASSERT(bg->external >= n && bg->used >= n);
	bg->external -= n;
	bg->used -= n;
}
