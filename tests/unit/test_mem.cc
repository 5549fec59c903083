// Memory kinds (src/mem, no MPI_Init, no GPU): the host kind, the test kind
// (deferred copies, mprotect'ed holds) and the peer IPC mapping cache driven
// by a fake opener that simulates the driver's "already mapped" error.
#include <gtest/gtest.h>

#include <mpi.h> // MPI_IN_PLACE (a constant: no MPI_Init needed)

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>

#include "unit_util.hh"

extern "C" {
#include "mem/ipc_cache.h"
#include "mem/mem.h"
#include "util/log.h"
}

namespace {

using mxh_test::LogTap;
using mxh_test::logged;
using mxh_test::pattern;

} // namespace

// ---- host kind ------------------------------------------------------------------

TEST(MemHost, RegistryAnswersHostForOrdinaryPointers)
{
    std::vector<char> heap(100);
    int stack = 0;
    const mxh_mem_ops_t *h = mxh_mem_ops(MXH_MEM_HOST);
    ASSERT_NE(nullptr, h);
    EXPECT_EQ(MXH_MEM_HOST, h->kind);
    EXPECT_STREQ("host", h->name);
    EXPECT_EQ(h, mxh_mem_of(nullptr));
    EXPECT_EQ(h, mxh_mem_of(MPI_IN_PLACE));
    EXPECT_EQ(h, mxh_mem_of(heap.data()));
    EXPECT_EQ(h, mxh_mem_of(&stack));
    EXPECT_EQ(nullptr, h->hold);
    EXPECT_EQ(nullptr, h->release);
    EXPECT_EQ(MXH_MEM_TEST, mxh_mem_ops(MXH_MEM_TEST)->kind);
    // no GPU on the unit-test machines: the CUDA kind is absent (or, with a
    // device, really the CUDA kind)
    const mxh_mem_ops_t *c = mxh_mem_ops(MXH_MEM_CUDA);
    EXPECT_TRUE(c == nullptr || c->kind == MXH_MEM_CUDA);
    EXPECT_EQ(nullptr, mxh_mem_ops(MXH_MEM_NKINDS));
    const mxh_mem_ops_t *q = nullptr;
    EXPECT_EQ(MXH_OK, mxh_mem_query(heap.data(), "sendbuf", 1, &q));
    EXPECT_EQ(h, q);
}

TEST(MemHost, CopyCompletesAtOnce)
{
    const mxh_mem_ops_t *h = mxh_mem_ops(MXH_MEM_HOST);
    auto src = pattern(4099, 1);
    std::vector<unsigned char> dst(4099, 0);
    mxh_mem_event_t ev;
    std::memset(&ev, 0, sizeof(ev));
    ASSERT_EQ(MXH_OK, h->copy_start(dst.data(), src.data(), src.size(), &ev));
    EXPECT_EQ(1, h->event_test(&ev));
    EXPECT_EQ(0, ev.pending);
    EXPECT_EQ(src, dst);
    // n == 0 with NULL pointers is a valid empty copy
    ASSERT_EQ(MXH_OK, h->copy_start(nullptr, nullptr, 0, &ev));
    EXPECT_EQ(1, h->event_test(&ev));
    auto src2 = pattern(77, 2);
    ASSERT_EQ(MXH_OK, mxh_mem_copy_sync(h, dst.data() + 5, src2.data(), 77));
    EXPECT_EQ(0, std::memcmp(dst.data() + 5, src2.data(), 77));
    EXPECT_EQ(src[4], dst[4]);
    EXPECT_EQ(src[82], dst[82]);
    void *s = h->stage_alloc(1000);
    ASSERT_NE(nullptr, s);
    std::memset(s, 0xab, 1000);
    h->stage_free(s, 1000);
}

// ---- test kind ------------------------------------------------------------------

struct MemTest : ::testing::Test {
    const mxh_mem_ops_t *t = mxh_mem_ops(MXH_MEM_TEST);
    void SetUp() override { mxh_mem_test_set_delay(3); }
    void TearDown() override { mxh_mem_test_set_delay(3); }
};

TEST_F(MemTest, AllocIsZeroedPageAlignedAndRecognizedInside)
{
    const mxh_mem_ops_t *h = mxh_mem_ops(MXH_MEM_HOST);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *a = (char *)mxh_mem_test_alloc(10000);
    char *b = (char *)mxh_mem_test_alloc(3);
    ASSERT_NE(nullptr, a);
    ASSERT_NE(nullptr, b);
    EXPECT_EQ(0u, (uintptr_t)a % page);
    EXPECT_EQ(0u, (uintptr_t)b % page);
    for (size_t i = 0; i < 10000; i++)
        ASSERT_EQ(0, a[i]) << i;
    EXPECT_EQ(0, b[0] | b[1] | b[2]);
    a[9999] = 42; // directly writable while not held
    EXPECT_EQ(42, a[9999]);
    EXPECT_EQ(t, mxh_mem_of(a));
    EXPECT_EQ(t, mxh_mem_of(a + 1));
    EXPECT_EQ(t, mxh_mem_of(a + 5000));
    EXPECT_EQ(t, mxh_mem_of(a + 9999));
    EXPECT_EQ(h, mxh_mem_of(a + 10000)); // one past the end
    EXPECT_EQ(t, mxh_mem_of(b + 2));
    EXPECT_EQ(h, mxh_mem_of(b + 3));
    EXPECT_EQ(h, mxh_mem_of(a - 1));
    const mxh_mem_ops_t *q = nullptr;
    EXPECT_EQ(MXH_OK, mxh_mem_query(a + 17, "recvbuf", 1, &q));
    EXPECT_EQ(t, q);
    EXPECT_STREQ("test", t->name);
    mxh_mem_test_free(a);
    EXPECT_EQ(h, mxh_mem_of(a + 5000));
    EXPECT_EQ(t, mxh_mem_of(b));
    mxh_mem_test_free(b);
    EXPECT_EQ(h, mxh_mem_of(b));
    // a zero-byte allocation is still a distinct, recognized pointer
    char *z = (char *)mxh_mem_test_alloc(0);
    ASSERT_NE(nullptr, z);
    EXPECT_EQ(t, mxh_mem_of(z));
    EXPECT_EQ(h, mxh_mem_of(z + 1));
    mxh_mem_test_free(z);
}

TEST_F(MemTest, HostToTestCopyIsInvisibleUntilDelayPolls)
{
    const size_t n = 3 * 4096 + 5, off = 123;
    unsigned char *d = (unsigned char *)mxh_mem_test_alloc(n + off);
    ASSERT_NE(nullptr, d);
    auto src = pattern(n, 3);
    uint64_t before = mxh_mem_test_copies();
    mxh_mem_event_t ev;
    std::memset(&ev, 0, sizeof(ev));
    ASSERT_EQ(MXH_OK, t->copy_start(d + off, src.data(), n, &ev));
    EXPECT_EQ(1, ev.pending);
    for (int poll = 0; poll < 3; poll++) {
        EXPECT_EQ(0, t->event_test(&ev)) << "poll " << poll;
        // a consumer reading early sees the old (zero) bytes
        EXPECT_EQ(0, d[off]);
        EXPECT_EQ(0, d[off + n - 1]);
        EXPECT_EQ(before, mxh_mem_test_copies());
    }
    EXPECT_EQ(1, t->event_test(&ev));
    EXPECT_EQ(0, ev.pending);
    EXPECT_EQ(0, std::memcmp(d + off, src.data(), n));
    EXPECT_EQ(0, d[off - 1]); // nothing outside the range
    EXPECT_EQ(before + 1, mxh_mem_test_copies());
    EXPECT_EQ(1, t->event_test(&ev)); // tested again: still complete, no second copy
    EXPECT_EQ(before + 1, mxh_mem_test_copies());
    mxh_mem_test_free(d);
}

TEST_F(MemTest, TestToHostCopyReadsTheSourceAtCompletion)
{
    const size_t n = 1000;
    unsigned char *s = (unsigned char *)mxh_mem_test_alloc(n);
    ASSERT_NE(nullptr, s);
    auto v1 = pattern(n, 4), v2 = pattern(n, 5);
    std::memcpy(s, v1.data(), n);
    std::vector<unsigned char> host(n, 0xee);
    mxh_mem_event_t ev;
    std::memset(&ev, 0, sizeof(ev));
    mxh_mem_test_set_delay(2);
    ASSERT_EQ(MXH_OK, t->copy_start(host.data(), s, n, &ev));
    EXPECT_EQ(0, t->event_test(&ev));
    EXPECT_EQ(0xee, host[0]); // stale destination
    // a producer overwriting the source before completion is visible in the
    // result, as with a real asynchronous copy that has not read it yet
    std::memcpy(s, v2.data(), n);
    EXPECT_EQ(0, t->event_test(&ev));
    EXPECT_EQ(1, t->event_test(&ev));
    EXPECT_EQ(v2, host);
    mxh_mem_test_free(s);
}

TEST_F(MemTest, DelayZeroCompletesAtFirstTestAndCopySyncBothWays)
{
    const size_t n = 8191;
    unsigned char *d = (unsigned char *)mxh_mem_test_alloc(n);
    ASSERT_NE(nullptr, d);
    auto in = pattern(n, 6);
    std::vector<unsigned char> out(n, 0);
    mxh_mem_test_set_delay(0);
    mxh_mem_event_t ev;
    std::memset(&ev, 0, sizeof(ev));
    ASSERT_EQ(MXH_OK, t->copy_start(d, in.data(), n, &ev));
    EXPECT_EQ(1, t->event_test(&ev));
    EXPECT_EQ(0, std::memcmp(d, in.data(), n));
    mxh_mem_test_set_delay(5);
    uint64_t before = mxh_mem_test_copies();
    ASSERT_EQ(MXH_OK, mxh_mem_copy_sync(t, out.data(), d, n));
    EXPECT_EQ(in, out);
    auto in2 = pattern(100, 7);
    ASSERT_EQ(MXH_OK, mxh_mem_copy_sync(t, d + 4000, in2.data(), 100));
    EXPECT_EQ(0, std::memcmp(d + 4000, in2.data(), 100));
    EXPECT_EQ(in[3999], d[3999]);
    EXPECT_EQ(in[4100], d[4100]);
    EXPECT_EQ(before + 2, mxh_mem_test_copies());
    // n == 0: complete at the first test, not counted
    ASSERT_EQ(MXH_OK, t->copy_start(d, in.data(), 0, &ev));
    EXPECT_EQ(1, t->event_test(&ev));
    EXPECT_EQ(before + 2, mxh_mem_test_copies());
    mxh_mem_test_free(d);
}

TEST_F(MemTest, BadCopiesAreRejected)
{
    unsigned char *d = (unsigned char *)mxh_mem_test_alloc(100);
    ASSERT_NE(nullptr, d);
    std::vector<unsigned char> host(200, 1), host2(200, 2);
    mxh_mem_event_t ev;
    std::memset(&ev, 0, sizeof(ev));
    mxh_test::QuietStderr quiet;
    LogTap cap;
    EXPECT_EQ(MXH_ERR_INVALID_PARAM, t->copy_start(d + 50, host.data(), 51, &ev));
    EXPECT_TRUE(logged("runs past the end"));
    EXPECT_EQ(0, ev.pending);
    EXPECT_EQ(MXH_ERR_INVALID_PARAM, t->copy_start(host.data(), host2.data(), 10, &ev));
    EXPECT_TRUE(logged("no test memory"));
    EXPECT_EQ(1, host[0]);
    EXPECT_EQ(MXH_OK, t->copy_start(d + 50, host.data(), 50, &ev)); // exactly to the end
    EXPECT_EQ(MXH_OK, mxh_mem_copy_sync(t, d, d + 50, 50));        // test to test
    // in order, as on a stream (mem.h): completing the second copy ran the first before
    // it, so the second read the first's result
    EXPECT_EQ(1, d[0]);
    EXPECT_EQ(1, d[99]);
    EXPECT_EQ(1, t->event_test(&ev)); // and the first's event reports it complete
    EXPECT_EQ(1, d[99]);
    mxh_mem_test_free(d);
}

// Death tests (run first by gtest): direct access to held memory faults.
using MemTestDeathTest = MemTest;
volatile unsigned char g_sink;

TEST_F(MemTestDeathTest, HoldMakesDirectAccessFaultAndReleaseRestoresIt)
{
    const size_t n = 2 * 4096 + 10;
    volatile unsigned char *p = (volatile unsigned char *)mxh_mem_test_alloc(n);
    ASSERT_NE(nullptr, p);
    p[10] = 7;
    EXPECT_EQ(0, mxh_mem_test_holds((const void *)p));
    t->hold((const void *)(p + 100)); // any interior pointer names the allocation
    EXPECT_EQ(1, mxh_mem_test_holds((const void *)p));
    EXPECT_DEATH({ p[5] = 1; }, "");
    EXPECT_DEATH({ p[n - 1] = 1; }, "");
    EXPECT_DEATH({ g_sink = p[10]; }, ""); // reads fault as well (the value is used:
                                           // valgrind drops dead loads)
    // the ops keep working through the alias while held
    auto in = pattern(n, 8);
    std::vector<unsigned char> out(n, 0);
    ASSERT_EQ(MXH_OK, mxh_mem_copy_sync(t, (void *)p, in.data(), n));
    ASSERT_EQ(MXH_OK, mxh_mem_copy_sync(t, out.data(), (const void *)p, n));
    EXPECT_EQ(in, out);
    t->release((const void *)p);
    EXPECT_EQ(0, mxh_mem_test_holds((const void *)p));
    EXPECT_EQ(in[5], p[5]); // readable again, with what the ops wrote
    p[5] = 99;              // and writable
    EXPECT_EQ(99, p[5]);
    mxh_mem_test_free((void *)p);
}

TEST_F(MemTestDeathTest, NestedHoldsReleaseAtTheLast)
{
    volatile unsigned char *p = (volatile unsigned char *)mxh_mem_test_alloc(64);
    volatile unsigned char *q = (volatile unsigned char *)mxh_mem_test_alloc(64);
    ASSERT_NE(nullptr, p);
    ASSERT_NE(nullptr, q);
    t->hold((const void *)p);
    t->hold((const void *)(p + 63));
    EXPECT_EQ(2, mxh_mem_test_holds((const void *)p));
    q[0] = 3; // another allocation is unaffected
    EXPECT_EQ(3, q[0]);
    t->release((const void *)(p + 1));
    EXPECT_EQ(1, mxh_mem_test_holds((const void *)p));
    EXPECT_DEATH({ p[0] = 1; }, ""); // still held once
    t->release((const void *)p);
    EXPECT_EQ(0, mxh_mem_test_holds((const void *)p));
    p[0] = 4;
    EXPECT_EQ(4, p[0]);
    {
        mxh_test::QuietStderr quiet;
        LogTap cap;
        t->release((const void *)p); // unbalanced: logged, no effect
        EXPECT_TRUE(logged("without a hold"));
    }
    EXPECT_EQ(0, mxh_mem_test_holds((const void *)p));
    p[1] = 5;
    EXPECT_EQ(5, p[1]);
    mxh_mem_test_free((void *)p);
    mxh_mem_test_free((void *)q);
}

// ---- the peer IPC mapping cache, with a fake driver --------------------------------

namespace {

// A fake CUDA driver: mappings are recorded per exporter pid at the range the
// "driver" really maps (the allocation widened to @granule, as the driver maps
// whole VA chunks). Opening anything overlapping an open mapping of the same
// pid in the same importing device's context is "already mapped". Addresses are fake
// and never dereferenced.
struct FakeDriver {
    struct Map {
        int32_t  kind, pid, device;
        uint64_t lo, hi;
    };
    uint64_t granule = 4096;
    std::map<uintptr_t, Map> open_maps; // local address of key.base -> mapping
    int opens = 0, closes = 0, already = 0, bad_closes = 0;
    bool fail = false, always_already = false;
    uintptr_t next = (uintptr_t)1 << 44;

    mxh_ipc_open_rc_t open(const mxh_ipc_key_t *k, const void *handle, void **mapped)
    {
        // the handle the cache passes through is the one the test gave
        EXPECT_EQ(k->buffer_id, *(const uint64_t *)handle);
        if (fail)
            return MXH_IPC_OPEN_FAILED;
        uint64_t lo = k->base / granule * granule;
        uint64_t hi = (k->base + k->size + granule - 1) / granule * granule;
        bool clash = always_already;
        for (auto &m : open_maps)
            clash = clash || (m.second.kind == k->kind && m.second.pid == k->pid &&
                              m.second.device == k->device && m.second.lo < hi &&
                              lo < m.second.hi);
        if (clash) {
            already++;
            return MXH_IPC_OPEN_ALREADY_MAPPED;
        }
        uintptr_t a = next + (uintptr_t)(k->base - lo);
        next += (uintptr_t)1 << 32;
        open_maps[a] = {k->kind, k->pid, k->device, lo, hi};
        opens++;
        *mapped = (void *)a;
        return MXH_IPC_OPEN_OK;
    }
    void close(void *mapped)
    {
        if (open_maps.erase((uintptr_t)mapped) != 1)
            bad_closes++;
        closes++;
    }
};

mxh_ipc_open_rc_t fake_open(void *arg, const mxh_ipc_key_t *k, const void *h, void **m)
{
    return ((FakeDriver *)arg)->open(k, h, m);
}
void fake_close(void *arg, const mxh_ipc_key_t *, void *m) { ((FakeDriver *)arg)->close(m); }

struct IpcCache : ::testing::Test {
    FakeDriver drv;
    mxh_ipc_cache_ops_t ops{fake_open, fake_close, &drv};
    mxh_ipc_cache_stats_t s0;
    int o1 = 0, o2 = 0; // owners: their addresses stand for communicators

    void SetUp() override
    {
        mxh_ipc_cache_set_ops(&ops);
        mxh_ipc_cache_set_capacity(256);
        mxh_ipc_cache_stats(&s0);
        ASSERT_EQ(0, s0.entries);
    }
    void TearDown() override
    {
        mxh_ipc_cache_set_ops(nullptr); // closes everything with the fake first
        EXPECT_TRUE(drv.open_maps.empty()) << "mappings leaked";
        EXPECT_EQ(0, drv.bad_closes) << "closed something not open";
        EXPECT_EQ(drv.opens, drv.closes);
    }
    mxh_ipc_cache_stats_t delta()
    {
        mxh_ipc_cache_stats_t s;
        mxh_ipc_cache_stats(&s);
        s.hits -= s0.hits;
        s.misses -= s0.misses;
        s.overlap_evictions -= s0.overlap_evictions;
        s.retries -= s0.retries;
        s.lru_evictions -= s0.lru_evictions;
        s.owner_closes -= s0.owner_closes;
        return s;
    }
    static mxh_ipc_key_t key(int32_t pid, uint64_t base, uint64_t size, uint64_t id,
                             int32_t kind = MXH_MEM_CUDA)
    {
        return mxh_ipc_key_t{kind, pid, base, size, id, 0};
    }
    mxh_status_t open(const mxh_ipc_key_t &k, void *owner, void **m)
    {
        return mxh_ipc_cache_open(&k, &k.buffer_id, owner, m);
    }
    void *must_open(const mxh_ipc_key_t &k, void *owner)
    {
        void *m = nullptr;
        EXPECT_EQ(MXH_OK, open(k, owner, &m));
        EXPECT_NE(nullptr, m);
        return m;
    }
    bool is_open(void *m) const { return drv.open_maps.count((uintptr_t)m) == 1; }
};

} // namespace

TEST_F(IpcCache, HitByRangeContainment)
{
    auto a = key(100, 0x10000000, 0x100000, 7);
    char *m = (char *)must_open(a, &o1);
    EXPECT_EQ(1, drv.opens);
    EXPECT_EQ(m, must_open(a, &o1)); // same allocation again: cached
    // a sub-range of the same allocation: the same mapping, at the offset
    EXPECT_EQ(m + 0x2000, must_open(key(100, 0x10002000, 0x100, 7), &o2));
    EXPECT_EQ(m + 0xfff00, must_open(key(100, 0x100fff00, 0x100, 7), &o1));
    EXPECT_EQ(1, drv.opens);
    auto d = delta();
    EXPECT_EQ(3u, d.hits);
    EXPECT_EQ(1u, d.misses);
    EXPECT_EQ(1, d.entries);
    // another peer with the same addresses is another mapping, no eviction
    char *m2 = (char *)must_open(key(101, 0x10000000, 0x100000, 7), &o1);
    EXPECT_NE(m, m2);
    EXPECT_EQ(2, drv.opens);
    EXPECT_EQ(0, drv.closes);
    EXPECT_EQ(2, delta().entries);
}

TEST_F(IpcCache, OverlappingNewAllocationEvictsTheStaleMapping)
{
    void *a = must_open(key(100, 0x100000, 0x100000, 1), &o1);
    void *other = must_open(key(100, 0x900000, 0x1000, 9), &o1); // same peer, elsewhere
    // the peer freed allocation 1 and got allocation 2 overlapping its end
    void *b = must_open(key(100, 0x180000, 0x100000, 2), &o1);
    EXPECT_FALSE(is_open(a));
    EXPECT_TRUE(is_open(b));
    EXPECT_TRUE(is_open(other)); // not overlapping: kept
    EXPECT_EQ(0, drv.already);   // evicted before the open: the driver never complained
    EXPECT_EQ(1u, delta().overlap_evictions);
    // the classic case: a new allocation at the very same base
    void *c = must_open(key(100, 0x180000, 0x100000, 3), &o1);
    EXPECT_FALSE(is_open(b));
    EXPECT_TRUE(is_open(c));
    EXPECT_EQ(2u, delta().overlap_evictions);
    // a request that only partly overlaps an allocation of the same id is not
    // a hit (the recorded range does not contain it): reopened
    void *e = must_open(key(100, 0x8ff000, 0x2000, 9), &o1);
    EXPECT_FALSE(is_open(other));
    EXPECT_TRUE(is_open(e));
    EXPECT_EQ(2, delta().entries);
    EXPECT_EQ(0, drv.already);
}

TEST_F(IpcCache, RetriesOnceAfterAlreadyMapped)
{
    drv.granule = 2u << 20; // the driver maps 2 MiB chunks
    void *a = must_open(key(100, 0x200000, 0x1000, 1), &o1);
    void *far = must_open(key(100, 0x40000000, 0x1000, 2), &o1);
    void *peer2 = must_open(key(200, 0x201000, 0x1000, 3), &o1);
    // allocation 4 does not overlap allocation 1's recorded range, but the
    // driver's chunk: "already mapped" -> all of pid 100 closed, retried once
    void *b = must_open(key(100, 0x201000, 0x1000, 4), &o1);
    EXPECT_EQ(1, drv.already);
    EXPECT_EQ(1u, delta().retries);
    EXPECT_EQ(0u, delta().overlap_evictions);
    EXPECT_FALSE(is_open(a));
    EXPECT_FALSE(is_open(far)); // every mapping of that peer went
    EXPECT_TRUE(is_open(peer2)); // other peers' stay
    EXPECT_TRUE(is_open(b));
    EXPECT_EQ(2, delta().entries);
    EXPECT_EQ((char *)b, (char *)must_open(key(100, 0x201800, 0x10, 4), &o1) - 0x800);
}

TEST_F(IpcCache, OpenFailuresAreReportedAndNothingIsCached)
{
    mxh_test::QuietStderr quiet;
    LogTap cap;
    void *m = (void *)1;
    drv.fail = true;
    EXPECT_EQ(MXH_ERR_MPI, open(key(100, 0x1000, 0x1000, 1), &o1, &m));
    EXPECT_EQ(nullptr, m);
    EXPECT_TRUE(logged("cannot map peer 100"));
    drv.fail = false;
    must_open(key(100, 0x1000, 0x1000, 1), &o1);
    drv.always_already = true; // still "already mapped" after the retry: an error
    EXPECT_EQ(MXH_ERR_MPI, open(key(100, 0x9000, 0x1000, 2), &o1, &m));
    EXPECT_TRUE(logged("still already mapped"));
    EXPECT_EQ(2, drv.already);
    EXPECT_EQ(1u, delta().retries);
    EXPECT_EQ(0, delta().entries);
    drv.always_already = false;
    EXPECT_EQ(MXH_ERR_INVALID_PARAM, open(key(100, 0x1000, 0, 1), &o1, &m));
    mxh_ipc_cache_ops_t none{nullptr, nullptr, nullptr};
    mxh_ipc_cache_set_ops(&none);
    EXPECT_EQ(MXH_ERR_UNSUPPORTED, open(key(100, 0x1000, 0x1000, 1), &o1, &m));
    mxh_ipc_cache_set_ops(&ops);
}

TEST_F(IpcCache, ReleaseOwnerClosesOnlyWhatNoOtherOwnerUses)
{
    int o3 = 0;
    void *a = must_open(key(100, 0x100000, 0x1000, 1), &o1);
    void *b = must_open(key(100, 0x200000, 0x1000, 2), &o1);
    EXPECT_EQ(b, must_open(key(100, 0x200000, 0x1000, 2), &o2)); // shared
    void *c = must_open(key(101, 0x100000, 0x1000, 3), &o2);
    void *n = must_open(key(102, 0x100000, 0x1000, 4), nullptr); // no owner
    mxh_ipc_cache_release_owner(&o3);                            // owns nothing
    EXPECT_EQ(4, delta().entries);
    mxh_ipc_cache_release_owner(&o1);
    EXPECT_FALSE(is_open(a));
    EXPECT_TRUE(is_open(b));
    EXPECT_TRUE(is_open(c));
    EXPECT_EQ(1u, delta().owner_closes);
    mxh_ipc_cache_release_owner(&o1); // twice: nothing more
    EXPECT_EQ(3, delta().entries);
    mxh_ipc_cache_release_owner(&o2);
    EXPECT_FALSE(is_open(b));
    EXPECT_FALSE(is_open(c));
    EXPECT_TRUE(is_open(n)); // ownerless: only eviction or clear close it
    EXPECT_EQ(3u, delta().owner_closes);
    EXPECT_EQ(1, delta().entries);
    // a released owner's slot is reused by the next owner without confusion
    void *d = must_open(key(100, 0x300000, 0x1000, 5), &o3);
    mxh_ipc_cache_release_owner(&o1);
    EXPECT_TRUE(is_open(d));
    mxh_ipc_cache_clear();
    EXPECT_FALSE(is_open(n));
    EXPECT_FALSE(is_open(d));
    EXPECT_EQ(0, delta().entries);
}

TEST_F(IpcCache, ManyOwnersBeyondTheTrackedSlots)
{
    // 70 communicators at once: 63 are tracked exactly; the rest share one
    // "overflow" tag whose mappings outlive their release (safe, lazier)
    std::vector<int> owners(70);
    std::vector<void *> maps;
    for (int i = 0; i < 70; i++)
        maps.push_back(must_open(key(100, 0x100000 * (uint64_t)(i + 1), 0x1000, (uint64_t)i + 1),
                                 &owners[(size_t)i]));
    for (int i = 0; i < 70; i++)
        mxh_ipc_cache_release_owner(&owners[(size_t)i]);
    for (int i = 0; i < 70; i++)
        EXPECT_EQ(i >= 63, is_open(maps[(size_t)i])) << i;
    EXPECT_EQ(7, delta().entries);
}

TEST_F(IpcCache, CapacityEvictsTheLeastRecentlyUsed)
{
    mxh_ipc_cache_set_capacity(3);
    auto ka = key(100, 0x100000, 0x1000, 1), kb = key(100, 0x200000, 0x1000, 2),
         kc = key(100, 0x300000, 0x1000, 3), kd = key(100, 0x400000, 0x1000, 4);
    void *a = must_open(ka, &o1), *b = must_open(kb, &o1), *c = must_open(kc, &o1);
    EXPECT_EQ(a, must_open(ka, &o1)); // a is now the most recently used
    void *d = must_open(kd, &o1);     // full: b (least recently used) goes
    EXPECT_FALSE(is_open(b));
    EXPECT_TRUE(is_open(a));
    EXPECT_TRUE(is_open(c));
    EXPECT_TRUE(is_open(d));
    EXPECT_EQ(1u, delta().lru_evictions);
    EXPECT_EQ(3, delta().entries);
    void *b2 = must_open(kb, &o1); // b again: a miss that evicts c
    EXPECT_FALSE(is_open(c));
    EXPECT_TRUE(is_open(b2));
    EXPECT_EQ(2u, delta().lru_evictions);
    EXPECT_EQ(3, delta().entries);
    EXPECT_EQ(5, drv.opens);
    mxh_ipc_cache_set_capacity(256);
}

TEST_F(IpcCache, KindsAreKeyedApart)
{
    // the same pid, range and buffer id in two kinds: two mappings, no hit
    void *c = must_open(key(100, 0x100000, 0x10000, 7, MXH_MEM_CUDA), &o1);
    void *t = must_open(key(100, 0x100000, 0x10000, 7, MXH_MEM_TEST), &o1);
    EXPECT_NE(c, t);
    EXPECT_EQ(2, drv.opens);
    EXPECT_EQ(0u, delta().hits);
    EXPECT_EQ(0u, delta().overlap_evictions);
    EXPECT_EQ(c, must_open(key(100, 0x100000, 0x10, 7, MXH_MEM_CUDA), &o1));
    EXPECT_EQ(t, must_open(key(100, 0x100000, 0x10, 7, MXH_MEM_TEST), &o1));
    EXPECT_EQ(2u, delta().hits);
    // a new test-kind allocation overlapping: evicts the test-kind entry only
    void *t2 = must_open(key(100, 0x108000, 0x10000, 8, MXH_MEM_TEST), &o1);
    EXPECT_FALSE(is_open(t));
    EXPECT_TRUE(is_open(c));
    EXPECT_TRUE(is_open(t2));
    EXPECT_EQ(1u, delta().overlap_evictions);
    // "already mapped" (the fake driver clashes within a kind) drops every
    // mapping of that (kind, pid), not the other kind's
    drv.granule = 1u << 20;
    void *c2 = must_open(key(100, 0x500000, 0x1000, 9, MXH_MEM_CUDA), &o1);
    void *t3 = must_open(key(100, 0x120000, 0x1000, 10, MXH_MEM_TEST), &o1);
    EXPECT_EQ(1, drv.already);
    EXPECT_EQ(1u, delta().retries);
    EXPECT_FALSE(is_open(t2));
    EXPECT_TRUE(is_open(t3));
    EXPECT_TRUE(is_open(c));
    EXPECT_TRUE(is_open(c2));
    EXPECT_EQ(3, delta().entries);
}

TEST_F(IpcCache, ImportingDevicesAreKeyedApart)
{
    // a process that imports one peer buffer on two of its devices (cudaSetDevice
    // between calls): two mappings, each in its own device's context; no hit across
    mxh_ipc_key_t k0 = key(100, 0x100000, 0x10000, 7), k1 = k0;
    k1.device = 1;
    void *d0 = must_open(k0, &o1);
    void *d1 = must_open(k1, &o1);
    EXPECT_NE(d0, d1);
    EXPECT_EQ(2, drv.opens);
    EXPECT_EQ(0u, delta().hits);
    EXPECT_EQ(0u, delta().overlap_evictions);
    EXPECT_EQ(d1, must_open(k1, &o1));
    EXPECT_EQ(d0, must_open(k0, &o1));
    EXPECT_EQ(2u, delta().hits);
    EXPECT_TRUE(is_open(d0));
    EXPECT_TRUE(is_open(d1));
}

TEST(IpcCacheDefault, OpenerFollowsTheKind)
{
    mxh_test::QuietStderr quiet;
    LogTap cap;
    mxh_ipc_cache_set_ops(nullptr);
    mxh_ipc_key_t k{MXH_MEM_HOST, 100, 0x1000, 0x1000, 1, 0};
    void *m = (void *)1;
    uint64_t h = 0;
    // host memory has no opener in any build
    EXPECT_EQ(MXH_ERR_UNSUPPORTED, mxh_ipc_cache_open(&k, &h, nullptr, &m));
    EXPECT_EQ(nullptr, m);
    EXPECT_TRUE(logged("no IPC opener for memory kind 0"));
    EXPECT_EQ(nullptr, mxh_mem_ops(MXH_MEM_HOST)->ipc_export); // host: always staged
    // (the test kind's opener is exercised by tests/unit/test_mem_ipc.cc)
}
