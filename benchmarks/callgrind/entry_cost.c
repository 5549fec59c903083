/* Entry cost in instructions (benchmarks/RESULTS.md section 7): N calls of each
 * blocking collective of one shape, after 100 untimed ones, in functions
 * timed_<coll> that callgrind collects alone (--toggle-collect=timed_*).
 *   entry_cost IMPL [BYTES [N [LIST]]]   IMPL hier|mpi, BYTES 8, N 10000,
 *   LIST of allreduce,rsb,allgather,bcast,reduce (default all)
 * Build: mpicc -O2 -g -Iinclude benchmarks/callgrind/entry_cost.c -o entry_cost
 *        -Lbuild/.libs -lmpixhier; run with cg.sh, read with ann.py / shm.sh. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpix_hier.h"

static int H;
static char sb[65536], rb[65536];
#define DEF(name, hcall, mcall) \
  __attribute__((noinline)) void timed_##name(int n, int c) { for (int i = 0; i < n; i++) { if (H) hcall; else mcall; } } \
  __attribute__((noinline)) void warm_##name(int n, int c) { for (int i = 0; i < n; i++) { if (H) hcall; else mcall; } }
DEF(allreduce, MPIX_Hier_allreduce(sb, rb, c, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_Allreduce(sb, rb, c, MPI_INT, MPI_SUM, MPI_COMM_WORLD))
DEF(rsb, MPIX_Hier_reduce_scatter_block(sb, rb, c, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_Reduce_scatter_block(sb, rb, c, MPI_INT, MPI_SUM, MPI_COMM_WORLD))
DEF(allgather, MPIX_Hier_allgather(sb, c, MPI_INT, rb, c, MPI_INT, MPI_COMM_WORLD), MPI_Allgather(sb, c, MPI_INT, rb, c, MPI_INT, MPI_COMM_WORLD))
DEF(bcast, MPIX_Hier_bcast(rb, c, MPI_INT, 0, MPI_COMM_WORLD), MPI_Bcast(rb, c, MPI_INT, 0, MPI_COMM_WORLD))
DEF(reduce, MPIX_Hier_reduce(sb, rb, c, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD), MPI_Reduce(sb, rb, c, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD))

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    H = argc > 1 && strcmp(argv[1], "mpi") != 0;
    int bytes = argc > 2 ? atoi(argv[2]) : 8;
    int n = argc > 3 ? atoi(argv[3]) : 10000;
    int c = bytes / 4;
    char sel[256]; snprintf(sel, sizeof sel, ",%s,", argc > 4 ? argv[4] : "allreduce,rsb,allgather,bcast,reduce");
    if (strstr(sel, ",allreduce,")) { warm_allreduce(100, c); timed_allreduce(n, c); }
    if (strstr(sel, ",rsb,")) { warm_rsb(100, c / 2 ? c / 2 : 1); timed_rsb(n, c / 2 ? c / 2 : 1); }
    if (strstr(sel, ",allgather,")) { warm_allgather(100, c / 2 ? c / 2 : 1); timed_allgather(n, c / 2 ? c / 2 : 1); }
    if (strstr(sel, ",bcast,")) { warm_bcast(100, c); timed_bcast(n, c); }
    if (strstr(sel, ",reduce,")) { warm_reduce(100, c); timed_reduce(n, c); }
    MPI_Finalize();
    return 0;
}
