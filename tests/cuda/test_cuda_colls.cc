// MPIX_Hier_* on device (cudaMalloc) and managed (cudaMallocManaged) buffers,
// blocking and nonblocking (MPIX_Hier_I* completed by MPI_Wait / MPI_Test /
// MPI_Waitall), against MPICH's own collectives on host copies of the same
// data, bit for bit (the value bytes of each type), on every rank sharing the
// node's GPUs (rank i uses device i % ndev; several ranks per GPU is the
// normal case on a one-GPU test machine). Counts 0, 1, small primes, 65537,
// large (1 Mi .. 4 Mi elements, 999983), odd byte offsets, in place, mixed
// host/device, every root. Run by run_cuda_tests.sh on 1, 2 and 4 ranks and on
// fake multi-node layouts (MPIX_HIER_HOSTNAME).
//
// Public API only (include/mpix_hier.h) plus the test shim: nothing of the
// library's internals, so the test outlives changes of the engine.
//
// Without a CUDA device on some rank, every test skips on every rank with
// "no CUDA device" (a collective decision; rank 0 prints why once), and the
// runner reports SKIP. Every CUDA call is checked: a failing CUDA call of the
// test itself prints the error and aborts the job (never a hang).
//
// Device data contract (include/mpix_hier.h): inputs are complete in device
// memory when the call is made (the test uploads on its own stream and
// synchronizes that stream), results are complete when the blocking call
// returns or MPI_Wait/MPI_Test reports completion: the test downloads them at
// once on its own non-blocking stream, which does not wait for the library's.
//
// MXH_TEST_QUICK=1 trims the matrix (counts 0, 1, 7).
#include <cuda_runtime_api.h>
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "mxh_test_shim.h"

namespace {

// A crash prints the stack (addresses resolve with addr2line against the
// same build) before the default action: the GPU machine has no debugger.
void crash_trace(int sig)
{
    void *frames[64];
    int n = backtrace(frames, 64);
    static const char head[] = "test_cuda_colls: fatal signal, stack:\n";
    (void)!write(2, head, sizeof(head) - 1);
    backtrace_symbols_fd(frames, n, 2);
    signal(sig, SIG_DFL);
    raise(sig);
}

struct CrashTraceInstaller {
    CrashTraceInstaller()
    {
        signal(SIGSEGV, crash_trace);
        signal(SIGBUS, crash_trace);
        signal(SIGABRT, crash_trace);
    }
} crash_trace_installer;

// ---- CUDA calls of the test ----------------------------------------------------

[[noreturn]] void cuda_fail(cudaError_t rc, const char *call, int line)
{
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::fprintf(stderr, "[rank %d] test_cuda_colls.cc:%d: %s failed: %s: %s\n", rank, line, call,
                 cudaGetErrorName(rc), cudaGetErrorString(rc));
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
    std::abort();
}

#define CUDA_CK(_call)                                                         \
    do {                                                                       \
        cudaError_t _rc = (_call);                                             \
        if (_rc != cudaSuccess)                                                \
            cuda_fail(_rc, #_call, __LINE__);                                  \
    } while (0)

int g_gpu = -1;               // collective: 1 every rank has a device, 0 not
MPI_Comm g_comm = MPI_COMM_NULL; // dup of WORLD with MPI_ERRORS_RETURN
cudaStream_t g_stream;        // the test's own non-blocking stream

bool have_gpu()
{
    if (g_gpu < 0) {
        int n = 0, rank = 0, size = 1, local, all = 0, nmissing = 0;
        cudaError_t rc = cudaGetDeviceCount(&n);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        local = rc == cudaSuccess && n > 0;
        int missing = !local;
        MPI_Allreduce(&local, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&missing, &nmissing, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        g_gpu = all;
        if (!all && rank == 0) {
            std::printf("mxh cuda: no CUDA device on %d of %d rank(s) (rank 0: %s, %d device(s)): "
                        "every test skips\n",
                        nmissing, size, rc == cudaSuccess ? "cudaGetDeviceCount ok"
                                                          : cudaGetErrorString(rc),
                        n);
            std::fflush(stdout);
        }
        if (all) {
            CUDA_CK(cudaSetDevice(rank % n));
            CUDA_CK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
            MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
            MPI_Comm_set_errhandler(g_comm, MPI_ERRORS_RETURN);
        }
    }
    return g_gpu == 1;
}

// Skips (on every rank alike) without a device.
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

enum Form { BLOCKING = 0, NONBLOCKING };

// A buffer of one memory kind; @off bytes past an aligned allocation (odd
// offsets exercise the copies' unaligned heads and tails and IPC offsets).
struct GBuf {
    Mem kind;
    size_t bytes, off;
    char *base = nullptr;
    GBuf(Mem k, size_t n, size_t o = 0) : kind(k), bytes(n), off(o)
    {
        size_t all = n + o + 64;
        if (k == HOST) {
            base = (char *)std::malloc(all);
            if (base == nullptr)
                cuda_fail(cudaErrorMemoryAllocation, "malloc (host buffer)", __LINE__);
        } else if (k == DEVICE) {
            CUDA_CK(cudaMalloc((void **)&base, all));
        } else {
            CUDA_CK(cudaMallocManaged((void **)&base, all, cudaMemAttachGlobal));
        }
    }
    ~GBuf()
    {
        if (kind == HOST)
            std::free(base);
        else if (base)
            CUDA_CK(cudaFree(base));
    }
    char *p() const { return base + off; }
    // upload: complete before the collective is called (the contract)
    void put(const void *src, size_t n) const
    {
        if (n == 0)
            return;
        CUDA_CK(cudaMemcpyAsync(p(), src, n, cudaMemcpyDefault, g_stream));
        CUDA_CK(cudaStreamSynchronize(g_stream));
    }
    void put(const void *src) const { put(src, bytes); }
    // download right after completion, on a stream that does not wait for
    // the library's: results must already be in device memory
    void get(void *dst, size_t n) const
    {
        if (n == 0)
            return;
        CUDA_CK(cudaMemcpyAsync(dst, p(), n, cudaMemcpyDefault, g_stream));
        CUDA_CK(cudaStreamSynchronize(g_stream));
    }
    void get(void *dst) const { get(dst, bytes); }
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

// Completion of a nonblocking call: MPI_Wait, or an MPI_Test loop (every
// other request, so that both progress paths run).
int complete(int rc, MPI_Request *req)
{
    static unsigned n;
    if (rc != MPI_SUCCESS)
        return rc;
    if (n++ % 2 == 0)
        return MPI_Wait(req, MPI_STATUS_IGNORE);
    int done = 0;
    while (rc == MPI_SUCCESS && !done)
        rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    return rc;
}

// The collectives in either form.
int allreduce(Form f, const void *s, void *r, int c, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    if (f == BLOCKING)
        return MPIX_Hier_allreduce(s, r, c, t, op, comm);
    MPI_Request q = MPI_REQUEST_NULL;
    return complete(MPIX_Hier_Iallreduce(s, r, c, t, op, comm, &q), &q);
}
int reduce_scatter_block(Form f, const void *s, void *r, int c, MPI_Datatype t, MPI_Op op,
                         MPI_Comm comm)
{
    if (f == BLOCKING)
        return MPIX_Hier_reduce_scatter_block(s, r, c, t, op, comm);
    MPI_Request q = MPI_REQUEST_NULL;
    return complete(MPIX_Hier_Ireduce_scatter_block(s, r, c, t, op, comm, &q), &q);
}
int allgather(Form f, const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
              MPI_Comm comm)
{
    if (f == BLOCKING)
        return MPIX_Hier_allgather(s, sc, st, r, rc, rt, comm);
    MPI_Request q = MPI_REQUEST_NULL;
    return complete(MPIX_Hier_Iallgather(s, sc, st, r, rc, rt, comm, &q), &q);
}
int bcast(Form f, void *b, int c, MPI_Datatype t, int root, MPI_Comm comm)
{
    if (f == BLOCKING)
        return MPIX_Hier_bcast(b, c, t, root, comm);
    MPI_Request q = MPI_REQUEST_NULL;
    return complete(MPIX_Hier_Ibcast(b, c, t, root, comm, &q), &q);
}
int reduce(Form f, const void *s, void *r, int c, MPI_Datatype t, MPI_Op op, int root,
           MPI_Comm comm)
{
    if (f == BLOCKING)
        return MPIX_Hier_reduce(s, r, c, t, op, root, comm);
    MPI_Request q = MPI_REQUEST_NULL;
    return complete(MPIX_Hier_Ireduce(s, r, c, t, op, root, comm, &q), &q);
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
    // equal to the reference; the result is the same on every rank
    void same(const mxh_type_t *t, const void *got, const void *want, size_t n,
              const std::string &what)
    {
        differs(t, 0, got, want, n, what);
        hashes.push_back(mxh_hash(t, 0, got, n));
    }
    // equal to the reference (results that differ between ranks)
    void differs(const mxh_type_t *t, int whole, const void *got, const void *want, size_t n,
                 const std::string &what)
    {
        char msg[512];
        if (mxh_compare(t, whole, got, want, n, msg, sizeof(msg)) >= 0)
            fail(what + ": differs from MPICH: " + msg);
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

const char *form_name(Form f) { return f == BLOCKING ? "" : " nonblocking"; }

std::string label(const char *coll, const Pair &p, int count, Mem m, bool inplace, Form f)
{
    return std::string(coll) + form_name(f) + " " + p.t->name + " " + mxh_op_name(p.op) +
           " count " + std::to_string(count) + " " + mem_name(m) + (inplace ? " in-place" : "");
}

class CudaColls : public MxhMpiTest, public ::testing::WithParamInterface<std::tuple<int, int>> {
  protected:
    Mem mem() const { return (Mem)std::get<0>(GetParam()); }
    Form form() const { return (Form)std::get<1>(GetParam()); }
};

void allreduce_case(Check &ck, Form f, const Pair &p, int count, Mem ms, Mem mr, bool inplace,
                    size_t off)
{
    size_t ext = (size_t)p.t->extent, bytes = (size_t)count * ext;
    std::vector<unsigned char> in(bytes + 1), want(bytes + 1), got(bytes + 1);
    mxh_fill(p.t, p.op, in.data(), (size_t)count, ck.rank, 11u + (uint64_t)count);
    ck.rc(MPI_Allreduce(in.data(), want.data(), count, p.t->type, p.op, ck.comm), "reference");
    GBuf s(ms, bytes, off), r(mr, bytes, off);
    (inplace ? r : s).put(in.data());
    std::string what = label("allreduce", p, count, mr, inplace, f);
    ck.rc(allreduce(f, inplace ? MPI_IN_PLACE : s.p(), r.p(), count, p.t->type, p.op, ck.comm),
          what);
    r.get(got.data());
    ck.same(p.t, got.data(), want.data(), (size_t)count, what);
}

TEST_P(CudaColls, AllreduceAllTypesOps)
{
    SKIP_WITHOUT_GPU();
    Check ck(g_comm);
    for (const Pair &p : pairs())
        for (int c : counts())
            for (int ip = 0; ip < 2; ip++)
                allreduce_case(ck, form(), p, c, mem(), mem(), ip != 0, 0);
    ck.finish();
}

TEST_P(CudaColls, AllreduceOddOffsetsLarge)
{
    SKIP_WITHOUT_GPU();
    Check ck(g_comm);
    const mxh_type_t *f = mxh_type_find(MPI_FLOAT), *d = mxh_type_find(MPI_DOUBLE),
                     *i8 = mxh_type_find(MPI_INT8_T);
    for (size_t off : {0, 4, 8, 12})
        for (int c : {1 << 20, (1 << 22) + 3, 999983})
            allreduce_case(ck, form(), {f, MPI_SUM}, c, mem(), mem(), false, off);
    allreduce_case(ck, form(), {d, MPI_MAX}, (1 << 21) + 1, mem(), mem(), true, 8);
    allreduce_case(ck, form(), {i8, MPI_BXOR}, (1 << 22) + 5, mem(), mem(), false, 3);
    ck.finish();
}

TEST_P(CudaColls, AllreduceMixedHostDevice)
{
    SKIP_WITHOUT_GPU();
    Check ck(g_comm);
    const mxh_type_t *t = mxh_type_find(MPI_INT);
    // every rank passes one GPU buffer: even ranks a host sendbuf, odd a host recvbuf
    Mem s = ck.rank % 2 ? mem() : HOST, r = ck.rank % 2 ? HOST : mem();
    for (int c : counts())
        allreduce_case(ck, form(), {t, MPI_SUM}, c, s, r, false, 0);
    ck.finish();
}

TEST_P(CudaColls, ReduceScatterBlockAllTypesOps)
{
    SKIP_WITHOUT_GPU();
    Check ck(g_comm);
    for (const Pair &p : pairs())
        for (int c : counts()) {
            if (c > 1009)
                continue;
            for (int ip = 0; ip < 2; ip++) {
                size_t ext = (size_t)p.t->extent, blk = (size_t)c * ext,
                       all = blk * (size_t)ck.size;
                std::vector<unsigned char> in(all + 1), want(blk + 1), got(blk + 1);
                mxh_fill(p.t, p.op, in.data(), (size_t)c * (size_t)ck.size, ck.rank, 21u);
                ck.rc(MPI_Reduce_scatter_block(in.data(), want.data(), c, p.t->type, p.op, ck.comm),
                      "reference");
                GBuf s(mem(), all), r(mem(), ip ? all : blk);
                (ip ? r : s).put(in.data(), all);
                std::string what = label("reduce_scatter_block", p, c, mem(), ip, form());
                ck.rc(reduce_scatter_block(form(), ip ? MPI_IN_PLACE : s.p(), r.p(), c, p.t->type,
                                           p.op, ck.comm),
                      what);
                r.get(got.data(), blk); // in place: the result is at the start
                ck.differs(p.t, 0, got.data(), want.data(), (size_t)c, what);
            }
        }
    ck.finish();
}

TEST_P(CudaColls, ReduceAllRoots)
{
    SKIP_WITHOUT_GPU();
    Check ck(g_comm);
    for (const Pair &p : pairs())
        for (int c : {0, 1, 7, 1009})
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
                std::string what = label("reduce", p, c, mem(), iproot, form()) + " root " +
                                   std::to_string(root);
                ck.rc(reduce(form(), iproot ? MPI_IN_PLACE : s.p(), r.p(), c, p.t->type, p.op, root,
                             ck.comm),
                      what);
                if (ck.rank == root) {
                    r.get(got.data());
                    ck.differs(p.t, 0, got.data(), want.data(), (size_t)c, what);
                }
            }
    ck.finish();
}

TEST_P(CudaColls, AllgatherAndBcast)
{
    SKIP_WITHOUT_GPU();
    Check ck(g_comm);
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
                ck.rc(MPI_Allgather(mine, c, t->type, want.data(), c, t->type, ck.comm),
                      "reference");
                GBuf s(mem(), blk), r(mem(), all);
                if (ip)
                    r.put(in.data());
                else
                    s.put(mine);
                std::string what = std::string("allgather") + form_name(form()) + " " + t->name +
                                   " count " + std::to_string(c) + (ip ? " in-place" : "");
                ck.rc(allgather(form(), ip ? MPI_IN_PLACE : s.p(), c, t->type, r.p(), c, t->type,
                                ck.comm),
                      what);
                r.get(got.data());
                ck.differs(t, 1, got.data(), want.data(), (size_t)c * (size_t)ck.size, what);
                ck.hashes.push_back(mxh_hash(t, 1, got.data(), (size_t)c * (size_t)ck.size));
            }
            for (int root = 0; root < ck.size; root++) {
                std::vector<unsigned char> want(blk + 1), got(blk + 1);
                mxh_fill(t, MPI_OP_NULL, want.data(), (size_t)c, root, 43u);
                GBuf b(mem(), blk);
                if (ck.rank == root)
                    b.put(want.data());
                std::string what = std::string("bcast") + form_name(form()) + " " + t->name +
                                   " count " + std::to_string(c) + " root " + std::to_string(root);
                ck.rc(bcast(form(), b.p(), c, t->type, root, ck.comm), what);
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
    Check ck(g_comm);
    const mxh_type_t *f = mxh_type_find(MPI_FLOAT);
    int c = (1 << 20) + 17;
    std::vector<float> in((size_t)c), got((size_t)c);
    mxh_fill_random_fp(MPI_FLOAT, in.data(), (size_t)c, ck.rank, 5u);
    GBuf s(mem(), (size_t)c * 4), r(mem(), (size_t)c * 4);
    s.put(in.data());
    ck.rc(allreduce(form(), s.p(), r.p(), c, MPI_FLOAT, MPI_SUM, ck.comm), "allreduce");
    r.get(got.data());
    ck.hashes.push_back(mxh_hash(f, 0, got.data(), (size_t)c));
    ck.finish();
}

// Several nonblocking collectives in flight on one communicator, on distinct
// device buffers, completed together by MPI_Waitall (any order of
// completion inside; all results checked afterwards).
TEST_P(CudaColls, ManyInFlight)
{
    SKIP_WITHOUT_GPU();
    if (form() != NONBLOCKING)
        GTEST_SKIP() << "nonblocking only";
    Check ck(g_comm);
    const mxh_type_t *ti = mxh_type_find(MPI_INT), *td = mxh_type_find(MPI_DOUBLE);
    const int K = 4, c = quick() ? 7 : 65537, root = ck.size - 1;
    size_t bi = (size_t)c * 4, bd = (size_t)c * 8;
    std::vector<std::vector<int>> in(K, std::vector<int>((size_t)c)),
        want(K, std::vector<int>((size_t)c)), got(K, std::vector<int>((size_t)c));
    std::vector<std::unique_ptr<GBuf>> s, r;
    std::vector<MPI_Request> req;
    for (int k = 0; k < K; k++) {
        mxh_fill(ti, MPI_SUM, in[(size_t)k].data(), (size_t)c, ck.rank, 50u + (uint64_t)k);
        ck.rc(MPI_Allreduce(in[(size_t)k].data(), want[(size_t)k].data(), c, MPI_INT, MPI_SUM,
                            ck.comm),
              "reference");
        s.emplace_back(new GBuf(mem(), bi, (size_t)k * 4));
        r.emplace_back(new GBuf(mem(), bi, (size_t)k * 4));
        s.back()->put(in[(size_t)k].data());
    }
    std::vector<double> bwant((size_t)c), bgot((size_t)c);
    mxh_fill(td, MPI_OP_NULL, bwant.data(), (size_t)c, root, 57u);
    GBuf b(mem(), bd);
    if (ck.rank == root)
        b.put(bwant.data());
    for (int k = 0; k < K; k++) {
        MPI_Request q = MPI_REQUEST_NULL;
        ck.rc(MPIX_Hier_Iallreduce(s[(size_t)k]->p(), r[(size_t)k]->p(), c, MPI_INT, MPI_SUM,
                                   ck.comm, &q),
              "Iallreduce " + std::to_string(k));
        req.push_back(q);
        if (k == 1) { // a bcast between the reductions
            ck.rc(MPIX_Hier_Ibcast(b.p(), c, MPI_DOUBLE, root, ck.comm, &q), "Ibcast");
            req.push_back(q);
        }
    }
    std::vector<MPI_Status> st(req.size());
    ck.rc(MPI_Waitall((int)req.size(), req.data(), st.data()), "MPI_Waitall");
    for (int k = 0; k < K; k++) {
        r[(size_t)k]->get(got[(size_t)k].data());
        ck.same(ti, got[(size_t)k].data(), want[(size_t)k].data(), (size_t)c,
                "in flight: allreduce " + std::to_string(k));
    }
    b.get(bgot.data());
    ck.same(td, bgot.data(), bwant.data(), (size_t)c, "in flight: bcast");
    ck.finish();
}

// ---- fp16 / bf16 (host reference; conversions here: round to nearest even) ----

float bits_float(uint32_t u)
{
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
uint32_t float_bits(float f)
{
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
uint16_t to_bf16(float f)
{
    uint32_t u = float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40); // quiet NaN
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float from_bf16(uint16_t h) { return bits_float((uint32_t)h << 16); }
uint16_t to_fp16(float f)
{
    uint32_t u = float_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u);
    if (a >= 0x477ff000u) // rounds to >= 65520: Inf
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) { // below the smallest normal: subnormal or zero
        float m = bits_float(a) * 16777216.0f; // in units of 2^-24, exact
        uint32_t q = (uint32_t)m;
        float rem = m - (float)q;
        if (rem > 0.5f || (rem == 0.5f && (q & 1u)))
            q++;
        return (uint16_t)(sign | q);
    }
    uint32_t e = ((a >> 23) - 127 + 15) << 10, mant = a & 0x7fffffu;
    uint32_t h = e | (mant >> 13), rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        h++; // may carry into the exponent: correct
    return (uint16_t)(sign | h);
}
float from_fp16(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0)
        return (sign ? -1.0f : 1.0f) * (float)m / 16777216.0f;
    if (e == 31)
        return bits_float(sign | 0x7f800000u | (m << 13));
    return bits_float(sign | ((e - 15 + 127) << 23) | (m << 13));
}

TEST_P(CudaColls, HalfTypes)
{
    SKIP_WITHOUT_GPU();
    Check ck(g_comm);
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
                auto enc = [&](float x) { return bf ? to_bf16(x) : to_fp16(x); };
                auto dec = [&](uint16_t h) { return bf ? from_bf16(h) : from_fp16(h); };
                for (size_t i = 0; i < (size_t)c; i++) {
                    mine[i]   = enc(val(ck.rank, i));
                    float acc = dec(enc(val(0, i)));
                    for (int r = 1; r < ck.size; r++) {
                        float x = dec(enc(val(r, i)));
                        acc     = op == MPI_SUM    ? acc + x
                                  : op == MPI_PROD ? acc * x
                                  : op == MPI_MAX  ? (acc > x ? acc : x)
                                                   : (acc < x ? acc : x);
                        acc     = dec(enc(acc));
                    }
                    want[i] = enc(acc);
                }
                GBuf s(mem(), (size_t)c * 2), r(mem(), (size_t)c * 2);
                s.put(mine.data());
                std::string what = std::string(bf ? "bf16" : "fp16") + form_name(form()) + " " +
                                   mxh_op_name(op) + " count " + std::to_string(c);
                ck.rc(allreduce(form(), s.p(), r.p(), c,
                                bf ? MPIX_HIER_BFLOAT16 : MPIX_HIER_FLOAT16, op, ck.comm),
                      what);
                r.get(got.data());
                if (c > 0 && std::memcmp(got.data(), want.data(), (size_t)c * 2) != 0)
                    ck.fail(what + ": differs from the host reference");
            }
    ck.finish();
}

// A buffer freed and a new one allocated (often at the same address, or
// overlapping the old one) between calls: the peers' cached IPC mappings
// must follow (new buffer id / overlapping range -> stale mapping closed).
TEST_P(CudaColls, IpcCacheFollowsReallocation)
{
    SKIP_WITHOUT_GPU();
    if (mem() != DEVICE)
        GTEST_SKIP() << "IPC is for device memory";
    Check ck(g_comm);
    const mxh_type_t *t = mxh_type_find(MPI_INT);
    for (int round = 0; round < 8; round++) {
        // sizes alternate so that new allocations overlap old ones partly
        int c = (round % 2 ? 300000 : 4096) + round * 7;
        std::vector<int> in((size_t)c), want((size_t)c), got((size_t)c);
        for (int i = 0; i < c; i++)
            in[(size_t)i] = (ck.rank + 1) * (round + 1) + i;
        ck.rc(MPI_Allreduce(in.data(), want.data(), c, MPI_INT, MPI_SUM, ck.comm), "reference");
        GBuf s(DEVICE, (size_t)c * 4), r(DEVICE, (size_t)c * 4);
        s.put(in.data());
        ck.rc(allreduce(form(), s.p(), r.p(), c, MPI_INT, MPI_SUM, ck.comm), "allreduce");
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
    Check ck(g_comm);
    void *gone = nullptr, *r = nullptr;
    CUDA_CK(cudaMalloc(&gone, 1 << 20));
    CUDA_CK(cudaMalloc(&r, 1 << 20));
    CUDA_CK(cudaFree(gone));
    int rc = allreduce(form(), gone, r, 1024, MPI_INT, MPI_SUM, ck.comm);
    if (rc == MPI_SUCCESS)
        ck.fail("a freed device pointer was accepted");
    else if (errstr(rc).find("CUDA") == std::string::npos)
        ck.fail("error string does not name the CUDA cause: " + errstr(rc));
    CUDA_CK(cudaFree(r));
    // the communicator stays usable
    int one = 1, sum = 0;
    ck.rc(allreduce(form(), &one, &sum, 1, MPI_INT, MPI_SUM, ck.comm), "after the error");
    if (sum != ck.size)
        ck.fail("wrong result after the error");
    ck.finish();
}

TEST_P(CudaColls, ForeignDeviceIsAnError)
{
    SKIP_WITHOUT_GPU();
    int n = 0, few = 0;
    CUDA_CK(cudaGetDeviceCount(&n));
    int local = n < 2;
    MPI_Allreduce(&local, &few, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (few || mem() != DEVICE)
        GTEST_SKIP() << "needs 2 CUDA devices on every rank (device memory)";
    Check ck(g_comm);
    int cur = 0;
    CUDA_CK(cudaGetDevice(&cur));
    void *other = nullptr, *mine = nullptr;
    CUDA_CK(cudaSetDevice((cur + 1) % n));
    CUDA_CK(cudaMalloc(&other, 4096));
    CUDA_CK(cudaSetDevice(cur));
    CUDA_CK(cudaMalloc(&mine, 4096));
    int rc = allreduce(form(), other, mine, 256, MPI_INT, MPI_SUM, ck.comm);
    if (rc == MPI_SUCCESS || errstr(rc).find("device") == std::string::npos)
        ck.fail("memory of another device was not reported: " + errstr(rc));
    CUDA_CK(cudaFree(mine));
    CUDA_CK(cudaSetDevice((cur + 1) % n));
    CUDA_CK(cudaFree(other));
    CUDA_CK(cudaSetDevice(cur));
    ck.finish();
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<int, int>> &i)
{
    return std::string(mem_name((Mem)std::get<0>(i.param))) +
           (std::get<1>(i.param) == BLOCKING ? "_blocking" : "_nonblocking");
}

INSTANTIATE_TEST_SUITE_P(Mem, CudaColls,
                         ::testing::Combine(::testing::Values((int)DEVICE, (int)MANAGED),
                                            ::testing::Values((int)BLOCKING, (int)NONBLOCKING)),
                         param_name);

} // namespace
