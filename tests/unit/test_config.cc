// The configuration table (src/util/config.c): every row round-trips through its parser
// and printer, the defaults are the rows' default strings, the plan hash covers exactly
// the plan rows, and MPIX_HIER_TUNE / MPIX_HIER_NET set what the specific variables set.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "unit_util.hh"
#include "util/config.h"
#include "util/log.h"

namespace {

// A valid value other than the default, for every row (a new row fails AllRowsHaveValues).
const std::map<std::string, std::string> &other_values()
{
    static const std::map<std::string, std::string> m = {
        {"MPIX_HIER_ENABLE", "no"},
        {"MPIX_HIER_LOG_LEVEL", "debug"},
        {"MPIX_HIER_HOSTNAME", "node-7"},
        {"MPIX_HIER_TOPO_FILE", "/etc/topology.conf"},
        {"MPIX_HIER_CLUSTER_FILE", "/tmp/cluster.txt"},
        {"MPIX_HIER_HWLOC_XML", "/tmp/x.xml"},
        {"MPIX_HIER_NCCL_TOPO_FILE", "/tmp/nccl.xml"},
        {"MPIX_HIER_GPU_BUSID", "0000:07:00.0"},
        {"MPIX_HIER_GPU_MPS", "yes"},
        {"MPIX_HIER_CHECK", "yes"},
        {"MPIX_HIER_DISCOVER", "no"},
        {"MPIX_HIER_MIN_BYTES", "4k"},
        {"MPIX_HIER_LEVELS", "node,rail"},
        {"MPIX_HIER_PLAN_CACHE_SIZE", "32"},
        {"MPIX_HIER_TUNE", "allreduce:pipeline;frag=4m"},
        {"MPIX_HIER_ALGO", "allreduce:pipeline,bcast:mpi"},
        {"MPIX_HIER_FRAG_SIZE", "4m"},
        {"MPIX_HIER_PIPELINE_DEPTH", "4"},
        {"MPIX_HIER_PIPELINE_RAMP", "linear"},
        {"MPIX_HIER_PIPELINE_PACE", "no"},
        {"MPIX_HIER_KARY", "yes"},
        {"MPIX_HIER_RSAG", "no"},
        {"MPIX_HIER_SPREAD", "no"},
        {"MPIX_HIER_SHM", "no"},
        {"MPIX_HIER_SHM_CHUNK", "64k"},
        {"MPIX_HIER_IPC", "no"},
        {"MPIX_HIER_IPC_MIN", "1m"},
        {"MPIX_HIER_EXCLUDE_RAILS", "1,3"},
        {"MPIX_HIER_METRICS", "no"},
        {"MPIX_HIER_METRICS_FILE", "/tmp/m-%r.prom"},
        {"MPIX_HIER_METRICS_INTERVAL", "2.5"},
        {"MPIX_HIER_COST_MODEL", "yes"},
        {"MPIX_HIER_COST_MEASURE", "no"},
        {"MPIX_HIER_NET", "net_lat=5us;net_bw=25g"},
        {"MPIX_HIER_COST_NODE_LATENCY", "2us"},
        {"MPIX_HIER_COST_NODE_BW", "100g"},
        {"MPIX_HIER_COST_NET_LATENCY", "5us"},
        {"MPIX_HIER_COST_NET_BW", "25g"},
        {"MPIX_HIER_COST_SPINE_LATENCY", "8us"},
        {"MPIX_HIER_COST_TORUS_LATENCY", "6us"},
        {"MPIX_HIER_COST_TORUS_BW", "12g"},
        {"MPIX_HIER_COST_NET_CONTENTION", "1.5"},
        {"MPIX_HIER_COST_REDUCE_BW", "500g"},
        {"MPIX_HIER_COST_COPY_BW", "700g"},
        {"MPIX_HIER_COST_LAT_FACTOR", "65536:10;0:2;4096:3"},
        {"MPIX_HIER_COST_BW_FACTOR", "0:0.5;65536:1"},
    };
    return m;
}

mxh_config_t defaults()
{
    mxh_config_t c;
    mxh_config_init_defaults(&c);
    return c;
}

std::string get(const mxh_config_t &c, const char *name)
{
    char buf[MXH_CONFIG_STR_MAX];
    mxh_config_get_string(&c, name, buf, sizeof(buf));
    return buf;
}

// The fields only (not the bookkeeping of which rows were set by name).
bool same_fields(mxh_config_t a, mxh_config_t b)
{
    a.named = b.named = 0;
    a.named_src = b.named_src = 0;
    return memcmp(&a, &b, sizeof(a)) == 0;
}

TEST(Config, AllRowsHaveValues)
{
    int n = 0;
    for (const mxh_config_var_t *v = mxh_config_vars; v->name; v++, n++) {
        EXPECT_TRUE(other_values().count(v->name)) << v->name << ": add a value above";
        EXPECT_TRUE(v->doc && *v->doc && strlen(v->doc) < 400) << v->name;
    }
    EXPECT_LE(n, 64); // mxh_config_t.named: a bit per row
    int users = 0;
    for (const mxh_config_var_t *v = mxh_config_vars; v->name; v++)
        users += v->user != 0;
    EXPECT_GE(users, 8);
    EXPECT_LE(users, 14);
}

TEST(Config, EveryRowRoundTrips)
{
    for (const mxh_config_var_t *v = mxh_config_vars; v->name; v++) {
        auto it = other_values().find(v->name);
        if (it == other_values().end())
            continue;
        mxh_config_t a = defaults(), b = defaults();
        ASSERT_EQ(MXH_OK, mxh_config_set(&a, v->name, it->second.c_str(), "test")) << v->name;
        std::string s = get(a, v->name);
        EXPECT_FALSE(same_fields(a, defaults())) << v->name << " changed nothing";
        ASSERT_EQ(MXH_OK, mxh_config_set(&b, v->name, s.c_str(), "test")) << v->name << "=" << s;
        EXPECT_TRUE(same_fields(a, b)) << v->name << ": '" << it->second << "' -> '" << s << "'";
        EXPECT_EQ(s, get(b, v->name)) << v->name;
        // the lower-case MPI_Info spelling names the same row
        std::string lower = v->name;
        for (auto &ch : lower)
            ch = (char)tolower((unsigned char)ch);
        mxh_config_t l = defaults();
        ASSERT_EQ(MXH_OK, mxh_config_set(&l, lower.c_str(), it->second.c_str(), "test"));
        EXPECT_TRUE(same_fields(a, l)) << lower;
    }
    // the defaults print as their default strings read back
    for (const mxh_config_var_t *v = mxh_config_vars; v->name; v++) {
        mxh_config_t a = defaults(), b = defaults();
        std::string s = get(a, v->name);
        ASSERT_EQ(MXH_OK, mxh_config_set(&b, v->name, s.c_str(), "test")) << v->name << "=" << s;
        b.cost_given = b.frag_given = 0;
        EXPECT_TRUE(same_fields(a, b)) << v->name << "=" << s;
    }
}

TEST(Config, DefaultsAreTheDefaultStrings)
{
    const mxh_config_t d = defaults();
    for (const mxh_config_var_t *v = mxh_config_vars; v->name; v++) {
        mxh_config_t c = defaults();
        if (v->size > 0) { // a row of its own field: from another value back to the default
            ASSERT_EQ(MXH_OK, mxh_config_set(&c, v->name, other_values().at(v->name).c_str(),
                                             "test"));
        }
        ASSERT_EQ(MXH_OK, mxh_config_set(&c, v->name, v->dflt, "test")) << v->name;
        c.cost_given = c.frag_given = 0; // setting a row records that it was given
        EXPECT_TRUE(same_fields(c, d)) << v->name << " default '" << v->dflt << "'";
    }
    EXPECT_EQ(0, d.cost_given);
    EXPECT_EQ(0, d.frag_given);
    EXPECT_EQ(1, d.enable);
    EXPECT_EQ((size_t)8 << 20, d.frag_size);
    EXPECT_EQ(MXH_RAMP_AUTO, d.pipeline_ramp);
    EXPECT_EQ(-1, d.ipc);
    EXPECT_EQ(2, d.kary);
    EXPECT_DOUBLE_EQ(3e-6, d.cost_torus_latency);
    EXPECT_DOUBLE_EQ(370e9, d.cost_node_bw);
}

TEST(Config, PlanHashCoversThePlanRowsOnly)
{
    const mxh_config_t d = defaults();
    const uint64_t h0    = mxh_config_plan_hash(&d);
    for (const mxh_config_var_t *v = mxh_config_vars; v->name; v++) {
        auto it = other_values().find(v->name);
        if (it == other_values().end())
            continue;
        mxh_config_t c = defaults();
        ASSERT_EQ(MXH_OK, mxh_config_set(&c, v->name, it->second.c_str(), "test"));
        if (!v->plan) {
            EXPECT_EQ(h0, mxh_config_plan_hash(&c)) << v->name << " is not a plan row";
            continue;
        }
        EXPECT_NE(h0, mxh_config_plan_hash(&c)) << v->name;
        // the field itself, not only the 'given' flags setting it records
        mxh_config_t g = defaults();
        g.cost_given = c.cost_given;
        g.frag_given = c.frag_given;
        EXPECT_NE(mxh_config_plan_hash(&g), mxh_config_plan_hash(&c)) << v->name;
    }
    // which source set a row does not matter
    mxh_config_t a = defaults(), b = defaults();
    ASSERT_EQ(MXH_OK, mxh_config_set(&a, "MPIX_HIER_FRAG_SIZE", "4m", "environment"));
    ASSERT_EQ(MXH_OK, mxh_config_set(&b, "MPIX_HIER_TUNE", "frag=4m", "MPI_Info"));
    EXPECT_EQ(mxh_config_plan_hash(&a), mxh_config_plan_hash(&b));
    // hier.c's "configuration differs" message names exactly the variables that hash
    char names[4096];
    mxh_config_plan_names(names, sizeof(names));
    std::string list = std::string(", ") + names + ", ";
    int nplan = 0;
    for (const mxh_config_var_t *v = mxh_config_vars; v->name; v++) {
        bool listed = list.find(std::string(", ") + v->name + ", ") != std::string::npos;
        EXPECT_EQ(v->plan != 0 && v->size != 0, listed) << v->name;
        nplan += listed;
    }
    EXPECT_GE(nplan, 20) << names;
    EXPECT_NE(std::string::npos, list.find(", MPIX_HIER_EXCLUDE_RAILS, ")) << names;
}

// Sets composite @var to @value on @a and @prefix + KEY to VALUE on @b for every
// pair of @kv (each must succeed): the same fields, the same plan hash.
void set_both(mxh_config_t *a, const char *var, const char *value, mxh_config_t *b,
              const std::string &prefix, const std::map<std::string, std::string> &kv)
{
    ASSERT_EQ(MXH_OK, mxh_config_set(a, var, value, "test"));
    for (const auto &e : kv)
        ASSERT_EQ(MXH_OK, mxh_config_set(b, (prefix + e.first).c_str(), e.second.c_str(), "test"))
            << prefix + e.first;
    EXPECT_TRUE(same_fields(*a, *b));
    EXPECT_EQ(mxh_config_plan_hash(a), mxh_config_plan_hash(b));
}

// MPIX_HIER_TUNE and MPIX_HIER_NET set the fields the specific variables set.
TEST(Config, CompositesSetTheSpecificFields)
{
    mxh_config_t a = defaults(), b = defaults();
    ASSERT_NO_FATAL_FAILURE(set_both(&a, "MPIX_HIER_TUNE",
                                     "allreduce:pipeline;bcast:mpi;frag=4m;pace=no;ramp=linear;"
                                     "kary=yes;rsag=no;spread=no;depth=4;model=yes;measure=no",
                                     &b, "MPIX_HIER_",
                                     {{"ALGO", "allreduce:pipeline,bcast:mpi"}, {"FRAG_SIZE", "4m"},
                                      {"PIPELINE_PACE", "no"}, {"PIPELINE_RAMP", "linear"},
                                      {"KARY", "yes"}, {"RSAG", "no"}, {"SPREAD", "no"},
                                      {"PIPELINE_DEPTH", "4"}, {"COST_MODEL", "yes"},
                                      {"COST_MEASURE", "no"}}));
    EXPECT_EQ(1, a.frag_given);
    EXPECT_EQ(0, a.cost_given);

    mxh_config_t n = defaults(), m = defaults();
    ASSERT_NO_FATAL_FAILURE(set_both(&n, "MPIX_HIER_NET",
                                     "node_lat=1.5us;node_bw=100g;net_lat=2.5us;net_bw=25g;"
                                     "contention=1.2;spine_lat=5us;torus_lat=4us;torus_bw=10g;"
                                     "reduce_bw=800g;copy_bw=900g;lat_factor=0:2,65536:1;"
                                     "bw_factor=0:0.5",
                                     &m, "MPIX_HIER_COST_",
                                     {{"NODE_LATENCY", "1.5us"}, {"NODE_BW", "100g"},
                                      {"NET_LATENCY", "2.5us"}, {"NET_BW", "25g"},
                                      {"NET_CONTENTION", "1.2"}, {"SPINE_LATENCY", "5us"},
                                      {"TORUS_LATENCY", "4us"}, {"TORUS_BW", "10g"},
                                      {"REDUCE_BW", "800g"}, {"COPY_BW", "900g"},
                                      {"LAT_FACTOR", "0:2;65536:1"}, {"BW_FACTOR", "0:0.5"}}));
    EXPECT_EQ(1, n.cost_given);
    EXPECT_EQ("65536:1;0:2", get(n, "MPIX_HIER_COST_LAT_FACTOR"));

    // contention and the reduction speed are not network parameters 'auto' keeps
    mxh_config_t r = defaults();
    ASSERT_EQ(MXH_OK, mxh_config_set(&r, "MPIX_HIER_NET", "contention=2;reduce_bw=1g", "test"));
    EXPECT_EQ(0, r.cost_given);

    // malformed: unknown keys, bare items where no key takes them, bad values
    for (const char *bad : {"fragsize=4m", "frag=big", "pace=sometimes", "allreduce:fast"})
        EXPECT_EQ(MXH_ERR_PARSE, mxh_config_set(&r, "MPIX_HIER_TUNE", bad, "test")) << bad;
    for (const char *bad : {"net_lat=5parsecs", "5us", "lat_factor=64k:1", "contention=0.5"})
        EXPECT_EQ(MXH_ERR_PARSE, mxh_config_set(&r, "MPIX_HIER_NET", bad, "test")) << bad;
    EXPECT_EQ(MXH_ERR_CONFIG, mxh_config_set(&r, "MPIX_HIER_TUNES", "", "test"));
}

// Within one source the specific variable wins, in either order; a later source (MPI_Info
// after the environment) overrides whichever form the earlier used.
TEST(Config, SpecificVariableWinsWithinASource)
{
    mxh_config_t a = defaults(), b = defaults();
    ASSERT_EQ(MXH_OK, mxh_config_set(&a, "MPIX_HIER_FRAG_SIZE", "2m", "environment"));
    ASSERT_EQ(MXH_OK, mxh_config_set(&a, "MPIX_HIER_TUNE", "frag=4m;pace=no", "environment"));
    ASSERT_EQ(MXH_OK, mxh_config_set(&b, "MPIX_HIER_TUNE", "frag=4m;pace=no", "environment"));
    ASSERT_EQ(MXH_OK, mxh_config_set(&b, "MPIX_HIER_FRAG_SIZE", "2m", "environment"));
    EXPECT_EQ((size_t)2 << 20, a.frag_size);
    EXPECT_EQ((size_t)2 << 20, b.frag_size);
    EXPECT_EQ(0, a.pipeline_pace);
    EXPECT_EQ(0, b.pipeline_pace);
    ASSERT_EQ(MXH_OK, mxh_config_set(&a, "mpix_hier_tune", "frag=1m", "MPI_Info"));
    EXPECT_EQ((size_t)1 << 20, a.frag_size);

    mxh_config_t n = defaults();
    ASSERT_EQ(MXH_OK, mxh_config_set(&n, "MPIX_HIER_COST_NET_BW", "10g", "environment"));
    ASSERT_EQ(MXH_OK, mxh_config_set(&n, "MPIX_HIER_NET", "net_bw=25g;net_lat=3us", "environment"));
    EXPECT_DOUBLE_EQ(10e9, n.cost_net_bw);
    EXPECT_DOUBLE_EQ(3e-6, n.cost_net_latency);

    // the same through the environment, whatever its order
    setenv("MPIX_HIER_TUNE", "frag=4m;kary=no", 1);
    setenv("MPIX_HIER_FRAG_SIZE", "2m", 1);
    mxh_config_t e = defaults();
    ASSERT_EQ(MXH_OK, mxh_config_apply_env(&e, 1));
    unsetenv("MPIX_HIER_TUNE");
    unsetenv("MPIX_HIER_FRAG_SIZE");
    EXPECT_EQ((size_t)2 << 20, e.frag_size);
    EXPECT_EQ(0, e.kary);
    EXPECT_EQ(1, e.frag_given);
}

// Numbers beyond what a field holds are errors naming the value, its source and the range,
// not wrapped values: 17179869184g (2^64 bytes) was frag_size 0. The field keeps its value.
TEST(Config, OverflowIsAnErrorNotAWrap)
{
    const struct {
        const char *name, *value, *error;
    } cases[] = {
        {"MPIX_HIER_FRAG_SIZE", "17179869184g",
         "MPIX_HIER_FRAG_SIZE='17179869184g' (from test) is out of range: more than 18446744073709551615 bytes"},
        {"MPIX_HIER_FRAG_SIZE", "18446744073709551616",
         "MPIX_HIER_FRAG_SIZE='18446744073709551616' (from test) is out of range: more than 18446744073709551615 bytes"},
        {"MPIX_HIER_MIN_BYTES", "99999999999999999999999k", "(from test) is out of range: more than"},
        {"MPIX_HIER_IPC_MIN", "16777216t", "is malformed"},
        {"MPIX_HIER_SHM_CHUNK", "2g", "MPIX_HIER_SHM_CHUNK='2g' (from test) is out of range: not in [64, 1073741824] bytes"},
        {"MPIX_HIER_SHM_CHUNK", "32", "is out of range: not in [64, 1073741824] bytes"},
        {"MPIX_HIER_PIPELINE_DEPTH", "99999999999999999999",
         "MPIX_HIER_PIPELINE_DEPTH='99999999999999999999' (from test) is out of range: not in [0, 1048576]"},
        {"MPIX_HIER_PLAN_CACHE_SIZE", "-5", "is out of range: not in [1, 4096]"},
        {"MPIX_HIER_PIPELINE_RAMP", "99999999999999999999", "is malformed"},
        {"MPIX_HIER_COST_NET_BW", "1e308t", "MPIX_HIER_COST_NET_BW='1e308t' (from test) is out of range: not a finite number"},
        {"MPIX_HIER_COST_NET_BW", "inf", "is out of range: not a finite number"},
        {"MPIX_HIER_COST_NET_BW", "nan", "is malformed"},
        {"MPIX_HIER_COST_NET_LATENCY", "1e400s", "is out of range: larger than the largest double"},
        {"MPIX_HIER_COST_NET_CONTENTION", "0.5", "is out of range: less than 1"},
        {"MPIX_HIER_METRICS_INTERVAL", "1e400", "is out of range: not in [0, 1e+09]"},
        {"MPIX_HIER_METRICS_INTERVAL", "-inf", "is out of range: not in [0, 1e+09]"},
        {"MPIX_HIER_COST_LAT_FACTOR", "0:1;99999999999999999999:2",
         "MPIX_HIER_COST_LAT_FACTOR='0:1;99999999999999999999:2' (from test) is out of range: a size is more than SIZE_MAX bytes"},
        {"MPIX_HIER_COST_BW_FACTOR", "0:inf", "is out of range: a factor is not a finite number"},
        {"MPIX_HIER_TUNE", "frag=17179869184g",
         "MPIX_HIER_FRAG_SIZE='17179869184g' (from MPIX_HIER_TUNE from test) is out of range"},
    };
    for (const auto &c : cases) {
        mxh_test::LogCapture log;
        mxh_test::QuietStderr quiet;
        mxh_config_t a = defaults();
        EXPECT_EQ(MXH_ERR_PARSE, mxh_config_set(&a, c.name, c.value, "test")) << c.name << "=" << c.value;
        EXPECT_TRUE(same_fields(a, defaults())) << c.name << "=" << c.value;
        ASSERT_EQ(log.errors().size(), 1u) << c.name << "=" << c.value;
        EXPECT_NE(log.errors()[0].find(c.error), std::string::npos) << log.errors()[0];
    }
    // the largest sizes that fit, and through the environment
    mxh_config_t a = defaults();
    ASSERT_EQ(MXH_OK, mxh_config_set(&a, "MPIX_HIER_FRAG_SIZE", "17179869183g", "test"));
    EXPECT_EQ(a.frag_size, (size_t)17179869183ull << 30);
    ASSERT_EQ(MXH_OK, mxh_config_set(&a, "MPIX_HIER_FRAG_SIZE", "18446744073709551615", "test"));
    EXPECT_EQ(a.frag_size, SIZE_MAX);
    ASSERT_EQ(MXH_OK, mxh_config_set(&a, "MPIX_HIER_COST_NET_BW", "1e290t", "test"));
    EXPECT_DOUBLE_EQ(a.cost_net_bw, 1e302);
    // found by tests/fuzz/fuzz_config: a tiny rate prints in g as a subnormal, which must
    // read back ("251e-308" printed "2.51e-315g", then refused as an underflow)
    mxh_config_t t = defaults();
    ASSERT_EQ(MXH_OK, mxh_config_set(&t, "MPIX_HIER_NET", "net_lat=5us;net_bw=251e-308", "test"));
    EXPECT_EQ(get(t, "MPIX_HIER_COST_NET_BW"), "2.51e-315g");
    std::string net = get(t, "MPIX_HIER_NET");
    EXPECT_EQ(MXH_OK, mxh_config_set(&t, "MPIX_HIER_NET", net.c_str(), "test again")) << net;
    ASSERT_EQ(MXH_OK, mxh_config_set(&t, "MPIX_HIER_COST_NET_BW", "2.51e-315g", "test"));
    EXPECT_NEAR(t.cost_net_bw, 2.51e-306, 1e-314); // a subnormal's 8 digits
    // found by fuzz_config: 1e308 s printed 'infus'
    ASSERT_EQ(MXH_OK, mxh_config_set(&t, "MPIX_HIER_COST_NET_LATENCY", "1e308", "test"));
    EXPECT_EQ(get(t, "MPIX_HIER_COST_NET_LATENCY"), "1e+308s");
    EXPECT_EQ(MXH_OK, mxh_config_set(&t, "MPIX_HIER_COST_NET_LATENCY", "1e+308s", "test"));
    ASSERT_EQ(MXH_OK, mxh_config_set(&a, "MPIX_HIER_METRICS_INTERVAL", "1e-310", "test"));
    EXPECT_EQ(MXH_OK, mxh_config_set(&a, "MPIX_HIER_METRICS_INTERVAL",
                                     get(a, "MPIX_HIER_METRICS_INTERVAL").c_str(), "test"));
    EXPECT_EQ(MXH_ERR_PARSE, mxh_config_set(&a, "MPIX_HIER_COST_NET_BW", "1e-400", "test"));
    setenv("MPIX_HIER_FRAG_SIZE", "17179869184g", 1);
    {
        mxh_test::LogCapture log;
        mxh_test::QuietStderr quiet;
        mxh_config_t e = defaults();
        EXPECT_EQ(MXH_ERR_PARSE, mxh_config_apply_env(&e, 1));
        ASSERT_EQ(log.errors().size(), 1u);
        EXPECT_NE(log.errors()[0].find("(from environment) is out of range"), std::string::npos);
    }
    unsetenv("MPIX_HIER_FRAG_SIZE");
}

// An empty value in the environment leaves a number or switch unset (as NCCL's variables);
// a file name's empty value keeps its meaning ("" = none).
TEST(Config, EmptyEnvironmentValueIsUnset)
{
    setenv("MPIX_HIER_FRAG_SIZE", "", 1);
    setenv("MPIX_HIER_ENABLE", "", 1);
    setenv("MPIX_HIER_TOPO_FILE", "", 1);
    mxh_config_t d = defaults(), e = defaults();
    std::snprintf(e.topo_file, sizeof(e.topo_file), "/not/this");
    {
        mxh_test::LogCapture log;
        EXPECT_EQ(MXH_OK, mxh_config_apply_env(&e, 1));
        EXPECT_TRUE(log.errors().empty());
    }
    unsetenv("MPIX_HIER_FRAG_SIZE");
    unsetenv("MPIX_HIER_ENABLE");
    unsetenv("MPIX_HIER_TOPO_FILE");
    EXPECT_EQ(d.frag_size, e.frag_size);
    EXPECT_EQ(0, e.frag_given);
    EXPECT_EQ(d.enable, e.enable);
    EXPECT_STREQ("", e.topo_file);
}

} // namespace

// MPIX_HIER_EXCLUDE_RAILS=FILE reads the doctor's report as JSON (json-c): only a list of
// rails 0-63 under the top-level "exclude_rails" counts, the whole file must be JSON, and
// no size of the doctor's own report at scale is refused.
TEST(Config, DoctorReportIsReadAsJson)
{
    auto rails = [](const std::string &text, uint64_t *mask, std::string *err) {
        mxh_test::TempFile f(text);
        mxh_test::LogCapture log;
        mxh_config_t c = defaults();
        c.exclude_rails = 0xdead;
        mxh_status_t st = mxh_config_set(&c, "MPIX_HIER_EXCLUDE_RAILS", f.path().c_str(), "test");
        *mask = c.exclude_rails;
        *err = log.errors().empty() ? "" : log.errors()[0];
        return st;
    };
    uint64_t m;
    std::string err;
    EXPECT_EQ(MXH_OK, rails("{\"tool\": \"mpix_doctor\", \"exclude_rails\": [1, 3, 63]}\n", &m, &err)) << err;
    EXPECT_EQ(m, (1ull << 1) | (1ull << 3) | (1ull << 63));
    EXPECT_EQ(MXH_OK, rails("{\"exclude_rails\": []}", &m, &err)) << err;
    EXPECT_EQ(m, 0u);
    // the text scan took the first list after the key: slow_ranks 5 and 7
    EXPECT_EQ(MXH_ERR_PARSE, rails("{\"exclude_rails\": null, \"slow_ranks\": [5, 7]}", &m, &err));
    EXPECT_NE(err.find("has no \"exclude_rails\": [RAIL, ...] (null)"), std::string::npos) << err;
    EXPECT_EQ(m, 0xdeadu);
    EXPECT_EQ(MXH_ERR_PARSE, rails("{\"outliers\": {\"exclude_rails\": [2]}}", &m, &err));
    EXPECT_NE(err.find("(missing)"), std::string::npos) << err;
    // a report of 12 MiB (the text scan refused what was beyond 4 MiB)
    std::string big = "{\"levels\": [{\"transfers\": [";
    for (int i = 0; big.size() < (12u << 20); i++)
        big += std::string(i ? ", " : "") + "[" + std::to_string(i % 4096) + ", 17, 1.23457e+08]";
    big += "]}],\n\"exclude_rails\": [5]}\n";
    EXPECT_EQ(MXH_OK, rails(big, &m, &err)) << err;
    EXPECT_EQ(m, 1ull << 5);
    const struct {
        std::string text;
        const char *cause;
    } bad[] = {
        {"{\"exclude_rails\": [1,\n 2,\n", ":3: not a doctor report: "},
        {"{\"exclude_rails\": [1]} x", ":1: not a doctor report: "},
        {"{\"exclude_rails\": [1]}\n\n{}", ":3: not a doctor report: "},
        {"{\"exclude_rails\": [1]}" + std::string(70000, ' ') + "x", ":1: not a doctor report: text after the document"},
        {std::string("{\"exclude_rails\": [1]\0}", 23), "a NUL byte"},
        {"{\"exclude_rails\": [1,]}", "not a doctor report"},
        {"{\"exclude_rails\": [64]}", "\"exclude_rails\"[0] is 64, not a rail 0-63"},
        {"{\"exclude_rails\": [1, -1]}", "\"exclude_rails\"[1] is -1"},
        {"{\"exclude_rails\": [1.5]}", "is 1.5"},
        {"{\"exclude_rails\": [\"2\"]}", "is \"2\""},
        {"[1, 3]", "a JSON array, not an object"},
        {"", "end of file inside the document"},
        {"{\"exclude_rails\": [\xff]}", "not a doctor report"},
        {std::string(40, '[') + std::string(40, ']'), "not a doctor report"},
    };
    for (const auto &b : bad) {
        EXPECT_EQ(MXH_ERR_PARSE, rails(b.text, &m, &err)) << b.text;
        EXPECT_NE(err.find(b.cause), std::string::npos) << b.text << ": " << err;
        EXPECT_EQ(m, 0xdeadu);
    }
    mxh_config_t c = defaults();
    {
        mxh_test::LogCapture log;
        EXPECT_EQ(MXH_ERR_PARSE, mxh_config_set(&c, "MPIX_HIER_EXCLUDE_RAILS", "/", "test"));
        ASSERT_FALSE(log.errors().empty());
        EXPECT_EQ(log.errors()[0], "MPIX_HIER_EXCLUDE_RAILS: '/' is not a regular file");
    }
    {
        // larger than the limit: refused by its size, not read
        mxh_test::TempFile f;
        ASSERT_EQ(0, truncate(f.path().c_str(), (off_t)(300ll << 20)));
        mxh_test::LogCapture log;
        EXPECT_EQ(MXH_ERR_PARSE, mxh_config_set(&c, "MPIX_HIER_EXCLUDE_RAILS", f.path().c_str(), "test"));
        ASSERT_FALSE(log.errors().empty());
        EXPECT_NE(log.errors()[0].find("is larger than 256 MiB"), std::string::npos) << log.errors()[0];
    }
}
