#include "native/host.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <ostream>
#include <sstream>
#include <thread>

namespace mmsim::native {

namespace fs = std::filesystem;

std::string errno_text(int e) { return fmt::format("{} (errno {})", std::strerror(e), e); }

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

std::optional<std::string> read_text(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      errno = e;
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

int write_text(const std::string& path, const std::string& text, bool create, std::string* step) {
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
  if (fd < 0) {
    *step = "open for writing";
    return errno;
  }
  ssize_t n;
  do {
    n = ::write(fd, text.data(), text.size());
  } while (n < 0 && errno == EINTR);
  const int write_errno = n < 0 ? errno : (static_cast<size_t>(n) != text.size() ? EIO : 0);
  const int close_errno = ::close(fd) < 0 ? errno : 0;
  if (write_errno) {
    *step = "write";
    return write_errno;
  }
  if (close_errno) {
    *step = "close";
    return close_errno;
  }
  return 0;
}

std::optional<uint64_t> read_iowait_ticks() {
  const auto text = read_text("/proc/stat");
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  std::string cpu;
  uint64_t user, nice, system, idle, iowait;
  if (!(in >> cpu >> user >> nice >> system >> idle >> iowait) || cpu != "cpu") return std::nullopt;
  return iowait;
}

bool is_cgroupfs(const std::string& path) {
  struct statfs st {};
  if (::statfs(path.c_str(), &st) != 0) return false;
  return st.f_type == CGROUP_SUPER_MAGIC || st.f_type == CGROUP2_SUPER_MAGIC;
}

bool has_word(const std::string& text, const std::string& word) {
  std::istringstream in(text);
  std::string w;
  while (in >> w) {
    if (w == word || w == "+" + word) return true;
  }
  return false;
}

std::vector<fs::path> build_tree_candidates(const fs::path& rel) {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> out;
  if (ec) return out;
  fs::path d = exe.parent_path();
  for (int i = 0; i < 4 && !d.empty(); ++i) {
    out.push_back(d / rel);
    if (d == d.root_path()) break;
    d = d.parent_path();
  }
  return out;
}

HostInfo host_info() {
  HostInfo h;
  utsname u{};
  if (::uname(&u) == 0) {
    h.sysname = u.sysname;
    h.release = u.release;
    h.version = u.version;
    h.arch = u.machine;
  }
  h.cpus = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  std::error_code ec;
  int nodes = 0;
  for (const auto& e : fs::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string n = e.path().filename().string();
    if (n.size() > 4 && n.compare(0, 4, "node") == 0 &&
        n.find_first_not_of("0123456789", 4) == std::string::npos) {
      ++nodes;
    }
  }
  h.nodes = nodes > 0 ? nodes : 1;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    uint64_t kb = 0;
    if (std::sscanf(line.c_str(), "SwapTotal: %" SCNu64 " kB", &kb) == 1) h.swap_bytes = kb << 10;
  }
  return h;
}

sigset_t stop_signals(bool with_chld) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  sigaddset(&s, SIGHUP);
  if (with_chld) sigaddset(&s, SIGCHLD);
  return s;
}

bool stop_pending() {
  sigset_t pending;
  if (::sigpending(&pending) != 0) return false;
  return sigismember(&pending, SIGINT) || sigismember(&pending, SIGTERM) ||
         sigismember(&pending, SIGHUP);
}

SignalScope::SignalScope() {
  const sigset_t s = stop_signals(true);
  ::pthread_sigmask(SIG_BLOCK, &s, &old_mask_);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(SIGCHLD, &dfl, &old_chld_);
  int sub = 0;
  if (::prctl(PR_GET_CHILD_SUBREAPER, &sub) == 0) old_subreaper_ = sub;
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
}

SignalScope::~SignalScope() {
  drain();
  ::prctl(PR_SET_CHILD_SUBREAPER, old_subreaper_);
  ::sigaction(SIGCHLD, &old_chld_, nullptr);
  ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

int SignalScope::drain() {
  const sigset_t s = stop_signals(true);
  const timespec zero{0, 0};
  int first = 0;
  for (;;) {
    const int sig = ::sigtimedwait(&s, nullptr, &zero);
    if (sig <= 0) break;
    if (sig != SIGCHLD && first == 0) first = sig;
  }
  return first;
}

void HostChanges::setting_changed(std::string name, std::string path, std::string old_value) {
  settings_.push_back(Setting{std::move(name), std::move(path), std::move(old_value)});
}

void HostChanges::kill_and_reap() {
  if (pgid_ > 0) ::kill(-pgid_, SIGKILL);
  if (program_pid_ > 0) {
    while (::waitpid(program_pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    program_pid_ = 0;
  }
  reap_group();
}

void HostChanges::reap_group() {
  if (pgid_ <= 0) return;
  for (;;) {
    const pid_t r = ::waitpid(-pgid_, nullptr, 0);
    if (r > 0) continue;
    if (r < 0 && errno == EINTR) continue;
    break;
  }
  pgid_ = 0;
}

bool HostChanges::undo() {
  if (done_) return ok_;
  done_ = true;
  kill_and_reap();
  for (auto it = cgroup_dirs_.rbegin(); it != cgroup_dirs_.rend(); ++it) ok_ &= remove_cgroup(*it);
  for (const std::string& f : files_) {
    std::error_code ec;
    fs::remove(f, ec);
    if (ec) {
      err_ << fmt::format("mmsim: error: cannot remove {}: {}\n", f, ec.message());
      ok_ = false;
    }
  }
  for (const std::string& d : dirs_) {
    std::error_code ec;
    fs::remove_all(d, ec);
    if (ec) {
      err_ << fmt::format("mmsim: error: cannot remove {}: {}\n", d, ec.message());
      ok_ = false;
    }
  }
  for (auto it = settings_.rbegin(); it != settings_.rend(); ++it) {
    std::string step;
    const int e = write_text(it->path, it->old_value + "\n", false, &step);
    if (e) {
      err_ << fmt::format("mmsim: error: cannot restore {} to {} in {}: {}: {}\n", it->name,
                          it->old_value, it->path, step, errno_text(e));
      ok_ = false;
    }
  }
  return ok_;
}

bool HostChanges::remove_cgroup(const std::string& dir) {
  const bool real = is_cgroupfs(dir);
  if (real) {
    // Processes that left the program's process group are still in its cgroup.
    for (int round = 0; round < 50; ++round) {
      const auto procs = read_text(dir + "/cgroup.procs");
      if (!procs || trim(*procs).empty()) break;
      std::istringstream in(*procs);
      pid_t p;
      while (in >> p) ::kill(p, SIGKILL);
      while (::waitpid(-1, nullptr, WNOHANG) > 0) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  // The cgroup stays busy for a moment after its last task was reaped.
  for (int attempt = 0;; ++attempt) {
    if (::rmdir(dir.c_str()) == 0) return true;
    const int e = errno;
    if (e == ENOENT) return true;
    if (e == EBUSY && attempt < 100) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    if (e == ENOTEMPTY && !real) {
      // A fake cgroup tree (tests): the files written into it are plain files.
      std::error_code ec;
      fs::remove_all(dir, ec);
      if (!ec) return true;
    }
    err_ << fmt::format("mmsim: error: cannot remove the cgroup {}: {}\n", dir, errno_text(e));
    return false;
  }
}

std::optional<CgroupHost> find_cgroup_host(const std::string& root, std::string* why) {
  if (const auto controllers = read_text(root + "/cgroup.controllers")) {
    if (has_word(*controllers, "memory")) {
      const auto subtree = read_text(root + "/cgroup.subtree_control");
      if (!subtree || !has_word(*subtree, "memory")) {
        *why = fmt::format(
            "the memory controller is not enabled for child cgroups in {}/cgroup.subtree_control",
            root);
        return std::nullopt;
      }
      return CgroupHost{"v2", root};
    }
  }
  std::error_code ec;
  const std::string v1 = root + "/memory";
  if (fs::is_directory(v1, ec)) {
    std::string parent = v1;
    if (const auto self = read_text("/proc/self/cgroup")) {
      std::istringstream in(*self);
      std::string line;
      while (std::getline(in, line)) {
        // "4:memory:/some/path"
        const auto a = line.find(':');
        const auto b = a == std::string::npos ? a : line.find(':', a + 1);
        if (b == std::string::npos) continue;
        std::string list = line.substr(a + 1, b - a - 1);
        std::replace(list.begin(), list.end(), ',', ' ');
        if (!has_word(list, "memory")) continue;
        const std::string path = line.substr(b + 1);
        if (path != "/" && fs::is_directory(v1 + path, ec)) parent = v1 + path;
      }
    }
    return CgroupHost{"v1", parent};
  }
  *why = fmt::format(
      "no memory cgroup under {}: neither cgroup v2 with the memory controller "
      "({}/cgroup.controllers) nor v1 ({}/memory)",
      root, root, root);
  return std::nullopt;
}

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

namespace {

std::string read_memfd(int fd) {
  std::string text;
  if (::lseek(fd, 0, SEEK_SET) < 0) return text;
  char buf[8192];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  return text;
}

}  // namespace

Launched launch(const LaunchSpec& spec, SignalScope& signals, HostChanges& changes,
                std::ostream& err) {
  Launched l;
  auto fail = [&](const std::string& msg) {
    changes.undo();
    err << "mmsim: error: " << msg << "\n";
    err.flush();
    l.exit_code = kExitHostSetup;
    return l;
  };
  // The child: its own process group, output into memory files, signals as
  // they were, and it waits on `go` until the parent has moved it into the
  // cgroup and taken the "before" readings.
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  Fd out_fd(::memfd_create("mmsim-native-stdout", MFD_CLOEXEC));
  Fd err_fd(::memfd_create("mmsim-native-stderr", MFD_CLOEXEC));
  int go[2], exec_status[2];
  if (out_fd.get() < 0 || err_fd.get() < 0 || ::pipe2(go, O_CLOEXEC) != 0) {
    return fail(fmt::format("cannot set up the program's output: {}", errno_text(errno)));
  }
  Fd go_read(go[0]), go_write(go[1]);
  if (::pipe2(exec_status, O_CLOEXEC) != 0) {
    return fail(fmt::format("cannot set up the program's output: {}", errno_text(errno)));
  }
  Fd status_read(exec_status[0]), status_write(exec_status[1]);
  const pid_t parent = ::getpid();
  const sigset_t child_mask = signals.old_mask();

  const pid_t pid = ::fork();
  if (pid < 0) return fail(fmt::format("fork: {}", errno_text(errno)));
  if (pid == 0) {
    // Only async-signal-safe calls from here to exec.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(127);
    ::dup2(out_fd.get(), STDOUT_FILENO);
    ::dup2(err_fd.get(), STDERR_FILENO);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE}) ::sigaction(sig, &dfl, nullptr);
    ::sigprocmask(SIG_SETMASK, &child_mask, nullptr);
    ::close(go[1]);
    char c = 0;
    ssize_t n;
    do {
      n = ::read(go[0], &c, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) _exit(127);
    if (spec.no_aslr && ::personality(ADDR_NO_RANDOMIZE) == -1) _exit(127);
    ::execv(argv[0], argv.data());
    const int e = errno;
    [[maybe_unused]] ssize_t w = ::write(exec_status[1], &e, sizeof e);
    _exit(127);
  }
  l.pid = pid;
  changes.program_started(pid);
  ::setpgid(pid, pid);  // also done by the child; whichever runs first
  changes.set_pgid(pid);
  go_read.reset();
  status_write.reset();

  if (!spec.cgroup_dir.empty()) {
    std::string step;
    const int e =
        write_text(spec.cgroup_dir + "/cgroup.procs", std::to_string(pid) + "\n", true, &step);
    if (e) {
      return fail(fmt::format("cannot move the program into the cgroup: {} {}/cgroup.procs: {}",
                              step, spec.cgroup_dir, errno_text(e)));
    }
  }

  err << fmt::format("mmsim: running {} (pid {}, process group {})\n", spec.what, pid, pid);
  err.flush();
  const auto vm_before = plan::parse_counters(read_text("/proc/vmstat").value_or(""));
  const auto iowait_before = read_iowait_ticks();
  const auto t0 = std::chrono::steady_clock::now();
  {
    const char c = 'g';
    if (::write(go_write.get(), &c, 1) != 1) {
      return fail(fmt::format("cannot start the program: {}", errno_text(errno)));
    }
    go_write.reset();
  }
  {
    ssize_t n;
    do {
      n = ::read(status_read.get(), &l.exec_errno, sizeof l.exec_errno);
    } while (n < 0 && errno == EINTR);
    if (n != sizeof l.exec_errno) l.exec_errno = 0;
  }

  // Wait for the program to exit, or for a stop signal.
  const sigset_t wait_set = stop_signals(true);
  const timespec tick{0, 100'000'000};
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == pid) {
      break;  // exited; still a zombie, so its process group id is still its own
    }
    const int sig = ::sigtimedwait(&wait_set, nullptr, &tick);
    if (sig > 0 && sig != SIGCHLD) {
      l.stopped_by = sig;
      break;
    }
  }
  // Whatever is left of its process group goes now, then the program is
  // reaped (its rusage includes the children it waited for) and then the rest.
  ::kill(-pid, SIGKILL);
  while (::wait4(pid, &l.status, 0, &l.ru) < 0 && errno == EINTR) {
  }
  changes.program_reaped();
  changes.reap_group();
  const auto t1 = std::chrono::steady_clock::now();
  const auto vm_after = plan::parse_counters(read_text("/proc/vmstat").value_or(""));
  const auto iowait_after = read_iowait_ticks();
  l.wall_s = std::chrono::duration<double>(t1 - t0).count();
  l.vmstat = plan::counters_delta(vm_before, vm_after);
  if (iowait_before && iowait_after) {
    l.iowait_s = static_cast<double>(*iowait_after - *iowait_before) /
                 static_cast<double>(::sysconf(_SC_CLK_TCK));
  }
  l.out = read_memfd(out_fd.get());
  l.err = read_memfd(err_fd.get());
  return l;
}

}  // namespace mmsim::native
