// Discovery glue (no MPI): machine source selection, hwloc vs NCCL file
// disagreement, and the GPU/NIC part of a rank's record.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "unit_util.hh"

extern "C" {
#include "topo/record.h"
#include "topo/discover.h"
#include "util/config.h"
#include "util/log.h"
}

namespace {

std::string topo(const char *name) { return std::string(MXH_TEST_DATADIR) + "/topologies/" + name; }

std::vector<std::string> g_msgs;
void hook(mxh_log_level_t, const char *msg, void *) { g_msgs.push_back(msg); }

struct Discover : ::testing::Test {
    mxh_config_t cfg;
    void SetUp() override
    {
        unsetenv("HWLOC_XMLFILE");
        unsetenv("NCCL_TOPO_FILE");
        unsetenv("CUDA_VISIBLE_DEVICES");
        mxh_config_init_defaults(&cfg);
        g_msgs.clear();
        mxh_log_set_hook(hook, nullptr);
        mxh_log_set_level(MXH_LOG_INFO);
    }
    void TearDown() override
    {
        mxh_log_set_hook(nullptr, nullptr);
        mxh_log_set_level(MXH_LOG_WARN);
        mxh_discover_cleanup();
    }
    bool logged(const std::string &needle)
    {
        for (auto &m : g_msgs)
            if (m.find(needle) != std::string::npos)
                return true;
        return false;
    }
};

}  // namespace

TEST_F(Discover, HwlocXmlFillsTheRecord)
{
    snprintf(cfg.hwloc_xml, sizeof(cfg.hwloc_xml), "%s", topo("coral-ea-hwloc1.xml").c_str());
    snprintf(cfg.gpu_busid, sizeof(cfg.gpu_busid), "0006:01:00.0");
    const mxh_machine_t *m = nullptr;
    mxh_test::QuietStderr quiet;
    ASSERT_EQ(MXH_OK, mxh_discover_machine(&cfg, &m));
    ASSERT_NE(nullptr, m);
    mxh_record_t rec;
    mxh_record_init(&rec);
    ASSERT_EQ(MXH_OK, mxh_discover_fill_record(&cfg, m, &rec));
    EXPECT_EQ(4, rec.ngpus);
    EXPECT_EQ(2, rec.gpu);  // third GPU in bus order
    EXPECT_STREQ("0006:01:00.0", rec.gpu_busid);
    EXPECT_EQ(2, rec.nnics);
    EXPECT_STREQ("mlx5_1", rec.nic_names[1]);
    const int rails[4] = {0, 0, 1, 1};
    for (int g = 0; g < 4; g++)
        EXPECT_EQ(rails[g], rec.gpu_rail[g]) << g;
    // cached: the same pointer the second time
    const mxh_machine_t *m2 = nullptr;
    ASSERT_EQ(MXH_OK, mxh_discover_machine(&cfg, &m2));
    EXPECT_EQ(m, m2);
}

TEST_F(Discover, VisibleDevicesWhenNoBusId)
{
    snprintf(cfg.hwloc_xml, sizeof(cfg.hwloc_xml), "%s", topo("g4dnmetal.xml").c_str());
    setenv("CUDA_VISIBLE_DEVICES", "6,7", 1);
    const mxh_machine_t *m = nullptr;
    mxh_test::QuietStderr quiet;
    ASSERT_EQ(MXH_OK, mxh_discover_machine(&cfg, &m));
    mxh_record_t rec;
    mxh_record_init(&rec);
    ASSERT_EQ(MXH_OK, mxh_discover_fill_record(&cfg, m, &rec));
    EXPECT_EQ(8, rec.ngpus);
    EXPECT_EQ(-1, rec.gpu);
    ASSERT_EQ(2, rec.nvisible);
    EXPECT_EQ(6, rec.visible[0]);
    EXPECT_EQ(7, rec.visible[1]);
    // UUID-style entries cannot be mapped to bus order: ignored
    setenv("CUDA_VISIBLE_DEVICES", "GPU-8f6e6f0a", 1);
    mxh_record_init(&rec);
    ASSERT_EQ(MXH_OK, mxh_discover_fill_record(&cfg, m, &rec));
    EXPECT_EQ(0, rec.nvisible);
}

TEST_F(Discover, NcclFileWinsAndDisagreementIsSaid)
{
    snprintf(cfg.hwloc_xml, sizeof(cfg.hwloc_xml), "%s", topo("coral-ea-hwloc1.xml").c_str());
    snprintf(cfg.nccl_topo_file, sizeof(cfg.nccl_topo_file), "%s", topo("p4d-24xl-topo.xml").c_str());
    const mxh_machine_t *m = nullptr;
    mxh_test::QuietStderr quiet;
    ASSERT_EQ(MXH_OK, mxh_discover_machine(&cfg, &m));
    ASSERT_NE(nullptr, m);
    EXPECT_EQ(8, m->ngpus);  // the NCCL file's 8 A100, not hwloc's 4 P100
    EXPECT_TRUE(logged("4 GPUs in hwloc, 8 in the NCCL file")) << (g_msgs.empty() ? "" : g_msgs.back());
    EXPECT_TRUE(logged("using the NCCL topology file"));
}

TEST_F(Discover, NamedFilesThatCannotBeReadAreErrors)
{
    const mxh_machine_t *m = nullptr;
    mxh_test::QuietStderr quiet;
    snprintf(cfg.hwloc_xml, sizeof(cfg.hwloc_xml), "/nonexistent/machine.xml");
    EXPECT_NE(MXH_OK, mxh_discover_machine(&cfg, &m));
    EXPECT_NE(std::string::npos, std::string(mxh_log_last_error()).find("/nonexistent/machine.xml"));
    cfg.hwloc_xml[0] = '\0';
    snprintf(cfg.nccl_topo_file, sizeof(cfg.nccl_topo_file), "/nonexistent/topo.xml");
    EXPECT_NE(MXH_OK, mxh_discover_machine(&cfg, &m));
    EXPECT_NE(std::string::npos, std::string(mxh_log_last_error()).find("/nonexistent/topo.xml"));
}

// A malformed hwloc XML named by MPIX_HIER_HWLOC_XML or HWLOC_XMLFILE is an error, as a
// missing one is (the rank's record fails); HWLOC_XMLFILE goes through the same check.
TEST_F(Discover, MalformedHwlocXmlIsAParseErrorFromEitherVariable)
{
    const mxh_machine_t *m = nullptr;
    mxh_test::TempFile f("<topology version=\"2.0\"");
    mxh_test::QuietStderr quiet;
    snprintf(cfg.hwloc_xml, sizeof(cfg.hwloc_xml), "%s", f.path().c_str());
    EXPECT_EQ(MXH_ERR_PARSE, mxh_discover_machine(&cfg, &m));
    EXPECT_EQ(std::string(mxh_log_last_error()),
              f.path() + ":1: malformed hwloc XML: end of file inside the start tag of <topology> (no '>')");
    cfg.hwloc_xml[0] = '\0';
    setenv("HWLOC_XMLFILE", f.path().c_str(), 1);
    EXPECT_EQ(MXH_ERR_PARSE, mxh_discover_machine(&cfg, &m));
    EXPECT_NE(std::string::npos, std::string(mxh_log_last_error()).find(f.path() + ":1: malformed hwloc XML"));
    unsetenv("HWLOC_XMLFILE");
}

TEST_F(Discover, BadBusIdIsAConfigError)
{
    snprintf(cfg.gpu_busid, sizeof(cfg.gpu_busid), "not-a-bus-id");
    mxh_record_t rec;
    mxh_record_init(&rec);
    mxh_test::QuietStderr quiet;
    EXPECT_EQ(MXH_ERR_CONFIG, mxh_discover_fill_record(&cfg, nullptr, &rec));
    EXPECT_NE(std::string::npos, std::string(mxh_log_last_error()).find("MPIX_HIER_GPU_BUSID"));
}

TEST_F(Discover, NoMachineDegrades)
{
    mxh_record_t rec;
    mxh_record_init(&rec);
    EXPECT_EQ(MXH_OK, mxh_discover_fill_record(&cfg, nullptr, &rec));
    EXPECT_EQ(0, rec.ngpus);
    EXPECT_EQ(-1, rec.gpu);
}
