# Warnings, -Werror and sanitizers for yolotrain's own targets (never for its dependencies).
function(yolotrain_target_options target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(YOLOTRAIN_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(YOLOTRAIN_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=${YOLOTRAIN_SANITIZE} -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=${YOLOTRAIN_SANITIZE})
  endif()
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
