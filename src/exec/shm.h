/* Shared-memory collectives among the ranks of one node (direct exchange).
 *
 * The host analogue of a CUDA IPC protocol: every rank copies its data into
 * its own slot of a segment shared by the communicator, publishes a sequence
 * number, and its peers read the slot directly (and reduce it). No MPI call
 * on the data path.
 *
 * Segment: POSIX shared memory (shm_open by rank 0 with a unique name sent
 * with MPI_Bcast, space reserved with posix_fallocate so a full /dev/shm fails
 * at create instead of SIGBUS later; mapped by all, unlinked at once after
 * everyone mapped it; munmap in destroy). Not MPI_Win_allocate_shared: MPICH
 * 4.0.2 probes addresses with msync there (valgrind errors) and the window
 * costs a communicator per object. Known limit: posix_fallocate places every
 * page on rank 0's NUMA node (mbind per part would fix it on multi-socket
 * nodes). One part per rank, 4 KiB aligned:
 *   4 control words, each on its own 128-byte line (only the owner writes):
 *     ready  step whose input data is in my in-slot (step % 2)
 *     res    step whose reduced sub-chunk is in my res-slot (step % 2)
 *     done   step whose reads of peers' slots (or buffers) I have finished
 *     cma    step whose buffer descriptor (next line) is published
 *   a descriptor line (pid, address, length): my user buffer for single copy;
 *   in-slot[2], res-slot[2]: double-buffered data slots of `slot` bytes, where
 *   slot = chunk_bytes rounded up to a multiple of 64 and to at least 64 * n
 *   (n = size of the communicator; chunk_bytes is taken as the maximum over
 *   the ranks, so every rank cuts messages identically).
 *
 * Synchronisation: C11 atomics, release stores by the owner, acquire loads by
 * readers. Every rank keeps the same 64-bit step counter; each call advances it
 * by its number of pipeline steps (the same on every rank: it depends only on
 * the arguments, which must agree, and on `slot`). Step s uses slot s % 2. A
 * flag is never reset, only raised, so back-to-back calls of different kinds
 * and sizes cannot confuse each other. Before writing a slot for step s a rank
 * waits until every peer's done >= s - 2 (nobody still reads what step s - 2
 * left there); before reading a peer's slot for step s it waits until that
 * peer's ready (or res) >= s. Ranks can therefore run up to two steps apart,
 * which overlaps copy-in of step s + 1 with the reductions of step s.
 *
 * Protocols (C = slot / tsize elements per step):
 *   allreduce, count * tsize <= small threshold (default max(8 KiB / n, 512 B),
 *     at most one slot; measured crossover on 2 ranks: 2-8 KiB): one phase: copy in, publish, every rank reduces the n inputs
 *     itself into out.
 *   allreduce, larger: chunks of C elements; per chunk the elements are split
 *     into n sub-chunks (64-byte units); rank r reduces sub-chunk r of all n
 *     inputs into its res-slot, publishes res, then every rank copies all
 *     sub-chunks into out. Chunk k + 1 is copied in before waiting for the
 *     sub-chunks of chunk k. A rank does not copy its own sub-chunk in (only
 *     it reads it): it reduces it straight from `in`.
 *   reduce: as allreduce, but only the root reads the results (small: only the
 *     root reduces; non-roots leave as soon as their data is published).
 *   reduce_scatter: step j holds slice j of every part (part q cut into nsteps
 *     proportional slices, nsteps = ceil(total / (C - n))), laid out in rank
 *     order in each rank's in-slot; rank q reduces slice j of part q from all n
 *     in-slots straight into out (its own slice straight from `in`, not
 *     copied in, unless out overlaps it).
 *   allgather: step j holds elements [jC, (j+1)C) of each rank's own part;
 *     every rank copies its peers' slices into out.
 *   bcast: the root's in-slot carries `slot` bytes per step.
 *
 * Single copy (Linux cross-memory attach, process_vm_readv), bcast and
 * allgather for transfers of cma_min <= bytes < cma_max (the message for
 * bcast, the largest part for allgather; default [8 KiB, 1 MiB): measured on
 * 2 ranks, larger transfers ran faster through the pipelined slots, where
 * both ranks copy and the slots stay in cache): one step s. The owner (the
 * bcast root; every rank in allgather, its part read straight from `mine`)
 * stores address and length in its descriptor line and raises cma = s
 * (release); a peer waits for cma >= s, reads the buffer straight into its
 * own (process_vm_readv, 4 MiB per call, the progress hook in between) and
 * raises done = s; the owner returns only once every peer's done >= s (its
 * buffer must stay valid and unchanged until then). A descriptor is rewritten
 * only in a later call, after all its readers raised done. CMA can be
 * forbidden (Yama ptrace_scope >= 1 with ranks that are not ancestors, seccomp
 * in containers, pid namespaces): mxh_shm_create lets every rank read a cookie
 * from every peer and agrees (MPI_Allreduce) on the result, so either every
 * rank uses single copy or none (then the slot protocol above, as elsewhere
 * than Linux). A read that fails later (a buffer unmapped under us) still
 * completes the synchronisation and returns MXH_ERR_UNSUPPORTED.
 * Reductions run in rank order 0, 1, ..., n-1 (acc = x0; acc = x1 op acc; ...)
 * whichever rank computes, so the results are bitwise identical on every rank
 * and equal between the small and the chunked protocol.
 *
 * Waiting: spin with a pause instruction for about 50 us (16 polls when the
 * node is oversubscribed), calling the progress hook every few polls, then
 * sleep on the flag itself (a process-shared futex) until its owner raises it
 * (a raise wakes sleepers only when some are counted), re-checking after at
 * most 0.5 ms (50 us with a progress hook to call). Never sched_yield: on a
 * busy node it hands the core to an unrelated process for its whole slice
 * (benchmarks/RESULTS.md section 6). Inside a task (a nonblocking collective)
 * a wait yields to the progress engine instead (exec/task.h).
 *
 * All calls are blocking and collective over the communicator, in the same
 * order on every rank, with equal counts/roots/types on every rank; host
 * memory only; dt a predefined contiguous type of tsize bytes (size == extent),
 * op a predefined commutative op. Counts and displacements are in elements.
 * Argument errors are detected locally (MXH_ERR_INVALID_PARAM) before any
 * synchronisation, as with MPI; the peers may then wait. A reduction error
 * (MPI_Reduce_local) does not abort the protocol: the call completes the
 * synchronisation and returns MXH_ERR_MPI. No allocation per call. Not
 * thread-safe: one call at a time per object. */
#ifndef MXH_COLL_SHM_H
#define MXH_COLL_SHM_H

#include <mpi.h>
#include <stddef.h>

#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mxh_shm mxh_shm_t;

/* Collective over @comm. Every member must share memory with every other
 * (checked with MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)); otherwise every
 * rank returns MXH_ERR_UNSUPPORTED. @chunk_bytes: size of one data slot per
 * rank (the pipelining chunk), see above; 0 selects the default (128 KiB).
 * Allocation failures are agreed too (every rank fails). */
mxh_status_t mxh_shm_create(MPI_Comm comm, size_t chunk_bytes, mxh_shm_t **shm_p);
/* Collective (a barrier, then the window is freed). NULL is ignored. */
void mxh_shm_destroy(mxh_shm_t *shm);

/* @fn(@arg) is called while waiting on peers (e.g. to progress outstanding
 * nonblocking MPI requests); NULL = none. Local. */
void mxh_shm_set_progress(mxh_shm_t *shm, void (*fn)(void *), void *arg);

/* Slot size in bytes actually used (chunk_bytes after rounding). */
size_t mxh_shm_slot_bytes(const mxh_shm_t *shm);
/* Largest message (bytes) served by the one-phase allreduce/reduce protocol.
 * Set it (local, but must be equal on all ranks) to tune; it is clamped to the
 * slot size. */
size_t mxh_shm_get_small_max(const mxh_shm_t *shm);
void mxh_shm_set_small_max(mxh_shm_t *shm, size_t bytes);

/* Single copy (see above): whether the probe at create succeeded on every
 * rank (agreed), and the range [min, max) of bytes per transfer that takes it
 * (min SIZE_MAX or max 0: never). The setters are local but must be called
 * alike on all ranks. At create the environment of each rank votes:
 * MXH_SHM_CMA=0 on any rank disables single copy for all; MXH_SHM_CMA_MIN and
 * MXH_SHM_CMA_MAX=bytes set the range (the narrowest over the ranks). */
int mxh_shm_cma_available(const mxh_shm_t *shm);
size_t mxh_shm_get_cma_min(const mxh_shm_t *shm);
size_t mxh_shm_get_cma_max(const mxh_shm_t *shm);
void mxh_shm_set_cma_min(mxh_shm_t *shm, size_t bytes);
void mxh_shm_set_cma_max(mxh_shm_t *shm, size_t bytes);

/* Every rank's @len bytes (the same len on every rank, at most
 * MXH_SHM_XCHG_MAX) into @all, in rank order (@all holds size x len bytes): a
 * control exchange beside the data slots (its own flag and two small buffers
 * per rank), so it does not change the slots' rhythm for the collectives
 * around it (exec/ipc.c agrees and votes with it). Collective like the others;
 * one round costs a store and a wait per peer. */
#define MXH_SHM_XCHG_MAX 512
mxh_status_t mxh_shm_exchange(mxh_shm_t *shm, const void *mine, size_t len, void *all);

/* out = in[0] op in[1] op ... op in[n-1] (count elements) on every rank.
 * @in == @out (in place) or disjoint; other overlaps are not supported. */
mxh_status_t mxh_shm_allreduce(mxh_shm_t *shm, const void *in, void *out, size_t count,
                               MPI_Datatype dt, size_t tsize, MPI_Op op);

/* @in: the region of every rank, part q = counts[q] elements at displs[q]
 * (parts must not overlap). @out: my part, counts[me] elements: the reduction
 * of part me over all ranks. @out may be in + displs[me] elements (in place)
 * or disjoint from @in. Zero counts are allowed. */
mxh_status_t mxh_shm_reduce_scatter(mxh_shm_t *shm, const void *in, void *out, const int *counts,
                                    const int *displs, MPI_Datatype dt, size_t tsize, MPI_Op op);

/* @mine: counts[me] elements (may be out + displs[me] elements, in place, or
 * disjoint from @out). @out: the whole region; part q lands at displs[q]
 * (parts must not overlap). Only the parts are written. */
mxh_status_t mxh_shm_allgather(mxh_shm_t *shm, const void *mine, void *out, const int *counts,
                               const int *displs, MPI_Datatype dt, size_t tsize);

/* out (significant at @root only; may be NULL elsewhere) = reduction of in.
 * At the root @in == @out or disjoint. */
mxh_status_t mxh_shm_reduce(mxh_shm_t *shm, const void *in, void *out, size_t count,
                            MPI_Datatype dt, size_t tsize, MPI_Op op, int root);

/* count * tsize bytes of @buf from @root to every rank. */
mxh_status_t mxh_shm_bcast(mxh_shm_t *shm, void *buf, size_t count, size_t tsize, int root);

#ifdef __cplusplus
}
#endif

#endif
