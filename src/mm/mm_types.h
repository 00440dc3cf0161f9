// Models struct file/address_space (the page cache of one inode), struct
// vm_area_struct, struct anon_vma and struct mm_struct.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "mm/folio.h"
#include "mm/pgtable.h"
#include "sim/types.h"

namespace mmsim::mm {

class Mm;
struct Vma;

// A list kept in the order its entries came, from which an entry leaves in
// place as a hole (IsHole says which value is one), so leaving costs no
// shift; the holes are squeezed out once they outnumber the entries. Holes
// at either end go at once.
template <class T, bool (*IsHole)(const T&)>
class HoledList {
 public:
  // Puts x last; returns its slot.
  uint32_t push(const T& x) {
    v_.push_back(x);
    return static_cast<uint32_t>(v_.size() - 1);
  }
  // Makes `slot` a hole (`gone`, an IsHole value). True when the holes were
  // squeezed out, which moves the entries' slots.
  bool erase(size_t slot, const T& gone) {
    v_[slot] = gone;
    ++holes_;
    while (first_ < v_.size() && IsHole(v_[first_])) {
      ++first_;
      --holes_;
    }
    while (v_.size() > first_ && IsHole(v_.back())) {
      v_.pop_back();
      --holes_;
    }
    if (first_ == v_.size()) {
      v_.clear();
      first_ = 0;
      return false;
    }
    if (first_ + holes_ <= size()) return false;
    std::erase_if(v_, IsHole);
    first_ = 0;
    holes_ = 0;
    return true;
  }
  // The entries from the first, holes included; slots()[i] is slot first() + i.
  std::span<const T> slots() const { return std::span<const T>(v_).subspan(first_); }
  size_t first() const { return first_; }
  // The entry in `slot`, or nullptr if the list has no such slot (now).
  const T* at(size_t slot) const {
    return slot >= first_ && slot < v_.size() ? &v_[slot] : nullptr;
  }
  size_t size() const { return v_.size() - first_ - holes_; }
  bool empty() const { return v_.size() == first_; }

 private:
  std::vector<T> v_;
  size_t first_ = 0;  // holes before it are not counted in holes_
  size_t holes_ = 0;
};

// The PTEs that map one page of a file, as (mm, address), in the order
// they were made. The kernel's rmap walk of a file page visits every VMA
// of the file's i_mmap that spans its offset, whether it maps the page or
// not, and checks each one's PTE; a simulator cannot afford that when 10^5
// processes map the same executable and a few of them map a given page of
// it. This index makes the walk as long as the page's mappings.
// Removal looks from both ends (processes tend to go in the order they
// came, or the reverse) and leaves a hole, squeezed out once holes
// outnumber entries.
class PageMappers {
 public:
  void add(Mm* mm, Vpn vpn) { v_.push({mm, vpn}); }
  // The mapping must be there.
  void remove(Mm* mm, Vpn vpn);
  bool empty() const { return v_.empty(); }
  // Calls f(Mm&, Vpn) for each, in order; f must not add or remove.
  template <class F>
  void for_each(F&& f) const {
    for (const Entry& e : v_.slots()) {
      if (e.mm) f(*e.mm, e.vpn);
    }
  }
  size_t size() const { return v_.size(); }

 private:
  struct Entry {
    Mm* mm;  // nullptr: a hole
    Vpn vpn;
  };
  static bool hole(const Entry& e) { return e.mm == nullptr; }
  HoledList<Entry, hole> v_;
};

// The page cache of one file: which folio caches each page offset, and the
// VMAs that map the file (i_mmap, counted), and who maps each page.
// What an evicted page leaves in its slot (workingset_eviction's shadow
// entry): the lruvec it left and that lruvec's nonresident age then.
struct Shadow {
  uint64_t age = 0;
  uint32_t memcg = 0;
  uint16_t node = 0;
  bool workingset = false;  // PG_workingset: it had been active
};

struct AddressSpace {
  static constexpr uint32_t kNone = 0xFFFFFFFFu;
  uint32_t id = 0;
  std::string name;
  uint64_t size_pages = 0;
  bool shmem = false;  // tmpfs/shmem: pages are created zeroed, never read from storage
  // The unnamed shmem inode of a MAP_SHARED|MAP_ANONYMOUS mapping
  // (shmem_zero_setup): its VMAs hold its only references, so it goes,
  // pages and all, with the last of them.
  bool unnamed = false;
  uint64_t nrpages = 0;  // folios in the cache
  uint64_t i_mmap = 0;   // the VMAs that map the file
  // Who maps each page offset: rmap walks of a file page go through it.
  std::unordered_map<uint64_t, PageMappers> mappers;
  // Evicted offsets (the xarray's shadow entries): a re-read is a refault.
  std::unordered_map<uint64_t, Shadow> shadows;
  // The readahead state (file_ra_state): the last window read, [start,
  // start + size), and its async part at its end, whose first page is
  // marked. SIMPLIFICATION: one a file; the kernel keeps one an open file.
  struct Readahead {
    uint64_t start = 0, size = 0, async_size = 0;
  } ra;

  // The offsets the cache holds a folio for, in order.
  std::vector<uint64_t> cached_indices() const;
  uint32_t lookup(uint64_t index) const {
    const Chunk* chunk = find_chunk(index >> kPteTableShift);
    return chunk ? (*chunk)[index & (kPtesPerTable - 1)] : kNone;
  }
  void store(uint64_t index, uint32_t pfn);

 private:
  // The cache is sparse, like the kernel's xarray: memory grows with the
  // pages cached, not with the file's size.
  using Chunk = std::array<uint32_t, kPtesPerTable>;
  const Chunk* find_chunk(uint64_t key) const {
    if (key == cached_key_) return cached_;
    auto it = chunks_.find(key);
    if (it == chunks_.end()) return nullptr;
    cached_key_ = key;
    cached_ = it->second.get();
    return cached_;
  }
  std::unordered_map<uint64_t, std::unique_ptr<Chunk>> chunks_;
  mutable uint64_t cached_key_ = UINT64_MAX;
  mutable Chunk* cached_ = nullptr;
};

// The set of VMAs whose anonymous folios may be found through it. A VMA is on
// the list of its own anon_vma and of every ancestor's (the anon_vma chain),
// and each of its links (Vma::avc) knows its slot there, so a VMA leaves
// in constant time (a fork bomb's root anon_vma holds every child's VMA).
struct AnonVma {
  uint32_t id = 0;
  // Puts vma last; returns its slot.
  uint32_t add(Vma* vma) { return vmas_.push(vma); }
  // Takes the VMA out of its slot, leaving a hole; squeezes the holes out
  // when they outnumber the VMAs, telling each VMA moved its new slot.
  void remove(uint32_t slot);
  // Whether `slot` holds vma (for the checker).
  bool holds(uint32_t slot, const Vma* vma) const {
    const auto* v = vmas_.at(slot);
    return v && *v == vma;
  }
  // The VMAs in the order they came, with holes (nullptr) to skip.
  std::span<Vma* const> slots() const { return vmas_.slots(); }

 private:
  static bool hole(Vma* const& v) { return v == nullptr; }
  HoledList<Vma*, hole> vmas_;
};

// One link of a VMA's anon_vma chain: the anon_vma, and the VMA's slot there.
struct AnonVmaLink {
  AnonVma* av = nullptr;
  uint32_t slot = 0;
};

// NUMA balancing's per-VMA scan state (struct vma_numab_state, 6.4+): made
// at the VMA's first scan, and not inherited by a VMA copied at fork or split
// off (vm_area_dup starts it empty).
struct VmaNumab {
  bool made = false;
  int start_scan_seq = 0;  // the mm's numa_scan_seq when it was made
  int prev_scan_seq = 0;   // the sequence that last scanned it whole
  Tick next_scan;          // not scanned before (numa_balancing_scan_delay)
  Tick pids_active_reset;  // the next shift of pids_active
  // Bits hash_32(pid, 6) of the tasks that took a hinting fault in it: the
  // previous period's and this one's.
  uint64_t pids_active[2] = {0, 0};
};

struct Vma {
  enum : uint32_t {
    kRead = 1,
    kWrite = 2,
    kExec = 4,
    kShared = 8,
    kMayWrite = 16,
    kLocked = 32,
    kHugepage = 64,     // VM_HUGEPAGE (MADV_HUGEPAGE)
    kNoHugepage = 128,  // VM_NOHUGEPAGE (MADV_NOHUGEPAGE)
    kPfnMap = 256,      // VM_PFNMAP: raw page frames ([vvar]), no folios
  };
  Mm* mm = nullptr;
  Vpn start, end;  // [start, end)
  uint32_t flags = 0;
  AddressSpace* file = nullptr;  // nullptr for private anonymous memory
  uint64_t pgoff = 0;            // file page offset of start
  AnonVma* anon_vma = nullptr;   // this VMA's own, made at its first anonymous fault
  std::vector<AnonVmaLink> avc;  // every anon_vma this VMA is linked into
  MemPolicy policy;
  std::string name;
  VmaNumab numab;

  uint64_t pages() const { return end.v - start.v; }
  bool contains(Vpn v) const { return v >= start && v < end; }
  bool is_cow_mapping() const { return (flags & (kShared | kMayWrite)) == kMayWrite; }
  // A shared writable mapping of shmem (tmpfs, MAP_SHARED|MAP_ANONYMOUS):
  // vma_wants_writenotify is false (no page_mkwrite, no dirty accounting),
  // so vm_page_prot is writable and every PTE a fault maps, fault-around's
  // included, is writable from the start: a write after a read takes no
  // fault. A disk file's shared writable mapping wants write-notify: its
  // read-faulted PTEs are read-only and the first write faults (page_mkwrite).
  bool maps_writable_on_read() const {
    return file && file->shmem && (flags & (kShared | kWrite)) == (kShared | kWrite);
  }
  bool is_anonymous() const { return file == nullptr; }
  uint64_t file_index(Vpn v) const { return pgoff + (v.v - start.v); }
};

// Told when PTEs of an mm lose access (cleared, protected, migrating), so an
// executor that ran ahead over those pages can stop at the right time.
class PteObserver {
 public:
  virtual ~PteObserver() = default;
  virtual void on_pte_revoked(Mm& mm, Vpn start, Vpn end) = 0;
};

class Mm {
 public:
  explicit Mm(uint32_t id) : id_(id) {}
  uint32_t id() const { return id_; }
  // The VMA containing v, or nullptr.
  Vma* find_vma(Vpn v) const;
  // The first VMA that overlaps [start, end), or nullptr.
  Vma* find_vma_intersection(Vpn start, Vpn end) const;
  const std::vector<std::unique_ptr<Vma>>& vmas() const { return vmas_; }
  using VmaList = std::vector<std::unique_ptr<Vma>>;
  VmaList& vmas_mut() {
    vma_cache_ = nullptr;
    free_cache_ = {};
    return vmas_;
  }
  Vma* insert_vma(std::unique_ptr<Vma> vma);
  // The first VMA whose end is above `v` (in address order), or end().
  VmaList::const_iterator first_vma_ending_after(Vpn v) const {
    return std::upper_bound(vmas_.begin(), vmas_.end(), v,
                            [](Vpn x, const std::unique_ptr<Vma>& u) { return x < u->end; });
  }
  // An unmapped VMA: its range becomes free. A cached search survives when
  // the range lies below where it ended (the gaps above it do not change).
  void erase_vma(const Vma* gone) {
    for (FreeCache& c : free_cache_)
      if (gone->end.v > c.top) c = {};
    erase_merged(gone);
  }
  // A VMA merged into its neighbour: its range stays mapped, so the free
  // areas do not change.
  void erase_merged(const Vma* gone) {
    if (vma_cache_ == gone) vma_cache_ = nullptr;
    auto it = std::lower_bound(vmas_.begin(), vmas_.end(), gone->start,
                               [](const std::unique_ptr<Vma>& v, Vpn x) { return v->start < x; });
    vmas_.erase(it);
  }
  void clear_vmas() {
    vma_cache_ = nullptr;
    free_cache_ = {};
    vmas_.clear();
  }
  // mm->map_count.
  uint64_t map_count() const { return vmas_.size(); }
  // A free range of `pages` pages: the highest below the mmap base, edge to
  // edge with the VMA above (top-down, x86-64's default); if `huge_offset` is
  // set, starting that many pages (< 512) past a 2 MiB boundary.
  Vpn get_unmapped_area(uint64_t pages, std::optional<uint32_t> huge_offset = {}) const;
  // How far below a 2 MiB boundary the randomised mmap base lies, in pages
  // (arch_mmap_rnd, page granularity): where an unaligned mapping starts
  // relative to the THP grid. Inherited by fork.
  uint32_t mmap_rnd_pages = 0;
  PageTable& pgtable() { return pgtable_; }
  const PageTable& pgtable() const { return pgtable_; }

  // CPUs that may hold TLB entries of this mm (mm_cpumask): the CPUs its
  // tasks run or ran on since the last flush.
  std::vector<CpuId>& cpumask() { return cpumask_; }
  int users = 0;           // mm_users: tasks (threads) using this mm
  uint64_t rss_anon = 0;   // MM_ANONPAGES
  uint64_t rss_file = 0;   // MM_FILEPAGES
  uint64_t rss_shmem = 0;  // MM_SHMEMPAGES
  PteObserver* observer = nullptr;
  uint32_t memcg = 0;       // the memcg charged for this mm's new pages (mm->owner's)
  int runahead_tasks = 0;   // tasks of this mm that ran ahead (see PteObserver)
  bool khugepaged = false;  // MMF_VM_HUGEPAGE: on khugepaged's list
  // Automatic NUMA balancing state of the mm (mm->numa_*).
  Tick numa_next_scan;            // no scan pass starts before this
  uint64_t numa_scan_offset = 0;  // vpn where the next pass resumes
  int numa_scan_seq = 0;          // completed passes over the address space
  void revoke(Vpn start, Vpn end) {
    if (runahead_tasks && observer) observer->on_pte_revoked(*this, start, end);
  }

 private:
  uint32_t id_;
  std::vector<std::unique_ptr<Vma>> vmas_;  // sorted by start
  // The last VMA find_vma found (a simulator's shortcut, not the kernel's
  // vmacache): every fault asks for one. Dropped whenever a VMA goes.
  mutable Vma* vma_cache_ = nullptr;
  // Where recent top-down searches of get_unmapped_area ended (the top of
  // the gap each used; 0: none), and the longest gap each passed above that:
  // a search for more pages than that can start there. Old kernels'
  // free_area_cache and cached_hole_size, here only the simulator's shortcut
  // (a thread's stack would otherwise walk every VMA above it), kept for
  // the last few searches because threads alternate stacks and arenas of
  // different sizes. A VMA added or merged only shortens gaps, so an entry
  // stays true; one unmapped above an entry's top drops it.
  struct FreeCache {
    uint64_t top = 0;
    uint64_t hole = 0;
  };
  mutable std::array<FreeCache, 4> free_cache_{};
  mutable uint32_t free_next_ = 0;
  PageTable pgtable_;
  std::vector<CpuId> cpumask_;
};

}  // namespace mmsim::mm
