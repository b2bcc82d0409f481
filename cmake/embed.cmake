# ridgeline_embed_files(OUT var FILES...) writes a C++ source that holds each file's text,
# so the binary carries its catalog and works from any directory.
function(ridgeline_embed_files out_cpp base_dir)
  set(files ${ARGN})
  add_custom_command(
    OUTPUT ${out_cpp}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out_cpp} -DBASE=${base_dir} "-DFILES=${files}"
            -P ${PROJECT_SOURCE_DIR}/cmake/embed_script.cmake
    DEPENDS ${files} ${PROJECT_SOURCE_DIR}/cmake/embed_script.cmake
    COMMENT "Embedding ${base_dir}"
    VERBATIM)
endfunction()
