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

uint64_t FolioAllocator::mark_pages(NodeId n, Mark m) const {
  const Watermarks& w = nodes_[n.v].wmark;
  switch (m) {
    case Mark::kNone:
      return 0;
    case Mark::kMin:
      return w.min;
    case Mark::kLow:
      return w.low;
    case Mark::kHigh:
      return w.high;
    case Mark::kPromo:
      return w.promo;
  }
  return 0;
}

std::optional<Pfn> FolioAllocator::alloc_on(NodeId node, Mark mark) {
  if (table_full() || !above(node, mark)) return std::nullopt;
  // The node asked for is the node given: a numa_hit there.
  vmstat_.add(Vm::numa_hit);
  vmstat_.add(Vm::numa_local);
  return take(node);
}

FolioAllocator::Target FolioAllocator::target(const MemPolicy& policy, NodeId local,
                                              uint64_t ilx) const {
  using Mode = MemPolicy::Mode;
  Target t{local, nullptr};
  switch (policy.mode) {
    case Mode::kDefault:
      break;
    case Mode::kPreferred:
      t.preferred = policy.nodes.front();
      break;
    case Mode::kBind:
      t.allowed = &policy.nodes;
      // The nearest allowed node to the local one comes first.
      t.preferred = policy.nodes.front();
      for (NodeId n : topo_.fallback_order(local)) {
        if (std::find(policy.nodes.begin(), policy.nodes.end(), n) != policy.nodes.end()) {
          t.preferred = n;
          break;
        }
      }
      break;
    case Mode::kInterleave:
      t.preferred = policy.nodes[ilx % policy.nodes.size()];
      break;
  }
  return t;
}

std::vector<NodeId> FolioAllocator::zonelist(const MemPolicy& policy, NodeId local,
                                             uint64_t ilx) const {
  const Target t = target(policy, local, ilx);
  std::vector<NodeId> out;
  for (NodeId n : topo_.fallback_order(t.preferred)) {
    if (t.allowed && std::find(t.allowed->begin(), t.allowed->end(), n) == t.allowed->end())
      continue;
    out.push_back(n);
  }
  return out;
}

std::optional<Pfn> FolioAllocator::alloc(const MemPolicy& policy, NodeId local, uint64_t ilx,
                                         Mark mark) {
  if (table_full()) return std::nullopt;  // the model's limit: 2^32 - 2 pages in use
  const Target t = target(policy, local, ilx);
  for (NodeId n : topo_.fallback_order(t.preferred)) {
    if (t.allowed && std::find(t.allowed->begin(), t.allowed->end(), n) == t.allowed->end())
      continue;
    if (free_pages(n) == 0 || !above(n, mark)) continue;
    Pfn pfn = take(n);
    if (n == t.preferred) {
      vmstat_.add(Vm::numa_hit);
      if (policy.mode == MemPolicy::Mode::kInterleave) vmstat_.add(Vm::numa_interleave);
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
