#include "report/report.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <ostream>

#include "mm/tiers.h"
#include "util/atomic_file.h"

namespace mmsim::report {

namespace {

// Where the run's costs come from: the machine's profile (or the default
// machine's, for one without), and a profile file over it.
std::string cost_profile_text(const scenario::Scenario& sc, const topo::Topology& topo) {
  std::string s = sc.costs_machine == topo.name()
                      ? sc.costs_machine
                      : sc.costs_machine + " (the machine has none of its own)";
  if (!sc.costs_file.empty()) s += ", then " + sc.costs_file;
  return s;
}

using nlohmann::ordered_json;

double secs(double ns) { return ns * 1e-9; }

// Appends key: value to an object whose keys are distinct by construction,
// without ordered_json's linear search for the key (quadratic over many).
void append_distinct(ordered_json& obj, const std::string& key, ordered_json value) {
  if (!obj.is_object()) obj = ordered_json::object();
  using Pairs = std::vector<std::pair<const std::string, ordered_json>>;
  static_cast<Pairs&>(obj.get_ref<ordered_json::object_t&>()).emplace_back(key, std::move(value));
}

struct Totals {
  double user = 0, sys = 0, iowait = 0, sleep = 0, wait = 0;
  uint64_t minflt = 0, majflt = 0;
  std::vector<uint64_t> counters;
  size_t tasks = 0;
};

Totals totals(const RunInfo& info, const std::string* program) {
  Totals t;
  t.counters.assign(info.scenario->workload.counters.size(), 0);
  for (const auto& task : info.result->tasks) {
    if (program && task.program != *program) continue;
    ++t.tasks;
    t.user += task.times.user_ns;
    t.sys += task.times.sys_ns;
    t.iowait += task.times.iowait_ns;
    t.sleep += task.times.sleep_ns;
    t.wait += task.times.wait_ns;
    t.minflt += task.min_flt;
    t.majflt += task.maj_flt;
    for (size_t i = 0; i < task.counters.size(); ++i)
      t.counters[i] = workload::add_sat(t.counters[i], task.counters[i]);
  }
  return t;
}

// The NUMA fields of /proc/<pid>/sched.
ordered_json task_numa_json(const workload::TaskResult& t) {
  ordered_json faults = ordered_json::array();
  for (size_t n = 0; n < t.numa.numa_faults.size(); ++n) {
    const auto& f = t.numa.numa_faults[n];
    faults.push_back({{"node", n},
                      {"task_private", f[0]},
                      {"task_shared", f[1]},
                      {"group_private", f[2]},
                      {"group_shared", f[3]}});
  }
  return {{"numa_scan_seq", t.numa.numa_scan_seq},
          {"numa_pages_migrated", t.numa.numa_pages_migrated},
          {"numa_preferred_nid", t.numa.numa_preferred_nid},
          {"total_numa_faults", t.numa.total_numa_faults},
          {"current_node", t.node},
          {"numa_group_id", t.numa.numa_group_id},
          {"numa_scan_period_ms", t.numa.numa_scan_period_ms},
          {"numa_faults", faults}};
}

}  // namespace

ordered_json switch_json(const SwitchInfo& sw, int64_t value) {
  if (sw.kind == SwitchKind::kBool) return value != 0;
  if (sw.kind == SwitchKind::kChoice || sw.from_word(sw.format(value))) return sw.format(value);
  return value;
}

ordered_json kernel_json(const scenario::KernelConfig& k, size_t nodes) {
  // [kernel] keys at the top, each other scenario table as an object.
  ordered_json j = {{"version", k.version.str()}};
  const numa::NumaConfig effective = k.numa_config(nodes);
  scenario::for_each_switch(k, [&](const SwitchInfo& sw, int64_t value) {
    ordered_json v = switch_json(sw, value);
    // numa_balancing as the kernel reports it once booted: its mode.
    if (sw.key == "numa_balancing") v = effective.mode;
    if (sw.section == "kernel") {
      j[std::string(sw.key)] = v;
    } else {
      j[std::string(sw.section)][std::string(sw.key)] = v;
    }
  });
  return j;
}

ordered_json memcg_files_json(const memcg::MemCgroup& g, memcg::Hierarchy h) {
  const uint64_t page = kPageSize;
  const bool unlimited = g.limit_pages == UINT64_MAX;
  if (h == memcg::Hierarchy::kV2) {
    // cgroup v2: memory.current, memory.max ("max" when unlimited),
    // memory.peak, memory.events, and memory.stat in bytes and events.
    ordered_json stat = {{"anon", g.rss * page},
                         {"file", g.cache * page},
                         {"shmem", g.shmem * page},
                         {"file_mapped", g.mapped_file * page},
                         {"file_dirty", g.dirty * page},
                         {"file_writeback", g.writeback * page},
                         {"pagetables", g.pagetables * page},
                         {"pgfault", g.pgfault},
                         {"pgmajfault", g.pgmajfault}};
    return {{"memory.current", g.usage * page},
            {"memory.max", unlimited ? ordered_json("max") : ordered_json(g.limit_pages * page)},
            {"memory.peak", g.max_usage * page},
            {"memory.events", {{"max", g.failcnt}}},
            {"memory.stat", stat},
            {"move_lock_slowpath", g.move_lock_slowpath},
            {"reclaimed_pages", g.reclaimed}};
  }
  // cgroup v1: the res_counter files and the v1 memory.stat.
  ordered_json stat = {{"cache", g.cache * page}, {"rss", g.rss * page},
                       {"shmem", g.shmem * page}, {"mapped_file", g.mapped_file * page},
                       {"dirty", g.dirty * page}, {"writeback", g.writeback * page},
                       {"pgpgin", g.pgpgin},      {"pgpgout", g.pgpgout},
                       {"pgfault", g.pgfault},    {"pgmajfault", g.pgmajfault}};
  const int64_t limit = unlimited ? -1 : static_cast<int64_t>(g.limit_pages * page);
  return {{"memory.usage_in_bytes", g.usage * page},
          {"memory.max_usage_in_bytes", g.max_usage * page},
          {"memory.limit_in_bytes", limit},
          {"memory.failcnt", g.failcnt},
          {"memory.move_charge_at_immigrate", g.move_charge_at_immigrate},
          {"memory.stat", stat},
          {"move_lock_slowpath", g.move_lock_slowpath},
          {"reclaimed_pages", g.reclaimed}};
}

ordered_json metrics_json(const RunInfo& info) {
  const Totals t = totals(info, nullptr);
  ordered_json m;
  const auto& names = info.scenario->workload.counters;
  for (size_t i = 0; i < names.size(); ++i) append_distinct(m, names[i], t.counters[i]);
  m["elapsed_s"] = info.result->elapsed_s;
  m["user_s"] = secs(t.user);
  m["sys_s"] = secs(t.sys);
  m["iowait_s"] = info.host_run ? info.host_iowait_s : secs(t.iowait);
  // perf bench numa's NUMA-convergence-latency: when the run never
  // converged, the whole run (perf's -s cap), with converged 0.
  if (info.scenario->workload.convergence_program != UINT32_MAX && !info.host_run) {
    const bool c = info.result->converged_s >= 0;
    m["converged_s"] = c ? info.result->converged_s : info.result->elapsed_s;
    m["converged"] = c ? 1 : 0;
  }
  // kswapd's CPU time, all nodes together (a host run cannot tell it).
  if (!info.host_run) {
    const auto& k = info.result->kswapd_s;
    m["kswapd_s"] = std::accumulate(k.begin(), k.end(), 0.0);
    m["khugepaged_s"] = info.result->khugepaged_s;
    // The longest any memory or interconnect was asked for more than it
    // delivers.
    double saturated = 0;
    for (const auto& b : info.result->bandwidth) saturated = std::max(saturated, b.saturated_s);
    m["bandwidth_saturated_s"] = saturated;
  }
  return m;
}

// [noise] as the run used it: every source, or enabled = false alone.
ordered_json noise_json(const sim::NoiseConfig& n) {
  ordered_json j;
  j["enabled"] = n.enabled;
  if (!n.enabled) return j;
  j["tick_phase"] = n.tick_phase;
  j["launch_cpu"] = n.launch_cpu;
  for (const auto& p : sim::noise_params()) {
    if (!sim::noise_param_shown(n, p)) continue;
    j[std::string(p.key)] = n.*(p.field);
  }
  return j;
}

// A duration as a scenario would write it ("3.1us").
std::string duration_text(double ns) {
  if (ns >= 1e6) return fmt::format("{:.4g}ms", ns / 1e6);
  if (ns >= 1e3) return fmt::format("{:.4g}us", ns / 1e3);
  return fmt::format("{:.4g}ns", ns);
}

std::string noise_text(const sim::NoiseConfig& n) {
  if (!n.enabled) return "off (--no-noise): exact lockstep";
  std::string out = fmt::format("tick_phase={} launch_cpu={}", n.tick_phase, n.launch_cpu);
  for (const auto& p : sim::noise_params()) {
    if (!sim::noise_param_shown(n, p)) continue;
    const double v = n.*(p.field);
    out += p.unit == "ns" ? fmt::format(" {}={}", p.key, duration_text(v))
                          : fmt::format(" {}={:g}", p.key, v);
  }
  return out;
}

ordered_json run_json(const RunInfo& info) {
  const scenario::Scenario& sc = *info.scenario;
  const topo::Topology& topo = *info.topology;
  const workload::RunResult& r = *info.result;
  ordered_json j;
  j["scenario"] = {{"name", sc.name}, {"path", sc.path}, {"overrides", sc.overrides}};
  j["seed"] = sc.seed;
  ordered_json nodes = ordered_json::array();
  for (const auto& n : topo.nodes()) {
    nodes.push_back({{"node", n.id.v}, {"cpus", n.cpus.size()}, {"mem_bytes", n.mem_bytes}});
  }
  ordered_json dist = ordered_json::array();
  for (const auto& a : topo.nodes()) {
    ordered_json row = ordered_json::array();
    for (const auto& b : topo.nodes()) row.push_back(topo.distance(a.id, b.id));
    dist.push_back(row);
  }
  j["machine"] = {{"name", topo.name()},
                  {"nodes", topo.nr_nodes()},
                  {"cpus", topo.nr_cpus()},
                  {"sockets", topo.nr_sockets()},
                  {"llc_bytes_per_socket", topo.nr_sockets() ? topo.llc_bytes(0) : 0},
                  {"node_list", nodes},
                  {"distance", dist},
                  {"cost_profile", cost_profile_text(sc, topo)}};
  j["kernel"] = kernel_json(sc.kernel, topo.nr_nodes());
  j["noise"] = noise_json(sc.noise);
  j["metrics"] = metrics_json(info);
  ordered_json vm;
  for (const auto& [name, v] : r.vmstat) vm[name] = v;
  j["vmstat"] = vm;
  ordered_json meta = ordered_json::object();
  for (const auto& m : r.metadata) {
    meta[m.array] = {
        {"hits", m.hits}, {"misses", m.misses}, {"streamed", m.streamed}, {"miss_ns", m.miss_ns}};
  }
  j["metadata_lines"] = meta;
  ordered_json bw = ordered_json::array();
  for (const auto& b : r.bandwidth)
    bw.push_back({{"resource", b.resource}, {"peak", b.peak}, {"saturated_s", b.saturated_s}});
  j["bandwidth_saturated"] = bw;
  ordered_json tasks = ordered_json::array();
  for (const auto& t : r.tasks) {
    ordered_json counters;
    for (size_t i = 0; i < t.counters.size(); ++i)
      append_distinct(counters, sc.workload.counters[i], t.counters[i]);
    // A host run does not know these (getrusage has no CPU, node or wait times).
    auto sim_only = [&](const ordered_json& v) {
      return info.host_run ? ordered_json(nullptr) : v;
    };
    tasks.push_back(
        {{"pid", t.pid},
         {"tgid", t.tgid},
         {"ppid", t.ppid},
         {"comm", t.comm},
         {"cpu", sim_only(t.cpu)},
         // A host run's task reads its node at its end (getcpu).
         {"node", t.node_known ? ordered_json(t.node) : ordered_json(nullptr)},
         {"local_pct", t.local_pct >= 0 ? ordered_json(t.local_pct) : ordered_json(nullptr)},
         {"start_s", t.start_s},
         {"exit_s", t.exit_s},
         {"user_s", secs(t.times.user_ns)},
         {"sys_s", secs(t.times.sys_ns)},
         {"iowait_s", sim_only(secs(t.times.iowait_ns))},
         {"sleep_s", sim_only(secs(t.times.sleep_ns))},
         {"wait_s", sim_only(secs(t.times.wait_ns))},
         {"minflt", t.min_flt},
         {"majflt", t.maj_flt},
         {"nvcsw", t.nvcsw},
         {"nivcsw", t.nivcsw},
         {"counters", counters},
         {"numa", info.host_run ? ordered_json(nullptr) : task_numa_json(t)}});
  }
  j["tasks"] = tasks;
  if (!r.memcg.empty()) {
    const auto& mc = sc.kernel.memcg;
    const uint32_t pc_bytes = sc.kernel.page_cgroup_bytes();
    ordered_json groups;
    for (const auto& g : r.memcg) groups[g.path] = memcg_files_json(g, mc.hierarchy);
    if (info.host_run) {
      // Counters of the model with no file on a real kernel.
      for (auto& g : groups) g["move_lock_slowpath"] = g["reclaimed_pages"] = nullptr;
      j["memcg"] = {{"hierarchy", mc.hierarchy == memcg::Hierarchy::kV2 ? "v2" : "v1"},
                    {"cgroups", groups}};
    } else {
      j["memcg"] = {{"stat_protocol", memcg::protocol_name(mc.stat_protocol)},
                    {"hierarchy", mc.hierarchy == memcg::Hierarchy::kV2 ? "v2" : "v1"},
                    {"page_cgroup_bytes_per_page", pc_bytes},
                    {"page_cgroup_bytes_total", pc_bytes * (topo.total_mem_bytes() / kPageSize)},
                    {"cgroups", groups}};
    }
  }
  if (!r.timeline.empty()) {
    ordered_json tl = ordered_json::array();
    for (const auto& smp : r.timeline) {
      ordered_json row = {{"t_s", smp.t_s}};
      for (size_t i = 0; i < workload::kTimelineCounters.size(); ++i)
        row[std::string(mm::kVmNames[static_cast<size_t>(workload::kTimelineCounters[i])])] =
            smp.vm[i];
      row["tasks_in_d"] = smp.tasks_in_d;
      row["node_used_pages"] = smp.node_used;
      if (!r.memcg.empty()) {
        row["memcg_cache"] = smp.memcg[0];
        row["memcg_mapped_file"] = smp.memcg[1];
        row["memcg_pgpgin"] = smp.memcg[2];
      }
      tl.push_back(row);
    }
    j["timeline"] = tl;
  }
  if (info.host_run) return j;
  ordered_json sim = {{"events", r.events},
                      {"page_events", r.page_events},
                      {"time_limit_hit", r.time_limit_hit},
                      {"errors", r.errors},
                      {"check_failures", r.check_failures}};
  if (info.timing) {
    sim["wall_s"] = info.wall_s;
    sim["page_events_per_s"] =
        info.wall_s > 0 ? static_cast<double>(r.page_events) / info.wall_s : 0.0;
    // The process's peak resident set so far (getrusage ru_maxrss, KiB).
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    sim["peak_rss_bytes"] = static_cast<uint64_t>(ru.ru_maxrss) * 1024;
  }
  j["sim"] = sim;
  return j;
}

std::string summary_text(const RunInfo& info, bool all_tasks) {
  const scenario::Scenario& sc = *info.scenario;
  const topo::Topology& topo = *info.topology;
  const workload::RunResult& r = *info.result;
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  line(fmt::format("scenario {} (seed {})", sc.name, sc.seed));
  line(fmt::format("machine  {}: {} nodes, {} CPUs; costs: {}", topo.name(), topo.nr_nodes(),
                   topo.nr_cpus(),
                   info.host_run ? "none (a run on this host)" : cost_profile_text(sc, topo)));
  // The memory tiers, when a node is below the top one
  // (/sys/devices/virtual/memory_tiering).
  const mm::MemoryTiers tiers(topo, sc.kernel.mm.memory_tiers);
  if (tiers.tiered()) {
    std::string t = tiers.describe();
    std::replace(t.begin(), t.end(), '\n', ' ');
    while (!t.empty() && t.back() == ' ') t.pop_back();
    line(fmt::format("tiers    {}", t));
  }
  // THP asked for on a machine too small for it (hugepage_init turns it off).
  if (sc.kernel.mm.thp_enabled != mm::ThpEnabled::kNever &&
      topo.total_mem_bytes() < mm::kThpMinMemBytes)
    line(
        "thp      off: the machine has less than 512 MiB (hugepage_init), whatever "
        "transparent_hugepage says");
  const numa::NumaConfig nc = sc.kernel.numa_config(topo.nr_nodes());
  // Every switch, from the tables, one line per scenario table.
  std::map<std::string, std::string> by_section;
  scenario::for_each_switch(sc.kernel, [&](const SwitchInfo& sw, int64_t value) {
    if (sw.section == "numa" && !nc.enabled) return;
    if (sw.section == "memcg" && !sc.kernel.memcg.enabled() && sw.key != "stat_protocol") return;
    const std::string v = sw.key == "numa_balancing" ? std::to_string(nc.mode) : sw.format(value);
    by_section[std::string(sw.section)].append(fmt::format(" {}={}", sw.key, v));
  });
  line(fmt::format("kernel   {}:{}", sc.kernel.version.str(), by_section["kernel"]));
  if (nc.enabled) line(fmt::format("numa    {}", by_section["numa"]));
  line(fmt::format("memcg   {}", by_section["memcg"]));
  line(fmt::format("noise    {}", noise_text(sc.noise)));
  // Host timings are not part of the summary, so that it is the same for the
  // same scenario and seed on any host (see timing_text).
  line(fmt::format("elapsed  {:.6f} s simulated, {} events, {} page events", r.elapsed_s, r.events,
                   r.page_events));
  return out + summary_body(info, all_tasks);
}

std::string summary_body(const RunInfo& info, bool all_tasks) {
  const scenario::Scenario& sc = *info.scenario;
  const topo::Topology& topo = *info.topology;
  const workload::RunResult& r = *info.result;
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  const numa::NumaConfig nc = sc.kernel.numa_config(topo.nr_nodes());
  if (r.time_limit_hit) line("WARNING: the time limit ended the run with tasks still alive");

  const Totals all = totals(info, nullptr);
  line("");
  line("metrics");
  for (size_t i = 0; i < sc.workload.counters.size(); ++i)
    line(fmt::format("  {:<24} {}", sc.workload.counters[i], all.counters[i]));
  line(fmt::format("  {:<24} {:.6f}", "elapsed_s", r.elapsed_s));
  line(fmt::format("  {:<24} {:.6f}", "user_s", secs(all.user)));
  line(fmt::format("  {:<24} {:.6f}", "sys_s", secs(all.sys)));
  if (info.host_run) {
    line(fmt::format("  {:<24} {:.6f}  (system-wide, /proc/stat)", "iowait_s", info.host_iowait_s));
  } else {
    line(fmt::format("  {:<24} {:.6f}", "iowait_s", secs(all.iowait)));
  }
  if (sc.workload.convergence_program != UINT32_MAX && !info.host_run) {
    const std::string& prog = sc.workload.programs[sc.workload.convergence_program].name;
    line(r.converged_s >= 0
             ? fmt::format("  {:<24} {:.6f}  (each process's {} tasks first all on one "
                           "node; the run ended there, as perf bench numa -m)",
                           "converged_s", r.converged_s, prog)
             : fmt::format("  {:<24} {:.6f}  (never: each process's {} tasks were never all "
                           "on one node; the whole run, as perf bench numa reports)",
                           "converged_s", r.elapsed_s, prog));
  }
  if (std::any_of(r.kswapd_s.begin(), r.kswapd_s.end(), [](double s) { return s > 0; })) {
    std::string per_node;
    for (double s : r.kswapd_s) per_node += fmt::format(" {:.6f}", s);
    line(fmt::format("  {:<24}{}  (CPU time by node)", "kswapd_s", per_node));
  }
  if (r.khugepaged_s > 0) {
    line(fmt::format("  {:<24} {:.6f}  (CPU time; pages_collapsed {}, full_scans {})",
                     "khugepaged_s", r.khugepaged_s, r.khugepaged_pages_collapsed,
                     r.khugepaged_full_scans));
  }
  if (!r.bandwidth.empty()) {
    line("");
    line("memory bandwidth saturated (demand / capacity at its peak, time above 1)");
    for (const auto& b : r.bandwidth)
      line(fmt::format("  {:<24} {:>6.2f}x {:>12.6f} s", b.resource, b.peak, b.saturated_s));
  }

  line("");
  const std::string counters_hdr = [&] {
    std::string h;
    for (const auto& c : sc.workload.counters) h += fmt::format(" {:>12}", c);
    return h;
  }();
  if (all_tasks || r.tasks.size() <= 16) {
    line(fmt::format("tasks ({})", r.tasks.size()));
    line(fmt::format("  {:>6} {:>6} {:<12} {:>4} {:>4} {:>10} {:>10} {:>10} {:>9} {:>7}{}", "pid",
                     "ppid", "comm", "cpu", "node", "user_s", "sys_s", "iowait_s", "minflt",
                     "majflt", counters_hdr));
    for (const auto& t : r.tasks) {
      std::string cs;
      for (uint64_t c : t.counters) cs += fmt::format(" {:>12}", c);
      // A host run has no CPU, node or iowait of its tasks.
      const bool h = info.host_run;
      line(fmt::format(
          "  {:>6} {:>6} {:<12} {:>4} {:>4} {:>10.4f} {:>10.4f} {:>10} {:>9} {:>7}{}", t.pid,
          t.ppid, t.comm.substr(0, 12), h ? "-" : std::to_string(t.cpu),
          h ? "-" : std::to_string(t.node), secs(t.times.user_ns), secs(t.times.sys_ns),
          h ? "-" : fmt::format("{:.4f}", secs(t.times.iowait_ns)), t.min_flt, t.maj_flt, cs));
    }
  } else {
    line(fmt::format("tasks ({}), by program (--tasks lists each)", r.tasks.size()));
    line(fmt::format("  {:<12} {:>6} {:>12} {:>12} {:>12} {:>10} {:>7}{}", "program", "tasks",
                     "user_s", "sys_s", "iowait_s", "minflt", "majflt", counters_hdr));
    std::map<std::string, int> seen;
    for (const auto& t : r.tasks) {
      if (seen[t.program]++) continue;
      const Totals pt = totals(info, &t.program);
      std::string cs;
      for (uint64_t c : pt.counters) cs += fmt::format(" {:>12}", c);
      line(fmt::format("  {:<12} {:>6} {:>12.4f} {:>12.4f} {:>12} {:>10} {:>7}{}",
                       t.program.substr(0, 12), pt.tasks, secs(pt.user), secs(pt.sys),
                       info.host_run ? "-" : fmt::format("{:.4f}", secs(pt.iowait)), pt.minflt,
                       pt.majflt, cs));
    }
  }
  if (nc.enabled && !info.host_run && (all_tasks || r.tasks.size() <= 16)) {
    line("");
    line("numa per task (/proc/<pid>/sched)");
    line(fmt::format("  {:>6} {:>8} {:>9} {:>10} {:>12} {:>13} {:>9} {}", "pid", "scan_seq",
                     "preferred", "cur_node", "total_faults", "pages_migrated", "group",
                     "period_ms"));
    for (const auto& t : r.tasks) {
      line(fmt::format("  {:>6} {:>8} {:>9} {:>10} {:>12} {:>13} {:>9} {}", t.pid,
                       t.numa.numa_scan_seq, t.numa.numa_preferred_nid, t.node,
                       t.numa.total_numa_faults, t.numa.numa_pages_migrated, t.numa.numa_group_id,
                       t.numa.numa_scan_period_ms));
    }
  }
  if (!r.timeline.empty()) {
    line("");
    line(
        "timeline (vmstat counters: change per interval, those that never change omitted; in_D "
        "and memcg_*: at the sample)");
    // The counters that move, each in a column as wide as its name.
    std::vector<size_t> cols;
    for (size_t i = 0; i < workload::kTimelineCounters.size(); ++i) {
      if (std::any_of(r.timeline.begin(), r.timeline.end(),
                      [&](const workload::Sample& smp) { return smp.vm[i] != 0; }))
        cols.push_back(i);
    }
    auto name = [](size_t i) {
      return mm::kVmNames[static_cast<size_t>(workload::kTimelineCounters[i])];
    };
    std::string hdr = fmt::format("  {:>9}", "t_s");
    for (size_t i : cols)
      hdr += fmt::format(" {:>{}}", name(i), std::max<size_t>(12, name(i).size()));
    hdr += fmt::format(" {:>6}", "in_D");
    if (!r.memcg.empty())
      hdr += fmt::format(" {:>12} {:>12} {:>12}", "memcg_cache", "memcg_mapped", "memcg_pgpgin");
    line(hdr);
    std::array<int64_t, workload::kTimelineCounters.size()> prev{};
    for (const auto& smp : r.timeline) {
      std::string row = fmt::format("  {:>9.3f}", smp.t_s);
      for (size_t i : cols)
        row += fmt::format(" {:>{}}", smp.vm[i] - prev[i], std::max<size_t>(12, name(i).size()));
      prev = smp.vm;
      row += fmt::format(" {:>6}", smp.tasks_in_d);
      if (!r.memcg.empty())
        row += fmt::format(" {:>12} {:>12} {:>12}", smp.memcg[0], smp.memcg[1], smp.memcg[2]);
      line(row);
    }
  }
  line("");
  line(info.host_run ? "vmstat (change over the run, system-wide; unchanged counters omitted)"
                     : "vmstat (change over the run; unchanged counters omitted)");
  for (const auto& [name, v] : r.vmstat) {
    if (v != 0) line(fmt::format("  {:<30} {}", name, v));
  }
  if (std::any_of(r.metadata.begin(), r.metadata.end(),
                  [](const auto& m) { return m.hits + m.misses > 0; })) {
    line("");
    line(
        "kernel metadata lines (cache model): hits in the line last touched, misses (of which "
        "streamed: the next line, prefetched)");
    line(fmt::format("  {:<12} {:>14} {:>14} {:>14} {:>12}", "array", "hits", "misses", "streamed",
                     "ns per miss"));
    for (const auto& m : r.metadata) {
      if (m.hits + m.misses == 0) continue;
      line(fmt::format("  {:<12} {:>14} {:>14} {:>14} {:>12.2f}", m.array, m.hits, m.misses,
                       m.streamed, m.misses ? m.miss_ns / static_cast<double>(m.misses) : 0.0));
    }
  }
  if (!r.memcg.empty()) {
    const auto& mc = sc.kernel.memcg;
    const uint32_t pc_bytes = sc.kernel.page_cgroup_bytes();
    line("");
    if (info.host_run) {
      line(fmt::format("memcg (this host's cgroup {}, read after the run)",
                       mc.hierarchy == memcg::Hierarchy::kV2 ? "v2" : "v1"));
    } else {
      line(fmt::format("memcg ({}, page_cgroup {} B per page = {} MiB on this machine)",
                       memcg::protocol_name(mc.stat_protocol), pc_bytes,
                       pc_bytes * (topo.total_mem_bytes() / kPageSize) >> 20));
    }
    if (mc.hierarchy == memcg::Hierarchy::kV2) {
      // cgroup v2 file names: memory.current, memory.max, memory.events max,
      // memory.stat anon, file, file_mapped.
      line(fmt::format("  {:<12} {:>12} {:>12} {:>8} {:>12} {:>12} {:>12} {:>10} {:>9}", "cgroup",
                       "current_kB", "max_kB", "max_evt", "file_kB", "anon_kB", "fmapped_kB",
                       "pgfault", "movelock"));
      for (const auto& g : r.memcg) {
        const std::string limit =
            g.limit_pages == UINT64_MAX ? "max" : std::to_string(g.limit_pages * 4);
        line(fmt::format("  {:<12} {:>12} {:>12} {:>8} {:>12} {:>12} {:>12} {:>10} {:>9}", g.path,
                         g.usage * 4, limit, g.failcnt, g.cache * 4, g.rss * 4, g.mapped_file * 4,
                         g.pgfault, g.move_lock_slowpath));
      }
    } else {
      line(fmt::format(
          "  {:<12} {:>12} {:>12} {:>8} {:>12} {:>12} {:>12} {:>10} {:>10} {:>10} {:>9}", "cgroup",
          "usage_kB", "limit_kB", "failcnt", "cache_kB", "rss_kB", "mapped_kB", "pgpgin", "pgpgout",
          "pgfault", "movelock"));
      for (const auto& g : r.memcg) {
        const std::string limit =
            g.limit_pages == UINT64_MAX ? "max" : std::to_string(g.limit_pages * 4);
        line(fmt::format(
            "  {:<12} {:>12} {:>12} {:>8} {:>12} {:>12} {:>12} {:>10} {:>10} {:>10} {:>9}", g.path,
            g.usage * 4, limit, g.failcnt, g.cache * 4, g.rss * 4, g.mapped_file * 4, g.pgpgin,
            g.pgpgout, g.pgfault, g.move_lock_slowpath));
      }
    }
  }
  if (!r.errors.empty()) {
    line("");
    line(fmt::format("errors ({})", r.errors.size()));
    for (size_t i = 0; i < r.errors.size() && i < 20; ++i) line("  " + r.errors[i]);
  }
  if (!r.check_failures.empty()) {
    line("");
    line(fmt::format("INVARIANT CHECK FAILED ({})", r.check_failures.size()));
    for (const auto& e : r.check_failures) line("  " + e);
  }
  return out;
}

std::string timing_text(const RunInfo& info) {
  const auto& r = *info.result;
  return fmt::format("mmsim: simulated in {:.3f} s wall, {:.3g} page events/s\n", info.wall_s,
                     info.wall_s > 0 ? static_cast<double>(r.page_events) / info.wall_s : 0.0);
}

bool write_atomically(const std::string& path, const std::string& text, std::ostream& err) {
  std::string why;
  if (util::write_file_atomically(path, text, &why)) return true;
  err << "mmsim: error: " << why << "\n";
  return false;
}

}  // namespace mmsim::report
