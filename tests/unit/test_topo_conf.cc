// Unit tests of src/topo/topo_conf.c: Slurm topology.conf parsing (tree and
// block syntax) and hostlist expansion. The expected values were read from the
// fixture files in tests/data/slurm (see its README).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "topo/topo_conf.h"
#include "unit_util.hh"
#include "util/log.h"
#include "util/status.h"

namespace {

std::string data_path(const std::string &name) { return mxh_test::test_data("slurm/" + name); }

using mxh_test::LogCapture;
using mxh_test::QuietStderr;
using mxh_test::TempFile;
using mxh_test::read_text;

using ConfPtr = mxh_test::Owned<mxh_topo_conf_t, mxh_topo_conf_destroy>;

ConfPtr parse_file_ok(const std::string &path)
{
    return mxh_test::made_ok<ConfPtr>(
        path, [&](mxh_topo_conf_t **c) { return mxh_topo_conf_parse_file(path.c_str(), c); });
}

ConfPtr parse_string_ok(const std::string &text)
{
    return mxh_test::made_ok<ConfPtr>(text, [&](mxh_topo_conf_t **c) {
        return mxh_topo_conf_parse_string(text.c_str(), "test", c);
    });
}

// *conf: data file @name, parsed; checks its format and number of switches
void load_data(const char *name, mxh_topo_format_t format, int nswitches, ConfPtr *conf)
{
    *conf = parse_file_ok(data_path(name));
    ASSERT_TRUE(*conf);
    EXPECT_EQ((*conf)->format, format);
    ASSERT_EQ((*conf)->num_switches, nswitches);
}

// nothing logged: no errors, no warnings
void expect_quiet(const LogCapture &log)
{
    EXPECT_TRUE(log.errors().empty());
    EXPECT_TRUE(log.warnings().empty());
}

int find_switch(const mxh_topo_conf_t *conf, const std::string &name)
{
    for (int i = 0; i < conf->num_switches; i++)
        if (name == conf->switches[i].name)
            return i;
    return -1;
}

std::vector<std::string> node_list(const mxh_topo_switch_t &s)
{
    return std::vector<std::string>(s.nodes, s.nodes + s.num_nodes);
}

std::vector<std::string> child_list(const mxh_topo_switch_t &s)
{
    return std::vector<std::string>(s.child_names, s.child_names + s.num_children);
}

std::vector<std::string> expand_ok(const std::string &expr, size_t max_names = 100000)
{
    char **names = nullptr;
    int count = -1;
    mxh_status_t st = mxh_hostlist_expand(expr.c_str(), max_names, &names, &count);
    EXPECT_EQ(st, MXH_OK) << expr << ": " << mxh_log_last_error();
    std::vector<std::string> out;
    for (int i = 0; i < count; i++)
        out.emplace_back(names[i]);
    mxh_hostlist_free(names, count);
    return out;
}

std::vector<std::string> seq(const std::string &prefix, int lo, int hi, int width = 0,
                             const std::string &suffix = "")
{
    std::vector<std::string> out;
    char buf[64];
    for (int i = lo; i <= hi; i++) {
        snprintf(buf, sizeof(buf), "%0*d", width, i);
        out.push_back(prefix + buf + suffix);
    }
    return out;
}

// An error message must start with "SOURCE:LINE: ".
::testing::AssertionResult names_line(const std::string &msg, const std::string &src, int line)
{
    std::string want = src + ":" + std::to_string(line) + ": ";
    if (msg.compare(0, want.size(), want) == 0)
        return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "message '" << msg << "' does not start with '"
                                         << want << "'";
}

} // namespace

// ---------------------------------------------------------------------------
// hostlist expansion

TEST(Hostlist, PlainNames)
{
    EXPECT_EQ(expand_ok("a"), std::vector<std::string>({"a"}));
    EXPECT_EQ(expand_ok("a,b,c"), std::vector<std::string>({"a", "b", "c"}));
    EXPECT_EQ(expand_ok("node1.cluster.local,0x155dfffd33ff7d"),
              std::vector<std::string>({"node1.cluster.local", "0x155dfffd33ff7d"}));
}

TEST(Hostlist, Ranges)
{
    EXPECT_EQ(expand_ok("node[0-3,7]"),
              std::vector<std::string>({"node0", "node1", "node2", "node3", "node7"}));
    EXPECT_EQ(expand_ok("n[5]"), std::vector<std::string>({"n5"}));
    EXPECT_EQ(expand_ok("n[3,1,2]"), std::vector<std::string>({"n3", "n1", "n2"}));
    EXPECT_EQ(expand_ok("[1-2]x"), std::vector<std::string>({"1x", "2x"}));
    EXPECT_EQ(expand_ok("n[1-3]-ib"), seq("n", 1, 3, 0, "-ib"));
}

TEST(Hostlist, ZeroPaddingFollowsTheLowerBound)
{
    EXPECT_EQ(expand_ok("n[01-10]"), seq("n", 1, 10, 2));
    EXPECT_EQ(expand_ok("n[1-10]"), seq("n", 1, 10, 0));
    EXPECT_EQ(expand_ok("n[001-3]"), seq("n", 1, 3, 3));
    EXPECT_EQ(expand_ok("n[8-010]"), seq("n", 8, 10, 0)); // width of "8"
    EXPECT_EQ(expand_ok("n[098-101]"), seq("n", 98, 101, 3));
    EXPECT_EQ(expand_ok("n[00-01,5]"), std::vector<std::string>({"n00", "n01", "n5"}));
}

TEST(Hostlist, CartesianProductLeftmostSlowest)
{
    EXPECT_EQ(expand_ok("r[1-2]-n[0-1]"),
              std::vector<std::string>({"r1-n0", "r1-n1", "r2-n0", "r2-n1"}));
    EXPECT_EQ(expand_ok("a[1-2]b[3,5]c"),
              std::vector<std::string>({"a1b3c", "a1b5c", "a2b3c", "a2b5c"}));
    EXPECT_EQ(expand_ok("x[1-2][7-8]"),
              std::vector<std::string>({"x17", "x18", "x27", "x28"}));
}

TEST(Hostlist, HeaderExample)
{
    EXPECT_EQ(expand_ok("a,node[0-3,7],rack[1-2]-n[01-02]"),
              std::vector<std::string>({"a", "node0", "node1", "node2", "node3", "node7",
                                        "rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"}));
}

TEST(Hostlist, MalformedIsParseErrorNamingTheExpression)
{
    struct Case {
        const char *expr;
        const char *what; // substring of the message
    };
    const Case cases[] = {
        {"n[3-1]", "upper bound below lower bound"},
        {"n[[1-2]]", "nested '['"},
        {"n[1-[2]]", "nested '['"},
        {"n[1-2", "unclosed '['"},
        {"n[1-2],m[3", "unclosed '['"},
        {"n1-2]", "unbalanced ']'"},
        {"a,,b", "empty element"},
        {",a", "empty element"},
        {"a,", "empty element"},
        {"", "empty hostlist"},
        {"n[]", "empty brackets"},
        {"n[1,]", "empty range item"},
        {"n[,1]", "empty range item"},
        {"n[1,,2]", "empty range item"},
        {"n[a-b]", "not a number"},
        {"n[1-2-3]", "not a number"},
        {"n[-1]", "empty number"},
        {"n[1-]", "empty number"},
        {"n[ 1]", "invalid character"},
        {"n[1234567890123456789]", "more than 18 digits"},
        {"a b", "invalid character 0x20"},
        {"a=b", "invalid character 0x3d"},
        {"a\\b", "invalid character 0x5c"},
        {"a\tb", "invalid character 0x09"},
    };
    for (const Case &c : cases) {
        LogCapture log;
        char **names = reinterpret_cast<char **>(0x1);
        int count = -1;
        EXPECT_EQ(mxh_hostlist_expand(c.expr, 1000, &names, &count), MXH_ERR_PARSE) << c.expr;
        EXPECT_EQ(names, nullptr) << c.expr;
        EXPECT_EQ(count, 0) << c.expr;
        auto errs = log.errors();
        ASSERT_EQ(errs.size(), 1u) << c.expr;
        EXPECT_NE(errs[0].find(std::string("hostlist '") + c.expr + "'"), std::string::npos)
            << errs[0];
        EXPECT_NE(errs[0].find(c.what), std::string::npos) << c.expr << " -> " << errs[0];
    }
}

TEST(Hostlist, MaxNamesGuardsHugeExpansions)
{
    LogCapture log;
    char **names = nullptr;
    int count = 0;
    EXPECT_EQ(mxh_hostlist_expand("n[0-999999999]", 1000, &names, &count), MXH_ERR_PARSE);
    EXPECT_EQ(names, nullptr);
    ASSERT_EQ(log.errors().size(), 1u);
    EXPECT_NE(log.errors()[0].find("more than 1000 names"), std::string::npos);

    // the product of groups, and the sum over elements, count too
    EXPECT_EQ(mxh_hostlist_expand("a[0-999999999]b[0-999999999]c[0-999999999]",
                                  MXH_HOSTLIST_MAX_NAMES, &names, &count),
              MXH_ERR_PARSE);
    EXPECT_EQ(mxh_hostlist_expand("n[0-999999999999999999]", SIZE_MAX, &names, &count),
              MXH_ERR_PARSE);
    EXPECT_EQ(mxh_hostlist_expand("a,b,c", 2, &names, &count), MXH_ERR_PARSE);
    EXPECT_EQ(mxh_hostlist_expand("n[1-4]", 3, &names, &count), MXH_ERR_PARSE);
    EXPECT_EQ(expand_ok("n[1-4]", 4).size(), 4u);
    EXPECT_EQ(expand_ok("a,n[1-2]", 3).size(), 3u);
}

TEST(Hostlist, NullArguments)
{
    LogCapture log;
    char **names = nullptr;
    int count = 0;
    EXPECT_EQ(mxh_hostlist_expand(nullptr, 10, &names, &count), MXH_ERR_INVALID_PARAM);
    EXPECT_EQ(mxh_hostlist_expand("a", 10, nullptr, &count), MXH_ERR_INVALID_PARAM);
    EXPECT_EQ(mxh_hostlist_expand("a", 10, &names, nullptr), MXH_ERR_INVALID_PARAM);
    mxh_hostlist_free(nullptr, 0);
}

// One budget per file: what a failed expansion spent is given back, and the byte limit
// counts each name's length + 1 + MXH_HOSTLIST_NAME_OVERHEAD.
TEST(Hostlist, BudgetIsSharedAndCountsBytes)
{
    LogCapture log;
    char **names = nullptr;
    int count = 0;
    mxh_hostlist_budget_t b = {10, MXH_HOSTLIST_MAX_BYTES, 0, 0, 0};
    ASSERT_EQ(mxh_hostlist_expand_in("a[1-6]", &b, "f.conf", 3, &names, &count), MXH_OK);
    mxh_hostlist_free(names, count);
    EXPECT_EQ(b.names, 6u);
    EXPECT_EQ(b.bytes, 6 * (2 + 1 + MXH_HOSTLIST_NAME_OVERHEAD));
    EXPECT_EQ(mxh_hostlist_expand_in("b[1-3],c[1-2]", &b, "f.conf", 4, &names, &count), MXH_ERR_PARSE);
    EXPECT_EQ(names, nullptr);
    EXPECT_EQ(b.names, 6u); // given back
    EXPECT_EQ(b.exhausted, 1);
    ASSERT_EQ(log.errors().size(), 1u);
    EXPECT_EQ(log.errors()[0], "f.conf:4: hostlist 'b[1-3],c[1-2]' expands to more than 10 names (the "
                               "limit of one file's hostlists together: 10 names or 64 MiB, whichever first)");
    ASSERT_EQ(mxh_hostlist_expand_in("d[1-4]", &b, "f.conf", 5, &names, &count), MXH_OK);
    mxh_hostlist_free(names, count);
    EXPECT_EQ(b.names, 10u);

    // bytes: two names of 3 characters cost 2 * (4 + overhead); one byte less is too little
    mxh_hostlist_budget_t c = {100, 2 * (4 + MXH_HOSTLIST_NAME_OVERHEAD), 0, 0, 0};
    ASSERT_EQ(mxh_hostlist_expand_in("abc,def", &c, nullptr, 0, &names, &count), MXH_OK);
    mxh_hostlist_free(names, count);
    EXPECT_EQ(c.bytes, c.max_bytes);
    c = {100, 2 * (4 + MXH_HOSTLIST_NAME_OVERHEAD) - 1, 0, 0, 0};
    log.clear();
    EXPECT_EQ(mxh_hostlist_expand_in("abc,def", &c, nullptr, 0, &names, &count), MXH_ERR_PARSE);
    EXPECT_EQ(c.bytes, 0u);
    ASSERT_EQ(log.errors().size(), 1u);
    EXPECT_NE(log.errors()[0].find("hostlist 'abc,def' expands to more than 0 MiB of names"),
              std::string::npos) << log.errors()[0];
    EXPECT_EQ(mxh_hostlist_expand_in("a", nullptr, nullptr, 0, &names, &count), MXH_ERR_INVALID_PARAM);
}

// Property: random well-formed hostlists expand to what a reference model says.
TEST(Hostlist, PropertyRandomExpressionsMatchReference)
{
    std::mt19937 rng(20240611u);
    auto rnd = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const std::string lit_chars = "abcxyz019.-_";
    for (int iter = 0; iter < 2000; iter++) {
        std::string expr;
        std::vector<std::string> expected;
        int nelem = rnd(1, 4);
        for (int e = 0; e < nelem; e++) {
            if (e > 0)
                expr += ",";
            std::vector<std::string> cur = {""};
            int nparts = rnd(1, 4);
            bool any = false;
            for (int p = 0; p < nparts; p++) {
                if (rnd(0, 1) == 0 || (p == nparts - 1 && !any)) {
                    std::string lit;
                    int len = rnd(1, 3);
                    for (int k = 0; k < len; k++)
                        lit += lit_chars[rnd(0, (int)lit_chars.size() - 1)];
                    expr += lit;
                    for (auto &s : cur)
                        s += lit;
                    any = true;
                } else {
                    std::vector<std::string> vals;
                    expr += "[";
                    int nr = rnd(1, 2);
                    for (int r = 0; r < nr; r++) {
                        if (r > 0)
                            expr += ",";
                        int lo = rnd(0, 120), hi = lo + rnd(0, 3);
                        int width = rnd(1, 4);
                        char lo_s[32], hi_s[32];
                        snprintf(lo_s, sizeof(lo_s), "%0*d", width, lo);
                        snprintf(hi_s, sizeof(hi_s), "%0*d", rnd(1, 4), hi);
                        int w = (int)strlen(lo_s);
                        if (lo == hi && rnd(0, 1)) {
                            expr += lo_s;
                        } else {
                            expr += std::string(lo_s) + "-" + hi_s;
                        }
                        for (int v = lo; v <= hi; v++) {
                            char b[32];
                            snprintf(b, sizeof(b), "%0*d", w, v);
                            vals.push_back(b);
                        }
                    }
                    expr += "]";
                    std::vector<std::string> next;
                    for (const auto &s : cur)
                        for (const auto &v : vals)
                            next.push_back(s + v);
                    cur.swap(next);
                    any = true;
                }
            }
            expected.insert(expected.end(), cur.begin(), cur.end());
        }
        ASSERT_EQ(expand_ok(expr), expected) << "expression: " << expr;
    }
}

// Property: random byte strings never crash; they expand or fail with one error.
TEST(Hostlist, FuzzRandomStrings)
{
    std::mt19937 rng(777u);
    const std::string alphabet = "[]-,0123456789ab.";
    auto rnd = [&](size_t lo, size_t hi) {
        return std::uniform_int_distribution<size_t>(lo, hi)(rng);
    };
    QuietStderr quiet;
    LogCapture log;
    int n_ok = 0;
    for (int iter = 0; iter < 5000; iter++) {
        std::string expr;
        size_t len = rnd(0, 24);
        for (size_t k = 0; k < len; k++)
            expr += alphabet[rnd(0, alphabet.size() - 1)];
        log.clear();
        char **names = nullptr;
        int count = -1;
        mxh_status_t st = mxh_hostlist_expand(expr.c_str(), 5000, &names, &count);
        ASSERT_TRUE(st == MXH_OK || st == MXH_ERR_PARSE) << expr;
        if (st == MXH_OK) {
            n_ok++;
            ASSERT_GT(count, 0) << expr;
            ASSERT_LE(count, 5000) << expr;
            ASSERT_NE(names, nullptr);
            for (int k = 0; k < count; k++)
                ASSERT_GT(strlen(names[k]), 0u) << expr;
            EXPECT_TRUE(log.errors().empty());
        } else {
            EXPECT_EQ(names, nullptr);
            EXPECT_EQ(count, 0);
            ASSERT_EQ(log.errors().size(), 1u) << expr;
        }
        mxh_hostlist_free(names, count);
    }
    EXPECT_GT(n_ok, 100);
}

// ---------------------------------------------------------------------------
// real files: slurm_topology.txt (host-level tree)

TEST(TopoConfReal, SlurmTopologyHostTree)
{
    LogCapture log;
    ConfPtr conf = parse_file_ok(data_path("slurm_topology.txt"));
    ASSERT_TRUE(conf);
    EXPECT_EQ(conf->format, MXH_TOPO_FORMAT_TREE);
    EXPECT_EQ(std::string(conf->source), data_path("slurm_topology.txt"));
    ASSERT_EQ(conf->num_switches, 6);

    const std::map<std::string, std::vector<std::string>> leaves = {
        {"sw00", {"hpcbench-hpc-36", "hpcbench-hpc-39", "hpcbench-hpc-42"}},
        {"sw01",
         {"hpcbench-hpc-1", "hpcbench-hpc-35", "hpcbench-hpc-38", "hpcbench-hpc-41",
          "hpcbench-hpc-44", "hpcbench-hpc-49"}},
        {"sw02", {"hpcbench-hpc-37", "hpcbench-hpc-45", "hpcbench-hpc-46"}},
        {"sw03", {"hpcbench-hpc-40", "hpcbench-hpc-43"}},
        {"sw04", {"hpcbench-hpc-47", "hpcbench-hpc-48"}},
    };
    const int root = find_switch(conf.get(), "sw05");
    ASSERT_EQ(root, 5);
    int i = 0;
    for (const auto &kv : leaves) {
        int sw = find_switch(conf.get(), kv.first);
        ASSERT_EQ(sw, i) << kv.first; // file order
        const mxh_topo_switch_t &s = conf->switches[sw];
        EXPECT_EQ(node_list(s), kv.second) << kv.first;
        EXPECT_EQ(s.num_children, 0);
        EXPECT_EQ(s.parent, root);
        EXPECT_EQ(s.line, 2 * i + 2); // a comment line precedes each switch
        EXPECT_EQ(mxh_topo_conf_depth(conf.get(), sw), 1);
        for (const auto &h : kv.second)
            EXPECT_EQ(mxh_topo_conf_find_leaf(conf.get(), h.c_str()), sw) << h;
        i++;
    }
    const mxh_topo_switch_t &top = conf->switches[root];
    EXPECT_EQ(top.parent, -1);
    EXPECT_EQ(top.num_nodes, 0);
    EXPECT_EQ(top.line, 11);
    EXPECT_EQ(child_list(top), std::vector<std::string>({"sw00", "sw01", "sw02", "sw03", "sw04"}));
    for (int c = 0; c < top.num_children; c++)
        EXPECT_EQ(top.children[c], c);
    EXPECT_EQ(mxh_topo_conf_depth(conf.get(), root), 0);

    // short-name matching, both ways; unknown hosts
    EXPECT_EQ(mxh_topo_conf_find_leaf(conf.get(), "hpcbench-hpc-36.internal.cloudapp.net"), 0);
    EXPECT_EQ(mxh_topo_conf_find_leaf(conf.get(), "hpcbench-hpc-2"), -1);
    EXPECT_EQ(mxh_topo_conf_find_leaf(conf.get(), "hpcbench-hpc-3"), -1); // not a prefix match
    EXPECT_EQ(mxh_topo_conf_find_leaf(conf.get(), "sw05"), -1);           // switches are not hosts
    expect_quiet(log);
}

// ---------------------------------------------------------------------------
// real files: topology.txt (SHARP GUID-level output with back-edges)

TEST(TopoConfReal, SharpGuidTreeDropsBackEdges)
{
    LogCapture log;
    ConfPtr conf;
    ASSERT_NO_FATAL_FAILURE(load_data("topology.txt", MXH_TOPO_FORMAT_TREE, 49, &conf));
    EXPECT_TRUE(log.errors().empty());

    // exactly one warning for the 8 dropped back-edges spine -> ibsw47
    auto warns = log.warnings();
    ASSERT_EQ(warns.size(), 1u);
    EXPECT_TRUE(names_line(warns[0], data_path("topology.txt"), 14)) << warns[0];
    EXPECT_NE(warns[0].find("ignored 8 back-edge(s)"), std::string::npos) << warns[0];
    EXPECT_NE(warns[0].find("'ibsw14' lists 'ibsw47'"), std::string::npos) << warns[0];
    EXPECT_NE(warns[0].find("line 47"), std::string::npos) << warns[0];

    const int top = find_switch(conf.get(), "ibsw47");
    ASSERT_EQ(top, 46);
    const std::set<std::string> spines = {"ibsw14", "ibsw26", "ibsw27", "ibsw44",
                                          "ibsw45", "ibsw46", "ibsw48", "ibsw49"};
    int nleaves = 0, nguids = 0;
    std::map<int, int> leaves_by_size;
    for (int i = 0; i < conf->num_switches; i++) {
        const mxh_topo_switch_t &s = conf->switches[i];
        EXPECT_EQ(s.line, i + 1);
        EXPECT_EQ(std::string(s.name), "ibsw" + std::to_string(i + 1));
        if (s.num_nodes > 0) {
            nleaves++;
            nguids += s.num_nodes;
            leaves_by_size[s.num_nodes]++;
            EXPECT_EQ(s.num_children, 0) << s.name;
            ASSERT_GE(s.parent, 0) << s.name;
            EXPECT_EQ(spines.count(conf->switches[s.parent].name), 1u) << s.name;
            EXPECT_EQ(mxh_topo_conf_depth(conf.get(), i), 2) << s.name;
            for (int k = 0; k < s.num_nodes; k++) {
                EXPECT_EQ(std::string(s.nodes[k]).rfind("0x155dfffd", 0), 0u);
                EXPECT_EQ(mxh_topo_conf_find_leaf(conf.get(), s.nodes[k]), i);
            }
        } else if (spines.count(s.name)) {
            EXPECT_EQ(s.num_children, 5) << s.name; // 6 listed, ibsw47 dropped
            for (int c = 0; c < s.num_children; c++) {
                EXPECT_STRNE(s.child_names[c], "ibsw47");
                EXPECT_EQ(std::string(conf->switches[s.children[c]].name), s.child_names[c]);
                EXPECT_GT(conf->switches[s.children[c]].num_nodes, 0);
                EXPECT_EQ(conf->switches[s.children[c]].parent, i);
            }
            EXPECT_EQ(s.parent, top) << s.name;
            EXPECT_EQ(mxh_topo_conf_depth(conf.get(), i), 1) << s.name;
        } else {
            EXPECT_EQ(i, top);
        }
    }
    EXPECT_EQ(nleaves, 40);
    EXPECT_EQ(nguids, 128);
    EXPECT_EQ(leaves_by_size, (std::map<int, int>{{2, 16}, {3, 16}, {6, 8}}));

    const mxh_topo_switch_t &t = conf->switches[top];
    EXPECT_EQ(t.parent, -1);
    EXPECT_EQ(mxh_topo_conf_depth(conf.get(), top), 0);
    EXPECT_EQ(child_list(t), std::vector<std::string>({"ibsw14", "ibsw26", "ibsw27", "ibsw44",
                                                       "ibsw45", "ibsw46", "ibsw48", "ibsw49"}));
    // the spine ibsw14: Switches=ibsw3,ibsw16,ibsw17,ibsw28,ibsw34,ibsw47
    EXPECT_EQ(child_list(conf->switches[13]),
              std::vector<std::string>({"ibsw3", "ibsw16", "ibsw17", "ibsw28", "ibsw34"}));
}

// topology.txt with nodes_guids.txt: 8 rails per host; the leaf groups are the
// torsets of slurm_topology.txt.
TEST(TopoConfReal, GuidTreeAgreesWithHostTree)
{
    LogCapture log;
    ConfPtr guid = parse_file_ok(data_path("topology.txt"));
    ConfPtr host = parse_file_ok(data_path("slurm_topology.txt"));
    ASSERT_TRUE(guid && host);

    std::map<std::string, std::vector<std::string>> guids_of;
    std::istringstream in(read_text(data_path("nodes_guids.txt")));
    std::string line;
    while (std::getline(in, line)) {
        auto colon = line.find(": ");
        ASSERT_NE(colon, std::string::npos) << line;
        guids_of[line.substr(0, colon)].push_back(line.substr(colon + 2));
    }
    ASSERT_EQ(guids_of.size(), 16u);

    std::map<std::set<int>, std::set<std::string>> groups; // leaf set -> hosts
    for (const auto &kv : guids_of) {
        ASSERT_EQ(kv.second.size(), 8u) << kv.first;
        std::set<int> leaves, spines;
        for (const auto &g : kv.second) {
            int leaf = mxh_topo_conf_find_leaf(guid.get(), g.c_str());
            ASSERT_GE(leaf, 0) << g;
            leaves.insert(leaf);
            spines.insert(guid->switches[leaf].parent);
        }
        EXPECT_EQ(leaves.size(), 8u) << kv.first << ": 8 HCAs on 8 different leaves";
        EXPECT_EQ(spines.size(), 8u) << kv.first << ": one spine per rail";
        groups[leaves].insert(kv.first);
    }
    ASSERT_EQ(groups.size(), 5u);
    std::set<std::set<std::string>> from_guids, from_hosts;
    for (const auto &kv : groups)
        from_guids.insert(kv.second);
    for (int i = 0; i < host->num_switches; i++) {
        const mxh_topo_switch_t &s = host->switches[i];
        if (s.num_nodes > 0)
            from_hosts.insert(std::set<std::string>(s.nodes, s.nodes + s.num_nodes));
    }
    EXPECT_EQ(from_guids, from_hosts);
}

// ---------------------------------------------------------------------------
// real files: block_topology.txt

TEST(TopoConfReal, BlockTopology)
{
    LogCapture log;
    ConfPtr conf;
    ASSERT_NO_FATAL_FAILURE(load_data("block_topology.txt", MXH_TOPO_FORMAT_BLOCK, 4, &conf));
    const char *const names[4] = {"block_5e797fc6-0f46-421a-8724-0e102c0f723c",
                                  "block_5e797fc6-0f46-421a-8724-0e102c0f721e",
                                  "block_5e797fc6-0f46-421a-8724-0e102c0f724b",
                                  "block_5e797fc6-0f46-421a-8724-0e102c0f722a"};
    for (int b = 0; b < 4; b++) {
        const mxh_topo_switch_t &s = conf->switches[b];
        EXPECT_STREQ(s.name, names[b]);
        EXPECT_EQ(s.line, 3 * b + 3);
        EXPECT_EQ(s.parent, -1);
        EXPECT_EQ(s.num_children, 0);
        EXPECT_EQ(s.children, nullptr);
        EXPECT_EQ(mxh_topo_conf_depth(conf.get(), b), 0);
        ASSERT_EQ(s.num_nodes, 18);
        for (int k = 0; k < 18; k++)
            EXPECT_EQ(std::string(s.nodes[k]), "hpcbench-hpc-" + std::to_string(b + 1 + 4 * k));
    }
    // hpcbench-hpc-N is in block (N-1) % 4
    for (int n = 1; n <= 72; n++) {
        std::string h = "hpcbench-hpc-" + std::to_string(n);
        EXPECT_EQ(mxh_topo_conf_find_leaf(conf.get(), h.c_str()), (n - 1) % 4) << h;
    }
    EXPECT_EQ(mxh_topo_conf_find_leaf(conf.get(), "hpcbench-hpc-73"), -1);
    expect_quiet(log);
}

// ---------------------------------------------------------------------------
// hand-written fixtures and syntax

TEST(TopoConf, ThreeLevelTree)
{
    LogCapture log;
    ConfPtr conf = parse_file_ok(data_path("tree3.conf"));
    ASSERT_TRUE(conf);
    ASSERT_EQ(conf->num_switches, 7);
    const int leaf1 = 0, leaf2 = 1, leaf3 = 2, leaf4 = 3, spine1 = 4, spine2 = 5, core = 6;
    const char *const names[7] = {"leaf1", "leaf2", "leaf3", "leaf4", "spine1", "spine2", "core"};
    const int lines[7] = {4, 5, 6, 8, 10, 11, 12};
    const int parents[7] = {spine1, spine1, spine2, spine2, core, core, -1};
    const int depths[7] = {2, 2, 2, 2, 1, 1, 0};
    for (int i = 0; i < 7; i++) {
        EXPECT_STREQ(conf->switches[i].name, names[i]);
        EXPECT_EQ(conf->switches[i].line, lines[i]) << names[i];
        EXPECT_EQ(conf->switches[i].parent, parents[i]) << names[i];
        EXPECT_EQ(mxh_topo_conf_depth(conf.get(), i), depths[i]) << names[i];
    }
    EXPECT_EQ(node_list(conf->switches[leaf1]), seq("rack1-n", 1, 4, 2));
    auto l2 = seq("rack1-n", 5, 8, 2);
    l2.push_back("gpu1");
    l2.push_back("gpu2");
    EXPECT_EQ(node_list(conf->switches[leaf2]), l2);
    EXPECT_EQ(node_list(conf->switches[leaf3]),
              std::vector<std::string>({"r2-n0", "r2-n1", "r3-n0", "r3-n1"}));
    EXPECT_EQ(node_list(conf->switches[leaf4]),
              std::vector<std::string>({"login1.cluster.local", "login2"}));
    EXPECT_EQ(child_list(conf->switches[spine1]), std::vector<std::string>({"leaf1", "leaf2"}));
    EXPECT_EQ(child_list(conf->switches[spine2]),
              std::vector<std::string>({"leaf3", "leaf4", "leaf1"}));
    EXPECT_EQ(conf->switches[spine2].children[2], leaf1);
    EXPECT_EQ(child_list(conf->switches[core]), std::vector<std::string>({"spine1", "spine2"}));

    EXPECT_EQ(mxh_topo_conf_find_leaf(conf.get(), "rack1-n07"), leaf2);
    EXPECT_EQ(mxh_topo_conf_find_leaf(conf.get(), "rack1-n7"), -1);
    EXPECT_EQ(mxh_topo_conf_find_leaf(conf.get(), "r3-n1"), leaf3);
    EXPECT_EQ(mxh_topo_conf_find_leaf(conf.get(), "login1"), leaf4);
    EXPECT_EQ(mxh_topo_conf_find_leaf(conf.get(), "login1.other.domain"), leaf4);
    EXPECT_EQ(mxh_topo_conf_find_leaf(conf.get(), "login2.cluster.local"), leaf4);
    EXPECT_EQ(mxh_topo_conf_find_leaf(conf.get(), "gpu1.cluster.local"), leaf2);
    expect_quiet(log);
}

TEST(TopoConf, ContinuationAndComments)
{
    LogCapture log;
    // the backslash is removed and the lines are joined without a separator
    ConfPtr c1 = parse_string_ok("SwitchName=s1 Nodes=a,\\\nb,c\n");
    ASSERT_TRUE(c1);
    EXPECT_EQ(node_list(c1->switches[0]), std::vector<std::string>({"a", "b", "c"}));
    // blanks after the backslash, a comment before it, CRLF line ends
    ConfPtr c2 = parse_string_ok("# header\r\n\r\nSwitchName=s1 \\  \r\n   Nodes=n[1-2] # c \\\r\n"
                                 "SwitchName=s2 Switches=s1 LinkSpeed=foo");
    ASSERT_TRUE(c2);
    ASSERT_EQ(c2->num_switches, 2);
    EXPECT_EQ(node_list(c2->switches[0]), std::vector<std::string>({"n1", "n2"}));
    EXPECT_EQ(c2->switches[1].line, 5);
    EXPECT_EQ(c2->switches[0].parent, 1);
    // a continued last line without a newline
    ConfPtr c3 = parse_string_ok("SwitchName=s1 Nodes=x \\");
    ASSERT_TRUE(c3);
    EXPECT_EQ(node_list(c3->switches[0]), std::vector<std::string>({"x"}));
    // keys are case-insensitive, values are not
    ConfPtr c4 = parse_string_ok("sWiTcHnAmE=Leaf NODES=Host[1-2]\nswitchname=Top switches=Leaf");
    ASSERT_TRUE(c4);
    EXPECT_STREQ(c4->switches[0].name, "Leaf");
    EXPECT_EQ(node_list(c4->switches[0]), std::vector<std::string>({"Host1", "Host2"}));
    EXPECT_EQ(c4->switches[0].parent, 1);
    // a switch without Nodes= or Switches= is accepted; a leaf may have Switches=
    ConfPtr c5 = parse_string_ok("SwitchName=a\nSwitchName=b Nodes=n1 Switches=a");
    ASSERT_TRUE(c5);
    EXPECT_EQ(c5->switches[0].parent, 1);
    EXPECT_EQ(mxh_topo_conf_find_leaf(c5.get(), "n1"), 1);
    EXPECT_TRUE(log.errors().empty());
}

TEST(TopoConf, BlockSyntaxInline)
{
    LogCapture log;
    ConfPtr conf = parse_string_ok("BlockSizes=4,8\nBlockName=b1 Nodes=n[1-4]\n"
                                   "blockname=b2 nodes=n[5-8]\nBlockName=b3\n");
    ASSERT_TRUE(conf);
    EXPECT_EQ(conf->format, MXH_TOPO_FORMAT_BLOCK);
    ASSERT_EQ(conf->num_switches, 3);
    EXPECT_EQ(conf->switches[1].num_nodes, 4);
    EXPECT_EQ(conf->switches[2].num_nodes, 0);
    EXPECT_EQ(mxh_topo_conf_find_leaf(conf.get(), "n6"), 1);
}

TEST(TopoConf, BackEdgeOnlyWhenTheOtherSideIsFarther)
{
    LogCapture log;
    // a 2-level version of topology.txt: the top lists the spines, the spines list the top
    ConfPtr conf = parse_string_ok("SwitchName=l1 Nodes=n1\nSwitchName=l2 Nodes=n2\n"
                                   "SwitchName=s1 Switches=l1,top\n"
                                   "SwitchName=s2 Switches=l2,top\n"
                                   "SwitchName=top Switches=s1,s2\n");
    ASSERT_TRUE(conf);
    EXPECT_EQ(conf->switches[2].parent, 4);
    EXPECT_EQ(conf->switches[3].parent, 4);
    EXPECT_EQ(conf->switches[4].parent, -1);
    EXPECT_EQ(child_list(conf->switches[2]), std::vector<std::string>({"l1"}));
    ASSERT_EQ(log.warnings().size(), 1u);
    EXPECT_TRUE(names_line(log.warnings()[0], "test", 3)) << log.warnings()[0];
    EXPECT_NE(log.warnings()[0].find("ignored 2 back-edge(s)"), std::string::npos);

    // a leaf listing its spine: the spine (farther) stays the parent, the leaf's
    // Switches= becomes empty
    log.clear();
    ConfPtr c2 = parse_string_ok("SwitchName=l Nodes=n1 Switches=s\nSwitchName=s Switches=l\n");
    ASSERT_TRUE(c2);
    EXPECT_EQ(c2->switches[0].parent, 1);
    EXPECT_EQ(c2->switches[0].num_children, 0);
    EXPECT_EQ(c2->switches[0].child_names, nullptr);
    EXPECT_EQ(c2->switches[1].parent, -1);
    EXPECT_EQ(log.warnings().size(), 1u);
}

TEST(TopoConf, FindLeafMatchingRules)
{
    LogCapture log;
    ConfPtr conf = parse_string_ok("SwitchName=a Nodes=n1.x,node1\n"
                                   "SwitchName=b Nodes=n1,10.0.0.1,node2.cluster.local\n");
    ASSERT_TRUE(conf);
    const mxh_topo_conf_t *c = conf.get();
    EXPECT_EQ(mxh_topo_conf_find_leaf(c, "n1"), 1);   // exact beats an earlier short match
    EXPECT_EQ(mxh_topo_conf_find_leaf(c, "n1.x"), 0); // exact
    EXPECT_EQ(mxh_topo_conf_find_leaf(c, "n1.y"), 0); // short names "n1" == "n1" (first)
    EXPECT_EQ(mxh_topo_conf_find_leaf(c, "node1.cluster.local"), 0); // host FQDN, Nodes short
    EXPECT_EQ(mxh_topo_conf_find_leaf(c, "node2"), 1); // host short, Nodes FQDN
    EXPECT_EQ(mxh_topo_conf_find_leaf(c, "node2.other"), 1);
    EXPECT_EQ(mxh_topo_conf_find_leaf(c, "node"), -1);
    EXPECT_EQ(mxh_topo_conf_find_leaf(c, "node10"), -1);
    EXPECT_EQ(mxh_topo_conf_find_leaf(c, "10.0.0.1"), 1);  // exact
    EXPECT_EQ(mxh_topo_conf_find_leaf(c, "10.0.0.2"), -1); // addresses: no short match
    EXPECT_EQ(mxh_topo_conf_find_leaf(c, "10"), -1);
    EXPECT_EQ(mxh_topo_conf_find_leaf(c, ".x"), -1);
    EXPECT_EQ(mxh_topo_conf_find_leaf(c, ""), -1);
    EXPECT_EQ(mxh_topo_conf_find_leaf(c, nullptr), -1);
    EXPECT_EQ(mxh_topo_conf_find_leaf(nullptr, "n1"), -1);
    EXPECT_EQ(mxh_topo_conf_depth(c, -1), -1);
    EXPECT_EQ(mxh_topo_conf_depth(c, 2), -1);
    EXPECT_EQ(mxh_topo_conf_depth(nullptr, 0), -1);
}

// ---------------------------------------------------------------------------
// malformed input: MXH_ERR_PARSE, one error "SOURCE:LINE: ..." quoting the cause

struct BadCase {
    const char *text;
    int         line;
    std::vector<std::string> says; // substrings of the message
};

TEST(TopoConfErrors, MalformedStrings)
{
    const BadCase cases[] = {
        {"SwitchName=s1 Nodse=n1", 1, {"unknown key 'Nodse'"}},
        {"# c\nSwitchName=s1 Nodes", 2, {"expected KEY=VALUE", "'Nodes'"}},
        {"\n\nNodes=n1", 3, {"must start with SwitchName=", "'Nodes='"}},
        {"SwitchName= Nodes=n1", 1, {"empty switch name"}},
        {"SwitchName=a,b Nodes=n1", 1, {"invalid character ','", "'a,b'"}},
        {"SwitchName=s1 Nodes=a\nSwitchName=s2 Nodes=b\nSwitchName=s1 Nodes=c", 3,
         {"switch 's1' defined twice", "line 1"}},
        {"SwitchName=s1 Nodes=n[3-1]", 1, {"bad hostlist 'n[3-1]'", "upper bound below"}},
        {"SwitchName=s1 Nodes=", 1, {"empty hostlist"}},
        {"SwitchName=s1 Nodes=a,,b", 1, {"'a,,b'", "empty element"}},
        {"SwitchName=s1 Switches=x[1-2", 1, {"unclosed '['"}},
        {"SwitchName=s1 \\\n   \\\n  Nodes=n[1-", 3, {"'n[1-'"}},
        {"SwitchName=s1 Nodes=a Nodes=b", 1, {"'Nodes=' given twice", "'s1'"}},
        {"SwitchName=s1 Nodes=a \\\n SwitchName=s2", 2,
         {"second record key 'SwitchName='", "line 1"}},
        {"SwitchName=s1 Nodes=n1,n[0-2]", 1, {"node 'n1' listed twice", "'s1'"}},
        {"SwitchName=s1 Nodes=n1\nSwitchName=s2 Nodes=n2\nSwitchName=s3 Nodes=n[2-3]", 3,
         {"node 'n2' of 's3' is already under 's2' (line 2)"}},
        {"SwitchName=l Nodes=n\nSwitchName=t Switches=l,x", 2,
         {"switch 'x' in Switches= of 't' is not defined"}},
        {"SwitchName=l Nodes=n\nSwitchName=t Switches=l,t", 2, {"'t' lists itself"}},
        {"SwitchName=l Nodes=n\nSwitchName=t Switches=l,l", 2,
         {"switch 'l' listed twice in Switches= of 't'"}},
        {"SwitchName=l Nodes=n1\nSwitchName=a Switches=l,b\nSwitchName=b Switches=c\n"
         "SwitchName=c Switches=a",
         4, {"cycle in Switches=: a -> b -> c -> a"}},
        {"SwitchName=a Switches=b\nSwitchName=b Switches=a", 2,
         {"cycle in Switches=: a -> b -> a"}},
        {"SwitchName=s Nodes=a\nBlockName=b Nodes=c", 2,
         {"BlockName= (block syntax) mixed with tree syntax (line 1)"}},
        {"BlockName=b Nodes=c\n\nSwitchName=s Nodes=a", 3,
         {"SwitchName= (tree syntax) mixed with block syntax (line 1)"}},
        {"SwitchName=s Nodes=a\nBlockSizes=1", 2, {"BlockSizes= (block syntax) mixed"}},
        {"BlockName=b Switches=c", 1, {"'Switches=' is not valid on a BlockName= line"}},
        {"BlockName=b LinkSpeed=1", 1, {"'LinkSpeed=' is not valid"}},
        {"BlockName=b Nodes=n1\nBlockName=b Nodes=n2", 2, {"block 'b' defined twice"}},
        {"BlockName=b Nodes=n1\nBlockSizes=4,x", 2, {"bad BlockSizes value '4,x'"}},
        {"BlockName=b Nodes=n1\nBlockSizes=", 2, {"bad BlockSizes value ''"}},
        {"BlockName=b Nodes=n1\nBlockSizes=4 Nodes=n2", 2,
         {"unexpected 'Nodes=' on a BlockSizes= line"}},
        {"SwitchName=s1 Nodes=a\\\\\nb", 1, {"invalid character 0x5c"}}, // even backslashes
        {"# only comments\n\n   # and blanks\n", 3, {"no SwitchName= or BlockName= line"}},
        {"", 0, {"no SwitchName= or BlockName= line"}},
    };
    for (const BadCase &c : cases) {
        LogCapture log;
        mxh_topo_conf_t *conf = reinterpret_cast<mxh_topo_conf_t *>(0x1);
        EXPECT_EQ(mxh_topo_conf_parse_string(c.text, "bad.conf", &conf), MXH_ERR_PARSE) << c.text;
        EXPECT_EQ(conf, nullptr);
        auto errs = log.errors();
        ASSERT_EQ(errs.size(), 1u) << c.text;
        EXPECT_TRUE(names_line(errs[0], "bad.conf", c.line)) << c.text;
        for (const auto &s : c.says)
            EXPECT_NE(errs[0].find(s), std::string::npos)
                << "input: " << c.text << "\nmessage: " << errs[0] << "\nwanted: " << s;
        EXPECT_EQ(std::string(mxh_log_last_error()), errs[0]);
    }
}

TEST(TopoConfErrors, MalformedFiles)
{
    struct FileCase {
        const char *file;
        int         line;
        std::vector<std::string> says;
    };
    const FileCase cases[] = {
        {"bad_undefined.conf", 5, {"switch 'leaf9' in Switches= of 'spine' is not defined"}},
        {"bad_cycle.conf", 5, {"cycle in Switches=: spine1 -> spine2 -> spine1"}},
        {"bad_two_leaves.conf", 4, {"node 'n3' of 'leaf2' is already under 'leaf1' (line 2)"}},
    };
    for (const FileCase &c : cases) {
        LogCapture log;
        mxh_topo_conf_t *conf = nullptr;
        std::string path = data_path(c.file);
        EXPECT_EQ(mxh_topo_conf_parse_file(path.c_str(), &conf), MXH_ERR_PARSE) << c.file;
        EXPECT_EQ(conf, nullptr);
        auto errs = log.errors();
        ASSERT_EQ(errs.size(), 1u) << c.file;
        EXPECT_TRUE(names_line(errs[0], path, c.line)) << errs[0];
        for (const auto &s : c.says)
            EXPECT_NE(errs[0].find(s), std::string::npos) << errs[0] << "\nwanted: " << s;
    }
}

// 320 bytes of 'SwitchName=sK Nodes=X[0-999999]' lines took 920 MiB per rank: the file's
// hostlists now expand to 1 Mi names or 64 MiB together, an error naming the limit and line.
TEST(TopoConfLimits, ExpansionOfOneFileIsBoundedInNamesAndBytes)
{
    std::string small;
    for (int i = 0; i < 10; i++)
        small += "SwitchName=s" + std::to_string(i) + " Nodes=" + std::string(1, char('a' + i)) +
                 "[0-999999]\n";
    ASSERT_EQ(small.size(), 320u);
    const std::string limits = " (the limit of one file's hostlists together: 1048576 names or "
                               "64 MiB, whichever first)";
    const struct {
        std::string text;
        std::string error;
    } cases[] = {
        {small, "test:2: hostlist 'b[0-999999]' expands to more than 1048576 names" + limits},
        {"SwitchName=s0 Nodes=" + std::string(150, 'x') + "[0-999999]\n",
         "test:1: hostlist '" + std::string(150, 'x') + "[0-999999]' expands to more than 64 MiB of names" + limits},
        {"SwitchName=top Switches=s[0-1048576]\nSwitchName=x Nodes=a\n",
         "test:1: hostlist 's[0-1048576]' expands to more than 1048576 names" + limits},
        // exactly the limit, then one name more (Switches= counts too)
        {"SwitchName=s0 Nodes=n[0-524287]\nSwitchName=s1 Nodes=m[0-524287]\nSwitchName=s2 Switches=s0\n",
         "test:3: hostlist 's0' expands to more than 1048576 names" + limits},
    };
    for (const auto &c : cases) {
        LogCapture log;
        QuietStderr quiet;
        mxh_topo_conf_t *conf = nullptr;
        EXPECT_EQ(mxh_topo_conf_parse_string(c.text.c_str(), "test", &conf), MXH_ERR_PARSE);
        EXPECT_EQ(conf, nullptr);
        ASSERT_EQ(log.errors().size(), 1u);
        EXPECT_EQ(log.errors()[0], c.error);
    }
    // 1 Mi names in all parse
    {
        ConfPtr conf = parse_string_ok("SwitchName=s0 Nodes=n[0-524287]\nSwitchName=s1 Nodes=m[0-524287]\n");
        ASSERT_TRUE(conf);
        EXPECT_EQ(conf->switches[0].num_nodes + conf->switches[1].num_nodes, 1 << 20);
        EXPECT_STREQ(conf->switches[1].nodes[524287], "m524287");
    }
    // the memory of the refused 320-byte file, in a child process
    long mib = mxh_test::child_peak_rss_mib([&] {
        mxh_log_set_level(MXH_LOG_ERROR);
        mxh_log_set_hook([](mxh_log_level_t, const char *, void *) {}, nullptr);
        mxh_topo_conf_t *conf = nullptr;
        return mxh_topo_conf_parse_string(small.c_str(), "test", &conf) == MXH_ERR_PARSE;
    });
    EXPECT_GT(mib, 0);
    EXPECT_LT(mib, 160) << "peak resident memory of the 320-byte file, MiB";
}

TEST(TopoConfErrors, FileProblems)
{
    std::string dir = ::testing::TempDir();
    if (dir.empty() || dir.back() != '/')
        dir += "/";
    mxh_topo_conf_t *conf = nullptr;
    {
        LogCapture log;
        std::string missing = dir + "mxh_no_such_topology.conf";
        EXPECT_EQ(mxh_topo_conf_parse_file(missing.c_str(), &conf), MXH_ERR_IO);
        EXPECT_EQ(conf, nullptr);
        ASSERT_EQ(log.errors().size(), 1u);
        EXPECT_NE(log.errors()[0].find(missing), std::string::npos);
        EXPECT_NE(log.errors()[0].find(strerror(ENOENT)), std::string::npos) << log.errors()[0];
    }
    {
        LogCapture log;
        EXPECT_EQ(mxh_topo_conf_parse_file(MXH_TEST_DATADIR, &conf), MXH_ERR_IO);
        ASSERT_EQ(log.errors().size(), 1u);
        EXPECT_NE(log.errors()[0].find(strerror(EISDIR)), std::string::npos) << log.errors()[0];
    }
    {
        LogCapture log;
        const char text[] = "SwitchName=s1 Nodes=a\nSwitchName=s2 \0Nodes=b\n";
        TempFile file(std::string(text, sizeof(text) - 1));
        const std::string &path = file.path();
        EXPECT_EQ(mxh_topo_conf_parse_file(path.c_str(), &conf), MXH_ERR_PARSE);
        ASSERT_EQ(log.errors().size(), 1u);
        EXPECT_TRUE(names_line(log.errors()[0], path, 2)) << log.errors()[0];
        EXPECT_NE(log.errors()[0].find("NUL byte"), std::string::npos);
    }
    {
        LogCapture log;
        TempFile file("SwitchName=s1 Nodes=a\n");
        const std::string &path = file.path();
        ASSERT_EQ(truncate(path.c_str(), (off_t)MXH_TOPO_CONF_MAX_FILE_BYTES + 1), 0);
        EXPECT_EQ(mxh_topo_conf_parse_file(path.c_str(), &conf), MXH_ERR_PARSE);
        ASSERT_EQ(log.errors().size(), 1u);
        EXPECT_NE(log.errors()[0].find("more than the limit"), std::string::npos);
    }
    {
        LogCapture log;
        EXPECT_EQ(mxh_topo_conf_parse_file(nullptr, &conf), MXH_ERR_INVALID_PARAM);
        EXPECT_EQ(mxh_topo_conf_parse_string(nullptr, "x", &conf), MXH_ERR_INVALID_PARAM);
        EXPECT_EQ(mxh_topo_conf_parse_string("SwitchName=a", "x", nullptr),
                  MXH_ERR_INVALID_PARAM);
        mxh_topo_conf_destroy(nullptr);
    }
}

// ---------------------------------------------------------------------------
// fuzz / property: random mutations of valid files never crash, and either
// parse into a consistent tree or fail with one "SOURCE:LINE: ..." error.

namespace {

void check_consistent(const mxh_topo_conf_t *c, const std::string &text)
{
    ASSERT_GT(c->num_switches, 0) << text;
    std::set<std::string> names;
    for (int i = 0; i < c->num_switches; i++) {
        const mxh_topo_switch_t &s = c->switches[i];
        ASSERT_NE(s.name, nullptr);
        EXPECT_TRUE(names.insert(s.name).second) << "duplicate switch " << s.name;
        ASSERT_GE(s.parent, -1);
        ASSERT_LT(s.parent, c->num_switches);
        ASSERT_GE(s.num_nodes, 0);
        ASSERT_GE(s.num_children, 0);
        EXPECT_GE(s.line, 1);
        int d = mxh_topo_conf_depth(c, i);
        ASSERT_GE(d, 0) << text;
        if (s.parent >= 0) {
            EXPECT_EQ(d, mxh_topo_conf_depth(c, s.parent) + 1);
            const mxh_topo_switch_t &p = c->switches[s.parent];
            EXPECT_TRUE(std::find(p.children, p.children + p.num_children, i) !=
                        p.children + p.num_children);
        }
        for (int k = 0; k < s.num_children; k++) {
            ASSERT_GE(s.children[k], 0);
            ASSERT_LT(s.children[k], c->num_switches);
            EXPECT_STREQ(c->switches[s.children[k]].name, s.child_names[k]);
            EXPECT_GE(c->switches[s.children[k]].parent, 0);
        }
        // find_leaf is a linear scan: check a few nodes of each switch
        for (int k = 0; k < s.num_nodes; k += 1 + s.num_nodes / 4)
            EXPECT_EQ(mxh_topo_conf_find_leaf(c, s.nodes[k]), i) << s.nodes[k];
        if (c->format == MXH_TOPO_FORMAT_BLOCK) {
            EXPECT_EQ(s.parent, -1);
            EXPECT_EQ(s.num_children, 0);
        }
    }
}

// "SOURCE:DIGITS: something"
bool has_source_line(const std::string &msg, const std::string &src)
{
    if (msg.compare(0, src.size() + 1, src + ":") != 0)
        return false;
    size_t i = src.size() + 1, d = i;
    while (i < msg.size() && msg[i] >= '0' && msg[i] <= '9')
        i++;
    return i > d && msg.compare(i, 2, ": ") == 0 && msg.size() > i + 2;
}

std::string mutate(std::mt19937 &rng, const std::string &seed)
{
    static const std::string alphabet = "[]-,=#\\\n\r\t 0123456789abnsw.";
    static const char *const snippets[] = {
        "[",          "]",           "[1-3]",       "[3-1]",      "[[",    ",,",
        "\\\n",       "\\",          "#",           "=",          "\n",    "Nodes=",
        "Switches=",  "SwitchName=", "BlockName=",  "BlockSizes=1", "LinkSpeed=1",
        " Nodes=x ",  "n[0-99999]",  "ibsw47",      "sw05",       "[01-10]", "\\ \n"};
    auto rnd = [&](size_t lo, size_t hi) {
        return std::uniform_int_distribution<size_t>(lo, hi)(rng);
    };
    std::string t = seed;
    int nmut = (int)rnd(1, 4);
    for (int m = 0; m < nmut; m++) {
        size_t pos = t.empty() ? 0 : rnd(0, t.size() - 1);
        switch (rnd(0, 7)) {
        case 0: // replace a byte
            if (!t.empty())
                t[pos] = alphabet[rnd(0, alphabet.size() - 1)];
            break;
        case 1: // insert bytes
            t.insert(pos, 1, alphabet[rnd(0, alphabet.size() - 1)]);
            break;
        case 2: { // insert a snippet
            const char *s = snippets[rnd(0, sizeof(snippets) / sizeof(snippets[0]) - 1)];
            t.insert(pos, s);
            break;
        }
        case 3: // delete a range
            if (!t.empty())
                t.erase(pos, rnd(1, 40));
            break;
        case 4: { // duplicate a line
            size_t b = t.rfind('\n', pos);
            b = b == std::string::npos ? 0 : b + 1;
            size_t e = t.find('\n', pos);
            e = e == std::string::npos ? t.size() : e + 1;
            std::string line = t.substr(b, e - b);
            t.insert(rnd(0, t.size()), line + "\n");
            break;
        }
        case 5: { // swap two lines
            std::vector<std::string> lines;
            std::istringstream in(t);
            std::string l;
            while (std::getline(in, l))
                lines.push_back(l);
            if (lines.size() >= 2)
                std::swap(lines[rnd(0, lines.size() - 1)], lines[rnd(0, lines.size() - 1)]);
            t.clear();
            for (const auto &x : lines)
                t += x + "\n";
            break;
        }
        case 6: // truncate
            t.resize(pos);
            break;
        default: { // change a digit run, possibly into a huge number
            size_t d = t.find_first_of("0123456789", pos);
            if (d != std::string::npos)
                t.insert(d, std::to_string(rnd(0, 1) ? rnd(0, 9) : rnd(0, 99999999)));
            break;
        }
        }
    }
    return std::string(t.c_str()); // as a C string: an inserted NUL ends it
}

} // namespace

TEST(TopoConfFuzz, RandomMutationsNeverCrash)
{
    const char *const seeds_files[] = {"slurm_topology.txt", "topology.txt",
                                       "block_topology.txt", "tree3.conf",
                                       "bad_undefined.conf", "bad_cycle.conf",
                                       "bad_two_leaves.conf"};
    std::vector<std::string> seeds;
    for (const char *f : seeds_files)
        seeds.push_back(read_text(data_path(f)));

    std::mt19937 rng(0x5eed1234u);
    int n_ok = 0, n_parse = 0;
    QuietStderr quiet;
    LogCapture log;
    for (int iter = 0; iter < 4000; iter++) {
        const std::string &seed = seeds[iter % seeds.size()];
        std::string text = mutate(rng, seed);
        log.clear();
        mxh_topo_conf_t *conf = nullptr;
        mxh_status_t st = mxh_topo_conf_parse_string(text.c_str(), "fuzz", &conf);
        ASSERT_TRUE(st == MXH_OK || st == MXH_ERR_PARSE)
            << "status " << st << " for:\n" << text;
        auto errs = log.errors();
        if (st == MXH_OK) {
            n_ok++;
            ASSERT_NE(conf, nullptr);
            EXPECT_TRUE(errs.empty());
            check_consistent(conf, text);
            mxh_topo_conf_destroy(conf);
        } else {
            n_parse++;
            EXPECT_EQ(conf, nullptr);
            ASSERT_EQ(errs.size(), 1u) << text;
            EXPECT_TRUE(has_source_line(errs[0], "fuzz")) << errs[0] << "\nfor:\n" << text;
        }
        if (HasFatalFailure())
            return;
    }
    // both outcomes are exercised
    EXPECT_GT(n_ok, 200);
    EXPECT_GT(n_parse, 200);
    RecordProperty("parsed_ok", n_ok);
    RecordProperty("parse_errors", n_parse);
}
