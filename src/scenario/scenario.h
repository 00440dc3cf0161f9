// Scenarios: a TOML file (plus --set overrides) parsed, validated in full and
// turned into plain values. Every problem is reported at once, each as
// `file:line:col: error: key: message`; nothing runs on a bad scenario.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cost/cost_profile.h"
#include "memcg/config.h"
#include "memcg/memcg.h"
#include "mm/config.h"
#include "numa/config.h"
#include "reclaim/config.h"
#include "sim/noise.h"
#include "sim/switches.h"
#include "topo/topology.h"
#include "workload/program.h"
#include "workload/world.h"

namespace mmsim::scenario {

struct Diagnostic {
  std::string file;
  uint32_t line = 0;
  uint32_t col = 0;
  std::string key;
  std::string message;
  std::string str() const;
};

// The kernel a scenario models: its version, and every switch of every
// subsystem, preset from the version and then set by the scenario's keys
// (the file's, then --set's: an explicit key always wins over a preset).
struct KernelConfig {
  KernelVersion version{6, 6};
  mm::MmConfig mm;                 // [kernel] fault_around_kb, read_ahead_kb, ...
  numa::NumaConfig numa;           // [kernel] numa_balancing sysctls, [numa] rules
  memcg::MemcgConfig memcg;        // [memcg]
  reclaim::ReclaimConfig reclaim;  // [kernel] swappiness
  uint64_t swap_bytes = 0;         // [swap] size: the swap device (0: none)
  KernelConfig();
  // Every switch to its preset for `v`.
  void apply_version(KernelVersion v);
  uint32_t page_cgroup_bytes() const {
    return memcg::page_cgroup_bytes(memcg.stat_protocol, version);
  }
  // The NUMA balancing configuration on a machine of `nodes` nodes, with
  // `enabled` resolved (kernel.numa_balancing "auto": more than one node).
  numa::NumaConfig numa_config(size_t nodes) const;
};

// Calls f(const SwitchInfo&, int64_t value) for every switch of every
// subsystem, in table order (mm, numa, memcg).
template <class F>
void for_each_switch(const KernelConfig& k, F&& f) {
  for (const auto& s : mm::mm_switches()) f(s.info, s.get(k.mm));
  for (const auto& s : numa::numa_switches()) f(s.info, s.get(k.numa));
  for (const auto& s : memcg::memcg_switches()) f(s.info, s.get(k.memcg));
  for (const auto& s : reclaim::reclaim_switches()) f(s.info, s.get(k.reclaim));
}

// [validate]: what `mmsim validate` (src/validate) does with the scenario.
// The simulation ignores it; the loader checks its shape, the validate tool
// the counter names.
struct ValidateSpec {
  bool present = false;  // the scenario (or a --set) has a [validate] table
  // The kernels to boot, in the order given: each "6.1" or "6.12", no
  // repeats. Default both.
  std::vector<std::string> kernels = {"6.1", "6.12"};
  int repeat = 3;  // runs per kernel, 1..100
  // Where the scenario's disk files live in the guest: "ram", a RAM disk
  // (brd) in the guest's own memory; "virtio", a disk image on the host
  // (virtio-blk), for files that need not fit in the guest's memory
  // (reclaim). Reads from either are page cache over a block device.
  std::string disk = "ram";
  // [validate.tolerance]: how far a counter of the real kernel may be from
  // the simulation's. relative: value is a fraction ("10%" is 0.1; 0..10,
  // i.e. 0..1000%); else an absolute count ("±200", "+-200": 200). The key is
  // any string; line and col are where it is written (of the --set's value
  // when it came from --set), for the validate tool's diagnostics.
  struct Tolerance {
    std::string counter;
    bool relative = false;
    double value = 0;
    uint32_t line = 0, col = 0;
  };
  std::vector<Tolerance> tolerances;  // in file order (then --set's)
};

struct Scenario {
  std::string path;
  std::string name;
  std::string description;
  uint64_t seed = 1;
  Tick time_limit = seconds(3600);
  Tick sample_interval;           // scenario.sample_interval: a timeline of counters
  bool host_machine = false;      // machine.preset = "host": read from /sys at build time
  bool counts_from_host = false;  // counts from the machine are the host's (a native run)
  topo::MachineSpec machine;
  KernelConfig kernel;
  cost::CostProfile costs;
  // The machine preset whose cost profile the costs start from (before
  // [costs] and --set): the scenario's own, or the default's.
  std::string costs_machine;
  std::string costs_file;  // a cost profile file applied over them ([costs] profile), or empty
  workload::Workload workload;
  std::vector<memcg::CgroupSpec> cgroups;  // [[cgroups]]
  std::vector<std::string> overrides;      // the --set arguments, as given
  workload::Limits limits;                 // [limits]
  ValidateSpec validate;                   // [validate]: not used by the simulation
  sim::NoiseConfig noise;                  // [noise]: run-to-run variation
};

struct LoadResult {
  std::optional<Scenario> scenario;
  std::vector<Diagnostic> diagnostics;
  bool ok() const { return scenario.has_value() && diagnostics.empty(); }
};

// Reads, overrides (each "key.path=value"; the value is TOML, else a string),
// and validates. `seed`, when set, replaces scenario.seed.
// `counts_from_host`: counts taken from the machine ("cpus", "nodes/2") are
// this host's whatever the scenario's machine (a native run's programs run
// here, as autonuma-benchmark is built for the machine it runs on).
LoadResult load_scenario(const std::string& path, const std::vector<std::string>& overrides,
                         std::optional<uint64_t> seed = std::nullopt,
                         bool counts_from_host = false);
// The same from text (tests): `name` stands for the file in diagnostics.
LoadResult parse_scenario(const std::string& text, const std::string& name,
                          const std::vector<std::string>& overrides,
                          std::optional<uint64_t> seed = std::nullopt,
                          bool counts_from_host = false);

// Builds the machine: a preset/spec or the host.
std::optional<topo::Topology> build_topology(const Scenario& s, std::string* error);

// The World settings of a scenario on its machine (seed, time limit, NUMA).
workload::WorldConfig world_config(const Scenario& s, const topo::Topology& topo);

}  // namespace mmsim::scenario
