// The hierarchical alltoall / alltoallv (src/coll/alltoall.h) against MPICH's
// MPI_Alltoallv / MPI_Alltoall on the same data, bit for bit: random uneven
// byte counts with zeros and gaps between the blocks, in place and not, the
// uniform form, messages split into pieces, repeated calls, and bodies run as
// tasks (the fiber path, two in flight). On the world communicator and on a
// rank-reversed copy of it (node and slot orders differ from rank order).
// Layouts where it does not apply (uneven nodes, one node) must say so.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "checker.hh"
#include "coll/alltoall.h"
#include "coll/hier.h"
#include "exec/task.h"

using mxh_test::fmt;

namespace {

// Whether the layout has >= 2 nodes of the same size >= 2, from the node
// names the test was started with (independent of the library's layout).
bool expect_applicable(MPI_Comm comm)
{
    int size;
    MPI_Comm_size(comm, &size);
    char name[256] = {0};
    mxh_node_name(name, sizeof(name));
    std::vector<char> all((size_t)size * 256);
    MPI_Allgather(name, 256, MPI_CHAR, all.data(), 256, MPI_CHAR, comm);
    std::map<std::string, int> count;
    for (int r = 0; r < size; r++)
        count[std::string(&all[(size_t)r * 256])]++;
    if (count.size() < 2)
        return false;
    int g = count.begin()->second;
    for (auto &kv : count)
        if (kv.second != g)
            return false;
    return g >= 2;
}

// One alltoallv case: every rank knows the whole count matrix (same seed).
struct Case {
    int size = 0, me = 0;
    std::vector<size_t> sc, sd, rc, rd; // this rank's
    size_t sbytes = 0, rbytes = 0;
};

// Counts: C[s][d] random in {0, small, up to @maxb}; @symmetric makes
// C[s][d] == C[d][s] (in place needs it). Displacements: blocks in a random
// order with random gaps, so that nothing is contiguous by accident.
Case make_case(int size, int me, uint64_t seed, size_t maxb, bool symmetric)
{
    std::mt19937_64 rng(seed);
    std::vector<size_t> C((size_t)size * size);
    for (int s = 0; s < size; s++)
        for (int d = 0; d < size; d++) {
            size_t v;
            switch (rng() % 4) {
            case 0:  v = 0; break;
            case 1:  v = rng() % 17; break;
            default: v = maxb ? rng() % (maxb + 1) : 0; break;
            }
            C[(size_t)s * size + d] = v;
        }
    if (symmetric)
        for (int s = 0; s < size; s++)
            for (int d = 0; d < s; d++)
                C[(size_t)s * size + d] = C[(size_t)d * size + s];
    Case c;
    c.size = size;
    c.me   = me;
    c.sc.resize(size);
    c.rc.resize(size);
    c.sd.resize(size);
    c.rd.resize(size);
    for (int p = 0; p < size; p++) {
        c.sc[p] = C[(size_t)me * size + p];
        c.rc[p] = C[(size_t)p * size + me];
    }
    // per-rank layout of the buffers (a stream of its own)
    std::mt19937_64 lr(seed * 1000003 + (uint64_t)me);
    auto place = [&](const std::vector<size_t> &cnt, std::vector<size_t> &dsp, size_t &total) {
        std::vector<int> order(size);
        for (int p = 0; p < size; p++)
            order[p] = p;
        std::shuffle(order.begin(), order.end(), lr);
        size_t off = lr() % 5;
        for (int p : order) {
            dsp[p] = off;
            off += cnt[p] + lr() % 9;
        }
        total = off + 3;
    };
    place(c.sc, c.sd, c.sbytes);
    if (symmetric) { // in place: the receive layout is the send layout
        c.rd     = c.sd;
        c.rbytes = c.sbytes;
    } else {
        place(c.rc, c.rd, c.rbytes);
    }
    return c;
}

void fill(std::vector<char> &b, int me, uint64_t salt)
{
    for (size_t i = 0; i < b.size(); i++)
        b[i] = (char)((i * 131 + (size_t)me * 7919 + salt * 17) % 251);
}

// MPICH's alltoallv of the same bytes (int counts: the tests stay small).
void reference(MPI_Comm comm, const Case &c, const char *sbuf, char *rbuf)
{
    std::vector<int> sc(c.size), sd(c.size), rc(c.size), rd(c.size);
    for (int p = 0; p < c.size; p++) {
        sc[p] = (int)c.sc[p];
        sd[p] = (int)c.sd[p];
        rc[p] = (int)c.rc[p];
        rd[p] = (int)c.rd[p];
    }
    MPI_Alltoallv(sbuf, sc.data(), sd.data(), MPI_BYTE, rbuf, rc.data(), rd.data(), MPI_BYTE,
                  comm);
}

class AlltoallHier : public MxhMpiTest {
  protected:
    // The hierarchy of @comm with the algorithm set up, or nullptr (not
    // applicable: checked against the expectation).
    mxh_hier_t *setup(mxh_test::Checker &ck, MPI_Comm comm)
    {
        mxh_hier_t *h = nullptr;
        if (mxh_hier_get(comm, &h) != MXH_OK) {
            ck.fail("mxh_hier_get failed");
            return nullptr;
        }
        bool want = expect_applicable(comm);
        ck.expect(mxh_alltoall_applicable(h->layout) == (int)want,
                  fmt("applicable = %d, expected %d", mxh_alltoall_applicable(h->layout), want));
        if (!want) {
            ck.expect(mxh_alltoall_setup(h) == MXH_ERR_UNSUPPORTED, "setup must refuse");
            ck.expect(!mxh_alltoall_ready(h), "not ready");
            return nullptr;
        }
        ck.expect(mxh_alltoall_setup(h) == MXH_OK, "setup");
        ck.expect(mxh_alltoall_setup(h) == MXH_OK, "setup again (idempotent)");
        ck.expect(mxh_alltoall_ready(h) != 0, "ready");
        return mxh_alltoall_ready(h) ? h : nullptr;
    }

    // One alltoallv case, in place or not, against MPICH.
    void check_v(mxh_test::Checker &ck, MPI_Comm comm, mxh_hier_t *h, uint64_t seed, size_t maxb,
                 bool in_place)
    {
        int size, me;
        MPI_Comm_size(comm, &size);
        MPI_Comm_rank(comm, &me);
        Case c = make_case(size, me, seed, maxb, in_place);
        std::vector<char> sbuf(c.sbytes), got(c.rbytes), want(c.rbytes);
        std::string what = fmt("alltoallv seed %llu max %zu%s", (unsigned long long)seed, maxb,
                               in_place ? " in place" : "");
        fill(sbuf, me, seed);
        fill(got, me, seed + 99); // gaps must keep these bytes
        want = got;
        reference(comm, c, sbuf.data(), want.data());
        mxh_status_t st;
        if (in_place) {
            // in place: the data goes in rbuf at the (symmetric) layout
            for (int p = 0; p < size; p++)
                std::memcpy(got.data() + c.rd[p], sbuf.data() + c.sd[p], c.rc[p]);
            st = mxh_alltoallv_hier(h, nullptr, nullptr, nullptr, got.data(), c.rc.data(),
                                    c.rd.data());
        } else {
            st = mxh_alltoallv_hier(h, sbuf.data(), c.sc.data(), c.sd.data(), got.data(),
                                    c.rc.data(), c.rd.data());
        }
        ck.expect(st == MXH_OK, what + ": status " + mxh_status_string(st));
        ck.same_bytes(got.data(), want.data(), c.rbytes, what);
    }

    // The uniform form against MPI_Alltoall.
    void check_uniform(mxh_test::Checker &ck, MPI_Comm comm, mxh_hier_t *h, size_t b,
                       bool in_place)
    {
        int size, me;
        MPI_Comm_size(comm, &size);
        MPI_Comm_rank(comm, &me);
        size_t total = b * (size_t)size;
        std::vector<char> sbuf(total + 1), got(total + 1), want(total + 1);
        std::string what = fmt("alltoall %zu bytes%s", b, in_place ? " in place" : "");
        fill(sbuf, me, b);
        fill(want, me, b + 5);
        MPI_Alltoall(sbuf.data(), (int)b, MPI_BYTE, want.data(), (int)b, MPI_BYTE, comm);
        mxh_status_t st;
        if (in_place) {
            got = sbuf;
            got[total] = want[total];
            st = mxh_alltoall_hier(h, nullptr, got.data(), b);
        } else {
            fill(got, me, b + 5);
            st = mxh_alltoall_hier(h, sbuf.data(), got.data(), b);
        }
        ck.expect(st == MXH_OK, what + ": status " + mxh_status_string(st));
        ck.same_bytes(got.data(), want.data(), total + 1, what);
    }

    // The element form (int counts of 4-byte elements) against MPI_Alltoallv
    // with MPI_INT: the case's byte counts become element counts.
    void check_elems(mxh_test::Checker &ck, MPI_Comm comm, mxh_hier_t *h, uint64_t seed,
                     bool in_place)
    {
        int size, me;
        MPI_Comm_size(comm, &size);
        MPI_Comm_rank(comm, &me);
        Case c = make_case(size, me, seed, 3000, in_place);
        std::vector<int> sc(size), sd(size), rc(size), rd(size);
        for (int p = 0; p < size; p++) {
            sc[p] = (int)c.sc[p];
            sd[p] = (int)c.sd[p];
            rc[p] = (int)c.rc[p];
            rd[p] = (int)c.rd[p];
        }
        std::vector<char> sbuf(c.sbytes * 4), got(c.rbytes * 4), want(c.rbytes * 4);
        std::string what = fmt("alltoallv of MPI_INT seed %llu%s", (unsigned long long)seed,
                               in_place ? " in place" : "");
        fill(sbuf, me, seed);
        fill(got, me, seed + 1);
        want = got;
        MPI_Alltoallv(sbuf.data(), sc.data(), sd.data(), MPI_INT, want.data(), rc.data(),
                      rd.data(), MPI_INT, comm);
        mxh_status_t st;
        if (in_place) {
            for (int p = 0; p < size; p++)
                std::memcpy(got.data() + 4 * c.rd[p], sbuf.data() + 4 * c.sd[p], 4 * c.rc[p]);
            st = mxh_alltoallv_hier_elems(h, nullptr, nullptr, nullptr, 0, got.data(), rc.data(),
                                          rd.data(), 4);
        } else {
            st = mxh_alltoallv_hier_elems(h, sbuf.data(), sc.data(), sd.data(), 4, got.data(),
                                          rc.data(), rd.data(), 4);
        }
        ck.expect(st == MXH_OK, what + ": status " + mxh_status_string(st));
        ck.same_bytes(got.data(), want.data(), got.size(), what);
    }

    void run_all(MPI_Comm comm, const std::string &label)
    {
        mxh_test::Checker ck(comm, label);
        mxh_hier_t *h = setup(ck, comm);
        if (h != nullptr) {
            const size_t maxbs[] = {0, 1, 100, 5000, 70000};
            uint64_t seed        = 1;
            for (size_t maxb : maxbs)
                for (int rep = 0; rep < 3; rep++, seed++) {
                    check_v(ck, comm, h, seed, maxb, false);
                    check_v(ck, comm, h, seed, maxb, true);
                }
            for (uint64_t sd = 50; sd < 53; sd++) {
                check_elems(ck, comm, h, sd, false);
                check_elems(ck, comm, h, sd, true);
            }
            const size_t bs[] = {0, 1, 7, 4096, 65537};
            for (size_t b : bs) {
                check_uniform(ck, comm, h, b, false);
                check_uniform(ck, comm, h, b, true);
            }
            // messages in pieces of at most 1000 / 7 bytes
            const size_t pieces[] = {1000, 7};
            for (size_t mm : pieces) {
                mxh_alltoall_set_max_message(mm);
                check_v(ck, comm, h, 100 + mm, mm == 7 ? 100 : 5000, false);
                check_v(ck, comm, h, 200 + mm, mm == 7 ? 100 : 5000, true);
                check_uniform(ck, comm, h, 3001, true);
            }
            mxh_alltoall_set_max_message(0);
            // phase-1 sends one destination node at a time, and all at once
            for (int w : {1, 1000}) {
                mxh_alltoall_set_window(w);
                check_v(ck, comm, h, 300 + w, 5000, false);
                check_v(ck, comm, h, 400 + w, 5000, true);
                check_uniform(ck, comm, h, 999, false);
            }
            mxh_alltoall_set_window(0);
        }
        ck.finish();
    }
};

TEST_F(AlltoallHier, MatchesMpichOnWorld)
{
    run_all(MPI_COMM_WORLD, "world");
}

// Rank order reversed: node_of and slots no longer follow the rank order.
TEST_F(AlltoallHier, MatchesMpichOnReversedComm)
{
    int size, me;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - me, &rev);
    run_all(rev, "reversed");
    MPI_Comm_free(&rev);
}

// Bodies as tasks on the communicator's queue (the fiber path: waits yield),
// two in flight, completed by MPI_Waitall on their requests.
struct TaskArgs {
    mxh_hier_t *h;
    const char *sbuf;
    char *rbuf;
    size_t bytes;
};

mxh_status_t task_body(void *arg)
{
    TaskArgs *a = (TaskArgs *)arg;
    return mxh_alltoall_hier(a->h, a->sbuf, a->rbuf, a->bytes);
}

TEST_F(AlltoallHier, RunsAsTasks)
{
    int size, me;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    mxh_test::Checker ck(MPI_COMM_WORLD, "world/tasks");
    mxh_hier_t *h = setup(ck, MPI_COMM_WORLD);
    if (h != nullptr) {
        const size_t b[2] = {100000, 333};
        std::vector<char> sbuf[2], got[2], want[2];
        MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        for (int k = 0; k < 2; k++) {
            size_t total = b[k] * (size_t)size;
            sbuf[k].resize(total);
            got[k].assign(total, 0);
            want[k].assign(total, 0);
            fill(sbuf[k], me, 7 + k);
            MPI_Alltoall(sbuf[k].data(), (int)b[k], MPI_BYTE, want[k].data(), (int)b[k], MPI_BYTE,
                         MPI_COMM_WORLD);
        }
        for (int k = 0; k < 2; k++) {
            mxh_task_t *t = mxh_task_new();
            if (t == nullptr) { // EXPECT, not ASSERT: the collectives below must run
                ck.fail("mxh_task_new: out of memory");
                continue;
            }
            TaskArgs *a = (TaskArgs *)mxh_task_args(t);
            *a          = TaskArgs{h, sbuf[k].data(), got[k].data(), b[k]};
            ck.expect(mxh_task_post(h->queue, t, task_body, "test alltoall", &reqs[k]) == MXH_OK,
                      "mxh_task_post");
        }
        ck.rc(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE), "MPI_Waitall on the tasks");
        for (int k = 0; k < 2; k++)
            ck.same_bytes(got[k].data(), want[k].data(), got[k].size(), fmt("task %d", k));
    }
    ck.finish();
}

} // namespace
