// The simulation of a native benchmark run on the host machine, and the two
// side by side (mmsim native BENCH --predict).
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "native/scenario_native.h"

namespace mmsim::cli {

struct PredictParams {
  std::string bench;                   // numa-shared-cow or mmap-fault-drop
  double seconds = 10;                 // numa-shared-cow
  uint32_t procs = 2;                  // numa-shared-cow
  std::string loop = "O0";             // numa-shared-cow: the summing loop's build, O0 or O2
  uint64_t size_bytes = 256ull << 20;  // mmap-fault-drop
  uint32_t loops = 100;                // mmap-fault-drop
  std::optional<int> numa_balancing;
  std::string costs;  // a host cost profile (mmsim calibrate); empty: defaults
};

// "6.18.44-fc" -> "6.18", clamped to the newest version the presets know.
std::string host_kernel_version(const std::string& kernel_release);

// The head of a scenario run on this host: [scenario] (named `name`, seed 1),
// [machine] preset "host", [kernel] with the host's version (and
// numa_balancing if given) and the page-cache folio size the profile
// measured, and [costs] profile = `costs` unless it is empty.
std::string host_scenario_head(const std::string& name, const std::string& costs,
                               const std::string& kernel_release,
                               std::optional<int> numa_balancing = std::nullopt);

// The scenario that models the benchmark on the host (machine preset "host",
// the host's kernel version, the profile's measured fault size).
std::string predict_scenario(const PredictParams& p, const std::string& kernel_release);

// Where `native --predict` caches this host's profile:
// $XDG_CACHE_HOME/mmsim/host-profile.toml, or $HOME/.cache/mmsim/... when
// XDG_CACHE_HOME is unset, empty or relative (the XDG spec ignores a relative
// one); "" when neither gives a place. Arguments: the two variables' values
// (nullptr: unset).
std::string host_profile_cache_path(const char* xdg_cache_home, const char* home);

// "PATH (made DATE)": the profile and the date its header gives (the
// `# date:` line mmsim calibrate writes; else its first line's, else the
// file's modification date).
std::string profile_label(const std::string& path);

// The cost profile a prediction uses. path empty: the built-in defaults.
struct PredictCosts {
  std::string path;
  bool cached = false;      // the host profile from the cache
  bool calibrated = false;  // made just now, by the calibration
};

// Runs the calibration writing `out_path`; returns its exit code.
using CalibrateFn = std::function<int(const std::string& out_path)>;

// Chooses the profile of `native --predict` and says which on `out`: an
// explicit --costs file; else, with default_costs, the built-in defaults
// (said loudly on `err`); else this host's profile at `cache_path`, made
// first by `calibrate` when missing (saying so and where it caches). nullopt
// when there is none (the reason is on `err`, the exit code in *exit_code):
// never the defaults unasked.
std::optional<PredictCosts> choose_predict_costs(const std::string& explicit_costs,
                                                 bool default_costs, const std::string& cache_path,
                                                 const CalibrateFn& calibrate, std::ostream& out,
                                                 std::ostream& err, int* exit_code);

// Runs the simulation and prints it beside the native run; returns the
// comparison JSON {"native", "simulated", "relative_error"} in *result.
int predict(const PredictParams& p, const nlohmann::ordered_json& native, std::ostream& out,
            std::ostream& err, nlohmann::ordered_json* result);

// One row of a side-by-side table: its label and where both JSON reports
// hold the value (a JSON pointer, "/vmstat/pgfault").
struct SideRow {
  std::string name;
  std::string pointer;
};
// Prints native and simulated values of each row both reports have, with the
// simulation's relative error; returns {name: error} for the rows with one
// (not where native is 0 and the simulation is not).
nlohmann::ordered_json side_by_side(const nlohmann::ordered_json& native,
                                    const nlohmann::ordered_json& sim,
                                    const std::vector<SideRow>& rows, std::ostream& out);

// mmsim native SCENARIO --predict: runs the scenario (`sc`, loaded from
// `path` with `sets`) on this host, simulates it on this host's machine with
// this host's kernel version (and the cost profile `costs`, if any), prints
// both and their side by side; with options.json, writes {"native",
// "simulated", "relative_error"} there. Returns the exit code.
int native_scenario_predict(const std::string& path, const std::vector<std::string>& sets,
                            const std::string& costs, const scenario::Scenario& sc,
                            const native::ScenarioNativeOptions& options, std::ostream& out,
                            std::ostream& err);

// choose_predict_costs() for this host: the cache path from XDG_CACHE_HOME or
// HOME, and `mmsim calibrate --out CACHE` (default runs and threshold) to
// make it.
std::optional<PredictCosts> host_predict_costs(const std::string& explicit_costs,
                                               bool default_costs, std::ostream& out,
                                               std::ostream& err, int* exit_code);

}  // namespace mmsim::cli
