# variants.cmake: copies of libbitt.so with a deliberate ABI change each, so
# that abi_abidiff_catches can prove the ABI check fails when it must (and
# passes an allowed addition). Included from tests/abi.cmake when abidiff is
# found. Each variant is built from the library's own sources and linked like
# it (same SONAME, same version script but for the change), into its own
# directory as libbitt.so.
#
#   removed     bitt_kv_delete is no longer exported          -> must fail
#   layout      bitt_list_options: limit and reverse swapped   -> must fail
#   added_new   bitt_abi_variant_added in a new node BITT_0.99 -> must pass
#   added_old   the same function added to the released BITT_0.1 -> must fail

set(BITT_ABI_VARIANTS ${CMAKE_CURRENT_BINARY_DIR}/abi_variants)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/abi/bitt.map ${PROJECT_SOURCE_DIR}/abi/include/bitt.h)
file(READ ${PROJECT_SOURCE_DIR}/abi/bitt.map _bitt_map)
file(READ ${PROJECT_SOURCE_DIR}/abi/include/bitt.h _bitt_header)

# bitt_abi_patch(OUT TEXT FROM TO): TEXT with FROM replaced by TO; a FROM
# that is not there stops the configure, so a variant can never quietly
# become the unchanged library.
function(bitt_abi_patch out text from to)
  string(FIND "${text}" "${from}" _at)
  if(_at EQUAL -1)
    message(FATAL_ERROR "tests/abi/variants.cmake: '${from}' not found; update the variant")
  endif()
  string(REPLACE "${from}" "${to}" _patched "${text}")
  set(${out} "${_patched}" PARENT_SCOPE)
endfunction()

# bitt_abi_write(PATH TEXT): writes TEXT unless PATH already holds it (so a
# re-configure does not relink the variants).
function(bitt_abi_write path text)
  if(EXISTS ${path})
    file(READ ${path} _old)
    if(_old STREQUAL text)
      return()
    endif()
  endif()
  file(WRITE ${path} "${text}")
endfunction()

# bitt_abi_variant(NAME MAP_TEXT SOURCES...): libbitt.so from SOURCES (object
# files or sources) with MAP_TEXT as its version script.
function(bitt_abi_variant name map_text)
  set(_dir ${BITT_ABI_VARIANTS}/${name})
  bitt_abi_write(${_dir}/bitt.map "${map_text}")
  add_library(bitt_abi_${name} SHARED ${ARGN} ${BITT_SQLITE_OBJECTS})
  set_target_properties(bitt_abi_${name} PROPERTIES
    OUTPUT_NAME bitt
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}
    LIBRARY_OUTPUT_DIRECTORY ${_dir}
    POSITION_INDEPENDENT_CODE ON
    C_VISIBILITY_PRESET hidden
    LINK_DEPENDS ${_dir}/bitt.map)
  target_compile_options(bitt_abi_${name} PRIVATE -g)
  target_include_directories(bitt_abi_${name} PRIVATE ${PROJECT_SOURCE_DIR}/abi/include)
  target_link_options(bitt_abi_${name} PRIVATE
    "LINKER:--version-script=${_dir}/bitt.map" "LINKER:--no-undefined")
  target_link_libraries(bitt_abi_${name} PRIVATE
    ${BITT_SQLITE_LINK} Threads::Threads ${BITT_BACKEND_LIBS})
endfunction()

# removed: the same objects, one name less in the map.
bitt_abi_patch(_map "${_bitt_map}" "    bitt_kv_delete;\n" "")
bitt_abi_variant(removed "${_map}" $<TARGET_OBJECTS:bitt_objects>)

# layout: every source compiled against a bitt.h whose list options have two
# members swapped (same size, other offsets: the change that compiles and
# silently breaks every caller).
bitt_abi_patch(_header "${_bitt_header}"
  "    uint32_t limit;\n    int reverse;\n" "    int reverse;\n    uint32_t limit;\n")
bitt_abi_write(${BITT_ABI_VARIANTS}/layout/include/bitt.h "${_header}")
add_library(bitt_abi_layout_objects OBJECT ${BITT_CORE_SOURCES})
target_compile_definitions(bitt_abi_layout_objects PRIVATE
  ${BITT_BACKEND_DEFINES} _POSIX_C_SOURCE=200809L)
set_target_properties(bitt_abi_layout_objects PROPERTIES
  POSITION_INDEPENDENT_CODE ON C_VISIBILITY_PRESET hidden)
target_compile_options(bitt_abi_layout_objects PRIVATE -g)
target_include_directories(bitt_abi_layout_objects BEFORE PRIVATE
  ${BITT_ABI_VARIANTS}/layout/include ${PROJECT_SOURCE_DIR}/core)
target_link_libraries(bitt_abi_layout_objects PRIVATE
  ${BITT_SQLITE_LINK} Threads::Threads ${BITT_BACKEND_LIBS})
bitt_abi_variant(layout "${_bitt_map}" $<TARGET_OBJECTS:bitt_abi_layout_objects>)

# added_new / added_old: one more exported function, in a new node or in a
# released one.
bitt_abi_patch(_map "${_bitt_map}" "BITT_0.1 {\n  global:\n"
  "BITT_0.1 {\n  global:\n    bitt_abi_variant_added;\n")
bitt_abi_variant(added_old "${_map}"
  $<TARGET_OBJECTS:bitt_objects> ${BITT_ABI_TESTS}/variant_added.c)
bitt_abi_variant(added_new "${_bitt_map}\nBITT_0.99 {\n  global:\n    bitt_abi_variant_added;\n};\n"
  $<TARGET_OBJECTS:bitt_objects> ${BITT_ABI_TESTS}/variant_added.c)
