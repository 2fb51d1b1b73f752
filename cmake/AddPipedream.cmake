# add_pipedream_library(name source...
#   HEADER_DIR dir               include/pipedream/<dir>, for IDEs
#   [DIALECT]                    add_mlir_dialect_library (an IR library)
#   [DEPENDS target...]          generated headers the sources include
#   [LINK_COMPONENTS llvm...]    LLVM components
#   [MLIR_LIBS lib...]           MLIR libraries (through libMLIR.so)
#   [LINK_LIBS lib...])          other pipedream libraries, linked PUBLIC
#
# A compiler library as every one under lib/ is declared: an MLIR library
# left out of libMLIR.so, linked PUBLIC against the MLIR libraries it names
# (mlir_target_link_libraries, so the one shared libMLIR.so is used) and the
# pipedream libraries it builds on.
function(add_pipedream_library name)
  cmake_parse_arguments(ARG "DIALECT" "HEADER_DIR"
    "DEPENDS;LINK_COMPONENTS;MLIR_LIBS;LINK_LIBS" ${ARGN})
  set(add_library add_mlir_library)
  if(ARG_DIALECT)
    set(add_library add_mlir_dialect_library)
  endif()
  set(extra "")
  if(ARG_DEPENDS)
    list(APPEND extra DEPENDS ${ARG_DEPENDS})
  endif()
  if(ARG_LINK_COMPONENTS)
    list(APPEND extra LINK_COMPONENTS ${ARG_LINK_COMPONENTS})
  endif()
  cmake_language(CALL ${add_library} ${name} ${ARG_UNPARSED_ARGUMENTS}
    ADDITIONAL_HEADER_DIRS
    ${PROJECT_SOURCE_DIR}/include/pipedream/${ARG_HEADER_DIR}
    ${extra}
    EXCLUDE_FROM_LIBMLIR)
  mlir_target_link_libraries(${name} PUBLIC ${ARG_MLIR_LIBS})
  if(ARG_LINK_LIBS)
    target_link_libraries(${name} PUBLIC ${ARG_LINK_LIBS})
  endif()
endfunction()
