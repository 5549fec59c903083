/* Shared-memory collectives among the ranks of one node; protocol and
 * synchronisation are described in shm.h. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* process_vm_readv */
#endif
#include "config.h"

#include "exec/shm.h"
#include "exec/task.h"
#include "reduce/reduce.h"
#include "util/log.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#ifdef __linux__
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#define SHM_HAVE_CMA 1
#else
#define SHM_HAVE_CMA 0
#endif

#define SHM_LINE          128                 /* control word separation (2 lines: adjacent-line prefetch) */
#define SHM_PAGE          4096
#define SHM_UNIT          64                  /* sub-chunk granularity of the chunked allreduce */
#define SHM_MAX_TSIZE     32                  /* largest predefined type (long double complex) */
#define SHM_DEFAULT_CHUNK ((size_t)128 << 10)
#define SHM_MAX_CHUNK     ((size_t)1 << 30)
#define SHM_SMALL_TOTAL   ((size_t)8 << 10) /* one phase up to 8 KiB / n (>= 512 B) */
/* single copy (bcast, allgather) for transfers in [8 KiB, 1 MiB): measured on
 * 2 ranks, larger transfers run faster through the pipelined slots (both
 * ranks copy, the slots stay in cache) */
#define SHM_CMA_MIN       ((size_t)8 << 10)
#define SHM_CMA_MAX       ((size_t)1 << 20)
#define SHM_CMA_IO        ((size_t)4 << 20) /* bytes per process_vm_readv (progress in between) */

/* waiting (wait_slow; shm.h's "Waiting" paragraph): poll with a pause for SHM_SPIN_NS (oversubscribed:
 * SHM_SPIN_POLLS_OVERSUB polls), then sleep on the flag (futex) until its owner
 * raises it; never sched_yield, which hands the core to whatever else runs here */
#define SHM_SPIN_NS            50000L  /* 50 us */
#define SHM_SPIN_POLLS_OVERSUB 16u
#define SHM_PROGRESS_EVERY     32u
#define SHM_SLEEP_MAX_NS       500000L /* a sleep re-checks after 0.5 ms at the latest */
#define SHM_SLEEP_PROGRESS_NS  50000L  /* ... after 50 us with a progress hook to call */
#define SHM_SLEEP_NS           10000L  /* without futexes: nanosleep */

/* F_CMA: step whose buffer descriptor (cma line) is published; F_XCHG: round
 * of mxh_shm_exchange whose bytes are in xchg[round % 2] */
enum { F_READY = 0, F_RES = 1, F_DONE = 2, F_CMA = 3, F_XCHG = 4, F_COUNT };

typedef struct shm_ctrl {
    struct {
        _Atomic uint64_t v;
        char             pad[SHM_LINE - sizeof(uint64_t)];
    } f[F_COUNT];
    /* single copy: the owner's user buffer of step f[F_CMA] (relaxed stores,
     * published by the release store of f[F_CMA]); pid set once at create */
    struct {
        _Atomic uint64_t pid, addr, len;
        char             pad[SHM_LINE - 3 * sizeof(uint64_t)];
    } cma;
    /* peers asleep on one of my flags (futex): my flag_set wakes them */
    struct {
        _Atomic uint32_t n;
        char             pad[SHM_LINE - sizeof(uint32_t)];
    } sleepers;
    /* mxh_shm_exchange's bytes, double-buffered by round */
    unsigned char xchg[2][MXH_SHM_XCHG_MAX];
} shm_ctrl_t;

typedef struct shm_peer {
    shm_ctrl_t *ctrl;
    char       *in[2];  /* input slots */
    char       *res[2]; /* reduced sub-chunks (allreduce/reduce chunked protocol) */
    long        pid;    /* for process_vm_readv */
} shm_peer_t;

struct mxh_shm {
    void       *map;       /* the whole segment: [size] parts of equal size */
    size_t      map_bytes;
    int         rank, size;
    size_t      slot;      /* bytes per data slot */
    size_t      small_max; /* one-phase allreduce/reduce up to this many bytes */
    int         cma;       /* process_vm_readv works between every pair (agreed) */
    size_t      cma_min;   /* single copy from this many bytes per transfer */
    size_t      cma_max;   /* ... up to (excluding) this many */
    int         oversub;   /* more ranks than cores here (agreed) */
    long        spin_ns;   /* poll this long before sleeping (not oversubscribed) */
    int         stats;     /* MXH_SHM_WAIT_STATS=1: count the waits, print at destroy */
    unsigned long long nwait, nlong, nsleep;
    long long          wait_ns;
    uint64_t    step;      /* last step used; the same on every rank between calls */
    uint64_t    xstep;     /* last round of mxh_shm_exchange (the same on every rank) */
    shm_peer_t *peers;     /* [size] */
    void (*progress)(void *);
    void       *progress_arg;
};

/* The one reduction entry point (to be switched to src/reduce's kernels). */
static inline int shm_reduce_local(const void *in, void *inout, size_t count, MPI_Datatype dt,
                                   MPI_Op op)
{
    return mxh_reduce_local(in, inout, count, dt, op) == MXH_OK ? MPI_SUCCESS : MPI_ERR_OP;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

static size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

static long elapsed_ns(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long)(t.tv_sec - t0->tv_sec) * 1000000000L + (t.tv_nsec - t0->tv_nsec);
}

/* ------------------------------------------------------------- flags */

static inline uint64_t flag_get(const mxh_shm_t *shm, int p, int f)
{
    return atomic_load_explicit(&shm->peers[p].ctrl->f[f].v, memory_order_acquire);
}

static inline void futex_wake_flag(_Atomic uint64_t *w)
{
#ifdef __linux__
    syscall(SYS_futex, (uint32_t *)(void *)w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
#else
    (void)w;
#endif
}

static inline void flag_set(mxh_shm_t *shm, int f, uint64_t v)
{
    shm_ctrl_t *c = shm->peers[shm->rank].ctrl;
    atomic_store_explicit(&c->f[f].v, v, memory_order_release);
    if (atomic_load_explicit(&c->sleepers.n, memory_order_relaxed))
        futex_wake_flag(&c->f[f].v);
}

/* Sleep until peer @p raises flag @f past @cur (or @ns pass): futex on the
 * flag's low 32 bits (shared mapping: process-shared futex). The owner's
 * flag_set wakes the flag while its sleepers count is nonzero; the count is
 * raised before the flag is read again, and the kernel compares the word
 * before sleeping, so a raise that lands in between only costs the timeout. */
static void sleep_on_flag(mxh_shm_t *shm, int p, int f, uint64_t v, long ns)
{
    shm_ctrl_t *c = shm->peers[p].ctrl;
    _Atomic uint64_t *w = &c->f[f].v;

    atomic_fetch_add_explicit(&c->sleepers.n, 1, memory_order_seq_cst);
    uint64_t cur = atomic_load_explicit(w, memory_order_seq_cst);
    if (cur < v) {
        shm->nsleep++;
#ifdef __linux__
        struct timespec to = {0, ns};
        syscall(SYS_futex, (uint32_t *)(void *)w, FUTEX_WAIT, (uint32_t)cur, &to, NULL, 0);
#else
        struct timespec to = {0, SHM_SLEEP_NS};
        (void)ns;
        nanosleep(&to, NULL);
#endif
    }
    atomic_fetch_sub_explicit(&c->sleepers.n, 1, memory_order_relaxed);
}

/* Why not spin and sched_yield: with other programs running here (2 ranks and
 * 2 CPU-bound processes on 2 cores), a yield hands the core to such a process
 * for its whole time slice while the peer raises the flag at once: the ranks
 * then pass each other by a slice per step, several times slower than MPICH's
 * collective, which spins without yielding. Sleeping on the flag gives the core
 * away only while the peer is not running and is woken by the flag itself;
 * spinning without end (as MPICH does) loses as much when a loaded machine
 * deschedules the peer (benchmarks/RESULTS.md section 6). */
static void wait_slow(mxh_shm_t *shm, int p, int f, uint64_t v)
{
    struct timespec t0 = {0, 0};
    unsigned polls = 0;
    const int fiber = mxh_task_in_fiber(); /* a task yields and resumes as itself */

    if (shm->stats)
        clock_gettime(CLOCK_MONOTONIC, &t0);
    while (flag_get(shm, p, f) < v) {
        if (fiber) {
            /* a nonblocking collective: hand control back, never spin or sleep */
            if (shm->progress)
                shm->progress(shm->progress_arg);
            mxh_task_yield();
            continue;
        }
        polls++;
        cpu_relax();
        if (polls % SHM_PROGRESS_EVERY != 0 &&
            !(shm->oversub && polls >= SHM_SPIN_POLLS_OVERSUB))
            continue;
        if (shm->progress)
            shm->progress(shm->progress_arg);
        if (t0.tv_sec == 0 && t0.tv_nsec == 0) {
            clock_gettime(CLOCK_MONOTONIC, &t0);
            if (!shm->oversub)
                continue;
        }
        if (shm->oversub || elapsed_ns(&t0) > shm->spin_ns)
            sleep_on_flag(shm, p, f, v,
                          shm->progress ? SHM_SLEEP_PROGRESS_NS : SHM_SLEEP_MAX_NS);
    }
    if (shm->stats) {
        long ns = elapsed_ns(&t0);
        shm->nwait++;
        shm->wait_ns += ns;
        shm->nlong += ns > 1000000L;
    }
}

/* Wait until peer @p's flag @f reached @v (acquire). */
static inline void wait_flag(mxh_shm_t *shm, int p, int f, uint64_t v)
{
    if (flag_get(shm, p, f) < v)
        wait_slow(shm, p, f, v);
}

static void wait_all(mxh_shm_t *shm, int f, uint64_t v)
{
    for (int i = 1; i < shm->size; i++)
        wait_flag(shm, (shm->rank + i) % shm->size, f, v);
}

/* My slots of step @s may be written: every peer finished reading step s - 2. */
static inline void slot_free(mxh_shm_t *shm, uint64_t s)
{
    if (s > 2)
        wait_all(shm, F_DONE, s - 2);
}

static inline char *my_in(mxh_shm_t *shm, uint64_t s) { return shm->peers[shm->rank].in[s & 1]; }

/* ------------------------------------------------------------ single copy */

/* Copy @len bytes at address @src of process @pid into @dst with
 * process_vm_readv, SHM_CMA_IO bytes per call (partial transfers resumed, the
 * progress hook called in between). Returns 0 or an errno value. */
static int cma_copy(mxh_shm_t *shm, long pid, void *dst, uint64_t src, size_t len)
{
#if SHM_HAVE_CMA
    char *d = dst;
    while (len > 0) {
        struct iovec l, r;
        l.iov_base = d;
        l.iov_len = len < SHM_CMA_IO ? len : SHM_CMA_IO;
        r.iov_base = (void *)(uintptr_t)src;
        r.iov_len = l.iov_len;
        ssize_t k = process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return k < 0 ? errno : EFAULT;
        d += k;
        src += (uint64_t)k;
        len -= (size_t)k;
        if (len > 0 && shm->progress)
            shm->progress(shm->progress_arg);
    }
    return 0;
#else
    (void)shm, (void)pid, (void)dst, (void)src, (void)len;
    return ENOSYS;
#endif
}

/* Publish my buffer [addr, addr + len) for step @s. Safe to overwrite: every
 * reader of an earlier single-copy step raised done before its owner returned. */
static void cma_publish(mxh_shm_t *shm, const void *addr, size_t len, uint64_t s)
{
    shm_ctrl_t *c = shm->peers[shm->rank].ctrl;
    atomic_store_explicit(&c->cma.addr, (uint64_t)(uintptr_t)addr, memory_order_relaxed);
    atomic_store_explicit(&c->cma.len, (uint64_t)len, memory_order_relaxed);
    flag_set(shm, F_CMA, s);
}

/* Read the @len bytes rank @p published for step @s into @dst. Returns 0 on
 * success (errors logged). */
static int cma_pull(mxh_shm_t *shm, int p, void *dst, size_t len, uint64_t s, const char *func)
{
    shm_ctrl_t *c = shm->peers[p].ctrl;
    wait_flag(shm, p, F_CMA, s);
    uint64_t addr = atomic_load_explicit(&c->cma.addr, memory_order_relaxed);
    uint64_t plen = atomic_load_explicit(&c->cma.len, memory_order_relaxed);
    if (plen != (uint64_t)len) {
        mxh_error("%s: rank %d published %llu bytes, %zu expected (counts differ between ranks?)",
                  func, p, (unsigned long long)plen, len);
        return -1;
    }
    int err = cma_copy(shm, shm->peers[p].pid, dst, addr, len);
    if (err) {
        mxh_error("%s: process_vm_readv of %zu bytes from rank %d (pid %ld) failed: %s", func,
                  len, p, shm->peers[p].pid, strerror(err));
        return -1;
    }
    return 0;
}

/* At create: every rank publishes a cookie (pid, address, value) and reads
 * every peer's with process_vm_readv. 1 if all reads returned the values. The
 * cookies must stay valid until every rank has probed (the caller's barrier). */
static int cma_probe(mxh_shm_t *shm)
{
#if SHM_HAVE_CMA
    for (int i = 1; i < shm->size; i++) {
        int p = (shm->rank + i) % shm->size;
        shm_ctrl_t *c = shm->peers[p].ctrl;
        uint64_t want = atomic_load_explicit(&c->cma.len, memory_order_acquire), got = ~want;
        shm->peers[p].pid = (long)atomic_load_explicit(&c->cma.pid, memory_order_relaxed);
        int err = cma_copy(shm, shm->peers[p].pid, &got, atomic_load(&c->cma.addr), sizeof(got));
        if (err || got != want) {
            mxh_debug("shm: process_vm_readv from rank %d (pid %ld) %s: single copy disabled", p,
                      shm->peers[p].pid, err ? strerror(err) : "read a wrong value");
            return 0;
        }
    }
    return 1;
#else
    (void)shm;
    return 0;
#endif
}

static unsigned long long env_bytes(const char *name, unsigned long long def)
{
    const char *v = getenv(name);
    if (v && *v) {
        char *end;
        unsigned long long x = strtoull(v, &end, 10);
        if (*end == '\0')
            return x;
        mxh_warn("%s=%s ignored (a number of bytes expected)", name, v);
    }
    return def;
}

/* This rank's vote: MXH_SHM_CMA=0 forbids single copy (for tests and
 * diagnosis); MXH_SHM_CMA_MIN / MXH_SHM_CMA_MAX=bytes set the range (the
 * narrowest over the ranks is used). */
static void cma_env(int *allowed, unsigned long long *min, unsigned long long *max)
{
    const char *v = getenv("MXH_SHM_CMA");
    *allowed = !(v && v[0] == '0' && v[1] == '\0');
    *min = env_bytes("MXH_SHM_CMA_MIN", SHM_CMA_MIN);
    *max = env_bytes("MXH_SHM_CMA_MAX", SHM_CMA_MAX);
}

/* ------------------------------------------------------------ create/destroy */

/* The segment: POSIX shared memory created (and space reserved with
 * posix_fallocate, so a full /dev/shm fails here instead of SIGBUS later) by
 * rank 0, opened and mapped by all, unlinked as soon as everyone mapped it (no
 * name survives a crash after that point). Every failure is agreed. */
static mxh_status_t map_segment(mxh_shm_t *shm, MPI_Comm comm, int rank)
{
    static unsigned serial;
    char name[64] = "";
    int fd = -1, err = 0, anyerr = 0;

    if (rank == 0) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        snprintf(name, sizeof(name), "/mxh-shm-%ld-%u-%lx", (long)getpid(), serial++,
                 (unsigned long)t.tv_nsec);
        fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0) {
            err = errno;
        } else if ((err = posix_fallocate(fd, 0, (off_t)shm->map_bytes)) != 0) {
            close(fd);
            fd = -1;
            shm_unlink(name);
        }
        if (err)
            mxh_error("mxh_shm_create: cannot create %zu bytes of shared memory %s: %s",
                      shm->map_bytes, name, strerror(err));
        if (err)
            name[0] = '\0';
    }
    if (MPI_Bcast(name, sizeof(name), MPI_CHAR, 0, comm) != MPI_SUCCESS) {
        mxh_error("mxh_shm_create: MPI_Bcast failed");
        return MXH_ERR_MPI;
    }
    if (name[0] == '\0')
        return MXH_ERR_NO_MEMORY; /* rank 0 logged why */
    if (rank != 0) {
        fd = shm_open(name, O_RDWR, 0600);
        if (fd < 0)
            err = errno;
    }
    if (fd >= 0) {
        shm->map = mmap(NULL, shm->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (shm->map == MAP_FAILED) {
            err = errno;
            shm->map = NULL;
        }
        close(fd);
    }
    if (err)
        mxh_error("mxh_shm_create: cannot map shared memory %s: %s", name, strerror(err));
    /* everyone has mapped it (or failed): the name can go */
    MPI_Allreduce(&err, &anyerr, 1, MPI_INT, MPI_MAX, comm);
    if (rank == 0)
        shm_unlink(name);
    if (anyerr) {
        if (shm->map != NULL)
            munmap(shm->map, shm->map_bytes);
        shm->map = NULL;
        return MXH_ERR_NO_MEMORY;
    }
    return MXH_OK;
}

/* The size of my shared-memory group inside @comm (0 when it cannot be split). */
static int shm_node_size(MPI_Comm comm)
{
    MPI_Comm node = MPI_COMM_NULL;
    int node_size = 0;
    int rc = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);

    if (rc == MPI_SUCCESS && node != MPI_COMM_NULL)
        MPI_Comm_size(node, &node_size);
    if (node != MPI_COMM_NULL)
        MPI_Comm_free(&node);
    return node_size;
}

/* Agrees over @comm (MAX) whether all @size ranks share memory, whether every rank has
 * its @shm (NULL: out of memory), the chunk and whether the machine is oversubscribed;
 * the agreed values go to @all. */
static mxh_status_t shm_agree_setup(MPI_Comm comm, const mxh_shm_t *shm, int size,
                                    size_t chunk_bytes, unsigned long long all[4])
{
    unsigned long long mine[4];
    int node_size = shm_node_size(comm), rc;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

    mine[0] = node_size != size;
    mine[1] = shm == NULL;
    mine[2] = chunk_bytes ? chunk_bytes : SHM_DEFAULT_CHUNK;
    /* oversubscribed: more ranks on this machine than CPUs, counting the whole job's
     * ranks here when the launcher says (Hydra: MPI_LOCALNRANKS), not only ours */
    long local_job = 0;
    const char *lnr = getenv("MPI_LOCALNRANKS");
    if (lnr != NULL)
        local_job = strtol(lnr, NULL, 10);
    mine[3] = ncpu > 0 && (node_size > ncpu || local_job > ncpu);
    rc = MPI_Allreduce(mine, all, 4, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
    if (rc != MPI_SUCCESS) {
        mxh_error("mxh_shm_create: MPI_Allreduce failed (%d)", rc);
        return MXH_ERR_MPI;
    }
    if (all[0]) {
        mxh_debug("mxh_shm_create: the %d ranks of the communicator do not all share memory "
                  "(my shared-memory group: %d)", size, node_size);
        return MXH_ERR_UNSUPPORTED;
    }
    if (all[1]) {
        mxh_error("mxh_shm_create: out of memory (on %s rank)", mine[1] ? "this" : "another");
        return MXH_ERR_NO_MEMORY;
    }
    return MXH_OK;
}

/* The parameters of @shm from the agreed values @all of shm_agree_setup. */
static void shm_set_params(mxh_shm_t *shm, int rank, int size, const unsigned long long all[4])
{
    shm->rank = rank;
    shm->size = size;
    shm->step  = 0;
    shm->xstep = 0;
    shm->oversub = all[3] != 0;
    {
        /* diagnosis: MXH_SHM_SPIN_NS=ns before sleeping, MXH_SHM_WAIT_STATS=1 */
        const char *e = getenv("MXH_SHM_SPIN_NS");
        shm->spin_ns = e && *e ? atol(e) : SHM_SPIN_NS;
        e = getenv("MXH_SHM_WAIT_STATS");
        shm->stats = e && e[0] == '1';
    }
    shm->slot = all[2] < SHM_MAX_CHUNK ? (size_t)all[2] : SHM_MAX_CHUNK;
    shm->slot = round_up(shm->slot, SHM_UNIT);
    if (shm->slot < (size_t)SHM_UNIT * (size_t)size)
        shm->slot = (size_t)SHM_UNIT * (size_t)size;
    /* one phase: every rank reduces all n inputs (n times the work of the chunked
     * protocol, one synchronisation instead of two); measured crossover on 2
     * ranks between 2 and 8 KiB */
    shm->small_max = SHM_SMALL_TOTAL / (size_t)size;
    if (shm->small_max < 512)
        shm->small_max = 512;
    if (shm->small_max > shm->slot)
        shm->small_max = shm->slot;
}

/* Maps the segment (every rank's part: control page, then 4 slots, page aligned),
 * initialises (and first-touches) my part and makes it visible to all. The cma line
 * carries the single-copy probe's @cookie, which must live until shm_agree_cma is done. */
static mxh_status_t shm_map(mxh_shm_t *shm, MPI_Comm comm, volatile uint64_t *cookie)
{
    int rank = shm->rank, size = shm->size;
    size_t stride = round_up(shm->slot, SHM_PAGE);
    size_t ctrl_bytes = round_up(sizeof(shm_ctrl_t), SHM_PAGE);
    size_t seg = ctrl_bytes + 4 * stride;
    mxh_status_t st;

    shm->map_bytes = seg * (size_t)size;
    st = map_segment(shm, comm, rank);
    if (st != MXH_OK)
        return st;
    for (int p = 0; p < size; p++) {
        char *pb = (char *)shm->map + (size_t)p * seg;
        shm->peers[p].ctrl = (shm_ctrl_t *)pb;
        for (int b = 0; b < 2; b++) {
            shm->peers[p].in[b] = pb + ctrl_bytes + (size_t)b * stride;
            shm->peers[p].res[b] = pb + ctrl_bytes + (size_t)(2 + b) * stride;
        }
    }
    char *base = (char *)shm->map + (size_t)rank * seg;
    *cookie = ((uint64_t)getpid() << 24) ^ ((uint64_t)rank << 4) ^ (uint64_t)(uintptr_t)shm ^
              0x5eedc0de5eedc0deULL;
    shm_ctrl_t *ctrl = shm->peers[rank].ctrl;
    memset(base + ctrl_bytes, 0, 4 * stride);
    for (int f = 0; f < F_COUNT; f++)
        atomic_init(&ctrl->f[f].v, 0);
    atomic_init(&ctrl->cma.pid, (uint64_t)getpid());
    atomic_init(&ctrl->cma.addr, (uint64_t)(uintptr_t)cookie);
    atomic_init(&ctrl->cma.len, *cookie);
    atomic_init(&ctrl->sleepers.n, 0);
    shm->peers[rank].pid = (long)getpid();
    atomic_thread_fence(memory_order_seq_cst);
    MPI_Barrier(comm);
    return MXH_OK;
}

/* Single copy: probed between every pair, agreed (everyone or nobody) with its bounds;
 * the allreduce also keeps every cookie alive until all ranks have read. */
static mxh_status_t shm_agree_cma(mxh_shm_t *shm, MPI_Comm comm)
{
    int allowed, rc;
    unsigned long long cmin, cmax, mine[3], all[3];

    cma_env(&allowed, &cmin, &cmax);
    mine[0] = shm->size < 2 || !allowed || !cma_probe(shm);
    mine[1] = cmin;
    mine[2] = ~cmax; /* MAX of the complement: the smallest maximum */
    rc = MPI_Allreduce(mine, all, 3, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
    if (rc != MPI_SUCCESS) {
        mxh_error("mxh_shm_create: MPI_Allreduce failed (%d)", rc);
        return MXH_ERR_MPI;
    }
    shm->cma = !all[0];
    shm->cma_min = all[1] < (unsigned long long)SIZE_MAX ? (size_t)all[1] : SIZE_MAX;
    shm->cma_max = ~all[2] < (unsigned long long)SIZE_MAX ? (size_t)~all[2] : SIZE_MAX;
    return MXH_OK;
}

mxh_status_t mxh_shm_create(MPI_Comm comm, size_t chunk_bytes, mxh_shm_t **shm_p)
{
    mxh_status_t st = MXH_OK;
    mxh_shm_t *shm = NULL;
    int rank, size;
    unsigned long long all[4];
    volatile uint64_t cookie; /* read by the peers' single-copy probes */

    if (shm_p == NULL || comm == MPI_COMM_NULL) {
        mxh_error("mxh_shm_create: invalid argument");
        return MXH_ERR_INVALID_PARAM;
    }
    *shm_p = NULL;
#ifdef MXH_SIMGRID
    /* SimGrid SMPI: ranks are simulated actors scheduled cooperatively, so the
     * spin-waits on shared flags below would never let a peer run. Every rank
     * returns here, without communicating: the node steps use MPI instead. */
    (void)chunk_bytes;
    mxh_debug("mxh_shm_create: shared-memory collectives disabled under SimGrid SMPI");
    return MXH_ERR_UNSUPPORTED;
#endif
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);

    shm = calloc(1, sizeof(*shm));
    if (shm != NULL) {
        shm->peers = calloc((size_t)size, sizeof(*shm->peers));
        if (shm->peers == NULL) {
            free(shm);
            shm = NULL;
        }
    }
    if ((st = shm_agree_setup(comm, shm, size, chunk_bytes, all)) != MXH_OK)
        goto err_free;
    shm_set_params(shm, rank, size, all);
    if ((st = shm_map(shm, comm, &cookie)) != MXH_OK)
        goto err_free;
    if ((st = shm_agree_cma(shm, comm)) != MXH_OK)
        goto err_unmap;

    mxh_debug("shm: %d ranks, slot %zu B, one-phase up to %zu B, %s, single copy %s [%zu B, "
              "%zu B)", size, shm->slot, shm->small_max,
              shm->oversub ? "oversubscribed" : "not oversubscribed", shm->cma ? "on" : "off",
              shm->cma_min, shm->cma_max);
    *shm_p = shm;
    return MXH_OK;

err_unmap:
    munmap(shm->map, shm->map_bytes);
err_free:
    if (shm != NULL) {
        free(shm->peers);
        free(shm);
    }
    return st;
}

void mxh_shm_destroy(mxh_shm_t *shm)
{
    if (shm == NULL)
        return;
    if (shm->stats)
        fprintf(stderr, "mxh shm rank %d/%d: %llu slow waits, %.3f ms, %llu over 1 ms, %llu sleeps\n",
                shm->rank, shm->size, shm->nwait, shm->wait_ns / 1e6, shm->nlong, shm->nsleep);
    /* a barrier on the flags: nobody still reads a peer's slot of an earlier call */
    if (shm->size > 1) {
        uint64_t s = ++shm->step;
        flag_set(shm, F_READY, s);
        wait_all(shm, F_READY, s);
    }
    munmap(shm->map, shm->map_bytes);
    free(shm->peers);
    free(shm);
}

void mxh_shm_set_progress(mxh_shm_t *shm, void (*fn)(void *), void *arg)
{
    if (shm == NULL)
        return;
    shm->progress = fn;
    shm->progress_arg = arg;
}

size_t mxh_shm_slot_bytes(const mxh_shm_t *shm) { return shm ? shm->slot : 0; }
size_t mxh_shm_get_small_max(const mxh_shm_t *shm) { return shm ? shm->small_max : 0; }

void mxh_shm_set_small_max(mxh_shm_t *shm, size_t bytes)
{
    if (shm != NULL)
        shm->small_max = bytes < shm->slot ? bytes : shm->slot;
}

int mxh_shm_cma_available(const mxh_shm_t *shm) { return shm ? shm->cma : 0; }
size_t mxh_shm_get_cma_min(const mxh_shm_t *shm) { return shm ? shm->cma_min : SIZE_MAX; }

size_t mxh_shm_get_cma_max(const mxh_shm_t *shm) { return shm ? shm->cma_max : 0; }

void mxh_shm_set_cma_min(mxh_shm_t *shm, size_t bytes)
{
    if (shm != NULL)
        shm->cma_min = bytes;
}

void mxh_shm_set_cma_max(mxh_shm_t *shm, size_t bytes)
{
    if (shm != NULL)
        shm->cma_max = bytes;
}

/* single copy for a transfer of @bytes (the same decision on every rank) */
static inline int use_cma(const mxh_shm_t *shm, size_t bytes)
{
    return shm->cma && bytes >= shm->cma_min && bytes < shm->cma_max && bytes > 0;
}

/* ------------------------------------------------------------ helpers */

static int check_args(const mxh_shm_t *shm, size_t tsize, const char *func)
{
    if (shm == NULL || tsize == 0 || tsize > SHM_MAX_TSIZE) {
        mxh_error("%s: invalid argument (shm %p, type size %zu)", func, (const void *)shm, tsize);
        return 0;
    }
    return 1;
}

static mxh_status_t reduce_status(int mpi_failed, const char *func)
{
    if (!mpi_failed)
        return MXH_OK;
    mxh_error("%s: MPI_Reduce_local failed", func);
    return MXH_ERR_MPI;
}

/* Sub-chunk of rank @r when @count elements are split among @n ranks in units
 * of 64 bytes (the last rank takes the remainder). */
static void sub_chunk(size_t count, size_t tsize, int n, int r, size_t *lo, size_t *len)
{
    size_t unit = SHM_UNIT / tsize ? SHM_UNIT / tsize : 1;
    size_t units = (count + unit - 1) / unit;
    size_t a = units * (size_t)r / (size_t)n * unit, b = units * (size_t)(r + 1) / (size_t)n * unit;
    if (a > count)
        a = count;
    if (b > count)
        b = count;
    *lo = a;
    *len = b - a;
}

/* One phase: every rank (@root < 0) or only @root reduces all inputs into out. */
/* dst = in_0 op in_1 op ... op in_{n-1} (rank order, so every rank computes the
 * same bits): @len elements at element @off of every peer's in slot of step @s,
 * except mine, read from @mysrc. Returns nonzero when a reduction failed. */
static int reduce_in_rank_order(mxh_shm_t *shm, uint64_t s, size_t off, const char *mysrc,
                                char *dst, size_t len, MPI_Datatype dt, size_t tsize, MPI_Op op)
{
    int failed = 0;

    for (int p = 0; p < shm->size; p++) {
        const char *src = p == shm->rank ? mysrc : shm->peers[p].in[s & 1] + off * tsize;
        wait_flag(shm, p, F_READY, s);
        if (len == 0)
            continue;
        if (p == 0)
            memcpy(dst, src, len * tsize);
        else
            failed |= shm_reduce_local(src, dst, len, dt, op) != MPI_SUCCESS;
    }
    return failed;
}

static mxh_status_t reduce_small(mxh_shm_t *shm, const void *in, void *out, size_t count,
                                 MPI_Datatype dt, size_t tsize, MPI_Op op, int root,
                                 const char *func)
{
    size_t bytes = count * tsize;
    uint64_t s = ++shm->step;
    int failed = 0;

    slot_free(shm, s);
    memcpy(my_in(shm, s), in, bytes);
    flag_set(shm, F_READY, s);
    if (root < 0 || root == shm->rank)
        failed = reduce_in_rank_order(shm, s, 0, my_in(shm, s), out, count, dt, tsize, op);
    flag_set(shm, F_DONE, s);
    return reduce_status(failed, func);
}

/* Chunked allreduce/reduce: chunk of @ck elements into my in slot, except my
 * own sub-chunk (only I reduce it, straight from the caller's buffer). */
static void ar_copy_in(mxh_shm_t *shm, const char *src, size_t ck, size_t tsize, uint64_t s)
{
    char *dst = my_in(shm, s);
    size_t lo, len;

    sub_chunk(ck, tsize, shm->size, shm->rank, &lo, &len);
    slot_free(shm, s);
    memcpy(dst, src, lo * tsize);
    memcpy(dst + (lo + len) * tsize, src + (lo + len) * tsize, (ck - lo - len) * tsize);
    flag_set(shm, F_READY, s);
}

/* Chunked: per chunk, rank r reduces sub-chunk r into its res slot; then all
 * ranks (@root < 0) or the root copy the sub-chunks out. */
static mxh_status_t reduce_chunked(mxh_shm_t *shm, const void *in, void *out, size_t count,
                                   MPI_Datatype dt, size_t tsize, MPI_Op op, int root,
                                   const char *func)
{
    const int n = shm->size, me = shm->rank;
    const size_t C = shm->slot / tsize;
    const size_t nchunks = (count + C - 1) / C;
    const uint64_t base = shm->step;
    const int gather = root < 0 || root == me;
    int failed = 0;

    shm->step += nchunks;
    /* copy-in of chunk 0 */
    ar_copy_in(shm, (const char *)in, count < C ? count : C, tsize, base + 1);

    for (size_t k = 0; k < nchunks; k++) {
        const uint64_t s = base + 1 + k;
        const int b = (int)(s & 1);
        const size_t off = k * C, ck = count - off < C ? count - off : C;
        size_t lo, len;

        /* reduce my sub-chunk of all inputs, in rank order, into my res slot */
        sub_chunk(ck, tsize, n, me, &lo, &len);
        char *res = shm->peers[me].res[b];
        /* my own sub-chunk was not copied in: read it from in (out, even when it
         * is in, is written only after this) */
        const char *mysrc = (const char *)in + (off + lo) * tsize;
        failed |= reduce_in_rank_order(shm, s, lo, mysrc, res, len, dt, tsize, op);
        flag_set(shm, F_RES, s);

        /* copy-in of chunk k + 1 while the peers finish chunk k */
        if (k + 1 < nchunks) {
            const size_t noff = off + C, nck = count - noff < C ? count - noff : C;
            ar_copy_in(shm, (const char *)in + noff * tsize, nck, tsize, s + 1);
        }

        if (gather) {
            for (int i = 0; i < n; i++) {
                int p = (me + i) % n;
                sub_chunk(ck, tsize, n, p, &lo, &len);
                if (p != me)
                    wait_flag(shm, p, F_RES, s);
                if (len)
                    memcpy((char *)out + (off + lo) * tsize, shm->peers[p].res[b], len * tsize);
            }
        }
        flag_set(shm, F_DONE, s);
    }
    return reduce_status(failed, func);
}

/* ------------------------------------------------------------ collectives */

/* Reduce to @root or, not @rooted, allreduce (@root -1). */
static mxh_status_t reduce_to(mxh_shm_t *shm, const void *in, void *out, size_t count,
                              MPI_Datatype dt, size_t tsize, MPI_Op op, int rooted, int root,
                              const char *func)
{
    if (!check_args(shm, tsize, func))
        return MXH_ERR_INVALID_PARAM;
    if (rooted && (root < 0 || root >= shm->size)) {
        mxh_error("%s: root %d out of range (size %d)", func, root, shm->size);
        return MXH_ERR_INVALID_PARAM;
    }
    if (count == 0)
        return MXH_OK;
    if (shm->size == 1) {
        if (in != out)
            memmove(out, in, count * tsize);
        return MXH_OK;
    }
    if (count * tsize <= shm->small_max)
        return reduce_small(shm, in, out, count, dt, tsize, op, root, func);
    return reduce_chunked(shm, in, out, count, dt, tsize, op, root, func);
}

mxh_status_t mxh_shm_allreduce(mxh_shm_t *shm, const void *in, void *out, size_t count,
                               MPI_Datatype dt, size_t tsize, MPI_Op op)
{
    return reduce_to(shm, in, out, count, dt, tsize, op, 0, -1, "mxh_shm_allreduce");
}

mxh_status_t mxh_shm_reduce(mxh_shm_t *shm, const void *in, void *out, size_t count,
                            MPI_Datatype dt, size_t tsize, MPI_Op op, int root)
{
    return reduce_to(shm, in, out, count, dt, tsize, op, 1, root, "mxh_shm_reduce");
}

/* Slice @j (of @ns) of a part of @c elements. */
static inline void slice(size_t c, size_t j, size_t ns, size_t *lo, size_t *len)
{
    size_t a = c * j / ns, b = c * (j + 1) / ns;
    *lo = a;
    *len = b - a;
}

/* check_args, and per-rank @counts and @displs given and not negative; their total and
 * largest count into @total_p and @max_p. Returns 0 (logged) when invalid. */
static int check_vargs(const mxh_shm_t *shm, size_t tsize, const int *counts, const int *displs,
                       const char *func, size_t *total_p, size_t *max_p)
{
    size_t total = 0, maxc = 0;

    if (!check_args(shm, tsize, func))
        return 0;
    if (counts == NULL || displs == NULL) {
        mxh_error("%s: counts/displs missing", func);
        return 0;
    }
    for (int q = 0; q < shm->size; q++) {
        if (counts[q] < 0 || displs[q] < 0) {
            mxh_error("%s: negative count or displacement for rank %d", func, q);
            return 0;
        }
        total += (size_t)counts[q];
        if ((size_t)counts[q] > maxc)
            maxc = (size_t)counts[q];
    }
    *total_p = total;
    *max_p   = maxc;
    return 1;
}

/* reduce_scatter: copy slice j of every part into my in slot, in rank order */
static void rs_copy_in(mxh_shm_t *shm, const char *in, const int *counts, const int *displs,
                       size_t tsize, size_t j, size_t ns, uint64_t s, int skip_me)
{
    char *dst = my_in(shm, s);
    size_t lo, len;

    slot_free(shm, s);
    for (int q = 0; q < shm->size; q++) {
        slice((size_t)counts[q], j, ns, &lo, &len);
        if (len && !(skip_me && q == shm->rank))
            memcpy(dst, in + ((size_t)displs[q] + lo) * tsize, len * tsize);
        dst += len * tsize;
    }
    flag_set(shm, F_READY, s);
}

mxh_status_t mxh_shm_reduce_scatter(mxh_shm_t *shm, const void *in, void *out, const int *counts,
                                    const int *displs, MPI_Datatype dt, size_t tsize, MPI_Op op)
{
    static const char func[] = "mxh_shm_reduce_scatter";
    size_t total, maxc;
    int failed = 0;

    if (!check_vargs(shm, tsize, counts, displs, func, &total, &maxc))
        return MXH_ERR_INVALID_PARAM;
    if (total == 0)
        return MXH_OK;
    const int n = shm->size, me = shm->rank;
    if (n == 1) {
        const char *src = (const char *)in + (size_t)displs[0] * tsize;
        if (src != out)
            memmove(out, src, (size_t)counts[0] * tsize);
        return MXH_OK;
    }

    /* ns steps; slice j of part q: [cq*j/ns, cq*(j+1)/ns); the slices of one
     * step fit a slot: sum <= total/ns + n <= C since C >= 2n. */
    const size_t C = shm->slot / tsize;
    const size_t ns = (total + (C - (size_t)n) - 1) / (C - (size_t)n);
    const uint64_t base = shm->step;
    const size_t cme = (size_t)counts[me];

    shm->step += ns;
    /* my own part is reduced straight from in, unless out overlaps it (in place) */
    const char *mypart = (const char *)in + (size_t)displs[me] * tsize;
    const int skip_me = (const char *)out + cme * tsize <= mypart ||
                        (const char *)out >= mypart + cme * tsize;
    rs_copy_in(shm, in, counts, displs, tsize, 0, ns, base + 1, skip_me);
    for (size_t j = 0; j < ns; j++) {
        const uint64_t s = base + 1 + j;
        size_t myoff = 0, lo, len;

        if (j + 1 < ns)
            rs_copy_in(shm, in, counts, displs, tsize, j + 1, ns, s + 1, skip_me);
        for (int q = 0; q < me; q++) {
            slice((size_t)counts[q], j, ns, &lo, &len);
            myoff += len;
        }
        slice(cme, j, ns, &lo, &len);
        char *dst = (char *)out + lo * tsize;
        const char *mysrc = skip_me ? mypart + lo * tsize : my_in(shm, s) + myoff * tsize;
        failed |= reduce_in_rank_order(shm, s, myoff, mysrc, dst, len, dt, tsize, op);
        flag_set(shm, F_DONE, s);
    }
    return reduce_status(failed, func);
}

/* allgather: elements [jC, (j+1)C) of my part into my in slot */
static void ag_copy_in(mxh_shm_t *shm, const char *part, size_t c, size_t C, size_t tsize,
                       size_t j, uint64_t s)
{
    size_t lo = j * C, len = lo < c ? (c - lo < C ? c - lo : C) : 0;

    slot_free(shm, s);
    if (len)
        memcpy(my_in(shm, s), part + lo * tsize, len * tsize);
    flag_set(shm, F_READY, s);
}

mxh_status_t mxh_shm_exchange(mxh_shm_t *shm, const void *mine, size_t len, void *all)
{
    shm_ctrl_t *c = shm->peers[shm->rank].ctrl;
    uint64_t k;

    if (len > MXH_SHM_XCHG_MAX) {
        mxh_error("shm: exchange of %zu bytes (at most %d)", len, MXH_SHM_XCHG_MAX);
        return MXH_ERR_INVALID_PARAM;
    }
    k = ++shm->xstep;
    /* xchg[k % 2] held round k - 2: every peer read it before it raised round
     * k - 1, which this rank's round k - 1 waited for */
    memcpy(c->xchg[k % 2], mine, len);
    flag_set(shm, F_XCHG, k);
    memcpy((char *)all + (size_t)shm->rank * len, mine, len);
    for (int i = 1; i < shm->size; i++) {
        int p = (shm->rank + i) % shm->size;
        wait_flag(shm, p, F_XCHG, k);
        memcpy((char *)all + (size_t)p * len, shm->peers[p].ctrl->xchg[k % 2], len);
    }
    return MXH_OK;
}

mxh_status_t mxh_shm_allgather(mxh_shm_t *shm, const void *mine, void *out, const int *counts,
                               const int *displs, MPI_Datatype dt, size_t tsize)
{
    static const char func[] = "mxh_shm_allgather";
    size_t total, maxc;

    (void)dt;
    if (!check_vargs(shm, tsize, counts, displs, func, &total, &maxc))
        return MXH_ERR_INVALID_PARAM;
    const int n = shm->size, me = shm->rank;
    const size_t cme = (size_t)counts[me];
    char *myout = (char *)out + (size_t)displs[me] * tsize;

    if (n > 1 && use_cma(shm, maxc * tsize)) {
        /* single copy: publish my part (the input: read-only during the call),
         * copy it into place while the peers read it, read theirs, and leave
         * once nobody reads mine any more */
        const uint64_t s = ++shm->step;
        int failed = 0;
        cma_publish(shm, mine, cme * tsize, s);
        if (cme && (const char *)mine != myout)
            memmove(myout, mine, cme * tsize);
        for (int i = 1; i < n; i++) {
            int p = (me + i) % n;
            size_t len = (size_t)counts[p] * tsize;
            if (len)
                failed |= cma_pull(shm, p, (char *)out + (size_t)displs[p] * tsize, len, s,
                                   func) != 0;
        }
        flag_set(shm, F_DONE, s);
        wait_all(shm, F_DONE, s);
        return failed ? MXH_ERR_UNSUPPORTED : MXH_OK;
    }
    if (cme && (const char *)mine != myout)
        memmove(myout, mine, cme * tsize);
    if (maxc == 0 || n == 1)
        return MXH_OK;

    /* step j: elements [jC, (j+1)C) of every part */
    const size_t C = shm->slot / tsize;
    const size_t ns = (maxc + C - 1) / C;
    const uint64_t base = shm->step;

    shm->step += ns;
    ag_copy_in(shm, myout, cme, C, tsize, 0, base + 1);
    for (size_t j = 0; j < ns; j++) {
        const uint64_t s = base + 1 + j;
        if (j + 1 < ns)
            ag_copy_in(shm, myout, cme, C, tsize, j + 1, s + 1);
        for (int i = 1; i < n; i++) {
            int p = (me + i) % n;
            size_t cp = (size_t)counts[p], lo = j * C;
            size_t len = lo < cp ? (cp - lo < C ? cp - lo : C) : 0;
            if (len == 0)
                continue;
            wait_flag(shm, p, F_READY, s);
            memcpy((char *)out + ((size_t)displs[p] + lo) * tsize, shm->peers[p].in[s & 1],
                   len * tsize);
        }
        flag_set(shm, F_DONE, s);
    }
    return MXH_OK;
}

mxh_status_t mxh_shm_bcast(mxh_shm_t *shm, void *buf, size_t count, size_t tsize, int root)
{
    static const char func[] = "mxh_shm_bcast";

    if (!check_args(shm, tsize, func))
        return MXH_ERR_INVALID_PARAM;
    if (root < 0 || root >= shm->size) {
        mxh_error("%s: root %d out of range (size %d)", func, root, shm->size);
        return MXH_ERR_INVALID_PARAM;
    }
    const size_t bytes = count * tsize;
    if (bytes == 0 || shm->size == 1)
        return MXH_OK;

    if (use_cma(shm, bytes)) {
        /* single copy: the root publishes buf and waits until every peer read it */
        const uint64_t s = ++shm->step;
        int failed = 0;
        if (shm->rank == root) {
            cma_publish(shm, buf, bytes, s);
            flag_set(shm, F_DONE, s);
            wait_all(shm, F_DONE, s);
        } else {
            failed = cma_pull(shm, root, buf, bytes, s, func) != 0;
            flag_set(shm, F_DONE, s);
        }
        return failed ? MXH_ERR_UNSUPPORTED : MXH_OK;
    }

    const size_t S = shm->slot, ns = (bytes + S - 1) / S;
    const uint64_t base = shm->step;

    shm->step += ns;
    for (size_t j = 0; j < ns; j++) {
        const uint64_t s = base + 1 + j;
        const size_t off = j * S, len = bytes - off < S ? bytes - off : S;
        if (shm->rank == root) {
            slot_free(shm, s);
            memcpy(my_in(shm, s), (char *)buf + off, len);
            flag_set(shm, F_READY, s);
        } else {
            wait_flag(shm, root, F_READY, s);
            memcpy((char *)buf + off, shm->peers[root].in[s & 1], len);
        }
        flag_set(shm, F_DONE, s);
    }
    return MXH_OK;
}
