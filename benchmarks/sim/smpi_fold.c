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
 *   gcc -O2 -shared -fPIC -o smpi_fold.so smpi_fold.c -lsimgrid -ldl
 *   LD_PRELOAD=$PWD/smpi_fold.so smpirun ...                 (run_sim.py does this)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- polling ----------------------------------------------------------------
 * SimGrid 3.32 keeps every communication that MPI_Test/MPI_Testall finds
 * complete in the issuing actor's activity list for good (ActivityImpl::test
 * finishes it without the simcall that would unlist it), and every later
 * activity completion of that actor walks the list: a rank that polls its
 * requests (mpix-hier's pipelined executors do) slows down quadratically with
 * the number of messages it has completed so far (at 1024 ranks one 16 MiB
 * allreduce took minutes, 60 % of it in that walk). Waits do not leak.
 *
 * With SMPI_FOLD_POLL=1 (run_sim.py's default) the program's MPI_Test and
 * MPI_Testall (interposed as PMPI_Test/PMPI_Testall, which libsimgrid's MPI_*
 * wrappers call through its PLT; the program itself is dlopen'ed with
 * RTLD_DEEPBIND and binds to libsimgrid) never test point-to-point requests
 * (those made by MPI_Isend/MPI_Irecv): they report "not all complete" until the
 * requests are MPI_REQUEST_NULL, and when a rank tests the same request array
 * again without any progress in between (one whole pass of its polling loop
 * found nothing to do), it waits (MPI_Waitany) for the first point-to-point
 * request of that pass to complete and marks it MPI_REQUEST_NULL in the
 * caller's array, as the caller's next test would have completed it (its status
 * is not kept). When only other requests (nonblocking collectives) are left in
 * a pass, it waits for the first of them (MPI_Wait). In a discrete-event
 * simulation nothing a polling rank can observe changes before one of its
 * requests completes, so this is the same loop without its idle spins and
 * without the leak; the simulated time of a failed test (smpi/test) is no
 * longer charged. Assumes (true of mpix-hier's executors): each pass tests all
 * outstanding requests, no decision depends on which of a pass's requests
 * completes first beyond what the next pass sees, statuses of completed
 * requests are not read, no persistent requests. run_sim.py --check-fold
 * compares simulated times with and without this shim. (The library's
 * simulation build never calls MPI_Testsome: its nonblocking polls are waits
 * already, mxh_sim_testsome in src/sim/sim.h.) */

#define POLL_MAXACT 65536 /* actor pids */
#define POLL_MAXSEEN 256  /* request arrays tested in one pass */
#define POLL_MAXREQ 4096  /* requests gathered for one wait */

typedef struct {
    MPI_Request *arr;
    int n;
    MPI_Request first;
} seen_t;

typedef struct {
    int nseen;
    seen_t seen[POLL_MAXSEEN];
} poll_state_t;

static poll_state_t **poll_states;
static int poll_mode = -1;

static poll_state_t *poll_me(void)
{
    long pid;
    if (poll_mode < 0) {
        const char *v = getenv("SMPI_FOLD_POLL");
        poll_mode = v != NULL && *v == '1';
        if (poll_mode) {
            poll_states = calloc(POLL_MAXACT, sizeof(*poll_states));
            if (poll_states == NULL)
                poll_mode = 0;
        }
    }
    if (!poll_mode || sg_actor_self() == NULL)
        return NULL;
    pid = (long)sg_actor_self_get_pid();
    if (pid < 0 || pid >= POLL_MAXACT)
        return NULL;
    if (poll_states[pid] == NULL)
        poll_states[pid] = calloc(1, sizeof(poll_state_t));
    return poll_states[pid];
}

/* Set of the point-to-point requests made by the program (open addressing). */
#define P2P_BITS 22
#define P2P_SIZE (1u << P2P_BITS)
#define P2P_TOMB ((MPI_Request)(uintptr_t)1)
static MPI_Request *p2p_tab;
static size_t p2p_used, p2p_tombs;

static unsigned p2p_slot(MPI_Request r)
{
    uint64_t h = (uint64_t)(uintptr_t)r * 0x9E3779B97F4A7C15ull;
    return (unsigned)(h >> (64 - P2P_BITS));
}

static int p2p_has(MPI_Request r)
{
    unsigned i;
    if (p2p_tab == NULL || r == MPI_REQUEST_NULL)
        return 0;
    for (i = p2p_slot(r); p2p_tab[i] != NULL; i = (i + 1) & (P2P_SIZE - 1))
        if (p2p_tab[i] == r)
            return 1;
    return 0;
}

static void p2p_del(MPI_Request r)
{
    unsigned i;
    if (p2p_tab == NULL || r == MPI_REQUEST_NULL)
        return;
    for (i = p2p_slot(r); p2p_tab[i] != NULL; i = (i + 1) & (P2P_SIZE - 1))
        if (p2p_tab[i] == r) {
            p2p_tab[i] = P2P_TOMB;
            p2p_used--;
            p2p_tombs++;
            return;
        }
}

static void p2p_add(MPI_Request r)
{
    unsigned i;
    if (r == MPI_REQUEST_NULL || p2p_has(r))
        return;
    if (p2p_tab == NULL && (p2p_tab = calloc(P2P_SIZE, sizeof(*p2p_tab))) == NULL)
        return;
    if (p2p_used + p2p_tombs > P2P_SIZE / 2) { /* rebuild without tombstones */
        MPI_Request *old = p2p_tab;
        if ((p2p_tab = calloc(P2P_SIZE, sizeof(*p2p_tab))) == NULL) {
            p2p_tab = old;
            return;
        }
        p2p_used = p2p_tombs = 0;
        for (unsigned k = 0; k < P2P_SIZE; k++)
            if (old[k] != NULL && old[k] != P2P_TOMB)
                p2p_add(old[k]);
        free(old);
        if (p2p_used + 1 > P2P_SIZE / 2)
            return; /* full: r stays unknown (treated as a collective's request) */
    }
    for (i = p2p_slot(r); p2p_tab[i] != NULL && p2p_tab[i] != P2P_TOMB;
         i = (i + 1) & (P2P_SIZE - 1))
        ;
    if (p2p_tab[i] == P2P_TOMB)
        p2p_tombs--;
    p2p_tab[i] = r;
    p2p_used++;
}

#define REAL(ret, name, args)                                                                      \
    static ret(*real_##name) args;                                                                 \
    if (real_##name == NULL)                                                                       \
        real_##name = (ret(*) args)dlsym(RTLD_NEXT, #name);

/* A whole pass found nothing to do: wait for the first completion. */
static void pass_done(poll_state_t *ps)
{
    MPI_Request tmp[POLL_MAXREQ];
    MPI_Request *where[POLL_MAXREQ];
    MPI_Request *other = NULL;
    int cnt = 0, idx = MPI_UNDEFINED;
    MPI_Status st;

    for (int i = 0; i < ps->nseen; i++) {
        seen_t *s = &ps->seen[i];
        if (s->arr[0] != s->first)
            continue; /* changed since recorded: not this pass's */
        for (int j = 0; j < s->n; j++) {
            MPI_Request r = s->arr[j];
            if (r == MPI_REQUEST_NULL)
                continue;
            if (p2p_has(r)) {
                if (cnt < POLL_MAXREQ) {
                    tmp[cnt]   = r;
                    where[cnt] = &s->arr[j];
                    cnt++;
                }
            } else if (other == NULL) {
                other = &s->arr[j];
            }
        }
    }
    ps->nseen = 0;
    if (cnt > 0) {
        REAL(int, PMPI_Waitany, (int, MPI_Request *, int *, MPI_Status *))
        if (real_PMPI_Waitany(cnt, tmp, &idx, &st) == MPI_SUCCESS && idx >= 0 && idx < cnt) {
            p2p_del(*where[idx]);
            *where[idx] = MPI_REQUEST_NULL;
        }
    } else if (other != NULL) {
        REAL(int, PMPI_Wait, (MPI_Request *, MPI_Status *))
        real_PMPI_Wait(other, &st);
    }
}

/* Test of arr[0..n) under SMPI_FOLD_POLL: 1 when every request is NULL. */
static int poll_test(poll_state_t *ps, MPI_Request *arr, int n)
{
    int active = 0;
    for (int i = 0; i < n; i++)
        active += arr[i] != MPI_REQUEST_NULL;
    if (active == 0) {
        ps->nseen = 0;
        return 1;
    }
    for (int i = 0; i < ps->nseen; i++)
        if (ps->seen[i].arr == arr) {
            pass_done(ps);
            for (int j = 0; j < n; j++)
                if (arr[j] != MPI_REQUEST_NULL)
                    return 0;
            return 1;
        }
    if (ps->nseen < POLL_MAXSEEN) {
        ps->seen[ps->nseen].arr   = arr;
        ps->seen[ps->nseen].n     = n;
        ps->seen[ps->nseen].first = arr[0];
        ps->nseen++;
    } else {
        pass_done(ps);
    }
    return 0;
}

static void empty_status(MPI_Status *st)
{
    if (st == MPI_STATUS_IGNORE)
        return;
    memset(st, 0, sizeof(*st));
    st->MPI_SOURCE = MPI_ANY_SOURCE;
    st->MPI_TAG    = MPI_ANY_TAG;
    st->MPI_ERROR  = MPI_SUCCESS;
}

int PMPI_Testall(int n, MPI_Request *arr, int *flag, MPI_Status *st)
{
    REAL(int, PMPI_Testall, (int, MPI_Request *, int *, MPI_Status *))
    poll_state_t *ps = poll_me();
    if (ps == NULL || n <= 0)
        return real_PMPI_Testall(n, arr, flag, st);
    *flag = poll_test(ps, arr, n);
    if (*flag && st != MPI_STATUSES_IGNORE)
        for (int i = 0; i < n; i++)
            empty_status(&st[i]);
    return MPI_SUCCESS;
}

int PMPI_Test(MPI_Request *req, int *flag, MPI_Status *st)
{
    REAL(int, PMPI_Test, (MPI_Request *, int *, MPI_Status *))
    poll_state_t *ps = poll_me();
    if (ps == NULL)
        return real_PMPI_Test(req, flag, st);
    *flag = poll_test(ps, req, 1);
    if (*flag)
        empty_status(st);
    return MPI_SUCCESS;
}

int PMPI_Isend(const void *buf, int count, MPI_Datatype dt, int dst, int tag, MPI_Comm comm,
               MPI_Request *req)
{
    REAL(int, PMPI_Isend, (const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *))
    int rc = real_PMPI_Isend(buf, count, dt, dst, tag, comm, req);
    poll_state_t *ps = poll_me();
    if (ps != NULL && rc == MPI_SUCCESS) {
        p2p_add(*req);
        ps->nseen = 0;
    }
    return rc;
}

int PMPI_Irecv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
               MPI_Request *req)
{
    REAL(int, PMPI_Irecv, (void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *))
    int rc = real_PMPI_Irecv(buf, count, dt, src, tag, comm, req);
    poll_state_t *ps = poll_me();
    if (ps != NULL && rc == MPI_SUCCESS) {
        p2p_add(*req);
        ps->nseen = 0;
    }
    return rc;
}

int PMPI_Waitall(int n, MPI_Request *arr, MPI_Status *st)
{
    REAL(int, PMPI_Waitall, (int, MPI_Request *, MPI_Status *))
    poll_state_t *ps = poll_me();
    if (ps != NULL) {
        for (int i = 0; i < n; i++)
            p2p_del(arr[i]);
        ps->nseen = 0;
    }
    return real_PMPI_Waitall(n, arr, st);
}

/* The program's own waits that complete some requests (mpix-hier's stream
 * executor blocks in MPI_Waitany when a pass found nothing to do): that is
 * progress, so the pass starts over (without this, the next test of a recorded
 * array would wait for yet another completion, and the rank would sleep past the
 * one it could act on). Completed requests leave the point-to-point set. */
#define WAIT_SAVE 4096
static void waited(poll_state_t *ps, const MPI_Request *before, MPI_Request *arr, int n)
{
    for (int i = 0; i < n && i < WAIT_SAVE; i++)
        if (before[i] != MPI_REQUEST_NULL && arr[i] == MPI_REQUEST_NULL)
            p2p_del(before[i]);
    ps->nseen = 0;
}

int PMPI_Waitsome(int n, MPI_Request *arr, int *outcount, int *idx, MPI_Status *st)
{
    REAL(int, PMPI_Waitsome, (int, MPI_Request *, int *, int *, MPI_Status *))
    MPI_Request before[WAIT_SAVE];
    poll_state_t *ps = poll_me();
    int rc;
    if (ps == NULL)
        return real_PMPI_Waitsome(n, arr, outcount, idx, st);
    for (int i = 0; i < n && i < WAIT_SAVE; i++)
        before[i] = arr[i];
    rc = real_PMPI_Waitsome(n, arr, outcount, idx, st);
    waited(ps, before, arr, n);
    return rc;
}

int PMPI_Waitany(int n, MPI_Request *arr, int *idx, MPI_Status *st)
{
    REAL(int, PMPI_Waitany, (int, MPI_Request *, int *, MPI_Status *))
    MPI_Request before[WAIT_SAVE];
    poll_state_t *ps = poll_me();
    int rc;
    if (ps == NULL)
        return real_PMPI_Waitany(n, arr, idx, st);
    for (int i = 0; i < n && i < WAIT_SAVE; i++)
        before[i] = arr[i];
    rc = real_PMPI_Waitany(n, arr, idx, st);
    waited(ps, before, arr, n);
    return rc;
}

int PMPI_Wait(MPI_Request *req, MPI_Status *st)
{
    REAL(int, PMPI_Wait, (MPI_Request *, MPI_Status *))
    poll_state_t *ps = poll_me();
    if (ps != NULL) {
        p2p_del(*req);
        ps->nseen = 0;
    }
    return real_PMPI_Wait(req, st);
}
