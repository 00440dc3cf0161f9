#include "cli/predict.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <toml++/toml.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/calibrate_cmd.h"
#include "cli/cli.h"
#include "native/native.h"
#include "native/scenario_native.h"
#include "report/compare.h"
#include "report/report.h"
#include "scenario/scenario.h"
#include "scenario/simulation.h"
#include "validate/validate.h"

namespace mmsim::cli {

namespace {

// The pages a read fault mapped on the host, from the profile's [measured].
std::optional<double> measured_fault_pages(const std::string& costs) {
  if (costs.empty()) return std::nullopt;
  try {
    const toml::table t = toml::parse_file(costs);
    return t["measured"]["file_fault_pages"].value<double>();
  } catch (const toml::parse_error&) {
    return std::nullopt;
  }
}

}  // namespace

std::string host_kernel_version(const std::string& release) {
  int major = 6, minor = 6;
  std::sscanf(release.c_str(), "%d.%d", &major, &minor);
  if (major > 6 || (major == 6 && minor > 19)) {
    major = 6;
    minor = 19;
  }
  return fmt::format("{}.{}", major, minor);
}

std::string host_scenario_head(const std::string& name, const std::string& costs,
                               const std::string& kernel_release,
                               std::optional<int> numa_balancing) {
  std::string s = fmt::format(
      "[scenario]\nname = \"{}\"\nseed = 1\n\n[machine]\npreset = "
      "\"host\"\n\n[kernel]\nversion = \"{}\"\n",
      name, host_kernel_version(kernel_release));
  if (numa_balancing) s += fmt::format("numa_balancing = {}\n", *numa_balancing);
  if (auto pages = measured_fault_pages(costs)) {
    // A read fault on this host maps this many pages on average: whole large
    // folios. Folios are naturally aligned powers of two, so the model maps
    // the nearest power of two (at most a PMD, 2 MiB).
    const double order = std::round(std::log2(std::max(1.0, *pages)));
    const uint64_t kb = (uint64_t{1} << static_cast<int>(std::min(order, 9.0))) * 4;
    s += fmt::format("pagecache_folio_kb = {}\n", kb);
  }
  if (!costs.empty()) {
    s += fmt::format("\n[costs]\nprofile = \"{}\"\n", std::filesystem::absolute(costs).string());
  }
  return s;
}

std::string predict_scenario(const PredictParams& p, const std::string& kernel_release) {
  std::string s =
      host_scenario_head("native-" + p.bench, p.costs, kernel_release, p.numa_balancing);
  if (p.bench == "mmap-fault-drop") {
    const uint64_t pages = (p.size_bytes + 4095) / 4096;
    s += fmt::format(R"(
[[files]]
# written by the benchmark just before: in the page cache
name = "data"
size = {}
cached = true

[run]
program = "main"

[[programs.main]]
op = "map"
region = "locked"
file = "data"
prot = "r"
flags = "shared"

[[programs.main]]
op = "mlock"
region = "locked"

[[programs.main]]
op = "map"
region = "reader"
file = "data"
prot = "r"
flags = "shared"

[[programs.main]]
op = "loop"
count = {}
body = [
  {{ op = "touch", region = "reader" }},
  {{ op = "madvise", region = "reader", advice = "dontneed" }},
  {{ op = "count", counter = "touches", by = {} }},
]
)",
                     pages * 4096, p.loops, pages);
  } else {
    // The benchmark's executable: one page of .got, then the 4,000,000-byte
    // array in .data (a private, writable file mapping).
    s += fmt::format(R"(
[[files]]
name = "exe"
size = 4009984
cached = true

[run]
program = "parent"

[[programs.parent]]
op = "map"
region = "rw"
file = "exe"
prot = "rw"
flags = "private"

[[programs.parent]]
op = "touch"
region = "rw"
mode = "write"
size = 4096

[[programs.parent]]
op = "map"
region = "counts"
size = 4096
flags = "shared"

[[programs.parent]]
op = "fork"
count = {}
program = "child"

[[programs.parent]]
op = "wait"

[[programs.child]]
op = "loop"
duration = "{}s"
body = [
  {{ op = "sweep", region = "rw", offset = 4096, size = 4000000, build = "{}" }},
  {{ op = "count", counter = "iterations" }},
]

[[programs.child]]
op = "touch"
region = "counts"
mode = "write"
)",
                     p.procs, p.seconds, p.loop);
  }
  return s;
}

nlohmann::ordered_json side_by_side(const nlohmann::ordered_json& native,
                                    const nlohmann::ordered_json& sim,
                                    const std::vector<SideRow>& rows, std::ostream& out) {
  auto num = [](const nlohmann::ordered_json& j, const std::string& pointer) -> double {
    const nlohmann::ordered_json::json_pointer ptr(pointer);
    if (!j.contains(ptr) || !j.at(ptr).is_number()) return NAN;
    return j.at(ptr).get<double>();
  };
  nlohmann::ordered_json rel = nlohmann::ordered_json::object();
  out << fmt::format("\n{:<30} {:>16} {:>16} {:>12}\n", "", "native", "simulated", "error");
  for (const auto& row : rows) {
    const double n = num(native, row.pointer);
    const double s = num(sim, row.pointer);
    if (std::isnan(n) || std::isnan(s)) continue;
    const double e = n != 0 ? (s - n) / n : (s == 0 ? 0.0 : NAN);
    if (!std::isnan(e)) rel[row.name] = e;
    out << fmt::format("{:<30} {:>16.6g} {:>16.6g} {:>11}\n", row.name, n, s,
                       std::isnan(e) ? std::string("n/a") : fmt::format("{:+.1f}%", e * 100));
  }
  return rel;
}

int predict(const PredictParams& p, const nlohmann::ordered_json& native, std::ostream& out,
            std::ostream& err, nlohmann::ordered_json* result) {
  utsname u{};
  ::uname(&u);
  const std::string text = predict_scenario(p, u.release);
  scenario::PrepareResult pr =
      scenario::prepare({"<predict " + p.bench + ">", text, {}, std::nullopt, ""});
  if (!pr.run) {
    for (const auto& d : pr.diagnostics) err << d.str() << "\n";
    return 2;
  }
  const scenario::Prepared& run = *pr.run;
  const auto t0 = std::chrono::steady_clock::now();
  const workload::RunResult r = scenario::simulate(run);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const scenario::Scenario& sc = run.scenario;
  report::RunInfo info{&sc, &run.topology, &r, wall, true};
  const nlohmann::ordered_json sim = report::run_json(info);

  // Side by side: wall time, throughput, faults, times, and every vmstat
  // counter both sides have and one of them changed.
  const native::BenchSpec* spec = native::find_bench(p.bench);
  if (!spec) {
    err << "mmsim: error: no benchmark is named \"" << p.bench << "\"\n";
    return 2;
  }
  const std::string counter = spec->counter;
  std::vector<SideRow> rows = {{"elapsed_s", "/metrics/elapsed_s"},
                               {counter, "/metrics/" + counter},
                               {"user_s", "/metrics/user_s"},
                               {"sys_s", "/metrics/sys_s"}};
  for (const char* k : {"pgfault", "pgmajfault", "numa_hint_faults", "numa_pages_migrated",
                        "pgmigrate_success", "nr_tlb_remote_flush"}) {
    rows.push_back({k, std::string("/vmstat/") + k});
  }
  out << fmt::format("\nsimulated with {}\n",
                     p.costs.empty() ? "the BUILT-IN DEFAULT cost profile (not this host's)"
                                     : "cost profile " + profile_label(p.costs));
  const nlohmann::ordered_json rel = side_by_side(native, sim, rows, out);
  if (result) *result = {{"native", native}, {"simulated", sim}, {"relative_error", rel}};
  return 0;
}

namespace {

// "/" and "~" escaped for a JSON pointer's reference token.
std::string pointer_token(const std::string& key) {
  std::string out;
  for (const char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

int native_scenario_predict(const std::string& path, const std::vector<std::string>& sets,
                            const std::string& costs, const scenario::Scenario& sc,
                            const native::ScenarioNativeOptions& options, std::ostream& out,
                            std::ostream& err) {
  // The same scenario on this host's machine and kernel version.
  utsname u{};
  ::uname(&u);
  std::string text;
  try {
    toml::table t = toml::parse_file(path);
    t.insert_or_assign("machine", toml::table{{"preset", "host"}});
    if (!t["kernel"].is_table()) t.insert_or_assign("kernel", toml::table{});
    t["kernel"].as_table()->insert_or_assign("version", host_kernel_version(u.release));
    std::ostringstream s;
    s << t;
    text = s.str();
  } catch (const toml::parse_error& e) {
    err << "mmsim: error: " << path << ": " << e.description() << "\n";
    return 2;
  }
  const std::string name = path + " on this host";
  scenario::PrepareResult pr = scenario::prepare({name, text, sets, std::nullopt, costs});
  if (!pr.run) {
    err << "mmsim: error: --predict: the scenario does not fit this host's machine:\n";
    for (const auto& d : pr.diagnostics) err << d.str() << "\n";
    return 2;
  }
  native::ScenarioNativeOptions o = options;
  o.json.clear();
  nlohmann::ordered_json native;
  if (const int rc = native::run_scenario_native(sc, o, out, err, &native)) return rc;

  const workload::RunResult r = scenario::simulate(*pr.run);
  report::RunInfo info{&pr.run->scenario, &pr.run->topology, &r, 0, false};
  nlohmann::ordered_json sim = report::run_json(info);
  // Under cgroup v2 with the scenario's cgroups the native run's "/" is its
  // own cgroup, which holds only them: the simulation's is shown likewise.
  auto hierarchy = [](const nlohmann::ordered_json& report) {
    return report.contains("memcg") ? report["memcg"].value("hierarchy", "") : std::string();
  };
  const bool v2_run_cgroup =
      validate::compares_run_cgroup(hierarchy(native), hierarchy(sim), !sc.cgroups.empty());
  if (v2_run_cgroup) validate::as_run_cgroup(sim);
  const size_t nodes = pr.run->topology.nr_nodes(), cpus = pr.run->topology.nr_cpus();
  out << fmt::format(
      "\nsimulated: {} on this host's machine ({} node{}, {} CPU{}), kernel {}, {}\n", sc.name,
      nodes, nodes == 1 ? "" : "s", cpus, cpus == 1 ? "" : "s", host_kernel_version(u.release),
      costs.empty() ? "the BUILT-IN DEFAULT cost profile (not this host's)"
                    : "cost profile " + profile_label(costs));
  out << "(native vmstat counts the whole host's activity over the run; the simulation, the "
         "scenario's)\n";
  if (v2_run_cgroup) {
    out << "(cgroup v2: the simulation's memcg / is the sum of its top-level cgroups, as the "
           "native run's cgroup holds only them; no memory.peak)\n";
  }

  std::vector<SideRow> rows;
  for (const auto& [k, v] : native["metrics"].items()) rows.push_back({k, "/metrics/" + k});
  for (const auto& [k, v] : sim["vmstat"].items()) {
    if (v.is_number() && v.get<double>() != 0) rows.push_back({k, "/vmstat/" + k});
  }
  if (sim.contains("memcg") && native.contains("memcg")) {
    for (const auto& [g, files] : sim["memcg"]["cgroups"].items()) {
      for (const auto& [k, v] : files["memory.stat"].items()) {
        rows.push_back({fmt::format("memcg {} {}", g, k),
                        fmt::format("/memcg/cgroups/{}/memory.stat/{}", pointer_token(g), k)});
      }
    }
  }
  const nlohmann::ordered_json rel = side_by_side(native, sim, rows, out);
  if (!options.json.empty()) {
    const nlohmann::ordered_json both = {
        {"native", native}, {"simulated", sim}, {"relative_error", rel}};
    if (!report::write_atomically(options.json, both.dump(2) + "\n", err)) {
      return native::kExitHostSetup;
    }
  }
  return 0;
}

std::string host_profile_cache_path(const char* xdg_cache_home, const char* home) {
  namespace fs = std::filesystem;
  if (xdg_cache_home && *xdg_cache_home && fs::path(xdg_cache_home).is_absolute())
    return (fs::path(xdg_cache_home) / "mmsim" / "host-profile.toml").string();
  if (home && *home) return (fs::path(home) / ".cache" / "mmsim" / "host-profile.toml").string();
  return "";
}

std::string profile_label(const std::string& path) {
  std::ifstream in(path);
  std::string line, first, date;
  while (std::getline(in, line) && line.starts_with("#")) {
    if (first.empty()) first = line;
    if (line.starts_with("# date: ")) {
      date = line.substr(8);
      break;
    }
  }
  if (date.empty()) {
    // An older profile: "# Host cost profile made by ... on ..., 2026-01-31."
    const auto comma = first.rfind(", ");
    if (comma != std::string::npos) date = first.substr(comma + 2);
    while (!date.empty() && (date.back() == '.' || date.back() == ' ')) date.pop_back();
    if (date.size() != 10 || date[4] != '-' || date[7] != '-') date.clear();
  }
  if (date.empty()) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
      char buf[32];
      std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&st.st_mtime));
      date = std::string(buf) + ", file date";
    }
  }
  return fmt::format("{} (made {})", path, date.empty() ? "on an unknown date" : date);
}

std::optional<PredictCosts> choose_predict_costs(const std::string& explicit_costs,
                                                 bool default_costs, const std::string& cache_path,
                                                 const CalibrateFn& calibrate, std::ostream& out,
                                                 std::ostream& err, int* exit_code) {
  *exit_code = 0;
  if (!explicit_costs.empty()) {
    out << fmt::format("prediction: cost profile {} (--costs)\n", profile_label(explicit_costs));
    return PredictCosts{explicit_costs};
  }
  if (default_costs) {
    err << "mmsim: warning: --default-costs: the prediction uses the BUILT-IN DEFAULT cost "
           "profile (a 2015-2018 Xeon), NOT THIS HOST'S; its times say nothing about this "
           "host\n";
    out << "prediction: the BUILT-IN DEFAULT cost profile (--default-costs), not this host's\n";
    return PredictCosts{};
  }
  if (cache_path.empty()) {
    err << "mmsim: error: --predict: no place to cache this host's cost profile (neither "
           "XDG_CACHE_HOME nor HOME is set); give one with --costs FILE (mmsim calibrate --out "
           "FILE makes it)\n";
    *exit_code = 2;
    return std::nullopt;
  }
  std::error_code ec;
  if (std::filesystem::exists(cache_path, ec)) {
    out << fmt::format(
        "prediction: this host's cost profile {} (cached; delete it to "
        "calibrate again)\n",
        profile_label(cache_path));
    return PredictCosts{cache_path, true};
  }
  out << fmt::format(
      "prediction: no cost profile of this host yet: calibrating once (a minute or two), caching "
      "it at {}\n",
      cache_path);
  out.flush();
  std::filesystem::create_directories(std::filesystem::path(cache_path).parent_path(), ec);
  if (ec) {
    err << fmt::format("mmsim: error: cannot create {}: {}\n",
                       std::filesystem::path(cache_path).parent_path().string(), ec.message());
    *exit_code = kExitHostRefused;
    return std::nullopt;
  }
  const int rc = calibrate(cache_path);
  if (rc != 0 || !std::filesystem::exists(cache_path, ec)) {
    err << fmt::format(
        "mmsim: error: --predict: the calibration of this host failed (exit {}), so there is no "
        "host profile to predict with; nothing was predicted. Fix what it says, give a profile "
        "with --costs FILE, or ask for the built-in defaults with --default-costs\n",
        rc);
    *exit_code = rc != 0 ? rc : kExitHostRefused;
    return std::nullopt;
  }
  out << fmt::format("prediction: this host's cost profile {} (just calibrated)\n",
                     profile_label(cache_path));
  return PredictCosts{cache_path, true, true};
}

std::optional<PredictCosts> host_predict_costs(const std::string& explicit_costs,
                                               bool default_costs, std::ostream& out,
                                               std::ostream& err, int* exit_code) {
  const std::string cache =
      host_profile_cache_path(std::getenv("XDG_CACHE_HOME"), std::getenv("HOME"));
  auto calibrate = [&](const std::string& path) {
    CalibrateArgs a;
    a.out = path;
    return cmd_calibrate(a, out, err);
  };
  return choose_predict_costs(explicit_costs, default_costs, cache, calibrate, out, err, exit_code);
}

}  // namespace mmsim::cli
