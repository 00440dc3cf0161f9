// Models a process's page tables (mm->pgd down to PTE pages): sparse, one
// 512-entry PTE table per 2 MiB of touched address space, with bitmaps that
// let a sweep jump to the next page that needs the kernel; above them only
// which PMD tables (one per 1 GiB) and PUD tables (one per 512 GiB) exist,
// and the page frame each table occupies.
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

// The levels of x86-64's 4-level page tables (p4d is folded into the pgd).
enum class PtLevel : uint8_t { kPte, kPmd, kPud, kPgd };
// The address bits (of a vpn) below each level's table: a PTE table maps
// 2 MiB, a PMD table 1 GiB, a PUD table 512 GiB.
inline constexpr int kPmdTableShift = kPteTableShift + 9;
inline constexpr int kPudTableShift = kPmdTableShift + 9;
// A table without a page frame of its own (one whose allocation failed where
// the model cannot fail: see MemoryManager::pgtable_alloc).
inline constexpr uint32_t kNoFrame = 0xFFFFFFFFu;

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
  // The page frame the table occupies (kNoFrame: none); a huge PMD's table is
  // the page it deposited (pgtable_trans_huge_deposit), the same frame.
  uint32_t frame() const { return frame_; }
  void set_frame(uint32_t pfn) { frame_ = pfn; }
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
  uint32_t frame_ = kNoFrame;
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
  // The PTE table covering vpn, which must exist.
  PteTable& at(Vpn vpn) {
    PteTable* t = table(vpn);
    check(t != nullptr, "a PTE table used before it was allocated");
    return *t;
  }
  // A new, empty PTE table for vpn's 2 MiB in page frame `frame`; its PMD
  // table must exist.
  PteTable& table_new(Vpn vpn, uint32_t frame);
  // The PTE table covering vpn, made with the tables above it if missing,
  // none with a page frame: a table built without a memory manager (unit
  // tests, benchmarks).
  PteTable& table_build(Vpn vpn) {
    if (PteTable* t = table(vpn)) return *t;
    if (!has_upper(PtLevel::kPud, vpn)) set_upper(PtLevel::kPud, vpn, kNoFrame);
    if (!has_upper(PtLevel::kPmd, vpn)) set_upper(PtLevel::kPmd, vpn, kNoFrame);
    return table_new(vpn, kNoFrame);
  }
  [[gnu::always_inline]] Pte get(Vpn vpn) const {
    const PteTable* t = table(vpn);
    return t ? t->get(vpn.v & (kPtesPerTable - 1)) : Pte{};
  }
  // First vpn in [from, to) that does not allow the access, or `to`.
  Vpn next_blocked(Vpn from, Vpn to, bool write) const;
  size_t nr_tables() const { return tables_.size(); }
  // The 2 MiB range's PMD is none again (zap_huge_pmd frees the table the
  // huge PMD had deposited): a later fault there may map a THP. The table
  // must be empty; references to it are dangling afterwards. Returns its
  // frame, for the caller to free.
  uint32_t free_table(Vpn vpn) {
    check(table(vpn) && !table(vpn)->nr_used(), "a PTE table freed while in use");
    return erase(vpn.v >> kPteTableShift);
  }
  // free_pgtables: drops the tables of every level in [from, to) that hold
  // nothing and whose range `in_use(first, end)` says no VMA reaches into;
  // appends the frames they occupied to *frames.
  template <class InUse>
  void free_pgtables(Vpn from, Vpn to, InUse&& in_use, std::vector<uint32_t>* frames) {
    std::vector<uint64_t> empty;
    for_each_table_in(from, to, [&](Vpn base, const PteTable& t) {
      if (!t.nr_used() && !in_use(base, Vpn(base.v + kPtesPerTable)))
        empty.push_back(base.v >> kPteTableShift);
    });
    for (uint64_t key : empty) frames->push_back(erase(key));
    free_upper(PtLevel::kPmd, from, to, in_use, frames);
    free_upper(PtLevel::kPud, from, to, in_use, frames);
  }
  // Whether the PMD (kPmd) or PUD (kPud) table covering vpn exists.
  bool has_upper(PtLevel level, Vpn vpn) const {
    return upper(level).count(vpn.v >> upper_shift(level)) != 0;
  }
  // A new PMD or PUD table for vpn in page frame `frame`; the table above it
  // (a PMD's PUD) must exist.
  void set_upper(PtLevel level, Vpn vpn, uint32_t frame);
  // Calls f(PtLevel, Vpn first, frame) for every PMD and PUD table.
  template <class F>
  void for_each_upper(F&& f) const {
    for (PtLevel l : {PtLevel::kPmd, PtLevel::kPud})
      for (const auto& [key, u] : upper(l)) f(l, Vpn(key << upper_shift(l)), u.frame);
  }
  // The PGD's frame (pgd_alloc at the mm's creation), kNoFrame: none.
  uint32_t pgd_frame = kNoFrame;
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
      for (uint64_t key : keys_in(tables_, first, last)) visit(key);
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
  // Every frame still held, the PGD's last, each table dropped: the mm's
  // last teardown (free_pgtables over everything, then mm_free_pgd).
  std::vector<uint32_t> release_all();
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
      for (uint64_t key : keys_in(tables_, first, last)) visit_table(key, from, to, f);
      return;
    }
    for (uint64_t key = first; key <= last; ++key) visit_table(key, from, to, f);
  }
  template <class F>
  void for_each_table(F&& f) const {
    for (const auto& [key, t] : tables_) f(Vpn(key << kPteTableShift), *t);
  }

  static constexpr int upper_shift(PtLevel level) {
    return level == PtLevel::kPmd ? kPmdTableShift : kPudTableShift;
  }

 private:
  // A PMD or PUD table: its frame and the tables of the level below in it.
  struct Upper {
    uint32_t frame = kNoFrame;
    uint32_t children = 0;
  };
  using UpperMap = std::unordered_map<uint64_t, Upper>;
  UpperMap& upper(PtLevel level) { return level == PtLevel::kPmd ? pmd_tables_ : pud_tables_; }
  const UpperMap& upper(PtLevel level) const {
    return level == PtLevel::kPmd ? pmd_tables_ : pud_tables_;
  }
  // The table holding the PTE table (level kPte: its PMD table) or the PMD
  // table (kPmd: its PUD table) at vpn, which must exist.
  Upper& parent_of(PtLevel level, Vpn vpn) {
    const PtLevel up = level == PtLevel::kPte ? PtLevel::kPmd : PtLevel::kPud;
    auto it = upper(up).find(vpn.v >> upper_shift(up));
    check(it != upper(up).end(), "a page table below a table that does not exist");
    return it->second;
  }
  // Removes the PTE table; returns its frame.
  uint32_t erase(uint64_t key);
  // free_pgtables at one upper level: each table of [from, to) with no
  // table below it and no VMA in its range.
  template <class InUse>
  void free_upper(PtLevel level, Vpn from, Vpn to, InUse& in_use, std::vector<uint32_t>* frames) {
    if (to.v <= from.v) return;
    const int shift = upper_shift(level);
    UpperMap& map = upper(level);
    const std::vector<uint64_t> keys = keys_in(map, from.v >> shift, (to.v - 1) >> shift);
    for (uint64_t key : keys) {
      auto it = map.find(key);
      if (it->second.children || in_use(Vpn(key << shift), Vpn((key + 1) << shift))) continue;
      frames->push_back(it->second.frame);
      map.erase(it);
      if (level == PtLevel::kPmd) --parent_of(PtLevel::kPmd, Vpn(key << shift)).children;
    }
  }
  // The keys of `map` (PTE tables, or PMD or PUD tables) in [first, last],
  // sorted: by a walk of the map, or of the range when that is the shorter.
  template <class Map>
  static std::vector<uint64_t> keys_in(const Map& map, uint64_t first, uint64_t last) {
    std::vector<uint64_t> keys;
    if (last - first >= map.size()) {
      for (const auto& entry : map)
        if (entry.first >= first && entry.first <= last) keys.push_back(entry.first);
      std::sort(keys.begin(), keys.end());
    } else {
      for (uint64_t key = first; key <= last; ++key)
        if (map.count(key)) keys.push_back(key);
    }
    return keys;
  }
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
  UpperMap pmd_tables_;  // by vpn >> kPmdTableShift
  UpperMap pud_tables_;  // by vpn >> kPudTableShift
  uint64_t* total_ = nullptr;
  mutable uint64_t cached_key_ = UINT64_MAX;
  mutable PteTable* cached_ = nullptr;
};

}  // namespace mmsim::mm
