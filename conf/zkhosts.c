/*
 * zookeeper.connect's host list, checked as the ZooKeeper C client (Debian
 * 3.8, libzookeeper_st) takes it, so that --check and the loader refuse
 * what would fail at start or never connect:
 *   - entries are separated by ',' and none may be empty (",", ",,,");
 *   - no white space anywhere (the client keeps a trailing space in the
 *     port and fails with ZBADARGUMENTS);
 *   - each entry is host:port, split at the LAST ':' (how the client
 *     splits, so an IPv6 address is written bare: "::1:2181"); the
 *     bracketed form "[::1]:2181" is refused with that hint, because the
 *     client hands "[::1]" to getaddrinfo, which fails (measured: start
 *     exits with "init-failed errno=2");
 *   - the port is decimal, 1..65535 (0 or 99999 never connect);
 *   - the host is an IPv6 address (it contains ':'), a dotted IPv4
 *     address (only digits and dots) or a DNS name (labels of letters,
 *     digits, '-' and '_', 1..63 each, not starting or ending with '-',
 *     at most 253 characters).
 * The chroot after the first '/' is checked by conf.c (zk_path_problem).
 * Pure; any thread.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "conf/conf.h"

#define HOSTNAME_MAX 253u
#define LABEL_MAX    63u
#define SHOW_MAX     60 /* characters of an entry quoted in a message */

static int
show_len(size_t n)
{
	return n > SHOW_MAX ? SHOW_MAX : (int) n;
}

static int
is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9');
}

/* A DNS name: 1 when valid. */
static int
host_name_ok(const char *h, size_t n)
{
	size_t i, label = 0;

	if (n == 0 || n > HOSTNAME_MAX) {
		return 0;
	}
	for (i = 0; i < n; i++) {
		char c = h[i];

		if (c == '.') {
			/* Empty labels ("a..b", ".a") and a label ending in
			 * '-' are not names; a trailing '.' (FQDN) is. */
			if (label == 0 || h[i - 1] == '-') {
				return 0;
			}
			label = 0;
			continue;
		}
		if (!is_alnum(c) && c != '-' && c != '_') {
			return 0;
		}
		if (label == 0 && c == '-') {
			return 0;
		}
		if (++label > LABEL_MAX) {
			return 0;
		}
	}
	return h[n - 1] != '-';
}

/* An address of family af written in h[0..n): 1 when valid. */
static int
address_ok(int af, const char *h, size_t n)
{
	unsigned char addr[sizeof(struct in6_addr)];
	char          tmp[64];

	if (n >= sizeof(tmp)) {
		return 0;
	}
	memcpy(tmp, h, n);
	tmp[n] = '\0';
	return inet_pton(af, tmp, addr) == 1;
}

static int
all_of(const char *s, size_t n, const char *set)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (strchr(set, s[i]) == NULL) {
			return 0;
		}
	}
	return 1;
}

/* The host part h[0..n) of an entry: 1 when valid. */
static int
host_ok(const char *h, size_t n)
{
	if (n == 0) {
		return 0;
	}
	if (memchr(h, ':', n) != NULL) {
		return address_ok(AF_INET6, h, n);
	}
	if (all_of(h, n, "0123456789.")) {
		return address_ok(AF_INET, h, n);
	}
	return host_name_ok(h, n);
}

/* One entry e[0..n): NULL or the problem, written into buf. */
static const char *
entry_problem(const char *e, size_t n, char *buf, size_t cap)
{
	const char *colon = NULL;
	size_t      i, hn, pn;
	long        port = 0;

	for (i = 0; i < n; i++) {
		if (e[i] == ':') {
			colon = e + i;
		}
	}
	if (n > 0 && e[0] == '[') {
		(void) snprintf(buf, cap,
		    "\"%.*s\": the ZooKeeper client takes no [brackets]; "
		    "write an IPv6 address bare, as in ::1:2181",
		    show_len(n), e);
		return buf;
	}
	if (colon == NULL) {
		(void) snprintf(
		    buf, cap, "\"%.*s\": expected host:port", show_len(n), e);
		return buf;
	}
	hn = (size_t) (colon - e);
	pn = n - hn - 1;
	if (pn == 0 || pn > 5 || !all_of(colon + 1, pn, "0123456789")) {
		port = -1;
	}
	for (i = 0; port >= 0 && i < pn; i++) {
		port = port * 10 + (colon[1 + i] - '0');
	}
	if (port < 1 || port > 65535) {
		(void) snprintf(
		    buf, cap, "\"%.*s\": port not in 1..65535", show_len(n), e);
		return buf;
	}
	if (!host_ok(e, hn)) {
		(void) snprintf(buf, cap,
		    "\"%.*s\": host is not a DNS name, IPv4 or IPv6 address",
		    show_len(n), e);
		return buf;
	}
	return NULL;
}

const char *
eb__conf_zk_hosts_problem(const char *s, size_t n, char *buf, size_t cap)
{
	size_t i, start = 0;

	for (i = 0; i < n; i++) {
		if (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' ||
		    s[i] == '\r' || s[i] == '\v' || s[i] == '\f') {
			(void) snprintf(buf, cap,
			    "\"%.*s\": white space is not allowed", show_len(n),
			    s);
			return buf;
		}
	}
	for (i = 0; i <= n; i++) {
		const char *why;

		if (i < n && s[i] != ',') {
			continue;
		}
		if (i == start) {
			(void) snprintf(buf, cap,
			    "\"%.*s\": empty entry; expected "
			    "host:port[,host:port...][/chroot]",
			    show_len(n), s);
			return buf;
		}
		if ((why = entry_problem(s + start, i - start, buf, cap)) !=
		    NULL) {
			return why;
		}
		start = i + 1;
	}
	return NULL;
}
