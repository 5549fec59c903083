// MPIX_HIER_FLOAT16 / MPIX_HIER_BFLOAT16 under mpiexec (1-4 ranks, fake node
// layouts from mpi/run_half_tests.sh): every MPIX_Hier_* collective against a
// host reference computed on every rank, bit for bit; the user ops of
// mxh_reduce_mpi_op with plain MPI_Allreduce / MPI_Reduce_scatter_block;
// bitwise identity of results across ranks on random data; MPI_ERR_OP for
// ops the half types do not have.
//
// Data are exact in any reduction order (small integers for SUM, +-1/+-2 for
// PROD, no -0 for MAX/MIN), so the reference does not depend on the order.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "mpi_util.hh"
#include "mxh_test_shim.h"
extern "C" {
#include "reduce/half.h"
#include "reduce/reduce.h"
}

namespace {

using mxh_test::world_rank;
using mxh_test::world_size;

struct Kind {
    const char *name;
    MPI_Datatype (*type)(void);
    float (*to_float)(uint16_t);
    uint16_t (*from_float)(float);
};
const Kind kKinds[] = {
    {"fp16", MPIX_Hier_type_float16, mxh_fp16_to_float, mxh_float_to_fp16},
    {"bf16", MPIX_Hier_type_bfloat16, mxh_bf16_to_float, mxh_float_to_bf16},
};
const MPI_Op kOps[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN};
const char *op_name(MPI_Op op)
{
    return op == MPI_SUM ? "sum" : op == MPI_PROD ? "prod" : op == MPI_MAX ? "max" : "min";
}

// Value of element i on rank r for op (as float; exact in both formats).
float value(MPI_Op op, int r, size_t i)
{
    if (op == MPI_SUM)
        return (float)((int)((r * 7 + i * 13) % 9) - 4);
    if (op == MPI_PROD)
        return (i + (size_t)r) % 5 == 0 ? -2.0f : ((i * 3 + (size_t)r) % 7 == 0 ? 2.0f : 1.0f);
    return (float)((int)((r * 31 + i * 17) % 201) - 100) * 0.375f;
}

std::vector<uint16_t> input(const Kind &k, MPI_Op op, int r, size_t n, size_t first = 0)
{
    std::vector<uint16_t> v(n);
    for (size_t i = 0; i < n; i++)
        v[i] = k.from_float(value(op, r, first + i));
    return v;
}

// The reduction over all ranks of element i, as the library must produce it.
uint16_t expected(const Kind &k, MPI_Op op, size_t i)
{
    const int p = world_size();
    float acc = k.to_float(k.from_float(value(op, 0, i)));
    for (int r = 1; r < p; r++) {
        float v = k.to_float(k.from_float(value(op, r, i)));
        if (op == MPI_SUM) acc += v;
        else if (op == MPI_PROD) acc *= v;
        else if (op == MPI_MAX) acc = v > acc ? v : acc;
        else acc = v < acc ? v : acc;
    }
    return k.from_float(acc);
}

long first_bad(const std::vector<uint16_t> &got, const Kind &k, MPI_Op op, size_t first)
{
    for (size_t i = 0; i < got.size(); i++)
        if (got[i] != expected(k, op, first + i))
            return (long)i;
    return -1;
}

const size_t kCounts[] = {1, 2, 7, 33, 1000, 65537};

// Collectives run on a dup of MPI_COMM_WORLD with MPI_ERRORS_RETURN, so that an
// error is a test failure (with its message) rather than an abort of the job.
class Half : public MxhMpiTest {
  protected:
    void SetUp() override
    {
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    }
    void TearDown() override
    {
        MPI_Comm_free(&comm);
        MxhMpiTest::TearDown();
    }
    MPI_Comm comm = MPI_COMM_NULL;
};

std::string err_string(int rc)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS)
        return "?";
    return std::string(s, (size_t)len);
}

#define EXPECT_MPI_OK(call)                                                     \
    do {                                                                        \
        int rc_ = (call);                                                       \
        EXPECT_EQ(MPI_SUCCESS, rc_) << #call << ": " << err_string(rc_);        \
    } while (0)

// ---- the user ops with plain MPI (no MPIX_Hier_ collective involved) ----------

TEST_F(Half, MpiOpsWithPlainMpiAllreduce)
{
    for (const Kind &k : kKinds)
        for (MPI_Op op : kOps)
            for (size_t n : kCounts) {
                MPI_Datatype dt = k.type();
                std::vector<uint16_t> in = input(k, op, world_rank(), n), out(n, 0xdead);
                EXPECT_MPI_OK(MPI_Allreduce(in.data(), out.data(), (int)n, dt,
                                            mxh_reduce_mpi_op(dt, op), comm));
                long b = first_bad(out, k, op, 0);
                EXPECT_EQ(-1, b) << k.name << " " << op_name(op) << " n " << n;
            }
}

TEST_F(Half, MpiOpsWithPlainMpiReduceScatterBlock)
{
    const int p = world_size(), me = world_rank();
    for (const Kind &k : kKinds)
        for (MPI_Op op : kOps) {
            const size_t blk = 1001;
            MPI_Datatype dt = k.type();
            std::vector<uint16_t> in = input(k, op, me, blk * (size_t)p), out(blk, 0xdead);
            EXPECT_MPI_OK(MPI_Reduce_scatter_block(in.data(), out.data(), (int)blk, dt,
                                                   mxh_reduce_mpi_op(dt, op), comm));
            EXPECT_EQ(-1, first_bad(out, k, op, blk * (size_t)me)) << k.name << " "
                                                                    << op_name(op);
        }
}

// ---- MPIX_Hier_* collectives ---------------------------------------------------------

TEST_F(Half, HierAllreduce)
{
    for (const Kind &k : kKinds)
        for (MPI_Op op : kOps)
            for (size_t n : kCounts)
                for (int inplace = 0; inplace < 2; inplace++) {
                    std::vector<uint16_t> in = input(k, op, world_rank(), n), out(n, 0xdead);
                    if (inplace)
                        out = in;
                    EXPECT_MPI_OK(MPIX_Hier_allreduce(inplace ? MPI_IN_PLACE : in.data(),
                                                      out.data(), (int)n, k.type(), op,
                                                      comm));
                    EXPECT_EQ(-1, first_bad(out, k, op, 0))
                        << k.name << " " << op_name(op) << " n " << n << " inplace " << inplace;
                }
}

TEST_F(Half, HierReduceScatterBlock)
{
    const int p = world_size(), me = world_rank();
    for (const Kind &k : kKinds)
        for (MPI_Op op : kOps)
            for (size_t blk : {(size_t)1, (size_t)5, (size_t)4097}) {
                std::vector<uint16_t> in = input(k, op, me, blk * (size_t)p), out(blk, 0xdead);
                EXPECT_MPI_OK(MPIX_Hier_reduce_scatter_block(in.data(), out.data(), (int)blk,
                                                             k.type(), op, comm));
                EXPECT_EQ(-1, first_bad(out, k, op, blk * (size_t)me))
                    << k.name << " " << op_name(op) << " block " << blk;
            }
}

TEST_F(Half, HierReduceEveryRoot)
{
    const int p = world_size(), me = world_rank();
    for (const Kind &k : kKinds)
        for (MPI_Op op : kOps)
            for (size_t n : {(size_t)3, (size_t)1000, (size_t)65537})
                for (int root = 0; root < p; root++) {
                    std::vector<uint16_t> in = input(k, op, me, n), out(n, 0xdead);
                    EXPECT_MPI_OK(MPIX_Hier_reduce(in.data(), out.data(), (int)n, k.type(), op,
                                                   root, comm));
                    if (me == root)
                        EXPECT_EQ(-1, first_bad(out, k, op, 0))
                            << k.name << " " << op_name(op) << " n " << n << " root " << root;
                    else
                        EXPECT_EQ(0xdead, out[0]) << "non-root recvbuf written";
                }
}

// random bit patterns (NaNs included) must travel untouched
std::vector<uint16_t> random_bits(size_t n, uint32_t seed)
{
    std::vector<uint16_t> v(n);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        v[i] = (uint16_t)x;
    }
    return v;
}

TEST_F(Half, HierAllgatherAndBcastMoveBitsUntouched)
{
    const int p = world_size(), me = world_rank();
    for (const Kind &k : kKinds)
        for (size_t n : kCounts) {
            std::vector<uint16_t> mine = random_bits(n, (uint32_t)me + 1), all(n * (size_t)p);
            EXPECT_MPI_OK(MPIX_Hier_allgather(mine.data(), (int)n, k.type(), all.data(), (int)n,
                                              k.type(), comm));
            for (int r = 0; r < p; r++)
                EXPECT_EQ(0, memcmp(all.data() + (size_t)r * n,
                                    random_bits(n, (uint32_t)r + 1).data(), 2 * n))
                    << k.name << " allgather n " << n << " block of rank " << r;
            for (int root = 0; root < p; root++) {
                std::vector<uint16_t> buf = me == root ? random_bits(n, 77u + (uint32_t)root)
                                                       : std::vector<uint16_t>(n, 0);
                EXPECT_MPI_OK(MPIX_Hier_bcast(buf.data(), (int)n, k.type(), root, comm));
                EXPECT_EQ(0, memcmp(buf.data(), random_bits(n, 77u + (uint32_t)root).data(), 2 * n))
                    << k.name << " bcast n " << n << " root " << root;
            }
        }
}

// Random finite data: the sums are rounded, and every rank must still hold
// the same bits (each element reduced once, in one order).
TEST_F(Half, HierAllreduceRandomDataIdenticalOnAllRanks)
{
    const int p = world_size();
    for (const Kind &k : kKinds)
        for (MPI_Op op : {MPI_SUM, MPI_PROD}) {
            const size_t n = 100003;
            std::vector<uint16_t> in = random_bits(n, 1000u + (uint32_t)world_rank()), out(n);
            for (uint16_t &x : in) // finite values of moderate magnitude, rounded sums
                x = k.from_float((float)((int)(x % 2001) - 1000) / 256.0f);
            EXPECT_MPI_OK(MPIX_Hier_allreduce(in.data(), out.data(), (int)n, k.type(), op,
                                              comm));
            uint64_t h = mxh_hash_bytes_fnv(1469598103934665603ull, out.data(), 2 * n);
            std::vector<uint64_t> all((size_t)p);
            MPI_Allgather(&h, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);
            for (int r = 0; r < p; r++)
                EXPECT_EQ(all[0], all[(size_t)r]) << k.name << " " << op_name(op) << ": rank "
                                                  << r << " differs from rank 0";
        }
}

TEST_F(Half, OpsTheHalfTypesLackAreMpiErrOp)
{
    MPI_Comm c = comm;
    uint16_t a[4] = {0x3c00, 0x3c00, 0x3c00, 0x3c00}, b[4];
    for (const Kind &k : kKinds)
        for (MPI_Op op : {MPI_LAND, MPI_BOR, MPI_MAXLOC}) {
            int rc = MPIX_Hier_allreduce(a, b, 4, k.type(), op, c);
            int cls = -1;
            MPI_Error_class(rc, &cls);
            EXPECT_EQ(MPI_ERR_OP, cls) << k.name;
            EXPECT_NE(std::string::npos, err_string(rc).find(k.name == std::string("fp16")
                                                                 ? "MPIX_HIER_FLOAT16"
                                                                 : "MPIX_HIER_BFLOAT16"))
                << err_string(rc);
        }
}

// MPICH's MPIX_C_FLOAT16 (mpi4py's MPI.FLOAT16_T) is reduced by the library's fp16
// ops: the same bits as MPIX_HIER_FLOAT16 (MPICH 4.0.2 would abort reducing it)
TEST_F(Half, MpichFloat16IsReducedLikeOurs)
{
#ifdef MPIX_C_FLOAT16
    int size;
    MPI_Comm_size(comm, &size);
    // 1.0 from every rank: size ranks give size.0 (exact in fp16 up to 2048)
    static const uint16_t kInt[] = {0, 0x3c00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600, 0x4700, 0x4800};
    uint16_t a[4] = {0x3c00, 0x3c00, 0x3c00, 0x3c00}, b[4] = {0}, ours[4] = {0};
    ASSERT_EQ(MPI_SUCCESS, MPIX_Hier_allreduce(a, b, 4, MPIX_C_FLOAT16, MPI_SUM, comm));
    ASSERT_EQ(MPI_SUCCESS, MPIX_Hier_allreduce(a, ours, 4, MPIX_HIER_FLOAT16, MPI_SUM, comm));
    for (int i = 0; i < 4; i++) {
        EXPECT_EQ(ours[i], b[i]) << i;
        if (size < 9) {
            EXPECT_EQ(kInt[size], b[i]) << i;
        }
    }
    for (MPI_Op op : {MPI_MAX, MPI_MIN}) {
        ASSERT_EQ(MPI_SUCCESS, MPIX_Hier_allreduce(a, b, 4, MPIX_C_FLOAT16, op, comm));
        EXPECT_EQ(0x3c00, b[0]);
    }
#else
    GTEST_SKIP() << "this MPI has no MPIX_C_FLOAT16";
#endif
}

} // namespace
