# Warnings, -Werror, sanitizers and unity batches for yolotrain's own targets (never for its
# dependencies).
function(yolotrain_target_options target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(YOLOTRAIN_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(YOLOTRAIN_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=${YOLOTRAIN_SANITIZE} -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=${YOLOTRAIN_SANITIZE})
  endif()
  # Unity build: most translation units include libtorch's headers, ~12 s of parsing each and as
  # much again compiling the same inline functions; a batch pays that once (docs/build.md).
  set_target_properties(${target} PROPERTIES
    UNITY_BUILD ${YOLOTRAIN_UNITY_BUILD} UNITY_BUILD_BATCH_SIZE ${YOLOTRAIN_UNITY_BATCH_SIZE})
endfunction()

# Installs a library target into the export set yolotrainTargets.
function(yolotrain_install_library target)
  if(YOLOTRAIN_INSTALL)
    install(TARGETS ${target} EXPORT yolotrainTargets
      ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
      LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
      RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endfunction()
