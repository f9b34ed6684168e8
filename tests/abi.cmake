# abi.cmake: the checks of bitt's public surface that are not C test programs.
# Included from tests/CMakeLists.txt; each is a ctest test labelled "abi".
#
#   abi_header_c, abi_header_cxx11, abi_header_cxx17
#                         bitt.h compiles alone, -Wall -Wextra -pedantic -Werror
#   abi_symbols_declared  abi/symbols.txt = abi/bitt.map = BITT_API in bitt.h
#   abi_symbols           libbitt.so exports exactly abi/symbols.txt, versioned,
#                         with SONAME libbitt.so.<major>
#   abi_install           cmake --install, then a consumer project through
#                         find_package(bitt) and through pkg-config
#   abi_default_build     a configure with no options builds the library only
#                         (no tests, no benchmarks: no cmocka needed)
#   cli                   the bitt command-line tool, end to end: kv, migrate, version
#   cli_modules           the same for queue, lease, outbox, schedule, budget, pubsub
#   abi_abidiff           libbitt.so against abi/baseline/libbitt.so.0.abi (abidiff):
#                         no removed or changed function or type, additions only
#                         in a new version node
#   abi_abidiff_catches   the same check on deliberately broken copies of the
#                         library (tests/abi/variants.cmake) fails, and passes an
#                         addition in a new node

set(BITT_ABI_TESTS ${CMAKE_CURRENT_SOURCE_DIR}/abi)
set(BITT_ABI_WORK ${CMAKE_CURRENT_BINARY_DIR}/abi)
find_program(BITT_BASH bash REQUIRED)
foreach(_tool NM READELF)
  if(NOT CMAKE_${_tool})
    string(TOLOWER ${_tool} _name)
    find_program(CMAKE_${_tool} ${_name} REQUIRED)
  endif()
endforeach()

# ---- (a) the header alone, as C and as C++ ---------------------------------
if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
  set(_bitt_strict -Wall -Wextra -pedantic -Werror -Wshadow -fsyntax-only
    -I${PROJECT_SOURCE_DIR}/abi/include)
  add_test(NAME abi_header_c
    COMMAND ${CMAKE_C_COMPILER} -std=c11 ${_bitt_strict} -Wstrict-prototypes
      ${BITT_ABI_TESTS}/header.c)
  foreach(_std 11 17)
    add_test(NAME abi_header_cxx${_std}
      COMMAND ${CMAKE_CXX_COMPILER} -std=c++${_std} ${_bitt_strict} -Wold-style-cast
        ${BITT_ABI_TESTS}/header.cpp)
  endforeach()
endif()

# ---- (b) exported symbols ----------------------------------------------------
add_test(NAME abi_symbols_declared
  COMMAND ${BITT_BASH} ${BITT_ABI_TESTS}/check_symbols.sh declared
    ${PROJECT_SOURCE_DIR}/abi/symbols.txt ${PROJECT_SOURCE_DIR}/abi/bitt.map
    ${PROJECT_SOURCE_DIR}/abi/include/bitt.h)
add_test(NAME abi_symbols
  COMMAND ${BITT_BASH} ${BITT_ABI_TESTS}/check_symbols.sh exports
    $<TARGET_FILE:bitt> ${PROJECT_SOURCE_DIR}/abi/symbols.txt ${PROJECT_VERSION_MAJOR}
    ${CMAKE_NM} ${CMAKE_READELF})

# ---- (c) install, then use it as a consumer would --------------------------
# A sanitizer build's libraries need the sanitizer runtime in the consumer.
set(_bitt_consumer_flags "")
if(BITT_SANITIZE)
  set(_bitt_consumer_flags "-fsanitize=address,undefined -fno-omit-frame-pointer")
endif()
add_test(NAME abi_install COMMAND ${BITT_BASH} ${BITT_ABI_TESTS}/install_test.sh)
# A default configure (the README's install line) needs neither cmocka nor
# the benchmarks' peers.
add_test(NAME abi_default_build
  COMMAND ${BITT_BASH} ${BITT_ABI_TESTS}/default_build_test.sh ${PROJECT_SOURCE_DIR}
    ${BITT_ABI_WORK}/default_build ${CMAKE_COMMAND})
set_tests_properties(abi_install PROPERTIES
  TIMEOUT 600
  ENVIRONMENT "BITT_BUILD_DIR=${PROJECT_BINARY_DIR};BITT_WORK_DIR=${BITT_ABI_WORK}/install;BITT_SOURCE_DIR=${BITT_ABI_TESTS};BITT_CMAKE=${CMAKE_COMMAND};BITT_GENERATOR=${CMAKE_GENERATOR};BITT_MAKE_PROGRAM=${CMAKE_MAKE_PROGRAM};BITT_CC=${CMAKE_C_COMPILER};BITT_CFLAGS=${_bitt_consumer_flags};BITT_PKG_CONFIG=${PKG_CONFIG_EXECUTABLE};BITT_LIBDIR=${CMAKE_INSTALL_LIBDIR};BITT_INCLUDEDIR=${CMAKE_INSTALL_INCLUDEDIR};BITT_BINDIR=${CMAKE_INSTALL_BINDIR};BITT_VERSION=${PROJECT_VERSION};BITT_MAJOR=${PROJECT_VERSION_MAJOR};BITT_READELF=${CMAKE_READELF};BITT_SQLITE_BUILTIN=$<BOOL:${BITT_SQLITE_AMALGAMATION}>")

# A built-in SQLite (core/sqlite/sqlite.cmake) is private: neither library
# defines a sqlite3_* symbol an application's own SQLite could clash with.
if(BITT_SQLITE_AMALGAMATION)
  add_test(NAME abi_sqlite_private
    COMMAND ${BITT_BASH} -c "! '${CMAKE_NM}' -g --defined-only \"$1\" \"$2\" | grep -E ' [A-Z] _?sqlite3'"
      _ $<TARGET_FILE:bitt> $<TARGET_FILE:bitt_static>)
endif()

# ---- (d) the command-line tool ---------------------------------------------
add_test(NAME cli
  COMMAND ${BITT_BASH} ${BITT_ABI_TESTS}/cli_test.sh $<TARGET_FILE:bitt_cli>
    ${BITT_ABI_WORK}/cli ${PROJECT_VERSION})
set_tests_properties(cli PROPERTIES TIMEOUT 300)
add_test(NAME cli_modules
  COMMAND ${BITT_BASH} ${BITT_ABI_TESTS}/cli_modules_test.sh $<TARGET_FILE:bitt_cli>
    ${BITT_ABI_WORK}/cli_modules)
set_tests_properties(cli_modules PROPERTIES TIMEOUT 300)

# ---- (e) the ABI against the committed baseline ------------------------------
# The baseline is regenerated on purpose only (scripts/abi-baseline). abidiff
# comes with Debian's abigail-tools (scripts/install-deps).
find_program(BITT_ABIDIFF abidiff)
set(BITT_ABI_BASELINE
  ${PROJECT_SOURCE_DIR}/abi/baseline/libbitt.so.${PROJECT_VERSION_MAJOR}.abi)
if(NOT BITT_ABIDIFF)
  message(WARNING "abidiff not found (Debian: abigail-tools): no ABI baseline check")
else()
  add_test(NAME abi_abidiff
    COMMAND ${BITT_BASH} ${BITT_ABI_TESTS}/abidiff_check.sh ${BITT_ABI_BASELINE}
      $<TARGET_FILE:bitt> ${PROJECT_SOURCE_DIR}/abi/include ${BITT_ABIDIFF} ${CMAKE_NM})
  include(${BITT_ABI_TESTS}/variants.cmake)
  add_test(NAME abi_abidiff_catches
    COMMAND ${BITT_BASH} ${BITT_ABI_TESTS}/abidiff_catches.sh
      ${BITT_ABI_TESTS}/abidiff_check.sh ${BITT_ABI_BASELINE} ${BITT_ABIDIFF} ${CMAKE_NM}
      removed $<TARGET_FILE:bitt_abi_removed> ${PROJECT_SOURCE_DIR}/abi/include
        "incompatible ABI change"
      layout $<TARGET_FILE:bitt_abi_layout> ${BITT_ABI_VARIANTS}/layout/include
        "an existing function or a type it reaches changed"
      added_old $<TARGET_FILE:bitt_abi_added_old> ${PROJECT_SOURCE_DIR}/abi/include
        "bitt_abi_variant_added was added to BITT_0.1"
      added_new $<TARGET_FILE:bitt_abi_added_new> ${PROJECT_SOURCE_DIR}/abi/include ok)
  set_tests_properties(abi_abidiff abi_abidiff_catches PROPERTIES LABELS abi TIMEOUT 300)
endif()

set_tests_properties(abi_symbols_declared abi_symbols abi_install cli cli_modules
  PROPERTIES LABELS abi)
if(TEST abi_header_c)
  set_tests_properties(abi_header_c abi_header_cxx11 abi_header_cxx17 PROPERTIES LABELS abi)
endif()

# Every C file follows the one committed .clang-format (Debian 12's
# clang-format 14, which scripts/install-deps installs).
find_program(BITT_CLANG_FORMAT clang-format)
if(BITT_CLANG_FORMAT)
  file(GLOB_RECURSE BITT_FORMATTED_SOURCES CONFIGURE_DEPENDS
    ${PROJECT_SOURCE_DIR}/abi/*.h ${PROJECT_SOURCE_DIR}/core/*.[ch]
    ${PROJECT_SOURCE_DIR}/tools/*.[ch] ${PROJECT_SOURCE_DIR}/tests/c/*.[ch]
    ${PROJECT_SOURCE_DIR}/tests/faults/*.[ch]
    ${PROJECT_SOURCE_DIR}/tests/inject/*.[ch]
    ${PROJECT_SOURCE_DIR}/bench/*.c ${PROJECT_SOURCE_DIR}/examples/*.[ch])
  # bench/node/node_modules (npm ci --prefix bench/node) holds other projects' C.
  list(FILTER BITT_FORMATTED_SOURCES EXCLUDE REGEX "/node_modules/")
  add_test(NAME format COMMAND ${BITT_CLANG_FORMAT} --dry-run --Werror ${BITT_FORMATTED_SOURCES})
  set_tests_properties(format PROPERTIES LABELS abi)
endif()
