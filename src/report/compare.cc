#include "report/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "report/report.h"

namespace mmsim::report {

namespace {

using nlohmann::ordered_json;

// vmstat counters shown for every combination; absent names count as 0 (the
// model may not produce them yet).
constexpr std::array<const char*, 3> kVmRows = {"numa_hint_faults", "numa_pages_migrated",
                                                "pgmigrate_fail"};
// Keys of metrics_json() besides the named counters.
using workload::kTimeMetrics;
// perf bench numa's NUMA-convergence-latency ([run] convergence).
constexpr const char* kConvergedMetric = "converged_s";

struct Combination {
  std::vector<std::pair<std::string, std::string>> settings;  // (key, value), in --vary order
  std::vector<std::string> overrides;                         // --set ones, then KEY=V
  std::string label() const {
    if (settings.empty()) return "as given";
    std::string s;
    for (const auto& [k, v] : settings) {
      if (!s.empty()) s += ' ';
      s += k;
      s += '=';
      s += v;
    }
    return s;
  }
};

// The cartesian product; the first --vary varies slowest.
std::vector<Combination> combinations(const std::vector<Vary>& varies,
                                      const std::vector<std::string>& sets) {
  std::vector<Combination> out;
  std::vector<size_t> pick(varies.size(), 0);
  while (true) {
    Combination c;
    c.overrides = sets;
    for (size_t i = 0; i < varies.size(); ++i) {
      c.settings.emplace_back(varies[i].key, varies[i].values[pick[i]]);
      c.overrides.push_back(varies[i].key + "=" + varies[i].values[pick[i]]);
    }
    out.push_back(std::move(c));
    size_t i = varies.size();
    while (i > 0 && ++pick[i - 1] == varies[i - 1].values.size()) pick[--i] = 0;
    if (i == 0) break;
  }
  return out;
}

// What one run contributes to the table and the JSON.
struct RunSummary {
  uint64_t seed = 0;
  double metric = 0;
  double elapsed_s = 0, user_s = 0, sys_s = 0, iowait_s = 0;
  std::array<double, kVmRows.size()> vm{};
  double tasks_in_d = 0;  // iowait_s / elapsed_s: tasks in uninterruptible sleep, on average
  double iowait_pct = 0;  // iowait_s over all CPUs' time, as top(1) shows it
  ordered_json metrics;
  ordered_json vmstat;
};

// A run's record: what the table and the JSON need of it, as JSON, so that
// a run made by another process (a shard) counts exactly as one made here.
ordered_json run_record(size_t job, const scenario::Prepared& run, const workload::RunResult& r,
                        const std::string& who) {
  const RunInfo info{&run.scenario, &run.topology, &r, 0.0, false};
  ordered_json vmstat = ordered_json::object();
  for (const auto& [name, v] : r.vmstat) vmstat[name] = v;
  ordered_json warnings = ordered_json::array();
  if (r.time_limit_hit)
    warnings.push_back(fmt::format(
        "mmsim: warning: {}: the time limit ended the run with tasks still alive", who));
  if (!r.errors.empty())
    warnings.push_back(fmt::format("mmsim: warning: {}: {} error(s) in the run, e.g. {}", who,
                                   r.errors.size(), r.errors.front()));
  ordered_json rec = {{"job", job},
                      {"seed", run.scenario.seed},
                      {"warnings", warnings},
                      {"limit_error", r.limit_error.empty() ? std::string()
                                                            : fmt::format("mmsim: error: {}: {}",
                                                                          who, r.limit_error)},
                      {"metrics", metrics_json(info)},
                      {"vmstat", vmstat}};
  // Through text and back: the values a shard's file gives, to the bit.
  return ordered_json::parse(rec.dump());
}

RunSummary summarize(const ordered_json& rec, size_t nr_cpus, const std::string& metric) {
  RunSummary s;
  s.seed = rec.at("seed").get<uint64_t>();
  s.metrics = rec.at("metrics");
  s.metric = s.metrics.at(metric).get<double>();
  s.elapsed_s = s.metrics.at("elapsed_s").get<double>();
  s.user_s = s.metrics.at("user_s").get<double>();
  s.sys_s = s.metrics.at("sys_s").get<double>();
  s.iowait_s = s.metrics.at("iowait_s").get<double>();
  s.vmstat = rec.at("vmstat");
  for (size_t i = 0; i < kVmRows.size(); ++i) {
    if (s.vmstat.contains(kVmRows[i])) s.vm[i] = s.vmstat.at(kVmRows[i]).get<double>();
  }
  if (s.elapsed_s > 0) {
    s.tasks_in_d = s.iowait_s / s.elapsed_s;
    const double cpus = static_cast<double>(std::max<size_t>(1, nr_cpus));
    s.iowait_pct = s.iowait_s / (s.elapsed_s * cpus) * 100.0;
  }
  return s;
}

// Means and variances of one value over a combination's runs.
template <typename F>
Sample sample(const std::vector<RunSummary>& runs, F value) {
  std::vector<double> v;
  v.reserve(runs.size());
  for (const auto& r : runs) v.push_back(value(r));
  return sample_of(v);
}

// Counts print whole; other values with a precision that suits their size.
std::string format_number(double x) {
  if (x == 0) return "0";
  const double a = std::fabs(x);
  if (x == std::floor(x) && a < 1e15) return fmt::format("{:.0f}", x);
  if (a >= 1000) return fmt::format("{:.1f}", x);
  if (a >= 1) return fmt::format("{:.3f}", x);
  return fmt::format("{:.4g}", x);
}

std::string format_change(const Change& c) {
  if (!c.pct) return "n/a";
  std::string s = fmt::format("{:+.2f}%", *c.pct);
  if (c.ci) return s + fmt::format(" [{:+.2f}, {:+.2f}]", c.ci->first, c.ci->second);
  return s + " [n/a]";
}

// Packs the space-separated words of `text` into lines of at most `width`;
// a word longer than that is cut after its last '=' or '.' that fits (a
// setting's key from its value), or else at the width.
std::vector<std::string> wrap(const std::string& text, size_t width) {
  std::vector<std::string> lines;
  std::istringstream words(text);
  std::string line;
  for (std::string w; words >> w;) {
    while (w.size() > width) {
      if (!line.empty()) lines.push_back(std::exchange(line, ""));
      const size_t sep = w.find_last_of("=.", width - 1);
      const size_t cut = sep != std::string::npos && sep > 0 ? sep + 1 : width;
      lines.push_back(w.substr(0, cut));
      w.erase(0, cut);
    }
    if (w.empty()) continue;
    if (!line.empty() && line.size() + 1 + w.size() > width)
      lines.push_back(std::exchange(line, ""));
    line += (line.empty() ? "" : " ") + w;
  }
  if (!line.empty() || lines.empty()) lines.push_back(line);
  return lines;
}

}  // namespace

std::string format_table(const std::vector<std::string>& headers, const std::vector<Row>& rows) {
  constexpr size_t kMinWidth = 12;
  constexpr size_t kMaxWordWidth = 32;  // longer settings are cut across header lines
  size_t label_w = 0;
  for (const auto& r : rows) label_w = std::max(label_w, r.label.size());
  std::vector<std::vector<std::string>> head(headers.size());
  std::vector<size_t> width(headers.size(), kMinWidth);
  size_t head_lines = 1;
  for (size_t c = 0; c < headers.size(); ++c) {
    for (const auto& r : rows) width[c] = std::max(width[c], r.cells[c].size());
    std::istringstream words(headers[c]);
    for (std::string w; words >> w;)
      width[c] = std::max(width[c], std::min(w.size(), kMaxWordWidth));
    head[c] = wrap(headers[c], width[c]);
    head_lines = std::max(head_lines, head[c].size());
  }
  std::string out;
  for (size_t l = 0; l < head_lines; ++l) {
    std::string line = fmt::format("{:<{}}", "", label_w);
    for (size_t c = 0; c < headers.size(); ++c) {
      // Bottom-aligned, so that the last line of every header sits on the rule.
      const size_t pad = head_lines - head[c].size();
      line += fmt::format("  {:>{}}", l < pad ? "" : head[c][l - pad], width[c]);
    }
    out += line.substr(0, line.find_last_not_of(' ') + 1) + "\n";
  }
  std::string rule(label_w, '-');
  for (size_t w : width) rule += "  " + std::string(w, '-');
  out += rule + "\n";
  for (const auto& r : rows) {
    std::string line = fmt::format("{:<{}}", r.label, label_w);
    for (size_t c = 0; c < r.cells.size(); ++c)
      line += fmt::format("  {:>{}}", r.cells[c], width[c]);
    out += line + "\n";
  }
  return out;
}

namespace {

bool is_metric_of(const std::string& metric, const scenario::Scenario& sc) {
  const auto& names = sc.workload.counters;
  return std::find(names.begin(), names.end(), metric) != names.end() ||
         std::find(kTimeMetrics.begin(), kTimeMetrics.end(), metric) != kTimeMetrics.end() ||
         (metric == kConvergedMetric && sc.workload.convergence_program != UINT32_MAX);
}

// A time (less is better), not a throughput.
bool is_time_metric(const std::string& metric) {
  return std::find(kTimeMetrics.begin(), kTimeMetrics.end(), metric) != kTimeMetrics.end() ||
         metric == kConvergedMetric;
}

// A compare's runs, validated: every combination's scenario, once per
// repeat, in job order.
struct Plan {
  std::vector<Combination> combos;
  std::vector<scenario::Prepared> jobs;  // combination c, repeat r at c * repeat + r
  std::string metric;
  uint32_t repeat = 1;
  // "KEY=V ..., seed S": a job in warnings.
  std::string who(size_t job) const;
};

// The most runs (combinations x repeats) one compare makes.
constexpr uint64_t kMaxCompareRuns = 10'000;

// Runs every job on up to `threads` threads; results land by index, so they
// do not depend on the thread count. Rethrows the first exception of a run.
std::vector<workload::RunResult> run_all(const std::vector<scenario::Prepared>& jobs,
                                         uint32_t threads,
                                         const std::function<void(size_t, size_t)>& done_hook) {
  std::vector<workload::RunResult> results(jobs.size());
  std::atomic<size_t> next{0};
  std::atomic<size_t> done{0};
  std::mutex hook_mu;
  const size_t n = std::min<size_t>(std::max<uint32_t>(threads, 1), jobs.size());
  std::vector<std::exception_ptr> failures(n);
  auto work = [&](size_t w) {
    try {
      for (size_t i = next++; i < jobs.size(); i = next++) {
        results[i] = scenario::simulate(jobs[i]);
        const size_t d = ++done;
        if (done_hook) {
          const std::lock_guard lock(hook_mu);
          done_hook(d, jobs.size());
        }
      }
    } catch (...) {
      failures[w] = std::current_exception();
      next = jobs.size();  // the others stop after their current run
    }
  };
  {
    std::vector<std::jthread> pool;
    for (size_t w = 0; w < n; ++w) pool.emplace_back(work, w);
  }
  for (const auto& f : failures) {
    if (f) std::rethrow_exception(f);
  }
  return results;
}

}  // namespace

std::optional<Shard> parse_shard(const std::string& arg, std::string* error) {
  const auto slash = arg.find('/');
  auto number = [](const std::string& t) -> std::optional<uint32_t> {
    if (t.empty() || t.size() > 9 || t.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    return static_cast<uint32_t>(std::stoul(t));
  };
  const auto k = slash == std::string::npos ? std::nullopt : number(arg.substr(0, slash));
  const auto n = slash == std::string::npos ? std::nullopt : number(arg.substr(slash + 1));
  if (!k || !n || *k < 1 || *n < 1 || *k > *n) {
    *error = fmt::format("--shard {}: expected K/N with 1 <= K <= N, e.g. 2/8", arg);
    return std::nullopt;
  }
  return Shard{*k, *n};
}

std::optional<Vary> parse_vary(const std::string& arg, std::string* error) {
  const auto eq = arg.find('=');
  if (eq == std::string::npos) {
    *error = fmt::format("--vary {}: expected KEY=V1,V2,... (no '=')", arg);
    return std::nullopt;
  }
  Vary v;
  v.key = arg.substr(0, eq);
  if (v.key.empty()) {
    *error = fmt::format("--vary {}: expected KEY=V1,V2,... (no key before '=')", arg);
    return std::nullopt;
  }
  const std::string list = arg.substr(eq + 1);
  if (list.empty()) {
    *error = fmt::format("--vary {}: no values after '='", arg);
    return std::nullopt;
  }
  size_t start = 0;
  while (true) {
    const size_t comma = list.find(',', start);
    const std::string value =
        list.substr(start, comma == std::string::npos ? comma : comma - start);
    if (value.empty()) {
      *error =
          fmt::format("--vary {}: empty value in the list (values are separated by commas)", arg);
      return std::nullopt;
    }
    v.values.push_back(value);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return v;
}

Sample sample_of(const std::vector<double>& values) {
  Sample s;
  s.n = values.size();
  if (s.n == 0) return s;
  for (double v : values) s.mean += v;
  s.mean /= static_cast<double>(s.n);
  if (s.n > 1) {
    for (double v : values) s.var += (v - s.mean) * (v - s.mean);
    s.var /= static_cast<double>(s.n - 1);
  }
  return s;
}

Change change_vs(const Sample& base, const Sample& x) {
  Change c;
  if (base.mean == 0) return c;
  const double diff = x.mean - base.mean;
  c.pct = diff / std::fabs(base.mean) * 100.0;
  if (base.n < 2 || x.n < 2) return c;
  const double vb = base.var / static_cast<double>(base.n);
  const double vx = x.var / static_cast<double>(x.n);
  const double se = std::sqrt(vb + vx);
  double half = 0;  // both samples constant: no spread, the interval is a point
  if (se > 0) {
    // Welch-Satterthwaite degrees of freedom.
    const double df =
        (vb + vx) * (vb + vx) /
        (vb * vb / static_cast<double>(base.n - 1) + vx * vx / static_cast<double>(x.n - 1));
    half = t_quantile_975(df) * se;
  }
  c.ci = {(diff - half) / std::fabs(base.mean) * 100.0,
          (diff + half) / std::fabs(base.mean) * 100.0};
  return c;
}

double t_quantile_975(double df) {
  // Student's t, two-sided 95% (the 0.975 quantile), df = 1..30, then 40, 60,
  // 120 and infinity. Standard table values.
  static constexpr std::array<double, 30> kSmall = {
      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
      2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
      2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  static constexpr std::array<std::pair<double, double>, 4> kLarge = {
      {{30, 2.042}, {40, 2.021}, {60, 2.000}, {120, 1.980}}};
  if (!(df >= 1)) return kSmall[0];  // also NaN: the widest, to be safe
  const double d = std::floor(df);
  if (d <= 30) return kSmall[static_cast<size_t>(d) - 1];
  // Beyond 30, interpolate linearly in 1/df, as printed tables suggest.
  for (size_t i = 0; i + 1 < kLarge.size(); ++i) {
    const auto [d0, t0] = kLarge[i];
    const auto [d1, t1] = kLarge[i + 1];
    if (d <= d1) return t0 + (t1 - t0) * (1 / d0 - 1 / d) / (1 / d0 - 1 / d1);
  }
  const double d0 = kLarge.back().first, t0 = kLarge.back().second;
  return t0 + (1.960 - t0) * (1 / d0 - 1 / d) / (1 / d0);
}

namespace {

// Checks the arguments and prepares every combination's scenario (nothing
// runs if any fails: rep says why).
std::optional<Plan> make_plan(const CompareOptions& o, CompareReport& rep) {
  auto fail = [&rep](const std::string& line) {
    rep.err += line + "\n";
    rep.exit_code = 2;
  };

  // 1. The arguments.
  std::vector<Vary> varies;
  std::set<std::string> keys;
  for (const auto& arg : o.vary) {
    std::string error;
    if (auto v = parse_vary(arg, &error)) {
      if (!keys.insert(v->key).second) {
        fail(fmt::format("mmsim: error: --vary {}: {} is varied twice", arg, v->key));
      } else {
        varies.push_back(std::move(*v));
      }
    } else {
      fail("mmsim: error: " + error);
    }
  }
  if (o.repeat < 1) fail("mmsim: error: --repeat: must be at least 1");
  if (o.jobs < 1) fail("mmsim: error: --jobs: must be at least 1");
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  if (o.jobs > workload::kMaxJobsPerCpu * cpus) {
    fail(fmt::format("mmsim: error: --jobs: {} is more than {} ({} per CPU of this host's {})",
                     o.jobs, workload::kMaxJobsPerCpu * cpus, workload::kMaxJobsPerCpu, cpus));
  }
  uint64_t runs_wanted = o.repeat;
  for (const auto& v : varies) runs_wanted = workload::mul_sat(runs_wanted, v.values.size());
  if (runs_wanted > kMaxCompareRuns) {
    fail(fmt::format(
        "mmsim: error: --vary/--repeat: {} combination(s) x {} repeat(s) is more than the {} "
        "runs a compare makes",
        runs_wanted / std::max<uint32_t>(o.repeat, 1), o.repeat, kMaxCompareRuns));
  }
  if (rep.exit_code) return std::nullopt;

  // 2. Every combination's scenario, before anything runs.
  const std::vector<Combination> combos = combinations(varies, o.sets);
  std::set<std::string> varied_args;
  for (const auto& v : varies) {
    for (const auto& value : v.values) varied_args.insert(v.key + "=" + value);
  }
  const std::set<std::string> set_args(o.sets.begin(), o.sets.end());
  std::vector<scenario::Prepared> prepared;
  std::set<std::string> printed;
  for (const auto& c : combos) {
    scenario::PrepareResult pr =
        scenario::prepare({o.scenario, std::nullopt, c.overrides, o.seed, ""});
    for (auto& d : pr.diagnostics) {
      // The loader names every override "--set"; say where a varied one came from.
      const std::string arg = d.file.starts_with("--set ") ? d.file.substr(6) : "";
      if (varied_args.count(arg) && !set_args.count(arg)) d.file = "--vary " + arg;
      if (printed.insert(d.str()).second) rep.err += d.str() + "\n";
    }
    if (!pr.diagnostics.empty()) {
      rep.exit_code = 2;
      continue;
    }
    prepared.push_back(std::move(*pr.run));
  }
  if (rep.exit_code) return std::nullopt;

  std::string metric = o.metric;
  if (metric.empty()) {
    // perf bench numa's: the time to converge; else the first counter.
    const auto& w = prepared.front().scenario.workload;
    metric = w.convergence_program != UINT32_MAX ? kConvergedMetric
             : w.counters.empty()                ? "elapsed_s"
                                                 : w.counters.front();
  }
  for (size_t i = 0; i < prepared.size(); ++i) {
    if (is_metric_of(metric, prepared[i].scenario)) continue;
    const auto& names = prepared[i].scenario.workload.counters;
    std::vector<std::string> known(names.begin(), names.end());
    known.insert(known.end(), kTimeMetrics.begin(), kTimeMetrics.end());
    fail(fmt::format("mmsim: error: --metric: {}: no counter is named \"{}\" (known: {})",
                     combos[i].label(), metric, fmt::join(known, ", ")));
  }
  if (rep.exit_code) return std::nullopt;

  // Combination c, repeat r is job c * repeat + r, seed base + r.
  Plan plan;
  plan.combos = combos;
  plan.metric = metric;
  plan.repeat = o.repeat;
  plan.jobs.reserve(prepared.size() * o.repeat);
  for (const auto& p : prepared) {
    const uint64_t base = p.scenario.seed;  // o.seed already replaced it
    for (uint32_t r = 0; r < o.repeat; ++r) {
      plan.jobs.push_back(p);
      plan.jobs.back().scenario.seed = base + r;
    }
  }
  return plan;
}

std::string Plan::who(size_t job) const {
  return fmt::format("{}, seed {}", combos[job / repeat].label(), jobs[job].scenario.seed);
}

// The table and the JSON from every job's record.
void report_records(const CompareOptions& o, const Plan& plan,
                    const std::vector<ordered_json>& records, CompareReport& rep) {
  const std::vector<Combination>& combos = plan.combos;
  const std::string& metric = plan.metric;
  // Summaries, in job order, with each run's warnings.
  std::vector<std::vector<RunSummary>> runs(combos.size());
  for (size_t j = 0; j < plan.jobs.size(); ++j) {
    const ordered_json& rec = records[j];
    runs[j / o.repeat].push_back(summarize(rec, plan.jobs[j].topology.nr_cpus(), metric));
    for (const auto& w : rec.at("warnings")) rep.err += w.get<std::string>() + "\n";
    if (const std::string e = rec.at("limit_error").get<std::string>(); !e.empty()) {
      rep.err += e + "\n";
      rep.exit_code = 2;
    }
  }
  if (rep.exit_code) return;

  using Get = double (*)(const RunSummary&);
  const std::vector<std::pair<std::string, Get>> mean_rows = {
      {"real s", [](const RunSummary& s) { return s.elapsed_s; }},
      {"user s", [](const RunSummary& s) { return s.user_s; }},
      {"sys s", [](const RunSummary& s) { return s.sys_s; }},
  };
  const auto metric_of = [](const RunSummary& s) { return s.metric; };
  const Sample base = sample(runs[0], metric_of);

  std::vector<std::string> headers;
  // A counter is a throughput (more is better); a time is not.
  const bool is_time = is_time_metric(metric);
  std::vector<Row> rows = {{fmt::format("{} ({})", is_time ? "time" : "throughput", metric), {}},
                           {"change vs first", {}}};
  for (const auto& [label, get] : mean_rows) rows.push_back({label, {}});
  for (const char* name : kVmRows) rows.push_back({name, {}});
  rows.push_back({"mean tasks in D", {}});
  rows.push_back({"iowait %", {}});
  // perf bench numa: how many runs converged (a run that never did counts
  // its whole length in the time above, as perf reports it).
  const bool convergence = plan.jobs.front().scenario.workload.convergence_program != UINT32_MAX;
  if (convergence) rows.push_back({"converged runs", {}});

  ordered_json jcombos = ordered_json::array();
  for (size_t c = 0; c < combos.size(); ++c) {
    const auto& rs = runs[c];
    headers.push_back(combos[c].label());
    const Sample m = sample(rs, metric_of);
    const Change ch = c == 0 ? Change{0.0, std::nullopt} : change_vs(base, m);
    size_t row = 0;
    rows[row++].cells.push_back(format_number(m.mean));
    rows[row++].cells.push_back(c == 0 ? "base" : format_change(ch));
    for (const auto& [label, get] : mean_rows)
      rows[row++].cells.push_back(fmt::format("{:.6f}", sample(rs, get).mean));
    std::array<double, kVmRows.size()> vm_mean{};
    for (size_t i = 0; i < kVmRows.size(); ++i) {
      vm_mean[i] = sample(rs, [i](const RunSummary& s) { return s.vm[i]; }).mean;
      rows[row++].cells.push_back(format_number(vm_mean[i]));
    }
    const double in_d = sample(rs, [](const RunSummary& s) { return s.tasks_in_d; }).mean;
    const double iowait_pct = sample(rs, [](const RunSummary& s) { return s.iowait_pct; }).mean;
    rows[row++].cells.push_back(fmt::format("{:.3f}", in_d));
    rows[row++].cells.push_back(fmt::format("{:.2f}", iowait_pct));
    if (convergence) {
      const auto converged = std::count_if(rs.begin(), rs.end(), [](const RunSummary& s) {
        return s.metrics.value("converged", 0.0) > 0;
      });
      rows[row++].cells.push_back(fmt::format("{} of {}", converged, rs.size()));
    }

    ordered_json settings = ordered_json::object();
    for (const auto& [k, v] : combos[c].settings) settings[k] = v;
    ordered_json jruns = ordered_json::array();
    for (const auto& s : rs)
      jruns.push_back({{"seed", s.seed}, {"metrics", s.metrics}, {"vmstat", s.vmstat}});
    ordered_json mean = ordered_json::object();
    for (const auto& [key, value] : rs.front().metrics.items()) {
      mean[key] = sample(rs, [&k = key](const RunSummary& s) {
                    return s.metrics.at(k).get<double>();
                  }).mean;
    }
    for (size_t i = 0; i < kVmRows.size(); ++i) mean[kVmRows[i]] = vm_mean[i];
    mean["tasks_in_d"] = in_d;
    mean["iowait_pct"] = iowait_pct;
    ordered_json jc = {{"settings", settings}, {"runs", jruns}, {"mean", mean}};
    jc["change_pct"] = ch.pct ? ordered_json(*ch.pct) : ordered_json(nullptr);
    jc["ci95_pct"] =
        ch.ci ? ordered_json::array({ch.ci->first, ch.ci->second}) : ordered_json(nullptr);
    jcombos.push_back(std::move(jc));
  }

  const scenario::Scenario& sc = plan.jobs.front().scenario;
  const uint64_t first_seed = sc.seed;
  rep.out += fmt::format(
      "compare {} ({}): {} combination(s) x {} run(s), seeds {}{}, machine {} ({} CPUs)\n",
      sc.name.empty() ? "(unnamed)" : sc.name, sc.path, combos.size(), o.repeat, first_seed,
      o.repeat > 1 ? fmt::format("-{}", first_seed + o.repeat - 1) : "",
      plan.jobs.front().topology.name(), plan.jobs.front().topology.nr_cpus());
  rep.out += "\n" + format_table(headers, rows) + "\n";
  rep.out += fmt::format(
      "Means over the runs. change vs first: the {} mean's change in %, with\n"
      "the 95% confidence interval of Welch's t test (n/a with one run).\n",
      is_time ? "time" : "throughput");

  rep.json = {{"scenario", {{"name", sc.name}, {"path", sc.path}, {"overrides", o.sets}}},
              {"metric", metric},
              {"repeat", o.repeat},
              {"combinations", jcombos}};
}

// 64-bit FNV-1a of the scenario file: merge refuses shards of another text.
std::string fingerprint(const std::string& text) {
  uint64_t h = 14695981039346656037ull;
  for (const unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string plan_path(const std::string& dir) { return dir + "/plan.json"; }
std::string run_path(const std::string& dir, size_t job) {
  return fmt::format("{}/run-{}.json", dir, job);
}

// What a shard records of the compare's arguments, and the merge reads back.
ordered_json plan_json(const CompareOptions& o, const std::string& scenario_text, size_t jobs) {
  return {{"format", "mmsim-compare-shards-1"},
          {"scenario", o.scenario},
          {"scenario_fnv1a", fingerprint(scenario_text)},
          {"vary", o.vary},
          {"set", o.sets},
          {"repeat", o.repeat},
          {"seed", o.seed ? ordered_json(*o.seed) : ordered_json(nullptr)},
          {"metric", o.metric},
          {"runs", jobs}};
}

}  // namespace

CompareReport compare_shard(const CompareOptions& o, Shard shard, const std::string& dir) {
  CompareReport rep;
  const std::optional<Plan> plan = make_plan(o, rep);
  if (!plan) return rep;
  const std::optional<std::string> text = read_text(o.scenario);
  if (!text) {
    rep.err += fmt::format("mmsim: error: {}: cannot be read again\n", o.scenario);
    rep.exit_code = 2;
    return rep;
  }
  std::vector<size_t> mine;
  std::vector<scenario::Prepared> jobs;
  for (size_t j = shard.k - 1; j < plan->jobs.size(); j += shard.n) {
    mine.push_back(j);
    jobs.push_back(plan->jobs[j]);
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::ostringstream err;
  const std::string plan_text = plan_json(o, *text, plan->jobs.size()).dump(2) + "\n";
  if (ec || !write_atomically(plan_path(dir), plan_text, err)) {
    rep.err += ec ? fmt::format("mmsim: error: --out {}: {}\n", dir, ec.message()) : err.str();
    rep.exit_code = 3;
    return rep;
  }
  const std::vector<workload::RunResult> results = run_all(jobs, o.jobs, o.on_run_done);
  for (size_t i = 0; i < mine.size(); ++i) {
    const ordered_json rec = run_record(mine[i], jobs[i], results[i], plan->who(mine[i]));
    for (const auto& w : rec.at("warnings")) rep.err += w.get<std::string>() + "\n";
    if (!write_atomically(run_path(dir, mine[i]), rec.dump(2) + "\n", err)) {
      rep.err += err.str();
      rep.exit_code = 3;
      return rep;
    }
  }
  rep.out += fmt::format("compare shard {}/{}: {} of {} run(s) written to {}\n", shard.k, shard.n,
                         mine.size(), plan->jobs.size(), dir);
  return rep;
}

CompareReport compare_merge(const std::string& dir) {
  CompareReport rep;
  auto fail = [&rep](const std::string& why) {
    rep.err += "mmsim: error: --merge " + why + "\n";
    rep.exit_code = 2;
    return rep;
  };
  const std::optional<std::string> plan_text = read_text(plan_path(dir));
  if (!plan_text) return fail(dir + ": no plan.json (is it a --shard --out directory?)");
  const ordered_json pj = ordered_json::parse(*plan_text, nullptr, false);
  if (pj.is_discarded() || !pj.is_object() || pj.value("format", "") != "mmsim-compare-shards-1")
    return fail(plan_path(dir) + ": not a plan written by mmsim compare --shard");
  CompareOptions o;
  try {
    o.scenario = pj.at("scenario").get<std::string>();
    o.vary = pj.at("vary").get<std::vector<std::string>>();
    o.sets = pj.at("set").get<std::vector<std::string>>();
    o.repeat = pj.at("repeat").get<uint32_t>();
    if (!pj.at("seed").is_null()) o.seed = pj.at("seed").get<uint64_t>();
    o.metric = pj.at("metric").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    return fail(plan_path(dir) + ": " + e.what());
  }
  const std::optional<std::string> text = read_text(o.scenario);
  if (!text || fingerprint(*text) != pj.value("scenario_fnv1a", ""))
    return fail(dir + ": " + o.scenario +
                " is not the scenario the shards ran (missing or changed)");
  const std::optional<Plan> plan = make_plan(o, rep);
  if (!plan) return rep;
  std::vector<ordered_json> records;
  std::vector<size_t> missing;
  for (size_t j = 0; j < plan->jobs.size(); ++j) {
    const std::optional<std::string> t = read_text(run_path(dir, j));
    ordered_json rec = t ? ordered_json::parse(*t, nullptr, false) : ordered_json();
    const bool ok =
        t && !rec.is_discarded() && rec.is_object() && rec.value("job", SIZE_MAX) == j &&
        rec.value("seed", uint64_t{0}) == plan->jobs[j].scenario.seed && rec.contains("metrics") &&
        rec.contains("vmstat") && rec.contains("warnings") && rec.contains("limit_error");
    if (!ok) missing.push_back(j);
    records.push_back(std::move(rec));
  }
  if (!missing.empty()) {
    std::vector<std::string> names;
    for (size_t j = 0; j < std::min<size_t>(missing.size(), 8); ++j)
      names.push_back(fmt::format("run-{}.json", missing[j]));
    if (missing.size() > 8) names.push_back("...");
    return fail(
        fmt::format("{}: {} of {} run(s) missing or unreadable ({}); run their shards again", dir,
                    missing.size(), plan->jobs.size(), fmt::join(names, ", ")));
  }
  report_records(o, *plan, records, rep);
  return rep;
}

CompareReport compare_check(const CompareOptions& o) {
  CompareReport rep;
  make_plan(o, rep);
  return rep;
}

CompareReport compare(const CompareOptions& o) {
  CompareReport rep;
  const std::optional<Plan> plan = make_plan(o, rep);
  if (!plan) return rep;
  const std::vector<workload::RunResult> results = run_all(plan->jobs, o.jobs, o.on_run_done);
  std::vector<ordered_json> records;
  records.reserve(results.size());
  for (size_t j = 0; j < results.size(); ++j)
    records.push_back(run_record(j, plan->jobs[j], results[j], plan->who(j)));
  report_records(o, *plan, records, rep);
  return rep;
}
}  // namespace mmsim::report
