// `mmsim native SCENARIO`: a scenario run for real on this host. Its
// programs are performed by mmsim-exec (tools/exec) with real system calls;
// around them, the scenario's writable kernel settings are applied (and
// restored), its memory cgroups created (and removed), the host's counters
// read, and the result reported with `mmsim run`'s summary and JSON keys.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "native/host.h"
#include "scenario/scenario.h"

namespace mmsim::native {

struct ScenarioNativeOptions {
  int repeat = 1;    // runs, one after another
  std::string json;  // write the JSON report here (atomically) when not empty
  bool all_tasks = false;
  // mmsim-exec; empty: tools/exec/mmsim-exec in the build tree of the running binary.
  std::string exec_path;
  // Where the scenario's files are created (in a fresh directory, removed
  // afterwards); empty: /var/tmp (on disk, unlike a tmpfs /tmp).
  std::string scratch_root;
  // Where its tmpfs files are made (in a fresh directory, removed afterwards).
  std::string tmpfs_root = "/dev/shm";
  // Roots, replaceable so that tests can use fake trees.
  std::string sysctl_root = "/proc/sys";
  std::string debugfs_root = "/sys/kernel/debug";
  std::string cgroup_root = "/sys/fs/cgroup";
  std::string sysfs_root = "/sys";
};

// A kernel setting the scenario asks for, and what became of it on the host.
struct SettingPlan {
  std::string key;    // the scenario's key, "kernel.numa_balancing"
  std::string value;  // as the host's file takes it
  std::string path;   // the host's file; empty when there is none
  std::string note;   // why it cannot be applied, when path is empty
};

// What of the scenario this host can apply: the settings to write and, one
// line each, what it cannot (the kernel's version, the machine's shape,
// switches that describe kernel code). Reads the host, changes nothing.
struct HostFit {
  std::vector<SettingPlan> settings;
  std::vector<std::string> not_applied;
};
HostFit fit_to_host(const scenario::Scenario& sc, const HostInfo& host,
                    const ScenarioNativeOptions& options);

// The mmsim-exec to run: options.exec_path, else the build tree's; "" with
// why when there is none.
std::string find_exec(const ScenarioNativeOptions& options, std::string* why);

// Runs the scenario `options.repeat` times and reports: the summary on
// `out`, the JSON in options.json and, when given, in *json. Returns the exit
// code: 0, 1 (a bug), 2 (bad input), kExitHostSetup, or 128 + signal.
int run_scenario_native(const scenario::Scenario& sc, const ScenarioNativeOptions& options,
                        std::ostream& out, std::ostream& err,
                        nlohmann::ordered_json* json = nullptr);

}  // namespace mmsim::native
