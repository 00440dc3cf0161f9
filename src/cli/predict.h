// The simulation of a native benchmark run on the host machine, and the two
// side by side (mmsim native BENCH --predict).
#pragma once

#include <cstdint>
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
  uint64_t size_bytes = 256ull << 20;  // mmap-fault-drop
  uint32_t loops = 100;                // mmap-fault-drop
  std::optional<int> numa_balancing;
  std::string costs;  // a host cost profile (mmsim calibrate); empty: defaults
};

// The scenario that models the benchmark on the host (machine preset "host",
// the host's kernel version, the profile's measured fault size).
std::string predict_scenario(const PredictParams& p, const std::string& kernel_release);

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

}  // namespace mmsim::cli
