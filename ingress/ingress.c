/* Ingress object lifecycle; see include/ebnode/ingress.h. */
#include <stdlib.h>
#include <string.h>

#include <ebnode/ingress.h>
#include <ebnode/log.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "ingress/ingress_ext.h"
#include "ingress/ingress_int.h"

void
eb_ingress_opts_init(eb_ingress_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->address = "external.ingress";
	opts->hold_max = 1000;
	opts->hold_ms = 5000;
	opts->warmup_ms = 1000;
}

int
eb_ingress_new(uv_loop_t *loop, eb_bus *bus, const eb_ingress_opts *opts,
    eb_errbuf *err, eb_ingress **inp)
{
	eb_ingress *in;
	int         rv;

	if (opts->address == NULL || opts->address[0] == '\0') {
		return eb_errf(err, EB_ECONF, "ingress address is empty");
	}
	in = eb__calloc(1, sizeof(*in));
	rv = eb__ingress_rules_copy(in, opts, err);
	if (rv != 0) {
		free(in);
		return rv;
	}
	in->loop = loop;
	in->bus = bus;
	in->address = eb__strdup(opts->address);
	in->hold_max = opts->hold_max;
	in->hold_ms = opts->hold_ms;
	in->timeout_ms = opts->timeout_ms;
	in->relay_replies = opts->relay_replies != 0;
	in->warmup_ms = opts->warmup_ms;
	eb__ingress_set_enc_sends(in, NULL, NULL);
	eb__list_init(&in->waiting);
	eb__list_init(&in->routing);
	eb__list_init(&in->held);
	eb__list_init(&in->inflight);
	eb__list_init(&in->backlog);
	(void) uv_timer_init(loop, &in->hold_timer);
	in->hold_timer.data = in;
	*inp = in;
	return 0;
}

void
eb_ingress_set_handler(eb_ingress *in, eb_ingress_handler_fn fn, void *arg)
{
	EB_ASSERT(!in->closing);
	in->handler = fn;
	in->handler_arg = arg;
}

void
eb_ingress_set_leader_check(eb_ingress *in, eb_ingress_leader_fn fn, void *arg)
{
	EB_ASSERT(!in->closing);
	in->is_leader = fn;
	in->is_leader_arg = arg;
}

void
eb__ingress_set_ext(eb_ingress *in, const eb__ingress_ext_ops *ops, void *ctx)
{
	EB_ASSERT(!in->closing);
	in->ext = ops;
	in->ext_ctx = ctx;
}

void
eb__ingress_set_enc_sends(eb_ingress *in, eb__ingress_enc_send_fn send,
    eb__ingress_enc_send_fn publish)
{
	EB_ASSERT(!in->closing);
	in->send_enc = send != NULL ? send : eb_bus_send_confirmed_enc;
	in->publish_enc =
	    publish != NULL ? publish : eb_bus_publish_confirmed_enc;
}

static void
watch_cb(eb_bus *bus, const char *address, uint32_t count, void *arg)
{
	eb_ingress *in = arg;
	int         leader = strcmp(address, EB_INGRESS_LEADER_ADDRESS) == 0;

	(void) bus;
	if (leader) {
		in->leader_handlers = count;
	}
	/* A reachable leader flushes what the gateway holds; any new handler
	 * may be the target a warming-up router waits for. */
	if (count > 0 && (!eb__list_empty(&in->waiting) || leader)) {
		eb_ingress_kick(in);
	}
}

int
eb_ingress_start(eb_ingress *in)
{
	EB_ASSERT(!in->closing); /* start after close */
	if (in->gateway != NULL) {
		return UV_EBUSY;
	}
	/* A handler-count observer: a leader that becomes reachable flushes
	 * the held messages. */
	eb_bus_watch_add(in->bus, watch_cb, in);
	in->leader_handlers =
	    eb_bus_handler_count(in->bus, EB_INGRESS_LEADER_ADDRESS);
	/* Local-only: the ingress address is served on every node by its own
	 * gateway and never advertised to peers. */
	return eb_bus_consumer_new(
	    in->bus, in->address, 1, eb__ingress_gateway_cb, in, &in->gateway);
}

int
eb_ingress_lead(eb_ingress *in, uint64_t epoch)
{
	int rv;

	if (in->closing) {
		return EB_ECLOSED;
	}
	eb_ingress_unlead(in);
	rv = eb_bus_consumer_new(in->bus, EB_INGRESS_LEADER_ADDRESS, 0,
	    eb__ingress_router_cb, in, &in->leader);
	if (rv != 0) {
		return rv;
	}
	/* The same session may lead again with the same epoch (a reconnect
	 * within the session timeout): continue that epoch's sequence, so
	 * that a stamp (epoch, seq) is never given to two messages. */
	if (epoch != in->epoch || in->next_seq == 0) {
		in->epoch = epoch;
		in->next_seq = 1;
	}
	in->lead_ms = uv_now(in->loop);
	in->st.leader_epochs++;
	EB_LOG_NOTICE("ingress", "leading: epoch=%llu address=%s",
	    (unsigned long long) epoch, in->address);
	return 0; /* the bus watch flushes what this node holds */
}

void
eb_ingress_unlead(eb_ingress *in)
{
	if (in->leader == NULL) {
		return;
	}
	eb_bus_consumer_close(in->leader);
	in->leader = NULL;
	eb__ingress_router_release(in);
	EB_LOG_NOTICE("ingress", "stopped-leading: epoch=%llu routed=%llu",
	    (unsigned long long) in->epoch,
	    (unsigned long long) (in->next_seq - 1));
}

int
eb_ingress_is_leading(const eb_ingress *in)
{
	return in->leader != NULL;
}

void
eb_ingress_stats_get(const eb_ingress *in, eb_ingress_stats *out)
{
	*out = in->st;
	out->holding = in->n_held;
	out->backlog = in->n_backlog;
	out->inflight = in->n_inflight;
}

static void
timer_closed_cb(uv_handle_t *h)
{
	eb_ingress *in = h->data;

	EB_ASSERT(in->closing && in->close_done);
	if (in->close_cb != NULL) {
		in->close_cb(in, in->close_arg);
	}
	eb__ingress_rules_free(in);
	json_decref(in->entry_headers);
	eb__buf_free(&in->stamp_buf);
	eb__spare_free(&in->held_spare);
	eb__spare_free(&in->route_spare);
	free(in->address);
	free(in);
}

void
eb_ingress_close(eb_ingress *in, eb_ingress_close_cb cb, void *arg)
{
	EB_ASSERT(!in->closing); /* exactly once */
	in->closing = 1;
	in->close_cb = cb;
	in->close_arg = arg;
	eb_ingress_unlead(in);
	if (in->gateway != NULL) {
		(void) eb_bus_watch_remove(in->bus, watch_cb, in);
		eb_bus_consumer_close(in->gateway);
		in->gateway = NULL;
	}
	eb__ingress_fail_all(in);
	(void) uv_timer_stop(&in->hold_timer);
	/* Routed messages awaiting their receipt are answered from it (a
	 * graceful hand-over acknowledges what it delivered); that is bounded
	 * by the bus's receipt timeout. */
	if (eb__list_empty(&in->routing)) {
		eb__ingress_close_finish(in);
	}
}

void
eb__ingress_close_finish(eb_ingress *in)
{
	EB_ASSERT(in->closing);
	if (!in->close_done) {
		in->close_done = 1;
		uv_close((uv_handle_t *) &in->hold_timer, timer_closed_cb);
	}
}
