/*
 * One TLS engine for every TLS user (the bridge's client streams, node
 * links, the bench tools): OpenSSL over two memory BIOs. The caller owns
 * the socket (libuv); the engine never sees a file descriptor:
 *
 *   ciphertext read from the socket  -> eb__tls_feed
 *   handshake                        <- eb__tls_handshake (until it says 1)
 *   plaintext for the caller         <- eb__tls_read
 *   plaintext to send                -> eb__tls_write
 *   ciphertext to write to the socket <- eb__tls_pull / eb__tls_take
 *
 * After every call that can produce output (handshake, read, write,
 * close_notify), the caller moves the pending ciphertext to its socket;
 * a failed handshake leaves its alert there too.
 *
 * A failing call returns EB_ETLS and records the OpenSSL reason (the first
 * error of the queue, which it then clears) for eb__tls_error. OpenSSL
 * types never appear in this header, so no other module includes OpenSSL.
 *
 * Threads: a context may be shared by several threads (OpenSSL >= 1.1);
 * an engine belongs to one thread.
 */
#ifndef EB_TLS_TLS_H
#define EB_TLS_TLS_H

#include <stddef.h>

#include <ebnode/err.h>

typedef struct eb__tls_ctx eb__tls_ctx;
typedef struct eb__tls     eb__tls;

/* Which peer certificate a context asks for and verifies (against ca_file). */
typedef enum eb__tls_verify {
	EB__TLS_VERIFY_NONE = 0,    /* no certificate asked, none checked */
	EB__TLS_VERIFY_REQUEST = 1, /* verified if presented (a client: the
	                             * server's is always presented) */
	EB__TLS_VERIFY_REQUIRE = 2  /* a peer without one is refused */
} eb__tls_verify;

typedef struct eb__tls_ctx_opts {
	/* PEM certificate chain and key; both or neither (a client may have
	 * none). The key must match the certificate. */
	const char *cert_file;
	const char *key_file;
	/* PEM CA certificates to verify the peer with; required unless
	 * verify is EB__TLS_VERIFY_NONE or system_ca is set. A server also
	 * sends their names in its certificate request. */
	const char    *ca_file;
	eb__tls_verify verify;
	/* Without ca_file: verify against the system's default CA store
	 * (a client's, e.g. ebctl's). */
	int system_ca;
	/* For servers of many mostly idle connections: release the record
	 * buffers between records and refuse client renegotiation. */
	int idle_server;
} eb__tls_ctx_opts;

/*
 * A context (TLS 1.2 minimum, no compression) for server and client
 * engines alike. 0, or EB_ETLS / EB_ECONF with err set to
 * "<what> <file>: <OpenSSL reason>" (what: context, certificate, key, ca)
 * or to the misconfiguration; callers prefix their module.
 */
int eb__tls_ctx_new(
    const eb__tls_ctx_opts *o, eb__tls_ctx **out, eb_errbuf *err);
void eb__tls_ctx_free(eb__tls_ctx *ctx); /* accepts NULL */

/* An engine on ctx (borrowed; it must outlive the engine) in the server
 * (accepting) or client (connecting) role. NULL when OpenSSL fails
 * (out of memory); the reason is in err if non-NULL. */
eb__tls *eb__tls_new(eb__tls_ctx *ctx, int server, eb_errbuf *err);
void     eb__tls_free(eb__tls *t); /* accepts NULL */
/*
 * A client engine's server name, before its first handshake call: sent as
 * SNI unless it is an IP address literal; verify non-zero also requires
 * the server's certificate to name it (DNS name, or the IP address). 0 or
 * EB_ETLS.
 */
int eb__tls_set_peer_name(eb__tls *t, const char *name, int verify);

/* Ciphertext from the socket. 0 or EB_ETLS. */
int eb__tls_feed(eb__tls *t, const char *p, size_t n);
/* Drives the handshake: 1 done (then and on every later call), 0 it needs
 * more input (a client's first call produces the ClientHello), EB_ETLS it
 * failed (the alert is pending). */
int eb__tls_handshake(eb__tls *t);
int eb__tls_handshake_done(const eb__tls *t);
/*
 * Decrypts into buf[0..cap) (after the handshake): the byte count (> 0),
 * 0 when it needs more input, EB_ECLOSED when the peer sent close_notify,
 * EB_ETLS on an error. Call it until it returns <= 0.
 */
int eb__tls_read(eb__tls *t, char *buf, size_t cap);
/* Encrypts all of p[0..n) (after the handshake; a memory BIO never
 * blocks). 0 or EB_ETLS. */
int eb__tls_write(eb__tls *t, const char *p, size_t n);
/* Sends close_notify (once; writing afterwards is a programming error).
 * The alert is then pending. */
void eb__tls_close_notify(eb__tls *t);

/* Ciphertext waiting to be written to the socket, in bytes. */
size_t eb__tls_pending(const eb__tls *t);
/* Moves up to cap bytes of it into buf; returns how many. */
size_t eb__tls_pull(eb__tls *t, char *buf, size_t cap);
/* Moves all of it into one malloc'd buffer (*n bytes); NULL if none. */
char *eb__tls_take(eb__tls *t, size_t *n);

/* The reason of the last EB_ETLS/EB_ECLOSED, for log lines ("" if none). */
const char *eb__tls_error(const eb__tls *t);
/* Why the peer's certificate was refused (after a failed handshake), or
 * NULL when its verification did not fail. */
const char *eb__tls_verify_error(const eb__tls *t);

#endif
