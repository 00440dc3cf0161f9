// Models the machine the kernel sees at boot: NUMA nodes (pg_data_t) with
// their memory and CPUs, the ACPI SLIT distances, CPU numbering as the x86
// topology code assigns it, and the zonelist fallback order of
// mm/page_alloc.c:build_zonelists(). Also reads the host's layout from sysfs.
#include "topo/topology.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>
#include <utility>

#include "sim/check.h"
#include "util/units.h"

namespace mmsim::topo {
namespace {

namespace fs = std::filesystem;

// MAX_NUMNODES with the largest NODES_SHIFT (10) the kernel allows.
constexpr uint64_t kMaxNodes = 1024;
// CpuId is 16 bits wide.
constexpr uint64_t kMaxCpus = 65535;
// Page frame numbers are 32 bits wide, the last two reserved (the zero page
// and "none"): 16 TiB less 8 KiB of memory in all.
constexpr uint64_t kMaxMachinePages = (uint64_t{1} << 32) - 2;
// SLIT values: 10 is local; 255 means unreachable in ACPI.
constexpr int kLocalDistance = 10;
constexpr int kMaxDistance = 255;
// Defaults when the spec gives no matrix: like the kernel's REMOTE_DISTANCE
// (20) without a SLIT, and a near-local value between the sub-NUMA clusters
// of one socket.
constexpr int kRemoteDistance = 20;
constexpr int kSameSocketDistance = 11;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

std::vector<std::vector<int>> slit(size_t nodes, int local, int remote) {
  std::vector<std::vector<int>> d(nodes, std::vector<int>(nodes, remote));
  for (size_t i = 0; i < nodes; ++i) d[i][i] = local;
  return d;
}

// What a memory node adds to the SLIT distance of its socket's DRAM: the
// latency ratio in tenths, as firmware derives SLIT from HMAT latencies.
int memory_node_extra_distance(const MachineSpec& spec) {
  if (spec.dram_latency_ns == 0) return kRemoteDistance - kLocalDistance;
  const double ratio =
      static_cast<double>(spec.memory_node_latency_ns) / static_cast<double>(spec.dram_latency_ns);
  return std::max(1, static_cast<int>(std::lround(kLocalDistance * (ratio - 1.0))));
}

// Completes a matrix over the CPU nodes with the memory nodes (numbered
// after them, socket by socket): a memory node is as far from a CPU node as
// its socket's first node is, plus its extra distance; two memory nodes are
// as far as their sockets' first nodes, plus both extras.
void extend_distance(std::vector<std::vector<int>>& d, const MachineSpec& spec) {
  const size_t cpu_nodes = spec.nr_cpu_nodes();
  const size_t nodes = spec.nr_nodes();
  if (nodes == cpu_nodes) return;
  const int extra = memory_node_extra_distance(spec);
  const size_t mnps = spec.memory_nodes_per_socket;
  const auto home = [&](size_t n) {
    return n < cpu_nodes ? n : ((n - cpu_nodes) / mnps) * spec.nodes_per_socket;
  };
  const auto own = [&](size_t n) { return n < cpu_nodes ? 0 : extra; };
  const std::vector<std::vector<int>> base = d;
  d.assign(nodes, std::vector<int>(nodes, kLocalDistance));
  for (size_t a = 0; a < nodes; ++a) {
    for (size_t b = 0; b < nodes; ++b) {
      if (a == b) continue;
      const size_t ha = home(a), hb = home(b);
      const int through = ha == hb ? kLocalDistance : base[ha][hb];
      d[a][b] = std::min(kMaxDistance, through + own(a) + own(b));
    }
  }
}

// Sysfs parsing helpers. Every one returns nullopt on malformed text.

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

template <class T>
std::optional<T> parse_number(std::string_view s) {
  s = trim(s);
  T value{};
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return value;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(sep, start);
    parts.push_back(s.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

// A cpulist as the kernel prints it: "0-3,8,10-11", or empty for a node
// without CPUs.
std::optional<std::vector<uint32_t>> parse_cpulist(std::string_view text) {
  std::vector<uint32_t> cpus;
  text = trim(text);
  if (text.empty()) return cpus;
  for (std::string_view part : split(text, ',')) {
    const size_t dash = part.find('-');
    const auto lo = parse_number<uint32_t>(part.substr(0, dash));
    const auto hi =
        dash == std::string_view::npos ? lo : parse_number<uint32_t>(part.substr(dash + 1));
    if (!lo || !hi || *hi < *lo || *hi >= kMaxCpus) return std::nullopt;
    for (uint32_t c = *lo; c <= *hi; ++c) cpus.push_back(c);
  }
  return cpus;
}

// A cache size as sysfs prints it: "32768K", "45M", or plain bytes. The
// project's size grammar (util/units.h), in which K, M and G are powers of 1024.
std::optional<uint64_t> parse_cache_size(std::string_view text) {
  return util::parse_size(trim(text));
}

// MemTotal in bytes from a meminfo file, either the node form
// ("Node 0 MemTotal:  16384 kB") or the /proc form ("MemTotal:  16384 kB").
std::optional<uint64_t> parse_mem_total(std::string_view text) {
  for (std::string_view line : split(text, '\n')) {
    const size_t key = line.find("MemTotal:");
    if (key == std::string_view::npos) continue;
    std::string_view rest = trim(line.substr(key + std::string_view("MemTotal:").size()));
    uint64_t unit = 1;
    if (rest.ends_with("kB")) {
      unit = 1024;
      rest.remove_suffix(2);
    }
    const auto n = parse_number<uint64_t>(rest);
    if (!n) return std::nullopt;
    return *n * unit;
  }
  return std::nullopt;
}

// Size of the highest-level cache cpuN reports; 0 when sysfs has no cache
// directory (some VMs and containers).
std::optional<uint64_t> read_llc(const fs::path& cpu_dir) {
  const fs::path cache_dir = cpu_dir / "cache";
  std::error_code ec;
  if (!fs::is_directory(cache_dir, ec)) return 0;
  int best_level = 0;
  uint64_t best_size = 0;
  for (const auto& entry : fs::directory_iterator(cache_dir, ec)) {
    if (!entry.path().filename().string().starts_with("index")) continue;
    const auto level_text = read_file(entry.path() / "level");
    const auto size_text = read_file(entry.path() / "size");
    if (!level_text || !size_text) continue;
    const auto level = parse_number<int>(*level_text);
    const auto size = parse_cache_size(*size_text);
    if (!level || !size) return std::nullopt;
    // L1 data and instruction caches share level 1; keep the larger.
    if (*level > best_level || (*level == best_level && *size > best_size)) {
      best_level = *level;
      best_size = *size;
    }
  }
  if (ec) return std::nullopt;
  return best_size;
}

// Ids N of the "<prefix>N" entries of dir, ascending.
std::vector<uint32_t> numbered_entries(const fs::path& dir, std::string_view prefix) {
  std::vector<uint32_t> ids;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return ids;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    if (const auto id = parse_number<uint32_t>(std::string_view(name).substr(prefix.size()))) {
      ids.push_back(*id);
    }
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

// One node as sysfs describes it, with host (possibly sparse) CPU ids.
struct HostNode {
  std::vector<uint32_t> cpus;
  uint64_t mem_bytes = 0;
  std::vector<int> distance;
};

}  // namespace

Topology::Topology(const MachineSpec& spec) : name_(spec.name) {
  const std::vector<std::string> problems = validate_machine_spec(spec);
  std::string message = "invalid machine spec";
  for (const std::string& p : problems) message += "; " + p;
  check(problems.empty(), message);

  const uint32_t sockets = spec.sockets;
  const uint32_t cores = spec.cores_per_socket;
  const uint32_t threads = spec.threads_per_core;
  const uint32_t nps = spec.nodes_per_socket;
  const uint32_t cores_per_node = cores / nps;
  const uint32_t nr_nodes = sockets * nps;

  nodes_.resize(nr_nodes);
  for (uint32_t n = 0; n < nr_nodes; ++n) {
    nodes_[n].id = NodeId(static_cast<uint16_t>(n));
    nodes_[n].socket = static_cast<uint16_t>(n / nps);
    nodes_[n].mem_bytes = spec.mem_per_node;
    nodes_[n].latency_ns = spec.dram_latency_ns;
    nodes_[n].bandwidth_mbps = spec.dram_bandwidth_mbps;
  }

  // Linux on Intel enumerates the first thread of every core of every socket,
  // then the second thread of each, and so on (the order the firmware lists
  // the APICs in the MADT).
  cpus_.resize(static_cast<size_t>(sockets) * cores * threads);
  for (uint32_t t = 0; t < threads; ++t) {
    for (uint32_t s = 0; s < sockets; ++s) {
      for (uint32_t c = 0; c < cores; ++c) {
        const uint32_t id = t * sockets * cores + s * cores + c;
        Cpu& cpu = cpus_[id];
        cpu.id = CpuId(static_cast<uint16_t>(id));
        cpu.node = NodeId(static_cast<uint16_t>(s * nps + c / cores_per_node));
        cpu.socket = static_cast<uint16_t>(s);
        cpu.core = static_cast<uint16_t>(c);
        cpu.thread = static_cast<uint16_t>(t);
      }
    }
  }
  for (const Cpu& cpu : cpus_) nodes_[cpu.node.v].cpus.push_back(cpu.id);
  // The CPU-less memory nodes, socket by socket after the CPU nodes.
  const uint32_t mnps = spec.memory_nodes_per_socket;
  for (uint32_t s = 0; s < sockets; ++s) {
    for (uint32_t i = 0; i < mnps; ++i) {
      Node node;
      node.id = NodeId(static_cast<uint16_t>(nodes_.size()));
      node.socket = static_cast<uint16_t>(s);
      node.mem_bytes = spec.memory_node_mem;
      node.latency_ns = spec.memory_node_latency_ns;
      node.bandwidth_mbps = spec.memory_node_bandwidth_mbps;
      node.online = spec.memory_node_online;
      nodes_.push_back(node);
    }
  }

  if (spec.distance.size() == nodes_.size()) {
    distance_ = spec.distance;
  } else {
    if (spec.distance.empty()) {
      distance_ = slit(nr_nodes, kLocalDistance, kRemoteDistance);
      for (uint32_t a = 0; a < nr_nodes; ++a) {
        for (uint32_t b = 0; b < nr_nodes; ++b) {
          if (a != b && nodes_[a].socket == nodes_[b].socket) {
            distance_[a][b] = kSameSocketDistance;
          }
        }
      }
    } else {
      distance_ = spec.distance;
    }
    extend_distance(distance_, spec);
  }
  llc_.assign(sockets, spec.llc_per_socket);
  build_fallback();
}

Topology::Topology(std::string name, std::vector<Node> nodes, std::vector<Cpu> cpus,
                   std::vector<std::vector<int>> distance, std::vector<uint64_t> llc_per_socket)
    : name_(std::move(name)),
      nodes_(std::move(nodes)),
      cpus_(std::move(cpus)),
      distance_(std::move(distance)),
      llc_(std::move(llc_per_socket)) {
  check(!nodes_.empty(), "topology needs at least one node");
  check(distance_.size() == nodes_.size(), "distance must have one row per node");
  for (const auto& row : distance_) {
    check(row.size() == nodes_.size(), "distance must have one column per node");
  }
  for (size_t n = 0; n < nodes_.size(); ++n) {
    check(nodes_[n].id.v == n, "node ids must equal their index");
    check(nodes_[n].socket < llc_.size(), "node names a socket without an llc entry");
    nodes_[n].cpus.clear();
  }
  for (size_t c = 0; c < cpus_.size(); ++c) {
    check(cpus_[c].id.v == c, "cpu ids must equal their index");
    check(cpus_[c].node.v < nodes_.size(), "cpu names a node that does not exist");
    check(cpus_[c].socket < llc_.size(), "cpu names a socket without an llc entry");
    nodes_[cpus_[c].node.v].cpus.push_back(cpus_[c].id);
  }
  build_fallback();
}

void Topology::build_fallback() {
  // A CPU-less node's home is the nearest node with CPUs.
  home_.resize(nodes_.size());
  for (size_t n = 0; n < nodes_.size(); ++n) {
    home_[n] = nodes_[n].id;
    if (!nodes_[n].cpus.empty()) continue;
    int best = INT32_MAX;
    for (const Node& c : nodes_) {
      if (!c.cpus.empty() && distance_[n][c.id.v] < best) {
        best = distance_[n][c.id.v];
        home_[n] = c.id;
      }
    }
  }
  fallback_.resize(nodes_.size());
  for (size_t from = 0; from < nodes_.size(); ++from) {
    std::vector<NodeId>& order = fallback_[from];
    order.clear();
    for (const Node& n : nodes_) order.push_back(n.id);
    // The node itself always leads: the kernel puts the local node first in
    // its zonelist even if the SLIT says a neighbour is as close.
    std::stable_sort(order.begin(), order.end(), [&](NodeId a, NodeId b) {
      const auto key = [&](NodeId n) { return std::pair(n.v != from, distance_[from][n.v]); };
      return key(a) < key(b);
    });
  }
}

uint64_t Topology::total_mem_bytes() const {
  return std::accumulate(nodes_.begin(), nodes_.end(), uint64_t{0},
                         [](uint64_t sum, const Node& n) { return sum + n.mem_bytes; });
}

std::vector<std::string> validate_machine_spec(const MachineSpec& spec) {
  std::vector<std::string> problems;
  const auto count_at_least_one = [&](std::string_view key, uint16_t value) {
    if (value < 1) problems.push_back(fmt::format("{}: must be at least 1, got {}", key, value));
  };
  count_at_least_one("sockets", spec.sockets);
  count_at_least_one("cores_per_socket", spec.cores_per_socket);
  count_at_least_one("threads_per_core", spec.threads_per_core);
  count_at_least_one("nodes_per_socket", spec.nodes_per_socket);

  const uint64_t cpu_nodes = spec.nr_cpu_nodes();
  const uint64_t nodes = spec.nr_nodes();
  const uint64_t cpus = spec.nr_cpus();
  if (cpu_nodes > kMaxNodes) {
    problems.push_back(fmt::format(
        "nodes_per_socket: {} sockets x {} nodes per socket = {} nodes, more than the {} allowed",
        spec.sockets, spec.nodes_per_socket, cpu_nodes, kMaxNodes));
  } else if (nodes > kMaxNodes) {
    problems.push_back(fmt::format(
        "memory_nodes_per_socket: {} sockets x ({} + {}) nodes per socket = {} "
        "nodes, more than the {} allowed",
        spec.sockets, spec.nodes_per_socket, spec.memory_nodes_per_socket, nodes, kMaxNodes));
  }
  if (spec.memory_nodes_per_socket > 0) {
    if (spec.memory_node_mem == 0 || spec.memory_node_mem % kPageSize != 0) {
      problems.push_back(fmt::format(
          "memory_node_mem: must be a positive multiple of the {}-byte page size, got {}",
          kPageSize, spec.memory_node_mem));
    }
    if (spec.memory_node_latency_ns == 0) {
      problems.push_back(
          "memory_node_latency_ns: missing (a memory node's idle latency from its socket's "
          "CPUs, which its SLIT distance and memory tier follow)");
    }
    if (spec.dram_latency_ns == 0) {
      problems.push_back(
          "dram_latency_ns: missing (the CPU nodes' own DRAM latency, the base of the memory "
          "nodes' distances and tiers)");
    }
    if (spec.memory_node_latency_ns != 0 && spec.dram_latency_ns != 0 &&
        spec.memory_node_latency_ns <= spec.dram_latency_ns) {
      problems.push_back(fmt::format(
          "memory_node_latency_ns: {} ns is not above dram_latency_ns ({} ns): a memory node "
          "is modelled as the slower memory of its socket",
          spec.memory_node_latency_ns, spec.dram_latency_ns));
    }
  }
  // The memory nodes' share of the machine's page limit, once the CPU
  // nodes' fits (mem_per_node's own check says when it does not). With at
  // most kMaxNodes nodes of at most 2^52 pages, neither product overflows.
  if (nodes <= kMaxNodes && spec.memory_nodes_per_socket > 0) {
    const uint64_t cpu_pages = cpu_nodes * (spec.mem_per_node / kPageSize);
    const uint64_t memory_pages = (nodes - cpu_nodes) * (spec.memory_node_mem / kPageSize);
    if (cpu_pages <= kMaxMachinePages && cpu_pages + memory_pages > kMaxMachinePages) {
      problems.push_back(fmt::format(
          "memory_node_mem: the machine's memory is more than the model's {} bytes (16 TiB less "
          "two pages: page frame numbers are 32 bits)",
          kMaxMachinePages * kPageSize));
    }
  }
  if (cpus > kMaxCpus) {
    problems.push_back(fmt::format(
        "threads_per_core: {} sockets x {} cores x {} threads = {} cpus, more than the {} allowed",
        spec.sockets, spec.cores_per_socket, spec.threads_per_core, cpus, kMaxCpus));
  }
  if (spec.nodes_per_socket >= 1 && spec.cores_per_socket % spec.nodes_per_socket != 0) {
    problems.push_back(
        fmt::format("cores_per_socket: {} cores cannot be split evenly among {} nodes per socket",
                    spec.cores_per_socket, spec.nodes_per_socket));
  }
  if (spec.mem_per_node == 0 || spec.mem_per_node % kPageSize != 0) {
    problems.push_back(
        fmt::format("mem_per_node: must be a positive multiple of the {}-byte page size, got {}",
                    kPageSize, spec.mem_per_node));
  }
  if (spec.mem_per_node % kPageSize == 0 && cpu_nodes >= 1 && cpu_nodes <= kMaxNodes &&
      spec.mem_per_node / kPageSize > kMaxMachinePages / cpu_nodes) {
    problems.push_back(fmt::format(
        "mem_per_node: {} nodes x {} bytes is more than the model's {} bytes (16 TiB less two "
        "pages: page frame numbers are 32 bits)",
        cpu_nodes, spec.mem_per_node, kMaxMachinePages * kPageSize));
  }
  if (spec.llc_per_socket == 0) {
    problems.push_back("llc_per_socket: must be at least 1 byte, got 0");
  }

  // The matrix is checked only against a valid node count; otherwise the
  // count's own message says what is wrong.
  const bool nodes_known = spec.sockets >= 1 && spec.nodes_per_socket >= 1 && nodes <= kMaxNodes;
  if (spec.distance.empty() || !nodes_known) return problems;
  const auto& d = spec.distance;
  // With memory nodes, a matrix over the CPU nodes only is completed from
  // their latency.
  const uint64_t rows = d.size() == cpu_nodes ? cpu_nodes : nodes;
  bool square = d.size() == rows;
  if (!square) {
    problems.push_back(
        nodes == cpu_nodes
            ? fmt::format("distance: has {} rows, expected {} (one per node)", d.size(), nodes)
            : fmt::format("distance: has {} rows, expected {} (one per node) or {} (one per CPU "
                          "node; the memory nodes' entries then follow from their latency)",
                          d.size(), nodes, cpu_nodes));
  }
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i].size() != rows) {
      square = false;
      problems.push_back(
          fmt::format("distance: row {} has {} entries, expected {}", i, d[i].size(), rows));
    }
  }
  if (!square) return problems;
  for (size_t i = 0; i < rows; ++i) {
    for (size_t j = 0; j < rows; ++j) {
      const int v = d[i][j];
      if (i == j && v != kLocalDistance) {
        problems.push_back(
            fmt::format("distance: entry [{}][{}] is {}, a node's distance to "
                        "itself must be {}",
                        i, j, v, kLocalDistance));
      } else if (i != j && (v <= kLocalDistance || v > kMaxDistance)) {
        problems.push_back(fmt::format("distance: entry [{}][{}] is {}, must be in {}..{}", i, j, v,
                                       kLocalDistance + 1, kMaxDistance));
      }
      if (i < j && v != d[j][i]) {
        problems.push_back(fmt::format(
            "distance: entry [{}][{}] is {} but [{}][{}] is {}, the matrix must be symmetric", i, j,
            v, j, i, d[j][i]));
      }
    }
  }
  return problems;
}

std::optional<MachineSpec> preset(std::string_view name) {
  MachineSpec spec;
  spec.name = std::string(name);
  if (name == "2s-16c") {
    // Two Xeon E5-2670 (Sandy Bridge-EP, 2012): 8 cores and a 20 MB L3 per
    // socket (Intel ARK), two QPI links between the sockets. SMT is off, as on
    // many benchmark machines of the time, so the preset's 16 CPUs are cores.
    // Illustrative, not from a datasheet: 16 GiB per node.
    spec.sockets = 2;
    spec.cores_per_socket = 8;
    spec.threads_per_core = 1;
    spec.nodes_per_socket = 1;
    spec.mem_per_node = 16 * kGiB;
    spec.llc_per_socket = 20 * 1000 * 1000;
    // 10 local / 21 remote: what the ACPI SLIT of two-socket Xeon servers
    // commonly reports (visible in `numactl --hardware` on such machines).
    spec.distance = slit(2, kLocalDistance, 21);
    return spec;
  }
  if (name == "xeon-8s-144c") {
    // Eight Xeon E7-8895 v3 (Haswell-EX), as in Oracle's Server X5-8: 18
    // cores, 2 threads per core and a 45 MB L3 per socket (Oracle X5-8 white
    // paper, 2016). Illustrative, not from a datasheet: 64 GiB per socket.
    spec.sockets = 8;
    spec.cores_per_socket = 18;
    spec.threads_per_core = 2;
    spec.nodes_per_socket = 1;
    spec.mem_per_node = 64 * kGiB;
    spec.llc_per_socket = 45 * 1000 * 1000;
    // Each socket has three QPI links, so a glueless board of eight is not
    // fully connected: wired as an 8-ring with the four long diagonals (each
    // socket linked to s+1, s-1 and s+4), three sockets are one hop away and
    // four are two. The kernel on an X5-8 builds exactly two NUMA scheduling
    // levels (S. Sistare, LKML 2018), i.e. two remote distances. The values
    // 21 and 31 are the usual firmware steps (not read from an X5-8's SLIT).
    spec.distance.assign(8, std::vector<int>(8, 31));
    for (int s = 0; s < 8; ++s) {
      spec.distance[s][s] = kLocalDistance;
      for (int d : {1, 4, 7}) spec.distance[s][(s + d) % 8] = 21;
    }
    return spec;
  }
  if (name == "dram-cxl") {
    // A two-socket server with one CXL memory expander per socket, each a
    // CPU-less NUMA node: the machine of memory-tiering work. Illustrative
    // shape (16 cores, a 60 MB L3 and 16 GiB of DRAM per socket, 64 GiB
    // of CXL memory per expander); the performance figures are published:
    // - DRAM latency 100 ns: local DDR round trips are "sub-100 ns" (The
    //   Next Platform, "Just How Bad Is CXL Memory Latency?", 2022-12-05).
    // - CXL latency 180 ns: CXL memory adds 70-90 ns to a local DRAM access
    //   (Li, Berger et al., "Pond", ASPLOS 2023); the middle of that range.
    // - DRAM bandwidth 307,200 MB/s: eight DDR5-4800 channels per socket
    //   (4800 MT/s x 8 bytes = 38.4 GB/s each, JEDEC DDR5 arithmetic).
    // - CXL bandwidth 36,000 MB/s: Micron CZ120, a CXL 2.0 x8 expander, "up
    //   to 36 GB/s" (Tom's Hardware, 2023).
    // The SLIT follows from the latencies (10 local, 18 to the socket's CXL
    // node, 21 to the other socket). The expanders' memory is onlined by
    // dax/kmem, as firmware marks CXL memory EFI_MEMORY_SP by default.
    spec.sockets = 2;
    spec.cores_per_socket = 16;
    spec.threads_per_core = 1;
    spec.nodes_per_socket = 1;
    spec.mem_per_node = 16 * kGiB;
    spec.llc_per_socket = 60 * 1000 * 1000;
    spec.distance = slit(2, kLocalDistance, 21);
    spec.memory_nodes_per_socket = 1;
    spec.memory_node_mem = 64 * kGiB;
    spec.dram_latency_ns = 100;
    spec.memory_node_latency_ns = 180;
    spec.dram_bandwidth_mbps = 307200;
    spec.memory_node_bandwidth_mbps = 36000;
    spec.memory_node_online = MemoryOnline::kKmem;
    return spec;
  }
  return std::nullopt;
}

std::vector<std::string> preset_names() { return {"2s-16c", "xeon-8s-144c", "dram-cxl", "host"}; }

std::optional<Topology> load_host(const std::string& sys_root, std::string* error) {
  const auto fail = [&](std::string message) -> std::optional<Topology> {
    if (error != nullptr) *error = std::move(message);
    return std::nullopt;
  };
  const fs::path root(sys_root);
  const fs::path node_root = root / "devices/system/node";
  const fs::path cpu_root = root / "devices/system/cpu";
  std::error_code ec;
  if (!fs::is_directory(cpu_root, ec))
    return fail(fmt::format("{}: not a directory", cpu_root.string()));

  // Nodes, in ascending host id. SIMPLIFICATION: sparse host node ids are
  // renumbered densely in that order; the rows of each distance file follow
  // the same order, so they need no remapping.
  std::vector<HostNode> host_nodes;
  const std::vector<uint32_t> node_ids = numbered_entries(node_root, "node");
  for (uint32_t id : node_ids) {
    const fs::path dir = node_root / fmt::format("node{}", id);
    HostNode node;
    const auto cpulist = read_file(dir / "cpulist");
    if (!cpulist) return fail(fmt::format("{}: cannot read", (dir / "cpulist").string()));
    const auto cpus = parse_cpulist(*cpulist);
    if (!cpus)
      return fail(
          fmt::format("{}: malformed cpulist \"{}\"", (dir / "cpulist").string(), trim(*cpulist)));
    node.cpus = *cpus;
    const auto meminfo = read_file(dir / "meminfo");
    const auto mem = meminfo ? parse_mem_total(*meminfo) : std::nullopt;
    if (!mem) return fail(fmt::format("{}: no MemTotal line", (dir / "meminfo").string()));
    node.mem_bytes = *mem;
    const auto distance = read_file(dir / "distance");
    if (!distance) return fail(fmt::format("{}: cannot read", (dir / "distance").string()));
    for (std::string_view field : split(trim(*distance), ' ')) {
      if (field.empty()) continue;
      const auto v = parse_number<int>(field);
      if (!v)
        return fail(
            fmt::format("{}: malformed distance \"{}\"", (dir / "distance").string(), field));
      node.distance.push_back(*v);
    }
    if (node.distance.size() != node_ids.size()) {
      return fail(fmt::format("{}: {} distances for {} nodes", (dir / "distance").string(),
                              node.distance.size(), node_ids.size()));
    }
    host_nodes.push_back(std::move(node));
  }

  if (host_nodes.empty()) {
    // A kernel without CONFIG_NUMA: one node holding every online CPU.
    // SIMPLIFICATION: memory comes from /proc/meminfo for the real "/sys";
    // for any other root from "<sys_root>/meminfo" if present, else 0.
    HostNode node;
    const auto online = read_file(cpu_root / "online");
    const auto cpus = online ? parse_cpulist(*online) : std::nullopt;
    if (!cpus) return fail(fmt::format("{}: cannot read", (cpu_root / "online").string()));
    node.cpus = *cpus;
    const fs::path meminfo_path = sys_root == "/sys" ? fs::path("/proc/meminfo") : root / "meminfo";
    if (const auto meminfo = read_file(meminfo_path)) {
      const auto mem = parse_mem_total(*meminfo);
      if (!mem) return fail(fmt::format("{}: no MemTotal line", meminfo_path.string()));
      node.mem_bytes = *mem;
    }
    node.distance = {kLocalDistance};
    host_nodes.push_back(std::move(node));
  }
  if (host_nodes.size() > kMaxNodes) {
    return fail(fmt::format("{} nodes, more than the {} supported", host_nodes.size(), kMaxNodes));
  }

  // CPUs, in ascending host id. SIMPLIFICATION: offline CPUs are left out
  // and the rest renumbered densely, so cpu ids match the host's only when
  // every CPU is online.
  std::map<uint32_t, uint16_t> host_cpu_node;
  for (size_t n = 0; n < host_nodes.size(); ++n) {
    for (uint32_t c : host_nodes[n].cpus) {
      if (!host_cpu_node.emplace(c, static_cast<uint16_t>(n)).second) {
        return fail(fmt::format("cpu{} is listed in more than one node", c));
      }
    }
  }
  if (host_cpu_node.empty()) return fail("no online CPUs");
  if (host_cpu_node.size() > kMaxCpus) {
    return fail(fmt::format("{} CPUs, more than the {} supported", host_cpu_node.size(), kMaxCpus));
  }

  struct HostCpu {
    uint32_t host_id;
    uint16_t node;
    int64_t package;
    int64_t core_id;
  };
  std::vector<HostCpu> host_cpus;
  for (const auto& [c, node] : host_cpu_node) {
    const fs::path dir = cpu_root / fmt::format("cpu{}", c) / "topology";
    const auto package_text = read_file(dir / "physical_package_id");
    const auto core_text = read_file(dir / "core_id");
    const auto package = package_text ? parse_number<int64_t>(*package_text) : std::nullopt;
    const auto core = core_text ? parse_number<int64_t>(*core_text) : std::nullopt;
    if (!package || !core) {
      return fail(fmt::format("{}: cannot read physical_package_id and core_id", dir.string()));
    }
    host_cpus.push_back({c, node, *package, *core});
  }

  // Sockets renumbered densely by package id; cores densely by core_id within
  // their socket (core_ids have gaps on many Intel parts); threads by the
  // rank of the CPU among those sharing its core.
  std::map<int64_t, uint16_t> socket_of_package;
  std::map<std::pair<int64_t, int64_t>, uint16_t> core_of;
  std::map<std::pair<int64_t, int64_t>, uint16_t> threads_seen;
  for (const HostCpu& hc : host_cpus) {
    socket_of_package.emplace(hc.package, 0);
    core_of.emplace(std::pair(hc.package, hc.core_id), 0);
  }
  uint16_t next = 0;
  for (auto& [package, socket] : socket_of_package) socket = next++;
  int64_t last_package = -2;
  for (auto& [key, core] : core_of) {
    if (key.first != last_package) next = 0;
    last_package = key.first;
    core = next++;
  }

  std::vector<Cpu> cpus;
  std::vector<uint64_t> llc(socket_of_package.size(), 0);
  std::vector<bool> llc_read(socket_of_package.size(), false);
  for (const HostCpu& hc : host_cpus) {
    Cpu cpu;
    cpu.id = CpuId(static_cast<uint16_t>(cpus.size()));
    cpu.node = NodeId(hc.node);
    cpu.socket = socket_of_package[hc.package];
    cpu.core = core_of[{hc.package, hc.core_id}];
    cpu.thread = threads_seen[{hc.package, hc.core_id}]++;
    // SIMPLIFICATION: a socket's LLC is the one its lowest-numbered CPU
    // sees; on parts with several L3 slices per socket (AMD CCXs) that is
    // one slice, not the socket's total.
    if (!llc_read[cpu.socket]) {
      const fs::path cpu_dir = cpu_root / fmt::format("cpu{}", hc.host_id);
      const auto size = read_llc(cpu_dir);
      if (!size)
        return fail(fmt::format("{}: malformed cache level or size", (cpu_dir / "cache").string()));
      llc[cpu.socket] = *size;
      llc_read[cpu.socket] = true;
    }
    cpus.push_back(cpu);
  }

  std::vector<Node> nodes(host_nodes.size());
  std::vector<std::vector<int>> distance;
  for (size_t n = 0; n < host_nodes.size(); ++n) {
    nodes[n].id = NodeId(static_cast<uint16_t>(n));
    nodes[n].mem_bytes = host_nodes[n].mem_bytes;
    distance.push_back(host_nodes[n].distance);
  }
  // A node's socket is that of its first CPU; memory-only nodes say 0.
  for (auto it = cpus.rbegin(); it != cpus.rend(); ++it) nodes[it->node.v].socket = it->socket;
  return Topology("host", std::move(nodes), std::move(cpus), std::move(distance), std::move(llc));
}

std::string format_numactl_hardware(const Topology& t) {
  // Same lines and column widths as `numactl --hardware`, except that the
  // distance table has no trailing blanks. Free equals size: nothing has run.
  const size_t n = t.nr_nodes();
  std::string out = fmt::format("available: {} nodes ({})\n", n,
                                n == 1 ? std::string("0") : fmt::format("0-{}", n - 1));
  for (const Node& node : t.nodes()) {
    out += fmt::format("node {} cpus:", node.id.v);
    for (CpuId c : node.cpus) out += fmt::format(" {}", c.v);
    const uint64_t mb = node.mem_bytes / kMiB;
    out +=
        fmt::format("\nnode {} size: {} MB\nnode {} free: {} MB\n", node.id.v, mb, node.id.v, mb);
  }
  out += "node distances:\nnode";
  for (const Node& node : t.nodes()) out += fmt::format(" {:3}", node.id.v);
  out += '\n';
  for (const Node& a : t.nodes()) {
    out += fmt::format("{:3}:", a.id.v);
    for (const Node& b : t.nodes()) out += fmt::format(" {:3}", t.distance(a.id, b.id));
    out += '\n';
  }
  return out;
}

}  // namespace mmsim::topo
