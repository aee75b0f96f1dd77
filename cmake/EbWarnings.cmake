# Build flags shared by every target: the strict warning set, -Werror on
# request (CI), and the sanitizers.
add_library(eb_build_flags INTERFACE)
target_compile_definitions(eb_build_flags INTERFACE _POSIX_C_SOURCE=200809L)
target_compile_options(eb_build_flags INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes
  -Wold-style-definition -Wconversion -Wsign-conversion -Wformat=2 -Wundef -Wvla
  -Wwrite-strings -Wcast-qual -Wpointer-arith -Wnull-dereference
  -Werror=implicit-function-declaration -Werror=incompatible-pointer-types
  -fno-omit-frame-pointer -fvisibility=hidden $<$<BOOL:${EB_WERROR}>:-Werror>)
target_include_directories(eb_build_flags INTERFACE
  ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR})
set(EB_SANITIZE "" CACHE STRING "'address,undefined' | 'thread' | '' (none)")
if(EB_SANITIZE)
  target_compile_options(eb_build_flags INTERFACE -fsanitize=${EB_SANITIZE} -fno-sanitize-recover=all)
  target_link_options(eb_build_flags INTERFACE -fsanitize=${EB_SANITIZE})
endif()
