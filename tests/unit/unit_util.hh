// Helpers shared by the unit tests (C++ only).
#ifndef MXH_UNIT_UTIL_HH
#define MXH_UNIT_UTIL_HH

#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

namespace mxh_test {

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

}  // namespace mxh_test

#endif
