/*
 * The safe-retry metric families (dedup_metrics.c), read on demand from the
 * bus's deduplication table of this node (eventbus/dedup.c): the keys it
 * remembers, the arrivals it did not deliver again and the keys it evicted.
 * Loop thread only.
 */
#ifndef EB_INGRESS_DEDUP_METRICS_H
#define EB_INGRESS_DEDUP_METRICS_H

#include "admin/prom.h"

/* An eb__admin metrics collector; arg is the eb__ingress_admin context
 * (ingress_admin.h, borrowed). */
void eb__ingress_dedup_metrics(eb__prom *w, void *arg);

#endif
