// MPIX_Hier_* on device and managed buffers, against MPICH's own collectives
// on host copies of the same data (bit for bit, value bytes), on every rank
// sharing the node's GPUs (rank i uses device i % ndev; several ranks per GPU
// is the normal case on the one-GPU test machine). Run by run_cuda_tests.sh
// on 1, 2 and 4 ranks and on fake multi-node layouts (MPIX_HIER_HOSTNAME).
//
// Without a CUDA device on some rank, every test skips on every rank with
// "no CUDA device" (a collective decision), and the runner reports SKIP.
//
// MXH_TEST_QUICK=1 trims the matrix (counts 0, 1, 7).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mxh_test_shim.h"
#include "reduce/half.h"

namespace {

int g_gpu = -1; // collective: 1 every rank has a device, 0 not

bool have_gpu()
{
    if (g_gpu < 0) {
        int n = 0, local, all = 0, rank;
        local = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
        if (!local)
            (void)cudaGetLastError();
        MPI_Allreduce(&local, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        g_gpu = all;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (local)
            cudaSetDevice(rank % n);
    }
    return g_gpu == 1;
}

#define SKIP_WITHOUT_GPU()                                                     \
    do {                                                                       \
        if (!have_gpu())                                                       \
            GTEST_SKIP() << "no CUDA device";                                  \
    } while (0)

bool quick() { return mxh_env_int("MXH_TEST_QUICK", 0) != 0; }

std::vector<int> counts()
{
    if (quick())
        return {0, 1, 7};
    return {0, 1, 2, 3, 7, 31, 1009, 65537};
}

enum Mem { HOST = 0, DEVICE, MANAGED };
const char *mem_name(Mem m) { return m == HOST ? "host" : m == DEVICE ? "device" : "managed"; }

// A buffer of one memory kind; @off bytes past an aligned allocation (odd
// offsets exercise the kernels' scalar head/tail and IPC offsets).
struct GBuf {
    Mem kind;
    size_t bytes, off;
    char *base = nullptr;
    GBuf(Mem k, size_t n, size_t o = 0) : kind(k), bytes(n), off(o)
    {
        size_t all = n + o + 64;
        if (k == HOST)
            base = (char *)std::malloc(all);
        else if (k == DEVICE)
            cudaMalloc((void **)&base, all);
        else
            cudaMallocManaged((void **)&base, all);
    }
    ~GBuf()
    {
        if (kind == HOST)
            std::free(base);
        else if (base)
            cudaFree(base);
    }
    char *p() const { return base + off; }
    void put(const void *src) { cudaMemcpy(p(), src, bytes, cudaMemcpyDefault); }
    void get(void *dst) const { cudaMemcpy(dst, p(), bytes, cudaMemcpyDefault); }
    GBuf(const GBuf &) = delete;
    GBuf &operator=(const GBuf &) = delete;
};

std::string errstr(int rc)
{
    char s[MPI_MAX_ERROR_STRING];
    int l = 0;
    MPI_Error_string(rc, s, &l);
    return std::string(s, (size_t)l);
}

// Failures are counted per test; results hashed for cross-rank identity.
struct Check {
    MPI_Comm comm;
    int rank, size, failures = 0;
    std::vector<uint64_t> hashes;
    explicit Check(MPI_Comm c) : comm(c)
    {
        MPI_Comm_rank(c, &rank);
        MPI_Comm_size(c, &size);
    }
    void fail(const std::string &m)
    {
        if (++failures <= 10)
            ADD_FAILURE() << m << " [rank " << rank << "/" << size << "]";
    }
    void rc(int rc, const std::string &what)
    {
        if (rc != MPI_SUCCESS)
            fail(what + ": " + errstr(rc));
    }
    void same(const mxh_type_t *t, const void *got, const void *want, size_t n,
              const std::string &what)
    {
        char msg[512];
        if (mxh_compare(t, 0, got, want, n, msg, sizeof(msg)) >= 0)
            fail(what + ": differs from MPICH: " + msg);
        hashes.push_back(mxh_hash(t, 0, got, n));
    }
    void finish()
    {
        int bad = -1;
        if (!mxh_hashes_agree(comm, hashes.data(), (int)hashes.size(), &bad))
            fail("results not bitwise identical across ranks (case " + std::to_string(bad) + ")");
    }
};

struct Pair {
    const mxh_type_t *t;
    MPI_Op op;
};

// Reducible pairs MPICH itself accepts (so that a reference exists).
std::vector<Pair> pairs()
{
    std::vector<Pair> v;
    for (int i = 0; i < mxh_num_types(); i++) {
        const mxh_type_t *t = mxh_type_at(i);
        for (int k = 0; k < mxh_num_ops(); k++) {
            MPI_Op op = mxh_op_at(k);
            if (mxh_op_allowed(t, op) && mxh_op_mpich_ok(t, op))
                v.push_back({t, op});
        }
    }
    return v;
}

std::string label(const char *coll, const Pair &p, int count, Mem m, bool inplace)
{
    return std::string(coll) + " " + p.t->name + " " + mxh_op_name(p.op) + " count " +
           std::to_string(count) + " " + mem_name(m) + (inplace ? " in-place" : "");
}

class CudaColls : public MxhMpiTest, public ::testing::WithParamInterface<int> {
  protected:
    Mem mem() const { return (Mem)GetParam(); }
};

void allreduce_case(Check &ck, const Pair &p, int count, Mem ms, Mem mr, bool inplace, size_t off)
{
    size_t ext = (size_t)p.t->extent, bytes = (size_t)count * ext;
    std::vector<unsigned char> in(bytes + 1), want(bytes + 1), got(bytes + 1);
    mxh_fill(p.t, p.op, in.data(), (size_t)count, ck.rank, 11u + (uint64_t)count);
    ck.rc(MPI_Allreduce(in.data(), want.data(), count, p.t->type, p.op, ck.comm), "reference");
    GBuf s(ms, bytes, off), r(mr, bytes, off);
    (inplace ? r : s).put(in.data());
    int rc = MPIX_Hier_allreduce(inplace ? MPI_IN_PLACE : s.p(), r.p(), count, p.t->type, p.op,
                                 ck.comm);
    std::string what = label("allreduce", p, count, mr, inplace);
    ck.rc(rc, what);
    r.get(got.data());
    ck.same(p.t, got.data(), want.data(), (size_t)count, what);
}

TEST_P(CudaColls, AllreduceAllTypesOps)
{
    SKIP_WITHOUT_GPU();
    Check ck(MPI_COMM_WORLD);
    for (const Pair &p : pairs())
        for (int c : counts())
            for (int ip = 0; ip < 2; ip++)
                allreduce_case(ck, p, c, mem(), mem(), ip != 0, 0);
    ck.finish();
}

TEST_P(CudaColls, AllreduceOddOffsetsLarge)
{
    SKIP_WITHOUT_GPU();
    Check ck(MPI_COMM_WORLD);
    const mxh_type_t *f = mxh_type_find(MPI_FLOAT), *d = mxh_type_find(MPI_DOUBLE),
                     *i8 = mxh_type_find(MPI_INT8_T);
    for (size_t off : {0, 4, 8, 12})
        for (int c : {1 << 20, (1 << 22) + 3, 999983})
            allreduce_case(ck, {f, MPI_SUM}, c, mem(), mem(), false, off);
    allreduce_case(ck, {d, MPI_MAX}, (1 << 21) + 1, mem(), mem(), true, 8);
    allreduce_case(ck, {i8, MPI_BXOR}, (1 << 22) + 5, mem(), mem(), false, 3);
    ck.finish();
}

TEST_P(CudaColls, AllreduceMixedHostDevice)
{
    SKIP_WITHOUT_GPU();
    Check ck(MPI_COMM_WORLD);
    const mxh_type_t *t = mxh_type_find(MPI_INT);
    // every rank passes one GPU buffer: even ranks a host sendbuf, odd a host recvbuf
    Mem s = ck.rank % 2 ? mem() : HOST, r = ck.rank % 2 ? HOST : mem();
    for (int c : counts())
        allreduce_case(ck, {t, MPI_SUM}, c, s, r, false, 0);
    ck.finish();
}

TEST_P(CudaColls, ReduceScatterBlockAllTypesOps)
{
    SKIP_WITHOUT_GPU();
    Check ck(MPI_COMM_WORLD);
    for (const Pair &p : pairs())
        for (int c : counts()) {
            if (c > 1009)
                continue;
            for (int ip = 0; ip < 2; ip++) {
                size_t ext = (size_t)p.t->extent, all = (size_t)c * ext * (size_t)ck.size;
                std::vector<unsigned char> in(all + 1), want((size_t)c * ext + 1),
                    got((size_t)c * ext + 1);
                mxh_fill(p.t, p.op, in.data(), (size_t)c * (size_t)ck.size, ck.rank, 21u);
                ck.rc(MPI_Reduce_scatter_block(in.data(), want.data(), c, p.t->type, p.op, ck.comm),
                      "reference");
                GBuf s(mem(), all), r(mem(), ip ? all : (size_t)c * ext);
                (ip ? r : s).put(in.data());
                std::string what = label("reduce_scatter_block", p, c, mem(), ip);
                ck.rc(MPIX_Hier_reduce_scatter_block(ip ? MPI_IN_PLACE : s.p(), r.p(), c, p.t->type,
                                                     p.op, ck.comm),
                      what);
                cudaMemcpy(got.data(), r.p(), (size_t)c * ext, cudaMemcpyDefault);
                mxh_compare(p.t, 0, got.data(), want.data(), (size_t)c, nullptr, 0) >= 0
                    ? ck.fail(what + ": differs from MPICH")
                    : (void)0;
            }
        }
    ck.finish();
}

TEST_P(CudaColls, ReduceAllRoots)
{
    SKIP_WITHOUT_GPU();
    Check ck(MPI_COMM_WORLD);
    for (const Pair &p : pairs())
        for (int c : {1, 7, 1009})
            for (int root = 0; root < ck.size; root++) {
                size_t bytes = (size_t)c * (size_t)p.t->extent;
                bool ip = (root + c) % 2 == 0;
                std::vector<unsigned char> in(bytes + 1), want(bytes + 1), got(bytes + 1);
                mxh_fill(p.t, p.op, in.data(), (size_t)c, ck.rank, 31u);
                ck.rc(MPI_Reduce(in.data(), want.data(), c, p.t->type, p.op, root, ck.comm),
                      "reference");
                GBuf s(mem(), bytes), r(mem(), bytes);
                bool iproot = ip && ck.rank == root;
                (iproot ? r : s).put(in.data());
                std::string what = label("reduce", p, c, mem(), iproot) + " root " +
                                   std::to_string(root);
                ck.rc(MPIX_Hier_reduce(iproot ? MPI_IN_PLACE : s.p(), r.p(), c, p.t->type, p.op,
                                       root, ck.comm),
                      what);
                if (ck.rank == root) {
                    r.get(got.data());
                    if (mxh_compare(p.t, 0, got.data(), want.data(), (size_t)c, nullptr, 0) >= 0)
                        ck.fail(what + ": differs from MPICH");
                }
            }
    ck.finish();
}

TEST_P(CudaColls, AllgatherAndBcast)
{
    SKIP_WITHOUT_GPU();
    Check ck(MPI_COMM_WORLD);
    const mxh_type_t *types[] = {mxh_type_find(MPI_BYTE), mxh_type_find(MPI_INT),
                                 mxh_type_find(MPI_DOUBLE), mxh_type_find(MPI_LONG_DOUBLE)};
    for (const mxh_type_t *t : types) {
        if (t == nullptr)
            continue;
        for (int c : counts()) {
            size_t blk = (size_t)c * (size_t)t->extent, all = blk * (size_t)ck.size;
            for (int ip = 0; ip < 2; ip++) {
                std::vector<unsigned char> in(all + 1), want(all + 1), got(all + 1);
                mxh_fill(t, MPI_OP_NULL, in.data(), (size_t)c * (size_t)ck.size, ck.rank, 41u);
                const unsigned char *mine = in.data() + (size_t)ck.rank * blk;
                ck.rc(MPI_Allgather(mine, c, t->type, want.data(), c, t->type, ck.comm), "reference");
                GBuf s(mem(), blk), r(mem(), all);
                if (ip)
                    r.put(in.data());
                else
                    cudaMemcpy(s.p(), mine, blk, cudaMemcpyDefault);
                std::string what = std::string("allgather ") + t->name + " count " +
                                   std::to_string(c) + (ip ? " in-place" : "");
                ck.rc(MPIX_Hier_allgather(ip ? MPI_IN_PLACE : s.p(), c, t->type, r.p(), c, t->type,
                                          ck.comm),
                      what);
                r.get(got.data());
                if (mxh_compare(t, 1, got.data(), want.data(), (size_t)c * (size_t)ck.size, nullptr,
                                0) >= 0)
                    ck.fail(what + ": differs from MPICH");
            }
            for (int root = 0; root < ck.size; root++) {
                std::vector<unsigned char> want(blk + 1), got(blk + 1);
                mxh_fill(t, MPI_OP_NULL, want.data(), (size_t)c, root, 43u);
                GBuf b(mem(), blk);
                if (ck.rank == root)
                    b.put(want.data());
                std::string what = std::string("bcast ") + t->name + " count " + std::to_string(c) +
                                   " root " + std::to_string(root);
                ck.rc(MPIX_Hier_bcast(b.p(), c, t->type, root, ck.comm), what);
                b.get(got.data());
                if (mxh_compare(t, 1, got.data(), want.data(), (size_t)c, nullptr, 0) >= 0)
                    ck.fail(what + ": differs from the root's data");
            }
        }
    }
    ck.finish();
}

TEST_P(CudaColls, RandomFloatsIdenticalOnAllRanks)
{
    SKIP_WITHOUT_GPU();
    Check ck(MPI_COMM_WORLD);
    const mxh_type_t *f = mxh_type_find(MPI_FLOAT);
    int c = (1 << 20) + 17;
    std::vector<float> in((size_t)c), got((size_t)c);
    mxh_fill_random_fp(MPI_FLOAT, in.data(), (size_t)c, ck.rank, 5u);
    GBuf s(mem(), (size_t)c * 4), r(mem(), (size_t)c * 4);
    s.put(in.data());
    ck.rc(MPIX_Hier_allreduce(s.p(), r.p(), c, MPI_FLOAT, MPI_SUM, ck.comm), "allreduce");
    r.get(got.data());
    ck.hashes.push_back(mxh_hash(f, 0, got.data(), (size_t)c));
    ck.finish();
}

#if defined(MPIX_HIER_FLOAT16) && defined(MPIX_HIER_BFLOAT16)
// fp16/bf16 against a host reference reduced in rank order, rounding after every op.
TEST_P(CudaColls, HalfTypes)
{
    SKIP_WITHOUT_GPU();
    Check ck(MPI_COMM_WORLD);
    const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN};
    for (int bf = 0; bf < 2; bf++)
        for (MPI_Op op : ops)
            for (int c : counts()) {
                std::vector<uint16_t> mine((size_t)c), want((size_t)c), got((size_t)c);
                auto val = [&](int r, size_t i) -> float {
                    if (op == MPI_PROD)
                        return (i + (size_t)r) % 7 == 0 ? -1.0f : 1.0f;
                    return (float)((int)((i * 13 + (size_t)r * 7) % 41) - 20) * 0.25f;
                };
                auto enc = [&](float x) { return bf ? mxh_float_to_bf16(x) : mxh_float_to_fp16(x); };
                auto dec = [&](uint16_t h) { return bf ? mxh_bf16_to_float(h) : mxh_fp16_to_float(h); };
                for (size_t i = 0; i < (size_t)c; i++) {
                    mine[i]   = enc(val(ck.rank, i));
                    float acc = dec(enc(val(0, i)));
                    for (int r = 1; r < ck.size; r++) {
                        float x = dec(enc(val(r, i)));
                        acc     = op == MPI_SUM ? acc + x : op == MPI_PROD ? acc * x
                                : op == MPI_MAX ? (acc > x ? acc : x) : (acc < x ? acc : x);
                        acc     = dec(enc(acc));
                    }
                    want[i] = enc(acc);
                }
                GBuf s(mem(), (size_t)c * 2), r(mem(), (size_t)c * 2);
                s.put(mine.data());
                std::string what = std::string(bf ? "bf16" : "fp16") + " " + mxh_op_name(op) +
                                   " count " + std::to_string(c);
                ck.rc(MPIX_Hier_allreduce(s.p(), r.p(), c, bf ? MPIX_HIER_BFLOAT16 : MPIX_HIER_FLOAT16,
                                          op, ck.comm),
                      what);
                r.get(got.data());
                if (c > 0 && std::memcmp(got.data(), want.data(), (size_t)c * 2) != 0)
                    ck.fail(what + ": differs from the host reference");
            }
    ck.finish();
}
#endif

// A buffer freed and a new one allocated (often at the same address) between
// calls: the peers' cached IPC mappings must follow (buffer id check).
TEST_P(CudaColls, IpcCacheFollowsReallocation)
{
    SKIP_WITHOUT_GPU();
    if (mem() != DEVICE)
        GTEST_SKIP() << "IPC is for device memory";
    Check ck(MPI_COMM_WORLD);
    const mxh_type_t *t = mxh_type_find(MPI_INT);
    for (int round = 0; round < 6; round++) {
        int c = 4096 + round * 7;
        std::vector<int> in((size_t)c), want((size_t)c), got((size_t)c);
        for (int i = 0; i < c; i++)
            in[(size_t)i] = (ck.rank + 1) * (round + 1) + i;
        MPI_Allreduce(in.data(), want.data(), c, MPI_INT, MPI_SUM, ck.comm);
        GBuf s(DEVICE, (size_t)c * 4), r(DEVICE, (size_t)c * 4);
        s.put(in.data());
        ck.rc(MPIX_Hier_allreduce(s.p(), r.p(), c, MPI_INT, MPI_SUM, ck.comm), "allreduce");
        r.get(got.data());
        ck.same(t, got.data(), want.data(), (size_t)c, "round " + std::to_string(round));
    }
    ck.finish();
}

TEST_P(CudaColls, FreedPointerIsAnError)
{
    SKIP_WITHOUT_GPU();
    if (mem() != DEVICE)
        GTEST_SKIP() << "device memory only";
    Check ck(MPI_COMM_WORLD);
    void *gone = nullptr, *r = nullptr;
    cudaMalloc(&gone, 1 << 20);
    cudaMalloc(&r, 1 << 20);
    cudaFree(gone);
    int rc = MPIX_Hier_allreduce(gone, r, 1024, MPI_INT, MPI_SUM, ck.comm);
    if (rc == MPI_SUCCESS)
        ck.fail("a freed device pointer was accepted");
    else if (errstr(rc).find("CUDA") == std::string::npos)
        ck.fail("error string does not name the CUDA cause: " + errstr(rc));
    cudaFree(r);
    // the communicator stays usable
    int one = 1, sum = 0;
    ck.rc(MPIX_Hier_allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, ck.comm), "after the error");
    if (sum != ck.size)
        ck.fail("wrong result after the error");
    ck.finish();
}

TEST_P(CudaColls, ForeignDeviceIsAnError)
{
    SKIP_WITHOUT_GPU();
    int n = 0, few = 0;
    cudaGetDeviceCount(&n);
    int local = n < 2;
    MPI_Allreduce(&local, &few, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (few || mem() != DEVICE)
        GTEST_SKIP() << "needs 2 CUDA devices on every rank (device memory)";
    Check ck(MPI_COMM_WORLD);
    int cur = 0;
    cudaGetDevice(&cur);
    void *other = nullptr, *mine = nullptr;
    cudaSetDevice((cur + 1) % n);
    cudaMalloc(&other, 4096);
    cudaSetDevice(cur);
    cudaMalloc(&mine, 4096);
    int rc = MPIX_Hier_allreduce(other, mine, 256, MPI_INT, MPI_SUM, ck.comm);
    if (rc == MPI_SUCCESS || errstr(rc).find("device") == std::string::npos)
        ck.fail("memory of another device was not reported: " + errstr(rc));
    cudaFree(mine);
    cudaSetDevice((cur + 1) % n);
    cudaFree(other);
    cudaSetDevice(cur);
    ck.finish();
}

std::string mem_param(const ::testing::TestParamInfo<int> &i)
{
    return mem_name((Mem)i.param);
}

INSTANTIATE_TEST_SUITE_P(Mem, CudaColls, ::testing::Values((int)DEVICE, (int)MANAGED), mem_param);

} // namespace
