/*
 * Mutual TLS for node links: the context, and the log line of a failure.
 * The TLS itself is the stream's (stream/stream.h, on the tls/ engine):
 * the dialer's stream is a TLS client, the acceptor's a TLS server. Both
 * sides present a certificate signed by the cluster's private CA and
 * verify the other's; TLS 1.2 is the minimum.
 *
 * Threads: loop thread only.
 */
#include <stdio.h>
#include <string.h>

#include <ebnode/log.h>

#include "link/link_int.h"
#include "tls/tls.h"

void
eb__link_tls_log(const link_conn *c, const char *op)
{
	const char *detail = c->s.tls_err;

	if (eb__link_conn_log_level(c) == EB_LOG_LEVEL_WARN) {
		EB_LOG_WARN("link", "tls-error: op=%s peer=%s detail=%s", op,
		    c->peer_addr, detail);
	} else {
		EB_LOG_DEBUG("link", "tls-error: op=%s peer=%s detail=%s", op,
		    c->peer_addr, detail);
	}
}

int
eb__link_tls_ctx_new(const eb_link_opts *o, eb__tls_ctx **ctxp, eb_errbuf *err)
{
	eb__tls_ctx_opts to;
	int              rv;

	memset(&to, 0, sizeof(to));
	to.cert_file = o->tls_cert_file;
	to.key_file = o->tls_key_file;
	to.ca_file = o->tls_ca_file;
	to.verify = EB__TLS_VERIFY_REQUIRE;
	rv = eb__tls_ctx_new(&to, ctxp, err);
	if (rv != 0 && err != NULL) {
		char why[sizeof(err->msg)];

		(void) snprintf(why, sizeof(why), "%s", err->msg);
		rv = eb_errf(err, rv, "link tls: %s", why);
	}
	return rv;
}
