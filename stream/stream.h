/*
 * The one byte stream of every TCP user (the bridge and its web front, node
 * links): a TCP socket, plain (stream_tcp.c) or TLS (stream_tls.c), behind
 * one ops table (like redis ConnectionType), with one read path and one
 * write queue whose backlog (eb__stream_backlog) the owners bound. libuv
 * owns the socket; TLS runs the TLS engine (tls/tls.h) and moves
 * ciphertext between it and the socket, as a server (accepted sockets) or
 * as a client (connected ones: eb__stream_init_client, eb__stream_connect).
 *
 * The owner embeds an eb__stream and uv_tcp_init()s s->tcp; a server calls
 * eb__stream_init() after uv_accept() succeeded on s->tcp, a client
 * eb__stream_init_client() and eb__stream_connect() (or its own
 * uv_tcp_connect on s->tcp); then start(). Events go to the callbacks:
 *   read_cb:   plaintext bytes (borrowed for the call);
 *   error_cb:  the peer closed (UV_EOF), a socket error, or EB_ETLS; the owner
 *              then calls close (never the stream itself);
 *   closed_cb: after close, once the handle has closed; the owner may free
 *              the memory holding the stream when it returns.
 * Callbacks never run from inside start/write/close. Any callback may call
 * close; the stream then delivers nothing more but closed_cb. Close exactly
 * once; start or write after close are programming errors (EB_ASSERT).
 *
 * Threads: loop thread only.
 */
#ifndef EB_STREAM_STREAM_H
#define EB_STREAM_STREAM_H

#include <stddef.h>

#include <uv.h>

#include "common/buf.h"
#include "tls/tls.h"

typedef struct eb__stream eb__stream;

typedef struct eb__stream_cbs {
	void (*read_cb)(eb__stream *s, const char *data, size_t n);
	void (*error_cb)(eb__stream *s, int status);
	void (*closed_cb)(eb__stream *s);
	/* Optional (NULL: none): a queued write completed, the backlog
	 * shrank (flow control: the bridge resumes its paused consumers). */
	void (*written_cb)(eb__stream *s);
	/* Optional (NULL: none): the TLS handshake finished (writes are
	 * possible from here on; a TLS write before it fails with EB_ETLS).
	 * Never called for plain streams. */
	void (*handshake_cb)(eb__stream *s);
} eb__stream_cbs;

typedef struct eb__stream_ops {
	const char *name; /* "tcp" | "tls" */
	/* Starts reading (and a client's TLS handshake). 0 or an error. */
	int (*start)(eb__stream *s);
	/* Sends every unread byte of b (many frames gathered by the owner:
	 * one write syscall for TCP, one SSL_write for TLS); what the kernel
	 * does not take at once is copied and queued. b is left empty (its
	 * memory kept for reuse) whatever the outcome. 0 or an error. */
	int (*write)(eb__stream *s, eb__buf *b);
	void (*close)(eb__stream *s);
} eb__stream_ops;

struct eb__stream {
	const eb__stream_ops *ops;
	uv_tcp_t              tcp;
	eb__stream_cbs        cbs;
	void                 *data;   /* the owner's */
	size_t                queued; /* uv_writes not done: bytes + requests */
	int                   closing; /* close was called */
	uv_connect_t          creq;    /* eb__stream_connect */
	void (*connect_cb)(eb__stream *s, int status);
	/* A transport layered over this stream (web/: WebSocket, SockJS)
	 * or NULL; see eb__bconn_accept_from() in bridge_int.h. */
	void *layer;
	/* TLS only */
	eb__tls *tls; /* owned */
	int      handshake_done;
	int      client;       /* TLS role: 1 connecting, 0 accepting */
	char     tls_err[256]; /* the reason of the last EB_ETLS */
};

/*
 * Memory held by writes the kernel has not accepted yet: their bytes (TLS:
 * ciphertext) and their write requests, until each completes. This is
 * what a reader that does not read makes grow; writes the kernel took at
 * once do not count.
 */
size_t eb__stream_backlog(const eb__stream *s);

extern const eb__stream_ops eb__stream_tcp_ops;
extern const eb__stream_ops eb__stream_tls_ops;
/* A stream on an initialized but unconnected handle: start does nothing,
 * writes are counted and discarded. For fuzzing and tests only. */
extern const eb__stream_ops eb__stream_null_ops;

/* Initializes the stream fields around an accepted s->tcp (already
 * uv_tcp_init'ed and accepted). tls non-NULL selects TLS (server side);
 * returns 0 or EB_ETLS (no SSL object; the owner still closes). */
int eb__stream_init(
    eb__stream *s, eb__tls_ctx *tls, const eb__stream_cbs *cbs, void *data);
/*
 * The same for the connecting side (s->tcp uv_tcp_init'ed, connected or
 * not yet): tls non-NULL selects TLS as a client, whose handshake start()
 * begins. server_name (NULL: none) is sent as SNI unless it is an IP
 * address; verify_name non-zero also checks the server's certificate
 * names it (host name or IP address; the context must verify the peer).
 * 0 or EB_ETLS (the owner still closes).
 */
int eb__stream_init_client(eb__stream *s, eb__tls_ctx *tls,
    const char *server_name, int verify_name, const eb__stream_cbs *cbs,
    void *data);
/* Connects s->tcp to sa; cb(s, status) runs on a later turn (UV_ECANCELED
 * after close; a closing stream is not called back otherwise). Then the
 * owner calls start(). 0 or an error (no callback). */
int eb__stream_connect(eb__stream *s, const struct sockaddr *sa,
    void (*cb)(eb__stream *s, int status));

/* Selects the null ops after eb__stream_init(s, NULL, ...). */
void eb__stream_make_null(eb__stream *s);

/* Shared by both implementations (stream_tcp.c): writes what the kernel
 * takes now (uv_try_write when nothing is queued), copies and queues the
 * rest in one uv_write. 0 or an error. */
int eb__stream_raw_send(eb__stream *s, const char *p, size_t n);
/* The same for a malloc'd buffer the stream takes over (freed whatever the
 * outcome): queued without a copy when the kernel took none of it. */
int  eb__stream_raw_send_owned(eb__stream *s, char *data, size_t n);
void eb__stream_raw_close(eb__stream *s);
/* Starts the one read path (stream_tcp.c): plaintext straight to read_cb,
 * or ciphertext through eb__stream_tls_input. */
int eb__stream_read_start(eb__stream *s);
/* stream_tls.c: the TLS engine in s->client's role; 0 or EB_ETLS. */
int eb__stream_tls_setup(eb__stream *s, eb__tls_ctx *tls);
/* stream_tls.c: ciphertext read from the socket (n > 0). */
void eb__stream_tls_input(eb__stream *s, const char *p, size_t n);

#endif
