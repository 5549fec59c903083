! Fortran (use mpi_f08) calls of collectives under libmpixhier_pmpi: MPICH's
! Fortran bindings call the C MPI_ symbols, which the library defines.
! Checks values derived from ranks; run_pmpi_tests.sh checks with
! MPIX_HIER_PMPI_STATS=1 that the library took the calls.
! Calls: allreduce 2 (one with MPI_IN_PLACE), iallreduce 1, bcast 1,
! allgatherv 1, alltoall 1, reduce 1 (with MPI_IN_PLACE at the root).
program pmpi_fortran08
  use mpi_f08
  implicit none
  integer :: ierr, rank, nprocs, i, j, nfail, total
  type(MPI_Request) :: req
  integer :: a(5), b(5), c(5), bc(4), tt(64), tr(64), red(3)
  integer :: counts(64), displs(64), gv(64 * 65)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  nfail = 0

  do i = 1, 5
    a(i) = rank * 10 + i
  end do
  call MPI_Allreduce(a, b, 5, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, 5
    if (b(i) /= 10 * nprocs * (nprocs - 1) / 2 + nprocs * i) nfail = nfail + 1
  end do

  ! MPI_IN_PLACE: an address in MPICH's Fortran layer, turned into C's
  c = a
  call MPI_Allreduce(MPI_IN_PLACE, c, 5, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (any(c /= b)) nfail = nfail + 1

  c = 0
  call MPI_Iallreduce(a, c, 5, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, req, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  do i = 1, 5
    if (c(i) /= (nprocs - 1) * 10 + i) nfail = nfail + 1
  end do

  bc = -1
  if (rank == 0) bc = (/ 4, 3, 2, 1 /)
  call MPI_Bcast(bc, 4, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (any(bc /= (/ 4, 3, 2, 1 /))) nfail = nfail + 1

  ! allgatherv: rank j sends j+1 values j*100+i at displacement j*(nprocs+1)
  do j = 0, nprocs - 1
    counts(j + 1) = j + 1
    displs(j + 1) = j * (nprocs + 1)
  end do
  gv = -1
  do i = 1, rank + 1
    tt(i) = rank * 100 + i
  end do
  call MPI_Allgatherv(tt, rank + 1, MPI_INTEGER, gv, counts, displs, MPI_INTEGER, &
                      MPI_COMM_WORLD, ierr)
  do j = 0, nprocs - 1
    do i = 1, nprocs + 1
      if (i <= j + 1) then
        if (gv(displs(j + 1) + i) /= j * 100 + i) nfail = nfail + 1
      else
        if (gv(displs(j + 1) + i) /= -1) nfail = nfail + 1
      end if
    end do
  end do

  do j = 1, nprocs
    tt(j) = rank * 1000 + j - 1
  end do
  call MPI_Alltoall(tt, 1, MPI_INTEGER, tr, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  do j = 1, nprocs
    if (tr(j) /= (j - 1) * 1000 + rank) nfail = nfail + 1
  end do

  red = rank + 1
  if (rank == 0) then
    call MPI_Reduce(MPI_IN_PLACE, red, 3, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
    if (any(red /= nprocs * (nprocs + 1) / 2)) nfail = nfail + 1
  else
    call MPI_Reduce(red, tr, 3, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  end if

  call PMPI_Allreduce(nfail, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (total == 0) then
      print '(a,i0,a)', 'pmpi_fortran08: ', nprocs, ' ranks, OK'
    else
      print '(a,i0,a,i0,a)', 'pmpi_fortran08: ', nprocs, ' ranks, FAILED (', total, ' checks)'
    end if
  end if
  call MPI_Finalize(ierr)
  if (total /= 0) stop 1
end program pmpi_fortran08
