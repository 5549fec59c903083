// The test memory kind's device node level (src/mem/mem_test.c): IPC export
// and mapping between two processes of this machine (a forked child exports,
// this process maps), copies into a peer's buffer, deferred reductions with
// the CPU kernels, fences, and a peer's allocation reused at the same
// address. The reductions need MPI datatypes, so the tests that reduce call
// MPI_Init first (singleton, no mpiexec; after the death test, which forks
// before MPI has threads); the peer child never calls MPI.
#include <gtest/gtest.h>

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "unit_util.hh"

extern "C" {
#include "mem/ipc_cache.h"
#include "mem/mem.h"
#include "reduce/reduce.h"
#include "util/log.h"
}

namespace {

using mxh_test::LogTap;
using mxh_test::logged;
using mxh_test::pattern;

std::vector<float> floats(size_t n, float seed)
{
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i++)
        v[i] = seed + 0.25f * (float)(i % 97) - 3.0f * (float)(i % 5);
    return v;
}

// Moves all @n bytes at @c with io (read or write): false on an error or end of file.
template <class P, class Io> bool full_io(Io io, int fd, P *c, size_t n)
{
    while (n > 0) {
        ssize_t k = io(fd, c, n);
        if (k <= 0)
            return false;
        c += k;
        n -= (size_t)k;
    }
    return true;
}

bool full_write(int fd, const void *p, size_t n) { return full_io(write, fd, (const char *)p, n); }

bool full_read(int fd, void *p, size_t n) { return full_io(read, fd, (char *)p, n); }

// A peer process: a forked child that owns one test allocation and does what
// it is told over a pipe. Commands: alloc, read, write, export, realloc.
class Peer {
  public:
    enum Op : uint32_t { ALLOC = 1, READ, WRITE, EXPORT, REALLOC, QUIT };
    struct Cmd {
        uint32_t op, seed;
        uint64_t off, len;
    };
    struct Reply {
        mxh_mem_ipc_desc_t desc;
        uint64_t base;
        int32_t st;
    };

    Peer()
    {
        int a[2], b[2];
        if (pipe(a) != 0 || pipe(b) != 0)
            return;
        pid_ = fork();
        if (pid_ == 0) {
            close(a[1]);
            close(b[0]);
            serve(a[0], b[1]);
            _exit(0); // no atexit handlers, no MPI in the child
        }
        close(a[0]);
        close(b[1]);
        to_   = a[1];
        from_ = b[0];
    }
    ~Peer()
    {
        if (pid_ > 0) {
            Cmd c{QUIT, 0, 0, 0};
            full_write(to_, &c, sizeof(c));
            int status = 0;
            waitpid(pid_, &status, 0);
            close(to_);
            close(from_);
        }
    }
    bool ok() const { return pid_ > 0; }
    pid_t pid() const { return pid_; }

    // allocate @n bytes filled with pattern(n, seed); its descriptor
    Reply alloc(size_t n, unsigned seed) { return ask({ALLOC, seed, 0, n}); }
    Reply realloc_same(unsigned seed) { return ask({REALLOC, seed, 0, 0}); }
    Reply export_range(size_t off, size_t len) { return ask({EXPORT, 0, off, len}); }
    std::vector<unsigned char> read(size_t off, size_t len)
    {
        Cmd c{READ, 0, off, len};
        std::vector<unsigned char> v(len);
        EXPECT_TRUE(full_write(to_, &c, sizeof(c)));
        EXPECT_TRUE(full_read(from_, v.data(), len));
        return v;
    }
    void write_bytes(size_t off, const void *p, size_t len)
    {
        Cmd c{WRITE, 0, off, len};
        Reply r;
        EXPECT_TRUE(full_write(to_, &c, sizeof(c)));
        EXPECT_TRUE(full_write(to_, p, len));
        EXPECT_TRUE(full_read(from_, &r, sizeof(r)));
    }

  private:
    pid_t pid_ = -1;
    int to_ = -1, from_ = -1;

    Reply ask(Cmd c)
    {
        Reply r;
        std::memset(&r, 0, sizeof(r));
        EXPECT_TRUE(full_write(to_, &c, sizeof(c)));
        EXPECT_TRUE(full_read(from_, &r, sizeof(r)));
        return r;
    }

    static void serve(int in, int out)
    {
        const mxh_mem_ops_t *t = mxh_mem_ops(MXH_MEM_TEST);
        unsigned char *buf = nullptr;
        size_t n = 0;
        Cmd c;
        while (full_read(in, &c, sizeof(c))) {
            Reply r;
            std::memset(&r, 0, sizeof(r));
            switch (c.op) {
            case ALLOC:
            case REALLOC:
                if (c.op == ALLOC) {
                    n = c.len;
                } else {
                    mxh_mem_test_free(buf);
                }
                buf = (unsigned char *)mxh_mem_test_alloc(n);
                if (buf != nullptr) {
                    auto p = pattern(n, c.seed);
                    std::memcpy(buf, p.data(), n);
                    r.st = t->ipc_export(buf, n, &r.desc);
                }
                r.base = (uint64_t)(uintptr_t)buf;
                full_write(out, &r, sizeof(r));
                break;
            case EXPORT:
                r.st   = t->ipc_export(buf + c.off, c.len, &r.desc);
                r.base = (uint64_t)(uintptr_t)buf;
                full_write(out, &r, sizeof(r));
                break;
            case READ:
                full_write(out, buf + c.off, c.len);
                break;
            case WRITE:
                full_read(in, buf + c.off, c.len);
                full_write(out, &r, sizeof(r));
                break;
            default:
                mxh_mem_test_free(buf);
                return;
            }
        }
    }
};

struct MemIpc : ::testing::Test {
    const mxh_mem_ops_t *t = mxh_mem_ops(MXH_MEM_TEST);
    int owner = 0; // its address stands for a communicator
    mxh_ipc_cache_stats_t s0;

    void SetUp() override
    {
        mxh_mem_test_set_delay(3);
        mxh_ipc_cache_set_ops(nullptr); // the default: the test kind's opener
        mxh_ipc_cache_stats(&s0);
    }
    void TearDown() override
    {
        mxh_ipc_cache_release_owner(&owner);
        mxh_ipc_cache_clear();
        mxh_ipc_cache_stats_t s;
        mxh_ipc_cache_stats(&s);
        EXPECT_EQ(0, s.entries);
        mxh_mem_test_set_delay(3);
    }
    void *map(const mxh_mem_ipc_desc_t &d)
    {
        void *p = nullptr;
        EXPECT_EQ(MXH_OK, t->ipc_map(&d, &owner, &p));
        EXPECT_NE(nullptr, p);
        return p;
    }
    // run an event to completion, counting the tests that said "not yet"
    int polls_until_done(mxh_mem_event_t *ev)
    {
        int n = 0, rc;
        while ((rc = t->event_test(ev)) == 0)
            n++;
        EXPECT_EQ(1, rc);
        return n;
    }
};

using MemIpcDeathTest = MemIpc;
volatile unsigned char g_sink;

// MPI for the tests that reduce (datatypes, the CPU kernels' reference)
void need_mpi()
{
    int init = 0, provided = 0;
    MPI_Initialized(&init);
    if (!init)
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
}

} // namespace

TEST_F(MemIpcDeathTest, PeerMemoryIsNeverDirectlyAccessible)
{
    Peer peer;
    ASSERT_TRUE(peer.ok());
    auto r = peer.alloc(8192, 1);
    ASSERT_EQ(MXH_OK, r.st);
    ASSERT_EQ(1, r.desc.valid);
    volatile unsigned char *p = (volatile unsigned char *)map(r.desc);
    EXPECT_DEATH({ g_sink = p[0]; }, ""); // the value is used: valgrind drops dead loads
    EXPECT_DEATH({ p[8191] = 1; }, "");
    // holds, releases and frees are not for peers' buffers: logged, no effect
    {
        mxh_test::QuietStderr quiet;
        LogTap cap;
        t->hold((const void *)p);
        EXPECT_TRUE(logged("a peer's mapped buffer"));
        EXPECT_EQ(0, mxh_mem_test_holds((const void *)p));
        t->release((const void *)p);
        mxh_mem_test_free((void *)p);
        EXPECT_TRUE(logged("not the start of a test allocation"));
    }
    // the mapping still works through the ops
    std::vector<unsigned char> out(8192);
    ASSERT_EQ(MXH_OK, mxh_mem_copy_sync(t, out.data(), (const void *)p, out.size()));
    EXPECT_EQ(pattern(8192, 1), out);
}

TEST_F(MemIpc, ExportMapAndCopyBothWays)
{
    Peer peer;
    ASSERT_TRUE(peer.ok());
    const size_t n = 3 * 4096 + 100;
    auto r = peer.alloc(n, 2);
    ASSERT_EQ(MXH_OK, r.st);
    ASSERT_EQ(MXH_MEM_TEST, r.desc.kind);
    ASSERT_EQ(1, r.desc.valid);

    uint64_t opens0 = mxh_mem_test_ipc_opens();
    char *p = (char *)map(r.desc);
    EXPECT_EQ(opens0 + 1, mxh_mem_test_ipc_opens());
    EXPECT_NE((uint64_t)(uintptr_t)p, 0u);
    EXPECT_EQ(t, mxh_mem_of(p)); // the mapped pointer is test memory
    EXPECT_EQ(t, mxh_mem_of(p + n - 1));

    // read through the mapping
    std::vector<unsigned char> out(n);
    ASSERT_EQ(MXH_OK, mxh_mem_copy_sync(t, out.data(), p, n));
    EXPECT_EQ(pattern(n, 2), out);

    // write into the peer's buffer: visible there only once the copy completed
    auto in = pattern(5000, 9);
    mxh_mem_event_t ev;
    std::memset(&ev, 0, sizeof(ev));
    ASSERT_EQ(MXH_OK, t->copy_start(p + 100, in.data(), in.size(), &ev));
    EXPECT_EQ(0, t->event_test(&ev));
    auto orig = pattern(n, 2);
    EXPECT_EQ(std::vector<unsigned char>(orig.begin() + 100, orig.begin() + 5100),
              peer.read(100, 5000));
    EXPECT_EQ(2, polls_until_done(&ev));
    EXPECT_EQ(in, peer.read(100, 5000));

    // the same buffer again, and a part of it: cache hits on the one mapping
    mxh_ipc_cache_stats_t s;
    mxh_ipc_cache_stats(&s);
    EXPECT_EQ(p, (char *)map(r.desc));
    auto r2 = peer.export_range(4096, 100);
    ASSERT_EQ(1, r2.desc.valid);
    EXPECT_EQ(p + 4096, (char *)map(r2.desc));
    mxh_ipc_cache_stats_t s2;
    mxh_ipc_cache_stats(&s2);
    EXPECT_EQ(s.hits + 2, s2.hits);
    EXPECT_EQ(opens0 + 1, mxh_mem_test_ipc_opens());

    // peer to peer-mapped copies (both sides test memory)
    ASSERT_EQ(MXH_OK, mxh_mem_copy_sync(t, p, p + 4096, 100));
    auto back = peer.read(0, 100);
    EXPECT_EQ(peer.read(4096, 100), back);

    // exports that cannot be: past the end, host memory, a peer's mapping
    EXPECT_EQ(0, peer.export_range(n - 10, 11).desc.valid);
    EXPECT_EQ(1, peer.export_range(n - 10, 10).desc.valid);
    std::vector<char> host(64);
    mxh_mem_ipc_desc_t d;
    EXPECT_EQ(MXH_OK, t->ipc_export(host.data(), 64, &d));
    EXPECT_EQ(0, d.valid);
    EXPECT_EQ(MXH_OK, t->ipc_export(p, 10, &d));
    EXPECT_EQ(0, d.valid);
    // a bad descriptor is an error
    {
        mxh_test::QuietStderr quiet;
        void *q = nullptr;
        EXPECT_EQ(MXH_ERR_INVALID_PARAM, t->ipc_map(&d, &owner, &q));
    }

    // the owner's release closes the mapping: the pointer is no test memory now
    mxh_ipc_cache_release_owner(&owner);
    EXPECT_EQ(mxh_mem_ops(MXH_MEM_HOST), mxh_mem_of(p));
}

TEST_F(MemIpc, SameProcessExportAndMap)
{
    char *a = (char *)mxh_mem_test_alloc(10000);
    ASSERT_NE(nullptr, a);
    std::memset(a, 5, 10000);
    mxh_mem_ipc_desc_t d;
    ASSERT_EQ(MXH_OK, t->ipc_export(a + 16, 1000, &d));
    ASSERT_EQ(1, d.valid);
    EXPECT_EQ(MXH_OK, t->ipc_export(a, 0, &d)); // n == 0 is fine
    EXPECT_EQ(1, d.valid);
    ASSERT_EQ(MXH_OK, t->ipc_export(a + 16, 1000, &d));
    char *m = (char *)map(d);
    EXPECT_NE(a + 16, m);
    auto in = pattern(1000, 3);
    ASSERT_EQ(MXH_OK, mxh_mem_copy_sync(t, m, in.data(), 1000));
    EXPECT_EQ(0, std::memcmp(a + 16, in.data(), 1000));
    mxh_ipc_cache_release_owner(&owner);
    mxh_mem_test_free(a);
}

TEST_F(MemIpc, ReduceIsDeferredAndReadsItsInputsAtCompletion)
{
    need_mpi();
    Peer peer;
    ASSERT_TRUE(peer.ok());
    const size_t count = 3000, bytes = count * sizeof(float);
    auto r = peer.alloc(bytes, 4);
    ASSERT_EQ(1, r.desc.valid);
    auto fa = floats(count, 1.5f);
    peer.write_bytes(0, fa.data(), bytes);
    const float *pa = (const float *)map(r.desc);

    float *b = (float *)mxh_mem_test_alloc(bytes);
    float *o = (float *)mxh_mem_test_alloc(bytes);
    ASSERT_NE(nullptr, b);
    ASSERT_NE(nullptr, o);
    auto fb = floats(count, -7.0f);
    std::memcpy(b, fb.data(), bytes);

    EXPECT_EQ(1, t->reduce_ok(MPI_FLOAT, MPI_SUM));
    uint64_t red0 = mxh_mem_test_reductions();
    const void *in[2] = {pa, b};
    mxh_mem_event_t ev;
    std::memset(&ev, 0, sizeof(ev));
    ASSERT_EQ(MXH_OK, t->reduce_start(o, in, 2, count, MPI_FLOAT, MPI_SUM, &ev));
    for (int i = 0; i < 3; i++)
        EXPECT_EQ(0, t->event_test(&ev)) << i;
    EXPECT_EQ(0.0f, o[0]); // nothing yet
    EXPECT_EQ(0.0f, o[count - 1]);
    // the peer changes its input before the reduction completed: the new values count
    auto fa2 = floats(count, 100.0f);
    peer.write_bytes(0, fa2.data(), bytes);
    EXPECT_EQ(1, t->event_test(&ev));
    EXPECT_EQ(red0 + 1, mxh_mem_test_reductions());
    std::vector<float> want(count);
    const void *hin[2] = {fa2.data(), fb.data()};
    ASSERT_EQ(MXH_OK, mxh_reduce_multi(hin, 2, want.data(), count, MPI_FLOAT, MPI_SUM));
    EXPECT_EQ(0, std::memcmp(want.data(), o, bytes));

    // out aliasing a later input (in[1]): b = a + b
    ASSERT_EQ(MXH_OK, t->reduce_start(b, in, 2, count, MPI_FLOAT, MPI_SUM, &ev));
    EXPECT_EQ(3, polls_until_done(&ev));
    EXPECT_EQ(0, std::memcmp(want.data(), b, bytes));

    // out == in[0], the peer's buffer: a = a max b max o (three inputs)
    const void *in3[3] = {pa, b, o};
    std::memcpy(o, floats(count, 2.0f).data(), bytes);
    std::vector<float> want3(count);
    std::vector<float> ob(o, o + count);
    const void *hin3[3] = {fa2.data(), want.data(), ob.data()};
    ASSERT_EQ(MXH_OK, mxh_reduce_multi(hin3, 3, want3.data(), count, MPI_FLOAT, MPI_MAX));
    ASSERT_EQ(MXH_OK, t->reduce_start((void *)pa, in3, 3, count, MPI_FLOAT, MPI_MAX, &ev));
    polls_until_done(&ev);
    auto got = peer.read(0, bytes);
    EXPECT_EQ(0, std::memcmp(want3.data(), got.data(), bytes));

    // nin == 1 copies; count == 0 completes at the first test
    ASSERT_EQ(MXH_OK, t->reduce_start(o, in, 1, count, MPI_FLOAT, MPI_SUM, &ev));
    polls_until_done(&ev);
    EXPECT_EQ(0, std::memcmp(want3.data(), o, bytes));
    ASSERT_EQ(MXH_OK, t->reduce_start(o, in, 2, 0, MPI_FLOAT, MPI_SUM, &ev));
    EXPECT_EQ(1, t->event_test(&ev));

    // integers, half precision
    int *ia = (int *)b, *io = (int *)o;
    for (size_t i = 0; i < count; i++) {
        ia[i] = (int)(i * 7919u % 1000) - 500;
        io[i] = (int)(i % 13);
    }
    const void *iin[2] = {ia, io};
    std::vector<int> ia0(ia, ia + count), io0(io, io + count), iwant(count);
    const void *hiin[2] = {ia0.data(), io0.data()};
    ASSERT_EQ(MXH_OK, mxh_reduce_multi(hiin, 2, iwant.data(), count, MPI_INT, MPI_MIN));
    ASSERT_EQ(MXH_OK, t->reduce_start(io, iin, 2, count, MPI_INT, MPI_MIN, &ev));
    polls_until_done(&ev);
    EXPECT_EQ(0, std::memcmp(iwant.data(), io, count * sizeof(int)));
    MPI_Datatype f16 = mxh_half_type(MXH_HALF_FP16);
    ASSERT_NE(MPI_DATATYPE_NULL, f16);
    EXPECT_EQ(1, t->reduce_ok(f16, MPI_SUM));
    EXPECT_EQ(1, t->reduce_ok(f16, mxh_reduce_mpi_op(f16, MPI_SUM)));
    EXPECT_EQ(0, t->reduce_ok(f16, MPI_BAND));

    mxh_mem_test_free(b);
    mxh_mem_test_free(o);
}

TEST_F(MemIpc, ReduceOkAndBadReductions)
{
    need_mpi();
    EXPECT_EQ(1, t->reduce_ok(MPI_DOUBLE, MPI_PROD));
    EXPECT_EQ(1, t->reduce_ok(MPI_UNSIGNED, MPI_MAX));
    EXPECT_EQ(1, t->reduce_ok(MPI_BYTE, MPI_BXOR));
    EXPECT_EQ(0, t->reduce_ok(MPI_BYTE, MPI_SUM));
    EXPECT_EQ(0, t->reduce_ok(MPI_DOUBLE, MPI_BAND));
    EXPECT_EQ(0, t->reduce_ok(MPI_DOUBLE_INT, MPI_MINLOC));
    EXPECT_EQ(0, t->reduce_ok(MPI_C_DOUBLE_COMPLEX, MPI_SUM)); // MPI_Reduce_local's, not a kernel
    EXPECT_EQ(0, t->reduce_ok(MPI_FLOAT, MPI_REPLACE));

    float *a = (float *)mxh_mem_test_alloc(400);
    float *o = (float *)mxh_mem_test_alloc(400);
    std::vector<float> host(100);
    mxh_mem_event_t ev;
    std::memset(&ev, 0, sizeof(ev));
    mxh_test::QuietStderr quiet;
    LogTap cap;
    const void *in_host[2] = {a, host.data()};
    EXPECT_EQ(MXH_ERR_INVALID_PARAM, t->reduce_start(o, in_host, 2, 100, MPI_FLOAT, MPI_SUM, &ev));
    EXPECT_TRUE(logged("is not test memory"));
    const void *in[2] = {a, o};
    EXPECT_EQ(MXH_ERR_INVALID_PARAM,
              t->reduce_start(host.data(), in, 2, 100, MPI_FLOAT, MPI_SUM, &ev));
    EXPECT_EQ(MXH_ERR_INVALID_PARAM, t->reduce_start(o, in, 2, 101, MPI_FLOAT, MPI_SUM, &ev));
    const void *in_ov[2] = {a, o + 1};
    EXPECT_EQ(MXH_ERR_INVALID_PARAM, t->reduce_start(o, in_ov, 2, 50, MPI_FLOAT, MPI_SUM, &ev));
    EXPECT_TRUE(logged("overlaps the output"));
    EXPECT_EQ(MXH_ERR_UNSUPPORTED, t->reduce_start(o, in, 2, 100, MPI_BYTE, MPI_SUM, &ev));
    EXPECT_EQ(MXH_ERR_INVALID_PARAM, t->reduce_start(o, in, 0, 100, MPI_FLOAT, MPI_SUM, &ev));
    EXPECT_EQ(0, ev.pending);
    mxh_mem_test_free(a);
    mxh_mem_test_free(o);
}

TEST_F(MemIpc, FenceCompletesWhatWasStartedBeforeIt)
{
    need_mpi();
    const size_t n = 1000;
    float *a = (float *)mxh_mem_test_alloc(n * sizeof(float));
    float *o = (float *)mxh_mem_test_alloc(n * sizeof(float));
    auto fa = floats(n, 3.0f);
    mxh_mem_event_t ec, er, ef, elate;
    std::memset(&ec, 0, sizeof(ec));
    std::memset(&er, 0, sizeof(er));
    std::memset(&ef, 0, sizeof(ef));
    std::memset(&elate, 0, sizeof(elate));
    const void *in[2] = {a, a + n / 2};
    ASSERT_EQ(MXH_OK, t->copy_start(a, fa.data(), n * sizeof(float), &ec));
    ASSERT_EQ(MXH_OK, t->reduce_start(o, in, 2, n / 2, MPI_FLOAT, MPI_SUM, &er));
    ASSERT_EQ(MXH_OK, t->fence_start(&ef));
    auto late = floats(n, -1.0f);
    ASSERT_EQ(MXH_OK, t->copy_start(o + n / 2, late.data(), n / 2 * sizeof(float), &elate));
    EXPECT_EQ(3, polls_until_done(&ef));
    // the copy, then the reduction (in that order: it read the copied data)
    EXPECT_EQ(0, std::memcmp(fa.data(), a, n * sizeof(float)));
    std::vector<float> want(n / 2);
    const void *hin[2] = {fa.data(), fa.data() + n / 2};
    ASSERT_EQ(MXH_OK, mxh_reduce_multi(hin, 2, want.data(), n / 2, MPI_FLOAT, MPI_SUM));
    EXPECT_EQ(0, std::memcmp(want.data(), o, n / 2 * sizeof(float)));
    // their events are complete at once; the later copy is not run by the fence
    EXPECT_EQ(1, t->event_test(&ec));
    EXPECT_EQ(1, t->event_test(&er));
    EXPECT_EQ(0.0f, o[n / 2]);
    EXPECT_EQ(3, polls_until_done(&elate));
    EXPECT_EQ(late[0], o[n / 2]);
    mxh_mem_test_free(a);
    mxh_mem_test_free(o);
}

TEST_F(MemIpc, PeerReallocationGetsANewIdAndEvictsTheStaleMapping)
{
    Peer peer;
    ASSERT_TRUE(peer.ok());
    const size_t n = 5 * 4096;
    auto r1 = peer.alloc(n, 5);
    ASSERT_EQ(1, r1.desc.valid);
    char *p1 = (char *)map(r1.desc);
    std::vector<unsigned char> out(n);
    ASSERT_EQ(MXH_OK, mxh_mem_copy_sync(t, out.data(), p1, n));
    EXPECT_EQ(pattern(n, 5), out);
    mxh_ipc_cache_stats_t s1;
    mxh_ipc_cache_stats(&s1);

    auto r2 = peer.realloc_same(6);
    ASSERT_EQ(1, r2.desc.valid);
    EXPECT_NE(0, std::memcmp(r1.desc.b, r2.desc.b, MXH_MEM_IPC_DESC_BYTES)); // new buffer id
    char *p2 = (char *)map(r2.desc);
    ASSERT_EQ(MXH_OK, mxh_mem_copy_sync(t, out.data(), p2, n));
    EXPECT_EQ(pattern(n, 6), out);
    mxh_ipc_cache_stats_t s2;
    mxh_ipc_cache_stats(&s2);
    EXPECT_EQ(s1.misses + 1, s2.misses);
    if (r1.base == r2.base) { // the usual case: mmap reuses the hole
        EXPECT_EQ(s1.overlap_evictions + 1, s2.overlap_evictions);
        EXPECT_EQ(s1.entries, s2.entries);
    } else {
        std::printf("note: the peer's new allocation is elsewhere: no overlap to evict\n");
    }
    // the stale descriptor cannot be mapped any more (the fd is gone or another file)
    {
        mxh_test::QuietStderr quiet;
        void *q = nullptr;
        EXPECT_EQ(MXH_ERR_MPI, t->ipc_map(&r1.desc, &owner, &q));
        EXPECT_EQ(nullptr, q);
    }
}

int main(int argc, char **argv)
{
    ::testing::InitGoogleTest(&argc, argv);
    int rc = RUN_ALL_TESTS(), init = 0;
    MPI_Initialized(&init);
    if (init)
        MPI_Finalize();
    return rc;
}
