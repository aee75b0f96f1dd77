/*
 * Optional TLS for ebbench connections on the TLS engine (tls/tls.h;
 * libuv owns the sockets), one context for the process (the responder
 * thread shares it). Peer verification only with
 * --ca; it is a load generator, not a security tool.
 */
#ifndef EB_BENCH_TLS_H
#define EB_BENCH_TLS_H

#include <stddef.h>

#include "bench/bench.h"

/* Creates the context when o->tls. 0, or -1 with a message on stderr. */
int  bench_tls_init(const bench_opts *o);
void bench_tls_free(void);
/* Attaches a TLS engine to c and produces the ClientHello (see pending). */
int  bench_tls_conn_start(bench_conn *c);
void bench_tls_conn_free(bench_conn *c);
/* Feeds n ciphertext bytes; plaintext is appended to c->dec.in. 0, or -1
 * on a TLS error. Sets c->tls_ready when the handshake completes. */
int bench_tls_input(bench_conn *c, const char *data, size_t n);
/* Encrypts p[0..n): *out is malloc'd ciphertext (may be empty). 0 or -1. */
int bench_tls_encrypt(
    bench_conn *c, const char *p, size_t n, char **out, size_t *outlen);
/* Ciphertext the engine wants to send (handshake): malloc'd or NULL. */
char *bench_tls_pending(bench_conn *c, size_t *outlen);

#endif
