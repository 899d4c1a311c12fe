! f_usempi.f90 - MPI-IO from Fortran through "use mpi" (tests/fortran/run.sh);
! the body is f_body.inc.
program f_usempi
  use mpi
  implicit none
  include 'f_body.inc'
end program f_usempi
