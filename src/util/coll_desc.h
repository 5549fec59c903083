/* The collectives and what each one is: the one table every floor reads
 * (plans, schedules, selection, the cost model, the bodies in coll.c, the
 * entry layer). Adding a collective starts with a row here. */
#ifndef MXH_COLL_DESC_H
#define MXH_COLL_DESC_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mxh_coll {
    MXH_COLL_ALLREDUCE = 0,
    MXH_COLL_REDUCE_SCATTER_BLOCK,
    MXH_COLL_ALLGATHER,
    MXH_COLL_BCAST,
    MXH_COLL_REDUCE,
    MXH_COLL_NSCHED,                     /* the above have plans of one count and schedules */
    MXH_COLL_ALLGATHERV = MXH_COLL_NSCHED, /* per-rank block counts: plans of their own */
    MXH_COLL_REDUCE_SCATTER,
    MXH_COLL_ALLTOALL,
    MXH_COLL_ALLTOALLV,
    MXH_COLL_COUNT
} mxh_coll_t;

typedef struct mxh_coll_desc {
    const char   *name;     /* as MPIX_HIER_ALGO, metrics and logs spell it */
    unsigned char rooted;   /* has a root (bcast, reduce) */
    unsigned char reducing; /* takes an op */
    unsigned char blocks;   /* the vector is size blocks of count (rsb, allgather, alltoall) */
    unsigned char sendtype; /* the send buffer has a type of its own (sendtype) */
    unsigned char vector;   /* per-rank counts (rcounts, ...) */
} mxh_coll_desc_t;

extern const mxh_coll_desc_t mxh_coll_desc[MXH_COLL_COUNT];

static inline const mxh_coll_desc_t *mxh_coll_info(mxh_coll_t coll)
{
    return &mxh_coll_desc[coll];
}

/* The name of @coll ("?" outside the enum). */
const char *mxh_coll_name(mxh_coll_t coll);

#ifdef __cplusplus
}
#endif

#endif
