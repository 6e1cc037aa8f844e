# exo_embed_files(OUT_VAR NAMESPACE FILES)
# Generates a .cpp defining `NAMESPACE::files()`: a sorted list of
# {file name, contents} pairs, regenerated whenever one of FILES changes.
function(exo_embed_files out_var namespace files)
  string(REPLACE "::" "_" stem "${namespace}")
  set(out "${CMAKE_BINARY_DIR}/generated/${stem}.cpp")
  add_custom_command(
    OUTPUT "${out}"
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DNAMESPACE=${namespace}
            "-DFILES=${files}" -P ${CMAKE_SOURCE_DIR}/cmake/EmbedFilesScript.cmake
    DEPENDS ${files} ${CMAKE_SOURCE_DIR}/cmake/EmbedFilesScript.cmake
    COMMENT "Embedding ${namespace}"
    VERBATIM)
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()
