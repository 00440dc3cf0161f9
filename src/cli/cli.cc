// mmsim: run a scenario, print a machine, list the cost profile. Thin: all
// behaviour lives in the layers below.
#include "cli/cli.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <system_error>

#include "cli/calibrate_cmd.h"
#include "cli/predict.h"
#include "native/native.h"
#include "native/scenario_native.h"
#include "report/compare.h"
#include "report/csv.h"
#include "report/plot.h"
#include "report/report.h"
#include "report/suite.h"
#include "scenario/scenario.h"
#include "sim/trace.h"
#include "topo/topology.h"
#include "util/progress.h"
#include "validate/validate.h"
#include "workload/world.h"

namespace mmsim::cli {

namespace {

// A --seed: a decimal number from 0 to 2^64-1, no sign.
std::optional<uint64_t> parse_seed(const std::string& text, std::ostream& err) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    err << fmt::format("mmsim: error: --seed: \"{}\" is not a number from 0 to {}\n", text,
                       UINT64_MAX);
    return std::nullopt;
  }
  return v;
}

// Why `out` cannot take the results, or "": checked before anything runs, so
// that a long run never ends in a write that fails. The file is replaced by
// a rename, so only its directory must be writable; the inputs are refused.
std::string output_problem(const std::string& out, const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (out.empty()) return "an empty file name";
  const fs::path p(out);
  if (fs::is_directory(p, ec)) return fmt::format("\"{}\" is a directory", out);
  for (const auto& in : inputs) {
    if (!in.empty() && fs::equivalent(p, in, ec))
      return fmt::format("\"{}\" is an input of this run; refusing to overwrite it", out);
  }
  // A device or pipe (/dev/stdout) is written in place: no directory needed.
  if (fs::exists(p, ec) && !fs::is_regular_file(p, ec)) return "";
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    return fmt::format("cannot write \"{}\": no directory \"{}\"", out, dir.string());
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return fmt::format("cannot write \"{}\": directory \"{}\": {}", out, dir.string(),
                       std::strerror(errno));
  return "";
}

// A cost profile given with --costs: a readable regular file.
std::string costs_problem(const std::string& costs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(costs, ec)) return fmt::format("cannot read \"{}\": no such file", costs);
  if (fs::is_directory(costs, ec)) return fmt::format("\"{}\" is a directory", costs);
  return "";
}

struct RunArgs {
  std::string scenario;
  std::vector<std::string> sets;
  std::string seed;
  std::string json;
  std::string csv;
  std::string trace;
  std::string plot;
  std::string scan_trace;
  uint64_t trace_limit = 300'000;
  double trace_from = 0;
  bool check = false;
  bool tasks = false;
  bool no_timing = false;
  std::string costs;
};

// Makes an output directory before the work, so that a bad one is refused
// before anything runs.
bool make_output_dir(const std::string& dir, const char* flag, std::ostream& err) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    err << "mmsim: error: " << flag << ": cannot make the directory \"" << dir
        << "\": " << (ec ? ec.message() : "not a directory") << "\n";
    return false;
  }
  return true;
}

int cmd_run(const RunArgs& a, std::ostream& out, std::ostream& err) {
  if (!a.costs.empty()) {
    if (const std::string why = costs_problem(a.costs); !why.empty()) {
      err << "mmsim: error: --costs: " << why << "\n";
      return kExitBadInput;
    }
  }
  std::optional<uint64_t> seed;
  if (!a.seed.empty() && !(seed = parse_seed(a.seed, err))) return kExitBadInput;
  for (const auto& [flag, path] :
       {std::pair{"--json", a.json}, std::pair{"--csv", a.csv},
        std::pair{"--csv", report::timeline_csv_path(a.csv)}, std::pair{"--trace", a.trace},
        std::pair{"--scan-trace", a.scan_trace}}) {
    if (a.csv.empty() && flag == std::string("--csv")) continue;
    if (path.empty()) continue;
    if (const std::string why = output_problem(path, {a.scenario, a.costs}); !why.empty()) {
      err << "mmsim: error: " << flag << ": " << why << "\n";
      return kExitBadInput;
    }
  }
  if (!(a.trace_from >= 0)) {
    err << "mmsim: error: --trace-from: must be 0 or more seconds\n";
    return kExitBadInput;
  }
  if (!a.plot.empty() && !make_output_dir(a.plot, "--plot", err)) return kExitHostRefused;
  const scenario::PrepareResult pr =
      scenario::prepare({a.scenario, std::nullopt, a.sets, seed, a.costs});
  if (!pr.run) {
    for (const auto& d : pr.diagnostics) err << d.str() << "\n";
    return kExitBadInput;
  }
  const scenario::Scenario& sc = pr.run->scenario;
  const auto t0 = std::chrono::steady_clock::now();
  auto since_start = [t0] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  util::ProgressLine progress(err, util::stderr_is_terminal());
  scenario::RunOptions ro{.check_invariants = a.check};
  if (progress.enabled()) {
    const double limit = sc.time_limit.seconds();
    ro.progress = [&progress, &since_start, limit](Tick now, uint64_t events) {
      const double wall = since_start();
      progress.update(fmt::format("mmsim: simulated {:.3f} s of at most {:g} s, {:.3g} events/s",
                                  now.seconds(), limit,
                                  wall > 0 ? static_cast<double>(events) / wall : 0.0));
    };
  }
  std::optional<sim::Trace> trace;
  if (!a.trace.empty()) {
    trace.emplace(a.trace_limit, to_tick(a.trace_from * 1e9));
    ro.trace = &*trace;
  }
  std::ostringstream scan_trace;
  if (!a.scan_trace.empty()) {
    scan_trace << fmt::format(
        "# mmsim run {} (seed {}): the simulated NUMA scan, as `mmsim "
        "validate --scan-trace` records the guest's\n",
        sc.path, sc.seed);
    ro.scan_trace = &scan_trace;
  }
  const workload::RunResult result = scenario::simulate(*pr.run, std::move(ro));
  progress.clear();
  const double wall = since_start();
  if (!result.limit_error.empty()) {
    err << "mmsim: error: " << result.limit_error << "\n";
    return kExitBadInput;
  }
  report::RunInfo info{&sc, &pr.run->topology, &result, wall, !a.no_timing};
  out << report::summary_text(info, a.tasks);
  if (!a.no_timing) err << report::timing_text(info);
  if (!a.json.empty() || !a.csv.empty() || !a.plot.empty()) {
    out.flush();  // before the files, should one be /dev/stdout
    const nlohmann::ordered_json j = report::run_json(info);
    if (!a.plot.empty()) {
      const report::PlotResult p = report::plot(j, a.plot, err);
      if (p.exit_code) return p.exit_code;
    }
    if (!a.json.empty() && !report::write_atomically(a.json, j.dump(2) + "\n", err))
      return kExitHostRefused;
    if (!a.csv.empty() && (!report::write_atomically(a.csv, report::run_tasks_csv(j), err) ||
                           !report::write_atomically(report::timeline_csv_path(a.csv),
                                                     report::run_timeline_csv(j), err)))
      return kExitHostRefused;
  }
  if (!a.scan_trace.empty() && !report::write_atomically(a.scan_trace, scan_trace.str(), err))
    return kExitHostRefused;
  if (trace) {
    const std::string text = trace->json(fmt::format("mmsim run {} (seed {})", sc.path, sc.seed));
    if (!report::write_atomically(a.trace, text, err)) return kExitHostRefused;
    err << fmt::format("mmsim: trace: {} events, {:.1f} MB in {}{}\n", trace->events(),
                       static_cast<double>(text.size()) / 1e6, a.trace,
                       trace->truncated()
                           ? fmt::format("; slices and instants stop at {:.6f} s (--trace-limit "
                                         "{}), counters go on",
                                         trace->truncated_at().seconds(), a.trace_limit)
                           : "");
  }
  if (!result.check_failures.empty()) {
    err << "mmsim: error: the invariant checker found violations (see above)\n";
    return 1;
  }
  return 0;
}

// Runs every combination of the varied settings and sets them side by side.
// Sharding: `--shard K/N --out DIR` runs a share of the compare into DIR;
// `--merge DIR` makes the whole compare's report from the shards' files.
struct ShardArgs {
  std::string shard;
  std::string out;
  std::string merge;
};

// A compare's progress: runs done of the total, and a guess at the time left.
std::function<void(size_t, size_t)> runs_progress(util::ProgressLine& line, const char* what) {
  const auto t0 = std::chrono::steady_clock::now();
  return [&line, t0, what](size_t done, size_t total) {
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double left = wall / static_cast<double>(done) * static_cast<double>(total - done);
    line.update(
        fmt::format("mmsim: {}: {} of {} runs done, about {:.0f} s to go", what, done, total, left),
        done == total);
  };
}

// Prints a compare's table and diagnostics and writes its JSON (if asked):
// 0, the compare's own exit code, or kExitHostRefused.
int print_compare(const report::CompareReport& r, const std::string& json, std::ostream& out,
                  std::ostream& err) {
  out << r.out;
  err << r.err;
  if (r.exit_code != 0) return r.exit_code;
  out.flush();
  if (!json.empty() && !report::write_atomically(json, r.json.dump(2) + "\n", err))
    return kExitHostRefused;
  return 0;
}

int cmd_compare(report::CompareOptions options, const std::string& seed, const std::string& json,
                const std::string& csv, const std::string& plot_dir, const ShardArgs& sa,
                std::ostream& out, std::ostream& err) {
  if (!seed.empty() && !(options.seed = parse_seed(seed, err))) return kExitBadInput;
  if (sa.merge.empty() && options.scenario.empty()) {
    err << "mmsim: error: compare: a scenario is required (or --merge DIR)\n";
    return kExitBadInput;
  }
  if (sa.shard.empty() != sa.out.empty()) {
    err << "mmsim: error: --shard and --out go together: --shard K/N --out DIR\n";
    return kExitBadInput;
  }
  for (const auto& [flag, path] : {std::pair{"--json", json}, std::pair{"--csv", csv}}) {
    if (path.empty()) continue;
    if (const std::string why = output_problem(path, {options.scenario}); !why.empty()) {
      err << "mmsim: error: " << flag << ": " << why << "\n";
      return kExitBadInput;
    }
  }
  if (!sa.shard.empty() && !(json.empty() && csv.empty() && plot_dir.empty())) {
    err << "mmsim: error: --shard writes only its runs (--out); --json, --csv and --plot go "
           "with --merge\n";
    return kExitBadInput;
  }
  if (!plot_dir.empty() && !make_output_dir(plot_dir, "--plot", err)) return kExitHostRefused;
  if (!sa.shard.empty()) {
    std::string why;
    const auto shard = report::parse_shard(sa.shard, &why);
    if (!shard) {
      err << "mmsim: error: " << why << "\n";
      return kExitBadInput;
    }
    util::ProgressLine progress(err, util::stderr_is_terminal());
    if (progress.enabled()) options.on_run_done = runs_progress(progress, "compare shard");
    const report::CompareReport r = report::compare_shard(options, *shard, sa.out);
    progress.clear();
    out << r.out;
    err << r.err;
    return r.exit_code;
  }
  util::ProgressLine progress(err, util::stderr_is_terminal());
  if (progress.enabled()) options.on_run_done = runs_progress(progress, "compare");
  const report::CompareReport r =
      sa.merge.empty() ? report::compare(options) : report::compare_merge(sa.merge);
  progress.clear();
  if (const int rc = print_compare(r, json, out, err); rc != 0) return rc;
  if (!csv.empty() && !report::write_atomically(csv, report::compare_runs_csv(r.json), err))
    return kExitHostRefused;
  if (!plot_dir.empty()) return report::plot(r.json, plot_dir, err).exit_code;
  return 0;
}

// Several scenarios compared across the same settings (report/suite.h).
int cmd_compare_suite(report::CompareOptions options, const std::vector<std::string>& scenarios,
                      const std::string& seed, const std::string& json, bool metric,
                      bool one_scenario_flags, std::ostream& out, std::ostream& err) {
  if (!seed.empty() && !(options.seed = parse_seed(seed, err))) return kExitBadInput;
  if (metric) {
    err << "mmsim: error: --metric: a compare of several scenarios measures elapsed time\n";
    return kExitBadInput;
  }
  if (one_scenario_flags) {
    err << "mmsim: error: --csv, --plot, --shard and --merge take one scenario; a compare of "
           "several prints the suite table (and --json)\n";
    return kExitBadInput;
  }
  if (!json.empty()) {
    if (const std::string why = output_problem(json, scenarios); !why.empty()) {
      err << "mmsim: error: --json: " << why << "\n";
      return kExitBadInput;
    }
  }
  util::ProgressLine progress(err, util::stderr_is_terminal());
  size_t done_before = 0;
  if (progress.enabled()) {
    // One progress over every scenario's runs (each compare counts its own).
    auto line = runs_progress(progress, "compare suite");
    options.on_run_done = [line, &done_before](size_t done, size_t total) {
      line(done_before + done, done_before + total);
      if (done == total) done_before += total;
    };
  }
  const report::CompareReport r = report::compare_suite(options, scenarios);
  progress.clear();
  return print_compare(r, json, out, err);
}

// Figures from a run's or a compare's JSON.
int cmd_plot(const std::string& file, const std::string& dir, std::ostream& out,
             std::ostream& err) {
  std::ifstream in(file);
  if (!in) {
    err << "mmsim: error: plot: cannot read " << file << "\n";
    return kExitBadInput;
  }
  const auto doc = nlohmann::ordered_json::parse(in, nullptr, false);
  if (doc.is_discarded()) {
    err << "mmsim: error: plot: " << file << " is not JSON\n";
    return kExitBadInput;
  }
  const report::PlotResult p = report::plot(doc, dir, err);
  for (const auto& f : p.figures) out << f << "\n";
  return p.exit_code;
}

int cmd_topology(const std::string& machine, std::ostream& out, std::ostream& err) {
  if (machine == "host") {
    std::string e;
    auto t = topo::load_host("/sys", &e);
    if (!t) {
      err << "mmsim: error: cannot read the host: " << e << "\n";
      return 2;
    }
    out << topo::format_numactl_hardware(*t);
    return 0;
  }
  auto spec = topo::preset(machine);
  if (!spec) {
    err << fmt::format("mmsim: error: --machine: unknown machine \"{}\" (known: {})\n", machine,
                       fmt::join(topo::preset_names(), ", "));
    return 2;
  }
  const topo::Topology t(*spec);
  out << topo::format_numactl_hardware(t);
  out << fmt::format(
      "sockets: {}, cores per socket: {}, threads per core: {}, LLC per socket: {} MiB\n",
      spec->sockets, spec->cores_per_socket, spec->threads_per_core, spec->llc_per_socket >> 20);
  return 0;
}

// Every switch of every subsystem: its value for a kernel version, its
// presets and its doc; --markdown prints the README's reference table.
int cmd_switches(const std::string& version, bool markdown, std::ostream& out, std::ostream& err) {
  scenario::KernelConfig k;
  if (!version.empty()) {
    const auto v = KernelVersion::parse(version);
    if (!v) {
      err << fmt::format(
          "mmsim: error: --kernel-version: \"{}\" is not a kernel version from {} to {} "
          "(\"X.Y\")\n",
          version, kOldestKernel.str(), kNewestKernel.str());
      return 2;
    }
    k.apply_version(*v);
  }
  out << switches_text(k, markdown, !version.empty());
  return 0;
}

// mmsim costs [--machine NAME]: a machine preset's cost profile, every value
// with its source.
int cmd_costs(const std::string& machine, std::ostream& out, std::ostream& err) {
  const cost::MachineCosts* m = cost::find_machine_costs(machine);
  if (!m) {
    std::string known;
    for (const auto& p : cost::machine_profiles())
      known += (known.empty() ? "" : ", ") + std::string(p.machine);
    err << fmt::format(
        "mmsim: error: --machine: \"{}\" has no cost profile of its own (known: {}; the host's "
        "comes from `mmsim calibrate`)\n",
        machine, known);
    return 2;
  }
  out << fmt::format("# {}: {}\n", m->machine, m->hardware);
  for (const auto& p : cost::cost_params()) {
    for (const auto& v : m->values) {
      if (v.name == p.name)
        out << fmt::format("{:<22} {:>12g} {:<3} {}\n", p.name, v.value, p.unit, v.source);
    }
  }
  return 0;
}

// mmsim native BENCH --predict: the run, its simulation, and the two side by side.
int cmd_native_predict(native::NativeOptions no, const std::string& costs, bool default_costs,
                       std::ostream& out, std::ostream& err) {
  if (!costs.empty()) {
    if (const std::string why = costs_problem(costs); !why.empty()) {
      err << fmt::format("mmsim: error: --costs: {} (make one with mmsim calibrate --out FILE)\n",
                         why);
      return kExitBadInput;
    }
  }
  int chosen_rc = 0;
  const auto chosen = host_predict_costs(costs, default_costs, out, err, &chosen_rc);
  if (!chosen) return chosen_rc;
  const std::string json_path = no.json;
  no.json.clear();
  const native::NativeOutcome o = native::measure_native(no, err);
  if (!o.result) return o.exit_code;
  out << native::native_summary_text(no, *o.result);
  PredictParams p;
  p.bench = no.bench;
  p.seconds = no.seconds.value_or(10);
  p.procs = static_cast<uint32_t>(no.procs.value_or(2));
  p.loop = no.loop.value_or("O0");
  p.size_bytes = no.size.value_or(256ull << 20);
  p.loops = static_cast<uint32_t>(no.loops.value_or(10));
  p.numa_balancing = o.result->numa_balancing;
  p.costs = chosen->path;
  nlohmann::ordered_json both;
  const int rc = predict(p, native::native_json(no, *o.result), out, err, &both);
  if (rc) return rc;
  if (!json_path.empty() && !report::write_atomically(json_path, both.dump(2) + "\n", err))
    return kExitHostRefused;
  return 0;
}

struct NativeScenarioArgs {
  std::string scenario;
  std::vector<std::string> sets;
  native::ScenarioNativeOptions options;
};

// mmsim native SCENARIO [--predict]: the scenario on this host.
int cmd_native_scenario(const NativeScenarioArgs& a, bool predict_flag, const std::string& costs,
                        bool default_costs, std::ostream& out, std::ostream& err) {
  if (!a.options.json.empty()) {
    if (const std::string why = output_problem(a.options.json, {a.scenario, costs}); !why.empty()) {
      err << "mmsim: error: --json: " << why << "\n";
      return kExitBadInput;
    }
  }
  if (!costs.empty()) {
    if (const std::string why = costs_problem(costs); !why.empty()) {
      err << "mmsim: error: --costs: " << why << "\n";
      return kExitBadInput;
    }
  }
  // Its programs run here: counts taken from the machine are this host's.
  const scenario::PrepareResult pr =
      scenario::prepare({a.scenario, std::nullopt, a.sets, std::nullopt, "", true});
  if (!pr.run) {
    for (const auto& d : pr.diagnostics) err << d.str() << "\n";
    return kExitBadInput;
  }
  if (!predict_flag) return native::run_scenario_native(pr.run->scenario, a.options, out, err);
  int chosen_rc = 0;
  const auto chosen = host_predict_costs(costs, default_costs, out, err, &chosen_rc);
  if (!chosen) return chosen_rc;
  return native_scenario_predict(a.scenario, a.sets, chosen->path, pr.run->scenario, a.options, out,
                                 err);
}

}  // namespace

std::string switches_text(const scenario::KernelConfig& k, bool markdown, bool with_values) {
  std::string out;
  if (markdown) {
    out += "| switch | type | presets by kernel version | what it models |\n";
    out += "|---|---|---|---|\n";
  }
  scenario::for_each_switch(k, [&](const SwitchInfo& sw, int64_t value) {
    std::string type;
    switch (sw.kind) {
      case SwitchKind::kBool:
        type = "bool";
        break;
      case SwitchKind::kChoice: {
        std::vector<std::string> words;
        for (const auto& w : sw.words) words.emplace_back(w.word);
        // A table cell escapes the bar; a terminal shows it plain.
        type = fmt::format("{}", fmt::join(words, markdown ? " \\| " : " | "));
        break;
      }
      case SwitchKind::kInt: {
        type =
            sw.hi == INT64_MAX ? fmt::format("{}..", sw.lo) : fmt::format("{}..{}", sw.lo, sw.hi);
        if (!sw.unit.empty()) type += " " + std::string(sw.unit);
        for (const auto& w : sw.words) type += fmt::format(" or {}", w.word);
        break;
      }
    }
    if (markdown) {
      out += fmt::format("| `{}` | {} | {} | {} |\n", sw.name(), type, sw.presets_text(), sw.doc);
    } else {
      std::string line = fmt::format("{:<40} ", sw.name());
      if (with_values) line += fmt::format("{:<14} ", sw.format(value));
      out += line + fmt::format("{}\n    presets: {}; {}\n", type, sw.presets_text(), sw.doc);
    }
  });
  return out;
}

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"mmsim: a simulator of Linux memory management on NUMA machines"};
  app.set_version_flag("--version", std::string("mmsim ") + MMSIM_VERSION);
  app.require_subcommand(1);

  RunArgs ra;
  auto* run = app.add_subcommand("run", "Run a scenario and print what happened");
  run->add_option("scenario", ra.scenario, "Scenario TOML file")->required();
  run->add_option("--set", ra.sets, "Override a scenario key: key.path=value (repeatable)");
  run->add_option("--seed", ra.seed, "Seed (replaces scenario.seed)");
  run->add_option("--json", ra.json, "Write the results as JSON to this file");
  run->add_option("--plot", ra.plot,
                  "Draw the timeline and the tasks' time with gnuplot into this directory");
  run->add_option("--trace", ra.trace,
                  "Write a timeline for the Perfetto UI (Chrome JSON trace) to this file");
  run->add_option("--scan-trace", ra.scan_trace,
                  "Write the NUMA scan (each task_numa_work call and each range it marks) to this "
                  "file, in the format of the guest's scan trace (mmsim validate --scan-trace)");
  run->add_option("--trace-limit", ra.trace_limit,
                  "Slices and instant events a trace keeps (0: all); about 140 bytes each")
      ->capture_default_str();
  run->add_option("--trace-from", ra.trace_from,
                  "Simulated seconds at which the trace's slices and instants begin (counters "
                  "cover the whole run)");
  run->add_option("--csv", ra.csv,
                  "Write one row per task as CSV to this file, and the timeline to "
                  "FILE.timeline.csv (FILE without its .csv)");
  run->add_flag("--check", ra.check, "Run the invariant checker (mapcounts, rmap, node pages)");
  run->add_flag("--tasks", ra.tasks, "List every task, not a summary by program");
  run->add_flag("--no-timing", ra.no_timing, "Leave host timings out, for byte-identical output");
  bool run_no_noise = false;
  run->add_flag("--no-noise", run_no_noise,
                "Turn every [noise] source off: exact lockstep (noise.enabled=false)");
  run->add_option("--costs", ra.costs,
                  "A cost profile (e.g. from mmsim calibrate) replacing the defaults");

  report::CompareOptions co;
  std::string compare_json;
  std::string compare_seed;
  auto* compare = app.add_subcommand(
      "compare", "Run every combination of varied settings, repeatedly, and compare them");
  ShardArgs compare_shards;
  std::string compare_csv;
  std::string compare_plot;
  std::vector<std::string> compare_scenarios;
  compare->add_option("scenario", compare_scenarios,
                      "Scenario TOML file (not with --merge); several: a suite table, each "
                      "program beside its _HARD_BIND and _INVERSE_BIND scenarios");
  compare
      ->add_option("--vary", co.vary,
                   "KEY=V1,V2,...: a setting to vary (repeatable; the first varies slowest)")
      ->allow_extra_args(false);
  compare->add_option("--repeat", co.repeat, "Runs per combination, seeds S, S+1, ...")
      ->capture_default_str();
  compare->add_option("--seed", compare_seed, "First seed (default: scenario.seed)");
  compare
      ->add_option("--set", co.sets,
                   "Override a scenario key in every run: key.path=value (repeatable)")
      ->allow_extra_args(false);
  compare->add_option("--json", compare_json,
                      "Write every run and the comparison as JSON to this file");
  compare->add_option("--plot", compare_plot,
                      "Draw the comparison with gnuplot into this directory (PNG and SVG)");
  compare->add_option(
      "--csv", compare_csv,
      "Write one row per run (settings, seed, metrics, vmstat) as CSV to this file");
  compare->add_option(
      "--metric", co.metric,
      "The throughput counter (default: the scenario's first counter, else elapsed_s)");
  compare->add_option("--jobs", co.jobs, "Simulations run at once")->capture_default_str();
  bool compare_no_noise = false;
  compare->add_flag("--no-noise", compare_no_noise,
                    "Turn every [noise] source off in every run (noise.enabled=false)");
  auto* shard_opt = compare->add_option(
      "--shard", compare_shards.shard,
      "K/N: run only the K-th of N shares of the runs (with --out), e.g. one array task's");
  compare->add_option("--out", compare_shards.out,
                      "With --shard: the directory for the share's runs (plan.json, run-J.json)");
  compare
      ->add_option("--merge", compare_shards.merge,
                   "DIR: the report of a sharded compare from its --out directory, as one "
                   "unsharded run prints it")
      ->excludes(shard_opt);

  std::string plot_file, plot_out = "figures";
  auto* plot_cmd = app.add_subcommand(
      "plot", "Draw figures with gnuplot from the JSON of mmsim run or mmsim compare");
  plot_cmd->add_option("json", plot_file, "The JSON file (run --json or compare --json)")
      ->required();
  plot_cmd->add_option("--out", plot_out, "The directory for the figures")->capture_default_str();

  std::string machine = "2s-16c";
  auto* topology = app.add_subcommand("topology", "Print a machine as numactl --hardware does");
  topology->add_option("--machine", machine, "Preset name or host")->capture_default_str();

  std::string costs_machine(cost::kDefaultCostMachine);
  auto* costs = app.add_subcommand(
      "costs", "List a machine preset's cost profile: every value with its source");
  costs->add_option("--machine", costs_machine, "Machine preset")->capture_default_str();

  std::string switches_version;
  bool switches_markdown = false;
  auto* switches = app.add_subcommand(
      "switches", "List every kernel switch: its scenario key, presets by kernel version and doc");
  switches->add_option("--kernel-version", switches_version,
                       "Show each switch's value for this kernel version (X.Y)");
  switches->add_flag("--markdown", switches_markdown, "Print the README's switch reference table");

  native::NativeOptions no;
  std::string native_size;
  auto* native_cmd = app.add_subcommand(
      "native", "Run a benchmark program on this host and report it as `run` reports a simulation");
  native_cmd
      ->add_option("what", no.bench,
                   "A scenario TOML file, or a benchmark: numa-shared-cow or mmap-fault-drop")
      ->required();
  NativeScenarioArgs ns;
  native_cmd->add_option("--set", ns.sets,
                         "scenario: override a scenario key: key.path=value (repeatable)");
  native_cmd->add_option("--repeat", ns.options.repeat, "scenario: runs, one after another")
      ->capture_default_str();
  native_cmd->add_flag("--tasks", ns.options.all_tasks,
                       "scenario: list every task, not a summary by program");
  native_cmd->add_option("--exec", ns.options.exec_path,
                         "scenario: the mmsim-exec executor (default: the build tree's)");
  native_cmd->add_option("--scratch", ns.options.scratch_root,
                         "scenario: where its files are made (default /var/tmp)");
  native_cmd->add_option("--debugfs-root", ns.options.debugfs_root, "Where debugfs is mounted")
      ->capture_default_str();
  native_cmd->add_option("--sysfs-root", ns.options.sysfs_root, "Where sysfs is mounted")
      ->capture_default_str();
  native_cmd->add_option("--seconds", no.seconds,
                         "numa-shared-cow: seconds each process sums (default 10)");
  native_cmd->add_option("--procs", no.procs, "numa-shared-cow: processes forked (default 2)");
  native_cmd->add_option("--loop", no.loop,
                         "numa-shared-cow: the summing loop's build, O0 (default: as the seed "
                         "write-up's program was built) or O2");
  native_cmd->add_option("--size", native_size,
                         "mmap-fault-drop: file size, bytes or 256M (default 256M)");
  native_cmd->add_option("--loops", no.loops,
                         "mmap-fault-drop: touch-and-drop passes (default 10)");
  native_cmd->add_option("--file", no.file,
                         "mmap-fault-drop: the file (default: a temp file under /var/tmp)");
  native_cmd->add_option("--numa-balancing", no.numa_balancing,
                         "Set kernel.numa_balancing (0 or 1) for the run; restored afterwards");
  native_cmd->add_flag("--cgroup", no.cgroup,
                       "Run in a fresh memory cgroup and report its memory.stat");
  native_cmd->add_option("--json", no.json, "Write the results as JSON to this file");
  native_cmd->add_option("--sysctl-root", no.sysctl_root, "Where the sysctls are")
      ->capture_default_str();
  native_cmd->add_option("--cgroup-root", no.cgroup_root, "Where the cgroup hierarchies are")
      ->capture_default_str();
  native_cmd->add_option(
      "--bench-dir", no.bench_dir,
      "Where the mmsim-* benchmark programs are (default: the build tree's bench/programs)");

  bool predict_flag = false;
  std::string predict_costs;
  native_cmd->add_flag(
      "--predict", predict_flag,
      "Also simulate the run on the host machine and print both with the relative errors");
  native_cmd->add_option("--costs", predict_costs,
                         "--predict: a cost profile (default: this host's, calibrated once and "
                         "cached in $XDG_CACHE_HOME/mmsim/host-profile.toml)");
  bool default_costs = false;
  native_cmd->add_flag("--default-costs", default_costs,
                       "--predict: use the built-in default profile (a 2015-2018 Xeon), not "
                       "this host's");

  validate::ValidateOptions vo;
  auto* validate_cmd = app.add_subcommand(
      "validate",
      "Run scenarios on a real Linux kernel in QEMU (the scenario's machine) and judge the "
      "kernel's counters against the simulation's");
  validate_cmd->add_option("scenario", vo.scenarios, "Scenario TOML files")->required();
  validate_cmd->add_option("--kernel", vo.kernels,
                           "Kernel series, 6.1 or 6.12 (repeatable; default: each scenario's "
                           "[validate] kernels)");
  validate_cmd->add_option("--repeat", vo.repeat,
                           "Runs in the guest and seeds simulated (default: the scenario's "
                           "[validate] repeat, else 3)");
  validate_cmd->add_option("--set", vo.sets,
                           "Override a scenario key in both worlds: key.path=value (repeatable)");
  validate_cmd
      ->add_option("--accel", vo.accel, "QEMU accelerator: auto (KVM if it boots), kvm or tcg")
      ->capture_default_str();
  validate_cmd->add_option("--json", vo.json, "Write every result as JSON to this file");
  validate_cmd->add_option("--markdown", vo.markdown,
                           "Write a report of every result (docs/validation.md) to this file");
  validate_cmd->add_option("--timeout", vo.timeout_s, "Seconds per guest, boot included")
      ->capture_default_str();
  validate_cmd->add_option("--exec", vo.exec_path,
                           "The mmsim-exec executor (default: the build tree's)");
  validate_cmd->add_option("--kernel-cache", vo.cache_dir,
                           "Where kernels are fetched to (default $XDG_CACHE_HOME/mmsim/kernels)");
  validate_cmd->add_option("--work-dir", vo.work_root,
                           "Where the guest's initramfs and logs are made (default /var/tmp)");
  validate_cmd->add_flag("--keep", vo.keep, "Keep the guest's initramfs and console log");
  validate_cmd->add_option("--scan-trace", vo.scan_trace,
                           "Write the guest kernel's NUMA scan trace (task_numa_work, "
                           "change_prot_numa, by kprobes) to this directory, one file per run");
  validate_cmd->add_option("--trace-event", vo.trace_events,
                           "Also record this tracepoint of the guest kernel in the --scan-trace "
                           "files: GROUP/NAME, such as vmscan/mm_vmscan_kswapd_wake or "
                           "migrate/mm_migrate_pages (repeatable)");
  validate_cmd->add_option(
      "--kprobe", vo.kprobes,
      "Also record calls of this guest kernel function in the --scan-trace files (as "
      "mmsim/probe_SYMBOL, with the task and CPU): \"SYMBOL\" or \"SYMBOL FETCHARGS\" in "
      "kprobe_events' syntax (repeatable)");

  CalibrateArgs ca;
  auto* calibrate =
      app.add_subcommand("calibrate", "Measure this host's costs and write a cost profile");
  calibrate->add_option("--out", ca.out, "The profile to write")->capture_default_str();
  calibrate->add_option("--runs", ca.runs, "Runs per measurement; the median is kept")
      ->capture_default_str();
  calibrate
      ->add_option("--max-spread", ca.max_spread,
                   "Refuse the host when a measurement's (max - min) / median is above this")
      ->capture_default_str();
  calibrate->add_flag("--force", ca.force, "Write the profile even when the host is unstable");
  calibrate->add_option(
      "--check", ca.check,
      "Predict the calibrators' workloads with this profile and print the errors");
  calibrate->add_option("--tools-dir", ca.tools_dir, "Where the mmsim-calibrate-* programs are");
  calibrate->add_option("--bench-dir", ca.bench_dir, "Where the mmsim-* benchmark programs are");

  // CLI11 says only "A subcommand is required" for a misspelt one.
  if (argc > 1 && argv[1][0] != '-') {
    const std::string first = argv[1];
    std::vector<std::string> known;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
      known.push_back(sub->get_name());
    if (std::find(known.begin(), known.end(), first) == known.end()) {
      err << fmt::format("mmsim: error: unknown command \"{}\" (known: {})\n", first,
                         fmt::join(known, ", "));
      return kExitBadInput;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    // --help and --version: print and succeed.
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    err << "mmsim: error: " << e.what() << "\n";
    err << "Run 'mmsim --help' or 'mmsim SUBCOMMAND --help'.\n";
    return 2;
  }
  for (CLI::App* sub : {run, compare, native_cmd, validate_cmd}) {
    if (*sub && sub->count("--json") && sub->get_option("--json")->as<std::string>().empty()) {
      err << "mmsim: error: --json: an empty file name\n";
      return kExitBadInput;
    }
  }
  try {
    if (*run) {
      if (run_no_noise) ra.sets.emplace_back("noise.enabled=false");
      return cmd_run(ra, out, err);
    }
    if (*compare) {
      if (compare_scenarios.size() == 1) co.scenario = compare_scenarios[0];
      if (compare_scenarios.size() > 1) {
        if (compare_no_noise) co.sets.emplace_back("noise.enabled=false");
        return cmd_compare_suite(co, compare_scenarios, compare_seed, compare_json,
                                 compare->count("--metric") > 0,
                                 !compare_csv.empty() || !compare_plot.empty() ||
                                     !compare_shards.shard.empty() || !compare_shards.merge.empty(),
                                 out, err);
      }
      if (!compare_shards.merge.empty() &&
          (!co.scenario.empty() || !co.vary.empty() || !co.sets.empty() || !compare_seed.empty() ||
           !co.metric.empty() || compare->count("--repeat") || compare_no_noise)) {
        err << "mmsim: error: --merge DIR takes the scenario and its settings from DIR/plan.json: "
               "give only --json besides it\n";
        return kExitBadInput;
      }
      if (compare_no_noise) co.sets.emplace_back("noise.enabled=false");
      return cmd_compare(co, compare_seed, compare_json, compare_csv, compare_plot, compare_shards,
                         out, err);
    }
    if (*topology) return cmd_topology(machine, out, err);
    if (*plot_cmd) return cmd_plot(plot_file, plot_out, out, err);
    if (*costs) return cmd_costs(costs_machine, out, err);
    if (*switches) return cmd_switches(switches_version, switches_markdown, out, err);
    if (*validate_cmd) {
      for (const auto& f : {vo.json, vo.markdown}) {
        if (f.empty()) continue;
        if (const std::string why = output_problem(f, vo.scenarios); !why.empty()) {
          err << "mmsim: error: " << f << ": " << why << "\n";
          return kExitBadInput;
        }
      }
      return validate::run_validate(vo, out, err);
    }
    if (*calibrate) {
      const std::string why = ca.check.empty() ? output_problem(ca.out, {}) : "";
      if (!why.empty()) {
        err << "mmsim: error: --out: " << why << "\n";
        return kExitBadInput;
      }
      return cmd_calibrate(ca, out, err);
    }
    if (*native_cmd && !native::find_bench(no.bench)) {
      std::error_code ec;
      if (!std::filesystem::exists(no.bench, ec)) {
        err << fmt::format(
            "mmsim: error: unknown benchmark \"{}\" and no scenario file of that name "
            "(benchmarks: {})\n",
            no.bench, fmt::join(native::bench_names(), ", "));
        return kExitBadInput;
      }
      ns.scenario = no.bench;
      ns.options.json = no.json;
      ns.options.sysctl_root = no.sysctl_root;
      ns.options.cgroup_root = no.cgroup_root;
      for (const char* bench_only : {"--seconds", "--procs", "--loop", "--size", "--loops",
                                     "--file", "--numa-balancing", "--cgroup", "--bench-dir"}) {
        if (native_cmd->count(bench_only)) {
          err << fmt::format(
              "mmsim: error: {}: only for a benchmark program; a scenario sets it in its file "
              "(or with --set)\n",
              bench_only);
          return kExitBadInput;
        }
      }
      return cmd_native_scenario(ns, predict_flag, predict_costs, default_costs, out, err);
    }
    if (*native_cmd) {
      for (const char* scenario_only : {"--set", "--repeat", "--tasks", "--exec", "--scratch"}) {
        if (native_cmd->count(scenario_only)) {
          err << fmt::format("mmsim: error: {}: only for a scenario, not a benchmark program\n",
                             scenario_only);
          return kExitBadInput;
        }
      }
      if (!no.json.empty()) {
        if (const std::string why = output_problem(no.json, {no.file}); !why.empty()) {
          err << "mmsim: error: --json: " << why << "\n";
          return kExitBadInput;
        }
      }
      if (!native_size.empty()) {
        no.size = native::parse_size(native_size);
        if (!no.size) {
          err << fmt::format(
              "mmsim: error: --size: expected bytes or a size like 256M, got \"{}\"\n",
              native_size);
          return 2;
        }
      }
      if (!predict_flag) return native::run_native(no, out, err);
      return cmd_native_predict(no, predict_costs, default_costs, out, err);
    }
  } catch (const std::bad_alloc&) {
    err << "mmsim: error: the host ran out of memory (see the README's limits)\n";
    return kExitHostRefused;
  } catch (const std::system_error& e) {
    // Threads or files the host would not give.
    err << "mmsim: error: the host refused: " << e.what() << "\n";
    return kExitHostRefused;
  } catch (const std::exception& e) {
    err << "mmsim: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace mmsim::cli
