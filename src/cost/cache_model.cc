#include "cost/cache_model.h"

#include <algorithm>
#include <set>

#include "cost/bandwidth.h"

namespace mmsim::cost {

namespace {

constexpr uint64_t kNoLine = UINT64_MAX;

}  // namespace

double cache_hit_fraction(double capacity, double working_set, bool adaptive) {
  if (working_set <= capacity) return 1.0;
  return adaptive ? capacity / working_set : 0.0;
}

CacheModel::CacheModel(const topo::Topology& topo, const CostProfile& costs)
    : topo_(topo),
      costs_(costs),
      sets_(topo.nr_sockets()),
      socket_bytes_(topo.nr_sockets(), 0),
      last_line_(topo.nr_cpus()) {
  for (auto& l : last_line_) l.fill(kNoLine);
  // Hops: the rank of each distance between nodes of different sockets
  // among the machine's distinct such distances (the nearest sockets are one
  // hop away). Nodes of one socket (sub-NUMA clusters) are 0 hops apart.
  const size_t n = topo.nr_nodes();
  auto node = [](size_t i) { return NodeId(static_cast<uint16_t>(i)); };
  auto other_socket = [&](size_t a, size_t b) {
    return topo.node(node(a)).socket != topo.node(node(b)).socket;
  };
  std::set<int> remote;
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) {
      // Hops are between nodes with CPUs (a memory node is reached through
      // its home node).
      const bool cpus = !topo.node(node(a)).cpus.empty() && !topo.node(node(b)).cpus.empty();
      if (other_socket(a, b) && cpus) remote.insert(topo.distance(node(a), node(b)));
    }
  }
  hops_.assign(n, std::vector<uint8_t>(n, 0));
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) {
      if (!other_socket(a, b)) continue;
      const auto rank =
          std::distance(remote.begin(), remote.lower_bound(topo.distance(node(a), node(b))));
      hops_[a][b] = static_cast<uint8_t>(std::min<long>(2, 1 + rank));
    }
  }
}

void CacheModel::add_footprint(uint32_t pid, CpuId cpu, Key key, uint64_t bytes) {
  const uint16_t socket = topo_.cpu(cpu).socket;
  if (by_task_.size() <= pid) {
    by_task_.resize(pid + 1);
    task_bytes_.resize(pid + 1, 0);
  }
  auto& mine = by_task_[pid];
  for (const auto& fp : mine) {
    if (fp.socket == socket && fp.key == key && fp.bytes == bytes) return;
  }
  if (sets_[socket][{key, bytes}]++ == 0) set_socket_bytes(socket, socket_bytes_[socket] + bytes);
  mine.push_back(Footprint{socket, key, bytes});
  task_bytes_[pid] += bytes;
}

void CacheModel::drop_footprints(uint32_t pid) {
  if (pid >= by_task_.size()) return;
  for (const auto& fp : by_task_[pid]) {
    auto& set = sets_[fp.socket];
    auto it = set.find({fp.key, fp.bytes});
    if (--it->second == 0) {
      set_socket_bytes(fp.socket, socket_bytes_[fp.socket] - fp.bytes);
      set.erase(it);
    }
  }
  by_task_[pid].clear();
  task_bytes_[pid] = 0;
}

double CacheModel::llc_fraction(uint16_t socket, uint64_t bytes) const {
  return cache_hit_fraction(static_cast<double>(topo_.llc_bytes(socket)),
                            static_cast<double>(bytes), costs_.llc_adaptive > 0);
}

void CacheModel::set_socket_bytes(uint16_t socket, uint64_t bytes) {
  if (llc_fraction(socket, bytes) != llc_fraction(socket, socket_bytes_[socket]) &&
      std::find(changed_sockets_.begin(), changed_sockets_.end(), socket) ==
          changed_sockets_.end()) {
    changed_sockets_.push_back(socket);
  }
  socket_bytes_[socket] = bytes;
}

std::vector<uint16_t> CacheModel::take_changed_sockets() {
  std::vector<uint16_t> out;
  out.swap(changed_sockets_);
  return out;
}

uint64_t CacheModel::meta_bytes_per_page(bool file) const {
  // struct page (one line), the PTE, the page_cgroup entry, the page-cache
  // slot; the user's own line is the caller's.
  return kLineBytes + 8 + page_cgroup_bytes_ + (file ? 8 : 0);
}

double CacheModel::dram_ns(NodeId from, NodeId to) const {
  // A CPU-less memory node is reached through its home node, and adds its
  // own latency over DRAM there, by their SLIT distance.
  const NodeId home = topo_.home(to);
  if (home != to && home != from) {
    return dram_ns(from, home) + costs_.mem_latency_ns * (topo_.distance_factor(home, to) - 1.0);
  }
  const uint8_t hops = hops_[from.v][to.v];
  if (hops == 0)
    return costs_.mem_latency_ns * (from == to ? 1.0 : topo_.distance_factor(from, to));
  const double per_hop = hops == 1 ? costs_.mem_latency_1hop_ns : costs_.mem_latency_2hop_ns;
  if (per_hop > 0) return per_hop;
  return costs_.mem_latency_ns * topo_.distance_factor(from, to);
}

CacheModel::Levels CacheModel::levels(uint64_t task_bytes, uint64_t socket_bytes,
                                      uint16_t socket) const {
  Levels l;
  const auto task = static_cast<double>(task_bytes);
  l.l1 = cache_hit_fraction(costs_.l1d_bytes, task, false);
  l.l2 = std::max(l.l1, cache_hit_fraction(costs_.l2_bytes, task, false));
  l.llc = std::max(l.l2, llc_fraction(socket, socket_bytes));
  return l;
}

double CacheModel::line_ns(uint64_t task_bytes, CpuId cpu, NodeId node, Pattern p,
                           double mem_factor) const {
  const uint16_t socket = topo_.cpu(cpu).socket;
  const uint64_t socket_bytes = socket_bytes_[socket];
  LineMemo& m = line_memo_[static_cast<size_t>(p)];
  if (m.task_bytes != task_bytes || m.socket_bytes != socket_bytes || m.cpu != cpu ||
      m.node != node || m.mem_factor != mem_factor) {
    m = LineMemo{
        task_bytes, socket_bytes,
        cpu,        node,
        mem_factor, compute_line_ns(task_bytes, socket_bytes, cpu, socket, node, p, mem_factor)};
  }
  return m.ns;
}

double CacheModel::task_mem_fraction(uint32_t pid, CpuId cpu) const {
  const uint16_t socket = topo_.cpu(cpu).socket;
  return 1.0 - levels(task_bytes(pid), socket_bytes_[socket], socket).llc;
}

double CacheModel::compute_line_ns(uint64_t task_bytes, uint64_t socket_bytes, CpuId cpu,
                                   uint16_t socket, NodeId node, Pattern p,
                                   double mem_factor) const {
  const Levels l = levels(task_bytes, socket_bytes, socket);
  const NodeId here = topo_.cpu_to_node(cpu);
  const double mem = dram_ns(here, node) * mem_factor;
  const double in_l2 = l.l2 - l.l1, in_llc = l.llc - l.l2, in_mem = 1.0 - l.llc;
  switch (p) {
    case Pattern::kDependent:
      return l.l1 * costs_.l1_ns + in_l2 * costs_.l2_ns + in_llc * costs_.llc_ns + in_mem * mem;
    case Pattern::kIndependent: {
      // Misses overlap, as many at once as the line fill buffers hold.
      const double mlp = std::max(1.0, costs_.lfb_entries);
      return l.l1 * costs_.l1_ns +
             (in_l2 * costs_.l2_ns + in_llc * costs_.llc_ns + in_mem * mem) / mlp;
    }
    case Pattern::kStream: {
      // Prefetched: each level delivers lines at its latency over the
      // requests in flight to it.
      const double mlp = std::max(1.0, costs_.lfb_entries);
      const double streams = std::max(1.0, costs_.l2_outstanding);
      return l.l1 * costs_.l1_ns + (in_l2 * costs_.l2_ns + in_llc * costs_.llc_ns) / mlp +
             in_mem * mem / streams;
    }
  }
  return 0;
}

double CacheModel::meta_line_miss_ns(size_t a, uint64_t line, uint64_t& last, NodeId node) {
  // The line after the last one: an ascending stream, which the L2 streamer
  // has prefetched by the time the kernel comes back for it.
  const bool next = last != kNoLine && line == last + 1;
  last = line;
  ++meta_stats_[a].misses;
  meta_stats_[a].streamed += next ? 1 : 0;
  const double t =
      task_line_ns(current_pid_, current_cpu_, node, next ? Pattern::kStream : Pattern::kDependent);
  const double miss = std::max(0.0, t - costs_.l1_ns);
  meta_stats_[a].miss_ns += miss;
  return miss;
}

double CacheModel::stream_line_ns(NodeId from, NodeId to) const {
  return dram_ns(from, to) / std::max(1.0, costs_.l2_outstanding);
}

double CacheModel::bw_factor(NodeId cpu_node, NodeId node) const {
  return bandwidth_ ? bandwidth_->factor(cpu_node, node) : 1.0;
}

double CacheModel::page_copy_ns(NodeId cpu_node, NodeId src, NodeId dst) const {
  const double local = 2 * stream_line_ns(cpu_node, cpu_node);
  if (local <= 0) return costs_.page_copy_ns;
  const double here = stream_line_ns(cpu_node, src) * bw_factor(cpu_node, src) +
                      stream_line_ns(cpu_node, dst) * bw_factor(cpu_node, dst);
  return costs_.page_copy_ns * here / local;
}

double CacheModel::page_zero_ns(NodeId cpu_node, NodeId node) const {
  const double local = stream_line_ns(cpu_node, cpu_node);
  if (local <= 0) return costs_.page_zero_ns;
  return costs_.page_zero_ns * stream_line_ns(cpu_node, node) * bw_factor(cpu_node, node) / local;
}

}  // namespace mmsim::cost
