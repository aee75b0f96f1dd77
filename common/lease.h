/*
 * The leader lease bound (DESIGN.md rule 5, docs/CLUSTER.md "The lease"):
 * one pure computation shared by the configuration check (ebnode --check,
 * with the configured session timeout) and the election (at run time, with
 * the negotiated one), so that both refuse the same combinations.
 *
 *   tick   = tick_ms, or session/2 when 0 (unknown: the largest tickTime a
 *            default ZooKeeper allows, minSessionTimeout = 2 x tickTime)
 *   H      = heartbeat_ms, or session/4 when 0
 *   margin = max(session/20, EB_LEASE_MARGIN_MIN_MS)
 *   bound  = session - tick/2 - H - margin
 *   lease  = lease_ms, or bound when 0
 *
 * Refused (EB_ECONF, *key names the setting to change): bound or lease
 * below EB_LEASE_MIN_MS, lease <= H, lease > bound.
 * Pure; any thread.
 */
#ifndef EB_COMMON_LEASE_H
#define EB_COMMON_LEASE_H

#include <stdint.h>

#define EB_LEASE_MARGIN_MIN_MS 50u
#define EB_LEASE_MIN_MS        100u

typedef struct eb_lease_plan {
	uint32_t session_ms;   /* input */
	uint32_t tick_ms;      /* used: configured, or session/2 */
	int      tick_assumed; /* 1: tick_ms was unknown (0) */
	uint32_t heartbeat_ms; /* H */
	uint32_t margin_ms;
	int64_t  bound_ms; /* may be <= 0 when refused */
	uint32_t lease_ms; /* effective; 0 when refused */
} eb_lease_plan;

/* 0, or EB_ECONF with *key ("zookeeper.session_timeout_ms",
 * "zookeeper.tick_ms", "election.heartbeat_ms" or "election.lease_ms").
 * *plan is filled in both cases (for the message). */
int eb__lease_plan(uint32_t session_ms, uint32_t tick_ms, uint32_t heartbeat_ms,
    uint32_t lease_ms, eb_lease_plan *plan, const char **key);

#endif
