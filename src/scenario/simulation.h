// The one way to run a scenario: load it (file or text, --set overrides, a
// seed, a cost profile), build its machine, run a World and return the
// result. `mmsim run`, `mmsim compare`, `native --predict` and the tests all
// go through here.
#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "scenario/scenario.h"
#include "sim/trace.h"
#include "topo/topology.h"
#include "workload/result.h"

namespace mmsim::scenario {

// Where a scenario comes from, and what changes it.
struct Source {
  std::string path;                    // the file, or the name that stands for `text`
  std::optional<std::string> text;     // set: parse this instead of reading `path`
  std::vector<std::string> overrides;  // "key.path=value", as --set gives them
  std::optional<uint64_t> seed;        // replaces scenario.seed when set
  std::string costs_profile;           // a cost profile file replacing the defaults, or empty
  bool counts_from_host = false;       // load_scenario's: a native run's counts
};

// A scenario ready to run: loaded, validated and its machine built.
struct Prepared {
  Scenario scenario;
  topo::Topology topology;
};

struct PrepareResult {
  std::optional<Prepared> run;  // set iff diagnostics is empty
  std::vector<Diagnostic> diagnostics;
};

// Loads and validates the scenario and builds its machine. A machine that
// cannot be built (the host's /sys unreadable) is reported as a diagnostic.
PrepareResult prepare(const Source& source);

struct RunOptions {
  bool check_invariants = false;  // the DEBUG_VM-like checker after each kernel operation
  uint32_t check_stride = 1;      // >1: after every check_stride-th one (WorldConfig)
  bool fast_forward = true;       // off: loops run pass by pass (tests compare the two)
  // Now and then: the simulated time and the events so far (progress).
  std::function<void(Tick, uint64_t)> progress;
  sim::Trace* trace = nullptr;         // the run's trace (--trace), or none
  std::ostream* scan_trace = nullptr;  // the NUMA scan's trace (--scan-trace), or none
};

// Runs one World. Thread-safe: worlds share nothing, so several may run at
// once on different threads.
workload::RunResult simulate(const Prepared& run, RunOptions options = {});

}  // namespace mmsim::scenario
