// Unit tests of src/topo/machine_hwloc.c: GPUs, NICs, PCIe distances, rails
// and NVLink islands read from real machines' hwloc XML exports
// (tests/data/topologies, see README.hwloc.md there) and from small XML
// topologies written by the tests themselves; plus the machine.h helpers.
//
// The expected values were derived by reading each XML file with the hwloc
// 2.9 tools, independently of the code under test:
//   lstopo-no-graphics --input FILE --whole-io -p        (tree, bus ids)
//   lstopo-no-graphics --input FILE --whole-io -v        (ids, classes, infos)
//   lstopo-no-graphics --input FILE --whole-io --distances (NVLinkBandwidth)
// Each fixture's comment says what was read and how the values follow.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "topo/hwloc_compat.h"
#include "topo/machine.h"
#include "unit_util.hh"
#include "util/log.h"
#include "util/status.h"

namespace {

std::string topo_path(const std::string &name) { return mxh_test::test_data("topologies/" + name); }

using mxh_test::LogCapture;
using mxh_test::QuietStderr;
using mxh_test::TempFile;
using mxh_test::read_text;

using MachinePtr = mxh_test::Owned<mxh_machine_t, mxh_machine_destroy>;

MachinePtr load_ok(const std::string &path)
{
    return mxh_test::made_ok<MachinePtr>(
        path, [&](mxh_machine_t **m) { return mxh_machine_from_hwloc(path.c_str(), m); });
}

struct GpuExp {
    const char *busid;
    int numa, package, island, nic;
    mxh_pci_distance_t dist;
};

struct NicExp {
    const char *busid;
    const char *name;
    int hpc, numa, package, ngpus;
};

// For each expected GPU or NIC (@what) and the machine's one at its index: what
// both kinds have (PCI address, NUMA node, package), then check(got, expected).
template <class Got, class Exp, class F>
void check_each(const char *what, const Got *got, const std::vector<Exp> &exp, F check)
{
    for (size_t i = 0; i < exp.size(); i++) {
        SCOPED_TRACE(std::string(what) + " " + std::to_string(i));
        EXPECT_STREQ(got[i].busid, exp[i].busid);
        EXPECT_EQ(got[i].numa, exp[i].numa);
        EXPECT_EQ(got[i].package, exp[i].package);
        check(got[i], exp[i]);
    }
}

void check_machine(const mxh_machine_t *m, const std::vector<GpuExp> &gpus,
                   const std::vector<NicExp> &nics, int nislands, int has_nvlink)
{
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(m->ngpus, (int)gpus.size());
    ASSERT_EQ(m->nnics, (int)nics.size());
    EXPECT_EQ(m->nislands, nislands);
    EXPECT_EQ(m->has_nvlink, has_nvlink);
    check_each("GPU", m->gpus, gpus, [](const mxh_gpu_t &g, const GpuExp &e) {
        EXPECT_EQ(g.island, e.island);
        EXPECT_EQ(g.nic, e.nic);
        EXPECT_EQ(g.nic_distance, e.dist)
            << mxh_pci_distance_name(g.nic_distance) << " vs " << mxh_pci_distance_name(e.dist);
    });
    check_each("NIC", m->nics, nics, [](const mxh_nic_t &n, const NicExp &e) {
        EXPECT_STREQ(n.name, e.name);
        EXPECT_EQ(n.hpc, e.hpc);
        EXPECT_EQ(n.ngpus, e.ngpus);
    });
}

constexpr mxh_pci_distance_t SW = MXH_PCI_SAME_SWITCH;
constexpr mxh_pci_distance_t HB = MXH_PCI_SAME_HOSTBRIDGE;
constexpr mxh_pci_distance_t NUMA = MXH_PCI_SAME_NUMA;
constexpr mxh_pci_distance_t PKG = MXH_PCI_SAME_PACKAGE;
constexpr mxh_pci_distance_t SYS = MXH_PCI_OTHER_SOCKET;
constexpr mxh_pci_distance_t UNK = MXH_PCI_UNKNOWN;

// ---------------------------------------------------------------- real machines

// cts1-quartz-smt1.xml (LLNL Quartz, CPU only). `lstopo -v`: the only display
// device is a Matrox VGA 102b:0522 (not NVIDIA) -> 0 GPUs, 0 islands. The only
// OpenFabrics OS device is "hfi1_0" on PCI 0000:83:00.0 (8086:24f0 Omni-Path,
// which also carries Network "hsi0"), under Package P#1 / NUMANode P#1. The
// Ethernet functions (eno1, aci0, ens786f0/1) are not used because an
// OpenFabrics device exists.
TEST(MachineHwloc, QuartzCpuOnlyOmniPath)
{
    LogCapture log;
    MachinePtr m = load_ok(topo_path("cts1-quartz-smt1.xml"));
    check_machine(m.get(), {}, {{"0000:83:00.0", "hfi1_0", 1, 1, 1, 0}}, 0, 0);
    EXPECT_NE(std::string(m->source).find("cts1-quartz-smt1.xml"), std::string::npos);
    EXPECT_TRUE(log.errors().empty());
}

// nvidiaDGX2.xml (DGX-2H). `lstopo -v`: 16 PCI devices 10de:1db8 class 0302,
// GPUModel "Tesla V100-SXM3-32GB-H"; 34,36,39,3b,57,59,5c,5e:00.0 under
// Package P#0 / NUMANode P#0, b7,b9,bc,be,e0,e2,e5,e7:00.0 under P#1. The 12
// PCI(NVSwitch) objects (61-67, c1-c7; 66:00.0 even shows id 0000:0000 class
// 0000) are not GPUs. No NIC at all (the hwloc developers removed them) ->
// nic -1, distance unknown.
// Islands: `lstopo --distances` shows NVLinkBandwidth over 28 objects: nvml0..7
// each have 25000 to the six switches 0000:61,62,63,65,66,67:00.0 and nothing
// else; nvml8..15 each have 25000 to c1,c2,c3,c5,c6,c7:00.0 and nothing else;
// no switch-switch or GPU-GPU entries. Through the switches, GPUs 0..7 form one
// island and GPUs 8..15 another: 2 islands of 8. (On the real DGX-2 the two
// baseboards are joined by NVSwitch-to-NVSwitch trunk links, but NVML, and so
// hwloc, does not report switch-to-switch links; from this file alone the
// truth is 2 islands, which is also the conservative choice.)
TEST(MachineHwloc, DGX2SixteenGpusTwoNVSwitchIslands)
{
    MachinePtr m = load_ok(topo_path("nvidiaDGX2.xml"));
    std::vector<GpuExp> g;
    const char *bus[16] = {"34", "36", "39", "3b", "57", "59", "5c", "5e",
                           "b7", "b9", "bc", "be", "e0", "e2", "e5", "e7"};
    for (int i = 0; i < 16; i++) {
        static char ids[16][MXH_BUSID_LEN];
        snprintf(ids[i], sizeof(ids[i]), "0000:%s:00.0", bus[i]);
        g.push_back({ids[i], i / 8, i / 8, i / 8, -1, UNK});
    }
    check_machine(m.get(), g, {}, 2, 1);
    for (int i = 0; i < m->ngpus; i++)
        EXPECT_STREQ(m->gpus[i].model, "Tesla V100-SXM3-32GB-H");
}

// g4dnmetal.xml (AWS g4dn.metal). `lstopo -v`: 8 PCI 10de:1eb8 (Tesla T4)
// 18,19,35,36:00.0 under Package P#0 / NUMA P#0 and e7,e8,f4,f5:00.0 under P#1.
// No NVLinkBandwidth matrix (T4 has no NVLink) -> 8 islands of 1.
// NICs: the only OpenFabrics OS device is "rdmap197s0" (EFA 1d0f:efa0) on
// 0000:c5:00.0 under P#1; eth0 (ENA c6:00.0) is then not a rail. All 8 GPUs
// share rail 0. GPUs 0-3 are on the other socket; GPUs 4-7 sit on other host
// bridges than the EFA but in the same Package/NUMA node -> same NUMA.
TEST(MachineHwloc, G4dnEightPcieGpusOneEfa)
{
    MachinePtr m = load_ok(topo_path("g4dnmetal.xml"));
    check_machine(m.get(),
                  {{"0000:18:00.0", 0, 0, 0, 0, SYS},
                   {"0000:19:00.0", 0, 0, 1, 0, SYS},
                   {"0000:35:00.0", 0, 0, 2, 0, SYS},
                   {"0000:36:00.0", 0, 0, 3, 0, SYS},
                   {"0000:e7:00.0", 1, 1, 4, 0, NUMA},
                   {"0000:e8:00.0", 1, 1, 5, 0, NUMA},
                   {"0000:f4:00.0", 1, 1, 6, 0, NUMA},
                   {"0000:f5:00.0", 1, 1, 7, 0, NUMA}},
                  {{"0000:c5:00.0", "rdmap197s0", 1, 1, 1, 8}}, 8, 0);
    EXPECT_STREQ(m->gpus[0].model, "Tesla T4"); // GPUModel of cuda0/nvml0
}

// power8gpudistances.xml (IBM S822LC "Minsky"). `lstopo -v`: 4 PCI 10de:15f9
// (GPUModel "Tesla P100-SXM2-16GB"): 0002:01:00.0, 0003:01:00.0 under Package
// P#0 / NUMA P#0, 000a:01:00.0, 000b:01:00.0 under P#1. No NIC.
// `lstopo --distances`: NVLinkBandwidth over nvml0..3 + Package:0/1: nvml0-nvml1
// and nvml2-nvml3 at 40000, each GPU also 40000 to its own package, nothing
// between the pairs -> islands {0,1} and {2,3}. The GPU<->CPU links are
// ignored (they would not merge the pairs here either, as each package only
// links to its own two GPUs).
TEST(MachineHwloc, Power8NVLinkPairs)
{
    MachinePtr m = load_ok(topo_path("power8gpudistances.xml"));
    check_machine(m.get(),
                  {{"0002:01:00.0", 0, 0, 0, -1, UNK},
                   {"0003:01:00.0", 0, 0, 0, -1, UNK},
                   {"000a:01:00.0", 1, 1, 1, -1, UNK},
                   {"000b:01:00.0", 1, 1, 1, -1, UNK}},
                  {}, 2, 1);
    EXPECT_STREQ(m->gpus[3].model, "Tesla P100-SXM2-16GB");
}

// coral-ea-hwloc1.xml (LLNL rzmanta, hwloc 1.11 XML). `lstopo -v`: 4 PCI
// 10de:15f9 class 0302 with only DRM OS devices (card1.., renderD128..): no
// GPUModel, no PCIDevice info -> model "". 0002:01:00.0, 0003:01:00.0 under
// Package P#0 / NUMA P#0; 0006:01:00.0, 0007:01:00.0 under P#1. The ASPEED VGA
// 0005:06:00.0 (1a03) is not a GPU. No NVLink matrix -> 4 islands.
// NICs: OpenFabrics mlx5_0 on 0000:01:00.0 (P#0, with Network hsi0) and mlx5_1
// on 0004:01:00.0 (P#1, with Network ib0); each GPU is on its own host bridge,
// so its nearest NIC is the one of its NUMA node: socket 0 GPUs -> rail 0,
// socket 1 GPUs -> rail 1.
TEST(MachineHwloc, CoralEaHwloc1Xml)
{
    if (!mxh_hwloc_xml_v1_supported()) {
        // hwloc 3.x dropped the import of hwloc 1.x XML: a clean parse error.
        QuietStderr quiet;
        LogCapture log;
        mxh_machine_t *m = nullptr;
        EXPECT_EQ(mxh_machine_from_hwloc(topo_path("coral-ea-hwloc1.xml").c_str(), &m), MXH_ERR_PARSE);
        EXPECT_EQ(m, nullptr);
        GTEST_SKIP() << "hwloc >= 3 cannot import hwloc 1.x XML";
    }
    MachinePtr m = load_ok(topo_path("coral-ea-hwloc1.xml"));
    check_machine(m.get(),
                  {{"0002:01:00.0", 0, 0, 0, 0, NUMA},
                   {"0003:01:00.0", 0, 0, 1, 0, NUMA},
                   {"0006:01:00.0", 1, 1, 2, 1, NUMA},
                   {"0007:01:00.0", 1, 1, 3, 1, NUMA}},
                  {{"0000:01:00.0", "mlx5_0", 1, 0, 0, 2}, {"0004:01:00.0", "mlx5_1", 1, 1, 1, 2}}, 4, 0);
    for (int i = 0; i < m->ngpus; i++)
        EXPECT_STREQ(m->gpus[i].model, "");
}

// cts1-pascal.xml (LLNL Pascal). `lstopo -p`: under Package P#0 a PLX switch
// (PCIBridge 02:00.0, 10b5:8796) has three downstream ports leading to GPU
// 04:00.0, GPU 07:00.0 (10de:15f8, GPUModel "Tesla P100-PCIE-16GB") and the
// ConnectX-5 08:00.0 (OpenFabrics mlx5_0 + Network hsi0). Both GPUs: same
// switch as mlx5_0 -> rail 0 (only one NIC); I350 Ethernet ports not used.
TEST(MachineHwloc, PascalTwoGpusOneSwitchNic)
{
    MachinePtr m = load_ok(topo_path("cts1-pascal.xml"));
    check_machine(m.get(), {{"0000:04:00.0", 0, 0, 0, 0, SW}, {"0000:07:00.0", 0, 0, 1, 0, SW}},
                  {{"0000:08:00.0", "mlx5_0", 1, 0, 0, 2}}, 2, 0);
    EXPECT_STREQ(m->gpus[1].model, "Tesla P100-PCIE-16GB");
}

// The local machine: must load, whatever it has.
TEST(MachineHwloc, ThisMachineLoads)
{
    mxh_machine_t *raw = nullptr;
    ASSERT_EQ(mxh_machine_from_hwloc(nullptr, &raw), MXH_OK) << mxh_log_last_error();
    MachinePtr local(raw);
    EXPECT_STREQ(local->source, "hwloc");
    char norm[MXH_BUSID_LEN];
    for (int i = 0; i < local->ngpus; i++) {
        ASSERT_EQ(mxh_busid_normalize(local->gpus[i].busid, norm), 0);
        EXPECT_STREQ(norm, local->gpus[i].busid);
        EXPECT_GE(local->gpus[i].island, 0);
        EXPECT_LT(local->gpus[i].island, local->nislands);
        EXPECT_GE(local->gpus[i].nic, local->nnics > 0 ? 0 : -1);
        EXPECT_LT(local->gpus[i].nic, local->nnics);
    }
    int served = 0;
    for (int i = 0; i < local->nnics; i++) {
        ASSERT_EQ(mxh_busid_normalize(local->nics[i].busid, norm), 0);
        EXPECT_STRNE(local->nics[i].name, "");
        served += local->nics[i].ngpus;
    }
    EXPECT_EQ(served, local->nnics > 0 ? local->ngpus : 0);
}

// ---------------------------------------------------------------- written XMLs

// Minimal hwloc v2 XML: a Machine with two packages (P#0, P#1), each with one
// NUMA node (same index) and one PU. @io0/@io1 are I/O subtrees of the
// packages, @iom of the Machine.
std::string synth_xml(const std::string &io0, const std::string &io1, const std::string &iom = "")
{
    auto cpu = [](int p, const std::string &io) {
        char set[16];
        snprintf(set, sizeof(set), "0x%08x", 1u << p);
        std::string s = std::string("<object type=\"Package\" os_index=\"") + std::to_string(p) +
                        "\" cpuset=\"" + set + "\" complete_cpuset=\"" + set + "\" nodeset=\"" + set +
                        "\" complete_nodeset=\"" + set + "\">\n";
        s += std::string("<object type=\"NUMANode\" os_index=\"") + std::to_string(p) + "\" cpuset=\"" +
             set + "\" complete_cpuset=\"" + set + "\" nodeset=\"" + set + "\" complete_nodeset=\"" +
             set + "\" local_memory=\"1073741824\"/>\n";
        s += std::string("<object type=\"PU\" os_index=\"") + std::to_string(p) + "\" cpuset=\"" + set +
             "\" complete_cpuset=\"" + set + "\" nodeset=\"" + set + "\" complete_nodeset=\"" + set +
             "\"/>\n";
        return s + io + "</object>\n";
    };
    return std::string("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                       "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n<topology version=\"2.0\">\n"
                       "<object type=\"Machine\" os_index=\"0\" cpuset=\"0x00000003\" "
                       "complete_cpuset=\"0x00000003\" allowed_cpuset=\"0x00000003\" "
                       "nodeset=\"0x00000003\" complete_nodeset=\"0x00000003\" "
                       "allowed_nodeset=\"0x00000003\">\n") +
           cpu(0, io0) + cpu(1, io1) + iom + "</object>\n</topology>\n";
}

std::string hex2(int v)
{
    char b[8];
    snprintf(b, sizeof(b), "%02x", v);
    return b;
}

// Host bridge over buses [lo-hi] of domain 0.
std::string hostbridge(int lo, int hi, const std::string &children)
{
    return "<object type=\"Bridge\" bridge_type=\"0-1\" depth=\"0\" bridge_pci=\"0000:[" + hex2(lo) +
           "-" + hex2(hi) + "]\">\n" + children + "</object>\n";
}

// PCI-to-PCI bridge at @busid leading to buses [lo-hi].
std::string pcibridge(const std::string &busid, int depth, int lo, int hi, const std::string &children)
{
    return "<object type=\"Bridge\" bridge_type=\"1-1\" depth=\"" + std::to_string(depth) +
           "\" bridge_pci=\"0000:[" + hex2(lo) + "-" + hex2(hi) + "]\" pci_busid=\"" + busid +
           "\" pci_type=\"0604 [10b5:8796] [0000:0000] 00\">\n" + children + "</object>\n";
}

// PCI function; @type is "CCCC [VVVV:DDDD]".
std::string pcidev(const std::string &busid, const std::string &type, const std::string &children = "")
{
    return "<object type=\"PCIDev\" pci_busid=\"" + busid + "\" pci_type=\"" + type +
           " [0000:0000] 00\">\n" + children + "</object>\n";
}

// OS device; hwloc 2 XML types: 1 GPU, 2 Network, 3 OpenFabrics, 5 CoProc.
std::string osdev(const std::string &name, int type, const std::string &infos = "")
{
    return "<object type=\"OSDev\" name=\"" + name + "\" osdev_type=\"" + std::to_string(type) + "\">" +
           infos + "</object>\n";
}

std::string info(const std::string &name, const std::string &value)
{
    return "<info name=\"" + name + "\" value=\"" + value + "\"/>";
}

const char *const A100 = "0302 [10de:20b0]";
const char *const CX6 = "0207 [15b3:101b]";
const char *const NVSWITCH = "0680 [10de:1af1]";
const char *const ETH = "0200 [8086:1521]";

// One PCIe switch (root port 00:01.0, upstream port 01:00.0) with four
// downstream ports: GPU 03:00.0, GPU 04:00.0, NIC 05:00.0 (mlx5_0 + ib0), NIC
// 06:00.0 (mlx5_1). Everything is equally near: GPU0 -> NIC0 and GPU1 -> NIC1,
// never both on NIC0. Also: an NVSwitch (10de class 0680) on package 1 is not a
// GPU; a soft-RoCE "rxe0" OpenFabrics device without PCI parent is not a NIC;
// ib0 and mlx5_0 on one function count once. Model: GPUModel of cuda0 for GPU0,
// PCIDevice for GPU1 (no OS device).
TEST(MachineHwloc, EquallyNearGpusAndPortsPairOneToOne)
{
    std::string sw = pcibridge(
        "0000:00:01.0", 1, 1, 6,
        pcibridge("0000:01:00.0", 2, 2, 6,
                  pcibridge("0000:02:00.0", 3, 3, 3,
                            pcidev("0000:03:00.0", A100,
                                   osdev("cuda0", 5, info("GPUModel", "NVIDIA A100-SXM4-40GB")))) +
                      pcibridge("0000:02:01.0", 3, 4, 4,
                                pcidev("0000:04:00.0", A100, info("PCIDevice", "GA100 [A100 SXM4 40GB]"))) +
                      pcibridge("0000:02:02.0", 3, 5, 5,
                                pcidev("0000:05:00.0", CX6, osdev("ib0", 2) + osdev("mlx5_0", 3))) +
                      pcibridge("0000:02:03.0", 3, 6, 6, pcidev("0000:06:00.0", CX6, osdev("mlx5_1", 3)))));
    std::string io0 = hostbridge(0, 6, sw) + osdev("rxe0", 3);
    std::string io1 = hostbridge(0x80, 0x81, pcibridge("0000:80:01.0", 1, 0x81, 0x81,
                                                       pcidev("0000:81:00.0", NVSWITCH)));
    TempFile f(synth_xml(io0, io1));
    MachinePtr m = load_ok(f.path());
    check_machine(m.get(), {{"0000:03:00.0", 0, 0, 0, 0, SW}, {"0000:04:00.0", 0, 0, 1, 1, SW}},
                  {{"0000:05:00.0", "mlx5_0", 1, 0, 0, 1}, {"0000:06:00.0", "mlx5_1", 1, 0, 0, 1}}, 2, 0);
    EXPECT_STREQ(m->gpus[0].model, "NVIDIA A100-SXM4-40GB");
    EXPECT_STREQ(m->gpus[1].model, "GA100 [A100 SXM4 40GB]");
}

// Eight PCIe switches (four per package, each under its own host bridge),
// each with one GPU and one dual-port NIC (two PCI functions, 16 ports in
// all, like 8 x ConnectX-7 on an H100 node). Switch s uses buses b = 0x10*(s+1)
// .. b+4: GPU (b+3):00.0, ports (b+4):00.0 = mlx5_{2s} and (b+4):00.1 =
// mlx5_{2s+1}. Each GPU's nearest ports are the two of its switch; it takes
// the first (bus order), so GPU s -> NIC 2s: 8 distinct rails, none shared.
TEST(MachineHwloc, EightGpusSixteenPortsDistinctNearestPorts)
{
    std::string io[2];
    std::vector<GpuExp> g;
    std::vector<NicExp> n;
    static char ids[24][MXH_BUSID_LEN];
    static char names[16][16];
    for (int s = 0; s < 8; s++) {
        int b = 0x10 * (s + 1), pkg = s / 4;
        std::string gpu = "0000:" + hex2(b + 3) + ":00.0";
        std::string p0 = "0000:" + hex2(b + 4) + ":00.0", p1 = "0000:" + hex2(b + 4) + ":00.1";
        std::string n0 = "mlx5_" + std::to_string(2 * s), n1 = "mlx5_" + std::to_string(2 * s + 1);
        io[pkg] += hostbridge(
            b, b + 4,
            pcibridge("0000:" + hex2(b) + ":01.0", 1, b + 1, b + 4,
                      pcibridge("0000:" + hex2(b + 1) + ":00.0", 2, b + 2, b + 4,
                                pcibridge("0000:" + hex2(b + 2) + ":00.0", 3, b + 3, b + 3,
                                          pcidev(gpu, A100)) +
                                    pcibridge("0000:" + hex2(b + 2) + ":01.0", 3, b + 4, b + 4,
                                              pcidev(p0, CX6, osdev(n0, 3)) +
                                                  pcidev(p1, CX6, osdev(n1, 3))))));
        snprintf(ids[s], MXH_BUSID_LEN, "%s", gpu.c_str());
        snprintf(ids[8 + 2 * s], MXH_BUSID_LEN, "%s", p0.c_str());
        snprintf(ids[9 + 2 * s], MXH_BUSID_LEN, "%s", p1.c_str());
        snprintf(names[2 * s], sizeof(names[0]), "%s", n0.c_str());
        snprintf(names[2 * s + 1], sizeof(names[0]), "%s", n1.c_str());
        g.push_back({ids[s], pkg, pkg, s, 2 * s, SW});
    }
    for (int k = 0; k < 16; k++)
        n.push_back({ids[8 + k], names[k], 1, k / 8, k / 8, k % 2 == 0 ? 1 : 0});
    TempFile f(synth_xml(io[0], io[1]));
    MachinePtr m = load_ok(f.path());
    check_machine(m.get(), g, n, 8, 0);
}

// No OpenFabrics device: Network OS devices with a PCI parent are the NICs
// (hpc 0); "docker0" without PCI parent is not. Package 0: GPU 01:00.0 and
// eno1 (02:00.0) on two root ports of one host bridge -> same host bridge.
// Package 1: ens1f0/ens1f1 (81:00.0/.1) and GPU 82:00.0 on other root ports of
// one host bridge: both ports equally near and unused -> the first, 81:00.0.
TEST(MachineHwloc, EthernetFallbackWithoutOpenFabrics)
{
    std::string io0 = hostbridge(0, 2,
                                 pcibridge("0000:00:01.0", 1, 1, 1, pcidev("0000:01:00.0", A100)) +
                                     pcibridge("0000:00:02.0", 1, 2, 2,
                                               pcidev("0000:02:00.0", ETH, osdev("eno1", 2))));
    std::string io1 = hostbridge(0x80, 0x82,
                                 pcibridge("0000:80:01.0", 1, 0x81, 0x81,
                                           pcidev("0000:81:00.0", ETH, osdev("ens1f0", 2)) +
                                               pcidev("0000:81:00.1", ETH, osdev("ens1f1", 2))) +
                                     pcibridge("0000:80:02.0", 1, 0x82, 0x82, pcidev("0000:82:00.0", A100)));
    TempFile f(synth_xml(io0, io1, osdev("docker0", 2)));
    MachinePtr m = load_ok(f.path());
    check_machine(m.get(), {{"0000:01:00.0", 0, 0, 0, 0, HB}, {"0000:82:00.0", 1, 1, 1, 1, HB}},
                  {{"0000:02:00.0", "eno1", 0, 0, 0, 1},
                   {"0000:81:00.0", "ens1f0", 0, 1, 1, 1},
                   {"0000:81:00.1", "ens1f1", 0, 1, 1, 0}},
                  2, 0);
}

// One package with two NUMA nodes (Groups, as with sub-NUMA clustering): GPU
// under group 0 / NUMA 0, the only NIC under group 1 / NUMA 1 -> same package.
// And one GPU on package 1 -> other socket.
TEST(MachineHwloc, SamePackageOtherNumaAndOtherSocket)
{
    auto group = [](int i, const std::string &set, const std::string &io) {
        std::string a = "cpuset=\"" + set + "\" complete_cpuset=\"" + set + "\" nodeset=\"" + set +
                        "\" complete_nodeset=\"" + set + "\"";
        return "<object type=\"Group\" " + a + ">\n<object type=\"NUMANode\" os_index=\"" +
               std::to_string(i) + "\" " + a + " local_memory=\"1073741824\"/>\n<object type=\"PU\" os_index=\"" +
               std::to_string(i) + "\" " + a + "/>\n" + io + "</object>\n";
    };
    std::string all = "cpuset=\"0x00000007\" complete_cpuset=\"0x00000007\" allowed_cpuset=\"0x00000007\" "
                      "nodeset=\"0x00000007\" complete_nodeset=\"0x00000007\" allowed_nodeset=\"0x00000007\"";
    std::string p0 = "cpuset=\"0x00000003\" complete_cpuset=\"0x00000003\" nodeset=\"0x00000003\" "
                     "complete_nodeset=\"0x00000003\"";
    std::string p1 = "cpuset=\"0x00000004\" complete_cpuset=\"0x00000004\" nodeset=\"0x00000004\" "
                     "complete_nodeset=\"0x00000004\"";
    std::string xml =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
        "<topology version=\"2.0\">\n<object type=\"Machine\" os_index=\"0\" " + all + ">\n"
        "<object type=\"Package\" os_index=\"0\" " + p0 + ">\n" +
        group(0, "0x00000001",
              hostbridge(0, 1, pcibridge("0000:00:01.0", 1, 1, 1, pcidev("0000:01:00.0", A100)))) +
        group(1, "0x00000002",
              hostbridge(0x40, 0x41, pcibridge("0000:40:01.0", 1, 0x41, 0x41,
                                               pcidev("0000:41:00.0", CX6, osdev("mlx5_0", 3))))) +
        "</object>\n<object type=\"Package\" os_index=\"1\" " + p1 + ">\n"
        "<object type=\"NUMANode\" os_index=\"2\" " + p1 + " local_memory=\"1073741824\"/>\n"
        "<object type=\"PU\" os_index=\"2\" " + p1 + "/>\n" +
        hostbridge(0x80, 0x81, pcibridge("0000:80:01.0", 1, 0x81, 0x81, pcidev("0000:81:00.0", A100))) +
        "</object>\n</object>\n</topology>\n";
    TempFile f(xml);
    MachinePtr m = load_ok(f.path());
    check_machine(m.get(), {{"0000:01:00.0", 0, 0, 0, 0, PKG}, {"0000:81:00.0", 2, 1, 1, 0, SYS}},
                  {{"0000:41:00.0", "mlx5_0", 1, 1, 0, 2}}, 2, 0);
}

// An export without any I/O object: a valid, empty machine.
TEST(MachineHwloc, NoIoObjectsIsNotAnError)
{
    LogCapture log;
    TempFile f(synth_xml("", ""));
    MachinePtr m = load_ok(f.path());
    check_machine(m.get(), {}, {}, 0, 0);
    EXPECT_TRUE(log.errors().empty());
}

// ---------------------------------------------------------------- errors

TEST(MachineHwloc, MissingFileIsIoErrorNamingThePath)
{
    LogCapture log;
    QuietStderr quiet;
    std::string path = topo_path("no-such-machine.xml");
    mxh_machine_t *m = reinterpret_cast<mxh_machine_t *>(&log); // must be reset
    EXPECT_EQ(mxh_machine_from_hwloc(path.c_str(), &m), MXH_ERR_IO);
    EXPECT_EQ(m, nullptr);
    ASSERT_EQ(log.errors().size(), 1u);
    EXPECT_NE(log.errors()[0].find(path), std::string::npos) << log.errors()[0];
    EXPECT_NE(std::string(mxh_log_last_error()).find(path), std::string::npos);
}

TEST(MachineHwloc, DirectoryIsIoError)
{
    LogCapture log;
    QuietStderr quiet;
    mxh_machine_t *m = nullptr;
    std::string dir = std::string(MXH_TEST_DATADIR) + "/topologies";
    EXPECT_EQ(mxh_machine_from_hwloc(dir.c_str(), &m), MXH_ERR_IO);
    EXPECT_EQ(m, nullptr);
    ASSERT_FALSE(log.errors().empty());
    EXPECT_NE(log.errors()[0].find(dir), std::string::npos);
}

TEST(MachineHwloc, MalformedXmlIsParseErrorNamingThePath)
{
    const std::string truncated = read_text(topo_path("cts1-pascal.xml")).substr(0, 3000);
    const std::vector<std::string> bad = {
        "",
        "this is not XML\n",
        "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n<object type=\"Machine\"",
        "<?xml version=\"1.0\"?>\n<notatopology/>\n",
        truncated,
    };
    for (const auto &content : bad) {
        LogCapture log;
        TempFile f(content);
        mxh_machine_t *m = nullptr;
        mxh_status_t st;
        {
            QuietStderr quiet;
            st = mxh_machine_from_hwloc(f.path().c_str(), &m);
        }
        EXPECT_EQ(st, MXH_ERR_PARSE) << content.substr(0, 60);
        EXPECT_EQ(m, nullptr);
        ASSERT_FALSE(log.errors().empty()) << content.substr(0, 60);
        EXPECT_NE(log.errors()[0].find(f.path()), std::string::npos) << log.errors()[0];
    }
}

// A 44-byte file without any '>': hwloc 2.9's minimalistic importer matches
// "<topology version=\"%u.%u\"" with sscanf and then dereferences strchr(buffer, '>') + 1,
// which is NULL + 1: every rank given the file died of SIGSEGV. The library now checks the
// file first (src/topo/xml_check.c) and hwloc never sees it.
TEST(MachineHwloc, FileThatCrashesHwlocIsAParseErrorBeforeHwloc)
{
    TempFile f("<?xml version=\"1.0\"?>\n<topology version=\"2.0\"");
    unsigned v = hwloc_get_api_version();
    // API 0x20800: hwloc 2.8 and 2.9 (Debian 12's 2.9.0), whose minimalistic importer is used
    // without the libxml2 plugin
    if (v == 0x00020800 && getenv("HWLOC_LIBXML_IMPORT") == nullptr) {
        // the proof that the input is hostile: hwloc itself, in a child process
        EXPECT_EXIT(
            {
                hwloc_topology_t t;
                if (hwloc_topology_init(&t) != 0 || hwloc_topology_set_xml(t, f.path().c_str()) != 0)
                    exit(2);
                exit(hwloc_topology_load(t) == 0 ? 0 : 1);
            },
            ::testing::KilledBySignal(SIGSEGV), "");
    } else {
        std::cout << "[ note     ] hwloc API " << (v >> 16) << "." << ((v >> 8) & 0xff)
                  << ": not checking that hwloc itself crashes on the file\n";
    }
    LogCapture log;
    QuietStderr quiet;
    mxh_machine_t *m = nullptr;
    EXPECT_EQ(mxh_machine_from_hwloc(f.path().c_str(), &m), MXH_ERR_PARSE);
    EXPECT_EQ(m, nullptr);
    ASSERT_EQ(log.errors().size(), 1u);
    EXPECT_EQ(log.errors()[0], f.path() + ":2: malformed hwloc XML: end of file inside the start "
                                          "tag of <topology> (no '>')");
}

TEST(MachineHwloc, NullOutputIsInvalidParam)
{
    LogCapture log;
    QuietStderr quiet;
    EXPECT_EQ(mxh_machine_from_hwloc(topo_path("cts1-pascal.xml").c_str(), nullptr), MXH_ERR_INVALID_PARAM);
    EXPECT_EQ(log.errors().size(), 1u);
    mxh_machine_destroy(nullptr); // no-op
}

// ---------------------------------------------------------------- helpers

TEST(MachineHelpers, BusidNormalize)
{
    char out[MXH_BUSID_LEN];
    const std::vector<std::pair<const char *, const char *>> ok = {
        {"07:00.0", "0000:07:00.0"},          // domain optional
        {"0000:3B:00.0", "0000:3b:00.0"},     // upper -> lower case
        {"0000:3b:00.0", "0000:3b:00.0"},     // already normal
        {"00000000:07:00.0", "0000:07:00.0"}, // NVML's 8-digit domain
        {"0002:01:00.0", "0002:01:00.0"},
        {"000A:1:2.3", "000a:01:02.3"},       // short fields are padded
        {"10000:01:00.0", "10000:01:00.0"},   // 32-bit (VMD) domain
        {" 0000:c5:00.0\n", "0000:c5:00.0"},  // surrounding blanks
        {"FF:1F.7", "0000:ff:1f.7"},
    };
    for (const auto &c : ok) {
        memset(out, 'x', sizeof(out));
        EXPECT_EQ(mxh_busid_normalize(c.first, out), 0) << c.first;
        EXPECT_STREQ(out, c.second) << c.first;
    }
    const std::vector<const char *> bad = {
        "",            "07:00",          "0000:07:00",      "0000:07:00.0x", "0000:107:00.0",
        "0000:07:20.0", "0000:07:00.8",  "g0:00.0",         "1:2:3:4.0",     "0000:07:00.",
        ":07:00.0",    "0000::07:00.0", "123456789:07:00.0", "0000:07 :00.0",
    };
    for (const char *b : bad) {
        memset(out, 'x', sizeof(out));
        EXPECT_NE(mxh_busid_normalize(b, out), 0) << b;
        EXPECT_EQ(out[0], '\0') << b;
    }
    EXPECT_NE(mxh_busid_normalize(nullptr, out), 0);
    EXPECT_NE(mxh_busid_normalize("07:00.0", nullptr), 0);
}

TEST(MachineHelpers, FindGpuOnDGX2)
{
    MachinePtr m = load_ok(topo_path("nvidiaDGX2.xml"));
    ASSERT_EQ(m->ngpus, 16);
    EXPECT_EQ(mxh_machine_find_gpu(m.get(), "0000:34:00.0"), 0);
    EXPECT_EQ(mxh_machine_find_gpu(m.get(), "0000:B7:00.0"), 8);
    EXPECT_EQ(mxh_machine_find_gpu(m.get(), "b7:00.0"), 8);
    EXPECT_EQ(mxh_machine_find_gpu(m.get(), "00000000:e7:00.0"), 15);
    EXPECT_EQ(mxh_machine_find_gpu(m.get(), "0000:61:00.0"), -1); // an NVSwitch
    EXPECT_EQ(mxh_machine_find_gpu(m.get(), "0001:34:00.0"), -1); // other domain
    EXPECT_EQ(mxh_machine_find_gpu(m.get(), "cuda0"), -1);
    EXPECT_EQ(mxh_machine_find_gpu(m.get(), nullptr), -1);
    EXPECT_EQ(mxh_machine_find_gpu(nullptr, "0000:34:00.0"), -1);
    for (int i = 0; i < m->ngpus; i++)
        EXPECT_EQ(mxh_machine_find_gpu(m.get(), m->gpus[i].busid), i);
}

TEST(MachineHelpers, DistanceNames)
{
    std::vector<std::string> names;
    for (int d = MXH_PCI_SAME_SWITCH; d <= MXH_PCI_UNKNOWN; d++) {
        const char *s = mxh_pci_distance_name((mxh_pci_distance_t)d);
        ASSERT_NE(s, nullptr);
        EXPECT_STRNE(s, "");
        for (const auto &n : names)
            EXPECT_NE(n, s);
        names.push_back(s);
    }
    EXPECT_STREQ(mxh_pci_distance_name(MXH_PCI_SAME_SWITCH), "same-switch");
    EXPECT_STREQ(mxh_pci_distance_name(MXH_PCI_OTHER_SOCKET), "other-socket");
    EXPECT_STREQ(mxh_pci_distance_name((mxh_pci_distance_t)42), "unknown");
}

} // namespace
