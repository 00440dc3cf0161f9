#include "mm/mm_types.h"

#include <algorithm>

#include "sim/check.h"

namespace mmsim::mm {

void AnonVma::remove(uint32_t slot) {
  const auto* v = vmas_.at(slot);
  check(v && *v, "a VMA left an anon_vma slot it was not in");
  if (!vmas_.erase(slot, nullptr)) return;
  const std::span<Vma* const> moved = vmas_.slots();  // from slot 0, with no hole
  for (uint32_t i = 0; i < moved.size(); ++i) {
    for (AnonVmaLink& l : moved[i]->avc) {
      if (l.av == this) l.slot = i;
    }
  }
}

void PageMappers::remove(Mm* mm, Vpn vpn) {
  // From both ends at once.
  const std::span<const Entry> e = v_.slots();
  size_t lo = 0, hi = e.size();
  size_t at = SIZE_MAX;
  while (lo < hi) {
    if (e[lo].mm == mm && e[lo].vpn == vpn) {
      at = lo;
      break;
    }
    --hi;
    if (e[hi].mm == mm && e[hi].vpn == vpn) {
      at = hi;
      break;
    }
    ++lo;
  }
  check(at != SIZE_MAX, "removing a mapping of a file page that was never added");
  v_.erase(v_.first() + at, Entry{nullptr, Vpn{}});
}

void AddressSpace::store(uint64_t index, uint32_t pfn) {
  const uint64_t key = index >> kPteTableShift;
  auto& chunk = chunks_[key];
  if (!chunk) {
    chunk = std::make_unique<Chunk>();
    chunk->fill(kNone);
  }
  cached_key_ = key;
  cached_ = chunk.get();
  const uint32_t old = (*chunk)[index & (kPtesPerTable - 1)];
  nrpages += static_cast<uint64_t>(pfn != kNone) - static_cast<uint64_t>(old != kNone);
  (*chunk)[index & (kPtesPerTable - 1)] = pfn;
}

std::vector<uint64_t> AddressSpace::cached_indices() const {
  std::vector<uint64_t> keys;
  keys.reserve(chunks_.size());
  for (const auto& [key, chunk] : chunks_) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  std::vector<uint64_t> out;
  out.reserve(nrpages);
  for (const uint64_t key : keys) {
    const Chunk& c = *chunks_.at(key);
    for (uint32_t i = 0; i < kPtesPerTable; ++i)
      if (c[i] != kNone) out.push_back((key << kPteTableShift) | i);
  }
  return out;
}

Vma* Mm::find_vma(Vpn v) const {
  if (vma_cache_ && vma_cache_->contains(v)) return vma_cache_;
  auto it = std::upper_bound(vmas_.begin(), vmas_.end(), v,
                             [](Vpn x, const std::unique_ptr<Vma>& vma) { return x < vma->start; });
  if (it == vmas_.begin()) return nullptr;
  Vma* vma = std::prev(it)->get();
  if (!vma->contains(v)) return nullptr;
  vma_cache_ = vma;
  return vma;
}

Vma* Mm::find_vma_intersection(Vpn start, Vpn end) const {
  auto it = std::upper_bound(vmas_.begin(), vmas_.end(), start,
                             [](Vpn x, const std::unique_ptr<Vma>& vma) { return x < vma->start; });
  if (it != vmas_.begin() && (*std::prev(it))->end > start) return std::prev(it)->get();
  return it != vmas_.end() && (*it)->start < end ? it->get() : nullptr;
}

Vma* Mm::insert_vma(std::unique_ptr<Vma> vma) {
  vma->mm = this;
  vma_cache_ = nullptr;
  auto it = std::upper_bound(vmas_.begin(), vmas_.end(), vma->start,
                             [](Vpn x, const std::unique_ptr<Vma>& v) { return x < v->start; });
  return vmas_.insert(it, std::move(vma))->get();
}

Vpn Mm::get_unmapped_area(uint64_t pages, std::optional<uint32_t> huge_offset) const {
  // x86-64's default top-down layout (arch_pick_mmap_layout, vm_unmapped_area
  // with VM_UNMAPPED_AREA_TOPDOWN): the highest gap below the mmap base that
  // fits, the mapping at its top, edge to edge with the VMA above it (only a
  // stack that grows down keeps a guard gap, and [stack] is the only one).
  // The base lies 128 MiB (the stack's gap) below TASK_SIZE, 0x7ffffffff000,
  // and is randomised at page granularity (arch_mmap_rnd): here by its
  // offset below that, mmap_rnd_pages (< 512: what matters is where it meets
  // the THP grid).
  constexpr uint64_t kHuge = 512;
  constexpr uint64_t kTop = uint64_t{0x7ffff7fff000} >> kPageShift;
  constexpr uint64_t kLow = uint64_t{0x10000} >> kPageShift;  // mmap_min_addr
  const uint64_t base = kTop - mmap_rnd_pages;
  // The highest start <= v that has the wanted offset past a 2 MiB boundary.
  auto align_down = [&](uint64_t v) {
    if (!huge_offset) return v;
    if (v < *huge_offset) return uint64_t{0};
    return ((v - *huge_offset) & ~(kHuge - 1)) + *huge_offset;
  };
  uint64_t top = base;  // the gap's exclusive end
  uint64_t hole = 0;    // the longest gap passed above `top`
  auto it = vmas_.rbegin();
  // The cached search that skips the most: every gap above its top is too
  // short for this request.
  const FreeCache* from = nullptr;
  for (const FreeCache& c : free_cache_)
    if (c.top != 0 && pages > c.hole && (!from || c.top < from->top)) from = &c;
  if (from) {
    top = from->top;
    hole = from->hole;
    it = std::make_reverse_iterator(
        std::lower_bound(vmas_.begin(), vmas_.end(), top,
                         [](const std::unique_ptr<Vma>& v, uint64_t x) { return v->start.v < x; }));
  }
  auto found = [&](uint64_t start) {
    free_cache_[free_next_++ % free_cache_.size()] = FreeCache{top, hole};
    return Vpn(start);
  };
  for (; it != vmas_.rend(); ++it) {
    const Vma& vma = **it;
    if (vma.start.v >= top) continue;
    if (vma.end.v <= top) {
      const uint64_t gap = top - vma.end.v;
      if (gap >= pages) {
        const uint64_t start = align_down(top - pages);
        if (start >= vma.end.v) return found(start);
      }
      hole = std::max(hole, gap);
    }
    top = std::min(top, vma.start.v);
  }
  if (top >= pages && align_down(top - pages) >= kLow) return found(align_down(top - pages));
  // No room below the base (a huge address space in use): the first gap
  // above it (legacy bottom-up, which the kernel's fallback also takes).
  auto align_up = [&](uint64_t v) { return align_down(v + kHuge - 1); };
  uint64_t candidate = huge_offset ? align_up(base) : base;
  for (const auto& vma : vmas_) {
    if (vma->end.v <= candidate) continue;
    if (vma->start.v >= candidate + pages) break;
    candidate = huge_offset ? align_up(vma->end.v) : vma->end.v;
  }
  return Vpn(candidate);
}

}  // namespace mmsim::mm
