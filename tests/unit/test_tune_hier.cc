// Unit tests of the hierarchy's model-trust rules (src/decide/tune_hier.h; no MPI): the
// measurement's condition and every branch of "trust the model?" on synthetic facts.
#include <gtest/gtest.h>

extern "C" {
#include "decide/cost.h"
#include "decide/sched.h"
#include "decide/tune_hier.h"
#include "util/config.h"
}

namespace {

// MPIX_HIER_COST_MODEL=auto, measured automatically, the ramp auto (the defaults)
mxh_config_t auto_config()
{
    mxh_config_t cfg;
    mxh_config_init_defaults(&cfg);
    EXPECT_EQ(2, cfg.cost_model);
    EXPECT_EQ(2, cfg.cost_measure);
    cfg.pipeline_ramp = MXH_SCHED_RAMP_AUTO;
    return cfg;
}

// a measurement that fitted, flat or @plausible, @uniform, a torus or not
mxh_tune_facts_t fitted(int flat, int plausible, int uniform = 1, int torus = 0)
{
    return mxh_tune_facts_t{1, 1, flat, plausible, uniform, torus, 0};
}

TEST(TuneHier, MeasureWanted)
{
    mxh_config_t cfg = auto_config();
    EXPECT_EQ(1, mxh_tune_measure_wanted(&cfg, 2));
    EXPECT_EQ(0, mxh_tune_measure_wanted(&cfg, 0)); // nothing to measure
    cfg.cost_given = 1;                             // auto keeps the figures set
    EXPECT_EQ(0, mxh_tune_measure_wanted(&cfg, 2));
    cfg.cost_measure = 1; // asked for: measured all the same
    EXPECT_EQ(1, mxh_tune_measure_wanted(&cfg, 2));
    cfg.cost_model    = 0; // nothing reads the figures
    cfg.pipeline_pace = 0;
    EXPECT_EQ(0, mxh_tune_measure_wanted(&cfg, 2));
    cfg.pipeline_pace = 1;
    EXPECT_EQ(1, mxh_tune_measure_wanted(&cfg, 2));
    cfg = auto_config();
    cfg.cost_measure = 0;
    EXPECT_EQ(0, mxh_tune_measure_wanted(&cfg, 2));
}

TEST(TuneHier, Unmeasured)
{
    mxh_tune_facts_t none = {0, 0, 0, 0, 1, 0, 0};
    mxh_config_t cfg      = auto_config();
    mxh_tune_trust_t t    = mxh_tune_trust(&cfg, &none);
    EXPECT_EQ(0, t.model); // auto without a measurement: the thresholds
    EXPECT_EQ(0, t.use_fit);
    EXPECT_EQ(0, t.sel_fit);
    EXPECT_EQ(0.0, t.margin);
    EXPECT_EQ(0, t.far_members);
    EXPECT_EQ(2, t.ramp); // not flat: 2 halvings
    cfg.cost_model = 1;   // yes, with the default (flat) factors: the model's ramp
    t              = mxh_tune_trust(&cfg, &none);
    EXPECT_EQ(1, t.model);
    EXPECT_EQ(MXH_SCHED_RAMP_PICK, t.ramp);
    none.torus = 1; // not on a torus
    EXPECT_EQ(2, mxh_tune_trust(&cfg, &none).ramp);
    cfg.pipeline_ramp = 3; // set: kept
    EXPECT_EQ(3, mxh_tune_trust(&cfg, &none).ramp);
}

TEST(TuneHier, FlatTrusted)
{
    mxh_config_t cfg   = auto_config();
    mxh_tune_facts_t f = fitted(1, 1);
    mxh_tune_trust_t t = mxh_tune_trust(&cfg, &f);
    EXPECT_EQ(1, t.model);
    EXPECT_EQ(1, t.use_fit);
    EXPECT_EQ(1, t.sel_fit);
    EXPECT_EQ(0.0, t.margin);
    EXPECT_EQ(MXH_TUNE_USED, t.use);
    EXPECT_EQ(MXH_SCHED_RAMP_PICK, t.ramp);
}

TEST(TuneHier, FlatWithMargin)
{
    mxh_config_t cfg   = auto_config();
    mxh_tune_facts_t f = fitted(1, 1, 1, 1); // a torus split
    mxh_tune_trust_t t = mxh_tune_trust(&cfg, &f);
    EXPECT_EQ(1, t.model);
    EXPECT_EQ(1, t.use_fit);
    EXPECT_EQ(MXH_COST_TRUST_MARGIN, t.margin);
    EXPECT_EQ(MXH_TUNE_MARGIN_TORUS, t.use);
    EXPECT_EQ(0, t.far_members);
    EXPECT_EQ(2, t.ramp);
    f = fitted(1, 1, 0, 0); // a level's members not equally far
    t = mxh_tune_trust(&cfg, &f);
    EXPECT_EQ(MXH_COST_TRUST_MARGIN, t.margin);
    EXPECT_EQ(MXH_TUNE_MARGIN_FAR, t.use);
    EXPECT_EQ(1, t.far_members);
    EXPECT_EQ(MXH_SCHED_RAMP_PICK, t.ramp);
    cfg.cost_model = 1; // yes: the model selects without a margin
    t              = mxh_tune_trust(&cfg, &f);
    EXPECT_EQ(0.0, t.margin);
    EXPECT_EQ(MXH_TUNE_USED, t.use);
    EXPECT_EQ(1, t.far_members);
}

TEST(TuneHier, NotFlat)
{
    mxh_config_t cfg   = auto_config();
    mxh_tune_facts_t f = fitted(0, 1); // plausible: the model with a margin only
    mxh_tune_trust_t t = mxh_tune_trust(&cfg, &f);
    EXPECT_EQ(1, t.model);
    EXPECT_EQ(0, t.use_fit); // pacing and the thresholds keep the configured figures
    EXPECT_EQ(1, t.sel_fit);
    EXPECT_EQ(MXH_COST_TRUST_MARGIN, t.margin);
    EXPECT_EQ(MXH_TUNE_MARGIN, t.use);
    EXPECT_EQ(2, t.ramp);
    cfg.cost_measure = 1; // asked for: the measured figures become the parameters
    t                = mxh_tune_trust(&cfg, &f);
    EXPECT_EQ(1, t.use_fit);
    EXPECT_EQ(MXH_COST_TRUST_MARGIN, t.margin);
    EXPECT_EQ(MXH_TUNE_USED, t.use);
    cfg = auto_config();
    f   = fitted(0, 0); // not plausible: not used
    t   = mxh_tune_trust(&cfg, &f);
    EXPECT_EQ(0, t.model);
    EXPECT_EQ(0, t.use_fit);
    EXPECT_EQ(0, t.sel_fit);
    EXPECT_EQ(0.0, t.margin);
    EXPECT_EQ(MXH_TUNE_UNUSED, t.use);
}

TEST(TuneHier, FragmentSizeSet)
{
    mxh_config_t cfg   = auto_config();
    cfg.frag_given     = 1; // auto keeps the user's fragments
    mxh_tune_facts_t f = fitted(1, 1);
    mxh_tune_trust_t t = mxh_tune_trust(&cfg, &f);
    EXPECT_EQ(0, t.model);
    EXPECT_EQ(0, t.use_fit);
    EXPECT_EQ(0.0, t.margin);
    EXPECT_EQ(MXH_TUNE_UNUSED_FRAG, t.use);
    EXPECT_EQ(MXH_SCHED_RAMP_PICK, t.ramp); // flat: the ramp still follows the network
}

TEST(TuneHier, NotFitted)
{
    mxh_config_t cfg   = auto_config();
    mxh_tune_facts_t f = {1, 0, 0, 0, 0, 0, 0}; // measured, nothing fitted, not uniform
    mxh_tune_trust_t t = mxh_tune_trust(&cfg, &f);
    EXPECT_EQ(0, t.model);
    EXPECT_EQ(0, t.use_fit);
    EXPECT_EQ(1, t.far_members);
    EXPECT_EQ(2, t.ramp);
    char line[64] = "x";
    mxh_tune_describe(&t, &f, nullptr, &cfg, line, sizeof(line));
    EXPECT_STREQ("", line);
    cfg.cost_model = 1; // yes: the figures are used all the same
    t              = mxh_tune_trust(&cfg, &f);
    EXPECT_EQ(1, t.model);
    EXPECT_EQ(1, t.use_fit);
    EXPECT_EQ(2, t.ramp); // measured not flat
}

// A measured network caps the fragments at the power of two nearest 5 ms of it (in log),
// at least 64 KiB; fast fabrics are left at the configured 8 MiB; a set size is kept.
TEST(TuneHier, FragmentCapOfASlowNetwork)
{
    EXPECT_EQ(0u, mxh_tune_frag_cap(0));
    EXPECT_EQ(128u << 10, mxh_tune_frag_cap(29.2e6));  // 200 Mbit/s: 146 KB -> 128 KiB
    EXPECT_EQ(64u << 10, mxh_tune_frag_cap(14.6e6));   // 100 Mbit/s: 73 KB -> 64 KiB
    EXPECT_EQ(512u << 10, mxh_tune_frag_cap(118e6));   // 1 Gbit/s: 590 KB -> 512 KiB
    EXPECT_EQ(64u << 10, mxh_tune_frag_cap(1e6));      // the floor
    EXPECT_EQ(256u << 20, mxh_tune_frag_cap(48e9));    // NDR: 240 MB, far above 8 MiB

    mxh_config_t cfg   = auto_config();
    mxh_tune_facts_t f = fitted(0, 0);
    f.net_bw           = 29.2e6;
    mxh_tune_trust_t t = mxh_tune_trust(&cfg, &f);
    EXPECT_EQ(MXH_TUNE_UNUSED, t.use); // the figures unused, the cap all the same
    EXPECT_EQ(128u << 10, t.frag_cap);
    cfg.frag_given = 1;
    EXPECT_EQ(0u, mxh_tune_trust(&cfg, &f).frag_cap);
    f.net_bw = 0; // no network level measured
    cfg.frag_given = 0;
    EXPECT_EQ(0u, mxh_tune_trust(&cfg, &f).frag_cap);
}

} // namespace
