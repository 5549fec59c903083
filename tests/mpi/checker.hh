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
#include <string>
#include <vector>

#include "mxh_test_shim.h"

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
    void guards(const mxh_buf_t &b, const std::string &what)
    {
        if (!mxh_buf_guards_ok(&b))
            fail(what + ": wrote outside the buffer (guard zone damaged)");
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
        if (failures_ > kMaxReports)
            ADD_FAILURE() << failures_ << " failures in total (" << kMaxReports << " shown)";
    }

    int failures() const { return failures_; }

    MPI_Comm comm;
    int rank = 0, size = 1;

  private:
    static const int kMaxReports = 12;
    std::string kind_;
    int failures_ = 0;
    bool finished_ = false;
    std::vector<uint64_t> hashes_;
    std::vector<std::string> labels_;
};

struct Buf {
    mxh_buf_t b;
    Buf(size_t bytes, int fill) { mxh_buf_alloc(&b, bytes, fill); }
    ~Buf() { mxh_buf_free(&b); }
    unsigned char *p() const { return (unsigned char *)b.p; }
    Buf(const Buf &) = delete;
    Buf &operator=(const Buf &) = delete;
};

}  // namespace mxh_test

#endif
