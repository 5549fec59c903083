// GoogleTest main for the MPI suites (run under mpiexec by run_mpi_tests.sh).
//
// - MPI_Init_thread(FUNNELED); every rank runs the same tests in the same order.
// - Only rank 0 prints gtest's normal output; the other ranks print their own
//   failures to stderr prefixed "[rank R]". MxhMpiTest::TearDown makes a
//   failure on any rank a failure of the test on every rank.
// - A watchdog (MXH_TEST_TIMEOUT seconds per test, default 120) turns a hang
//   into "mxh watchdog: test X hung on rank R" and exit status 124.
// - The exit status is collective: non-zero on every rank if any rank failed.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "mxh_test_shim.h"

namespace {

int g_rank = 0;

// Prints this rank's own failures (ranks other than 0).
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
  public:
    void OnTestPartResult(const ::testing::TestPartResult &r) override
    {
        if (!r.failed())
            return;
        std::fprintf(stderr, "[rank %d] %s:%d: Failure in %s\n%s\n", g_rank,
                     r.file_name() ? r.file_name() : "?", r.line_number(), current_.c_str(),
                     r.message());
        std::fflush(stderr);
    }
    void OnTestStart(const ::testing::TestInfo &t) override
    {
        current_ = std::string(t.test_suite_name()) + "." + t.name();
    }

  private:
    std::string current_;
};

// Arms the watchdog for every test.
class WatchdogListener : public ::testing::EmptyTestEventListener {
  public:
    void OnTestStart(const ::testing::TestInfo &t) override
    {
        std::string name = std::string(t.test_suite_name()) + "." + t.name();
        mxh_watchdog_arm(name.c_str());
    }
    void OnTestEnd(const ::testing::TestInfo &) override { mxh_watchdog_disarm(); }
};

// One line on rank 0 describing the layout the job was started with.
void print_layout(int size)
{
    char name[256];
    mxh_node_name(name, sizeof(name));
    std::vector<char> all((size_t)size * 256);
    MPI_Allgather(name, 256, MPI_CHAR, all.data(), 256, MPI_CHAR, MPI_COMM_WORLD);
    if (g_rank != 0)
        return;
    std::string order;
    std::map<std::string, int> count;
    for (int r = 0; r < size; r++) {
        std::string n(&all[(size_t)r * 256]);
        order += (r ? " " : "") + n;
        count[n]++;
    }
    std::printf("mxh: %d rank(s) on %zu node(s); rank->node: %s; layout=%s; %s; timeout %d s\n",
                size, count.size(), order.c_str(), mxh_env("MXH_TEST_LAYOUT", "(unnamed)"),
                MXH_TEST_PLAIN ? "PLAIN MPI stand-in (no libmpixhier)" : "libmpixhier",
                mxh_watchdog_timeout());
    std::fflush(stdout);
}

} // namespace

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    int size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mxh_watchdog_start(g_rank);
    mxh_watchdog_arm("(setup after MPI_Init)");
    MPI_Comm_dup(MPI_COMM_WORLD, &mxh_test_verdict_comm);
    mxh_types_init();

    ::testing::InitGoogleTest(&argc, argv);
    ::testing::TestEventListeners &listeners = ::testing::UnitTest::GetInstance()->listeners();
    if (g_rank != 0) {
        delete listeners.Release(listeners.default_result_printer());
        delete listeners.Release(listeners.default_xml_generator());
        listeners.Append(new RankFailurePrinter);
    }
    listeners.Append(new WatchdogListener);
    print_layout(size);
    mxh_watchdog_disarm();

    int local = RUN_ALL_TESTS();

    mxh_watchdog_arm("(collective verdict and MPI_Finalize)");
    int nfail = mxh_collective_failures(MPI_COMM_WORLD, local != 0, nullptr, 0);
    if (g_rank == 0) {
        if (nfail)
            std::printf("mxh: FAILED on %d of %d rank(s)\n", nfail, size);
        else
            std::printf("mxh: passed on all %d rank(s)\n", size);
        std::fflush(stdout);
    }
    MPI_Comm_free(&mxh_test_verdict_comm);
    MPI_Finalize();
    mxh_watchdog_stop();
    return nfail ? 1 : 0;
}
