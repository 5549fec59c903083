/* Datatypes as every rank agrees on them: MPI lets ranks pass different
 * datatypes to one collective as long as the type signatures match (a
 * contiguous type of 2 MPI_INT on one rank, 2 x MPI_INT on another, a vector
 * with holes on a third). A path decided from a rank's own type map would
 * differ between ranks and hang; decisions rest on the signature instead:
 * its one basic type and the number of its elements. */
#ifndef MXH_COLL_DTYPE_H
#define MXH_COLL_DTYPE_H

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The signature of one element of @dt as @n elements of the predefined type
 * *@base (MPI_DATATYPE_NULL: the signature mixes basic types, or it cannot be
 * decoded). Predefined types (and the library's half types) are their own
 * base, n = 1. Returns 0, or -1 for an invalid handle. */
int mxh_dtype_signature(MPI_Datatype dt, MPI_Datatype *base, size_t *n);

/* @dt's elements lie back to back without holes from the buffer address on
 * (lower bound 0, extent = size): a buffer of it can be read as bytes. */
int mxh_dtype_dense(MPI_Datatype dt);

#ifdef __cplusplus
}
#endif

#endif
