/*
 * ebnode public umbrella header: the export macro and the version.
 *
 * ebnode's library (libeb) is built with -fvisibility=hidden; only names
 * marked EB_API are exported. There is no ABI promise between versions.
 */
#ifndef EBNODE_EB_H
#define EBNODE_EB_H

#include <ebnode/api.h>
#include <ebnode/err.h>
#include <ebnode/log.h>
#include <ebnode/version.h>

#endif
