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
#include "mm/memory_manager.h"
#include "numa/balancer.h"
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

// Kernel behaviour switches, preset from kernel.version.
struct KernelConfig {
  std::string version = "6.6";
  uint32_t fault_around_kb = 64;  // 0 before 3.15
  uint32_t read_ahead_kb = 128;
  // Page-cache folio size mapped whole by a read fault (large folios); 0:
  // order-0 folios. The fault maps max(fault_around, folio) pages.
  uint32_t pagecache_folio_kb = 0;
  bool has_numa_balancing = true;  // 3.8+
  int numa_balancing = -1;         // kernel.numa_balancing; -1: on if the machine has > 1 node
  numa::NumaConfig numa;           // knobs and version rules ([numa], [kernel] sysctls)
  int major = 6, minor = 6;
  memcg::MemcgConfig memcg;        // [memcg]; the protocol is preset by the version
};

struct Scenario {
  std::string path;
  std::string name;
  std::string description;
  uint64_t seed = 1;
  Tick time_limit = seconds(3600);
  Tick sample_interval;  // scenario.sample_interval: a timeline of counters
  bool host_machine = false;  // machine.preset = "host": read from /sys at build time
  topo::MachineSpec machine;
  KernelConfig kernel;
  cost::CostProfile costs;
  workload::Workload workload;
  std::vector<memcg::CgroupSpec> cgroups;  // [[cgroups]]
  std::vector<std::string> overrides;  // the --set arguments, as given

  mm::MmConfig mm_config() const;
  // The NUMA balancing configuration for a machine of `nodes` nodes.
  numa::NumaConfig numa_config(size_t nodes) const;
};

struct LoadResult {
  std::optional<Scenario> scenario;
  std::vector<Diagnostic> diagnostics;
  bool ok() const { return scenario.has_value() && diagnostics.empty(); }
};

// Reads, overrides (each "key.path=value"; the value is TOML, else a string),
// and validates. `seed`, when set, replaces scenario.seed.
LoadResult load_scenario(const std::string& path, const std::vector<std::string>& overrides,
                         std::optional<uint64_t> seed = std::nullopt);
// The same from text (tests): `name` stands for the file in diagnostics.
LoadResult parse_scenario(const std::string& text, const std::string& name,
                          const std::vector<std::string>& overrides,
                          std::optional<uint64_t> seed = std::nullopt);

// Sets the switches of a kernel version ("X.Y"). False if it is not a version.
bool apply_kernel_version(const std::string& version, KernelConfig& k);

// Builds the machine: a preset/spec or the host.
std::optional<topo::Topology> build_topology(const Scenario& s, std::string* error);

// The World settings of a scenario on its machine (seed, time limit, NUMA).
workload::WorldConfig world_config(const Scenario& s, const topo::Topology& topo);

// Parses "4MiB", "4MB", "4096", "1G": bytes. False on a malformed size.
bool parse_size(const std::string& text, uint64_t& bytes);
// Parses "10s", "5ms", "100us", "20ns": nanoseconds.
bool parse_duration(const std::string& text, int64_t& ns);

}  // namespace mmsim::scenario
