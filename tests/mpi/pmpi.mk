# The drop-in library libmpixhier_pmpi (README "Drop-in library"), tested by
# mpi/run_pmpi_tests.sh: pmpi_check is a plain MPI program (not linked with
# mpix-hier; the library comes with LD_PRELOAD), the Fortran checks are
# compiled by the script, and the library's own MPI tests run under
# LD_PRELOAD. Included from tests/Makefile.am; paths are relative to tests/.
check_PROGRAMS += mpi/pmpi_check
mpi_pmpi_check_SOURCES = mpi/pmpi_check.c
mpi_pmpi_check_CPPFLAGS =
mpi_pmpi_check_LDADD = -ldl
mpi_pmpi_check_LDFLAGS = -no-install

TESTS += mpi/run_pmpi_tests.sh
AM_TESTS_ENVIRONMENT += MXH_PMPI_LA='$(abs_top_builddir)/libmpixhier_pmpi.la'; export MXH_PMPI_LA;
EXTRA_DIST += mpi/run_pmpi_tests.sh mpi/pmpi_fortran.f90 mpi/pmpi_fortran08.f90
CLEANFILES += mpi/pmpi_fortran mpi/pmpi_fortran08 mpi/pmpi-*.log mpi/pmpi-logs/*.log
