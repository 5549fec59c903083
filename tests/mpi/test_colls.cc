// Every MPIX_Hier_ collective against MPICH's own, bit for bit, on several
// communicators (parameter: world, dup, reversed, evenodd, interleaved).
//
// Data patterns (tests/shim) make every allowed reduction exact whatever the
// order, so the hierarchical result must equal MPICH's byte for byte (value
// bytes only: long double padding and pair-type holes are not compared). On
// top of that every rank hashes its results and the hashes must equal rank
// 0's (bitwise identity across ranks), also on random float/double data.
//
// Built a second time as test_colls_mem (-DMXH_TEST_MEMKIND=1): the send and
// receive buffers of the case runners come from the test memory kind
// (tests/mpi/checker.hh, $MXH_TEST_MEM), the references stay on host memory.
//
// Filters: --gtest_filter='Comms/Colls.Allreduce*/world' etc.
// MXH_TEST_QUICK=1 trims the matrix (counts 0,1,7 and fewer roots);
// MXH_TEST_TRACE=1 prints every case to stderr before running it.
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "checker.hh"
#include "mpi_util.hh"
#include "mxh_test_shim.h"

namespace {

using namespace mxh_test;  // checker.hh, mpi_util.hh

// ------------------------------------------------------------ communicators

const char *const kCommKinds[] = {"world", "dup", "reversed", "evenodd", "interleaved"};

std::map<std::string, MPI_Comm> g_comms;

MPI_Comm make_comm(const std::string &kind)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm c = MPI_COMM_NULL;
    if (kind == "world") {
        c = MPI_COMM_WORLD;
    } else if (kind == "dup") {
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
    } else if (kind == "reversed") {
        MPI_Comm_split(MPI_COMM_WORLD, 0, size - 1 - rank, &c);
    } else if (kind == "evenodd") {
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &c);
    } else if (kind == "interleaved") {
        // New rank order: local index major, node minor (a0 b0 c0 a1 b1 ...),
        // so neighbours in the new communicator sit on different fake nodes.
        char name[256];
        mxh_node_name(name, sizeof(name));
        std::vector<char> all((size_t)size * 256);
        MPI_Allgather(name, 256, MPI_CHAR, all.data(), 256, MPI_CHAR, MPI_COMM_WORLD);
        std::map<std::string, int> node_index, node_count;
        int local = 0, node = 0;
        for (int r = 0; r < size; r++) {
            std::string n(&all[(size_t)r * 256]);
            if (!node_index.count(n)) {
                int k = (int)node_index.size();
                node_index[n] = k;
            }
            if (r == rank) {
                local = node_count[n];
                node = node_index[n];
            }
            node_count[n]++;
        }
        MPI_Comm_split(MPI_COMM_WORLD, 0, local * size + node, &c);
    }
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    return c;
}

MPI_Comm get_comm(const std::string &kind)
{
    auto it = g_comms.find(kind);
    if (it != g_comms.end())
        return it->second;
    MPI_Comm c = make_comm(kind);
    g_comms[kind] = c;
    return c;
}

class CommsEnv : public ::testing::Environment {
  public:
    void TearDown() override
    {
        // std::map iterates in the same order on every rank.
        for (auto &kv : g_comms)
            if (kv.second != MPI_COMM_WORLD)
                MPI_Comm_free(&kv.second);
        g_comms.clear();
    }
};
::testing::Environment *const g_env = ::testing::AddGlobalTestEnvironment(new CommsEnv);

std::vector<int> small_counts()
{
    if (quick())
        return {0, 1, 7};
    return {0, 1, 2, 3, 7, 31, 1009};
}

// Pairs MPI allows; MPICH-rejected ones (e.g. MPI_COMPLEX32) are counted.
// -------------------------------------------------------------- case runners

void allreduce_case(Checker &ck, const mxh_type_t *t, MPI_Op op, int count, bool inplace,
                    uint64_t salt)
{
    size_t n = (size_t)count, bytes = n * (size_t)t->extent;
    std::string label = fmt("MPIX_Hier_allreduce %s %s count=%d%s", t->name, mxh_op_name(op),
                            count, inplace ? " in-place" : "");
    trace(label);
    Buf in(bytes, 0, Role::send), ref(bytes, 0xCD), got(bytes, 0xCD, Role::recv);
    mxh_fill(t, op, in.p(), n, ck.rank, salt);
    std::vector<unsigned char> pristine(in.p(), in.p() + bytes);
    ck.rc(MPI_Allreduce(pristine.data(), ref.p(), count, t->type, op, ck.comm),
          "reference " + label);
    int rc;
    if (inplace) {
        memcpy(got.p(), in.p(), bytes);
        rc = MPIX_Hier_allreduce(MPI_IN_PLACE, got.p(), count, t->type, op, ck.comm);
    } else {
        rc = MPIX_Hier_allreduce(in.p(), got.p(), count, t->type, op, ck.comm);
        ck.same_bytes(in.p(), pristine.data(), bytes, label + ": modified sendbuf");
    }
    ck.staged(in, !inplace);
    ck.staged(got, true);
    ck.rc(rc, label);
    ck.same(t, false, got.p(), ref.p(), n, label);
    ck.guards(got.b, label);
    ck.guards(in.b, label);
    ck.hash(mxh_hash(t, 0, got.p(), n), label);
}

void rsb_case(Checker &ck, const mxh_type_t *t, MPI_Op op, int count, bool inplace, uint64_t salt)
{
    size_t n = (size_t)count, ext = (size_t)t->extent, total = n * (size_t)ck.size;
    std::string label = fmt("MPIX_Hier_reduce_scatter_block %s %s recvcount=%d%s", t->name,
                            mxh_op_name(op), count, inplace ? " in-place" : "");
    trace(label);
    Buf in(total * ext, 0, Role::send), ref(n * ext, 0xCD),
        got((inplace ? total : n) * ext, 0xCD, Role::recv);
    mxh_fill(t, op, in.p(), total, ck.rank, salt);
    std::vector<unsigned char> pristine(in.p(), in.p() + total * ext);
    ck.rc(MPI_Reduce_scatter_block(pristine.data(), ref.p(), count, t->type, op, ck.comm),
          "reference " + label);
    int rc;
    if (inplace) {
        memcpy(got.p(), in.p(), total * ext);
        rc = MPIX_Hier_reduce_scatter_block(MPI_IN_PLACE, got.p(), count, t->type, op, ck.comm);
    } else {
        rc = MPIX_Hier_reduce_scatter_block(in.p(), got.p(), count, t->type, op, ck.comm);
        ck.same_bytes(in.p(), pristine.data(), total * ext, label + ": modified sendbuf");
    }
    ck.staged(in, !inplace);
    ck.staged(got, true);
    ck.rc(rc, label);
    ck.same(t, false, got.p(), ref.p(), n, label);
    ck.guards(got.b, label);
}

// Non-root recvbuf: a canary that must stay untouched (it is not significant).
void reduce_case(Checker &ck, const mxh_type_t *t, MPI_Op op, int count, bool inplace, int root,
                 uint64_t salt)
{
    size_t n = (size_t)count, bytes = n * (size_t)t->extent;
    std::string label = fmt("MPIX_Hier_reduce %s %s count=%d root=%d%s", t->name,
                            mxh_op_name(op), count, root, inplace ? " in-place at root" : "");
    trace(label);
    Buf in(bytes, 0, Role::send), ref(bytes, 0xCD), got(bytes, 0xCD, Role::recv);
    mxh_fill(t, op, in.p(), n, ck.rank, salt);
    std::vector<unsigned char> pristine(in.p(), in.p() + bytes);
    ck.rc(MPI_Reduce(pristine.data(), ref.p(), count, t->type, op, root, ck.comm),
          "reference " + label);
    int rc;
    bool me_root = ck.rank == root;
    ck.staged(in, !(inplace && me_root));
    ck.staged(got, me_root);
    if (inplace && me_root) {
        memcpy(got.p(), in.p(), bytes);
        rc = MPIX_Hier_reduce(MPI_IN_PLACE, got.p(), count, t->type, op, root, ck.comm);
    } else {
        rc = MPIX_Hier_reduce(in.p(), got.p(), count, t->type, op, root, ck.comm);
        ck.same_bytes(in.p(), pristine.data(), bytes, label + ": modified sendbuf");
    }
    ck.rc(rc, label);
    ck.rooted(me_root, t, got.p(), ref.p(), n, bytes, label);
    ck.guards(got.b, label);
}

void allgather_case(Checker &ck, const mxh_type_t *t, int count, bool inplace, uint64_t salt)
{
    size_t n = (size_t)count, ext = (size_t)t->extent, total = n * (size_t)ck.size;
    std::string label =
        fmt("MPIX_Hier_allgather %s count=%d%s", t->name, count, inplace ? " in-place" : "");
    Buf in(n * ext, 0, Role::send), ref(total * ext, 0xCD), got(total * ext, 0xCD, Role::recv);
    mxh_fill(t, MPI_OP_NULL, in.p(), n, ck.rank, salt);
    std::vector<unsigned char> pristine(in.p(), in.p() + n * ext);
    ck.rc(MPI_Allgather(pristine.data(), count, t->type, ref.p(), count, t->type, ck.comm),
          "reference " + label);
    ck.staged(in, !inplace);
    ck.staged(got, true);
    int rc;
    if (inplace) {
        memcpy(got.p() + (size_t)ck.rank * n * ext, in.p(), n * ext);
        rc = MPIX_Hier_allgather(MPI_IN_PLACE, count, t->type, got.p(), count, t->type, ck.comm);
    } else {
        rc = MPIX_Hier_allgather(in.p(), count, t->type, got.p(), count, t->type, ck.comm);
        ck.same_bytes(in.p(), pristine.data(), n * ext, label + ": modified sendbuf");
    }
    ck.rc(rc, label);
    ck.same(t, true, got.p(), ref.p(), total, label);
    ck.guards(got.b, label);
    ck.hash(mxh_hash(t, 1, got.p(), total), label);
}

void bcast_case(Checker &ck, const mxh_type_t *t, int count, int root, uint64_t salt)
{
    size_t n = (size_t)count, bytes = n * (size_t)t->extent;
    std::string label = fmt("MPIX_Hier_bcast %s count=%d root=%d", t->name, count, root);
    trace(label);
    Buf ref(bytes, 0xCD), got(bytes, 0xCD, ck.rank == root ? Role::send : Role::recv);
    ck.staged(got, true);
    if (ck.rank == root) {
        mxh_fill(t, MPI_OP_NULL, ref.p(), n, root, salt);
        memcpy(got.p(), ref.p(), bytes);
    }
    ck.rc(MPI_Bcast(ref.p(), count, t->type, root, ck.comm), "reference " + label);
    ck.rc(MPIX_Hier_bcast(got.p(), count, t->type, root, ck.comm), label);
    ck.same(t, true, got.p(), ref.p(), n, label);
    ck.guards(got.b, label);
    ck.hash(mxh_hash(t, 1, got.p(), n), label);
}

std::vector<int> roots_of(int size)
{
    std::vector<int> r;
    if (quick() && size > 2)
        return {0, size - 1};
    for (int i = 0; i < size; i++)
        r.push_back(i);
    return r;
}

// ------------------------------------------------------------------- fixture

class Colls : public MxhMpiTest, public ::testing::WithParamInterface<const char *> {
  protected:
    MPI_Comm comm() { return get_comm(GetParam()); }
};

// ---- the full type/op matrix on small counts

// Calls @f(pair, count) on every pair allowed_pairs() gives and every small count.
template <class F>
void each_pair_count(const char *what, F &&f)
{
    int skipped;
    auto pairs = allowed_pairs(&skipped);
    note_skipped(skipped, what);
    for (const Pair &p : pairs)
        for (int count : small_counts())
            f(p, count);
}

TEST_P(Colls, AllreduceAllTypesOps)
{
    Checker ck(comm(), GetParam());
    each_pair_count("allreduce", [&](const Pair &p, int count) {
        for (int inplace = 0; inplace < 2; inplace++)
            allreduce_case(ck, p.t, p.op, count, inplace, salt_of(p.t, p.op, count, 1));
    });
    ck.finish();
}

TEST_P(Colls, ReduceScatterBlockAllTypesOps)
{
    Checker ck(comm(), GetParam());
    each_pair_count("reduce_scatter_block", [&](const Pair &p, int count) {
        for (int inplace = 0; inplace < 2; inplace++)
            rsb_case(ck, p.t, p.op, count, inplace, salt_of(p.t, p.op, count, 2));
    });
    ck.finish();
}

// Every root on counts 0..31; count 1009 on the first and last root.
TEST_P(Colls, ReduceAllTypesOpsAllRoots)
{
    Checker ck(comm(), GetParam());
    each_pair_count("reduce", [&](const Pair &p, int count) {
        for (int root : roots_of(ck.size)) {
            if (count > 31 && root != 0 && root != ck.size - 1)
                continue;
            for (int inplace = 0; inplace < 2; inplace++)
                reduce_case(ck, p.t, p.op, count, inplace, root,
                            salt_of(p.t, p.op, count, 3 + root));
        }
    });
    ck.finish();
}

// ---- data movement on every predefined type

TEST_P(Colls, AllgatherAllTypes)
{
    Checker ck(comm(), GetParam());
    for (int i = 0; i < mxh_num_types(); i++)
        for (int count : small_counts())
            for (int inplace = 0; inplace < 2; inplace++)
                allgather_case(ck, mxh_type_at(i), count, inplace,
                               salt_of(mxh_type_at(i), MPI_OP_NULL, count, 4));
    ck.finish();
}

TEST_P(Colls, BcastAllTypesAllRoots)
{
    Checker ck(comm(), GetParam());
    for (int i = 0; i < mxh_num_types(); i++)
        for (int count : small_counts())
            for (int root : roots_of(ck.size))
                bcast_case(ck, mxh_type_at(i), count, root,
                           salt_of(mxh_type_at(i), MPI_OP_NULL, count, 5 + root));
    ck.finish();
}

// ---- large counts on a few types

struct Large {
    MPI_Datatype type;
    MPI_Op op;
};
const Large kLarge[] = {{MPI_INT, MPI_SUM}, {MPI_DOUBLE, MPI_SUM}, {MPI_FLOAT, MPI_MAX}};
const int kLargeCounts[] = {1009, 65537, 1000003};

TEST_P(Colls, AllreduceLargeCounts)
{
    Checker ck(comm(), GetParam());
    for (const Large &l : kLarge)
        for (int count : kLargeCounts)
            for (int inplace = 0; inplace < 2; inplace++) {
                if (count > 65537 && inplace && l.type != MPI_DOUBLE)
                    continue;
                const mxh_type_t *t = mxh_type_find(l.type);
                allreduce_case(ck, t, l.op, count, inplace, salt_of(t, l.op, count, 10));
            }
    ck.finish();
}

// recvcount per rank; the largest keeps the total near 1000003 elements.
TEST_P(Colls, ReduceScatterBlockLargeCounts)
{
    Checker ck(comm(), GetParam());
    for (const Large &l : kLarge)
        for (int count : kLargeCounts)
            for (int inplace = 0; inplace < 2; inplace++) {
                int c = count > 65537 ? (count + ck.size - 1) / ck.size : count;
                const mxh_type_t *t = mxh_type_find(l.type);
                rsb_case(ck, t, l.op, c, inplace, salt_of(t, l.op, c, 11));
            }
    ck.finish();
}

TEST_P(Colls, ReduceLargeCounts)
{
    Checker ck(comm(), GetParam());
    std::vector<int> roots = {0};
    if (ck.size > 1)
        roots.push_back(ck.size - 1);
    for (const Large &l : kLarge)
        for (int count : kLargeCounts)
            for (int root : roots) {
                const mxh_type_t *t = mxh_type_find(l.type);
                reduce_case(ck, t, l.op, count, root == 0, root, salt_of(t, l.op, count, 12));
            }
    ck.finish();
}

TEST_P(Colls, AllgatherLargeCounts)
{
    Checker ck(comm(), GetParam());
    const MPI_Datatype types[] = {MPI_BYTE, MPI_DOUBLE};
    for (MPI_Datatype ty : types)
        for (int count : kLargeCounts)
            for (int inplace = 0; inplace < 2; inplace++) {
                int c = count > 65537 ? (count + ck.size - 1) / ck.size : count;
                const mxh_type_t *t = mxh_type_find(ty);
                allgather_case(ck, t, c, inplace, salt_of(t, MPI_OP_NULL, c, 13));
            }
    ck.finish();
}

TEST_P(Colls, BcastLargeCounts)
{
    Checker ck(comm(), GetParam());
    const MPI_Datatype types[] = {MPI_BYTE, MPI_DOUBLE};
    for (MPI_Datatype ty : types)
        for (int count : kLargeCounts) {
            const mxh_type_t *t = mxh_type_find(ty);
            bcast_case(ck, t, count, 0, salt_of(t, MPI_OP_NULL, count, 14));
            if (ck.size > 1)
                bcast_case(ck, t, count, ck.size - 1, salt_of(t, MPI_OP_NULL, count, 15));
        }
    ck.finish();
}

// ---- random floating point: identical on every rank, close to MPICH

TEST_P(Colls, AllreduceRandomFloatsIdentical)
{
    Checker ck(comm(), GetParam());
    const int counts[] = {1, 7, 31, 1009, 65537, 1000003};
    for (int fl = 0; fl < 2; fl++) {
        MPI_Datatype ty = fl ? MPI_FLOAT : MPI_DOUBLE;
        const mxh_type_t *t = mxh_type_find(ty);
        double tol = fl ? 1e-4 : 1e-12;
        for (int count : counts)
            for (int inplace = 0; inplace < 2; inplace++) {
                size_t n = (size_t)count, bytes = n * (size_t)t->extent;
                std::string label = fmt("MPIX_Hier_allreduce random %s MPI_SUM count=%d%s",
                                        t->name, count, inplace ? " in-place" : "");
                trace(label);
                Buf in(bytes, 0), ref(bytes, 0), got(bytes, 0);
                mxh_fill_random_fp(ty, in.p(), n, ck.rank, (uint64_t)count * 2 + fl);
                ck.rc(MPI_Allreduce(in.p(), ref.p(), count, ty, MPI_SUM, ck.comm),
                      "reference " + label);
                int rc;
                if (inplace) {
                    memcpy(got.p(), in.p(), bytes);
                    rc = MPIX_Hier_allreduce(MPI_IN_PLACE, got.p(), count, ty, MPI_SUM, ck.comm);
                } else {
                    rc = MPIX_Hier_allreduce(in.p(), got.p(), count, ty, MPI_SUM, ck.comm);
                }
                ck.rc(rc, label);
                size_t bad = n;
                for (size_t i = 0; i < n && bad == n; i++) {
                    double g = fl ? ((float *)got.p())[i] : ((double *)got.p())[i];
                    double r = fl ? ((float *)ref.p())[i] : ((double *)ref.p())[i];
                    if (!(std::fabs(g - r) <= tol * (1.0 + std::fabs(r))))
                        bad = i;
                }
                if (bad < n)
                    ck.fail(label + fmt(": element %zu too far from MPICH's", bad));
                ck.hash(mxh_hash(t, 0, got.p(), n), label);
            }
    }
    ck.finish();
}

// ---- user-defined operations

void user_max_int(void *in, void *inout, int *len, MPI_Datatype *)
{
    const int *a = (const int *)in;
    int *b = (int *)inout;
    for (int i = 0; i < *len; i++)
        b[i] = a[i] > b[i] ? a[i] : b[i];
}

TEST_P(Colls, UserOpCommutative)
{
    Checker ck(comm(), GetParam());
    MPI_Op op;
    MPI_Op_create(user_max_int, 1, &op);
    const mxh_type_t *t = mxh_type_find(MPI_INT);
    std::vector<int> counts = small_counts();
    counts.push_back(65537);
    for (int count : counts) {
        size_t n = (size_t)count;
        uint64_t salt = salt_of(t, MPI_MAX, count, 20);
        for (int inplace = 0; inplace < 2; inplace++) {
            std::string label =
                fmt("MPIX_Hier_allreduce user max-int count=%d%s", count, inplace ? " in-place" : "");
            Buf in(n * 4, 0), ref(n * 4, 0xCD), got(n * 4, 0xCD);
            mxh_fill(t, MPI_MAX, in.p(), n, ck.rank, salt);
            ck.rc(MPI_Allreduce(in.p(), ref.p(), count, MPI_INT, MPI_MAX, ck.comm),
                  "reference " + label);
            int rc;
            if (inplace) {
                memcpy(got.p(), in.p(), n * 4);
                rc = MPIX_Hier_allreduce(MPI_IN_PLACE, got.p(), count, MPI_INT, op, ck.comm);
            } else {
                rc = MPIX_Hier_allreduce(in.p(), got.p(), count, MPI_INT, op, ck.comm);
            }
            ck.rc(rc, label);
            ck.same(t, false, got.p(), ref.p(), n, label + " (vs MPI_MAX)");
            ck.hash(mxh_hash(t, 0, got.p(), n), label);
        }
        if (count <= 1009) {
            for (int root : roots_of(ck.size))
                reduce_case(ck, t, op, count, root == 0, root, salt);
            rsb_case(ck, t, op, count, false, salt);
            rsb_case(ck, t, op, count, true, salt);
        }
    }
    MPI_Op_free(&op);
    ck.finish();
}

// 2x2 matrices of unsigned ints (wrap-around arithmetic): associative, not
// commutative. MPI's answer is M(rank 0) * M(rank 1) * ... * M(rank p-1).
void mat_fill(int rank, size_t i, uint64_t salt, unsigned m[4])
{
    uint64_t h = mix64(mix64(salt) ^ ((uint64_t)(unsigned)rank << 40) ^ (uint64_t)i);
    for (int k = 0; k < 4; k++) {
        h = mix64(h);
        m[k] = (unsigned)(h % 7);
    }
}

void mat_mul(const unsigned a[4], const unsigned b[4], unsigned c[4])
{
    unsigned r[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                     a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
    memcpy(c, r, sizeof(r));
}

void user_matmul(void *in, void *inout, int *len, MPI_Datatype *)
{
    const unsigned *a = (const unsigned *)in;
    unsigned *b = (unsigned *)inout;
    for (int i = 0; i < *len; i++)
        mat_mul(a + 4 * i, b + 4 * i, b + 4 * i); // inout = in op inout
}

TEST_P(Colls, UserOpNonCommutative)
{
    Checker ck(comm(), GetParam());
    MPI_Datatype mat;
    MPI_Type_contiguous(4, MPI_UNSIGNED, &mat);
    MPI_Type_commit(&mat);
    MPI_Op op;
    MPI_Op_create(user_matmul, 0, &op);
    for (int count : small_counts()) {
        size_t n = (size_t)count;
        uint64_t salt = 777 + (uint64_t)count;
        std::vector<unsigned> in(4 * n + 4), expect(4 * n + 4), ref(4 * n + 4);
        // this rank's matrices, and the expected product computed locally
        for (size_t i = 0; i < n; i++) {
            unsigned acc[4] = {1, 0, 0, 1}, m[4];
            for (int r = 0; r < ck.size; r++) {
                mat_fill(r, i, salt, m);
                if (r == ck.rank)
                    memcpy(&in[4 * i], m, sizeof(m));
                mat_mul(acc, m, acc);
            }
            memcpy(&expect[4 * i], acc, sizeof(acc));
        }
        std::string base = fmt("user matmul (non-commutative) count=%d", count);
        ck.rc(MPI_Allreduce(in.data(), ref.data(), count, mat, op, ck.comm), "reference " + base);
        ck.same_bytes(ref.data(), expect.data(), n * 16,
                      "MPICH's own " + base + " differs from the local product: harness bug");
        for (int inplace = 0; inplace < 2; inplace++) {
            std::string label = "MPIX_Hier_allreduce " + base + (inplace ? " in-place" : "");
            std::vector<unsigned> got(4 * n + 4, 0xCDCDCDCDu);
            int rc;
            if (inplace) {
                memcpy(got.data(), in.data(), n * 16);
                rc = MPIX_Hier_allreduce(MPI_IN_PLACE, got.data(), count, mat, op, ck.comm);
            } else {
                rc = MPIX_Hier_allreduce(in.data(), got.data(), count, mat, op, ck.comm);
            }
            ck.rc(rc, label);
            ck.same_bytes(got.data(), expect.data(), n * 16, label + ": not M0*M1*...*Mp-1");
            ck.hash(mxh_hash_bytes_fnv(MXH_FNV_INIT, got.data(), n * 16), label);
        }
        for (int root : roots_of(ck.size)) {
            std::string label = "MPIX_Hier_reduce " + base + fmt(" root=%d", root);
            std::vector<unsigned> got(4 * n + 4, 0xCDCDCDCDu);
            ck.rc(MPIX_Hier_reduce(in.data(), got.data(), count, mat, op, root, ck.comm), label);
            if (ck.rank == root)
                ck.same_bytes(got.data(), expect.data(), n * 16, label + ": not M0*M1*...*Mp-1");
        }
        // reduce_scatter_block: block b of the product of every rank's block b
        {
            std::vector<unsigned> sin(4 * n * (size_t)ck.size + 4), sref(4 * n + 4),
                sgot(4 * n + 4, 0xCDCDCDCDu);
            for (int b = 0; b < ck.size; b++)
                for (size_t i = 0; i < n; i++) {
                    unsigned m[4];
                    mat_fill(ck.rank, i, salt + 1000 + (uint64_t)b, m);
                    memcpy(&sin[4 * ((size_t)b * n + i)], m, sizeof(m));
                }
            std::string label = "MPIX_Hier_reduce_scatter_block " + base;
            ck.rc(MPI_Reduce_scatter_block(sin.data(), sref.data(), count, mat, op, ck.comm),
                  "reference " + label);
            ck.rc(MPIX_Hier_reduce_scatter_block(sin.data(), sgot.data(), count, mat, op, ck.comm),
                  label);
            ck.same_bytes(sgot.data(), sref.data(), n * 16, label);
            for (size_t i = 0; i < n; i++) {
                unsigned acc[4] = {1, 0, 0, 1}, m[4];
                for (int r = 0; r < ck.size; r++) {
                    mat_fill(r, i, salt + 1000 + (uint64_t)ck.rank, m);
                    mat_mul(acc, m, acc);
                }
                if (memcmp(acc, &sref[4 * i], sizeof(acc)) != 0) {
                    ck.fail("MPICH's own " + label + " differs from the local product: harness bug");
                    break;
                }
            }
        }
    }
    MPI_Op_free(&op);
    MPI_Type_free(&mat);
    ck.finish();
}

// ---- MINLOC / MAXLOC: against MPICH and against a locally computed answer

long double pair_value(const mxh_type_t *t, const unsigned char *e, long double *index)
{
    long double v = 0, ix = 0;
    switch (t->fp) {
    case MXH_FP_FLOAT: { float x; memcpy(&x, e, 4); v = x; break; }
    case MXH_FP_DOUBLE: { double x; memcpy(&x, e, 8); v = x; break; }
    case MXH_FP_LDOUBLE: { long double x = 0; memcpy(&x, e, 10); v = x; break; }
    case MXH_FP_INT: { int x; memcpy(&x, e, sizeof(x)); v = x; break; }
    case MXH_FP_LONG: { long x; memcpy(&x, e, sizeof(x)); v = x; break; }
    case MXH_FP_SHORT: { short x; memcpy(&x, e, sizeof(x)); v = x; break; }
    default: break;
    }
    const unsigned char *q = e + t->seg[1].off;
    switch (t->idx_fp) {
    case MXH_FP_FLOAT: { float x; memcpy(&x, q, 4); ix = x; break; }
    case MXH_FP_DOUBLE: { double x; memcpy(&x, q, 8); ix = x; break; }
    default: { int x; memcpy(&x, q, sizeof(x)); ix = x; break; }
    }
    *index = ix;
    return v;
}

TEST_P(Colls, MinlocMaxloc)
{
    Checker ck(comm(), GetParam());
    const MPI_Datatype types[] = {MPI_2INT,   MPI_FLOAT_INT, MPI_DOUBLE_INT,
                                  MPI_LONG_INT, MPI_SHORT_INT, MPI_LONG_DOUBLE_INT};
    const MPI_Op ops[] = {MPI_MINLOC, MPI_MAXLOC};
    for (MPI_Datatype ty : types)
        for (MPI_Op op : ops) {
            const mxh_type_t *t = mxh_type_find(ty);
            if (!t || !mxh_op_mpich_ok(t, op)) {
                ck.fail(fmt("type %s not usable with %s", t ? t->name : "?", mxh_op_name(op)));
                continue;
            }
            for (int count : {1, 7, 1009}) {
                size_t n = (size_t)count, ext = (size_t)t->extent;
                uint64_t salt = salt_of(t, op, count, 30);
                for (int inplace = 0; inplace < 2; inplace++)
                    allreduce_case(ck, t, op, count, inplace, salt);
                // local answer: value min/max, ties -> smallest index
                std::vector<unsigned char> all(n * ext * (size_t)ck.size), got(n * ext);
                for (int r = 0; r < ck.size; r++)
                    mxh_fill(t, op, &all[(size_t)r * n * ext], n, r, salt);
                std::vector<unsigned char> in(all.begin() + (long)((size_t)ck.rank * n * ext),
                                              all.begin() + (long)((size_t)(ck.rank + 1) * n * ext));
                ck.rc(MPIX_Hier_allreduce(in.data(), got.data(), count, ty, op, ck.comm),
                      "MPIX_Hier_allreduce minloc/maxloc");
                for (size_t i = 0; i < n; i++) {
                    long double bv = 0, bi = 0;
                    for (int r = 0; r < ck.size; r++) {
                        long double ix;
                        long double v = pair_value(t, &all[((size_t)r * n + i) * ext], &ix);
                        bool better = r == 0 || (op == MPI_MINLOC ? v < bv : v > bv) ||
                                      (v == bv && ix < bi);
                        if (better) {
                            bv = v;
                            bi = ix;
                        }
                    }
                    long double gi, gv = pair_value(t, &got[i * ext], &gi);
                    if (gv != bv || gi != bi) {
                        ck.fail(fmt("MPIX_Hier_allreduce %s %s count=%d element %zu: got "
                                    "(%Lg, %Lg), expected (%Lg, %Lg)",
                                    t->name, mxh_op_name(op), count, i, gv, gi, bv, bi));
                        break;
                    }
                }
            }
        }
    ck.finish();
}

// ---- derived datatypes (served by the fallback; results must be MPI's)

void user_sum_int(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int sz;
    MPI_Type_size(*dt, &sz);
    const int *a = (const int *)in;
    int *b = (int *)inout;
    for (long i = 0; i < (long)*len * (sz / 4); i++)
        b[i] += a[i];
}

TEST_P(Colls, DerivedContiguous)
{
    Checker ck(comm(), GetParam());
    MPI_Datatype c3;
    MPI_Type_contiguous(3, MPI_INT, &c3);
    MPI_Type_commit(&c3);
    MPI_Op op;
    MPI_Op_create(user_sum_int, 1, &op);
    const mxh_type_t *ti = mxh_type_find(MPI_INT);
    for (int count : {0, 1, 7, 1009}) {
        size_t n = (size_t)count * 3;
        uint64_t salt = 4242 + (uint64_t)count;
        // allreduce with a user op on the derived type, checked against the local sum
        std::vector<int> in(n + 1), got(n + 1, -7), ref(n + 1, -7), expect(n + 1, 0), tmp(n + 1);
        for (int r = 0; r < ck.size; r++) {
            mxh_fill(ti, MPI_SUM, tmp.data(), n, r, salt);
            for (size_t i = 0; i < n; i++)
                expect[i] += tmp[i];
            if (r == ck.rank)
                in = tmp;
        }
        std::string label = fmt("MPIX_Hier_allreduce contig(3,int) user-sum count=%d", count);
        trace(label);
        ck.rc(MPI_Allreduce(in.data(), ref.data(), count, c3, op, ck.comm), "reference " + label);
        ck.rc(MPIX_Hier_allreduce(in.data(), got.data(), count, c3, op, ck.comm), label);
        ck.same_bytes(got.data(), expect.data(), n * 4, label);
        ck.same_bytes(ref.data(), expect.data(), n * 4, "MPICH's own " + label);
        ck.hash(mxh_hash_bytes_fnv(MXH_FNV_INIT, got.data(), n * 4), label);
        // allgather, bcast
        size_t tot = n * (size_t)ck.size;
        std::vector<int> ag(tot + 1, -7), agref(tot + 1, -7);
        label = fmt("MPIX_Hier_allgather contig(3,int) count=%d", count);
        ck.rc(MPI_Allgather(in.data(), count, c3, agref.data(), count, c3, ck.comm),
              "reference " + label);
        ck.rc(MPIX_Hier_allgather(in.data(), count, c3, ag.data(), count, c3, ck.comm), label);
        ck.same_bytes(ag.data(), agref.data(), (tot + 1) * 4, label);
        ck.hash(mxh_hash_bytes_fnv(MXH_FNV_INIT, ag.data(), tot * 4), label);
        for (int root : roots_of(ck.size)) {
            std::vector<int> b(n + 1, -7), bref(n + 1, -7);
            if (ck.rank == root)
                b = bref = in;
            label = fmt("MPIX_Hier_bcast contig(3,int) count=%d root=%d", count, root);
            ck.rc(MPI_Bcast(bref.data(), count, c3, root, ck.comm), "reference " + label);
            ck.rc(MPIX_Hier_bcast(b.data(), count, c3, root, ck.comm), label);
            ck.same_bytes(b.data(), bref.data(), n * 4, label);
        }
    }
    MPI_Op_free(&op);
    MPI_Type_free(&c3);
    ck.finish();
}

// vector(2 blocks of 2 doubles, stride 3): an element spans 5 doubles (its
// extent) and holds doubles 0,1,3,4; double 2 is a hole that must keep its
// canary in every receive buffer.
const int kVecPos[4] = {0, 1, 3, 4};

void user_sum_vec(void *in, void *inout, int *len, MPI_Datatype *)
{
    const double *a = (const double *)in;
    double *b = (double *)inout;
    for (int e = 0; e < *len; e++)
        for (int k : kVecPos)
            b[5 * e + k] += a[5 * e + k];
}

TEST_P(Colls, DerivedVector)
{
    Checker ck(comm(), GetParam());
    MPI_Datatype vec;
    MPI_Type_vector(2, 2, 3, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    MPI_Op op;
    MPI_Op_create(user_sum_vec, 1, &op);
    const double kHole = -12345.5;
    for (int count : {0, 1, 7, 1009}) {
        size_t n = (size_t)count, nd = 5 * n;
        auto val = [&](int r, size_t e, int k) {
            return (double)((int)((e * 7 + (size_t)k * 3 + (size_t)r * 5) % 17) - 8);
        };
        std::vector<double> in(nd + 1, kHole), expect(nd + 1, kHole);
        for (size_t e = 0; e < n; e++)
            for (int k : kVecPos) {
                in[5 * e + (size_t)k] = val(ck.rank, e, k);
                double s = 0;
                for (int r = 0; r < ck.size; r++)
                    s += val(r, e, k);
                expect[5 * e + (size_t)k] = s;
            }
        std::string label = fmt("MPIX_Hier_allreduce vector user-sum count=%d", count);
        trace(label);
        std::vector<double> got(nd + 1, kHole), ref(nd + 1, kHole);
        ck.rc(MPI_Allreduce(in.data(), ref.data(), count, vec, op, ck.comm), "reference " + label);
        ck.rc(MPIX_Hier_allreduce(in.data(), got.data(), count, vec, op, ck.comm), label);
        ck.same_bytes(got.data(), expect.data(), (nd + 1) * 8,
                      label + " (values, and holes keep their canary)");
        ck.hash(mxh_hash_bytes_fnv(MXH_FNV_INIT, got.data(), nd * 8), label);
        // allgather
        std::vector<double> ag(nd * (size_t)ck.size + 1, kHole), agref(nd * (size_t)ck.size + 1, kHole);
        label = fmt("MPIX_Hier_allgather vector count=%d", count);
        ck.rc(MPI_Allgather(in.data(), count, vec, agref.data(), count, vec, ck.comm),
              "reference " + label);
        ck.rc(MPIX_Hier_allgather(in.data(), count, vec, ag.data(), count, vec, ck.comm), label);
        ck.same_bytes(ag.data(), agref.data(), ag.size() * 8, label);
        ck.hash(mxh_hash_bytes_fnv(MXH_FNV_INIT, ag.data(), ag.size() * 8), label);
        for (int root : roots_of(ck.size)) {
            std::vector<double> b(nd + 1, kHole), bref(nd + 1, kHole);
            if (ck.rank == root)
                b = bref = in;
            label = fmt("MPIX_Hier_bcast vector count=%d root=%d", count, root);
            ck.rc(MPI_Bcast(bref.data(), count, vec, root, ck.comm), "reference " + label);
            ck.rc(MPIX_Hier_bcast(b.data(), count, vec, root, ck.comm), label);
            ck.same_bytes(b.data(), bref.data(), b.size() * 8, label);
        }
    }
    MPI_Op_free(&op);
    MPI_Type_free(&vec);
    ck.finish();
}

// send 1 x contig(4,int), receive 4 x MPI_INT (same type signature)
TEST_P(Colls, AllgatherDifferentTypes)
{
    Checker ck(comm(), GetParam());
    MPI_Datatype c4;
    MPI_Type_contiguous(4, MPI_INT, &c4);
    MPI_Type_commit(&c4);
    for (int count : {0, 1, 7, 1009}) {
        size_t n = 4 * (size_t)count;
        std::vector<int> in(n + 1), got(n * (size_t)ck.size + 1, -1), ref(n * (size_t)ck.size + 1, -1);
        for (size_t i = 0; i < n; i++)
            in[i] = ck.rank * 100000 + (int)i;
        std::string label = fmt("MPIX_Hier_allgather contig(4,int)->4xMPI_INT count=%d", count);
        trace(label);
        ck.rc(MPI_Allgather(in.data(), count, c4, ref.data(), 4 * count, MPI_INT, ck.comm),
              "reference " + label);
        ck.rc(MPIX_Hier_allgather(in.data(), count, c4, got.data(), 4 * count, MPI_INT, ck.comm),
              label);
        ck.same_bytes(got.data(), ref.data(), got.size() * 4, label);
        for (int r = 0; r < ck.size && count; r++)
            if (got[(size_t)r * n + n - 1] != r * 100000 + (int)n - 1) {
                ck.fail(label + fmt(": wrong block from rank %d", r));
                break;
            }
    }
    MPI_Type_free(&c4);
    ck.finish();
}

// MPI: with MPI_IN_PLACE, sendcount and sendtype are ignored.
TEST_P(Colls, AllgatherInPlaceIgnoresSendArgs)
{
    Checker ck(comm(), GetParam());
    for (int count : {1, 7, 1009}) {
        std::vector<int> got((size_t)count * (size_t)ck.size, -1), expect(got.size());
        for (size_t i = 0; i < got.size(); i++)
            expect[i] = (int)(i * 31 + 7);
        for (int i = 0; i < count; i++)
            got[(size_t)ck.rank * (size_t)count + (size_t)i] =
                expect[(size_t)ck.rank * (size_t)count + (size_t)i];
        std::string label = fmt("MPIX_Hier_allgather in-place sendcount=0 sendtype=NULL count=%d",
                                count);
        trace(label);
        ck.rc(MPIX_Hier_allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got.data(), count, MPI_INT,
                                  ck.comm),
              label);
        ck.same_bytes(got.data(), expect.data(), got.size() * 4, label);
    }
    ck.finish();
}

// MPI: recvbuf is significant only at the root; NULL elsewhere is valid.
TEST_P(Colls, ReduceNonRootNullRecvbuf)
{
    Checker ck(comm(), GetParam());
    const mxh_type_t *t = mxh_type_find(MPI_INT);
    for (int count : {1, 7, 1009})
        for (int root : roots_of(ck.size)) {
            size_t n = (size_t)count;
            std::vector<int> in(n), ref(n, -1), got(n, -1);
            mxh_fill(t, MPI_SUM, in.data(), n, ck.rank, 99 + (uint64_t)count);
            std::string label = fmt("MPIX_Hier_reduce recvbuf=NULL on non-roots count=%d root=%d",
                                    count, root);
            trace(label);
            ck.rc(MPI_Reduce(in.data(), ref.data(), count, MPI_INT, MPI_SUM, root, ck.comm),
                  "reference " + label);
            ck.rc(MPIX_Hier_reduce(in.data(), ck.rank == root ? got.data() : nullptr, count,
                                   MPI_INT, MPI_SUM, root, ck.comm),
                  label);
            if (ck.rank == root)
                ck.same_bytes(got.data(), ref.data(), n * 4, label);
        }
    ck.finish();
}

// Non-zero counts of a zero-size datatype: nothing to move, as MPICH does (the schedule
// would be asked for 0 bytes); the buffers stay as they were and the communicator works.
TEST_P(Colls, ZeroSizeDatatype)
{
    Checker ck(comm(), GetParam());
    MPI_Datatype zero;
    MPI_Type_contiguous(0, MPI_INT, &zero);
    MPI_Type_commit(&zero);
    std::vector<int> a(64, 7), b((size_t)64 * ck.size, 9);
    for (int count : {1, 5, 1 << 16}) {
        std::string l = fmt("zero-size type count=%d", count);
        trace(l);
        ck.rc(MPIX_Hier_bcast(a.data(), count, zero, 0, ck.comm), "MPIX_Hier_bcast " + l);
        ck.rc(MPIX_Hier_allgather(a.data(), count, zero, b.data(), count, zero, ck.comm),
              "MPIX_Hier_allgather " + l);
        ck.rc(MPIX_Hier_alltoall(b.data(), count, zero, a.data(), count, zero, ck.comm),
              "MPIX_Hier_alltoall " + l);
        MPI_Request r = MPI_REQUEST_NULL;
        ck.rc(MPIX_Hier_Ibcast(a.data(), count, zero, 0, ck.comm, &r), "MPIX_Hier_Ibcast " + l);
        ck.rc(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait " + l);
    }
    for (int v : a)
        ck.expect(v == 7, "a zero-size call wrote the buffer");
    for (int v : b)
        ck.expect(v == 9, "a zero-size call wrote the buffer");
    int x = ck.rank + 1, sum = 0;
    ck.rc(MPIX_Hier_allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, ck.comm), "allreduce after");
    ck.expect(sum == ck.size * (ck.size + 1) / 2, "allreduce after the zero-size calls");
    MPI_Type_free(&zero);
    ck.finish();
}

// ---- forced algorithms and fragment settings ----------------------------------------
//
// Every algorithm a user can force (MPIX_HIER_ALGO through MPI_Info), pipelined
// schedules with fragments that do not divide the counts, 1-element fragments,
// bounded depth, tiny shared-memory chunks: each on a communicator of its own,
// compared with MPICH bit for bit on representative types and ops.

struct AlgoCfg {
    const char *name, *algo, *frag, *depth, *chunk, *shm;
    int max_count;  // keeps the number of fragments (rounds) of a call bounded
};

const AlgoCfg kAlgoCfgs[] = {
    {"auto", "auto", "512k", "0", "256k", "yes", 1031},
    {"mpi", "mpi", "512k", "0", "256k", "yes", 1031},
    {"shm_chunk64", "shm", "512k", "0", "64", "yes", 1031},
    {"hier", "hier", "0", "0", "256k", "yes", 1031},
    {"hier_noshm", "hier", "0", "0", "256k", "no", 1031},
    {"pipeline_frag1", "pipeline", "1", "0", "256k", "yes", 31},
    {"pipeline_frag12_depth1", "pipeline", "12", "1", "256k", "yes", 100},
    {"pipeline_frag1000_depth2", "pipeline", "1000", "2", "128", "yes", 1031},
    {"pipeline_frag256_noshm", "pipeline", "256", "0", "256k", "no", 1031},
};

std::map<std::string, MPI_Comm> g_algo_comms;

class AlgoCommsEnv : public ::testing::Environment {
  public:
    void TearDown() override
    {
        for (auto &kv : g_algo_comms)
            MPI_Comm_free(&kv.second);
        g_algo_comms.clear();
    }
};
::testing::Environment *const g_algo_env =
    ::testing::AddGlobalTestEnvironment(new AlgoCommsEnv);

class Algos : public MxhMpiTest, public ::testing::WithParamInterface<AlgoCfg> {
  protected:
    MPI_Comm comm()
    {
        const AlgoCfg &c = GetParam();
        auto it = g_algo_comms.find(c.name);
        if (it != g_algo_comms.end())
            return it->second;
        MPI_Comm comm;
        MPI_Info info;
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpix_hier_algo", c.algo);
        MPI_Info_set(info, "mpix_hier_frag_size", c.frag);
        MPI_Info_set(info, "mpix_hier_pipeline_depth", c.depth);
        MPI_Info_set(info, "mpix_hier_shm_chunk", c.chunk);
        MPI_Info_set(info, "mpix_hier_shm", c.shm);
        EXPECT_EQ(MPI_SUCCESS, MPIX_Hier_comm_init(comm, info)) << c.name;
        MPI_Info_free(&info);
        g_algo_comms[c.name] = comm;
        return comm;
    }
    std::vector<Pair> pairs()
    {
        std::vector<Pair> v;
        for (MPI_Datatype dt : {MPI_INT, MPI_DOUBLE, MPI_INT8_T})
            for (MPI_Op op : {MPI_SUM, MPI_MAX})
                v.push_back({mxh_type_find(dt), op});
        v.push_back({mxh_type_find(MPI_FLOAT), MPI_SUM});
        v.push_back({mxh_type_find(MPI_UINT64_T), MPI_BXOR});
        return v;
    }
    std::vector<int> counts()
    {
        std::vector<int> v;
        for (int c : quick() ? std::vector<int>{0, 7, 100} : std::vector<int>{0, 1, 7, 31, 100, 1031})
            if (c <= GetParam().max_count)
                v.push_back(c);
        return v;
    }
};

TEST_P(Algos, ReductionsMatchMpich)
{
    Checker ck(comm(), GetParam().name);
    int k = 0;
    for (const Pair &p : pairs())
        for (int count : counts()) {
            bool inplace = k++ % 2;  // alternate: every config sees both
            allreduce_case(ck, p.t, p.op, count, inplace, salt_of(p.t, p.op, count, 11));
            rsb_case(ck, p.t, p.op, count, !inplace, salt_of(p.t, p.op, count, 12));
            int root = k % 2 ? 0 : ck.size - 1;
            reduce_case(ck, p.t, p.op, count, inplace, root, salt_of(p.t, p.op, count, 13));
        }
    ck.finish();
}

TEST_P(Algos, DataMovementMatchesMpich)
{
    Checker ck(comm(), GetParam().name);
    int k = 0;
    for (MPI_Datatype dt : {MPI_INT, MPI_INT8_T, MPI_LONG_DOUBLE})
        for (int count : counts()) {
            const mxh_type_t *t = mxh_type_find(dt);
            allgather_case(ck, t, count, k % 2, salt_of(t, MPI_OP_NULL, count, 21));
            int root = (k * 5) % ck.size;
            bcast_case(ck, t, count, root, salt_of(t, MPI_OP_NULL, count, 22 + root));
            k++;
        }
    ck.finish();
}

// Back-to-back calls of different collectives and sizes on one communicator: cached
// schedules, reused scratch and shared-memory sequence numbers must not mix them up.
TEST_P(Algos, MixedSequence)
{
    Checker ck(comm(), GetParam().name);
    const mxh_type_t *ti = mxh_type_find(MPI_INT), *td = mxh_type_find(MPI_DOUBLE);
    int maxc = GetParam().max_count;
    for (int it = 0; it < (quick() ? 10 : 30); it++) {
        int count = 1 + (it * 37) % maxc;
        switch (it % 5) {
        case 0: allreduce_case(ck, td, MPI_SUM, count, it % 2, salt_of(td, MPI_SUM, count, it)); break;
        case 1: rsb_case(ck, ti, MPI_MAX, count, it % 2, salt_of(ti, MPI_MAX, count, it)); break;
        case 2: allgather_case(ck, td, count, it % 2, salt_of(td, MPI_OP_NULL, count, it)); break;
        case 3: bcast_case(ck, ti, count, it % ck.size, salt_of(ti, MPI_OP_NULL, count, it)); break;
        case 4: reduce_case(ck, ti, MPI_SUM, count, it % 2, (it / 5) % ck.size,
                            salt_of(ti, MPI_SUM, count, it)); break;
        }
    }
    ck.finish();
}

// Pipelines of big fragments (>= 1 MiB) fill and drain through a ramp of smaller
// pieces (MPIX_HIER_PIPELINE_RAMP): fragments of four sizes in one call, counts
// that divide into none of them, every collective on a schedule.
TEST(PipelineRamp, BigMessagesMatchMpich)
{
    // ramp 4 without shared memory: the streamed executor, whose copies in and
    // out of 1 MiB fragments go in pieces of 128 KiB between polls
    // linear: 3 MiB and a bit in 1 MiB fragments ramps in thirds (sched.c linear_steps)
    for (const char *ramp : {"0", "2", "4", "4noshm", "linear", "linearnoshm"}) {
        MPI_Comm comm;
        MPI_Info info;
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpix_hier_algo", "pipeline");
        MPI_Info_set(info, "mpix_hier_frag_size", "1m");
        std::string value(ramp);
        value = value.substr(0, value.find("noshm"));
        MPI_Info_set(info, "mpix_hier_pipeline_ramp", value.c_str());
        if (strstr(ramp, "noshm"))
            MPI_Info_set(info, "mpix_hier_shm", "no");
        ASSERT_EQ(MPI_SUCCESS, MPIX_Hier_comm_init(comm, info)) << ramp;
        MPI_Info_free(&info);
        {
            Checker ck(comm, (std::string("ramp") + ramp).c_str());
            const mxh_type_t *ti = mxh_type_find(MPI_INT), *td = mxh_type_find(MPI_DOUBLE);
            const int big = 3 * 262144 + 13;  // ints: 3 MiB and a bit
            allreduce_case(ck, ti, MPI_SUM, big, false, salt_of(ti, MPI_SUM, big, 31));
            allreduce_case(ck, td, MPI_MAX, 600007, true, salt_of(td, MPI_MAX, 600007, 32));
            int blk = big / ck.size + 1;
            rsb_case(ck, ti, MPI_SUM, blk, false, salt_of(ti, MPI_SUM, blk, 33));
            rsb_case(ck, td, MPI_SUM, blk / 2 + 1, true, salt_of(td, MPI_SUM, blk, 34));
            allgather_case(ck, ti, blk, false, salt_of(ti, MPI_OP_NULL, blk, 35));
            allgather_case(ck, td, blk / 2 + 3, true, salt_of(td, MPI_OP_NULL, blk, 36));
            reduce_case(ck, ti, MPI_SUM, big, false, ck.size - 1, salt_of(ti, MPI_SUM, big, 37));
            bcast_case(ck, td, 600007, 0, salt_of(td, MPI_OP_NULL, 600007, 38));
            ck.finish();
        }
        MPI_Comm_free(&comm);
    }
}

#if MXH_TEST_MEMKIND && !MXH_TEST_PLAIN
// The device node level (exec/ipc.h), forced on at every size on a communicator
// of its own: one node, every collective through peer mappings; several nodes,
// allreduce's node part (the network steps between, on host memory). Results
// against MPICH as everywhere; where every node holds >= 2 ranks of the
// communicator and both buffers are test memory (MXH_TEST_EXPECT_IPC=1, set by
// run_mpi_tests.sh), the kind's reductions must have run (the staged path
// never calls them). Mixed kinds (send=host) take the agreed decline: staged.
TEST(DeviceNodeLevel, MatchesMpich)
{
    for (const char *frag : {"8m", "256k"}) {
        MPI_Comm comm;
        MPI_Info info;
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpix_hier_ipc", "yes");
        MPI_Info_set(info, "mpix_hier_ipc_min", "0");
        MPI_Info_set(info, "mpix_hier_frag_size", frag);
        ASSERT_EQ(MPI_SUCCESS, MPIX_Hier_comm_init(comm, info)) << frag;
        MPI_Info_free(&info);
        uint64_t red0 = mxh_mem_test_reductions();
        {
            Checker ck(comm, (std::string("ipc-frag") + frag).c_str());
            const mxh_type_t *ti = mxh_type_find(MPI_INT), *td = mxh_type_find(MPI_DOUBLE);
            const mxh_type_t *tf = mxh_type_find(MPI_FLOAT);
            for (int count : {1, 7, 1000, 65537, 600007}) {
                for (bool inplace : {false, true}) {
                    allreduce_case(ck, ti, MPI_SUM, count, inplace, salt_of(ti, MPI_SUM, count, 41));
                    allreduce_case(ck, td, MPI_MAX, count, inplace, salt_of(td, MPI_MAX, count, 42));
                    int blk = count / ck.size + 1;
                    rsb_case(ck, tf, MPI_SUM, blk, inplace, salt_of(tf, MPI_SUM, blk, 43));
                    allgather_case(ck, td, blk, inplace, salt_of(td, MPI_OP_NULL, blk, 44));
                    reduce_case(ck, ti, MPI_PROD, count, inplace, count % ck.size,
                                salt_of(ti, MPI_PROD, count, 45));
                }
                bcast_case(ck, td, count, (count + 1) % ck.size, salt_of(td, MPI_OP_NULL, count, 46));
            }
            ck.finish();
        }
        const mxh_test::MemCfg &m = mxh_test::mem_cfg();
        if (mxh_env_int("MXH_TEST_EXPECT_IPC", 0) && m.send_test && m.recv_test) {
            EXPECT_GT(mxh_mem_test_reductions(), red0)
                << "the device node level did not reduce anything (frag " << frag << ")";
        }
        MPI_Comm_free(&comm);
    }
}
#endif

#if MXH_TEST_MEMKIND && !MXH_TEST_PLAIN
// The device network path (coll.c device_net) across nodes, every collective with a
// schedule, pipelined (64 KiB fragments): results against MPICH, every call on the
// path (algo hier_ipc), no device byte reduced by the CPU, and the bounce traffic
// by mode: mpi=direct (the test-only CUDA-aware MPI) nothing through host memory;
// staged, the bounce pool well below the call's size (it holds the fragments in
// flight only).
// The number of ranks on each node of @comm (by MPIX_HIER_HOSTNAME or processor name).
std::map<std::string, int> node_ranks(MPI_Comm comm)
{
    char name[MPI_MAX_PROCESSOR_NAME] = "";
    const char *h = getenv("MPIX_HIER_HOSTNAME");
    int len = 0, size = 0;
    if (h != nullptr)
        snprintf(name, sizeof(name), "%s", h);
    else
        MPI_Get_processor_name(name, &len);
    MPI_Comm_size(comm, &size);
    std::vector<char> all((size_t)size * MPI_MAX_PROCESSOR_NAME);
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                  MPI_CHAR, comm);
    std::map<std::string, int> nodes;
    for (int r = 0; r < size; r++)
        nodes[std::string(&all[(size_t)r * MPI_MAX_PROCESSOR_NAME])]++;
    return nodes;
}

double stat_of(MPI_Comm c, const char *sel)
{
    double v = -1;
    EXPECT_EQ(MPIX_Hier_comm_get_stats(c, sel, &v), MPI_SUCCESS) << sel;
    return v;
}

TEST(DeviceNetwork, StagingByMode)
{
    const mxh_test::MemCfg &m = mxh_test::mem_cfg();
    std::map<std::string, int> nodes = node_ranks(MPI_COMM_WORLD);
    if (!m.send_test || !m.recv_test || nodes.size() < 2)
        GTEST_SKIP() << "needs test-kind send and receive buffers on several nodes";
    // uneven nodes: a rank alone on its rail keeps its node on the staged path; one
    // rank per node: one level, MPI's own collective on staged copies
    bool even = nodes.begin()->second > 1;
    for (const auto &kv : nodes)
        even = even && kv.second == nodes.begin()->second;
    MPI_Comm comm;
    MPI_Info info;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpix_hier_ipc", "yes");
    MPI_Info_set(info, "mpix_hier_ipc_min", "0");
    MPI_Info_set(info, "mpix_hier_frag_size", "64k");
    ASSERT_EQ(MPI_SUCCESS, MPIX_Hier_comm_init(comm, info));
    MPI_Info_free(&info);
    ASSERT_EQ(MPI_SUCCESS, MPIX_Hier_comm_reset_stats(comm));
    const mxh_type_t *ti = mxh_type_find(MPI_INT), *td = mxh_type_find(MPI_DOUBLE);
    const int big = 600007;
    double bounce_most = 0;
    {
        Checker ck(comm, "device-net");
        int blk = big / ck.size + 1;
        allreduce_case(ck, td, MPI_SUM, big, false, salt_of(td, MPI_SUM, big, 51));
        bounce_most = std::max(bounce_most, stat_of(comm, "mpix_hier_bounce_bytes"));
        rsb_case(ck, ti, MPI_SUM, blk, true, salt_of(ti, MPI_SUM, blk, 52));
        allgather_case(ck, td, blk, false, salt_of(td, MPI_OP_NULL, blk, 53));
        reduce_case(ck, ti, MPI_MAX, big, false, ck.size - 1, salt_of(ti, MPI_MAX, big, 54));
        bcast_case(ck, td, big, 1 % ck.size, salt_of(td, MPI_OP_NULL, big, 55));
        bounce_most = std::max(bounce_most, stat_of(comm, "mpix_hier_bounce_bytes"));
        ck.finish();
    }
    double staged = stat_of(comm, "mpix_hier_staged_bytes_total");
    double cpu    = stat_of(comm, "mpix_hier_device_cpu_reduced_bytes_total");
    double taken  = stat_of(comm, "mpix_hier_calls_total{algo=\"hier_ipc\"}");
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0)
        std::printf("mxh: device network path, mpi=%s: %.0f of 5 calls on it, %.0f bytes staged, "
                    "%.0f reduced by the CPU, bounce pool at most %.0f bytes (calls of %zu "
                    "bytes)%s\n",
                    m.mpi_direct ? "direct" : "staged", taken, staged, cpu, bounce_most,
                    big * sizeof(double), even ? "" : " (uneven or one-rank nodes: not asserted)");
    if (!even) {
        MPI_Comm_free(&comm);
        return;
    }
    EXPECT_EQ(taken, 5.0) << "a collective did not take the device network path";
    EXPECT_EQ(cpu, 0.0);
    if (m.mpi_direct) {
        EXPECT_EQ(staged, 0.0) << "direct mode moved device bytes through host memory";
        EXPECT_EQ(bounce_most, 0.0);
    } else {
        EXPECT_GT(staged, 0.0);
        EXPECT_GT(bounce_most, 0.0);
        EXPECT_LT(bounce_most, (double)big * sizeof(double) / 2)
            << "the bounce pool holds more than the fragments in flight";
    }
    MPI_Comm_free(&comm);
}
#endif

std::string algo_name(const ::testing::TestParamInfo<AlgoCfg> &info) { return info.param.name; }
INSTANTIATE_TEST_SUITE_P(Forced, Algos, ::testing::ValuesIn(kAlgoCfgs), algo_name);

std::string comm_name(const ::testing::TestParamInfo<const char *> &info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(Comms, Colls, ::testing::ValuesIn(kCommKinds), comm_name);

} // namespace
