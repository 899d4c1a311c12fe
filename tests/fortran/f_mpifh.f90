! f_mpifh.f90 - MPI-IO from Fortran through mpif.h (tests/fortran/run.sh).
! Each rank writes its block collectively and a second block with a
! non-blocking call, reads both back and checks them.  Under aggio the
! file handle must be aggio's (its Fortran handles start at 2**30).
program f_mpifh
  implicit none
  include 'mpif.h'
  integer, parameter :: n = 1024
  integer :: ierr, me, np, fh, req, i, bad
  integer :: st(MPI_STATUS_SIZE)
  integer :: buf(n), back(n)
  integer(kind=MPI_OFFSET_KIND) :: off
  character(len=512) :: path
  character(len=8) :: expect

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, me, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  call get_command_argument(1, path)
  call get_environment_variable('AGGIO_TEST_EXPECT_AGGIO', expect)
  do i = 1, n
    buf(i) = me * 100000 + i
  end do
  bad = 0
  call MPI_FILE_OPEN(MPI_COMM_WORLD, trim(path), MPI_MODE_CREATE + MPI_MODE_RDWR, &
                     MPI_INFO_NULL, fh, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  if ((trim(expect) == '1') .neqv. (fh >= 1073741824)) bad = bad + 1
  off = int(me, MPI_OFFSET_KIND) * n * 4
  call MPI_FILE_WRITE_AT_ALL(fh, off, buf, n, MPI_INTEGER, st, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  off = off + int(np, MPI_OFFSET_KIND) * n * 4
  call MPI_FILE_IWRITE_AT(fh, off, buf, n, MPI_INTEGER, req, ierr)
  call MPI_WAIT(req, st, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  call MPI_FILE_SYNC(fh, ierr)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call MPI_FILE_SYNC(fh, ierr)
  back = 0
  call MPI_FILE_READ_AT_ALL(fh, off, back, n, MPI_INTEGER, st, ierr)
  if (ierr /= MPI_SUCCESS .or. any(back /= buf)) bad = bad + 1
  call MPI_FILE_CLOSE(fh, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  if (bad /= 0) print '(a,i0,a,i0)', 'FAIL rank ', me, ': checks failed: ', bad
  if (bad == 0 .and. me == 0) print '(a)', 'ok'
  call MPI_FINALIZE(ierr)
  if (bad /= 0) stop 1
end program f_mpifh
