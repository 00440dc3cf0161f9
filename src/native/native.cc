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

double tv_seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6; }

struct BenchCommand {
  const BenchSpec* spec = nullptr;
  ordered_json params;
  std::vector<std::string> args;  // after argv[0]
  std::string file;               // mmap-fault-drop's file
  uint64_t size = 0;              // and its size
};

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
    const std::string loop = o.loop.value_or("O0");
    if (loop != "O0" && loop != "O2") {
      *why = fmt::format("--loop: expected O0 or O2, got \"{}\"", loop);
      return std::nullopt;
    }
    c.params = {{"seconds", seconds}, {"procs", procs}, {"loop", loop}};
    c.args = {"--seconds", format_number(seconds), "--procs", std::to_string(procs), "--loop",
              loop};
  } else {
    not_for(o.seconds.has_value(), "--seconds");
    not_for(o.procs.has_value(), "--procs");
    not_for(o.loop.has_value(), "--loop");
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
    dirs = build_tree_candidates(fs::path("bench") / "programs");
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
  const HostInfo h = host_info();
  r.sysname = h.sysname;
  r.release = h.release;
  r.version = h.version;
  r.arch = h.arch;
  r.cpus = h.cpus;
  r.nodes = h.nodes;
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
        changes.setting_changed("kernel.numa_balancing", sysctl_path, r.numa_balancing_before);
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

  std::optional<CgroupHost> cgroup;
  std::string cgroup_dir;
  if (options.cgroup) {
    cgroup = find_cgroup_host(options.cgroup_root, &why);
    if (!cgroup) return fail(kExitHostSetup, why + "; nothing was changed");
    cgroup_dir = fmt::format("{}/mmsim-native-{}", cgroup->parent, ::getpid());
    if (::mkdir(cgroup_dir.c_str(), 0755) != 0) {
      const int e = errno;
      changes.undo();
      return fail(kExitHostSetup,
                  fmt::format("cannot create the cgroup {}: {}; nothing was changed", cgroup_dir,
                              errno_text(e)));
    }
    changes.cgroup_created(cgroup_dir);
    r.memcg_hierarchy = cgroup->hierarchy;
    r.memcg_path = cgroup_dir;
  }

  std::string what = fmt::format("{}", fmt::join(r.argv, " "));
  if (cgroup) what += fmt::format(" in memory cgroup {} ({})", cgroup_dir, cgroup->hierarchy);
  if (r.numa_balancing_set) {
    what += fmt::format(" with kernel.numa_balancing={} (was {})", *r.numa_balancing,
                        r.numa_balancing_before);
  }
  const Launched l = launch(LaunchSpec{r.argv, cgroup_dir, what}, signals, changes, err);
  if (l.exit_code) return NativeOutcome{l.exit_code, std::nullopt};
  stopped_by = l.stopped_by;

  if (cgroup && !stopped_by) {
    if (const auto stat = read_text(cgroup_dir + "/memory.stat")) {
      for (const auto& [name, v] : plan::parse_counters(*stat))
        r.memcg_stat.emplace_back(name, static_cast<uint64_t>(v));
    } else {
      err << fmt::format("mmsim: warning: cannot read {}/memory.stat: {}\n", cgroup_dir,
                         errno_text(errno));
    }
    const std::string peak =
        cgroup_dir + (cgroup->hierarchy == "v1" ? "/memory.max_usage_in_bytes" : "/memory.peak");
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

  const std::string& bench_out = l.out;
  if (!l.err.empty()) err << l.err << (l.err.back() == '\n' ? "" : "\n");
  if (l.exec_errno)
    return fail(kExitHostSetup,
                fmt::format("cannot execute {}: {}", *bench_path, errno_text(l.exec_errno)));
  const int status = l.status;
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
  r.wall_s = l.wall_s;
  r.user_s = tv_seconds(l.ru.ru_utime);
  r.sys_s = tv_seconds(l.ru.ru_stime);
  r.iowait_s = l.iowait_s;
  r.vmstat = l.vmstat;
  r.tasks = make_tasks(l.pid, cmd->spec->executable, l.ru, r.counter_name, r.bench_output);
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
