// mmsim calibrate: measures on the host the costs the simulator uses, with
// the calibrators of tools/calibrate and the benchmark's own summing loop,
// and writes a cost profile recording each value's method and its spread over
// the runs. An unstable host (a spread above --max-spread) is refused.
#include "cli/calibrate_cmd.h"

#include <fmt/format.h>
#include <sys/utsname.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/predict.h"
#include "native/native.h"
#include "report/report.h"
#include "scenario/simulation.h"

namespace mmsim::cli {

namespace fs = std::filesystem;

std::string build_dir_of(const std::string& component) {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return component;
  // build/<preset>/src/cli/mmsim -> build/<preset>/<component>
  return (exe.parent_path().parent_path().parent_path() / component).string();
}

bool read_measurements(const std::string& path, cost::Measurements& m, std::string* error) {
  try {
    const toml::table t = toml::parse_file(path);
    const toml::table* c = t["costs"].as_table();
    if (!c) {
      *error = path + ": no [costs] table";
      return false;
    }
    const toml::table* spread = t["spread"].as_table();
    for (auto&& [k, v] : *c) {
      const auto d = v.value<double>();
      if (!d) continue;
      cost::Measurement x{*d, *d, *d};
      if (spread) {
        if (const toml::array* r = (*spread)[k].as_array(); r && r->size() == 2) {
          x.min = (*r)[0].value<double>().value_or(*d);
          x.max = (*r)[1].value<double>().value_or(*d);
        }
      }
      m[std::string(k.str())] = x;
    }
    return true;
  } catch (const toml::parse_error& e) {
    *error = fmt::format("{}: {}", path, e.description());
    return false;
  }
}

namespace {

// Runs a shell command, waiting for it.
int run_program(const std::string& cmd) { return std::system(cmd.c_str()); }

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("model name")) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

// The benchmark's summing loop, both builds (--loop O0, O2), one process
// alone and one per online CPU, `runs` runs of 1 s each: CPU time per element
// (the children's user + system time / (passes x elements)), so that time
// the CPUs spent elsewhere does not count.
void measure_bench_sweeps(const std::string& exe, const std::string& dir, int runs, long cpus,
                          cost::Measurements& m, std::ostream& out, std::ostream& err) {
  for (const char* loop : {"O0", "O2"}) {
    for (const long procs : {1L, cpus}) {
      const std::string key =
          fmt::format("bench_sweep_{}_{}_ns", loop, procs == 1 ? "alone" : "all");
      if (procs == 1 && cpus == 1 && m.contains(key)) continue;
      out << fmt::format("measuring the summing loop (--loop {}) of {}, {} process{}, {} x 1 s\n",
                         loop, exe, procs, procs == 1 ? "" : "es", runs)
          << std::flush;
      std::vector<double> v;
      const std::string result = dir + "/sweep.json";
      for (int r = 0; r < runs; ++r) {
        if (run_program(fmt::format("'{}' --seconds 1 --procs {} --loop {} > '{}'", exe, procs,
                                    loop, result)) != 0)
          break;
        try {
          std::ifstream in(result);
          const auto j = nlohmann::json::parse(in);
          double cpu_s = 0;
          for (const auto& c : j.at("children"))
            cpu_s += c.at("user_s").get<double>() + c.at("sys_s").get<double>();
          const double passes = j.at("iterations").get<double>();
          const double elems = j.at("elements").get<double>();
          if (passes > 0 && cpu_s > 0) v.push_back(cpu_s * 1e9 / (passes * elems));
        } catch (const std::exception& e) {
          err << fmt::format("mmsim: warning: {}: {}\n", result, e.what());
          break;
        }
      }
      if (static_cast<int>(v.size()) != runs) {
        err << fmt::format("mmsim: warning: {} failed; {} is not measured\n", exe, key);
        continue;
      }
      std::sort(v.begin(), v.end());
      const double median =
          v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
      m[key] = cost::Measurement{median, v.front(), v.back()};
      // One CPU: alone is every CPU busy.
      if (cpus == 1) m[fmt::format("bench_sweep_{}_all_ns", loop)] = m[key];
    }
  }
}

std::string spread_cell(double spread) {
  return std::isinf(spread) ? std::string("inf") : fmt::format("{:.1f}%", spread * 100);
}

int cmd_calibrate_check(const std::string& profile, std::ostream& out, std::ostream& err) {
  std::error_code ec;
  if (!fs::is_regular_file(profile, ec)) {
    err << fmt::format("mmsim: error: --check: cannot read \"{}\"\n", profile);
    return kExitBadInput;
  }
  utsname u{};
  ::uname(&u);
  std::string error;
  const std::vector<CheckRow> rows = check_profile(profile, u.release, &error);
  if (rows.empty()) {
    err << "mmsim: error: --check: " << error << "\n";
    return kExitBadInput;
  }
  out << fmt::format("{}: the calibrators' workloads, measured on the host vs simulated with it\n",
                     profile_label(profile));
  out << check_table(rows);
  return 0;
}

}  // namespace

int write_host_profile(const cost::HostProfile& p, const CalibrateArgs& a, const std::string& host,
                       const std::string& date, std::ostream& out, std::ostream& err) {
  out << fmt::format("\n{:<26} {:>12} {:>8}  {:<24}\n", "cost", "value", "spread",
                     "[min .. max] over the runs");
  for (const auto& c : p.costs) {
    out << fmt::format("{:<26} {:>12.6g} {:>8}  [{:.4g} .. {:.4g}]\n", c.name, c.value,
                       c.by_definition ? "-" : spread_cell(c.spread()), c.min, c.max);
  }
  out << fmt::format("\n{:<26} {:>12} {:>8}  {:<24}\n", "measured", "median", "spread",
                     "[min .. max]");
  for (const auto& c : p.measured) {
    out << fmt::format("{:<26} {:>12.6g} {:>8}  [{:.4g} .. {:.4g}]\n", c.name, c.value,
                       spread_cell(c.spread()), c.min, c.max);
  }
  for (const auto& f : p.failed) err << "mmsim: warning: failed derivation: " << f.why << "\n";
  for (const auto& k : p.missing)
    err << fmt::format("mmsim: warning: no measurement of {}: its costs keep their defaults\n", k);

  std::string unstable;
  for (const auto& u : p.unstable) {
    unstable +=
        fmt::format("{}{} ({} {})", unstable.empty() ? "" : ", ", u.name, spread_cell(u.m.spread()),
                    fmt::format("[{:.4g} .. {:.4g}]", u.m.min, u.m.max));
  }
  if (p.costs.size() <= 1) {  // exit_base_ns alone: nothing was measured
    err << "mmsim: error: no cost could be measured on this host; no profile written\n";
    return kExitHostRefused;
  }
  if (!p.unstable.empty() && !a.force) {
    err << fmt::format(
        "mmsim: error: this host is unstable: {} measurement{} spread more than {:.0f}% over "
        "their runs: {}. No profile was written to {}. Calibrate on a quieter host (or "
        "again), raise --max-spread, or write it anyway with --force.\n",
        p.unstable.size(), p.unstable.size() == 1 ? "" : "s", a.max_spread * 100, unstable, a.out);
    return kExitHostRefused;
  }
  std::string header = fmt::format(
      "# Host cost profile made by `mmsim calibrate` on {}, {}.\n"
      "# date: {}\n"
      "# Use it with `mmsim run --costs FILE`, `[costs] profile = \"FILE\"` or `mmsim native "
      "--predict --costs FILE`.\n"
      "# Each value is the median of {} runs (tools/calibrate, and the benchmark's own summing "
      "loop); its comment gives the spread, (max - min) / median, the range [min, max] over the "
      "runs (for a derived value, over its inputs' ranges) and how it was derived.\n",
      host, date, date, a.runs);
  if (p.unstable.empty()) {
    header += fmt::format(
        "# Stable: every measurement a cost was derived from spread at most {:.0f}% "
        "(--max-spread).\n",
        a.max_spread * 100);
  } else {
    header += fmt::format(
        "# UNSTABLE HOST, written with --force: these measurements spread more than {:.0f}%: "
        "{}.\n",
        a.max_spread * 100, unstable);
    err << fmt::format("mmsim: warning: unstable host, written anyway (--force): {}\n", unstable);
  }
  for (const auto& f : p.failed) header += "# FAILED derivation: " + f.why + "\n";
  header += "\n";
  if (!report::write_atomically(a.out, cost::host_profile_toml(p, header), err))
    return kExitHostRefused;
  out << fmt::format("\nwrote {}{}\n", a.out, p.unstable.empty() ? "" : " (UNSTABLE, --force)");
  return 0;
}

int cmd_calibrate(const CalibrateArgs& a, std::ostream& out, std::ostream& err) {
  if (!a.check.empty()) return cmd_calibrate_check(a.check, out, err);
  if (a.runs < 3 || a.runs > 1000) {
    err << fmt::format("mmsim: error: --runs: expected 3 to 1000, got {}\n", a.runs);
    return kExitBadInput;
  }
  if (!(a.max_spread >= 0)) {
    err << fmt::format("mmsim: error: --max-spread: expected a fraction at or above 0, got {}\n",
                       a.max_spread);
    return kExitBadInput;
  }
  const std::string tools = a.tools_dir.empty() ? build_dir_of("tools/calibrate") : a.tools_dir;
  const std::string bench = a.bench_dir.empty() ? build_dir_of("bench/programs") : a.bench_dir;
  cost::Measurements m;
  char tmpl[] = "/tmp/mmsim-calibrate-XXXXXX";
  const char* dir = ::mkdtemp(tmpl);
  if (!dir) {
    err << "mmsim: error: cannot make a temporary directory: " << std::strerror(errno) << "\n";
    return kExitHostRefused;
  }
  int rc = 0;
  for (const char* name : {"hw", "basic", "paths", "memcg"}) {
    const std::string exe = fmt::format("{}/mmsim-calibrate-{}", tools, name);
    if (!fs::exists(exe)) {
      err << fmt::format(
          "mmsim: error: calibrator {} not found (build it: cmake --build build/release)\n", exe);
      rc = kExitBadInput;
      break;
    }
    const std::string result = fmt::format("{}/{}.toml", dir, name);
    out << fmt::format("measuring with {} ({} runs each) ...\n", exe, a.runs) << std::flush;
    if (run_program(fmt::format("'{}' --runs {} --out '{}' > /dev/null", exe, a.runs, result)) !=
        0) {
      err << fmt::format("mmsim: error: {} failed (see its messages above)\n", exe);
      rc = kExitHostRefused;  // a measurement could not run
      break;
    }
    std::string e;
    if (!read_measurements(result, m, &e)) {
      err << "mmsim: error: " << e << "\n";
      rc = 1;
      break;
    }
  }
  const native::BenchSpec* spec = native::find_bench("numa-shared-cow");
  const std::string sweep = bench + "/" + spec->executable;
  const long cpus = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
  if (rc == 0 && fs::exists(sweep)) {
    measure_bench_sweeps(sweep, dir, a.runs, cpus, m, out, err);
  } else if (rc == 0) {
    err << fmt::format("mmsim: warning: {} not found: the summing loop is not measured\n", sweep);
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (rc) return rc;

  const cost::HostProfile p = cost::derive_host_profile(m, a.max_spread);
  utsname u{};
  ::uname(&u);
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  const std::string host =
      fmt::format("{} {} ({}), {}, {} CPUs", u.sysname, u.release, u.machine, cpu_model(), cpus);
  return write_host_profile(p, a, host, date, out, err);
}

// ------------------------------------------------------------------ --check

namespace {

constexpr uint64_t kRegion = 64ull << 20;  // the calibrators' 64 MiB regions
constexpr double kRegionPages = kRegion / 4096.0;

// A program's operations, TOML array-of-tables text under [[programs.NAME]].
struct Body {
  std::string files;  // [[files]] tables
  std::string main;   // the main program's operations
  std::string child;  // a "child" program's, if any
};

std::string op(const std::string& program, const std::string& fields) {
  return fmt::format("\n[[programs.{}]]\n{}\n", program, fields);
}

const std::string kFile =
    fmt::format("\n[[files]]\nname = \"data\"\nsize = {}\ncached = true\n", kRegion);
const std::string kShmemFile = fmt::format(
    "\n[[files]]\nname = \"data\"\nsize = {}\ncached = true\nfs = \"tmpfs\"\n", kRegion);
const std::string kExe = "\n[[files]]\nname = \"exe\"\nsize = 4009984\ncached = true\n";
const std::string kMapFile =
    op("main", "op = \"map\"\nregion = \"f\"\nfile = \"data\"\nprot = \"r\"\nflags = \"shared\"");
const std::string kMapAnon =
    op("main", fmt::format("op = \"map\"\nregion = \"a\"\nsize = {}\nprot = \"rw\"\nflags = "
                           "\"private\"",
                           kRegion));
const std::string kMapSmall =
    op("main", "op = \"map\"\nregion = \"s\"\nsize = 4096\nprot = \"rw\"\nflags = \"private\"");
const std::string kTouchFile = op("main", "op = \"touch\"\nregion = \"f\"");
const std::string kWriteAnon = op("main", "op = \"touch\"\nregion = \"a\"\nmode = \"write\"");
const std::string kForkWait =
    op("main", "op = \"fork\"\nprogram = \"child\"") + op("main", "op = \"wait\"");
const std::string kChildCount = op("child", "op = \"count\"\ncounter = \"c\"");

// sum of sign x (the body's simulated CPU time, user + system, in ns)
struct Term {
  double sign;
  Body body;
};

struct Workload {
  std::vector<std::string> keys;  // the measurements whose sum it predicts
  std::string unit;
  double units;
  std::vector<Term> terms;
};

std::vector<Workload> check_workloads() {
  const Body map_file{kFile, kMapFile, ""};
  const Body map_anon{"", kMapAnon, ""};
  const Body written_anon{"", kMapAnon + kWriteAnon, ""};
  const Body fork_small{"", kMapSmall + kForkWait, kChildCount};
  const Body small{"", kMapSmall, ""};
  const Body fork_written{"", kMapAnon + kWriteAnon + kForkWait, kChildCount};
  const std::string sweep_pass = "op = \"sweep\"\nregion = \"rw\"\noffset = 4096\nsize = 4000000";
  const std::string exe_ops =
      op("main",
         "op = \"map\"\nregion = \"rw\"\nfile = \"exe\"\nprot = \"rw\"\nflags = "
         "\"private\"") +
      op("main", "op = \"touch\"\nregion = \"rw\"\nmode = \"write\"\nsize = 4096") +
      op("main", sweep_pass);
  const std::string madvise = op("main", "op = \"madvise\"\nregion = \"f\"\nadvice = \"dontneed\"");
  const std::string unmap = op("main", "op = \"unmap\"\nregion = \"a\"");
  const Body anon_written_unmapped{"", kMapAnon + kWriteAnon + unmap, ""};
  // A simulated task's exit zaps what is still mapped, so a zap is predicted
  // together with the faults that populated the range.
  std::vector<Workload> w = {
      {{"minor_fault_file_ns", "zap_pte_ns"},
       "ns/page",
       kRegionPages,
       {{1, {kFile, kMapFile + kTouchFile + madvise, ""}}, {-1, map_file}}},
      {{"shmem_touch_per_page_ns"},
       "ns/page (+ its zap at exit)",
       kRegionPages,
       {{1, {kShmemFile, kMapFile + kTouchFile, ""}}, {-1, {kShmemFile, kMapFile, ""}}}},
      {{"zero_page_fault_ns"},
       "ns/fault (+ its zap at exit)",
       kRegionPages,
       {{1, {"", kMapAnon + op("main", "op = \"touch\"\nregion = \"a\""), ""}}, {-1, map_anon}}},
      {{"anon_fault_zero_ns", "zap_anon_pte_ns"},
       "ns/page",
       kRegionPages,
       {{1, anon_written_unmapped}, {-1, map_anon}}},
      {{"anon_fault_zero_ns", "munmap_anon_zap_free_ns"},
       "ns/page",
       kRegionPages,
       {{1, anon_written_unmapped}, {-1, map_anon}}},
      {{"fork_exit_wait_ns"}, "ns/fork", 1, {{1, fork_small}, {-1, small}}},
      {{"fork_pte_copy_ns"},
       "ns/page",
       kRegionPages,
       {{1, fork_written}, {-1, written_anon}, {-1, fork_small}, {1, small}}},
      {{"cow_fault_ns"},
       "ns/page (+ the child's zap)",
       kRegionPages,
       {{1,
         {"", kMapAnon + kWriteAnon + kForkWait,
          op("child", "op = \"touch\"\nregion = \"a\"\nmode = \"write\"")}},
        {-1, fork_written}}},
      {{"mmap_munmap_ns"},
       "ns/pair",
       1000,
       {{1,
         {"",
          op("main",
             "op = \"loop\"\ncount = 1000\nbody = [\n  { op = \"map\", region = \"p\", size "
             "= 4096, prot = \"rw\", flags = \"private\" },\n  { op = \"unmap\", region = "
             "\"p\" },\n]"),
          ""}},
        {-1, small}}},
  };
  // The summing loop alone, 100 passes, as each build runs it (the baseline
  // maps and touches the array, so the difference is the passes).
  for (const auto& [key, build] :
       {std::pair{"bench_sweep_O2_alone_ns", "O2"}, std::pair{"bench_sweep_O0_alone_ns", "O0"}}) {
    w.push_back(
        {{key},
         "ns/element",
         100 * 1e6,
         {{1,
           {kExe,
            exe_ops + op("main", fmt::format("op = \"loop\"\ncount = 100\nbody = [\n  {{ op "
                                             "= \"sweep\", region = \"rw\", offset = "
                                             "4096, size = 4000000, build = \"{}\" }},\n]",
                                             build)),
            ""}},
          {-1, {kExe, exe_ops, ""}}}});
  }
  return w;
}

// Workloads the simulator has no counterpart for, and why.
const std::vector<std::pair<std::string, std::string>> kNotPredicted = {
    {"populate_file_pte_ns", "no populate (MADV_POPULATE_READ) operation in the scenario language"},
    {"pagecache_mincore_ns", "no mincore operation in the scenario language"},
    {"pagecache_lookup_ns", "no pread operation in the scenario language"},
    {"mprotect_pte_ns", "no mprotect operation in the scenario language"},
    {"mprotect_call_ns", "no mprotect operation in the scenario language"},
    {"tlb_flush_remote_ipi_ns", "no mprotect operation in the scenario language"},
    {"syscall_ns", "no bare system call operation in the scenario language"},
    {"zap_pte_ns",
     "alone: a simulated task's exit zaps what is still mapped, so a zap is only "
     "told apart with the faults before it (the row with minor_fault_file_ns)"},
    {"zap_anon_pte_ns", "alone: as zap_pte_ns (the row with anon_fault_zero_ns)"},
    {"minor_fault_file_ns", "alone: as zap_pte_ns (the row with zap_pte_ns)"},
    {"context_switch_ns", "no pipe or other wake-up operation in the scenario language"},
    {"shmem_fault_1pte_ns",
     "a scenario file is cached whole or not at all (the workload needs "
     "every 16th page cached)"},
    {"bench_sweep_O0_all_ns", "one process per CPU: the sweep's sharing is not modelled here"},
    {"bench_sweep_O2_all_ns", "one process per CPU: the sweep's sharing is not modelled here"},
    {"storage_read_128k_ns", "O_DIRECT reads: the scenario language reads through the page cache"},
    {"storage_write_128k_ns",
     "O_DIRECT writes: the scenario language writes through the page cache"},
    {"page_zero_ns", "user-mode memset: no operation isolates it"},
    {"page_copy_ns", "user-mode memcpy: no operation isolates it"},
    {"lock_uncontended_ns", "user-mode lock: no operation isolates it"},
    {"mem_latency_ns", "hardware: the profile takes it as measured"},
    {"core_ghz", "hardware: the profile takes it as measured"},
    {"l1_ns", "hardware: the profile takes it as measured"},
    {"l2_ns", "hardware: the profile takes it as measured"},
    {"llc_ns", "hardware: the profile takes it as measured"},
    {"lfb_entries", "hardware: the profile takes it as measured"},
    {"stream_read_gbps", "hardware: the profile takes it as measured"},
    {"stream_all_read_gbps", "hardware: the profile takes it as measured"},
};

}  // namespace

std::vector<CheckRow> check_profile(const std::string& profile, const std::string& kernel_release,
                                    std::string* error) {
  toml::table t;
  try {
    t = toml::parse_file(profile);
  } catch (const toml::parse_error& e) {
    *error = fmt::format("{}: {}", profile, e.description());
    return {};
  }
  const toml::table* measured = t["measured"].as_table();
  if (!measured) {
    *error = fmt::format(
        "{} has no [measured] table (the calibrators' raw medians): make it with mmsim calibrate",
        profile);
    return {};
  }
  auto measured_value = [&](const std::string& key) -> std::optional<double> {
    return (*measured)[key].value<double>();
  };
  std::map<std::string, std::optional<double>> cpu_ns;  // by scenario text
  std::string first_problem;
  auto simulate = [&](const Body& b) -> std::optional<double> {
    std::string text = host_scenario_head("calibrate-check", profile, kernel_release) + b.files +
                       "\n[run]\nprogram = \"main\"\n" + b.main + b.child;
    if (auto it = cpu_ns.find(text); it != cpu_ns.end()) return it->second;
    std::optional<double> ns;
    const scenario::PrepareResult pr =
        scenario::prepare({"<calibrate --check>", text, {}, std::nullopt, ""});
    if (!pr.run) {
      if (first_problem.empty() && !pr.diagnostics.empty())
        first_problem = pr.diagnostics.front().str();
    } else {
      const workload::RunResult r = scenario::simulate(*pr.run);
      if (!r.limit_error.empty() || !r.errors.empty()) {
        if (first_problem.empty())
          first_problem = !r.limit_error.empty() ? r.limit_error : r.errors.front();
      } else {
        double sum = 0;
        for (const auto& task : r.tasks) sum += task.times.user_ns + task.times.sys_ns;
        ns = sum;
      }
    }
    cpu_ns[text] = ns;
    return ns;
  };
  std::vector<CheckRow> rows;
  for (const Workload& w : check_workloads()) {
    CheckRow row{w.keys[0], w.unit, measured_value(w.keys[0]), std::nullopt, ""};
    for (size_t i = 1; i < w.keys.size(); ++i) {
      row.key += " + " + w.keys[i];
      const auto v = measured_value(w.keys[i]);
      row.measured = row.measured && v ? std::optional<double>(*row.measured + *v) : std::nullopt;
    }
    double sum = 0;
    bool ok = true;
    first_problem.clear();
    for (const Term& term : w.terms) {
      const auto ns = simulate(term.body);
      if (!ns) {
        ok = false;
        break;
      }
      sum += term.sign * *ns;
    }
    if (ok) {
      row.predicted = sum / w.units;
    } else {
      row.why_not = "the simulation failed: " + first_problem;
    }
    if (!row.measured && row.why_not.empty()) row.why_not = "not in the profile's [measured] table";
    rows.push_back(row);
  }
  for (const auto& [key, why] : kNotPredicted) {
    rows.push_back({key, "", measured_value(key), std::nullopt, why});
  }
  return rows;
}

std::string check_table(const std::vector<CheckRow>& rows) {
  std::string s =
      fmt::format("\n{:<46} {:>12} {:>12} {:>9}\n", "workload", "measured", "predicted", "error");
  for (const auto& r : rows) {
    if (!r.predicted || !r.measured) continue;
    const double e = *r.measured != 0 ? (*r.predicted - *r.measured) / *r.measured : NAN;
    s += fmt::format("{:<46} {:>12.4g} {:>12.4g} {:>9}  {}\n", r.key, *r.measured, *r.predicted,
                     std::isnan(e) ? std::string("n/a") : fmt::format("{:+.1f}%", e * 100), r.unit);
  }
  s += "\nnot predicted:\n";
  for (const auto& r : rows) {
    if (r.predicted && r.measured) continue;
    s += fmt::format("  {:<26} {}\n", r.key, r.why_not);
  }
  return s;
}

}  // namespace mmsim::cli
