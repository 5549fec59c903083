// The executor's point-to-point step algorithms (src/exec/p2p.h: ring,
// recursive halving/doubling, direct, radix allreduce) against MPICH's own
// collectives, on communicators of every size from 2 to the world size, with
// counts around every algorithm's thresholds, even and uneven parts, integer
// data (exact) and doubles (every rank must hold the same bits).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "checker.hh"
#include "mpi_util.hh"
#include "coll/hier.h"
#include "exec/p2p.h"

using mxh_test::fmt;

namespace {

// Counts (elements of the whole region) around the small-message limit
// (MXH_P2P_SMALL bytes) and large enough for several ring/rhd parts.
const size_t kCounts[] = {1, 2, 3, 7, 13, 100, 1021, 8191, 8192, 8193, 30011, 65536};

struct Step {
    mxh_step_t s;
    std::vector<int> counts, displs;
};

// A step of @type over @count elements on @comm; @uneven gives part x a weight
// x+1 (and some empty parts), else the plan's even split.
Step make_step(mxh_step_type_t type, MPI_Comm comm, size_t count, bool uneven)
{
    Step st;
    int p, me;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    std::memset(&st.s, 0, sizeof(st.s));
    st.s.type  = type;
    st.s.gsize = p;
    st.s.me    = me;
    st.s.count = count;
    if (type == MXH_STEP_ALLREDUCE)
        return st;
    st.counts.assign(p, 0);
    st.displs.assign(p, 0);
    size_t total_w = 0;
    for (int x = 0; x < p; x++)
        total_w += uneven ? (x % 3 == 1 ? 0 : x + 1) : 1;
    size_t left = count;
    for (int x = 0; x < p; x++) {
        size_t w = uneven ? (x % 3 == 1 ? 0 : x + 1) : 1;
        size_t c = x == p - 1 ? left : count * w / total_w;
        st.counts[x] = (int)c;
        left -= c;
    }
    for (int x = 1; x < p; x++)
        st.displs[x] = st.displs[x - 1] + st.counts[x - 1];
    st.s.counts = st.counts.data();
    st.s.displs = st.displs.data();
    return st;
}

template <typename T> T value(int rank, size_t i)
{
    return (T)((rank * 7919 + (int)(i % 1000) * 31) % 1009) / (T)(sizeof(T) == 8 ? 8 : 1);
}

// Run @type with the p2p algorithm and with MPICH; integers must match exactly,
// doubles must be identical on every rank (checked through the hash).
// @from_src (reducing steps): the input is given as a separate source buffer
// and the work buffer starts as garbage; the source must stay untouched.
template <typename T>
void check(mxh_test::Checker &ck, MPI_Comm comm, mxh_step_type_t type, size_t count,
           bool uneven, MPI_Datatype dt, bool from_src = false)
{
    int p, me;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    Step st = make_step(type, comm, count, uneven);
    std::vector<T> work(count), ref(count), tmp(mxh_p2p_tmp_count(&st.s, sizeof(T)) + 1);
    for (size_t i = 0; i < count; i++)
        work[i] = value<T>(me, i);
    std::string what = fmt("%s p=%d count=%zu %s algo=%s%s", mxh_step_type_name(type), p, count,
                           uneven ? "uneven" : "even",
                           mxh_p2p_algo_name(mxh_p2p_choose(&st.s, sizeof(T))),
                           from_src ? " from src" : "");

    // reference from MPICH on the same input
    std::vector<T> in(work);
    int rc = MPI_SUCCESS;
    size_t moff = 0, mcnt = count;
    if (type == MXH_STEP_ALLREDUCE) {
        rc = MPI_Allreduce(in.data(), ref.data(), (int)count, dt, MPI_SUM, comm);
    } else if (type == MXH_STEP_REDUCE_SCATTER) {
        moff = (size_t)st.displs[me];
        mcnt = (size_t)st.counts[me];
        std::vector<T> mine(mcnt + 1);
        rc = MPI_Reduce_scatter(in.data(), mine.data(), st.counts.data(), dt, MPI_SUM, comm);
        std::copy(mine.begin(), mine.begin() + (long)mcnt, ref.begin() + (long)moff);
    } else {
        // allgather: part x comes from rank x; the others' parts are overwritten
        for (int x = 0; x < p; x++)
            for (int i = 0; i < st.counts[x]; i++)
                ref[(size_t)st.displs[x] + (size_t)i] = value<T>(x, (size_t)st.displs[x] + (size_t)i);
        for (int x = 0; x < p; x++)
            if (x != me)
                for (int i = 0; i < st.counts[x]; i++)
                    work[(size_t)st.displs[x] + (size_t)i] = (T)-1;
    }
    ck.rc(rc, "MPICH reference " + what);

    std::vector<T> src;
    if (from_src) {
        src = work;
        std::fill(work.begin(), work.end(), (T)-7);
    }
    mxh_p2p_env_t env = {comm, dt, sizeof(T), MPI_SUM, nullptr, MXH_XFER_HOST, nullptr};
    rc = mxh_p2p_run(&st.s, &env, (char *)work.data(), from_src ? (const char *)src.data() : NULL,
                     (char *)tmp.data(), 4242);
    ck.rc(rc, what);
    for (size_t i = 0; i < src.size(); i++)
        if (src[i] != value<T>(me, i)) {
            ck.fail(fmt("%s: source element %zu was written", what.c_str(), i));
            break;
        }
    if (dt == MPI_INT || type == MXH_STEP_ALLGATHER) {
        for (size_t i = moff; i < moff + mcnt; i++)
            if (work[i] != ref[i]) {
                ck.fail(fmt("%s: element %zu is %g, MPICH %g", what.c_str(), i, (double)work[i],
                            (double)ref[i]));
                break;
            }
    } else if (type == MXH_STEP_ALLREDUCE) {
        // any summation order is within rounding of MPICH's; every rank the same bits
        for (size_t i = 0; i < count; i++)
            if (std::abs((double)work[i] - (double)ref[i]) > 1e-9 * (1 + std::abs((double)ref[i]))) {
                ck.fail(fmt("%s: element %zu is %.17g, MPICH %.17g", what.c_str(), i,
                            (double)work[i], (double)ref[i]));
                break;
            }
        uint64_t h = 1469598103934665603ull;
        const unsigned char *b = (const unsigned char *)work.data();
        for (size_t i = 0; i < count * sizeof(T); i++)
            h = (h ^ b[i]) * 1099511628211ull;
        ck.hash(h, what);
    }
}

// The root steps: bcast and reduce (over an even split, from MXH_P2P_TREE_COUNT
// elements), scatter and gather (parts counts/displs), at every root.
void check_rooted(mxh_test::Checker &ck, MPI_Comm comm, mxh_step_type_t type, size_t count,
                  int root, bool uneven, bool rootless = false, bool net = false,
                  bool separate = false)
{
    int p, me;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    Step st = make_step(type == MXH_STEP_SCATTER || type == MXH_STEP_GATHER
                            ? MXH_STEP_ALLGATHER
                            : MXH_STEP_ALLREDUCE,
                        comm, count, uneven);
    st.s.type     = type;
    st.s.root     = root;
    st.s.rootless = rootless;  // a pipeline's step: the root's part empty (direct)
    st.s.net      = net;       // on the network a rootless reduce's root adds its own last
    std::string what = fmt("%s p=%d count=%zu root=%d %s%s%s%s algo=%s", mxh_step_type_name(type),
                           p, count, root, uneven ? "uneven" : "even", rootless ? " rootless" : "",
                           net ? " net" : "", separate ? " src" : "",
                           mxh_p2p_algo_name(mxh_p2p_choose(&st.s, sizeof(int))));
    // below MXH_P2P_TREE_COUNT only the stream executor runs bcast/reduce point to
    // point (every fragment's step, whatever its size)
    if (!mxh_p2p_usable(&st.s, sizeof(int)) && count >= MXH_P2P_TREE_COUNT) {
        ck.fail(what + ": not usable");
        return;
    }
    std::vector<int> work(count), ref(count, -3), tmp(mxh_p2p_tmp_count(&st.s, sizeof(int)) + 1);
    for (size_t i = 0; i < count; i++)
        work[i] = value<int>(me, i);
    std::vector<int> in(work);
    int rc = MPI_SUCCESS;
    switch (type) {
    case MXH_STEP_BCAST:
        ref = in;
        rc  = MPI_Bcast(ref.data(), (int)count, MPI_INT, root, comm);
        break;
    case MXH_STEP_REDUCE:
        rc = MPI_Reduce(in.data(), ref.data(), (int)count, MPI_INT, MPI_SUM, root, comm);
        break;
    case MXH_STEP_SCATTER: // my part from the root's region
        ref = in;
        rc  = MPI_Scatterv(in.data(), st.counts.data(), st.displs.data(), MPI_INT,
                           ref.data() + st.displs[me], st.counts[me], MPI_INT, root, comm);
        break;
    default: // gather: every part to the root
        ref = in;
        rc  = MPI_Gatherv(in.data() + st.displs[me], st.counts[me], MPI_INT, ref.data(),
                          st.counts.data(), st.displs.data(), MPI_INT, root, comm);
        break;
    }
    ck.rc(rc, "MPICH reference " + what);
    mxh_p2p_env_t env = {comm, MPI_INT, sizeof(int), MPI_SUM, nullptr, MXH_XFER_HOST, nullptr};
    if (separate) // the input in its own buffer, the region's holding garbage
        std::fill(work.begin(), work.end(), -7);
    rc = mxh_p2p_run(&st.s, &env, (char *)work.data(), separate ? (const char *)in.data() : NULL,
                     (char *)tmp.data(), 4343);
    ck.rc(rc, what);
    // the defined results: everywhere for bcast, my part for scatter, the root for
    // reduce and gather
    size_t lo = 0, hi = count;
    if (type == MXH_STEP_SCATTER) {
        lo = (size_t)st.displs[me];
        hi = lo + (size_t)st.counts[me];
    } else if ((type == MXH_STEP_REDUCE || type == MXH_STEP_GATHER) && me != root) {
        hi = 0;
    }
    for (size_t i = lo; i < hi; i++)
        if (work[i] != ref[i]) {
            ck.fail(fmt("%s: element %zu is %d, MPICH %d", what.c_str(), i, work[i], ref[i]));
            break;
        }
}

void check_all(mxh_test::Checker &ck, MPI_Comm comm)
{
    int p;
    MPI_Comm_size(comm, &p);
    for (size_t count : {(size_t)1, (size_t)3, (size_t)MXH_P2P_TREE_COUNT,
                         (size_t)MXH_P2P_TREE_COUNT + 13})
        for (int root = 0; root < p; root++)
            for (bool rootless : {false, true}) {
                check_rooted(ck, comm, MXH_STEP_BCAST, count, root, false, rootless);
                check_rooted(ck, comm, MXH_STEP_BCAST, count, root, false, rootless, true);
                check_rooted(ck, comm, MXH_STEP_REDUCE, count, root, false, rootless);
                for (bool separate : {false, true})
                    check_rooted(ck, comm, MXH_STEP_REDUCE, count, root, false, rootless, true,
                                 separate);
            }
    // flat on the network: up to MXH_P2P_FLAT_BYTES in the p - 1 copies,
    // and the first count above it (direct)
    if (p > 1)
        for (size_t count : {(size_t)MXH_P2P_FLAT_BYTES / sizeof(int) / (size_t)(p - 1),
                             (size_t)MXH_P2P_FLAT_BYTES / sizeof(int) / (size_t)(p - 1) + 1})
            for (int root = 0; root < p; root++)
                for (bool separate : {false, true}) {
                    check_rooted(ck, comm, MXH_STEP_BCAST, count, root, false, false, true);
                    check_rooted(ck, comm, MXH_STEP_REDUCE, count, root, false, false, true,
                                 separate);
                }
    for (size_t count : {(size_t)1, (size_t)7, (size_t)1021})
        for (int root = 0; root < p; root++)
            for (int uneven = 0; uneven < 2; uneven++) {
                check_rooted(ck, comm, MXH_STEP_SCATTER, count, root, uneven);
                check_rooted(ck, comm, MXH_STEP_GATHER, count, root, uneven);
            }

    for (size_t count : kCounts)
        for (int uneven = 0; uneven < 2; uneven++) {
            check<int>(ck, comm, MXH_STEP_REDUCE_SCATTER, count, uneven, MPI_INT);
            check<int>(ck, comm, MXH_STEP_REDUCE_SCATTER, count, uneven, MPI_INT, true);
            check<int>(ck, comm, MXH_STEP_ALLGATHER, count, uneven, MPI_INT);
            if (!uneven) {
                check<int>(ck, comm, MXH_STEP_ALLREDUCE, count, false, MPI_INT);
                check<int>(ck, comm, MXH_STEP_ALLREDUCE, count, false, MPI_INT, true);
                check<double>(ck, comm, MXH_STEP_ALLREDUCE, count, false, MPI_DOUBLE);
                check<double>(ck, comm, MXH_STEP_ALLREDUCE, count, false, MPI_DOUBLE, true);
            }
        }
}

class P2p : public ::testing::Test {};

TEST_F(P2p, AllAlgorithmsMatchMpich)
{
    const int wsize = mxh_test::world_size(), wrank = mxh_test::world_rank();
    if (wsize < 2)
        GTEST_SKIP() << "needs at least 2 ranks";
    for (int p = 2; p <= wsize; p++) {
        MPI_Comm comm;
        MPI_Comm_split(MPI_COMM_WORLD, wrank < p ? 0 : MPI_UNDEFINED, wrank, &comm);
        if (comm == MPI_COMM_NULL)
            continue;
        mxh_test::Checker ck(comm, fmt("first %d ranks", p));
        for (int algo = -1; algo <= MXH_P2P_KARY; algo++) {
            mxh_p2p_force(algo); // -1: the normal choice
            check_all(ck, comm);
        }
        /* kary in several exchanges: factors of at most 2 (p = 4, 8) and 3 (6 = 3 x 2) */
        mxh_p2p_force(MXH_P2P_KARY);
        for (int most : {2, 3}) {
            mxh_p2p_kary_radix(most);
            check_all(ck, comm);
        }
        mxh_p2p_kary_radix(0);
        mxh_p2p_force(-1);
        ck.finish();
        MPI_Comm_free(&comm);
    }
}

// Paced (exec.c), a step is held after an exchange until the link's turn comes; kary's
// exchanges of one phase need each other's results and were booked together
// (mxh_p2p_pace_bytes: the phase's (p - 1) / p of the region), so it is held only where a
// phase starts: the allreduce once, before its allgather phase; direct the same; the
// results stay MPICH's.
TEST_F(P2p, KaryHeldOnlyWherePhasesStart)
{
    const int wsize = mxh_test::world_size(), wrank = mxh_test::world_rank();
    if (wsize < 4)
        GTEST_SKIP() << "needs 4 ranks (kary of 2 x 2)";
    MPI_Comm comm;
    MPI_Comm_split(MPI_COMM_WORLD, wrank < 4 ? 0 : MPI_UNDEFINED, wrank, &comm);
    if (comm == MPI_COMM_NULL)
        return;
    mxh_test::Checker ck(comm, "held kary");
    mxh_p2p_kary_radix(2);
    for (int algo : {(int)MXH_P2P_KARY, (int)MXH_P2P_DIRECT})
        for (mxh_step_type_t type : {MXH_STEP_ALLREDUCE, MXH_STEP_REDUCE_SCATTER}) {
            mxh_p2p_force(algo);
            const size_t count = 4 * 1000;
            Step st = make_step(type, comm, count, false);
            std::vector<int> work(count), ref(count), tmp(mxh_p2p_tmp_count(&st.s, sizeof(int)) + 1);
            for (size_t i = 0; i < count; i++)
                work[i] = value<int>(st.s.me, i);
            MPI_Allreduce(work.data(), ref.data(), (int)count, MPI_INT, MPI_SUM, comm);
            mxh_p2p_env_t env = {comm, MPI_INT, sizeof(int), MPI_SUM, nullptr, MXH_XFER_HOST, nullptr};
            mxh_p2p_op_t op;
            std::string what = fmt("%s %s", mxh_p2p_algo_name((mxh_p2p_algo_t)algo),
                                   type == MXH_STEP_ALLREDUCE ? "allreduce" : "reduce_scatter");
            ck.rc(mxh_p2p_start(&op, &st.s, &env, (char *)work.data(), NULL, (char *)tmp.data(), 77),
                  what);
            op.hold = 1;
            EXPECT_EQ(algo, (int)op.algo) << what;
            size_t booked = mxh_p2p_pace_bytes(&op);
            if (algo == MXH_P2P_KARY)
                EXPECT_EQ(count * sizeof(int) / 4 * 3, booked) << what;
            else
                EXPECT_EQ(op.xbytes, booked) << what;
            std::vector<int> held_at;
            while (op.active) {
                int moved = 0;
                if (mxh_p2p_advance(&op, &moved) != MPI_SUCCESS)
                    break;
                if (op.held) {
                    held_at.push_back(op.k);
                    mxh_p2p_post_held(&op);
                }
            }
            std::vector<int> want;
            if (type == MXH_STEP_ALLREDUCE)
                want.push_back(op.nrs); // where the allgather phase starts
            if (algo == MXH_P2P_DIRECT && type == MXH_STEP_ALLREDUCE)
                want = {1};
            EXPECT_EQ(want, held_at) << what;
            // reduce_scatter: my part; allreduce: everything
            size_t lo = 0, hi = count;
            if (type == MXH_STEP_REDUCE_SCATTER) {
                lo = (size_t)st.displs[st.s.me];
                hi = lo + (size_t)st.counts[st.s.me];
            }
            for (size_t i = lo; i < hi; i++)
                if (work[i] != ref[i]) {
                    ck.fail(fmt("%s: element %zu is %d, MPICH %d", what.c_str(), i, work[i], ref[i]));
                    break;
                }
        }
    mxh_p2p_force(-1);
    mxh_p2p_kary_radix(0);
    ck.finish();
    MPI_Comm_free(&comm);
}

// The choice by group size and message size.
TEST_F(P2p, ChoiceCoversEveryAlgorithm)
{
    Step big = make_step(MXH_STEP_ALLREDUCE, MPI_COMM_SELF, 1 << 20, false);
    big.s.gsize = 4; /* a node (up to MXH_P2P_DIRECT_ANY ranks): direct at every size */
    EXPECT_EQ(mxh_p2p_choose(&big.s, 4), MXH_P2P_DIRECT);
    big.s.gsize = 8;
    EXPECT_EQ(mxh_p2p_choose(&big.s, 4), MXH_P2P_DIRECT);
    big.s.count = 100000; /* 400 KB: above the radix limit */
    EXPECT_EQ(mxh_p2p_choose(&big.s, 4), MXH_P2P_DIRECT);
    big.s.count = 1 << 20;
    big.s.gsize = 6; /* not a power of two: direct */
    EXPECT_EQ(mxh_p2p_choose(&big.s, 4), MXH_P2P_DIRECT);
    big.s.gsize = 16; /* beyond a node, power of two: rhd */
    EXPECT_EQ(mxh_p2p_choose(&big.s, 4), MXH_P2P_RHD);
    big.s.gsize = 12;
    EXPECT_EQ(mxh_p2p_choose(&big.s, 4), MXH_P2P_RING);
    big.s.count = 10;
    EXPECT_EQ(mxh_p2p_choose(&big.s, 4), MXH_P2P_RADIX_AR);
    big.s.gsize = 67; /* prime above the radix limit, above the direct limit */
    EXPECT_EQ(mxh_p2p_choose(&big.s, 4), MXH_P2P_RING);
    big.s.gsize = 37; /* prime above the radix limit (32), direct */
    EXPECT_EQ(mxh_p2p_choose(&big.s, 4), MXH_P2P_DIRECT);
    big.s.type  = MXH_STEP_REDUCE_SCATTER;
    big.s.gsize = 8;
    EXPECT_EQ(mxh_p2p_choose(&big.s, 4), MXH_P2P_DIRECT);
}

// Small bcast and reduce steps on the network: flat (one exchange with the root)
// up to MXH_P2P_FLAT_P ranks and MXH_P2P_FLAT_BYTES in the root's p - 1
// copies, on any level; not the rootless steps of pipelines. Above that direct on
// network groups of 4 or more at every size (not along a torus ring), where MPI's trees
// were used below MXH_P2P_TREE_COUNT (and still are inside the node and on rings).
TEST_F(P2p, SmallNetworkBcastAndReduceGoFlat)
{
    for (mxh_step_type_t type : {MXH_STEP_BCAST, MXH_STEP_REDUCE}) {
        Step st = make_step(MXH_STEP_ALLREDUCE, MPI_COMM_SELF, 1, false);
        st.s.type  = type;
        st.s.gsize = 16;
        st.s.net   = 1;
        EXPECT_EQ(mxh_p2p_choose(&st.s, 4), MXH_P2P_FLAT);
        EXPECT_TRUE(mxh_p2p_usable(&st.s, sizeof(int)));
        st.s.count = MXH_P2P_FLAT_BYTES / 4 / 15;
        EXPECT_EQ(mxh_p2p_choose(&st.s, 4), MXH_P2P_FLAT);
        st.s.count++; /* over the copies' limit: direct (two latencies) */
        EXPECT_EQ(mxh_p2p_choose(&st.s, 4), MXH_P2P_DIRECT);
        EXPECT_TRUE(mxh_p2p_usable(&st.s, sizeof(int)));
        st.s.gsize = 3; /* a tree of 3 has two latencies too: MPI's, above flat */
        EXPECT_TRUE(mxh_p2p_usable(&st.s, sizeof(int)));
        st.s.count = MXH_P2P_TREE_COUNT - 1;
        EXPECT_FALSE(mxh_p2p_usable(&st.s, sizeof(int)));
        st.s.count = 1;
        st.s.gsize = MXH_P2P_FLAT_P + 1;
        EXPECT_NE(mxh_p2p_choose(&st.s, 4), MXH_P2P_FLAT);
        st.s.gsize = MXH_P2P_FLAT_P;
        EXPECT_EQ(mxh_p2p_choose(&st.s, 4), MXH_P2P_FLAT);
        st.s.rootless = 1;
        EXPECT_NE(mxh_p2p_choose(&st.s, 4), MXH_P2P_FLAT);
        st.s.rootless = 0;
        st.s.ring     = 1; /* along a torus ring: flat, not direct above it */
        EXPECT_EQ(mxh_p2p_choose(&st.s, 4), MXH_P2P_FLAT);
        st.s.count = MXH_P2P_TREE_COUNT - 1; /* over flat: MPI's tree on a ring */
        EXPECT_FALSE(mxh_p2p_usable(&st.s, sizeof(int)));
        st.s.count = 1;
        st.s.ring  = 0;
        st.s.net  = 0; /* inside a node: flat too (a chain's node step) */
        EXPECT_EQ(mxh_p2p_choose(&st.s, 4), MXH_P2P_FLAT);
        st.s.count = MXH_P2P_TREE_COUNT - 1; /* above: MPI's tree, as before */
        EXPECT_FALSE(mxh_p2p_usable(&st.s, sizeof(int)));
        st.s.count = 1;
        st.s.net   = 1;
        EXPECT_EQ(std::string(mxh_p2p_algo_name(mxh_p2p_choose(&st.s, 4))), "flat");
    }
}

// Network levels (a rail, the spine): direct at every size up to
// MXH_P2P_DIRECT_P ranks, where a level inside a node would use rhd or ring;
// small allreduces keep the radix exchanges.
TEST_F(P2p, NetworkLevelsGoDirect)
{
    const mxh_step_type_t types[] = {MXH_STEP_ALLREDUCE, MXH_STEP_REDUCE_SCATTER,
                                     MXH_STEP_ALLGATHER, MXH_STEP_BCAST, MXH_STEP_REDUCE};
    for (mxh_step_type_t t : types) {
        /* made as an allreduce: no parts, which the choice reads as an even split */
        Step st    = make_step(MXH_STEP_ALLREDUCE, MPI_COMM_SELF, 1 << 22, false); /* 16 MiB */
        st.s.type  = t;
        st.s.gsize = 32;
        st.s.net   = 0;
        EXPECT_EQ(mxh_p2p_choose(&st.s, 4), MXH_P2P_RHD) << mxh_step_type_name(t);
        st.s.net   = 1;
        st.s.gsize = MXH_P2P_KARY_P;
        EXPECT_EQ(mxh_p2p_choose(&st.s, 4), MXH_P2P_DIRECT) << mxh_step_type_name(t);
        /* longer: kary (8 x 4) for reduce-scatter and allgather where the schedule lets
         * it (step.kary, the cost model's pick), bcast and reduce direct */
        st.s.gsize = 32;
        EXPECT_EQ(mxh_p2p_choose(&st.s, 4), MXH_P2P_DIRECT) << mxh_step_type_name(t);
        EXPECT_EQ(0, mxh_p2p_kary_exchanges(&st.s, 4)) << mxh_step_type_name(t);
        st.s.kary = 1;
        bool kary = t != MXH_STEP_BCAST && t != MXH_STEP_REDUCE;
        EXPECT_EQ(mxh_p2p_choose(&st.s, 4), kary ? MXH_P2P_KARY : MXH_P2P_DIRECT)
            << mxh_step_type_name(t);
        // its exchanges per phase (exec.c: one more fragment on its stage per further one)
        EXPECT_EQ(kary ? 2 : 0, mxh_p2p_kary_exchanges(&st.s, 4)) << mxh_step_type_name(t);
        st.s.gsize = 34; /* 2 x 17: no factors up to MXH_P2P_KARY_RADIX, direct */
        EXPECT_EQ(mxh_p2p_choose(&st.s, 4), MXH_P2P_DIRECT) << mxh_step_type_name(t);
        EXPECT_EQ(0, mxh_p2p_kary_exchanges(&st.s, 4)) << mxh_step_type_name(t);
        st.s.gsize = MXH_P2P_DIRECT_P + 2; /* 66 = 6 x 11: beyond direct, ring */
        EXPECT_EQ(mxh_p2p_choose(&st.s, 4), MXH_P2P_RING) << mxh_step_type_name(t);
    }
    Step small = make_step(MXH_STEP_ALLREDUCE, MPI_COMM_SELF, 10, false);
    small.s.gsize = 32;
    small.s.net   = 1;
    EXPECT_EQ(mxh_p2p_choose(&small.s, 4), MXH_P2P_RADIX_AR);
    /* a schedule whose NIC binds (step.rsag, the cost model's pick): reduce-scatter +
     * allgather, direct; inside a node radix stays */
    small.s.rsag = 1;
    EXPECT_EQ(mxh_p2p_choose(&small.s, 4), MXH_P2P_DIRECT);
    small.s.net = 0;
    small.s.gsize = 4;
    EXPECT_EQ(mxh_p2p_choose(&small.s, 4), MXH_P2P_RADIX_AR);
}

// The rank records' exchange in slices (hier.c: one MPI_Allgather while the records
// total at most the slice, else several of bytes [off, off + len) of every record)
// gives what one MPI_Allgather gives: every slice size from one byte per rank to the
// whole, records of 1 to 600 bytes, on the world and on a split of it.
TEST(Records, SlicedAllgatherMatchesMpich)
{
    const int wrank = mxh_test::world_rank(), wsize = mxh_test::world_size();
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wsize - wrank, &half);
    for (MPI_Comm comm : {MPI_COMM_WORLD, half}) {
        int me, p;
        MPI_Comm_rank(comm, &me);
        MPI_Comm_size(comm, &p);
        for (size_t bytes : {size_t(1), size_t(7), size_t(64), size_t(592), size_t(600)}) {
            std::vector<unsigned char> mine(bytes);
            for (size_t i = 0; i < bytes; i++)
                mine[i] = (unsigned char)(wrank * 131 + i * 7 + 1);
            std::vector<unsigned char> want(bytes * p), got(bytes * p, 0xAB);
            MPI_Allgather(mine.data(), (int)bytes, MPI_BYTE, want.data(), (int)bytes, MPI_BYTE,
                          comm);
            for (size_t slice : {size_t(1), size_t(p), size_t(3 * p + 1), size_t(100), bytes * p - 1,
                                 bytes * p, size_t(MXH_RECORDS_SLICE_BYTES)}) {
                std::fill(got.begin(), got.end(), 0xAB);
                ASSERT_EQ(MXH_OK, mxh_allgather_sliced(mine.data(), got.data(), bytes, slice, comm));
                EXPECT_EQ(want, got) << "bytes " << bytes << " slice " << slice << " ranks " << p;
            }
            /* a rank that drops them still takes part: the others complete */
            ASSERT_EQ(MXH_OK, mxh_allgather_sliced(mine.data(), me == 0 ? nullptr : got.data(),
                                                   bytes, 2 * p, comm));
            if (me != 0) {
                EXPECT_EQ(want, got) << "bytes " << bytes << " ranks " << p;
            }
        }
    }
    MPI_Comm_free(&half);
}

} // namespace
