# SPDX-License-Identifier: MIT
# lithe_clang_objects(OUT DIR CLANG OBJCOPY LABEL FLAGS...): every source of
# src/ compiled by CLANG with FLAGS into DIR/obj; OUT is set to the object
# list.  override.c's object keeps only the lithe_ symbols global (objcopy),
# so a program linked with the objects keeps the system malloc and calls
# lithe through its prefixed API: what the fuzz harness and the sanitized
# tests need, since the sanitizers' runtimes own malloc themselves.
function(lithe_clang_objects out dir clang objcopy label)
  set(flags ${ARGN})
  file(GLOB srcs ${PROJECT_SOURCE_DIR}/src/*.c)
  file(GLOB hdrs ${PROJECT_SOURCE_DIR}/src/*.h)
  list(APPEND hdrs ${PROJECT_SOURCE_DIR}/include/lithe.h)
  set(objs)
  foreach(src ${srcs})
    get_filename_component(name ${src} NAME_WE)
    set(obj ${dir}/obj/${name}.o)
    if(name STREQUAL "override")
      add_custom_command(OUTPUT ${obj}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}/obj
        COMMAND ${clang} ${flags} -c ${src} -o ${dir}/obj/override-full.o
        COMMAND ${objcopy} --wildcard --keep-global-symbol=lithe_*
                ${dir}/obj/override-full.o ${obj}
        DEPENDS ${src} ${hdrs} COMMENT "${label}: override.c, lithe_ symbols only" VERBATIM)
    else()
      add_custom_command(OUTPUT ${obj}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}/obj
        COMMAND ${clang} ${flags} -c ${src} -o ${obj}
        DEPENDS ${src} ${hdrs} COMMENT "${label}: ${name}.c" VERBATIM)
    endif()
    list(APPEND objs ${obj})
  endforeach()
  set(${out} ${objs} PARENT_SCOPE)
endfunction()
