// Models a process's page tables (mm->pgd down to PTE pages): sparse, one
// 512-entry PTE table per 2 MiB of touched address space, with bitmaps that
// let a sweep jump to the next page that needs the kernel.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <memory>
#include <unordered_map>

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
  };
  uint32_t pfn = 0;
  uint8_t flags = 0;

  bool none() const { return flags == 0; }
  bool present() const { return flags & kPresent; }
  bool writable() const { return (flags & (kPresent | kWrite | kProtNone)) == (kPresent | kWrite); }
  bool accessible() const { return (flags & (kPresent | kProtNone)) == kPresent; }
  bool protnone() const { return flags & kProtNone; }
  bool migration() const { return flags & kMigration; }
  bool maps_folio() const { return (present() || migration()) && pfn != kZeroPfn; }
};

class PteTable {
 public:
  const Pte& get(uint32_t i) const { return ptes_[i]; }
  void set(uint32_t i, Pte pte);
  uint32_t nr_used() const { return nr_used_; }
  // First index in [from, to) whose PTE does not allow the access (read: not
  // accessible; write: not writable), or `to`.
  uint32_t next_blocked(uint32_t from, uint32_t to, bool write) const;

 private:
  std::array<Pte, kPtesPerTable> ptes_{};
  std::array<uint64_t, kPtesPerTable / 64> readable_{};
  std::array<uint64_t, kPtesPerTable / 64> writable_{};
  uint32_t nr_used_ = 0;
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
  Pte get(Vpn vpn) const {
    const PteTable* t = table(vpn);
    return t ? t->get(vpn.v & (kPtesPerTable - 1)) : Pte{};
  }
  // First vpn in [from, to) that does not allow the access, or `to`.
  Vpn next_blocked(Vpn from, Vpn to, bool write) const;
  size_t nr_tables() const { return tables_.size(); }
  // Visits every non-none PTE in [from, to) as f(Vpn, PteTable&, index).
  template <class F>
  void for_each(Vpn from, Vpn to, F&& f) {
    uint64_t v = from.v;
    while (v < to.v) {
      const uint64_t table_end = ((v >> kPteTableShift) + 1) << kPteTableShift;
      const uint64_t end = table_end < to.v ? table_end : to.v;
      if (PteTable* t = table(Vpn(v)); t && t->nr_used()) {
        for (uint64_t x = v; x < end; ++x) {
          const uint32_t i = x & (kPtesPerTable - 1);
          if (!t->get(i).none()) f(Vpn(x), *t, i);
        }
      }
      v = end;
    }
  }
  template <class F>
  void for_each_table(F&& f) const {
    for (const auto& [key, t] : tables_) f(Vpn(key << kPteTableShift), *t);
  }

 private:
  std::unordered_map<uint64_t, std::unique_ptr<PteTable>> tables_;
  mutable uint64_t cached_key_ = UINT64_MAX;
  mutable PteTable* cached_ = nullptr;
};

}  // namespace mmsim::mm
