#include "validate/validate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <set>
#include <sstream>
#include <tuple>

#include "cost/cache_model.h"
#include "memcg/memcg.h"
#include "native/host.h"
#include "native/scenario_native.h"
#include "report/compare.h"
#include "report/report.h"
#include "scenario/simulation.h"
#include "sim/noise.h"
#include "util/atomic_file.h"
#include "util/stats.h"
#include "validate/guest.h"
#include "validate/initramfs.h"
#include "validate/kernels.h"

namespace mmsim::validate {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

double Series::mean() const {
  if (values.empty()) return NAN;
  double s = 0;
  for (const double v : values) s += v;
  return s / static_cast<double>(values.size());
}
double Series::min() const {
  return values.empty() ? NAN : *std::min_element(values.begin(), values.end());
}
double Series::max() const {
  return values.empty() ? NAN : *std::max_element(values.begin(), values.end());
}

std::map<std::string, double> flat_counters(const ordered_json& j) {
  std::map<std::string, double> out;
  auto put = [&](const std::string& k, const ordered_json& v) {
    if (v.is_number()) out[k] = v.get<double>();
  };
  if (j.contains("vmstat")) {
    for (const auto& [k, v] : j["vmstat"].items()) put(k, v);
    // Zones are the kernel's (a small guest has only DMA32); the simulation
    // has one: allocations are compared over all zones.
    double pgalloc = 0;
    bool any = false;
    for (const auto& [k, v] : j["vmstat"].items()) {
      if (k.rfind("pgalloc_", 0) == 0 && v.is_number()) {
        pgalloc += v.get<double>();
        any = true;
      }
    }
    if (any) out["pgalloc"] = pgalloc;
  }
  if (j.contains("metrics")) {
    for (const auto& [k, v] : j["metrics"].items()) put(fmt::format("metric:{}", k), v);
  }
  if (j.contains("memcg") && j["memcg"].contains("cgroups")) {
    for (const auto& [g, files] : j["memcg"]["cgroups"].items()) {
      for (const auto& [k, v] : files.items()) {
        // The simulation's own diagnostics are no kernel file.
        if (k == "move_lock_slowpath" || k == "reclaimed_pages") continue;
        if (k == "memory.stat") {
          for (const auto& [s, x] : v.items()) put(fmt::format("memcg:{}:{}", g, s), x);
        } else {
          put(fmt::format("memcg:{}:{}", g, k), v);
        }
      }
    }
  }
  if (j.contains("tasks") && j["tasks"].is_array()) {
    for (const char* k : {"minflt", "majflt"}) {
      double sum = 0;
      for (const auto& t : j["tasks"]) {
        if (t.contains(k) && t[k].is_number()) sum += t[k].get<double>();
      }
      out[fmt::format("tasks:{}", k)] = sum;
    }
    // Where each program's tasks ended: the mean share of its last access
    // range on its node, and how many nodes each process's tasks of the
    // program ended on (by comm: the program's name, as both worlds set it).
    std::map<std::string, std::pair<double, int>> local;              // comm: (sum, n)
    std::map<std::string, std::map<double, std::set<double>>> nodes;  // comm: tgid: nodes
    for (const auto& t : j["tasks"]) {
      if (!t.contains("comm") || !t["comm"].is_string()) continue;
      const std::string comm = t["comm"].get<std::string>();
      if (t.contains("local_pct") && t["local_pct"].is_number()) {
        auto& [sum, n] = local[comm];
        sum += t["local_pct"].get<double>();
        ++n;
      }
      if (t.contains("node") && t["node"].is_number() && t.contains("tgid") &&
          t["tgid"].is_number())
        nodes[comm][t["tgid"].get<double>()].insert(t["node"].get<double>());
    }
    for (const auto& [comm, sn] : local)
      out[fmt::format("tasks:{}:local_pct", comm)] = sn.first / sn.second;
    for (const auto& [comm, by_tgid] : nodes) {
      double sum = 0;
      for (const auto& [tgid, set] : by_tgid) sum += static_cast<double>(set.size());
      out[fmt::format("tasks:{}:nodes_per_process", comm)] =
          sum / static_cast<double>(by_tgid.size());
    }
  }
  return out;
}

void as_run_cgroup(ordered_json& report) {
  if (!report.contains("memcg") || !report["memcg"].contains("cgroups")) return;
  ordered_json& groups = report["memcg"]["cgroups"];
  if (!groups.contains("/")) return;
  std::vector<std::string> paths;
  for (const auto& [g, files] : groups.items()) {
    if (g != "/") paths.push_back(g);
  }
  // Top level: no other cgroup's path is a directory above it.
  auto top = [&](const std::string& p) {
    return std::none_of(paths.begin(), paths.end(),
                        [&](const std::string& o) { return memcg::path_is_below(p, o); });
  };
  ordered_json& root = groups["/"];
  auto add = [](ordered_json& sum, const ordered_json& v) {
    if (v.is_number()) sum = sum.get<double>() + v.get<double>();
  };
  auto zero = [](ordered_json& obj) {
    for (auto& [k, v] : obj.items()) {
      if (v.is_number()) v = 0;
    }
  };
  root["memory.current"] = 0;
  if (root.contains("memory.stat")) zero(root["memory.stat"]);
  if (root.contains("memory.events")) zero(root["memory.events"]);
  root.erase("memory.peak");
  for (const std::string& p : paths) {
    if (!top(p)) continue;
    const ordered_json& g = groups[p];
    if (g.contains("memory.current")) add(root["memory.current"], g["memory.current"]);
    for (const char* file : {"memory.stat", "memory.events"}) {
      if (!root.contains(file) || !g.contains(file)) continue;
      for (auto& [k, v] : root[file].items()) {
        if (g[file].contains(k)) add(v, g[file][k]);
      }
    }
  }
}

bool is_gauge(const std::string& c) {
  // The run's memory cgroups are made for it: their files are read after the
  // run in both worlds, gauges and counts alike. vmstat's nr_* are the
  // kernel's change over the run but the simulation's end value.
  // A few nr_* are events all the same.
  static constexpr std::string_view kEvents[] = {"nr_dirtied", "nr_written",
                                                 "nr_vmscan_immediate_reclaim"};
  if (std::find(std::begin(kEvents), std::end(kEvents), c) != std::end(kEvents)) return false;
  return c.rfind("nr_", 0) == 0 && c.rfind("nr_tlb_", 0) != 0;
}

std::string Tolerance::text() const {
  return relative ? fmt::format("{:g}%", value * 100) : fmt::format("±{:g}", value);
}

Verdict judge(const std::string& counter, const Series& real, const Series& sim, bool modelled,
              const std::optional<Tolerance>& tol) {
  Verdict v{counter, real, sim, tol};
  v.modelled = modelled;
  const double r = real.mean(), s = sim.mean();
  v.error = r != 0 ? (s - r) / r : (s == 0 ? 0.0 : INFINITY);
  if (!modelled) {
    v.pass = !tol;
    v.note = "not modelled";
    return v;
  }
  if (r != 0) {
    const report::Change c =
        report::change_vs(report::sample_of(real.values), report::sample_of(sim.values));
    if (c.ci) v.error_ci = std::pair(c.ci->first / 100, c.ci->second / 100);
  }
  if (!tol) return v;
  v.pass = tol->relative ? std::fabs(v.error) <= tol->value + 1e-12
                         : std::fabs(s - r) <= tol->value + 1e-9;
  if (!v.pass && v.error_ci) {
    // The tolerance as a band of relative errors.
    const double band = tol->relative ? tol->value : tol->value / std::fabs(r);
    v.fail_beyond_spread = v.error_ci->first > band || v.error_ci->second < -band;
  }
  return v;
}

namespace {

// One line of an ftrace buffer:
// "  thread-165  [004] .....  9.800349: change_prot_numa_ret: (...) updated=3"
struct TraceLine {
  std::string task;  // comm-pid
  double at_ns = 0;
  std::string_view event;  // "change_prot_numa_ret"
  std::string_view rest;   // what follows the event's name
};

std::optional<TraceLine> parse_trace_line(std::string_view line) {
  if (line.empty() || line[0] == '#') return std::nullopt;
  const size_t cpu = line.find(" [");
  if (cpu == std::string_view::npos) return std::nullopt;
  const size_t colon = line.find(": ", cpu);
  if (colon == std::string_view::npos) return std::nullopt;
  const size_t ts = line.rfind(' ', colon);
  const size_t name_end = line.find(':', colon + 2);
  if (ts == std::string_view::npos || ts < cpu || name_end == std::string_view::npos)
    return std::nullopt;
  TraceLine t;
  t.task = std::string(line.substr(0, cpu));
  t.task.erase(0, t.task.find_first_not_of(' '));
  t.at_ns = std::strtod(std::string(line.substr(ts + 1, colon - ts - 1)).c_str(), nullptr) * 1e9;
  t.event = line.substr(colon + 2, name_end - colon - 2);
  t.rest = line.substr(name_end + 1);
  return t;
}

// The number after "key=" in an event's fields; -1 if absent.
long trace_field(std::string_view rest, std::string_view key) {
  for (size_t at = rest.find(key); at != std::string_view::npos; at = rest.find(key, at + 1)) {
    const bool starts = at == 0 || rest[at - 1] == ' ';
    if (starts && at + key.size() < rest.size() && rest[at + key.size()] == '=')
      return std::strtol(std::string(rest.substr(at + key.size() + 1, 24)).c_str(), nullptr, 10);
  }
  return -1;
}

}  // namespace

std::vector<double> scan_flush_ns(const std::string& trace) {
  std::vector<double> out;
  std::map<std::string, double> entered;  // by task-pid: its open call's time
  std::istringstream in(trace);
  for (std::string line; std::getline(in, line);) {
    const auto t = parse_trace_line(line);
    if (!t) continue;
    if (t->event == "change_prot_numa_ret") {
      const auto it = entered.find(t->task);
      const long updated = trace_field(t->rest, "updated");
      if (it == entered.end() || updated < 0) continue;
      if (updated >= 1 && updated <= 16 && t->at_ns >= it->second)
        out.push_back(t->at_ns - it->second);
      entered.erase(it);
    } else if (t->event == "change_prot_numa") {
      entered[t->task] = t->at_ns;
    }
  }
  return out;
}

MigrationTimes misplaced_migration_ns(const std::string& trace) {
  MigrationTimes out;
  struct Open {
    double start = -1, unmap = -1, copy_start = -1, copied = 0;
    double flush_start = -1, flushed_isolating = 0, flushed_moving = 0;
    int copies = 0;
    bool switched = false;  // its task was off its CPU meanwhile
  };
  std::map<std::string, Open> open;  // by task-pid
  std::istringstream in(trace);
  for (std::string line; std::getline(in, line);) {
    const auto t = parse_trace_line(line);
    if (!t) continue;
    if (t->event == "migrate_misplaced") {
      open[t->task] = Open{.start = t->at_ns};
      continue;
    }
    const auto it = open.find(t->task);
    if (it == open.end()) continue;
    Open& o = it->second;
    if (t->event == "sched_switch") {
      o.switched = true;
    } else if (t->event == "tlb_flush") {
      o.flush_start = t->at_ns;
    } else if (t->event == "tlb_flush_ret") {
      double& flushed = o.unmap < 0 ? o.flushed_isolating : o.flushed_moving;
      if (o.flush_start >= 0) flushed += t->at_ns - o.flush_start;
      o.flush_start = -1;
    } else if (t->event == "migrate_unmap") {
      if (o.unmap < 0) o.unmap = t->at_ns;
    } else if (t->event == "migrate_copy") {
      o.copy_start = t->at_ns;
    } else if (t->event == "migrate_copy_ret") {
      if (o.copy_start >= 0) {
        o.copied += t->at_ns - o.copy_start;
        ++o.copies;
      }
      o.copy_start = -1;
    } else if (t->event == "mm_migrate_pages") {
      const bool base_page = t->rest.find("reason=numa_misplaced") != std::string_view::npos &&
                             trace_field(t->rest, "nr_succeeded") == 1 &&
                             trace_field(t->rest, "nr_failed") == 0 &&
                             trace_field(t->rest, "nr_thp_succeeded") == 0 &&
                             trace_field(t->rest, "nr_thp_failed") == 0;
      if (base_page && !o.switched && o.unmap >= o.start && t->at_ns >= o.unmap && o.copies == 1 &&
          o.flush_start < 0) {
        out.isolate.push_back(std::max(0.0, o.unmap - o.start - o.flushed_isolating));
        out.moved.push_back(std::max(0.0, t->at_ns - o.unmap - o.flushed_moving));
        out.copy.push_back(o.copied);
      }
      open.erase(it);
    }
  }
  return out;
}

std::vector<double> huge_zero_ns(const std::string& trace) {
  std::vector<double> out;
  struct Open {
    double start = 0;
    bool switched = false;
  };
  std::map<std::string, Open> open;  // by task-pid
  std::istringstream in(trace);
  for (std::string line; std::getline(in, line);) {
    const auto t = parse_trace_line(line);
    if (!t) continue;
    if (t->event == "zero_huge") {
      open[t->task] = Open{t->at_ns, false};
      continue;
    }
    const auto it = open.find(t->task);
    if (it == open.end()) continue;
    if (t->event == "sched_switch") {
      it->second.switched = true;
    } else if (t->event == "zero_huge_ret") {
      if (!it->second.switched) out.push_back(t->at_ns - it->second.start);
      open.erase(it);
    }
  }
  return out;
}

std::vector<std::string> parse_noise_reports(const std::string& text, std::string_view tag) {
  std::vector<std::string> out;
  std::istringstream in(text);
  bool inside = false;
  const std::string begin = fmt::format("{} ", tag), end = fmt::format("{}-END ", tag);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.starts_with(begin)) {
      out.emplace_back();
      inside = true;
    } else if (line.starts_with(end)) {
      inside = false;
    } else if (inside) {
      out.back() += line + "\n";
    }
  }
  return out;
}

int peak_busy_tasks(const std::vector<std::pair<double, double>>& busy_lives) {
  // +1 at each start, -1 at each exit; an exit before a start at the same time.
  std::vector<std::pair<double, int>> steps;
  for (const auto& [start, exit] : busy_lives) {
    steps.emplace_back(start, 1);
    steps.emplace_back(exit, -1);
  }
  std::sort(steps.begin(), steps.end());
  int now = 0, peak = 0;
  for (const auto& [at, d] : steps) peak = std::max(peak, now += d);
  return peak;
}

namespace {

// Whether one of `sets` ("key.path=value") sets `key` (given with its "=").
bool sets_key(const std::vector<std::string>& sets, std::string_view key) {
  return std::any_of(sets.begin(), sets.end(),
                     [&](const std::string& s) { return s.starts_with(key); });
}

}  // namespace

namespace {

// The median of a field over the reports that measured it (the section's
// sample count `count`, if given, above 0), in the section at a JSON
// pointer ("/fwq/long"); nullopt if none did.
std::optional<double> probes_median(const std::vector<ordered_json>& reports, const char* section,
                                    const char* field, const char* count) {
  const ordered_json::json_pointer at(section);
  std::vector<double> v;
  for (const auto& r : reports) {
    const ordered_json* s = r.contains(at) ? &r.at(at) : nullptr;
    if (!s || !s->is_object() || !s->contains(field) || !(*s)[field].is_number()) continue;
    if (count && s->value(count, 0.0) <= 0) continue;
    const double x = (*s)[field].get<double>();
    if (std::isfinite(x)) v.push_back(x);
  }
  if (v.empty()) return std::nullopt;
  return util::percentile(std::move(v), 0.5);
}

}  // namespace

namespace {

// The reports' interruptions by length, pooled: bucket start -> count, sum,
// sum of squares; and their seconds of work.
struct Pooled {
  std::map<double, std::array<double, 3>> buckets;
  double work_s = 0;
};

Pooled pool_lengths(const std::vector<ordered_json>& reports) {
  Pooled p;
  for (const auto& r : reports) {
    const ordered_json* f = r.contains("fwq") ? &r["fwq"] : nullptr;
    if (!f || !f->is_object() || !f->contains("by_length") || !(*f)["by_length"].is_array())
      continue;
    const double work = f->value("work_ns", 0.0) * 1e-9;
    if (!(work > 0)) continue;
    p.work_s += work;
    for (const auto& b : (*f)["by_length"]) {
      auto& sums = p.buckets[b.value("from_ns", 0.0)];
      sums[0] += b.value("count", 0.0);
      sums[1] += b.value("sum_ns", 0.0);
      sums[2] += b.value("sum_sq_ns2", 0.0);
    }
  }
  return p;
}

// Mean and cv from a count and the sums of lengths and their squares.
std::pair<double, double> mean_cv(double n, double sum, double sum_sq) {
  if (!(n > 0) || !(sum > 0)) return {0, 0};
  const double mean = sum / n;
  return {mean, std::sqrt(std::max(0.0, sum_sq / n - mean * mean)) / mean};
}

}  // namespace

std::vector<LengthBucket> lengths_beyond(const std::vector<ordered_json>& busy,
                                         const std::vector<ordered_json>& alone) {
  const Pooled k = pool_lengths(busy), one = pool_lengths(alone);
  std::vector<LengthBucket> out;
  if (!(k.work_s > 0)) return out;
  for (const auto& [from, sums] : k.buckets) {
    if (!(sums[0] > 0)) continue;
    double lone = 0;
    if (one.work_s > 0) {
      const auto it = one.buckets.find(from);
      if (it != one.buckets.end()) lone = it->second[0] / one.work_s;
    }
    out.push_back(
        {from, std::max(0.0, sums[0] / k.work_s - lone), sums[1] / sums[0], sums[2] / sums[0]});
  }
  return out;
}

TurnSplit split_turns(const std::vector<LengthBucket>& beyond, double share_loss) {
  // Per second of work: the turns' count, sum and sum of squares, the rest's.
  double turn[3] = {0, 0, 0}, rest[3] = {0, 0, 0};
  double left = std::max(0.0, share_loss);  // of a second of work, in s
  std::vector<LengthBucket> longest_first = beyond;
  std::sort(longest_first.begin(), longest_first.end(),
            [](const LengthBucket& a, const LengthBucket& b) { return a.from_ns > b.from_ns; });
  for (const LengthBucket& b : longest_first) {
    const double takes = b.per_s * b.mean_ns * 1e-9;  // s of a second of work
    const double part = takes > 0 ? std::min(1.0, left / takes) : 0;
    left -= part * takes;
    const double n[2] = {part * b.per_s, (1 - part) * b.per_s};
    for (int i = 0; i < 2; ++i) {
      double* to = i == 0 ? turn : rest;
      to[0] += n[i];
      to[1] += n[i] * b.mean_ns;
      to[2] += n[i] * b.mean_sq_ns2;
    }
  }
  TurnSplit s;
  std::tie(s.turn_ns, s.turn_cv) = mean_cv(turn[0], turn[1], turn[2]);
  std::tie(s.rest_ns, s.rest_cv) = mean_cv(rest[0], rest[1], rest[2]);
  return s;
}

GuestNoise guest_noise(const std::vector<ordered_json>& reports,
                       const std::vector<std::string>& user_sets, int host_cpus,
                       const std::vector<ordered_json>& alone, double user_slice_ns) {
  GuestNoise g;
  struct Key {
    const char* key;  // [noise] key
    const char* section;
    const char* field;
    const char* count;  // the section's sample count, if it has one
  };
  static constexpr Key kKeys[] = {
      {"irq_rate", "/fwq", "interruptions_per_s", "quanta"},
      {"irq_duration", "/fwq", "interruption_mean_ns", "interruptions"},
      {"irq_duration_cv", "/fwq", "interruption_cv", "interruptions"},
      {"cost_jitter_cv", "/fwq", "plain_cv", "quanta"},
      {"wakeup_latency", "/wakeup", "excess_mean_ns", "samples"},
      {"wakeup_latency_cv", "/wakeup", "excess_cv", "samples"},
      {"clone_latency", "/clone", "excess_mean_ns", "samples"},
      {"clone_latency_cv", "/clone", "excess_cv", "samples"},
      {"fork_latency", "/fork", "excess_mean_ns", "samples"},
      {"fork_latency_cv", "/fork", "excess_cv", "samples"},
  };
  std::map<std::string, double> got;
  std::vector<std::string> clamped;
  const auto params = sim::noise_params();
  auto param = [&](std::string_view key) {
    const auto p = std::find_if(params.begin(), params.end(),
                                [&](const sim::NoiseParam& q) { return q.key == key; });
    return p == params.end() ? nullptr : &*p;
  };
  // `x` within the key's range; what was clamped is said in the note.
  auto within = [&](std::string_view key, std::string_view what, double x) {
    const sim::NoiseParam& p = *param(key);
    if (x >= p.lo && x <= p.hi) return x;
    clamped.push_back(fmt::format("{} {:.4g} to {:.4g}", what, x, std::clamp(x, p.lo, p.hi)));
    return std::clamp(x, p.lo, p.hi);
  };
  auto user_set = [&](std::string_view key) {
    return sets_key(user_sets, fmt::format("noise.{}=", key));
  };
  auto set = [&](std::string_view key, double x) {
    if (user_set(key)) return;
    const sim::NoiseParam& p = *param(key);
    g.sets.push_back(p.unit == "ns" ? fmt::format("noise.{}={:.0f}ns", key, x)
                                    : fmt::format("noise.{}={:.4g}", key, x));
  };
  // What the probes measured, but for the keys the user sets (their
  // values, which may carry units, are the command line's).
  for (const Key& k : kKeys) {
    if (user_set(k.key)) continue;
    std::optional<double> x = probes_median(reports, k.section, k.field, k.count);
    if (!x) continue;
    got[k.key] = within(k.key, k.key, *x);
  }
  if (got.empty()) return g;
  // The probes count their interruptions over their wall time, of which
  // they take `lost`; the simulation draws them per time of work
  // (sim::Noise). More busy vCPUs than the host has CPUs share its cores
  // (noise.host_cpus): K busy probes on H CPUs run H/K of the time at most.
  // What they lost beyond that share stays as interruptions: per second of
  // work, rate x duration = share / (1 - lost) - 1. With no cores shared the
  // share is 1, and a guest whose vCPU loses 80 % of its time has five times
  // as many interruptions in a second of work as in one of wall time.
  constexpr double kLeastWorkShare = 0.05;
  // Interruptions per second of work that take `loss` of it, `d` ns each.
  auto rate_of = [](double loss, double d) { return d > 0 ? loss / (d * 1e-9) : 0; };
  const int busy = static_cast<int>(reports.size());
  const bool shared = host_cpus > 0 && !user_set("host_cpus");
  const double share = shared ? 1 / sim::host_share_factor(host_cpus, busy) : 1;
  const bool both = got.count("irq_rate") && got.count("irq_duration");
  const double lost = both ? got["irq_rate"] * got["irq_duration"] * 1e-9 : 0;  // of a vCPU's time
  const double work_share = std::max(kLeastWorkShare, 1 - lost);
  // The host's CPUs run the busy vCPUs round robin (noise.host_slice): a
  // vCPU's turn off, `1 / share - 1` slices on average, is the longest of
  // the interruptions the busy probes had beyond the lone one's, enough to
  // take the share (split_turns); the shorter ones are the busy vCPUs' own
  // (noise.irq_busy_duration). Without buckets (an older probe), the busy
  // probes' mean interruption, turns and shorter ones together. The user's
  // slice if set; fluid if the user sets 0.
  TurnSplit split_at;
  if (both && share < 1) {
    const std::vector<LengthBucket> beyond = lengths_beyond(reports, alone);
    if (!beyond.empty()) split_at = split_turns(beyond, 1 / share - 1);
  }
  const TurnSplit* split = split_at.turn_ns > 0 ? &split_at : nullptr;
  const double turn = split ? split->turn_ns : both ? got["irq_duration"] : 0;
  const double turn_cv = split                          ? split->turn_cv
                         : got.count("irq_duration_cv") ? got["irq_duration_cv"]
                                                        : 0;
  // SIMPLIFICATION: a turn off as the sum of 1 / share - 1 independent
  // slices (the others' in line before it), its cv the slice's over their
  // root.
  const double slices_off = share < 1 ? 1 / share - 1 : 1;
  const double slice = user_set("host_slice") ? user_slice_ns : turn / slices_off;
  const double slice_cv = turn_cv * std::sqrt(slices_off);
  const bool turns = share < 1 && slice > 0;
  // The busy vCPUs' own interruptions: the shorter ones beyond the lone
  // probe's where the turns were split off, else all of the busy probes'.
  const bool rest_split = split && split->rest_ns > 0;
  const double busy_d = rest_split ? split->rest_ns : both ? got["irq_duration"] : 0;
  // Per second of work, what the share leaves to interruptions: fluid, the
  // share stretches the interruptions too (wall = work x (1 + rest) / share);
  // in turns, they add to its 1 / share - 1 (wall = work x (1 / share +
  // rest)).
  const double rest = std::max(0.0, turns ? 1 / work_share - 1 / share : share / work_share - 1);
  // One probe alone on vCPU 0 after the busy ones (K > 1): a vCPU busy alone
  // loses far less than K busy ones beyond their share (the host takes them
  // off its cores in turns). Its interruptions are every vCPU's; what the K
  // lost beyond them grows with the other busy vCPUs (noise.irq_busy_rate).
  // Not when the user sets a rate or a length: the two are measured as a
  // pair (then the K probes' rest is irq_rate's, as with one busy vCPU).
  std::optional<double> alone_rate, alone_d, alone_cv;
  const bool user_irq = user_set("irq_rate") || user_set("irq_duration") ||
                        user_set("irq_busy_rate") || user_set("irq_busy_duration");
  if (busy > 1 && both && !user_irq) {
    alone_rate = probes_median(alone, "/fwq", "interruptions_per_s", "quanta");
    alone_d = probes_median(alone, "/fwq", "interruption_mean_ns", "interruptions");
    alone_cv = probes_median(alone, "/fwq", "interruption_cv", "interruptions");
    // A lone probe that was never interrupted: none of its own.
    if (alone_rate && *alone_rate == 0) {
      alone_d = got["irq_duration"];
      alone_cv = got.count("irq_duration_cv") ? got["irq_duration_cv"] : 0;
    }
  }
  const bool by_busy = alone_rate && alone_d && alone_cv;
  double rest_rate = 0;  // without the lone probe: the K probes' rest, as irq_rate
  std::string how;
  if (by_busy) {
    const double alone_lost = *alone_rate * *alone_d * 1e-9;
    const double base = 1 / std::max(kLeastWorkShare, 1 - alone_lost) - 1;
    const double d = within("irq_duration", "the lone probe's irq_duration", *alone_d);
    const double rate = within("irq_rate", "irq_rate per second of work", rate_of(base, d));
    const double more = std::max(0.0, rest - base);  // per second of work at K busy
    const double busy_rate = within("irq_busy_rate", "irq_busy_rate per second of work",
                                    rate_of(more, busy_d) / (busy - 1));
    set("irq_rate", rate);
    set("irq_duration", d);
    set("irq_duration_cv",
        within("irq_duration_cv", "the lone probe's irq_duration_cv", *alone_cv));
    set("irq_busy_rate", busy_rate);
    set("irq_busy_duration", within("irq_busy_duration", "irq_busy_duration", busy_d));
    if (rest_split) {
      set("irq_busy_duration_cv",
          within("irq_busy_duration_cv", "irq_busy_duration_cv", split->rest_cv));
    } else if (got.count("irq_duration_cv")) {
      set("irq_busy_duration_cv", got["irq_duration_cv"]);
    }
    how = fmt::format(
        "; alone, a vCPU lost {:.0f}% ({:.0f}/s of {:.3g} ms: {:.0f}/s of work, noise.irq_rate), "
        "and each other busy vCPU adds {}",
        100 * std::min(1.0, alone_lost), *alone_rate, d * 1e-6, rate,
        more > 0 ? fmt::format("{:.4g}/s of work of the busy vCPUs' interruptions "
                               "(noise.irq_busy_rate)",
                               busy_rate)
                 : std::string("none: the busy vCPUs lost no more than the share and the lone "
                               "vCPU's interruptions (noise.irq_busy_rate=0)"));
  } else if (both) {
    rest_rate =
        within("irq_rate", "irq_rate per second of work", rate_of(rest, got["irq_duration"]));
    set("irq_rate", rest_rate);
  }
  for (const Key& k : kKeys) {
    const std::string_view key = k.key;
    // (Never interrupted: irq_rate is the probes' 0, per second of either.)
    if (!got.count(k.key) || (key == "irq_rate" && both) || (by_busy && key.starts_with("irq_")))
      continue;
    set(key, got[k.key]);
  }
  if (shared) g.sets.push_back(fmt::format("noise.host_cpus={}", host_cpus));
  if (turns) {
    set("host_slice", within("host_slice", "host_slice", slice));
    set("host_slice_cv", within("host_slice_cv", "host_slice_cv", slice_cv));
  }
  std::string sharing;
  if (both && share < 1) {
    sharing = fmt::format(
        "; the host's {} CPUs give {} busy vCPUs {:.0f}% of their time (noise.host_cpus){}, {}",
        host_cpus, busy, share * 100,
        turns
            ? fmt::format(", round robin in slices of {:.3g} ms (noise.host_slice{})", slice * 1e-6,
                          user_set("host_slice")
                              ? std::string()
                              : fmt::format(", cv {:.2g}: turns off of {:.3g} ms, cv {:.2g}, "
                                            "{}",
                                            slice_cv, turn * 1e-6, turn_cv,
                                            split ? "the longest of what they lost beyond "
                                                    "the lone vCPU"
                                                  : "their mean interruption"))
            : std::string(),
        rest > 0
            ? (by_busy
                   ? fmt::format("which leaves {:.3g}% of their work to interruptions", rest * 100)
                   : fmt::format("which leaves {:.0f}/s of work of the interruptions", rest_rate))
            : fmt::format("no more than the {:.0f}% the probes had: no interruptions "
                          "are left",
                          work_share * 100));
  } else if (both && !by_busy) {
    sharing = fmt::format(", so {:.0f}/s of work", rest_rate);
  }
  auto said = [&](const char* key, const char* format_ns, double scale) {
    const auto it = got.find(key);
    return it == got.end() ? std::string("-")
                           : fmt::format(fmt::runtime(format_ns), it->second * scale);
  };
  g.note = fmt::format(
      "[noise] measured in the guest by mmsim-noise-probe on {} busy vCPU{} (the most tasks the "
      "simulation keeps busy at once): interruptions {}/s of {} ms mean (cv {}){}{}, wakeups +{} "
      "us (cv {}), clones +{} us (cv {}), forks +{} ms (cv {}), cost jitter cv {}: the "
      "simulation's noise{}",
      reports.size(), reports.size() == 1 ? "" : "s", said("irq_rate", "{:.0f}", 1),
      said("irq_duration", "{:.3g}", 1e-6), said("irq_duration_cv", "{:.2g}", 1),
      both ? fmt::format(", {:.0f}% of the time{}", 100 * (1 - work_share), sharing)
           : std::string(),
      how, said("wakeup_latency", "{:.3g}", 1e-3), said("wakeup_latency_cv", "{:.2g}", 1),
      said("clone_latency", "{:.3g}", 1e-3), said("clone_latency_cv", "{:.2g}", 1),
      said("fork_latency", "{:.3g}", 1e-6), said("fork_latency_cv", "{:.2g}", 1),
      said("cost_jitter_cv", "{:.2g}", 1),
      clamped.empty()
          ? std::string()
          : fmt::format(" (clamped to the keys' ranges: {})", fmt::join(clamped, ", ")));
  return g;
}

std::string guest_clocksource(std::string_view console) {
  const size_t at = console.find("MMSIM-GUEST-UP ");
  if (at == std::string_view::npos) return "";
  const size_t eol = console.find('\n', at);
  std::istringstream line(
      std::string(console.substr(at, eol == std::string_view::npos ? eol : eol - at)));
  std::string word, last;
  line >> word;  // the marker
  line >> word;  // the kernel's release
  while (line >> word) last = word;
  return last;
}

GuestNoise guest_user_pace(const std::vector<ordered_json>& reports,
                           const std::vector<std::string>& user_sets) {
  GuestNoise g;
  // A field of the probes' "user" sections, if they measured it (above 0).
  auto measured = [&](const char* field) -> std::optional<double> {
    const std::optional<double> x = probes_median(reports, "/user", field, "samples");
    return x && *x > 0 ? x : std::nullopt;
  };
  std::vector<std::string> set;
  for (const char* key : {"memset_line_ns", "sweep_elem_ns", "sweep_elem_O0_ns"}) {
    if (sets_key(user_sets, fmt::format("costs.{}=", key))) continue;
    const std::optional<double> x = measured(key);
    if (!x) continue;
    g.sets.push_back(fmt::format("costs.{}={:.4g}", key, *x));
    set.push_back(fmt::format("{} = {:.3g} ns", key, *x));
  }
  if (g.sets.empty()) return g;
  // Over memory, reported: what the simulation does not take from the guest.
  std::vector<std::string> ring;
  if (const auto x = measured("memset_ring_page_ns"))
    ring.push_back(fmt::format("a memset {:.3g} us", *x * 1e-3));
  if (const auto x = measured("sweep_ring_page_ns"))
    ring.push_back(fmt::format("the -O2 loop over 8-byte elements {:.3g} us", *x * 1e-3));
  const std::optional<double> clock = measured("clock_ns");
  g.note = fmt::format(
      "{} in the simulation, measured in the guest by mmsim-noise-probe on {} vCPU{} (medians: "
      "a memset of a hot 64 KiB per line, mmsim-exec's summing loops over a hot 16 KiB per "
      "element){}{}",
      fmt::join(set, ", "), reports.size(), reports.size() == 1 ? "" : "s",
      ring.empty() ? std::string()
                   : fmt::format("; over a 64 MiB ring, a page took {}", fmt::join(ring, ", ")),
      clock ? fmt::format("; a read of the clock {:.3g} us", *clock * 1e-3) : std::string());
  return g;
}

namespace {

constexpr int kExitHost = native::kExitHostSetup;

// mmsim-noise-probe beside this program, or in the build tree it comes from
// (build/<preset>/src/cli/mmsim -> build/<preset>/tools/noise); "" if neither.
std::string noise_probe_path() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  for (const fs::path& p :
       {exe.parent_path() / "mmsim-noise-probe",
        exe.parent_path().parent_path().parent_path() / "tools" / "noise" / "mmsim-noise-probe"}) {
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return "";
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

uint64_t host_mem_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), size = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(size) : 0;
}

// A counter's mean over runs with their range ("12 (10-14)"), or the mean
// alone when every run gave the same (or there were none).
std::string mean_range_text(double mean, double min, double max) {
  if (!(min < max)) return fmt::format("{:.6g}", mean);
  return fmt::format("{:.6g} ({:.6g}-{:.6g})", mean, min, max);
}

// A judged error's 95% interval, in % ("-52.1..+15.2%"), or "-" without one.
std::string interval_text(const std::optional<std::pair<double, double>>& ci) {
  if (!ci) return "-";
  return fmt::format("{:+.1f}..{:+.1f}%", ci->first * 100, ci->second * 100);
}

// The host's online CPUs, on which QEMU runs the guest's vCPUs; 0 if unknown.
int host_cpus() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 0;
}

// The host's CPUs that a guest of `vcpus` shares (noise.host_cpus): its
// online CPUs when they are fewer, else 0 (each vCPU can have its own).
int guest_host_cpus(size_t vcpus) {
  const int h = host_cpus();
  return h > 0 && static_cast<size_t>(h) < vcpus ? h : 0;
}

std::string today() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

// The value of a "MMSIM-RUN i rc" block's runs in the data file, in order:
// each run's exit code and its JSON (empty when it wrote none).
struct GuestRun {
  int rc = -1;
  std::string json;
  std::string trace;  // the kernel's trace (--scan-trace), if any
};
std::vector<GuestRun> parse_data(const std::string& text, bool* done) {
  std::vector<GuestRun> runs;
  std::istringstream in(text);
  GuestRun* cur = nullptr;
  bool in_trace = false;
  *done = false;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("MMSIM-RUN ", 0) == 0) {
      runs.emplace_back();
      cur = &runs.back();
      std::istringstream w(line.substr(10));
      int i = 0;
      w >> i >> cur->rc;
    } else if (line.rfind("MMSIM-END ", 0) == 0) {
      cur = nullptr;
    } else if (line.rfind("MMSIM-TRACE ", 0) == 0) {
      in_trace = !runs.empty();
    } else if (line.rfind("MMSIM-TRACE-END ", 0) == 0) {
      in_trace = false;
    } else if (in_trace) {
      runs.back().trace += line + "\n";
    } else if (line == "MMSIM-DONE") {
      *done = true;
    } else if (cur) {
      cur->json += line + "\n";
    }
  }
  return runs;
}

std::string tail_lines(const std::string& text, size_t n) {
  if (text.empty()) return text;
  size_t pos = text.size();
  for (size_t i = 0; i <= n && pos > 0; ++i) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) return text;
  }
  return text.substr(pos + 1);
}

// The guest's /init: mounts, the scenario's cgroup hierarchy, a disk for its
// files, then `mmsim native` once per run, each run's JSON on ttyS1.
std::string init_script(const std::string& hierarchy, uint64_t disk_kib, bool virtio,
                        const std::vector<std::string>& modules,
                        const std::vector<std::string>& native_args, int repeat,
                        const std::string& scan_trace_series,
                        const std::vector<std::string>& trace_events,
                        const std::vector<std::string>& kprobes, int noise_cpus) {
  std::string s = R"(#!/bin/busybox sh
/bin/busybox mkdir -p /bin /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /tmp /dev/shm /var/tmp
mount -t tmpfs tmpfs /tmp
mount -t tmpfs shm /dev/shm
mount -t debugfs debugfs /sys/kernel/debug
)";
  if (hierarchy == "v2") {
    s += "mount -t cgroup2 cgroup2 /sys/fs/cgroup\n"
         "echo +memory > /sys/fs/cgroup/cgroup.subtree_control\n";
  } else {
    s += "mount -t tmpfs cgroup /sys/fs/cgroup\nmkdir /sys/fs/cgroup/memory\n"
         "mount -t cgroup -o memory memory /sys/fs/cgroup/memory\n";
  }
  if (disk_kib) {
    // The scenario's disk files: ext2 (by the ext4 driver) on a RAM disk or
    // the host's disk image, page cache over a block device as on a real
    // disk (the rootfs is shmem).
    for (const auto& m : modules) {
      s += fmt::format("insmod /lib/modules/{}{}\n", m,
                       m == "brd.ko" ? fmt::format(" rd_nr=1 rd_size={}", disk_kib) : "");
    }
    const char* dev = virtio ? "/dev/vda" : "/dev/ram0";
    s += fmt::format(
        "mke2fs -q {0} >/dev/null && mount -t ext4 {0} /var/tmp || "
        "echo 'MMSIM-GUEST-ERROR no disk for the scenario files'\n",
        dev);
  }
  s += "stty -F /dev/ttyS1 raw -echo 2>/dev/null\n";
  s += "echo \"MMSIM-GUEST-UP $(uname -r) $(cat "
       "/sys/devices/system/clocksource/clocksource0/current_clocksource)\"\n";
  if (noise_cpus > 0) {
    // The guest's noise (guest_noise): one probe a vCPU on the first
    // `noise_cpus`, all at once, before the runs. About 0.5 s of fixed work
    // quanta, then wakeups, clones and forks, then the user's pace; no faults
    // (not used).
    s += fmt::format(
        "i=0\nwhile [ $i -lt {0} ]; do\n  taskset -c $i /bin/mmsim-noise-probe 100000 --wakeups "
        "1000 --clones 300 --forks 50 --faults 0 --user 300 > /tmp/noise$i.json &\n  "
        "i=$((i+1))\ndone\n"
        "wait\ni=0\nwhile [ $i -lt {0} ]; do\n  {{ echo \"MMSIM-NOISE $i\"; cat /tmp/noise$i.json; "
        "echo \"MMSIM-NOISE-END $i\"; }} > /dev/ttyS1\n  rm -f /tmp/noise$i.json\n  i=$((i+1))\n"
        "done\n",
        noise_cpus);
    // What a vCPU busy alone loses (guest_noise's `alone`): the fixed work
    // quanta only, on vCPU 0, the others idle.
    if (noise_cpus > 1) {
      s += "taskset -c 0 /bin/mmsim-noise-probe 100000 --wakeups 0 --clones 0 --forks 0 --faults 0 "
           "--user 0 > /tmp/noise-alone.json\n"
           "{ echo \"MMSIM-NOISE-ALONE 0\"; cat /tmp/noise-alone.json; "
           "echo \"MMSIM-NOISE-ALONE-END 0\"; } > /dev/ttyS1\nrm -f /tmp/noise-alone.json\n";
    }
  }
  std::string clear_trace, dump_trace;
  if (!scan_trace_series.empty()) {
    // Probes on the scan's functions (neither is inline: task_numa_work is
    // a task_work callback; change_prot_numa is called from another file). x86-64 passes arguments
    // in di, si, dx, cx; a VMA begins with vm_start and vm_end in 6.1 and 6.12. task_numa_work's
    // argument is &current->numa_work, which task_struct (CONFIG_NUMA and
    // CONFIG_NUMA_BALANCING, include/linux/sched.h) places after
    // numa_scan_seq, numa_scan_period, numa_scan_period_max,
    // numa_preferred_nid, numa_migrate_retry, node_stamp,
    // last_task_numa_placement and last_sum_exec_runtime; 6.12's il_weight
    // before them moves the four ints 4 bytes up.
    const int seq = scan_trace_series == "6.1" ? -52 : -48;
    s += fmt::format(
        "T=/sys/kernel/debug/tracing\ntrace_ok=1\nfor p in 'p:mmsim/task_numa_work task_numa_work "
        "numa_scan_seq={}(%di):s32 numa_scan_period={}(%di):u32 numa_scan_period_max={}(%di):u32 "
        "numa_preferred_nid={}(%di):s32 node_stamp=-24(%di):u64' \\\n",
        seq, seq + 4, seq + 8, seq + 12);
    s += R"(    'r:mmsim/task_numa_work_ret task_numa_work' \
    'p:mmsim/change_prot_numa change_prot_numa vm_start=+0(%di):x64 vm_end=+8(%di):x64 start=%si:x64 end=%dx:x64' \
    'r:mmsim/change_prot_numa_ret change_prot_numa updated=$retval:s64')";
    // A hinting fault's migration: its isolation (6.1's
    // migrate_misplaced_page isolates, then migrates; 6.12 isolates in
    // migrate_misplaced_folio_prepare first), its unmap (try_to_migrate),
    // its copy (folio_copy; folio_mc_copy from 6.12) and migrate_pages'
    // tracepoint at its end; and the TLB shootdowns (native_flush_tlb_multi)
    // and context switches that may fall inside it.
    const bool prepare = *KernelVersion::parse(scan_trace_series) >= KernelVersion{6, 12};
    s += fmt::format(
        " \\\n    'p:mmsim/migrate_misplaced {0}' \\\n"
        "    'p:mmsim/migrate_unmap try_to_migrate' \\\n    'p:mmsim/migrate_copy {1}' \\\n"
        "    'r:mmsim/migrate_copy_ret {1}' \\\n    'p:mmsim/tlb_flush native_flush_tlb_multi' \\\n"
        "    'r:mmsim/tlb_flush_ret native_flush_tlb_multi'",
        prepare ? "migrate_misplaced_folio_prepare" : "migrate_misplaced_page",
        prepare ? "folio_mc_copy" : "folio_copy");
    // The clearing of a huge page at its fault (clear_huge_page up to 6.9,
    // folio_zero_user from 6.10), timed from its call to its return.
    const char* zero = *KernelVersion::parse(scan_trace_series) >= KernelVersion{6, 10}
                           ? "folio_zero_user"
                           : "clear_huge_page";
    s += fmt::format(" \\\n    'p:mmsim/zero_huge {0}' \\\n    'r:mmsim/zero_huge_ret {0}'", zero);
    // --kprobe: each as mmsim/probe_SYMBOL (checked in run_validate: no quote).
    for (const auto& k : kprobes) {
      const std::string symbol = k.substr(0, k.find(' '));
      s += fmt::format(" \\\n    'p:mmsim/probe_{} {}'", symbol, k);
    }
    s += R"(; do
  echo "$p" >> $T/kprobe_events || trace_ok=0
done
echo 1 > $T/events/mmsim/enable || trace_ok=0
[ -d $T/events/sched/sched_skip_vma_numa ] && echo 1 > $T/events/sched/sched_skip_vma_numa/enable
echo 1 > $T/events/migrate/mm_migrate_pages/enable || trace_ok=0
echo 1 > $T/events/sched/sched_switch/enable || trace_ok=0
echo 8192 > $T/buffer_size_kb
missing=
)";
    // --trace-event: each tracepoint this kernel has; the others are named
    // at the top of each run's trace.
    for (const auto& e : trace_events) {
      s += fmt::format(
          "if [ -d $T/events/{0} ]; then echo 1 > $T/events/{0}/enable; else missing=\"$missing "
          "{0}\"; fi\n",
          e);
    }
    clear_trace = "  echo > $T/trace\n";
    dump_trace =
        "  { echo \"MMSIM-TRACE $i\"; [ $trace_ok = 1 ] || echo '# error: the kprobes could not "
        "be set'; [ -z \"$missing\" ] || echo \"# warning: no such tracepoint in this "
        "kernel:$missing\"; cat $T/trace; echo \"MMSIM-TRACE-END $i\"; } > /dev/ttyS1\n";
  }
  std::string args;
  for (const auto& a : native_args) args += fmt::format(" {}", shell_quote(a));
  s += fmt::format(R"(i=1
while [ $i -le {} ]; do
  rm -f /tmp/run.json
{}  /bin/mmsim native /scenario.toml --exec /bin/mmsim-exec --json /tmp/run.json{}
  rc=$?
  {{ echo "MMSIM-RUN $i $rc"; [ -f /tmp/run.json ] && cat /tmp/run.json; echo "MMSIM-END $i"; }} > /dev/ttyS1
{}  [ $rc = 0 ] || break
  i=$((i+1))
done
echo MMSIM-DONE > /dev/ttyS1
sync
poweroff -f
)",
                   repeat, clear_trace, args, dump_trace);
  return s;
}

struct Outcome {
  int rc = 0;           // 0 validated (see verdicts), else an exit code
  std::string skipped;  // why it did not run, when it did not
  std::vector<Verdict> verdicts;
  ordered_json json;
};

struct Context {
  const ValidateOptions& o;
  std::ostream& out;
  std::ostream& err;
  native::SignalScope& signals;
  std::string cache;
  std::string qemu;
  // Under --accel auto: why KVM failed to bring up this run's first guest
  // that tried it. The later guests go straight to TCG rather than waiting
  // out the probe again.
  std::string kvm_refused;
};

Outcome validate_one(Context& cx, const std::string& path, const std::string& series) {
  Outcome oc;
  auto& err = cx.err;
  // The scenario as the simulation sees it (its machine is the guest's).
  scenario::PrepareResult pr = scenario::prepare({path, std::nullopt, cx.o.sets, std::nullopt, ""});
  if (!pr.run) {
    for (const auto& d : pr.diagnostics) err << d.str() << "\n";
    oc.rc = 2;
    return oc;
  }
  const scenario::Scenario& sc = pr.run->scenario;
  if (sc.host_machine) {
    err << "mmsim: error: " << path
        << ": machine.preset = \"host\": validate boots the scenario's own machine; give one\n";
    oc.rc = 2;
    return oc;
  }
  const int repeat = cx.o.repeat > 0 ? cx.o.repeat : sc.validate.repeat;
  const GuestMachine gm = guest_machine(pr.run->topology);
  if (const std::string misfit = guest_misfit(gm, host_mem_bytes()); !misfit.empty()) {
    err << "mmsim: error: " << path << ": the machine does not fit a guest on this host: " << misfit
        << "\n";
    oc.rc = 2;
    return oc;
  }

  // The kernel, fetched on first use.
  std::string why;
  std::optional<KernelImage> k = cached_kernel(cx.cache, series);
  if (!k) k = fetch_kernel(cx.cache, series, cx.signals, err, &why);
  if (!k) {
    err << "mmsim: error: kernel " << series << ": " << why << "\n";
    oc.rc = kExitHost;
    return oc;
  }
  // The guest runs mmsim-exec from its initramfs: the rootfs is shmem.
  std::vector<std::string> extra_sets = {fmt::format("kernel.version={}", series),
                                         "run.executable_fs=tmpfs"};
  std::string hierarchy = sc.kernel.memcg.hierarchy == memcg::Hierarchy::kV2 ? "v2" : "v1";
  std::vector<std::string> notes;
  const KernelVersion kv = *KernelVersion::parse(series);
  if (hierarchy == "v1" && kv >= KernelVersion{6, 11} && k->config("MEMCG_V1") != "y") {
    // Without v1's memory controller the scenario runs under v2 in both
    // worlds, unless it needs what only v1 has: charges that move.
    for (const auto& cg : sc.cgroups) {
      if (cg.move_charge_at_immigrate) {
        oc.skipped = fmt::format(
            "cgroup {} moves charges (move_charge_at_immigrate, cgroup v1 only), and {} is "
            "built without CONFIG_MEMCG_V1",
            cg.path, k->release);
        return oc;
      }
    }
    hierarchy = "v2";
    extra_sets.push_back("memcg.hierarchy=v2");
    notes.push_back(k->release + " has no cgroup v1 memory controller: cgroup v2 in both worlds");
  }
  std::vector<std::string> sets = cx.o.sets;
  sets.insert(sets.end(), extra_sets.begin(), extra_sets.end());

  // The work directory: initramfs, console log, the guest's data.
  std::error_code ec;
  const std::string root = cx.o.work_root.empty() ? "/var/tmp" : cx.o.work_root;
  std::string tmpl = root + "/mmsim-validate-XXXXXX";
  if (!::mkdtemp(tmpl.data())) {
    err << "mmsim: error: cannot make a directory under " << root << ": "
        << native::errno_text(errno) << "\n";
    oc.rc = kExitHost;
    return oc;
  }
  const std::string work = tmpl;
  struct Cleanup {
    std::string dir;
    bool keep;
    ~Cleanup() {
      std::error_code e;
      if (!keep) fs::remove_all(dir, e);
    }
  } cleanup{work, cx.o.keep};

  // The initramfs: busybox, mmsim and its libraries, mmsim-exec, the scenario.
  Initramfs ir;
  for (const char* d : {"proc", "sys", "dev", "tmp", "var/tmp", "lib/modules", "etc"})
    ir.add_dir(d);
  auto add_program = [&](const std::string& host_path, const std::string& at) {
    std::vector<std::string> libs;
    if (!ir.add_host_file(at, host_path, 0755, &why) ||
        !shared_libraries(host_path, cx.signals, &libs, &why)) {
      return false;
    }
    for (const auto& l : libs) {
      const std::string rel = l.substr(1);
      if (!ir.has(rel) && !ir.add_host_file(rel, l, 0755, &why)) return false;
    }
    return true;
  };
  native::ScenarioNativeOptions no;
  no.exec_path = cx.o.exec_path;
  const std::string exec = native::find_exec(no, &why);
  // This very program, by its /proc link: a rebuild during a long run
  // replaces the file its path names, not the one this process runs.
  const std::string self = fmt::format("/proc/{}/exe", getpid());
  if (exec.empty() || !add_program("/bin/busybox", "bin/busybox") ||
      !add_program(self, "bin/mmsim") || !add_program(exec, "bin/mmsim-exec")) {
    err << "mmsim: error: the guest's programs: " << why
        << (why.find("busybox") != std::string::npos ? " (Debian package busybox-static)" : "")
        << "\n";
    oc.rc = kExitHost;
    return oc;
  }
  {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    ir.add_file("scenario.toml", text.str());
  }
  // Disk files: a RAM disk sized for them, with the modules it needs.
  uint64_t file_bytes = 0;
  bool disk = false;
  for (const auto& f : sc.workload.files) {
    if (f.tmpfs) continue;
    disk = true;
    file_bytes += f.pages * 4096;
  }
  uint64_t disk_kib = 0;
  const bool virtio = disk && sc.validate.disk == "virtio";
  std::vector<std::string> modules;
  if (disk) {
    disk_kib = (file_bytes + file_bytes / 8 + (32ull << 20)) >> 10;
    std::vector<const char*> needed = {"lib/crc16", "crypto/crc32c_generic", "fs/mbcache",
                                       "fs/jbd2/jbd2", "fs/ext4/ext4"};
    if (virtio) {
      // virtio-blk's chain, in dependency order.
      needed.insert(needed.end(),
                    {"drivers/virtio/virtio_ring", "drivers/virtio/virtio",
                     "drivers/virtio/virtio_pci_modern_dev", "drivers/virtio/virtio_pci_legacy_dev",
                     "drivers/virtio/virtio_pci", "drivers/block/virtio_blk"});
    } else {
      needed.push_back("drivers/block/brd");
    }
    for (const char* m : needed) {
      const std::string base = fmt::format("{}/kernel/{}.ko", k->modules(), m);
      const std::string name = fs::path(base).filename().string();
      std::string data;
      if (fs::exists(base)) {
        std::ifstream in(base, std::ios::binary);
        std::ostringstream t;
        t << in.rdbuf();
        data = t.str();
      } else if (fs::exists(base + ".xz")) {
        const CommandResult x = run_command(
            {.argv = {"/bin/busybox", "xz", "-dc", base + ".xz"}, .timeout_s = 120}, cx.signals);
        if (!x.ok()) {
          err << "mmsim: error: cannot decompress " << base << ".xz: " << x.what() << "\n";
          oc.rc = kExitHost;
          return oc;
        }
        data = x.out;
      } else {
        continue;  // built in, or not needed by this kernel
      }
      ir.add_file(fmt::format("lib/modules/{}", name), std::move(data));
      modules.push_back(name);
    }
  }
  // The scan is traced whenever NUMA balancing is on, and the kernel's
  // clearing of THPs whenever they may be used: the simulation takes the
  // guest's TLB flush cost, migration steps and page zeroing from it (below).
  const bool trace_scan = !cx.o.scan_trace.empty() ||
                          sc.kernel.numa_config(pr.run->topology.nr_nodes()).enabled ||
                          sc.kernel.mm.thp_enabled != mm::ThpEnabled::kNever;
  std::vector<std::string> native_args;
  for (const auto& s : sets) native_args.insert(native_args.end(), {"--set", s});
  // The guest's noise, measured on as many vCPUs as the simulation keeps
  // busy at once (guest_noise), unless the scenario turns [noise] off.
  int noise_cpus = 0;
  if (sc.noise.enabled) {
    const std::string probe = noise_probe_path();
    if (probe.empty()) {
      err << "mmsim: warning: mmsim-noise-probe is not built (tools/noise): the simulation keeps "
             "[noise]'s defaults\n";
      notes.push_back(
          "mmsim-noise-probe was not found: the simulation has [noise]'s defaults, not the "
          "guest's noise");
    } else if (scenario::PrepareResult sp =
                   scenario::prepare({path, std::nullopt, sets, sc.seed, ""});
               sp.run) {
      const workload::RunResult r = scenario::simulate(*sp.run);
      std::vector<std::pair<double, double>> lives;
      for (const auto& t : r.tasks) {
        const double life = t.exit_s - t.start_s;
        if (life > 0 && (t.times.user_ns + t.times.sys_ns) * 1e-9 >= 0.5 * life)
          lives.emplace_back(t.start_s, t.exit_s);
      }
      noise_cpus = std::clamp(peak_busy_tasks(lives), 1, static_cast<int>(gm.nr_cpus()));
      if (!add_program(probe, "bin/mmsim-noise-probe")) {
        err << "mmsim: error: the guest's programs: " << why << "\n";
        oc.rc = kExitHost;
        return oc;
      }
    }
  }
  ir.add_file(
      "init",
      init_script(hierarchy, disk_kib, virtio, modules, native_args, repeat,
                  trace_scan ? series : std::string(), cx.o.trace_events, cx.o.kprobes, noise_cpus),
      0755);
  // A virtio disk: a sparse image of the disk's size in the work directory.
  std::string image;
  if (virtio) {
    image = work + "/disk.img";
    std::error_code ec;
    { std::ofstream(image, std::ios::binary | std::ios::trunc); }
    fs::resize_file(image, disk_kib << 10, ec);
    if (ec) {
      err << "mmsim: error: cannot make the disk image " << image << ": " << ec.message() << "\n";
      oc.rc = kExitHost;
      return oc;
    }
  }
  const std::string initrd = work + "/initramfs.cpio";
  const std::string data = work + "/ttyS1.txt";
  if (std::string werr; !util::write_file_atomically(initrd, ir.archive(), &werr)) {
    err << "mmsim: error: " << werr << "\n";
    oc.rc = kExitHost;
    return oc;
  }

  // Boot and run.
  BootSpec b;
  b.vmlinuz = k->vmlinuz();
  b.initrd = initrd;
  b.data_path = data;
  b.disk_image = image;
  b.accel = cx.o.accel == "auto" && !cx.kvm_refused.empty() ? "tcg" : cx.o.accel;
  b.timeout_s = cx.o.timeout_s;
  // The scenario's THP mode from boot (mmsim native in the guest sets it
  // again); Debian's own default would be "always".
  b.cmdline = fmt::format("quiet transparent_hugepage={}", mm::thp_word(sc.kernel.mm.thp_enabled));
  err << fmt::format("mmsim: validating {} on Linux {} ({} run{})\n", sc.name, k->release, repeat,
                     repeat == 1 ? "" : "s");
  // A guest that dies on its own (a kernel warning that kills init, seen
  // once on 6.12 under TCG) is booted once more; what mmsim native itself
  // refuses is not.
  BootResult br;
  std::vector<ordered_json> real;
  std::vector<std::string> traces;
  std::vector<std::string> noise_reports, alone_reports;
  std::string failure;
  for (int attempt = 1; attempt <= 2; ++attempt) {
    br = boot_guest(gm, b, cx.signals, err);
    if (b.accel == "auto" && br.accel == "tcg" && br.accel_note.starts_with("KVM:"))
      cx.kvm_refused = br.accel_note;
    if (b.accel != cx.o.accel) br.accel_note = cx.kvm_refused + ", earlier in this run";
    std::ofstream(work + "/console.log") << br.qemu.out << br.qemu.err;
    if (br.qemu.interrupted) {
      oc.rc = 128 + br.qemu.interrupted;
      err << "mmsim: interrupted: the guest was stopped\n";
      return oc;
    }
    bool done = false;
    std::string data_text;
    {
      std::ifstream in(data);
      std::ostringstream t;
      t << in.rdbuf();
      data_text = t.str();
    }
    real.clear();
    traces.clear();
    noise_reports = parse_noise_reports(data_text);
    alone_reports = parse_noise_reports(data_text, "MMSIM-NOISE-ALONE");
    failure.clear();
    bool retry = true;
    if (!br.came_up) failure = fmt::format("the guest never came up (QEMU {})", br.qemu.what());
    for (const auto& r : parse_data(data_text, &done)) {
      if (!failure.empty()) break;
      if (r.rc != 0) {
        failure = fmt::format("mmsim native exited with status {} in the guest", r.rc);
        retry = false;
        break;
      }
      try {
        real.push_back(ordered_json::parse(r.json));
        traces.push_back(r.trace);
      } catch (const std::exception& e) {
        failure = fmt::format("the guest's report is not JSON: {}", e.what());
      }
    }
    if (failure.empty() && static_cast<int>(real.size()) < repeat) {
      failure =
          fmt::format("{} of {} runs reported (QEMU {})", real.size(), repeat, br.qemu.what());
    }
    if (failure.empty()) break;
    if (!retry || attempt == 2) {
      err << "mmsim: error: " << sc.name << " on Linux " << k->release << ": " << failure
          << "\nmmsim: the guest's console, last lines:\n"
          << tail_lines(br.qemu.out, 25)
          << (br.qemu.err.empty() ? std::string() : fmt::format("\n{}", br.qemu.err)) << "\n";
      oc.rc = kExitHost;
      return oc;
    }
    err << "mmsim: " << failure
        << "; booting the guest again. The first guest's console, last lines:\n"
        << tail_lines(br.qemu.out, 25) << "\n";
    notes.push_back(
        fmt::format("the first guest failed ({}); these are the second's runs", failure));
  }
  if (br.accel == "tcg") {
    // qemu_argv asks for the TSC; tsc-early is the TSC until the kernel
    // refines its rate, 1-3 s into the boot.
    const std::string clock = guest_clocksource(br.qemu.out);
    if (!clock.empty() && !clock.starts_with("tsc")) {
      notes.push_back(fmt::format(
          "the guest's clocksource is {}, not the TSC: every clock read, the kernel's and the "
          "programs', is an emulated device's (1-1.5 us under QEMU's lock), and busy vCPUs "
          "queue on it",
          clock));
    }
  }

  if (!cx.o.scan_trace.empty()) {
    for (size_t i = 0; i < traces.size(); ++i) {
      const std::string file =
          fmt::format("{}/{}-{}-run{}.trace", cx.o.scan_trace, sc.name, series, i + 1);
      std::string werr;
      if (traces[i].empty()) {
        err << "mmsim: warning: run " << i + 1 << " of " << sc.name
            << " wrote no scan trace in the guest\n";
      } else if (!util::write_file_atomically(file, traces[i], &werr)) {
        err << "mmsim: error: " << werr << "\n";
        oc.rc = kExitHost;
        return oc;
      } else {
        err << "mmsim: the guest's scan trace: " << file << "\n";
      }
    }
  }

  if (noise_cpus > 0) {
    auto parsed = [&](const std::vector<std::string>& texts) {
      std::vector<ordered_json> out;
      for (const auto& text : texts) {
        try {
          out.push_back(ordered_json::parse(text));
        } catch (const std::exception& e) {
          err << "mmsim: warning: a noise probe's report is not JSON: " << e.what() << "\n";
        }
      }
      return out;
    };
    const std::vector<ordered_json> reports = parsed(noise_reports);
    GuestNoise gn = guest_noise(reports, cx.o.sets, guest_host_cpus(gm.nr_cpus()),
                                parsed(alone_reports), sc.noise.host_slice_ns);
    if (gn.sets.empty()) {
      notes.push_back(
          "the guest's noise probes reported nothing usable: the simulation has [noise]'s "
          "defaults");
    } else {
      sets.insert(sets.end(), gn.sets.begin(), gn.sets.end());
      notes.push_back(std::move(gn.note));
    }
    GuestNoise pace = guest_user_pace(reports, cx.o.sets);
    if (!pace.sets.empty()) {
      sets.insert(sets.end(), pace.sets.begin(), pace.sets.end());
      notes.push_back(std::move(pace.note));
    }
  }

  auto user_set = [&](std::string_view key) { return sets_key(cx.o.sets, key); };

  // The guest's clearing of its THPs. Under TCG a 2 MiB clear takes about
  // 3 ms of a vCPU where hardware takes a tenth of one, and a thread that
  // reaches a THP another is still clearing zero-fills one of its own (a
  // lost race): the simulation must clear as slowly. A clear's wall time
  // also holds the host's stalls of its vCPU, which the simulation has from
  // the guest's [noise] (above): so the clear is the tenth percentile of the
  // guest's, one the host left alone (each of a PMD-sized folio, 512 pages:
  // validate's scenarios use no other large folio size), unless the command
  // line sets it.
  {
    std::vector<double> zeroes;
    for (const auto& t : traces) {
      const std::vector<double> z = huge_zero_ns(t);
      zeroes.insert(zeroes.end(), z.begin(), z.end());
    }
    constexpr size_t kEnoughClears = 20;
    if (zeroes.size() >= kEnoughClears && !user_set("costs.page_zero_ns=")) {
      const size_t n = zeroes.size();
      const double median = util::percentile(zeroes, 0.5);
      const double fast = util::percentile(std::move(zeroes), 0.1);
      const double per_page = fast / static_cast<double>(mm::kHugePages);
      sets.push_back(fmt::format("costs.page_zero_ns={:.0f}", per_page));
      notes.push_back(fmt::format(
          "page_zero_ns = {:.0f} ns in the simulation, measured in the guest: the tenth percentile "
          "of its {} clears of a THP at its fault, {:.3f} ms over {} pages (median {:.3f} ms, "
          "the host's stalls of the vCPU included)",
          per_page, n, fast * 1e-6, mm::kHugePages, median * 1e-6));
    } else if (!zeroes.empty() && !user_set("costs.page_zero_ns=")) {
      notes.push_back(fmt::format(
          "the guest cleared {} THPs at their faults, fewer than {}: the simulation keeps its "
          "page_zero_ns",
          zeroes.size(), kEnoughClears));
    }
  }

  // The guest's TLB shootdowns. Under TCG a flush waits for vCPUs the host
  // has descheduled (8 vCPUs on a few host CPUs): tens of ms where hardware
  // takes a few us. task_numa_work charges its own run time 32 times over
  // against the scanning task's next scan, so the guest's scans are spaced
  // by its flushes; the simulation must pay what the guest pays. The flush
  // cost is the median time of the guest's scan calls that changed 1 to 16
  // PTEs; the simulation's tlb_flush_ipi_ns is that (less a local flush)
  // over the remote CPUs a flush has in the simulation (its
  // nr_tlb_remote_flush_received / nr_tlb_remote_flush, seed S), unless the
  // command line sets it.
  std::vector<double> flushes;
  for (const auto& t : traces) {
    const std::vector<double> f = scan_flush_ns(t);
    flushes.insert(flushes.end(), f.begin(), f.end());
  }
  if (flushes.size() >= 5 && !user_set("costs.tlb_flush_ipi_ns=")) {
    std::sort(flushes.begin(), flushes.end());
    const double median = flushes[flushes.size() / 2];
    scenario::PrepareResult sp = scenario::prepare({path, std::nullopt, sets, sc.seed, ""});
    if (sp.run) {
      const workload::RunResult r = scenario::simulate(*sp.run);
      double flushes_sim = 0, received = 0;
      for (const auto& [name, v] : r.vmstat) {
        if (name == "nr_tlb_remote_flush") flushes_sim = static_cast<double>(v);
        if (name == "nr_tlb_remote_flush_received") received = static_cast<double>(v);
      }
      if (flushes_sim > 0 && received > 0) {
        const double remote = received / flushes_sim;
        // The simulation stretches a flush, as all of a vCPU's work, by the
        // host's share while more vCPUs are busy than the host has CPUs
        // (noise.host_cpus); the guest's flush was timed with the probes'
        // vCPUs busy, so the cost is the flush over that stretch.
        // SIMPLIFICATION: a flush waits for its remote vCPUs' turns on the
        // host, which come as the busy vCPUs share the cores: the cost is
        // taken to scale with the stretch, as work does.
        const sim::NoiseConfig& nc = sp.run->scenario.noise;
        const double stretch = nc.enabled ? sim::host_share_factor(nc.host_cpus, noise_cpus) : 1;
        const double ipi = std::max(0.0, median / stretch - sc.costs.tlb_flush_local_ns) / remote;
        sets.push_back(fmt::format("costs.tlb_flush_ipi_ns={:.0f}", ipi));
        notes.push_back(fmt::format(
            "tlb_flush_ipi_ns = {:.0f} ns in the simulation, measured in the guest: a scan's "
            "TLB flush took {:.2f} ms (median of {}, {:.2f}-{:.2f} ms), {:.2f} remote CPUs a "
            "flush in the simulation{}",
            ipi, median * 1e-6, flushes.size(), flushes.front() * 1e-6, flushes.back() * 1e-6,
            remote,
            stretch > 1 ? fmt::format(", which stretches it {:.3g} x with {} vCPUs busy on the "
                                      "host's shared CPUs",
                                      stretch, noise_cpus)
                        : std::string()));
      }
    }
  }

  // The guest's base-page migrations. Under TCG a hinting fault's
  // migration of one page takes tens of us where hardware takes a few.
  // Threads that reach the page meanwhile fault on it: as a hinting fault
  // while it is being isolated (its PTE still PROT_NONE; the fault finds it
  // isolated and gives up) and on its migration entry from the unmap on
  // (they wait and fault again), so the simulation must take as long in
  // each step. From the medians of the guest's single base-page migrations
  // (the isolation to try_to_migrate; try_to_migrate to migrate_pages' end;
  // the copy within it), unless the command line sets them:
  // migrate_isolate_ns is the first less page_alloc_ns; page_copy_ns the
  // copy over the model's scale of a copy between two nodes; and
  // migrate_folio_ns what the second leaves after the copy and the model's
  // PTE cleared and set.
  MigrationTimes moved;
  for (const auto& t : traces) {
    const MigrationTimes m = misplaced_migration_ns(t);
    moved.isolate.insert(moved.isolate.end(), m.isolate.begin(), m.isolate.end());
    moved.moved.insert(moved.moved.end(), m.moved.begin(), m.moved.end());
    moved.copy.insert(moved.copy.end(), m.copy.begin(), m.copy.end());
  }
  // A few dozen are too few: under TCG a vCPU the host deschedules stalls
  // whatever runs on it for milliseconds, which the medians of thousands
  // (6.1's sweeps) shrug off and those of a handful (6.12's, mostly THPs)
  // do not.
  constexpr size_t kEnoughMigrations = 100;
  const size_t timed = moved.moved.size();
  if (timed > 0 && timed < kEnoughMigrations) {
    notes.push_back(fmt::format(
        "the guest timed {} base-page NUMA migrations, fewer than {}: the simulation keeps "
        "its migrate_isolate_ns, page_copy_ns and migrate_folio_ns",
        timed, kEnoughMigrations));
  } else if (timed > 0) {
    // The upper of the middle two, as the flush cost's median above.
    const double isolate = util::percentile(std::move(moved.isolate), 0.5),
                 window = util::percentile(std::move(moved.moved), 0.5),
                 copy = util::percentile(std::move(moved.copy), 0.5);
    // The model's copy between two nodes is page_copy_ns scaled by its
    // DRAM times: the mean over the node pairs, copied by the destination's CPU.
    const topo::Topology& topo = pr.run->topology;
    const cost::CacheModel cache(topo, sc.costs);
    double scale = 0;
    int pairs = 0;
    for (NodeId dst{0}; dst.v < topo.nr_nodes(); ++dst.v) {
      for (NodeId src{0}; src.v < topo.nr_nodes(); ++src.v) {
        if (src == dst || sc.costs.page_copy_ns <= 0) continue;
        scale += cache.page_copy_ns(dst, src, dst) / sc.costs.page_copy_ns;
        ++pairs;
      }
    }
    scale = pairs ? scale / pairs : 1.0;
    const std::pair<const char*, double> costs[] = {
        {"migrate_isolate_ns", std::max(0.0, isolate - sc.costs.page_alloc_ns)},
        {"page_copy_ns", copy / scale},
        {"migrate_folio_ns",
         std::max(0.0, window - copy - sc.costs.pte_clear_ns - sc.costs.pte_set_ns)},
    };
    std::string set;
    for (const auto& [key, ns] : costs) {
      if (user_set(fmt::format("costs.{}=", key))) continue;
      sets.push_back(fmt::format("costs.{}={:.0f}", key, ns));
      set += fmt::format("{}{} = {:.0f} ns", set.empty() ? "" : ", ", key, ns);
    }
    if (!set.empty()) {
      notes.push_back(fmt::format(
          "{} in the simulation, measured in the guest: its {} base-page NUMA migrations "
          "took {:.1f} us to isolate, {:.1f} us from unmap to end, {:.1f} us of it the copy "
          "(medians); the model's copy between two nodes is {:.2f} x page_copy_ns",
          set, timed, isolate * 1e-3, window * 1e-3, copy * 1e-3, scale));
    }
  }

  // The simulation: the same scenario, the kernel's version, seeds S..S+N-1.
  // The simulation runs under the guest's hierarchy (the scenario's, or v2 set above).
  const bool run_cgroup_only = compares_run_cgroup(hierarchy, hierarchy, !sc.cgroups.empty());
  if (run_cgroup_only) {
    notes.push_back(
        "cgroup v2: the guest's \"/\" is the run's cgroup, which holds only the scenario's "
        "cgroups (mmsim-exec stays outside); the simulation's \"/\" is shown as the sum of its "
        "top-level cgroups, without memory.peak");
  }
  std::vector<ordered_json> simulated;
  double sim_wall = 0;
  for (int i = 0; i < repeat; ++i) {
    scenario::PrepareResult sp =
        scenario::prepare({path, std::nullopt, sets, sc.seed + static_cast<uint64_t>(i), ""});
    if (!sp.run) {
      for (const auto& d : sp.diagnostics) err << d.str() << "\n";
      oc.rc = 2;
      return oc;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const workload::RunResult r = scenario::simulate(*sp.run);
    sim_wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    report::RunInfo info{&sp.run->scenario, &sp.run->topology, &r, 0, false};
    simulated.push_back(report::run_json(info));
    if (run_cgroup_only) as_run_cgroup(simulated.back());
  }

  // Counters side by side: the judged ones (the scenario's tolerances) first.
  std::map<std::string, Series> rs, ss;
  for (const auto& j : real) {
    for (const auto& [c, v] : flat_counters(j)) rs[c].values.push_back(v);
  }
  std::set<std::string> modelled;
  for (const auto& j : simulated) {
    for (const auto& [c, v] : flat_counters(j)) {
      ss[c].values.push_back(v);
      modelled.insert(c);
    }
  }
  // A vmstat counter no run changed is 0 on the kernel's side.
  auto real_of = [&](const std::string& c) {
    auto it = rs.find(c);
    if (it != rs.end() && it->second.values.size() == real.size()) return it->second;
    Series s;
    for (const auto& j : real) {
      const auto f = flat_counters(j);
      const auto x = f.find(c);
      s.values.push_back(x == f.end() ? 0.0 : x->second);
    }
    return s;
  };
  std::set<std::string> judged;
  for (const auto& t : sc.validate.tolerances) {
    if (is_gauge(t.counter)) {
      err << fmt::format(
          "{}:{}:{}: error: validate.tolerance.{}: a gauge (its change on the "
          "kernel, its end value in the simulation): not comparable\n",
          path, t.line, t.col, t.counter);
      oc.rc = 2;
      return oc;
    }
    if (!modelled.count(t.counter) && !rs.count(t.counter)) {
      err << fmt::format(
          "{}:{}:{}: error: validate.tolerance.{}: no such counter in either "
          "report (vmstat names, metric:NAME, memcg:PATH:KEY, tasks:minflt)\n",
          path, t.line, t.col, t.counter);
      oc.rc = 2;
      return oc;
    }
    judged.insert(t.counter);
    oc.verdicts.push_back(judge(t.counter, real_of(t.counter), ss[t.counter],
                                modelled.count(t.counter) > 0, Tolerance{t.relative, t.value}));
  }
  // The programs' own work, counted by their count ops (a loop's passes):
  // how fast the guest's CPUs ran it against the simulation's. No time is
  // judged under TCG, but races between threads (a follower's fault on a
  // page its leader is migrating, a lost zero-fill race) and the scan
  // passes a sweep meets follow that pace, so it is said.
  for (const std::string& name : sc.workload.counters) {
    const std::string key = "metric:" + name;
    const auto r = rs.find(key), s = ss.find(key);
    if (r == rs.end() || s == ss.end()) continue;
    const double real_n = r->second.mean(), sim_n = s->second.mean();
    if (real_n <= 0 || sim_n <= 0) continue;
    notes.push_back(fmt::format(
        "the programs' `{}` (count ops): {:.4g} in the guest, {:.4g} simulated: the guest ran "
        "their work {:.2g} x {} than the simulation; races between threads and the scan passes "
        "a sweep meets follow that pace",
        name, real_n, sim_n, std::max(real_n, sim_n) / std::min(real_n, sim_n),
        real_n < sim_n ? "slower" : "faster"));
  }

  // Then what either side changed, unjudged: counters both have, not gauges,
  // not per zone, and only those this kernel counts.
  const bool tlb_counted = k->config("DEBUG_TLBFLUSH") == "y";
  if (!tlb_counted) {
    notes.push_back("nr_tlb_* are not counted by this kernel (CONFIG_DEBUG_TLBFLUSH is unset)");
  }
  for (const auto& [c, s] : ss) {
    if (judged.count(c) || is_gauge(c) || c.rfind("metric:", 0) == 0) continue;
    if (c.rfind("pgalloc_", 0) == 0 || (!tlb_counted && c.rfind("nr_tlb_", 0) == 0)) continue;
    const Series r = real_of(c);
    if (s.mean() == 0 && r.mean() == 0) continue;
    oc.verdicts.push_back(judge(c, r, s, true, std::nullopt));
  }

  // The table.
  auto& out = cx.out;
  out << fmt::format("\nvalidate {} ({}) on Linux {}\n", sc.name, path, k->release);
  out << fmt::format("kernel   {} {} (Debian)\n", k->package, k->version);
  out << fmt::format("qemu     {}, {}{}\n", cx.qemu, br.accel == "kvm" ? "KVM" : "TCG",
                     br.accel_note.empty() ? std::string() : fmt::format(" ({})", br.accel_note));
  out << fmt::format("machine  {} nodes, {} CPUs, {} MiB per node; transparent_hugepage={}\n",
                     gm.node_mem.size(), gm.nr_cpus(),
                     gm.node_mem.empty() ? 0 : gm.node_mem[0] >> 20,
                     mm::thp_word(sc.kernel.mm.thp_enabled));
  out << fmt::format(
      "runs     {} in the guest ({:.1f} s of QEMU, boot {:.1f} s); simulated with "
      "seeds {}..{} in {:.2f} s\n",
      repeat, br.qemu.wall_s, br.up_s, sc.seed, sc.seed + repeat - 1, sim_wall);
  for (const auto& n : notes) out << "note     " << n << "\n";
  if (br.accel == "tcg") {
    out << "note     under TCG guest time is not that of real hardware: counters are judged, "
           "times are not\n";
  }
  auto range = [](const Series& s) { return mean_range_text(s.mean(), s.min(), s.max()); };
  auto err_text = [](const Verdict& v) {
    return std::isinf(v.error) ? std::string("n/a") : fmt::format("{:+.1f}%", v.error * 100);
  };
  out << fmt::format("\n{:<34} {:>26} {:>26} {:>9} {:>16} {:>9}  {}\n", "counter",
                     "real mean (range)", "simulated mean (range)", "error", "95% interval",
                     "tolerance", "verdict");
  int passed = 0, failed = 0, beyond = 0;
  for (const auto& v : oc.verdicts) {
    if (v.tolerance) (v.pass ? passed : failed)++;
    beyond += v.fail_beyond_spread;
    out << fmt::format(
        "{:<34} {:>26} {:>26} {:>9} {:>16} {:>9}  {}\n", v.counter, range(v.real),
        v.modelled ? range(v.sim) : "-", err_text(v), v.modelled ? interval_text(v.error_ci) : "-",
        v.tolerance ? v.tolerance->text() : "-",
        !v.tolerance ? (v.modelled ? "" : "not modelled")
                     : (v.pass ? "pass" : (v.modelled ? "FAIL" : "FAIL (not modelled)")));
  }
  out << fmt::format("{} of {} judged counters within tolerance", passed, passed + failed);
  if (failed) {
    out << fmt::format(
        "; {} of the {} outside it beyond the runs' spread (the whole 95% interval of the "
        "error outside the tolerance)",
        beyond, failed);
  }
  out << "\n";
  out.flush();

  ordered_json counters = ordered_json::array();
  for (const auto& v : oc.verdicts) {
    ordered_json c = {{"counter", v.counter},
                      {"real",
                       {{"mean", v.real.mean()},
                        {"min", v.real.min()},
                        {"max", v.real.max()},
                        {"values", v.real.values}}}};
    if (v.modelled) {
      c["simulated"] = {{"mean", v.sim.mean()},
                        {"min", v.sim.min()},
                        {"max", v.sim.max()},
                        {"values", v.sim.values}};
    }
    c["error"] = std::isinf(v.error) ? ordered_json(nullptr) : ordered_json(v.error);
    c["error_ci"] = v.error_ci ? ordered_json::array({v.error_ci->first, v.error_ci->second})
                               : ordered_json(nullptr);
    if (v.tolerance) {
      c["tolerance"] = v.tolerance->text();
      c["verdict"] = v.pass ? "pass" : "fail";
      if (!v.pass) c["fail_beyond_spread"] = v.fail_beyond_spread;
    }
    counters.push_back(c);
  }
  oc.json = {{"scenario", sc.name},
             {"path", path},
             {"kernel",
              {{"series", series},
               {"package", k->package},
               {"version", k->version},
               {"release", k->release}}},
             {"qemu", cx.qemu},
             {"accel", br.accel},
             {"accel_note", br.accel_note},
             {"machine",
              {{"nodes", gm.node_mem.size()},
               {"cpus", gm.nr_cpus()},
               {"mem_per_node_bytes", gm.node_mem.empty() ? 0 : gm.node_mem[0]}}},
             {"repeat", repeat},
             {"qemu_wall_s", br.qemu.wall_s},
             {"boot_s", br.up_s},
             {"notes", notes},
             // What the simulation ran with beyond the scenario: `mmsim run`
             // with these --set (and --seed) gives its side again.
             {"simulation_sets", sets},
             {"passed", passed},
             {"failed", failed},
             {"failed_beyond_spread", beyond},
             {"counters", counters},
             {"real_runs", real},
             {"simulated_first", simulated.front()}};
  return oc;
}

}  // namespace

std::string validation_markdown(const std::vector<ordered_json>& results,
                                const std::vector<std::pair<std::string, std::string>>& skipped,
                                const std::string& qemu) {
  std::string md = "# Validation: mmsim against real Linux kernels\n\n";
  md += fmt::format(
      "Generated by `make validate` on {} (QEMU: {}). Each scenario of `validate/` runs in a "
      "QEMU guest shaped as its machine, by `mmsim native` inside the guest, and is simulated "
      "with the kernel's version; counters are the kernel's own (/proc/vmstat, memory.stat) "
      "against the simulation's. Only counters with a tolerance (the scenario's "
      "`[validate.tolerance]`) are judged. Guest time under TCG is not real hardware time: "
      "no time is judged. Each error has its 95% interval (Welch's, from both sides' runs): a "
      "failure whose interval reaches inside the tolerance is marked \"within the runs' "
      "spread\", since that many runs cannot tell it from agreement; more (`--repeat`) "
      "can.\n\n",
      today(), qemu);
  md += "## Summary\n\n| scenario | kernel | judged | passed | failed |\n|---|---|---|---|---|\n";
  for (const auto& r : results) {
    const int failed = r["failed"].get<int>(), beyond = r.value("failed_beyond_spread", 0);
    md +=
        fmt::format("| {} | {} | {} | {} | {}{} |\n", r["scenario"].get<std::string>(),
                    r["kernel"]["release"].get<std::string>(), r["passed"].get<int>() + failed,
                    r["passed"].get<int>(), failed,
                    failed > beyond ? fmt::format(" ({} within the runs' spread)", failed - beyond)
                                    : std::string());
  }
  for (const auto& [what, why] : skipped)
    md += fmt::format("| {} | skipped: {} | | | |\n", what, why);
  for (const auto& r : results) {
    md += fmt::format(
        "\n## {} on {}\n\n`{}`; kernel package {} {}; {}; {} runs; {} nodes, {} "
        "CPUs.\n\n",
        r["scenario"].get<std::string>(), r["kernel"]["release"].get<std::string>(),
        r["path"].get<std::string>(), r["kernel"]["package"].get<std::string>(),
        r["kernel"]["version"].get<std::string>(),
        r["accel"].get<std::string>() == "kvm" ? "KVM" : "TCG", r["repeat"].get<int>(),
        r["machine"]["nodes"].get<int>(), r["machine"]["cpus"].get<int>());
    for (const auto& n : r["notes"]) md += fmt::format("Note: {}\n\n", n.get<std::string>());
    md +=
        "| counter | real mean (min-max) | simulated mean (min-max) | error | its 95% interval | "
        "tolerance | verdict |\n"
        "|---|---|---|---|---|---|---|\n";
    auto range = [](const ordered_json& x) {
      return mean_range_text(x["mean"].get<double>(), x["min"].get<double>(),
                             x["max"].get<double>());
    };
    for (const auto& c : r["counters"]) {
      const std::string sim = c.contains("simulated") ? range(c["simulated"]) : "not modelled";
      const std::string e =
          c["error"].is_null() ? "n/a" : fmt::format("{:+.1f}%", c["error"].get<double>() * 100);
      std::optional<std::pair<double, double>> ci;
      if (c.contains("error_ci") && c["error_ci"].is_array())
        ci = std::pair(c["error_ci"][0].get<double>(), c["error_ci"][1].get<double>());
      std::string verdict;
      if (c.contains("verdict")) {
        verdict = c["verdict"] == "pass"                 ? "pass"
                  : c.value("fail_beyond_spread", false) ? "**FAIL**"
                                                         : "**FAIL** (within the runs' spread)";
      }
      md += fmt::format("| `{}` | {} | {} | {} | {} | {} | {} |\n", c["counter"].get<std::string>(),
                        range(c["real"]), sim, e, interval_text(ci), c.value("tolerance", "-"),
                        verdict);
    }
  }
  return md;
}

int run_validate(const ValidateOptions& o, std::ostream& out, std::ostream& err) {
  if (o.scenarios.empty()) {
    err << "mmsim: error: validate: no scenario given\n";
    return 2;
  }
  for (const auto& k : o.kernels) {
    if (!KernelVersion::parse(k) || k.find('.') == std::string::npos) {
      err << fmt::format(
          "mmsim: error: --kernel: expected a series such as 6.1 or 6.12, got "
          "\"{}\"\n",
          k);
      return 2;
    }
  }
  if (o.accel != "auto" && o.accel != "kvm" && o.accel != "tcg") {
    err << fmt::format("mmsim: error: --accel: expected auto, kvm or tcg, got \"{}\"\n", o.accel);
    return 2;
  }
  if (o.repeat < 0 || o.repeat > 100) {
    err << fmt::format("mmsim: error: --repeat: expected 1 to 100, got {}\n", o.repeat);
    return 2;
  }
  if (!(o.timeout_s > 0)) {
    err << "mmsim: error: --timeout: expected a positive number of seconds\n";
    return 2;
  }
  for (const auto& e : o.trace_events) {
    // A directory's name under events/: nothing the init script's shell
    // would read as more than a word.
    const size_t slash = e.find('/');
    const bool word = std::all_of(e.begin(), e.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '/';
    });
    if (!word || slash == 0 || slash == std::string::npos || slash + 1 == e.size() ||
        e.find('/', slash + 1) != std::string::npos) {
      err << fmt::format(
          "mmsim: error: --trace-event: expected a tracepoint as GROUP/NAME, such as "
          "vmscan/mm_vmscan_kswapd_wake, got \"{}\"\n",
          e);
      return 2;
    }
  }
  for (const auto& k : o.kprobes) {
    // A symbol, then fetch arguments: words the init script can quote.
    const std::string symbol = k.substr(0, k.find(' '));
    const bool symbol_ok = !symbol.empty() && std::all_of(symbol.begin(), symbol.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
    const bool args_ok = std::all_of(k.begin(), k.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_ =%()+-:$.,@", c);
    });
    if (!symbol_ok || !args_ok || std::isdigit(static_cast<unsigned char>(symbol[0]))) {
      err << fmt::format(
          "mmsim: error: --kprobe: expected a kernel function and optional fetch arguments, such "
          "as \"do_huge_pmd_numa_page\" or \"migrate_misplaced_folio node=%dx:s32\", got \"{}\"\n",
          k);
      return 2;
    }
  }
  if ((!o.trace_events.empty() || !o.kprobes.empty()) && o.scan_trace.empty()) {
    err << fmt::format(
        "mmsim: error: {}: the events go to the --scan-trace files; give --scan-trace DIR too\n",
        o.trace_events.empty() ? "--kprobe" : "--trace-event");
    return 2;
  }
  if (!o.scan_trace.empty()) {
    // Made now: a directory that cannot be is refused before any guest runs.
    std::error_code ec;
    fs::create_directories(o.scan_trace, ec);
    if (ec || !fs::is_directory(o.scan_trace) || ::access(o.scan_trace.c_str(), W_OK) != 0) {
      err << fmt::format("mmsim: error: --scan-trace: cannot write to the directory {}{}\n",
                         o.scan_trace, ec ? ": " + ec.message() : std::string());
      return 2;
    }
  }
  native::SignalScope signals;
  Context cx{o, out, err, signals, o.cache_dir.empty() ? kernel_cache_dir() : o.cache_dir, ""};
  cx.qemu = qemu_version(signals);
  if (cx.qemu.empty()) {
    err << "mmsim: error: cannot run qemu-system-x86_64 (Debian package qemu-system-x86)\n";
    return native::kExitHostSetup;
  }
  std::vector<ordered_json> results;
  std::vector<std::pair<std::string, std::string>> skipped;
  int worst = 0;
  for (const auto& path : o.scenarios) {
    std::vector<std::string> kernels = o.kernels;
    if (kernels.empty()) {
      scenario::PrepareResult pr =
          scenario::prepare({path, std::nullopt, o.sets, std::nullopt, ""});
      if (!pr.run) {
        for (const auto& d : pr.diagnostics) err << d.str() << "\n";
        return 2;
      }
      kernels = pr.run->scenario.validate.kernels;
    }
    for (const auto& series : kernels) {
      Outcome oc = validate_one(cx, path, series);
      if (oc.rc > 128) return oc.rc;
      if (oc.rc == 2) return 2;
      if (!oc.skipped.empty()) {
        err << fmt::format("mmsim: skipped {} on {}: {}\n", path, series, oc.skipped);
        skipped.emplace_back(fmt::format("{} ({})", path, series), oc.skipped);
        continue;
      }
      if (oc.rc) {
        worst = std::max(worst, oc.rc);
        skipped.emplace_back(fmt::format("{} ({})", path, series), "the guest run failed");
        continue;
      }
      if (oc.json["failed"].get<int>() > 0) worst = std::max(worst, kExitOutOfTolerance);
      results.push_back(std::move(oc.json));
    }
  }
  std::string werr;
  if (!o.json.empty()) {
    ordered_json all = {{"date", today()}, {"qemu", cx.qemu}, {"results", results}};
    if (!util::write_file_atomically(o.json, all.dump(2) + "\n", &werr)) {
      err << "mmsim: error: " << werr << "\n";
      return native::kExitHostSetup;
    }
  }
  if (!o.markdown.empty() &&
      !util::write_file_atomically(o.markdown, validation_markdown(results, skipped, cx.qemu),
                                   &werr)) {
    err << "mmsim: error: " << werr << "\n";
    return native::kExitHostSetup;
  }
  if (worst == kExitOutOfTolerance) {
    err << "mmsim: some judged counters are outside their tolerance (exit 4)\n";
  }
  return worst;
}

}  // namespace mmsim::validate
