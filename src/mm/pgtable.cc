#include "mm/pgtable.h"

#include <algorithm>
#include <utility>

#include "sim/check.h"

namespace mmsim::mm {

void PteTable::set_pmd(Pte pmd) {
  check(huge_ || nr_used_ == 0, "a huge PMD over a table of PTEs");
  huge_ = !pmd.none();
  pmd_ = huge_ ? pmd : Pte{};
  nr_used_ = huge_ ? kPtesPerTable : 0;
  const bool young = pmd.flags & Pte::kYoung;
  const bool dirty = pmd.flags & Pte::kDirty;
  const uint64_t r = huge_ && pmd.accessible() && young ? ~uint64_t{0} : 0;
  const uint64_t w = huge_ && pmd.writable() && young && dirty ? ~uint64_t{0} : 0;
  readable_.fill(r);
  writable_.fill(w);
  node_pages_dirty_ = true;
}

uint32_t PteTable::next_blocked(uint32_t from, uint32_t to, bool write) const {
  const auto& bits = write ? writable_ : readable_;
  uint32_t i = from;
  while (i < to) {
    const uint32_t word = i >> 6;
    uint64_t blocked = ~bits[word] & (~uint64_t{0} << (i & 63));
    if (blocked) {
      const uint32_t at = (word << 6) + static_cast<uint32_t>(std::countr_zero(blocked));
      return at < to ? at : to;
    }
    i = (word + 1) << 6;
  }
  return to;
}

PteTable& PageTable::table_new(Vpn vpn, uint32_t frame) {
  check(table(vpn) == nullptr, "a PTE table allocated twice");
  const uint64_t key = vpn.v >> kPteTableShift;
  ++parent_of(PtLevel::kPte, vpn).children;
  auto& slot = tables_[key];
  slot = std::make_unique<PteTable>();
  slot->set_frame(frame);
  if (total_) ++*total_;
  cached_key_ = key;
  cached_ = slot.get();
  return *slot;
}

void PageTable::set_upper(PtLevel level, Vpn vpn, uint32_t frame) {
  check(level == PtLevel::kPmd || level == PtLevel::kPud, "set_upper of a PTE table or the PGD");
  check(!has_upper(level, vpn), "a page table allocated twice");
  if (level == PtLevel::kPmd) ++parent_of(PtLevel::kPmd, vpn).children;
  upper(level)[vpn.v >> upper_shift(level)] = Upper{frame, 0};
}

uint32_t PageTable::erase(uint64_t key) {
  auto it = tables_.find(key);
  check(it != tables_.end(), "a PTE table freed twice");
  const uint32_t frame = it->second->frame();
  tables_.erase(it);
  --parent_of(PtLevel::kPte, Vpn(key << kPteTableShift)).children;
  if (total_) --*total_;
  if (cached_key_ == key) {
    cached_key_ = UINT64_MAX;
    cached_ = nullptr;
  }
  return frame;
}

std::vector<uint32_t> PageTable::release_all() {
  std::vector<uint32_t> frames;
  frames.reserve(tables_.size() + pmd_tables_.size() + pud_tables_.size() + 1);
  for (uint64_t key : keys_in(tables_, 0, UINT64_MAX)) frames.push_back(erase(key));
  for (PtLevel l : {PtLevel::kPmd, PtLevel::kPud}) {
    for (uint64_t key : keys_in(upper(l), 0, UINT64_MAX)) frames.push_back(upper(l)[key].frame);
    upper(l).clear();
  }
  frames.push_back(std::exchange(pgd_frame, kNoFrame));
  frames.erase(std::remove(frames.begin(), frames.end(), kNoFrame), frames.end());
  return frames;
}

Vpn PageTable::next_blocked(Vpn from, Vpn to, bool write) const {
  uint64_t v = from.v;
  while (v < to.v) {
    const uint64_t table_end = ((v >> kPteTableShift) + 1) << kPteTableShift;
    const uint64_t end = table_end < to.v ? table_end : to.v;
    const PteTable* t = table(Vpn(v));
    if (!t) return Vpn(v);
    const uint32_t base = static_cast<uint32_t>(v & (kPtesPerTable - 1));
    const uint32_t at = t->next_blocked(base, base + static_cast<uint32_t>(end - v), write);
    if (at < base + (end - v)) return Vpn(v + (at - base));
    v = end;
  }
  return to;
}

}  // namespace mmsim::mm
