# The walk-through of docs/architecture.md, "Adding a strategy", done on a
# copy of the sources: the folder src/strategies/example/ and one line in
# src/plan/strategies.def, nothing else; then libaggio is built and a
# program runs the new strategy through the public API.
#   cmake -DSRC=... -DWORK=... -DMPICC=... -DMPIEXEC=... -DMPIEXEC_FLAGS=...
#         -P add_strategy.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/tree)
foreach(part CMakeLists.txt cmake include src)
  file(COPY ${SRC}/${part} DESTINATION ${WORK}/tree)
endforeach()
# 1. the folder
file(COPY ${SRC}/tests/layering/example_strategy/strategy_example.c
     DESTINATION ${WORK}/tree/src/strategies/example)
# 2. the line
file(APPEND ${WORK}/tree/src/plan/strategies.def
     "AGGIO_STRATEGY(EXAMPLE, example, NULL, NULL, 0)\n")

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
run(${CMAKE_COMMAND} -S ${WORK}/tree -B ${WORK}/build -DCMAKE_BUILD_TYPE=RelWithDebInfo
    -DAGGIO_WERROR=ON -DAGGIO_BUILD_TESTS=OFF -DAGGIO_BUILD_BENCH=OFF
    -DMPI_C_COMPILER=${MPICC} -DMPIEXEC_EXECUTABLE=${MPIEXEC})
run(${CMAKE_COMMAND} --build ${WORK}/build --target aggio -j 2)
run(${MPICC} -o ${WORK}/use_example ${SRC}/tests/layering/example_strategy/use_example.c
    -I${WORK}/tree/include -I${WORK}/build/include -L${WORK}/build/src -laggio
    -Wl,-rpath,${WORK}/build/src)
separate_arguments(flags UNIX_COMMAND "${MPIEXEC_FLAGS}")
run(${MPIEXEC} -n 2 ${flags} ${WORK}/use_example ${WORK}/example.dat)
file(REMOVE_RECURSE ${WORK})
