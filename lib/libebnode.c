/*
 * libebnode's own code: the run-time version, so that an embedder can
 * compare the library it loaded with the headers it was compiled against
 * (EB_VERSION_STRING). Everything else in the library is the module objects
 * (lib/CMakeLists.txt).
 */
#include <ebnode/version.h>

const char *
eb_library_version(void)
{
	return EB_VERSION_STRING;
}
