/* Shared data on a running cluster (host.h). */
#include "shared/host.h"

#include <stdbool.h>
#include <stdlib.h>

#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/assert.h"

struct eb__shared_host {
	eb_shared         *s;
	eb_shared_service *svc;
	bool               closing;
};

int
eb__shared_host_start(uv_loop_t *loop, eb_cluster *c, eb_bus *bus,
    const eb_shared_opts *opts, eb__shared_host **out)
{
	eb__shared_host *h = eb__calloc(1, sizeof(*h));
	int              rv;

	*out = NULL;
	if ((rv = eb_shared_new(loop, c, opts, &h->s)) != 0) {
		EB_LOG_ERR("shared", "start-failed: err=%s", eb_err_name(rv));
		free(h);
		return rv;
	}
	if ((rv = eb_shared_service_new(h->s, bus, &h->svc)) != 0) {
		EB_LOG_ERR("shared", "start-failed: err=%s", eb_err_name(rv));
		eb_shared_close(h->s, NULL, NULL);
		free(h);
		return rv;
	}
	*out = h;
	return 0;
}

void
eb__shared_host_conn_closed(eb__shared_host *h, uint64_t conn_id)
{
	size_t n;

	EB_ASSERT(!h->closing);
	n = eb_shared_service_conn_closed(h->svc, conn_id);
	if (n > 0) {
		EB_LOG_INFO("shared",
		    "conn-locks-released: conn=%llu locks=%zu",
		    (unsigned long long) conn_id, n);
	}
}

static void
closed_cb(eb_shared *s, void *arg)
{
	(void) s;
	free(arg);
}

void
eb__shared_host_close(eb__shared_host *h)
{
	EB_ASSERT(!h->closing);
	h->closing = true;
	eb_shared_service_close(h->svc);
	h->svc = NULL;
	/* What it still does with the session it does now; the object
	 * itself is freed on a later turn. */
	eb_shared_close(h->s, closed_cb, h);
}

eb_shared *
eb__shared_host_shared(const eb__shared_host *h)
{
	return h->s;
}
