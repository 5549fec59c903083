/* The reentrancy mark of the drop-in library libmpixhier_pmpi (mpix/pmpi.c).
 * That library defines MPI_Allreduce, ... over the MPIX_Hier_ collectives;
 * MPI calls this library makes must reach MPI, not those wrappers. The
 * wrappers raise the mark themselves around their calls into this library;
 * code this library runs from inside other MPI calls (the progress of its
 * nonblocking collectives, run by MPI_Test/MPI_Wait and MPI_Comm_free of any
 * language binding) raises it with these. Without the drop-in library loaded
 * they do nothing. */
#ifndef MXH_UTIL_PMPI_HOOK_H
#define MXH_UTIL_PMPI_HOOK_H

void mxh_pmpi_enter(void);
void mxh_pmpi_leave(void);

#endif
