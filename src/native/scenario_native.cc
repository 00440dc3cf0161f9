// `mmsim native SCENARIO`: fit the scenario to the host, apply what can be
// applied, run mmsim-exec on the scenario's plan once or more, read the
// host's counters and memory cgroups, undo everything, report.
#include "native/scenario_native.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <tuple>

#include "native/plan_build.h"
#include "plan/plan.h"
#include "report/report.h"
#include "util/atomic_file.h"

namespace mmsim::native {

namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

// The first path of `candidates` that exists, or "".
std::string first_existing(const std::vector<std::string>& candidates) {
  for (const auto& c : candidates) {
    if (::access(c.c_str(), F_OK) == 0) return c;
  }
  return "";
}

std::string hierarchy_name(memcg::Hierarchy h) { return h == memcg::Hierarchy::kV2 ? "v2" : "v1"; }

// The NUMA balancing knobs the scenario sets: kernel/numa_balancing_<knob>
// sysctls until 5.12, /sys/kernel/debug/sched/numa_balancing/<knob> from 5.13.
struct ScanKnob {
  const char* knob;  // the debugfs name; the sysctl adds "numa_balancing_"
  int64_t numa::NumaConfig::*field;
};
constexpr ScanKnob kScanKnobs[] = {
    {"scan_delay_ms", &numa::NumaConfig::numa_balancing_scan_delay_ms},
    {"scan_period_min_ms", &numa::NumaConfig::numa_balancing_scan_period_min_ms},
    {"scan_period_max_ms", &numa::NumaConfig::numa_balancing_scan_period_max_ms},
    {"scan_size_mb", &numa::NumaConfig::numa_balancing_scan_size_mb},
};

// The exec's report: where the files go, and the results.
struct RunOutcome {
  int exit_code = 0;  // 0: `result` holds the run
  workload::RunResult result;
  double wall_s = 0;
  double iowait_s = 0;
};

// A memcg of the run as its host files tell it, in the model's structure (so
// that the report names it as `mmsim run` does). Values in pages.
memcg::MemCgroup read_memcg(const std::string& dir, const std::string& path, bool v2,
                            std::ostream& err) {
  memcg::MemCgroup g;
  g.path = path;
  auto number = [&](const std::string& file) -> std::optional<uint64_t> {
    const auto text = read_text(dir + "/" + file);
    if (!text) return std::nullopt;
    const std::string t = trim(*text);
    if (t == "max") return UINT64_MAX;
    try {
      return std::stoull(t);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  };
  auto pages = [](uint64_t bytes) { return bytes == UINT64_MAX ? bytes : bytes / kPageSize; };
  std::map<std::string, int64_t> stat;
  if (const auto text = read_text(dir + "/memory.stat")) {
    for (const auto& [k, v] : plan::parse_counters(*text)) stat[k] = v;
  } else {
    err << fmt::format("mmsim: warning: cannot read {}/memory.stat: {}\n", dir, errno_text(errno));
  }
  auto st = [&](const char* k) { return stat.count(k) ? stat[k] : 0; };
  const auto spages = [&](const char* k) { return st(k) / static_cast<int64_t>(kPageSize); };
  if (v2) {
    g.usage = pages(number("memory.current").value_or(0));
    g.max_usage = pages(number("memory.peak").value_or(0));  // 5.19+
    g.limit_pages = pages(number("memory.max").value_or(UINT64_MAX));
    if (const auto ev = read_text(dir + "/memory.events")) {
      for (const auto& [k, v] : plan::parse_counters(*ev)) {
        if (k == "max") g.failcnt = static_cast<uint64_t>(v);
      }
    }
    g.rss = spages("anon");
    g.cache = spages("file");
    g.mapped_file = spages("file_mapped");
    g.pagetables = spages("pagetables");
    g.dirty = spages("file_dirty");
    g.writeback = spages("file_writeback");
  } else {
    g.usage = pages(number("memory.usage_in_bytes").value_or(0));
    g.max_usage = pages(number("memory.max_usage_in_bytes").value_or(0));
    // v1 says "no limit" with the largest page-aligned counter value.
    const uint64_t limit = number("memory.limit_in_bytes").value_or(UINT64_MAX);
    g.limit_pages = limit >= (uint64_t{1} << 62) ? UINT64_MAX : pages(limit);
    g.failcnt = number("memory.failcnt").value_or(0);
    g.move_charge_at_immigrate =
        static_cast<uint32_t>(number("memory.move_charge_at_immigrate").value_or(0));
    g.rss = spages("rss");
    g.cache = spages("cache");
    g.mapped_file = spages("mapped_file");
    g.dirty = spages("dirty");
    g.writeback = spages("writeback");
    g.pgpgin = st("pgpgin");
    g.pgpgout = st("pgpgout");
  }
  g.shmem = spages("shmem");
  g.pgfault = st("pgfault");
  g.pgmajfault = st("pgmajfault");
  return g;
}

// The exec's tasks in the simulator's result shape.
workload::RunResult to_result(const plan::RunReport& rep, const scenario::Scenario& sc,
                              pid_t exec_pid) {
  workload::RunResult r;
  r.elapsed_s = static_cast<double>(rep.elapsed_ns) * 1e-9;
  r.time_limit_hit = rep.time_limit_hit;
  for (const plan::TaskResult& t : rep.tasks) {
    workload::TaskResult w;
    w.pid = static_cast<uint32_t>(t.tid);
    w.tgid = static_cast<uint32_t>(t.tgid);
    w.ppid = static_cast<uint32_t>(t.parent ? t.parent : exec_pid);
    const std::string& program = sc.workload.programs.at(t.program).name;
    w.program = program;
    w.comm = program.substr(0, 15);  // TASK_COMM_LEN - 1, as prctl(PR_SET_NAME) keeps it
    w.times.user_ns = static_cast<double>(t.user_ns);
    w.times.sys_ns = static_cast<double>(t.sys_ns);
    w.min_flt = t.minflt;
    w.maj_flt = t.majflt;
    w.nvcsw = t.nvcsw;
    w.nivcsw = t.nivcsw;
    w.start_s = static_cast<double>(t.start_ns) * 1e-9;
    w.exit_s = static_cast<double>(t.end_ns) * 1e-9;
    w.counters = t.counters;
    w.counters.resize(sc.workload.counters.size(), 0);
    w.node_known = t.node >= 0;
    if (w.node_known) w.node = static_cast<uint16_t>(t.node);
    w.local_pct = t.local_pct;
    if (t.end != "exit" && t.end != "time_limit") {
      r.errors.push_back(fmt::format("pid {} ({}): {}", t.tid, program, t.end));
    }
    r.tasks.push_back(std::move(w));
  }
  return r;
}

// One run: the settings and cgroups are in place; makes the scratch
// directory, runs mmsim-exec on the plan, reads the cgroups.
class Runner {
 public:
  Runner(const scenario::Scenario& sc, const ScenarioNativeOptions& o, std::string exec,
         std::ostream& err)
      : sc_(sc), o_(o), exec_(std::move(exec)), err_(err) {}

  RunOutcome run_once(SignalScope& signals, HostChanges& changes, const std::string& cgroup_root,
                      bool v2, const std::string& launch_cgroup) {
    RunOutcome out;
    auto refuse = [&](const std::string& msg) {
      changes.undo();
      err_ << "mmsim: error: " << msg << "\n";
      out.exit_code = kExitHostSetup;
      return out;
    };
    const std::string root = o_.scratch_root.empty() ? "/var/tmp" : o_.scratch_root;
    std::string tmpl = root + "/mmsim-native-XXXXXX";
    if (!::mkdtemp(tmpl.data())) {
      return refuse(
          fmt::format("cannot create a scratch directory in {}: {}", root, errno_text(errno)));
    }
    const std::string dir = tmpl;
    changes.dir_created(dir);
    const std::string files = dir + "/files";
    if (::mkdir(files.c_str(), 0755) != 0) {
      return refuse(fmt::format("cannot create {}: {}", files, errno_text(errno)));
    }
    const std::string plan_path = dir + "/plan";
    const std::string report_path = dir + "/report";
    std::string step;
    if (const int e = write_text(plan_path, plan::write_plan(build_plan(sc_)), true, &step)) {
      return refuse(fmt::format("cannot write {}: {} {}", plan_path, step, errno_text(e)));
    }
    // The files stay until the cgroups are read (their page cache still
    // charged, as in the simulation, where files outlive the tasks): the
    // executor keeps them, and the run's directories go with `changes`.
    LaunchSpec spec;
    spec.argv = {exec_, "--plan", plan_path,   "--scratch",
                 files, "--out",  report_path, "--keep-files"};
    if (std::any_of(sc_.workload.files.begin(), sc_.workload.files.end(),
                    [](const workload::FileSpec& f) { return f.tmpfs; })) {
      std::string shm = o_.tmpfs_root + "/mmsim-native-XXXXXX";
      if (!::mkdtemp(shm.data())) {
        return refuse(fmt::format("cannot create a directory for the tmpfs files in {}: {}",
                                  o_.tmpfs_root, errno_text(errno)));
      }
      changes.dir_created(shm);
      spec.argv.insert(spec.argv.end(), {"--tmpfs", shm});
    }
    if (!cgroup_root.empty()) {
      spec.argv.push_back("--cgroup-root");
      spec.argv.push_back(cgroup_root);
    }
    spec.cgroup_dir = launch_cgroup;
    spec.what = fmt::format("{} for scenario {}", exec_, sc_.name);
    spec.no_aslr = sc_.kernel.mm.randomize_va_space == 0;
    const Launched l = launch(spec, signals, changes, err_);
    if (l.exit_code) {
      out.exit_code = l.exit_code;
      return out;
    }
    if (l.stopped_by) {
      out.exit_code = 128 + l.stopped_by;
      return out;
    }
    if (!l.err.empty()) err_ << l.err << (l.err.back() == '\n' ? "" : "\n");
    if (l.exec_errno) {
      return refuse(fmt::format("cannot execute {}: {}", exec_, errno_text(l.exec_errno)));
    }
    if (!WIFEXITED(l.status) || WEXITSTATUS(l.status) != 0) {
      const std::string how = WIFSIGNALED(l.status)
                                  ? fmt::format("was killed by {}", ::strsignal(WTERMSIG(l.status)))
                                  : fmt::format("exited with status {}", WEXITSTATUS(l.status));
      // 3: the host refused its set-up (said on its stderr, above); else a
      // plan mmsim-exec did not take, or its own failure: a bug of ours.
      const bool host = WIFEXITED(l.status) && WEXITSTATUS(l.status) == kExitHostSetup;
      changes.undo();
      err_ << fmt::format("mmsim: error: mmsim-exec {}{}\n", how,
                          host ? "" : " (a bug: please report it)");
      out.exit_code = host ? kExitHostSetup : 1;
      return out;
    }
    const auto text = read_text(report_path);
    std::string why;
    const auto rep = text ? plan::read_report(*text, &why) : std::nullopt;
    if (!rep) {
      changes.undo();
      err_ << fmt::format("mmsim: error: mmsim-exec's report {}: {} (a bug: please report it)\n",
                          report_path, text ? why : errno_text(errno));
      out.exit_code = 1;
      return out;
    }
    out.result = to_result(*rep, sc_, l.pid);
    // The executor's readings leave out its set-up (the files); the
    // launcher's, taken around the whole process, are the fallback.
    out.result.vmstat = rep->vmstat.empty() ? l.vmstat : rep->vmstat;
    out.iowait_s = rep->vmstat.empty() ? l.iowait_s : static_cast<double>(rep->iowait_ns) * 1e-9;
    out.wall_s = l.wall_s;
    if (!cgroup_root.empty()) {
      out.result.memcg.push_back(read_memcg(cgroup_root, "/", v2, err_));
      for (const std::string& p : sc_.workload.cgroup_paths) {
        out.result.memcg.push_back(read_memcg(cgroup_root + p, p, v2, err_));
      }
    }
    return out;
  }

 private:
  const scenario::Scenario& sc_;
  const ScenarioNativeOptions& o_;
  const std::string exec_;
  std::ostream& err_;
};

// Writes the settings; on a refusal says why and returns false (the caller
// undoes what was written).
bool apply_settings(const HostFit& fit, HostChanges& changes, std::ostream& err,
                    std::vector<std::string>* applied) {
  for (const SettingPlan& s : fit.settings) {
    if (s.path.empty()) continue;
    const auto current = read_text(s.path);
    if (!current) {
      err << fmt::format("mmsim: error: cannot set {}: cannot read {}: {}\n", s.key, s.path,
                         errno_text(errno));
      return false;
    }
    std::string before = trim(*current);
    // A sysfs choice lists every value with the current one bracketed
    // ("always [madvise] never"): that one is the value to restore.
    if (const auto open = before.find('['); open != std::string::npos) {
      const auto close = before.find(']', open);
      if (close != std::string::npos) before = before.substr(open + 1, close - open - 1);
    }
    if (before == s.value) {
      applied->push_back(fmt::format("{}={}", s.key, s.value));
      continue;
    }
    std::string step;
    if (const int e = write_text(s.path, s.value + "\n", false, &step)) {
      err << fmt::format("mmsim: error: cannot set {}={}: {} {}: {}{}\n", s.key, s.value, step,
                         s.path, errno_text(e),
                         e == EACCES || e == EPERM || e == EROFS ? " (run as root)" : "");
      return false;
    }
    changes.setting_changed(s.key, s.path, before);
    applied->push_back(fmt::format("{}={} (was {})", s.key, s.value, before));
  }
  return true;
}

// Creates the run's cgroup and the scenario's below it; returns its path,
// "" when the scenario has none, nullopt (said on err) when the host refused.
std::optional<std::string> make_cgroups(const scenario::Scenario& sc, const CgroupHost& host,
                                        HostChanges& changes, std::ostream& err) {
  const bool v2 = host.hierarchy == "v2";
  const std::string root = fmt::format("{}/mmsim-native-{}", host.parent, ::getpid());
  auto refused = [&](const std::string& what, const std::string& path, int e) {
    err << fmt::format("mmsim: error: cannot {} {}: {}\n", what, path, errno_text(e));
    return std::nullopt;
  };
  if (::mkdir(root.c_str(), 0755) != 0) return refused("create the cgroup", root, errno);
  changes.cgroup_created(root);
  // Parents before children: by depth.
  std::vector<memcg::CgroupSpec> specs = sc.cgroups;
  std::stable_sort(specs.begin(), specs.end(), [](const auto& a, const auto& b) {
    return std::count(a.path.begin(), a.path.end(), '/') <
           std::count(b.path.begin(), b.path.end(), '/');
  });
  auto write = [&](const std::string& file, const std::string& value) {
    std::string step;
    const int e = write_text(file, value + "\n", false, &step);
    if (e)
      err << fmt::format("mmsim: error: cannot write {} to {}: {} {}\n", value, file, step,
                         errno_text(e));
    return e == 0;
  };
  for (const auto& spec : specs) {
    const std::string dir = root + spec.path;
    if (v2) {
      // A v2 cgroup's children get the memory controller from its parent.
      const std::string parent = dir.substr(0, dir.rfind('/'));
      if (!write(parent + "/cgroup.subtree_control", "+memory")) return std::nullopt;
    }
    if (::mkdir(dir.c_str(), 0755) != 0) return refused("create the cgroup", dir, errno);
    changes.cgroup_created(dir);
    if (spec.limit_bytes != UINT64_MAX &&
        !write(dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes"),
               std::to_string(spec.limit_bytes))) {
      return std::nullopt;
    }
    if (!v2 && spec.move_charge_at_immigrate &&
        !write(dir + "/memory.move_charge_at_immigrate",
               std::to_string(spec.move_charge_at_immigrate))) {
      return std::nullopt;
    }
  }
  return root;
}

struct Stat {
  double mean = 0, min = 0, max = 0;
};
Stat stat_of(const std::vector<double>& v) {
  Stat s;
  if (v.empty()) return s;
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  return s;
}

}  // namespace

std::string find_exec(const ScenarioNativeOptions& o, std::string* why) {
  std::vector<std::string> tried;
  if (!o.exec_path.empty()) {
    if (::access(o.exec_path.c_str(), X_OK) == 0) return fs::absolute(o.exec_path).string();
    tried.push_back(o.exec_path);
  } else {
    for (const auto& p : build_tree_candidates(fs::path("tools") / "exec" / "mmsim-exec")) {
      if (::access(p.c_str(), X_OK) == 0) return p.string();
      tried.push_back(p.string());
    }
  }
  *why = fmt::format(
      "cannot find the native executor mmsim-exec (looked for {}); build it "
      "(target mmsim-exec) or give --exec",
      tried.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(tried, ", ")));
  return "";
}

HostFit fit_to_host(const scenario::Scenario& sc, const HostInfo& host,
                    const ScenarioNativeOptions& o) {
  HostFit fit;
  // The kernel: its own rules apply.
  const std::string release = host.release.substr(0, host.release.find_first_not_of("0123456789."));
  const auto parts = release.find('.', release.find('.') + 1);
  const auto host_version = KernelVersion::parse(release.substr(0, parts));
  if (!host_version || *host_version != sc.kernel.version) {
    fit.not_applied.push_back(fmt::format(
        "kernel.version = {}: this host runs Linux {}; its kernel's own rules apply, not the "
        "scenario's rule switches ([numa] and [memcg] rules, fault-around, page-cache folios)",
        sc.kernel.version.str(), host.release));
  }
  // The machine.
  std::string terr;
  if (!sc.host_machine) {
    const auto topo = scenario::build_topology(sc, &terr);
    if (topo && (topo->nr_nodes() != static_cast<size_t>(host.nodes) ||
                 topo->nr_cpus() != static_cast<size_t>(host.cpus))) {
      fit.not_applied.push_back(fmt::format(
          "machine {} ({} nodes, {} CPUs): this host has {} node{} and {} CPU{}; the run uses "
          "the host's (machine.preset = \"host\" simulates this host)",
          topo->name(), topo->nr_nodes(), topo->nr_cpus(), host.nodes, host.nodes == 1 ? "" : "s",
          host.cpus, host.cpus == 1 ? "" : "s"));
    }
  }
  // NUMA balancing: the sysctl, and its scan knobs when it is on.
  const numa::NumaConfig nc = sc.kernel.numa_config(static_cast<size_t>(host.nodes));
  {
    const std::string path = o.sysctl_root + "/kernel/numa_balancing";
    if (::access(path.c_str(), F_OK) == 0) {
      fit.settings.push_back({"kernel.numa_balancing", std::to_string(nc.mode), path, ""});
    } else if (nc.enabled) {
      fit.not_applied.push_back(fmt::format(
          "kernel.numa_balancing = 1: this kernel has no NUMA balancing ({} is missing)", path));
    }
  }
  if (nc.enabled) {
    for (const ScanKnob& k : kScanKnobs) {
      const std::string key = fmt::format("kernel.numa_balancing_{}", k.knob);
      const std::string path =
          first_existing({fmt::format("{}/kernel/numa_balancing_{}", o.sysctl_root, k.knob),
                          fmt::format("{}/sched/numa_balancing/{}", o.debugfs_root, k.knob)});
      if (!path.empty()) {
        fit.settings.push_back({key, std::to_string(nc.*k.field), path, ""});
      } else {
        fit.not_applied.push_back(
            fmt::format("{} = {}: no sysctl and no debugfs file ({}/sched/numa_balancing/{}; "
                        "mount debugfs there to apply it)",
                        key, nc.*k.field, o.debugfs_root, k.knob));
      }
    }
  }
  // Transparent huge pages (sysfs), so that a host built with another
  // default runs the scenario's.
  {
    const mm::MmConfig& m = sc.kernel.mm;
    const std::string dir = o.sysfs_root + "/kernel/mm/transparent_hugepage/";
    using Knob = std::tuple<std::string, std::string, std::string>;
    const std::vector<Knob> knobs = {
        {"kernel.transparent_hugepage", "enabled", mm::thp_word(m.thp_enabled)},
        {"kernel.transparent_hugepage_defrag", "defrag", mm::thp_word(m.thp_defrag)},
        {"kernel.thp_use_zero_page", "use_zero_page", m.thp_use_zero_page ? "1" : "0"},
        {"kernel.khugepaged_scan_sleep_millisecs", "khugepaged/scan_sleep_millisecs",
         std::to_string(m.khugepaged_scan_sleep_ms)},
        {"kernel.khugepaged_alloc_sleep_millisecs", "khugepaged/alloc_sleep_millisecs",
         std::to_string(m.khugepaged_alloc_sleep_ms)},
        {"kernel.khugepaged_pages_to_scan", "khugepaged/pages_to_scan",
         std::to_string(m.khugepaged_pages_to_scan)},
        {"kernel.khugepaged_max_ptes_none", "khugepaged/max_ptes_none",
         std::to_string(m.khugepaged_max_ptes_none)},
        {"kernel.khugepaged_max_ptes_shared", "khugepaged/max_ptes_shared",
         std::to_string(m.khugepaged_max_ptes_shared)},
        {"kernel.khugepaged_defrag", "khugepaged/defrag", m.khugepaged_defrag ? "1" : "0"}};
    for (const auto& [key, file, value] : knobs) {
      const std::string path = dir + file;
      if (::access(path.c_str(), F_OK) == 0) {
        fit.settings.push_back({key, value, path, ""});
      } else if (m.thp_enabled != mm::ThpEnabled::kNever) {
        fit.not_applied.push_back(fmt::format("{} = {}: this kernel has no {}", key, value, path));
      }
    }
  }
  // kernel.randomize_va_space: 0 is mmsim-exec's own personality
  // (ADDR_NO_RANDOMIZE); randomisation is the host's, system-wide.
  if (sc.kernel.mm.randomize_va_space != 0) {
    const std::string path = o.sysctl_root + "/kernel/randomize_va_space";
    if (const auto v = read_text(path); v && v->starts_with("0")) {
      fit.not_applied.push_back(fmt::format(
          "kernel.randomize_va_space = {}: this host's is 0 ({}), so mmsim-exec's mmap base is "
          "not randomised",
          sc.kernel.mm.randomize_va_space, path));
    }
  }
  // Memory tiering: demotion (sysfs), and the tiering mode's knobs.
  {
    const std::string path = o.sysfs_root + "/kernel/mm/numa/demotion_enabled";
    if (::access(path.c_str(), F_OK) == 0) {
      fit.settings.push_back(
          {"kernel.demotion_enabled", sc.kernel.mm.demotion_enabled ? "1" : "0", path, ""});
    } else if (sc.kernel.mm.demotion_enabled) {
      fit.not_applied.push_back(fmt::format(
          "kernel.demotion_enabled = true: this kernel has no demotion ({} is missing)", path));
    }
  }
  if (nc.hot_page_selection()) {
    const std::string rate = o.sysctl_root + "/kernel/numa_balancing_promote_rate_limit_MBps";
    const std::string hot = o.debugfs_root + "/sched/numa_balancing/hot_threshold_ms";
    for (const auto& [key, path, value] :
         {std::tuple{"kernel.numa_balancing_promote_rate_limit_MBps", rate,
                     nc.numa_balancing_promote_rate_limit_mbps},
          std::tuple{"kernel.numa_balancing_hot_threshold_ms", hot,
                     nc.numa_balancing_hot_threshold_ms}}) {
      if (::access(path.c_str(), F_OK) == 0) {
        fit.settings.push_back({key, std::to_string(value), path, ""});
      } else {
        fit.not_applied.push_back(
            fmt::format("{} = {}: no {}; the kernel's own applies", key, value, path));
      }
    }
  }
  // Fault-around: a debugfs file in bytes; 0 (no fault-around, before 3.15)
  // is one page, which maps only the faulting page.
  {
    const int64_t bytes = std::max<int64_t>(sc.kernel.mm.fault_around_kb * 1024, kPageSize);
    const std::string path = o.debugfs_root + "/fault_around_bytes";
    if (::access(path.c_str(), F_OK) == 0) {
      fit.settings.push_back({"kernel.fault_around_kb", std::to_string(bytes), path, ""});
    } else {
      fit.not_applied.push_back(fmt::format(
          "kernel.fault_around_kb = {}: no {} (mount debugfs there to apply it); the host's "
          "fault-around applies",
          sc.kernel.mm.fault_around_kb, path));
    }
  }
  // Reclaim: the sysctls, and the swap device (which mmsim does not set up).
  {
    auto sysctl = [&](const char* key, const char* file, int64_t value) {
      const std::string path = o.sysctl_root + "/vm/" + file;
      if (::access(path.c_str(), F_OK) == 0) {
        fit.settings.push_back({key, std::to_string(value), path, ""});
      } else {
        fit.not_applied.push_back(
            fmt::format("{} = {}: no {}; the host's applies", key, value, path));
      }
    };
    sysctl("kernel.swappiness", "swappiness", sc.kernel.reclaim.swappiness);
    if (sc.kernel.mm.watermark_scale_factor > 0) {
      sysctl("kernel.watermark_scale_factor", "watermark_scale_factor",
             sc.kernel.mm.watermark_scale_factor);
    } else {
      // 0 stands for the fixed min/4 gap of kernels before 4.6, which have
      // no such sysctl; a kernel that has it takes 1 to 3000.
      fit.not_applied.push_back(
          "kernel.watermark_scale_factor = 0 (before 4.6: the watermarks' gap is min/4): a "
          "kernel with the sysctl takes 1 to 3000; the host's applies");
    }
    if (sc.kernel.mm.min_free_kbytes != mm::kAutoMinFree)
      sysctl("kernel.min_free_kbytes", "min_free_kbytes", sc.kernel.mm.min_free_kbytes);
    // Writeback: the dirty limits and the flusher's periods.
    sysctl("kernel.dirty_ratio", "dirty_ratio", sc.kernel.mm.dirty_ratio);
    sysctl("kernel.dirty_background_ratio", "dirty_background_ratio",
           sc.kernel.mm.dirty_background_ratio);
    sysctl("kernel.dirty_expire_centisecs", "dirty_expire_centisecs",
           sc.kernel.mm.dirty_expire_centisecs);
    sysctl("kernel.dirty_writeback_centisecs", "dirty_writeback_centisecs",
           sc.kernel.mm.dirty_writeback_centisecs);
    // mmsim models the two-list LRU: a kernel with the multi-generational
    // one (6.1+, on by default in Debian's 6.12) has it switched off.
    const std::string lru_gen = o.sysfs_root + "/kernel/mm/lru_gen/enabled";
    if (::access(lru_gen.c_str(), F_OK) == 0)
      fit.settings.push_back({"reclaim.lru_gen", "0", lru_gen, ""});
    if (host.swap_bytes != sc.kernel.swap_bytes) {
      fit.not_applied.push_back(fmt::format(
          "swap.size = {} bytes: this host has {} bytes of swap, which applies (mmsim sets no "
          "swap device up)",
          sc.kernel.swap_bytes, host.swap_bytes));
    }
  }
  if (sc.kernel.mm.read_ahead_kb != 128) {
    fit.not_applied.push_back(
        fmt::format("kernel.read_ahead_kb = {}: readahead is set per block device "
                    "(/sys/block/<dev>/queue/read_ahead_kb); the host's device setting applies",
                    sc.kernel.mm.read_ahead_kb));
  }
  return fit;
}

int run_scenario_native(const scenario::Scenario& sc_in, const ScenarioNativeOptions& o,
                        std::ostream& out, std::ostream& err, ordered_json* json) {
  // Bad input and missing pieces first, before anything on the host changes.
  std::string why;
  const std::string exec = find_exec(o, &why);
  if (exec.empty()) {
    err << "mmsim: error: " << why << "\n";
    return 2;
  }
  if (o.repeat < 1 || o.repeat > 1000) {
    err << fmt::format("mmsim: error: --repeat: expected 1 to 1000, got {}\n", o.repeat);
    return 2;
  }
  const HostInfo host = host_info();
  const HostFit fit = fit_to_host(sc_in, host, o);
  // The report describes the host: its machine and its cgroup hierarchy.
  scenario::Scenario sc = sc_in;
  std::string terr;
  const auto topo = topo::load_host("/sys", &terr);
  if (!topo) {
    err << "mmsim: error: cannot read this host's machine: " << terr << "\n";
    return kExitHostSetup;
  }
  std::vector<std::string> not_applied = fit.not_applied;
  // A run with memory cgroups has one of its own, which stands for the root
  // memcg of the simulation ("/"), with the scenario's cgroups below it. A
  // scenario without cgroups still gets it, for the report, where the host
  // lets mmsim make one.
  const bool uses_cgroups = !sc.workload.cgroup_paths.empty() || sc.workload.init_cgroup != 0;
  std::optional<CgroupHost> cg;
  if (uses_cgroups || sc.kernel.memcg.enabled()) {
    cg = find_cgroup_host(o.cgroup_root, &why);
    if (!cg && uses_cgroups) {
      err << "mmsim: error: the scenario has memory cgroups, but " << why << "\n";
      return kExitHostSetup;
    }
    if (!cg) not_applied.push_back("memcg: " + why + "; no memcg report");
  }
  if (cg) {
    const bool v2 = cg->hierarchy == "v2";
    if (v2 != (sc.kernel.memcg.hierarchy == memcg::Hierarchy::kV2)) {
      not_applied.push_back(fmt::format(
          "memcg.hierarchy = \"{}\": this host's memory cgroups are {}; reported under its names",
          hierarchy_name(sc.kernel.memcg.hierarchy), cg->hierarchy));
    }
    if (v2) {
      for (const auto& c : sc.cgroups) {
        if (c.move_charge_at_immigrate) {
          not_applied.push_back(fmt::format(
              "cgroups {}: move_charge_at_immigrate: cgroup v2 never moves charges", c.path));
        }
      }
    }
    sc.kernel.memcg.hierarchy = v2 ? memcg::Hierarchy::kV2 : memcg::Hierarchy::kV1;
  }
  for (const auto& n : not_applied) err << "mmsim: cannot apply: " << n << "\n";

  SignalScope signals;
  HostChanges changes(err);
  std::vector<std::string> applied;
  if (!apply_settings(fit, changes, err, &applied)) {
    changes.undo();
    err << "mmsim: nothing was left changed\n";
    return kExitHostSetup;
  }
  std::string cgroup_root;
  if (cg) {
    std::ostringstream why_not;
    const auto root = make_cgroups(sc, *cg, changes, uses_cgroups ? err : why_not);
    if (root) {
      cgroup_root = *root;
    } else if (uses_cgroups) {
      changes.undo();
      err << "mmsim: nothing was left changed\n";
      return kExitHostSetup;
    } else {
      // Only the report's cgroup failed (not root, say): run without it.
      std::string msg = trim(why_not.str());
      if (msg.rfind("mmsim: error: ", 0) == 0) msg = msg.substr(14);
      not_applied.push_back("memcg: " + msg + "; no memcg report");
      err << "mmsim: cannot apply: " << not_applied.back() << "\n";
      cg.reset();
    }
  }
  if (const int sig = signals.drain()) {
    changes.undo();
    err << fmt::format("mmsim: interrupted by {} before the run; nothing was left changed\n",
                       ::strsignal(sig));
    return 128 + sig;
  }

  Runner runner(sc, o, exec, err);
  std::vector<RunOutcome> runs;
  for (int i = 0; i < o.repeat; ++i) {
    // The executor runs in the run's cgroup, which then stands for the root
    // memcg (tasks not moved are charged there, as the simulator charges the
    // root); but v2 forbids processes in a cgroup whose children have
    // controllers: with the scenario's cgroups, there it stays where mmsim is.
    const std::string launch_cgroup =
        cg && (cg->hierarchy == "v1" || sc.cgroups.empty()) ? cgroup_root : "";
    HostChanges per_run(err);  // the scratch directory and the run's processes
    RunOutcome r =
        runner.run_once(signals, per_run, cgroup_root, cg && cg->hierarchy == "v2", launch_cgroup);
    const bool undone = per_run.undo();
    if (r.exit_code == 0 && !undone) r.exit_code = 1;
    if (r.exit_code) {
      changes.undo();
      if (r.exit_code > 128) {
        err << fmt::format("mmsim: interrupted by {}: stopped the run, restored what it changed\n",
                           ::strsignal(r.exit_code - 128));
      }
      return r.exit_code;
    }
    runs.push_back(std::move(r));
  }
  const bool undone = changes.undo();
  if (const int late = signals.drain()) {
    err << fmt::format("mmsim: interrupted by {}: restored what the run changed\n",
                       ::strsignal(late));
    return 128 + late;
  }
  if (!undone) return 1;

  // The report: the last run in `mmsim run`'s form, with the host's head.
  const RunOutcome& last = runs.back();
  report::RunInfo info;
  info.scenario = &sc;
  info.topology = &*topo;
  info.result = &last.result;
  info.timing = false;
  info.host_run = true;
  info.host_iowait_s = last.iowait_s;

  std::string head;
  auto line = [&](const std::string& s) { head += s + "\n"; };
  line(fmt::format("scenario {} (native, {} run{})", sc.name, o.repeat, o.repeat == 1 ? "" : "s"));
  line(fmt::format("machine  host: {} node{}, {} CPU{} ({} {})", host.nodes,
                   host.nodes == 1 ? "" : "s", host.cpus, host.cpus == 1 ? "" : "s", host.sysname,
                   host.arch));
  line(fmt::format("kernel   {} (this host's)", host.release));
  line(fmt::format("applied  {}",
                   applied.empty() ? "nothing" : fmt::format("{}", fmt::join(applied, ", "))));
  for (const auto& n : not_applied) line("NOT APPLIED " + n);
  line(fmt::format("elapsed  {:.6f} s (from the first task's start to the last task's exit)",
                   last.result.elapsed_s));

  // Over the runs: each metric and changed vmstat counter, mean and range.
  ordered_json runs_json = ordered_json::array();
  std::map<std::string, std::vector<double>> series;
  std::vector<std::string> order;
  auto add = [&](const std::string& name, double v) {
    auto& s = series[name];
    if (s.empty()) order.push_back(name);
    s.push_back(v);
  };
  for (const RunOutcome& r : runs) {
    report::RunInfo ri = info;
    ri.result = &r.result;
    ri.host_iowait_s = r.iowait_s;
    const ordered_json m = report::metrics_json(ri);
    ordered_json vm = ordered_json::object();
    for (const auto& [k, v] : m.items()) add(k, v.get<double>());
    for (const auto& [k, v] : r.result.vmstat) {
      if (v != 0) vm[k] = v;
    }
    runs_json.push_back({{"metrics", m}, {"vmstat", vm}, {"errors", r.result.errors}});
  }
  if (runs.size() > 1) {
    // Each counter any run changed, in order of first appearance: one value
    // per run (0 where that run did not change it).
    std::vector<std::map<std::string, int64_t>> by_name;
    by_name.reserve(runs.size());
    for (const RunOutcome& r : runs)
      by_name.emplace_back(r.result.vmstat.begin(), r.result.vmstat.end());
    for (const RunOutcome& r : runs) {
      for (const auto& [k, v] : r.result.vmstat) {
        if (v == 0 || series.count("vmstat." + k)) continue;
        for (const auto& m : by_name) {
          const auto it = m.find(k);
          add("vmstat." + k, static_cast<double>(it == m.end() ? 0 : it->second));
        }
      }
    }
  }
  ordered_json spread = ordered_json::object();
  if (runs.size() > 1) {
    line("");
    line(fmt::format("over {} runs: mean (min - max); the rest of this summary is the last run",
                     runs.size()));
    for (const auto& name : order) {
      const Stat s = stat_of(series[name]);
      spread[name] = {{"mean", s.mean}, {"min", s.min}, {"max", s.max}};
      line(fmt::format("  {:<30} {:.6g} ({:.6g} - {:.6g})", name, s.mean, s.min, s.max));
    }
  }
  out << head << "\n" << report::summary_body(info, o.all_tasks);
  out.flush();

  if (!o.json.empty() || json) {
    ordered_json j = report::run_json(info);
    ordered_json m = {{"name", "host"},
                      {"sysname", host.sysname},
                      {"release", host.release},
                      {"version", host.version},
                      {"arch", host.arch}};
    for (const auto& [k, v] : j["machine"].items()) m[k] = v;
    m["name"] = "host";
    j["machine"] = m;
    j["kernel"] = {{"version", host.release}, {"applied", applied}, {"not_applied", not_applied}};
    j["native"] = {{"exec", exec},
                   {"repeat", runs.size()},
                   {"wall_s", last.wall_s},
                   {"iowait_scope", "system-wide (/proc/stat iowait delta)"},
                   {"vmstat_scope", "system-wide (/proc/vmstat delta)"},
                   {"errors", last.result.errors},
                   {"runs", runs_json},
                   {"over_runs", spread}};
    if (json) *json = j;
    std::string werr;
    if (!o.json.empty() && !util::write_file_atomically(o.json, j.dump(2) + "\n", &werr)) {
      err << "mmsim: error: " << werr << "\n";
      return kExitHostSetup;
    }
  }
  return 0;
}

}  // namespace mmsim::native
