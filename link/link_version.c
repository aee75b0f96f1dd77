/*
 * Versioned node links: which protocol version a pair speaks, and why a
 * member peer's link is down (for /health and the metrics).
 *
 * Negotiation (the hello exchange is in link_conn.c): each node speaks a
 * range min..max (eb_link_opts.proto_min/max) and writes it into its
 * member record; a record without one is a release before versioned links,
 * which speaks exactly EB_LINK_PROTOCOL_LEGACY and refuses a hello of any
 * other version. The dialer proposes the highest version in common with
 * the record's range and appends its own range to the hello (an old
 * acceptor ignores the trailing bytes); the acceptor answers only after
 * the dialer's hello, with the highest version in common with the range it
 * read (or, from an old dialer without one, the version it proposed) and
 * its own range. The pair then speaks the acceptor's answer; a version
 * outside a side's range closes the connection (reason "version").
 *
 * Down reasons: set by failures the manager can attribute to a member
 * peer (the record shows no common version, a hello named one, the TLS
 * handshake of a dial failed, a dial failed), cleared when the link comes
 * up. Invariant: a peer whose link is up has reason EB_LINK_DOWN_NONE.
 *
 * Threads: loop thread only.
 */
#include <stddef.h>
#include <stdio.h>

#include "link/link_int.h"

static const char *const reason_names[EB_LINK_DOWN_REASONS] = {
	NULL,
	"version",
	"tls",
	"unreachable",
};

const char *
eb_link_down_reason_name(eb_link_down_reason r)
{
	return (unsigned) r < EB_LINK_DOWN_REASONS ? reason_names[r] : NULL;
}

uint16_t
eb__link_version_pick(
    uint16_t amin, uint16_t amax, uint16_t bmin, uint16_t bmax)
{
	uint16_t hi = amax < bmax ? amax : bmax;
	uint16_t lo = amin > bmin ? amin : bmin;

	return hi >= lo ? hi : 0;
}

void
eb__link_peer_range(const link_peer *p, uint16_t *lo, uint16_t *hi)
{
	*lo = p->rec_min != 0 ? p->rec_min : EB_LINK_PROTOCOL_LEGACY;
	*hi = p->rec_max != 0 ? p->rec_max : EB_LINK_PROTOCOL_LEGACY;
}

uint16_t
eb__link_version_for(const eb_link_mgr *m, const link_peer *p)
{
	uint16_t pmin;
	uint16_t pmax;

	eb__link_peer_range(p, &pmin, &pmax);
	return eb__link_version_pick(m->proto_min, m->proto_max, pmin, pmax);
}

void
eb__link_peer_set_down(eb_link_mgr *m, link_peer *p, int r)
{
	if (p->down == r) {
		return;
	}
	if (r != EB_LINK_DOWN_NONE) {
		m->down_total[r]++;
		EB_LOG_DEBUG("link", "link-down-reason: node=%s reason=%s",
		    p->node_id, reason_names[r]);
	}
	p->down = r;
	p->down_since = uv_now(m->loop);
}

void
eb__link_peer_check_range(eb_link_mgr *m, link_peer *p)
{
	uint16_t lo;
	uint16_t hi;

	if (p->conn != NULL) {
		return;
	}
	if (eb__link_version_for(m, p) != 0) {
		if (p->down == EB_LINK_DOWN_VERSION) {
			eb__link_peer_set_down(m, p, EB_LINK_DOWN_NONE);
		}
		return;
	}
	if (p->down == EB_LINK_DOWN_VERSION) {
		return; /* logged when it began */
	}
	eb__link_peer_range(p, &lo, &hi);
	EB_LOG_WARN("link", "version-skew: node=%s peer=%u..%u self=%u..%u",
	    p->node_id, lo, hi, m->proto_min, m->proto_max);
	eb__link_peer_set_down(m, p, EB_LINK_DOWN_VERSION);
}

static int
peer_counts(const eb_link_mgr *m, const link_peer *p, uint64_t now)
{
	if (p->host == NULL || p->conn != NULL) {
		return 0; /* not a member (yet), or linked */
	}
	if (p->down == EB_LINK_DOWN_UNREACHABLE) {
		return now - p->down_since >= m->dead_ms;
	}
	return p->down != EB_LINK_DOWN_NONE;
}

int
eb_link_mgr_degraded(const eb_link_mgr *m, char *buf, size_t size)
{
	const eb__list *it;
	uint64_t        now = uv_now(m->loop);
	int             n = 0;

	if (size > 0) {
		buf[0] = '\0';
	}
	for (it = m->peers.next; it != &m->peers; it = it->next) {
		const link_peer *p =
		    (const link_peer *) (const void *) ((const char *) it -
		                                        offsetof(
		                                            link_peer, link));

		if (!peer_counts(m, p, now)) {
			continue;
		}
		if (n++ == 0 && size > 0) {
			uint16_t lo;
			uint16_t hi;

			eb__link_peer_range(p, &lo, &hi);
			(void) snprintf(buf, size,
			    "link-down: node=%s reason=%s peer=%u..%u "
			    "self=%u..%u",
			    p->node_id, reason_names[p->down], lo, hi,
			    m->proto_min, m->proto_max);
		}
	}
	return n;
}

uint64_t
eb_link_mgr_down_total(const eb_link_mgr *m, eb_link_down_reason r)
{
	return (unsigned) r < EB_LINK_DOWN_REASONS ? m->down_total[r] : 0;
}

void
eb_link_mgr_protocols(const eb_link_mgr *m, int *proto_min, int *proto_max)
{
	*proto_min = m->proto_min;
	*proto_max = m->proto_max;
}
