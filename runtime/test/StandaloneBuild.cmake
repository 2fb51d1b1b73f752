# Configures and builds runtime/ on its own, as a user embedding it would:
#   cmake -DSOURCE_DIR=... -DBINARY_DIR=... [-DGENERATOR=Ninja] -P StandaloneBuild.cmake
# Fails if the runtime needs anything from the surrounding MLIR build.
if(NOT SOURCE_DIR OR NOT BINARY_DIR)
  message(FATAL_ERROR "StandaloneBuild.cmake: set SOURCE_DIR and BINARY_DIR")
endif()
if(NOT GENERATOR)
  set(GENERATOR "Unix Makefiles")
endif()
file(REMOVE_RECURSE "${BINARY_DIR}")
execute_process(
  COMMAND "${CMAKE_COMMAND}" -G "${GENERATOR}" -S "${SOURCE_DIR}"
          -B "${BINARY_DIR}" -DCMAKE_BUILD_TYPE=Release
          -DPIPEDREAM_RUNTIME_BUILD_TESTS=OFF
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "standalone configure of ${SOURCE_DIR} failed")
endif()
execute_process(
  COMMAND "${CMAKE_COMMAND}" --build "${BINARY_DIR}"
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "standalone build of ${SOURCE_DIR} failed")
endif()
