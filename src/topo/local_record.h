/* The local part of discovery: this rank's record from every topology source,
 * in their order of precedence (local_record.c says which). */
#ifndef MXH_LOCAL_RECORD_H
#define MXH_LOCAL_RECORD_H

#include <mpi.h>

#include "topo/record.h"
#include "util/config.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fill @rec for the calling rank. Collective over @comm. @cfg: the
 * communicator's configuration (its topology file is set to the Slurm default
 * when that exists and none is named). Errors are logged. */
mxh_status_t mxh_discover_local_record(MPI_Comm comm, mxh_config_t *cfg, mxh_record_t *rec);

#ifdef __cplusplus
}
#endif

#endif
