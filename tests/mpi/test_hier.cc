// Introspection: the hierarchy MPIX_Hier_comm_* reports must match the fake
// layout the job was started with (run_mpi_tests.sh), and its communicators
// must be usable and freed with their parent.
//
// The layout as the test sees it (computed, not trusted):
//   node  = same MPIX_HIER_HOSTNAME (else the processor name) AND same
//           MPI_COMM_TYPE_SHARED group (MPIR_CVAR_NUM_CLIQUES fakes nodes that way);
//   local = index of the rank among the ranks of its node (MPI_COMM_WORLD order);
//   leaf  = $MXH_TEST_EXPECT_LEAF of the rank ("" when no topology file).
// Expectations passed by the run script (all optional):
//   MXH_TEST_EXPECT_NODES=N       number of fake nodes (checks the launch itself);
//   MXH_TEST_EXPECT_LEVELS=a,b,c  exact level names, innermost first ("none": 0 levels);
//   MXH_TEST_EXPECT_LEAF=name     per rank (MPMD -env), the leaf switch of its node.
// Always checked, on any layout:
//   level "node"  = exactly the ranks of my node;
//   level "rail"  = exactly the ranks with my local index under my leaf;
//   level "spine" = ranks with my local index, one per leaf, me included;
//   a level that is absent would have had groups of size 1 only.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "mpi_util.hh"
#include "mxh_test_shim.h"

namespace {

struct Layout {
    int rank = 0, size = 1;
    std::vector<std::string> node; // node key of every WORLD rank
    std::vector<std::string> leaf; // leaf of every WORLD rank
    std::vector<int> local;        // local index of every WORLD rank
    int num_nodes = 0;

    std::set<int> same_node(int r) const
    {
        std::set<int> s;
        for (int q = 0; q < size; q++)
            if (node[(size_t)q] == node[(size_t)r])
                s.insert(q);
        return s;
    }
    std::set<int> same_rail(int r) const
    {
        std::set<int> s;
        for (int q = 0; q < size; q++)
            if (local[(size_t)q] == local[(size_t)r] && leaf[(size_t)q] == leaf[(size_t)r])
                s.insert(q);
        return s;
    }
    int leaves_with_local(int l) const
    {
        std::set<std::string> s;
        for (int q = 0; q < size; q++)
            if (local[(size_t)q] == l)
                s.insert(leaf[(size_t)q]);
        return (int)s.size();
    }
};

std::vector<std::string> allgather_string(const std::string &mine, MPI_Comm comm)
{
    int size;
    MPI_Comm_size(comm, &size);
    char buf[512] = "";
    snprintf(buf, sizeof(buf), "%s", mine.c_str());
    std::vector<char> all((size_t)size * 512);
    MPI_Allgather(buf, 512, MPI_CHAR, all.data(), 512, MPI_CHAR, comm);
    std::vector<std::string> out;
    for (int r = 0; r < size; r++)
        out.emplace_back(&all[(size_t)r * 512]);
    return out;
}

const Layout &layout()
{
    static Layout L;
    static bool done = false;
    if (done)
        return L;
    done = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &L.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &L.size);
    MPI_Comm shm;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, L.rank, MPI_INFO_NULL, &shm);
    int first = L.rank; // lowest WORLD rank of my shared-memory group
    MPI_Allreduce(&L.rank, &first, 1, MPI_INT, MPI_MIN, shm);
    MPI_Comm_free(&shm);
    char host[256];
    mxh_node_name(host, sizeof(host));
    L.node = allgather_string(std::string(host) + "#shm" + std::to_string(first), MPI_COMM_WORLD);
    L.leaf = allgather_string(mxh_env("MXH_TEST_EXPECT_LEAF", ""), MPI_COMM_WORLD);
    std::map<std::string, int> count;
    for (int r = 0; r < L.size; r++)
        L.local.push_back(count[L.node[(size_t)r]]++);
    L.num_nodes = (int)count.size();
    return L;
}

std::string set_str(const std::set<int> &s)
{
    std::ostringstream os;
    os << "{";
    bool first = true;
    for (int r : s) {
        os << (first ? "" : ",") << r;
        first = false;
    }
    os << "}";
    return os.str();
}

std::set<int> members(MPI_Comm c) { return mxh_test::world_members(c); }

struct Level {
    MPI_Comm comm = MPI_COMM_NULL;
    std::string name;
};

std::vector<Level> levels_of(MPI_Comm comm)
{
    std::vector<Level> v;
    int n = -1;
    EXPECT_EQ(MPIX_Hier_comm_get_num_levels(comm, &n), MPI_SUCCESS);
    EXPECT_GE(n, 0);
    EXPECT_LE(n, MPIX_HIER_MAX_LEVELS);
    for (int l = 0; l < n && l <= MPIX_HIER_MAX_LEVELS; l++) {
        Level lv;
        char name[MPIX_HIER_MAX_LEVEL_NAME + 8];
        memset(name, 0x7f, sizeof(name));
        EXPECT_EQ(MPIX_Hier_comm_get_level(comm, l, &lv.comm, name), MPI_SUCCESS) << "level " << l;
        EXPECT_NE(memchr(name, 0, MPIX_HIER_MAX_LEVEL_NAME), nullptr)
            << "level " << l << ": name not NUL-terminated within MPIX_HIER_MAX_LEVEL_NAME";
        name[MPIX_HIER_MAX_LEVEL_NAME - 1] = 0;
        lv.name = name;
        v.push_back(lv);
    }
    return v;
}

// Whether the environment sets a cost-model network parameter (then
// MPIX_HIER_COST_MEASURE=auto does not measure).
bool mxh_test_env_sets_network()
{
    static const char *const v[] = {"NODE_LATENCY", "NODE_BW", "NET_LATENCY", "NET_BW",
                                    "SPINE_LATENCY", "TORUS_LATENCY", "TORUS_BW",
                                    "LAT_FACTOR", "BW_FACTOR"};
    for (const char *x : v)
        if (getenv(("MPIX_HIER_COST_" + std::string(x)).c_str()) != nullptr)
            return true;
    return false;
}

class Hier : public MxhMpiTest {};

TEST_F(Hier, LaunchLayoutAsExpected)
{
    const Layout &L = layout();
    int want = mxh_env_int("MXH_TEST_EXPECT_NODES", -1);
    if (want >= 0) {
        EXPECT_EQ(L.num_nodes, want) << "the job was not started with the layout the run script "
                                        "meant (MXH_TEST_EXPECT_NODES)";
    }
    if (L.rank == 0) {
        std::printf("  layout: %d node(s):", L.num_nodes);
        for (int r = 0; r < L.size; r++)
            std::printf(" %d=%s/%d%s%s", r, L.node[(size_t)r].c_str(), L.local[(size_t)r],
                        L.leaf[(size_t)r].empty() ? "" : "@", L.leaf[(size_t)r].c_str());
        std::printf("\n");
    }
}

TEST_F(Hier, NumLevelsAndNames)
{
    std::vector<Level> lv = levels_of(MPI_COMM_WORLD);
    int n = (int)lv.size(), nmin, nmax;
    MPI_Allreduce(&n, &nmin, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&n, &nmax, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_EQ(nmin, nmax) << "ranks disagree on the number of levels";
    std::string joined;
    for (size_t l = 0; l < lv.size(); l++)
        joined += (l ? "," : "") + lv[l].name;
    auto all = allgather_string(joined, MPI_COMM_WORLD);
    for (size_t r = 0; r < all.size(); r++)
        EXPECT_EQ(all[r], all[0]) << "rank " << r << " has levels " << all[r];
    // names: known, distinct, in order node < rail < spine
    const std::vector<std::string> order = {"node", "rail", "spine"};
    int last = -1;
    for (auto &l : lv) {
        auto it = std::find(order.begin(), order.end(), l.name);
        EXPECT_NE(it, order.end()) << "unknown level name '" << l.name << "'";
        if (it != order.end()) {
            int k = (int)(it - order.begin());
            EXPECT_GT(k, last) << "levels out of order: " << joined;
            last = k;
        }
    }
    const char *want = getenv("MXH_TEST_EXPECT_LEVELS");
    if (want && *want) {
        std::string w = want;
        if (w == "none")
            w = "";
        EXPECT_EQ(joined, w) << "levels";
        // regular layouts: the level sizes multiply to the communicator size
        long prod = 1;
        for (auto &l : lv) {
            int s;
            MPI_Comm_size(l.comm, &s);
            prod *= s;
        }
        if (!lv.empty()) {
            EXPECT_EQ(prod, layout().size) << "product of the level sizes (" << joined << ")";
        }
    }
    if (layout().rank == 0)
        std::printf("  levels: %s\n", joined.empty() ? "(none)" : joined.c_str());
}

TEST_F(Hier, LevelMembersMatchLayout)
{
    const Layout &L = layout();
    std::vector<Level> lv = levels_of(MPI_COMM_WORLD);
    bool has_node = false, has_rail = false, has_spine = false;
    for (auto &l : lv) {
        std::set<int> got = members(l.comm);
        if (l.comm == MPI_COMM_NULL) // tolerated for a group of one rank only
            got.insert(L.rank);
        EXPECT_TRUE(got.count(L.rank)) << "level " << l.name << " does not contain me";
        if (l.name == "node") {
            has_node = true;
            std::set<int> want = L.same_node(L.rank);
            EXPECT_EQ(got, want) << "node level: members " << set_str(got)
                                 << ", ranks with my node " << set_str(want);
        } else if (l.name == "rail") {
            has_rail = true;
            std::set<int> want = L.same_rail(L.rank);
            EXPECT_EQ(got, want) << "rail level: members " << set_str(got)
                                 << ", ranks with my local index and leaf " << set_str(want);
        } else if (l.name == "spine") {
            has_spine = true;
            std::set<std::string> leaves;
            for (int r : got) {
                EXPECT_EQ(L.local[(size_t)r], L.local[(size_t)L.rank])
                    << "spine level: rank " << r << " has another local index";
                EXPECT_TRUE(leaves.insert(L.leaf[(size_t)r]).second)
                    << "spine level: two members under leaf '" << L.leaf[(size_t)r] << "'";
            }
            if (getenv("MXH_TEST_EXPECT_LEVELS")) {
                EXPECT_EQ((int)got.size(), L.leaves_with_local(L.local[(size_t)L.rank]))
                    << "spine level: one member per leaf expected";
            }
        }
    }
    // an absent level would have had groups of size 1 only
    int max_node = 0, max_rail = 0;
    for (int r = 0; r < L.size; r++) {
        max_node = std::max(max_node, (int)L.same_node(r).size());
        max_rail = std::max(max_rail, (int)L.same_rail(r).size());
    }
    const char *enabled = getenv("MPIX_HIER_ENABLE");
    bool disabled = enabled && (!strcmp(enabled, "no") || !strcmp(enabled, "0"));
    if (!disabled && getenv("MXH_TEST_EXPECT_LEVELS")) {
        EXPECT_TRUE(has_node || max_node == 1) << "no node level but a node holds " << max_node
                                               << " ranks";
        EXPECT_TRUE(has_rail || max_rail == 1) << "no rail level but a rail group holds "
                                               << max_rail << " ranks";
    }
    (void)has_spine;
}

TEST_F(Hier, LevelCommsCachedAndUsable)
{
    const Layout &L = layout();
    std::vector<Level> lv = levels_of(MPI_COMM_WORLD);
    std::vector<Level> again = levels_of(MPI_COMM_WORLD);
    EXPECT_EQ(lv.size(), again.size());
    for (size_t l = 0; l < lv.size() && l < again.size(); l++) {
        EXPECT_EQ(lv[l].comm, again[l].comm) << "level " << l << ": a new communicator each call";
        MPI_Comm c = lv[l].comm;
        if (c == MPI_COMM_NULL) // a group of one rank (checked in LevelMembersMatchLayout)
            continue;
        std::set<int> m = members(c);
        long want = 0;
        for (int r : m)
            want += r + 1;
        // the user communicates on the library's level communicator
        long mine = L.rank + 1, got = -1, got2 = -1;
        EXPECT_EQ(MPI_Allreduce(&mine, &got, 1, MPI_LONG, MPI_SUM, c), MPI_SUCCESS);
        EXPECT_EQ(got, want) << "MPI_Allreduce on level " << lv[l].name;
        // and calls the library on it (a hierarchy of a level communicator)
        EXPECT_EQ(MPIX_Hier_allreduce(&mine, &got2, 1, MPI_LONG, MPI_SUM, c), MPI_SUCCESS);
        EXPECT_EQ(got2, want) << "MPIX_Hier_allreduce on level " << lv[l].name;
        // a dup of it is the user's own
        MPI_Comm d;
        MPI_Comm_dup(c, &d);
        long got3 = -1;
        EXPECT_EQ(MPIX_Hier_allreduce(&mine, &got3, 1, MPI_LONG, MPI_SUM, d), MPI_SUCCESS);
        EXPECT_EQ(got3, want) << "MPIX_Hier_allreduce on a dup of level " << lv[l].name;
        MPI_Comm_free(&d);
    }
}

TEST_F(Hier, DescribeConsistent)
{
    std::vector<Level> lv = levels_of(MPI_COMM_WORLD);
    int len = -1;
    std::vector<char> buf(65536, 0x7f);
    EXPECT_EQ(MPIX_Hier_comm_describe(MPI_COMM_WORLD, buf.data(), (int)buf.size(), &len),
              MPI_SUCCESS);
    EXPECT_GT(len, 0);
    EXPECT_LT(len, (int)buf.size());
    buf.back() = 0;
    std::string d(buf.data());
    EXPECT_EQ((int)d.size(), len) << "resultlen differs from the string length";
    uint64_t h = mxh_hash_bytes_fnv(MXH_FNV_INIT, d.data(), d.size());
    int bad;
    EXPECT_TRUE(mxh_hashes_agree(MPI_COMM_WORLD, &h, 1, &bad))
        << "the description differs across ranks; mine: " << d;
    for (auto &l : lv)
        EXPECT_NE(d.find(l.name), std::string::npos) << "description does not name level "
                                                     << l.name << ": " << d;
    // truncation: at most buflen chars including the NUL, full length reported
    char small[8];
    memset(small, 0x7f, sizeof(small));
    int len2 = -1;
    EXPECT_EQ(MPIX_Hier_comm_describe(MPI_COMM_WORLD, small, 8, &len2), MPI_SUCCESS);
    EXPECT_EQ(len2, len) << "resultlen with a short buffer";
    EXPECT_NE(memchr(small, 0, 8), nullptr) << "truncated description not NUL-terminated";
    if (memchr(small, 0, 8) && len >= 7) {
        EXPECT_EQ(std::string(small), d.substr(0, 7)) << "truncated description";
    }
    char one = 0x7f;
    EXPECT_EQ(MPIX_Hier_comm_describe(MPI_COMM_WORLD, &one, 1, nullptr), MPI_SUCCESS);
    EXPECT_EQ(one, 0) << "buflen=1 must give an empty string";
    if (layout().rank == 0)
        std::printf("  describe: %s\n", d.c_str());
}

// MPIX_HIER_COST_MEASURE: the hierarchy measures its levels (rank 0's ping-pongs,
// broadcast: the description agrees) where the model selects (MPIX_HIER_COST_MODEL yes
// or auto), unless told not to or told the network's parameters ('auto' keeps them).
std::string describe_with(const char *key, const char *value)
{
    MPI_Comm c;
    MPI_Info info;
    EXPECT_EQ(MPI_Comm_dup(MPI_COMM_WORLD, &c), MPI_SUCCESS);
    MPI_Info_create(&info);
    if (key != nullptr)
        MPI_Info_set(info, key, value);
    EXPECT_EQ(MPIX_Hier_comm_init(c, info), MPI_SUCCESS);
    MPI_Info_free(&info);
    int len = 0;
    EXPECT_EQ(MPIX_Hier_comm_describe(c, nullptr, 0, &len), MPI_SUCCESS);
    std::vector<char> buf((size_t)len + 1, 0);
    EXPECT_EQ(MPIX_Hier_comm_describe(c, buf.data(), len + 1, nullptr), MPI_SUCCESS);
    uint64_t h = mxh_hash_bytes_fnv(MXH_FNV_INIT, buf.data(), (size_t)len);
    int bad;
    EXPECT_TRUE(mxh_hashes_agree(c, &h, 1, &bad)) << "descriptions differ: " << buf.data();
    MPI_Comm_free(&c);
    return std::string(buf.data());
}

// The length describe reports is the text's, also with the library off on the
// communicator (its prefix says so).
TEST_F(Hier, DescribeLengthWithLibraryOff)
{
    MPI_Comm c;
    MPI_Info info;
    ASSERT_EQ(MPI_Comm_dup(MPI_COMM_WORLD, &c), MPI_SUCCESS);
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpix_hier_enable", "no");
    ASSERT_EQ(MPIX_Hier_comm_init(c, info), MPI_SUCCESS);
    MPI_Info_free(&info);
    int len = -1, len2 = -1;
    EXPECT_EQ(MPIX_Hier_comm_describe(c, nullptr, 0, &len), MPI_SUCCESS);
    std::vector<char> buf((size_t)len + 8, 'x');
    EXPECT_EQ(MPIX_Hier_comm_describe(c, buf.data(), (int)buf.size(), &len2), MPI_SUCCESS);
    EXPECT_EQ(len, len2);
    EXPECT_EQ((size_t)len, std::strlen(buf.data())) << buf.data();
    EXPECT_EQ(0, std::strncmp(buf.data(), "(MPIX_HIER_ENABLE=no) ", 22)) << buf.data();
    MPI_Comm_free(&c);
}

// An intercommunicator (the world's halves): nothing is built on it (no hang in a build
// that would run intracommunicator collectives over it), no levels, a description that
// says so; its collectives are MPI's own.
TEST_F(Hier, IntercommunicatorHasNoHierarchy)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2)
        GTEST_SKIP() << "an intercommunicator needs two ranks";
    MPI_Comm half;
    int low;
    MPI_Comm inter = mxh_test::world_intercomm(&half, &low);
    EXPECT_EQ(MPIX_Hier_comm_init(inter, MPI_INFO_NULL), MPI_SUCCESS);
    int n = -1;
    EXPECT_EQ(MPIX_Hier_comm_get_num_levels(inter, &n), MPI_SUCCESS);
    EXPECT_EQ(n, 0);
    char buf[256] = "";
    int len = -1;
    EXPECT_EQ(MPIX_Hier_comm_describe(inter, buf, (int)sizeof(buf), &len), MPI_SUCCESS);
    EXPECT_EQ((size_t)len, std::strlen(buf));
    EXPECT_NE(std::strstr(buf, "intercommunicator"), nullptr) << buf;
    MPI_Comm lc;
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    EXPECT_NE(MPIX_Hier_comm_get_level(inter, 0, &lc, nullptr), MPI_SUCCESS);
    int x = rank, y = -1; // MPI's own: the remote group's root broadcasts
    EXPECT_EQ(MPIX_Hier_allreduce(&x, &y, 1, MPI_INT, MPI_MAX, inter), MPI_SUCCESS);
    EXPECT_EQ(y, low ? size - 1 : size / 2 - 1);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
}

TEST_F(Hier, CostParametersMeasured)
{
    int n = -1;
    ASSERT_EQ(MPIX_Hier_comm_get_num_levels(MPI_COMM_WORLD, &n), MPI_SUCCESS);
    if (n == 0)
        GTEST_SKIP() << "no levels on this layout: nothing to measure";
    if (getenv("MPIX_HIER_COST_MEASURE") != nullptr || getenv("MPIX_HIER_COST_MODEL") != nullptr ||
        mxh_test_env_sets_network())
        GTEST_SKIP() << "the environment sets MPIX_HIER_COST_*: the defaults are not tested";
    const std::string tag = "cost parameters measured";
    // MPIX_HIER_COST_MODEL=auto measures, and uses the figures where the network is flat
    // in message size (this machine's oversubscribed ranks: either)
    std::string d = describe_with(nullptr, nullptr), dflt = d;
    EXPECT_NE(d.find("cost parameters"), std::string::npos) << d;
    // a fragment size set by the user: 'auto' keeps it (the thresholds), also where the
    // figures measured flat would have the model choose
    d = describe_with("mpix_hier_frag_size", "4m");
    EXPECT_NE(d.find(tag + " (MPIX_HIER_COST_MEASURE), not used (MPIX_HIER_COST_MODEL=auto: "),
              std::string::npos)
        << d;
    if (dflt.find("not used") == std::string::npos) { // the model selects by them
        EXPECT_NE(d.find("auto: MPIX_HIER_FRAG_SIZE is set; the configured ones stay"),
                  std::string::npos)
            << d;
    }
    // no selection by the model: pacing keeps the configured figures
    d = describe_with("mpix_hier_cost_model", "no");
    EXPECT_EQ(d.find("cost parameters"), std::string::npos) << d;
    d = describe_with("mpix_hier_cost_model", "yes");
    EXPECT_NE(d.find(tag), std::string::npos) << d;
    // the network level: rank 0 has a rail partner where there are several nodes
    EXPECT_EQ(layout().num_nodes > 1, d.find("network ") != std::string::npos) << d;
    EXPECT_NE(d.find(" GB/s"), std::string::npos) << d;
    d = describe_with("mpix_hier_cost_measure", "yes");
    EXPECT_NE(d.find(tag), std::string::npos) << d;
    // given parameters are kept ('auto'), unless measurement is asked for
    MPI_Comm c;
    MPI_Info info;
    ASSERT_EQ(MPI_Comm_dup(MPI_COMM_WORLD, &c), MPI_SUCCESS);
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpix_hier_cost_model", "yes");
    MPI_Info_set(info, "mpix_hier_cost_net_bw", "25g");
    EXPECT_EQ(MPIX_Hier_comm_init(c, info), MPI_SUCCESS);
    MPI_Info_free(&info);
    char buf[16384] = "";
    EXPECT_EQ(MPIX_Hier_comm_describe(c, buf, sizeof(buf), nullptr), MPI_SUCCESS);
    EXPECT_EQ(std::string(buf).find(tag), std::string::npos) << buf;
    MPI_Comm_free(&c);
}

// A dup of a level communicator stays valid after the parent is freed.
TEST_F(Hier, LevelDupOutlivesParent)
{
    MPI_Comm parent;
    MPI_Comm_dup(MPI_COMM_WORLD, &parent);
    std::vector<Level> lv = levels_of(parent);
    std::vector<MPI_Comm> keep;
    for (auto &l : lv) {
        if (l.comm == MPI_COMM_NULL)
            continue;
        MPI_Comm d;
        MPI_Comm_dup(l.comm, &d);
        keep.push_back(d);
    }
    MPI_Comm_free(&parent);
    const Layout &L = layout();
    for (size_t l = 0; l < keep.size(); l++) {
        std::set<int> m = members(keep[l]);
        long want = 0, mine = L.rank + 1, got = -1;
        for (int r : m)
            want += r + 1;
        EXPECT_EQ(MPIX_Hier_allreduce(&mine, &got, 1, MPI_LONG, MPI_SUM, keep[l]), MPI_SUCCESS);
        EXPECT_EQ(got, want) << "level " << l << " dup after freeing the parent";
        MPI_Comm_free(&keep[l]);
    }
}

// Free context ids: dup MPI_COMM_WORLD until MPICH runs out (2046 in 4.0),
// then free them all. A leaked communicator per hierarchy shows up as fewer.
int free_contexts()
{
    MPI_Errhandler old;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &old);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    std::vector<MPI_Comm> v;
    MPI_Comm d;
    while (v.size() < 100000 && MPI_Comm_dup(MPI_COMM_WORLD, &d) == MPI_SUCCESS)
        v.push_back(d);
    for (auto &c : v)
        MPI_Comm_free(&c);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, old);
    MPI_Errhandler_free(&old);
    return (int)v.size();
}

void build_use_free(int i)
{
    MPI_Comm d;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    if (i % 2) {
        EXPECT_EQ(MPIX_Hier_comm_init(d, MPI_INFO_NULL), MPI_SUCCESS);
    }
    long one = 1, n = 0;
    EXPECT_EQ(MPIX_Hier_allreduce(&one, &n, 1, MPI_LONG, MPI_SUM, d), MPI_SUCCESS);
    EXPECT_EQ(n, layout().size) << "iteration " << i;
    int nl = 0;
    EXPECT_EQ(MPIX_Hier_comm_get_num_levels(d, &nl), MPI_SUCCESS);
    for (int l = 0; l < nl; l++) {
        MPI_Comm lc;
        EXPECT_EQ(MPIX_Hier_comm_get_level(d, l, &lc, nullptr), MPI_SUCCESS);
    }
    MPI_Comm_free(&d);
}

TEST_F(Hier, FreeReleasesHierarchy)
{
    const int iters = mxh_env_int("MXH_TEST_FREE_ITERS", 50);
    for (int i = 0; i < 3; i++) // warm-up: lazily created library-wide state
        build_use_free(i);
    int before = free_contexts();
    for (int i = 0; i < iters; i++)
        build_use_free(i);
    int after = free_contexts();
    EXPECT_EQ(after, before) << "communicators leaked: " << (before - after) << " over " << iters
                             << " create/free cycles of a hierarchy";
    if (layout().rank == 0)
        std::printf("  %d hierarchies created and freed; free communicator ids %d -> %d\n", iters,
                    before, after);
}

// MPIX_Hier_comm_split_parallel on the launch layout: where every node has g ranks,
// {g, 0} gives each rank its node's ranks (in local order) and the ranks with its local
// index on every node; twice the same groups; errors on every rank, comm usable.
TEST_F(Hier, SplitParallelGroupsFollowTheLayout)
{
    const Layout &L = layout();
    std::map<std::string, int> per_node;
    for (auto &n : L.node)
        per_node[n]++;
    int g = per_node.begin()->second;
    bool even = true;
    for (auto &kv : per_node)
        even = even && kv.second == g;
    if (!even)
        g = 1; // {1, 0} places on any layout
    int sizes[2] = {g, 0};
    MPI_Comm c[2], again[2];
    ASSERT_EQ(MPIX_Hier_comm_split_parallel(MPI_COMM_WORLD, 2, sizes, c), MPI_SUCCESS);
    std::set<int> same_local;
    for (int q = 0; q < L.size; q++)
        if (L.local[(size_t)q] == L.local[(size_t)L.rank] || !even)
            same_local.insert(q);
    int r0 = -1;
    MPI_Comm_rank(c[0], &r0);
    if (even) {
        EXPECT_EQ(set_str(members(c[0])), set_str(L.same_node(L.rank)));
        EXPECT_EQ(r0, L.local[(size_t)L.rank]);
    } else {
        EXPECT_EQ(set_str(members(c[0])), set_str({L.rank}));
    }
    EXPECT_EQ(set_str(members(c[1])), set_str(same_local));
    ASSERT_EQ(MPIX_Hier_comm_split_parallel(MPI_COMM_WORLD, 2, sizes, again), MPI_SUCCESS);
    for (int d = 0; d < 2; d++) {
        int cmp = -1;
        MPI_Comm_compare(c[d], again[d], &cmp);
        EXPECT_EQ(cmp, MPI_CONGRUENT) << "dimension " << d;
        MPI_Comm_free(&c[d]);
        MPI_Comm_free(&again[d]);
    }
    char text[2048] = "";
    int len = -1;
    ASSERT_EQ(MPIX_Hier_comm_describe_parallel(MPI_COMM_WORLD, 2, sizes, text, sizeof(text), &len),
              MPI_SUCCESS);
    EXPECT_EQ((size_t)len, std::strlen(text));
    std::string want0 = "dimension 0: " + std::to_string(g) + " ranks a group, level " +
                        (g > 1 ? "node" : "rank") + "\n";
    EXPECT_EQ(std::string(text).rfind(want0, 0), 0u) << text;
    if (g > 1) { // the cost model's figures for the group: a bandwidth and a time
        std::string t(text), m = want0 + "  model, 64 MiB of floats, each group alone: allreduce ";
        double gbps = 0, us = 0;
        ASSERT_EQ(t.rfind(m, 0), 0u) << t;
        EXPECT_EQ(std::sscanf(t.c_str() + m.size(), "%lf GB/s bus (%lf us)", &gbps, &us), 2) << t;
        EXPECT_GT(gbps, 0.0) << t;
        EXPECT_GT(us, 0.0) << t;
    }

    // errors: reported on every rank, nothing created, the communicator usable
    MPI_Errhandler old;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &old);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int bad[1] = {L.size + 1}, cls = -1;
    MPI_Comm out[2] = {MPI_COMM_NULL, MPI_COMM_NULL};
    int rc = MPIX_Hier_comm_split_parallel(MPI_COMM_WORLD, 1, bad, out);
    MPI_Error_class(rc, &cls);
    EXPECT_EQ(cls, MPI_ERR_ARG);
    EXPECT_EQ(out[0], MPI_COMM_NULL);
    ASSERT_EQ(MPIX_Hier_comm_describe_parallel(MPI_COMM_WORLD, 1, bad, text, sizeof(text), &len),
              MPI_SUCCESS);
    EXPECT_NE(std::strstr(text, "no placement: the sizes' product"), nullptr) << text;
    if (L.size > 1) { // the ranks disagree: every rank hears of it
        int mine[2] = {L.rank == 0 ? 1 : L.size, L.rank == 0 ? L.size : 1};
        rc = MPIX_Hier_comm_split_parallel(MPI_COMM_WORLD, 2, mine, out);
        MPI_Error_class(rc, &cls);
        EXPECT_EQ(cls, MPI_ERR_ARG);
    }
    int one = 1, sum = 0;
    EXPECT_EQ(MPIX_Hier_allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_EQ(sum, L.size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, old);
    MPI_Errhandler_free(&old);
}

// MPIX_Hier_comm_reorder on the launch layout: the same group, every node's ranks one
// block of consecutive new ranks (every leaf's too), and the new ranks in the order this
// test computes on its own: leaves and nodes by their lowest MPI_COMM_WORLD rank, a node's
// ranks in MPI_COMM_WORLD order (the fake nodes have no GPUs: a rank's rail is its local
// index). Twice the same, the same as split_parallel with one dimension; errors raised.
TEST_F(Hier, ReorderPutsEachNodesRanksTogether)
{
    const Layout &L = layout();
    std::map<std::string, int> leaf_first, node_first; // lowest WORLD rank of each
    for (int q = 0; q < L.size; q++) {
        leaf_first.emplace(L.leaf[(size_t)q], q);
        node_first.emplace(L.node[(size_t)q], q);
    }
    std::vector<int> want((size_t)L.size); // new rank -> WORLD rank
    for (int q = 0; q < L.size; q++)
        want[(size_t)q] = q;
    auto key = [&](int q) {
        return std::vector<int>{leaf_first[L.leaf[(size_t)q]], node_first[L.node[(size_t)q]],
                                L.local[(size_t)q]};
    };
    std::sort(want.begin(), want.end(), [&](int a, int b) { return key(a) < key(b); });

    MPI_Comm re = MPI_COMM_NULL, again = MPI_COMM_NULL, split = MPI_COMM_NULL;
    ASSERT_EQ(MPIX_Hier_comm_reorder(MPI_COMM_WORLD, &re), MPI_SUCCESS);
    int n = -1, me = -1, cmp = -1;
    MPI_Comm_size(re, &n);
    MPI_Comm_rank(re, &me);
    ASSERT_EQ(n, L.size);
    std::vector<int> world((size_t)n, -1); // new rank -> WORLD rank, as the new comm has it
    MPI_Allgather(&L.rank, 1, MPI_INT, world.data(), 1, MPI_INT, re);
    EXPECT_EQ(world, want);
    EXPECT_EQ(world[(size_t)me], L.rank);
    std::set<std::string> nodes, leaves;
    for (int k = 0; k < n; k++) { // a node (leaf) seen before comes back: not one block
        const std::string &v = L.node[(size_t)world[(size_t)k]], &f = L.leaf[(size_t)world[(size_t)k]];
        if (k == 0 || v != L.node[(size_t)world[(size_t)k - 1]]) {
            EXPECT_TRUE(nodes.insert(v).second) << "node " << v << " split at new rank " << k;
        }
        if (k == 0 || f != L.leaf[(size_t)world[(size_t)k - 1]]) {
            EXPECT_TRUE(leaves.insert(f).second) << "leaf " << f << " split at new rank " << k;
        }
    }
    EXPECT_EQ((int)nodes.size(), L.num_nodes);
    bool same_order = true;
    for (int k = 0; k < n; k++)
        same_order = same_order && world[(size_t)k] == k;
    MPI_Comm_compare(re, MPI_COMM_WORLD, &cmp);
    EXPECT_EQ(cmp, same_order ? MPI_CONGRUENT : MPI_SIMILAR);
    ASSERT_EQ(MPIX_Hier_comm_reorder(MPI_COMM_WORLD, &again), MPI_SUCCESS);
    MPI_Comm_compare(re, again, &cmp);
    EXPECT_EQ(cmp, MPI_CONGRUENT) << "a second call: another order";
    int whole = L.size;
    ASSERT_EQ(MPIX_Hier_comm_split_parallel(MPI_COMM_WORLD, 1, &whole, &split), MPI_SUCCESS);
    MPI_Comm_compare(re, split, &cmp);
    EXPECT_EQ(cmp, MPI_CONGRUENT) << "split_parallel's positions are another order";
    long mine = L.rank, sum = -1; // usable: a collective over the new communicator
    EXPECT_EQ(MPIX_Hier_allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, re), MPI_SUCCESS);
    EXPECT_EQ(sum, (long)L.size * (L.size - 1) / 2);
    MPI_Comm_free(&re);
    MPI_Comm_free(&again);
    MPI_Comm_free(&split);

    // errors through the error handlers: MPI_COMM_NULL (MPI_COMM_WORLD's), an
    // intercommunicator, newcomm NULL; nothing created
    MPI_Errhandler old;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &old);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int cls = -1;
    MPI_Comm out = MPI_COMM_NULL;
    MPI_Error_class(MPIX_Hier_comm_reorder(MPI_COMM_NULL, &out), &cls);
    EXPECT_EQ(cls, MPI_ERR_COMM);
    MPI_Error_class(MPIX_Hier_comm_reorder(MPI_COMM_WORLD, nullptr), &cls);
    EXPECT_EQ(cls, MPI_ERR_ARG);
    if (L.size > 1) {
        MPI_Comm half;
        int low;
        MPI_Comm inter = mxh_test::world_intercomm(&half, &low);
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        MPI_Error_class(MPIX_Hier_comm_reorder(inter, &out), &cls);
        EXPECT_EQ(cls, MPI_ERR_COMM);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
    EXPECT_EQ(out, MPI_COMM_NULL);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, old);
    MPI_Errhandler_free(&old);
}

} // namespace
