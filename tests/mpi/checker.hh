// Result checking shared by the MPI test programs: failure reporting, byte and
// typed comparisons with MPICH's reference, guard zones, and the collective
// verdict that every rank got bitwise-identical results.
#ifndef MXH_CHECKER_HH
#define MXH_CHECKER_HH

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "mxh_test_shim.h"

#ifndef MXH_TEST_MEMKIND
#define MXH_TEST_MEMKIND 0
#endif
#if MXH_TEST_MEMKIND
#include "mem/mem.h"
#endif

namespace mxh_test {

inline std::string fmt(const char *f, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof(buf), f, ap);
    va_end(ap);
    return buf;
}

// ------------------------------------------------------------ memory kinds
//
// Built with -DMXH_TEST_MEMKIND=1 (test_colls_mem, test_nbc_mem), the buffers a
// test hands to the library as send or receive buffers come from the test
// memory kind (src/mem/mem.h: host memory the library must treat like device
// memory), chosen per role by $MXH_TEST_MEM, e.g. "send=test,recv=host,delay=5"
// (default send=test,recv=test,delay=3); MPICH's reference results are always
// computed on ordinary host buffers. Every Checker then also asserts that the
// library went through the kind's ops (mxh_mem_test_copies() or, on the device
// node level, mxh_mem_test_reductions() grew) when the test gave it a
// significant, non-empty test-kind buffer.

enum class Role { host, send, recv };

struct MemCfg {
    bool send_test = false, recv_test = false;
    bool mpi_direct = false; // mpi=direct: the test-only CUDA-aware MPI (mem.h)
    int delay = 3;
    std::string desc = "host";
};

inline const MemCfg &mem_cfg()
{
    static MemCfg c = [] {
        MemCfg m;
#if MXH_TEST_MEMKIND
        m.send_test = m.recv_test = true;
        const char *e = mxh_env("MXH_TEST_MEM", "");
        std::string s(e);
        size_t pos = 0;
        while (pos < s.size()) {
            size_t comma = s.find(',', pos);
            std::string kv = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
            pos = comma == std::string::npos ? s.size() : comma + 1;
            size_t eq = kv.find('=');
            std::string k = kv.substr(0, eq), v = eq == std::string::npos ? "" : kv.substr(eq + 1);
            if (k == "send" && (v == "test" || v == "host"))
                m.send_test = v == "test";
            else if (k == "recv" && (v == "test" || v == "host"))
                m.recv_test = v == "test";
            else if (k == "delay" && !v.empty())
                m.delay = atoi(v.c_str());
            else if (k == "mpi" && (v == "direct" || v == "staged"))
                m.mpi_direct = v == "direct";
            else if (!kv.empty()) {
                std::fprintf(stderr, "MXH_TEST_MEM: bad item '%s' (send=test|host, "
                                     "recv=test|host, delay=N, mpi=direct|staged)\n", kv.c_str());
                std::abort();
            }
        }
        mxh_mem_test_set_delay(m.delay);
        mxh_mem_test_set_mpi_direct(m.mpi_direct);
        m.desc = fmt("send=%s recv=%s delay=%d mpi=%s", m.send_test ? "test" : "host",
                     m.recv_test ? "test" : "host", m.delay, m.mpi_direct ? "direct" : "staged");
#endif
        return m;
    }();
    return c;
}

struct Buf {
    mxh_buf_t b;
    bool test_kind = false;
    // @role: which buffer of a collective it is (memory kind builds: its kind)
    Buf(size_t bytes, int fill, Role role = Role::host)
    {
        const MemCfg &m = mem_cfg();
        test_kind = (role == Role::send && m.send_test) || (role == Role::recv && m.recv_test);
#if MXH_TEST_MEMKIND
        if (test_kind) {
            mxh_buf_wrap(&b, mxh_mem_test_alloc(bytes + 2 * MXH_GUARD), bytes, fill);
            return;
        }
#endif
        mxh_buf_alloc(&b, bytes, fill);
    }
    ~Buf()
    {
#if MXH_TEST_MEMKIND
        if (test_kind) {
            mxh_mem_test_free(b.base);
            return;
        }
#endif
        mxh_buf_free(&b);
    }
    unsigned char *p() const { return (unsigned char *)b.p; }
    Buf(const Buf &) = delete;
    Buf &operator=(const Buf &) = delete;
};

#if MXH_TEST_MEMKIND
// Says the configuration once (rank 0) before the first test.
class MemKindEnv : public ::testing::Environment {
  public:
    void SetUp() override
    {
        int rank = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank == 0) {
            std::printf("mxh: memory kinds: %s%s\n", mem_cfg().desc.c_str(),
                        MXH_TEST_PLAIN ? " (plain stand-in: plain host memory, staging not asserted)"
                                       : "");
            std::fflush(stdout);
        }
    }
};
inline ::testing::Environment *const g_memkind_env =
    ::testing::AddGlobalTestEnvironment(new MemKindEnv);
#endif

// ------------------------------------------------------------------ checker

// Records failures (non-fatal; at most kMaxReports printed per test) and the
// per-case result hashes that must agree across the ranks of the communicator.
class Checker {
  public:
    explicit Checker(MPI_Comm c, const std::string &kind = "") : comm(c), kind_(kind)
    {
        MPI_Comm_rank(c, &rank);
        MPI_Comm_size(c, &size);
    }
    ~Checker() { EXPECT_EQ(finished_, true) << "Checker::finish() not called"; }

    void fail(const std::string &msg)
    {
        if (++failures_ <= kMaxReports)
            ADD_FAILURE() << msg << " [" << (kind_.empty() ? "" : "comm=" + kind_ + " ") << "rank "
                          << rank << "/" << size << "]";
    }
    void rc(int rc, const std::string &what)
    {
        if (rc != MPI_SUCCESS) {
            char s[MPI_MAX_ERROR_STRING];
            int l = 0;
            MPI_Error_string(rc, s, &l);
            fail(what + ": returned error " + std::to_string(rc) + ": " + s);
        }
    }
    void expect(bool ok, const std::string &what)
    {
        if (!ok)
            fail(what);
    }
    void same(const mxh_type_t *t, bool whole, const void *got, const void *want, size_t n,
              const std::string &what)
    {
        char msg[512];
        if (mxh_compare(t, whole, got, want, n, msg, sizeof(msg)) >= 0)
            fail(what + ": differs from MPICH: " + msg);
    }
    void same_bytes(const void *got, const void *want, size_t n, const std::string &what)
    {
        long off = mxh_compare_bytes(got, want, n);
        if (off >= 0)
            fail(what + fmt(" (first differing byte at offset %ld of %zu)", off, n));
    }
    // A buffer that is not significant (a non-root's): it must still hold the
    // canary 0xCD it was filled with.
    void untouched(const void *got, size_t n, const std::string &what)
    {
        std::vector<unsigned char> canary(n, 0xCD);
        same_bytes(got, canary.data(), n, what);
    }
    // A rooted reduction's result: the root's @got equals @ref (@n elements of @t), a
    // non-root's @got (@bytes) keeps its canary.
    void rooted(bool me_root, const mxh_type_t *t, const void *got, const void *ref, size_t n,
                size_t bytes, const std::string &what)
    {
        if (me_root)
            same(t, false, got, ref, n, what);
        else
            untouched(got, bytes, what + ": wrote into a non-root's result buffer");
    }
    void guards(const mxh_buf_t &b, const std::string &what)
    {
        if (!mxh_buf_guards_ok(&b))
            fail(what + ": wrote outside the buffer (guard zone damaged)");
    }
    // Memory kind builds: @b was handed to the library and is significant there
    // (data to read or results to write): the staged path must run.
    void staged(const Buf &b, bool significant)
    {
        if (b.test_kind && significant && b.b.bytes > 0)
            expect_copies_ = true;
    }
    void hash(uint64_t h, const std::string &label)
    {
        hashes_.push_back(h);
        labels_.push_back(label);
    }
    // Collective over comm: the hashes equal rank 0's.
    void finish()
    {
        finished_ = true;
        int bad = -1;
        int n = (int)hashes_.size(), nmin, nmax;
        MPI_Allreduce(&n, &nmin, 1, MPI_INT, MPI_MIN, comm);
        MPI_Allreduce(&n, &nmax, 1, MPI_INT, MPI_MAX, comm);
        if (nmin != nmax) {
            fail(fmt("ranks recorded different numbers of cases (%d..%d): test bug", nmin, nmax));
            return;
        }
        if (!mxh_hashes_agree(comm, hashes_.data(), n, &bad))
            fail("results not bitwise identical on all ranks of the communicator; first case: " +
                 labels_[(size_t)bad]);
#if MXH_TEST_MEMKIND && !MXH_TEST_PLAIN
        if (expect_copies_ && mem_ops_done() == copies0_)
            fail("test-kind buffers (" + mem_cfg().desc + ") were given to the library but "
                 "neither mxh_mem_test_copies() nor mxh_mem_test_reductions() grew: neither "
                 "the staged path nor the device node level ran");
#endif
        if (failures_ > kMaxReports)
            ADD_FAILURE() << failures_ << " failures in total (" << kMaxReports << " shown)";
    }

    int failures() const { return failures_; }

    MPI_Comm comm;
    int rank = 0, size = 1;

  private:
    static constexpr int kMaxReports = 12;
    std::string kind_;
    int failures_ = 0;
    bool finished_ = false;
    bool expect_copies_ = false;
#if MXH_TEST_MEMKIND
    // copies (the staged path) and reductions (the device node level, exec/ipc.h)
    static uint64_t mem_ops_done() { return mxh_mem_test_copies() + mxh_mem_test_reductions(); }
    uint64_t copies0_ = mem_ops_done();
#endif
    std::vector<uint64_t> hashes_;
    std::vector<std::string> labels_;
};

}  // namespace mxh_test

#endif
