/* ebnode version, and the protocol versions it speaks. */
#ifndef EBNODE_VERSION_H
#define EBNODE_VERSION_H

#include <ebnode/api.h>

#define EB_VERSION_MAJOR  0
#define EB_VERSION_MINOR  2
#define EB_VERSION_PATCH  0
#define EB_VERSION_STRING "0.2.0"

/*
 * The version of the libebnode shared library in use (EB_VERSION_STRING of
 * the library's build); only in libebnode, not in the module archives.
 */
EB_API const char *eb_library_version(void);

/* Versions of the node-to-node link protocol (cluster links, hello
 * frame): this build speaks EB_LINK_PROTOCOL_MIN .. _VERSION (same values
 * as in link.h). docs/UPGRADING.md says how they change. */
#define EB_LINK_PROTOCOL_VERSION 3
#define EB_LINK_PROTOCOL_MIN     3

#endif
