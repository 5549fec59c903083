/* libmpixhier_pmpi: the drop-in library. It defines the MPI collectives that
 * mpix-hier has (MPI_Allreduce, ..., and their I-forms) with MPICH's
 * prototypes, so that an unmodified MPI program run with
 * LD_PRELOAD=libmpixhier_pmpi.so (or linked with -lmpixhier_pmpi before
 * -lmpi) gets the MPIX_Hier_ collective of the same name. Collectives not
 * taken (policy MPIX_HIER_PMPI, see README "Drop-in library") go to PMPI_.
 *
 * Fortran: MPICH 4.0.2's Fortran bindings (mpif.h, use mpi, use mpi_f08)
 * call the C symbols MPI_Allreduce, ... through the dynamic linker (nm -D on
 * libmpichfort shows them undefined there, and no PMPI_ collective), after
 * turning MPI_IN_PLACE/MPI_BOTTOM and the handles into C's. The C wrappers
 * below therefore catch Fortran calls as well; no Fortran symbol is defined.
 *
 * Reentrancy. mpix-hier calls MPI collectives itself (its plain-MPI
 * fallback, the hierarchy build, the collectives on level communicators).
 * Those calls resolve to the wrappers here too, and must go to MPI: a
 * thread-local depth counts how deep this thread is inside the library, and
 * a wrapper called with depth > 0 forwards to PMPI_. The library runs code
 * that makes MPI calls from two kinds of roots, and each raises the depth:
 *   - its public functions: reached through the wrappers here, or called
 *     directly by a program that uses the MPIX_Hier_ API (the library's own
 *     tests): the communicating MPIX_Hier_ functions are interposed below;
 *   - the progress of its nonblocking collectives, which MPI runs inside
 *     MPI_Test/MPI_Wait (any variant, any language binding: MPICH's mpi_f08
 *     calls PMPI_Wait, which no wrapper sees) and MPI_Comm_free (queued
 *     collectives drained): the library raises the depth itself around its
 *     progress (src/util/pmpi_hook.c, through MPIX_Hier_pmpi_depth below).
 *
 * The library's functions are called through pointers found with dlsym:
 * calling them by name from here would reach the interposers again. */
#define _GNU_SOURCE
#include "config.h"

#include "mpix_hier.h"

#include <ctype.h>
#include <limits.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PUBLIC __attribute__((visibility("default")))

/* The collectives of the policy, in the order of MPIX_HIER_PMPI's names. */
#define COLLS(X)                                                                                  \
    X(allreduce) X(reduce_scatter_block) X(reduce_scatter) X(allgather) X(allgatherv)             \
    X(alltoall) X(alltoallv) X(bcast) X(reduce)

enum {
#define ENUM(c) C_##c,
    COLLS(ENUM)
#undef ENUM
    NCOLL
};

static const char *const coll_name[NCOLL] = {
#define NAME(c) #c,
    COLLS(NAME)
#undef NAME
};

/* The library's functions (found once, in init). */
static struct {
#define PTRS(c)                                                                                   \
    void (*c)(void);                                                                              \
    void (*i##c)(void);
    COLLS(PTRS)
#undef PTRS
    void (*allreduce_init)(void), (*reduce_scatter_block_init)(void), (*reduce_scatter_init)(void),
        (*allgather_init)(void), (*allgatherv_init)(void), (*alltoall_init)(void),
        (*alltoallv_init)(void), (*bcast_init)(void), (*reduce_init)(void);
#define REQ_FUNCS(X)                                                                              \
    X(MPI_Start) X(MPI_Startall) X(MPI_Wait) X(MPI_Waitall) X(MPI_Waitany) X(MPI_Waitsome)       \
    X(MPI_Test) X(MPI_Testall) X(MPI_Testany) X(MPI_Testsome) X(MPI_Request_get_status)          \
    X(MPI_Request_free)
#define REQ_PTR(f) void (*f)(void);
    REQ_FUNCS(REQ_PTR)
#undef REQ_PTR
    void (*comm_init)(void);
    void (*comm_get_num_levels)(void);
    void (*comm_get_level)(void);
    void (*comm_describe)(void);
    void (*pmpi_fallbacks)(void);
} real;

static _Thread_local int depth; /* > 0: inside the library on this thread */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static unsigned       take_mask;          /* bit per collective: taken */
static unsigned long  ntaken[2][NCOLL];   /* [nonblocking][coll]: calls taken */
static unsigned long  nleft[2][NCOLL];    /* [nonblocking][coll]: left to MPI by the policy */
static unsigned long  nlarge[2][NCOLL];   /* [nonblocking][coll]: _c calls left to MPI */
static int            world_rank = -1;

/* dlsym of the library's @name: the next definition after this library (the
 * usual order: preloaded, or linked before libmpixhier), else, when
 * libmpixhier comes first in the lookup order, the one in libmpixhier
 * itself (found by its soname). */
static void (*lookup(const char *name))(void)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (p == NULL) {
        void *h = dlopen(MXH_CORE_SONAME, RTLD_LAZY | RTLD_NOLOAD);
        if (h != NULL) {
            p = dlsym(h, name);
            dlclose(h);
        }
    }
    void (*f)(void);
    memcpy(&f, &p, sizeof f); /* object to function pointer, as POSIX allows */
    return f;
}

/* The library's own definition of @name, one that MPI also defines (its
 * request functions): looked up in libmpixhier itself, never the next one. */
static void (*lookup_core(const char *name))(void)
{
    void *p = NULL, *h = dlopen(MXH_CORE_SONAME, RTLD_LAZY | RTLD_NOLOAD);
    if (h != NULL) {
        p = dlsym(h, name);
        dlclose(h);
    }
    void (*f)(void);
    memcpy(&f, &p, sizeof f);
    return f;
}

static void note(const char *fmt, const char *arg)
{
    if (world_rank <= 0) {
        fputs("mpixhier_pmpi: ", stderr);
        fprintf(stderr, fmt, arg);
        fputc('\n', stderr);
    }
}

/* MPIX_HIER_PMPI: names separated by commas or blanks; "all", "none", a
 * collective's name (takes its blocking and nonblocking forms) or "-name"
 * (leaves it out); later words win. A list that starts with a name takes
 * only what it names; one that starts with "-name" starts from all. Unset
 * or empty: all. */
static unsigned parse_policy(const char *s)
{
    const unsigned all = (1u << NCOLL) - 1;
    char           word[64];
    if (s == NULL)
        return all;
    s += strspn(s, ", \t");
    unsigned mask = *s == '\0' || *s == '-' ? all : 0;
    while (*s) {
        size_t n = strcspn(s, ", \t");
        if (n > 0 && n < sizeof word) {
            int neg = s[0] == '-';
            memcpy(word, s + neg, n - neg);
            word[n - neg] = '\0';
            for (char *c = word; *c; c++)
                *c = (char)tolower((unsigned char)*c);
            int found = 0;
            if (!strcmp(word, "all")) {
                mask  = neg ? 0 : all;
                found = 1;
            } else if (!strcmp(word, "none")) {
                mask  = neg ? all : 0;
                found = 1;
            }
            for (int c = 0; c < NCOLL && !found; c++)
                if (!strcmp(word, coll_name[c])) {
                    mask  = neg ? mask & ~(1u << c) : mask | (1u << c);
                    found = 1;
                }
            if (!found)
                note("MPIX_HIER_PMPI: unknown collective '%s' ignored", word);
        } else if (n > 0) {
            note("MPIX_HIER_PMPI: word too long ignored (%s)", s);
        }
        s += n;
        s += strspn(s, ", \t");
    }
    return mask;
}

static void init(void)
{
    int provided = MPI_THREAD_SINGLE, major, minor, patch;
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
#define FIND(c)                                                                                   \
    real.c = lookup("MPIX_Hier_" #c);                                                             \
    real.i##c = lookup("MPIX_Hier_I" #c);
    COLLS(FIND)
#undef FIND
    real.allreduce_init            = lookup("MPIX_Hier_Allreduce_init");
    real.reduce_scatter_block_init = lookup("MPIX_Hier_Reduce_scatter_block_init");
    real.reduce_scatter_init       = lookup("MPIX_Hier_Reduce_scatter_init");
    real.allgather_init            = lookup("MPIX_Hier_Allgather_init");
    real.allgatherv_init           = lookup("MPIX_Hier_Allgatherv_init");
    real.alltoall_init             = lookup("MPIX_Hier_Alltoall_init");
    real.alltoallv_init            = lookup("MPIX_Hier_Alltoallv_init");
    real.bcast_init                = lookup("MPIX_Hier_Bcast_init");
    real.reduce_init               = lookup("MPIX_Hier_Reduce_init");
#define REQ_FIND(f) real.f = lookup_core(#f);
    REQ_FUNCS(REQ_FIND)
#undef REQ_FIND
    real.comm_init           = lookup("MPIX_Hier_comm_init");
    real.comm_get_num_levels = lookup("MPIX_Hier_comm_get_num_levels");
    real.comm_get_level      = lookup("MPIX_Hier_comm_get_level");
    real.comm_describe       = lookup("MPIX_Hier_comm_describe");
    real.pmpi_fallbacks      = lookup("MPIX_Hier_pmpi_fallbacks");
    int ok = real.comm_init && real.comm_get_num_levels && real.comm_get_level &&
             real.comm_describe;
#define CHECKED(c) ok = ok && real.c && real.i##c;
    COLLS(CHECKED)
#undef CHECKED
    /* a direct reference, so that no linker drops libmpixhier as unneeded */
    MPIX_Hier_get_version(&major, &minor, &patch);
    take_mask = parse_policy(getenv("MPIX_HIER_PMPI"));
    if (!ok) {
        note("%s: libmpixhier's functions not found: every collective goes to MPI",
             MXH_CORE_SONAME);
        take_mask = 0;
    }
    /* the library is used from one thread at a time: a program that may call
     * collectives from several threads at once keeps MPI's */
    PMPI_Query_thread(&provided);
    if (provided == MPI_THREAD_MULTIPLE && take_mask != 0) {
        note("%s", "MPI_THREAD_MULTIPLE: every collective goes to MPI");
        take_mask = 0;
    }
}

/* Whether this call goes to the library (and counts it). Not inside the
 * library, and the policy takes it. */
static int take(int c, int nb)
{
    if (depth > 0)
        return 0;
    pthread_once(&once, init);
    if (!(take_mask & (1u << c))) {
        nleft[nb][c]++;
        return 0;
    }
    ntaken[nb][c]++;
    return 1;
}

/* Run @call inside the library and return its result. */
#define INSIDE(call)                                                                              \
    do {                                                                                          \
        depth++;                                                                                  \
        int rc_ = (call);                                                                         \
        depth--;                                                                                  \
        return rc_;                                                                               \
    } while (0)

/* The library's function behind pointer @p, with the type of @name. */
#define REAL(p, name) ((__typeof__(&name))real.p)

/* For one form of collective @c (@nb: nonblocking; @ptr: its member of
 * `real`): the MPI wrapper, then the interposer of the library's function.
 * PARAMS: its parameter list, ARGS: the same names as arguments. */
#define WRAP(c, nb, ptr, mpi, pmpi, mpix, PARAMS, ARGS)                                           \
    PUBLIC int mpi PARAMS                                                                         \
    {                                                                                             \
        if (!take(C_##c, nb))                                                                     \
            return pmpi ARGS;                                                                     \
        INSIDE(REAL(ptr, mpix) ARGS);                                                             \
    }                                                                                             \
    PUBLIC int mpix PARAMS                                                                        \
    {                                                                                             \
        pthread_once(&once, init);                                                                \
        if (real.ptr == NULL)                                                                     \
            return MPI_ERR_INTERN; /* init said why */                                            \
        INSIDE(REAL(ptr, mpix) ARGS);                                                             \
    }

/* ---- the collectives: blocking, then nonblocking (MPICH 4.0.2's prototypes,
 * checked by the compiler against mpi.h and mpix_hier.h) ---- */

WRAP(allreduce, 0, allreduce, MPI_Allreduce, PMPI_Allreduce, MPIX_Hier_allreduce,
     (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
      MPI_Comm comm),
     (sendbuf, recvbuf, count, datatype, op, comm))
WRAP(allreduce, 1, iallreduce, MPI_Iallreduce, PMPI_Iallreduce, MPIX_Hier_Iallreduce,
     (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
      MPI_Comm comm, MPI_Request *request),
     (sendbuf, recvbuf, count, datatype, op, comm, request))

WRAP(reduce_scatter_block, 0, reduce_scatter_block, MPI_Reduce_scatter_block,
     PMPI_Reduce_scatter_block, MPIX_Hier_reduce_scatter_block,
     (const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
      MPI_Comm comm),
     (sendbuf, recvbuf, recvcount, datatype, op, comm))
WRAP(reduce_scatter_block, 1, ireduce_scatter_block, MPI_Ireduce_scatter_block,
     PMPI_Ireduce_scatter_block, MPIX_Hier_Ireduce_scatter_block,
     (const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
      MPI_Comm comm, MPI_Request *request),
     (sendbuf, recvbuf, recvcount, datatype, op, comm, request))

WRAP(reduce_scatter, 0, reduce_scatter, MPI_Reduce_scatter, PMPI_Reduce_scatter,
     MPIX_Hier_reduce_scatter,
     (const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
      MPI_Op op, MPI_Comm comm),
     (sendbuf, recvbuf, recvcounts, datatype, op, comm))
WRAP(reduce_scatter, 1, ireduce_scatter, MPI_Ireduce_scatter, PMPI_Ireduce_scatter,
     MPIX_Hier_Ireduce_scatter,
     (const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
      MPI_Op op, MPI_Comm comm, MPI_Request *request),
     (sendbuf, recvbuf, recvcounts, datatype, op, comm, request))

WRAP(allgather, 0, allgather, MPI_Allgather, PMPI_Allgather, MPIX_Hier_allgather,
     (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
      MPI_Datatype recvtype, MPI_Comm comm),
     (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm))
WRAP(allgather, 1, iallgather, MPI_Iallgather, PMPI_Iallgather, MPIX_Hier_Iallgather,
     (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
      MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request),
     (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request))

WRAP(allgatherv, 0, allgatherv, MPI_Allgatherv, PMPI_Allgatherv, MPIX_Hier_allgatherv,
     (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
      const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm),
     (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm))
WRAP(allgatherv, 1, iallgatherv, MPI_Iallgatherv, PMPI_Iallgatherv, MPIX_Hier_Iallgatherv,
     (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
      const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
      MPI_Request *request),
     (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, request))

WRAP(alltoall, 0, alltoall, MPI_Alltoall, PMPI_Alltoall, MPIX_Hier_alltoall,
     (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
      MPI_Datatype recvtype, MPI_Comm comm),
     (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm))
WRAP(alltoall, 1, ialltoall, MPI_Ialltoall, PMPI_Ialltoall, MPIX_Hier_Ialltoall,
     (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
      MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request),
     (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request))

WRAP(alltoallv, 0, alltoallv, MPI_Alltoallv, PMPI_Alltoallv, MPIX_Hier_alltoallv,
     (const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
      void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
      MPI_Comm comm),
     (sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm))
WRAP(alltoallv, 1, ialltoallv, MPI_Ialltoallv, PMPI_Ialltoallv, MPIX_Hier_Ialltoallv,
     (const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
      void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
      MPI_Comm comm, MPI_Request *request),
     (sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
      request))

WRAP(bcast, 0, bcast, MPI_Bcast, PMPI_Bcast, MPIX_Hier_bcast,
     (void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm),
     (buffer, count, datatype, root, comm))
WRAP(bcast, 1, ibcast, MPI_Ibcast, PMPI_Ibcast, MPIX_Hier_Ibcast,
     (void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
      MPI_Request *request),
     (buffer, count, datatype, root, comm, request))

WRAP(reduce, 0, reduce, MPI_Reduce, PMPI_Reduce, MPIX_Hier_reduce,
     (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
      MPI_Comm comm),
     (sendbuf, recvbuf, count, datatype, op, root, comm))
WRAP(reduce, 1, ireduce, MPI_Ireduce, PMPI_Ireduce, MPIX_Hier_Ireduce,
     (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
      MPI_Comm comm, MPI_Request *request),
     (sendbuf, recvbuf, count, datatype, op, root, comm, request))

/* ---- persistent collectives (MPI-4), taken with their collective ---- */

WRAP(allreduce, 1, allreduce_init, MPI_Allreduce_init, PMPI_Allreduce_init,
     MPIX_Hier_Allreduce_init,
     (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
      MPI_Comm comm, MPI_Info info, MPI_Request *request),
     (sendbuf, recvbuf, count, datatype, op, comm, info, request))
WRAP(reduce_scatter_block, 1, reduce_scatter_block_init, MPI_Reduce_scatter_block_init,
     PMPI_Reduce_scatter_block_init, MPIX_Hier_Reduce_scatter_block_init,
     (const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
      MPI_Comm comm, MPI_Info info, MPI_Request *request),
     (sendbuf, recvbuf, recvcount, datatype, op, comm, info, request))
WRAP(reduce_scatter, 1, reduce_scatter_init, MPI_Reduce_scatter_init, PMPI_Reduce_scatter_init,
     MPIX_Hier_Reduce_scatter_init,
     (const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
      MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request),
     (sendbuf, recvbuf, recvcounts, datatype, op, comm, info, request))
WRAP(allgather, 1, allgather_init, MPI_Allgather_init, PMPI_Allgather_init,
     MPIX_Hier_Allgather_init,
     (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
      MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request),
     (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, request))
WRAP(allgatherv, 1, allgatherv_init, MPI_Allgatherv_init, PMPI_Allgatherv_init,
     MPIX_Hier_Allgatherv_init,
     (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
      const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
      MPI_Info info, MPI_Request *request),
     (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, info, request))
WRAP(alltoall, 1, alltoall_init, MPI_Alltoall_init, PMPI_Alltoall_init, MPIX_Hier_Alltoall_init,
     (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
      MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request),
     (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, request))
WRAP(alltoallv, 1, alltoallv_init, MPI_Alltoallv_init, PMPI_Alltoallv_init,
     MPIX_Hier_Alltoallv_init,
     (const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
      void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
      MPI_Comm comm, MPI_Info info, MPI_Request *request),
     (sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, info,
      request))
WRAP(bcast, 1, bcast_init, MPI_Bcast_init, PMPI_Bcast_init, MPIX_Hier_Bcast_init,
     (void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Info info,
      MPI_Request *request),
     (buffer, count, datatype, root, comm, info, request))
WRAP(reduce, 1, reduce_init, MPI_Reduce_init, PMPI_Reduce_init, MPIX_Hier_Reduce_init,
     (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
      MPI_Comm comm, MPI_Info info, MPI_Request *request),
     (sendbuf, recvbuf, count, datatype, op, root, comm, info, request))

/* ---- the large-count forms (MPI-4 _c): a call whose counts fit an int is the
 * call of the int form; one beyond INT_MAX, and the v-forms (arrays of
 * MPI_Count and MPI_Aint), go to MPI's own _c function, which serves them or
 * fails them exactly as MPICH does ---- */

#define FITS(x) ((x) >= INT_MIN && (x) <= INT_MAX)

/* Like WRAP for the MPI function only; FIT: the counts fit an int, IARGS: the
 * arguments of the int form (counts cast). */
#define WRAP_C(c, nb, ptr, mpi, pmpi, mpix, PARAMS, ARGS, FIT, IARGS)                             \
    PUBLIC int mpi PARAMS                                                                         \
    {                                                                                             \
        if (!(FIT)) {                                                                             \
            if (depth == 0)                                                                       \
                nlarge[nb][C_##c]++;                                                              \
            return pmpi ARGS;                                                                     \
        }                                                                                         \
        if (!take(C_##c, nb))                                                                     \
            return pmpi ARGS;                                                                     \
        INSIDE(REAL(ptr, mpix) IARGS);                                                            \
    }

/* A v-form: always MPI's (counted). */
#define FORWARD_C(c, nb, mpi, pmpi, PARAMS, ARGS)                                                 \
    PUBLIC int mpi PARAMS                                                                         \
    {                                                                                             \
        if (depth == 0)                                                                           \
            nlarge[nb][C_##c]++;                                                                  \
        return pmpi ARGS;                                                                         \
    }

/* the scalar forms, blocking, nonblocking and persistent, of one collective:
 * (Mpi, Impi: MPI's names of its blocking and nonblocking forms; P0, A0, I0 the
 * blocking form's parameters, arguments and int arguments) */
#define FORMS_C(c, Mpi, Impi, Mpix_init, P0, A0, FIT, I0)                                         \
    WRAP_C(c, 0, c, MPI_##Mpi##_c, PMPI_##Mpi##_c, MPIX_Hier_##c, P0, A0, FIT, I0)                \
    WRAP_C(c, 1, i##c, MPI_##Impi##_c, PMPI_##Impi##_c, MPIX_Hier_I##c,                           \
           (PLIST_##c, MPI_Request *request), (ALIST_##c, request), FIT, (ILIST_##c, request))    \
    WRAP_C(c, 1, c##_init, MPI_##Mpi##_init_c, PMPI_##Mpi##_init_c, MPIX_Hier_##Mpix_init,        \
           (PLIST_##c, MPI_Info info, MPI_Request *request), (ALIST_##c, info, request), FIT,    \
           (ILIST_##c, info, request))

#define PLIST_allreduce                                                                           \
    const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,      \
        MPI_Comm comm
#define ALIST_allreduce sendbuf, recvbuf, count, datatype, op, comm
#define ILIST_allreduce sendbuf, recvbuf, (int)count, datatype, op, comm
#define PLIST_reduce_scatter_block PLIST_allreduce
#define ALIST_reduce_scatter_block ALIST_allreduce
#define ILIST_reduce_scatter_block ILIST_allreduce
#define PLIST_allgather                                                                           \
    const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,             \
        MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm
#define ALIST_allgather sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm
#define ILIST_allgather                                                                           \
    sendbuf, (int)sendcount, sendtype, recvbuf, (int)recvcount, recvtype, comm
#define PLIST_alltoall PLIST_allgather
#define ALIST_alltoall ALIST_allgather
#define ILIST_alltoall ILIST_allgather
#define PLIST_bcast void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm
#define ALIST_bcast buffer, count, datatype, root, comm
#define ILIST_bcast buffer, (int)count, datatype, root, comm
#define PLIST_reduce                                                                              \
    const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,      \
        int root, MPI_Comm comm
#define ALIST_reduce sendbuf, recvbuf, count, datatype, op, root, comm
#define ILIST_reduce sendbuf, recvbuf, (int)count, datatype, op, root, comm

FORMS_C(allreduce, Allreduce, Iallreduce, Allreduce_init, (PLIST_allreduce), (ALIST_allreduce),
        FITS(count), (ILIST_allreduce))
FORMS_C(reduce_scatter_block, Reduce_scatter_block, Ireduce_scatter_block,
        Reduce_scatter_block_init, (PLIST_reduce_scatter_block), (ALIST_reduce_scatter_block),
        FITS(count), (ILIST_reduce_scatter_block))
FORMS_C(allgather, Allgather, Iallgather, Allgather_init, (PLIST_allgather), (ALIST_allgather),
        FITS(sendcount) && FITS(recvcount), (ILIST_allgather))
FORMS_C(alltoall, Alltoall, Ialltoall, Alltoall_init, (PLIST_alltoall), (ALIST_alltoall),
        FITS(sendcount) && FITS(recvcount), (ILIST_alltoall))
FORMS_C(bcast, Bcast, Ibcast, Bcast_init, (PLIST_bcast), (ALIST_bcast), FITS(count),
        (ILIST_bcast))
FORMS_C(reduce, Reduce, Ireduce, Reduce_init, (PLIST_reduce), (ALIST_reduce), FITS(count),
        (ILIST_reduce))

#define PLIST_allgatherv                                                                          \
    const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,             \
        const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,           \
        MPI_Comm comm
#define ALIST_allgatherv sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm
#define PLIST_reduce_scatter                                                                      \
    const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[], MPI_Datatype datatype,    \
        MPI_Op op, MPI_Comm comm
#define ALIST_reduce_scatter sendbuf, recvbuf, recvcounts, datatype, op, comm
#define PLIST_alltoallv                                                                           \
    const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],                \
        MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],                     \
        const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm
#define ALIST_alltoallv                                                                           \
    sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm
#define VFORMS_C(c, Mpi, Impi)                                                                    \
    FORWARD_C(c, 0, MPI_##Mpi##_c, PMPI_##Mpi##_c, (PLIST_##c), (ALIST_##c))                      \
    FORWARD_C(c, 1, MPI_##Impi##_c, PMPI_##Impi##_c, (PLIST_##c, MPI_Request *request),         \
              (ALIST_##c, request))                                                               \
    FORWARD_C(c, 1, MPI_##Mpi##_init_c, PMPI_##Mpi##_init_c,                                      \
              (PLIST_##c, MPI_Info info, MPI_Request *request), (ALIST_##c, info, request))

VFORMS_C(allgatherv, Allgatherv, Iallgatherv)
VFORMS_C(reduce_scatter, Reduce_scatter, Ireduce_scatter)
VFORMS_C(alltoallv, Alltoallv, Ialltoallv)

/* ---- MPI's request functions: the library's (mpix/requests.c), which start and
 * complete its persistent requests and pass the others to PMPI_ ---- */

#define REQ(f, PARAMS, ARGS)                                                                      \
    PUBLIC int f PARAMS                                                                           \
    {                                                                                             \
        pthread_once(&once, init);                                                                \
        if (depth > 0 || real.f == NULL)                                                          \
            return P##f ARGS;                                                                     \
        INSIDE(((__typeof__(&f))real.f) ARGS);                                                    \
    }

REQ(MPI_Start, (MPI_Request *request), (request))
REQ(MPI_Startall, (int count, MPI_Request requests[]), (count, requests))
REQ(MPI_Wait, (MPI_Request *request, MPI_Status *status), (request, status))
REQ(MPI_Waitall, (int count, MPI_Request requests[], MPI_Status statuses[]),
    (count, requests, statuses))
REQ(MPI_Waitany, (int count, MPI_Request requests[], int *index, MPI_Status *status),
    (count, requests, index, status))
REQ(MPI_Waitsome,
    (int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[]),
    (incount, requests, outcount, indices, statuses))
REQ(MPI_Test, (MPI_Request *request, int *flag, MPI_Status *status), (request, flag, status))
REQ(MPI_Testall, (int count, MPI_Request requests[], int *flag, MPI_Status statuses[]),
    (count, requests, flag, statuses))
REQ(MPI_Testany, (int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status),
    (count, requests, index, flag, status))
REQ(MPI_Testsome,
    (int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[]),
    (incount, requests, outcount, indices, statuses))
REQ(MPI_Request_get_status, (MPI_Request request, int *flag, MPI_Status *status),
    (request, flag, status))
REQ(MPI_Request_free, (MPI_Request *request), (request))

/* ---- the library's other communicating functions (hierarchy build) ---- */

PUBLIC int MPIX_Hier_comm_init(MPI_Comm comm, MPI_Info info)
{
    pthread_once(&once, init);
    if (real.comm_init == NULL)
        return MPI_ERR_INTERN;
    INSIDE(REAL(comm_init, MPIX_Hier_comm_init)(comm, info));
}

PUBLIC int MPIX_Hier_comm_get_num_levels(MPI_Comm comm, int *num_levels)
{
    pthread_once(&once, init);
    if (real.comm_get_num_levels == NULL)
        return MPI_ERR_INTERN;
    INSIDE(REAL(comm_get_num_levels, MPIX_Hier_comm_get_num_levels)(comm, num_levels));
}

PUBLIC int MPIX_Hier_comm_get_level(MPI_Comm comm, int level, MPI_Comm *level_comm, char *name)
{
    pthread_once(&once, init);
    if (real.comm_get_level == NULL)
        return MPI_ERR_INTERN;
    INSIDE(REAL(comm_get_level, MPIX_Hier_comm_get_level)(comm, level, level_comm, name));
}

PUBLIC int MPIX_Hier_comm_describe(MPI_Comm comm, char *buf, int buflen, int *resultlen)
{
    pthread_once(&once, init);
    if (real.comm_describe == NULL)
        return MPI_ERR_INTERN;
    INSIDE(REAL(comm_describe, MPIX_Hier_comm_describe)(comm, buf, buflen, resultlen));
}

/* One exit line: the calls of every form that @n counts as left to MPI, for @why. */
static void print_left(const char *why, unsigned long n[2][NCOLL])
{
    char line[1024];
    int  any = 0, len = snprintf(line, sizeof line, "mpixhier_pmpi: rank %d left to MPI (%s):",
                                 world_rank, why);
    for (int c = 0; c < 2 * NCOLL && len > 0 && (size_t)len < sizeof line; c++) {
        unsigned long k = n[c >= NCOLL][c % NCOLL];
        if (k > 0) {
            len += snprintf(line + len, sizeof line - (size_t)len, "%s %s%s %lu",
                            any ? "," : "", c >= NCOLL ? "i" : "", coll_name[c % NCOLL], k);
            any = 1;
        }
    }
    fprintf(stderr, "%s%s\n", line, any ? "" : " none");
}

/* MPIX_HIER_PMPI_STATS=1: each rank prints, when the process exits, the calls
 * taken (one line, every form), then those of them MPI's own collective
 * served with the reasons, and the calls the policy left to MPI (a
 * destructor, not MPI_Finalize: MPICH's mpi_f08 binding calls PMPI_Finalize,
 * which no wrapper sees). */
__attribute__((destructor)) static void print_stats(void)
{
    const char *stats = getenv("MPIX_HIER_PMPI_STATS");
    if (stats == NULL || !strcmp(stats, "0") || !strcmp(stats, "no") || !strcmp(stats, ""))
        return;
    char line[1024];
    int  len = snprintf(line, sizeof line, "mpixhier_pmpi: rank %d taken:", world_rank);
    for (int c = 0; c < NCOLL && len > 0 && (size_t)len < sizeof line; c++)
        len += snprintf(line + len, sizeof line - (size_t)len, " %s %lu i%s %lu", coll_name[c],
                        ntaken[0][c], coll_name[c], ntaken[1][c]);
    fprintf(stderr, "%s\n", line);

    long (*fallbacks)(const char *, char *, int);
    memcpy(&fallbacks, &real.pmpi_fallbacks, sizeof fallbacks);
    len = snprintf(line, sizeof line, "mpixhier_pmpi: rank %d fell back to MPI:", world_rank);
    int any = 0;
    for (int c = 0; c < 2 * NCOLL && fallbacks != NULL; c++) {
        char name[64], why[512];
        snprintf(name, sizeof name, "%s%s", c >= NCOLL ? "i" : "", coll_name[c % NCOLL]);
        long n = fallbacks(name, why, (int)sizeof why);
        if (n < 0) {
            len += snprintf(line + len, sizeof line - (size_t)len,
                            " not counted (MPIX_HIER_METRICS=no)");
            any = 1;
            break;
        }
        if (n > 0 && len > 0 && (size_t)len < sizeof line) {
            len += snprintf(line + len, sizeof line - (size_t)len, "%s %s %ld (%s)",
                            any ? "," : "", name, n, why);
            any = 1;
        }
    }
    fprintf(stderr, "%s%s\n", line, any ? "" : " none");
    print_left("MPIX_HIER_PMPI", nleft);
    print_left("count beyond INT_MAX, or a _c v-form", nlarge);
}

/* ---- introspection and the library's hook ---- */

/* The calling thread's depth: libmpixhier raises it around the progress of
 * its nonblocking collectives (src/util/pmpi_hook.c finds this with dlsym). */
PUBLIC int *MPIX_Hier_pmpi_depth(void)
{
    return &depth;
}

/* The number of calls of collective @name the library took in this process:
 * "allreduce" counts MPI_Allreduce, "iallreduce" MPI_Iallreduce; NULL: all of
 * them; -1 for an unknown name. Not in mpix_hier.h: programs that do not link
 * libmpixhier find it with dlsym (tests/mpi/pmpi_check.c). */
PUBLIC long MPIX_Hier_pmpi_taken(const char *name)
{
    long sum = 0;
    for (int c = 0; c < NCOLL; c++) {
        if (name == NULL)
            sum += (long)(ntaken[0][c] + ntaken[1][c]);
        else if (!strcmp(name, coll_name[c]))
            return (long)ntaken[0][c];
        else if (name[0] == 'i' && !strcmp(name + 1, coll_name[c]))
            return (long)ntaken[1][c];
    }
    return name == NULL ? sum : -1;
}
