/* The export macro. libeb is built with -fvisibility=hidden. */
#ifndef EBNODE_API_H
#define EBNODE_API_H

#if defined(__GNUC__)
#define EB_API __attribute__((visibility("default")))
#else
#define EB_API
#endif

#endif
