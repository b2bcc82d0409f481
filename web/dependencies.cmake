# The WebAssembly build's stand-ins for cmake/dependencies.cmake (docs/web.md): the same
# target names, so src/ and apps/ link as they do natively. Header-only libraries come from
# their Debian packages through a directory of links to just them (/usr/include as a whole
# would put the host's C library before Emscripten's); the others have no WebAssembly build
# in Debian and are replaced as follows.
set(RIDGELINE_WEB_INCLUDE ${CMAKE_BINARY_DIR}/debian-include)
file(MAKE_DIRECTORY ${RIDGELINE_WEB_INCLUDE})
foreach(dir fmt nlohmann CLI fast_float)
  if(NOT EXISTS /usr/include/${dir})
    message(FATAL_ERROR "web: /usr/include/${dir} is missing: run scripts/install-deps.sh")
  endif()
  file(CREATE_LINK /usr/include/${dir} ${RIDGELINE_WEB_INCLUDE}/${dir} SYMBOLIC)
endforeach()

# fmt (libfmt-dev) compiled from its headers.
add_library(fmt::fmt INTERFACE IMPORTED)
set_target_properties(fmt::fmt PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${RIDGELINE_WEB_INCLUDE}
                                          INTERFACE_COMPILE_DEFINITIONS FMT_HEADER_ONLY=1)
foreach(t nlohmann_json::nlohmann_json CLI11::CLI11 FastFloat::fast_float)
  add_library(${t} INTERFACE IMPORTED)
  set_target_properties(${t} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${RIDGELINE_WEB_INCLUDE})
endforeach()
# yaml-cpp: a JSON-backed stand-in for the part of its API io/hardware_file.cpp uses; the
# catalog is converted to JSON with the real yaml-cpp natively (web/tools/yaml_json.cpp).
add_library(yaml-cpp INTERFACE IMPORTED)
set_target_properties(yaml-cpp PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${PROJECT_SOURCE_DIR}/web/compat;${RIDGELINE_WEB_INCLUDE}")
# oneTBB: the searches run their items in order on one thread (analysis/search_pool.hpp).
add_library(TBB::tbb INTERFACE IMPORTED)
set_target_properties(TBB::tbb PROPERTIES INTERFACE_COMPILE_DEFINITIONS RIDGELINE_ONE_THREAD=1)
# zlib and simdjson read PyTorch traces only (io/trace_file.cpp, left out with the other
# host-only sources in web/CMakeLists.txt).
add_library(ZLIB::ZLIB INTERFACE IMPORTED)
add_library(simdjson::simdjson INTERFACE IMPORTED)
# C++ exceptions as WebAssembly exceptions (the engine reports bad input by throwing):
# smaller and faster than Emscripten's JavaScript-based ones; Chromium 95+, Firefox 100+,
# Safari 15.2+ and node 17+ run them.
add_compile_options(-fwasm-exceptions)
add_link_options(-fwasm-exceptions)
