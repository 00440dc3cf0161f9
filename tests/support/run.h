// Runs a scenario given as TOML text, with the invariant checker on.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "scenario/scenario.h"
#include "scenario/simulation.h"
#include "topo/topology.h"
#include "workload/result.h"

namespace mmsim::testing {

struct Ran {
  scenario::Scenario scenario;
  std::optional<topo::Topology> topology;  // set when the scenario was prepared
  workload::RunResult result;
  int64_t vm(const std::string& name) const {
    for (const auto& [n, v] : result.vmstat)
      if (n == name) return v;
    ADD_FAILURE() << "no vmstat counter " << name;
    return 0;
  }
  uint64_t counter(const std::string& name) const {
    uint64_t sum = 0;
    const auto& names = scenario.workload.counters;
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
      ADD_FAILURE() << "no counter " << name;
      return 0;
    }
    for (const auto& t : result.tasks) sum += t.counters[static_cast<size_t>(it - names.begin())];
    return sum;
  }
};

// Prepares (parses, validates, builds the machine) and simulates the
// scenario through the one run pipeline, with the invariant checker on;
// with `scan_trace`, the NUMA scan's trace (mmsim run --scan-trace) in it.
inline Ran run_text(const std::string& toml, const std::vector<std::string>& sets = {},
                    bool fast_forward = true, std::string* scan_trace = nullptr) {
  scenario::Source source;
  source.path = "test.toml";
  source.text = toml;
  source.overrides = sets;
  auto prepared = scenario::prepare(source);
  for (const auto& d : prepared.diagnostics) ADD_FAILURE() << d.str();
  Ran ran;
  if (!prepared.run) return ran;
  ran.scenario = prepared.run->scenario;
  ran.topology = prepared.run->topology;
  std::ostringstream trace;
  ran.result = scenario::simulate(
      *prepared.run, scenario::RunOptions{.check_invariants = true,
                                          .fast_forward = fast_forward,
                                          .scan_trace = scan_trace ? &trace : nullptr});
  if (scan_trace) *scan_trace = trace.str();
  for (const auto& f : ran.result.check_failures) ADD_FAILURE() << "checker: " << f;
  return ran;
}

// The text of fuzz/findings/<name> (empty if it cannot be read).
inline std::string fuzz_finding(const std::string& name) {
  std::ifstream in(std::string(MMSIM_SOURCE_DIR) + "/fuzz/findings/" + name);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A machine block for small tests: 2 nodes of 2 CPUs.
inline const char* kSmallMachine = R"(
[machine]
preset = "2s-16c"
cores_per_socket = 2
mem_per_node = "64MiB"
)";

}  // namespace mmsim::testing
