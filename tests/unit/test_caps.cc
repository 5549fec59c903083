// Unit tests of src/topo/caps.c: UCX capability query (no MPI_Init) and the
// one-line description. On the CI/dev machine UCX is installed (libucx-dev):
// the query must find it, host memory and at least one of the transports
// every UCX build has (self, tcp, posix, sysv, cma).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>
#include <string>

#include "config.h"
#include "topo/caps.h"
#include "util/status.h"

namespace {

// valgrind (make check under valgrind) is far slower than the 1 s budget.
[[maybe_unused]] bool under_valgrind()
{
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line))
        if (line.find("vgpreload") != std::string::npos)
            return true;
    return false;
}

std::string describe(const mxh_caps_t &caps)
{
    size_t need = mxh_caps_describe(&caps, nullptr, 0);
    std::string s(need + 1, '\0');
    size_t got = mxh_caps_describe(&caps, &s[0], s.size());
    EXPECT_EQ(got, need);
    s.resize(strlen(s.c_str()));
    EXPECT_EQ(s.size(), need);
    return s;
}

} // namespace

TEST(Caps, InitMarksMpiUnknown)
{
    mxh_caps_t caps;
    memset(&caps, 0x5a, sizeof(caps));
    mxh_caps_init(&caps);
    EXPECT_EQ(caps.ucx_present, 0);
    EXPECT_EQ(caps.ntransports, 0);
    EXPECT_EQ(caps.gpu_direct, 0);
    EXPECT_EQ(caps.mpi_cuda_aware, -1);
}

TEST(Caps, QueryNullIsInvalidParam)
{
    EXPECT_EQ(mxh_caps_query_ucx(nullptr), MXH_ERR_INVALID_PARAM);
    mxh_caps_query_mpi(nullptr); // no crash
    EXPECT_EQ(mxh_caps_describe(nullptr, nullptr, 0), 0u);
}

TEST(Caps, MpiNotInitializedIsUnknown)
{
    mxh_caps_t caps;
    mxh_caps_init(&caps);
    caps.mpi_cuda_aware = 1;
    mxh_caps_query_mpi(&caps); // unit tests never call MPI_Init
    EXPECT_EQ(caps.mpi_cuda_aware, -1);
}

TEST(Caps, UcxQueryFindsHostMemoryAndBasicTransports)
{
    mxh_caps_t caps;
    memset(&caps, 0x5a, sizeof(caps)); // the query must set every UCX field
    caps.mpi_cuda_aware = 0;           // ... and leave this one alone
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(mxh_caps_query_ucx(&caps), MXH_OK);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(caps.mpi_cuda_aware, 0);
    std::string text = describe(caps);
    std::cout << "[ caps     ] query " << secs * 1e3 << " ms: " << text << std::endl;
#ifdef HAVE_UCX
    if (!under_valgrind()) {
        EXPECT_LT(secs, 1.0);
    }
    ASSERT_EQ(caps.ucx_present, 1);
    EXPECT_EQ(caps.ucx_mem_host, 1);
    // CUDA memory depends on the UCX build (cuda modules) and a GPU: print only
    std::cout << "[ caps     ] cuda=" << caps.ucx_mem_cuda
              << " cuda_managed=" << caps.ucx_mem_cuda_managed
              << " gpu_direct=" << caps.gpu_direct << std::endl;
    EXPECT_TRUE(caps.ucx_mem_cuda == 0 || caps.ucx_mem_cuda == 1);
    EXPECT_TRUE(caps.gpu_direct == 0 || caps.gpu_direct == 1);
    EXPECT_TRUE(!caps.gpu_direct || caps.ucx_mem_cuda);
    ASSERT_GE(caps.ntransports, 1);
    ASSERT_LE(caps.ntransports, MXH_CAPS_MAX_TRANSPORTS);
    const std::set<std::string> basic = {"self", "tcp", "posix", "sysv", "cma"};
    int nbasic = 0, nbasic_bw = 0;
    for (int i = 0; i < caps.ntransports; i++) {
        const auto &t = caps.transports[i];
        ASSERT_LT(strnlen(t.name, sizeof(t.name)), sizeof(t.name));
        ASSERT_LT(strnlen(t.device, sizeof(t.device)), sizeof(t.device));
        EXPECT_GT(strlen(t.name), 0u) << i;
        EXPECT_GT(strlen(t.device), 0u) << t.name;
        EXPECT_GE(t.bandwidth_mbs, 0.0) << t.name;
        EXPECT_GE(t.latency_ns, 0.0) << t.name;
        EXPECT_NE(text.find(std::string(t.name) + "/" + t.device), std::string::npos)
            << t.name << "/" << t.device << " missing from: " << text;
        if (basic.count(t.name)) {
            nbasic++;
            nbasic_bw += t.bandwidth_mbs > 0;
        }
    }
    EXPECT_GE(nbasic, 1) << text;
    // self (at least) always opens, so UCX reports figures for it; a
    // restricted container may refuse shared memory or ptrace (bandwidth 0)
    EXPECT_GE(nbasic_bw, 1) << text;
    EXPECT_EQ(text.rfind("UCX: yes; memory: host=yes", 0), 0u) << text;
#else
    EXPECT_EQ(caps.ucx_present, 0);
    EXPECT_EQ(caps.ntransports, 0);
    EXPECT_EQ(text.rfind("UCX: no", 0), 0u) << text;
#endif
}

TEST(Caps, QueryTwiceGivesTheSameTransports)
{
    mxh_caps_t a, b;
    mxh_caps_init(&a);
    mxh_caps_init(&b);
    ASSERT_EQ(mxh_caps_query_ucx(&a), MXH_OK);
    ASSERT_EQ(mxh_caps_query_ucx(&b), MXH_OK);
    ASSERT_EQ(a.ntransports, b.ntransports);
    for (int i = 0; i < a.ntransports; i++) {
        EXPECT_STREQ(a.transports[i].name, b.transports[i].name);
        EXPECT_STREQ(a.transports[i].device, b.transports[i].device);
    }
}

TEST(Caps, DescribeFormatAndTruncation)
{
    mxh_caps_t caps;
    mxh_caps_init(&caps);
    EXPECT_EQ(describe(caps), "UCX: no; MPI CUDA-aware: unknown");

    caps.ucx_present = 1;
    caps.ucx_mem_host = 1;
    caps.mpi_cuda_aware = 0;
    caps.ntransports = 2;
    snprintf(caps.transports[0].name, sizeof(caps.transports[0].name), "tcp");
    snprintf(caps.transports[0].device, sizeof(caps.transports[0].device), "eth0");
    caps.transports[0].bandwidth_mbs = 1131.5;
    caps.transports[0].latency_ns = 5203;
    snprintf(caps.transports[1].name, sizeof(caps.transports[1].name), "rc_mlx5");
    snprintf(caps.transports[1].device, sizeof(caps.transports[1].device), "mlx5_0:1");
    const std::string want =
        "UCX: yes; memory: host=yes cuda=no cuda_managed=no; gpu_direct=no; "
        "MPI CUDA-aware: no; transports (2): tcp/eth0 (1132 MB/s, 5203 ns), "
        "rc_mlx5/mlx5_0:1 (bandwidth not reported)";
    EXPECT_EQ(describe(caps), want);

    // truncation: snprintf semantics, always terminated
    char small[16];
    memset(small, 'x', sizeof(small));
    EXPECT_EQ(mxh_caps_describe(&caps, small, sizeof(small)), want.size());
    EXPECT_EQ(std::string(small), want.substr(0, sizeof(small) - 1));
    char one[1] = {'x'};
    EXPECT_EQ(mxh_caps_describe(&caps, one, 1), want.size());
    EXPECT_EQ(one[0], '\0');

    // names that fill their arrays without a NUL are not overrun
    memset(caps.transports[1].name, 'n', sizeof(caps.transports[1].name));
    std::string s = describe(caps);
    EXPECT_NE(s.find(std::string(sizeof(caps.transports[1].name), 'n') + "/mlx5_0:1"),
              std::string::npos)
        << s;
}
