// Unit tests of src/topo/cluster_file.c: the MPIX_HIER_CLUSTER_FILE parser
// (hostlists, element-wise values, defaults, lookup) and its error messages
// (file and line of every malformed entry).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "topo/record.h"
#include "topo/cluster_file.h"
#include "unit_util.hh"
#include "util/log.h"
#include "util/status.h"

namespace {

using mxh_test::QuietStderr;
using mxh_test::TempFile;

using CfPtr = mxh_test::Owned<mxh_cluster_file_t, mxh_cluster_file_destroy>;

CfPtr parse_ok(const std::string &text)
{
    mxh_log_clear_last_error();
    return mxh_test::made_ok<CfPtr>(text, [&](mxh_cluster_file_t **cf) {
        return mxh_cluster_file_parse_string(text.c_str(), "test.cluster", cf);
    });
}

// Parses text that must fail; returns the error message.
std::string parse_bad(const std::string &text, mxh_status_t want = MXH_ERR_PARSE)
{
    QuietStderr quiet;
    mxh_cluster_file_t *cf = nullptr;
    mxh_log_clear_last_error();
    mxh_status_t st = mxh_cluster_file_parse_string(text.c_str(), "bad.cluster", &cf);
    EXPECT_EQ(st, want) << text;
    EXPECT_EQ(cf, nullptr);
    mxh_cluster_file_destroy(cf);
    return mxh_log_last_error();
}

const mxh_cluster_host_t *find(const CfPtr &cf, const char *host)
{
    return mxh_cluster_file_find(cf.get(), host);
}

TEST(ClusterFile, ElementWiseValuesAndSingleValues)
{
    CfPtr cf = parse_ok("# 2 nodes x 4 GPUs\n"
                        "n0g[0-3] node=n0 rail=[0-3] leaf=su0\n"
                        "n1g[0-3]\tnode=n1  rail=[0-3]  leaf=su1   # trailing comment\n");
    ASSERT_TRUE(cf);
    EXPECT_EQ(cf->nhosts, 8);
    for (int n = 0; n < 2; n++)
        for (int g = 0; g < 4; g++) {
            std::string h = "n" + std::to_string(n) + "g" + std::to_string(g);
            const mxh_cluster_host_t *e = find(cf, h.c_str());
            ASSERT_NE(e, nullptr) << h;
            EXPECT_EQ(std::string(e->node), "n" + std::to_string(n));
            EXPECT_EQ(e->rail, g);
            ASSERT_NE(e->leaf, nullptr);
            EXPECT_EQ(std::string(e->leaf), "su" + std::to_string(n));
            EXPECT_EQ(e->line, 2 + n);
        }
    EXPECT_EQ(find(cf, "n2g0"), nullptr);
    EXPECT_EQ(find(cf, ""), nullptr);
    EXPECT_EQ(find(cf, nullptr), nullptr);
}

TEST(ClusterFile, ElementWiseNamesAndZeroPadding)
{
    CfPtr cf = parse_ok("gpu[00-03] node=node[0-1],node[0-1] rail=1 leaf=su[00-03]\n");
    ASSERT_TRUE(cf);
    EXPECT_EQ(find(cf, "gpu2"), nullptr);
    const mxh_cluster_host_t *e = find(cf, "gpu02");
    ASSERT_NE(e, nullptr);
    EXPECT_STREQ(e->node, "node0");
    EXPECT_STREQ(find(cf, "gpu03")->node, "node1");
    EXPECT_STREQ(e->leaf, "su02");
    EXPECT_EQ(e->rail, 1);
}

TEST(ClusterFile, Defaults)
{
    CfPtr cf = parse_ok("a\nb rail=2\nc leaf=L\n\n   \n# only a comment\n");
    ASSERT_TRUE(cf);
    EXPECT_EQ(cf->nhosts, 3);
    const mxh_cluster_host_t *a = find(cf, "a"), *b = find(cf, "b"), *c = find(cf, "c");
    ASSERT_TRUE(a && b && c);
    EXPECT_STREQ(a->node, "a");
    EXPECT_EQ(a->rail, -1);
    EXPECT_EQ(a->leaf, nullptr);
    EXPECT_EQ(b->rail, 2);
    EXPECT_STREQ(c->leaf, "L");
    EXPECT_EQ(c->rail, -1);
}

TEST(ClusterFile, KeysAreCaseInsensitive)
{
    CfPtr cf = parse_ok("h[1-2] NODE=x Rail=[5-6] LeAf=y\n");
    ASSERT_TRUE(cf);
    EXPECT_EQ(find(cf, "h2")->rail, 6);
    EXPECT_STREQ(find(cf, "h1")->node, "x");
}

TEST(ClusterFile, EmptyFile)
{
    CfPtr cf = parse_ok("");
    ASSERT_TRUE(cf);
    EXPECT_EQ(cf->nhosts, 0);
    EXPECT_EQ(find(cf, "a"), nullptr);
}

TEST(ClusterFile, ShortNames)
{
    CfPtr cf = parse_ok("n0g1 node=n0\nx.site.org node=x\n10.0.0.1 node=ip\n");
    ASSERT_TRUE(cf);
    EXPECT_STREQ(find(cf, "n0g1.cluster.local")->node, "n0");
    EXPECT_STREQ(find(cf, "x")->node, "x");
    EXPECT_STREQ(find(cf, "x.other")->node, "x");
    EXPECT_STREQ(find(cf, "10.0.0.1")->node, "ip");
    EXPECT_EQ(find(cf, "10.0.0.2"), nullptr);
    EXPECT_EQ(find(cf, "10"), nullptr);
}

TEST(ClusterFile, Errors)
{
    const struct {
        std::string text;
        std::vector<std::string> says;  // each must be in the message
    } cases[] = {
        {"a node=x\nb nodes=y\n", {"bad.cluster:2:", "unknown key 'nodes'"}},
        {"a node\n", {"bad.cluster:1:", "not KEY=VALUE"}},
        {"\n\nrail=1 a\n", {"bad.cluster:3: expected a host list"}},
        {"a node=\n", {"bad.cluster:1: empty value for 'node'"}},
        {"g[0-3] rail=[0-2]\n", {"bad.cluster:1:", "3 values for 4 hosts"}},
        {"a rail=x\n", {"rail 'x' is not an integer >= 0"}},
        {"a rail=-1\n", {"not an integer"}},
        {"a rail=99999999999\n", {"bad.cluster:1:"}},
        {"a rail=1x\n", {"not an integer"}},
        {"a node=x node=y\n", {"key 'node' given twice"}},
        {"g[0-3] node=n0\n# c\ng3 node=n1\n",
         {"bad.cluster:3: host 'g3' is already listed on line 1"}},
        {"g[0-3 node=n0\n", {"bad.cluster:1: malformed host list"}},
        {"a leaf=x[1-\n", {"bad.cluster:1: malformed leaf value"}},
        {"a node=" + std::string(MXH_NODE_NAME_MAX, 'n') + "\n", {"longer than"}},
        {"a leaf=" + std::string(MXH_LEAF_NAME_MAX, 'l') + "\n", {"longer than"}},
        {std::string(MXH_NODE_NAME_MAX, 'h') + "\n", {"give node="}},
        {"g[0-99999999] node=x\n", {"bad.cluster:1:"}},
    };
    for (const auto &c : cases) {
        std::string m = parse_bad(c.text);
        for (const auto &s : c.says)
            EXPECT_NE(m.find(s), std::string::npos) << c.text << " -> " << m;
    }
}

TEST(ClusterFile, TorusCoordinates)
{
    CfPtr cf = parse_ok("n0g[0-1] node=n0 rail=[0-1] torus=0x0x0\n"
                        "n1g[0-1] node=n1 rail=[0-1] TORUS=3x1x12\n"
                        "m[0-3] torus=[0-3]x2\n"   // element-wise: one coordinate per host
                        "q[0-1] torus=7,9\n"       // a list of two 1-D coordinates
                        "plain node=p\n");
    ASSERT_TRUE(cf);
    const mxh_cluster_host_t *h = find(cf, "n0g1");
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(3, h->tndims);
    EXPECT_EQ(0, h->tcoord[0] + h->tcoord[1] + h->tcoord[2]);
    h = find(cf, "n1g0");
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(3, h->tndims);
    EXPECT_EQ(3, h->tcoord[0]);
    EXPECT_EQ(1, h->tcoord[1]);
    EXPECT_EQ(12, h->tcoord[2]);
    h = find(cf, "m2");
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(2, h->tndims);
    EXPECT_EQ(2, h->tcoord[0]);
    EXPECT_EQ(2, h->tcoord[1]);
    h = find(cf, "q1");
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(1, h->tndims);
    EXPECT_EQ(9, h->tcoord[0]);
    h = find(cf, "plain");
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(0, h->tndims);  // not on a torus

    std::string m;
    m = parse_bad("a torus=1x2x3x4\n");
    EXPECT_NE(m.find("bad.cluster:1: torus '1x2x3x4' is not a coordinate"), std::string::npos) << m;
    m = parse_bad("a torus=1xx2\n");
    EXPECT_NE(m.find("is not a coordinate"), std::string::npos) << m;
    m = parse_bad("a torus=x1\n");
    EXPECT_NE(m.find("is not a coordinate"), std::string::npos) << m;
    m = parse_bad("a torus=1x\n");
    EXPECT_NE(m.find("is not a coordinate"), std::string::npos) << m;
    m = parse_bad("a torus=1x-2\n");
    EXPECT_NE(m.find("is not a coordinate"), std::string::npos) << m;
    m = parse_bad("a torus=32768\n");
    EXPECT_NE(m.find("is not a coordinate"), std::string::npos) << m;
    m = parse_bad("a torus=1y2\n");
    EXPECT_NE(m.find("is not a coordinate"), std::string::npos) << m;
    m = parse_bad("g[0-2] torus=[0-1]x0\n");
    EXPECT_NE(m.find("2 values for 3 hosts"), std::string::npos) << m;
    m = parse_bad("a torus=1 torus=2\n");
    EXPECT_NE(m.find("key 'torus' given twice"), std::string::npos) << m;
    m = parse_bad("a tor=1\n");
    EXPECT_NE(m.find("keys: node, rail, leaf, torus"), std::string::npos) << m;
}

TEST(ClusterFile, Files)
{
    {
        QuietStderr quiet;
        mxh_cluster_file_t *cf = nullptr;
        EXPECT_EQ(mxh_cluster_file_parse_file("/nonexistent/x.cluster", &cf), MXH_ERR_IO);
        EXPECT_NE(std::string(mxh_log_last_error()).find("/nonexistent/x.cluster"),
                  std::string::npos);
        EXPECT_EQ(mxh_cluster_file_parse_file(nullptr, &cf), MXH_ERR_INVALID_PARAM);
    }
    TempFile file("n0g[0-1] node=n0 rail=[0-1] leaf=su0\n\n"
                  "n1g[0-1] node=n1 rail=[0-1] leaf=su0 x\n");
    const char *path = file.path().c_str();
    {
        QuietStderr quiet;
        mxh_cluster_file_t *cf = nullptr;
        EXPECT_EQ(mxh_cluster_file_parse_file(path, &cf), MXH_ERR_PARSE);
        std::string m = mxh_log_last_error();
        EXPECT_NE(m.find(std::string(path) + ":3:"), std::string::npos) << m;
    }
    ASSERT_NO_FATAL_FAILURE(file.write("n0g[0-1] node=n0 rail=[0-1] leaf=su0\n"));
    mxh_cluster_file_t *cf = nullptr;
    EXPECT_EQ(mxh_cluster_file_parse_file(path, &cf), MXH_OK) << mxh_log_last_error();
    ASSERT_NE(cf, nullptr);
    EXPECT_EQ(cf->nhosts, 2);
    EXPECT_EQ(std::string(cf->source), path);
    mxh_cluster_file_destroy(cf);
}

// The generator's layout at 1024 nodes x 8 GPUs: every host found with its values.
// The host lists and values of one file share the expansion limit (topo_conf.h): the error
// names the line and the limit; an empty file has no host array (qsort is not called on NULL).
TEST(ClusterFile, ExpansionLimitOfTheFile)
{
    const std::string limits = " (the limit of one file's hostlists together: 1048576 names or "
                               "64 MiB, whichever first)";
    EXPECT_EQ(parse_bad("a[0-999999] node=b[0-999999] leaf=c[0-999999] rail=[0-999999]\n"),
              "bad.cluster:1: hostlist 'b[0-999999]' expands to more than 1048576 names" + limits);
    EXPECT_EQ(parse_bad("a[0-524287]\nb[0-524287]\nc\n"),
              "bad.cluster:3: hostlist 'c' expands to more than 1048576 names" + limits);
    EXPECT_EQ(parse_bad(std::string(200, 'h') + "[0-999999] node=n\n"),
              "bad.cluster:1: hostlist '" + std::string(160, 'h') +
                  "' expands to more than 64 MiB of names" + limits);
    long mib = mxh_test::child_peak_rss_mib([] {
        mxh_log_set_level(MXH_LOG_ERROR);
        mxh_log_set_hook([](mxh_log_level_t, const char *, void *) {}, nullptr);
        mxh_cluster_file_t *cf = nullptr;
        return mxh_cluster_file_parse_string("a[0-999999] node=b[0-999999] leaf=c[0-999999]\n",
                                             "x", &cf) == MXH_ERR_PARSE;
    });
    EXPECT_GT(mib, 0);
    EXPECT_LT(mib, 160) << "peak resident memory, MiB";
    CfPtr cf = parse_ok("# nothing\n\n");
    ASSERT_TRUE(cf);
    EXPECT_EQ(cf->nhosts, 0);
    EXPECT_EQ(cf->hosts, nullptr);
}

TEST(ClusterFile, LargeCluster)
{
    std::ostringstream os;
    for (int n = 0; n < 1024; n++)
        os << "n" << n << "g[0-7] node=n" << n << " rail=[0-7] leaf=su" << n / 32 << "\n";
    CfPtr cf = parse_ok(os.str());
    ASSERT_TRUE(cf);
    EXPECT_EQ(cf->nhosts, 8192);
    for (int n = 0; n < 1024; n += 7)
        for (int g = 0; g < 8; g++) {
            std::string h = "n" + std::to_string(n) + "g" + std::to_string(g);
            const mxh_cluster_host_t *e = find(cf, h.c_str());
            ASSERT_NE(e, nullptr) << h;
            EXPECT_EQ(e->rail, g);
            EXPECT_EQ(std::string(e->node), "n" + std::to_string(n));
            EXPECT_EQ(std::string(e->leaf), "su" + std::to_string(n / 32));
        }
}

}  // namespace
