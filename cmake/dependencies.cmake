# Every dependency comes from a Debian package through find_package; nothing is downloaded.
find_package(fmt REQUIRED)
# fast_float (header-only, not needed by consumers of the installed library): doubles read with
# std::from_chars's rules in every build (core/number_chars.cpp).
find_package(FastFloat REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(ZLIB REQUIRED)
find_package(TBB REQUIRED)
find_package(simdjson REQUIRED)
# OpenBLAS (optional): `validate` times its GEMMs; without it they are skipped with a note.
find_package(PkgConfig)
if(PkgConfig_FOUND)
  pkg_check_modules(OPENBLAS IMPORTED_TARGET openblas)
  # hwloc (optional): `measure` reads the cache topology from it (else from sysfs).
  pkg_check_modules(HWLOC IMPORTED_TARGET hwloc)
endif()
if(RIDGELINE_ENABLE_TESTS)
  find_package(GTest REQUIRED)
  find_package(rapidcheck REQUIRED)
endif()
if(RIDGELINE_ENABLE_BENCH)
  find_package(benchmark REQUIRED)
endif()
