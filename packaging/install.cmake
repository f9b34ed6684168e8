# install.cmake: what `cmake --install` puts where. Included at the end of
# the top-level CMakeLists.txt.
#
#   include/bitt.h
#   lib/libbitt.so.X.Y.Z, libbitt.so.X, libbitt.so, lib/libbitt.a
#   lib/pkgconfig/bitt.pc                        (pkg-config bitt)
#   lib/cmake/bitt/bitt{Config,ConfigVersion,Targets*}.cmake
#                                                (find_package(bitt): bitt::bitt,
#                                                 bitt::bitt_static)
# The CLI installs itself from tools/CMakeLists.txt.
#
# Components: "runtime" (the shared library) and "dev" (everything else),
# for packagers; a plain `cmake --install` installs both.

include(CMakePackageConfigHelpers)

set(BITT_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/bitt"
  CACHE STRING "Where bittConfig.cmake is installed, relative to the prefix")
set(BITT_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
  CACHE STRING "Where bitt.pc is installed, relative to the prefix")

install(FILES ${PROJECT_SOURCE_DIR}/abi/include/bitt.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT dev)

install(TARGETS bitt bitt_static
  EXPORT bittTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    COMPONENT runtime
    NAMELINK_COMPONENT dev
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    COMPONENT dev
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
    COMPONENT runtime)

install(EXPORT bittTargets
  NAMESPACE bitt::
  FILE bittTargets.cmake
  DESTINATION ${BITT_INSTALL_CMAKEDIR}
  COMPONENT dev)

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/packaging/bittConfig.cmake.in
  ${PROJECT_BINARY_DIR}/packaging/bittConfig.cmake
  INSTALL_DESTINATION ${BITT_INSTALL_CMAKEDIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/packaging/bittConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES
    ${PROJECT_BINARY_DIR}/packaging/bittConfig.cmake
    ${PROJECT_BINARY_DIR}/packaging/bittConfigVersion.cmake
  DESTINATION ${BITT_INSTALL_CMAKEDIR}
  COMPONENT dev)

# bitt.pc finds the prefix from its own place (${pcfiledir}), so that the
# tree stays usable when installed with `cmake --install --prefix DIR` or
# moved; absolute directories stay absolute.
function(_bitt_pc_dir out dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "\${prefix}/${dir}" PARENT_SCOPE)
  endif()
endfunction()
if(IS_ABSOLUTE "${BITT_INSTALL_PKGCONFIGDIR}")
  set(BITT_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  # One ".." per directory of the pkgconfig dir: lib/pkgconfig -> ../..
  file(RELATIVE_PATH _bitt_pc_up "/bitt-prefix/${BITT_INSTALL_PKGCONFIGDIR}" "/bitt-prefix")
  string(REGEX REPLACE "/+$" "" _bitt_pc_up "${_bitt_pc_up}")
  set(BITT_PC_PREFIX "\${pcfiledir}/${_bitt_pc_up}")
endif()
_bitt_pc_dir(BITT_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
_bitt_pc_dir(BITT_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
# Libs also gives an rpath to libdir (-Wl,-rpath,${libdir}), unless libdir is
# a directory the toolchain links from by itself (/usr/lib, /lib/<multiarch>,
# ...), where the loader looks anyway and distributions forbid rpaths: a
# program linked with `pkg-config --libs bitt` against any other prefix
# (/usr/local, $HOME/.local, /opt/bitt) then starts without LD_LIBRARY_PATH.
# Go programs need it most: cgo reads `pkg-config --libs` and nothing else.
# Which prefix it is is known only when installing (`cmake --install --prefix
# DIR`), so packaging/bitt-pc.cmake writes bitt.pc then, from this template.
set(BITT_PC_RPATH "@BITT_PC_RPATH@") # kept for the install-time pass
configure_file(${PROJECT_SOURCE_DIR}/packaging/bitt.pc.in
  ${PROJECT_BINARY_DIR}/packaging/bitt.pc.in @ONLY)
set(_bitt_system_libdirs ${CMAKE_PLATFORM_IMPLICIT_LINK_DIRECTORIES} ${CMAKE_C_IMPLICIT_LINK_DIRECTORIES})
install(CODE "set(BITT_PC_TEMPLATE [[${PROJECT_BINARY_DIR}/packaging/bitt.pc.in]])
set(BITT_PC_OUT [[${PROJECT_BINARY_DIR}/packaging/bitt.pc]])
set(BITT_PC_INSTALL_LIBDIR [[${CMAKE_INSTALL_LIBDIR}]])
set(BITT_PC_SYSTEM_LIBDIRS [[${_bitt_system_libdirs}]])
include([[${PROJECT_SOURCE_DIR}/packaging/bitt-pc.cmake]])"
  COMPONENT dev)
install(FILES ${PROJECT_BINARY_DIR}/packaging/bitt.pc
  DESTINATION ${BITT_INSTALL_PKGCONFIGDIR}
  COMPONENT dev)
