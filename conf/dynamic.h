/*
 * dynamic.c: the dynamic configuration (docs/CONFIG.md "Dynamic keys").
 * Every change builds a whole new eb__conf from the local sources (file <
 * environment < --set) with the cluster configuration (<root>/config) on
 * top (dynamic keys only), through the same schema as the start, and hands
 * it to the owner's apply callback; one that does not load or apply is
 * refused: the previous one stays, an ERROR is logged, it is counted and
 * the reason is published (the /health "degraded" text). SIGHUP re-reads
 * the local sources the same way. GET /config shows the applied version
 * and where each dynamic key's value came from; the ebnode_config_*
 * metrics count. Threads: loop thread only.
 */
#ifndef EB_CONF_DYNAMIC_H
#define EB_CONF_DYNAMIC_H

#include <stdint.h>

#include <uv.h>

#include "admin/admin.h"
#include "conf/conf.h"

typedef struct eb__conf_dyn eb__conf_dyn;

/* Applies the dynamic keys of c (cluster version `version`, 0: none) to
 * the running subsystems: 0, or an error with detail, and then nothing
 * changed. */
typedef int (*eb__conf_apply_cb)(
    void *arg, const eb__conf *c, int64_t version, eb_errbuf *err);

/* start: the configuration of the start (borrowed, outlives d); src: its
 * local sources (borrowed; NULL: none); *degraded is set to the refusal
 * reason while one stands, else NULL. No I/O. */
eb__conf_dyn *eb__conf_dyn_new(const eb__conf *start,
    const eb__conf_sources *src, eb__conf_apply_cb apply, void *arg,
    const char **degraded);
/* Snapshots the local file (a cluster change rebuilds on it, so that an
 * edited file takes effect only with SIGHUP), follows SIGHUP on loop and
 * the running cluster c's <root>/config (applying what it read already).
 * stop undoes it (the signal handle closes on a later turn); idempotent. */
void eb__conf_dyn_start(eb__conf_dyn *d, uv_loop_t *loop, eb_cluster *c);
void eb__conf_dyn_stop(eb__conf_dyn *d);
/* After stop's handle closed (or without a start). */
void eb__conf_dyn_free(eb__conf_dyn *d);
/* A cluster configuration version (text NULL: none): rebuilds and
 * applies; 0 when applied. */
int eb__conf_dyn_cluster(
    eb__conf_dyn *d, int64_t version, const char *text, size_t len);
/* The configuration in force and its cluster version (0: none). */
const eb__conf *eb__conf_dyn_current(const eb__conf_dyn *d);
int64_t         eb__conf_dyn_version(const eb__conf_dyn *d);
/* GET /config and the ebnode_config_* metrics. */
void eb__conf_dyn_admin_register(eb__admin *adm, eb__conf_dyn *d);

#endif
