/*
 * The ingress on the admin server (ingress_admin.c): the ingress metric
 * families (ebnode_ingress_*, the request duration histogram) and the
 * fence families next to them (ebnode_fenced_total, ebnode_fence_epoch,
 * ebnode_bus_pending_receipts, ebnode_bus_receipt_failures_total).
 * Loop thread only.
 */
#ifndef EB_INGRESS_INGRESS_ADMIN_H
#define EB_INGRESS_INGRESS_ADMIN_H

#include <ebnode/bus.h>
#include <ebnode/ingress.h>

#include "admin/admin.h"

typedef struct eb__ingress_admin {
	eb_ingress *ingress; /* borrowed; NULL: disabled (zeros) */
	eb_bus     *bus;     /* borrowed; NULL: not running (zeros) */
} eb__ingress_admin;

/* Registers the ingress collector. ctx is borrowed and must outlive adm. */
void eb__ingress_admin_register(eb__admin *adm, eb__ingress_admin *ctx);
/* The ingress's rows of ebnode_errors_total (in NULL: zeros). */
void eb__ingress_admin_errors(eb__prom *w, eb_ingress *in);

#endif
