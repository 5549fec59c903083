// Discovery on fake machines: every rank gets a GPU by MPIX_HIER_GPU_BUSID (or by
// local index) on a real server's hwloc XML / NCCL topology file, and the run
// script passes what the file says about that GPU:
//   MXH_TEST_EXPECT_RAIL=N     index (bus order) of the NIC nearest my GPU
//   MXH_TEST_EXPECT_ISLAND=N   NVLink island of my GPU (optional)
//   MXH_TEST_EXPECT_LEVELS=... level names, innermost first
// Checked: the rail communicator holds exactly the ranks whose GPUs sit nearest
// the same NIC index (one per node), the island communicator exactly the ranks
// of my node in my NVLink island, and the collectives stay correct on them.
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "mpi_util.hh"
#include "mxh_test_shim.h"

namespace {

struct Expect {
    int rank = 0, size = 1;
    std::vector<int> rail, island;
    std::vector<std::string> node;
};

Expect gather_expectations()
{
    Expect e;
    MPI_Comm_rank(MPI_COMM_WORLD, &e.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &e.size);
    int mine[2] = {mxh_env_int("MXH_TEST_EXPECT_RAIL", -1),
                   mxh_env_int("MXH_TEST_EXPECT_ISLAND", -1)};
    std::vector<int> all((size_t)e.size * 2);
    MPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, MPI_COMM_WORLD);
    char name[256];
    mxh_node_name(name, sizeof(name));
    std::vector<char> names((size_t)e.size * 256);
    MPI_Allgather(name, 256, MPI_CHAR, names.data(), 256, MPI_CHAR, MPI_COMM_WORLD);
    for (int r = 0; r < e.size; r++) {
        e.rail.push_back(all[(size_t)r * 2]);
        e.island.push_back(all[(size_t)r * 2 + 1]);
        e.node.push_back(std::string(&names[(size_t)r * 256]));
    }
    return e;
}


std::string str(const std::set<int> &s)
{
    std::ostringstream o;
    for (int x : s)
        o << x << " ";
    return o.str();
}

}  // namespace

TEST(Topo, LevelsMatchTheMachine)
{
    Expect e = gather_expectations();
    ASSERT_GE(e.rail[(size_t)e.rank], 0) << "run script must set MXH_TEST_EXPECT_RAIL";
    int nlevels = -1;
    ASSERT_EQ(MPI_SUCCESS, MPIX_Hier_comm_get_num_levels(MPI_COMM_WORLD, &nlevels));
    std::string names;
    bool seen_rail = false;
    for (int l = 0; l < nlevels; l++) {
        MPI_Comm c = MPI_COMM_NULL;
        char name[MPIX_HIER_MAX_LEVEL_NAME];
        ASSERT_EQ(MPI_SUCCESS, MPIX_Hier_comm_get_level(MPI_COMM_WORLD, l, &c, name));
        names += (l ? "," : "") + std::string(name);
        std::set<int> got = mxh_test::world_members(c), want;
        if (!strcmp(name, "rail")) {
            seen_rail = true;
            // the ranks whose GPU is nearest my NIC index, one per node: all of them when
            // each node has one GPU on that NIC; with GPUs sharing a NIC (2 per EFA) the
            // k-th rank of the NIC on each node (a sub-rail)
            std::set<std::string> want_nodes, got_nodes;
            for (int r = 0; r < e.size; r++)
                if (e.rail[(size_t)r] == e.rail[(size_t)e.rank]) {
                    want.insert(r);
                    want_nodes.insert(e.node[(size_t)r]);
                }
            for (int r : got) {
                got_nodes.insert(e.node[(size_t)r]);
                EXPECT_EQ(e.rail[(size_t)e.rank], e.rail[(size_t)r])
                    << "rank " << r << " in the rail communicator of rank " << e.rank;
            }
            EXPECT_EQ(got.size(), got_nodes.size()) << "one rank per node on a rail";
            EXPECT_EQ(want_nodes.size(), got.size()) << "every node with that NIC is on the rail";
            if (want.size() == want_nodes.size()) {
                EXPECT_EQ(str(want), str(got)) << "rail communicator of rank " << e.rank;
            }
        } else if (!strcmp(name, "island")) {
            for (int r = 0; r < e.size; r++)
                if (e.node[(size_t)r] == e.node[(size_t)e.rank] &&
                    e.island[(size_t)r] == e.island[(size_t)e.rank])
                    want.insert(r);
            EXPECT_EQ(str(want), str(got)) << "island communicator of rank " << e.rank;
        } else if (!strcmp(name, "node") && !strstr(mxh_env("MXH_TEST_EXPECT_LEVELS", ""), "island")) {
            for (int r = 0; r < e.size; r++)
                if (e.node[(size_t)r] == e.node[(size_t)e.rank])
                    want.insert(r);
            EXPECT_EQ(str(want), str(got)) << "node communicator of rank " << e.rank;
        }
    }
    EXPECT_TRUE(seen_rail);
    const char *expect = mxh_env("MXH_TEST_EXPECT_LEVELS", "");
    if (expect[0]) {
        EXPECT_EQ(std::string(expect), names);
    }
    char desc[8192];
    int len = 0;
    ASSERT_EQ(MPI_SUCCESS, MPIX_Hier_comm_describe(MPI_COMM_WORLD, desc, sizeof(desc), &len));
    const char *nic = mxh_env("MXH_TEST_EXPECT_NIC", "");
    if (nic[0]) {
        EXPECT_NE(nullptr, strstr(desc, nic)) << desc;
    }
    // MPIX_HIER_IPC=auto where two ranks of a node drive one GPU: the device node level
    // only from MXH_IPC_SHARED_GPU_MIN (exec/ipc.h), which the description states
    const char *shared = mxh_env("MXH_TEST_EXPECT_SHARED_GPU", "");
    if (shared[0]) {
        EXPECT_NE(nullptr, strstr(desc, shared)) << desc;
    } else {
        EXPECT_EQ(nullptr, strstr(desc, "share GPU")) << desc;
    }
}

TEST(Topo, CollectivesCorrectOnDiscoveredLevels)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int count : {1, 7, 1009, 65537}) {
        std::vector<long> in((size_t)count * size), got((size_t)count * size),
            want((size_t)count * size);
        for (size_t i = 0; i < in.size(); i++)
            in[i] = (long)(rank + 1) * 1000003L + (long)i;
        EXPECT_EQ(MPI_SUCCESS, MPIX_Hier_allreduce(in.data(), got.data(), count, MPI_LONG,
                                                   MPI_SUM, MPI_COMM_WORLD));
        MPI_Allreduce(in.data(), want.data(), count, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        EXPECT_EQ(0, memcmp(got.data(), want.data(), sizeof(long) * count)) << "allreduce " << count;
        EXPECT_EQ(MPI_SUCCESS, MPIX_Hier_reduce_scatter_block(in.data(), got.data(), count,
                                                              MPI_LONG, MPI_MAX, MPI_COMM_WORLD));
        MPI_Reduce_scatter_block(in.data(), want.data(), count, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
        EXPECT_EQ(0, memcmp(got.data(), want.data(), sizeof(long) * count)) << "rsb " << count;
        EXPECT_EQ(MPI_SUCCESS, MPIX_Hier_allgather(in.data(), count, MPI_LONG, got.data(), count,
                                                   MPI_LONG, MPI_COMM_WORLD));
        MPI_Allgather(in.data(), count, MPI_LONG, want.data(), count, MPI_LONG, MPI_COMM_WORLD);
        EXPECT_EQ(0, memcmp(got.data(), want.data(), sizeof(long) * count * size))
            << "allgather " << count;
        for (int root = 0; root < size; root += size > 2 ? size - 1 : 1) {
            got.assign(in.begin(), in.end());
            want.assign(in.begin(), in.end());
            EXPECT_EQ(MPI_SUCCESS, MPIX_Hier_bcast(got.data(), count, MPI_LONG, root, MPI_COMM_WORLD));
            MPI_Bcast(want.data(), count, MPI_LONG, root, MPI_COMM_WORLD);
            EXPECT_EQ(0, memcmp(got.data(), want.data(), sizeof(long) * count)) << "bcast " << count;
            EXPECT_EQ(MPI_SUCCESS, MPIX_Hier_reduce(in.data(), got.data(), count, MPI_LONG,
                                                    MPI_BXOR, root, MPI_COMM_WORLD));
            MPI_Reduce(in.data(), want.data(), count, MPI_LONG, MPI_BXOR, root, MPI_COMM_WORLD);
            if (rank == root) {
                EXPECT_EQ(0, memcmp(got.data(), want.data(), sizeof(long) * count))
                    << "reduce " << count;
            }
        }
    }
}
