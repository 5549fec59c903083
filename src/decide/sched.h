/* Schedules: a collective cut into fragments, each fragment running the plan of
 * its size, fragments overlapped across levels (software pipeline).
 *
 * Fragment f runs stage s of its plan in round  s + f * stretch.  Every rank
 * computes the same rounds, so the steps issued on a level communicator come in
 * the same order (round, stage) on all its members: nonblocking collectives of
 * different fragments can be in flight at the same time without ever being
 * mismatched. With stretch 1 every stage works on a different fragment in each
 * round (fragment k crosses the network while fragment k+1 is reduce-scattered
 * inside the node); a larger stretch bounds the fragments in flight (depth).
 *
 * Ramp: a pipeline fills with its first fragment alone in the first stage and
 * drains with its last alone in the last. With a ramp of k, the first full
 * fragment is cut into pieces of 1/2^k, 1/2^k, 1/2^(k-1), ..., 1/2 of it and the
 * last one likewise in reverse order, so the stages before and after the slowest
 * one wait for small pieces only, while each piece is still at most twice the one
 * before it (the next stage never starves while the slow one works).
 * A linear ramp (MXH_SCHED_RAMP_LINEAR) grows by a constant step instead: pieces of
 * 1/8, 2/8, ..., 7/8 of a fragment at the start (3.5 fragments' worth; allgather:
 * sixths, mxh_sched_linear_steps) and the same reversed at the end, so that each
 * piece's faster stages take about as long as the previous piece's slowest one even
 * where the stages are nearly equal (there the halvings leave the slowest link idle in
 * the fill). It wins on link-exact networks and loses where small pieces pay latency
 * factors (SimGrid's default model): where the measured network is flat in message
 * size (hier.c) the cost model picks linear or halvings per schedule
 * (MXH_SCHED_RAMP_PICK, decide/cost.c), elsewhere halvings.
 *
 * Work buffer layout: allreduce/bcast/reduce fragments are consecutive ranges of
 * the buffer. reduce_scatter_block/allgather fragments are fragment-major: the
 * work buffer holds, for each fragment, the fragment's piece of every block in
 * block_pos order (the entry layer packs and unpacks).
 *
 * Pure: built from the layout like plans, unit-tested without MPI. */
#ifndef MXH_SCHED_H
#define MXH_SCHED_H

#include <stddef.h>

#include "decide/links.h"
#include "decide/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Ramps are cut only from fragments of at least MXH_SCHED_BIG_FRAG bytes, at most
 * MXH_SCHED_MAX_RAMP halvings deep, pieces of at least MXH_SCHED_MIN_PIECE bytes. */
#define MXH_SCHED_MAX_RAMP 4
#define MXH_SCHED_MIN_PIECE (64u << 10)
/* ramp values besides 0..MXH_SCHED_MAX_RAMP halvings (MPIX_HIER_PIPELINE_RAMP) */
#define MXH_SCHED_RAMP_LINEAR (-1) /* linear: mxh_sched_linear_steps - 1 pieces per end */
#define MXH_SCHED_RAMP_AUTO   (-2) /* resolved by the hierarchy; as 2 where it is not */
#define MXH_SCHED_RAMP_PICK   (-3) /* auto resolved on a flat network: the cost model picks
                                      linear or 2 per schedule; as 2 where it does not */
#define MXH_SCHED_LINEAR_STEPS 8

/* Steps of @coll's linear ramp (pieces of 1/m .. (m-1)/m of a fragment at each end):
 * 8, allgather 6, the faster count of each in simulation (RESULTS.md section 5, "The
 * linear ramp's step count"). The cost model cannot rank them (its pipeline has no
 * per-piece term that separates them); at most MXH_SCHED_LINEAR_STEPS. */
static inline int mxh_sched_linear_steps(mxh_coll_t coll)
{
    return coll == MXH_COLL_ALLGATHER ? 6 : MXH_SCHED_LINEAR_STEPS;
}

/* The ramp requested for the last fragment of @coll: none for bcast. Its tail pieces
 * would share the rootless network stage (three fragments at a time, exec.c) with the
 * last full fragment, which then finishes last, well behind its period; bcast is faster
 * without them (RESULTS.md section 5, "bcast without a tail ramp"). */
static inline int mxh_sched_tail_ramp(mxh_coll_t coll, int ramp)
{
    return coll == MXH_COLL_BCAST ? 0 : ramp;
}
/* MPIX_HIER_PIPELINE_RAMP=auto resolved: the model's pick where the network is flat in
 * message size (@flat: measured so, or the configured factors are) and not a torus (not
 * measured there), else 2 halvings; other values as they are. */
static inline int mxh_sched_ramp_auto(int ramp, int flat, int torus)
{
    if (ramp != MXH_SCHED_RAMP_AUTO)
        return ramp;
    return flat && !torus ? MXH_SCHED_RAMP_PICK : 2;
}
/* The ramp a schedule runs when nothing picked one: auto and pick as 2 halvings. */
static inline int mxh_sched_ramp_run(int ramp)
{
    return ramp == MXH_SCHED_RAMP_AUTO || ramp == MXH_SCHED_RAMP_PICK ? 2 : ramp;
}

/* The sizes of the fragments of a message, in elements of the count (per block for
 * the block collectives, @per elements of the work vector per element, else 1), in
 * order: uniform fragments of about @frag_bytes with the ramp @ramp cut at both ends
 * (halvings or linear; none at bcast's end, mxh_sched_tail_ramp). Writes the first
 * @max into @sizes (may be NULL) and returns how many there are. The one cut of
 * sched.c and of the cost model (decide/cost.c). */
size_t mxh_sched_cut(mxh_coll_t coll, size_t count, size_t tsize, size_t per, size_t frag_bytes,
                     int ramp, size_t *sizes, size_t max);

/* Fragments in flight at most in a stream (MPIX_HIER_PIPELINE_DEPTH above it
 * falls back to rounds). */
#define MXH_MAX_STREAM 64

/* Exchanges per step that a paced stream keeps a reduction time for (the cost model's
 * phases of a step, MXH_COST_MAX_PHASES) */
#define MXH_SCHED_MAX_PHASES 12

/* What the tuning pass (decide/tune.c) stamps into a schedule: every choice the executor
 * (exec/exec.c) would otherwise make while it runs. Stage arrays are indexed by stage. */
typedef struct mxh_sched_tuned {
    int    stream;                      /* the stream executor runs it (else rounds) */
    int    window;                      /* stream: fragments in their stages at most */
    int    cap[2 * MXH_MAX_LEVELS];     /* stream: fragments on each stage at most */
    int    stagger[2 * MXH_MAX_LEVELS]; /* stream: the stage's step starts fragment f
                                           only once f - 1 has left its first exchange */
    size_t io_piece;                    /* bytes of a fragment's copy between two polls */
    size_t tmp_count;                   /* elements of the executor's temporary space */
    const mxh_link_times_t *pace;       /* paced: the links exchanges are booked on
                                           (&links[0]), else NULL */
    const mxh_link_times_t *times;      /* staggered bcast steps post their next scatter
                                           ahead by these (&links[1]), else NULL */
    double pace_cpu[2 * MXH_MAX_LEVELS][MXH_SCHED_MAX_PHASES]; /* paced: per stage and
                                           exchange, the reduction after it (seconds) */
    mxh_link_times_t links[2];
} mxh_sched_tuned_t;

/* full fragment, last fragment, and the ramps' piece sizes (at most
 * MXH_SCHED_LINEAR_STEPS - 1 distinct ones, shared by both ends) */
#define MXH_SCHED_MAX_PLANS (2 + 2 * (MXH_SCHED_MAX_RAMP + 1))

typedef struct mxh_sched {
    mxh_coll_t  coll;
    size_t      count;      /* count (allreduce, bcast, reduce) or block count (rsb, allgather) */
    int         root;
    size_t      tsize;      /* bytes per element */
    size_t      frag_bytes; /* requested fragment size (0 = one fragment) */
    int         depth;      /* requested fragments in flight (0 = as many as stages) */
    int         ramp;       /* requested ramp (0 = uniform fragments) */
    unsigned    plan_flags; /* MXH_PLAN_THROUGH for pipelines of MXH_SCHED_THROUGH_FRAGS */
    int         unpaced;    /* set by the hierarchy (MPIX_HIER_PIPELINE_PACE=auto): the cost
                               model predicts this schedule faster unpaced */
    int         by_model;   /* set by the hierarchy: the cost model chose it, paced by its
                               figures (hier.h mxh_hier_pace) */
    int         kary;       /* set by the hierarchy: long network levels exchange as kary
                               (mxh_sched_set_kary) */
    int         rsag;       /* set by the hierarchy: small allreduce steps on the network
                               reduce-scatter + allgather (mxh_sched_set_rsag) */
    int         rstagger;   /* set by the hierarchy: its rootless reduce steps on the
                               network are staggered where they bind
                               (mxh_cost_rstagger_pick) */

    int         nfrag;      /* >= 1 */
    size_t      frag_count; /* elements per full fragment (per block for rsb/allgather) */
    size_t      last_count; /* elements of the last fragment */
    size_t     *frag_start; /* nfrag + 1 entries: first element of each fragment (per block) */
    const mxh_plan_t **frag_plan; /* nfrag entries: the plan of each fragment's size */
    mxh_plan_t *plan;       /* plan of a full fragment */
    mxh_plan_t *plans[MXH_SCHED_MAX_PLANS]; /* the distinct plans (plans[0] == plan), owned */
    int         nplans;
    int         nstages;
    int         stretch;    /* fragment f runs stage s in round s + f * stretch */
    int         nrounds;
    int         nranks;
    size_t      work_count; /* elements of the work buffer */
    size_t      tmp_count;  /* elements of temporary space: one slot per stage */
    size_t      tmp_slot;   /* elements per stage slot */
    /* v-schedules (allgatherv, reduce_scatter): fragment f holds piece f of every
     * block, blocks in block_pos order; block d's pieces are vpiece[d] elements,
     * the last one vpiece[nranks + d]; vfrag_off: work offset of each fragment
     * (nfrag + 1). NULL otherwise. */
    size_t     *vpiece;
    size_t     *vfrag_off;
    mxh_sched_tuned_t tuned; /* decide/tune.c: mxh_tune_sched */
} mxh_sched_t;

/* Let the network steps of every plan of @s run kary exchanges (step.kary). */
void mxh_sched_set_kary(mxh_sched_t *s);

/* Let the small network allreduce steps of every plan of @s reduce-scatter + allgather
 * instead of radix (step.rsag). */
void mxh_sched_set_rsag(mxh_sched_t *s);

/* With fragments of at least MXH_SCHED_BIG_FRAG bytes, messages of more than
 * MXH_SCHED_MAX_FRAGS fragments are cut into MXH_SCHED_MAX_FRAGS larger ones.
 * 64: a 256 MiB message may run in 4 MiB fragments where latency is short
 * (MPIX_HIER_FRAG_SIZE, or the cost model's choice), and at 512 MiB 64 fragments beat
 * 32 larger ones (RESULTS.md section 5, "Four fragments per rootless reduce stage"). */
#define MXH_SCHED_BIG_FRAG (1u << 20)
#define MXH_SCHED_MAX_FRAGS 64

/* Pipelines of at least this many fragments (before the ramps) get bcast and
 * reduce plans that move the data through the root's groups whole
 * (MXH_PLAN_THROUGH): the root's link carries it once instead of 2(p-1)/p
 * times, for one exchange more per fragment on the root's path. */
#ifndef MXH_SCHED_THROUGH_FRAGS
#define MXH_SCHED_THROUGH_FRAGS 6
#endif

/* Elements per fragment (before the ramps) of a message of @count elements of
 * @tsize bytes, @per elements of the work vector per element of the count (nranks
 * for the block collectives, else 1), fragments of about @frag_bytes (0: one). */
size_t mxh_sched_frag_elems(size_t count, size_t tsize, size_t per, size_t frag_bytes);

/* Fragment count for a message of @count elements of @tsize bytes: fragments of
 * about @frag_bytes of the whole work vector (count * nranks elements for the
 * block collectives); with fragments of at least MXH_SCHED_BIG_FRAG bytes, the
 * first and last cut into a ramp of @ramp halvings (see above). */
mxh_status_t mxh_sched_create(const mxh_layout_t *layout, int rank, mxh_coll_t coll,
                              size_t count, int root, size_t tsize, size_t frag_bytes, int depth,
                              int ramp, mxh_sched_t **sched_p);
void mxh_sched_destroy(mxh_sched_t *sched);

/* v-schedules: the blocks of @bcounts[r] elements cut into @nfrag pieces each
 * (every piece ceil(count / nfrag) but the last), fragment f running the v-plan
 * (plan.h: mxh_plan_create_v) of the f-th pieces: two distinct plans. @nfrag
 * from mxh_sched_v_frags. */
mxh_status_t mxh_sched_create_v(const mxh_layout_t *layout, int rank, mxh_coll_t coll,
                                const size_t *bcounts, size_t tsize, int nfrag, int depth,
                                mxh_sched_t **sched_p);
/* Fragments for blocks of @bcounts (@n ranks, @tsize bytes per element) with
 * fragments of about @frag_bytes of the whole vector (0: one): at most
 * MXH_SCHED_MAX_FRAGS, and few enough that every non-empty block has a full
 * piece in every fragment but the last (count >= nfrag * (nfrag - 1)). */
int mxh_sched_v_frags(const size_t *bcounts, int n, size_t tsize, size_t frag_bytes);

/* The fragment that runs @stage in @round, or -1. */
static inline int mxh_sched_frag_at(const mxh_sched_t *s, int round, int stage)
{
    int d = round - stage;
    if (d < 0 || d % s->stretch != 0)
        return -1;
    d /= s->stretch;
    return d < s->nfrag ? d : -1;
}

static inline const mxh_plan_t *mxh_sched_plan(const mxh_sched_t *s, int frag)
{
    return s->frag_plan[frag];
}

/* First element of fragment @frag in the count (in each block for rsb/allgather). */
static inline size_t mxh_sched_frag_start(const mxh_sched_t *s, int frag)
{
    return s->frag_start[frag];
}

/* First element of fragment @frag's region in the work buffer. */
static inline size_t mxh_sched_frag_offset(const mxh_sched_t *s, int frag)
{
    if (s->vfrag_off != NULL)
        return s->vfrag_off[frag];
    size_t per = (s->coll == MXH_COLL_REDUCE_SCATTER_BLOCK || s->coll == MXH_COLL_ALLGATHER)
                     ? (size_t)s->nranks
                     : 1;
    return s->frag_start[frag] * per;
}

/* Elements of fragment @frag (per block for rsb/allgather). */
static inline size_t mxh_sched_frag_count(const mxh_sched_t *s, int frag)
{
    return s->frag_start[frag + 1] - s->frag_start[frag];
}

size_t mxh_sched_describe(const mxh_sched_t *sched, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
