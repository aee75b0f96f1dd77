/*
 * th_proxy: an in-process TCP proxy on a libuv loop for partition tests.
 * It listens on 127.0.0.1:<port> (0: any free port, see th_proxy_port()) and
 * forwards every accepted connection to one target address, with faults:
 *
 *   pause   stop forwarding in both directions; sockets stay open and what
 *           arrives waits in the kernel buffers (a silent network: the peers
 *           see no error, only missing replies). New connections are accepted
 *           and connected upstream but not forwarded either.
 *   resume  forward again (what waited is delivered in order).
 *   cut     close every current connection (both sides) and refuse new ones
 *           (accept and close at once) until heal.
 *   heal    accept and forward new connections again.
 *   delay   forward each chunk only after the given number of ms (order kept).
 *
 * The target is a numeric IPv4 or IPv6 address. Loop thread only. The proxy
 * owns its handles; th_proxy_close() is required exactly once and calls cb on
 * a later tick after every handle has closed, then frees the proxy.
 */
#ifndef EB_TEST_PROXY_H
#define EB_TEST_PROXY_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

typedef struct th_proxy th_proxy;

/* 0 or a libuv error; listens at once. */
int  th_proxy_new(uv_loop_t *loop, int listen_port, const char *target_host,
     int target_port, th_proxy **out);
int  th_proxy_port(const th_proxy *p);
void th_proxy_pause(th_proxy *p);
void th_proxy_resume(th_proxy *p);
void th_proxy_cut(th_proxy *p);
void th_proxy_heal(th_proxy *p);
void th_proxy_delay_ms(th_proxy *p, uint64_t ms);
/* Connections accepted so far (including refused ones while cut), and the
 * number currently open. */
uint64_t th_proxy_accepted(const th_proxy *p);
unsigned th_proxy_active(const th_proxy *p);
/* Parses "host:port" (IPv6 as "[addr]:port"); 0 or UV_EINVAL. host gets a
 * NUL-terminated copy of at most hostlen - 1 chars. */
int th_proxy_parse_target(const char *s, char *host, size_t hostlen, int *port);
void th_proxy_close(th_proxy *p, void (*cb)(void *arg), void *arg);

#endif
