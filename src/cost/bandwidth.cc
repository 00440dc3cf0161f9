#include "cost/bandwidth.h"

#include <algorithm>
#include <cmath>

namespace mmsim::cost {

Bandwidth::Bandwidth(const topo::Topology& topo, const CostProfile& costs)
    : nr_nodes_(static_cast<uint32_t>(topo.nr_nodes())),
      nr_sockets_(static_cast<uint32_t>(topo.nr_sockets())) {
  const size_t resources = nr_nodes_ + 2 * size_t{nr_sockets_};
  capacity_.assign(resources, 0.0);
  demand_.assign(resources, 0.0);
  factor_.assign(resources, 1.0);
  changed_.assign(resources, 0);
  peak_.assign(resources, 1.0);
  saturated_ns_.assign(resources, 0);
  since_ns_.assign(resources, -1);
  socket_of_.resize(nr_nodes_);
  for (uint32_t n = 0; n < nr_nodes_; ++n) {
    const topo::Node& node = topo.node(NodeId(static_cast<uint16_t>(n)));
    socket_of_[n] = topo.node(topo.home(node.id)).socket;
    // GB/s is bytes per ns.
    capacity_[n] = node.cpus.empty() ? static_cast<double>(node.bandwidth_mbps) / 1000.0
                                     : costs.mem_bandwidth_gbps;
  }
  for (uint32_t s = 0; s < nr_sockets_; ++s) {
    capacity_[out_of(static_cast<uint16_t>(s))] = costs.interconnect_gbps;
    capacity_[in_to(static_cast<uint16_t>(s))] = costs.interconnect_gbps;
  }
  if (nr_sockets_ < 2) {
    // One socket: nothing crosses an interconnect.
    for (uint32_t r = nr_nodes_; r < resources; ++r) capacity_[r] = 0;
  }
  enabled_ = std::any_of(capacity_.begin(), capacity_.end(), [](double c) { return c > 0; });
}

void Bandwidth::add(std::vector<Use>& uses, uint32_t resource, double rate) {
  if (capacity_[resource] <= 0) return;
  for (Use& u : uses) {
    if (u.resource == resource) {
      u.bytes_per_ns += rate;
      return;
    }
  }
  uses.push_back(Use{resource, rate});
}

void Bandwidth::set_demand(uint32_t pid, NodeId cpu_node, std::span<const double> bytes_per_ns) {
  if (!enabled_) return;
  clear_demand(pid);
  std::vector<Use>& uses = by_task_[pid];
  const uint16_t here = socket_of_[cpu_node.v];
  for (uint32_t n = 0; n < nr_nodes_ && n < bytes_per_ns.size(); ++n) {
    const double rate = bytes_per_ns[n];
    if (!(rate > 0)) continue;
    add(uses, n, rate);
    const uint16_t there = socket_of_[n];
    if (there != here) {
      add(uses, out_of(there), rate);
      add(uses, in_to(here), rate);
    }
  }
  for (const Use& u : uses) demand_[u.resource] += u.bytes_per_ns;
  dirty_ = dirty_ || !uses.empty();
}

void Bandwidth::clear_demand(uint32_t pid) {
  if (!enabled_) return;
  if (by_task_.size() <= pid) by_task_.resize(pid + 1);
  std::vector<Use>& uses = by_task_[pid];
  for (const Use& u : uses)
    demand_[u.resource] = std::max(0.0, demand_[u.resource] - u.bytes_per_ns);
  dirty_ = dirty_ || !uses.empty();
  uses.clear();
}

double Bandwidth::factor(NodeId cpu_node, NodeId node) const {
  if (!enabled_) return 1.0;
  double f = factor_[node.v];
  const uint16_t here = socket_of_[cpu_node.v], there = socket_of_[node.v];
  if (here != there) f = std::max({f, factor_[out_of(there)], factor_[in_to(here)]});
  return f;
}

bool Bandwidth::settle(int64_t now_ns) {
  std::fill(changed_.begin(), changed_.end(), 0);
  if (!dirty_) return false;
  dirty_ = false;
  bool any = false;
  for (size_t r = 0; r < capacity_.size(); ++r) {
    if (capacity_[r] <= 0) continue;
    const double f = std::max(1.0, demand_[r] / capacity_[r]);
    if (std::abs(f - factor_[r]) > kTolerance * factor_[r]) {
      if (factor_[r] > 1 && f == 1) {
        saturated_ns_[r] += now_ns - since_ns_[r];
        since_ns_[r] = -1;
      } else if (factor_[r] == 1 && f > 1) {
        since_ns_[r] = now_ns;
      }
      factor_[r] = f;
      peak_[r] = std::max(peak_[r], f);
      changed_[r] = 1;
      any = true;
    }
  }
  return any;
}

std::vector<Bandwidth::Saturation> Bandwidth::saturations(int64_t now_ns) const {
  std::vector<Saturation> out;
  for (uint32_t r = 0; r < capacity_.size(); ++r) {
    if (peak_[r] <= 1) continue;
    std::string name;
    if (r < nr_nodes_) {
      name = "node " + std::to_string(r) + " memory";
    } else if (r < nr_nodes_ + nr_sockets_) {
      name = "socket " + std::to_string(r - nr_nodes_) + " links out";
    } else {
      name = "socket " + std::to_string(r - nr_nodes_ - nr_sockets_) + " links in";
    }
    const int64_t ns = saturated_ns_[r] + (since_ns_[r] >= 0 ? now_ns - since_ns_[r] : 0);
    out.push_back(Saturation{std::move(name), peak_[r], static_cast<double>(ns) * 1e-9});
  }
  return out;
}

bool Bandwidth::affected(uint32_t pid) const {
  if (pid >= by_task_.size()) return false;
  return std::any_of(by_task_[pid].begin(), by_task_[pid].end(),
                     [&](const Use& u) { return changed_[u.resource] != 0; });
}

}  // namespace mmsim::cost
