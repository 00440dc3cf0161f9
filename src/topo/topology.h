// Models the machine: NUMA nodes with memory, CPUs as sockets x cores x SMT
// threads, the SLIT distance matrix and the last-level cache per socket.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/types.h"

namespace mmsim::topo {

struct Cpu {
  CpuId id;
  NodeId node;
  uint16_t socket = 0;
  uint16_t core = 0;    // core number within the socket
  uint16_t thread = 0;  // SMT thread number within the core
};

// How the memory of a CPU-less node comes online: at boot as ordinary
// memory, or later by the dax/kmem driver (memory the firmware marked
// EFI_MEMORY_SP, "specific purpose", as it commonly does for CXL memory).
enum class MemoryOnline : uint8_t { kBoot, kKmem };

struct Node {
  NodeId id;
  uint16_t socket = 0;
  uint64_t mem_bytes = 0;
  std::vector<CpuId> cpus;  // ascending
  // The access performance the firmware reports for it (ACPI HMAT) from its
  // socket's CPUs; 0: not reported.
  uint32_t latency_ns = 0;
  uint64_t bandwidth_mbps = 0;
  MemoryOnline online = MemoryOnline::kBoot;
};

// What a machine is made of; every Topology is built from one of these.
struct MachineSpec {
  std::string name;
  uint16_t sockets = 1;
  uint16_t cores_per_socket = 1;
  uint16_t threads_per_core = 1;
  uint16_t nodes_per_socket = 1;  // sub-NUMA clustering; 1 on most machines
  uint64_t mem_per_node = 0;      // bytes
  uint64_t llc_per_socket = 0;    // bytes
  // SLIT, nodes x nodes; empty = 10 local, 20 remote. It may cover only the
  // CPU nodes: the memory nodes' entries then follow from their latency.
  std::vector<std::vector<int>> distance;
  // CPU-less memory nodes (CXL memory expanders and the like): this many per
  // socket, numbered after every CPU node, each with memory_node_mem bytes.
  uint16_t memory_nodes_per_socket = 0;
  uint64_t memory_node_mem = 0;
  // The HMAT's figures from a socket's CPUs: idle load latency and
  // bandwidth of its memory nodes and of its own DRAM.
  uint32_t memory_node_latency_ns = 0;
  uint64_t memory_node_bandwidth_mbps = 0;
  uint32_t dram_latency_ns = 0;
  uint64_t dram_bandwidth_mbps = 0;
  MemoryOnline memory_node_online = MemoryOnline::kKmem;

  uint64_t nr_cpus() const { return uint64_t{sockets} * cores_per_socket * threads_per_core; }
  uint64_t nr_cpu_nodes() const { return uint64_t{sockets} * nodes_per_socket; }
  uint64_t nr_nodes() const {
    return uint64_t{sockets} * (uint64_t{nodes_per_socket} + memory_nodes_per_socket);
  }
  uint64_t total_mem_bytes() const {
    return nr_cpu_nodes() * mem_per_node +
           uint64_t{sockets} * memory_nodes_per_socket * memory_node_mem;
  }
};

// The modelled machine. Immutable once built.
class Topology {
 public:
  // REQUIRES: spec validated (see validate_machine_spec); aborts otherwise.
  explicit Topology(const MachineSpec& spec);
  // Builds from explicit node and CPU lists (as read from /sys). REQUIRES:
  // distance is nodes x nodes, every cpu names an existing node.
  // REQUIRES: node and cpu ids equal their index; every socket named has an
  // llc_per_socket entry. Each Node::cpus is rebuilt from the cpus' nodes.
  Topology(std::string name, std::vector<Node> nodes, std::vector<Cpu> cpus,
           std::vector<std::vector<int>> distance, std::vector<uint64_t> llc_per_socket);

  const std::string& name() const { return name_; }
  size_t nr_nodes() const { return nodes_.size(); }
  size_t nr_cpus() const { return cpus_.size(); }
  size_t nr_sockets() const { return llc_.size(); }
  const Node& node(NodeId n) const { return nodes_[n.v]; }
  const Cpu& cpu(CpuId c) const { return cpus_[c.v]; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Cpu>& cpus() const { return cpus_; }
  NodeId cpu_to_node(CpuId c) const { return cpus_[c.v].node; }
  // SLIT distance; 10 means local.
  int distance(NodeId a, NodeId b) const { return distance_[a.v][b.v]; }
  // How much slower an access from a to b is than a local one: the SLIT
  // distance over the local distance (10). Every cost that grows with
  // distance scales by this.
  double distance_factor(NodeId a, NodeId b) const { return distance_[a.v][b.v] / 10.0; }
  uint64_t llc_bytes(uint16_t socket) const { return llc_[socket]; }
  // The node with CPUs a node's memory is attached to: itself, or for a
  // CPU-less node the nearest node with CPUs (ties: the lowest id).
  NodeId home(NodeId n) const { return home_[n.v]; }
  // The node itself first, then the others by increasing distance, ties by id:
  // the kernel's zonelist fallback order.
  const std::vector<NodeId>& fallback_order(NodeId from) const { return fallback_[from.v]; }
  uint64_t total_mem_bytes() const;

 private:
  void build_fallback();
  std::string name_;
  std::vector<Node> nodes_;
  std::vector<Cpu> cpus_;
  std::vector<std::vector<int>> distance_;
  std::vector<uint64_t> llc_;
  std::vector<std::vector<NodeId>> fallback_;
  std::vector<NodeId> home_;
};

// Problems with a spec as "key: message" strings (key relative to [machine]).
std::vector<std::string> validate_machine_spec(const MachineSpec& spec);

// Named presets: "2s-16c", "xeon-8s-144c", "dram-cxl". ("host" is read by load_host.)
std::optional<MachineSpec> preset(std::string_view name);
std::vector<std::string> preset_names();

// Reads the host from sysfs (sys_root/devices/system/node and .../cpu).
// Returns nullopt and sets *error when sysfs cannot be read.
std::optional<Topology> load_host(const std::string& sys_root, std::string* error);

// The machine as `numactl --hardware` prints it.
std::string format_numactl_hardware(const Topology& t);

}  // namespace mmsim::topo
