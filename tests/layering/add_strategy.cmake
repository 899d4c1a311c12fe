# The walk-throughs of docs/architecture.md, "Adding a strategy" and
# "Adding a storage back end", done on a copy of the sources: the folder
# src/strategies/example/ and one line in src/plan/strategies.def; the
# file src/storage/storage_example.c and one line in storage_registry.c;
# nothing else.  Then libaggio is built and a program runs the new
# strategy and the new back end through the public API.
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
# The same for a storage back end ("Adding a storage back end"): the file
# in src/storage/ and its line in the registry's list.
file(COPY ${SRC}/tests/layering/example_storage/storage_example.c
     DESTINATION ${WORK}/tree/src/storage)
file(READ ${WORK}/tree/src/storage/storage_registry.c registry)
string(REPLACE "  X(null)" "  X(null)                    \\\n  X(example)" registry "${registry}")
file(WRITE ${WORK}/tree/src/storage/storage_registry.c "${registry}")

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
