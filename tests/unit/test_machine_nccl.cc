// Unit tests of src/topo/machine_nccl.c: NCCL topology XML (NCCL_TOPO_FILE)
// -> machine record. The expected values of the three real files were read
// by hand from tests/data/topologies (see README.nccl.md there); the small
// hand-written documents cover the rules one at a time; malformed inputs and
// a seeded mutation loop check that errors are MXH_ERR_PARSE naming
// FILE:LINE and never crash.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "topo/machine.h"
#include "unit_util.hh"
#include "util/log.h"
#include "util/status.h"

namespace {

std::string data_path(const std::string &name) { return mxh_test::test_data("topologies/" + name); }

using mxh_test::LogCapture;
using mxh_test::QuietStderr;
using mxh_test::TempFile;
using mxh_test::read_text;

using MachinePtr = mxh_test::Owned<mxh_machine_t, mxh_machine_destroy>;

MachinePtr load_ok(const std::string &path)
{
    return mxh_test::made_ok<MachinePtr>(
        path, [&](mxh_machine_t **m) { return mxh_machine_from_nccl(path.c_str(), m); });
}

MachinePtr load_text_ok(const std::string &xml)
{
    TempFile f(xml);
    return load_ok(f.path());
}

// Parses @xml (as a temp file) expecting MXH_ERR_PARSE; returns the error
// message with the temp file's path replaced by "F".
std::string parse_error(const std::string &xml)
{
    TempFile f(xml);
    QuietStderr quiet;
    mxh_log_clear_last_error();
    mxh_machine_t *m = reinterpret_cast<mxh_machine_t *>(0x1);
    mxh_status_t st = mxh_machine_from_nccl(f.path().c_str(), &m);
    EXPECT_EQ(st, MXH_ERR_PARSE) << xml;
    EXPECT_EQ(m, nullptr);
    if (st == MXH_OK)
        mxh_machine_destroy(m);
    std::string msg = mxh_log_last_error();
    if (msg.compare(0, f.path().size(), f.path()) == 0)
        msg = "F" + msg.substr(f.path().size());
    return msg;
}

// "F:LINE: ..." with this line.
::testing::AssertionResult names_line(const std::string &msg, int line)
{
    std::string want = "F:" + std::to_string(line) + ": ";
    if (msg.compare(0, want.size(), want) == 0)
        return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "message '" << msg << "' does not start with '"
                                         << want << "'";
}

// Message starts with "PATH:N: " with 1 <= N <= maxline.
bool has_file_line(const std::string &msg, const std::string &path, int maxline)
{
    if (msg.compare(0, path.size() + 1, path + ":") != 0)
        return false;
    size_t i = path.size() + 1, j = i;
    while (j < msg.size() && msg[j] >= '0' && msg[j] <= '9')
        j++;
    if (j == i || j - i > 9 || msg.compare(j, 2, ": ") != 0)
        return false;
    int line = atoi(msg.substr(i, j - i).c_str());
    return line >= 1 && line <= maxline;
}

struct GpuWant {
    const char *busid;
    int numa;
    int nic;
    mxh_pci_distance_t dist;
    int island;
};

struct NicWant {
    const char *busid;
    const char *name;
    int ngpus;
};

// Whole-record comparison; invariants checked on the way.
void expect_machine(const mxh_machine_t *m, const std::vector<GpuWant> &gw,
                    const std::vector<NicWant> &nw, int nislands, int has_nvlink)
{
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(m->ngpus, (int)gw.size());
    ASSERT_EQ(m->nnics, (int)nw.size());
    EXPECT_EQ(m->nislands, nislands);
    EXPECT_EQ(m->has_nvlink, has_nvlink);
    EXPECT_EQ(std::string(m->source).rfind("NCCL topology ", 0), 0u) << m->source;
    for (size_t i = 0; i < gw.size(); i++) {
        SCOPED_TRACE("gpu " + std::to_string(i));
        const mxh_gpu_t &g = m->gpus[i];
        EXPECT_STREQ(g.busid, gw[i].busid);
        EXPECT_STREQ(g.model, "");
        EXPECT_EQ(g.numa, gw[i].numa);
        EXPECT_EQ(g.package, -1);
        EXPECT_EQ(g.nic, gw[i].nic);
        EXPECT_EQ(g.nic_distance, gw[i].dist);
        EXPECT_EQ(g.island, gw[i].island);
    }
    for (size_t i = 0; i < nw.size(); i++) {
        SCOPED_TRACE("nic " + std::to_string(i));
        const mxh_nic_t &n = m->nics[i];
        EXPECT_STREQ(n.busid, nw[i].busid);
        EXPECT_STREQ(n.name, nw[i].name);
        EXPECT_EQ(n.ngpus, nw[i].ngpus);
        EXPECT_EQ(n.package, -1);
    }
}

// Structural invariants of any successfully loaded record.
::testing::AssertionResult consistent(const mxh_machine_t *m)
{
    if (m == nullptr)
        return ::testing::AssertionFailure() << "null machine";
    if (m->ngpus < 0 || m->nnics < 0 || (m->ngpus > 0 && m->gpus == nullptr) ||
        (m->nnics > 0 && m->nics == nullptr))
        return ::testing::AssertionFailure() << "bad counts";
    if (m->ngpus > 0 && (m->nislands < 1 || m->nislands > m->ngpus))
        return ::testing::AssertionFailure() << "nislands " << m->nislands;
    std::vector<int> per_nic(m->nnics, 0);
    std::vector<int> island_seen(m->nislands, 0);
    for (int i = 0; i < m->ngpus; i++) {
        const mxh_gpu_t &g = m->gpus[i];
        if (strnlen(g.busid, MXH_BUSID_LEN) != 12)
            return ::testing::AssertionFailure() << "gpu busid '" << g.busid << "'";
        if (i > 0 && strcmp(m->gpus[i - 1].busid, g.busid) >= 0)
            return ::testing::AssertionFailure() << "gpus not in strict bus order";
        if (g.island < 0 || g.island >= m->nislands)
            return ::testing::AssertionFailure() << "island " << g.island;
        island_seen[g.island] = 1;
        if (g.nic < -1 || g.nic >= m->nnics || (m->nnics > 0 && g.nic < 0))
            return ::testing::AssertionFailure() << "gpu nic " << g.nic;
        if (g.nic >= 0)
            per_nic[g.nic]++;
    }
    for (int k = 0; k < m->nislands; k++)
        if (!island_seen[k])
            return ::testing::AssertionFailure() << "empty island " << k;
    for (int j = 0; j < m->nnics; j++) {
        if (per_nic[j] != m->nics[j].ngpus)
            return ::testing::AssertionFailure() << "nic " << j << " ngpus";
        if (j > 0 && m->nics[j].busid[0] != '\0' &&
            strcmp(m->nics[j - 1].busid, m->nics[j].busid) > 0)
            return ::testing::AssertionFailure() << "nics not in bus order";
    }
    return ::testing::AssertionSuccess();
}

const mxh_pci_distance_t SW = MXH_PCI_SAME_SWITCH;
const mxh_pci_distance_t HB = MXH_PCI_SAME_HOSTBRIDGE;
const mxh_pci_distance_t NUMA = MXH_PCI_SAME_NUMA;
const mxh_pci_distance_t SOCK = MXH_PCI_OTHER_SOCKET;

const char *const kRealFiles[] = {"ndv5-topo.xml", "H100-topology.xml", "p4d-24xl-topo.xml"};

} // namespace

// ---------------------------------------------------------------------------
// the real files

TEST(MachineNccl, FixturesAreByteCopiesOfTheSharedFiles)
{
#ifdef MXH_SHARED_TOPODIR
    for (const char *name : kRealFiles) {
        std::string shared = std::string(MXH_SHARED_TOPODIR) + "/" + name;
        if (access(shared.c_str(), R_OK) != 0)
            continue; // shared tree not present (e.g. a release tarball)
        EXPECT_EQ(read_text(data_path(name)), read_text(shared)) << name;
    }
#endif
    // the facts the other tests rely on
    EXPECT_EQ(read_text(data_path("H100-topology.xml")).compare(0, 2, "\n<"), 0);
    EXPECT_EQ(read_text(data_path("p4d-24xl-topo.xml")).compare(0, 4, "<!--"), 0);
}

TEST(MachineNccl, AzureNdv5EightGpusEightIbOneToOneBySwitch)
{
    MachinePtr m = load_ok(data_path("ndv5-topo.xml"));
    ASSERT_TRUE(m);
    EXPECT_TRUE(consistent(m.get()));
    expect_machine(m.get(),
                   {{"0001:00:00.0", 0, 0, SW, 0},
                    {"0002:00:00.0", 0, 1, SW, 1},
                    {"0003:00:00.0", 0, 2, SW, 2},
                    {"0008:00:00.0", 0, 3, SW, 3},
                    {"0009:00:00.0", 1, 4, SW, 4},
                    {"000a:00:00.0", 1, 5, SW, 5},
                    {"000b:00:00.0", 1, 6, SW, 6},
                    {"000c:00:00.0", 1, 7, SW, 7}},
                   {{"0101:00:00.0", "", 1},
                    {"0102:00:00.0", "", 1},
                    {"0103:00:00.0", "", 1},
                    {"0104:00:00.0", "", 1},
                    {"0105:00:00.0", "", 1},
                    {"0106:00:00.0", "", 1},
                    {"0107:00:00.0", "", 1},
                    {"0108:00:00.0", "", 1}},
                   8, 0);
    for (int j = 0; j < m->nnics; j++) {
        EXPECT_EQ(m->nics[j].hpc, 1) << j; // class 0x0207 InfiniBand
        EXPECT_EQ(m->nics[j].numa, j < 4 ? 0 : 1) << j;
    }
}

TEST(MachineNccl, OciH100EightGpusSixteenPortsOneNvlinkIsland)
{
    MachinePtr m = load_ok(data_path("H100-topology.xml"));
    ASSERT_TRUE(m);
    EXPECT_TRUE(consistent(m.get()));
    // each GPU and its dual-port ConnectX-7 sit on sibling switches under one
    // top-level switch (NCCL: PXB); the first port of each NIC serves it
    expect_machine(m.get(),
                   {{"0000:0f:00.0", 0, 0, HB, 0},
                    {"0000:2d:00.0", 0, 2, HB, 0},
                    {"0000:44:00.0", 0, 4, HB, 0},
                    {"0000:5b:00.0", 0, 6, HB, 0},
                    {"0000:89:00.0", 1, 8, HB, 0},
                    {"0000:a8:00.0", 1, 10, HB, 0},
                    {"0000:c0:00.0", 1, 12, HB, 0},
                    {"0000:d8:00.0", 1, 14, HB, 0}},
                   {{"0000:0c:00.0", "mlx5_0", 1},
                    {"0000:0c:00.0", "mlx5_1", 0},
                    {"0000:2a:00.0", "mlx5_3", 1},
                    {"0000:2a:00.0", "mlx5_4", 0},
                    {"0000:41:00.0", "mlx5_5", 1},
                    {"0000:41:00.0", "mlx5_6", 0},
                    {"0000:58:00.0", "mlx5_7", 1},
                    {"0000:58:00.0", "mlx5_8", 0},
                    {"0000:86:00.0", "mlx5_9", 1},
                    {"0000:86:00.0", "mlx5_10", 0},
                    {"0000:a5:00.0", "mlx5_12", 1},
                    {"0000:a5:00.0", "mlx5_13", 0},
                    {"0000:bd:00.0", "mlx5_14", 1},
                    {"0000:bd:00.0", "mlx5_15", 0},
                    {"0000:d5:00.0", "mlx5_16", 1},
                    {"0000:d5:00.0", "mlx5_17", 0}},
                   1, 1);
    for (int j = 0; j < m->nnics; j++) {
        EXPECT_EQ(m->nics[j].hpc, 1) << j; // Mellanox 15b3
        EXPECT_EQ(m->nics[j].numa, j < 8 ? 0 : 1) << j;
    }
}

TEST(MachineNccl, AwsP4dEightGpusFourEfaTwoGpusEach)
{
    MachinePtr m = load_ok(data_path("p4d-24xl-topo.xml"));
    ASSERT_TRUE(m);
    EXPECT_TRUE(consistent(m.get()));
    expect_machine(m.get(),
                   {{"0000:10:1c.0", 0, 0, SW, 0},
                    {"0000:10:1d.0", 0, 0, SW, 1},
                    {"0000:20:1c.0", 0, 1, SW, 2},
                    {"0000:20:1d.0", 0, 1, SW, 3},
                    {"0000:90:1c.0", 1, 2, SW, 4},
                    {"0000:90:1d.0", 1, 2, SW, 5},
                    {"0000:a0:1c.0", 1, 3, SW, 6},
                    {"0000:a0:1d.0", 1, 3, SW, 7}},
                   {{"0000:10:1b.0", "", 2},
                    {"0000:20:1b.0", "", 2},
                    {"0000:90:1b.0", "", 2},
                    {"0000:a0:1b.0", "", 2}},
                   8, 0);
    for (int j = 0; j < m->nnics; j++)
        EXPECT_EQ(m->nics[j].hpc, 1) << j; // EFA 1d0f:efa0
}

TEST(MachineNccl, InfoLineSummarizesTheMachine)
{
    LogCapture cap;
    QuietStderr quiet;
    mxh_log_set_level(MXH_LOG_INFO);
    MachinePtr m = load_ok(data_path("H100-topology.xml"));
    mxh_log_set_level(MXH_LOG_WARN);
    std::vector<std::string> info = cap.of(MXH_LOG_INFO);
    ASSERT_EQ(info.size(), 1u);
    EXPECT_NE(info[0].find("8 GPUs, 16 NIC ports (rails), 1 NVLink island"), std::string::npos)
        << info[0];
    EXPECT_TRUE(cap.of(MXH_LOG_WARN).empty());
}

// ---------------------------------------------------------------------------
// rules, one small document each

namespace {
const char *kHead = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<system version=\"1\">\n";
}

TEST(MachineNccl, XmlSyntaxPrologCommentsDoctypeEntitiesCdata)
{
    std::string xml =
        "\xef\xbb\xbf<?xml version='1.0'?>\n"
        "<!DOCTYPE system [ <!ELEMENT system ANY> ]>\n"
        "<!-- a comment with <pci> and -- inside? no: only dashes - - -->\n"
        "<system version='1'>\n"
        "  <?nccl ignored processing instruction?>\n"
        "  <cpu numaid=\"0\">text is ignored <![CDATA[ <not a tag> ]]>\n"
        "    <pci busid = '0000:3B:00.0' class=\"0x030200\" vendor=\"0x10de\">\n"
        "      <gpu dev=\"0\"/>\n"
        "    </pci >\n"
        "    <pci busid=\"3c:00.0\" class=\"0x020700\"><nic>\n"
        "      <net name=\"mlx5&#95;0&amp;&lt;&gt;&quot;&apos;&#x41;\"/>\n"
        "    </nic></pci>\n"
        "  </cpu>\n"
        "</system>\n"
        "<!-- trailing comment -->\n";
    MachinePtr m = load_text_ok(xml);
    ASSERT_TRUE(m);
    ASSERT_EQ(m->ngpus, 1);
    ASSERT_EQ(m->nnics, 1);
    EXPECT_STREQ(m->gpus[0].busid, "0000:3b:00.0"); // normalized, lower case
    EXPECT_STREQ(m->nics[0].busid, "0000:3c:00.0"); // domain added
    EXPECT_STREQ(m->nics[0].name, "mlx5_0&<>\"'A");
    EXPECT_EQ(m->gpus[0].nic, 0);
    EXPECT_EQ(m->gpus[0].nic_distance, NUMA); // both directly under the cpu
    EXPECT_EQ(m->gpus[0].numa, 0);
    EXPECT_EQ(m->has_nvlink, 0);
}

TEST(MachineNccl, GpuClassificationVendorAndGpuChild)
{
    std::string xml = std::string(kHead) +
                      "<cpu numaid=\"1\">\n"
                      // BMC VGA of another vendor: not a GPU
                      "<pci busid=\"0000:03:00.0\" class=\"0x030000\" vendor=\"0x102b\"/>\n"
                      // 3D controller, NVIDIA
                      "<pci busid=\"0000:04:00.0\" class=\"0x030200\" vendor=\"0x10de\"/>\n"
                      // VGA class without vendor (static files): a GPU
                      "<pci busid=\"0000:05:00.0\" class=\"0x030000\"/>\n"
                      // other vendor but with <gpu>: a GPU (e.g. RCCL)
                      "<pci busid=\"0000:06:00.0\" class=\"0x038000\" vendor=\"0x1002\"><gpu/></pci>\n"
                      // NVSwitch: not a GPU
                      "<pci busid=\"0000:07:00.0\" class=\"0x068000\" vendor=\"0x10de\"/>\n"
                      "</cpu></system>\n";
    MachinePtr m = load_text_ok(xml);
    ASSERT_TRUE(m);
    ASSERT_EQ(m->ngpus, 3);
    EXPECT_STREQ(m->gpus[0].busid, "0000:04:00.0");
    EXPECT_STREQ(m->gpus[1].busid, "0000:05:00.0");
    EXPECT_STREQ(m->gpus[2].busid, "0000:06:00.0");
    EXPECT_EQ(m->nnics, 0);
    for (int i = 0; i < 3; i++) {
        EXPECT_EQ(m->gpus[i].nic, -1);
        EXPECT_EQ(m->gpus[i].nic_distance, MXH_PCI_UNKNOWN);
        EXPECT_EQ(m->gpus[i].numa, 1);
        EXPECT_EQ(m->gpus[i].island, i);
    }
    EXPECT_EQ(m->nislands, 3);
}

TEST(MachineNccl, DistanceLevelsAndSharingWhenGpusOutnumberNics)
{
    // cpu0: top A { sw A1 {g0 nic0}, sw A2 {g1} }, top B {g2}
    // cpu1: g3 directly under the cpu; nic1 under cpu1
    std::string xml = std::string(kHead) +
                      "<cpu numaid=\"0\">\n"
                      " <pci busid=\"0000:10:00.0\" class=\"0x060400\">\n"
                      "  <pci busid=\"0000:11:00.0\" class=\"0x060400\">\n"
                      "   <pci busid=\"0000:12:00.0\" class=\"0x030200\"/>\n"
                      "   <pci busid=\"0000:13:00.0\" class=\"0x020700\"/>\n"
                      "  </pci>\n"
                      "  <pci busid=\"0000:14:00.0\" class=\"0x060400\">\n"
                      "   <pci busid=\"0000:15:00.0\" class=\"0x030200\"/>\n"
                      "  </pci>\n"
                      " </pci>\n"
                      " <pci busid=\"0000:20:00.0\" class=\"0x060400\">\n"
                      "  <pci busid=\"0000:21:00.0\" class=\"0x030200\"/>\n"
                      " </pci>\n"
                      "</cpu>\n"
                      "<cpu numaid=\"1\">\n"
                      " <pci busid=\"0000:80:00.0\" class=\"0x030200\"/>\n"
                      " <pci busid=\"0000:90:00.0\" class=\"0x060400\">\n"
                      "  <pci busid=\"0000:91:00.0\" class=\"0x020700\"/>\n"
                      " </pci>\n"
                      "</cpu></system>\n";
    MachinePtr m = load_text_ok(xml);
    ASSERT_TRUE(m);
    EXPECT_TRUE(consistent(m.get()));
    expect_machine(m.get(),
                   {{"0000:12:00.0", 0, 0, SW, 0},
                    {"0000:15:00.0", 0, 0, HB, 1},
                    {"0000:21:00.0", 0, 0, NUMA, 2},
                    {"0000:80:00.0", 1, 1, NUMA, 3}},
                   {{"0000:13:00.0", "", 3}, {"0000:91:00.0", "", 1}}, 4, 0);
}

TEST(MachineNccl, CrossSocketAndBalancedTies)
{
    // 4 GPUs on cpu0, 2 NICs on cpu1 only: every GPU crosses the socket;
    // fewest-assigned-first alternates the two NICs.
    std::string xml = std::string(kHead) +
                      "<cpu numaid=\"0\">\n"
                      " <pci busid=\"0000:01:00.0\" class=\"0x030200\"/>\n"
                      " <pci busid=\"0000:02:00.0\" class=\"0x030200\"/>\n"
                      " <pci busid=\"0000:03:00.0\" class=\"0x030200\"/>\n"
                      " <pci busid=\"0000:04:00.0\" class=\"0x030200\"/>\n"
                      "</cpu><cpu numaid=\"1\">\n"
                      " <pci busid=\"0000:82:00.0\" class=\"0x020700\"/>\n"
                      " <pci busid=\"0000:81:00.0\" class=\"0x020700\"/>\n"
                      "</cpu></system>\n";
    MachinePtr m = load_text_ok(xml);
    ASSERT_TRUE(m);
    expect_machine(m.get(),
                   {{"0000:01:00.0", 0, 0, SOCK, 0},
                    {"0000:02:00.0", 0, 1, SOCK, 1},
                    {"0000:03:00.0", 0, 0, SOCK, 2},
                    {"0000:04:00.0", 0, 1, SOCK, 3}},
                   {{"0000:81:00.0", "", 2}, {"0000:82:00.0", "", 2}}, 4, 0);
}

TEST(MachineNccl, EthernetIsNotARailWhenRdmaNicsExist)
{
    std::string xml = std::string(kHead) +
                      "<cpu numaid=\"0\">\n"
                      " <pci busid=\"0000:10:00.0\" class=\"0x060400\">\n"
                      "  <pci busid=\"0000:11:00.0\" class=\"0x030200\"/>\n"
                      "  <pci busid=\"0000:12:00.0\" class=\"0x020000\" vendor=\"0x8086\"/>\n"
                      " </pci>\n"
                      " <pci busid=\"0000:20:00.0\" class=\"0x020000\" vendor=\"0x14e4\">\n"
                      "  <nic><net name=\"rdma_roce0\" gdr=\"1\"/></nic>\n"
                      " </pci>\n"
                      "</cpu></system>\n";
    MachinePtr m = load_text_ok(xml);
    ASSERT_TRUE(m);
    ASSERT_EQ(m->nnics, 1);
    EXPECT_STREQ(m->nics[0].name, "rdma_roce0");
    EXPECT_EQ(m->nics[0].hpc, 1);
    EXPECT_EQ(m->gpus[0].nic, 0);
    EXPECT_EQ(m->gpus[0].nic_distance, NUMA);

    // with Ethernet only, Ethernet ports are the rails
    std::string eth = std::string(kHead) +
                      "<cpu numaid=\"0\">\n"
                      " <pci busid=\"0000:10:00.0\" class=\"0x060400\">\n"
                      "  <pci busid=\"0000:11:00.0\" class=\"0x030200\"/>\n"
                      "  <pci busid=\"0000:12:00.0\" class=\"0x020000\" vendor=\"0x8086\">\n"
                      "   <nic><net name=\"eth0\"/></nic></pci>\n"
                      " </pci>\n"
                      "</cpu></system>\n";
    m = load_text_ok(eth);
    ASSERT_TRUE(m);
    ASSERT_EQ(m->nnics, 1);
    EXPECT_STREQ(m->nics[0].name, "eth0");
    EXPECT_EQ(m->nics[0].hpc, 0);
    EXPECT_EQ(m->gpus[0].nic, 0);
    EXPECT_EQ(m->gpus[0].nic_distance, SW);
}

TEST(MachineNccl, NicWithoutPciPathUnderTheCpu)
{
    std::string xml = std::string(kHead) +
                      "<cpu numaid=\"0\">\n"
                      " <pci busid=\"0000:11:00.0\" class=\"0x030200\"/>\n"
                      " <nic><net name=\"efa0\" dev=\"0\"/><net name=\"efa1\" dev=\"1\"/></nic>\n"
                      "</cpu></system>\n";
    MachinePtr m = load_text_ok(xml);
    ASSERT_TRUE(m);
    ASSERT_EQ(m->nnics, 2);
    EXPECT_STREQ(m->nics[0].busid, "");
    EXPECT_STREQ(m->nics[0].name, "efa0");
    EXPECT_STREQ(m->nics[1].name, "efa1");
    EXPECT_EQ(m->gpus[0].nic, 0);
    EXPECT_EQ(m->gpus[0].nic_distance, NUMA);
}

TEST(MachineNccl, NvlinkGpuToGpuIslandsAndCpuLinksIgnored)
{
    // g0-g1 linked, g2-g3 linked, g4 links only to a CPU (POWER style)
    auto gpu = [](const char *bus, const std::string &links) {
        return std::string("<pci busid=\"") + bus + "\" class=\"0x030200\"><gpu>" + links +
               "</gpu></pci>\n";
    };
    auto link = [](const char *target, const char *tclass) {
        std::string s = std::string("<nvlink target=\"") + target + "\" count=\"2\"";
        if (tclass)
            s += std::string(" tclass=\"") + tclass + "\"";
        return s + "/>";
    };
    std::string xml = std::string(kHead) + "<cpu numaid=\"0\">\n" +
                      gpu("0000:01:00.0", link("0000:02:00.0", "0x030200")) +
                      gpu("0000:02:00.0", link("0000:01:00.0", "0x030200")) +
                      gpu("0000:03:00.0", link("0000:04:00.0", nullptr)) +
                      gpu("0000:04:00.0", "") +
                      gpu("0000:05:00.0", link("0000:00:00.0", "0x068001")) +
                      "</cpu></system>\n";
    MachinePtr m = load_text_ok(xml);
    ASSERT_TRUE(m);
    EXPECT_TRUE(consistent(m.get()));
    EXPECT_EQ(m->has_nvlink, 1);
    EXPECT_EQ(m->nislands, 3);
    EXPECT_EQ(m->gpus[0].island, 0);
    EXPECT_EQ(m->gpus[1].island, 0);
    EXPECT_EQ(m->gpus[2].island, 1);
    EXPECT_EQ(m->gpus[3].island, 1);
    EXPECT_EQ(m->gpus[4].island, 2);

    // NVSwitch links merge everything, also with GPU links mixed in
    std::string sw = std::string(kHead) + "<cpu numaid=\"0\">\n" +
                     gpu("0000:01:00.0", link("0000:0a:00.0", "0x068000")) +
                     gpu("0000:02:00.0", link("0000:03:00.0", "0x030200")) +
                     gpu("0000:03:00.0", link("0000:0b:00.0", "0x068000")) +
                     gpu("0000:04:00.0", "") + "</cpu></system>\n";
    m = load_text_ok(sw);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->nislands, 2);
    EXPECT_EQ(m->gpus[0].island, 0);
    EXPECT_EQ(m->gpus[1].island, 0);
    EXPECT_EQ(m->gpus[2].island, 0);
    EXPECT_EQ(m->gpus[3].island, 1);
}

TEST(MachineNccl, CpuOnlyAndEmptySystem)
{
    MachinePtr m = load_text_ok("<system version=\"1\"/>");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->ngpus, 0);
    EXPECT_EQ(m->nnics, 0);
    EXPECT_EQ(m->nislands, 0);
    m = load_text_ok(std::string(kHead) +
                     "<cpu numaid=\"0\"><pci busid=\"0000:01:00.0\" class=\"0x020700\"/></cpu>"
                     "</system>");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->ngpus, 0);
    EXPECT_EQ(m->nnics, 1);
    EXPECT_EQ(m->nics[0].ngpus, 0);
}

TEST(MachineNccl, OtherVersionIsReadWithAWarning)
{
    LogCapture cap;
    QuietStderr quiet;
    MachinePtr m = load_text_ok("<system version=\"2\"><cpu numaid=\"0\"/></system>");
    ASSERT_TRUE(m);
    ASSERT_EQ(cap.of(MXH_LOG_WARN).size(), 1u);
    EXPECT_NE(cap.of(MXH_LOG_WARN)[0].find("version"), std::string::npos);
}

// ---------------------------------------------------------------------------
// errors

TEST(MachineNcclErrors, InvalidArguments)
{
    QuietStderr quiet;
    mxh_machine_t *m = nullptr;
    EXPECT_EQ(mxh_machine_from_nccl(nullptr, &m), MXH_ERR_INVALID_PARAM);
    EXPECT_EQ(mxh_machine_from_nccl(data_path("ndv5-topo.xml").c_str(), nullptr),
              MXH_ERR_INVALID_PARAM);
}

TEST(MachineNcclErrors, UnreadableIsIoErrorWithPathAndCause)
{
    std::string path = data_path("no-such-file.xml");
    mxh_machine_t *m = nullptr;
    {
        QuietStderr quiet;
        EXPECT_EQ(mxh_machine_from_nccl(path.c_str(), &m), MXH_ERR_IO);
    }
    EXPECT_EQ(m, nullptr);
    std::string msg = mxh_log_last_error();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(strerror(ENOENT)), std::string::npos) << msg;

    {
        QuietStderr quiet;
        EXPECT_EQ(mxh_machine_from_nccl(MXH_TEST_DATADIR, &m), MXH_ERR_IO); // a directory
    }
    msg = mxh_log_last_error();
    EXPECT_NE(msg.find(strerror(EISDIR)), std::string::npos) << msg;
}

TEST(MachineNcclErrors, MalformedXmlNamesTheLine)
{
    struct Case {
        const char *xml;
        int line;
        const char *what;
    };
    const Case cases[] = {
        {"", 1, "no root element"},
        {"\n\n  \n", 4, "no root element"},
        {"<!-- only a comment -->", 1, "no root element"},
        {"<topology version=\"2.0\"></topology>", 1, "expected <system>"},
        {"\n<system version=\"1\">\n<cpu>\n</system>\n", 4, "does not match <cpu> opened at line 3"},
        {"<system>\n<cpu>\n<pci busid=\"0000:01:00.0\">\n", 4, "<pci> opened at line 3 is not closed"},
        {"<system>\n<cpu numaid=0>\n</cpu></system>", 2, "must be quoted"},
        {"<system>\n<cpu numaid>\n</cpu></system>", 2, "no '=' and value"},
        {"<system>\n<cpu numaid=\"0<1\"/></system>", 2, "'<' is not allowed"},
        {"<system>\n<cpu numaid=\"0>\n</cpu></system>", 2, "unterminated attribute value"},
        {"<system>\n<cpu numaid=\"0\"numaid=\"1\"/></system>", 2, "expected white space"},
        {"<system>\n<cpu numaid=\"0\" numaid=\"1\"/></system>", 2, "duplicate attribute"},
        {"<system>\n<cpu name=\"a&b\"/></system>", 2, "entity"},
        {"<system>\n<cpu name=\"&#0;\"/></system>", 2, "character reference"},
        {"<system>\n<cpu name=\"&#xD800;\"/></system>", 2, "character reference"},
        {"<system>\n<cpu name=\"&#x110000;\"/></system>", 2, "character reference"},
        {"<system>\n<cpu/>\n</system>\n<system/>", 4, "second top-level element"},
        {"<system/>\ntrailing", 2, "outside the root"},
        {"junk<system/>", 1, "outside the root"},
        {"<system>\n</cpu>\n</system>", 2, "does not match <system>"},
        {"<system/>\n</system>", 2, "without an open element"},
        {"<system>\n<!-- never closed\n</system>", 2, "unterminated comment"},
        {"<system>\n<1pci/></system>", 2, "element name"},
        {"<system>\n< pci/></system>", 2, "element name"},
        {"<system>\n<pci\n", 2, "end of file inside the tag <pci>"},
        {"<system>\n<pci busid=\"x\"/ >\n</system>", 2, "expected white space"},
        {"<system>\n<!ENTITY x \"y\">\n</system>", 2, "unsupported markup"},
        {"<system>\n<?\n</system>", 2, "processing-instruction target"},
        {"<?xml version=\"1.0\"\n<system/>", 1, "unterminated processing instruction"},
        {"<system/>\n<!DOCTYPE system>", 2, "DOCTYPE"},
        {"<system>\n<cpu a=\"\x01\"/></system>", 2, "invalid character 0x01"},
        {"<system>\n\x00</system>", 2, "invalid character 0x00"},
        {"<system>\n<![CDATA[ never\n</system>", 2, "unterminated CDATA"},
        // semantic errors
        {"<system>\n<cpu>\n<pci class=\"0x030200\"/></cpu></system>", 3, "no busid"},
        {"<system>\n<cpu>\n<pci busid=\"0000:zz:00.0\" class=\"0x030200\"/></cpu></system>", 3,
         "invalid PCI bus id"},
        {"<system>\n<cpu>\n<pci busid=\"0000:01:00.9\" class=\"0x020700\"/></cpu></system>", 3,
         "invalid PCI bus id"},
        {"<system><cpu>\n<pci busid=\"0000:01:00.0\" class=\"0x030200\"/>\n"
         "<pci busid=\"01:00.0\" class=\"0x030200\"/></cpu></system>",
         3, "already given at line 2"},
    };
    for (const Case &c : cases) {
        // string literals with an embedded NUL: take the full length
        std::string xml(c.xml);
        if (strstr(c.what, "0x00") != nullptr)
            xml = std::string("<system>\n\0</system>", 19);
        SCOPED_TRACE(xml);
        std::string msg = parse_error(xml);
        EXPECT_TRUE(names_line(msg, c.line));
        EXPECT_NE(msg.find(c.what), std::string::npos) << msg;
    }
}

TEST(MachineNcclErrors, DeepNestingIsRejected)
{
    std::string xml = "<system>";
    for (int i = 0; i < 100; i++)
        xml += "<pci>";
    std::string msg = parse_error(xml);
    EXPECT_TRUE(names_line(msg, 1));
    EXPECT_NE(msg.find("nested deeper"), std::string::npos) << msg;
}

TEST(MachineNcclErrors, EveryTruncationOfTheRealFilesIsAParseError)
{
    // Cutting a file anywhere before its final '>' leaves it malformed:
    // an open element or tag, or (p4d) an unterminated leading comment.
    for (const char *name : kRealFiles) {
        std::string text = read_text(data_path(name));
        size_t last = text.rfind('>');
        ASSERT_NE(last, std::string::npos);
        int nlines = 1;
        for (char ch : text)
            nlines += ch == '\n';
        TempFile f;
        QuietStderr quiet;
        // step through the file (every byte of the first 600, then strided)
        for (size_t cut = 0; cut <= last; cut += cut < 600 ? 1 : 7) {
            f.write(text.substr(0, cut));
            mxh_machine_t *m = nullptr;
            mxh_status_t st = mxh_machine_from_nccl(f.path().c_str(), &m);
            ASSERT_EQ(st, MXH_ERR_PARSE) << name << " cut at " << cut;
            ASSERT_EQ(m, nullptr);
            std::string msg = mxh_log_last_error();
            ASSERT_TRUE(has_file_line(msg, f.path(), nlines)) << msg;
        }
    }
}

// ---------------------------------------------------------------------------
// seeded mutations of the real files: never a crash, never a leak (run
// under valgrind by make check-valgrind), only MXH_OK with a consistent
// record or MXH_ERR_PARSE naming FILE:LINE

namespace {

std::string mutate(std::mt19937 &rng, const std::string &seed)
{
    static const char kSpecial[] = "<>/=\"' !-?&;#x\n\t\0abcp0:.";
    std::string s = seed;
    std::uniform_int_distribution<int> nops(1, 4);
    int n = nops(rng);
    for (int k = 0; k < n && !s.empty(); k++) {
        std::uniform_int_distribution<size_t> pos(0, s.size() - 1);
        size_t p = pos(rng);
        switch (rng() % 8) {
        case 0: // flip a byte to anything
            s[p] = (char)(rng() & 0xff);
            break;
        case 1: // replace by an XML-significant character
            s[p] = kSpecial[rng() % (sizeof(kSpecial) - 1)];
            break;
        case 2: // delete a short range
            s.erase(p, 1 + rng() % 16);
            break;
        case 3: // insert a special character
            s.insert(s.begin() + (long)p, kSpecial[rng() % (sizeof(kSpecial) - 1)]);
            break;
        case 4: { // duplicate a range elsewhere
            size_t len = 1 + rng() % 200;
            std::string piece = s.substr(p, len);
            s.insert(pos(rng) % (s.size() + 1), piece);
            break;
        }
        case 5: // truncate
            s.resize(p);
            break;
        case 6: { // swap two lines' worth of bytes
            size_t q = pos(rng);
            size_t len = 1 + rng() % 80;
            if (p + len <= s.size() && q + len <= s.size() && (p + len <= q || q + len <= p))
                for (size_t i = 0; i < len; i++)
                    std::swap(s[p + i], s[q + i]);
            break;
        }
        default: { // change a digit or hex digit (bus ids, classes, numaid)
            const char digits[] = "0123456789abcdefABCDEFxX";
            size_t q = s.find_first_of("0123456789", p);
            if (q != std::string::npos)
                s[q] = digits[rng() % (sizeof(digits) - 1)];
            break;
        }
        }
    }
    return s;
}

} // namespace

TEST(MachineNcclFuzz, SeededMutationsNeverCrash)
{
    std::vector<std::string> seeds;
    for (const char *name : kRealFiles)
        seeds.push_back(read_text(data_path(name)));
    const int kIters = 3000;
    std::mt19937 rng(0x6e63636cu); // "nccl"
    TempFile f;
    int ok = 0, parse = 0;
    QuietStderr quiet;
    for (int it = 0; it < kIters; it++) {
        const std::string &seed = seeds[(size_t)it % seeds.size()];
        std::string text = mutate(rng, seed);
        int nlines = 1;
        for (char ch : text)
            nlines += ch == '\n';
        f.write(text);
        mxh_machine_t *m = nullptr;
        mxh_log_clear_last_error();
        mxh_status_t st = mxh_machine_from_nccl(f.path().c_str(), &m);
        if (st == MXH_OK) {
            ok++;
            ASSERT_TRUE(consistent(m)) << "iteration " << it;
            mxh_machine_destroy(m);
        } else {
            parse++;
            ASSERT_EQ(st, MXH_ERR_PARSE) << "iteration " << it;
            ASSERT_EQ(m, nullptr);
            std::string msg = mxh_log_last_error();
            ASSERT_TRUE(has_file_line(msg, f.path(), nlines))
                << "iteration " << it << ": " << msg;
        }
    }
    // both outcomes must be exercised for the loop to mean anything
    EXPECT_GT(ok, kIters / 20);
    EXPECT_GT(parse, kIters / 4);
    RecordProperty("ok", ok);
    RecordProperty("parse_errors", parse);
}
