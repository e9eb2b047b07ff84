# Installs yolotrain from BUILD_DIR into a fresh prefix, then builds and runs examples/consumer
# against that prefix with find_package(yolotrain). Then builds its lifecycle-only program again
# as a machine without libcurl's and pugixml's development files would: find_package of either
# disabled, and their headers replaced by ones that stop the compiler; the program must build,
# run, and neither it nor a yolotrain library it loads may link either (tests/links_test.cmake).
# Fails on any step. The consumers compile through the build's own launcher (ccache when present):
# a hit is the same compiler's output for the same preprocessed input, so a suite run after
# another compiles nothing twice.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
string(REPLACE "|" ";" PREFIX_PATH "${PREFIX_PATH}")

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${what}: ok")
  set(out "${out}" PARENT_SCOPE)
endfunction()

run_step("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
run_step("configure consumer" ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE} -B ${WORK_DIR}/build
  -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} "-DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_COMPILER_LAUNCHER}"
  -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix};${PREFIX_PATH}")
run_step("build consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run_step("run consumer" ${WORK_DIR}/build/consumer ${WORK_DIR}/run)
if(NOT out MATCHES "share/yolotrain/models/yolov8.yaml")
  message(FATAL_ERROR "the consumer did not find yolov8n.yaml in the installed tree:\n${out}")
endif()

# yolotrain::lifecycle alone, with libcurl and pugixml out of reach.
set(poison ${WORK_DIR}/no-curl-include)
file(WRITE ${poison}/curl/curl.h "#error \"yolotrain::lifecycle must not need libcurl's headers\"\n")
file(WRITE ${poison}/pugixml.hpp "#error \"yolotrain::lifecycle must not need pugixml's headers\"\n")
run_step("configure lifecycle-only consumer" ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE} -B ${WORK_DIR}/build-lifecycle
  -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} "-DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_COMPILER_LAUNCHER}"
  -DCMAKE_BUILD_TYPE=Release -DCONSUMER_LIFECYCLE_ONLY=ON
  -DCMAKE_DISABLE_FIND_PACKAGE_CURL=ON -DCMAKE_DISABLE_FIND_PACKAGE_pugixml=ON "-DCMAKE_CXX_FLAGS=-isystem ${poison}"
  "-DCMAKE_PREFIX_PATH=${prefix};${PREFIX_PATH}")
run_step("build lifecycle-only consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/build-lifecycle)
run_step("run lifecycle-only consumer" ${WORK_DIR}/build-lifecycle/lifecycle_consumer ${WORK_DIR}/run-lifecycle)
run_step("links of lifecycle-only consumer" ${CMAKE_COMMAND} -DPROGRAM=${WORK_DIR}/build-lifecycle/lifecycle_consumer
  "-DFORBIDDEN=libcurl|libpugixml|libyolotrain_remote" -P ${CMAKE_CURRENT_LIST_DIR}/links_test.cmake)
