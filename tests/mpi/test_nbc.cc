// The nonblocking collectives (MPIX_Hier_Iallreduce, _Ireduce_scatter_block,
// _Iallgather, _Ibcast, _Ireduce) against MPICH's own collectives, bit for bit.
//
// Parameter: a pair of communicators A and B on which collectives are in flight
// together: "world_reversed" (MPI_COMM_WORLD and a reversed split, default
// configuration) and "pipelined" (a dup of MPI_COMM_WORLD and an even/odd split,
// both forced to pipelined schedules with small fragments through MPI_Info).
//
// A round prepares its cases first: inputs (tests/shim patterns, exact in any
// order), and MPICH's reference result computed by MPICH's blocking collective
// on ordinary host copies. Then it posts 1, 4 or 16 collectives alternating
// between A and B, runs blocking MPIX_Hier_* calls in between the posts (on A
// and B, so they must progress and order themselves after the requests in
// flight), and completes the requests with MPI_Waitall, an MPI_Testany loop,
// MPI_Waitsome or MPI_Test on each; then every result is compared with MPICH's
// (values bit for bit, sendbuf untouched, non-root recvbuf untouched, guard
// zones intact, identical bits on every rank). Some rounds put requests of
// MPICH's own MPI_I* (on a third communicator) into the same array.
//
// Also: pipelined messages of several MiB in flight together, the FIFO order
// of completion on one communicator, MPI_Request_free on a completed request,
// one send buffer shared by requests in flight, argument errors reported by
// the posting call with the communicator usable afterwards.
//
// Built a second time as test_nbc_mem (-DMXH_TEST_MEMKIND=1): send and receive
// buffers come from the test memory kind ($MXH_TEST_MEM, see checker.hh).
//
// MXH_TEST_QUICK=1 trims the matrix (fewer rounds, smaller counts);
// MXH_TEST_TRACE=1 prints every case before it is posted.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "checker.hh"
#include "mpi_util.hh"
#include "mxh_test_shim.h"

namespace {

using namespace mxh_test;  // checker.hh, mpi_util.hh

// ------------------------------------------------------------ communicators

struct PairCfg {
    const char *name;
    const char *algo, *frag;  // MPI_Info for both communicators; nullptr: defaults
};

void PrintTo(const PairCfg &c, std::ostream *os) { *os << c.name; }

const PairCfg kPairs[] = {
    {"world_reversed", nullptr, nullptr},
    {"pipelined", "pipeline", "64k"},
};

struct CommPair {
    MPI_Comm c[2] = {MPI_COMM_NULL, MPI_COMM_NULL};
    const char *cname[2] = {"", ""};
};

std::map<std::string, CommPair> g_pairs;
MPI_Comm g_side = MPI_COMM_NULL;   // MPICH's own nonblocking collectives
MPI_Comm g_rails = MPI_COMM_NULL;  // one rank per (fake) node: a single level on most layouts

// Ranks with the same index on their node (node: MPIX_HIER_HOSTNAME or the
// processor name), ordered by node.
MPI_Comm rails_comm()
{
    if (g_rails != MPI_COMM_NULL)
        return g_rails;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char name[256];
    mxh_node_name(name, sizeof(name));
    std::vector<char> all((size_t)size * 256);
    MPI_Allgather(name, 256, MPI_CHAR, all.data(), 256, MPI_CHAR, MPI_COMM_WORLD);
    std::map<std::string, int> seen;
    int local = 0;
    for (int r = 0; r <= rank; r++)
        local = seen[std::string(&all[(size_t)r * 256])]++;
    MPI_Comm_split(MPI_COMM_WORLD, local, rank, &g_rails);
    MPI_Comm_set_errhandler(g_rails, MPI_ERRORS_RETURN);
    return g_rails;
}

void init_comm(MPI_Comm c, const PairCfg &cfg)
{
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    if (!cfg.algo)
        return;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpix_hier_algo", cfg.algo);
    MPI_Info_set(info, "mpix_hier_frag_size", cfg.frag);
    EXPECT_EQ(MPI_SUCCESS, MPIX_Hier_comm_init(c, info)) << cfg.name;
    MPI_Info_free(&info);
}

const CommPair &get_pair(const PairCfg &cfg)
{
    auto it = g_pairs.find(cfg.name);
    if (it != g_pairs.end())
        return it->second;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CommPair p;
    if (!cfg.algo) {
        p.c[0] = MPI_COMM_WORLD;
        p.cname[0] = "world";
        MPI_Comm_split(MPI_COMM_WORLD, 0, size - 1 - rank, &p.c[1]);
        p.cname[1] = "reversed";
    } else {
        MPI_Comm_dup(MPI_COMM_WORLD, &p.c[0]);
        p.cname[0] = "dup";
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &p.c[1]);
        p.cname[1] = "evenodd";
    }
    init_comm(p.c[0], cfg);
    init_comm(p.c[1], cfg);
    if (g_side == MPI_COMM_NULL) {
        MPI_Comm_dup(MPI_COMM_WORLD, &g_side);
        MPI_Comm_set_errhandler(g_side, MPI_ERRORS_RETURN);
    }
    g_pairs[cfg.name] = p;
    return g_pairs[cfg.name];
}

class CommsEnv : public ::testing::Environment {
  public:
    void TearDown() override
    {
        for (auto &kv : g_pairs)  // same order on every rank
            for (MPI_Comm &c : kv.second.c)
                if (c != MPI_COMM_WORLD)
                    MPI_Comm_free(&c);
        g_pairs.clear();
        if (g_side != MPI_COMM_NULL)
            MPI_Comm_free(&g_side);
        if (g_rails != MPI_COMM_NULL)
            MPI_Comm_free(&g_rails);
    }
};
::testing::Environment *const g_env = ::testing::AddGlobalTestEnvironment(new CommsEnv);

// -------------------------------------------------------------------- cases

enum Coll { kAllreduce, kRsb, kAllgather, kBcast, kReduce, kNColl };
const char *const kCollFn[] = {"MPIX_Hier_Iallreduce", "MPIX_Hier_Ireduce_scatter_block",
                               "MPIX_Hier_Iallgather", "MPIX_Hier_Ibcast", "MPIX_Hier_Ireduce"};

struct Spec {
    Coll coll;
    const mxh_type_t *t;
    MPI_Op op;       // MPI_OP_NULL for allgather and bcast
    int count;       // per-rank block for reduce_scatter_block and allgather
    int root;        // bcast, reduce
    bool inplace;
};

// One collective: its buffers, MPICH's reference and its request.
struct Case {
    Spec s{};
    MPI_Comm comm = MPI_COMM_NULL;
    Checker *ck = nullptr;
    int rank = 0, size = 1;
    bool mpich = false;  // posted with MPICH's own MPI_I* (mixed request arrays)
    std::string label;
    std::unique_ptr<Buf> in, got;
    std::vector<unsigned char> pristine, ref;  // host memory
    size_t nres = 0;                            // elements of the result
    MPI_Request req = MPI_REQUEST_NULL;
    bool completed = false;
    MPI_Status status{};

    bool me_root() const { return rank == s.root; }
    bool reduction() const { return s.coll != kAllgather && s.coll != kBcast; }
};

using CasePtr = std::unique_ptr<Case>;

void refill(Case &c, uint64_t salt);

// Buffers, inputs and MPICH's reference (a blocking MPICH collective on @c's
// communicator: call it on every rank in the same order, before posting).
CasePtr prepare(Checker &ck, const Spec &s, uint64_t salt, const char *cname, bool mpich = false)
{
    CasePtr c(new Case);
    c->s = s;
    c->ck = &ck;
    c->comm = ck.comm;
    c->rank = ck.rank;
    c->size = ck.size;
    c->mpich = mpich;
    const mxh_type_t *t = s.t;
    size_t n = (size_t)s.count, ext = (size_t)t->extent, p = (size_t)ck.size;
    size_t in_e = 0, out_e = 0;
    switch (s.coll) {
    case kAllreduce: in_e = n; out_e = n; c->nres = n; break;
    case kRsb: in_e = n * p; out_e = s.inplace ? n * p : n; c->nres = n; break;
    case kAllgather: in_e = n; out_e = n * p; c->nres = n * p; break;
    case kBcast: in_e = 0; out_e = n; c->nres = n; break;
    case kReduce: in_e = n; out_e = n; c->nres = n; break;
    default: break;
    }
    std::string what = mpich ? std::string("MPI_I") + (kCollFn[s.coll] + 11) : kCollFn[s.coll];
    c->label = fmt("%s %s%s%s count=%d", what.c_str(), t->name, c->reduction() ? " " : "",
                   c->reduction() ? mxh_op_name(s.op) : "", s.count);
    if (s.coll == kBcast || s.coll == kReduce)
        c->label += fmt(" root=%d", s.root);
    if (s.inplace)
        c->label += s.coll == kReduce ? " in-place at root" : " in-place";
    c->label += fmt(" comm=%s", cname);
    c->in.reset(new Buf(in_e * ext, 0, Role::send));
    c->got.reset(new Buf(out_e * ext, 0xCD,
                         s.coll == kBcast && c->me_root() ? Role::send : Role::recv));
    refill(*c, salt);
    return c;
}

// New inputs of @salt in @c's buffers (the receive buffer back to its canary) and
// MPICH's reference for them.
void refill(Case &cs, uint64_t salt)
{
    Case *c = &cs;
    Checker &ck = *c->ck;
    const Spec &s = c->s;
    const mxh_type_t *t = s.t;
    size_t n = (size_t)s.count, ext = (size_t)t->extent, p = (size_t)ck.size;
    size_t in_e = c->in->b.bytes / (ext ? ext : 1);
    memset(c->got->p(), 0xCD, c->got->b.bytes);
    MPI_Op fill_op = c->reduction() ? s.op : MPI_OP_NULL;
    mxh_fill(t, fill_op, c->in->p(), in_e, ck.rank, salt);
    c->pristine.assign(c->in->p(), c->in->p() + in_e * ext);
    c->pristine.push_back(0);  // never empty: data() is a valid pointer
    c->ref.assign(c->nres * ext + 1, 0xCD);
    unsigned char *pr = c->pristine.data(), *rf = c->ref.data(), *g = c->got->p();
    MPI_Datatype ty = t->type;
    int rc = MPI_SUCCESS;
    switch (s.coll) {
    case kAllreduce:
        rc = MPI_Allreduce(pr, rf, s.count, ty, s.op, ck.comm);
        if (s.inplace)
            memcpy(g, pr, n * ext);
        break;
    case kRsb:
        rc = MPI_Reduce_scatter_block(pr, rf, s.count, ty, s.op, ck.comm);
        if (s.inplace)
            memcpy(g, pr, n * p * ext);
        break;
    case kAllgather:
        rc = MPI_Allgather(pr, s.count, ty, rf, s.count, ty, ck.comm);
        if (s.inplace)
            memcpy(g + (size_t)ck.rank * n * ext, pr, n * ext);
        break;
    case kBcast:
        if (c->me_root()) {
            mxh_fill(t, MPI_OP_NULL, rf, n, ck.rank, salt);
            memcpy(g, rf, n * ext);
        }
        rc = MPI_Bcast(rf, s.count, ty, s.root, ck.comm);
        break;
    case kReduce:
        rc = MPI_Reduce(pr, rf, s.count, ty, s.op, s.root, ck.comm);
        if (s.inplace && c->me_root())
            memcpy(g, pr, n * ext);
        break;
    default: break;
    }
    ck.rc(rc, "reference " + c->label);
    // what the library must stage (memory kind builds)
    bool send_used = s.coll != kBcast && !(s.inplace && (s.coll != kReduce || c->me_root()));
    ck.staged(*c->in, send_used);
    ck.staged(*c->got, s.coll != kReduce || c->me_root());
}

const void *sendbuf_of(const Case &c)
{
    bool inplace = c.s.inplace && (c.s.coll != kReduce || c.me_root());
    return inplace ? MPI_IN_PLACE : (const void *)c.in->p();
}

int post(Case &c)
{
    trace("post " + c.label);
    const Spec &s = c.s;
    const void *sb = sendbuf_of(c);
    void *rb = c.got->p();
    MPI_Datatype ty = s.t->type;
    c.req = MPI_REQUEST_NULL;
    if (c.mpich) {
        switch (s.coll) {
        case kAllreduce: return MPI_Iallreduce(sb, rb, s.count, ty, s.op, c.comm, &c.req);
        case kRsb: return MPI_Ireduce_scatter_block(sb, rb, s.count, ty, s.op, c.comm, &c.req);
        case kAllgather:
            return MPI_Iallgather(sb, s.count, ty, rb, s.count, ty, c.comm, &c.req);
        case kBcast: return MPI_Ibcast(rb, s.count, ty, s.root, c.comm, &c.req);
        default: return MPI_Ireduce(sb, rb, s.count, ty, s.op, s.root, c.comm, &c.req);
        }
    }
    switch (s.coll) {
    case kAllreduce: return MPIX_Hier_Iallreduce(sb, rb, s.count, ty, s.op, c.comm, &c.req);
    case kRsb:
        return MPIX_Hier_Ireduce_scatter_block(sb, rb, s.count, ty, s.op, c.comm, &c.req);
    case kAllgather:
        return MPIX_Hier_Iallgather(sb, s.count, ty, rb, s.count, ty, c.comm, &c.req);
    case kBcast: return MPIX_Hier_Ibcast(rb, s.count, ty, s.root, c.comm, &c.req);
    default: return MPIX_Hier_Ireduce(sb, rb, s.count, ty, s.op, s.root, c.comm, &c.req);
    }
}

// The persistent form of the same call (its buffers for every start).
int init_persistent(Case &c)
{
    const Spec &s = c.s;
    const void *sb = sendbuf_of(c);
    void *rb = c.got->p();
    MPI_Datatype ty = s.t->type;
    MPI_Info in = MPI_INFO_NULL;
    c.req = MPI_REQUEST_NULL;
    switch (s.coll) {
    case kAllreduce:
        return MPIX_Hier_Allreduce_init(sb, rb, s.count, ty, s.op, c.comm, in, &c.req);
    case kRsb:
        return MPIX_Hier_Reduce_scatter_block_init(sb, rb, s.count, ty, s.op, c.comm, in, &c.req);
    case kAllgather:
        return MPIX_Hier_Allgather_init(sb, s.count, ty, rb, s.count, ty, c.comm, in, &c.req);
    case kBcast: return MPIX_Hier_Bcast_init(rb, s.count, ty, s.root, c.comm, in, &c.req);
    default:
        return MPIX_Hier_Reduce_init(sb, rb, s.count, ty, s.op, s.root, c.comm, in, &c.req);
    }
}

// The blocking form of the same call.
int run_blocking(Case &c)
{
    trace("blocking " + c.label);
    const Spec &s = c.s;
    const void *sb = sendbuf_of(c);
    void *rb = c.got->p();
    MPI_Datatype ty = s.t->type;
    switch (s.coll) {
    case kAllreduce: return MPIX_Hier_allreduce(sb, rb, s.count, ty, s.op, c.comm);
    case kRsb: return MPIX_Hier_reduce_scatter_block(sb, rb, s.count, ty, s.op, c.comm);
    case kAllgather: return MPIX_Hier_allgather(sb, s.count, ty, rb, s.count, ty, c.comm);
    case kBcast: return MPIX_Hier_bcast(rb, s.count, ty, s.root, c.comm);
    default: return MPIX_Hier_reduce(sb, rb, s.count, ty, s.op, s.root, c.comm);
    }
}

// The result against MPICH's; the case's buffers are the test's again.
void check(Case &c)
{
    Checker &ck = *c.ck;
    const Spec &s = c.s;
    const mxh_type_t *t = s.t;
    const std::string &label = c.label;
    if (s.coll == kReduce && !c.me_root()) {
        ck.untouched(c.got->p(), c.got->b.bytes, label + ": wrote into a non-root recvbuf");
    } else {
        ck.same(t, !c.reduction(), c.got->p(), c.ref.data(), c.nres, label);
    }
    if (sendbuf_of(c) != MPI_IN_PLACE && s.coll != kBcast)
        ck.same_bytes(c.in->p(), c.pristine.data(), c.in->b.bytes, label + ": modified sendbuf");
    ck.guards(c.got->b, label);
    ck.guards(c.in->b, label);
    if (s.coll == kAllreduce || s.coll == kAllgather || s.coll == kBcast)
        ck.hash(mxh_hash(t, !c.reduction(), c.got->p(), c.nres), label);
}

// --------------------------------------------------------------- completion

enum Method { kWaitall, kTestany, kWaitsome, kTestEach, kNMethod };
const char *const kMethodName[] = {"MPI_Waitall", "MPI_Testany loop", "MPI_Waitsome loop",
                                   "MPI_Test on each"};

// Completes every case of @cs by @m; failures go to @ck.
void complete(Checker &ck, std::vector<Case *> &cs, Method m, const std::string &round)
{
    int n = (int)cs.size();
    std::vector<MPI_Request> reqs((size_t)n + 1);
    std::vector<MPI_Status> st((size_t)n + 1);
    std::vector<int> idx((size_t)n + 1);
    for (int i = 0; i < n; i++)
        reqs[(size_t)i] = cs[(size_t)i]->req;
    int ndone = 0;
    auto mark = [&](int i, const MPI_Status *stat) {
        if (i < 0 || i >= n) {
            ck.fail(round + fmt(": %s reported index %d of %d", kMethodName[m], i, n));
            return;
        }
        Case &c = *cs[(size_t)i];
        if (c.completed)
            ck.fail(round + ": " + c.label + fmt(": reported complete twice (%s)", kMethodName[m]));
        c.completed = true;
        c.req = MPI_REQUEST_NULL;
        if (stat)
            c.status = *stat;
        ndone++;
    };
    switch (m) {
    case kWaitall: {
        int rc = MPI_Waitall(n, reqs.data(), st.data());
        ck.rc(rc, round + ": MPI_Waitall");
        for (int i = 0; i < n; i++) {
            if (reqs[(size_t)i] != MPI_REQUEST_NULL)
                ck.fail(round + ": " + cs[(size_t)i]->label + ": request not MPI_REQUEST_NULL "
                                                           "after MPI_Waitall");
            mark(i, &st[(size_t)i]);
        }
        break;
    }
    case kTestany: {
        long polls = 0;
        while (ndone < n) {
            int i = MPI_UNDEFINED, flag = 0;
            MPI_Status s;
            int rc = MPI_Testany(n, reqs.data(), &i, &flag, &s);
            polls++;
            if (rc != MPI_SUCCESS) {
                ck.rc(rc, round + ": MPI_Testany");
                break;
            }
            if (flag && i == MPI_UNDEFINED) {
                ck.fail(round + fmt(": MPI_Testany: no active request left, %d of %d completed",
                                    ndone, n));
                break;
            }
            if (flag)
                mark(i, &s);
        }
        trace(round + fmt(": %ld MPI_Testany calls", polls));
        break;
    }
    case kWaitsome:
        while (ndone < n) {
            int out = 0;
            int rc = MPI_Waitsome(n, reqs.data(), &out, idx.data(), st.data());
            if (rc != MPI_SUCCESS) {
                ck.rc(rc, round + ": MPI_Waitsome");
                break;
            }
            if (out == MPI_UNDEFINED || out <= 0) {
                ck.fail(round + fmt(": MPI_Waitsome returned outcount %d with %d of %d done", out,
                                    ndone, n));
                break;
            }
            for (int k = 0; k < out; k++)
                mark(idx[(size_t)k], &st[(size_t)k]);
        }
        break;
    case kTestEach:
        while (ndone < n) {
            for (int i = 0; i < n; i++) {
                if (cs[(size_t)i]->completed)
                    continue;
                int flag = 0;
                MPI_Status s;
                int rc = MPI_Test(&reqs[(size_t)i], &flag, &s);
                if (rc != MPI_SUCCESS) {
                    ck.rc(rc, round + ": MPI_Test " + cs[(size_t)i]->label);
                    ndone = n;
                    break;
                }
                if (flag) {
                    if (reqs[(size_t)i] != MPI_REQUEST_NULL)
                        ck.fail(round + ": " + cs[(size_t)i]->label +
                                ": request not MPI_REQUEST_NULL after MPI_Test gave flag=1");
                    mark(i, &s);
                    // the header: the status of a completed request has count 0
                    // (MPICH's own collective requests leave it undefined)
                    int cnt = -1;
                    MPI_Get_count(&s, MPI_BYTE, &cnt);
                    if (cnt != 0 && !MXH_TEST_PLAIN && !cs[(size_t)i]->mpich)
                        ck.fail(round + ": " + cs[(size_t)i]->label +
                                fmt(": status count %d, expected 0", cnt));
                }
            }
        }
        break;
    default: break;
    }
}

// Posts every case of @cs (a failure goes to the case's checker) and appends it to @all.
void post_all(const std::vector<CasePtr> &cs, std::vector<Case *> &all)
{
    for (auto &c : cs) {
        c->ck->rc(post(*c), "post " + c->label);
        all.push_back(c.get());
    }
}

// Checks the cases of @cs that completed.
void check_completed(const std::vector<CasePtr> &cs)
{
    for (auto &c : cs)
        if (c->completed)
            check(*c);
}

// ------------------------------------------------------------------ fixture

// Reductions: representative types and ops (exact patterns); MPI_2INT +
// MPI_MINLOC and MPI_INT8_T + MPI_PROD go to the fallback or small types.
std::vector<Pair> red_pairs()
{
    std::vector<Pair> v;
    const struct {
        MPI_Datatype t;
        MPI_Op op;
    } want[] = {{MPI_INT, MPI_SUM},        {MPI_DOUBLE, MPI_SUM},     {MPI_FLOAT, MPI_MAX},
                {MPI_INT8_T, MPI_PROD},    {MPI_UINT64_T, MPI_BXOR},  {MPI_SHORT, MPI_MIN},
                {MPI_LONG_DOUBLE, MPI_SUM}, {MPI_C_BOOL, MPI_LOR},    {MPI_UNSIGNED, MPI_BAND},
                {MPI_C_DOUBLE_COMPLEX, MPI_PROD}, {MPI_2INT, MPI_MINLOC}, {MPI_INT, MPI_LXOR}};
    for (auto &w : want) {
        const mxh_type_t *t = mxh_type_find(w.t);
        if (t && mxh_op_allowed(t, w.op) && mxh_op_mpich_ok(t, w.op))
            v.push_back({t, w.op});
    }
    return v;
}

std::vector<const mxh_type_t *> move_types()
{
    std::vector<const mxh_type_t *> v;
    for (MPI_Datatype dt : {MPI_BYTE, MPI_INT, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_2INT, MPI_CHAR,
                            MPI_UINT16_T})
        if (const mxh_type_t *t = mxh_type_find(dt))
            v.push_back(t);
    return v;
}

// 0, 1, primes and counts that no rank count divides
std::vector<int> counts()
{
    if (quick())
        return {0, 1, 7, 97, 1009, 4099};
    return {0, 1, 2, 7, 13, 31, 97, 1009, 4099, 65537};
}

class Nbc : public MxhMpiTest, public ::testing::WithParamInterface<PairCfg> {
  protected:
    const CommPair &pair() { return get_pair(GetParam()); }

    // A random case of round @seed, number @i, on communicator @ci.
    Spec random_spec(uint64_t seed, int i, int size)
    {
        static const std::vector<Pair> pairs = red_pairs();
        static const std::vector<const mxh_type_t *> mtypes = move_types();
        static const std::vector<int> cnts = counts();
        uint64_t h = mix64(seed * 1000003ULL + (uint64_t)i);
        Spec s{};
        s.coll = (Coll)((seed + (uint64_t)i) % kNColl);
        if (s.coll == kAllgather || s.coll == kBcast) {
            s.t = mtypes[h % mtypes.size()];
            s.op = MPI_OP_NULL;
        } else {
            const Pair &p = pairs[h % pairs.size()];
            s.t = p.t;
            s.op = p.op;
        }
        s.count = cnts[(h >> 16) % cnts.size()];
        // roots: mostly not 0
        s.root = (int)((h >> 32) % (uint64_t)size);
        if ((h >> 40) % 3 == 0)
            s.root = size - 1;
        s.inplace = s.coll != kBcast && ((h >> 48) & 1);
        return s;
    }
};

// ---- 1, 4 and 16 requests in flight on A and B, blocking calls in between,
// every completion method

TEST_P(Nbc, InFlightMixedWithBlocking)
{
    const CommPair &cp = pair();
    Checker ckA(cp.c[0], cp.cname[0]), ckB(cp.c[1], cp.cname[1]), ckS(g_side, "side");
    Checker *cks[2] = {&ckA, &ckB};
    const int rounds = quick() ? 1 : 3;
    uint64_t seed = 1;
    for (int nflight : {1, 4, 16})
        for (int m = 0; m < kNMethod; m++)
            for (int r = 0; r < (nflight == 1 ? rounds + 4 : rounds); r++, seed++) {
                std::string round = fmt("round %llu (%d in flight, %s)", (unsigned long long)seed,
                                        nflight, kMethodName[m]);
                trace(round);
                // prepare: the nonblocking cases, then the blocking ones
                std::vector<CasePtr> nb, bl;
                for (int i = 0; i < nflight; i++) {
                    int ci = i % 2;
                    Spec s = random_spec(seed, i, cks[ci]->size);
                    nb.push_back(prepare(*cks[ci], s, seed * 131 + (uint64_t)i, cp.cname[ci]));
                }
                // MPICH's own requests in the same array (every other round of 4 or 16)
                bool mixed = nflight > 1 && seed % 2 == 0;
                if (mixed) {
                    Spec s = random_spec(seed + 7, 0, ckS.size);
                    nb.push_back(prepare(ckS, s, seed * 131 + 99, "side", true));
                }
                int nblocking = nflight == 1 ? 1 : nflight / 4 + 1;
                for (int k = 0; k < nblocking; k++) {
                    int ci = (k + (int)seed) % 2;
                    Spec s = random_spec(seed + 500, k, cks[ci]->size);
                    bl.push_back(prepare(*cks[ci], s, seed * 131 + 1000 + (uint64_t)k,
                                         cp.cname[ci]));
                }
                // post, blocking calls in between (after the 1st post, then evenly)
                size_t next_bl = 0;
                std::vector<Case *> all;
                for (size_t i = 0; i < nb.size(); i++) {
                    Case &c = *nb[i];
                    c.ck->rc(post(c), "post " + c.label);
                    all.push_back(&c);
                    bool due = next_bl < bl.size() &&
                               (i == 0 || i + 1 == nb.size() || i % 4 == 1);
                    if (due) {
                        Case &b = *bl[next_bl++];
                        b.ck->rc(run_blocking(b), b.label + " (blocking, between posts)");
                        b.completed = true;
                    }
                }
                for (; next_bl < bl.size(); next_bl++) {
                    Case &b = *bl[next_bl];
                    b.ck->rc(run_blocking(b), b.label + " (blocking, after the posts)");
                    b.completed = true;
                }
                complete(ckA, all, (Method)m, round);
                for (auto &c : nb) {
                    if (!c->completed)
                        continue;  // reported by complete()
                    check(*c);
                }
                for (auto &c : bl)
                    check(*c);
            }
    ckA.finish();
    ckB.finish();
    ckS.finish();
}

// ---- every reduction pair and movement type, 16 in flight, Waitall

TEST_P(Nbc, TypesAndOpsInFlight)
{
    const CommPair &cp = pair();
    Checker ckA(cp.c[0], cp.cname[0]), ckB(cp.c[1], cp.cname[1]);
    Checker *cks[2] = {&ckA, &ckB};
    std::vector<Spec> specs;
    int k = 0;
    for (const Pair &p : red_pairs())
        for (int count : {1, 7, 1009})
            for (Coll c : {kAllreduce, kRsb, kReduce}) {
                Spec s{c, p.t, p.op, count, 0, (k % 2) == 1};
                s.root = k % 3 == 0 ? 0 : -1;  // resolved per communicator below
                specs.push_back(s);
                k++;
            }
    for (const mxh_type_t *t : move_types())
        for (int count : {1, 7, 1009})
            for (Coll c : {kAllgather, kBcast}) {
                Spec s{c, t, MPI_OP_NULL, count, k % 3 == 0 ? 0 : -1, c == kAllgather && k % 2};
                specs.push_back(s);
                k++;
            }
    const size_t batch = 16;
    for (size_t b0 = 0; b0 < specs.size(); b0 += batch) {
        std::vector<CasePtr> cs;
        std::vector<Case *> all;
        for (size_t i = b0; i < specs.size() && i < b0 + batch; i++) {
            int ci = (int)(i % 2);
            Spec s = specs[i];
            if (s.root < 0)
                s.root = cks[ci]->size - 1 - (int)(i % 2) % cks[ci]->size;
            cs.push_back(prepare(*cks[ci], s, 77 + i, cp.cname[ci]));
        }
        post_all(cs, all);
        complete(ckA, all, kWaitall, fmt("batch %zu", b0 / batch));
        check_completed(cs);
    }
    ckA.finish();
    ckB.finish();
}

// ---- messages of several MiB, pipelined on the "pipelined" pair (64 KiB
// fragments), all five in flight at once and then two at a time with a blocking
// one of the same size in between

TEST_P(Nbc, LargePipelined)
{
    const CommPair &cp = pair();
    Checker ckA(cp.c[0], cp.cname[0]), ckB(cp.c[1], cp.cname[1]);
    Checker *cks[2] = {&ckA, &ckB};
    const mxh_type_t *ti = mxh_type_find(MPI_INT), *td = mxh_type_find(MPI_DOUBLE),
                     *tf = mxh_type_find(MPI_FLOAT);
    // elements of the whole vector: 6 MiB + of ints (1.5 MiB + in quick mode)
    const int big = quick() ? 393241 : 1572869;
    for (int pass = 0; pass < 2; pass++) {
        std::vector<CasePtr> cs;
        for (int i = 0; i < kNColl; i++) {
            int ci = (i + pass) % 2;
            int p = cks[ci]->size;
            Spec s{};
            s.coll = (Coll)i;
            switch (s.coll) {
            case kAllreduce: s = {kAllreduce, ti, MPI_SUM, big, 0, pass == 1}; break;
            case kRsb: s = {kRsb, td, MPI_SUM, big / 2 / p + 1, 0, pass == 0}; break;
            case kAllgather: s = {kAllgather, td, MPI_OP_NULL, big / 2 / p + 3, 0, pass == 1}; break;
            case kBcast: s = {kBcast, td, MPI_OP_NULL, big / 2 + 5, p - 1, false}; break;
            default: s = {kReduce, tf, MPI_MAX, big + 2, p > 1 ? 1 : 0, pass == 0}; break;
            }
            cs.push_back(prepare(*cks[ci], s, 4000 + (uint64_t)(i + 10 * pass), cp.cname[ci]));
        }
        std::vector<Case *> all;
        if (pass == 0) {
            post_all(cs, all);
            complete(ckA, all, kWaitsome, "large, all five in flight");
        } else {
            // 0,1 in flight; blocking 2 (on its communicator); 3,4 in flight
            for (int i : {0, 1}) {
                cs[(size_t)i]->ck->rc(post(*cs[(size_t)i]), "post " + cs[(size_t)i]->label);
                all.push_back(cs[(size_t)i].get());
            }
            cs[2]->ck->rc(run_blocking(*cs[2]), cs[2]->label + " (blocking, between posts)");
            cs[2]->completed = true;
            for (int i : {3, 4}) {
                cs[(size_t)i]->ck->rc(post(*cs[(size_t)i]), "post " + cs[(size_t)i]->label);
                all.push_back(cs[(size_t)i].get());
            }
            complete(ckA, all, kTestEach, "large, two and two");
        }
        check_completed(cs);
    }
    ckA.finish();
    ckB.finish();
}

// ---- FIFO on one communicator: once a later request completed, every earlier
// one on the same communicator is complete (MPI_Request_get_status, which
// neither frees nor progresses); the other communicator is independent

TEST_P(Nbc, FifoPerCommunicator)
{
    if (MXH_TEST_PLAIN)  // same decision on every rank
        GTEST_SKIP() << "plain-MPI stand-in: MPI does not order nonblocking collectives' "
                        "completion (a library guarantee)";
    const CommPair &cp = pair();
    Checker ckA(cp.c[0], cp.cname[0]);
    const mxh_type_t *ti = mxh_type_find(MPI_INT);
    const int nreq = 8;
    for (int count : {1, 4099, quick() ? 65537 : 262147}) {
        std::vector<CasePtr> cs;
        for (int i = 0; i < nreq; i++) {
            Coll c = (Coll)(i % kNColl);
            Spec s{c, ti, c == kAllgather || c == kBcast ? MPI_OP_NULL : MPI_SUM,
                   c == kRsb || c == kAllgather ? std::max(1, count / ckA.size) : count,
                   (i * 3) % ckA.size, false};
            cs.push_back(prepare(ckA, s, 900 + (uint64_t)i, cp.cname[0]));
        }
        for (auto &c : cs)
            ckA.rc(post(*c), "post " + c->label);
        // wait for the last one only
        Case &last = *cs.back();
        ckA.rc(MPI_Wait(&last.req, MPI_STATUS_IGNORE), "MPI_Wait " + last.label);
        last.completed = true;
        for (int i = 0; i < nreq - 1; i++) {
            Case &c = *cs[(size_t)i];
            int flag = 0;
            ckA.rc(MPI_Request_get_status(c.req, &flag, MPI_STATUS_IGNORE),
                   "MPI_Request_get_status " + c.label);
            if (!flag)
                ckA.fail(fmt("count=%d: request %d (%s) not complete after request %d on the "
                             "same communicator completed (FIFO order)",
                             count, i, c.label.c_str(), nreq - 1));
        }
        std::vector<Case *> rest;
        for (int i = 0; i < nreq - 1; i++)
            rest.push_back(cs[(size_t)i].get());
        complete(ckA, rest, kWaitall, fmt("fifo count=%d", count));
        check_completed(cs);
    }
    ckA.finish();
}

// ---- MPI_Request_free on a request known to be complete: after a later
// request on the same communicator completed (FIFO), or after a blocking call
// on it returned; the buffers then hold the results

TEST_P(Nbc, RequestFreeAfterCompletion)
{
    if (MXH_TEST_PLAIN)  // same decision on every rank
        GTEST_SKIP() << "plain-MPI stand-in: MPICH 4.0.2 rejects MPI_Request_free on "
                        "nonblocking collective requests (MPI: erroneous; the library allows it)";
    const CommPair &cp = pair();
    Checker ckA(cp.c[0], cp.cname[0]), ckB(cp.c[1], cp.cname[1]);
    const mxh_type_t *td = mxh_type_find(MPI_DOUBLE), *ti = mxh_type_find(MPI_INT);
    for (int count : {0, 7, 65537}) {
        for (int how = 0; how < 2; how++) {
            Checker &ck = how ? ckB : ckA;
            const char *cn = cp.cname[how];
            CasePtr a = prepare(ck, {kAllreduce, td, MPI_SUM, count, 0, false}, 50 + count, cn);
            CasePtr b = prepare(ck, {kBcast, ti, MPI_OP_NULL, count, ck.size - 1, false},
                                51 + count, cn);
            ck.rc(post(*a), "post " + a->label);
            std::string why;
            if (how == 0) {  // a later request on the same communicator
                ck.rc(post(*b), "post " + b->label);
                ck.rc(MPI_Wait(&b->req, MPI_STATUS_IGNORE), "MPI_Wait " + b->label);
                why = "after MPI_Wait on a later request of the communicator";
            } else {         // a blocking call on the same communicator
                ck.rc(run_blocking(*b), b->label + " (blocking)");
                why = "after a later blocking call on the communicator returned";
            }
            b->completed = true;
            int flag = 0;
            ck.rc(MPI_Request_get_status(a->req, &flag, MPI_STATUS_IGNORE),
                  "MPI_Request_get_status " + a->label);
            if (flag) {
                ck.rc(MPI_Request_free(&a->req), "MPI_Request_free " + a->label);
                if (a->req != MPI_REQUEST_NULL)
                    ck.fail(a->label + ": MPI_Request_free left the handle set");
            } else {
                ck.fail(a->label + ": not complete " + why + " (FIFO order)");
                ck.rc(MPI_Wait(&a->req, MPI_STATUS_IGNORE), "MPI_Wait " + a->label);
            }
            a->completed = true;
            check(*a);
            check(*b);
        }
    }
    ckA.finish();
    ckB.finish();
}

// ---- one send buffer read by several requests in flight (and by a blocking
// call between them)

TEST_P(Nbc, SharedSendBuffer)
{
    const CommPair &cp = pair();
    Checker ckA(cp.c[0], cp.cname[0]);
    const mxh_type_t *ti = mxh_type_find(MPI_INT);
    for (int count : {1, 4099, 65537}) {
        // three allreduces and a reduce from the first case's sendbuf
        std::vector<CasePtr> cs;
        for (int i = 0; i < 4; i++) {
            Spec s{i == 3 ? kReduce : kAllreduce, ti, MPI_SUM, count, ckA.size - 1, false};
            cs.push_back(prepare(ckA, s, 333 + (uint64_t)count, cp.cname[0]));
        }
        // all four have identical inputs (same salt): let them read cs[0]'s
        Buf &shared = *cs[0]->in;
        auto post_shared = [&](Case &c) {
            trace("post " + c.label + " (shared sendbuf)");
            if (c.s.coll == kReduce)
                return MPIX_Hier_Ireduce(shared.p(), c.got->p(), count, MPI_INT, MPI_SUM,
                                         c.s.root, c.comm, &c.req);
            return MPIX_Hier_Iallreduce(shared.p(), c.got->p(), count, MPI_INT, MPI_SUM, c.comm,
                                        &c.req);
        };
        ckA.rc(post_shared(*cs[0]), "post " + cs[0]->label);
        ckA.rc(post_shared(*cs[1]), "post " + cs[1]->label);
        ckA.rc(MPIX_Hier_allreduce(shared.p(), cs[2]->got->p(), count, MPI_INT, MPI_SUM, ckA.comm),
               cs[2]->label + " (blocking, shared sendbuf)");
        cs[2]->completed = true;
        ckA.rc(post_shared(*cs[3]), "post " + cs[3]->label);
        std::vector<Case *> all = {cs[0].get(), cs[1].get(), cs[3].get()};
        complete(ckA, all, kTestany, fmt("shared sendbuf count=%d", count));
        // the shared buffer stood in for every case's own (equal) input
        ckA.same_bytes(shared.p(), cs[0]->pristine.data(), shared.b.bytes,
                       fmt("count=%d: modified the shared sendbuf", count));
        check_completed(cs);
    }
    ckA.finish();
}

// ---- calls that take different paths in the library (plain MPI posted at once,
// plain MPI through a copy for MPICH's in-place quirks, hierarchical tasks) in
// flight together on one communicator: MPI requires the collectives of a
// communicator in the same order on every rank, whatever path each call takes.
// On A, B and a communicator of one rank per node (a single level on most
// layouts, so the plain paths).

TEST_P(Nbc, MixedPathsInOrder)
{
    const CommPair &cp = pair();
    MPI_Comm comms[3] = {cp.c[0], cp.c[1], rails_comm()};
    const char *names[3] = {cp.cname[0], cp.cname[1], "rails"};
    const mxh_type_t *ti = mxh_type_find(MPI_INT), *td = mxh_type_find(MPI_DOUBLE);
    for (int ci = 0; ci < 3; ci++) {
        Checker ck(comms[ci], names[ci]);
        for (int rep = 0; rep < 3; rep++) {
            const Spec specs[] = {
                {kRsb, ti, MPI_SUM, 1009, 0, true},           // in place: through a copy
                {kRsb, td, MPI_SUM, 7, 0, true},
                {kAllreduce, td, MPI_SUM, 1009, 0, true},     // posted at once
                {kReduce, ti, MPI_SUM, 1009, ck.size - 1, true},
                {kBcast, td, MPI_OP_NULL, 97, 0, false},
                {kRsb, ti, MPI_SUM, 31, 0, false},
                {kAllgather, td, MPI_OP_NULL, 13, 0, true},
            };
            std::vector<CasePtr> cs;
            std::vector<Case *> all;
            for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
                cs.push_back(prepare(ck, specs[i], 1200 + (uint64_t)(10 * rep) + i, names[ci]));
            post_all(cs, all);
            complete(ck, all, (Method)(rep % kNMethod),
                     fmt("mixed paths on %s, repetition %d", names[ci], rep));
            check_completed(cs);
        }
        ck.finish();
    }
}

// ---- argument errors: reported by the posting call, no request created, the
// communicator usable afterwards (also with a request of it in flight)

// The function name the message must mention (the plain stand-in: MPICH's).
// ---- persistent requests (MPIX_Hier_*_init): many starts with new inputs each
// time, bit for bit equal to MPICH's blocking collective; every completion
// method, requests of MPICH's in the same arrays; inactive and active requests

TEST_P(Nbc, PersistentStartsEqualMpich)
{
    const CommPair &cp = pair();
    Checker ckA(cp.c[0], cp.cname[0]), ckB(cp.c[1], cp.cname[1]), ckS(g_side, "side");
    Checker *cks[2] = {&ckA, &ckB};
    const int nspec = 10, starts = quick() ? 200 : 1000;
    std::vector<CasePtr> cs;
    for (int i = 0; i < nspec; i++) {
        Checker &ck = *cks[i % 2];
        Spec s = random_spec(4242, i, ck.size);
        s.count = std::min(s.count, 4099);  // many starts: keep each small
        cs.push_back(prepare(ck, s, 0, cp.cname[i % 2]));
        cs.back()->label = "persistent " + cs.back()->label;
        ck.rc(init_persistent(*cs.back()), "init " + cs.back()->label);
        EXPECT_NE(MPI_REQUEST_NULL, cs.back()->req) << cs.back()->label;
    }
    for (int it = 1; it <= starts; it++) {
        // two requests, on A and on B, new inputs and references (same order everywhere)
        Case &a = *cs[(size_t)(2 * it) % nspec], &b = *cs[(size_t)(2 * it + 1) % nspec];
        const MPI_Request ha = a.req, hb = b.req;
        refill(a, (uint64_t)it);
        refill(b, (uint64_t)it);
        std::string what = fmt("start %d: ", it);
        int x = ckS.rank, y = -1, f0 = 0, f1 = 0, idx = -1;
        MPI_Request side = MPI_REQUEST_NULL, r[3] = {a.req, b.req, MPI_REQUEST_NULL};
        switch (it % 5) {
        case 0:  // MPI_Start, MPI_Wait
            ckA.rc(MPI_Start(&a.req), what + a.label);
            ckB.rc(MPI_Start(&b.req), what + b.label);
            ckA.rc(MPI_Wait(&a.req, MPI_STATUS_IGNORE), what + a.label);
            ckB.rc(MPI_Wait(&b.req, MPI_STATUS_IGNORE), what + b.label);
            break;
        case 1:  // MPI_Startall, MPI_Test on each until both complete
            ckA.rc(MPI_Startall(2, r), what + "MPI_Startall");
            while (!f0 || !f1) {
                if (!f0)
                    ckA.rc(MPI_Test(&r[0], &f0, MPI_STATUS_IGNORE), what + a.label);
                if (!f1)
                    ckB.rc(MPI_Test(&r[1], &f1, MPI_STATUS_IGNORE), what + b.label);
            }
            break;
        case 2:  // MPI_Waitall with MPICH's MPI_Iallreduce between them
            ckA.rc(MPI_Startall(2, r), what + "MPI_Startall");
            ckS.rc(MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, g_side, &side), what + "side");
            r[2] = r[1];
            r[1] = side;
            ckA.rc(MPI_Waitall(3, r, MPI_STATUSES_IGNORE), what + "MPI_Waitall");
            EXPECT_EQ(MPI_REQUEST_NULL, r[1]) << what << "MPICH's request not freed";
            EXPECT_EQ(ckS.size * (ckS.size - 1) / 2, y) << what << "MPICH's result";
            r[1] = r[2];
            break;
        case 3:  // MPI_Waitany until every entry is inactive
            ckA.rc(MPI_Startall(2, r), what + "MPI_Startall");
            for (int k = 0; k < 3; k++) {
                ckA.rc(MPI_Waitany(2, r, &idx, MPI_STATUS_IGNORE), what + "MPI_Waitany");
                if (k < 2)
                    EXPECT_TRUE(idx == 0 || idx == 1) << what << "index " << idx;
                else
                    EXPECT_EQ(MPI_UNDEFINED, idx) << what << "nothing active";
            }
            break;
        default:  // MPI_Testsome loop, then MPI_Testall on inactive requests
            ckA.rc(MPI_Startall(2, r), what + "MPI_Startall");
            for (int done = 0; done < 2;) {
                int out = 0, ind[2];
                ckA.rc(MPI_Testsome(2, r, &out, ind, MPI_STATUSES_IGNORE), what + "MPI_Testsome");
                ASSERT_NE(MPI_UNDEFINED, out) << what << "active requests reported inactive";
                done += out;
            }
            ckA.rc(MPI_Testall(2, r, &f0, MPI_STATUSES_IGNORE), what + "MPI_Testall");
            EXPECT_TRUE(f0) << what << "MPI_Testall on inactive requests";
            break;
        }
        if (it % 5 != 0) {
            a.req = r[0];
            b.req = r[1];
        }
        EXPECT_EQ(ha, a.req) << what << a.label << ": handle changed";
        EXPECT_EQ(hb, b.req) << what << b.label << ": handle changed";
        check(a);
        check(b);
    }
    // inactive: MPI_Wait and MPI_Test return at once; an active one cannot start again
    Case &c = *cs[0];
    int flag = 0;
    ckA.rc(MPI_Wait(&c.req, MPI_STATUS_IGNORE), "MPI_Wait on an inactive request");
    ckA.rc(MPI_Test(&c.req, &flag, MPI_STATUS_IGNORE), "MPI_Test on an inactive request");
    EXPECT_TRUE(flag) << "MPI_Test on an inactive request";
    refill(c, 99999);
    ckA.rc(MPI_Start(&c.req), "MPI_Start");
#if !MXH_TEST_PLAIN  // MPICH 4.0.2 does not check this
    int cls = MPI_SUCCESS;
    MPI_Error_class(MPI_Start(&c.req), &cls);
    EXPECT_EQ(MPI_ERR_REQUEST, cls) << "MPI_Start on an active request";
#endif
    ckA.rc(MPI_Wait(&c.req, MPI_STATUS_IGNORE), "MPI_Wait");
    check(c);
    // freed: inactive ones, and one freed while active (it completes unobserved)
    refill(*cs[1], 77777);
    ckB.rc(MPI_Start(&cs[1]->req), "MPI_Start before MPI_Request_free");
    for (auto &p : cs) {
        p->ck->rc(MPI_Request_free(&p->req), "MPI_Request_free " + p->label);
        EXPECT_EQ(MPI_REQUEST_NULL, p->req) << p->label;
    }
    int one = 1, sum = 0;  // the freed start completes before this call (one FIFO on B)
    ckB.rc(MPIX_Hier_allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, cp.c[1]),
           "a collective after the free");
    EXPECT_EQ(ckB.size, sum) << "a collective after the free";
    ckA.finish();
    ckB.finish();
    ckS.finish();
}

std::string fn_in_message(const std::string &fn)
{
#if MXH_TEST_PLAIN
    return "MPI_" + fn.substr(10);
#else
    return fn;
#endif
}

struct ErrCase {
    const char *what, *fn;
    int cls;
    bool plain_unchecked;  // MPICH 4.0.2 does not check it (crashes): not called in the plain build
    int (*call)(MPI_Comm, MPI_Request *);
};

double g_s[256], g_r[256];

const ErrCase kErrCases[] = {
    {"count=-1", "MPIX_Hier_Iallreduce", MPI_ERR_COUNT, true,
     [](MPI_Comm c, MPI_Request *r) {
         return MPIX_Hier_Iallreduce(g_s, g_r, -1, MPI_DOUBLE, MPI_SUM, c, r);
     }},
    {"MPI_OP_NULL", "MPIX_Hier_Iallreduce", MPI_ERR_OP, false,
     [](MPI_Comm c, MPI_Request *r) {
         return MPIX_Hier_Iallreduce(g_s, g_r, 1, MPI_INT, MPI_OP_NULL, c, r);
     }},
    // (type, op) pairs without a kernel go to MPI, which reports them (never
    // stricter than MPI): the message is MPI's
    {"MPI_BYTE + MPI_SUM", "MPI_Iallreduce", MPI_ERR_OP, false,
     [](MPI_Comm c, MPI_Request *r) {
         return MPIX_Hier_Iallreduce(g_s, g_r, 4, MPI_BYTE, MPI_SUM, c, r);
     }},
    {"aliased sendbuf and recvbuf", "MPIX_Hier_Iallreduce", MPI_ERR_BUFFER, false,
     [](MPI_Comm c, MPI_Request *r) {
         return MPIX_Hier_Iallreduce(g_r, g_r, 1, MPI_INT, MPI_SUM, c, r);
     }},
    {"request=NULL", "MPIX_Hier_Iallreduce", MPI_ERR_ARG, false,
     [](MPI_Comm c, MPI_Request *) {
         return MPIX_Hier_Iallreduce(g_s, g_r, 1, MPI_INT, MPI_SUM, c, nullptr);
     }},
    {"comm=MPI_COMM_NULL", "MPIX_Hier_Iallreduce", MPI_ERR_COMM, false,
     [](MPI_Comm, MPI_Request *r) {
         return MPIX_Hier_Iallreduce(g_s, g_r, 1, MPI_INT, MPI_SUM, MPI_COMM_NULL, r);
     }},
    {"recvcount=-1", "MPIX_Hier_Ireduce_scatter_block", MPI_ERR_COUNT, true,
     [](MPI_Comm c, MPI_Request *r) {
         return MPIX_Hier_Ireduce_scatter_block(g_s, g_r, -1, MPI_INT, MPI_SUM, c, r);
     }},
    {"recvbuf=NULL", "MPIX_Hier_Ireduce_scatter_block", MPI_ERR_BUFFER, false,
     [](MPI_Comm c, MPI_Request *r) {
         return MPIX_Hier_Ireduce_scatter_block(g_s, nullptr, 1, MPI_INT, MPI_SUM, c, r);
     }},
    {"recvcount=-1", "MPIX_Hier_Iallgather", MPI_ERR_COUNT, false,
     [](MPI_Comm c, MPI_Request *r) {
         return MPIX_Hier_Iallgather(g_s, 1, MPI_INT, g_r, -1, MPI_INT, c, r);
     }},
    {"sendtype=MPI_DATATYPE_NULL", "MPIX_Hier_Iallgather", MPI_ERR_TYPE, false,
     [](MPI_Comm c, MPI_Request *r) {
         return MPIX_Hier_Iallgather(g_s, 1, MPI_DATATYPE_NULL, g_r, 1, MPI_INT, c, r);
     }},
    {"root=size", "MPIX_Hier_Ibcast", MPI_ERR_ROOT, false,
     [](MPI_Comm c, MPI_Request *r) {
         int size;
         MPI_Comm_size(c, &size);
         return MPIX_Hier_Ibcast(g_r, 1, MPI_INT, size, c, r);
     }},
    {"count=-1", "MPIX_Hier_Ibcast", MPI_ERR_COUNT, false,
     [](MPI_Comm c, MPI_Request *r) { return MPIX_Hier_Ibcast(g_r, -1, MPI_INT, 0, c, r); }},
    {"root=-1", "MPIX_Hier_Ireduce", MPI_ERR_ROOT, false,
     [](MPI_Comm c, MPI_Request *r) {
         return MPIX_Hier_Ireduce(g_s, g_r, 1, MPI_INT, MPI_SUM, -1, c, r);
     }},
    {"MPI_FLOAT + MPI_BAND", "MPI_Ireduce", MPI_ERR_OP, false,
     [](MPI_Comm c, MPI_Request *r) {
         return MPIX_Hier_Ireduce(g_s, g_r, 2, MPI_FLOAT, MPI_BAND, 0, c, r);
     }},
};

void check_error(Checker &ck, const std::string &what, const std::string &fn, int rc, int cls)
{
    if (rc == MPI_SUCCESS) {
        ck.fail(what + ": returned MPI_SUCCESS");
        return;
    }
    int got = -1;
    MPI_Error_class(rc, &got);
    if (got != cls)
        ck.fail(what + fmt(": error class %d (%s), expected %d (%s)", got, class_name(got), cls,
                           class_name(cls)));
    char s[MPI_MAX_ERROR_STRING + 1] = "";
    int len = 0;
    MPI_Error_string(rc, s, &len);
    s[std::min(len, MPI_MAX_ERROR_STRING)] = 0;
    std::string name = fn_in_message(fn);
    if (std::string(s).find(name) == std::string::npos)
        ck.fail(what + ": MPI_Error_string does not mention " + name + ": \"" + s + "\"");
}

TEST_P(Nbc, ArgumentErrorAtPost)
{
    const CommPair &cp = pair();
    Checker ckA(cp.c[0], cp.cname[0]);
    // MPI_COMM_NULL errors go to MPI_COMM_WORLD's handler
    MPI_Errhandler old;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &old);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const mxh_type_t *ti = mxh_type_find(MPI_INT), *td = mxh_type_find(MPI_DOUBLE);
    int k = 0;
    for (const ErrCase &e : kErrCases) {
        if (MXH_TEST_PLAIN && e.plain_unchecked)
            continue;
        std::string what = std::string(e.fn) + " " + e.what;
        trace(what);
        // a correct request in flight on the communicator while the bad call is made
        bool inflight = k++ % 2 == 0;
        CasePtr before;
        if (inflight) {
            before = prepare(ckA, {kAllreduce, td, MPI_SUM, 1009, 0, false}, 600 + (uint64_t)k,
                             cp.cname[0]);
            ckA.rc(post(*before), "post " + before->label);
        }
        MPI_Request req = MPI_REQUEST_NULL;
        int rc = e.call(ckA.comm, &req);
        check_error(ckA, what, e.fn, rc, e.cls);
        if (req != MPI_REQUEST_NULL) {
            ckA.fail(what + ": the failed call left a request");
            MPI_Request_free(&req);
        }
        // the communicator works: the request in flight, then a new one
        CasePtr after = prepare(ckA, {kReduce, ti, MPI_SUM, 97, ckA.size - 1, false},
                                700 + (uint64_t)k, cp.cname[0]);
        ckA.rc(post(*after), "post " + after->label + " after " + what);
        std::vector<Case *> all;
        if (before)
            all.push_back(before.get());
        all.push_back(after.get());
        complete(ckA, all, kWaitall, "after " + what);
        for (Case *c : all)
            if (c->completed)
                check(*c);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, old);
    ckA.finish();
}

// ---- a post is local: rank 0 posts an all-to-all on a communicator that has
// made none yet while the others wait for a large allreduce in flight on
// another one, which needs rank 0's progress (MPICH's coll/nonblocking3 hung
// here when the all-to-all's communicators were split at its first post)

TEST_P(Nbc, FirstAlltoallPostIsLocal)
{
    const CommPair &cp = pair();
    Checker ckA(cp.c[0], cp.cname[0]);
    MPI_Comm fresh;
    MPI_Comm_dup(cp.c[0], &fresh);
    MPI_Comm_set_errhandler(fresh, MPI_ERRORS_RETURN);
    Checker ckF(fresh, "fresh dup");
    int one = 1, sum = 0;  // the fresh communicator's hierarchy, built blocking
    ckF.rc(MPIX_Hier_allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, fresh), "MPIX_Hier_allreduce");
    ckF.expect(sum == ckF.size, fmt("allreduce of 1 gave %d on %d ranks", sum, ckF.size));

    const int blk = 3, n = blk * ckF.size;
    std::vector<int> sbuf((size_t)n), rbuf((size_t)n, -1);
    for (int j = 0; j < n; j++)
        sbuf[(size_t)j] = ckF.rank * 100000 + j;
    CasePtr big = prepare(ckA, {kAllreduce, mxh_type_find(MPI_DOUBLE), MPI_SUM,
                                quick() ? 1 << 20 : 1 << 22, 0, false},
                          1300, cp.cname[0]);
    ckA.rc(post(*big), "post " + big->label);
    MPI_Request a2a = MPI_REQUEST_NULL;
    std::vector<Case *> inflight{big.get()};
    if (ckA.rank == 0) {
        ckF.rc(MPIX_Hier_Ialltoall(sbuf.data(), blk, MPI_INT, rbuf.data(), blk, MPI_INT, fresh,
                                   &a2a),
               "MPIX_Hier_Ialltoall (posted first)");
        complete(ckA, inflight, kWaitall, "allreduce in flight");
    } else {
        complete(ckA, inflight, kWaitall, "allreduce in flight");
        ckF.rc(MPIX_Hier_Ialltoall(sbuf.data(), blk, MPI_INT, rbuf.data(), blk, MPI_INT, fresh,
                                   &a2a),
               "MPIX_Hier_Ialltoall");
    }
    ckF.rc(MPI_Wait(&a2a, MPI_STATUS_IGNORE), "MPI_Wait alltoall");
    if (big->completed)
        check(*big);
    for (int src = 0; src < ckF.size; src++)
        for (int k = 0; k < blk; k++) {
            int want = src * 100000 + ckF.rank * blk + k, got = rbuf[(size_t)(src * blk + k)];
            if (got != want) {
                ckF.fail(fmt("alltoall: element %d from rank %d is %d, expected %d", k, src, got,
                             want));
                src = ckF.size;
                break;
            }
        }
    ckF.finish();
    ckA.finish();
    MPI_Comm_free(&fresh);
}

std::string pair_name(const ::testing::TestParamInfo<PairCfg> &info) { return info.param.name; }
INSTANTIATE_TEST_SUITE_P(Pairs, Nbc, ::testing::ValuesIn(kPairs), pair_name);

}  // namespace
