# eb_unit_test(<module> <name> LIBS <libs...>)
#   builds tests/unit/<module>/<name>.c with the harness into one cmocka
#   executable and registers it as ctest "unit.<module>.<name>".
# eb_c_test(<area> <name> SOURCES <files> LIBS <libs> [LABELS ..] [FIXTURES ..] [TIMEOUT s])
#   the same for a C integration test "it.<area>.<name>".
# eb_py_test(<area> <name> SCRIPT <file.py> [ARGS ..] [TIMEOUT s] [LABELS ..]
#            [ENV ..] [FIXTURES ..] [CERTS] [ZK [zk|zkx|zk3]])
#   registers the Python integration test "it.<area>.<name>": the command
#   "python3 <file.py> <ARGS..>" (SCRIPT relative to the calling directory's
#   source dir unless absolute), run in the calling directory's build dir.
#   Properties: LABELS "integration;<area>;<LABELS..>", TIMEOUT (120 s by
#   default), ENVIRONMENT <ENV..> (e.g. EBNODE_BIN=$<TARGET_FILE:ebnode>),
#   FIXTURES_REQUIRED <FIXTURES..>. CERTS adds FIXTURES_REQUIRED certs and
#   EB_CERTS_DIR=${EB_CERTS_DIR} (after ENV) for tests that use the test
#   PKI (tests/certs). ZK calls eb_zk_test(it.<area>.<name> FIXTURE <f>)
#   last (fixture zk when none is named), which appends the fixture, the
#   "zk" label, the fixture's environment and, for zkx and zk3, the
#   RESOURCE_LOCK; tests/fixtures/CMakeLists.txt defines eb_zk_test, so a
#   caller with ZK must be added after it (tests/integration/* are). Anything else
#   (SKIP_RETURN_CODE, RUN_SERIAL, ...) goes in a set_tests_properties()
#   after the call.
function(eb_unit_test module name)
  cmake_parse_arguments(T "" "TIMEOUT" "LIBS;SOURCES;LABELS;FIXTURES" ${ARGN})
  set(tgt unit_${module}_${name})
  add_executable(${tgt} ${PROJECT_SOURCE_DIR}/tests/unit/${module}/${name}.c ${T_SOURCES})
  target_link_libraries(${tgt} PRIVATE eb_test_harness ${T_LIBS})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 30)
  endif()
  add_test(NAME unit.${module}.${name} COMMAND ${tgt})
  set_tests_properties(unit.${module}.${name} PROPERTIES
    LABELS "unit;${module};${T_LABELS}" TIMEOUT ${T_TIMEOUT})
  if(T_FIXTURES)
    set_tests_properties(unit.${module}.${name} PROPERTIES FIXTURES_REQUIRED "${T_FIXTURES}")
  endif()
endfunction()

function(eb_c_test area name)
  cmake_parse_arguments(T "" "TIMEOUT" "LIBS;SOURCES;LABELS;FIXTURES;ENV" ${ARGN})
  set(tgt it_${area}_${name})
  add_executable(${tgt} ${T_SOURCES})
  target_link_libraries(${tgt} PRIVATE eb_test_harness ${T_LIBS})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_test(NAME it.${area}.${name} COMMAND ${tgt})
  set_tests_properties(it.${area}.${name} PROPERTIES
    LABELS "integration;${area};${T_LABELS}" TIMEOUT ${T_TIMEOUT})
  if(T_FIXTURES)
    set_tests_properties(it.${area}.${name} PROPERTIES FIXTURES_REQUIRED "${T_FIXTURES}")
  endif()
  if(T_ENV)
    set_tests_properties(it.${area}.${name} PROPERTIES ENVIRONMENT "${T_ENV}")
  endif()
endfunction()

function(eb_py_test area name)
  cmake_parse_arguments(T "CERTS" "SCRIPT;TIMEOUT" "ARGS;LABELS;ENV;FIXTURES;ZK" ${ARGN})
  if(NOT T_SCRIPT)
    message(FATAL_ERROR "eb_py_test(${area} ${name}): SCRIPT <file.py> missing")
  endif()
  if(T_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "eb_py_test(${area} ${name}): unknown ${T_UNPARSED_ARGUMENTS}")
  endif()
  set(test it.${area}.${name})
  if(NOT IS_ABSOLUTE ${T_SCRIPT})
    set(T_SCRIPT ${CMAKE_CURRENT_SOURCE_DIR}/${T_SCRIPT})
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  set(labels integration ${area} ${T_LABELS})
  set(env ${T_ENV})
  set(fixtures ${T_FIXTURES})
  if(T_CERTS)
    list(APPEND env EB_CERTS_DIR=${EB_CERTS_DIR})
    list(APPEND fixtures certs)
  endif()
  add_test(NAME ${test} COMMAND python3 ${T_SCRIPT} ${T_ARGS})
  set_tests_properties(${test} PROPERTIES LABELS "${labels}" TIMEOUT ${T_TIMEOUT})
  if(env)
    set_tests_properties(${test} PROPERTIES ENVIRONMENT "${env}")
  endif()
  if(fixtures)
    set_tests_properties(${test} PROPERTIES FIXTURES_REQUIRED "${fixtures}")
  endif()
  # "ZK" alone: no value, so cmake_parse_arguments lists it as missing one.
  if("ZK" IN_LIST T_KEYWORDS_MISSING_VALUES)
    set(T_ZK zk)
  endif()
  if(T_ZK)
    eb_zk_test(${test} FIXTURE ${T_ZK})
  endif()
endfunction()
