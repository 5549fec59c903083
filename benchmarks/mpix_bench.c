/*
 * mpix_bench: an nccl-tests-like benchmark comparing the MPIX_Hier_* collectives
 * with the plain MPI collectives on MPI_COMM_WORLD.
 *
 * Copyright (c) 2026, The mpix-hier authors. BSD-3-Clause, see COPYING.
 *
 *   mpiexec -n 2 -env MPIX_HIER_HOSTNAME a ./mpix_bench -c all --check : \
 *           -n 2 -env MPIX_HIER_HOSTNAME b ./mpix_bench -c all --check
 *
 * Timing: per size, WARMUP untimed then ITERS timed iterations; within an
 * iteration the implementations are interleaved (hier, mpi), each call preceded
 * by an MPI_Barrier and timed on every rank; an iteration's time is the maximum
 * over ranks; the reported time is the median over iterations. --batch (ignored
 * with --check): per implementation, WARMUP calls, one barrier, then ITERS calls
 * back to back; time = elapsed/ITERS per rank, maximum over ranks.
 * algbw = size / time, busbw = algbw * factor with factor 2(p-1)/p (allreduce),
 * (p-1)/p (reduce_scatter_block, allgather and the v-forms and all-to-all), 1
 * (bcast, reduce); GB = 1e9 B. For allreduce, bcast, reduce, allgather and
 * reduce_scatter_block, size is the total buffer: count*typesize, where for
 * reduce_scatter_block and allgather count = per-rank count * nranks (as in
 * nccl-tests). For allgatherv, reduce_scatter (MPI_Reduce_scatter with recvcounts),
 * alltoall and alltoallv, size is the bytes each rank sends (the mean: counts are
 * uneven in a fixed pattern, see --help); allgatherv's algbw divides all ranks'
 * blocks by the time.
 * -N (--nonblocking): MPIX_Hier_I* and MPI_I* in OSU's osu_iallreduce style: per
 * size and implementation, t_pure = post + MPI_Wait (median of the max over
 * ranks); then post, a busy loop of t_pure wall time outside MPI_Test (which it
 * calls every --test-interval us), MPI_Wait: t_total and t_compute (the loop
 * without its MPI_Test calls), medians of the max over ranks; overlap =
 * max(0, 100 (1 - (t_total - t_compute) / t_pure)) %.
 * --check: inputs are small integers, so every result is exact; each result is
 * compared bit for bit with the expected value (computed locally) on every rank
 * in every iteration, so MPIX_Hier_* results equal MPI's bit for bit when both
 * columns show 0. #wrong = the largest number of wrong elements seen in one
 * iteration on one rank, summed over ranks.
 * Exit status: 0 ok, 1 wrong elements found (--check), 2 usage error,
 * 3 an output file could not be written or the plot not drawn (e.g. no gnuplot;
 * the CSV data is written anyway).
 */
#include <mpi.h>

#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef MXH_BENCH_CUDA
#include <cuda_runtime.h>
#endif

#include "mpix_hier.h"
#include "reduce/half.h" /* header-only fp16/bf16 <-> float (the plain-MPI user ops) */

#define BENCH_PROG "mpix_bench"
#include "bench_util.h"

#ifdef SMPI_SHARED_MALLOC
/* SimGrid build (src/sim/sim.h): in model mode the plain-MPI column reduces with an op
 * that charges the same modelled reduction time as the library's own reductions. */
MPI_Op mxh_sim_mpi_op(MPI_Op op);
#endif

extern char **environ;

enum { IMPL_HIER = 0, IMPL_MPI = 1, NIMPL = 2 };
enum { C_ALLREDUCE, C_RSB, C_ALLGATHER, C_BCAST, C_REDUCE,
       C_ALLGATHERV, C_REDUCE_SCATTER, C_ALLTOALL, C_ALLTOALLV, NCOLL };
enum { OP_SUM, OP_PROD, OP_MAX, OP_MIN };

static const char *const coll_names[NCOLL] = {"allreduce", "reduce_scatter_block", "allgather",
                                              "bcast", "reduce", "allgatherv", "reduce_scatter",
                                              "alltoall", "alltoallv"};
static const char *const impl_names[NIMPL] = {"hier", "mpi"};

/* How elements are written and compared. */
enum dkind { DK_INT, DK_FLOAT, DK_LDOUBLE, DK_FP16, DK_BF16 };

struct dtype {
    const char *name;
    MPI_Datatype type; /* MPI_DATATYPE_NULL for the half types: set after MPI_Init */
    int size;
    enum dkind kind;
};

/* ---- options ------------------------------------------------------------ */

struct opts {
    size_t minb, maxb;
    int factor, iters, warmup, check, root;
    int batch; /* --batch: the timed iterations back to back after one barrier */
    int colls[NCOLL], ncolls;
    int impl[NIMPL]; /* enabled */
    struct dtype dt;
    int op;
    const char *csv, *json, *plot;
    int cuda; /* -m cuda: device buffers; the mpi column stages them through the host */
    int nonblocking; /* -N: MPIX_Hier_I* / MPI_I* with computation overlapped */
    int test_us;     /* -N: MPI_Test every test_us microseconds while computing (0: never) */
    int nccl;        /* --nccl-tests: nccl-tests' table, out-of-place and in-place */
    int impl_given;  /* --impl was given */
};

#define DT_INT(name, T, mpi) {name, mpi, (int)sizeof(T), DK_INT}
static const struct dtype dtypes[] = {
    {"float", MPI_FLOAT, 4, DK_FLOAT},
    {"double", MPI_DOUBLE, 8, DK_FLOAT},
    {"long_double", MPI_LONG_DOUBLE, (int)sizeof(long double), DK_LDOUBLE},
    {"fp16", MPI_DATATYPE_NULL, 2, DK_FP16}, /* MPIX_HIER_FLOAT16 */
    {"bf16", MPI_DATATYPE_NULL, 2, DK_BF16}, /* MPIX_HIER_BFLOAT16 */
    DT_INT("int", int, MPI_INT),
    DT_INT("unsigned", unsigned, MPI_UNSIGNED),
    DT_INT("long", long, MPI_LONG),
    DT_INT("unsigned_long", unsigned long, MPI_UNSIGNED_LONG),
    DT_INT("long_long", long long, MPI_LONG_LONG),
    DT_INT("unsigned_long_long", unsigned long long, MPI_UNSIGNED_LONG_LONG),
    DT_INT("short", short, MPI_SHORT),
    DT_INT("unsigned_short", unsigned short, MPI_UNSIGNED_SHORT),
    DT_INT("signed_char", signed char, MPI_SIGNED_CHAR),
    DT_INT("unsigned_char", unsigned char, MPI_UNSIGNED_CHAR),
    DT_INT("int8", int8_t, MPI_INT8_T),   DT_INT("uint8", uint8_t, MPI_UINT8_T),
    DT_INT("int16", int16_t, MPI_INT16_T), DT_INT("uint16", uint16_t, MPI_UINT16_T),
    DT_INT("int32", int32_t, MPI_INT32_T), DT_INT("uint32", uint32_t, MPI_UINT32_T),
    DT_INT("int64", int64_t, MPI_INT64_T), DT_INT("uint64", uint64_t, MPI_UINT64_T),
};
#undef DT_INT

/* Other names for the same types. */
static const struct { const char *alias, *name; } dtype_aliases[] = {
    {"half", "fp16"}, {"float16", "fp16"}, {"bfloat16", "bf16"}, {"char", "signed_char"},
    {"int8_t", "int8"}, {"uint8_t", "uint8"}, {"int16_t", "int16"}, {"uint16_t", "uint16"},
    {"int32_t", "int32"}, {"uint32_t", "uint32"}, {"int64_t", "int64"}, {"uint64_t", "uint64"},
    {"float32", "float"}, {"float64", "double"},
};

/* Bytes of an element that hold its value (x87 long double: 10 of 16). */
static int value_bytes(const struct dtype *dt)
{
#if LDBL_MANT_DIG == 64
    if (dt->kind == DK_LDOUBLE)
        return 10;
#endif
    return dt->size;
}

/* Small integers as IEEE binary16 / bfloat16 (exact: |v| <= 2048 / 256). */
static uint16_t small_int_to_half(int64_t v, enum dkind k)
{
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    if (k == DK_BF16)
        return (uint16_t)(u >> 16); /* exact: at most 8 significant bits */
    if (v == 0)
        return 0;
    uint32_t sign = (u >> 16) & 0x8000u, exp = (u >> 23) & 0xffu, man = u & 0x7fffffu;
    return (uint16_t)(sign | ((exp - 127 + 15) << 10) | (man >> 13));
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpix_bench [options]   (run under mpiexec; rank 0 prints)\n"
            "  -b, --minbytes N     smallest size (default 8; k/m/g suffixes)\n"
            "  -e, --maxbytes N     largest size (default 128M)\n"
            "  -f, --stepfactor F   size multiplication factor (default 2)\n"
            "  -c, --collective C   allreduce|reduce_scatter_block|allgather|bcast|reduce|\n"
            "                       allgatherv|reduce_scatter|alltoall|alltoallv|all, or a list:\n"
            "                       a,b (default allreduce). The sizes of allreduce, bcast,\n"
            "                       reduce, allgather and reduce_scatter_block are the whole\n"
            "                       vector (nccl-tests); those of allgatherv, reduce_scatter\n"
            "                       (MPI_Reduce_scatter, recvcounts per rank), alltoall and\n"
            "                       alltoallv are the bytes each rank sends (mean for the\n"
            "                       v-forms), with uneven counts in a fixed pattern: m = size\n"
            "                       / typesize (allgatherv) or size / typesize / p (the\n"
            "                       others); allgatherv: rank r sends m (r %% 3 + 1) / 2;\n"
            "                       reduce_scatter: recvcounts[r] = m (r %% 3 + 1) / 2;\n"
            "                       alltoall: m to every rank; alltoallv: rank i sends\n"
            "                       m ((i + 2 j) %% 3 + 1) / 2 to rank j (integer division)\n"
            "  -d, --datatype T     float|double|long_double|fp16 (half)|bf16|int|unsigned|\n"
            "                       long|unsigned_long|long_long|unsigned_long_long|short|\n"
            "                       unsigned_short|signed_char|unsigned_char|int8|uint8|int16|\n"
            "                       uint16|int32|uint32|int64|uint64 (default float); fp16/bf16\n"
            "                       are MPIX_HIER_FLOAT16/MPIX_HIER_BFLOAT16\n"
            "  -o, --op OP          sum|prod|max|min (default sum)\n"
            "  -m, --memory M       host|cuda (default host)\n"
            "  -n, --iters N        timed iterations (default 20)\n"
            "  -w, --warmup N       warm-up iterations (default 5)\n"
            "  -r, --root R         root of bcast/reduce (default 0)\n"
            "      --check          verify every result bit for bit (exit 1 if wrong); also\n"
            "                       -c 1 (and -c 0: off), as nccl-tests spells it\n"
            "      --nccl-tests     nccl-tests' table: one implementation (--impl, default\n"
            "                       hier), its out-of-place and in-place calls (MPI_IN_PLACE;\n"
            "                       alltoallv has none: N/A), then '# Out of bounds values' and\n"
            "                       '# Avg bus bandwidth' over both; NCCL_TESTS_MIN_BW=GB/s\n"
            "                       fails the run below 0.9 of it, as nccl-tests does\n"
            "  -g, -t N             nccl-tests' GPUs and threads per process: 1 only (one GPU\n"
            "                       per MPI rank)\n"
            "      --batch          time the ITERS calls back to back after one barrier and\n"
            "                       report total/ITERS (nccl-tests style: no barrier skew in\n"
            "                       latency-bound sizes); default: a barrier before every call\n"
            "      --impl LIST      hier,mpi (default), hier or mpi\n"
            "  -N, --nonblocking    the nonblocking collectives (MPIX_Hier_I*, MPI_I*), as\n"
            "                       OSU's osu_iallreduce: per size t_pure = post + MPI_Wait;\n"
            "                       then post, compute for t_pure (busy loop timed in wall\n"
            "                       time) calling MPI_Test every --test-interval us, MPI_Wait:\n"
            "                       t_total, t_compute (the loop without its MPI_Test calls)\n"
            "                       and overlap = max(0, 100 (1 - (t_total - t_compute) /\n"
            "                       t_pure)) %%; host memory; not with --batch or --plot\n"
            "      --test-interval US  -N: microseconds of computation between MPI_Test calls\n"
            "                       (default 50; 0: no MPI_Test, progress in MPI_Wait only)\n"
            "      --csv FILE       write the results as CSV\n"
            "      --json FILE      write the results as JSON\n"
            "      --plot FILE.png  busbw vs size plot via gnuplot (data: the --csv file, else\n"
            "                       FILE.csv; script: FILE.gp); needs gnuplot (gnuplot-nox)\n"
            "  -h, --help           this help\n");
}

/* Returns 0, or 2 after printing a message (rank 0) on a usage error, or -1 for -h. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
    static const struct option lopts[] = {
        {"minbytes", required_argument, NULL, 'b'}, {"maxbytes", required_argument, NULL, 'e'},
        {"stepfactor", required_argument, NULL, 'f'}, {"collective", required_argument, NULL, 'c'},
        {"datatype", required_argument, NULL, 'd'}, {"op", required_argument, NULL, 'o'},
        {"memory", required_argument, NULL, 'm'},   {"iters", required_argument, NULL, 'n'},
        {"warmup", required_argument, NULL, 'w'},   {"root", required_argument, NULL, 'r'},
        {"check", no_argument, NULL, 'C'},          {"impl", required_argument, NULL, 'I'},
        {"csv", required_argument, NULL, 'S'},      {"json", required_argument, NULL, 'J'},
        {"plot", required_argument, NULL, 'P'},     {"help", no_argument, NULL, 'h'},
        {"batch", no_argument, NULL, 'B'},
        {"nonblocking", no_argument, NULL, 'N'},  {"test-interval", required_argument, NULL, 'T'},
        {"nccl-tests", no_argument, NULL, 'K'},
        {NULL, 0, NULL, 0}};
    const int say = world_rank == 0;
    int c;

    memset(o, 0, sizeof(*o));
    o->minb = 8;
    o->maxb = (size_t)128 << 20;
    o->factor = 2;
    o->iters = 20;
    o->warmup = 5;
    o->colls[0] = C_ALLREDUCE;
    o->ncolls = 1;
    o->impl[IMPL_HIER] = o->impl[IMPL_MPI] = 1;
    o->dt = dtypes[0];
    o->op = OP_SUM;
    o->test_us = 50;
    opterr = say;
#define BAD(...)                                                                        \
    do {                                                                                \
        if (say) {                                                                      \
            fprintf(stderr, "mpix_bench: " __VA_ARGS__);                                \
            fprintf(stderr, "\n(mpix_bench -h for help)\n");                            \
        }                                                                               \
        return 2;                                                                       \
    } while (0)
    while ((c = getopt_long(argc, argv, "b:e:f:c:d:o:m:n:w:r:g:t:hN", lopts, NULL)) != -1) {
        switch (c) {
        case 'b':
            if (parse_bytes(optarg, &o->minb)) BAD("bad -b value '%s'", optarg);
            break;
        case 'e':
            if (parse_bytes(optarg, &o->maxb)) BAD("bad -e value '%s'", optarg);
            break;
        case 'f':
            if (parse_int(optarg, 2, 1 << 20, &o->factor))
                BAD("bad -f value '%s' (an integer >= 2)", optarg);
            break;
        case 'n':
            if (parse_int(optarg, 1, 1000000, &o->iters)) BAD("bad -n value '%s'", optarg);
            break;
        case 'w':
            if (parse_int(optarg, 0, 1000000, &o->warmup)) BAD("bad -w value '%s'", optarg);
            break;
        case 'r':
            if (parse_int(optarg, 0, INT_MAX - 1, &o->root)) BAD("bad -r value '%s'", optarg);
            break;
        case 'g':
        case 't':
            if (strcmp(optarg, "1"))
                BAD("-%c %s: one GPU and one thread per MPI rank (-%c 1; run more ranks)", c,
                    optarg, c);
            break;
        case 'c':
            if (!strcmp(optarg, "0") || !strcmp(optarg, "1")) { /* nccl-tests' -c CHECK */
                o->check = optarg[0] == '1';
            } else if (!strcmp(optarg, "all")) {
                for (int i = 0; i < NCOLL; i++)
                    o->colls[i] = i;
                o->ncolls = NCOLL;
            } else { /* one collective or a comma-separated list */
                char cbuf[256], *csave = NULL;
                snprintf(cbuf, sizeof(cbuf), "%s", optarg);
                o->ncolls = 0;
                for (char *t = strtok_r(cbuf, ",", &csave); t; t = strtok_r(NULL, ",", &csave)) {
                    int k = -1;
                    for (int i = 0; i < NCOLL; i++)
                        if (!strcmp(t, coll_names[i]))
                            k = i;
                    if (k < 0) BAD("unknown collective '%s'", t);
                    if (o->ncolls == NCOLL) BAD("too many collectives in '%s'", optarg);
                    o->colls[o->ncolls++] = k;
                }
                if (o->ncolls == 0) BAD("no collective in '%s'", optarg);
            }
            break;
        case 'd': {
            int k = -1;
            const char *name = optarg;
            for (size_t i = 0; i < sizeof(dtype_aliases) / sizeof(dtype_aliases[0]); i++)
                if (!strcmp(name, dtype_aliases[i].alias))
                    name = dtype_aliases[i].name;
            for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
                if (!strcmp(name, dtypes[i].name))
                    k = (int)i;
            if (k < 0) BAD("unknown datatype '%s' (mpix_bench -h lists them)", optarg);
            o->dt = dtypes[k];
            if (o->dt.kind == DK_FP16)
                o->dt.type = MPIX_HIER_FLOAT16;
            else if (o->dt.kind == DK_BF16)
                o->dt.type = MPIX_HIER_BFLOAT16;
            if (o->dt.type == MPI_DATATYPE_NULL) BAD("datatype '%s' is not available", optarg);
            break;
        }
        case 'B':
            o->batch = 1;
            break;
        case 'N':
            o->nonblocking = 1;
            break;
        case 'T':
            if (parse_int(optarg, 0, 10000000, &o->test_us))
                BAD("bad --test-interval value '%s' (microseconds, >= 0)", optarg);
            break;
        case 'o':
            if (!strcmp(optarg, "sum")) o->op = OP_SUM;
            else if (!strcmp(optarg, "prod")) o->op = OP_PROD;
            else if (!strcmp(optarg, "max")) o->op = OP_MAX;
            else if (!strcmp(optarg, "min")) o->op = OP_MIN;
            else BAD("unknown op '%s' (sum|prod|max|min)", optarg);
            break;
        case 'm':
            if (!strcmp(optarg, "cuda")) {
#ifdef MXH_BENCH_CUDA
                o->cuda = 1;
#else
                BAD("-m cuda: this mpix_bench was built without CUDA (configure --with-cuda)");
#endif
            } else if (strcmp(optarg, "host")) {
                BAD("unknown memory kind '%s' (host|cuda)", optarg);
            }
            break;
        case 'C': o->check = 1; break;
        case 'I': {
            char buf[64], *save = NULL;
            o->impl[0] = o->impl[1] = 0;
            o->impl_given = 1;
            snprintf(buf, sizeof(buf), "%s", optarg);
            for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (!strcmp(t, "hier")) o->impl[IMPL_HIER] = 1;
                else if (!strcmp(t, "mpi")) o->impl[IMPL_MPI] = 1;
                else BAD("unknown implementation '%s' (hier,mpi)", t);
            }
            if (!o->impl[0] && !o->impl[1]) BAD("--impl: empty list");
            break;
        }
        case 'K': o->nccl = 1; break;
        case 'S': o->csv = optarg; break;
        case 'J': o->json = optarg; break;
        case 'P': o->plot = optarg; break;
        case 'h':
            if (say) usage(stdout);
            return -1;
        default:
            if (say) fprintf(stderr, "(mpix_bench -h for help)\n");
            return 2;
        }
    }
    if (optind < argc) BAD("unexpected argument '%s'", argv[optind]);
    if (o->minb > o->maxb) BAD("-b %zu is larger than -e %zu", o->minb, o->maxb);
    if (o->maxb / (size_t)o->dt.size > (size_t)INT_MAX)
        BAD("-e %zu: more than INT_MAX elements of %s", o->maxb, o->dt.name);
    if (o->root >= world_size) BAD("-r %d: not a rank (%d ranks)", o->root, world_size);
    if (o->nonblocking && o->batch) BAD("--batch does not apply to -N (--nonblocking)");
    if (o->nonblocking && o->plot) BAD("--plot does not apply to -N (--nonblocking)");
    if (o->nonblocking && o->cuda) BAD("-N (--nonblocking) measures host memory only");
    if (o->nccl && o->nonblocking) BAD("--nccl-tests does not apply to -N (--nonblocking)");
    if (o->nccl && !o->impl_given)
        o->impl[IMPL_MPI] = 0; /* nccl-tests shows one implementation */
    if (o->nccl && o->impl[IMPL_HIER] && o->impl[IMPL_MPI])
        BAD("--nccl-tests shows one implementation: --impl hier or --impl mpi");
#undef BAD
    return 0;
}

/* ---- data --------------------------------------------------------------- */

/* Small integers, so that every reduction is exact in every type. */
static inline int64_t gen(int op, int r, size_t i)
{
    if (op == OP_PROD)
        return ((int)(i % (size_t)world_size) == r && i % 3 == 0) ? 2 : 1;
    return (int64_t)(((size_t)r * 7 + i * 13) % 5);
}

static inline void set_elem(const struct dtype *dt, void *buf, size_t i, int64_t v)
{
    char *p = (char *)buf + i * (size_t)dt->size;
    switch (dt->kind) {
    case DK_FLOAT:
        if (dt->size == 4) { float f = (float)v; memcpy(p, &f, 4); }
        else { double d = (double)v; memcpy(p, &d, 8); }
        return;
    case DK_LDOUBLE: {
        long double d = (long double)v;
        memset(p, 0, (size_t)dt->size);
        memcpy(p, &d, (size_t)value_bytes(dt));
        return;
    }
    case DK_FP16:
    case DK_BF16: {
        uint16_t h = small_int_to_half(v, dt->kind);
        memcpy(p, &h, 2);
        return;
    }
    default:
        break;
    }
    switch (dt->size) {
    case 1: { int8_t x = (int8_t)v; memcpy(p, &x, 1); break; }
    case 2: { int16_t x = (int16_t)v; memcpy(p, &x, 2); break; }
    case 4: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
    default: { int64_t x = v; memcpy(p, &x, 8); break; }
    }
}

static int64_t reduce_all(int op, size_t i)
{
    int64_t acc = gen(op, 0, i);
    for (int r = 1; r < world_size; r++) {
        int64_t v = gen(op, r, i);
        switch (op) {
        case OP_SUM: acc += v; break;
        case OP_PROD: acc *= v; break;
        case OP_MAX: acc = v > acc ? v : acc; break;
        default: acc = v < acc ? v : acc; break;
        }
    }
    return acc;
}

/* Elements of @ts bytes whose first @vs (value) bytes differ. */
static size_t count_wrong(const void *got, const void *exp, size_t n, int ts, int vs)
{
    size_t w = 0;
    if (vs == ts && memcmp(got, exp, n * (size_t)ts) == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        w += memcmp((const char *)got + i * (size_t)ts, (const char *)exp + i * (size_t)ts,
                    (size_t)vs) != 0;
    return w;
}

/* ---- results ------------------------------------------------------------ */

struct result {
    int coll;
    size_t bytes, count;
    double time_us[NIMPL], algbw[NIMPL], busbw[NIMPL]; /* -N: time_us is t_pure */
    long long wrong[NIMPL];
    double total_us[NIMPL], compute_us[NIMPL], overlap[NIMPL]; /* -N */
};

static struct result *results;
static size_t nresults, capresults;

static void push_result(const struct result *r)
{
    if (nresults == capresults) {
        capresults = capresults ? 2 * capresults : 64;
        results = realloc(results, capresults * sizeof(*results));
        if (!results) {
            fprintf(stderr, "mpix_bench: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    results[nresults++] = *r;
}

static double median(double *v, int n)
{
    for (int i = 1; i < n; i++) /* insertion sort; n is small */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j]; v[j] = v[j - 1]; v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double bus_factor(int coll)
{
    double p = world_size;
    switch (coll) {
    case C_ALLREDUCE: return 2.0 * (p - 1) / p;
    case C_RSB:
    case C_ALLGATHER:
    case C_ALLGATHERV:
    case C_REDUCE_SCATTER:
    case C_ALLTOALL:
    case C_ALLTOALLV: return (p - 1) / p;
    default: return 1.0;
    }
}

/* Plain MPI cannot apply MPI_SUM & co. to the (derived) half types: the "mpi"
 * column uses user-defined ops, as an application without mpix-hier would
 * (compute in float, round to nearest even). */
#define HALF_UOP(name, TOF, FROMF, EXPR)                                        \
    static void name(void *in, void *io, int *len, MPI_Datatype *dt)           \
    {                                                                           \
        const uint16_t *b = in;                                                 \
        uint16_t *a = io;                                                       \
        (void)dt;                                                               \
        for (int i = 0; i < *len; i++) {                                        \
            float x = TOF(a[i]), y = TOF(b[i]);                                 \
            a[i] = EXPR;                                                        \
        }                                                                       \
    }
HALF_UOP(fp16_sum, mxh_fp16_to_float, mxh_float_to_fp16, mxh_float_to_fp16(x + y))
HALF_UOP(fp16_prod, mxh_fp16_to_float, mxh_float_to_fp16, mxh_float_to_fp16(x * y))
HALF_UOP(fp16_max, mxh_fp16_to_float, mxh_float_to_fp16, x > y ? a[i] : b[i])
HALF_UOP(fp16_min, mxh_fp16_to_float, mxh_float_to_fp16, x < y ? a[i] : b[i])
HALF_UOP(bf16_sum, mxh_bf16_to_float, mxh_float_to_bf16, mxh_float_to_bf16(x + y))
HALF_UOP(bf16_prod, mxh_bf16_to_float, mxh_float_to_bf16, mxh_float_to_bf16(x * y))
HALF_UOP(bf16_max, mxh_bf16_to_float, mxh_float_to_bf16, x > y ? a[i] : b[i])
HALF_UOP(bf16_min, mxh_bf16_to_float, mxh_float_to_bf16, x < y ? a[i] : b[i])

static MPI_Op half_uop = MPI_OP_NULL; /* created in main for a half type */

static void half_uop_create(const struct opts *o)
{
    static MPI_User_function *const fns[2][4] = {{fp16_sum, fp16_prod, fp16_max, fp16_min},
                                                 {bf16_sum, bf16_prod, bf16_max, bf16_min}};
    if (o->dt.kind == DK_FP16 || o->dt.kind == DK_BF16)
        CHECK_MPI(MPI_Op_create(fns[o->dt.kind == DK_BF16][o->op], 1, &half_uop));
}

static MPI_Op mpi_op(int op)
{
    switch (op) {
    case OP_PROD: return MPI_PROD;
    case OP_MAX: return MPI_MAX;
    case OP_MIN: return MPI_MIN;
    default: return MPI_SUM;
    }
}

static const char *op_name(int op)
{
    static const char *const n[] = {"sum", "prod", "max", "min"};
    return n[op];
}

/* ---- -m cuda: device buffers. Inputs are made and results checked on the host
 * copies; the timed calls get device pointers. The mpi column is what a user of
 * a non-CUDA-aware MPI does: copy to the host, call MPI, copy back (timed). */
static char *dev_sbuf, *dev_rbuf[NIMPL];

#ifdef MXH_BENCH_CUDA
static char *stage_s, *stage_r;

static void cuda_check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "mpix_bench: %s: %s\n", what, cudaGetErrorString(e));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}
#define CUDA_CHECK(x) cuda_check((x), #x)

static void to_dev(void *dev, const void *host, size_t n)
{
    if (n)
        CUDA_CHECK(cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice));
}
static void to_host(void *host, const void *dev, size_t n)
{
    if (n)
        CUDA_CHECK(cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost));
}
#endif

/* ---- v-collectives and all-to-all: counts of one size ------------------- */

/* This rank's count and displacement arrays of the current size (allgatherv:
 * recvcounts/displs; reduce_scatter: recvcounts; alltoallv: all four; packed
 * displacements), and its elements sent (v_in) and received (v_out). */
static int *v_sc, *v_sd, *v_rc, *v_rd;
static size_t v_in, v_out, v_total; /* v_total: allgatherv: all blocks */
static size_t v_m;                   /* the mean count m of the size */

static int is_vcoll(int coll)
{
    return coll == C_ALLGATHERV || coll == C_REDUCE_SCATTER || coll == C_ALLTOALL ||
           coll == C_ALLTOALLV;
}

static int is_reduction(int coll)
{
    return coll == C_ALLREDUCE || coll == C_RSB || coll == C_REDUCE || coll == C_REDUCE_SCATTER;
}

/* allgatherv / reduce_scatter: rank r's block; alltoallv: what i sends to j */
static size_t v_block(size_t m, int r) { return m * (size_t)(r % 3 + 1) / 2; }
static size_t v_pair(size_t m, int i, int j) { return m * (size_t)((i + 2 * j) % 3 + 1) / 2; }

/* Fills the arrays for @size bytes of @ts-byte elements; returns the mean
 * element count the size stands for (0: nothing to measure). */
static size_t v_setup(int coll, size_t size, int ts)
{
    const int p = world_size, me = world_rank;
    size_t m = coll == C_ALLGATHERV ? size / (size_t)ts : size / (size_t)ts / (size_t)p;
    size_t off = 0;
    v_m = m;
    v_in = v_out = v_total = 0;
    for (int j = 0; j < p; j++) {
        size_t c;
        switch (coll) {
        case C_ALLGATHERV:
        case C_REDUCE_SCATTER:
            c = v_block(m, j);
            v_rc[j] = (int)c;
            v_rd[j] = (int)off;
            off += c;
            break;
        case C_ALLTOALL:
            v_sc[j] = v_rc[j] = (int)m;
            break;
        default:
            v_sc[j] = (int)v_pair(m, me, j);
            v_rc[j] = (int)v_pair(m, j, me);
            v_sd[j] = (int)v_in;
            v_rd[j] = (int)v_out;
            v_in += (size_t)v_sc[j];
            v_out += (size_t)v_rc[j];
            break;
        }
    }
    switch (coll) {
    case C_ALLGATHERV:
        v_in = (size_t)v_rc[me];
        v_out = v_total = off;
        return m;
    case C_REDUCE_SCATTER:
        v_in = off;
        v_out = (size_t)v_rc[me];
        return m * (size_t)p;
    case C_ALLTOALL:
        v_in = v_out = m * (size_t)p;
        return m * (size_t)p;
    default:
        return m * (size_t)p;
    }
}

/* Elements of the send and receive buffers of one call. */
static void io_elems(int coll, size_t count, size_t per_rank, size_t *in, size_t *out)
{
    if (is_vcoll(coll)) {
        *in = v_in;
        *out = v_out;
        return;
    }
    *in = coll == C_ALLGATHER ? per_rank : coll == C_BCAST ? 0 : count;
    *out = coll == C_RSB ? per_rank : count;
}

/* The bytes algbw divides by the time: the size, except for allgatherv (every
 * rank's blocks, as allgather's size is the whole gathered vector). */
static size_t alg_bytes(const struct result *r, int ts)
{
    return r->coll == C_ALLGATHERV ? v_total * (size_t)ts : r->bytes;
}

/* One call of collective @coll by implementation @impl: blocking when @req is
 * NULL, else posted (MPIX_Hier_I* / MPI_I*) with its request in @req. */
static void call_coll(int impl, int coll, const struct opts *o, const void *sbuf, void *rbuf,
                      size_t count, size_t per_rank, MPI_Request *req, int inplace)
{
    /* in place: the input is in rbuf (prepare_in_place); reduce's only at the root */
    if (inplace && coll != C_BCAST && (coll != C_REDUCE || world_rank == o->root))
        sbuf = MPI_IN_PLACE;
    MPI_Datatype t = o->dt.type;
    MPI_Op op = mpi_op(o->op);
    if (impl == IMPL_MPI && half_uop != MPI_OP_NULL)
        op = half_uop;
#ifdef SMPI_SHARED_MALLOC
    if (impl == IMPL_MPI)
        op = mxh_sim_mpi_op(op);
#endif
    int n = (int)count, pr = (int)per_rank;
    MPI_Comm w = MPI_COMM_WORLD;

/* MPIX_Hier_<lower> / MPIX_Hier_I<lower> / MPI_<Upper> / MPI_I<lower> (@impl, @req) */
#define COLL(lower, Upper, ...)                                                         \
    do {                                                                                \
        if (impl == IMPL_HIER && req)                                                   \
            CHECK_MPI(MPIX_Hier_I##lower(__VA_ARGS__, req));                            \
        else if (impl == IMPL_HIER)                                                     \
            CHECK_MPI(MPIX_Hier_##lower(__VA_ARGS__));                                  \
        else if (req)                                                                   \
            CHECK_MPI(MPI_I##lower(__VA_ARGS__, req));                                  \
        else                                                                            \
            CHECK_MPI(MPI_##Upper(__VA_ARGS__));                                        \
    } while (0)
    switch (coll) {
    case C_ALLREDUCE: COLL(allreduce, Allreduce, sbuf, rbuf, n, t, op, w); break;
    case C_RSB: COLL(reduce_scatter_block, Reduce_scatter_block, sbuf, rbuf, pr, t, op, w); break;
    case C_ALLGATHER: COLL(allgather, Allgather, sbuf, pr, t, rbuf, pr, t, w); break;
    case C_BCAST: COLL(bcast, Bcast, rbuf, n, t, o->root, w); break;
    case C_ALLGATHERV:
        COLL(allgatherv, Allgatherv, sbuf, v_rc[world_rank], t, rbuf, v_rc, v_rd, t, w);
        break;
    case C_REDUCE_SCATTER: COLL(reduce_scatter, Reduce_scatter, sbuf, rbuf, v_rc, t, op, w); break;
    case C_ALLTOALL: COLL(alltoall, Alltoall, sbuf, v_sc[0], t, rbuf, v_rc[0], t, w); break;
    case C_ALLTOALLV:
        COLL(alltoallv, Alltoallv, sbuf, v_sc, v_sd, t, rbuf, v_rc, v_rd, t, w);
        break;
    default: COLL(reduce, Reduce, sbuf, rbuf, n, t, op, o->root, w); break;
    }
#undef COLL
}

/* Copies @n bytes between buffers of the benchmark's memory kind. */
static void copy_bytes(const struct opts *o, void *dst, const void *src, size_t n)
{
#ifdef MXH_BENCH_CUDA
    if (o->cuda) {
        cuda_check(cudaMemcpy(dst, src, n, cudaMemcpyDefault), "cudaMemcpy");
        return;
    }
#endif
    (void)o;
    memcpy(dst, src, n);
}

/* In place: this rank's input where MPI_IN_PLACE reads it in @rbuf (outside the timing). */
static void prepare_in_place(int coll, const struct opts *o, const char *sbuf, char *rbuf,
                             size_t count, size_t per_rank)
{
    const size_t ts = (size_t)o->dt.size;
    size_t in, out;

    io_elems(coll, count, per_rank, &in, &out);
    switch (coll) {
    case C_BCAST: return; /* the buffer is the input at the root */
    case C_REDUCE:
        if (world_rank == o->root)
            copy_bytes(o, rbuf, sbuf, in * ts);
        return;
    case C_ALLGATHER: copy_bytes(o, rbuf + (size_t)world_rank * per_rank * ts, sbuf, in * ts); return;
    case C_ALLGATHERV: copy_bytes(o, rbuf + (size_t)v_rd[world_rank] * ts, sbuf, in * ts); return;
    default: copy_bytes(o, rbuf, sbuf, in * ts); return; /* the whole input */
    }
}

/* Whether @coll has an in-place form here (alltoallv's would need symmetric counts). */
static int has_in_place(int coll)
{
    return coll != C_ALLTOALLV;
}

/* One blocking call of collective @coll by implementation @impl (@inplace: MPI_IN_PLACE,
 * the input prepared in @rbuf); -m cuda: the mpi column copies the device buffers to the
 * host and back around the call. */
static void run_one(int impl, int coll, const struct opts *o, const void *sbuf, void *rbuf,
                    size_t count, size_t per_rank, int inplace)
{
#ifdef MXH_BENCH_CUDA
    if (impl == IMPL_MPI && o->cuda) {
        size_t ts = (size_t)o->dt.size;
        size_t in, out;
        io_elems(coll, count, per_rank, &in, &out);
        in *= ts;
        out *= ts;
        if (coll == C_BCAST || (inplace && (coll != C_REDUCE || world_rank == o->root)))
            to_host(stage_r, rbuf, in > out ? in : out);
        else
            to_host(stage_s, sbuf, in);
        call_coll(impl, coll, o, stage_s, stage_r, count, per_rank, NULL, inplace);
        if (coll != C_REDUCE || world_rank == o->root)
            to_dev(rbuf, stage_r, out);
        return;
    }
#endif
    call_coll(impl, coll, o, sbuf, rbuf, count, per_rank, NULL, inplace);
}

/* A result table's heads: the five columns every table starts with, then per
 * implementation a banner over @n columns (widths @w, names, units), then
 * hier/mpi. */
struct table {
    const char *banner[NIMPL];
    int n, w[5];
    const char *name[5], *unit[5];
    const char *ratio_unit;
};

static void put_heads(const struct opts *o, const struct table *t, const char *const *heads)
{
    for (int k = 0; k < NIMPL; k++)
        if (o->impl[k])
            for (int i = 0; i < t->n; i++)
                printf("%s%*s", i ? " " : "  ", t->w[i], heads[i]);
}

static void print_columns(const struct opts *o, const struct table *t)
{
    printf("# %12s %12s %8s %6s %5s", "", "", "", "", "");
    for (int k = 0; k < NIMPL; k++)
        if (o->impl[k])
            printf("  %s", t->banner[k]);
    printf("\n# %12s %12s %8s %6s %5s", "size", "count", "type", "redop", "root");
    put_heads(o, t, t->name);
    printf(" %9s\n# %12s %12s %8s %6s %5s", "hier/mpi", "(B)", "(elements)", "", "", "");
    put_heads(o, t, t->unit);
    printf(" %9s\n", t->ratio_unit);
    fflush(stdout);
}

static void print_table_header(int coll, const struct opts *o)
{
    static const struct table t = {
        {"------------- hier -------------", "-------------- mpi -------------"},
        4, {9, 7, 7, 7}, {"time", "algbw", "busbw", "#wrong"}, {"(us)", "(GB/s)", "(GB/s)", ""},
        "(time)"};
    printf("#\n# Collective: %s\n", coll_names[coll]);
    if (o->nccl) { /* nccl-tests' three lines, one implementation's two blocks */
        printf("# %12s %12s %8s %6s %5s  %32s  %32s\n", "", "", "", "", "",
               o->impl[IMPL_HIER] ? "out-of-place (hier)" : "out-of-place (mpi)",
               o->impl[IMPL_HIER] ? "in-place (hier)" : "in-place (mpi)");
        printf("# %12s %12s %8s %6s %5s", "size", "count", "type", "redop", "root");
        for (int b = 0; b < 2; b++)
            printf("  %9s %7s %7s %7s", "time", "algbw", "busbw", "#wrong");
        printf("\n# %12s %12s %8s %6s %5s", "(B)", "(elements)", "", "", "");
        for (int b = 0; b < 2; b++)
            printf("  %9s %7s %7s %7s", "(us)", "(GB/s)", "(GB/s)", "");
        printf("\n");
        fflush(stdout);
        return;
    }
    print_columns(o, &t);
}

#ifdef SMPI_SHARED_MALLOC
/* SimGrid SMPI: without --check the contents of the benchmark buffers do not
 * matter, so all simulated ranks share one copy (SMPI_SHARED_MALLOC: bounded
 * memory, and SMPI skips copying shared data); --check keeps private buffers. */
static void *buf_alloc(size_t n, int check)
{
    void *p = check ? xmalloc(n) : SMPI_SHARED_MALLOC(n);
    if (p == NULL) {
        fprintf(stderr, "mpix_bench: cannot allocate %zu bytes\n", n);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    return p;
}
static void buf_free(void *p, int check)
{
    if (p != NULL && !check)
        SMPI_SHARED_FREE(p);
    else
        free(p);
}
/* Shared buffers are never cleared: their contents do not matter, and 1024
 * simulated ranks writing 256 MiB each through their own mapping of the one
 * shared file took minutes of the run's setup. */
#define buf_shared(check) (!(check))
#else
#define buf_alloc(n, check) xmalloc(n)
#define buf_free(p, check) free(p)
#define buf_shared(check) 0
#endif

/* This rank's inputs of one size (and bcast's receive buffers). */
static void fill_inputs(const struct opts *o, int coll, char *sbuf, char *const *rbuf,
                        size_t count, size_t per_rank)
{
    switch (coll) {
    case C_ALLGATHERV: /* element i of the gathered vector: gen(owner, i) */
        for (size_t j = 0; j < v_in; j++)
            set_elem(&o->dt, sbuf, j, gen(o->op, world_rank, (size_t)v_rd[world_rank] + j));
        break;
    case C_REDUCE_SCATTER:
    case C_ALLTOALL:
    case C_ALLTOALLV: /* element x of the send buffer: gen(rank, x) */
        for (size_t j = 0; j < v_in; j++)
            set_elem(&o->dt, sbuf, j, gen(o->op, world_rank, j));
        break;
    case C_ALLGATHER:
        for (size_t j = 0; j < per_rank; j++)
            set_elem(&o->dt, sbuf, j, gen(o->op, world_rank, (size_t)world_rank * per_rank + j));
        break;
    case C_BCAST:
        for (int k = 0; k < NIMPL; k++)
            if (o->impl[k])
                for (size_t j = 0; j < count; j++)
                    set_elem(&o->dt, rbuf[k], j, world_rank == o->root ? gen(o->op, o->root, j) : 0);
        break;
    default:
        for (size_t j = 0; j < count; j++)
            set_elem(&o->dt, sbuf, j, gen(o->op, world_rank, j));
        break;
    }
}

/* This rank's expected output of one size; returns its number of elements. */
static size_t fill_expected(const struct opts *o, int coll, char *exp, size_t count,
                            size_t per_rank)
{
    switch (coll) {
    case C_ALLREDUCE: case C_REDUCE:
        for (size_t j = 0; j < count; j++)
            set_elem(&o->dt, exp, j, reduce_all(o->op, j));
        return count;
    case C_ALLGATHERV:
        for (int r = 0; r < world_size; r++)
            for (size_t j = 0; j < (size_t)v_rc[r]; j++)
                set_elem(&o->dt, exp, (size_t)v_rd[r] + j,
                         gen(o->op, r, (size_t)v_rd[r] + j));
        return v_out;
    case C_REDUCE_SCATTER:
        for (size_t j = 0; j < v_out; j++)
            set_elem(&o->dt, exp, j, reduce_all(o->op, (size_t)v_rd[world_rank] + j));
        return v_out;
    case C_ALLTOALL:
    case C_ALLTOALLV: /* the block from rank r: r's send elements to this rank */
        for (int r = 0; r < world_size; r++) {
            size_t sd = 0; /* where r's block for this rank starts in r's send buffer */
            for (int q = 0; q < world_rank; q++)
                sd += coll == C_ALLTOALL ? v_m : v_pair(v_m, r, q);
            size_t rd = coll == C_ALLTOALL ? (size_t)r * v_m : (size_t)v_rd[r];
            for (size_t j = 0; j < (size_t)v_rc[r]; j++)
                set_elem(&o->dt, exp, rd + j, gen(o->op, r, sd + j));
        }
        return v_out;
    case C_RSB:
        for (size_t j = 0; j < per_rank; j++)
            set_elem(&o->dt, exp, j, reduce_all(o->op, (size_t)world_rank * per_rank + j));
        return per_rank;
    case C_ALLGATHER:
        for (size_t j = 0; j < count; j++)
            set_elem(&o->dt, exp, j, gen(o->op, (int)(j / per_rank), j));
        return count;
    default:
        for (size_t j = 0; j < count; j++)
            set_elem(&o->dt, exp, j, gen(o->op, o->root, j));
        return count;
    }
}

/* ---- one size of one collective (both modes) ---------------------------- */

struct step {
    size_t count, per_rank;     /* the collective's count and count per rank */
    size_t nexp;                /* elements of the expected output (check_here) */
    size_t in_bytes, out_bytes; /* of this rank's send and receive buffers */
    int check_here;             /* --check, and this rank has an output */
};

/* Sets up @size bytes of @coll: the counts, this rank's inputs and expected
 * output. 0: nothing to measure (rank 0 says so). */
static int step_setup(int coll, const struct opts *o, size_t size, char *sbuf, char *rbuf[NIMPL],
                      char *exp, struct step *s)
{
    const int ts = o->dt.size, p = world_size;
    size_t in_elems, out_elems;

    memset(s, 0, sizeof(*s));
    if (is_vcoll(coll)) {
        s->count = s->per_rank = v_setup(coll, size, ts);
    } else if (coll == C_RSB || coll == C_ALLGATHER) {
        s->per_rank = size / ((size_t)ts * (size_t)p);
        s->count = s->per_rank * (size_t)p;
    } else {
        s->count = s->per_rank = size / (size_t)ts;
    }
    if (s->count == 0) {
        if (world_rank == 0)
            printf("# size %zu B: skipped (0 elements of %s%s)\n", size, o->dt.name,
                   coll == C_RSB || coll == C_ALLGATHER || is_vcoll(coll) ? " per rank" : "");
        return 0;
    }
    /* inputs (none in shared simulation buffers: 1024 ranks writing 256 MiB
     * each were most of a simulation's wall time) */
    if (!buf_shared(o->check))
        fill_inputs(o, coll, sbuf, rbuf, s->count, s->per_rank);
    /* expected output of this rank */
    s->check_here = o->check && (coll != C_REDUCE || world_rank == o->root);
    if (s->check_here)
        s->nexp = fill_expected(o, coll, exp, s->count, s->per_rank);
    io_elems(coll, s->count, s->per_rank, &in_elems, &out_elems);
    s->in_bytes = in_elems * (size_t)ts;
    s->out_bytes = out_elems * (size_t)ts;
    return 1;
}

/* Whether @size is the last size of the run (the next would pass -e). */
static int last_size(size_t size, const struct opts *o)
{
    return size > o->maxb / (size_t)o->factor || size == 0 || size * (size_t)o->factor > o->maxb;
}

/* --check: poisons the receive buffer before a call (not the bcast root's:
 * it holds the data); 1 if it did. */
static int poison(int coll, const struct opts *o, char *rbuf, const struct step *s)
{
    if (!o->check || (coll == C_BCAST && world_rank == o->root))
        return 0;
    memset(rbuf, 0xA5, s->out_bytes);
    return 1;
}

/* --check: the wrong elements of a result; *@worst: the most in one call. */
static void note_wrong(const struct opts *o, const char *rbuf, const char *exp,
                       const struct step *s, long long *worst)
{
    if (s->check_here) {
        long long w = (long long)count_wrong(rbuf, exp, s->nexp, o->dt.size, value_bytes(&o->dt));
        if (w > *worst)
            *worst = w;
    }
}

/* A result row. Every rank: @wg = the sums over ranks of @wl (#wrong). Rank 0:
 * the five first columns (and @r's fields); returns 1 there, 0 elsewhere. */
static int row_begin(struct result *r, int coll, const struct opts *o, const struct step *s,
                     long long wl[2 * NIMPL], long long wg[2 * NIMPL])
{
    const int rooted = coll == C_BCAST || coll == C_REDUCE;
    CHECK_MPI(MPI_Allreduce(wl, wg, 2 * NIMPL, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (world_rank != 0)
        return 0;
    memset(r, 0, sizeof(*r));
    r->coll = coll;
    r->bytes = s->count * (size_t)o->dt.size;
    r->count = s->count;
    printf("  %12zu %12zu %8s %6s %5d", r->bytes, s->count, o->dt.name,
           is_reduction(coll) ? op_name(o->op) : "none", rooted ? o->root : -1);
    return 1;
}

/* An implementation's #wrong column (last of its columns). */
static void row_wrong(struct result *r, int k, const struct opts *o, long long wrong,
                      int *any_wrong)
{
    r->wrong[k] = o->check ? wrong : -1;
    if (wrong)
        *any_wrong = 1;
    if (o->check)
        printf(" %7lld", wrong);
    else
        printf(" %7s", "N/A");
}

/* The row's hier/mpi column; @r kept for the output files. */
static void row_end(struct result *r, const struct opts *o)
{
    if (o->impl[0] && o->impl[1] && r->time_us[IMPL_MPI] > 0)
        printf(" %9.3f\n", r->time_us[IMPL_HIER] / r->time_us[IMPL_MPI]);
    else
        printf(" %9s\n", "N/A");
    fflush(stdout);
    push_result(r);
}

/* Busbw sums over the rows printed (both columns of --nccl-tests), for '# Avg bus
 * bandwidth', and the wrong elements of the implementations shown. */
static double avg_bw_sum[NIMPL];
static int avg_bw_n[NIMPL];
static long long oob_total;

/* A timing block of a row: time, algbw, busbw, #wrong; the busbw counts in the average. */
static void put_block(struct result *r, int k, const struct opts *o, double t, long long wrong,
                      int *any_wrong, int first)
{
    const double algbw = t > 0 ? (double)alg_bytes(r, o->dt.size) / t / 1e9 : 0.0;
    const double busbw = algbw * bus_factor(r->coll);

    if (first) { /* the row's figures for the files: out of place */
        r->time_us[k] = t * 1e6;
        r->algbw[k]   = algbw;
        r->busbw[k]   = busbw;
    }
    printf("  %9.2f %7.3f %7.3f", t * 1e6, algbw, busbw);
    avg_bw_sum[k] += busbw;
    avg_bw_n[k]++;
    if (first)
        row_wrong(r, k, o, wrong, any_wrong);
    else if (o->check)
        printf(" %7lld", wrong);
    else
        printf(" %7s", "N/A");
    if (wrong && !first)
        *any_wrong = 1;
    oob_total += wrong;
}

/* Variant v of implementation k: v = 2 k + in_place (in place with --nccl-tests only). */
#define NVAR (2 * NIMPL)

static void bench_coll(int coll, const struct opts *o, char *sbuf, char *rbuf[NIMPL],
                       char *exp, int *any_wrong)
{
    const int nt = o->warmup + o->iters, nip = o->nccl && has_in_place(coll) ? 2 : 1;
    double *tl = xmalloc(sizeof(double) * (size_t)NVAR * (size_t)o->iters);
    double *tg = xmalloc(sizeof(double) * (size_t)NVAR * (size_t)o->iters);

    if (world_rank == 0)
        print_table_header(coll, o);
    int last = 0;
    for (size_t size = o->minb; !last; size *= (size_t)o->factor) {
        long long wl[NVAR] = {0}, wg[NVAR] = {0};
        struct step s;
        struct result r;

        last = last_size(size, o);
        if (!step_setup(coll, o, size, sbuf, rbuf, exp, &s))
            continue;
#ifdef MXH_BENCH_CUDA
        if (o->cuda) {
            to_dev(dev_sbuf, sbuf, s.in_bytes);
            if (coll == C_BCAST)
                for (int k = 0; k < NIMPL; k++)
                    if (o->impl[k])
                        to_dev(dev_rbuf[k], rbuf[k], s.out_bytes);
        }
#endif
        if (o->batch && !o->check) {
            /* warm-up per call, then the timed calls back to back (in place: the input
             * is prepared once; the reductions' results are not checked in this mode) */
            for (int v = 0; v < NVAR; v++) {
                const int k = v / 2, ip = v % 2;
                char *sb = o->cuda ? dev_sbuf : sbuf, *rb = o->cuda ? dev_rbuf[k] : rbuf[k];
                double t0, t1;
                if (!o->impl[k] || ip >= nip)
                    continue;
                if (ip)
                    prepare_in_place(coll, o, sb, rb, s.count, s.per_rank);
                for (int it = 0; it < o->warmup; it++)
                    run_one(k, coll, o, sb, rb, s.count, s.per_rank, ip);
                CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
                t0 = MPI_Wtime();
                for (int it = 0; it < o->iters; it++)
                    run_one(k, coll, o, sb, rb, s.count, s.per_rank, ip);
                t1 = MPI_Wtime();
                for (int it = 0; it < o->iters; it++)
                    tl[v * o->iters + it] = (t1 - t0) / o->iters;
            }
        }
        for (int it = 0; it < nt && !(o->batch && !o->check); it++) {
            for (int v = 0; v < NVAR; v++) {
                const int k = v / 2, ip = v % 2;
                double t0, t1;
                char *sb = o->cuda ? dev_sbuf : sbuf, *rb = o->cuda ? dev_rbuf[k] : rbuf[k];
                if (!o->impl[k] || ip >= nip)
                    continue;
#ifdef MXH_BENCH_CUDA
                if (poison(coll, o, rbuf[k], &s) && o->cuda)
                    to_dev(dev_rbuf[k], rbuf[k], s.out_bytes);
#else
                poison(coll, o, rbuf[k], &s);
#endif
                if (ip)
                    prepare_in_place(coll, o, sb, rb, s.count, s.per_rank);
                CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
                t0 = MPI_Wtime();
                run_one(k, coll, o, sb, rb, s.count, s.per_rank, ip);
                t1 = MPI_Wtime();
                if (it >= o->warmup)
                    tl[v * o->iters + (it - o->warmup)] = t1 - t0;
#ifdef MXH_BENCH_CUDA
                if (s.check_here && o->cuda)
                    to_host(rbuf[k], dev_rbuf[k], s.out_bytes);
#endif
                note_wrong(o, rbuf[k], exp, &s, &wl[v]);
            }
        }
        CHECK_MPI(MPI_Allreduce(tl, tg, NVAR * o->iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
        if (row_begin(&r, coll, o, &s, wl, wg)) {
            for (int v = 0; v < NVAR; v++) {
                const int k = v / 2, ip = v % 2;
                if (!o->impl[k] || (ip && !o->nccl))
                    continue;
                if (ip >= nip) { /* no in-place form */
                    printf("  %9s %7s %7s %7s", "N/A", "N/A", "N/A", "N/A");
                    continue;
                }
                put_block(&r, k, o, median(tg + v * o->iters, o->iters), wg[v], any_wrong, !ip);
            }
            if (o->nccl) {
                printf("\n");
                fflush(stdout);
                push_result(&r);
            } else {
                row_end(&r, o);
            }
        }
    }
    free(tl);
    free(tg);
}

/* ---- -N: nonblocking collectives with computation overlapped ------------ */

static const char *const nb_names[NIMPL][NCOLL] = {
    {"MPIX_Hier_Iallreduce", "MPIX_Hier_Ireduce_scatter_block", "MPIX_Hier_Iallgather",
     "MPIX_Hier_Ibcast", "MPIX_Hier_Ireduce", "MPIX_Hier_Iallgatherv",
     "MPIX_Hier_Ireduce_scatter", "MPIX_Hier_Ialltoall", "MPIX_Hier_Ialltoallv"},
    {"MPI_Iallreduce", "MPI_Ireduce_scatter_block", "MPI_Iallgather", "MPI_Ibcast",
     "MPI_Ireduce", "MPI_Iallgatherv", "MPI_Ireduce_scatter", "MPI_Ialltoall",
     "MPI_Ialltoallv"}};

static volatile double nb_sink; /* keeps the busy loop's arithmetic */

/* The application's computation: a busy loop running until @secs of wall time
 * have passed outside MPI_Test, calling MPI_Test(@req) every o->test_us
 * microseconds until it completes. Returns the time spent in MPI_Test. */
static double compute_and_test(double secs, const struct opts *o, MPI_Request *req)
{
    double x = nb_sink, t0 = MPI_Wtime(), in_test = 0.0, now;
    double gap = o->test_us * 1e-6, next = t0 + gap;

    while ((now = MPI_Wtime()) - t0 - in_test < secs) {
        for (int i = 0; i < 32; i++) /* a little work between clock reads */
            x = x * 0.999999 + 1e-6;
        if (o->test_us > 0 && *req != MPI_REQUEST_NULL && now >= next) {
            int flag = 0;
            CHECK_MPI(MPI_Test(req, &flag, MPI_STATUS_IGNORE));
            double after = MPI_Wtime();
            in_test += after - now;
            next = after + gap;
        }
    }
    nb_sink = x;
    return in_test;
}

static void print_table_header_nb(int coll, const struct opts *o)
{
    static const struct table t = { /* banners: 45 characters, the five columns below */
        {"-------------------- hier -------------------",
         "-------------------- mpi --------------------"},
        5, {9, 9, 9, 7, 7}, {"t_total", "t_compute", "t_pure", "overlap", "#wrong"},
        {"(us)", "(us)", "(us)", "(%)", ""}, "(t_pure)"};
    printf("#\n# Collective: %s (nonblocking: %s vs %s; MPI_Test every %d us of computation%s)\n",
           coll_names[coll], nb_names[IMPL_HIER][coll], nb_names[IMPL_MPI][coll], o->test_us,
           o->test_us ? "" : ": none, progress in MPI_Wait only");
    print_columns(o, &t);
}

/* One collective over all sizes in -N mode. Per size and implementation:
 * ITERS timed iterations (after WARMUP) of post + MPI_Wait give t_pure (median
 * of the max over ranks, the same on every rank); then ITERS iterations (after
 * WARMUP) of post, compute_and_test(t_pure), MPI_Wait give t_total and
 * t_compute (medians of the max over ranks). Every call is preceded by a
 * barrier; --check verifies the result of every call. */
static void bench_coll_nb(int coll, const struct opts *o, char *sbuf, char *rbuf[NIMPL],
                          char *exp, int *any_wrong)
{
    const int ts = o->dt.size;
    const int nt = o->warmup + o->iters;
    /* per iteration: t_pure sample, t_total, t_compute */
    double *tl = xmalloc(sizeof(double) * 3 * (size_t)o->iters);
    double *tg = xmalloc(sizeof(double) * 3 * (size_t)o->iters);

    if (world_rank == 0)
        print_table_header_nb(coll, o);
    int last = 0;
    for (size_t size = o->minb; !last; size *= (size_t)o->factor) {
        long long wl[2 * NIMPL] = {0}, wg[2 * NIMPL] = {0};
        double pure[NIMPL] = {0, 0}, total[NIMPL] = {0, 0}, comp[NIMPL] = {0, 0};
        struct step s;
        struct result r;

        last = last_size(size, o);
        if (!step_setup(coll, o, size, sbuf, rbuf, exp, &s))
            continue;
        for (int k = 0; k < NIMPL; k++) {
            if (!o->impl[k])
                continue;
            for (int phase = 0; phase < 2; phase++) { /* 0: t_pure, 1: overlapped */
                for (int it = 0; it < nt; it++) {
                    MPI_Request req = MPI_REQUEST_NULL;
                    double t0, tc0, tc1, t1, in_test = 0.0;
                    poison(coll, o, rbuf[k], &s);
                    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
                    t0 = MPI_Wtime();
                    call_coll(k, coll, o, sbuf, rbuf[k], s.count, s.per_rank, &req, 0);
                    tc0 = MPI_Wtime();
                    if (phase == 1)
                        in_test = compute_and_test(pure[k], o, &req);
                    tc1 = MPI_Wtime();
                    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
                    t1 = MPI_Wtime();
                    if (it >= o->warmup) {
                        int i = it - o->warmup;
                        if (phase == 0) {
                            tl[i] = t1 - t0;
                        } else {
                            tl[o->iters + i] = t1 - t0;
                            tl[2 * o->iters + i] = tc1 - tc0 - in_test;
                        }
                    }
                    note_wrong(o, rbuf[k], exp, &s, &wl[k]);
                }
                if (phase == 0) { /* t_pure, the same on every rank */
                    CHECK_MPI(MPI_Allreduce(tl, tg, o->iters, MPI_DOUBLE, MPI_MAX,
                                            MPI_COMM_WORLD));
                    pure[k] = median(tg, o->iters);
                } else {
                    CHECK_MPI(MPI_Allreduce(tl + o->iters, tg + o->iters, 2 * o->iters,
                                            MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
                    total[k] = median(tg + o->iters, o->iters);
                    comp[k] = median(tg + 2 * o->iters, o->iters);
                }
            }
        }
        if (row_begin(&r, coll, o, &s, wl, wg)) {
            for (int k = 0; k < NIMPL; k++) {
                if (!o->impl[k])
                    continue;
                double ov = pure[k] > 0 ? 100.0 * (1.0 - (total[k] - comp[k]) / pure[k]) : 0.0;
                r.time_us[k] = pure[k] * 1e6;
                r.algbw[k] = pure[k] > 0 ? (double)alg_bytes(&r, ts) / pure[k] / 1e9 : 0.0;
                r.busbw[k] = r.algbw[k] * bus_factor(coll);
                r.total_us[k] = total[k] * 1e6;
                r.compute_us[k] = comp[k] * 1e6;
                r.overlap[k] = ov > 0 ? ov : 0.0;
                printf("  %9.2f %9.2f %9.2f %7.1f", r.total_us[k], r.compute_us[k], r.time_us[k],
                       r.overlap[k]);
                row_wrong(&r, k, o, wg[k], any_wrong);
            }
            row_end(&r, o);
        }
    }
    free(tl);
    free(tg);
}

/* ---- header and output files ------------------------------------------- */

static void print_header(const struct opts *o)
{
    int maj, min, pat, len = 0, n = 0;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    char *desc;

    CHECK_MPI(MPIX_Hier_get_version(&maj, &min, &pat));
    CHECK_MPI(MPI_Get_library_version(lib, &len));
    lib[strcspn(lib, "\n")] = '\0';
    for (char *c = lib; *c; c++)
        if (*c == '\t')
            *c = ' ';
    /* collective on every rank */
    CHECK_MPI(MPIX_Hier_comm_describe(MPI_COMM_WORLD, NULL, 0, &len));
    desc = xmalloc((size_t)len + 1);
    CHECK_MPI(MPIX_Hier_comm_describe(MPI_COMM_WORLD, desc, len + 1, NULL));
    if (world_rank != 0) {
        free(desc);
        return;
    }
    if (o->nccl)
        printf("# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: %d(factor) warmup iters: %d "
               "iters: %d agg iters: 1 validation: %d graph: 0\n#\n",
               o->minb, o->maxb, o->factor, o->warmup, o->iters, o->check);
    printf("# mpix_bench: mpix-hier %d.%d.%d, %s\n", maj, min, pat, lib);
    printf("# ranks: %d, type %s, op %s, root %d, sizes %zu..%zu x%d, iters %d, warmup %d, "
           "check %s, impl %s%s%s, memory %s\n",
           world_size, o->dt.name, op_name(o->op), o->root, o->minb, o->maxb, o->factor, o->iters,
           o->warmup, o->check ? "on" : "off", o->impl[0] ? "hier" : "",
           o->impl[0] && o->impl[1] ? "," : "", o->impl[1] ? "mpi" : "",
           o->cuda ? "cuda (mpi column: staged through host copies)" : "host");
    printf("# hierarchy of MPI_COMM_WORLD (MPIX_Hier_comm_describe):\n");
    for (char *line = desc, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        if (!nl) {
            printf("#   %s\n", line);
            break;
        }
        printf("#   %.*s\n", (int)(nl - line), line);
    }
    printf("# config (MPIX_HIER_* variables set on rank 0):\n");
    for (char **e = environ; e && *e; e++)
        if (!strncmp(*e, "MPIX_HIER_", 10)) {
            printf("#   %s\n", *e);
            n++;
        }
    if (!n)
        printf("#   (none: defaults)\n");
    if (o->batch && !o->check)
        printf("# times: --batch: %d calls back to back after one barrier, elapsed/calls, max "
               "over ranks\n", o->iters);
    if (o->nonblocking)
        printf("# mode: nonblocking (-N): t_pure = post + MPI_Wait; then post, compute for "
               "t_pure calling MPI_Test every %d us, MPI_Wait: t_total, t_compute (without the "
               "MPI_Test calls);\n#   overlap = max(0, 100 (1 - (t_total - t_compute) / t_pure)) "
               "%%; a barrier before every call\n", o->test_us);
    printf("# times: median over iterations of the max over ranks; GB = 1e9 B; busbw factors:\n"
           "#   allreduce 2(p-1)/p, reduce_scatter_block/allgather/allgatherv/reduce_scatter/"
           "alltoall/alltoallv (p-1)/p, bcast/reduce 1\n"
           "#   allgatherv/reduce_scatter/alltoall/alltoallv: size = bytes each rank sends (mean); "
           "allgatherv's algbw: all ranks' bytes\n");
    fflush(stdout);
    free(desc);
}

static void put_num(FILE *f, double v, int on) /* CSV helper */
{
    if (on)
        fprintf(f, "%.3f", v);
}

static int write_csv(const char *path, const struct opts *o)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "mpix_bench: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (o->nonblocking)
        fprintf(f, "collective,size_bytes,count,type,redop,root,hier_total_us,hier_compute_us,"
                   "hier_pure_us,hier_overlap_pct,hier_wrong,mpi_total_us,mpi_compute_us,"
                   "mpi_pure_us,mpi_overlap_pct,mpi_wrong,hier_over_mpi\n");
    else
        fprintf(f, "collective,size_bytes,count,type,redop,root,hier_time_us,hier_algbw_gbs,"
                   "hier_busbw_gbs,hier_wrong,mpi_time_us,mpi_algbw_gbs,mpi_busbw_gbs,mpi_wrong,"
                   "hier_over_mpi\n");
    for (size_t i = 0; i < nresults; i++) {
        const struct result *r = &results[i];
        int rooted = r->coll == C_BCAST || r->coll == C_REDUCE;
        int red = is_reduction(r->coll);
        fprintf(f, "%s,%zu,%zu,%s,%s,%d", coll_names[r->coll], r->bytes, r->count, o->dt.name,
                red ? op_name(o->op) : "none", rooted ? o->root : -1);
        for (int k = 0; k < NIMPL; k++) {
            if (o->nonblocking) {
                fputc(',', f); put_num(f, r->total_us[k], o->impl[k]);
                fputc(',', f); put_num(f, r->compute_us[k], o->impl[k]);
                fputc(',', f); put_num(f, r->time_us[k], o->impl[k]);
                fputc(',', f); put_num(f, r->overlap[k], o->impl[k]);
            } else {
                fputc(',', f); put_num(f, r->time_us[k], o->impl[k]);
                fputc(',', f); put_num(f, r->algbw[k], o->impl[k]);
                fputc(',', f); put_num(f, r->busbw[k], o->impl[k]);
            }
            fputc(',', f);
            if (o->impl[k] && r->wrong[k] >= 0)
                fprintf(f, "%lld", r->wrong[k]);
        }
        fputc(',', f);
        if (o->impl[0] && o->impl[1] && r->time_us[1] > 0)
            fprintf(f, "%.4f", r->time_us[0] / r->time_us[1]);
        fputc('\n', f);
    }
    return fclose(f) ? -1 : 0;
}

static int write_json(const char *path, const struct opts *o)
{
    int maj, min, pat;
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "mpix_bench: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    MPIX_Hier_get_version(&maj, &min, &pat);
    fprintf(f, "{\n  \"version\": \"%d.%d.%d\",\n  \"ranks\": %d,\n  \"type\": \"%s\",\n"
               "  \"op\": \"%s\",\n  \"root\": %d,\n  \"iters\": %d,\n  \"warmup\": %d,\n"
               "  \"check\": %s,\n  \"mode\": \"%s\",\n",
            maj, min, pat, world_size, o->dt.name, op_name(o->op), o->root, o->iters, o->warmup,
            o->check ? "true" : "false", o->nonblocking ? "nonblocking" : "blocking");
    if (o->nonblocking)
        fprintf(f, "  \"test_interval_us\": %d,\n", o->test_us);
    fprintf(f, "  \"results\": [");
    for (size_t i = 0; i < nresults; i++) {
        const struct result *r = &results[i];
        fprintf(f, "%s\n    {\"collective\": \"%s\", \"size_bytes\": %zu, \"count\": %zu",
                i ? "," : "", coll_names[r->coll], r->bytes, r->count);
        for (int k = 0; k < NIMPL; k++) {
            if (!o->impl[k])
                continue;
            if (o->nonblocking)
                fprintf(f, ", \"%s\": {\"t_total_us\": %.3f, \"t_compute_us\": %.3f, "
                           "\"t_pure_us\": %.3f, \"overlap_pct\": %.2f, \"wrong\": ",
                        impl_names[k], r->total_us[k], r->compute_us[k], r->time_us[k],
                        r->overlap[k]);
            else
                fprintf(f, ", \"%s\": {\"time_us\": %.3f, \"algbw_gbs\": %.4f, "
                           "\"busbw_gbs\": %.4f, \"wrong\": ",
                        impl_names[k], r->time_us[k], r->algbw[k], r->busbw[k]);
            if (r->wrong[k] >= 0)
                fprintf(f, "%lld}", r->wrong[k]);
            else
                fprintf(f, "null}");
        }
        if (o->impl[0] && o->impl[1] && r->time_us[1] > 0)
            fprintf(f, ", \"hier_over_mpi\": %.4f", r->time_us[0] / r->time_us[1]);
        fprintf(f, "}");
    }
    fprintf(f, "\n  ]\n}\n");
    return fclose(f) ? -1 : 0;
}

static int in_path(const char *prog)
{
    const char *path = getenv("PATH");
    char buf[4096];

    while (path && *path) {
        size_t n = strcspn(path, ":");
        if (n > 0 && n < sizeof(buf) - strlen(prog) - 2) {
            snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, prog);
            if (access(buf, X_OK) == 0)
                return 1;
        }
        path += n;
        if (*path == ':')
            path++;
    }
    return 0;
}

/* FILE.png -> FILE + @ext (FILE.png.gp style when the name has no .png). */
static char *sibling(const char *png, const char *ext)
{
    size_t n = strlen(png);
    char *out = xmalloc(n + strlen(ext) + 1);
    if (n > 4 && !strcmp(png + n - 4, ".png"))
        n -= 4;
    memcpy(out, png, n);
    strcpy(out + n, ext);
    return out;
}

/* gnuplot string literal: single quotes doubled */
static void put_gp_string(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        fputc(*s, f);
    }
    fputc('\'', f);
}

/* A size in binary units for the plot's tics: 512, 4K, 1M (K = 2^10, M = 2^20, G = 2^30). */
static void size_label(char *buf, size_t len, size_t b)
{
    if (b >= ((size_t)1 << 30) && b % ((size_t)1 << 30) == 0)
        snprintf(buf, len, "%zuG", b >> 30);
    else if (b >= ((size_t)1 << 20) && b % ((size_t)1 << 20) == 0)
        snprintf(buf, len, "%zuM", b >> 20);
    else if (b >= 1024 && b % 1024 == 0)
        snprintf(buf, len, "%zuK", b >> 10);
    else
        snprintf(buf, len, "%zu", b);
}

/* One panel's lines: CSV column @hier_col (hier) and @hier_col + 4 (mpi) per collective. */
static void plot_lines(FILE *fg, const struct opts *o, int hier_col)
{
    int first = 1;

    fprintf(fg, "plot ");
    for (int c = 0; c < NCOLL; c++) {
        int any = 0;
        for (size_t i = 0; i < nresults && !any; i++)
            any = results[i].coll == c;
        if (!any)
            continue;
        for (int k = 0; k < NIMPL; k++) {
            if (!o->impl[k])
                continue;
            fprintf(fg, "%scsv every ::1 using 2:(strcol(1) eq '%s' ? column(%d) : NaN) "
                        "with linespoints title '%s %s'",
                    first ? "" : ", \\\n     ", coll_names[c], hier_col + 4 * k, coll_names[c],
                    impl_names[k]);
            first = 0;
        }
    }
    fprintf(fg, "%s\n", first ? "NaN notitle" : "");
}

/* The plot, read by gnuplot from the CSV file @csv (already written): busbw vs size
 * (linear) above, time vs size (log) below, one line per collective and implementation,
 * the x tics at the measured sizes in binary units. Writes the script FILE.gp and runs
 * gnuplot; 0 on success, -1 (message printed) otherwise. */
static int write_plot(const char *png, const char *csv, const struct opts *o)
{
    char *gp = sibling(png, ".gp"), *cmd = NULL, label[32];
    FILE *fg = fopen(gp, "w");
    int rc = 0, nsizes = 0, every;

    if (!fg) {
        fprintf(stderr, "mpix_bench: cannot write %s: %s\n", gp, strerror(errno));
        free(gp);
        return -1;
    }
    fprintf(fg, "# mpix_bench --plot: busbw and time vs size; data: the CSV file below\n"
                "set terminal png size 1000,900\nset output ");
    put_gp_string(fg, png);
    fprintf(fg, "\nset datafile separator ','\ncsv = ");
    put_gp_string(fg, csv);
    fprintf(fg, "\nset multiplot layout 2,1 title 'mpix\\_bench: %d ranks, %s, %s'\n"
                "set logscale x 2\nset grid\nset key left top\n"
                "set xlabel 'size (bytes; K = 1024, M = 1024^2, G = 1024^3)' noenhanced\n",
            world_size, o->dt.name, op_name(o->op));
    /* tics at the measured sizes, at most 16 of them */
    for (size_t b = o->minb; b && b <= o->maxb; b *= (size_t)o->factor) {
        nsizes++;
        if (b > o->maxb / (size_t)o->factor)
            break;
    }
    every = nsizes > 16 ? (nsizes + 15) / 16 : 1;
    fprintf(fg, "set xtics (");
    int i = 0;
    for (size_t b = o->minb; b && b <= o->maxb; b *= (size_t)o->factor, i++) {
        if (i % every == 0) {
            size_label(label, sizeof(label), b);
            fprintf(fg, "%s'%s' %zu", i ? ", " : "", label, b);
        }
        if (b > o->maxb / (size_t)o->factor)
            break;
    }
    size_t lastb = o->minb;
    while (lastb && lastb <= o->maxb / (size_t)o->factor)
        lastb *= (size_t)o->factor;
    /* a margin on both sides, so that the end points and their tics show */
    fprintf(fg, ")\nset xrange [%g:%g]\nset ylabel 'busbw (GB/s)'\n", (double)o->minb / 1.4,
            (double)lastb * 1.4);
    plot_lines(fg, o, 9);
    fprintf(fg, "set logscale y 10\nset ylabel 'time (us)'\n");
    plot_lines(fg, o, 7);
    fprintf(fg, "unset multiplot\n");
    if (fclose(fg)) {
        fprintf(stderr, "mpix_bench: cannot write %s\n", gp);
        free(gp);
        return -1;
    }
    if (!in_path("gnuplot")) {
        fprintf(stderr, "mpix_bench: --plot: gnuplot not found in PATH, %s not drawn "
                        "(install gnuplot, Debian: apt-get install gnuplot-nox; then run: "
                        "gnuplot %s). The data is in %s.\n", png, gp, csv);
        rc = -1;
    } else {
        cmd = xmalloc(2 * strlen(gp) + 32);
        char *q = cmd + sprintf(cmd, "gnuplot ");
        *q++ = '\'';
        for (const char *c = gp; *c; c++) { /* shell single quotes */
            if (*c == '\'') { strcpy(q, "'\\''"); q += 4; }
            else *q++ = *c;
        }
        strcpy(q, "'");
        if (system(cmd) != 0) {
            fprintf(stderr, "mpix_bench: --plot: '%s' failed\n", cmd);
            rc = -1;
        } else {
            printf("# plot: %s (data %s, script %s)\n", png, csv, gp);
        }
        free(cmd);
    }
    free(gp);
    return rc;
}

/* nccl-tests' closing lines: the wrong elements of every row shown (0 OK without a check,
 * as there) and the mean busbw of the rows (both blocks of --nccl-tests; the default table
 * adds MPI's). 1 if NCCL_TESTS_MIN_BW is set and the mean is below 0.9 of it. */
static int avg_bw_below_min(const struct opts *o)
{
    const int k     = o->impl[IMPL_HIER] ? IMPL_HIER : IMPL_MPI;
    const double bw = avg_bw_n[k] ? avg_bw_sum[k] / avg_bw_n[k] : 0;
    const char *env = getenv("NCCL_TESTS_MIN_BW");
    const double min = env && *env ? atof(env) : -1;

    printf("# Out of bounds values : %lld %s\n", oob_total, oob_total ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %g %s", bw, min < 0 ? "" : bw < 0.9 * min ? "FAILED" : "OK");
    if (!o->nccl && o->impl[IMPL_HIER] && o->impl[IMPL_MPI] && avg_bw_n[IMPL_MPI])
        printf("(%s; %s: %g)", impl_names[k], impl_names[IMPL_MPI],
               avg_bw_sum[IMPL_MPI] / avg_bw_n[IMPL_MPI]);
    printf("\n#\n");
    return min >= 0 && bw < 0.9 * min;
}

int main(int argc, char **argv)
{
    struct opts o;
    char *sbuf, *rbuf[NIMPL] = {NULL, NULL}, *exp = NULL;
    int any_wrong = 0, bad_files = 0, rc;
    char *plot_csv = NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);

    rc = parse_opts(argc, argv, &o);
    if (rc != 0) {
        MPI_Finalize();
        return rc < 0 ? 0 : rc;
    }
    print_header(&o);
    half_uop_create(&o);
    if (world_rank == 0 && o.plot && !in_path("gnuplot"))
        printf("# warning: --plot: gnuplot not found in PATH: the data will be written but not "
               "drawn, and the exit status will be 3\n");

    /* the v-forms' uneven counts need up to 1.5 times the size (allgatherv's
     * receive buffer: 1.5 times the size per rank) */
    size_t cap = o.maxb;
    for (int i = 0; i < o.ncolls; i++) {
        if (is_vcoll(o.colls[i]) && cap < 2 * o.maxb)
            cap = 2 * o.maxb;
        if (o.colls[i] == C_ALLGATHERV && cap < 2 * o.maxb * (size_t)world_size)
            cap = 2 * o.maxb * (size_t)world_size;
    }
    v_sc = xmalloc(sizeof(int) * (size_t)world_size);
    v_sd = xmalloc(sizeof(int) * (size_t)world_size);
    v_rc = xmalloc(sizeof(int) * (size_t)world_size);
    v_rd = xmalloc(sizeof(int) * (size_t)world_size);
    sbuf = buf_alloc(cap, o.check);
    for (int k = 0; k < NIMPL; k++)
        if (o.impl[k])
            rbuf[k] = buf_alloc(cap, o.check);
    if (o.check)
        exp = xmalloc(cap);
    if (!buf_shared(o.check))
        memset(sbuf, 0, cap);
#ifdef MXH_BENCH_CUDA
    if (o.cuda) {
        int ndev = 0, none;
        none = cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0;
        CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &none, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
        if (none) {
            if (world_rank == 0)
                printf("# -m cuda: no CUDA device on some rank: nothing measured\n");
            MPI_Finalize();
            return 2;
        }
        CUDA_CHECK(cudaMalloc((void **)&dev_sbuf, cap));
        for (int k = 0; k < NIMPL; k++)
            if (o.impl[k])
                CUDA_CHECK(cudaMalloc((void **)&dev_rbuf[k], cap));
        stage_s = xmalloc(cap);
        stage_r = xmalloc(cap);
    }
#endif

    for (int i = 0; i < o.ncolls; i++) {
        if (o.nonblocking)
            bench_coll_nb(o.colls[i], &o, sbuf, rbuf, exp, &any_wrong);
        else
            bench_coll(o.colls[i], &o, sbuf, rbuf, exp, &any_wrong);
    }

#ifdef MXH_BENCH_CUDA
    if (o.cuda) {
        cudaFree(dev_sbuf);
        for (int k = 0; k < NIMPL; k++)
            cudaFree(dev_rbuf[k]);
        free(stage_s);
        free(stage_r);
    }
#endif
    buf_free(sbuf, o.check);
    buf_free(rbuf[0], o.check);
    buf_free(rbuf[1], o.check);
    free(exp);
    free(v_sc);
    free(v_sd);
    free(v_rc);
    free(v_rd);
    if (half_uop != MPI_OP_NULL)
        MPI_Op_free(&half_uop);
    CHECK_MPI(MPI_Bcast(&any_wrong, 1, MPI_INT, 0, MPI_COMM_WORLD));
    int below_min = world_rank == 0 && !o.nonblocking && avg_bw_below_min(&o);
    CHECK_MPI(MPI_Bcast(&below_min, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (world_rank == 0) {
        if (o.check)
            printf("# check: %s\n", any_wrong ? "WRONG ELEMENTS FOUND" : "all results correct");
        else
            printf("# check: off (--check to verify results)\n");
        if (o.csv && write_csv(o.csv, &o)) bad_files = 1;
        if (o.plot && !o.csv) { /* the plot's data */
            plot_csv = sibling(o.plot, ".csv");
            if (write_csv(plot_csv, &o)) bad_files = 1;
        }
        if (o.json && write_json(o.json, &o)) bad_files = 1;
        fflush(stdout);
    }
    MPI_Finalize();
    /* gnuplot runs after MPI_Finalize (no fork() under MPI) */
    if (world_rank == 0 && o.plot && !bad_files &&
        write_plot(o.plot, o.csv ? o.csv : plot_csv, &o))
        bad_files = 1;
    free(plot_csv);
    free(results);
    return any_wrong || below_min ? 1 : bad_files ? 3 : 0;
}
