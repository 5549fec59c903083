#include "decide/select.h"
#include "decide/cost.h"
#include "decide/sched.h"
#include "util/str.h"

#include <stdint.h>
#include <stdio.h>

/* On one node the shared-memory algorithms of allreduce, reduce, reduce_scatter and
 * bcast beat MPICH's collective at every size (bcast reads straight from the root's
 * buffer with process_vm_readv for 8 KiB..1 MiB, else through the pipelined slots);
 * allgather wins up to 1 MiB of the whole vector and loses from 2 MiB on, where
 * MPICH's single-copy rendezvous moves each part once (benchmarks/RESULTS.md section
 * 1, "Why these constants"). */
size_t mxh_select_shm_max(mxh_coll_t coll)
{
    switch (coll) {
    case MXH_COLL_ALLGATHER:
    case MXH_COLL_ALLGATHERV:
        return (size_t)2 << 20;
    case MXH_COLL_ALLTOALL: /* every rank's whole send buffer through the segment */
        return MXH_SELECT_ALLTOALL_SHM_MAX;
    case MXH_COLL_ALLTOALLV:
        return 0;
    default:
        return SIZE_MAX;
    }
}

const mxh_fallback_info_t mxh_fallbacks[MXH_FB_COUNT] = {
    [MXH_FB_NONE]            = {"none", "not a fallback"},
    [MXH_FB_INTERCOMM]       = {"intercomm", "an intercommunicator: MPI's collective as it is"},
    [MXH_FB_USER_OP]         = {"user_op", "a user-defined reduction operation"},
    [MXH_FB_LOC_OP]          = {"loc_op", "MPI_MINLOC or MPI_MAXLOC"},
    [MXH_FB_NO_KERNEL]       = {"no_kernel",
                                "a (datatype, op) pair the library has no kernel for, or a derived "
                                "type in a reduction whose signature is not of one basic type"},
    [MXH_FB_MIXED_TYPES]     = {"mixed_types",
                                "a type signature the hierarchical paths cannot view as bytes or "
                                "elements of one basic type"},
    [MXH_FB_TOO_LARGE]       = {"too_large", "more than INT_MAX elements in the view of the data"},
    [MXH_FB_DISABLED]        = {"disabled", "MPIX_HIER_ENABLE=no"},
    [MXH_FB_SINGLE_RANK]     = {"single_rank", "a communicator of one rank"},
    [MXH_FB_FORCED]          = {"forced", "MPIX_HIER_ALGO forces mpi, or forces an algorithm "
                                          "the communicator cannot run"},
    [MXH_FB_BELOW_MIN_BYTES] = {"below_min_bytes", "the message is below MPIX_HIER_MIN_BYTES"},
    [MXH_FB_ABOVE_SHM_MAX]   = {"above_shm_max",
                                "one node, a size where MPI's own collective was measured faster "
                                "than shared memory"},
    [MXH_FB_NO_HIERARCHY]    = {"no_hierarchy",
                                "neither shared memory over the whole communicator nor two levels"},
    [MXH_FB_NO_SHM_FORM]     = {"no_shm_form", "alltoallv on one node (no shared-memory form)"},
    [MXH_FB_LAYOUT]          = {"layout", "all-to-all on a layout its hierarchical algorithm "
                                          "does not apply to"},
    [MXH_FB_SETUP_FAILED]    = {"setup_failed",
                                "the hierarchical all-to-all's communicators could not be made"},
};

const char *mxh_algo_name(mxh_algo_t algo)
{
    return (algo >= 0 && algo < MXH_ALGO_COUNT) ? mxh_config_algo_names[algo] : "?";
}

static int applicable(const mxh_select_shape_t *shape, mxh_algo_t algo)
{
    switch (algo) {
    case MXH_ALGO_MPI:
        return 1;
    case MXH_ALGO_SHM:
        return shape->shm_comm && shape->nranks > 1;
    case MXH_ALGO_HIER:
    case MXH_ALGO_PIPELINE:
        return shape->nlevels >= 2;
    default:
        return 0;
    }
}

mxh_choice_t mxh_select(const mxh_config_t *cfg, const mxh_select_shape_t *shape,
                        mxh_coll_t coll, size_t bytes, size_t work_bytes)
{
    return mxh_select_cost(cfg, shape, NULL, coll, bytes, work_bytes);
}

mxh_choice_t mxh_select_cost(const mxh_config_t *cfg, const mxh_select_shape_t *shape,
                             struct mxh_cost_sel *cost, mxh_coll_t coll, size_t bytes,
                             size_t work_bytes)
{
    mxh_choice_t c = {MXH_ALGO_MPI, 0, 0, 0, MXH_FB_NONE, 0};
    mxh_algo_t model_algo = MXH_ALGO_AUTO;
    size_t model_frag     = 0;
    int model_ramp        = 0;
    mxh_algo_t forced =
        (coll >= 0 && coll < MXH_COLL_COUNT) ? (mxh_algo_t)cfg->algo[coll] : MXH_ALGO_AUTO;

    if (!cfg->enable || shape->nranks < 2) {
        c.why = !cfg->enable ? MXH_FB_DISABLED : MXH_FB_SINGLE_RANK;
        return c;
    }
    if (forced != MXH_ALGO_AUTO) {
        /* degrade an algorithm the communicator cannot run: shm -> hier -> mpi, and
         * hier/pipeline -> shm -> mpi */
        if (!applicable(shape, forced)) {
            if (forced == MXH_ALGO_SHM)
                forced = applicable(shape, MXH_ALGO_HIER) ? MXH_ALGO_HIER : MXH_ALGO_MPI;
            else if (forced != MXH_ALGO_MPI)
                forced = applicable(shape, MXH_ALGO_SHM) ? MXH_ALGO_SHM : MXH_ALGO_MPI;
        }
        c.algo = forced;
        c.why  = MXH_FB_FORCED;
    } else if (bytes < cfg->min_bytes) {
        c.algo = MXH_ALGO_MPI;
        c.why  = MXH_FB_BELOW_MIN_BYTES;
    } else if (applicable(shape, MXH_ALGO_SHM)) {
        /* one node: every rank reads its peers' data directly, where measured faster */
        c.algo = work_bytes < mxh_select_shm_max(coll) ? MXH_ALGO_SHM : MXH_ALGO_MPI;
        c.why  = MXH_FB_ABOVE_SHM_MAX;
    } else if (applicable(shape, MXH_ALGO_HIER)) {
        c.algo = cfg->frag_size > 0 && work_bytes >= 2 * cfg->frag_size ? MXH_ALGO_PIPELINE
                                                                        : MXH_ALGO_HIER;
        /* the cost model, where it models the collective on this layout (and, with a
         * margin, predicts its choice enough faster than the thresholds') */
        if (cfg->cost_model == 1 && cost != NULL &&
            mxh_cost_select(cost, coll, bytes, c.algo, cfg->frag_size, &model_algo,
                            &model_frag, &model_ramp) == 0) {
            c.algo  = model_algo;
            c.model = 1;
        } else {
            model_algo = MXH_ALGO_AUTO;
        }
    } else {
        c.why = MXH_FB_NO_HIERARCHY;
    }
    if (c.algo != MXH_ALGO_MPI)
        c.why = MXH_FB_NONE;
    /* all-to-all runs unfragmented; alltoallv has no shared-memory form (coll.c) */
    if ((coll == MXH_COLL_ALLTOALL || coll == MXH_COLL_ALLTOALLV) && c.algo == MXH_ALGO_PIPELINE)
        c.algo = MXH_ALGO_HIER;
    if (c.algo == MXH_ALGO_PIPELINE) {
        c.frag_bytes = model_algo == MXH_ALGO_PIPELINE ? model_frag : cfg->frag_size;
        c.depth      = cfg->pipeline_depth;
        /* the model's ramp where it chose; else MPIX_HIER_PIPELINE_RAMP (auto: 2) */
        c.ramp = model_algo == MXH_ALGO_PIPELINE ? model_ramp
                                                 : mxh_sched_ramp_run(cfg->pipeline_ramp);
    }
    return c;
}

static size_t fmt_size(char *buf, size_t len, size_t b)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && b % 1024 == 0 && u < 4) {
        b /= 1024;
        u++;
    }
    int k = snprintf(buf, len, "%zu %s", b, unit[u]);
    return k > 0 ? (size_t)k : 0;
}

/* The choice changes only at MIN_BYTES, at two fragments and at the
 * shared-memory limit: evaluate there. */
size_t mxh_select_describe(const mxh_config_t *cfg, const mxh_select_shape_t *shape,
                           mxh_coll_t coll, char *buf, size_t len)
{
    size_t per = (coll == MXH_COLL_REDUCE_SCATTER_BLOCK || coll == MXH_COLL_ALLGATHER)
                     ? (size_t)(shape->nranks > 0 ? shape->nranks : 1)
                     : 1;
    size_t pts[4] = {0, cfg->min_bytes, 0, 0}, off = 0;
    int npts = 2;
    mxh_choice_t prev = {MXH_ALGO_COUNT, 0, 0, 0, MXH_FB_NONE, 0};
    size_t start = 0;

    if (cfg->frag_size > 0)
        pts[npts++] = (2 * cfg->frag_size + per - 1) / per;
    if (mxh_select_shm_max(coll) != SIZE_MAX)
        pts[npts++] = (mxh_select_shm_max(coll) + per - 1) / per;
    /* sort the breakpoints */
    for (int i = 0; i < npts; i++)
        for (int j = i + 1; j < npts; j++)
            if (pts[j] < pts[i]) {
                size_t t = pts[i];
                pts[i]   = pts[j];
                pts[j]   = t;
            }
    if (len)
        buf[0] = '\0';
#define PUT(...) mxh_str_put(buf, len, &off, __VA_ARGS__)
    for (int i = 0; i <= npts; i++) {
        mxh_choice_t c = {MXH_ALGO_COUNT, 0, 0, 0, MXH_FB_NONE, 0};
        if (i < npts)
            c = mxh_select(cfg, shape, coll, pts[i], pts[i] * per);
        if (i < npts && i > 0 && c.algo == prev.algo)
            continue;
        if (i > 0 && (i == npts || pts[i] > start)) {
            char a[32], b[32];
            fmt_size(a, sizeof(a), start);
            if (i < npts)
                fmt_size(b, sizeof(b), pts[i]);
            PUT("%s[%s, %s) %s", off ? "; " : "", a, i < npts ? b : "inf",
                mxh_algo_name(prev.algo));
            if (prev.algo == MXH_ALGO_PIPELINE) {
                fmt_size(a, sizeof(a), prev.frag_bytes);
                PUT(" (fragments of %s)", a);
            }
        }
        if (i < npts) {
            prev  = c;
            start = pts[i];
        }
    }
    if (cfg->cost_model == 1 && coll < MXH_COLL_NSCHED) /* the collectives with schedules */
        PUT(" (MPIX_HIER_COST_MODEL=yes: hier or pipeline and the fragments by the cost model on "
            "grid hierarchies, mpix_info --explain)");
#undef PUT
    return off;
}
