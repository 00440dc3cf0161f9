// Models mm/page_alloc.c and mm/mempolicy.c node selection: the zonelist
// fallback by distance and the numa_hit/miss/foreign/local/other counters.
#include "mm/folio.h"

#include <algorithm>

namespace mmsim::mm {

FolioAllocator::FolioAllocator(const topo::Topology& topo, VmStat& vmstat)
    : topo_(topo), vmstat_(vmstat), nodes_(topo.nr_nodes()) {
  for (const auto& n : topo.nodes()) {
    nodes_[n.id.v].capacity = n.mem_bytes / kPageSize;
    vmstat_.add(Vm::nr_free_pages, static_cast<int64_t>(nodes_[n.id.v].capacity));
  }
}

Pfn FolioAllocator::take(NodeId node) {
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    check(folios_.size() < kZeroPfn, "folio table full");
    slot = static_cast<uint32_t>(folios_.size());
    folios_.emplace_back();
  }
  Folio& f = folios_[slot];
  f = Folio{};
  f.node = node;
  f.flags = Folio::kInUse;
  ++nodes_[node.v].used;
  vmstat_.add(Vm::nr_free_pages, -1);
  vmstat_.add(Vm::pgalloc_normal);
  return Pfn(slot);
}

bool FolioAllocator::table_full() const {
  // Pfns are 32-bit; the last two values mark the zero page and "none".
  return free_slots_.empty() && folios_.size() >= kZeroPfn;
}

std::optional<Pfn> FolioAllocator::alloc_on(NodeId node) {
  if (table_full() || nodes_[node.v].used >= nodes_[node.v].capacity) return std::nullopt;
  // The node asked for is the node given: a numa_hit there.
  vmstat_.add(Vm::numa_hit);
  vmstat_.add(Vm::numa_local);
  return take(node);
}

std::optional<Pfn> FolioAllocator::alloc(const MemPolicy& policy, NodeId local, uint64_t ilx) {
  using Mode = MemPolicy::Mode;
  if (table_full()) return std::nullopt;  // the model's limit: 2^32 - 2 pages in use
  NodeId preferred = local;
  const std::vector<NodeId>* allowed = nullptr;  // nullptr: all nodes
  switch (policy.mode) {
    case Mode::kDefault:
      break;
    case Mode::kPreferred:
      preferred = policy.nodes.front();
      break;
    case Mode::kBind:
      allowed = &policy.nodes;
      // The nearest allowed node to the local one comes first.
      preferred = policy.nodes.front();
      for (NodeId n : topo_.fallback_order(local)) {
        if (std::find(policy.nodes.begin(), policy.nodes.end(), n) != policy.nodes.end()) {
          preferred = n;
          break;
        }
      }
      break;
    case Mode::kInterleave:
      preferred = policy.nodes[ilx % policy.nodes.size()];
      break;
  }
  for (NodeId n : topo_.fallback_order(preferred)) {
    if (allowed && std::find(allowed->begin(), allowed->end(), n) == allowed->end()) continue;
    if (nodes_[n.v].used >= nodes_[n.v].capacity) continue;
    Pfn pfn = take(n);
    if (n == preferred) {
      vmstat_.add(Vm::numa_hit);
      if (policy.mode == Mode::kInterleave) vmstat_.add(Vm::numa_interleave);
    } else {
      vmstat_.add(Vm::numa_miss);
      vmstat_.add(Vm::numa_foreign);
    }
    vmstat_.add(n == local ? Vm::numa_local : Vm::numa_other);
    return pfn;
  }
  return std::nullopt;
}

void FolioAllocator::free(Pfn pfn) {
  Folio& f = folios_[pfn.v];
  check(f.test(Folio::kInUse), "freeing a free folio");
  check(f.mapcount == 0, "freeing a mapped folio");
  --nodes_[f.node.v].used;
  f.flags = 0;
  free_slots_.push_back(pfn.v);
  vmstat_.add(Vm::nr_free_pages, 1);
  vmstat_.add(Vm::pgfree);
}

}  // namespace mmsim::mm
