# bitt-pc.cmake: the install-time part of packaging/install.cmake. Writes
# bitt.pc for the prefix being installed to: CMAKE_INSTALL_PREFIX is here the
# one of `cmake --install --prefix DIR` (DESTDIR left out: where the files
# will be used from), which configure time cannot know.
#
# In: BITT_PC_TEMPLATE (bitt.pc.in, configured but for @BITT_PC_RPATH@),
#     BITT_PC_OUT, BITT_PC_INSTALL_LIBDIR (CMAKE_INSTALL_LIBDIR),
#     BITT_PC_SYSTEM_LIBDIRS (the toolchain's implicit link directories).
# Also runs alone: cmake -DCMAKE_INSTALL_PREFIX=/usr -DBITT_PC_...=... -P bitt-pc.cmake

# A directory as the loader sees it: normalized, symlinks resolved where it
# exists (/lib is /usr/lib on a merged-/usr system).
function(_bitt_pc_canonical out dir)
  get_filename_component(dir "${dir}" ABSOLUTE)
  if(EXISTS "${dir}")
    file(REAL_PATH "${dir}" dir)
  endif()
  set(${out} "${dir}" PARENT_SCOPE)
endfunction()

set(_libdir "${BITT_PC_INSTALL_LIBDIR}")
if(NOT IS_ABSOLUTE "${_libdir}")
  set(_libdir "${CMAKE_INSTALL_PREFIX}/${_libdir}")
endif()
_bitt_pc_canonical(_libdir "${_libdir}")
set(_system "")
foreach(_dir IN LISTS BITT_PC_SYSTEM_LIBDIRS)
  _bitt_pc_canonical(_dir "${_dir}")
  list(APPEND _system "${_dir}")
endforeach()

# The rpath names ${libdir}, which follows bitt.pc's own place (${pcfiledir}),
# so a moved prefix keeps working.
list(FIND _system "${_libdir}" _at) # (no IN_LIST: install scripts run with no policies set)
if(_at GREATER -1)
  set(BITT_PC_RPATH "")
else()
  set(BITT_PC_RPATH "-Wl,-rpath,\${libdir} ")
endif()
configure_file("${BITT_PC_TEMPLATE}" "${BITT_PC_OUT}" @ONLY)
