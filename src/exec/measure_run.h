/* Measured network parameters, the exchanges (MPI): see measure.h. */
#ifndef MXH_COLL_MEASURE_RUN_H
#define MXH_COLL_MEASURE_RUN_H

#include <mpi.h>

#include "decide/measure.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over @comm (the hierarchy's private communicator, rank 0 measures):
 * fills @m with rank 0's times on every rank. Never fails: what could not be
 * measured stays 0. */
void mxh_measure_run(MPI_Comm comm, const mxh_layout_t *L, int rank, mxh_measure_t *m);

#ifdef __cplusplus
}
#endif

#endif
