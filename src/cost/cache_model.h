// Where a memory access is served from and what it costs: the core's L1 or
// L2, its socket's last-level cache, or DRAM on some node, by hop count.
//
// The model is decided per op, never per access. Each op a task runs
// declares its footprint: the bytes it touches before it touches the same
// line again (a sweep's region; a touch loop's data line, struct page, PTE,
// page-cache slot and page_cgroup entry per page). A line's reuse distance is
// then the footprint of its task (for the private L1 and L2) or of every task
// on the socket (for the shared LLC); memory that several tasks share counts
// once. A cyclic reuse larger than a cache misses it every time under LRU
// replacement; an adaptive LLC (Ivy Bridge and later) keeps a capacity-sized
// part of it. Independent accesses overlap their misses up to the line fill
// buffers; a sequential stream is prefetched, so its DRAM lines cost the
// latency over the requests the L2 streamer keeps in flight (Little's law).
//
// Kernel metadata (struct page, page_cgroup, PTEs, page-cache slots) is priced
// per line: an entry in the line the same CPU touched last in that array is an
// L1 hit (consecutive pages share a line when entries are small); the next
// line after it is an ascending stream the L2 streamer prefetches; any other
// is a dependent miss at the reuse distance above. docs/design.md has the
// assumptions.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "cost/cost_profile.h"
#include "sim/types.h"
#include "topo/topology.h"

namespace mmsim::cost {

class Bandwidth;

inline constexpr uint64_t kLineBytes = 64;
// sizeof(struct page) on x86-64: one line.
inline constexpr uint32_t kStructPageBytes = 64;

enum class Pattern : uint8_t {
  kDependent,    // each access waits for the one before (a chase, a fault's path)
  kIndependent,  // accesses that overlap their misses (a strided touch loop)
  kStream,       // a sequential stream the hardware prefetcher follows
};

// Kernel arrays priced per cache line.
// The name of each array, as reports print it.
inline constexpr const char* kMetaNames[] = {"struct_page", "page_cgroup", "pte", "page_cache"};

enum class Meta : uint8_t {
  kStructPage,  // the memmap: 64 bytes per page frame, on the frame's node
  kPageCgroup,  // the page_cgroup array (3.18 and before), on the frame's node
  kPte,         // the PTEs of one mm (8 bytes per page)
  kPageCache,   // a file's page-cache tree leaf slots (8 bytes per page)
  kCount,
};

// The part of a cyclic working set of `working_set` bytes that a cache of
// `capacity` bytes holds: all of it when it fits; beyond, nothing under LRU
// replacement, capacity / working_set under an adaptive one.
double cache_hit_fraction(double capacity, double working_set, bool adaptive);

class CacheModel {
 public:
  // REQUIRES: topo and costs outlive the model.
  CacheModel(const topo::Topology& topo, const CostProfile& costs);

  // --- Working sets.
  // Memory named by what it is (a file, an anon_vma, an mm) and where in it.
  using Key = std::pair<uint64_t, uint64_t>;
  // Task `pid` on `cpu` reuses `bytes` of the memory named `key`. Counted once
  // per socket however many of its tasks reuse the same bytes from the same
  // place; a task's second add of them on the same socket changes nothing.
  // (The same start with another length is another footprint: main's sweep
  // of a whole buffer is not its first thread's slice of it.)
  void add_footprint(uint32_t pid, CpuId cpu, Key key, uint64_t bytes);
  // Forgets the task's footprints (it exits, or moves to another socket).
  void drop_footprints(uint32_t pid);
  uint64_t socket_bytes(uint16_t socket) const { return socket_bytes_[socket]; }
  // The sockets whose LLC hit fraction the adds and drops since the last
  // call changed (each once): every price of a line there changed with it.
  std::vector<uint16_t> take_changed_sockets();
  size_t nr_nodes() const { return topo_.nr_nodes(); }
  uint64_t task_bytes(uint32_t pid) const {
    return pid < task_bytes_.size() ? task_bytes_[pid] : 0;
  }

  // Bytes of metadata a page costs its footprint when a loop faults it in and
  // out: its struct page, its PTE, its page_cgroup entry, and for a file page
  // its page-cache slot.
  uint64_t meta_bytes_per_page(bool file) const;
  // page_cgroup entry size of the kernel modelled (0: none, the memcg pointer
  // lives in struct page, 3.19 and later).
  void set_page_cgroup_bytes(uint32_t bytes) { page_cgroup_bytes_ = bytes; }
  // The memory and interconnect bandwidth the kernel's page zeroing and
  // copying share with user streams (nullptr: not limited).
  void set_bandwidth(const Bandwidth* bandwidth) { bandwidth_ = bandwidth; }
  uint32_t page_cgroup_bytes() const { return page_cgroup_bytes_; }

  // --- Costs.
  // Idle load latency from a CPU on `from` to DRAM on `to`: local, one hop or
  // two (or more, priced as two), the hop count being the rank of the SLIT
  // distance among the machine's distances between sockets. Another node of
  // the same socket, and any remote node when the profile has no per-hop
  // figures: the local latency times distance / 10 (the SLIT's meaning).
  double dram_ns(NodeId from, NodeId to) const;
  // Cumulative hit fractions of L1, L2 and LLC for a line reused after
  // `task_bytes` by its core and `socket_bytes` by its socket.
  struct Levels {
    double l1 = 0, l2 = 0, llc = 0;
  };
  Levels levels(uint64_t task_bytes, uint64_t socket_bytes, uint16_t socket) const;
  // Expected time to bring one line (not in a register or the store buffer)
  // to a task on `cpu` whose footprint is `task_bytes`, memory on `node`.
  // The last answer for each pattern is kept: the kernel's walks (an rmap,
  // a page table) ask the same question many times in a row. `mem_factor`
  // slows the DRAM part down (a saturated memory or interconnect:
  // cost::Bandwidth).
  double line_ns(uint64_t task_bytes, CpuId cpu, NodeId node, Pattern p,
                 double mem_factor = 1.0) const;
  // Same, the task being `pid` (its footprint and its socket's).
  double task_line_ns(uint32_t pid, CpuId cpu, NodeId node, Pattern p,
                      double mem_factor = 1.0) const {
    return line_ns(task_bytes(pid), cpu, node, p, mem_factor);
  }
  // The share of task pid's lines on `cpu` that come from DRAM (miss the LLC).
  double task_mem_fraction(uint32_t pid, CpuId cpu) const;

  // --- Kernel metadata.
  // The kernel runs on behalf of `pid` on `cpu` until the next call.
  void set_current(uint32_t pid, CpuId cpu) {
    current_pid_ = pid;
    current_cpu_ = cpu;
  }
  // The time beyond an L1 hit of reading entry `index` (of `entry_bytes`) of
  // metadata array `m` whose memory is on `node`, `space` naming the array
  // (an mm for PTEs, a file for the page cache; 0 for global arrays): none in
  // the CPU's last line of that array, a streamed line for the next one, else
  // a dependent miss.
  // (Inline up to the last-line test: faults and zaps ask several times each.)
  double meta_miss_ns(Meta m, uint64_t space, uint64_t index, uint32_t entry_bytes, NodeId node) {
    const auto a = static_cast<size_t>(m);
    const uint64_t line = (space << 44) | (index * entry_bytes / kLineBytes);
    uint64_t& last = last_line_[current_cpu_.v][a];
    if (last == line) {
      ++meta_stats_[a].hits;
      return 0;
    }
    return meta_line_miss_ns(a, line, last, node);
  }
  // Same, the memory on the current CPU's node (page tables, the page
  // cache's tree nodes: allocated where the kernel ran).
  double meta_miss_ns(Meta m, uint64_t space, uint64_t index, uint32_t entry_bytes) {
    return meta_miss_ns(m, space, index, entry_bytes, topo_.cpu_to_node(current_cpu_));
  }
  // Counts of metadata lines priced (hits in the last line, and the rest).
  struct MetaStats {
    uint64_t hits = 0, misses = 0;
    uint64_t streamed = 0;  // misses on the line after the last: prefetched
    double miss_ns = 0;     // the time the misses cost beyond L1 hits
  };
  const std::array<MetaStats, static_cast<size_t>(Meta::kCount)>& meta_stats() const {
    return meta_stats_;
  }

  // Copying a 4 KiB page from `src` to `dst` for a CPU on `cpu_node`: the
  // profile's page_copy_ns (local to local), scaled by the model's time to
  // stream the page's lines in from src and out to dst against the same
  // from and to the local node.
  double page_copy_ns(NodeId cpu_node, NodeId src, NodeId dst) const;
  // Zeroing a 4 KiB page on `node`: page_zero_ns scaled by the streamed write.
  // Both are slowed, as a stream's DRAM lines are, by the bandwidth factors
  // in force (cost::Bandwidth); they add no demand of their own.
  double page_zero_ns(NodeId cpu_node, NodeId node) const;

 private:
  double stream_line_ns(NodeId from, NodeId to) const;
  struct Footprint {
    uint16_t socket;
    Key key;
    uint64_t bytes;
  };
  const topo::Topology& topo_;
  const CostProfile& costs_;
  std::vector<std::vector<uint8_t>> hops_;  // [from][to]
  // Per socket: (footprint, bytes) -> tasks reusing it.
  std::vector<std::map<std::pair<Key, uint64_t>, uint32_t>> sets_;
  std::vector<uint64_t> socket_bytes_;
  // Sets socket_bytes_[socket], noting the socket if its LLC hit fraction
  // changes.
  void set_socket_bytes(uint16_t socket, uint64_t bytes);
  double llc_fraction(uint16_t socket, uint64_t bytes) const;
  std::vector<uint16_t> changed_sockets_;
  std::vector<std::vector<Footprint>> by_task_;  // by pid
  std::vector<uint64_t> task_bytes_;             // by pid
  uint32_t page_cgroup_bytes_ = 0;
  uint32_t current_pid_ = 0;
  CpuId current_cpu_{0};
  // meta_miss_ns past the last-line test: array a's `line`, missed.
  double meta_line_miss_ns(size_t a, uint64_t line, uint64_t& last, NodeId node);
  // Per CPU and array: the line touched last (UINT64_MAX: none).
  std::vector<std::array<uint64_t, static_cast<size_t>(Meta::kCount)>> last_line_;
  std::array<MetaStats, static_cast<size_t>(Meta::kCount)> meta_stats_{};
  // line_ns's last question and answer, per pattern.
  struct LineMemo {
    uint64_t task_bytes = UINT64_MAX, socket_bytes = 0;
    CpuId cpu{0};
    NodeId node{0};
    double mem_factor = 1.0;
    double ns = 0;
  };
  mutable std::array<LineMemo, 3> line_memo_{};
  const Bandwidth* bandwidth_ = nullptr;
  double bw_factor(NodeId cpu_node, NodeId node) const;
  double compute_line_ns(uint64_t task_bytes, uint64_t socket_bytes, CpuId cpu, uint16_t socket,
                         NodeId node, Pattern p, double mem_factor) const;
};

}  // namespace mmsim::cost
