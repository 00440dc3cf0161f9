#include "scenario/simulation.h"

#include <filesystem>

#include "workload/world.h"

namespace mmsim::scenario {

PrepareResult prepare(const Source& source) {
  PrepareResult out;
  std::vector<std::string> overrides = source.overrides;
  if (!source.costs_profile.empty()) {
    // The profile goes first, so that a --set of one cost still wins.
    overrides.insert(
        overrides.begin(),
        "costs.profile=\"" + std::filesystem::absolute(source.costs_profile).string() + "\"");
  }
  LoadResult lr = source.text
                      ? parse_scenario(*source.text, source.path, overrides, source.seed,
                                       source.counts_from_host)
                      : load_scenario(source.path, overrides, source.seed, source.counts_from_host);
  if (!lr.ok()) {
    out.diagnostics = std::move(lr.diagnostics);
    return out;
  }
  std::string error;
  std::optional<topo::Topology> topo = build_topology(*lr.scenario, &error);
  if (!topo) {
    out.diagnostics.push_back(
        {lr.scenario->path, 1, 1, "machine.preset", "cannot read the host: " + error});
    return out;
  }
  out.run.emplace(Prepared{std::move(*lr.scenario), std::move(*topo)});
  return out;
}

workload::RunResult simulate(const Prepared& run, RunOptions options) {
  const Scenario& sc = run.scenario;
  workload::WorldConfig wc = world_config(sc, run.topology);
  wc.check_invariants = options.check_invariants;
  wc.check_stride = options.check_stride;
  wc.fast_forward = options.fast_forward;
  wc.progress = std::move(options.progress);
  wc.trace = options.trace;
  wc.scan_trace = options.scan_trace;
  workload::World world(run.topology, sc.costs, sc.workload, std::move(wc));
  return world.run();
}

}  // namespace mmsim::scenario
