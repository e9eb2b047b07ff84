# Fails when PROGRAM loads (ldd) a library whose name matches the regular expression FORBIDDEN.
execute_process(COMMAND ldd ${PROGRAM} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ldd ${PROGRAM} failed (${rc}):\n${out}\n${err}")
endif()
if(out MATCHES "(${FORBIDDEN})[^ ]*")
  message(FATAL_ERROR "${PROGRAM} loads ${CMAKE_MATCH_0}:\n${out}")
endif()
message(STATUS "${PROGRAM} loads nothing matching ${FORBIDDEN}")
