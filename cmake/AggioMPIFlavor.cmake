# Sets AGGIO_MPI_FLAVOR to "openmpi", "mpich" or "other", and
# AGGIO_MPIEXEC_FLAGS / AGGIO_MPI_TEST_ENV / AGGIO_MPI_MAX_RANKS for tests.
set(_probe "${MPI_C_COMPILER} ${MPIEXEC_EXECUTABLE} ${MPI_C_LIBRARIES}")
if(_probe MATCHES "mpich")
  set(AGGIO_MPI_FLAVOR "mpich")
elseif(_probe MATCHES "openmpi|ompi")
  set(AGGIO_MPI_FLAVOR "openmpi")
else()
  set(AGGIO_MPI_FLAVOR "other")
endif()
set(AGGIO_MPIEXEC_FLAGS "")
set(AGGIO_MPI_TEST_ENV "")
set(AGGIO_MPI_MAX_RANKS 8)
set(AGGIO_MPI_MAX_RANKS_WHY "the most ranks the tests run at")
if(AGGIO_MPI_FLAVOR STREQUAL "openmpi")
  set(AGGIO_MPIEXEC_FLAGS --oversubscribe)
  set(AGGIO_MPI_TEST_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
      OMPI_MCA_rmaps_base_oversubscribe=1)
elseif(AGGIO_MPI_FLAVOR STREQUAL "mpich")
  # Debian's MPICH (ch4:ucx) busy-polls: more ranks than cores crawl.
  set(AGGIO_MPI_MAX_RANKS 2)
  set(AGGIO_MPI_MAX_RANKS_WHY "Debian's MPICH busy-polls: more ranks than cores crawl")
endif()
message(STATUS "aggio: MPI flavor ${AGGIO_MPI_FLAVOR} (${MPIEXEC_EXECUTABLE}), tests up to ${AGGIO_MPI_MAX_RANKS} ranks")
