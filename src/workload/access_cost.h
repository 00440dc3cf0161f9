// The time user code takes to access memory, priced by the cache model
// (cost::CacheModel). Each op declares its footprint once per socket; then
// a page of a sweep costs, per line it reads, the larger of the loop's
// compute for the line's elements and the line's delivery as a prefetched
// stream (out-of-order execution overlaps the two); a touch costs one line,
// its misses overlapping (or, right after a fault, one dependent miss).
// Compute slows down when the core's SMT sibling is busy; DRAM lines slow
// down when the memory or interconnect they cross is saturated
// (cost::Bandwidth).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "cost/bandwidth.h"
#include "cost/cache_model.h"
#include "cost/cost_profile.h"
#include "mm/folio.h"
#include "mm/mm_types.h"
#include "topo/topology.h"

namespace mmsim::workload {

// How one op accesses its pages.
struct AccessSpec {
  bool touch = false;        // one access per page (else a sweep over elements)
  uint32_t elem_size = 4;    // sweep: bytes per element
  double compute_ns = -1;    // sweep: per element; < 0: the profile's
  bool unoptimised = false;  // sweep: the -O0 loop (latency-bound), else -O2
  bool memset = false;       // sweep: memset(3), elements of a line at memset_line_ns each
};

// Who accesses: the task, its CPU and node, and whether its SMT sibling is
// busy.
struct Accessor {
  uint32_t pid = 0;
  CpuId cpu;
  NodeId node;
  bool sibling_busy = false;
};

// What a priced range asks of memory: the bytes it brings from each node's
// DRAM, and the time it takes when nothing is saturated.
struct Traffic {
  std::vector<double> bytes;  // by node
  double ns = 0;
  void clear() {
    std::fill(bytes.begin(), bytes.end(), 0.0);
    ns = 0;
  }
};

class AccessCost {
 public:
  AccessCost(const cost::CostProfile& costs, const mm::FolioAllocator& folios,
             cost::CacheModel& cache, const cost::Bandwidth& bandwidth);

  // Declares the footprint of a user access op over `pages` pages of `mm`
  // from `start`: a sweep the lines it reads, a touch one line a page and,
  // if `faults`, the metadata each fault walks.
  void add_footprint(const Accessor& who, const mm::Mm& mm, Vpn start, uint64_t pages,
                     const AccessSpec& a, bool faults);
  // Declares the metadata a kernel walk over those pages touches (mlock,
  // MADV_DONTNEED): struct pages, PTEs, page_cgroup entries.
  void add_meta_footprint(const Accessor& who, const mm::Mm& mm, Vpn start, uint64_t pages);
  // Forgets the task's footprints (it exits or changes socket).
  void drop_footprints(uint32_t pid) { cache_.drop_footprints(pid); }
  // The sockets where those changes moved the price of a line (each once).
  std::vector<uint16_t> take_changed_sockets() { return cache_.take_changed_sockets(); }

  // One page on `node`; `after_fault`: the access waits on nothing else.
  // At the bandwidth factors in force.
  double page_cost(const AccessSpec& a, const Accessor& who, NodeId node, bool after_fault) const;
  // The page as the task's page table maps it, right after its fault.
  double faulted_page_cost(const AccessSpec& a, const Accessor& who, const mm::PageTable& pt,
                           Vpn vpn) const;
  // Every page of [from, to): pages per node from the page table, then one
  // cost per node (untouched pages count as local). Adds the range's
  // traffic to `traffic`, if given.
  double range_cost(const AccessSpec& a, const Accessor& who, const mm::PageTable& pt, Vpn from,
                    Vpn to, Traffic* traffic = nullptr);
  // The pages of [from, to) mapped on each node (from the page tables'
  // per-node caches; `by_node` is resized to the node count) and the rest,
  // not mapped to a folio.
  uint64_t pages_by_node(const mm::PageTable& pt, Vpn from, Vpn to,
                         std::vector<uint64_t>& by_node) const;

 private:
  // What the memory at `start` is (a file's pages, an anon_vma's, the mm's
  // own), and whether it is a file's; nullopt if nothing is mapped there.
  struct Memory {
    cost::CacheModel::Key key;
    bool file = false;
  };
  static std::optional<Memory> memory_at(const mm::Mm& mm, Vpn start);
  double page_cost_at(const AccessSpec& a, const Accessor& who, NodeId node, bool after_fault,
                      double mem_factor) const;
  const cost::CostProfile& costs_;
  const mm::FolioAllocator& folios_;
  cost::CacheModel& cache_;
  const cost::Bandwidth& bandwidth_;
  std::vector<uint64_t> node_pages_;  // scratch of range_cost
};

}  // namespace mmsim::workload
