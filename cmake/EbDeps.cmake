# Third-party libraries, all from Debian packages (scripts/deps.sh).
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBUV REQUIRED IMPORTED_TARGET libuv>=1.44)
pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson>=2.13)
pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
find_package(OpenSSL 3 REQUIRED)

find_path(ZOOKEEPER_INCLUDE_DIR zookeeper/zookeeper.h REQUIRED)
find_library(ZOOKEEPER_ST_LIBRARY zookeeper_st REQUIRED)
add_library(eb_zookeeper_st INTERFACE)
target_include_directories(eb_zookeeper_st SYSTEM INTERFACE ${ZOOKEEPER_INCLUDE_DIR})
target_link_libraries(eb_zookeeper_st INTERFACE ${ZOOKEEPER_ST_LIBRARY})

find_path(HTTP_PARSER_INCLUDE_DIR http_parser.h REQUIRED)
find_library(HTTP_PARSER_LIBRARY http_parser REQUIRED)
add_library(eb_http_parser INTERFACE)
target_include_directories(eb_http_parser SYSTEM INTERFACE ${HTTP_PARSER_INCLUDE_DIR})
target_link_libraries(eb_http_parser INTERFACE ${HTTP_PARSER_LIBRARY})

# wslay (libwslay-dev): WebSocket framing for the browser bridge (web/).
find_path(WSLAY_INCLUDE_DIR wslay/wslay.h REQUIRED)
find_library(WSLAY_LIBRARY wslay REQUIRED)
add_library(eb_wslay INTERFACE)
target_include_directories(eb_wslay SYSTEM INTERFACE ${WSLAY_INCLUDE_DIR})
target_link_libraries(eb_wslay INTERFACE ${WSLAY_LIBRARY})
