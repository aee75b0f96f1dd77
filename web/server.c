/*
 * The web front's server: options, the listening socket (its connections
 * become bridge connections with the web layer over their stream), the
 * heartbeat timer and close.
 */
#include <stdlib.h>
#include <string.h>

#include <ebnode/log.h>
#include <ebnode/web.h>

#include "common/alloc.h"
#include "common/assert.h"
#include "common/util.h"
#include "web/web_int.h"

#define WEB_DEFAULT_HEARTBEAT_MS 25000u
#define WEB_DEFAULT_MAX_HEADER   8192u
#define WEB_BEAT_MIN_MS          50u
#define WEB_BEAT_MAX_MS          1000u

void
eb_web_opts_init(eb_web_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->host = "127.0.0.1";
	opts->port = 0;
	opts->backlog = 128;
	opts->path = "/eventbus";
	opts->heartbeat_ms = WEB_DEFAULT_HEARTBEAT_MS;
	opts->max_header_bytes = WEB_DEFAULT_MAX_HEADER;
}

static int
opts_check(const eb_web_opts *o, eb_errbuf *err)
{
	const char *p = o->path;

	if (o->port < 0 || o->port > 65535) {
		return eb_errf(err, EB_ECONF, "web.port out of range");
	}
	if (o->host == NULL || o->host[0] == '\0') {
		return eb_errf(err, EB_ECONF, "web.listen is empty");
	}
	if (p == NULL || p[0] != '/' || strchr(p, '?') != NULL ||
	    strchr(p, '#') != NULL || strlen(p) > 200) {
		return eb_errf(err, EB_ECONF,
		    "web.path must start with '/' (at most 200 bytes, no '?' "
		    "or '#')");
	}
	if (o->max_header_bytes < 512 || o->max_header_bytes > 1048576) {
		return eb_errf(
		    err, EB_ECONF, "web.max_header_bytes not in 512..1048576");
	}
	return 0;
}

int
eb_web_new(uv_loop_t *loop, eb_bridge *bridge, const eb_web_opts *opts,
    eb_errbuf *err, eb_web **webp)
{
	eb_web *w;
	size_t  n;
	int     rv;

	EB_ASSERT(loop != NULL && bridge != NULL && opts != NULL);
	rv = opts_check(opts, err);
	if (rv != 0) {
		return rv;
	}
	w = eb__calloc(1, sizeof(*w));
	w->loop = loop;
	w->bridge = bridge;
	w->opts = *opts;
	w->host = eb__strdup(opts->host);
	w->path = eb__strdup(opts->path);
	n = strlen(w->path);
	while (n > 1 && w->path[n - 1] == '/') {
		w->path[--n] = '\0';
	}
	w->path_len = n == 1 ? 0 : n; /* "/" serves at the root */
	w->opts.host = w->host;
	w->opts.path = w->path;
	eb__list_init(&w->sessions);
	eb__list_init(&w->xhrs);
	eb__hmap_init(&w->xhr_map);
	*webp = w;
	return 0;
}

static void
listener_cb(uv_stream_t *server, int status)
{
	eb_web *w = server->data;

	if (w->closing || w->bridge->closing) {
		return;
	}
	if (status < 0) {
		EB_LOG_RL_WARN(
		    "web", "accept-failed: err=%s", uv_err_name(status));
		return;
	}
	eb__bconn_accept_from(w->bridge, server, eb__web_layer, w);
}

static void
beat_cb(uv_timer_t *t)
{
	eb_web  *w = t->data;
	uint64_t now = eb__mono_ms();

	if (eb__stall_skip(&w->beat_stall, now, w->beat_ms)) {
		/* A browser's next poll may wait in the backlog: accept it
		 * before a detached xhr session is judged gone. */
		EB_LOG_NOTICE("web",
		    "stall: gap_ms=%llu verdicts deferred by one beat",
		    (unsigned long long) w->beat_stall.gap_ms);
		return;
	}
	eb__web_beat(w, now);
}

int
eb_web_start(eb_web *w, eb_errbuf *err)
{
	struct sockaddr_storage ss;
	int                     len = (int) sizeof(ss);
	int                     rv;
	uint64_t                every;

	EB_ASSERT(!w->closing); /* start after close */
	EB_ASSERT(!w->started); /* double start */
	w->started = 1;
	rv = eb__ip_addr(w->host, w->opts.port, &ss);
	if (rv != 0) {
		return eb_errf(
		    err, rv, "web.listen \"%s\": not an IP address", w->host);
	}
	(void) uv_tcp_init(w->loop, &w->listener);
	w->listener.data = w;
	w->listener_inited = 1;
	w->open_handles++;
	rv = uv_tcp_bind(&w->listener, (const struct sockaddr *) &ss, 0);
	if (rv == 0) {
		rv = uv_listen(
		    (uv_stream_t *) &w->listener, w->opts.backlog, listener_cb);
	}
	if (rv != 0) {
		return eb_errf(err, rv, "web listen %s:%d: %s", w->host,
		    w->opts.port, uv_strerror(rv));
	}
	if (uv_tcp_getsockname(&w->listener, (struct sockaddr *) &ss, &len) ==
	    0) {
		w->port = ntohs(ss.ss_family == AF_INET6
		                    ? ((struct sockaddr_in6 *) &ss)->sin6_port
		                    : ((struct sockaddr_in *) &ss)->sin_port);
	}
	/* Heartbeats, and the xhr sessions' disconnect delay: always. */
	{
		every = w->opts.heartbeat_ms / 4;
		every = every < WEB_BEAT_MIN_MS   ? WEB_BEAT_MIN_MS
		        : every > WEB_BEAT_MAX_MS ? WEB_BEAT_MAX_MS
		                                  : every;
		if (w->opts.heartbeat_ms == 0) {
			every = WEB_BEAT_MAX_MS;
		}
		w->beat_ms = every;
		(void) uv_timer_init(w->loop, &w->beat);
		w->beat.data = w;
		w->beat_inited = 1;
		w->open_handles++;
		(void) uv_timer_start(&w->beat, beat_cb, every, every);
	}
	EB_LOG_INFO("web", "listening: addr=%s:%d path=%s heartbeat_ms=%llu",
	    w->host, w->port, w->path_len == 0 ? "/" : w->path,
	    (unsigned long long) w->opts.heartbeat_ms);
	return 0;
}

int
eb_web_port(const eb_web *w)
{
	return w->port;
}

void
eb_web_stats_get(const eb_web *w, eb_web_stats *out)
{
	*out = w->stats;
}

static void
web_finish(eb_web *w)
{
	if (w->open_handles > 0 || w->live > 0) {
		return;
	}
	if (w->close_cb != NULL) {
		w->close_cb(w, w->close_arg);
	}
	eb__hmap_free(&w->xhr_map);
	free(w->host);
	free(w->path);
	free(w);
}

static void
handle_closed_cb(uv_handle_t *h)
{
	eb_web *w = h->data;

	w->open_handles--;
	web_finish(w);
}

void
eb__web_session_gone(eb_web *w)
{
	EB_ASSERT(w->live > 0);
	w->live--;
	if (w->closing) {
		web_finish(w);
	}
}

void
eb_web_close(eb_web *w, eb_web_close_cb cb, void *arg)
{
	EB_ASSERT(!w->closing); /* double close */
	w->closing = 1;
	w->close_cb = cb;
	w->close_arg = arg;
	w->port = 0;
	if (w->listener_inited) {
		uv_close((uv_handle_t *) &w->listener, handle_closed_cb);
	}
	if (w->beat_inited) {
		uv_close((uv_handle_t *) &w->beat, handle_closed_cb);
	}
	eb__web_close_sessions(w);
	eb__web_xhr_close_all(w);
	if (w->open_handles == 0 && w->live == 0) {
		/* Nothing to wait for: cb still runs on a later tick. */
		w->open_handles++;
		(void) uv_timer_init(w->loop, &w->beat);
		w->beat.data = w;
		uv_close((uv_handle_t *) &w->beat, handle_closed_cb);
	}
}
