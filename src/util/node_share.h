// Which nodes are a task's share of the machine, by its place among the tasks
// one `threads` or `fork` op started: what autonuma-benchmark's bind variants
// compute from the topology at build time. Header-only and standard-library
// only: the native executor (tools/exec) uses it too.
#pragma once

#include <cstdint>
#include <utility>

namespace mmsim::util {

// The half-open range [first, last) of node positions (0 .. nodes-1, in the
// order numactl lists the nodes with CPUs) that the `index`-th of `count`
// tasks takes: with no more tasks than nodes, an equal block each (numa01's
// two processes each take a half); with more, consecutive tasks share a node,
// task i on node i * nodes / count (numa02's threads, THREADS/NNODES a node).
// `mirror` gives the task the share of the task at the other end of the
// order (count - 1 - index): the INVERSE_BIND placements.
// REQUIRES: index < count, nodes >= 1.
inline std::pair<uint64_t, uint64_t> node_share(uint64_t index, uint64_t count, uint64_t nodes,
                                                bool mirror) {
  const uint64_t i = mirror ? count - 1 - index : index;
  const uint64_t first = i * nodes / count;
  if (count > nodes) return {first, first + 1};
  return {first, (i + 1) * nodes / count};
}

}  // namespace mmsim::util
