/* ebnode version, and the protocol versions it speaks. */
#ifndef EBNODE_VERSION_H
#define EBNODE_VERSION_H

#define EB_VERSION_MAJOR  0
#define EB_VERSION_MINOR  1
#define EB_VERSION_PATCH  0
#define EB_VERSION_STRING "0.1.0"

/* Version of the node-to-node link protocol (cluster links, hello frame). */
#define EB_LINK_PROTOCOL_VERSION 2

#endif
