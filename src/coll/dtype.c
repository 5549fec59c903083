/* Type signatures (coll/dtype.h): decoded with MPI_Type_get_envelope and
 * MPI_Type_get_contents. Only a struct can mix basic types; every other
 * constructor repeats one old type, whose base is the base of the result. */
#include "config.h"

#include "coll/dtype.h"
#include "reduce/reduce.h"

#include <stdlib.h>

static int is_named(MPI_Datatype dt)
{
    int ni, na, nd, combiner;
    return MPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) == MPI_SUCCESS &&
           combiner == MPI_COMBINER_NAMED;
}

/* The base of @dt, MPI_DATATYPE_NULL if mixed; -1 on an invalid handle. */
static int base_of(MPI_Datatype dt, MPI_Datatype *base, int depth)
{
    int ni, na, nd, combiner, rc = 0;
    int *ints          = NULL;
    MPI_Aint *addrs    = NULL;
    MPI_Datatype *types = NULL;

    *base = MPI_DATATYPE_NULL;
    if (dt == MPI_DATATYPE_NULL ||
        MPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) != MPI_SUCCESS)
        return -1;
    if (combiner == MPI_COMBINER_NAMED || mxh_half_kind(dt) != MXH_HALF_NONE) {
        *base = dt;
        return 0;
    }
    if (depth > 64 || nd < 1)
        return 0; /* F90 parameterized types and the like: undecoded, "mixed" */
    ints  = malloc(sizeof(int) * (size_t)(ni > 0 ? ni : 1));
    addrs = malloc(sizeof(MPI_Aint) * (size_t)(na > 0 ? na : 1));
    types = malloc(sizeof(MPI_Datatype) * (size_t)nd);
    if (ints == NULL || addrs == NULL || types == NULL ||
        MPI_Type_get_contents(dt, ni, na, nd, ints, addrs, types) != MPI_SUCCESS) {
        free(ints);
        free(addrs);
        free(types);
        return 0;
    }
    if (combiner == MPI_COMBINER_STRUCT) {
        /* ints: count, blocklengths[count]; members of length 0 carry no element */
        MPI_Datatype b = MPI_DATATYPE_NULL;
        int mixed = 0;
        for (int i = 0; i < nd && !mixed; i++) {
            MPI_Datatype bi;
            if (ints[1 + i] == 0)
                continue;
            if (base_of(types[i], &bi, depth + 1) != 0 || bi == MPI_DATATYPE_NULL ||
                (b != MPI_DATATYPE_NULL && bi != b))
                mixed = 1;
            else
                b = bi;
        }
        if (!mixed)
            *base = b;
    } else {
        if (base_of(types[0], base, depth + 1) != 0)
            *base = MPI_DATATYPE_NULL;
    }
    for (int i = 0; i < nd; i++)
        if (!is_named(types[i]))
            MPI_Type_free(&types[i]);
    free(ints);
    free(addrs);
    free(types);
    return rc;
}

int mxh_dtype_signature(MPI_Datatype dt, MPI_Datatype *base, size_t *n)
{
    int size = 0, bsize = 0;

    *n = 0;
    if (base_of(dt, base, 0) != 0)
        return -1;
    if (*base == MPI_DATATYPE_NULL)
        return 0;
    if (*base == dt) {
        *n = 1;
        return 0;
    }
    if (MPI_Type_size(dt, &size) != MPI_SUCCESS || MPI_Type_size(*base, &bsize) != MPI_SUCCESS ||
        bsize <= 0 || size % bsize != 0) {
        *base = MPI_DATATYPE_NULL;
        return 0;
    }
    *n = (size_t)(size / bsize);
    return 0;
}

int mxh_dtype_dense(MPI_Datatype dt)
{
    MPI_Aint lb, extent, tlb, textent;
    int size;

    if (MPI_Type_size(dt, &size) != MPI_SUCCESS || MPI_Type_get_extent(dt, &lb, &extent) != MPI_SUCCESS ||
        MPI_Type_get_true_extent(dt, &tlb, &textent) != MPI_SUCCESS)
        return 0;
    return lb == 0 && tlb == 0 && extent == size && textent == size;
}
