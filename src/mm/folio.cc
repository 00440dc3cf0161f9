// Models mm/page_alloc.c and mm/mempolicy.c node selection: the zonelist
// fallback by distance and the numa_hit/miss/foreign/local/other counters.
#include "mm/folio.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <new>

namespace mmsim::mm {

static_assert(sizeof(Folio) * FolioTable::kChunk == 2u << 20, "a chunk is one huge page");

FolioTable::Chunk FolioTable::new_chunk() {
  constexpr size_t kBytes = sizeof(Folio) * kChunk;
  void* p = std::aligned_alloc(kBytes, kBytes);
  check(p != nullptr, "out of host memory for the folio table");
  madvise(p, kBytes, MADV_HUGEPAGE);  // advice only: no THP is no error
  Folio* f = static_cast<Folio*>(p);
  for (uint32_t i = 0; i < kChunk; ++i) new (f + i) Folio();
  return Chunk(f);
}

void FolioTable::FreeChunk::operator()(Folio* p) const { std::free(p); }

FolioAllocator::FolioAllocator(const topo::Topology& topo, VmStat& vmstat)
    : topo_(topo), vmstat_(vmstat), nodes_(topo.nr_nodes()) {
  for (const auto& n : topo.nodes()) {
    nodes_[n.id.v].capacity = n.mem_bytes / kPageSize;
    vmstat_.add(Vm::nr_free_pages, static_cast<int64_t>(nodes_[n.id.v].capacity));
  }
}

Pfn FolioAllocator::take(NodeId node, uint8_t order) {
  const uint32_t nr = 1u << order;
  uint32_t slot;
  if (order) {
    // A block for the folio; one smaller than a THP (a PGD, order 1)
    // leaves the rest of its block as free singles.
    slot = take_block();
    for (uint32_t p = kHugePages; p-- > nr;) free_slots_.push_back(slot + p);
  } else if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    check(folios_.size() < kZeroPfn, "folio table full");
    slot = static_cast<uint32_t>(folios_.size());
    folios_.grow_to(folios_.size() + 1);
  }
  Folio& head = folios_[slot];
  head = Folio{};
  head.node = node;
  head.flags = Folio::kInUse;
  head.set_order(order);
  for (uint32_t i = 1; i < nr; ++i) {
    Folio& f = folios_[slot + i];
    f = Folio{};
    f.node = node;
    f.flags = Folio::kInUse | Folio::kTail;
  }
  if (nr > 1) {
    // A tail is on no LRU list: the first one's links hold the folio's PMD
    // and PTE mapping counts (MemoryManager), none yet.
    folios_[slot + 1].lru_prev = 0;
    folios_[slot + 1].lru_next = 0;
  }
  nodes_[node.v].used += nr;
  vmstat_.add(Vm::nr_free_pages, -static_cast<int64_t>(nr));
  vmstat_.add(Vm::pgalloc_normal, nr);
  return Pfn(slot);
}

uint32_t FolioAllocator::take_block() {
  if (free_blocks_.empty()) compact_blocks();
  if (!free_blocks_.empty()) {
    const uint32_t b = free_blocks_.back();
    free_blocks_.pop_back();
    return b;
  }
  // A new block at the end of the table, 512-aligned: the entries skipped
  // to align it are free singles.
  const size_t base = (folios_.size() + kHugePages - 1) & ~size_t{kHugePages - 1};
  check(base + kHugePages <= kZeroPfn, "folio table full");
  for (size_t p = folios_.size(); p < base; ++p) free_slots_.push_back(static_cast<uint32_t>(p));
  folios_.grow_to(base + kHugePages);
  return static_cast<uint32_t>(base);
}

void FolioAllocator::compact_blocks() {
  // Worth a pass over the table only once the free singles could fill a
  // block and have grown since the last pass found too few whole blocks:
  // the cost is paid for by the frees in between.
  if (free_slots_.size() < compact_at_) return;
  const size_t blocks = folios_.size() / kHugePages;
  std::vector<uint8_t> whole(blocks, 0);
  for (size_t b = 0; b < blocks; ++b) {
    const Folio* first = &folios_[b * kHugePages];
    whole[b] = std::none_of(first, first + kHugePages,
                            [](const Folio& f) { return f.test(Folio::kInUse); });
  }
  std::vector<uint32_t> rest;
  rest.reserve(free_slots_.size());
  for (uint32_t p : free_slots_) {
    const size_t b = p / kHugePages;
    if (b >= blocks || !whole[b]) rest.push_back(p);
  }
  free_slots_ = std::move(rest);
  // Highest first, so the lowest block is taken first.
  for (size_t b = blocks; b-- > 0;)
    if (whole[b]) free_blocks_.push_back(static_cast<uint32_t>(b * kHugePages));
  compact_at_ = std::max<size_t>(kHugePages, 2 * free_slots_.size());
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

std::optional<Pfn> FolioAllocator::alloc_on(NodeId node, Mark mark, uint8_t order) {
  if (table_full() || free_pages(node) < (1u << order) || !above(node, mark, order))
    return std::nullopt;
  // The node asked for is the node given: a numa_hit there.
  vmstat_.add(Vm::numa_hit);
  vmstat_.add(Vm::numa_local);
  return take(node, order);
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
                                         Mark mark, uint8_t order) {
  if (table_full()) return std::nullopt;  // the model's limit: 2^32 - 2 pages in use
  const Target t = target(policy, local, ilx);
  for (NodeId n : topo_.fallback_order(t.preferred)) {
    if (t.allowed && std::find(t.allowed->begin(), t.allowed->end(), n) == t.allowed->end())
      continue;
    if (free_pages(n) < (1u << order) || !above(n, mark, order)) continue;
    Pfn pfn = take(n, order);
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
  check(f.test(Folio::kInUse) && !f.test(Folio::kTail), "freeing a free folio or a tail");
  const uint32_t nr = f.nr_pages();
  check(f.mapcount == 0, "freeing a mapped folio");
  f.flags = 0;
  for (uint32_t i = 1; i < nr; ++i) {
    Folio& p = folios_[pfn.v + i];
    check(p.mapcount == 0, "freeing a mapped folio");
    p.flags = 0;
  }
  mlock_count_.erase(pfn.v);
  nodes_[f.node.v].used -= nr;
  if (f.order() == kHugeOrder) {
    f.set_order(0);
    free_blocks_.push_back(pfn.v);
  } else {
    f.set_order(0);
    for (uint32_t i = nr; i-- > 0;) free_slots_.push_back(pfn.v + i);
  }
  vmstat_.add(Vm::nr_free_pages, nr);
  vmstat_.add(Vm::pgfree, nr);
}

void FolioAllocator::split(Pfn head) {
  Folio& h = folios_[head.v];
  check(h.large() && h.test(Folio::kInUse) && !h.test(Folio::kTail), "split of a small folio");
  const uint32_t nr = h.nr_pages();
  h.set_order(0);
  const auto flags = static_cast<uint16_t>(h.flags & ~Folio::kLru);
  for (uint32_t i = 1; i < nr; ++i) {
    Folio& t = folios_[head.v + i];
    t.flags = flags;
    t.mapping = h.mapping;
    t.memcg = h.memcg;
    t.last_cpupid = h.last_cpupid;
  }
}

}  // namespace mmsim::mm
