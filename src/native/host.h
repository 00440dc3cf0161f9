// What native mode does to the host, shared by its two front ends (a bench
// program, native.cc; a scenario through mmsim-exec, scenario_native.cc):
// reading and writing kernel files, the changes a run makes and their undoing
// (also on Ctrl-C), memory cgroups, and starting one program with the host's
// counters read just around it.
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "plan/plan.h"

namespace mmsim::native {

// Exit codes of native mode, beyond the CLI's 0 ok, 1 a bug, 2 bad input.
// The host refused: a sysctl, cgroup, file, process or write it needed.
inline constexpr int kExitHostSetup = 3;
inline constexpr int kExitInterrupted = 130;  // 128 + SIGINT (SIGTERM gives 143, SIGHUP 129)

// "No such file or directory (errno 2)".
std::string errno_text(int e);
std::string trim(const std::string& s);
// The whole file, or nullopt with errno set.
std::optional<std::string> read_text(const std::string& path);
// Writes `text` to an existing file (or creates it when `create`) in one
// write(2), as `echo text > path` does. Returns 0 or an errno; `step` names
// the call that failed.
int write_text(const std::string& path, const std::string& text, bool create, std::string* step);
// The iowait column of /proc/stat's "cpu" line, in USER_HZ ticks.
std::optional<uint64_t> read_iowait_ticks();
bool is_cgroupfs(const std::string& path);
// True if `word` (or "+word") is one of the whitespace-separated words.
bool has_word(const std::string& text, const std::string& word);
// Where a program built by the project is when no directory is given: `rel`
// beside an ancestor of the running binary (build/release/src/cli/mmsim and
// build/release/tests/mmsim_tests both lead to build/release/<rel>).
std::vector<std::filesystem::path> build_tree_candidates(const std::filesystem::path& rel);

// uname(2), the online CPUs and the NUMA nodes.
struct HostInfo {
  std::string sysname, release, version, arch;
  int cpus = 0;
  int nodes = 0;
  uint64_t swap_bytes = 0;  // SwapTotal of /proc/meminfo
};
HostInfo host_info();

// SIGINT, SIGTERM and SIGHUP end a run early; SIGCHLD wakes the wait.
sigset_t stop_signals(bool with_chld);
// True if a stop signal is waiting (they are blocked during a run).
bool stop_pending();

// Blocks the stop signals and SIGCHLD (they are taken with sigtimedwait),
// makes SIGCHLD's action the default (children stay waitable) and makes this
// process the reaper of orphaned descendants, so that a program's children
// can be reaped too; undone on destruction.
class SignalScope {
 public:
  SignalScope();
  ~SignalScope();
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;
  // Takes every pending signal of the set; returns the first stop signal, or 0.
  int drain();
  const sigset_t& old_mask() const { return old_mask_; }

 private:
  sigset_t old_mask_{};
  struct sigaction old_chld_ {};
  int old_subreaper_ = 0;
};

// Everything a run changed on the host, undone by undo() (also from the
// destructor, should an exception leave the run early), in reverse order:
// kill and reap the program's processes, remove the cgroups (deepest first),
// the files and directories the run created, restore the settings (last written first).
class HostChanges {
 public:
  explicit HostChanges(std::ostream& err) : err_(err) {}
  ~HostChanges() { undo(); }
  HostChanges(const HostChanges&) = delete;
  HostChanges& operator=(const HostChanges&) = delete;

  // A kernel setting (sysctl, debugfs knob) written for the run; `name` is
  // how messages call it ("kernel.numa_balancing").
  void setting_changed(std::string name, std::string path, std::string old_value);
  void cgroup_created(std::string dir) { cgroup_dirs_.push_back(std::move(dir)); }
  void file_may_be_created(std::string path) { files_.push_back(std::move(path)); }
  // A directory of the run's own (mkdtemp): removed with what it holds.
  void dir_created(std::string path) { dirs_.push_back(std::move(path)); }
  void program_started(pid_t pid) { program_pid_ = pid; }
  void program_reaped() { program_pid_ = 0; }
  void set_pgid(pid_t p) { pgid_ = p; }

  // Kills the program's process group and reaps it.
  void kill_and_reap();
  // Reaps whatever remains of the program's process group (its children,
  // which were handed to this process as their subreaper).
  void reap_group();
  // Returns false if some change could not be undone (reported on err).
  bool undo();

 private:
  bool remove_cgroup(const std::string& dir);

  struct Setting {
    std::string name, path, old_value;
  };
  std::ostream& err_;
  std::vector<Setting> settings_;
  std::vector<std::string> cgroup_dirs_;
  std::vector<std::string> files_;
  std::vector<std::string> dirs_;
  pid_t program_pid_ = 0;
  pid_t pgid_ = 0;
  bool done_ = false;
  bool ok_ = true;
};

// The host's memory cgroups: which hierarchy, and where a run's cgroups go.
struct CgroupHost {
  std::string hierarchy;  // "v1" or "v2"
  std::string parent;     // the directory the run's top cgroup is created in
};
// v2 when <root>/cgroup.controllers lists memory (the run's cgroup goes at
// the root, the only place a v2 cgroup with processes may enable controllers
// for its children); else v1 under <root>/memory, beneath this process's own
// memory cgroup when that directory exists (so the run stays inside whatever
// limit this process has), else at the v1 root. nullopt, with why, if neither.
std::optional<CgroupHost> find_cgroup_host(const std::string& root, std::string* why);

// A file descriptor closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset();

 private:
  int fd_ = -1;
};

// One program run: what launch() starts, and what it saw.
struct LaunchSpec {
  std::vector<std::string> argv;  // argv[0] is the executable's path
  std::string cgroup_dir;         // moved into this cgroup before it starts ("": none)
  // Said on err once it runs: "mmsim: running <what> (pid N, process group N)".
  std::string what;
  // Its address space laid out without randomisation (personality
  // ADDR_NO_RANDOMIZE, as for kernel.randomize_va_space = 0, for it alone).
  bool no_aslr = false;
};
struct Launched {
  int exit_code = 0;      // 0 ran (see status); else kExitHostSetup (the reason is on err)
  pid_t pid = 0;          // its process (and process group) id
  int stopped_by = 0;     // the stop signal that ended it early, or 0
  int exec_errno = 0;     // execv failed with this
  int status = 0;         // wait4's status
  rusage ru{};            // the program and the children it waited for
  double wall_s = 0;      // steady clock, release to reap
  plan::Counters vmstat;  // /proc/vmstat change from release to reap
  double iowait_s = 0;    // /proc/stat iowait change (system-wide)
  std::string out, err;   // what it wrote on stdout and stderr
};
// Starts the program in a process group of its own (recorded in `changes`,
// which kills it on every way out), moves it into the cgroup, reads the
// "before" counters, releases it and waits for it to exit or for a stop
// signal (`signals` must be in force); then kills what is left of its group
// and reads the "after" counters.
Launched launch(const LaunchSpec& spec, SignalScope& signals, HostChanges& changes,
                std::ostream& err);

}  // namespace mmsim::native
