/*
 * ebctl bridge connections: a non-blocking socket driven with poll() so that
 * every wait has a deadline, optional TLS on the tls/ engine (the one TLS
 * engine of the project, memory BIOs: this file moves its ciphertext
 * between the engine and the socket; a CLI owns its socket, there is no
 * libuv here), and the bridge framing from common/frame.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "common/alloc.h"
#include "common/frame.h"
#include "common/util.h"
#include "ctl/ctl.h"
#include "tls/tls.h"

#define CTL_MAX_FRAME   (64u * 1024u * 1024u)
#define CTL_TLS_CHUNK   16384
#define CTL_CIPHER_READ 65536

struct ctl_conn {
	int           fd;
	eb__tls_ctx  *ctx; /* owned, NULL: plain */
	eb__tls      *tls; /* owned, NULL: plain */
	eb__frame_dec dec;
	char         *last; /* the frame recv_frame returned last (owned) */
	size_t        last_len;
};

/* Milliseconds left until deadline (monotonic ms), or -1 for none. */
static int
remaining(uint64_t deadline)
{
	uint64_t now;

	if (deadline == 0) {
		return -1;
	}
	now = eb__mono_ms();
	return now >= deadline ? 0 : (int) (deadline - now);
}

static uint64_t
deadline_of(int timeout_ms)
{
	return timeout_ms < 0 ? 0 : eb__mono_ms() + (uint64_t) timeout_ms;
}

int
eb__ctl_wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events, .revents = 0 };
	int           rv;

	do {
		rv = poll(&p, 1, remaining(deadline));
	} while (rv < 0 && errno == EINTR);
	return rv;
}

int
eb__ctl_tcp_connect(
    const ctl_endpoint *ep, uint64_t deadline, char *err, size_t errlen)
{
	struct addrinfo  hints;
	struct addrinfo *res = NULL;
	struct addrinfo *ai;
	char             port[16];
	int              fd = -1;
	int              rv;
	int              soerr = 0;
	socklen_t        sl = sizeof(soerr);

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	(void) snprintf(port, sizeof(port), "%d", ep->port);
	if ((rv = getaddrinfo(ep->host, port, &hints, &res)) != 0) {
		(void) snprintf(
		    err, errlen, "resolve %s: %s", ep->host, gai_strerror(rv));
		return -1;
	}
	(void) snprintf(
	    err, errlen, "connect %s:%d: no address", ep->host, ep->port);
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
		if (fd < 0) {
			continue;
		}
		(void) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		rv = connect(fd, ai->ai_addr, ai->ai_addrlen);
		if (rv != 0 && errno == EINPROGRESS) {
			rv = eb__ctl_wait_fd(fd, POLLOUT, deadline);
			if (rv == 0) {
				(void) snprintf(err, errlen,
				    "connect %s:%d: timed out", ep->host,
				    ep->port);
				(void) close(fd);
				fd = -1;
				break;
			}
			soerr = 0;
			(void) getsockopt(
			    fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
			errno = soerr;
			rv = soerr == 0 ? 0 : -1;
		}
		if (rv == 0) {
			break;
		}
		(void) snprintf(err, errlen, "connect %s:%d: %s", ep->host,
		    ep->port, strerror(errno));
		(void) close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

static int
tls_setup(ctl_conn *c, const ctl_args *a, char *err, size_t errlen)
{
	const char *name =
	    a->servername != NULL ? a->servername : a->bridge.host;
	eb__tls_ctx_opts o;
	eb_errbuf        e;

	memset(&o, 0, sizeof(o));
	o.cert_file = a->cert;
	o.key_file = a->key;
	if (!a->insecure) {
		/* A client is always sent the server's certificate. */
		o.verify = EB__TLS_VERIFY_REQUEST;
		o.ca_file = a->ca;
		o.system_ca = a->ca == NULL;
	}
	if (eb__tls_ctx_new(&o, &c->ctx, &e) != 0) {
		/* "<what> <file>: <reason>" (tls.h): ebctl's own wording. */
		const char *why = strstr(e.msg, ": ");

		(void) snprintf(err, errlen, "TLS: %s: %s",
		    strncmp(e.msg, "ca ", 3) == 0
		        ? "loading CA"
		        : "loading client certificate",
		    why != NULL ? why + 2 : e.msg);
		return -1;
	}
	c->tls = eb__tls_new(c->ctx, 0, &e);
	if (c->tls == NULL) {
		(void) snprintf(err, errlen, "TLS: %s", e.msg);
		return -1;
	}
	if (eb__tls_set_peer_name(c->tls, name, !a->insecure) != 0) {
		(void) snprintf(err, errlen, "TLS: %s", eb__tls_error(c->tls));
		return -1;
	}
	return 0;
}

/* Sends p[0..n) on the socket: 1 done, 0 timeout, -1 error (errno). */
static int
send_all(ctl_conn *c, const char *p, size_t n, uint64_t deadline)
{
	ssize_t w;
	int     rv;

	while (n > 0) {
		w = send(c->fd, p, n, MSG_NOSIGNAL);
		if (w >= 0) {
			p += w;
			n -= (size_t) w;
			continue;
		}
		if (errno != EAGAIN && errno != EINTR) {
			return -1;
		}
		rv = eb__ctl_wait_fd(c->fd, POLLOUT, deadline);
		if (rv <= 0) {
			return rv;
		}
	}
	return 1;
}

/* Moves the engine's pending ciphertext to the socket: 1, 0 timeout, -1. */
static int
tls_flush(ctl_conn *c, uint64_t deadline)
{
	char   buf[CTL_CIPHER_READ];
	size_t n;
	int    rv;

	while ((n = eb__tls_pull(c->tls, buf, sizeof(buf))) > 0) {
		if ((rv = send_all(c, buf, n, deadline)) <= 0) {
			return rv;
		}
	}
	return 1;
}

/* Reads ciphertext from the socket into the engine: 1, 0 timeout, -1 error
 * or EOF (errno 0: EOF). */
static int
tls_fill(ctl_conn *c, uint64_t deadline)
{
	char    buf[CTL_CIPHER_READ];
	ssize_t r;
	int     rv;

	for (;;) {
		r = recv(c->fd, buf, sizeof(buf), 0);
		if (r > 0) {
			return eb__tls_feed(c->tls, buf, (size_t) r) == 0 ? 1
			                                                  : -1;
		}
		if (r == 0) {
			errno = 0;
			return -1;
		}
		if (errno != EAGAIN && errno != EINTR) {
			return -1;
		}
		rv = eb__ctl_wait_fd(c->fd, POLLIN, deadline);
		if (rv <= 0) {
			return rv;
		}
	}
}

/* Runs the client handshake: 1 done, 0 timeout, -1 failed. */
static int
tls_handshake(ctl_conn *c, uint64_t deadline)
{
	int r;
	int rv;

	for (;;) {
		r = eb__tls_handshake(c->tls);
		/* On failure too: the server sees our alert. */
		if ((rv = tls_flush(c, deadline)) <= 0) {
			return rv;
		}
		if (r != 0) {
			return r == 1 ? 1 : -1;
		}
		if ((rv = tls_fill(c, deadline)) <= 0) {
			return rv;
		}
	}
}

ctl_conn *
eb__ctl_connect(const ctl_args *a, char *err, size_t errlen)
{
	ctl_conn   *c = eb__calloc(1, sizeof(*c));
	uint64_t    deadline = deadline_of(a->timeout_ms);
	const char *vr;
	int         rv;

	eb__frame_dec_init(&c->dec, CTL_MAX_FRAME);
	c->fd = eb__ctl_tcp_connect(&a->bridge, deadline, err, errlen);
	if (c->fd < 0) {
		goto fail;
	}
	if (a->tls) {
		if (tls_setup(c, a, err, errlen) != 0) {
			goto fail;
		}
		rv = tls_handshake(c, deadline);
		if (rv <= 0) {
			vr = eb__tls_verify_error(c->tls);
			if (rv == 0) {
				(void) snprintf(err, errlen,
				    "TLS handshake with %s:%d: timed out",
				    a->bridge.host, a->bridge.port);
			} else if (vr != NULL) {
				(void) snprintf(err, errlen,
				    "TLS: certificate verification failed: %s",
				    vr);
			} else {
				(void) snprintf(err, errlen,
				    "TLS handshake: %s",
				    eb__tls_error(c->tls)[0] != '\0'
				        ? eb__tls_error(c->tls)
				        : "handshake failed");
			}
			goto fail;
		}
	}
	return c;
fail:
	eb__ctl_close(c);
	return NULL;
}

void
eb__ctl_close(ctl_conn *c)
{
	if (c == NULL) {
		return;
	}
	if (c->tls != NULL && eb__tls_handshake_done(c->tls) && c->fd >= 0) {
		/* close_notify, best effort: the socket is non-blocking. */
		eb__tls_close_notify(c->tls);
		(void) tls_flush(c, eb__mono_ms());
	}
	eb__tls_free(c->tls);
	eb__tls_ctx_free(c->ctx);
	if (c->fd >= 0) {
		(void) close(c->fd);
	}
	eb__frame_dec_free(&c->dec);
	free(c->last);
	free(c);
}

/* Writes some of p: bytes written (> 0), 0 on timeout, -1 on error. */
static ssize_t
write_some(ctl_conn *c, const char *p, size_t n, uint64_t deadline)
{
	ssize_t w;
	int     rv;

	if (c->tls != NULL) {
		size_t chunk = n > 1u << 20 ? 1u << 20 : n;

		if (eb__tls_write(c->tls, p, chunk) != 0) {
			return -1;
		}
		rv = tls_flush(c, deadline);
		return rv <= 0 ? rv : (ssize_t) chunk;
	}
	for (;;) {
		w = send(c->fd, p, n, MSG_NOSIGNAL);
		if (w >= 0 || (errno != EAGAIN && errno != EINTR)) {
			return w;
		}
		rv = eb__ctl_wait_fd(c->fd, POLLOUT, deadline);
		if (rv <= 0) {
			return rv;
		}
	}
}

static int
write_all(ctl_conn *c, const char *p, size_t n, uint64_t deadline, char *err,
    size_t errlen)
{
	ssize_t w;

	while (n > 0) {
		w = write_some(c, p, n, deadline);
		if (w == 0) {
			(void) snprintf(err, errlen, "write: timed out");
			return -1;
		}
		if (w < 0) {
			(void) snprintf(err, errlen, "write: %s",
			    c->tls != NULL ? "TLS error" : strerror(errno));
			return -1;
		}
		p += w;
		n -= (size_t) w;
	}
	return 0;
}

int
eb__ctl_send_frame(
    ctl_conn *c, const json_t *frame, int timeout_ms, char *err, size_t errlen)
{
	char  *buf;
	size_t n;
	int    rv;

	if (eb__frame_encode_json(frame, 0, &buf, &n) != 0) {
		(void) snprintf(err, errlen, "cannot encode frame");
		return -1;
	}
	rv = write_all(c, buf, n, deadline_of(timeout_ms), err, errlen);
	free(buf);
	return rv;
}

/* TLS read into dst: bytes (> 0), 0 timeout, -1 error/EOF (err set). */
static ssize_t
read_tls(ctl_conn *c, char *dst, uint64_t deadline, char *err, size_t errlen)
{
	int r;
	int rv;

	for (;;) {
		r = eb__tls_read(c->tls, dst, CTL_CIPHER_READ);
		if (r > 0) {
			return r;
		}
		if (r == 0) {
			/* Whatever the engine answered (e.g. a key update). */
			rv = tls_flush(c, deadline);
			if (rv > 0) {
				rv = tls_fill(c, deadline);
			}
			if (rv > 0) {
				continue;
			}
			if (rv == 0) {
				return 0;
			}
		}
		(void) snprintf(err, errlen,
		    r == EB_ECLOSED ? "connection closed by the bridge"
		                    : "TLS read error");
		return -1;
	}
}

/* Plain read into dst: bytes (> 0), 0 timeout, -1 error/EOF (err set). */
static ssize_t
read_plain(ctl_conn *c, char *dst, uint64_t deadline, char *err, size_t errlen)
{
	ssize_t r;
	int     rv;

	for (;;) {
		r = recv(c->fd, dst, 65536, 0);
		if (r > 0) {
			return r;
		}
		if (r == 0) {
			(void) snprintf(
			    err, errlen, "connection closed by the bridge");
			return -1;
		}
		if (errno != EAGAIN && errno != EINTR) {
			(void) snprintf(
			    err, errlen, "read: %s", strerror(errno));
			return -1;
		}
		rv = eb__ctl_wait_fd(c->fd, POLLIN, deadline);
		if (rv < 0) {
			(void) snprintf(
			    err, errlen, "poll: %s", strerror(errno));
			return -1;
		}
		if (rv == 0) {
			return 0;
		}
	}
}

/* Reads some bytes into the decoder: 1 read, 0 timeout, -1 error/EOF. */
static int
read_some(ctl_conn *c, uint64_t deadline, char *err, size_t errlen)
{
	char   *dst = eb__buf_reserve(&c->dec.in, 65536);
	ssize_t r = c->tls != NULL ? read_tls(c, dst, deadline, err, errlen)
	                           : read_plain(c, dst, deadline, err, errlen);

	if (r <= 0) {
		return (int) r;
	}
	c->dec.in.len += (size_t) r;
	return 1;
}

int
eb__ctl_recv_frame(
    ctl_conn *c, int timeout_ms, json_t **out, char *err, size_t errlen)
{
	uint64_t    deadline = deadline_of(timeout_ms);
	const char *p;
	uint32_t    n;
	int         rv;
	json_t     *j;
	const char *body;
	size_t      blen;

	for (;;) {
		while ((rv = eb__frame_dec_next(&c->dec, &p, &n)) == 0) {
			j = eb__ctl_frame_read(p, n, &body, &blen);
			if (j != NULL) {
				c->last = eb__realloc(c->last, n + 1);
				memcpy(c->last, p, n);
				c->last_len = n;
				*out = j;
				return 0;
			}
			/* not a JSON object: skipped */
		}
		if (rv != UV_EAGAIN) {
			(void) snprintf(
			    err, errlen, "bad frame length from the bridge");
			return -1;
		}
		rv = read_some(c, deadline, err, errlen);
		if (rv <= 0) {
			return rv == 0 ? 1 : -1;
		}
	}
}

const char *
eb__ctl_last_frame(const ctl_conn *c, size_t *len)
{
	*len = c->last_len;
	return c->last != NULL ? c->last : "";
}
