/* emu_fini.c: preloaded into every rank by emu.sh run (LD_PRELOAD). Marks that
 * this rank reached MPI_Finalize with all its output flushed, so that emu.sh can
 * tell "results complete, teardown hung" (UCX 1.13.1's TCP transport often hangs
 * in MPI_Finalize between namespaces) from a real hang.
 *
 *   EMU_FINI_FILE     the marker file this rank creates (set by emu.sh _rank)
 *   EMU_FINI_BARRIER  1: a barrier on MPI_COMM_WORLD before the marker (every
 *                     rank's communication is over when any rank marks)
 *
 * The next MPI_Finalize in the link order (the program's MPI library, or a
 * preloaded wrapper such as libmpixhier_pmpi) is called through dlsym. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int MPI_Finalize(void)
{
    int (*next)(void) = (int (*)(void))dlsym(RTLD_NEXT, "MPI_Finalize");
    const char *b = getenv("EMU_FINI_BARRIER");
    const char *f = getenv("EMU_FINI_FILE");
    if (b && b[0] == '1')
        PMPI_Barrier(MPI_COMM_WORLD);
    fflush(NULL);
    if (f) {
        int fd = open(f, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        if (fd >= 0)
            close(fd);
    }
    return next ? next() : PMPI_Finalize();
}
