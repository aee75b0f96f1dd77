/*
 * ebctl bridge connections: a non-blocking socket driven with poll() so that
 * every wait has a deadline, optional TLS with OpenSSL directly on the fd
 * (a CLI owns its socket; there is no libuv here), and the bridge framing
 * from common/frame.h.
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

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <uv.h>

#include "common/alloc.h"
#include "common/frame.h"
#include "common/util.h"
#include "ctl/ctl.h"

#define CTL_MAX_FRAME (64u * 1024u * 1024u)

struct ctl_conn {
	int           fd;
	SSL_CTX      *ctx;
	SSL          *ssl;
	eb__frame_dec dec;
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

static void
tls_errstr(char *err, size_t errlen, const char *what)
{
	unsigned long e = ERR_get_error();
	char          buf[200];

	if (e != 0) {
		ERR_error_string_n(e, buf, sizeof(buf));
	} else {
		(void) snprintf(buf, sizeof(buf), "handshake failed");
	}
	(void) snprintf(err, errlen, "%s: %s", what, buf);
	ERR_clear_error();
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
is_ip_literal(const char *h)
{
	unsigned char buf[16];

	return inet_pton(AF_INET, h, buf) == 1 ||
	       inet_pton(AF_INET6, h, buf) == 1;
}

static int
tls_setup(ctl_conn *c, const ctl_args *a, char *err, size_t errlen)
{
	const char *name =
	    a->servername != NULL ? a->servername : a->bridge.host;

	c->ctx = SSL_CTX_new(TLS_client_method());
	if (c->ctx == NULL) {
		tls_errstr(err, errlen, "TLS");
		return -1;
	}
	(void) SSL_CTX_set_min_proto_version(c->ctx, TLS1_2_VERSION);
	if (!a->insecure) {
		SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
		if ((a->ca != NULL && SSL_CTX_load_verify_locations(
		                          c->ctx, a->ca, NULL) != 1) ||
		    (a->ca == NULL &&
		        SSL_CTX_set_default_verify_paths(c->ctx) != 1)) {
			tls_errstr(err, errlen, "TLS: loading CA");
			return -1;
		}
	}
	if (a->cert != NULL &&
	    (SSL_CTX_use_certificate_chain_file(c->ctx, a->cert) != 1 ||
	        SSL_CTX_use_PrivateKey_file(c->ctx, a->key, SSL_FILETYPE_PEM) !=
	            1)) {
		tls_errstr(err, errlen, "TLS: loading client certificate");
		return -1;
	}
	c->ssl = SSL_new(c->ctx);
	if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1) {
		tls_errstr(err, errlen, "TLS");
		return -1;
	}
	if (!is_ip_literal(name)) {
		/* The macro casts its argument to void *: pass a copy. */
		char sni[CTL_HOST_MAX];

		(void) snprintf(sni, sizeof(sni), "%s", name);
		(void) SSL_set_tlsext_host_name(c->ssl, sni);
	}
	if (!a->insecure) {
		if (is_ip_literal(name)) {
			(void) X509_VERIFY_PARAM_set1_ip_asc(
			    SSL_get0_param(c->ssl), name);
		} else {
			(void) SSL_set1_host(c->ssl, name);
		}
	}
	return 0;
}

typedef enum tls_op { TLS_OP_CONNECT, TLS_OP_READ, TLS_OP_WRITE } tls_op;

/* Runs an SSL call until it completes or the deadline passes: > 0 done
 * (bytes for read/write), 0 timeout, < 0 error (SSL_get_error negated). */
static int
tls_io(ctl_conn *c, tls_op op, void *rbuf, const void *wbuf, int n,
    uint64_t deadline)
{
	int rv;
	int e;

	for (;;) {
		ERR_clear_error();
		rv = op == TLS_OP_CONNECT ? SSL_connect(c->ssl)
		     : op == TLS_OP_READ  ? SSL_read(c->ssl, rbuf, n)
		                          : SSL_write(c->ssl, wbuf, n);
		if (rv > 0) {
			return rv;
		}
		e = SSL_get_error(c->ssl, rv);
		if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
			return -e;
		}
		rv = eb__ctl_wait_fd(c->fd,
		    e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline);
		if (rv <= 0) {
			return rv == 0 ? 0 : -SSL_ERROR_SYSCALL;
		}
	}
}

ctl_conn *
eb__ctl_connect(const ctl_args *a, char *err, size_t errlen)
{
	ctl_conn *c = eb__calloc(1, sizeof(*c));
	uint64_t  deadline = deadline_of(a->timeout_ms);
	int       rv;
	long      vr;

	eb__frame_dec_init(&c->dec, CTL_MAX_FRAME);
	c->fd = eb__ctl_tcp_connect(&a->bridge, deadline, err, errlen);
	if (c->fd < 0) {
		goto fail;
	}
	if (a->tls) {
		if (tls_setup(c, a, err, errlen) != 0) {
			goto fail;
		}
		rv = tls_io(c, TLS_OP_CONNECT, NULL, NULL, 0, deadline);
		if (rv <= 0) {
			vr = SSL_get_verify_result(c->ssl);
			if (rv == 0) {
				(void) snprintf(err, errlen,
				    "TLS handshake with %s:%d: timed out",
				    a->bridge.host, a->bridge.port);
			} else if (vr != X509_V_OK) {
				(void) snprintf(err, errlen,
				    "TLS: certificate verification failed: %s",
				    X509_verify_cert_error_string(vr));
			} else {
				tls_errstr(err, errlen, "TLS handshake");
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
	if (c->ssl != NULL) {
		(void) SSL_shutdown(c->ssl);
		SSL_free(c->ssl);
	}
	SSL_CTX_free(c->ctx);
	if (c->fd >= 0) {
		(void) close(c->fd);
	}
	eb__frame_dec_free(&c->dec);
	free(c);
}

/* Writes some of p: bytes written (> 0), 0 on timeout, -1 on error. */
static ssize_t
write_some(ctl_conn *c, const char *p, size_t n, uint64_t deadline)
{
	ssize_t w;
	int     rv;

	if (c->ssl != NULL) {
		rv = tls_io(c, TLS_OP_WRITE, NULL, p,
		    n > 1u << 20 ? 1 << 20 : (int) n, deadline);
		return rv < 0 ? -1 : rv;
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
			    c->ssl != NULL ? "TLS error" : strerror(errno));
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
	int rv = tls_io(c, TLS_OP_READ, dst, NULL, 65536, deadline);

	if (rv < 0) {
		(void) snprintf(err, errlen,
		    rv == -SSL_ERROR_ZERO_RETURN
		        ? "connection closed by the bridge"
		        : "TLS read error");
		ERR_clear_error();
		return -1;
	}
	return rv;
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
	ssize_t r = c->ssl != NULL ? read_tls(c, dst, deadline, err, errlen)
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

	for (;;) {
		while ((rv = eb__frame_dec_next(&c->dec, &p, &n)) == 0) {
			j = json_loadb(p, n, 0, NULL);
			if (json_is_object(j)) {
				*out = j;
				return 0;
			}
			json_decref(j); /* not an object: skipped */
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
