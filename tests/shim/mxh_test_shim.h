/*
 * C helpers for the MPI GoogleTest suites (tests/mpi/): deterministic fill
 * patterns for every predefined datatype, the table of the type/op pairs MPI
 * allows, guarded buffers, bytewise comparison of the significant bytes,
 * hashes for cross-rank identity, collective verdicts and a watchdog.
 *
 * Compiled as C; included from C++ (extern "C").
 *
 * -DMXH_TEST_PLAIN_MPI: the shim itself defines every MPIX_Hier_* symbol on
 * top of plain MPI (collectives -> MPI_*, a small emulation of the hierarchy
 * for the introspection calls) so that the harness can be validated without
 * libmpixhier. MXH_TEST_PLAIN is 1 in that build, 0 otherwise.
 */
#ifndef MXH_TEST_SHIM_H
#define MXH_TEST_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "mpix_hier.h"

#ifdef MXH_TEST_PLAIN_MPI
#define MXH_TEST_PLAIN 1
#else
#define MXH_TEST_PLAIN 0
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- predefined datatypes ------------------------------------------------ */

/* Groups of MPI-4 section 6.9.2 (bit mask). */
enum {
    MXH_GRP_C_INT   = 1 << 0,
    MXH_GRP_F_INT   = 1 << 1,
    MXH_GRP_FLOAT   = 1 << 2,
    MXH_GRP_LOGICAL = 1 << 3,
    MXH_GRP_COMPLEX = 1 << 4,
    MXH_GRP_BYTE    = 1 << 5,
    MXH_GRP_MULTI   = 1 << 6, /* multi-language types: MPI_AINT, MPI_OFFSET, MPI_COUNT */
    MXH_GRP_PAIR    = 1 << 7, /* MINLOC/MAXLOC pair types */
    MXH_GRP_NONE    = 1 << 8  /* data movement only (MPI_CHAR, MPI_WCHAR, MPI_PACKED, ...) */
};

/* How values of a type are generated and interpreted. */
typedef enum mxh_kind {
    MXH_KIND_SINT,     /* signed integer of elem_size bytes */
    MXH_KIND_UINT,     /* unsigned integer of elem_size bytes */
    MXH_KIND_FLOAT,    /* float / double / long double / __float128 (by fp) */
    MXH_KIND_COMPLEX,  /* two parts of format fp */
    MXH_KIND_BOOL,     /* C/C++ bool (1 byte) or Fortran LOGICAL (int), 0/1 */
    MXH_KIND_BYTE,     /* arbitrary bytes */
    MXH_KIND_PAIR,     /* {value, index} for MINLOC/MAXLOC */
    MXH_KIND_OPAQUE    /* movement only: arbitrary bytes */
} mxh_kind_t;

typedef enum mxh_fp {
    MXH_FP_NONE = 0,
    MXH_FP_FLOAT,
    MXH_FP_DOUBLE,
    MXH_FP_LDOUBLE,
    MXH_FP_FLOAT128,
    MXH_FP_INT,    /* pair value/index stored as int */
    MXH_FP_LONG,
    MXH_FP_SHORT
} mxh_fp_t;

/* Up to 2 significant byte ranges of one element (long double has padding,
 * pair types have holes). */
typedef struct mxh_seg {
    int off, len;
} mxh_seg_t;

typedef struct mxh_type {
    MPI_Datatype type;
    const char  *name;     /* "MPI_INT"; also a valid gtest name fragment after mxh_type_id */
    int          group;    /* MXH_GRP_* */
    mxh_kind_t   kind;
    mxh_fp_t     fp;       /* FLOAT/COMPLEX part format; PAIR value format */
    mxh_fp_t     idx_fp;   /* PAIR index format */
    int          extent;   /* bytes per element */
    int          nseg;     /* significant byte ranges per element (values) */
    mxh_seg_t    seg[2];
    int          nmseg;    /* byte ranges MPI moves (the type map): differs */
    mxh_seg_t    mseg[2];  /* from seg for long double (padding) and pairs  */
} mxh_type_t;

/* Fill in the table (after MPI_Init; idempotent). Types whose handle is
 * MPI_DATATYPE_NULL in this MPI build (e.g. MPI_INTEGER16) are left out. */
void mxh_types_init(void);
int mxh_num_types(void);
const mxh_type_t *mxh_type_at(int i);
const mxh_type_t *mxh_type_find(MPI_Datatype type);

/* The predefined reduction operations (MPI_MAX .. MPI_MAXLOC, in that order). */
int mxh_num_ops(void);
MPI_Op mxh_op_at(int i);
const char *mxh_op_name(MPI_Op op);

/* Whether MPI (MPI-4 6.9.2) allows @op on @t. */
int mxh_op_allowed(const mxh_type_t *t, MPI_Op op);
/* Whether MPICH itself accepts the pair (probed once on MPI_COMM_SELF):
 * MPICH 4.0 rejects e.g. MPI_COMPLEX32. Pairs MPI allows but MPICH rejects
 * cannot be compared with a reference and are skipped (and counted). */
int mxh_op_mpich_ok(const mxh_type_t *t, MPI_Op op);

/* ---- fill patterns -------------------------------------------------------- */

/* Fill @count elements of @t (extent-strided, padding bytes zeroed) with the
 * deterministic pattern of (@rank, @salt) for reduction @op (MPI_OP_NULL:
 * arbitrary bits, for data movement). Element i's value depends on
 * (i, rank, salt, op) only. Values are chosen so that every allowed
 * reduction is exact whatever the order, for up to 16 ranks:
 *   SUM: small integers (also for floats and complex parts);
 *   PROD: +-1 and at most one +-2 per 8 consecutive ranks (complex: (2+i)*unit,
 *     never a zero component, so no order-dependent signed zero);
 *   MAX/MIN: integers: arbitrary bits; floats: multiples of 1/4 in [-250, 250];
 *   LAND/LOR/LXOR: mostly-true / mostly-false / even mix, non-0/1 "true"
 *     values for C integers;
 *   BAND/BOR/BXOR: bits mostly 1 / mostly 0 / random;
 *   MINLOC/MAXLOC: values in a small range (many ties), small indices. */
void mxh_fill(const mxh_type_t *t, MPI_Op op, void *buf, size_t count, int rank,
              uint64_t salt);
/* Uniform random floats/doubles in [-1, 1) (not exact under reordering). */
void mxh_fill_random_fp(MPI_Datatype type, void *buf, size_t count, int rank, uint64_t salt);

/* ---- buffers with guard zones -------------------------------------------- */

#define MXH_GUARD 64
typedef struct mxh_buf {
    unsigned char *base;  /* allocation */
    void          *p;     /* user area: base + MXH_GUARD */
    size_t         bytes; /* user area size */
} mxh_buf_t;

/* Allocate @bytes (0 allowed: p is still a valid, distinct pointer), user
 * area set to @fill, guard zones to a pattern. */
void mxh_buf_alloc(mxh_buf_t *b, size_t bytes, int fill);
void mxh_buf_free(mxh_buf_t *b);
/* The same on memory the caller allocated (@base: at least bytes + 2 *
 * MXH_GUARD bytes, e.g. from mxh_mem_test_alloc); the caller frees base. */
void mxh_buf_wrap(mxh_buf_t *b, void *base, size_t bytes, int fill);
/* 1 if both guard zones are intact. */
int mxh_buf_guards_ok(const mxh_buf_t *b);

/* ---- comparison and hashes ----------------------------------------------- */

/* Compare the significant bytes of @count elements: the value segments
 * (reductions: long double padding ignored), or with @whole the bytes MPI
 * moves (the type map). Returns -1 if equal, else the first differing
 * element index; writes a description into @msg (may be NULL). */
long mxh_compare(const mxh_type_t *t, int whole, const void *got, const void *want,
                 size_t count, char *msg, size_t msglen);
/* Plain byte comparison: -1 if equal, else first differing offset. */
long mxh_compare_bytes(const void *got, const void *want, size_t n);

uint64_t mxh_hash(const mxh_type_t *t, int whole, const void *buf, size_t count);
uint64_t mxh_hash_bytes_fnv(uint64_t h, const void *data, size_t n);
#define MXH_FNV_INIT 1469598103934665603ULL

/* Collective over @comm: 1 if every rank passed the same @n hashes as rank 0;
 * else 0 and *first_bad = first index that differs somewhere (the result is
 * the same on every rank). */
int mxh_hashes_agree(MPI_Comm comm, const uint64_t *h, int n, int *first_bad);

/* ---- collective verdicts ------------------------------------------------- */

/* A dup of MPI_COMM_WORLD reserved for verdicts (set by tests/mpi/main_mpi.cc):
 * a test that returned early on one rank then hangs (watchdog) instead of
 * silently matching a collective of the test body. */
extern MPI_Comm mxh_test_verdict_comm;

/* Collective over @comm: number of ranks with @failed != 0; the first few
 * failing ranks are written to @ranks (capacity @cap, may be NULL). */
int mxh_collective_failures(MPI_Comm comm, int failed, int *ranks, int cap);

/* ---- environment helpers -------------------------------------------------- */

/* The fake node name of this process: $MPIX_HIER_HOSTNAME, else
 * MPI_Get_processor_name. */
void mxh_node_name(char *buf, size_t len);
/* getenv with default. */
const char *mxh_env(const char *name, const char *dflt);
int mxh_env_int(const char *name, int dflt);

/* ---- watchdog ------------------------------------------------------------ */

/* Start the watchdog thread (timeout from $MXH_TEST_TIMEOUT seconds, default
 * 120; 0 disables). When an armed phase exceeds the timeout the process
 * prints "mxh watchdog: test NAME hung on rank R (more than N s)" to stderr
 * and exits with status 124 (mpiexec then tears the job down). */
void mxh_watchdog_start(int rank);
void mxh_watchdog_arm(const char *what);
void mxh_watchdog_disarm(void);
void mxh_watchdog_stop(void);
int mxh_watchdog_timeout(void);

/* ---- oversubscription helper ------------------------------------------- */

/* The shim interposes ucp_worker_progress (MPICH ch4:ucx's progress engine):
 * a poll that made no progress yields the CPU (sched_yield, then 20 us sleeps
 * after 50 us idle), so that oversubscribed ranks on a 2-core machine do not
 * spin away each other's time slices (a 4-rank allreduce goes from ~10 ms to
 * ~15 us). MXH_TEST_NO_YIELD=1 turns it off. Returns the number of
 * intercepted polls (0: not active). */
unsigned long mxh_yield_polls(void);

#ifdef __cplusplus
}
#endif

/* ---- C++: the base fixture of every MPI test ------------------------------ */
#ifdef __cplusplus
#include <gtest/gtest.h>

#include <sstream>

/* Every MPI test derives from this fixture. TearDown is collective over
 * MPI_COMM_WORLD: a test that failed on any rank fails on every rank (rank 0
 * prints it; the other ranks' messages are on stderr, prefixed [rank R]).
 * Rules for test bodies: same collectives in the same order on every rank,
 * EXPECT_* (never an ASSERT_* that returns before a collective), skips
 * decided on data that is the same on every rank. */
class MxhMpiTest : public ::testing::Test {
  protected:
    void TearDown() override
    {
        int ranks[8];
        int n = mxh_collective_failures(mxh_test_verdict_comm, HasFailure(), ranks, 8);
        if (n > 0 && !HasFailure()) {
            std::ostringstream os;
            for (int i = 0; i < n && i < 8; i++)
                os << (i ? "," : "") << ranks[i];
            if (n > 8)
                os << ",...";
            ADD_FAILURE() << "failed on " << n << " other rank(s): " << os.str()
                          << " (their messages are on stderr, prefixed [rank R])";
        }
    }
};
#endif

#endif /* MXH_TEST_SHIM_H */
