/*
 * mpix-hier: topology-aware hierarchical collectives for MPICH programs.
 *
 * Copyright (c) 2026 The mpix-hier authors. BSD-3-Clause, see COPYING.
 *
 * Every MPIX_Hier_<collective> has the exact signature and semantics of the MPI
 * collective of the same name, so a call site switches by renaming. Semantics
 * beyond MPI's:
 *
 *  - Hierarchy. On the first MPIX_Hier_ call on a communicator (or at
 *    MPIX_Hier_comm_init) the library gathers one record per rank (node name, GPU,
 *    rail, NVLink island, leaf switch), computes the levels NVLink island -> node
 *    -> rail under one leaf switch -> spine, creates one sub-communicator per
 *    level and caches all of it on
 *    the communicator as an MPI attribute. It is freed by MPI_Comm_free. That
 *    first call is collective over the communicator, like every MPIX_Hier_ call.
 *  - Results are bitwise identical on every rank: each element is reduced
 *    exactly once in a fixed order and then distributed.
 *  - Fallback, never stricter than MPI. Intercommunicators, user-defined
 *    operations (a user function is written for the datatype it is given, and
 *    ranks may pass different datatypes of one signature), MPI_MINLOC/
 *    MPI_MAXLOC, (datatype, op) pairs the library has no kernel for (MPI_SUM
 *    on MPI_CHAR, MPI_LAND on MPI_AINT, ...), reductions whose type signature
 *    mixes basic types,
 *    and communicators whose hierarchy is trivial (one level) are served by
 *    the plain MPI collective on the same communicator: the result (or the
 *    error) is MPI's.
 *  - Errors. Bad arguments are detected before any communication and reported
 *    like MPI does: the error handler of the communicator is called (that of
 *    MPI_COMM_WORLD for MPI_COMM_NULL) and, if it returns, the error code is
 *    returned. Codes belong to the standard MPI error classes (MPI_ERR_COUNT,
 *    MPI_ERR_TYPE, MPI_ERR_OP, MPI_ERR_COMM, MPI_ERR_ROOT, MPI_ERR_BUFFER,
 *    MPI_ERR_ARG, ...) or to the class returned by MPIX_Hier_get_error_class()
 *    for configuration errors; MPI_Error_string gives a readable message.
 *    The communicator stays usable after an error. As with MPI's collectives, the
 *    checks are local: when only some ranks pass a bad argument (e.g. MPI_IN_PLACE
 *    on a non-root of a reduce), those ranks return the error at once and the
 *    others may wait in the collective.
 *  - Memory: host, CUDA device and CUDA managed buffers (builds with CUDA;
 *    without it, host memory only). Send and receive buffers may be of
 *    different kinds, and ranks may pass buffers of different kinds in one
 *    call: the network messages of a call never depend on where buffers
 *    live. Where none of the device paths below takes it, a device buffer is
 *    staged: the library copies it into pinned host memory on its own CUDA
 *    stream, runs the same hierarchical schedule as for host buffers (every
 *    level, pipelining; reductions on the host) and copies the results back.
 *    Device node level (MPIX_HIER_IPC, on where
 *    every rank drives a GPU): from MPIX_HIER_IPC_MIN bytes, when every rank
 *    of a node passes cudaMalloc'ed memory, the ranks of the node read and
 *    write each other's buffers directly (CUDA IPC mappings, cached per
 *    allocation and released with the communicator) and reduce them with
 *    the library's kernels: on one node for allreduce, reduce_scatter_block,
 *    allgather, bcast and reduce (allgather at every size, also where MPI's
 *    own collective is taken for host buffers). On several nodes the same
 *    five collectives keep their data on the device: the node part on the
 *    device node level, the network steps of the schedule on the device
 *    buffers themselves, reduced by the library's kernels, pipelined by
 *    fragments; their messages go to MPI as device pointers where MPI is
 *    CUDA-aware and UCX moves CUDA memory (GPUDirect where UCX has it), else
 *    through pinned bounce buffers: at most (fragments in flight) x (twice
 *    the fragment) bytes per communicator (MPIX_HIER_FRAG_SIZE; the
 *    mpix_hier_bounce_bytes gauge shows it), given back when calls need much
 *    less for a while. MPIX_Hier_comm_describe says which. Small calls (the
 *    latency plans), uneven nodes whose ranks have no network step, and the
 *    v-collectives and all-to-all are staged whole; the metrics
 *    mpix_hier_staged_bytes_total and mpix_hier_device_cpu_reduced_bytes_total
 *    count what went through host memory. Peers then access your
 *    buffers during the call, so they must stay allocated and untouched
 *    until it completes, as MPI requires anyway. The ranks of a node agree
 *    per call; memory that cannot be mapped (managed, cudaMallocAsync pools)
 *    on any of them makes the node stage. Synchronization as in CUDA-aware MPI: the contents of
 *    device buffers must be complete when the call starts (synchronize the
 *    stream that produced them first) and results are complete in device
 *    memory when the call returns (blocking) or when MPI_Test/MPI_Wait report
 *    the request complete (nonblocking). One convenience beyond that: work
 *    queued on the legacy default stream (and so on any blocking stream)
 *    before the call, e.g. a cudaMemset or a kernel, is waited for on the
 *    device (the library's stream waits for an event recorded there at the
 *    start of each call); work on non-blocking streams is not. The library
 *    never synchronizes the whole device or the default stream from the host.
 *    A freed device pointer or memory of another device is an error (never a
 *    host access). Device buffers must belong to the
 *    calling rank's current device (cudaSetDevice); several ranks may share a
 *    GPU.
 *  - Datatypes: as in MPI, ranks may pass different datatypes whose type
 *    signatures match (MPI_INT x 2k on one rank, a contiguous or vector type
 *    of 2 MPI_INT x k on another). The path of a call depends only on what
 *    every rank agrees on: the signature (data movement is seen as bytes,
 *    reductions as elements of the signature's one basic type), counts the
 *    collective makes global, the hierarchy. Buffers of types with holes are
 *    packed into dense scratch and unpacked (MPI_Pack/MPI_Unpack).
 *    MPIX_C_FLOAT16 (MPICH's binary16, mpi4py's MPI.FLOAT16_T) is reduced with
 *    the library's own half-precision ops on every path, like MPIX_HIER_FLOAT16.
 *  - Threads: the library is used from one thread at a time
 *    (MPI_THREAD_FUNNELED or SERIALIZED use): its calls, and MPI_Test/MPI_Wait on
 *    its requests, must not run concurrently in several threads.
 */
#ifndef MPIX_HIER_H
#define MPIX_HIER_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define MPIX_HIER_API __attribute__((visibility("default")))
#else
#define MPIX_HIER_API
#endif

#define MPIX_HIER_VERSION_MAJOR 0
#define MPIX_HIER_VERSION_MINOR 1
#define MPIX_HIER_VERSION_PATCH 0

/** Most levels a hierarchy can have (node, rail, spine, + one spare). */
#define MPIX_HIER_MAX_LEVELS 4
/** Size of the buffer MPIX_Hier_comm_get_level writes a level name into. */
#define MPIX_HIER_MAX_LEVEL_NAME 32

/* ---- collectives: MPI-identical signatures ---------------------------- */

MPIX_HIER_API int MPIX_Hier_allreduce(const void *sendbuf, void *recvbuf, int count,
                                      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
MPIX_HIER_API int MPIX_Hier_reduce_scatter_block(const void *sendbuf, void *recvbuf,
                                                 int recvcount, MPI_Datatype datatype,
                                                 MPI_Op op, MPI_Comm comm);
MPIX_HIER_API int MPIX_Hier_allgather(const void *sendbuf, int sendcount,
                                      MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                      MPI_Datatype recvtype, MPI_Comm comm);
MPIX_HIER_API int MPIX_Hier_bcast(void *buffer, int count, MPI_Datatype datatype, int root,
                                  MPI_Comm comm);
MPIX_HIER_API int MPIX_Hier_reduce(const void *sendbuf, void *recvbuf, int count,
                                   MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm);

/* ---- v-collectives and all-to-all: MPI-identical signatures ------------ */

/**
 * Uneven and personalized collectives, as frameworks use them (Horovod's
 * allgatherv and reduce-scatter of uneven shards, FSDP/ZeRO sharding, MoE
 * dispatch with alltoall(v)). Semantics are MPI's: counts and displacements
 * in elements of the receive (or send) datatype, zero counts allowed,
 * MPI_IN_PLACE where MPI allows it (allgatherv: sendbuf; reduce_scatter:
 * sendbuf, the input then being recvbuf with the blocks of all ranks;
 * alltoall(v): sendbuf, the data being taken from and replaced in recvbuf).
 * Each rank may pass different datatypes as long as the type signatures
 * match, as MPI allows: the path of a call depends only on what every rank
 * agrees on (the type signature, counts the collective makes global).
 * Hierarchical paths: allgatherv and reduce_scatter run the allgather and
 * reduce-scatter plans of the hierarchy with per-rank block sizes;
 * alltoall(v) on a regular multi-node layout aggregates inside the node by
 * destination (one exchange per pair of nodes along each rail, so every
 * byte crosses the network once, on its rail); on one node allgatherv,
 * reduce_scatter and small alltoalls go through shared memory. Elsewhere
 * (an intercommunicator, a user op, a layout the hierarchy cannot help, ...)
 * the plain MPI collective runs.
 */
MPIX_HIER_API int MPIX_Hier_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                       void *recvbuf, const int recvcounts[], const int displs[],
                                       MPI_Datatype recvtype, MPI_Comm comm);
MPIX_HIER_API int MPIX_Hier_reduce_scatter(const void *sendbuf, void *recvbuf,
                                           const int recvcounts[], MPI_Datatype datatype,
                                           MPI_Op op, MPI_Comm comm);
MPIX_HIER_API int MPIX_Hier_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                     void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                     MPI_Comm comm);
MPIX_HIER_API int MPIX_Hier_alltoallv(const void *sendbuf, const int sendcounts[],
                                      const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                      const int recvcounts[], const int rdispls[],
                                      MPI_Datatype recvtype, MPI_Comm comm);

/* ---- nonblocking collectives ------------------------------------------- */

/**
 * MPIX_Hier_I<collective>: the nonblocking forms, with MPI's signatures
 * (MPI_Iallreduce, ...). They post the collective and return an MPI_Request
 * that the caller completes with the ordinary MPI functions: MPI_Wait,
 * MPI_Waitall, MPI_Waitany, MPI_Waitsome, MPI_Test, MPI_Testall, MPI_Testany,
 * MPI_Testsome, and may free with MPI_Request_free. Requests of the library
 * and of MPI may be mixed in one array.
 *
 * Ordering: as for MPI, all ranks post the collectives of one communicator in
 * the same order (blocking and nonblocking alike). Any number may be in flight
 * on one communicator and on different communicators; on one communicator
 * they complete in the order they were posted, on different communicators
 * independently.
 *
 * Progress: the library has no thread. A posted collective advances whenever
 * the rank calls MPI_Test or MPI_Wait (any variant) on any request, this
 * library's or MPI's (every library request in flight advances, not only the
 * one tested), and inside any later MPIX_Hier_* call. A rank that posts a
 * collective and then blocks in some other MPI call (MPI_Recv, MPI_Barrier,
 * ...) that needs a peer to finish this collective first
 * deadlocks (e.g. rank 0: MPIX_Hier_Iallreduce, MPI_Recv from rank 1; rank 1:
 * MPIX_Hier_Iallreduce, MPI_Wait, MPI_Send to rank 0): test the request now
 * and then, or wait for it before such calls. Overlap with computation comes
 * from calling MPI_Test on the request every few hundred microseconds.
 *
 * Buffers belong to the library until the request completes. Device buffers
 * follow the blocking contract (the data must be complete in device memory
 * when the call is made; results are complete in device memory when MPI_Test
 * or MPI_Wait reports completion). The status of a completed request carries
 * MPI_ERROR; MPI_SOURCE and MPI_TAG are undefined, the count is 0.
 * Argument errors are reported by the posting call, as for the blocking form.
 */
MPIX_HIER_API int MPIX_Hier_Iallreduce(const void *sendbuf, void *recvbuf, int count,
                                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                       MPI_Request *request);
MPIX_HIER_API int MPIX_Hier_Ireduce_scatter_block(const void *sendbuf, void *recvbuf,
                                                  int recvcount, MPI_Datatype datatype,
                                                  MPI_Op op, MPI_Comm comm,
                                                  MPI_Request *request);
MPIX_HIER_API int MPIX_Hier_Iallgather(const void *sendbuf, int sendcount,
                                       MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                       MPI_Datatype recvtype, MPI_Comm comm,
                                       MPI_Request *request);
MPIX_HIER_API int MPIX_Hier_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root,
                                   MPI_Comm comm, MPI_Request *request);
MPIX_HIER_API int MPIX_Hier_Ireduce(const void *sendbuf, void *recvbuf, int count,
                                    MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                                    MPI_Request *request);

MPIX_HIER_API int MPIX_Hier_Iallgatherv(const void *sendbuf, int sendcount,
                                        MPI_Datatype sendtype, void *recvbuf,
                                        const int recvcounts[], const int displs[],
                                        MPI_Datatype recvtype, MPI_Comm comm,
                                        MPI_Request *request);
MPIX_HIER_API int MPIX_Hier_Ireduce_scatter(const void *sendbuf, void *recvbuf,
                                            const int recvcounts[], MPI_Datatype datatype,
                                            MPI_Op op, MPI_Comm comm, MPI_Request *request);
MPIX_HIER_API int MPIX_Hier_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                      void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                      MPI_Comm comm, MPI_Request *request);
MPIX_HIER_API int MPIX_Hier_Ialltoallv(const void *sendbuf, const int sendcounts[],
                                       const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                       const int recvcounts[], const int rdispls[],
                                       MPI_Datatype recvtype, MPI_Comm comm,
                                       MPI_Request *request);

/* ---- persistent collectives (MPI-4) ------------------------------------- */

/**
 * MPI-4's persistent collectives with MPI's signatures: the call is checked
 * and its path decided once, here (collective: call the init functions in the
 * same order on every rank); every MPI_Start / MPI_Startall of the request
 * runs it with the same buffers, arguments and schedule, and MPI_Wait /
 * MPI_Test (any variant) complete it. The request stays valid until
 * MPI_Request_free. Buffer contents may change between starts; the buffers,
 * counts, datatypes, op and root are those given here (the count arrays are
 * copied). Starts on one communicator complete in order with the library's
 * other collectives on it. Errors of the arguments are reported here; a
 * failure while running is reported by the wait or test, through the
 * communicator's error handler. MPI_Start on a request that is active is
 * MPI_ERR_REQUEST.
 *
 * The library defines MPI_Start, MPI_Startall, MPI_Wait*, MPI_Test*,
 * MPI_Request_get_status and MPI_Request_free: they pass every other request
 * to MPI (PMPI_*) and run this library's. Link -lmpixhier before the MPI
 * library (pkg-config and the CMake package do), or use the drop-in library.
 * The request's handle is MPI's own persistent collective of the same
 * arguments, never started by the library: where a start reaches MPI without
 * these functions (a program linked the other way round, MPICH's mpi_f08
 * binding, which calls PMPI_Start), MPI's collective runs instead, with the
 * same results. Progress as for the nonblocking forms; a start of a
 * latency-bound call (one node, or a schedule that is not pipelined) begins
 * at the next progress of the library, or runs on the caller's stack in the
 * wait that completes it, as the blocking call without its checks and
 * decision; a pipelined schedule posts its first messages at the start.
 */
MPIX_HIER_API int MPIX_Hier_Allreduce_init(const void *sendbuf, void *recvbuf, int count,
                                           MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                           MPI_Info info, MPI_Request *request);
MPIX_HIER_API int MPIX_Hier_Reduce_scatter_block_init(const void *sendbuf, void *recvbuf,
                                                      int recvcount, MPI_Datatype datatype,
                                                      MPI_Op op, MPI_Comm comm, MPI_Info info,
                                                      MPI_Request *request);
MPIX_HIER_API int MPIX_Hier_Allgather_init(const void *sendbuf, int sendcount,
                                           MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                           MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                           MPI_Request *request);
MPIX_HIER_API int MPIX_Hier_Bcast_init(void *buffer, int count, MPI_Datatype datatype, int root,
                                       MPI_Comm comm, MPI_Info info, MPI_Request *request);
MPIX_HIER_API int MPIX_Hier_Reduce_init(const void *sendbuf, void *recvbuf, int count,
                                        MPI_Datatype datatype, MPI_Op op, int root,
                                        MPI_Comm comm, MPI_Info info, MPI_Request *request);
MPIX_HIER_API int MPIX_Hier_Allgatherv_init(const void *sendbuf, int sendcount,
                                            MPI_Datatype sendtype, void *recvbuf,
                                            const int recvcounts[], const int displs[],
                                            MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                            MPI_Request *request);
MPIX_HIER_API int MPIX_Hier_Reduce_scatter_init(const void *sendbuf, void *recvbuf,
                                                const int recvcounts[], MPI_Datatype datatype,
                                                MPI_Op op, MPI_Comm comm, MPI_Info info,
                                                MPI_Request *request);
MPIX_HIER_API int MPIX_Hier_Alltoall_init(const void *sendbuf, int sendcount,
                                          MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                          MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                          MPI_Request *request);
MPIX_HIER_API int MPIX_Hier_Alltoallv_init(const void *sendbuf, const int sendcounts[],
                                           const int sdispls[], MPI_Datatype sendtype,
                                           void *recvbuf, const int recvcounts[],
                                           const int rdispls[], MPI_Datatype recvtype,
                                           MPI_Comm comm, MPI_Info info, MPI_Request *request);

/* ---- half precision datatypes ------------------------------------------ */

/**
 * MPIX_HIER_FLOAT16 (IEEE 754 binary16) and MPIX_HIER_BFLOAT16 (bfloat16): one
 * 16-bit element each, stored as its bit pattern (uint16_t, _Float16, __half,
 * __nv_bfloat16, ...). Usable with every MPIX_Hier_* collective; reductions
 * accept MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN (others: MPI_ERR_OP) and user
 * ops (through MPI's collective). SUM and PROD are computed in float and rounded once
 * per element to nearest, ties to even (overflow gives Inf; subnormals and NaN
 * as IEEE); MAX/MIN return one of the inputs, NaN as for MPI_FLOAT.
 *
 * They are macros calling a function, not compile-time constants: valid
 * between MPI_Init and MPI_Finalize, usable before any other MPIX_Hier_ call
 * (the first use creates both types; MPI_DATATYPE_NULL before MPI_Init or
 * after MPI_Finalize). The handle is the same on every call; the library owns
 * it and frees it in MPI_Finalize: do not free it. With plain MPI functions
 * the types are plain 2-byte derived datatypes: fine for point-to-point,
 * bcast, gather; MPI's predefined reduction ops cannot be applied to them.
 *
 * MPICH's MPIX_C_FLOAT16 (and MPIX_BFLOAT16 where the MPI defines it) are
 * reduced the same way by every MPIX_Hier_* collective, on every path (MPICH
 * 4.0.2 aborts when it reduces MPIX_C_FLOAT16 itself; plain MPI functions on
 * it keep MPICH's behaviour).
 */
MPIX_HIER_API MPI_Datatype MPIX_Hier_type_float16(void);
MPIX_HIER_API MPI_Datatype MPIX_Hier_type_bfloat16(void);
#define MPIX_HIER_FLOAT16  (MPIX_Hier_type_float16())
#define MPIX_HIER_BFLOAT16 (MPIX_Hier_type_bfloat16())

/* ---- hierarchy management and introspection ---------------------------- */

/**
 * Build (or rebuild) the hierarchy of @p comm now. Collective over @p comm.
 * @p info may be MPI_INFO_NULL or hold per-communicator overrides of the
 * configuration: the keys are the MPIX_HIER_* variable names in lower case
 * (e.g. "mpix_hier_topo_file", "mpix_hier_enable"); precedence is
 * default < environment < info. Values that change the plan must be equal on
 * all ranks, otherwise every rank gets an MPIX_Hier_get_error_class() error.
 */
MPIX_HIER_API int MPIX_Hier_comm_init(MPI_Comm comm, MPI_Info info);

/** Number of levels of the hierarchy of @p comm (builds it if needed; collective then). */
MPIX_HIER_API int MPIX_Hier_comm_get_num_levels(MPI_Comm comm, int *num_levels);

/**
 * The calling rank's communicator at @p level (0 = innermost) and the level's
 * name ("island", "node", "rail", "spine"; @p name may be NULL, else it must hold
 * MPIX_HIER_MAX_LEVEL_NAME chars). The communicator belongs to the library and
 * lives until @p comm is freed: do not free it; MPI_Comm_dup it to keep it.
 */
MPIX_HIER_API int MPIX_Hier_comm_get_level(MPI_Comm comm, int level, MPI_Comm *level_comm,
                                           char *name);

/**
 * A human-readable description of the hierarchy of @p comm (levels, groups,
 * rails, leaf switches, the algorithm kind of each level), the same on all
 * ranks. Writes at most @p buflen chars including the terminating NUL into
 * @p buf and the full length (without NUL) into @p resultlen if not NULL.
 */
MPIX_HIER_API int MPIX_Hier_comm_describe(MPI_Comm comm, char *buf, int buflen, int *resultlen);

/** At most this many dimensions in MPIX_Hier_comm_split_parallel. */
#define MPIX_HIER_MAX_PARALLEL_DIMS 8

/**
 * Parallelism groups placed by the hierarchy (tensor, pipeline, data, expert, ...).
 * Collective over the intracommunicator @p comm, with the same arguments on every rank.
 * @p sizes[0 .. @p ndims - 1] are the dimensions' group sizes, innermost first (e.g.
 * {tp, pp, dp}); one of them may be 0, "the rest" (comm size / the others' product); the
 * product must be the size of @p comm. @p newcomms[d] gets the calling rank's group of
 * dimension d (a new communicator, rank = the rank's place along d; free it with
 * MPI_Comm_free).
 *
 * The ranks are put in topology order (leaf switch, node, NVLink island, rail, GPU) and
 * numbered in mixed radix, dimension 0 fastest: the innermost groups are consecutive GPUs
 * of one island or node, the next take the same GPU (so the same rail) on neighbouring
 * nodes under one leaf, the outermost cross the spine. Every dimension's blocks of
 * sizes[0] * ... * sizes[d] consecutive ranks must lie inside one island, node or leaf,
 * or consist of whole ones; where they do not (a size that does not divide a node's
 * ranks, uneven nodes) the call fails with MPI_ERR_ARG and a message saying which level
 * is split, and creates nothing. The same call gives the same groups on every rank and
 * every time (also with MPIX_HIER_ENABLE=no: the placement reads the discovered
 * machine, not the collectives' settings). MPIX_Hier_comm_describe_parallel says what each dimension spans.
 */
MPIX_HIER_API int MPIX_Hier_comm_split_parallel(MPI_Comm comm, int ndims, const int sizes[],
                                                MPI_Comm newcomms[]);

/**
 * What MPIX_Hier_comm_split_parallel(@p comm, @p ndims, @p sizes) would build, one line a
 * dimension ("dimension D: S ranks a group, level L", L the smallest level that holds each
 * group: "rank", "nvlink island", "node", "leaf" (nodes under one leaf switch, or one
 * network where the leaves are unknown), "spine"), or "no placement: " and the reason.
 * Each dimension of groups larger than one rank has a second line, the cost model's
 * figures for one group alone: "  model, 64 MiB of floats, each group alone: allreduce
 * B GB/s bus (T us), all-gather B GB/s bus (T us)" (bus bandwidth as nccl-tests counts it;
 * mpix_info --parallel prints the same, and against the naive rank order). The link
 * figures are the cost model's (MPIX_HIER_NET, MPIX_HIER_COST_*, or measured ones): on a
 * machine nobody described, defaults, good for comparing dimensions, not a forecast.
 * Collective like it; writes as MPIX_Hier_comm_describe does.
 */
MPIX_HIER_API int MPIX_Hier_comm_describe_parallel(MPI_Comm comm, int ndims, const int sizes[],
                                                   char *buf, int buflen, int *resultlen);

/**
 * A communicator with the group of @p comm whose rank order follows the machine, for codes
 * that build their own rings, stencils or pipelines over consecutive ranks. Collective over
 * the intracommunicator @p comm. @p newcomm gets a new communicator (free it with
 * MPI_Comm_free) in which the ranks are in topology order: by leaf switch, node, NVLink
 * island, rail, GPU and then their order in @p comm, so consecutive ranks are ranks of one
 * node (every node's ranks are one block), consecutive nodes are under one leaf, and rank
 * i of a node block has the same rail as rank i of the next block when the nodes are alike.
 * It is the order MPIX_Hier_comm_split_parallel numbers its positions in (a
 * split_parallel with one dimension of the whole size gives the same ranks). Deterministic:
 * every rank computes the same order from the gathered hierarchy, and a second call gives
 * the same again (also with MPIX_HIER_ENABLE=no). Where @p comm already is in that order
 * the result is MPI_CONGRUENT to it. Errors (through @p comm's error handler): MPI_ERR_COMM
 * for MPI_COMM_NULL or an intercommunicator, MPI_ERR_ARG for @p newcomm NULL.
 */
MPIX_HIER_API int MPIX_Hier_comm_reorder(MPI_Comm comm, MPI_Comm *newcomm);

/* ---- metrics ------------------------------------------------------------ */

/**
 * Per-communicator counters of the MPIX_Hier_ collectives (README: Metrics;
 * `mpix_info --metrics` lists every name, type and label): calls, bytes and
 * time per collective, form (blocking="1" or "0"), path and algorithm
 * (mpix_hier_calls_total, mpix_hier_bytes_total,
 * mpix_hier_call_seconds_total), fallbacks to MPI's own collective by reason
 * (mpix_hier_fallbacks_total), and the time and number of the hierarchical
 * schedule's steps per level (mpix_hier_level_seconds_total,
 * mpix_hier_level_steps_total). Counting is local (no communication) and on
 * unless MPIX_HIER_METRICS=no; the file MPIX_HIER_METRICS_FILE is written at
 * MPI_Finalize and every MPIX_HIER_METRICS_INTERVAL seconds.
 *
 * Reading by name rather than a struct: @p name is a metric name of the
 * Prometheus file, optionally with label matchers in its syntax, e.g.
 * "mpix_hier_calls_total", "mpix_hier_calls_total{coll=\"allreduce\",algo=\"mpi\"}"
 * or "mpix_hier_fallbacks_total{reason=\"user_op\"}"; *@p value is the sum of
 * the communicator's series that match (labels not named are summed over).
 * New metrics and labels are new names: the ABI never changes, and the names
 * are the file's. Counts are exact in a double up to 2^53. An unknown name,
 * label or label value is an MPI_ERR_ARG error. Local: works on any
 * communicator, intercommunicators and communicators whose calls only ever went
 * to MPI included (a communicator never used reads 0).
 */
MPIX_HIER_API int MPIX_Hier_comm_get_stats(MPI_Comm comm, const char *name, double *value);

/** Set the counters of @p comm to zero (local). */
MPIX_HIER_API int MPIX_Hier_comm_reset_stats(MPI_Comm comm);

/**
 * Write the metrics of every communicator of this process (freed ones too,
 * with mpix_hier_comm_live 0; beyond 256 freed communicators the oldest are
 * summed into comm="freed") in the Prometheus text exposition format to
 * @p path, now: placeholders %r (MPI_COMM_WORLD rank), %h (host name), %p
 * (process id), %% ('%'); without %r or %p, jobs of several ranks get
 * ".rank<r>" appended. Atomic: a temporary file renamed. NULL: the file of
 * MPIX_HIER_METRICS_FILE (MPI_ERR_ARG if it is not set). Local. Errors go to
 * the error handler of MPI_COMM_WORLD (MPI_ERR_IO if the file cannot be written).
 */
MPIX_HIER_API int MPIX_Hier_metrics_write(const char *path);

/**
 * The same text into @p buf: at most @p buflen chars including the
 * terminating NUL, the full length (without NUL) into @p resultlen if not NULL.
 */
MPIX_HIER_API int MPIX_Hier_metrics_text(char *buf, int buflen, int *resultlen);

/** The MPI error class of mpix-hier configuration/topology errors (valid after MPI_Init). */
MPIX_HIER_API int MPIX_Hier_get_error_class(int *errorclass);

/** Library version. */
MPIX_HIER_API int MPIX_Hier_get_version(int *major, int *minor, int *patch);

#ifdef __cplusplus
}
#endif

#endif /* MPIX_HIER_H */
