// Helpers shared by the unit tests (C++ only).
#ifndef MXH_UNIT_UTIL_HH
#define MXH_UNIT_UTIL_HH

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

#include "util/log.h"
#include "util/status.h"

#ifndef MXH_TEST_DATADIR
#error "MXH_TEST_DATADIR must point at tests/data"
#endif

namespace mxh_test {

// A file of tests/data: @rel is relative to it ("topologies/x.xml").
inline std::string test_data(const std::string &rel)
{
    return std::string(MXH_TEST_DATADIR) + "/" + rel;
}

// A std::unique_ptr that frees with the library's destroy function @Destroy.
template <class T, void (*Destroy)(T *)>
struct Destroyer {
    void operator()(T *p) const { Destroy(p); }
};
template <class T, void (*Destroy)(T *)>
using Owned = std::unique_ptr<T, Destroyer<T, Destroy>>;

// @make(&object) must return MXH_OK and an object (@what names the input in
// failures); the object, owned by a @Ptr (an Owned<>).
template <class Ptr, class Make>
Ptr made_ok(const std::string &what, Make &&make)
{
    typename Ptr::pointer p = nullptr;
    mxh_status_t st = make(&p);
    EXPECT_EQ(st, MXH_OK) << what << ": " << mxh_log_last_error();
    EXPECT_TRUE(st != MXH_OK || p != nullptr) << what << ": MXH_OK but no object";
    return Ptr(p);
}

// The whole of a file (a failed test expectation if it cannot be opened).
inline std::string read_text(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in.good()) << path;
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// A file under $TMPDIR (or /tmp) removed at the end of the scope; @content
// (any bytes, NULs included) written at construction or with write().
class TempFile {
  public:
    TempFile()
    {
        const char *dir = getenv("TMPDIR");
        std::string tmpl = std::string(dir && *dir ? dir : "/tmp") + "/mxh_test_XXXXXX";
        std::vector<char> buf(tmpl.begin(), tmpl.end());
        buf.push_back('\0');
        int fd = mkstemp(buf.data());
        EXPECT_GE(fd, 0) << strerror(errno);
        if (fd >= 0)
            close(fd);
        path_ = buf.data();
    }
    explicit TempFile(const std::string &content) : TempFile() { write(content); }
    ~TempFile() { unlink(path_.c_str()); }
    TempFile(const TempFile &) = delete;
    TempFile &operator=(const TempFile &) = delete;
    void write(const std::string &content) const
    {
        FILE *f = fopen(path_.c_str(), "wb");
        ASSERT_NE(f, nullptr) << path_;
        size_t n = content.empty() ? 0 : fwrite(content.data(), 1, content.size(), f);
        fclose(f);
        ASSERT_EQ(n, content.size()) << path_;
    }
    const std::string &path() const { return path_; }

  private:
    std::string path_;
};

// Records every message the library logs (at its current level) from
// construction to destruction; logged() searches them.
inline std::vector<std::string> &tapped_msgs()
{
    static std::vector<std::string> v;
    return v;
}
inline bool logged(const std::string &needle)
{
    for (auto &m : tapped_msgs())
        if (m.find(needle) != std::string::npos)
            return true;
    return false;
}
struct LogTap {
    LogTap()
    {
        tapped_msgs().clear();
        mxh_log_set_hook(hook, nullptr);
    }
    ~LogTap() { mxh_log_set_hook(nullptr, nullptr); }
    LogTap(const LogTap &) = delete;
    LogTap &operator=(const LogTap &) = delete;

  private:
    static void hook(mxh_log_level_t, const char *msg, void *) { tapped_msgs().push_back(msg); }
};

// @n bytes of a pattern that differs with @seed.
inline std::vector<unsigned char> pattern(size_t n, unsigned seed)
{
    std::vector<unsigned char> v(n);
    for (size_t i = 0; i < n; i++)
        v[i] = (unsigned char)((i * 131u + seed * 7u + (i >> 8)) & 0xff);
    return v;
}

// Captures the library's warnings and errors for its lifetime.
class LogCapture {
  public:
    LogCapture()
    {
        mxh_log_set_level(MXH_LOG_WARN);
        mxh_log_set_hook(&LogCapture::hook, this);
    }
    ~LogCapture() { mxh_log_set_hook(nullptr, nullptr); }
    LogCapture(const LogCapture &) = delete;
    LogCapture &operator=(const LogCapture &) = delete;

    std::vector<std::string> of(mxh_log_level_t level) const
    {
        std::vector<std::string> out;
        for (const auto &m : msgs)
            if (m.first == level)
                out.push_back(m.second);
        return out;
    }
    std::vector<std::string> errors() const { return of(MXH_LOG_ERROR); }
    std::vector<std::string> warnings() const { return of(MXH_LOG_WARN); }
    void clear() { msgs.clear(); }

    std::vector<std::pair<mxh_log_level_t, std::string>> msgs;

  private:
    static void hook(mxh_log_level_t level, const char *msg, void *arg)
    {
        static_cast<LogCapture *>(arg)->msgs.emplace_back(level, msg);
    }
};

// Sends stderr to /dev/null for its lifetime (the library prints every error, and
// hwloc prints its own parse errors).
class QuietStderr {
  public:
    QuietStderr()
    {
        fflush(stderr);
        saved_ = dup(2);
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) {
            dup2(fd, 2);
            close(fd);
        }
    }
    ~QuietStderr()
    {
        fflush(stderr);
        if (saved_ >= 0) {
            dup2(saved_, 2);
            close(saved_);
        }
    }
    QuietStderr(const QuietStderr &) = delete;
    QuietStderr &operator=(const QuietStderr &) = delete;

  private:
    int saved_;
};

// Runs @f in a child process: its peak resident memory in MiB (the parent's pages at the
// fork included), or -1 when @f returned false or the child died.
template <class F>
long child_peak_rss_mib(F f)
{
    fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0)
        _exit(f() ? 0 : 1);
    int status = 0;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
        return -1;
    return ru.ru_maxrss / 1024;
}

}  // namespace mxh_test

#endif
