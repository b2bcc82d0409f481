# One interface target carries the project's warning flags and sanitizer options.
add_library(ridgeline_warnings INTERFACE)
target_compile_options(ridgeline_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
  -Wnon-virtual-dtor -Wold-style-cast -Wimplicit-fallthrough)
if(RIDGELINE_ENABLE_WERROR)
  target_compile_options(ridgeline_warnings INTERFACE -Werror)
endif()
if(RIDGELINE_ENABLE_SANITIZERS)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
# The libFuzzer targets (clang) steer by the coverage of the library they call, so all of it is
# built with the coverage hooks; outside a fuzz target the sanitizer runtime's defaults take them.
if(RIDGELINE_ENABLE_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
