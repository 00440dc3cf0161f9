// mmsim calibrate: measures on the host the costs the simulator uses, with
// the calibrators of tools/calibrate and the benchmark's own summing loop,
// and writes a cost profile recording each value's method.
#include "cli/calibrate_cmd.h"

#include <fmt/format.h>
#include <sys/utsname.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "native/native.h"
#include "report/report.h"

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
    for (auto&& [k, v] : *c) {
      if (auto d = v.value<double>()) m[std::string(k.str())] = *d;
    }
    return true;
  } catch (const toml::parse_error& e) {
    *error = fmt::format("{}: {}", path, e.description());
    return false;
  }
}

namespace {

// Runs a program, waiting for it; its stdout goes to `capture` if given.
int run_program(const std::string& cmd) { return std::system(cmd.c_str()); }

}  // namespace

int cmd_calibrate(const CalibrateArgs& a, std::ostream& out, std::ostream& err) {
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
  for (const char* name : {"basic", "paths", "memcg"}) {
    const std::string exe = fmt::format("{}/mmsim-calibrate-{}", tools, name);
    if (!fs::exists(exe)) {
      err << fmt::format(
          "mmsim: error: calibrator {} not found (build it: cmake --build build/release)\n", exe);
      rc = kExitBadInput;
      break;
    }
    const std::string result = fmt::format("{}/{}.toml", dir, name);
    out << fmt::format("measuring with {} ...\n", exe) << std::flush;
    std::string cmd = fmt::format("'{}' --out '{}' > /dev/null", exe, result);
    if (a.runs) cmd = fmt::format("'{}' --runs {} --out '{}' > /dev/null", exe, a.runs, result);
    if (run_program(cmd) != 0) {
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
  // The benchmark's own summing loop, one process per online CPU for 2 s:
  // the per-element cost when every CPU is busy, as in the benchmark (the
  // model has no SMT or shared-core slowdown, so the load must be in the
  // measurement).
  const std::string sweep = bench + "/" + native::find_bench("numa-shared-cow")->executable;
  const long cpus = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
  if (rc == 0 && fs::exists(sweep)) {
    const std::string result = fmt::format("{}/sweep.json", dir);
    out << fmt::format("measuring the summing loop of {} on {} CPUs ...\n", sweep, cpus)
        << std::flush;
    if (run_program(fmt::format("'{}' --seconds 2 --procs {} > '{}'", sweep, cpus, result)) == 0) {
      try {
        std::ifstream in(result);
        const auto j = nlohmann::json::parse(in);
        const double passes = j.at("iterations").get<double>();
        const double elems = j.value("elements", 1000000.0);
        if (passes > 0)
          m["bench_sweep_elem_ns"] = 2e9 * static_cast<double>(cpus) / (passes * elems);
      } catch (const std::exception&) {
      }
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (rc) return rc;

  const cost::HostProfile p = cost::derive_host_profile(m);
  utsname u{};
  ::uname(&u);
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  const std::string header = fmt::format(
      "# Host cost profile made by `mmsim calibrate` on {} {} ({}), {}.\n"
      "# Use it with `mmsim run --costs FILE` or `[costs] profile = \"FILE\"`.\n"
      "# Each value is a median over runs of tools/calibrate; the comment says how it was "
      "derived.\n\n",
      u.sysname, u.release, u.machine, date);
  const std::string text = cost::host_profile_toml(p, header);
  if (!report::write_atomically(a.out, text, err)) return kExitHostRefused;
  out << text;
  for (const auto& k : p.missing)
    err << fmt::format("mmsim: warning: no measurement of {}: its default stays\n", k);
  out << fmt::format("wrote {}\n", a.out);
  return 0;
}

}  // namespace mmsim::cli
