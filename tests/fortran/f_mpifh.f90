! f_mpifh.f90 - MPI-IO from Fortran through mpif.h (tests/fortran/run.sh);
! the body is f_body.inc.
program f_mpifh
  implicit none
  include 'mpif.h'
  include 'f_body.inc'
end program f_mpifh
