// The metrics' pure parts (src/util/prom.h): label value and HELP escaping,
// sample values, the file name's placeholders, selectors; the fallback
// reasons' table and the configuration variables (src/util/config.c).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "decide/select.h"
#include "util/config.h"
#include "util/prom.h"

namespace {

// What @escape appends to an empty buffer for @s.
std::string escaped(void (*escape)(mxh_strbuf_t *, const char *), const char *s)
{
    mxh_strbuf_t b = {};
    escape(&b, s);
    std::string r = b.p ? b.p : "";
    mxh_strbuf_free(&b);
    return r;
}

std::string label(const char *s) { return escaped(mxh_strbuf_label_value, s); }
std::string help(const char *s) { return escaped(mxh_strbuf_help, s); }

std::string value(double v)
{
    mxh_strbuf_t b = {};
    mxh_strbuf_value(&b, v);
    std::string r = b.p;
    mxh_strbuf_free(&b);
    return r;
}

std::string expand(const char *t, int rank, const char *host, long pid, int n)
{
    char out[256];
    int k = mxh_prom_expand_path(t, rank, host, pid, n, out, sizeof(out));
    return k < 0 ? "<too long>" : std::string(out);
}

TEST(Prom, LabelEscapes)
{
    EXPECT_EQ(label("plain"), "plain");
    EXPECT_EQ(label(""), "");
    EXPECT_EQ(label("a\\b"), "a\\\\b");
    EXPECT_EQ(label("say \"hi\""), "say \\\"hi\\\"");
    EXPECT_EQ(label("two\nlines"), "two\\nlines");
    EXPECT_EQ(label("\\\"\n"), "\\\\\\\"\\n");
    EXPECT_EQ(label("tab\tstays"), "tab\tstays");
}

TEST(Prom, HelpEscapesNoQuotes)
{
    EXPECT_EQ(help("MPI's \"own\"\\x\ny"), "MPI's \"own\"\\\\x\\ny");
}

TEST(Prom, Values)
{
    EXPECT_EQ(value(0), "0");
    EXPECT_EQ(value(12345678901234.0), "12345678901234");
    EXPECT_EQ(value(0.5), "0.5");
    EXPECT_EQ(std::stod(value(1.0 / 3)), 1.0 / 3);
    EXPECT_EQ(value(NAN), "NaN");
    EXPECT_EQ(value(INFINITY), "+Inf");
    EXPECT_EQ(value(-INFINITY), "-Inf");
}

TEST(Prom, PathPlaceholders)
{
    EXPECT_EQ(expand("/m/%h-%r.prom", 3, "node7", 42, 8), "/m/node7-3.prom");
    EXPECT_EQ(expand("/m/%p.prom", 3, "h", 42, 8), "/m/42.prom");
    EXPECT_EQ(expand("/m/100%%-%r", 0, "h", 1, 2), "/m/100%-0");
    EXPECT_EQ(expand("/m/%x%", 0, "h", 1, 1), "/m/%x%"); // unknown: kept
    // no %r or %p: one rank keeps the name, several get .rank<r>
    EXPECT_EQ(expand("/m/metrics.prom", 0, "h", 1, 1), "/m/metrics.prom");
    EXPECT_EQ(expand("/m/metrics.prom", 5, "h", 1, 8), "/m/metrics.prom.rank5");
    EXPECT_EQ(expand("/m/%h.prom", 5, "h", 1, 8), "/m/h.prom.rank5"); // hosts hold several ranks
    char small[8];
    EXPECT_LT(mxh_prom_expand_path("/long/name", 0, "h", 1, 1, small, sizeof(small)), 0);
    EXPECT_EQ(mxh_prom_expand_path("1234567", 0, "h", 1, 1, small, sizeof(small)), 7);
}

TEST(Prom, Selectors)
{
    char name[64], keys[MXH_PROM_MAX_SEL][64], vals[MXH_PROM_MAX_SEL][256];
    EXPECT_EQ(mxh_prom_parse_selector("mpix_hier_calls_total", name, sizeof(name), keys, vals, 8), 0);
    EXPECT_STREQ(name, "mpix_hier_calls_total");
    EXPECT_EQ(mxh_prom_parse_selector("m{a=\"x\",b=y}", name, sizeof(name), keys, vals, 8), 2);
    EXPECT_STREQ(keys[0], "a");
    EXPECT_STREQ(vals[0], "x");
    EXPECT_STREQ(keys[1], "b");
    EXPECT_STREQ(vals[1], "y");
    EXPECT_EQ(mxh_prom_parse_selector("m{ a = \"q\\\"\\\\\\n\" }", name, sizeof(name), keys, vals, 8), 1);
    EXPECT_STREQ(vals[0], "q\"\\\n");
    EXPECT_EQ(mxh_prom_parse_selector("m{}", name, sizeof(name), keys, vals, 8), 0);
    for (const char *bad : {"", "{a=\"b\"}", "9m", "m{a=\"b\"", "m{a=\"b\"}x", "m{=\"b\"}",
                            "m{a\"b\"}", "m{a=\"\\t\"}", "m x"})
        EXPECT_LT(mxh_prom_parse_selector(bad, name, sizeof(name), keys, vals, 8), 0) << bad;
    EXPECT_LT(mxh_prom_parse_selector("m{a=1,b=2}", name, sizeof(name), keys, vals, 1), 0);
}

TEST(Prom, FallbackReasonsTable)
{
    // one name per reason, label-safe, unique
    for (int i = 0; i < MXH_FB_COUNT; i++) {
        ASSERT_NE(mxh_fallbacks[i].name, nullptr) << i;
        ASSERT_NE(mxh_fallbacks[i].doc, nullptr) << i;
        EXPECT_EQ(label(mxh_fallbacks[i].name), mxh_fallbacks[i].name);
        for (int j = 0; j < i; j++)
            EXPECT_STRNE(mxh_fallbacks[i].name, mxh_fallbacks[j].name);
    }
}

TEST(Prom, SelectSaysWhy)
{
    mxh_config_t cfg;
    mxh_config_init_defaults(&cfg);
    mxh_select_shape_t two = {8, 2, 0}, one = {4, 1, 1}, flat = {4, 1, 0}, alone = {1, 1, 1};
    EXPECT_EQ(mxh_select(&cfg, &two, MXH_COLL_ALLREDUCE, 64, 64).why, MXH_FB_NONE);
    EXPECT_EQ(mxh_select(&cfg, &alone, MXH_COLL_ALLREDUCE, 64, 64).why, MXH_FB_SINGLE_RANK);
    EXPECT_EQ(mxh_select(&cfg, &flat, MXH_COLL_ALLREDUCE, 64, 64).why, MXH_FB_NO_HIERARCHY);
    EXPECT_EQ(mxh_select(&cfg, &one, MXH_COLL_ALLGATHER, 64 << 20, 64 << 20).why,
              MXH_FB_ABOVE_SHM_MAX);
    cfg.min_bytes = 1024;
    EXPECT_EQ(mxh_select(&cfg, &two, MXH_COLL_ALLREDUCE, 64, 64).why, MXH_FB_BELOW_MIN_BYTES);
    cfg.min_bytes = 0;
    ASSERT_EQ(mxh_config_set(&cfg, "MPIX_HIER_ALGO", "allreduce:mpi", "test"), MXH_OK);
    EXPECT_EQ(mxh_select(&cfg, &two, MXH_COLL_ALLREDUCE, 64, 64).why, MXH_FB_FORCED);
    EXPECT_EQ(mxh_select(&cfg, &two, MXH_COLL_BCAST, 64, 64).why, MXH_FB_NONE);
    cfg.enable = 0;
    EXPECT_EQ(mxh_select(&cfg, &two, MXH_COLL_BCAST, 64, 64).why, MXH_FB_DISABLED);
}

TEST(Prom, ConfigVariables)
{
    mxh_config_t cfg;
    char buf[MXH_CONFIG_STR_MAX];
    mxh_config_init_defaults(&cfg);
    EXPECT_EQ(cfg.metrics, 1);
    ASSERT_EQ(mxh_config_set(&cfg, "MPIX_HIER_METRICS", "no", "test"), MXH_OK);
    EXPECT_EQ(cfg.metrics, 0);
    mxh_config_get_string(&cfg, "MPIX_HIER_METRICS", buf, sizeof(buf));
    EXPECT_STREQ(buf, "no");
    EXPECT_EQ(cfg.metrics_file[0], '\0');
    EXPECT_EQ(cfg.metrics_interval, 0);
    ASSERT_EQ(mxh_config_set(&cfg, "MPIX_HIER_METRICS_FILE", "/tmp/m-%h-%r.prom", "test"), MXH_OK);
    mxh_config_get_string(&cfg, "MPIX_HIER_METRICS_FILE", buf, sizeof(buf));
    EXPECT_STREQ(buf, "/tmp/m-%h-%r.prom");
    ASSERT_EQ(mxh_config_set(&cfg, "mpix_hier_metrics_interval", "2.5", "test"), MXH_OK);
    EXPECT_EQ(cfg.metrics_interval, 2.5);
    mxh_config_get_string(&cfg, "MPIX_HIER_METRICS_INTERVAL", buf, sizeof(buf));
    EXPECT_STREQ(buf, "2.5");
    for (const char *bad : {"-1", "x", "1s", "", "nan"})
        EXPECT_EQ(mxh_config_set(&cfg, "MPIX_HIER_METRICS_INTERVAL", bad, "test"), MXH_ERR_PARSE)
            << bad;
    // not plan-affecting: ranks may write different files
    mxh_config_t other = cfg;
    snprintf(other.metrics_file, sizeof(other.metrics_file), "/elsewhere");
    other.metrics_interval = 9;
    EXPECT_EQ(mxh_config_plan_hash(&cfg), mxh_config_plan_hash(&other));
}

} // namespace
