# Layer libraries: one static library per folder of src/, each linking only the layers its code
# may include (docs/architecture.md "Layers"). A layer's headers are reachable only through a
# per-layer include root, build/layers/<name>/<name> -> src/<name>, which a target gets by
# linking that layer; `src/` itself is on no include path. An include that crosses a wall is
# therefore a build error ("runtime/model_runner.h: No such file") rather than a review comment.
#
#   seam_layer(NAME [PUBLIC layer|target ...] [PRIVATE layer|target ...] [SOURCES extra ...]
#              [EXCLUDE regex ...])
#
# PUBLIC: what NAME's headers include (consumers of NAME see it too); PRIVATE: what only NAME's
# own .cpp/.cu files include. Layer names are written bare (core, kv, ...); anything with a "::"
# or a seam_ prefix is passed to target_link_libraries as is. Every direct layer dependency is
# written to build/layer_deps.txt, which tests/layer_walls_test.cpp checks against the
# documented table, so a wall widened in CMake alone fails a test.
set(SEAM_LAYER_DEPS_FILE "${CMAKE_BINARY_DIR}/layer_deps.txt")
file(WRITE "${SEAM_LAYER_DEPS_FILE}" "")

function(_seam_layer_target out item)
  if(item MATCHES "::" OR item MATCHES "^seam_" OR item MATCHES "^-" OR item MATCHES "^/")
    set(${out} "${item}" PARENT_SCOPE)
  else()
    set(${out} "seam_${item}" PARENT_SCOPE)
  endif()
endfunction()

function(seam_layer name)
  cmake_parse_arguments(L "" "" "PUBLIC;PRIVATE;SOURCES;EXCLUDE" ${ARGN})
  set(dir "${CMAKE_SOURCE_DIR}/src/${name}")
  file(GLOB srcs CONFIGURE_DEPENDS "${dir}/*.cpp")
  foreach(pattern ${L_EXCLUDE})
    list(FILTER srcs EXCLUDE REGEX "${pattern}")
  endforeach()
  list(APPEND srcs ${L_SOURCES})
  set(root "${CMAKE_BINARY_DIR}/layers/${name}")
  file(MAKE_DIRECTORY "${root}")
  file(CREATE_LINK "${dir}" "${root}/${name}" SYMBOLIC)
  set(target "seam_${name}")
  if(srcs)
    add_library(${target} STATIC ${srcs})
    target_include_directories(${target} PUBLIC "${root}")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>)
    set(pub_kw PUBLIC)
    set(priv_kw PRIVATE)
  else()  # header-only layer
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE "${root}")
    set(pub_kw INTERFACE)
    set(priv_kw INTERFACE)
  endif()
  set(layer_deps "")
  foreach(item ${L_PUBLIC})
    _seam_layer_target(t ${item})
    target_link_libraries(${target} ${pub_kw} ${t})
    if(t STREQUAL "seam_${item}")
      list(APPEND layer_deps ${item})
    endif()
  endforeach()
  foreach(item ${L_PRIVATE})
    _seam_layer_target(t ${item})
    target_link_libraries(${target} ${priv_kw} ${t})
    if(t STREQUAL "seam_${item}")
      list(APPEND layer_deps ${item})
    endif()
  endforeach()
  list(JOIN layer_deps " " joined)
  file(APPEND "${SEAM_LAYER_DEPS_FILE}" "${name}: ${joined}\n")
endfunction()
