// The atomic file writer of atomic_file.h: temp file, fsync, rename, with the
// temp file's name kept where a signal handler can find it.
#include "util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace mmsim::util {
namespace {

// The name of the temp file being written, or null. A signal handler reads it,
// so it must be lock-free.
std::atomic<const char*> g_pending_temp_file{nullptr};
static_assert(std::atomic<const char*>::is_always_lock_free);

// Registers a temp file name (which must outlive this object) for
// remove_pending_temp_file() while in scope, if no other one is registered.
class PendingTempFile {
 public:
  explicit PendingTempFile(const std::string& name) : name_(name.c_str()) {
    const char* none = nullptr;
    registered_ = g_pending_temp_file.compare_exchange_strong(none, name_);
  }
  ~PendingTempFile() {
    if (!registered_) return;
    const char* mine = name_;
    g_pending_temp_file.compare_exchange_strong(mine, nullptr);  // unless a handler took it
  }
  PendingTempFile(const PendingTempFile&) = delete;
  PendingTempFile& operator=(const PendingTempFile&) = delete;

 private:
  const char* name_;
  bool registered_ = false;
};

// Writes all of `text` to `fd`; returns 0 or an errno.
int write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    text.remove_prefix(static_cast<size_t>(n));
  }
  return 0;
}

}  // namespace

bool write_file_atomically(const std::string& path, std::string_view text, std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error) *error = "cannot write " + (path.empty() ? std::string("\"\"") : path) + ": " + why;
    return false;
  };
  if (path.empty()) return fail("empty file name");
  // A terminal, pipe or device (/dev/null, /dev/stdout) is written in place:
  // renaming over it would replace the device with a file.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) return fail("it is a directory");
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return fail(std::strerror(errno));
    const int e = write_all(fd, text);
    ::close(fd);
    return e ? fail(std::strerror(e)) : true;
  }
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  const PendingTempFile pending(temp);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0) return fail("cannot create " + temp + ": " + std::strerror(errno));

  // Whatever goes wrong from here on, the temp file goes too.
  auto abandon = [&](const std::string& step, int err) {
    ::unlink(temp.c_str());
    return fail(step + ": " + std::strerror(err));
  };
  if (const int e = write_all(fd, text)) {
    ::close(fd);
    return abandon("cannot write " + temp, e);
  }
  // EINVAL: the file system cannot sync (nothing to wait for).
  if (::fsync(fd) != 0 && errno != EINVAL) {
    const int e = errno;
    ::close(fd);
    return abandon("cannot sync " + temp, e);
  }
  if (::close(fd) != 0) return abandon("cannot close " + temp, errno);
  if (::rename(temp.c_str(), path.c_str()) != 0)
    return abandon("cannot rename " + temp + " to " + path, errno);
  return true;
}

void remove_pending_temp_file() {
  if (const char* name = g_pending_temp_file.exchange(nullptr)) ::unlink(name);
}

}  // namespace mmsim::util
