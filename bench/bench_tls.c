/* ebbench TLS on the TLS engine (tls/tls.h); see bench_tls.h. */
#include "bench/bench_tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "tls/tls.h"

static eb__tls_ctx *g_ctx;

static void
tls_log(const bench_conn *c, const char *what)
{
	(void) fprintf(
	    stderr, "ebbench: tls: %s: %s\n", what, eb__tls_error(c->tls));
}

int
bench_tls_init(const bench_opts *o)
{
	eb__tls_ctx_opts to;
	eb_errbuf        e;

	if (!o->tls) {
		return 0;
	}
	memset(&to, 0, sizeof(to));
	to.ca_file = o->ca;
	to.verify =
	    o->ca != NULL ? EB__TLS_VERIFY_REQUEST : EB__TLS_VERIFY_NONE;
	to.cert_file = o->cert;
	to.key_file = o->cert != NULL ? o->key : NULL;
	if (eb__tls_ctx_new(&to, &g_ctx, &e) != 0) {
		(void) fprintf(stderr, "ebbench: tls: %s\n", e.msg);
		return -1;
	}
	return 0;
}

void
bench_tls_free(void)
{
	eb__tls_ctx_free(g_ctx);
	g_ctx = NULL;
}

int
bench_tls_conn_start(bench_conn *c)
{
	eb_errbuf e;

	c->tls = eb__tls_new(g_ctx, 0, &e);
	if (c->tls == NULL) {
		(void) fprintf(stderr, "ebbench: tls: %s\n", e.msg);
		return -1;
	}
	c->rawin = eb__malloc(BENCH_TLS_READ);
	(void) eb__tls_handshake(c->tls); /* 0: the ClientHello is out */
	return 0;
}

void
bench_tls_conn_free(bench_conn *c)
{
	eb__tls_free(c->tls);
	c->tls = NULL;
	free(c->rawin);
	c->rawin = NULL;
}

int
bench_tls_input(bench_conn *c, const char *data, size_t n)
{
	char *dst;
	int   r;

	if (eb__tls_feed(c->tls, data, n) != 0) {
		tls_log(c, "input");
		return -1;
	}
	if (!c->tls_ready) {
		r = eb__tls_handshake(c->tls);
		if (r == 0) {
			return 0;
		}
		if (r < 0) {
			tls_log(c, "handshake");
			return -1;
		}
		c->tls_ready = 1;
	}
	for (;;) {
		dst = eb__buf_reserve(&c->dec.in, 16384);
		r = eb__tls_read(c->tls, dst, 16384);
		if (r > 0) {
			c->dec.in.len += (size_t) r;
			continue;
		}
		if (r == 0) {
			return 0;
		}
		tls_log(c, "read");
		return -1;
	}
}

char *
bench_tls_pending(bench_conn *c, size_t *outlen)
{
	return eb__tls_take(c->tls, outlen);
}

int
bench_tls_encrypt(
    bench_conn *c, const char *p, size_t n, char **out, size_t *outlen)
{
	if (eb__tls_write(c->tls, p, n) != 0) {
		tls_log(c, "write");
		return -1;
	}
	*out = eb__tls_take(c->tls, outlen);
	return 0;
}
