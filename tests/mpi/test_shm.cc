// Shared-memory collectives (src/exec/shm.h) against MPICH's own, bit for bit.
//
// Communicators: the ranks of this node (MPI_COMM_TYPE_SHARED of WORLD, so on
// a launch with MPIR_CVAR_NUM_CLIQUES the cliques), in WORLD order ("node") or
// reversed ("reversed"). Parameter: "<comm>/<chunk_bytes>" (0 = default);
// small chunks (64 B, 4 KiB) push even moderate counts through many pipeline
// steps. Data patterns (tests/shim) make every reduction exact in any order,
// so results must equal MPICH's byte for byte; on top, every rank hashes its
// results and the hashes must agree (bitwise identity across ranks), also on
// random floats, and the one-phase and the chunked protocol must agree bit
// for bit.
//
// Single copy (process_vm_readv, bcast and allgather): the parameterised
// suite runs with the default threshold (so its large counts take it when
// the probe succeeded); ShmCma forces it on every size, and off, on the same
// cases, and checks the create-time agreement (MXH_SHM_CMA=0 on one rank).
// run_shm_tests.sh also runs the whole suite once with MXH_SHM_CMA=0.
//
// MXH_TEST_QUICK=1 trims the matrix; MXH_TEST_TRACE=1 prints each case.
#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

#include "checker.hh"
#include "mpi_util.hh"
#include "mxh_test_shim.h"

#include "exec/shm.h"

namespace {

using mxh_test::Buf;
using mxh_test::fmt;
using mxh_test::quick;
using mxh_test::trace;

// ------------------------------------------------------------ communicators

MPI_Comm make_node_comm(bool reversed)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm c;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, reversed ? size - rank : rank,
                        MPI_INFO_NULL, &c);
    return c;
}

struct ShmCtx {
    MPI_Comm comm = MPI_COMM_NULL;
    mxh_shm_t *shm = nullptr;
};
std::map<std::string, ShmCtx> g_ctx;

// The communicator and shm object of a parameter "<comm>/<chunk>" (created once).
ShmCtx &ctx_of(const std::string &param)
{
    auto it = g_ctx.find(param);
    if (it != g_ctx.end())
        return it->second;
    ShmCtx c;
    size_t slash = param.find('/');
    c.comm = make_node_comm(param.substr(0, slash) == "reversed");
    size_t chunk = std::stoul(param.substr(slash + 1));
    mxh_status_t st = mxh_shm_create(c.comm, chunk, &c.shm);
    EXPECT_EQ(st, MXH_OK) << "mxh_shm_create(" << param << ")";
    g_ctx[param] = c;
    return g_ctx[param];
}

class ShmEnv : public ::testing::Environment {
  public:
    void TearDown() override
    {
        for (auto &kv : g_ctx) { // same order on every rank
            mxh_shm_destroy(kv.second.shm);
            MPI_Comm_free(&kv.second.comm);
        }
        g_ctx.clear();
    }
};
::testing::Environment *const g_env = ::testing::AddGlobalTestEnvironment(new ShmEnv);

// ------------------------------------------------------------------ checker

// The shared checker, plus the library's internal status codes.
class Checker : public mxh_test::Checker {
  public:
    explicit Checker(MPI_Comm c) : mxh_test::Checker(c) {}
    void st(mxh_status_t s, const std::string &what)
    {
        if (s != MXH_OK)
            fail(what + ": returned " + mxh_status_string(s));
    }
};

uint64_t salt_of(const mxh_type_t *t, MPI_Op op, size_t count, int extra)
{
    uint64_t h = MXH_FNV_INIT;
    h = mxh_hash_bytes_fnv(h, t->name, strlen(t->name));
    const char *on = op == MPI_OP_NULL ? "none" : mxh_op_name(op);
    h = mxh_hash_bytes_fnv(h, on, strlen(on));
    h = mxh_hash_bytes_fnv(h, &count, sizeof(count));
    return mxh_hash_bytes_fnv(h, &extra, sizeof(extra));
}

// The types the shm layer takes: predefined, contiguous (size == extent, lb 0).
size_t plain_size(const mxh_type_t *t)
{
    int size = 0;
    MPI_Aint lb = 0, extent = 0;
    MPI_Type_size(t->type, &size);
    MPI_Type_get_extent(t->type, &lb, &extent);
    return (lb == 0 && (MPI_Aint)size == extent && size > 0 && size <= 32) ? (size_t)size : 0;
}

struct Pair {
    const mxh_type_t *t;
    MPI_Op op;
    size_t tsize;
};

// Every pair MPI allows and MPICH accepts on a contiguous predefined type
// (all predefined ops are commutative, MINLOC/MAXLOC on the contiguous pair
// types included).
std::vector<Pair> pairs()
{
    std::vector<Pair> v;
    for (int i = 0; i < mxh_num_types(); i++)
        for (int o = 0; o < mxh_num_ops(); o++) {
            const mxh_type_t *t = mxh_type_at(i);
            MPI_Op op = mxh_op_at(o);
            size_t ts = plain_size(t);
            if (ts && mxh_op_allowed(t, op) && mxh_op_mpich_ok(t, op))
                v.push_back({t, op, ts});
        }
    return v;
}

std::vector<const mxh_type_t *> plain_types()
{
    std::vector<const mxh_type_t *> v;
    for (int i = 0; i < mxh_num_types(); i++)
        if (plain_size(mxh_type_at(i)))
            v.push_back(mxh_type_at(i));
    return v;
}

// ------------------------------------------------------------ case runners

void allreduce_case(Checker &ck, mxh_shm_t *shm, const Pair &p, size_t n, bool inplace,
                    uint64_t salt)
{
    const mxh_type_t *t = p.t;
    size_t bytes = n * p.tsize;
    std::string label = fmt("allreduce %s %s count=%zu%s", t->name, mxh_op_name(p.op), n,
                            inplace ? " in-place" : "");
    trace(label);
    Buf in(bytes, 0), ref(bytes, 0xCD), got(bytes, 0xCD);
    mxh_fill(t, p.op, in.p(), n, ck.rank, salt);
    std::vector<unsigned char> pristine(in.p(), in.p() + bytes);
    MPI_Allreduce(in.p(), ref.p(), (int)n, t->type, p.op, ck.comm);
    mxh_status_t s;
    if (inplace) {
        memcpy(got.p(), in.p(), bytes);
        s = mxh_shm_allreduce(shm, got.p(), got.p(), n, t->type, p.tsize, p.op);
    } else {
        s = mxh_shm_allreduce(shm, in.p(), got.p(), n, t->type, p.tsize, p.op);
        ck.same_bytes(in.p(), pristine.data(), bytes, label + ": modified the input");
    }
    ck.st(s, label);
    ck.same(t, false, got.p(), ref.p(), n, label);
    ck.guards(got.b, label);
    ck.guards(in.b, label);
    ck.hash(mxh_hash(t, 0, got.p(), n), label);
}

// Non-root out: a canary that must stay untouched (NULL on odd ranks).
void reduce_case(Checker &ck, mxh_shm_t *shm, const Pair &p, size_t n, bool inplace, int root,
                 uint64_t salt)
{
    const mxh_type_t *t = p.t;
    size_t bytes = n * p.tsize;
    bool me_root = ck.rank == root;
    std::string label = fmt("reduce %s %s count=%zu root=%d%s", t->name, mxh_op_name(p.op), n,
                            root, inplace ? " in-place" : "");
    trace(label);
    Buf in(bytes, 0), ref(bytes, 0xCD), got(bytes, 0xCD);
    mxh_fill(t, p.op, in.p(), n, ck.rank, salt);
    std::vector<unsigned char> pristine(in.p(), in.p() + bytes);
    MPI_Reduce(in.p(), ref.p(), (int)n, t->type, p.op, root, ck.comm);
    mxh_status_t s;
    if (inplace && me_root) {
        memcpy(got.p(), in.p(), bytes);
        s = mxh_shm_reduce(shm, got.p(), got.p(), n, t->type, p.tsize, p.op, root);
    } else {
        void *out = (me_root || ck.rank % 2 == 0) ? (void *)got.p() : nullptr;
        s = mxh_shm_reduce(shm, in.p(), out, n, t->type, p.tsize, p.op, root);
        ck.same_bytes(in.p(), pristine.data(), bytes, label + ": modified the input");
    }
    ck.st(s, label);
    ck.rooted(me_root, t, got.p(), ref.p(), n, bytes, label);
    ck.guards(got.b, label);
}

void bcast_case(Checker &ck, mxh_shm_t *shm, const mxh_type_t *t, size_t tsize, size_t n,
                int root, uint64_t salt)
{
    size_t bytes = n * tsize;
    std::string label = fmt("bcast %s count=%zu root=%d", t->name, n, root);
    trace(label);
    Buf ref(bytes, 0xCD), got(bytes, 0xCD);
    if (ck.rank == root) {
        mxh_fill(t, MPI_OP_NULL, ref.p(), n, root, salt);
        memcpy(got.p(), ref.p(), bytes);
    }
    MPI_Bcast(ref.p(), (int)n, t->type, root, ck.comm);
    ck.st(mxh_shm_bcast(shm, got.p(), n, tsize, root), label);
    ck.same_bytes(got.p(), ref.p(), bytes, label);
    ck.guards(got.b, label);
    ck.hash(mxh_hash_bytes_fnv(MXH_FNV_INIT, got.p(), bytes), label);
}

// Part layouts for reduce_scatter / allgather (the same on every rank).
// shape 0: uniform m; 1: non-uniform with zeros (every third rank 0, others
// m + 7q); 2: only the last rank; 3: only rank 0. Parts are laid out in
// reverse rank order with 3-element gaps (so displs are arbitrary).
struct Parts {
    std::vector<int> counts, displs;
    size_t region = 0; // elements spanned
    size_t total = 0;
};

Parts make_parts(int size, int shape, size_t m)
{
    Parts P;
    P.counts.resize((size_t)size);
    P.displs.resize((size_t)size);
    for (int q = 0; q < size; q++) {
        size_t c = 0;
        switch (shape) {
        case 0: c = m; break;
        case 1: c = q % 3 == 1 ? 0 : m + 7 * (size_t)q; break;
        case 2: c = q == size - 1 ? m : 0; break;
        case 3: c = q == 0 ? m : 0; break;
        }
        P.counts[(size_t)q] = (int)c;
        P.total += c;
    }
    size_t pos = 0;
    for (int q = size - 1; q >= 0; q--) {
        P.displs[(size_t)q] = (int)pos;
        pos += (size_t)P.counts[(size_t)q] + 3;
    }
    P.region = pos;
    return P;
}

const char *shape_name(int shape)
{
    static const char *const names[] = {"uniform", "ragged+zeros", "last-only", "first-only"};
    return names[shape];
}

// in-place: out = in + displs[me] (the region is the caller's, modified).
// (No cross-rank hash: every rank holds a different part.)
void rs_case(Checker &ck, mxh_shm_t *shm, const Pair &p, int shape, size_t m, bool inplace,
             uint64_t salt)
{
    const mxh_type_t *t = p.t;
    size_t ts = p.tsize;
    Parts P = make_parts(ck.size, shape, m);
    size_t mine = (size_t)P.counts[(size_t)ck.rank], mydisp = (size_t)P.displs[(size_t)ck.rank];
    std::string label = fmt("reduce_scatter %s %s %s m=%zu%s", t->name, mxh_op_name(p.op),
                            shape_name(shape), m, inplace ? " in-place" : "");
    trace(label);
    Buf in(P.region * ts, 0), ref(P.region * ts, 0xCD), got(mine * ts, 0xCD);
    mxh_fill(t, p.op, in.p(), P.region, ck.rank, salt);
    std::vector<unsigned char> pristine(in.p(), in.p() + P.region * ts);
    // reference: the whole region reduced by MPICH, my part cut out
    MPI_Allreduce(in.p(), ref.p(), (int)P.region, t->type, p.op, ck.comm);
    mxh_status_t s;
    if (inplace) {
        s = mxh_shm_reduce_scatter(shm, in.p(), in.p() + mydisp * ts, P.counts.data(),
                                   P.displs.data(), t->type, ts, p.op);
        ck.same(t, false, in.p() + mydisp * ts, ref.p() + mydisp * ts, mine, label);
        ck.guards(in.b, label);
    } else {
        s = mxh_shm_reduce_scatter(shm, in.p(), got.p(), P.counts.data(), P.displs.data(),
                                   t->type, ts, p.op);
        ck.same(t, false, got.p(), ref.p() + mydisp * ts, mine, label);
        ck.same_bytes(in.p(), pristine.data(), P.region * ts, label + ": modified the input");
        ck.guards(got.b, label);
    }
    ck.st(s, label);
}

// in-place: mine = out + displs[me]. Gaps between parts must stay untouched.
void ag_case(Checker &ck, mxh_shm_t *shm, const mxh_type_t *t, size_t ts, int shape, size_t m,
             bool inplace, uint64_t salt)
{
    Parts P = make_parts(ck.size, shape, m);
    size_t mine = (size_t)P.counts[(size_t)ck.rank], mydisp = (size_t)P.displs[(size_t)ck.rank];
    std::string label = fmt("allgather %s %s m=%zu%s", t->name, shape_name(shape), m,
                            inplace ? " in-place" : "");
    trace(label);
    Buf in(mine * ts, 0), ref(P.region * ts, 0xCD), got(P.region * ts, 0xCD);
    mxh_fill(t, MPI_OP_NULL, in.p(), mine, ck.rank, salt);
    std::vector<unsigned char> pristine(in.p(), in.p() + mine * ts);
    MPI_Allgatherv(in.p(), (int)mine, t->type, ref.p(), P.counts.data(), P.displs.data(), t->type,
                   ck.comm);
    mxh_status_t s;
    if (inplace) {
        memcpy(got.p() + mydisp * ts, in.p(), mine * ts);
        s = mxh_shm_allgather(shm, got.p() + mydisp * ts, got.p(), P.counts.data(),
                              P.displs.data(), t->type, ts);
    } else {
        s = mxh_shm_allgather(shm, in.p(), got.p(), P.counts.data(), P.displs.data(), t->type, ts);
        ck.same_bytes(in.p(), pristine.data(), mine * ts, label + ": modified the input");
    }
    ck.st(s, label);
    // whole region: parts as MPICH, gaps still 0xCD in both
    ck.same_bytes(got.p(), ref.p(), P.region * ts, label);
    ck.guards(got.b, label);
    ck.hash(mxh_hash_bytes_fnv(MXH_FNV_INIT, got.p(), P.region * ts), label);
}

// ------------------------------------------------------------------ fixture

class Shm : public MxhMpiTest, public ::testing::WithParamInterface<const char *> {
  protected:
    ShmCtx &ctx() { return ctx_of(GetParam()); }
    size_t chunk() const
    {
        std::string p = GetParam();
        return std::stoul(p.substr(p.find('/') + 1));
    }
    // Thin matrix on more than 4 ranks (or MXH_TEST_QUICK=1): the MPICH
    // references are slow when 8 ranks share 2 cores, so every pair runs a
    // rotating subset of the counts, roots, shapes and in-place variants.
    bool thin() const
    {
        int size;
        MPI_Comm_size(ctx_of(GetParam()).comm, &size);
        return quick() || size > 4;
    }
    // Counts: 0, 1, primes, non-divisible, and (small slots) enough for several
    // chunks; with the default slot the chunked protocol runs one ragged chunk
    // here (LargeCounts runs many).
    std::vector<size_t> counts(size_t tsize) const
    {
        size_t slot = mxh_shm_slot_bytes(ctx_of(GetParam()).shm);
        size_t big = slot <= 65536 ? 3 * slot / tsize + 5 : 20011;
        if (thin())
            return {1, big};
        return {0, 1, 2, 3, 7, 31, 1009, big};
    }
    // Calls f(ck, item, idx) for each of @items, idx counting from 1, all on
    // one Checker of the communicator.
    template <class Items, class F> void each_item(const Items &items, F f)
    {
        Checker ck(ctx().comm);
        int idx = 0;
        for (const auto &item : items)
            f(ck, item, ++idx);
        ck.finish();
    }
    // Calls f(ck, item, m, shape, ip) for each of @items and the block counts,
    // shapes and in-place variants of reduce_scatter and allgather: all of them,
    // or (thin) one shape and variant per nonzero count, rotating by item.
    template <class Items, class F> void block_cases(const Items &items, F f)
    {
        each_item(items, [&](Checker &ck, const auto &item, int idx) {
            for (size_t m : {(size_t)0, (size_t)1, (size_t)13})
                for (int shape = 0; shape < 4; shape++)
                    for (int ip = 0; ip < 2; ip++)
                        if (!thin() || (m && shape == (idx + (int)m) % 4 && ip == idx % 2))
                            f(ck, item, m, shape, ip);
        });
    }
};

TEST_P(Shm, AllreduceAllTypesOps)
{
    mxh_shm_t *shm = ctx().shm;
    each_item(pairs(), [&](Checker &ck, const Pair &p, int idx) {
        for (size_t n : counts(p.tsize))
            for (int ip = 0; ip < 2; ip++)
                if (!thin() || ip == (idx + (int)n) % 2)
                    allreduce_case(ck, shm, p, n, ip, salt_of(p.t, p.op, n, 1));
    });
}

TEST_P(Shm, ReduceAllTypesOpsAllRoots)
{
    mxh_shm_t *shm = ctx().shm;
    each_item(pairs(), [&](Checker &ck, const Pair &p, int idx) {
        for (size_t n : counts(p.tsize))
            for (int root = 0; root < ck.size; root++) {
                if (thin() ? root != (idx + (int)n) % ck.size
                           : n > 31 && root != 0 && root != ck.size - 1)
                    continue;
                for (int ip = 0; ip < 2; ip++)
                    if (!thin() || ip == idx % 2)
                        reduce_case(ck, shm, p, n, ip, root, salt_of(p.t, p.op, n, 2 + root));
            }
    });
}

TEST_P(Shm, ReduceScatterAllTypesOps)
{
    mxh_shm_t *shm = ctx().shm;
    block_cases(pairs(), [&](Checker &ck, const Pair &p, size_t m, int shape, int ip) {
        rs_case(ck, shm, p, shape, m, ip, salt_of(p.t, p.op, m, 3 + shape));
    });
}

TEST_P(Shm, AllgatherAllTypes)
{
    mxh_shm_t *shm = ctx().shm;
    block_cases(plain_types(), [&](Checker &ck, const mxh_type_t *t, size_t m, int shape, int ip) {
        ag_case(ck, shm, t, plain_size(t), shape, m, ip, salt_of(t, MPI_OP_NULL, m, 10 + shape));
    });
}

TEST_P(Shm, BcastAllTypesAllRoots)
{
    mxh_shm_t *shm = ctx().shm;
    each_item(plain_types(), [&](Checker &ck, const mxh_type_t *t, int idx) {
        for (size_t n : counts(plain_size(t)))
            for (int root = 0; root < ck.size; root++)
                if (!thin() || root == (idx + (int)n) % ck.size || (n == 1 && idx == 1))
                    bcast_case(ck, shm, t, plain_size(t), n, root,
                               salt_of(t, MPI_OP_NULL, n, 20 + root));
    });
}

// Large and ragged counts (many chunks) on a few types, all five collectives.
TEST_P(Shm, LargeCounts)
{
    ShmCtx &c = ctx();
    Checker ck(c.comm);
    struct L {
        MPI_Datatype type;
        MPI_Op op;
    };
    const L kinds[] = {{MPI_INT, MPI_SUM}, {MPI_DOUBLE, MPI_SUM}, {MPI_FLOAT, MPI_MAX},
                       {MPI_C_DOUBLE_COMPLEX, MPI_PROD}, {MPI_UNSIGNED_CHAR, MPI_BXOR}};
    // small chunks: keep the number of steps (and the time on 2 cores) bounded
    size_t big = chunk() && chunk() < 4096 ? 20011 : (thin() ? 262147 : 1000003);
    for (const L &l : kinds) {
        const mxh_type_t *t = mxh_type_find(l.type);
        Pair p = {t, l.op, plain_size(t)};
        for (size_t n : {(size_t)65537, big}) {
            if (n > 65537 && l.type != MPI_DOUBLE && l.type != MPI_UNSIGNED_CHAR)
                continue;
            allreduce_case(ck, c.shm, p, n, n == big, salt_of(t, l.op, n, 30));
            reduce_case(ck, c.shm, p, n, true, ck.size - 1, salt_of(t, l.op, n, 31));
            bcast_case(ck, c.shm, t, p.tsize, n, ck.size / 2, salt_of(t, l.op, n, 32));
            size_t m = n / (size_t)ck.size + 1;
            rs_case(ck, c.shm, p, 1, m, n == big, salt_of(t, l.op, m, 33));
            ag_case(ck, c.shm, t, p.tsize, 1, m, n != big, salt_of(t, l.op, m, 34));
        }
    }
    ck.finish();
}

// The one-phase and the chunked protocol, allreduce and reduce: bitwise the
// same result on random floats (not exact under reordering: the fixed
// reduction order 0..n-1 is what makes them agree).
TEST_P(Shm, FixedOrderRandomFloats)
{
    ShmCtx &c = ctx();
    Checker ck(c.comm);
    size_t saved = mxh_shm_get_small_max(c.shm);
    const MPI_Datatype types[] = {MPI_FLOAT, MPI_DOUBLE};
    for (MPI_Datatype ty : types) {
        const mxh_type_t *t = mxh_type_find(ty);
        size_t ts = plain_size(t);
        size_t n = std::min(mxh_shm_slot_bytes(c.shm), (size_t)16384) / ts; // fits one slot
        Buf in(n * ts, 0), one(n * ts, 0), chunked(n * ts, 0), red(n * ts, 0);
        mxh_fill_random_fp(ty, in.p(), n, ck.rank, 99);
        mxh_shm_set_small_max(c.shm, n * ts);
        ck.st(mxh_shm_allreduce(c.shm, in.p(), one.p(), n, ty, ts, MPI_SUM), "one-phase");
        mxh_shm_set_small_max(c.shm, 0);
        ck.st(mxh_shm_allreduce(c.shm, in.p(), chunked.p(), n, ty, ts, MPI_SUM), "chunked");
        ck.st(mxh_shm_reduce(c.shm, in.p(), red.p(), n, ty, ts, MPI_SUM, 0), "reduce");
        ck.same_bytes(chunked.p(), one.p(), n * ts,
                      std::string(t->name) + ": chunked allreduce differs from one-phase");
        if (ck.rank == 0)
            ck.same_bytes(red.p(), one.p(), n * ts,
                          std::string(t->name) + ": reduce differs from allreduce");
        ck.hash(mxh_hash_bytes_fnv(MXH_FNV_INIT, one.p(), n * ts), "random one-phase");
        ck.hash(mxh_hash_bytes_fnv(MXH_FNV_INIT, chunked.p(), n * ts), "random chunked");
        // reduce_scatter of the same data: the parts equal the allreduce
        Parts P = make_parts(ck.size, 0, n / (size_t)ck.size);
        std::vector<int> displs(P.counts.size());
        for (size_t q = 0; q < displs.size(); q++)
            displs[q] = (int)(q * (size_t)P.counts[0]);
        Buf part((size_t)P.counts[0] * ts, 0);
        ck.st(mxh_shm_reduce_scatter(c.shm, in.p(), part.p(), P.counts.data(), displs.data(), ty,
                                     ts, MPI_SUM),
              "reduce_scatter");
        ck.same_bytes(part.p(), one.p() + (size_t)displs[(size_t)ck.rank] * ts,
                      (size_t)P.counts[0] * ts,
                      std::string(t->name) + ": reduce_scatter differs from allreduce");
    }
    mxh_shm_set_small_max(c.shm, saved);
    ck.finish();
}

// 1000 back-to-back calls mixing kinds, sizes, roots and in-place use,
// interleaved with MPI collectives on the same communicator (the reference
// results come from MPICH between the shm calls; sometimes two shm calls run
// with no MPI call in between).
TEST_P(Shm, MixedBackToBack)
{
    ShmCtx &c = ctx();
    Checker ck(c.comm);
    const int iters = quick() ? 300 : 1000;
    std::mt19937 rng(1234); // same sequence on every rank
    const size_t sizes[] = {0, 1, 3, 17, 100, 1000, 4099, 20000};
    const mxh_type_t *ti = mxh_type_find(MPI_INT), *td = mxh_type_find(MPI_DOUBLE);
    const mxh_type_t *tb = mxh_type_find(MPI_BYTE);
    int progress_calls = 0;
    mxh_shm_set_progress(
        c.shm, [](void *a) { ++*(int *)a; }, &progress_calls);
    for (int it = 0; it < iters && ck.failures() == 0; it++) {
        int kind = (int)(rng() % 6);
        size_t n = sizes[rng() % 8];
        if (thin() && chunk() && chunk() < 4096 && n > 4099)
            n = 4099; // 8 ranks on 2 cores: bound the number of 512-byte steps
        int root = (int)(rng() % (unsigned)ck.size);
        bool ip = rng() % 2;
        const mxh_type_t *t = rng() % 2 ? ti : td;
        Pair p = {t, (rng() % 2) ? MPI_SUM : MPI_MAX, plain_size(t)};
        uint64_t salt = (uint64_t)it;
        switch (kind) {
        case 0: allreduce_case(ck, c.shm, p, n, ip, salt); break;
        case 1: reduce_case(ck, c.shm, p, n, ip, root, salt); break;
        case 2: bcast_case(ck, c.shm, tb, 1, n * 8, root, salt); break;
        case 3: rs_case(ck, c.shm, p, (int)(rng() % 4), n / 4, ip, salt); break;
        case 4: ag_case(ck, c.shm, t, p.tsize, (int)(rng() % 4), n / 4, ip, salt); break;
        case 5: { // two shm calls back to back, no MPI in between; check afterwards
            size_t bytes = n * 8 + 1;
            std::vector<unsigned char> a(bytes), b(n * sizeof(int) + 4);
            if (ck.rank == root)
                for (size_t i = 0; i < bytes; i++)
                    a[i] = (unsigned char)(i * 31 + (size_t)it);
            std::vector<int> x(n + 1, ck.rank + it), y(n + 1);
            ck.st(mxh_shm_bcast(c.shm, a.data(), bytes, 1, root), "bcast (pair)");
            ck.st(mxh_shm_allreduce(c.shm, x.data(), y.data(), n + 1, MPI_INT, sizeof(int),
                                    MPI_SUM),
                  "allreduce (pair)");
            int want = ck.size * it + ck.size * (ck.size - 1) / 2;
            for (size_t i = 0; i <= n; i++)
                if (y[i] != want) {
                    ck.fail(fmt("iteration %d: allreduce after bcast: y[%zu] = %d, want %d", it, i,
                                y[i], want));
                    break;
                }
            for (size_t i = 0; i < bytes; i++)
                if (a[i] != (unsigned char)(i * 31 + (size_t)it)) {
                    ck.fail(fmt("iteration %d: bcast: byte %zu wrong", it, i));
                    break;
                }
            break;
        }
        }
        if (it % 7 == 0) // an unrelated MPI collective in between
            MPI_Barrier(c.comm);
    }
    mxh_shm_set_progress(c.shm, nullptr, nullptr);
    ck.finish();
}

// A late rank: the others wait (and call the progress hook) without failing.
TEST_P(Shm, LateRankProgressHook)
{
    ShmCtx &c = ctx();
    Checker ck(c.comm);
    int calls = 0;
    mxh_shm_set_progress(
        c.shm, [](void *a) { ++*(int *)a; }, &calls);
    double x = ck.rank + 1, y = 0;
    if (ck.rank == 0)
        usleep(20000);
    ck.st(mxh_shm_allreduce(c.shm, &x, &y, 1, MPI_DOUBLE, sizeof(double), MPI_SUM), "allreduce");
    mxh_shm_set_progress(c.shm, nullptr, nullptr);
    double want = ck.size * (ck.size + 1) / 2.0;
    if (y != want)
        ck.fail(fmt("late rank: got %g, want %g", y, want));
    if (ck.rank != 0 && calls == 0)
        ck.fail("the progress hook was never called while waiting 20 ms for rank 0");
    ck.finish();
}

// Argument errors are local and leave the object usable.
TEST_P(Shm, InvalidArguments)
{
    ShmCtx &c = ctx();
    Checker ck(c.comm);
    int x = 1, y = 0;
    std::fflush(stderr);
    int saved_fd = dup(2), null_fd = open("/dev/null", O_WRONLY);
    dup2(null_fd, 2); // the expected error lines
    close(null_fd);
    EXPECT_EQ(mxh_shm_allreduce(c.shm, &x, &y, 1, MPI_INT, 0, MPI_SUM), MXH_ERR_INVALID_PARAM);
    EXPECT_EQ(mxh_shm_bcast(c.shm, &x, 1, 4, ck.size), MXH_ERR_INVALID_PARAM);
    EXPECT_EQ(mxh_shm_reduce(c.shm, &x, &y, 1, MPI_INT, 4, MPI_SUM, -1), MXH_ERR_INVALID_PARAM);
    EXPECT_EQ(mxh_shm_allreduce(nullptr, &x, &y, 1, MPI_INT, 4, MPI_SUM), MXH_ERR_INVALID_PARAM);
    std::fflush(stderr);
    dup2(saved_fd, 2);
    close(saved_fd);
    ck.st(mxh_shm_allreduce(c.shm, &x, &y, 1, MPI_INT, sizeof(int), MPI_SUM), "after errors");
    EXPECT_EQ(y, ck.size);
    ck.finish();
}

const char *const kParams[] = {"node/0", "node/64", "node/4096", "reversed/4096"};
std::string param_name(const ::testing::TestParamInfo<const char *> &i)
{
    std::string s = i.param;
    std::replace(s.begin(), s.end(), '/', '_');
    return s;
}
INSTANTIATE_TEST_SUITE_P(Chunks, Shm, ::testing::ValuesIn(kParams), param_name);

// ------------------------------------------------------ lifetime and support

int count_fds()
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

// Lines of /proc/self/maps (containing @what, if given).
int count_maps(const char *what = nullptr)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    int n = 0;
    char line[4096];
    while (fgets(line, sizeof(line), f))
        n += what == nullptr || strstr(line, what) != nullptr;
    fclose(f);
    return n;
}

class ShmLife : public MxhMpiTest {};

// Create/destroy in a loop (several chunk sizes, one call each): no file
// descriptor, mapping or /dev/shm leaks.
TEST_F(ShmLife, CreateDestroyLoop)
{
    MPI_Comm comm = make_node_comm(false);
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const int loops = quick() ? 50 : 300;
    int fds0 = 0, maps0 = 0, shm0 = count_maps("/mxh-shm-"); // the suite's objects
    for (int i = 0; i < loops; i++) {
        if (i == 2) { // after MPI's lazy setup
            fds0 = count_fds();
            maps0 = count_maps();
        }
        mxh_shm_t *shm = nullptr;
        size_t chunk = (size_t)64 << (i % 14);
        mxh_status_t st = mxh_shm_create(comm, chunk, &shm);
        if (st != MXH_OK) { // the status is agreed: every rank leaves the loop
            ADD_FAILURE() << "iteration " << i << ": " << mxh_status_string(st);
            break;
        }
        EXPECT_GE(mxh_shm_slot_bytes(shm), chunk);
        int x = rank + i, y = -1;
        EXPECT_EQ(mxh_shm_allreduce(shm, &x, &y, 1, MPI_INT, sizeof(int), MPI_SUM), MXH_OK);
        EXPECT_EQ(y, size * i + size * (size - 1) / 2) << "iteration " << i;
        mxh_shm_destroy(shm);
    }
    EXPECT_EQ(count_fds(), fds0) << "file descriptors leaked";
    // our segments are the only "mxh-shm-" mappings; the total may move by an
    // allocator arena (valgrind), a leak would add one per iteration
    EXPECT_EQ(count_maps("/mxh-shm-"), shm0) << "shared-memory segments still mapped";
    EXPECT_LE(count_maps(), maps0 + 4) << "mappings leaked";
    MPI_Comm_free(&comm);
}

// Size 1: every collective is a local copy.
TEST_F(ShmLife, SizeOne)
{
    mxh_shm_t *shm = nullptr;
    ASSERT_EQ(mxh_shm_create(MPI_COMM_SELF, 64, &shm), MXH_OK);
    int in[5] = {1, 2, 3, 4, 5}, out[5] = {0, 0, 0, 0, 0};
    EXPECT_EQ(mxh_shm_allreduce(shm, in, out, 5, MPI_INT, 4, MPI_SUM), MXH_OK);
    EXPECT_EQ(0, memcmp(in, out, sizeof(in)));
    int counts[1] = {3}, displs[1] = {2}, part[3] = {0, 0, 0};
    EXPECT_EQ(mxh_shm_reduce_scatter(shm, in, part, counts, displs, MPI_INT, 4, MPI_SUM), MXH_OK);
    EXPECT_EQ(part[0], 3);
    EXPECT_EQ(part[2], 5);
    int all[5] = {0, 0, 0, 0, 0};
    EXPECT_EQ(mxh_shm_allgather(shm, part, all, counts, displs, MPI_INT, 4), MXH_OK);
    EXPECT_EQ(all[2], 3);
    EXPECT_EQ(all[1], 0);
    EXPECT_EQ(mxh_shm_reduce(shm, in, in, 5, MPI_INT, 4, MPI_SUM, 0), MXH_OK);
    EXPECT_EQ(mxh_shm_bcast(shm, in, 5, 4, 0), MXH_OK);
    mxh_shm_destroy(shm);
}

// WORLD when its ranks do not all share memory (MPIR_CVAR_NUM_CLIQUES
// launches): every rank fails with MXH_ERR_UNSUPPORTED; else it works.
TEST_F(ShmLife, SupportAgreed)
{
    MPI_Comm node = make_node_comm(false);
    int nsize, wsize;
    MPI_Comm_size(node, &nsize);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    int shared_here = nsize == wsize, shared_all = 0;
    MPI_Allreduce(&shared_here, &shared_all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    mxh_shm_t *shm = nullptr;
    mxh_status_t st = mxh_shm_create(MPI_COMM_WORLD, 0, &shm);
    if (shared_all) {
        EXPECT_EQ(st, MXH_OK);
    } else {
        EXPECT_EQ(st, MXH_ERR_UNSUPPORTED);
        EXPECT_EQ(shm, nullptr);
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank == 0)
            std::printf("  [note] WORLD spans %d shared-memory groups: create refused as "
                        "expected\n",
                        wsize / nsize);
    }
    mxh_shm_destroy(shm);
    MPI_Comm_free(&node);
}

// ------------------------------------------------------------ single copy

class ShmCma : public MxhMpiTest {
  protected:
    void SetUp() override
    {
        MxhMpiTest::SetUp();
        comm_ = make_node_comm(false);
        ASSERT_EQ(mxh_shm_create(comm_, 4096, &shm_), MXH_OK);
    }
    void TearDown() override
    {
        mxh_shm_destroy(shm_);
        MPI_Comm_free(&comm_);
        MxhMpiTest::TearDown();
    }
    // Skip (on every rank alike) when the probe found no single copy.
    bool have_cma()
    {
        int size;
        MPI_Comm_size(comm_, &size);
        if (size > 1 && !mxh_shm_cma_available(shm_)) {
            int rank;
            MPI_Comm_rank(comm_, &rank);
            if (rank == 0)
                std::printf("  [note] process_vm_readv not permitted here: single copy off\n");
            return false;
        }
        return true;
    }
    // Bcast from every root and allgather (every shape, in place or not) at
    // sizes around and far above the slot (4 KiB), with the threshold @cmin.
    void matrix(Checker &ck, size_t cmin, size_t cmax, int tag)
    {
        mxh_shm_set_cma_min(shm_, cmin);
        mxh_shm_set_cma_max(shm_, cmax);
        const mxh_type_t *tb = mxh_type_find(MPI_BYTE), *td = mxh_type_find(MPI_DOUBLE);
        const mxh_type_t *tz = mxh_type_find(MPI_C_DOUBLE_COMPLEX);
        // bytes, ragged (4 KiB slots: the slot protocol takes 2200 steps for 9 MB)
        const size_t big = quick() || ck.size > 2 ? 1000003 : 9000011;
        for (size_t bytes : {(size_t)1, (size_t)4095, (size_t)4096, (size_t)65537, big})
            for (int root = 0; root < ck.size; root++) {
                bcast_case(ck, shm_, tb, 1, bytes, root, salt_of(tb, MPI_OP_NULL, bytes, tag + root));
                bcast_case(ck, shm_, td, 8, bytes / 8 + 1, root,
                           salt_of(td, MPI_OP_NULL, bytes, tag + 50 + root));
            }
        for (size_t m : {(size_t)1, (size_t)517, (size_t)70001, big / 16 / (size_t)ck.size})
            for (int shape = 0; shape < 4; shape++)
                for (int ip = 0; ip < 2; ip++) {
                    ag_case(ck, shm_, tz, 16, shape, m, ip, salt_of(tz, MPI_OP_NULL, m, tag + 100 + shape));
                    if (shape == 1)
                        ag_case(ck, shm_, tb, 1, shape, m * 16 + 3, ip,
                                salt_of(tb, MPI_OP_NULL, m, tag + 110));
                }
        mxh_shm_set_cma_min(shm_, SIZE_MAX);
        mxh_shm_set_cma_max(shm_, SIZE_MAX);
    }
    MPI_Comm comm_ = MPI_COMM_NULL;
    mxh_shm_t *shm_ = nullptr;
};

// Every transfer through process_vm_readv (threshold 1 byte).
TEST_F(ShmCma, SingleCopyEverySize)
{
    Checker ck(comm_);
    if (have_cma())
        matrix(ck, 1, SIZE_MAX, 1000);
    ck.finish();
}

// The slot protocol on the same cases (single copy disabled by the setter),
// and the default threshold (both protocols in one run).
TEST_F(ShmCma, SlotsWhenDisabledAndDefaultThreshold)
{
    Checker ck(comm_);
    size_t def = mxh_shm_get_cma_min(shm_), defmax = mxh_shm_get_cma_max(shm_);
    EXPECT_GT(def, (size_t)0);
    EXPECT_GT(defmax, def);
    matrix(ck, SIZE_MAX, SIZE_MAX, 2000);
    matrix(ck, def, defmax, 3000);
    ck.finish();
}

// Single copy and slot calls back to back without MPI in between (the step
// counter and the flags stay consistent across protocols), with a late root
// (the readers wait) and a late reader (the root waits before returning: its
// buffer is modified right after the call, which must not reach the reader).
TEST_F(ShmCma, MixedWithSlotsAndLateRanks)
{
    Checker ck(comm_);
    if (!have_cma()) {
        ck.finish();
        return;
    }
    mxh_shm_set_cma_min(shm_, 32768);
    mxh_shm_set_cma_max(shm_, 100000); // three protocols: slots, single copy, slots
    std::mt19937 rng(77);
    const int iters = quick() ? 100 : 400;
    for (int it = 0; it < iters && ck.failures() == 0; it++) {
        size_t bytes = rng() % 2 ? 40000 + rng() % 100000 : 1 + rng() % 20000;
        if (it % 5 == 0)
            bytes += 400000;
        int root = (int)(rng() % (unsigned)ck.size);
        int late = (int)(rng() % (unsigned)ck.size);
        bool sleepy = it % 16 == 0;
        std::vector<unsigned char> a(bytes);
        for (size_t i = 0; i < bytes; i++)
            a[i] = ck.rank == root ? (unsigned char)(i * 13 + (size_t)it) : 0;
        if (sleepy && ck.rank == late)
            usleep(5000);
        ck.st(mxh_shm_bcast(shm_, a.data(), bytes, 1, root), "bcast");
        if (ck.rank == root)
            std::fill(a.begin(), a.end(), 0xEE); // after the call: nobody reads it any more
        else
            for (size_t i = 0; i < bytes; i++)
                if (a[i] != (unsigned char)(i * 13 + (size_t)it)) {
                    ck.fail(fmt("iteration %d: bcast of %zu bytes from %d: byte %zu wrong", it,
                                bytes, root, i));
                    break;
                }
        // allgather of ragged parts right after, in place every other time
        std::vector<int> counts((size_t)ck.size), displs((size_t)ck.size);
        size_t tot = 0;
        for (int q = 0; q < ck.size; q++) {
            counts[(size_t)q] = (int)((bytes / 4 + 97 * (size_t)q) % 30011);
            displs[(size_t)q] = (int)tot;
            tot += (size_t)counts[(size_t)q];
        }
        std::vector<int> mine((size_t)counts[(size_t)ck.rank]), out(tot, -1);
        for (size_t i = 0; i < mine.size(); i++)
            mine[i] = ck.rank * 1000003 + (int)i + it;
        const void *src = mine.data();
        if (it % 2) {
            std::copy(mine.begin(), mine.end(), out.begin() + displs[(size_t)ck.rank]);
            src = out.data() + displs[(size_t)ck.rank];
        }
        ck.st(mxh_shm_allgather(shm_, src, out.data(), counts.data(), displs.data(), MPI_INT,
                                sizeof(int)),
              "allgather");
        std::fill(mine.begin(), mine.end(), -7);
        for (int q = 0; q < ck.size; q++)
            for (int i = 0; i < counts[(size_t)q]; i++)
                if (out[(size_t)displs[(size_t)q] + (size_t)i] != q * 1000003 + i + it) {
                    ck.fail(fmt("iteration %d: allgather: part %d element %d wrong", it, q, i));
                    q = ck.size;
                    break;
                }
    }
    mxh_shm_set_cma_min(shm_, SIZE_MAX);
    mxh_shm_set_cma_max(shm_, SIZE_MAX);
    ck.finish();
}

// MXH_SHM_CMA=0 on one rank only at create: every rank agrees on no single
// copy, and the large collectives still work (slot protocol).
TEST_F(ShmCma, OneRankForbidsAgreed)
{
    int rank, size;
    MPI_Comm_rank(comm_, &rank);
    MPI_Comm_size(comm_, &size);
    const char *old = getenv("MXH_SHM_CMA");
    std::string saved = old ? old : "";
    if (rank == size - 1)
        setenv("MXH_SHM_CMA", "0", 1);
    mxh_shm_t *shm = nullptr;
    ASSERT_EQ(mxh_shm_create(comm_, 0, &shm), MXH_OK);
    if (old)
        setenv("MXH_SHM_CMA", saved.c_str(), 1);
    else
        unsetenv("MXH_SHM_CMA");
    EXPECT_EQ(mxh_shm_cma_available(shm), 0);
    {
        Checker ck(comm_);
        mxh_shm_set_cma_min(shm, 1); // ignored: not available
        const mxh_type_t *tb = mxh_type_find(MPI_BYTE);
        for (int root = 0; root < size; root++)
            bcast_case(ck, shm, tb, 1, 300007, root, salt_of(tb, MPI_OP_NULL, 1, 4000 + root));
        ag_case(ck, shm, tb, 1, 1, 100003, false, salt_of(tb, MPI_OP_NULL, 1, 4100));
        ck.finish();
    }
    mxh_shm_destroy(shm);
    // the agreement also holds the other way: nobody forbids, all take it or none
    ASSERT_EQ(mxh_shm_create(comm_, 0, &shm), MXH_OK);
    int on = mxh_shm_cma_available(shm), lo = 0, hi = 0;
    MPI_Allreduce(&on, &lo, 1, MPI_INT, MPI_MIN, comm_);
    MPI_Allreduce(&on, &hi, 1, MPI_INT, MPI_MAX, comm_);
    EXPECT_EQ(lo, hi) << "single copy not agreed";
#ifdef __linux__
    if (size > 1 && old == nullptr && !on && rank == 0)
        std::printf("  [note] process_vm_readv refused on this machine\n");
#endif
    mxh_shm_destroy(shm);
}

} // namespace
