// Models a process's page tables (mm->pgd down to PTE pages): sparse, one
// 512-entry PTE table per 2 MiB of touched address space, with bitmaps that
// let a sweep jump to the next page that needs the kernel.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "sim/check.h"
#include "sim/types.h"

namespace mmsim::mm {

inline constexpr uint32_t kPtesPerTable = 512;
inline constexpr int kPteTableShift = 9;

// Special pfn of the shared zero page (present, never writable, no folio).
inline constexpr uint32_t kZeroPfn = 0xFFFFFFFEu;

// One page-table entry. A present entry maps pfn; a migration entry is not
// present and stands for a folio being migrated (is_migration_entry()).
struct Pte {
  enum : uint8_t {
    kPresent = 1,
    kWrite = 2,
    kProtNone = 4,  // NUMA hinting: present but inaccessible
    kYoung = 8,
    kDirty = 16,
    kMigration = 32,
    kSavedWrite = 64,  // write permission to restore after a hinting fault
    kSwap = 128,       // a swap entry: not present, pfn is the swap slot
  };
  uint32_t pfn = 0;
  uint8_t flags = 0;

  bool none() const { return flags == 0; }
  bool present() const { return flags & kPresent; }
  bool writable() const { return (flags & (kPresent | kWrite | kProtNone)) == (kPresent | kWrite); }
  bool accessible() const { return (flags & (kPresent | kProtNone)) == kPresent; }
  bool protnone() const { return flags & kProtNone; }
  bool migration() const { return flags & kMigration; }
  bool swap() const { return flags & kSwap; }
  bool maps_folio() const { return (present() || migration()) && pfn != kZeroPfn; }
};

// The PTE table of one 2 MiB range, or in its place a PMD that maps a huge
// page (pmd_trans_huge): then get(i) is the PTE-level view of the PMD, the
// subpage at i (pfn + i; the huge zero page's is kZeroPfn) with the PMD's
// flags, the bitmaps say the same for all 512 pages, and set() must not be
// called until the PMD is split or cleared.
class PteTable {
 public:
  [[gnu::always_inline]] Pte get(uint32_t i) const {
    if (!huge_) return Pte{pfn_[i], flags_[i]};
    Pte p = pmd_;
    if (p.pfn != kZeroPfn && (p.present() || p.migration())) p.pfn += i;
    return p;
  }
  // Inline: every fault and zap sets PTEs.
  void set(uint32_t i, Pte pte) {
    check(!huge_, "a PTE set in a huge PMD's table");
    nr_used_ += static_cast<uint32_t>(!pte.none()) - static_cast<uint32_t>(flags_[i] != 0);
    pfn_[i] = pte.pfn;
    flags_[i] = pte.flags;
    const uint64_t bit = uint64_t{1} << (i & 63);
    used_[i >> 6] = pte.none() ? (used_[i >> 6] & ~bit) : (used_[i >> 6] | bit);
    node_pages_dirty_ = true;
    uint64_t& r = readable_[i >> 6];
    uint64_t& w = writable_[i >> 6];
    // A sweep may run over a page without the kernel only if the MMU would
    // not stop either: the accessed bit (and for a write the dirty bit)
    // already set, so that clearing one (reclaim's folio_referenced) makes
    // the next access observable, as the hardware's setting of it.
    const bool young = pte.flags & Pte::kYoung;
    const bool dirty = pte.flags & Pte::kDirty;
    r = pte.accessible() && young ? (r | bit) : (r & ~bit);
    w = pte.writable() && young && dirty ? (w | bit) : (w & ~bit);
  }
  uint32_t nr_used() const { return nr_used_; }
  // The table's 512 pages by the node of the folio each maps (`node_of(Pte)`:
  // a NodeId, or kNoFolioNode for a page without a folio), computed once and
  // kept until an entry changes: pricing a sweep over whole tables costs a
  // few entries a table, not one a page.
  static constexpr uint16_t kNoFolioNode = UINT16_MAX;
  struct NodePages {
    uint16_t node;
    uint16_t pages;
  };
  template <class NodeOf>
  const std::vector<NodePages>& node_pages(NodeOf&& node_of) const {
    if (node_pages_dirty_) {
      node_pages_.clear();
      for (uint32_t i = 0; i < kPtesPerTable; ++i) {
        const uint16_t n = node_of(get(i));
        if (!node_pages_.empty() && node_pages_.back().node == n) {
          ++node_pages_.back().pages;
          continue;
        }
        auto it = std::find_if(node_pages_.begin(), node_pages_.end(),
                               [&](const NodePages& p) { return p.node == n; });
        if (it != node_pages_.end()) {
          ++it->pages;
        } else {
          node_pages_.push_back(NodePages{n, 1});
        }
      }
      node_pages_.shrink_to_fit();
      node_pages_dirty_ = false;
    }
    return node_pages_;
  }
  // The first index in [from, to) whose PTE is not none, or `to`: a walk
  // visits the entries in use, not every slot (O(touched)).
  uint32_t next_used(uint32_t from, uint32_t to) const {
    for (uint32_t i = from; i < to;) {
      const uint64_t w = used_[i >> 6] & (~uint64_t{0} << (i & 63));
      if (w) return std::min(to, (i & ~63u) + static_cast<uint32_t>(std::countr_zero(w)));
      i = (i & ~63u) + 64;
    }
    return to;
  }
  bool huge() const { return huge_; }
  // The PMD of a huge mapping: pfn is the head's (or kZeroPfn).
  const Pte& pmd() const { return pmd_; }
  // Installs or changes the huge PMD (the table's PTEs must all be none);
  // set_pmd(Pte{}) clears it (pmd_none, the table empty).
  void set_pmd(Pte pmd);
  // First index in [from, to) whose PTE does not allow the access without the
  // kernel or the MMU (read: not accessible or not young; write: not
  // writable, young and dirty), or `to`.
  uint32_t next_blocked(uint32_t from, uint32_t to, bool write) const;

 private:
  // The entries, as two arrays: 5 bytes an entry, not a padded Pte's 8.
  std::array<uint32_t, kPtesPerTable> pfn_{};
  std::array<uint8_t, kPtesPerTable> flags_{};
  std::array<uint64_t, kPtesPerTable / 64> readable_{};
  std::array<uint64_t, kPtesPerTable / 64> writable_{};
  std::array<uint64_t, kPtesPerTable / 64> used_{};  // not none
  mutable std::vector<NodePages> node_pages_;        // see node_pages()
  mutable bool node_pages_dirty_ = true;
  uint32_t nr_used_ = 0;
  bool huge_ = false;
  Pte pmd_{};
};

// The page-table tree of one mm, reduced to its leaves.
class PageTable {
 public:
  // The PTE table covering vpn, or nullptr if none was ever allocated.
  PteTable* table(Vpn vpn) const {
    const uint64_t key = vpn.v >> kPteTableShift;
    if (key == cached_key_) return cached_;
    auto it = tables_.find(key);
    if (it == tables_.end()) return nullptr;
    cached_key_ = key;
    cached_ = it->second.get();
    return cached_;
  }
  PteTable& table_alloc(Vpn vpn);
  [[gnu::always_inline]] Pte get(Vpn vpn) const {
    const PteTable* t = table(vpn);
    return t ? t->get(vpn.v & (kPtesPerTable - 1)) : Pte{};
  }
  // First vpn in [from, to) that does not allow the access, or `to`.
  Vpn next_blocked(Vpn from, Vpn to, bool write) const;
  size_t nr_tables() const { return tables_.size(); }
  // The 2 MiB range's PMD is none again (zap_huge_pmd frees the table the
  // huge PMD had deposited): a later fault there may map a THP. The table
  // must be empty; references to it are dangling afterwards.
  void free_table(Vpn vpn) {
    check(table(vpn) && !table(vpn)->nr_used(), "a PTE table freed while in use");
    erase(vpn.v >> kPteTableShift);
  }
  // free_pgtables: drops the tables of [from, to) that are empty and that
  // `keep(base)` does not keep.
  template <class Keep>
  void free_empty(Vpn from, Vpn to, Keep&& keep) {
    std::vector<uint64_t> empty;
    for_each_table_in(from, to, [&](Vpn base, const PteTable& t) {
      if (!t.nr_used() && !keep(base)) empty.push_back(base.v >> kPteTableShift);
    });
    for (uint64_t key : empty) erase(key);
  }
  // Visits every allocated table that overlaps [from, to) as f(Vpn base,
  // PteTable&), in address order.
  template <class F>
  void for_each_table_in(Vpn from, Vpn to, F&& f) {
    if (to.v <= from.v) return;
    const uint64_t first = from.v >> kPteTableShift;
    const uint64_t last = (to.v - 1) >> kPteTableShift;
    auto visit = [&](uint64_t key) {
      if (PteTable* t = table(Vpn(key << kPteTableShift))) f(Vpn(key << kPteTableShift), *t);
    };
    if (last - first >= tables_.size()) {
      for (uint64_t key : keys_in(first, last)) visit(key);
      return;
    }
    for (uint64_t key = first; key <= last; ++key) visit(key);
  }
  // Counts this table's allocations in *total too (the manager's count of
  // every mm's tables); set before the first allocation.
  void count_tables_in(uint64_t* total) { total_ = total; }
  PageTable() = default;
  PageTable(const PageTable&) = delete;
  PageTable& operator=(const PageTable&) = delete;
  ~PageTable() {
    if (total_) *total_ -= tables_.size();
  }
  // Visits every non-none PTE in [from, to) as f(Vpn, PteTable&, index), in
  // address order. The work grows with the tables present, not with the
  // range: a huge, mostly empty range visits only its allocated tables.
  // Huge PMDs are not PTEs: they are left out (for_each_table_in has them).
  template <class F>
  void for_each(Vpn from, Vpn to, F&& f) {
    if (to.v <= from.v) return;
    const uint64_t first = from.v >> kPteTableShift;
    const uint64_t last = (to.v - 1) >> kPteTableShift;
    if (last - first >= tables_.size()) {
      for (uint64_t key : keys_in(first, last)) visit_table(key, from, to, f);
      return;
    }
    for (uint64_t key = first; key <= last; ++key) visit_table(key, from, to, f);
  }
  template <class F>
  void for_each_table(F&& f) const {
    for (const auto& [key, t] : tables_) f(Vpn(key << kPteTableShift), *t);
  }

 private:
  void erase(uint64_t key);
  // The keys of the allocated tables in [first, last], sorted.
  std::vector<uint64_t> keys_in(uint64_t first, uint64_t last) const;
  template <class F>
  void visit_table(uint64_t key, Vpn from, Vpn to, F& f) {
    const uint64_t base = key << kPteTableShift;
    PteTable* t = table(Vpn(base));
    if (!t || !t->nr_used() || t->huge()) return;
    const auto lo = static_cast<uint32_t>(std::max(base, from.v) - base);
    const auto hi = static_cast<uint32_t>(std::min(base + kPtesPerTable, to.v) - base);
    // Entry by entry in use (its bit is set exactly while its PTE is not
    // none), read again after each visit: f may change the table.
    for (uint32_t i = t->next_used(lo, hi); i < hi; i = t->next_used(i + 1, hi)) {
      f(Vpn(base + i), *t, i);
      if (t->huge()) return;
    }
  }
  std::unordered_map<uint64_t, std::unique_ptr<PteTable>> tables_;
  uint64_t* total_ = nullptr;
  mutable uint64_t cached_key_ = UINT64_MAX;
  mutable PteTable* cached_ = nullptr;
};

}  // namespace mmsim::mm
