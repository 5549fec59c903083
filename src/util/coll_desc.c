/* The collectives' table (util/coll_desc.h). */
#include "util/coll_desc.h"

const mxh_coll_desc_t mxh_coll_desc[MXH_COLL_COUNT] = {
    /*                                name                 rooted reducing blocks sendtype vector */
    [MXH_COLL_ALLREDUCE]            = {"allreduce",            0, 1, 0, 0, 0},
    [MXH_COLL_REDUCE_SCATTER_BLOCK] = {"reduce_scatter_block", 0, 1, 1, 0, 0},
    [MXH_COLL_ALLGATHER]            = {"allgather",            0, 0, 1, 1, 0},
    [MXH_COLL_BCAST]                = {"bcast",                1, 0, 0, 0, 0},
    [MXH_COLL_REDUCE]               = {"reduce",               1, 1, 0, 0, 0},
    [MXH_COLL_ALLGATHERV]           = {"allgatherv",           0, 0, 0, 1, 1},
    [MXH_COLL_REDUCE_SCATTER]       = {"reduce_scatter",       0, 1, 0, 0, 1},
    [MXH_COLL_ALLTOALL]             = {"alltoall",             0, 0, 1, 1, 0},
    [MXH_COLL_ALLTOALLV]            = {"alltoallv",            0, 0, 0, 1, 1},
};

const char *mxh_coll_name(mxh_coll_t coll)
{
    return (coll >= 0 && coll < MXH_COLL_COUNT) ? mxh_coll_desc[coll].name : "?";
}
