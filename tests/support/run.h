// Runs a scenario given as TOML text, with the invariant checker on.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenario/scenario.h"
#include "workload/world.h"

namespace mmsim::testing {

struct Ran {
  scenario::Scenario scenario;
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

inline Ran run_text(const std::string& toml, const std::vector<std::string>& sets = {},
                    bool fast_forward = true) {
  auto lr = scenario::parse_scenario(toml, "test.toml", sets);
  for (const auto& d : lr.diagnostics) ADD_FAILURE() << d.str();
  Ran ran;
  if (!lr.ok()) return ran;
  ran.scenario = *lr.scenario;
  std::string err;
  auto topo = scenario::build_topology(ran.scenario, &err);
  workload::WorldConfig wc = scenario::world_config(ran.scenario, *topo);
  wc.check_invariants = true;
  wc.fast_forward = fast_forward;
  workload::World world(*topo, ran.scenario.costs, ran.scenario.mm_config(),
                        ran.scenario.workload, wc);
  ran.result = world.run();
  for (const auto& f : ran.result.check_failures) ADD_FAILURE() << "checker: " << f;
  return ran;
}

// A machine block for small tests: 2 nodes of 2 CPUs.
inline const char* kSmallMachine = R"(
[machine]
preset = "2s-16c"
cores_per_socket = 2
mem_per_node = "64MiB"
)";

}  // namespace mmsim::testing
