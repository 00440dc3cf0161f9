// Native mode: run a benchmark program on the host, with /proc/vmstat and
// /proc/stat read around it, kernel.numa_balancing set for the run and a fresh
// memory cgroup if asked, and report it in the simulator's vocabulary.
#include "native/native.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>
#include <thread>

#include "util/atomic_file.h"
#include "util/units.h"

namespace mmsim::native {

namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

}  // namespace

const std::vector<BenchSpec>& bench_specs() {
  static const std::vector<BenchSpec> specs = {
      {"numa-shared-cow", "mmsim-numa-shared-cow", "iterations"},
      {"mmap-fault-drop", "mmsim-mmap-fault-drop", "touches"},
  };
  return specs;
}

const BenchSpec* find_bench(const std::string& name) {
  for (const auto& s : bench_specs()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

namespace {

std::string errno_text(int e) { return fmt::format("{} (errno {})", std::strerror(e), e); }

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

// The whole file, or nullopt with errno set.
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

// Writes `text` to an existing file (or creates it when `create`) in one
// write(2), as `echo text > path` does. Returns 0 or an errno; `step` names
// the call that failed.
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

// "name value" lines, in file order (/proc/vmstat, memory.stat).
std::vector<std::pair<std::string, int64_t>> parse_name_values(const std::string& text) {
  std::vector<std::pair<std::string, int64_t>> out;
  std::istringstream in(text);
  std::string name;
  int64_t v;
  while (in >> name >> v) out.emplace_back(name, v);
  return out;
}

std::vector<std::pair<std::string, int64_t>> vmstat_delta(
    const std::vector<std::pair<std::string, int64_t>>& before,
    const std::vector<std::pair<std::string, int64_t>>& after) {
  std::map<std::string, int64_t> b(before.begin(), before.end());
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& [name, v] : after) {
    const auto it = b.find(name);
    out.emplace_back(name, v - (it == b.end() ? 0 : it->second));
  }
  return out;
}

// The iowait column of /proc/stat's "cpu" line, in USER_HZ ticks.
std::optional<uint64_t> read_iowait_ticks() {
  const auto text = read_text("/proc/stat");
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  std::string cpu;
  uint64_t user, nice, system, idle, iowait;
  if (!(in >> cpu >> user >> nice >> system >> idle >> iowait) || cpu != "cpu") return std::nullopt;
  return iowait;
}

double tv_seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6; }

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

// Where to look for the bench executables when no --bench-dir is given: a
// bench/programs directory beside an ancestor of the running binary
// (build/release/src/cli/mmsim and build/release/tests/mmsim_tests both lead
// to build/release/bench/programs).
std::vector<fs::path> default_bench_dirs() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> dirs;
  if (ec) return dirs;
  fs::path d = exe.parent_path();
  for (int i = 0; i < 4 && !d.empty(); ++i) {
    dirs.push_back(d / "bench" / "programs");
    if (d == d.root_path()) break;
    d = d.parent_path();
  }
  return dirs;
}

// SIGINT, SIGTERM and SIGHUP end the run early; SIGCHLD wakes the wait.
sigset_t stop_signals(bool with_chld) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  sigaddset(&s, SIGHUP);
  if (with_chld) sigaddset(&s, SIGCHLD);
  return s;
}

// Blocks the stop signals and SIGCHLD (they are taken with sigtimedwait),
// makes SIGCHLD's action the default (children stay waitable) and makes this
// process the reaper of orphaned descendants, so that the bench's children
// can be reaped too; undone on destruction.
class SignalScope {
 public:
  SignalScope() {
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
  ~SignalScope() {
    drain();
    ::prctl(PR_SET_CHILD_SUBREAPER, old_subreaper_);
    ::sigaction(SIGCHLD, &old_chld_, nullptr);
    ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

  // Takes every pending signal of the set; returns the first stop signal, or 0.
  int drain() {
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

  const sigset_t& old_mask() const { return old_mask_; }

 private:
  sigset_t old_mask_{};
  struct sigaction old_chld_ {};
  int old_subreaper_ = 0;
};

// Everything the run changed on the host, undone by undo() (also from the
// destructor, should an exception leave the run early), in reverse order:
// kill and reap the bench's processes, remove the cgroup and any file the run
// created, restore the sysctl.
class HostChanges {
 public:
  explicit HostChanges(std::ostream& err) : err_(err) {}
  ~HostChanges() { undo(); }
  HostChanges(const HostChanges&) = delete;
  HostChanges& operator=(const HostChanges&) = delete;

  void sysctl_changed(std::string path, std::string old_value) {
    sysctl_path_ = std::move(path);
    sysctl_old_ = std::move(old_value);
  }
  void cgroup_created(std::string dir) { cgroup_dir_ = std::move(dir); }
  void file_may_be_created(std::string path) { file_ = std::move(path); }
  void bench_started(pid_t pid) { bench_pid_ = pid; }
  void bench_reaped() { bench_pid_ = 0; }
  void set_pgid(pid_t p) { pgid_ = p; }

  // Kills the bench's process group and reaps it.
  void kill_and_reap() {
    if (pgid_ > 0) ::kill(-pgid_, SIGKILL);
    if (bench_pid_ > 0) {
      while (::waitpid(bench_pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
      bench_pid_ = 0;
    }
    reap_group();
  }

  // Reaps whatever remains of the bench's process group (its children, which
  // were handed to this process as their subreaper).
  void reap_group() {
    if (pgid_ <= 0) return;
    for (;;) {
      const pid_t r = ::waitpid(-pgid_, nullptr, 0);
      if (r > 0) continue;
      if (r < 0 && errno == EINTR) continue;
      break;
    }
    pgid_ = 0;
  }

  // Returns false if some change could not be undone (reported on err).
  bool undo() {
    if (done_) return ok_;
    done_ = true;
    kill_and_reap();
    if (!cgroup_dir_.empty()) ok_ &= remove_cgroup();
    if (!file_.empty()) {
      std::error_code ec;
      fs::remove(file_, ec);
      if (ec) {
        err_ << fmt::format("mmsim: error: cannot remove {}: {}\n", file_, ec.message());
        ok_ = false;
      }
    }
    if (!sysctl_path_.empty()) {
      std::string step;
      const int e = write_text(sysctl_path_, sysctl_old_ + "\n", false, &step);
      if (e) {
        err_ << fmt::format(
            "mmsim: error: cannot restore kernel.numa_balancing to {} in {}: {}: {}\n", sysctl_old_,
            sysctl_path_, step, errno_text(e));
        ok_ = false;
      }
    }
    return ok_;
  }

 private:
  bool remove_cgroup() {
    const bool real = is_cgroupfs(cgroup_dir_);
    if (real) {
      // Processes that left the bench's process group are still in its cgroup.
      for (int round = 0; round < 50; ++round) {
        const auto procs = read_text(cgroup_dir_ + "/cgroup.procs");
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
      if (::rmdir(cgroup_dir_.c_str()) == 0) return true;
      const int e = errno;
      if (e == ENOENT) return true;
      if (e == EBUSY && attempt < 100) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      if (e == ENOTEMPTY && !real) {
        // A fake cgroup tree (tests): the files written into it are plain files.
        std::error_code ec;
        fs::remove_all(cgroup_dir_, ec);
        if (!ec) return true;
      }
      err_ << fmt::format("mmsim: error: cannot remove the cgroup {}: {}\n", cgroup_dir_,
                          errno_text(e));
      return false;
    }
  }

  std::ostream& err_;
  std::string sysctl_path_, sysctl_old_;
  std::string cgroup_dir_;
  std::string file_;
  pid_t bench_pid_ = 0;
  pid_t pgid_ = 0;
  bool done_ = false;
  bool ok_ = true;
};

// The memory cgroup to create: hierarchy, directory, and the file that moves
// a process into it.
struct CgroupPlan {
  std::string hierarchy;
  std::string dir;
};

// v2 when <root>/cgroup.controllers lists memory (the cgroup goes at the
// root, the only place a v2 cgroup with processes may enable controllers for
// its children); else v1 under <root>/memory, beneath this process's own
// memory cgroup when that directory exists (so the run stays inside whatever
// limit this process has), else at the v1 root.
std::optional<CgroupPlan> plan_cgroup(const std::string& root, std::string* why) {
  const std::string name = fmt::format("mmsim-native-{}", ::getpid());
  if (const auto controllers = read_text(root + "/cgroup.controllers")) {
    if (has_word(*controllers, "memory")) {
      const auto subtree = read_text(root + "/cgroup.subtree_control");
      if (!subtree || !has_word(*subtree, "memory")) {
        *why = fmt::format(
            "the memory controller is not enabled for child cgroups in {}/cgroup.subtree_control",
            root);
        return std::nullopt;
      }
      return CgroupPlan{"v2", root + "/" + name};
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
        const std::string controllers = line.substr(a + 1, b - a - 1);
        std::string list = controllers;
        std::replace(list.begin(), list.end(), ',', ' ');
        if (!has_word(list, "memory")) continue;
        const std::string path = line.substr(b + 1);
        if (path != "/" && fs::is_directory(v1 + path, ec)) parent = v1 + path;
      }
    }
    return CgroupPlan{"v1", parent + "/" + name};
  }
  *why = fmt::format(
      "no memory cgroup under {}: neither cgroup v2 with the memory controller "
      "({}/cgroup.controllers) nor "
      "v1 ({}/memory)",
      root, root, root);
  return std::nullopt;
}

struct BenchCommand {
  const BenchSpec* spec = nullptr;
  ordered_json params;
  std::vector<std::string> args;  // after argv[0]
  std::string file;               // mmap-fault-drop's file
  uint64_t size = 0;              // and its size
};

// True if a stop signal is waiting (they are blocked during the run).
bool stop_pending() {
  sigset_t pending;
  if (::sigpending(&pending) != 0) return false;
  return sigismember(&pending, SIGINT) || sigismember(&pending, SIGTERM) ||
         sigismember(&pending, SIGHUP);
}

// Creates `path` with `size` bytes of nonzero data (real blocks, not a sparse
// file), leaving it in the page cache. Stops early, successfully, when a stop
// signal is waiting: the caller takes it next.
bool create_filled_file(const std::string& path, uint64_t size, std::string* why) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    *why = fmt::format("cannot create {}: {}", path, errno_text(errno));
    return false;
  }
  std::vector<unsigned char> chunk(1 << 20);
  for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<unsigned char>(i * 31 + 7);
  uint64_t done = 0;
  while (done < size && !stop_pending()) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), size - done));
    const ssize_t w = ::write(fd, chunk.data(), n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      *why = fmt::format("cannot write {}: {}", path, errno_text(w < 0 ? errno : ENOSPC));
      ::close(fd);
      return false;
    }
    done += static_cast<uint64_t>(w);
  }
  if (::close(fd) != 0) {
    *why = fmt::format("cannot write {}: {}", path, errno_text(errno));
    return false;
  }
  return true;
}

std::string format_number(double v) { return fmt::format("{}", v); }

// Checks the options against the bench; returns the command or writes why not.
std::optional<BenchCommand> bench_command(const NativeOptions& o, std::string* why) {
  BenchCommand c;
  for (const auto& s : bench_specs()) {
    if (s.name == o.bench) c.spec = &s;
  }
  if (!c.spec) {
    *why = fmt::format("unknown benchmark \"{}\" (known: {})", o.bench,
                       fmt::join(bench_names(), ", "));
    return std::nullopt;
  }
  auto not_for = [&](bool given, const char* flag) {
    if (given && why->empty()) *why = fmt::format("{} does not apply to {}", flag, o.bench);
  };
  if (o.bench == "numa-shared-cow") {
    not_for(o.size.has_value(), "--size");
    not_for(o.loops.has_value(), "--loops");
    not_for(!o.file.empty(), "--file");
    if (!why->empty()) return std::nullopt;
    const double seconds = o.seconds.value_or(10);
    const int procs = o.procs.value_or(2);
    if (!std::isfinite(seconds) || seconds <= 0 || seconds > 1e6) {
      *why = fmt::format("--seconds: expected a number of seconds above 0, got {}", seconds);
      return std::nullopt;
    }
    if (procs < 1 || procs > 4096) {
      *why = fmt::format("--procs: expected 1 to 4096, got {}", procs);
      return std::nullopt;
    }
    c.params = {{"seconds", seconds}, {"procs", procs}};
    c.args = {"--seconds", format_number(seconds), "--procs", std::to_string(procs)};
  } else {
    not_for(o.seconds.has_value(), "--seconds");
    not_for(o.procs.has_value(), "--procs");
    if (!why->empty()) return std::nullopt;
    const uint64_t size = o.size.value_or(256ull << 20);
    const int loops = o.loops.value_or(10);
    if (size == 0) {
      *why = "--size: expected a size above 0";
      return std::nullopt;
    }
    if (loops < 1) {
      *why = fmt::format("--loops: expected 1 or more, got {}", loops);
      return std::nullopt;
    }
    c.file = o.file;
    c.size = size;
    if (c.file.empty()) {
      for (int n = 0;; ++n) {
        c.file = fmt::format("/var/tmp/mmsim-native-{}-{}.dat", ::getpid(), n);
        std::error_code ec;
        if (!fs::exists(c.file, ec)) break;
      }
    }
    c.params = {{"file", c.file}, {"size", size}, {"loops", loops}};
    c.args = {"--file", c.file, "--size", std::to_string(size), "--loops", std::to_string(loops)};
  }
  return c;
}

// Finds the bench executable, or writes where it looked.
std::optional<std::string> find_bench(const NativeOptions& o, const BenchSpec& spec,
                                      std::string* why) {
  std::vector<fs::path> dirs;
  if (!o.bench_dir.empty()) {
    dirs.push_back(o.bench_dir);
  } else {
    dirs = default_bench_dirs();
  }
  std::vector<std::string> tried;
  for (const auto& d : dirs) {
    const fs::path p = d / spec.executable;
    if (::access(p.c_str(), X_OK) == 0) {
      std::error_code ec;
      const fs::path abs = fs::absolute(p, ec);
      return ec ? p.string() : abs.string();
    }
    tried.push_back(p.string());
  }
  *why = fmt::format(
      "cannot find the benchmark program {} (looked for {}); build it (target {}) or give "
      "--bench-dir",
      spec.executable,
      tried.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(tried, ", ")),
      spec.executable);
  return std::nullopt;
}

void fill_host_info(NativeResult& r) {
  utsname u{};
  if (::uname(&u) == 0) {
    r.sysname = u.sysname;
    r.release = u.release;
    r.version = u.version;
    r.arch = u.machine;
  }
  r.cpus = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  std::error_code ec;
  int nodes = 0;
  for (const auto& e : fs::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string n = e.path().filename().string();
    if (n.size() > 4 && n.compare(0, 4, "node") == 0 &&
        n.find_first_not_of("0123456789", 4) == std::string::npos) {
      ++nodes;
    }
  }
  r.nodes = nodes > 0 ? nodes : 1;
}

uint64_t json_u64(const ordered_json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return 0;
  return j[key].is_number_unsigned()
             ? j[key].get<uint64_t>()
             : static_cast<uint64_t>(std::max<double>(0, j[key].get<double>()));
}

double json_double(const ordered_json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return 0;
  return j[key].get<double>();
}

// The bench process and, when it reports them, its children (whose usage
// wait4 folded into the bench's).
std::vector<NativeTask> make_tasks(pid_t pid, const std::string& comm, const rusage& ru,
                                   const std::string& counter, const ordered_json& output) {
  NativeTask main;
  main.pid = pid;
  main.ppid = ::getpid();
  main.comm = comm.substr(0, 15);  // TASK_COMM_LEN - 1
  main.user_s = tv_seconds(ru.ru_utime);
  main.sys_s = tv_seconds(ru.ru_stime);
  main.minflt = static_cast<uint64_t>(ru.ru_minflt);
  main.majflt = static_cast<uint64_t>(ru.ru_majflt);
  main.nvcsw = static_cast<uint64_t>(ru.ru_nvcsw);
  main.nivcsw = static_cast<uint64_t>(ru.ru_nivcsw);
  std::vector<NativeTask> children;
  if (output.is_object() && output.contains("children") && output["children"].is_array()) {
    for (const auto& c : output["children"]) {
      NativeTask t;
      t.pid = static_cast<int>(json_u64(c, "pid"));
      t.ppid = pid;
      t.comm = main.comm;
      t.user_s = json_double(c, "user_s");
      t.sys_s = json_double(c, "sys_s");
      t.minflt = json_u64(c, "minflt");
      t.majflt = json_u64(c, "majflt");
      t.nvcsw = json_u64(c, "nvcsw");
      t.nivcsw = json_u64(c, "nivcsw");
      t.counter = json_u64(c, counter.c_str());
      children.push_back(t);
    }
  }
  uint64_t child_counter = 0;
  for (const auto& c : children) {
    main.user_s = std::max(0.0, main.user_s - c.user_s);
    main.sys_s = std::max(0.0, main.sys_s - c.sys_s);
    main.minflt -= std::min(main.minflt, c.minflt);
    main.majflt -= std::min(main.majflt, c.majflt);
    main.nvcsw -= std::min(main.nvcsw, c.nvcsw);
    main.nivcsw -= std::min(main.nivcsw, c.nivcsw);
    child_counter += c.counter;
  }
  const uint64_t total = json_u64(output, counter.c_str());
  main.counter = total - std::min(total, child_counter);
  std::vector<NativeTask> tasks{main};
  tasks.insert(tasks.end(), children.begin(), children.end());
  return tasks;
}

// The last nonempty line of the bench's standard output.
std::string last_line(const std::string& text) {
  std::istringstream in(text);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!trim(line).empty()) last = line;
  }
  return last;
}

std::string read_memfd(int fd) {
  std::string text;
  if (::lseek(fd, 0, SEEK_SET) < 0) return text;
  char buf[8192];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  return text;
}

// A file descriptor closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

}  // namespace

const std::vector<std::string>& bench_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& s : bench_specs()) n.push_back(s.name);
    return n;
  }();
  return names;
}

std::optional<uint64_t> parse_size(const std::string& text) { return util::parse_size(text); }

NativeOutcome measure_native(const NativeOptions& options, std::ostream& err) {
  auto fail = [&](int code, const std::string& msg) {
    err << "mmsim: error: " << msg << "\n";
    err.flush();
    return NativeOutcome{code, std::nullopt};
  };

  // Bad input first, before anything on the host changes.
  std::string why;
  const auto cmd = bench_command(options, &why);
  if (!cmd) return fail(2, why);
  const auto bench_path = find_bench(options, *cmd->spec, &why);
  if (!bench_path) return fail(2, why);
  if (options.numa_balancing && *options.numa_balancing != 0 && *options.numa_balancing != 1) {
    return fail(2,
                fmt::format("--numa-balancing: expected 0 or 1, got {}", *options.numa_balancing));
  }

  NativeResult r;
  r.bench_path = *bench_path;
  r.params = cmd->params;
  r.counter_name = cmd->spec->counter;
  r.argv.push_back(*bench_path);
  r.argv.insert(r.argv.end(), cmd->args.begin(), cmd->args.end());
  fill_host_info(r);

  // From here on an interrupt is taken, not delivered: it ends the run
  // through the same cleanup as every other way out.
  SignalScope signals;
  HostChanges changes(err);
  int stopped_by = 0;

  const std::string sysctl_path = options.sysctl_root + "/kernel/numa_balancing";
  {
    const auto current = read_text(sysctl_path);
    if (current) {
      r.numa_balancing_before = trim(*current);
      try {
        size_t used = 0;
        const int v = std::stoi(r.numa_balancing_before, &used);
        if (used == r.numa_balancing_before.size()) r.numa_balancing = v;
      } catch (const std::exception&) {
      }
    }
    if (options.numa_balancing) {
      if (!current) {
        return fail(
            kExitHostSetup,
            fmt::format("cannot set kernel.numa_balancing: cannot read {}: {}; nothing was changed",
                        sysctl_path, errno_text(errno)));
      }
      const std::string want = std::to_string(*options.numa_balancing);
      if (r.numa_balancing_before != want) {
        std::string step;
        const int e = write_text(sysctl_path, want + "\n", false, &step);
        if (e) {
          return fail(
              kExitHostSetup,
              fmt::format("cannot set kernel.numa_balancing={}: {} {}: {}{}; nothing was changed",
                          want, step, sysctl_path, errno_text(e),
                          e == EACCES || e == EPERM || e == EROFS
                              ? " (run as root, outside a read-only /proc/sys)"
                              : ""));
        }
        changes.sysctl_changed(sysctl_path, r.numa_balancing_before);
        r.numa_balancing_set = true;
      }
      r.numa_balancing = *options.numa_balancing;
    }
  }

  // mmap-fault-drop's file is written here, before the readings, so that the
  // run measures the mapping loop on a cached file and not the writing.
  if (!cmd->file.empty()) {
    std::error_code ec;
    if (!fs::exists(cmd->file, ec)) {
      changes.file_may_be_created(cmd->file);
      std::string fill_error;
      if (!create_filled_file(cmd->file, cmd->size, &fill_error)) {
        changes.undo();
        return fail(kExitHostSetup, fill_error);
      }
    }
  }
  if (const int sig = signals.drain()) {
    changes.undo();
    err << fmt::format(
        "mmsim: interrupted by {} before the benchmark started; nothing was left changed\n",
        ::strsignal(sig));
    return NativeOutcome{128 + sig, std::nullopt};
  }

  std::optional<CgroupPlan> cgroup;
  if (options.cgroup) {
    cgroup = plan_cgroup(options.cgroup_root, &why);
    if (!cgroup) return fail(kExitHostSetup, why + "; nothing was changed");
    if (::mkdir(cgroup->dir.c_str(), 0755) != 0) {
      const int e = errno;
      changes.undo();
      return fail(kExitHostSetup,
                  fmt::format("cannot create the cgroup {}: {}; nothing was changed", cgroup->dir,
                              errno_text(e)));
    }
    changes.cgroup_created(cgroup->dir);
    r.memcg_hierarchy = cgroup->hierarchy;
    r.memcg_path = cgroup->dir;
  }

  // The child: its own process group, output into memory files, signals as
  // they were, and it waits on `go` until the parent has moved it into the
  // cgroup and taken the "before" readings.
  std::vector<char*> argv;
  for (auto& a : r.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  Fd out_fd(::memfd_create("mmsim-native-stdout", MFD_CLOEXEC));
  Fd err_fd(::memfd_create("mmsim-native-stderr", MFD_CLOEXEC));
  int go[2], exec_status[2];
  if (out_fd.get() < 0 || err_fd.get() < 0 || ::pipe2(go, O_CLOEXEC) != 0) {
    const int e = errno;
    changes.undo();
    return fail(kExitHostSetup,
                fmt::format("cannot set up the benchmark's output: {}", errno_text(e)));
  }
  Fd go_read(go[0]), go_write(go[1]);
  if (::pipe2(exec_status, O_CLOEXEC) != 0) {
    const int e = errno;
    changes.undo();
    return fail(kExitHostSetup,
                fmt::format("cannot set up the benchmark's output: {}", errno_text(e)));
  }
  Fd status_read(exec_status[0]), status_write(exec_status[1]);
  const pid_t parent = ::getpid();
  const sigset_t child_mask = signals.old_mask();

  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    changes.undo();
    return fail(kExitHostSetup, fmt::format("fork: {}", errno_text(e)));
  }
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
    ::execv(argv[0], argv.data());
    const int e = errno;
    [[maybe_unused]] ssize_t w = ::write(exec_status[1], &e, sizeof e);
    _exit(127);
  }
  changes.bench_started(pid);
  ::setpgid(pid, pid);  // also done by the child; whichever runs first
  changes.set_pgid(pid);
  go_read.reset();
  status_write.reset();

  if (cgroup) {
    std::string step;
    const int e =
        write_text(cgroup->dir + "/cgroup.procs", std::to_string(pid) + "\n", true, &step);
    if (e) {
      changes.undo();
      return fail(kExitHostSetup,
                  fmt::format("cannot move the benchmark into the cgroup: {} {}/cgroup.procs: {}",
                              step, cgroup->dir, errno_text(e)));
    }
  }

  std::string started =
      fmt::format("mmsim: running {} (pid {}, process group {})", fmt::join(r.argv, " "), pid, pid);
  if (cgroup) started += fmt::format(" in memory cgroup {} ({})", cgroup->dir, cgroup->hierarchy);
  if (r.numa_balancing_set) {
    started += fmt::format(" with kernel.numa_balancing={} (was {})", *r.numa_balancing,
                           r.numa_balancing_before);
  }
  err << started << "\n";
  err.flush();

  const auto vm_before = parse_name_values(read_text("/proc/vmstat").value_or(""));
  const auto iowait_before = read_iowait_ticks();
  const auto t0 = std::chrono::steady_clock::now();
  {
    const char c = 'g';
    if (::write(go_write.get(), &c, 1) != 1) {
      const int e = errno;
      changes.undo();
      return fail(kExitHostSetup, fmt::format("cannot start the benchmark: {}", errno_text(e)));
    }
    go_write.reset();
  }
  int exec_errno = 0;
  {
    ssize_t n;
    do {
      n = ::read(status_read.get(), &exec_errno, sizeof exec_errno);
    } while (n < 0 && errno == EINTR);
    if (n != sizeof exec_errno) exec_errno = 0;
  }

  // Wait for the bench to exit, or for a stop signal.
  const sigset_t wait_set = stop_signals(true);
  const timespec tick{0, 100'000'000};
  int status = 0;
  rusage ru{};
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == pid) {
      break;  // exited; still a zombie, so its process group id is still its own
    }
    const int sig = ::sigtimedwait(&wait_set, nullptr, &tick);
    if (sig > 0 && sig != SIGCHLD) {
      stopped_by = sig;
      break;
    }
  }
  // Whatever is left of its process group goes now, then the bench is reaped
  // (its rusage includes the children it waited for) and then the rest.
  ::kill(-pid, SIGKILL);
  while (::wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  changes.bench_reaped();
  changes.reap_group();
  const auto t1 = std::chrono::steady_clock::now();
  const auto vm_after = parse_name_values(read_text("/proc/vmstat").value_or(""));
  const auto iowait_after = read_iowait_ticks();

  if (cgroup && !stopped_by) {
    if (const auto stat = read_text(cgroup->dir + "/memory.stat")) {
      for (const auto& [name, v] : parse_name_values(*stat))
        r.memcg_stat.emplace_back(name, static_cast<uint64_t>(v));
    } else {
      err << fmt::format("mmsim: warning: cannot read {}/memory.stat: {}\n", cgroup->dir,
                         errno_text(errno));
    }
    const std::string peak =
        cgroup->dir + (cgroup->hierarchy == "v1" ? "/memory.max_usage_in_bytes" : "/memory.peak");
    if (const auto p = read_text(peak)) {
      try {
        r.memcg_peak_bytes = std::stoull(trim(*p));
      } catch (const std::exception&) {
      }
    }
  }

  const bool undone = changes.undo();
  if (const int late = signals.drain(); late && !stopped_by) stopped_by = late;
  if (stopped_by) {
    err << fmt::format(
        "mmsim: interrupted by {}: stopped the benchmark{}{}{}\n", ::strsignal(stopped_by),
        r.numa_balancing_set
            ? fmt::format(", restored kernel.numa_balancing={}", r.numa_balancing_before)
            : "",
        cgroup ? ", removed the cgroup" : "", undone ? "" : " (with the errors above)");
    err.flush();
    return NativeOutcome{128 + stopped_by, std::nullopt};
  }

  const std::string bench_out = read_memfd(out_fd.get());
  const std::string bench_err = read_memfd(err_fd.get());
  if (!bench_err.empty()) err << bench_err << (bench_err.back() == '\n' ? "" : "\n");
  if (exec_errno)
    return fail(kExitHostSetup,
                fmt::format("cannot execute {}: {}", *bench_path, errno_text(exec_errno)));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return fail(kExitHostSetup,
                fmt::format("{} {}", cmd->spec->executable,
                            WIFSIGNALED(status)
                                ? fmt::format("was killed by {}", ::strsignal(WTERMSIG(status)))
                                : fmt::format("exited with status {}", WEXITSTATUS(status))));
  }
  if (!undone) return NativeOutcome{1, std::nullopt};
  r.bench_output = ordered_json::parse(last_line(bench_out), nullptr, false);
  if (r.bench_output.is_discarded() || !r.bench_output.is_object() ||
      !r.bench_output.contains(r.counter_name)) {
    return fail(1, fmt::format("{} printed no result line with \"{}\" (its output: \"{}\")",
                               cmd->spec->executable, r.counter_name, trim(bench_out)));
  }
  r.counter = json_u64(r.bench_output, r.counter_name.c_str());
  r.wall_s = std::chrono::duration<double>(t1 - t0).count();
  r.user_s = tv_seconds(ru.ru_utime);
  r.sys_s = tv_seconds(ru.ru_stime);
  if (iowait_before && iowait_after) {
    r.iowait_s = static_cast<double>(*iowait_after - *iowait_before) /
                 static_cast<double>(::sysconf(_SC_CLK_TCK));
  }
  r.vmstat = vmstat_delta(vm_before, vm_after);
  r.tasks = make_tasks(pid, cmd->spec->executable, ru, r.counter_name, r.bench_output);
  return NativeOutcome{0, std::move(r)};
}

ordered_json native_json(const NativeOptions& options, const NativeResult& r) {
  ordered_json j;
  j["scenario"] = {{"name", options.bench},
                   {"path", r.bench_path},
                   {"params", r.params},
                   {"cgroup", options.cgroup},
                   {"argv", r.argv}};
  j["seed"] = nullptr;
  j["machine"] = {{"name", "host"},       {"sysname", r.sysname}, {"release", r.release},
                  {"version", r.version}, {"arch", r.arch},       {"cpus", r.cpus},
                  {"nodes", r.nodes}};
  ordered_json kernel = {{"version", r.release}};
  kernel["numa_balancing"] =
      r.numa_balancing ? ordered_json(*r.numa_balancing) : ordered_json(nullptr);
  j["kernel"] = kernel;
  j["metrics"] = {{r.counter_name, r.counter},
                  {"elapsed_s", r.wall_s},
                  {"user_s", r.user_s},
                  {"sys_s", r.sys_s},
                  {"iowait_s", r.iowait_s}};
  ordered_json vm = ordered_json::object();
  for (const auto& [name, v] : r.vmstat) vm[name] = v;
  j["vmstat"] = vm;
  ordered_json tasks = ordered_json::array();
  for (const auto& t : r.tasks) {
    tasks.push_back({{"pid", t.pid},
                     {"tgid", t.pid},
                     {"ppid", t.ppid},
                     {"comm", t.comm},
                     {"user_s", t.user_s},
                     {"sys_s", t.sys_s},
                     {"minflt", t.minflt},
                     {"majflt", t.majflt},
                     {"nvcsw", t.nvcsw},
                     {"nivcsw", t.nivcsw},
                     {"counters", {{r.counter_name, t.counter}}}});
  }
  j["tasks"] = tasks;
  j["sim"] = {{"native", true},
              {"wall_s", r.wall_s},
              {"iowait_scope", "system-wide (/proc/stat iowait delta)"},
              {"bench_output", r.bench_output}};
  if (!r.memcg_path.empty()) {
    ordered_json stat = ordered_json::object();
    for (const auto& [name, v] : r.memcg_stat) stat[name] = v;
    ordered_json group = {{"memory.stat", stat}};
    if (r.memcg_peak_bytes) {
      group[r.memcg_hierarchy == "v1" ? "memory.max_usage_in_bytes" : "memory.peak"] =
          *r.memcg_peak_bytes;
    }
    j["memcg"] = {{"hierarchy", r.memcg_hierarchy}, {"cgroups", {{r.memcg_path, group}}}};
  }
  return j;
}

std::string native_summary_text(const NativeOptions& options, const NativeResult& r) {
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  line(fmt::format("scenario {} (native: {})", options.bench, fmt::join(r.argv, " ")));
  line(fmt::format("machine  host: {} {} {}, {} CPUs, {} nodes; kernel {}", r.sysname, r.release,
                   r.arch, r.cpus, r.nodes, r.release));
  if (r.numa_balancing_set) {
    line(fmt::format("numa     numa_balancing={} (set for the run, restored to {})",
                     *r.numa_balancing, r.numa_balancing_before));
  } else if (r.numa_balancing) {
    line(fmt::format("numa     numa_balancing={}", *r.numa_balancing));
  } else {
    line("numa     numa_balancing unknown (no kernel/numa_balancing sysctl)");
  }
  line(fmt::format("elapsed  {:.6f} s wall", r.wall_s));
  line("");
  line("metrics");
  line(fmt::format("  {:<24} {}", r.counter_name, r.counter));
  line(fmt::format("  {:<24} {:.6f}", "elapsed_s", r.wall_s));
  line(fmt::format("  {:<24} {:.6f}", "user_s", r.user_s));
  line(fmt::format("  {:<24} {:.6f}", "sys_s", r.sys_s));
  line(fmt::format("  {:<24} {:.6f}  (system-wide, /proc/stat)", "iowait_s", r.iowait_s));
  line("");
  line(fmt::format("tasks ({})", r.tasks.size()));
  line(fmt::format("  {:>7} {:>7} {:<15} {:>10} {:>10} {:>9} {:>7} {:>12}", "pid", "ppid", "comm",
                   "user_s", "sys_s", "minflt", "majflt", r.counter_name));
  for (const auto& t : r.tasks) {
    line(fmt::format("  {:>7} {:>7} {:<15} {:>10.4f} {:>10.4f} {:>9} {:>7} {:>12}", t.pid, t.ppid,
                     t.comm, t.user_s, t.sys_s, t.minflt, t.majflt, t.counter));
  }
  line("");
  line("vmstat (change over the run, system-wide; unchanged counters omitted)");
  for (const auto& [name, v] : r.vmstat) {
    if (v != 0) line(fmt::format("  {:<30} {}", name, v));
  }
  if (!r.memcg_path.empty()) {
    line("");
    std::string peak;
    if (r.memcg_peak_bytes) peak = fmt::format(", peak usage {} kB", *r.memcg_peak_bytes / 1024);
    line(fmt::format("memcg ({}, {}{}; memory.stat, zero values omitted)", r.memcg_hierarchy,
                     r.memcg_path, peak));
    for (const auto& [name, v] : r.memcg_stat) {
      if (v != 0) line(fmt::format("  {:<30} {}", name, v));
    }
  }
  return out;
}

int run_native(const NativeOptions& options, std::ostream& out, std::ostream& err) {
  NativeOutcome o = measure_native(options, err);
  if (o.exit_code != 0 || !o.result) return o.exit_code != 0 ? o.exit_code : 1;
  out << native_summary_text(options, *o.result);
  out.flush();
  if (!options.json.empty()) {
    std::string why;
    if (!util::write_file_atomically(options.json, native_json(options, *o.result).dump(2) + "\n",
                                     &why)) {
      err << "mmsim: error: " << why << "\n";
      return kExitHostSetup;
    }
  }
  return 0;
}

}  // namespace mmsim::native
