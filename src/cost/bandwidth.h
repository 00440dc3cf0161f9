// Memory bandwidth as a shared resource. A sweep streams lines at the rate
// its core can keep requests in flight (cost::CacheModel); many cores
// streaming at once can ask more of a node's memory controllers, or of the
// interconnect between sockets, than they deliver. Then each stream through
// the saturated resource slows down by the ratio of what is asked to what it
// delivers, and the machine moves no more bytes than it can.
//
// The resources: each node's memory (its controllers and channels), and
// each socket's interconnect links, one direction out (lines its memory
// sends to other sockets) and one in (lines its CPUs receive). A line from
// a node on another socket crosses the three; a local one only the first.
// A two-hop line also crosses a middle socket's links; that traffic is not
// counted (the middle socket is not known from the SLIT).
//
// Demands are the streams' uncontended rates, so a factor depends only on
// who streams what from where, never on earlier factors: a stream slowed
// elsewhere is counted at its full rate here (an upper bound on the load).
// Factors change in force only when they move by more than a tolerance, so
// the streams priced with them are cut and priced again only on real
// changes, not on each stretch's start and end.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cost/cost_profile.h"
#include "sim/types.h"
#include "topo/topology.h"

namespace mmsim::cost {

class Bandwidth {
 public:
  // Capacities from the profile (mem_bandwidth_gbps for nodes with CPUs,
  // interconnect_gbps per socket and direction) and, for a CPU-less memory
  // node, the bandwidth its firmware reports (HMAT). 0: not limited.
  Bandwidth(const topo::Topology& topo, const CostProfile& costs);

  // Whether any resource is limited (else every factor is 1).
  bool enabled() const { return enabled_; }

  // Task `pid`, running on a CPU of `cpu_node`, streams bytes_per_ns[n]
  // from each node n at its uncontended speed. Replaces its last demand.
  void set_demand(uint32_t pid, NodeId cpu_node, std::span<const double> bytes_per_ns);
  // It streams nothing (it sleeps, exits, or runs something else).
  void clear_demand(uint32_t pid);

  // The slowdown in force of a line from `node` to a CPU on `cpu_node`: the
  // largest factor of the resources it crosses (1: none saturated).
  double factor(NodeId cpu_node, NodeId node) const;

  // Recomputes the factors from the demands, at `now_ns` of the run. A
  // factor that moved by more than the tolerance comes into force; returns
  // whether any did.
  bool settle(int64_t now_ns = 0);
  // Whether task pid's demand crosses a resource whose factor the last
  // settle() changed.
  bool affected(uint32_t pid) const;

  // The relative change of a factor that comes into force (2 %).
  static constexpr double kTolerance = 0.02;

  // A resource that was saturated during the run: its name ("node 0
  // memory", "socket 1 links out"), the largest factor in force, and for how
  // long a factor above 1 was, up to `now_ns`.
  struct Saturation {
    std::string resource;
    double peak = 1;
    double saturated_s = 0;
  };
  std::vector<Saturation> saturations(int64_t now_ns) const;

 private:
  struct Use {
    uint32_t resource;
    double bytes_per_ns;
  };
  uint32_t out_of(uint16_t socket) const { return nr_nodes_ + socket; }
  uint32_t in_to(uint16_t socket) const { return nr_nodes_ + nr_sockets_ + socket; }
  void add(std::vector<Use>& uses, uint32_t resource, double rate);

  uint32_t nr_nodes_ = 0, nr_sockets_ = 0;
  bool enabled_ = false;
  bool dirty_ = false;                 // a demand changed since the last settle()
  std::vector<double> capacity_;       // by resource, B/ns; 0: not limited
  std::vector<double> demand_;         // by resource, B/ns
  std::vector<double> factor_;         // by resource, in force
  std::vector<uint8_t> changed_;       // by resource: changed by the last settle()
  std::vector<double> peak_;           // by resource: the largest factor in force
  std::vector<int64_t> saturated_ns_;  // by resource: time with a factor above 1 ...
  std::vector<int64_t> since_ns_;      // ... and since when it is (-1: it is not)
  std::vector<uint16_t> socket_of_;    // by node: its home node's socket
  std::vector<std::vector<Use>> by_task_;
};

}  // namespace mmsim::cost
