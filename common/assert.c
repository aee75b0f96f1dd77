/* EB_ASSERT's failure path (common/assert.h). */
#include "common/assert.h"

#include <stdio.h>
#include <stdlib.h>

#include <ebnode/log.h>

void
eb__assert_fail(const char *expr, const char *file, int line, const char *func)
{
	char q[256];

	/* Straight to stderr first: the log sink may be the broken part. */
	(void) fprintf(stderr, "ebnode: assertion failed: %s (%s:%d %s)\n",
	    expr, file, line, func);
	(void) fflush(stderr);
	EB_LOG_ERR("assert", "assertion-failed: expr=%s at=%s:%d func=%s",
	    eb_log_quote(q, sizeof(q), expr), file, line, func);
	abort();
}
