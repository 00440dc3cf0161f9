// Reports of a run: a readable summary and JSON, both using the kernel's
// counter names (/proc/vmstat, /proc/<pid>/stat) so that a simulated run and a
// real one diff directly.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "scenario/scenario.h"
#include "topo/topology.h"
#include "workload/result.h"

namespace mmsim::report {

struct RunInfo {
  const scenario::Scenario* scenario = nullptr;
  const topo::Topology* topology = nullptr;
  const workload::RunResult* result = nullptr;
  double wall_s = 0;   // host time the simulation took
  bool timing = true;  // false: leave host timings out (byte-identical output)
  // A run on the host (mmsim native), not a simulation: the result's tasks
  // have no CPU, node, iowait or NUMA fields (reported as null), iowait is
  // the system-wide host_iowait_s, there is no "sim" object and the caller
  // writes the summary's head (the host, its kernel, what was applied).
  bool host_run = false;
  double host_iowait_s = 0;
};

// A switch's value in JSON: a boolean, a word, or a number.
nlohmann::ordered_json switch_json(const SwitchInfo& sw, int64_t value);
// The kernel's version and every switch, from the subsystems' tables:
// [kernel] keys at the top level, the [numa] and [memcg] ones as objects.
nlohmann::ordered_json kernel_json(const scenario::KernelConfig& k, size_t nodes);
// A memcg's interface files under the hierarchy's names (v1 or v2).
nlohmann::ordered_json memcg_files_json(const memcg::MemCgroup& g, memcg::Hierarchy h);
// Named counters summed over tasks, elapsed_s, user_s, sys_s, iowait_s.
nlohmann::ordered_json metrics_json(const RunInfo& info);
nlohmann::ordered_json run_json(const RunInfo& info);
// The summary: identical for the same scenario and seed on any host.
std::string summary_text(const RunInfo& info, bool all_tasks);
// The summary without its head (scenario, machine, kernel, elapsed lines):
// metrics, tasks, vmstat, memcg, errors.
std::string summary_body(const RunInfo& info, bool all_tasks);
// The host's wall time and speed, one line (the CLI prints it on stderr).
std::string timing_text(const RunInfo& info);

// Writes the file whole or not at all (a temp file renamed into place); on
// failure says why on `err` and leaves nothing behind.
bool write_atomically(const std::string& path, const std::string& text, std::ostream& err);

}  // namespace mmsim::report
