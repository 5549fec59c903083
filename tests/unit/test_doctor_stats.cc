// mpix_doctor's attribution (src/diag/doctor_stats.h) on synthetic pair matrices: one
// degraded tx, one degraded rx, healthy noise, few hosts.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include <mpi.h>  // before the C headers that include it (MPICH's C++ bindings)

#include <cstdio>
#include <string>

extern "C" {
#include "coll/rail_exclude.h"
#include "diag/doctor_stats.h"
#include "decide/levels.h"
#include "topo/record.h"
}

namespace {

struct Result {
    std::vector<mxh_dr_port_t> ports;
    mxh_dr_level_stats_t st;
    int nout;
};

// All ordered pairs of different hosts among @n ranks (one rank per host: one rail), bw
// = base x noise, x factor when the transfer crosses the degraded (rank, dir).
Result run(int n, double noise, int bad_rank, int bad_dir, double factor, unsigned seed,
           double k = 4.0, double floor_ = 0.6)
{
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(1.0 - noise, 1.0 + noise);
    std::vector<mxh_dr_sample_t> s;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            if (a == b)
                continue;
            double bw = 25e6 * u(rng);
            if ((bad_dir == MXH_DR_TX && a == bad_rank) || (bad_dir == MXH_DR_RX && b == bad_rank))
                bw *= factor;
            s.push_back({a, b, bw});
        }
    Result r;
    r.ports.resize(2 * n);
    mxh_dr_params_t p = {k, floor_};
    r.nout = mxh_dr_attribute(s.data(), (int)s.size(), n, &p, r.ports.data(), &r.st);
    return r;
}

}  // namespace

TEST(DoctorStats, Median)
{
    double a[] = {3, 1, 2}, b[] = {4, 1, 3, 2};
    EXPECT_EQ(mxh_dr_median(a, 3), 2.0);
    EXPECT_EQ(mxh_dr_median(b, 4), 2.5);
    EXPECT_EQ(mxh_dr_median(nullptr, 0), 0.0);
}

TEST(DoctorStats, DegradedTxNamedExactly)
{
    for (int n : {3, 4, 8, 16})
        for (unsigned seed = 0; seed < 20; seed++) {
            int bad = (int)(seed % (unsigned)n);
            Result r = run(n, 0.05, bad, MXH_DR_TX, 0.25, seed);
            ASSERT_EQ(r.nout, 1) << "n=" << n << " seed=" << seed;
            EXPECT_TRUE(r.ports[2 * bad + MXH_DR_TX].outlier);
            EXPECT_NEAR(r.ports[2 * bad + MXH_DR_TX].ratio, 0.25, 0.05);
        }
}

TEST(DoctorStats, DegradedRxNamedExactly)
{
    for (int n : {3, 4, 8, 16})
        for (unsigned seed = 0; seed < 20; seed++) {
            int bad = (int)((seed * 7) % (unsigned)n);
            Result r = run(n, 0.05, bad, MXH_DR_RX, 0.25, seed + 100);
            ASSERT_EQ(r.nout, 1) << "n=" << n << " seed=" << seed;
            EXPECT_TRUE(r.ports[2 * bad + MXH_DR_RX].outlier);
        }
}

TEST(DoctorStats, HealthyNoiseNoAlarm)
{
    // +-20 % uniform noise and +-0 (MAD 0: the relative floor must hold the line)
    for (int n : {2, 3, 8, 16})
        for (unsigned seed = 0; seed < 50; seed++) {
            EXPECT_EQ(run(n, 0.20, -1, MXH_DR_TX, 1.0, seed).nout, 0) << n << " " << seed;
            EXPECT_EQ(run(n, 0.0, -1, MXH_DR_TX, 1.0, seed).nout, 0);
        }
}

TEST(DoctorStats, MildSlowdownAboveFloorNotFlagged)
{
    // 0.8 of the others is within the floor (0.6): not an outlier however small the MAD
    Result r = run(8, 0.01, 3, MXH_DR_TX, 0.8, 1);
    EXPECT_EQ(r.nout, 0);
}

TEST(DoctorStats, TwoHostsOneSampleEachFlagsOneEnd)
{
    // 2 hosts: the slow transfer crossed h0.tx and h1.rx alike; exactly one is named (tx
    // first) and the other is explained away, not flagged too
    std::vector<mxh_dr_sample_t> s = {{0, 1, 6e6}, {1, 0, 25e6}, {2, 3, 25e6}, {3, 2, 24e6}};
    std::vector<mxh_dr_port_t> ports(8);
    mxh_dr_level_stats_t st;
    mxh_dr_params_t p = {4.0, 0.6};
    EXPECT_EQ(mxh_dr_attribute(s.data(), (int)s.size(), 4, &p, ports.data(), &st), 1);
    EXPECT_TRUE(ports[0 * 2 + MXH_DR_TX].outlier);
    EXPECT_FALSE(ports[1 * 2 + MXH_DR_RX].outlier);
}

TEST(DoctorStats, UnmeasuredSamplesIgnored)
{
    std::vector<mxh_dr_sample_t> s = {{0, 1, -1}, {1, 0, 25e6}, {0, 7, 25e6}};
    std::vector<mxh_dr_port_t> ports(4);
    mxh_dr_level_stats_t st;
    mxh_dr_params_t p = {4.0, 0.6};
    EXPECT_EQ(mxh_dr_attribute(s.data(), (int)s.size(), 2, &p, ports.data(), &st), 0);
    EXPECT_EQ(ports[0].nsamples, 0);
    EXPECT_EQ(ports[1].nsamples, 1);
}

// ---- MPIX_HIER_EXCLUDE_RAILS: the decision (coll/rail_exclude.h), pure ---------------------

namespace {

struct XLayout {
    std::vector<mxh_record_t> recs;
    mxh_layout_t *L = nullptr;
    // @nodes nodes x @g ranks, rank order node-major; leaf per node when @leaves
    XLayout(int nodes, int g, int leaves = 0)
    {
        for (int v = 0; v < nodes; v++)
            for (int k = 0; k < g; k++) {
                mxh_record_t r;
                mxh_record_init(&r);
                snprintf(r.node, sizeof(r.node), "n%d", v);
                if (leaves)
                    snprintf(r.leaf, sizeof(r.leaf), "l%d", v % leaves);
                recs.push_back(r);
            }
        EXPECT_EQ(MXH_OK, mxh_layout_create(recs.data(), (int)recs.size(), 0xF, &L));
    }
    ~XLayout() { mxh_layout_destroy(L); }
};

}  // namespace

TEST(RailExclude, Plan)
{
    XLayout a(4, 2);
    mxh_xrail_t x;
    char why[128];
    ASSERT_EQ(MXH_OK, mxh_xrail_plan(a.L, 0, &x, why, sizeof(why)));
    EXPECT_FALSE(x.active);  // nothing excluded
    ASSERT_EQ(MXH_OK, mxh_xrail_plan(a.L, 1u << 1, &x, why, sizeof(why)));
    EXPECT_TRUE(x.active);
    EXPECT_EQ(x.nhealthy, 1);
    EXPECT_EQ(x.piece[0], 0);
    EXPECT_EQ(x.piece[1], -1);
    EXPECT_EQ(x.spine_level, -1);
    mxh_xrail_free(&x);
    ASSERT_EQ(MXH_OK, mxh_xrail_plan(a.L, 3, &x, why, sizeof(why)));  // every rail
    EXPECT_FALSE(x.active);
    EXPECT_TRUE(x.ignored_all);
    EXPECT_NE(std::string(why).find("every rail"), std::string::npos);
    mxh_xrail_free(&x);
    ASSERT_EQ(MXH_OK, mxh_xrail_plan(a.L, 1u << 5, &x, why, sizeof(why)));  // rail nobody uses
    EXPECT_FALSE(x.active);
    mxh_xrail_free(&x);

    XLayout b(4, 4, 2);  // with a spine: 4 rails, exclude 0 and 2
    ASSERT_EQ(MXH_OK, mxh_xrail_plan(b.L, 5, &x, why, sizeof(why)));
    EXPECT_TRUE(x.active);
    EXPECT_EQ(x.nhealthy, 2);
    EXPECT_EQ(x.piece[0], -1);
    EXPECT_EQ(x.piece[1], 0);
    EXPECT_EQ(x.piece[2], -1);
    EXPECT_EQ(x.piece[3], 1);
    EXPECT_EQ(x.spine_level, 2);
    mxh_xrail_free(&x);

    XLayout c(1, 4);  // one node: one level, no network
    ASSERT_EQ(MXH_OK, mxh_xrail_plan(c.L, 1, &x, why, sizeof(why)));
    EXPECT_FALSE(x.active);
    mxh_xrail_free(&x);
}
