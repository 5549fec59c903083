/* smpi_fold.so: LD_PRELOAD helper that lets SMPI's own collectives (the "mpi"
 * column of run_sim.py / whatif.py) run at 1024 simulated ranks and 256 MiB
 * messages on a 24 GiB machine.
 *
 * SMPI's collective algorithms allocate their temporary buffers with
 * `new unsigned char[size]` (smpi_get_tmp_sendbuffer/recvbuffer), one private
 * copy per simulated rank: 1024 ranks x 256 MiB does not fit, and every message
 * between private buffers is really copied. Here every operator new[] of at
 * least SMPI_FOLD_MIN bytes (default 1 MiB) made by a simulated rank is served by
 * smpi_shared_malloc() instead (what SMPI_SHARED_MALLOC does for the benchmark's
 * own buffers): all ranks map the same pages and SMPI skips copying payloads
 * between shared blocks. Contents become meaningless; simulated times do not
 * change (SMPI's timing never depends on data; checked: identical times with and
 * without, run_sim.py --check-fold). operator new[] is reached through the PLT of
 * libsimgrid, hence interposable.
 *
 * Local copies: simgrid::smpi::Datatype::copy (the sendbuf -> recvbuf copies of
 * SMPI's collectives, real memcpy, no simulated cost) of at least SMPI_FOLD_MIN
 * bytes are skipped: at that size every buffer of a non---check run is an SMPI
 * shared allocation (the benchmark's, the library's scratch in
 * MPIX_HIER_SIM_REDUCE=model mode, SMPI's folded temporaries), so there is
 * nothing to copy, and 1024 ranks x 256 MiB of memcpy per call would dominate the
 * wall time. SMPI_FOLD_COPY=1 keeps them.
 *
 * Results of plain MPI collectives are wrong under this preload: never use it
 * with mpix_bench --check (run_sim.py does not). Reductions are untouched: their
 * cost is the library's business (mpix_bench's mpi column reduces with the
 * library's costed op in MPIX_HIER_SIM_REDUCE=model mode).
 *
 * (It also carried a polling shim for MPI_Test/MPI_Testall, against SimGrid
 * 3.32's leak of tested completions, until the library's simulation build
 * stopped testing: src/sim/sim.h, mxh_testsome/mxh_testall.)
 *
 *   gcc -O2 -shared -fPIC -o smpi_fold.so smpi_fold.c -lsimgrid -ldl
 *   LD_PRELOAD=$PWD/smpi_fold.so smpirun ...                 (run_sim.py does this)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <simgrid/actor.h>
#include <smpi/mpi.h> /* smpi_shared_malloc/free, PMPI_* */

static size_t fold_min = (size_t)1 << 20;
static int keep_copies;
static int inited;

static void fold_init(void)
{
    const char *v;
    if (inited)
        return;
    inited = 1;
    if ((v = getenv("SMPI_FOLD_MIN")) && *v)
        fold_min = (size_t)strtoull(v, NULL, 10);
    if ((v = getenv("SMPI_FOLD_COPY")) && *v == '1')
        keep_copies = 1;
}

/* Open-addressing set of the folded pointers (operator delete[] must know). */
#define SET_BITS 16
#define SET_SIZE (1u << SET_BITS)
static void *folded[SET_SIZE];
static size_t nfolded;

static unsigned slot_of(const void *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
    return (unsigned)(h >> (64 - SET_BITS));
}

static int set_add(void *p)
{
    unsigned i = slot_of(p);
    if (nfolded >= SET_SIZE / 2)
        return 0;
    while (folded[i] != NULL && folded[i] != (void *)1)
        i = (i + 1) & (SET_SIZE - 1);
    folded[i] = p;
    nfolded++;
    return 1;
}

static int set_del(void *p)
{
    unsigned i = slot_of(p);
    while (folded[i] != NULL) {
        if (folded[i] == p) {
            folded[i] = (void *)1; /* tombstone */
            nfolded--;
            return 1;
        }
        i = (i + 1) & (SET_SIZE - 1);
    }
    return 0;
}

static void *(*real_new)(size_t);
static void (*real_delete)(void *);

static void *plain_new(size_t n)
{
    if (!real_new)
        real_new = (void *(*)(size_t))dlsym(RTLD_NEXT, "_Znam");
    return real_new(n);
}

static void plain_delete(void *p)
{
    if (!real_delete)
        real_delete = (void (*)(void *))dlsym(RTLD_NEXT, "_ZdaPv");
    real_delete(p);
}

/* operator new[](size_t), operator delete[](void*) and the sized variant */
void *_Znam(size_t n);
void _ZdaPv(void *p);
void _ZdaPvm(void *p, size_t n);

void *_Znam(size_t n)
{
    fold_init();
    if (n >= fold_min && sg_actor_self() != NULL) {
        void *p = smpi_shared_malloc(n, "smpi_fold", 0);
        if (p != NULL) {
            if (set_add(p))
                return p;
            smpi_shared_free(p);
        }
    }
    return plain_new(n);
}

void _ZdaPv(void *p)
{
    if (p == NULL)
        return;
    if (nfolded && set_del(p)) {
        smpi_shared_free(p);
        return;
    }
    plain_delete(p);
}

void _ZdaPvm(void *p, size_t n)
{
    (void)n;
    _ZdaPv(p);
}

/* static int simgrid::smpi::Datatype::copy(const void* sendbuf, int sendcount,
 *     MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype) */
int _ZN7simgrid4smpi8Datatype4copyEPKviPS1_PviS4_(const void *sbuf, int scount,
                                                  MPI_Datatype stype, void *rbuf, int rcount,
                                                  MPI_Datatype rtype);
int _ZN7simgrid4smpi8Datatype4copyEPKviPS1_PviS4_(const void *sbuf, int scount,
                                                  MPI_Datatype stype, void *rbuf, int rcount,
                                                  MPI_Datatype rtype)
{
    static int (*real_copy)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype);
    int ssz = 0;
    fold_init();
    if (!keep_copies && scount > 0 && PMPI_Type_size(stype, &ssz) == 0 &&
        (size_t)scount * (size_t)ssz >= fold_min)
        return 0; /* MPI_SUCCESS */
    if (!real_copy)
        real_copy = (int (*)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype))dlsym(
            RTLD_NEXT, "_ZN7simgrid4smpi8Datatype4copyEPKviPS1_PviS4_");
    return real_copy(sbuf, scount, stype, rbuf, rcount, rtype);
}
