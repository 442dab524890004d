# SPDX-License-Identifier: MIT
# Runs at install time (install(CODE) in packaging/CMakeLists.txt), when the
# final prefix is known: CMAKE_INSTALL_PREFIX is then the --prefix given to
# cmake --install, and file(INSTALL) adds $DESTDIR and records the file in
# install_manifest.txt.  Writes lithe.pc (dev), the launcher bin/lithe
# (runtime) or bin/lithe-bench (bench).
function(lithe_abs out rel)
  if(IS_ABSOLUTE "${rel}")
    set(${out} "${rel}" PARENT_SCOPE)
  else()
    set(${out} "${CMAKE_INSTALL_PREFIX}/${rel}" PARENT_SCOPE)
  endif()
endfunction()
set(LITHE_PREFIX "${CMAKE_INSTALL_PREFIX}")
lithe_abs(LITHE_FULL_LIBDIR "${LITHE_LIBDIR}")
lithe_abs(LITHE_FULL_BINDIR "${LITHE_BINDIR}")
# one scratch folder per (DESTDIR, prefix): installs may run side by side
string(MD5 _key "$ENV{DESTDIR}|${CMAKE_INSTALL_PREFIX}")
set(_gen "${LITHE_GEN}/${_key}")

if(LITHE_COMPONENT STREQUAL "dev")
  lithe_abs(LITHE_FULL_INCLUDEDIR "${LITHE_INCLUDEDIR}")
  configure_file("${LITHE_SRC}/lithe.pc.in" "${_gen}/lithe.pc" @ONLY)
  file(INSTALL DESTINATION "${LITHE_FULL_LIBDIR}/pkgconfig" TYPE FILE FILES "${_gen}/lithe.pc")
elseif(LITHE_COMPONENT STREQUAL "runtime")
  set(LITHE_LIBRARY "${LITHE_FULL_LIBDIR}/liblithe.so.${LITHE_SOVERSION}")
  lithe_abs(LITHE_FULL_PKGLIBDIR "${LITHE_PKGLIBDIR}")
  configure_file("${LITHE_SRC}/lithe.sh.in" "${_gen}/lithe" @ONLY)
  file(INSTALL DESTINATION "${LITHE_FULL_BINDIR}" TYPE PROGRAM FILES "${_gen}/lithe")
elseif(LITHE_COMPONENT STREQUAL "bench")
  lithe_abs(LITHE_FULL_BENCHDIR "${LITHE_BENCHDIR}")
  lithe_abs(LITHE_FULL_DATADIR "${LITHE_DATADIR}")
  set(LITHE_LIBRARY "${LITHE_FULL_LIBDIR}/liblithe.so.${LITHE_SOVERSION}")
  configure_file("${LITHE_SRC}/lithe-bench.sh.in" "${_gen}/lithe-bench" @ONLY)
  file(INSTALL DESTINATION "${LITHE_FULL_BINDIR}" TYPE PROGRAM FILES "${_gen}/lithe-bench")
endif()
