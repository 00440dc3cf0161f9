// The simulation of a native benchmark run on the host machine, and the two
// side by side (mmsim native BENCH --predict).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

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

}  // namespace mmsim::cli
