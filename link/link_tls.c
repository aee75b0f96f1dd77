/*
 * Mutual TLS for node links on the TLS engine (tls/tls.h): ciphertext read
 * from the socket is fed to the engine; plaintext goes to the frame
 * decoder; plaintext frames are encrypted and the ciphertext is handed to
 * uv_write. Both sides present a certificate signed by the cluster's
 * private CA and verify the other's; TLS 1.2 is the minimum.
 *
 * Threads: loop thread only.
 */
#include <string.h>

#include <ebnode/log.h>

#include "common/alloc.h"
#include "link/link_int.h"
#include "tls/tls.h"

static void
tls_log(const link_conn *c, const char *what)
{
	const char *detail = eb__tls_error(c->tls);

	if (eb__link_conn_log_level(c) == EB_LOG_LEVEL_WARN) {
		EB_LOG_WARN("link", "tls-error: op=%s peer=%s detail=%s", what,
		    c->peer_addr, detail);
	} else {
		EB_LOG_DEBUG("link", "tls-error: op=%s peer=%s detail=%s", what,
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

int
eb__link_tls_conn_new(link_conn *c, int server)
{
	eb_errbuf e;

	c->tls = eb__tls_new(c->mgr->tls_ctx, server, &e);
	if (c->tls == NULL) {
		EB_LOG_WARN("link", "tls-error: op=new peer=%s detail=%s",
		    c->peer_addr, e.msg);
		return EB_ETLS;
	}
	return 0;
}

void
eb__link_tls_conn_free(link_conn *c)
{
	eb__tls_free(c->tls); /* accepts NULL */
	c->tls = NULL;
}

/* Hands the ciphertext the engine produced to uv_write. */
static void
tls_pump(link_conn *c)
{
	size_t n;
	char  *data;

	while ((data = eb__tls_take(c->tls, &n)) != NULL) {
		eb__link_conn_write_raw(c, data, n);
	}
}

int
eb__link_tls_handshake(link_conn *c)
{
	int rv = eb__tls_handshake(c->tls);

	tls_pump(c); /* on failure, the peer sees our alert */
	if (rv < 0) {
		tls_log(c, "handshake");
		return EB_ETLS;
	}
	if (rv == 1) {
		eb__link_conn_mark_dirty(c); /* frames queued meanwhile */
	}
	return 0;
}

int
eb__link_tls_input(link_conn *c, const char *p, size_t n)
{
	char plain[16384];
	int  rv;

	if (eb__tls_feed(c->tls, p, n) != 0) {
		return EB_ETLS;
	}
	if (!eb__tls_handshake_done(c->tls)) {
		if ((rv = eb__link_tls_handshake(c)) != 0 ||
		    !eb__tls_handshake_done(c->tls)) {
			return rv;
		}
	}
	for (;;) {
		rv = eb__tls_read(c->tls, plain, sizeof(plain));
		if (rv > 0) {
			int in = eb__link_conn_input(c, plain, (size_t) rv);

			if (in != 0 || c->state == LINK_CLOSING) {
				return in;
			}
			continue;
		}
		if (rv == 0) {
			tls_pump(c);
			return 0;
		}
		if (rv == EB_ETLS) {
			tls_log(c, "read");
		}
		return rv; /* EB_ECLOSED: the peer's close_notify */
	}
}

int
eb__link_tls_output(link_conn *c, const char *p, size_t n)
{
	if (eb__tls_write(c->tls, p, n) != 0) {
		tls_log(c, "write");
		return EB_ETLS;
	}
	tls_pump(c);
	return 0;
}
