! f_f08.f90 - MPI-IO from Fortran through "use mpi_f08" (tests/fortran/run.sh).
! Each rank writes its block collectively and a second block with a
! non-blocking call, reads both back and checks them.  Under aggio the
! file handle must be aggio's (its Fortran handles start at 2**30).
program f_f08
  use mpi_f08
  implicit none
  integer, parameter :: n = 1024
  integer :: ierr, me, np, i, bad
  type(MPI_File) :: fh
  type(MPI_Request) :: req
  type(MPI_Status) :: st
  integer :: buf(n), back(n)
  integer(kind=MPI_OFFSET_KIND) :: off
  character(len=512) :: path
  character(len=8) :: expect

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  call get_command_argument(1, path)
  call get_environment_variable('AGGIO_TEST_EXPECT_AGGIO', expect)
  do i = 1, n
    buf(i) = me * 100000 + i
  end do
  bad = 0
  call MPI_File_open(MPI_COMM_WORLD, trim(path), MPI_MODE_CREATE + MPI_MODE_RDWR, &
                     MPI_INFO_NULL, fh, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  if ((trim(expect) == '1') .neqv. (fh%MPI_VAL >= 1073741824)) bad = bad + 1
  off = int(me, MPI_OFFSET_KIND) * n * 4
  call MPI_File_write_at_all(fh, off, buf, n, MPI_INTEGER, st, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  off = off + int(np, MPI_OFFSET_KIND) * n * 4
  call MPI_File_iwrite_at(fh, off, buf, n, MPI_INTEGER, req, ierr)
  call MPI_Wait(req, st, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  call MPI_File_sync(fh, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_File_sync(fh, ierr)
  back = 0
  call MPI_File_read_at_all(fh, off, back, n, MPI_INTEGER, st, ierr)
  if (ierr /= MPI_SUCCESS .or. any(back /= buf)) bad = bad + 1
  call MPI_File_close(fh, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  if (bad /= 0) print '(a,i0,a,i0)', 'FAIL rank ', me, ': checks failed: ', bad
  if (bad == 0 .and. me == 0) print '(a)', 'ok'
  call MPI_Finalize(ierr)
  if (bad /= 0) stop 1
end program f_f08
