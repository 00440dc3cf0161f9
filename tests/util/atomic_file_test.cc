// Tests of the atomic file writer (util/atomic_file.h): the destination holds
// the old or the new text, never a part, and no temp file is left behind,
// also when a signal handler ends a write.
#include "util/atomic_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace mmsim::util {
namespace {

namespace fs = std::filesystem;

// A fresh directory (mode 0755) under the system temp dir, removed with
// everything in it.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> n{0};
    path_ = fs::temp_directory_path() /
            ("mmsim-util-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    fs::remove_all(path_);
    fs::create_directories(path_);
    fs::permissions(path_, fs::perms(0755));
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
    for (const auto& e : fs::recursive_directory_iterator(path_, ec))
      fs::permissions(e.path(), fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void put(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// The names in `dir`, sorted.
std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool exists_no_follow(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

TEST(AtomicFile, WritesTheTextToANewFile) {
  TempDir t;
  std::string error;
  ASSERT_TRUE(write_file_atomically(t.file("out.json"), "{\"a\": 1}\n", &error)) << error;
  EXPECT_EQ(slurp(t.file("out.json")), "{\"a\": 1}\n");
  EXPECT_TRUE(error.empty());
}

TEST(AtomicFile, ReplacesAnExistingFile) {
  TempDir t;
  put(t.file("out"), "old text that is longer than the new one");
  ASSERT_TRUE(write_file_atomically(t.file("out"), "new"));
  EXPECT_EQ(slurp(t.file("out")), "new");
}

TEST(AtomicFile, LeavesNoTempFileBehind) {
  TempDir t;
  ASSERT_TRUE(write_file_atomically(t.file("out"), "text"));
  ASSERT_TRUE(write_file_atomically(t.file("out"), "again"));
  EXPECT_EQ(entries(t.file("")), std::vector<std::string>{"out"});
}

TEST(AtomicFile, ReplacesASymlinkInsteadOfFollowingIt) {
  TempDir t;
  put(t.file("target"), "target text");
  fs::create_symlink(t.file("target"), t.file("link"));
  ASSERT_TRUE(write_file_atomically(t.file("link"), "new"));
  EXPECT_FALSE(fs::is_symlink(t.file("link")));
  EXPECT_EQ(slurp(t.file("link")), "new");
  EXPECT_EQ(slurp(t.file("target")), "target text");
}

TEST(AtomicFile, NamesThePathWhenItsDirectoryDoesNotExist) {
  TempDir t;
  const std::string path = t.file("missing/out");
  std::string error;
  EXPECT_FALSE(write_file_atomically(path, "text", &error));
  EXPECT_EQ(error, "cannot write " + path + ": cannot create " + path + ".tmp." +
                       std::to_string(::getpid()) + ": No such file or directory");
}

TEST(AtomicFile, RejectsAnEmptyPath) {
  std::string error;
  EXPECT_FALSE(write_file_atomically("", "text", &error));
  EXPECT_EQ(error, "cannot write \"\": empty file name");
}

TEST(AtomicFile, RefusesADirectoryAndLeavesIt) {
  TempDir t;
  fs::create_directories(t.file("out"));
  put(t.file("out/kept"), "kept");
  std::string error;
  EXPECT_FALSE(write_file_atomically(t.file("out"), "text", &error));
  EXPECT_EQ(error, "cannot write " + t.file("out") + ": it is a directory");
  EXPECT_EQ(entries(t.file("")), std::vector<std::string>{"out"});
  EXPECT_EQ(slurp(t.file("out/kept")), "kept");
}

TEST(AtomicFile, WritesADeviceInPlaceInsteadOfReplacingIt) {
  std::string error;
  EXPECT_TRUE(write_file_atomically("/dev/null", "text", &error)) << error;
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

// Runs `fn` in a child process that, when the tests run as root, first
// becomes the unprivileged user "nobody" (root may write any directory).
// Returns what the child wrote to its pipe, or "skip: ..." if it could not
// drop its privileges.
template <class Fn>
std::string in_unprivileged_child(Fn fn) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return "skip: pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    std::string report;
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) {
      report = "skip: cannot become nobody";
    } else {
      report = fn();
    }
    const ssize_t n = ::write(pipe_fds[1], report.data(), report.size());
    _exit(n == static_cast<ssize_t>(report.size()) ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  std::string report;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buf, sizeof buf)) > 0) report.append(buf, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "child failed";
  return report;
}

TEST(AtomicFile, LeavesTheOldFileWhenTheDirectoryIsNotWritable) {
  TempDir t;
  fs::create_directories(t.file("ro"));
  const std::string path = t.file("ro/out");
  put(path, "old");
  fs::permissions(t.file("ro"), fs::perms(0555));

  const std::string report = in_unprivileged_child([&] {
    std::string error;
    return write_file_atomically(path, "new", &error) ? std::string("written") : error;
  });
  if (report.rfind("skip: ", 0) == 0) GTEST_SKIP() << report;

  const std::string prefix = "cannot write " + path + ": cannot create " + path + ".tmp.";
  const std::string suffix = ": Permission denied";
  EXPECT_EQ(report.rfind(prefix, 0), 0u) << report;
  EXPECT_TRUE(report.size() > suffix.size() &&
              report.compare(report.size() - suffix.size(), suffix.size(), suffix) == 0)
      << report;
  EXPECT_EQ(slurp(path), "old");
  EXPECT_EQ(entries(t.file("ro")), std::vector<std::string>{"out"});
}

TEST(AtomicFile, RemovePendingTempFileDoesNothingWhenNoWriteIsInProgress) {
  TempDir t;
  ASSERT_TRUE(write_file_atomically(t.file("out"), "text"));
  const std::string lookalike = t.file("out.tmp." + std::to_string(::getpid()));
  put(lookalike, "not ours any more");
  remove_pending_temp_file();
  EXPECT_TRUE(exists_no_follow(lookalike));
  EXPECT_EQ(slurp(t.file("out")), "text");
}

// The child's SIGUSR1 handler: what a program's SIGINT handler would do.
void remove_temp_and_exit(int) {
  remove_pending_temp_file();
  _exit(42);
}

// A write stuck in the middle: the temp file is a FIFO whose pipe is full,
// so write_file_atomically() blocks in write(2) until a signal ends it.
TEST(AtomicFile, RemovePendingTempFileFromASignalHandlerRemovesTheFileBeingWritten) {
  TempDir t;
  const std::string path = t.file("out");
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    struct sigaction sa {};
    sa.sa_handler = remove_temp_and_exit;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGUSR1, &sa, nullptr);
    ::close(go[1]);
    char c;
    if (::read(go[0], &c, 1) != 1) _exit(1);
    const bool written = write_file_atomically(path, std::string(4 << 20, 'x'));
    _exit(written ? 2 : 3);  // not reached: the handler exits
  }
  ::close(go[0]);
  const std::string temp = path + ".tmp." + std::to_string(pid);
  ASSERT_EQ(::mkfifo(temp.c_str(), 0600), 0);
  // Open the reading end first, so that the child's open() does not block,
  // and never read: the child's write fills the pipe and then waits.
  const int reader = ::open(temp.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  const int capacity = ::fcntl(reader, F_GETPIPE_SZ);
  ASSERT_GT(capacity, 0);
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  ::close(go[1]);

  int queued = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (queued < capacity && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_EQ(::ioctl(reader, FIONREAD, &queued), 0);
  }
  ASSERT_EQ(queued, capacity) << "the child did not fill the pipe";
  EXPECT_TRUE(exists_no_follow(temp));

  ASSERT_EQ(::kill(pid, SIGUSR1), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ::close(reader);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 42);
  EXPECT_FALSE(exists_no_follow(temp)) << "the pending temp file is still there";
  EXPECT_FALSE(exists_no_follow(path));
}

}  // namespace
}  // namespace mmsim::util
